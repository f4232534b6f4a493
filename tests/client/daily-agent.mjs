// SPDX-License-Identifier: Apache-2.0
// A fake agent with the habits real agents showed in issue 25, one per flag (raw NDJSON):
//   --ignore-eof         keeps running after the end of its input (codex-acp); on SIGTERM it
//                        writes "term MS" (MS since that end) to --mark FILE, then exits.
//   --api-key PROVIDER   one `agent` auth method with _meta["api-key"] {provider} (codex-acp
//                        2.x, gemini-cli); session/new is -32000 until authenticated, its
//                        message with its own stop and the methods in data (qwen-code).
//   --terminal-auth      one `terminal` auth method whose login (this file with --login) waits
//                        for a person who never comes (it gives up after 30 s).
//   --fail               session/new answers error -32042 "No sessions today." with data.
//   --slow-cancel        session/prompt is answered (stopReason cancelled) only once
//                        session/cancel came, after a moment; --mark FILE then holds
//                        "answered" or "epipe" (acp had already gone).
// Sessions can be closed and deleted (advertised); --mark FILE receives "auth METHOD",
// "close ID" and "delete ID" for each authenticate, session/close and session/delete.
import { appendFileSync } from "node:fs";
import { createInterface } from "node:readline";

const argv = process.argv.slice(2);
const flag = (f) => argv.includes(f);
const value = (f) => (argv.includes(f) ? argv[argv.indexOf(f) + 1] : undefined);
const mark = (s) => value("--mark") && appendFileSync(value("--mark"), s + "\n");

if (flag("--login")) setTimeout(() => process.exit(1), 30000); // a login nobody answers (gives up in 30 s)
else {
  let authed = false, eofAt = 0, prompt = null;
  const out = (o) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...o }) + "\n");
  process.stdout.on("error", () => mark("epipe"));
  const methods = [];
  if (value("--api-key"))
    methods.push({ id: "api-key", name: "Use an API key", _meta: { "api-key": { provider: value("--api-key") } } });
  if (flag("--terminal-auth")) methods.push({ id: "login", name: "Log in", type: "terminal", args: ["--login"] });
  const rl = createInterface({ input: process.stdin });
  rl.on("line", (line) => {
    const m = JSON.parse(line);
    const answer = (result) => out({ id: m.id, result });
    switch (m.method) {
      case "initialize":
        return answer({ protocolVersion: 1, agentCapabilities: { sessionCapabilities: { close: {}, delete: {} } }, authMethods: methods, agentInfo: { name: "daily", version: "1" } });
      case "authenticate":
        mark(`auth ${m.params.methodId}`);
        authed = true;
        return answer({});
      case "session/new":
        if (flag("--fail")) return out({ id: m.id, error: { code: -32042, message: "No sessions today.", data: { why: "closed" } } });
        if (methods.length && !authed) return out({ id: m.id, error: { code: -32000, message: "Authentication required.", data: { authMethods: methods } } });
        return answer({ sessionId: "s1" });
      case "session/close":
      case "session/delete":
        mark(`${m.method.slice(8)} ${m.params.sessionId}`);
        return answer({});
      case "session/prompt":
        if (flag("--slow-cancel")) prompt = m.id;
        else answer({ stopReason: "end_turn" });
        return;
      case "session/cancel":
        if (prompt !== null)
          setTimeout(() => {
            out({ id: prompt, result: { stopReason: "cancelled" } });
            // A write to a pipe nobody reads fails on the next turn of the loop.
            setTimeout(() => mark("answered"), 200);
          }, 100);
        return;
      default:
        if (m.id !== undefined) out({ id: m.id, error: { code: -32601, message: "Method not found" } });
    }
  });
  rl.on("close", () => {
    eofAt = Date.now();
    if (!flag("--ignore-eof") && !flag("--slow-cancel")) process.exit(0);
    setInterval(() => {}, 1000);
  });
  process.on("SIGTERM", () => {
    mark(`term ${Date.now() - eofAt}`);
    process.exit(0);
  });
}
