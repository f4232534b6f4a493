// SPDX-License-Identifier: Apache-2.0
// Store-level crash and sharing tests of acp-agent: kill -9 mid-turn loses nothing the client saw,
// a session/new response means the session is stored, two agent processes share one store file
// (one holds an open session's lease at a time: docs/agent.md, "Several processes on one store").
// Spec: issue 3 "The store" (durability rule, several processes on one file), seed 000 "Loading
// Sessions ... persistence across restarts and sharing sessions between different Client instances".
import assert from "node:assert/strict";
import { join } from "node:path";
import { execFileSync } from "node:child_process";
import { test, tempDir, rawAgent, sdkAgent, normalize, listAll, textOf } from "./lib.mjs";

// The store file is SQLite (issue 3): after a crash it must pass integrity_check before anyone reopens it.
function integrityOk(store) {
  const out = execFileSync("sqlite3", [store, "PRAGMA integrity_check;"], { encoding: "utf8" }).trim();
  assert.equal(out, "ok", `integrity_check after kill -9: ${out}`);
}

const chunkLines = (a, sid, from = 0) =>
  a.updatesOf(sid, from).filter((e) => e.msg.params.update.sessionUpdate === "agent_message_chunk");

test("kill -9 mid-/stream: every update the client received is in the replay after restart", async (t) => {
  const dir = tempDir(t);
  const store = join(dir, "sessions.db");
  const a = rawAgent(t, { store });
  await a.init();
  const sid = await a.newSession(dir);
  assert.equal((await a.prompt(sid, "first turn")).result?.stopReason, "end_turn");
  const from = a.lines.length;
  a.prompt(sid, "/stream 1000000 100");
  await a.waitFor(() => chunkLines(a, sid, from).length >= 500, from);
  await a.kill9();
  const received = chunkLines(a, sid, from).map((e) => e.msg.params.update.content.text).join("");
  assert.ok(received.length >= 500 * 100);
  integrityOk(store);

  const b = rawAgent(t, { store });
  await b.init();
  assert.ok((await listAll(b)).some((s) => s.sessionId === sid), "session lost by kill -9");
  const lf = b.lines.length;
  const ld = await b.request("session/load", { sessionId: sid, cwd: dir, mcpServers: [] });
  assert.ok(ld.result, JSON.stringify(ld));
  const replay = normalize(b.updatesOf(sid, lf).map((e) => e.msg.params.update));
  assert.deepEqual(
    replay.slice(0, 3).map((u) => [u.sessionUpdate, u.content.text]),
    [
      ["user_message_chunk", "first turn"],
      ["agent_message_chunk", "first turn"],
      ["user_message_chunk", "/stream 1000000 100"],
    ],
  );
  assert.equal(replay.length, 4, `unexpected replay shape: ${replay.map((u) => u.sessionUpdate)}`);
  const stored = replay[3].content.text;
  assert.ok(stored.length >= received.length, `store holds ${stored.length} bytes of the stream, client saw ${received.length}`);
  assert.ok(stored.startsWith(received), "the replayed stream differs from what the client received");
  // the store is healthy: the session goes on
  const p = await b.prompt(sid, "after the crash");
  assert.equal(p.result?.stopReason, "end_turn");
  await b.end();
});

test("kill -9 right after session/new responses: every answered session is stored", async (t) => {
  const dir = tempDir(t);
  const store = join(dir, "sessions.db");
  const a = rawAgent(t, { store });
  await a.init();
  for (let i = 0; i < 40; i++) a.request("session/new", { cwd: dir, mcpServers: [] });
  const answeredLines = () => a.lines.filter((l) => typeof l.msg.result?.sessionId === "string");
  await a.waitFor(() => answeredLines().length >= 20);
  await a.kill9();
  const got = answeredLines().map((l) => l.msg.result.sessionId); // everything the client read before the kill
  const b = rawAgent(t, { store });
  await b.init();
  const listed = new Set((await listAll(b)).map((s) => s.sessionId));
  const lost = got.filter((id) => !listed.has(id));
  assert.deepEqual(lost, [], `${lost.length} of ${got.length} answered sessions lost by kill -9`);
  await b.end();
});

test("two agent processes on one store: create/list across them; an idle holder's session is taken over by the other's load (its next request -32002 lease_lost), and back", async (t) => {
  const dir = tempDir(t);
  const store = join(dir, "sessions.db");
  const a = sdkAgent(t, { store });
  const b = sdkAgent(t, { store });
  await Promise.all([a.init(), b.init()]);
  const sid = await a.newSession(dir);
  await a.prompt(sid, "turn zero from A");
  const listedB = (await b.request("session/list", {})).sessions.map((s) => s.sessionId);
  assert.ok(listedB.includes(sid), "session created in A is not listed in B");
  // A holds the session's lease but no turn runs there: B's load takes it over at once
  await b.request("session/load", { sessionId: sid, cwd: dir, mcpServers: [] });
  assert.deepEqual(
    normalize(b.updates(sid)).map((u) => [u.sessionUpdate, u.content?.text]),
    [
      ["user_message_chunk", "turn zero from A"],
      ["agent_message_chunk", "turn zero from A"],
    ],
  );
  const beta = "beta-" + "b".repeat(300_000);
  // A is fenced: its next request says so, and nothing of A reaches the history
  await assert.rejects(a.request("session/prompt", { sessionId: sid, prompt: [{ type: "text", text: "A, fenced" }] }), (e) => {
    assert.equal(e.code, -32002, e.message);
    assert.equal(e.data?.reason, "lease_lost");
    return true;
  });
  assert.equal(textOf((await b.prompt(sid, beta)).updates), beta);
  // A's resume takes it back from B, idle again
  await a.request("session/resume", { sessionId: sid, cwd: dir, mcpServers: [] });
  // B's process ends (EOF): its leases go with it, and A takes the session back with B's turn in it
  await b.end();
  await a.request("session/load", { sessionId: sid, cwd: dir, mcpServers: [] });
  assert.ok(a.updates(sid).some((u) => u.sessionUpdate === "agent_message_chunk" && u.content.text === beta), "B's turn is not in A's replay");

  // a delete needs no lease: a third process deletes, A's list no longer shows it
  const c = sdkAgent(t, { store });
  await c.init();
  await c.request("session/delete", { sessionId: sid });
  assert.ok(!(await a.request("session/list", {})).sessions.some((s) => s.sessionId === sid), "deleted in C, still listed in A");
  await Promise.all([a.end(), c.end()]);
});

test("kill -9 of A mid-stream, B takes over and streams, kill -9 of B: store intact, each one's received stream stored", async (t) => {
  const dir = tempDir(t);
  const store = join(dir, "sessions.db");
  const a = rawAgent(t, { store });
  await a.init();
  const sid = await a.newSession(dir);
  const fa = a.lines.length;
  a.prompt(sid, "/stream 1000000 50");
  await a.waitFor(() => chunkLines(a, sid, fa).length >= 300, fa);
  const b = rawAgent(t, { store });
  await b.init();
  const refused = await b.request("session/load", { sessionId: sid, cwd: dir, mcpServers: [] });
  assert.equal(refused.error?.code, -32010, "B loaded a session A holds and streams into");
  assert.equal(refused.error.data?.reason, "turn_running");
  await a.kill9();
  // A's process is gone on this machine: B need not wait for its lease to expire
  const fb = b.lines.length;
  assert.ok((await b.request("session/load", { sessionId: sid, cwd: dir, mcpServers: [] })).result);
  const fb2 = b.lines.length;
  b.prompt(sid, "/stream 1000000 70");
  await b.waitFor(() => chunkLines(b, sid, fb2).length >= 300, fb2);
  await b.kill9();
  const got = [chunkLines(a, sid, fa), chunkLines(b, sid, fb2)].map((l) => l.map((e) => e.msg.params.update.content.text).join(""));
  const replayedToB = b.updatesOf(sid, fb, fb2).filter((e) => e.msg.params.update.sessionUpdate === "agent_message_chunk")
    .map((e) => e.msg.params.update.content.text).join("");
  assert.ok(replayedToB.startsWith(got[0]), "B's replay does not hold what A's client received");
  integrityOk(store);
  const c = rawAgent(t, { store });
  await c.init();
  const lf = c.lines.length;
  assert.ok((await c.request("session/load", { sessionId: sid, cwd: dir, mcpServers: [] })).result);
  const byMsg = new Map();
  for (const e of c.updatesOf(sid, lf)) {
    const u = e.msg.params.update;
    if (u.sessionUpdate !== "agent_message_chunk") continue;
    byMsg.set(u.messageId, (byMsg.get(u.messageId) ?? "") + u.content.text);
  }
  for (const [i, r] of got.entries()) {
    assert.ok(r.length >= 300 * [50, 70][i]);
    assert.ok([...byMsg.values()].some((s) => s.startsWith(r)), `process ${i ? "B" : "A"}: what its client received is not in the replay`);
  }
  await c.end();
});
