#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
// Mutation shim for checking that the suite catches broken behaviour (not run by ctest).
// It stands in for acp-agent: spawns the real one and breaks one rule on the way out, so that
//   ACP_AGENT=tests/interop-agent/mutate.mjs ACP_MUTATION=<name> ACP_REAL_AGENT=build/acp-agent \
//     node --test tests/interop-agent/<file>.test.mjs
// must report failures. Mutations:
//   load-early     the session/load response overtakes the replayed updates before it
//   resume-replay  a replayed user message is injected before the session/resume response
//   drop-user      user_message_chunk updates are dropped (replay loses the user's side)
//   no-cursor      nextCursor is removed from session/list results
//   cancel-ends    stopReason "cancelled" becomes "end_turn"
//   late-update    one agent_message_chunk is delayed until after its prompt's response
//   roots-leak     every additionalDirectories in session/list results is replaced by []
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";

const mutation = process.env.ACP_MUTATION;
const child = spawn(process.env.ACP_REAL_AGENT, process.argv.slice(2), { stdio: ["pipe", "pipe", "inherit"] });
const methods = new Map(); // request id -> method, from the client's lines
createInterface({ input: process.stdin }).on("line", (l) => {
  try {
    const m = JSON.parse(l);
    if (m && m.id !== undefined && m.method) methods.set(JSON.stringify(m.id), m.method);
  } catch {}
  child.stdin.write(l + "\n");
});
process.stdin.on("end", () => child.stdin.end());
child.on("exit", (code, signal) => (process.exitCode = code ?? (signal ? 128 : 1)));

const out = (m) => process.stdout.write(JSON.stringify(m) + "\n");
let held = []; // updates held back (load-early, late-update)
let userReplay = null;
createInterface({ input: child.stdout }).on("line", (l) => {
  const m = JSON.parse(l);
  const method = m.method ? null : methods.get(JSON.stringify(m.id));
  const u = m.method === "session/update" ? m.params.update : null;
  switch (mutation) {
    case "load-early":
      if (u) return void held.push(m);
      if (method === "session/load") {
        out(m);
        held.forEach(out);
        held = [];
        return;
      }
      held.forEach(out);
      held = [];
      break;
    case "resume-replay":
      if (u?.sessionUpdate === "user_message_chunk") userReplay = m;
      if (method === "session/resume" && m.result) {
        out(
          userReplay ?? {
            jsonrpc: "2.0",
            method: "session/update",
            params: { sessionId: "x", update: { sessionUpdate: "user_message_chunk", content: { type: "text", text: "old" } } },
          },
        );
      }
      break;
    case "drop-user":
      if (u?.sessionUpdate === "user_message_chunk") return;
      break;
    case "no-cursor":
      if (method === "session/list" && m.result) delete m.result.nextCursor;
      break;
    case "cancel-ends":
      if (m.result?.stopReason === "cancelled") m.result.stopReason = "end_turn";
      break;
    case "late-update":
      if (u?.sessionUpdate === "agent_message_chunk" && held.length === 0) return void held.push(m);
      if (method === "session/prompt") {
        out(m);
        held.forEach(out);
        held = [];
        return;
      }
      break;
    case "roots-leak":
      if (method === "session/list" && m.result) for (const s of m.result.sessions) if (s.additionalDirectories?.length) s.additionalDirectories = [];
      break;
  }
  out(m);
});
