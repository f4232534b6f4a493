// SPDX-License-Identifier: Apache-2.0
// Subagent sessions (unstable, issue 22 item 6): the official SDK 2.4.0's unstable build as the
// client (ACP_UNSTABLE=1: lib.mjs checks every message against schema.unstable.json), acp-agent's
// echo engine making children with /subagent. What the schema's SubagentUpdate and
// SubagentCapabilities require, and the runtime's choices (docs/agent.md, "Subagent sessions"):
//   - only a client that advertised clientCapabilities.subagents gets subagent updates (lib.mjs
//     flags one sent to another client);
//   - the first subagent_update for a child comes before any traffic of the child (lib.mjs's turn
//     tracker flags child traffic that no announcement preceded);
//   - a child is restricted: prompt, close, load, delete of it are -32602 naming the parent; it is
//     not listed; it is deleted with its parent;
//   - a session/load of the parent (in a fresh agent process) replays the child's history right
//     after the update that announced it, in the order it was lived.
import assert from "node:assert/strict";
import { join } from "node:path";

import { test, sdkAgent, tempDir, textOf } from "./lib.mjs";

const SUBAGENTS = { subagents: {} };
const kinds = (us) => us.map((u) => u.sessionUpdate);

// One parent with a /subagent child: [parent id, child id, the wire updates of both in order].
async function withChild(t, a, dir, text) {
  const sid = await a.newSession(dir);
  const { stopReason } = await a.prompt(sid, `/subagent ${text}`);
  assert.equal(stopReason, "end_turn");
  const announce = a.updates(sid).find((u) => u.sessionUpdate === "subagent_update");
  assert.ok(announce, "no subagent_update on the parent");
  return { sid, child: announce.sessionId };
}

test("/subagent: announced on the parent before any child traffic, streamed into, then idle", async (t) => {
  const dir = tempDir(t);
  const a = sdkAgent(t, { store: join(dir, "s.db"), clientCapabilities: SUBAGENTS });
  await a.init();
  const { sid, child } = await withChild(t, a, dir, "find the bug");
  assert.notEqual(child, sid);
  const mine = a.all.filter((e) => e.sessionId === sid || e.sessionId === child);
  const first = mine.findIndex((e) => e.sessionId === child);
  const ann = mine.findIndex((e) => e.update.sessionUpdate === "subagent_update");
  assert.ok(ann >= 0 && ann < first, "the announcement precedes the child's traffic");
  assert.deepEqual(mine[ann].update, {
    sessionUpdate: "subagent_update",
    sessionId: child,
    title: "echo subagent",
    description: "find the bug",
    state: { state: "running" },
  });
  assert.deepEqual(kinds(a.updates(child)), ["user_message_chunk", "agent_message_chunk"]);
  assert.equal(textOf(a.updates(child)), "find the bug");
  const subs = a.updates(sid).filter((u) => u.sessionUpdate === "subagent_update");
  assert.deepEqual(subs.at(-1).state, { state: "idle", stopReason: "end_turn" });
  // every child update arrived before the parent's prompt response (the turn that made it)
  const resp = a.turns.done.get(sid);
  assert.ok(a.bySession.get(child).every((e) => e.seq < resp), "child traffic after the parent's response");
  assert.match(textOf(a.updates(sid).filter((u) => u.sessionUpdate !== "user_message_chunk")), new RegExp(child));
  assert.deepEqual(a.violations, []);
  await a.end();
});

test("a child is its parent's: prompt, close, load, delete refused -32602 naming the parent; not listed", async (t) => {
  const dir = tempDir(t);
  const a = sdkAgent(t, { store: join(dir, "s.db"), clientCapabilities: SUBAGENTS });
  await a.init();
  const { sid, child } = await withChild(t, a, dir, "x");
  const refused = (e) => e.code === -32602 && e.data?.parentSessionId === sid && e.message.includes(child);
  await assert.rejects(a.request("session/prompt", { sessionId: child, prompt: [{ type: "text", text: "hi" }] }), refused);
  await assert.rejects(a.request("session/close", { sessionId: child }), refused);
  await assert.rejects(a.request("session/load", { sessionId: child, cwd: dir, mcpServers: [] }), refused);
  await assert.rejects(a.request("session/resume", { sessionId: child, cwd: dir, mcpServers: [] }), refused);
  await assert.rejects(a.request("session/delete", { sessionId: child }), refused);
  await assert.rejects(a.request("session/set_mode", { sessionId: child, modeId: "ask" }), refused);
  // cancel is a notification: without the capability for this child it is ignored (the agent lives)
  await a.notify("session/cancel", { sessionId: child });
  const { sessions } = await a.request("session/list", {});
  assert.deepEqual(
    sessions.map((s) => s.sessionId),
    [sid],
  );
  await a.end();
});

test("session/load of the parent in a fresh agent replays each child right after its announcement", async (t) => {
  const dir = tempDir(t);
  const store = join(dir, "s.db");
  const a = sdkAgent(t, { store, clientCapabilities: SUBAGENTS });
  await a.init();
  const { sid, child } = await withChild(t, a, dir, "one");
  await a.prompt(sid, "between");
  const second = await a.prompt(sid, "/subagent two");
  const child2 = second.updates.find((u) => u.sessionUpdate === "subagent_update").sessionId;
  // the live order of the whole conversation, both sessions
  const lived = a.all
    .filter((e) => [sid, child, child2].includes(e.sessionId) && e.update.sessionUpdate !== "available_commands_update")
    .map((e) => [e.sessionId, e.update.sessionUpdate, e.update.content?.text ?? e.update.state?.state ?? null]);
  await a.end();

  const b = sdkAgent(t, { store, clientCapabilities: SUBAGENTS });
  await b.init();
  await b.request("session/load", { sessionId: sid, cwd: dir, mcpServers: [] });
  // the parent's prompts are history the client sent (replayed, never echoed live)
  const replayed = b.all
    .filter((e) => !["session_info_update", "available_commands_update"].includes(e.update.sessionUpdate))
    .filter((e) => !(e.sessionId === sid && e.update.sessionUpdate === "user_message_chunk"))
    .map((e) => [e.sessionId, e.update.sessionUpdate, e.update.content?.text ?? e.update.state?.state ?? null]);
  // chunk ids aside, the replay is the conversation as lived
  assert.deepEqual(replayed, lived);
  assert.deepEqual(b.violations, []);
  // the children are still their parent's after the restart
  await assert.rejects(b.request("session/prompt", { sessionId: child, prompt: [{ type: "text", text: "x" }] }), (e) => e.code === -32002 || e.code === -32602);
  await assert.rejects(b.request("session/load", { sessionId: child2, cwd: dir, mcpServers: [] }), (e) => e.code === -32602);
  await b.end();
});

test("a client without subagents: no subagent_update, no child traffic, live or replayed", async (t) => {
  const dir = tempDir(t);
  const store = join(dir, "s.db");
  const a = sdkAgent(t, { store, clientCapabilities: SUBAGENTS });
  await a.init();
  const { sid, child } = await withChild(t, a, dir, "secret work");
  await a.end();
  const b = sdkAgent(t, { store }); // advertises no subagents
  await b.init();
  await b.request("session/load", { sessionId: sid, cwd: dir, mcpServers: [] });
  assert.ok(!b.all.some((e) => e.sessionId === child || e.update.sessionUpdate === "subagent_update"), "child shown to a client without subagents");
  assert.ok(b.updates(sid).some((u) => u.sessionUpdate === "user_message_chunk"), "the parent's own history is replayed");
  const { updates } = await b.prompt(sid, "/subagent again");
  assert.match(textOf(updates), /the client did not advertise subagents/);
  assert.ok(!b.all.some((e) => e.update.sessionUpdate === "subagent_update"));
  assert.deepEqual(b.violations, []);
  await b.end();
});

test("--unstable-off subagents: /subagent says so, nothing announced", async (t) => {
  const dir = tempDir(t);
  const a = sdkAgent(t, { store: join(dir, "s.db"), clientCapabilities: SUBAGENTS, args: ["--unstable-off", "subagents"] });
  await a.init();
  const sid = await a.newSession(dir);
  const { updates } = await a.prompt(sid, "/subagent x");
  assert.match(textOf(updates), /switched off/);
  assert.ok(!a.all.some((e) => e.update.sessionUpdate === "subagent_update"));
  await a.end();
});

test("session/delete of the parent deletes its children (load -> -32002), also in a fresh agent", async (t) => {
  const dir = tempDir(t);
  const store = join(dir, "s.db");
  const a = sdkAgent(t, { store, clientCapabilities: SUBAGENTS });
  await a.init();
  const { sid, child } = await withChild(t, a, dir, "doomed");
  await a.request("session/delete", { sessionId: sid });
  await assert.rejects(a.request("session/load", { sessionId: child, cwd: dir, mcpServers: [] }), (e) => e.code === -32002);
  await a.request("session/delete", { sessionId: child }); // gone: a delete of nothing succeeds
  await a.end();
  const b = sdkAgent(t, { store, clientCapabilities: SUBAGENTS });
  await b.init();
  await assert.rejects(b.request("session/load", { sessionId: child, cwd: dir, mcpServers: [] }), (e) => e.code === -32002);
  assert.deepEqual((await b.request("session/list", {})).sessions, []);
  await b.end();
});
