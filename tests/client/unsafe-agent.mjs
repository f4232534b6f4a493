// SPDX-License-Identifier: Apache-2.0
// An agent that tries what issue 20 found (items 5, 6 and 8), raw NDJSON, no SDK. A prompt's
// text says what to try:
//   term CWD     terminal/create `pwd` in CWD ("-": no cwd given); answers "ok: OUTPUT" or
//                "refused: CODE MESSAGE" as a message chunk
//   stderr       writes a window title, a clear screen, an OSC 52 clipboard write and colours
//                to stderr, the last line without its newline
//   long         a 5000-byte line to stderr
//   stall        writes "stalled partial" to stderr (no line end) and never answers
//   ghost        two updates for a session nobody created, then one for the prompt's session
// session/new: ids "s1", "s2", ...; every prompt ends with end_turn.
import { createInterface } from "node:readline";

export const STDERR =
  "plain line\n" +
  "\x1b]0;owned title\x07title line\n" +
  "\x1b[2Jcleared\r\n" +
  "\x1b]52;c;cHduZWQ=\x07clipboard\n" +
  "\x1b[1;31mred\x1b[0m text\n" +
  "partial";

const out = (o) => process.stdout.write(JSON.stringify(o) + "\n");
let sessions = 0, next = 1;
const pending = new Map(); // our request id -> resolve

function call(method, params) {
  const id = next++;
  out({ jsonrpc: "2.0", id, method, params });
  return new Promise((resolve) => pending.set(id, resolve));
}

const say = (sessionId, text) =>
  out({ jsonrpc: "2.0", method: "session/update", params: { sessionId, update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } } } });

async function prompt(sid, text) {
  if (text.startsWith("term ")) {
    const cwd = text.slice(5);
    const r = await call("terminal/create", { sessionId: sid, command: "pwd", ...(cwd === "-" ? {} : { cwd }) });
    if (r.error) return say(sid, `refused: ${r.error.code} ${r.error.message}`);
    const terminalId = r.result.terminalId;
    await call("terminal/wait_for_exit", { sessionId: sid, terminalId });
    const o = await call("terminal/output", { sessionId: sid, terminalId });
    await call("terminal/release", { sessionId: sid, terminalId });
    return say(sid, `ok: ${o.result.output.trim()}`);
  }
  if (text === "stderr") return void (await new Promise((done) => process.stderr.write(STDERR, done)));
  if (text === "long") return void (await new Promise((done) => process.stderr.write("y".repeat(5000) + "\n", done)));
  if (text === "stall") {
    process.stderr.write("stalled partial");
    return new Promise(() => {});
  }
  if (text === "ghost") {
    say("ghost-1", "GHOST TEXT");
    say("ghost-1", "GHOST TEXT");
    return say(sid, "real text");
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const rl = createInterface({ input: process.stdin });
  rl.on("line", async (line) => {
    const m = JSON.parse(line);
    if (m.method === undefined) return pending.get(m.id)?.(m);
    if (m.method === "initialize")
      return out({ jsonrpc: "2.0", id: m.id, result: { protocolVersion: 1, agentCapabilities: {}, agentInfo: { name: "unsafe", version: "0" } } });
    if (m.method === "session/new") return out({ jsonrpc: "2.0", id: m.id, result: { sessionId: "s" + ++sessions } });
    if (m.method === "session/prompt") {
      await prompt(m.params.sessionId, m.params.prompt[0].text);
      return out({ jsonrpc: "2.0", id: m.id, result: { stopReason: "end_turn" } });
    }
    if (m.id !== undefined) out({ jsonrpc: "2.0", id: m.id, error: { code: -32601, message: "Method not found" } });
  });
  rl.on("close", () => process.exit(0));
}
