// SPDX-License-Identifier: Apache-2.0
// A scripted agent that writes exact lines: for the tests of what a client must survive (bad
// input, silence, an agent that exits mid-turn). Raw NDJSON, no SDK: the point is to send what
// a well-behaved agent never would.
//
// initialize: loadSession false, nothing else advertised. session/new: ids "s1", "s2", ...
// A script (the params of a `_test/script` request, or the JSON text of a prompt) is run:
//   write:  lines written as they are (each followed by "\n"). The requests among them (lines
//           that parse to an object with an id and a method) are waited for: their answers
//           come back in the result's `answers`, in the order they arrived.
//   hex:    more lines, as hex: for bytes a JSON string cannot carry (invalid UTF-8).
//   nowait: true: the requests among the lines are not waited for.
//   big:    {bytes, id?}: one session/update line of about `bytes` bytes for session `sid`, or,
//           with `id` true, the answer to this very call padded to that size.
//   stop:   the prompt's stopReason (default "end_turn"); null: the prompt is never answered.
//   result: raw text written as the call's result instead; error: likewise, as its error.
//   exit:   exit with this code after writing; kill: a signal name to kill ourselves with.
//   sid:    the session `big` talks about.
// The answer is {stopReason, answers} (a prompt) or {answers} (_test/script).
// `_test/silent` is never answered; a $/cancel_request for it gets -32800 when its params say
// {"cancellable": true}. `_test/late` {ms} is answered after ms. `_test/received` answers the
// list of every message received so far (methods, ids and params as they came).
import { createInterface } from "node:readline";

const received = [];
const silent = new Map(); // id (JSON text) -> params
let sessions = 0;
let waiting = null; // {ids: Set, answers: [], done()}

const write = (s) => process.stdout.write(s + "\n");
const out = (o) => write(JSON.stringify(o));

function answer(id, result) {
  out({ jsonrpc: "2.0", id, result });
}

function run(script, id, isPrompt) {
  const lines = (script.write ?? []).map((l) => Buffer.from(l));
  for (const h of script.hex ?? []) lines.push(Buffer.from(h, "hex"));
  const ids = new Set();
  for (const l of lines) {
    try {
      const m = JSON.parse(l.toString());
      if (m && typeof m === "object" && m.method && m.id !== undefined) ids.add(JSON.stringify(m.id));
    } catch {}
  }
  const finish = (answers) => {
    if (script.big) {
      const pad = "x".repeat(script.big.bytes);
      if (script.big.id) {
        write(JSON.stringify({ jsonrpc: "2.0", id, result: { stopReason: "end_turn", pad } }));
        return;
      }
      out({ jsonrpc: "2.0", method: "session/update", params: { sessionId: script.sid, update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: pad } } } });
    }
    if (script.kill) process.kill(process.pid, script.kill);
    if (script.exit !== undefined) process.exit(script.exit);
    if (script.result !== undefined) {
      write(`{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${script.result}}`);
      return;
    }
    if (script.error !== undefined) {
      write(`{"jsonrpc":"2.0","id":${JSON.stringify(id)},"error":${script.error}}`);
      return;
    }
    if (isPrompt && script.stop === null) return;
    answer(id, isPrompt ? { stopReason: script.stop ?? "end_turn", _meta: { answers } } : { answers });
  };
  for (const l of lines) process.stdout.write(Buffer.concat([l, Buffer.from("\n")]));
  if (ids.size === 0 || script.nowait) return finish([]);
  waiting = { ids, answers: [], done: finish };
}

const rl = createInterface({ input: process.stdin });
rl.on("line", (line) => {
  let m;
  try {
    m = JSON.parse(line);
  } catch {
    received.push({ unparsable: line });
    return;
  }
  received.push(m);
  if (m.method === undefined) {
    // An answer to one of the script's requests.
    const key = JSON.stringify(m.id);
    if (waiting && waiting.ids.has(key)) {
      waiting.ids.delete(key);
      waiting.answers.push(m);
      if (waiting.ids.size === 0) {
        const w = waiting;
        waiting = null;
        w.done(w.answers);
      }
    }
    return;
  }
  switch (m.method) {
    case "initialize":
      return answer(m.id, { protocolVersion: 1, agentCapabilities: {}, agentInfo: { name: "script", version: "0" } });
    case "session/new":
      return answer(m.id, { sessionId: "s" + ++sessions });
    case "session/prompt": {
      const text = m.params?.prompt?.[0]?.text ?? "";
      let script;
      try {
        script = JSON.parse(text);
      } catch {
        script = { write: [JSON.stringify({ jsonrpc: "2.0", method: "session/update", params: { sessionId: m.params.sessionId, update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } } } })] };
      }
      return run(script, m.id, true);
    }
    case "session/cancel":
      return;
    case "_test/script":
      return run(m.params ?? {}, m.id, false);
    case "_test/silent":
      silent.set(JSON.stringify(m.id), m.params ?? {});
      return;
    case "_test/late":
      setTimeout(() => answer(m.id, {}), m.params?.ms ?? 0);
      return;
    case "_test/received":
      return answer(m.id, { received });
    case "$/cancel_request": {
      const key = JSON.stringify(m.params?.requestId);
      const p = silent.get(key);
      if (p && p.cancellable) {
        silent.delete(key);
        out({ jsonrpc: "2.0", id: m.params.requestId, error: { code: -32800, message: "Request cancelled" } });
      }
      return;
    }
    default:
      if (m.id !== undefined) out({ jsonrpc: "2.0", id: m.id, error: { code: -32601, message: "Method not found" } });
  }
});
rl.on("close", () => process.exit(0));
