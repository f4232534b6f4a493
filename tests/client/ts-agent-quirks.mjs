// SPDX-License-Identifier: Apache-2.0
// An agent written with the official TypeScript SDK that behaves the way real agents were
// seen to (tests/real-agents): it advertises sessionCapabilities.resume but answers -32601
// (qwen-code), puts the reason for an error in error.data (claude-agent-acp), gates sessions
// behind auth methods of the env_var type (codex-acp) and, for clients with auth.terminal, a
// terminal method. `acp` must work around or explain each. Prompts:
//   diff             a tool call with a changed file's diff and a new file's
//   plans            a plan, updated twice, then usage twice (redrawn in place on a TTY)
//   fail             an internal error whose data.details says why
//   exit N | kill    the agent exits with status N | is killed by SIGKILL, mid-turn
//   hang             says its pid, then never answers, nor exits at the end of its input
//                    (gemini-cli while it retries)
//   read PATH        asks the client for PATH (fs/read_text_file) and says what it got
//   write PATH TEXT  writes TEXT to PATH through the client (fs/write_text_file)
//   stop REASON      ends the turn with that stopReason
//   later            ends the turn, then asks a permission outside of it and says the answer
//   bad              updates that break the schema, one of a kind from the future, one without
//                    a sessionId, then a good one
//   anything else    echoed
// $QUIRKS_AUTH=VAR: sessions need authenticate first: env_var method "quirks-key" (vars:
// [{name: VAR}]) and "quirks-legacy" (varName: QUIRKS_LEGACY, the RFD's first draft) succeed
// when their variable is set in the agent's environment; "quirks-login" (terminal) is offered
// to clients with auth.terminal, as are two logins told in _meta the way other agents do:
// "quirks-qwen" (no type, _meta.type "terminal" and _meta.args: qwen-code) and "quirks-open"
// (no type, _meta["terminal-auth"] with a command: opencode); authenticate with those two
// succeeds once their login ran. Run with --login it is that sign-in program: it prints a
// line and exits 0 (1 when $QUIRKS_LOGIN_FAIL is set).
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

if (process.argv.includes("--login")) {
  console.log(`quirks login: QUIRKS_LOGIN=${process.env.QUIRKS_LOGIN ?? ""}`);
  process.exit(process.env.QUIRKS_LOGIN_FAIL ? 1 : 0);
}

const authVar = process.env.QUIRKS_AUTH;
let signedIn = !authVar;
let next = 0;
let stubborn = false;
const gate = () => {
  if (!signedIn) throw acp.RequestError.authRequired({}, "sign in first");
};

const app = acp
  .agent()
  .onRequest("initialize", ({ params }) => {
    const methods = [];
    if (authVar) {
      methods.push({ type: "env_var", id: "quirks-key", name: "Quirks key", description: "A key in the environment", vars: [{ name: authVar }] });
      methods.push({ type: "env_var", id: "quirks-legacy", name: "Legacy key", varName: "QUIRKS_LEGACY" });
      if (params.clientCapabilities?.auth?.terminal) {
        methods.push({ type: "terminal", id: "quirks-login", name: "Log in on the terminal", args: ["--login"], env: { QUIRKS_LOGIN: "1" } });
        methods.push({ id: "quirks-qwen", name: "qwen-style login", _meta: { type: "terminal", args: ["--login"] } });
        methods.push({ id: "quirks-open", name: "opencode-style login", _meta: { "terminal-auth": { command: process.execPath, args: [process.argv[1], "--login"], label: "Login" } } });
      }
    }
    return {
      protocolVersion: 1,
      agentCapabilities: { loadSession: true, sessionCapabilities: { resume: {}, close: {}, list: {} } },
      authMethods: methods,
      agentInfo: { name: "ts-agent-quirks", version: "1.0.0" },
    };
  })
  .onRequest("authenticate", ({ params }) => {
    if (["quirks-qwen", "quirks-open"].includes(params.methodId)) {
      signedIn = true; // its login ran (a real agent would check the credentials it stored)
      return {};
    }
    const v = params.methodId === "quirks-key" ? authVar : params.methodId === "quirks-legacy" ? "QUIRKS_LEGACY" : null;
    if (!v) throw acp.RequestError.invalidParams({}, `no such method ${params.methodId}`);
    if (!process.env[v]) throw acp.RequestError.authRequired({ details: `${v} is not set` }, "no key");
    signedIn = true;
    return {};
  })
  .onRequest("session/new", () => {
    gate();
    return { sessionId: `q-${next++}` };
  })
  .onRequest("session/list", () => {
    gate();
    return { sessions: [] };
  })
  .onRequest("session/resume", () => {
    throw acp.RequestError.methodNotFound("session/resume"); // advertised all the same
  })
  .onRequest("session/load", async ({ params, client }) => {
    gate();
    const send = (update) => client.notify("session/update", { sessionId: params.sessionId, update });
    await send({ sessionUpdate: "user_message_chunk", content: { type: "text", text: "replayed question" } });
    await send({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: "replayed answer" } });
    return {};
  })
  .onRequest("session/close", () => {
    throw acp.RequestError.internalError({ details: "close exploded" });
  })
  .onRequest("session/prompt", async ({ params, client }) => {
    gate();
    const text = params.prompt.map((b) => b.text ?? "").join("");
    const [cmd, ...rest] = text.split(" ");
    const send = (update) => client.notify("session/update", { sessionId: params.sessionId, update });
    const say = (t) => send({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: t } });
    if (cmd === "diff") {
      await send({
        sessionUpdate: "tool_call", toolCallId: "t1", title: "Edit a.txt", kind: "edit", status: "pending",
        content: [
          { type: "diff", path: "/w/a.txt", oldText: "one\ntwo\nthree\nfour\nfive\nsix\nseven\n", newText: "one\ntwo\n3\nfour\nfive\nsix\nseven\n" },
          { type: "diff", path: "/w/new.txt", newText: "hello\nworld\n" },
        ],
      });
      await send({ sessionUpdate: "tool_call_update", toolCallId: "t1", status: "completed", content: [{ type: "diff", path: "/w/a.txt", oldText: "x", newText: "y" }] });
    } else if (cmd === "plans") {
      const entries = (done) => ["first", "second", "third"].map((content, i) => ({ content, priority: "medium", status: i < done ? "completed" : i === done ? "in_progress" : "pending" }));
      for (let d = 0; d < 3; d++) await send({ sessionUpdate: "plan", entries: entries(d) });
      await send({ sessionUpdate: "usage_update", used: 10, size: 100 });
      await send({ sessionUpdate: "usage_update", used: 20, size: 100, cost: { amount: 0.5, currency: "EUR" } });
    } else if (cmd === "fail") {
      throw acp.RequestError.internalError({ details: "Claude Code process exited with code 1" });
    } else if (cmd === "exit") {
      process.exit(Number(rest[0]));
    } else if (cmd === "kill") {
      process.kill(process.pid, "SIGKILL");
    } else if (cmd === "hang") {
      stubborn = true;
      await say(`pid ${process.pid}\n`);
      return new Promise(() => {});
    } else if (cmd === "read") {
      try {
        const r = await client.request("fs/read_text_file", { sessionId: params.sessionId, path: rest[0] });
        await say(`read: ${r.content}`);
      } catch (e) {
        await say(`read refused: ${e.code}`);
      }
    } else if (cmd === "write") {
      try {
        await client.request("fs/write_text_file", { sessionId: params.sessionId, path: rest[0], content: rest.slice(1).join(" ") });
        await say("written");
      } catch (e) {
        await say(`write refused: ${e.code} ${e.message}`);
      }
    } else if (cmd === "bad") {
      await send({ sessionUpdate: "usage_update", size: 100 });
      await send({ sessionUpdate: "agent_message_chunk" });
      await send({ sessionUpdate: "future_kind", payload: 1 });
      await client.notify("session/update", { update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "lost" } } });
      await say("still fine");
    } else if (cmd === "later") {
      setTimeout(async () => {
        const options = [{ optionId: "yes", name: "Yes", kind: "allow_once" }, { optionId: "no", name: "No", kind: "reject_once" }];
        const r = await client.request("session/request_permission", { sessionId: params.sessionId, toolCall: { toolCallId: "late", title: "A late question" }, options });
        await say(`late answer: ${r.outcome.outcome === "selected" ? r.outcome.optionId : r.outcome.outcome}\n`);
      }, 300);
      await say("ok, later");
    } else if (cmd === "stop") {
      return { stopReason: rest[0] };
    } else {
      await say(text);
    }
    return { stopReason: "end_turn" };
  })
  .onNotification("session/cancel", () => {});

const conn = app.connect(acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
await conn.closed;
if (stubborn) await new Promise(() => setInterval(() => {}, 1000)); // only a signal ends it
process.exit(0); // pending timers must not keep an orphaned agent alive
