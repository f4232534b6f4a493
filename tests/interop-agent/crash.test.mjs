// Store-level crash and sharing tests of acp-agent: kill -9 mid-turn loses nothing the client saw,
// a session/new response means the session is stored, two agent processes share one store file.
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

test("two agent processes on one store: create/list/load/delete across them; both prompting one session", async (t) => {
  const dir = tempDir(t);
  const store = join(dir, "sessions.db");
  const a = sdkAgent(t, { store });
  const b = sdkAgent(t, { store });
  await Promise.all([a.init(), b.init()]);
  const sid = await a.newSession(dir);
  await a.prompt(sid, "turn zero from A");
  const listedB = (await b.request("session/list", {})).sessions.map((s) => s.sessionId);
  assert.ok(listedB.includes(sid), "session created in A is not listed in B");
  await b.request("session/load", { sessionId: sid, cwd: dir, mcpServers: [] });
  assert.deepEqual(
    normalize(b.updates(sid)).map((u) => [u.sessionUpdate, u.content?.text]),
    [
      ["user_message_chunk", "turn zero from A"],
      ["agent_message_chunk", "turn zero from A"],
    ],
  );
  // both processes prompt the same session at once
  const alpha = "alpha-" + "a".repeat(300_000);
  const beta = "beta-" + "b".repeat(300_000);
  const [ra, rb] = await Promise.all([a.prompt(sid, alpha), b.prompt(sid, beta)]);
  assert.equal(textOf(ra.updates), alpha);
  assert.equal(textOf(rb.updates), beta);
  const [sa, sb] = await Promise.all([a.prompt(sid, "/stream 500 20"), b.prompt(sid, "/stream 400 30")]);
  assert.equal(sa.stopReason, "end_turn");
  assert.equal(sb.stopReason, "end_turn");

  // a third process replays: every message whole (grouped by messageId: two writers may interleave)
  const c = sdkAgent(t, { store });
  await c.init();
  await c.request("session/load", { sessionId: sid, cwd: dir, mcpServers: [] });
  const msgs = new Map();
  const order = [];
  for (const u of c.updates(sid)) {
    if (!u.sessionUpdate.endsWith("_message_chunk")) continue;
    assert.equal(typeof u.messageId, "string", "replayed chunk without messageId");
    const k = u.sessionUpdate + " " + u.messageId;
    if (!msgs.has(k)) {
      msgs.set(k, "");
      order.push(k);
    }
    msgs.set(k, msgs.get(k) + u.content.text);
  }
  const texts = order.map((k) => [k.split(" ")[0], msgs.get(k)]);
  const has = (kind, text) => texts.findIndex(([k, x]) => k === kind && x === text);
  for (const text of ["turn zero from A", alpha, beta]) {
    const u = has("user_message_chunk", text);
    const g = has("agent_message_chunk", text);
    assert.ok(u >= 0, `user message ${text.slice(0, 12)} missing or not whole`);
    assert.ok(g >= 0, `agent message ${text.slice(0, 12)} missing or not whole`);
    assert.ok(u < g, "the answer replays before its question");
  }
  const streams = texts.filter(([k, x]) => k === "agent_message_chunk" && /^[\x20-\x7e]+$/.test(x) && (x.length === 500 * 20 || x.length === 400 * 30));
  assert.equal(streams.length, 2, `the two /stream answers are not whole: ${texts.map(([k, x]) => k + ":" + x.length)}`);
  assert.equal(has("user_message_chunk", "/stream 500 20") >= 0 && has("user_message_chunk", "/stream 400 30") >= 0, true);

  // delete in B: A's list no longer shows it
  await b.request("session/delete", { sessionId: sid });
  assert.ok(!(await a.request("session/list", {})).sessions.some((s) => s.sessionId === sid), "deleted in B, still listed in A");
  await Promise.all([a.end(), b.end(), c.end()]);
});

test("kill -9 of two processes streaming into one session: store intact, each one's received stream stored", async (t) => {
  const dir = tempDir(t);
  const store = join(dir, "sessions.db");
  const a = rawAgent(t, { store });
  await a.init();
  const sid = await a.newSession(dir);
  const b = rawAgent(t, { store });
  await b.init();
  assert.ok((await b.request("session/load", { sessionId: sid, cwd: dir, mcpServers: [] })).result);
  const fa = a.lines.length;
  const fb = b.lines.length;
  a.prompt(sid, "/stream 1000000 50");
  b.prompt(sid, "/stream 1000000 70");
  await Promise.all([
    a.waitFor(() => chunkLines(a, sid, fa).length >= 300, fa),
    b.waitFor(() => chunkLines(b, sid, fb).length >= 300, fb),
  ]);
  await Promise.all([a.kill9(), b.kill9()]);
  const got = [a, b].map((x, i) => chunkLines(x, sid, [fa, fb][i]).map((e) => e.msg.params.update.content.text).join(""));
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
