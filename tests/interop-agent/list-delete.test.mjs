// SPDX-License-Identifier: Apache-2.0
// session/list and session/delete of acp-agent: SessionInfo, order, exact cwd filter, cursors that stay
// correct while sessions come and go, malformed cursors, delete semantics (idempotent, active session,
// history gone from disk). Spec: session-list.mdx, session-delete.mdx (seed 003), REQUIREMENTS §6.8,
// §6.13; issue 3 "session/list", "session/delete".
import assert from "node:assert/strict";
import { join } from "node:path";
import { test, tempDir, makeDir, sdkAgent, rawAgent, listAll, clockPast, storeBytes, ISO8601, TRANSPORT } from "./lib.mjs";

async function list(a, params = {}) {
  const r = await a.request("session/list", params);
  assert.ok(r.result, `session/list ${JSON.stringify(params)} -> ${JSON.stringify(r.error)}`);
  return r.result;
}

// Creates a session and waits until the clock has moved past its updatedAt, so that the next
// session gets a strictly later one (order checks then do not depend on tie-breaking).
async function newSeparated(a, cwd) {
  const sid = await a.newSession(cwd);
  const info = (await listAll(a, { cwd })).find((s) => s.sessionId === sid);
  assert.ok(info, "new session not listed");
  await clockPast(info.updatedAt);
  return sid;
}

test("session/list: SessionInfo fields, newest first, exact cwd filter, empty result", async (t) => {
  const base = tempDir(t);
  const a = makeDir(join(base, "a"));
  const ab = makeDir(join(base, "ab"));
  const sub = makeDir(join(base, "a", "b"));
  const c = rawAgent(t, { store: join(base, "sessions.db") });
  await c.init();
  const empty = await list(c);
  assert.deepEqual(empty.sessions, []);
  assert.equal(empty.nextCursor ?? null, null, "nextCursor on an empty list");
  const sA1 = await newSeparated(c, a);
  const sSub = await newSeparated(c, sub);
  const sAb = await newSeparated(c, ab);
  const sA2 = await newSeparated(c, a);
  const all = await list(c);
  assert.deepEqual(all.sessions.map((s) => s.sessionId), [sA2, sAb, sSub, sA1], "not newest first");
  assert.equal(all.nextCursor ?? null, null, "nextCursor although there are no more sessions");
  for (const s of all.sessions) {
    assert.equal(typeof s.sessionId, "string");
    assert.ok(s.cwd.startsWith("/"), "cwd must be absolute");
    assert.match(s.updatedAt, ISO8601);
    assert.ok(s.title == null || typeof s.title === "string");
    assert.ok(s.additionalDirectories === undefined || Array.isArray(s.additionalDirectories));
  }
  const byCwd = await list(c, { cwd: a });
  assert.deepEqual(byCwd.sessions.map((s) => s.sessionId), [sA2, sA1], "cwd filter is not exact");
  assert.ok(byCwd.sessions.every((s) => s.cwd === a));
  assert.deepEqual((await list(c, { cwd: sub })).sessions.map((s) => s.sessionId), [sSub]);
  const none = await list(c, { cwd: join(base, "nothing-here") });
  assert.deepEqual(none.sessions, [], "MUST return an empty sessions array");
  assert.equal(none.nextCursor ?? null, null);
  // null params mean "no filter"
  assert.equal((await list(c, { cwd: null, cursor: null })).sessions.length, 4);
  await c.end();
});

test("session/list: malformed cursor -> -32602", async (t) => {
  const base = tempDir(t);
  const c = rawAgent(t, { store: join(base, "sessions.db") });
  await c.init();
  await c.newSession(base);
  for (const cursor of ["garbage", "%%%not base64%%%", Buffer.from('{"not":"a cursor"}').toString("base64"), "A", 12, { k: 1 }]) {
    const r = await c.request("session/list", { cursor });
    assert.equal(r.error?.code, -32602, `cursor ${JSON.stringify(cursor)} -> ${JSON.stringify(r)}`);
  }
  assert.equal((await list(c)).sessions.length, 1, "connection unusable after a bad cursor");
  await c.end();
});

test("session/list pagination over 300 sessions with creations and deletions between pages", async (t) => {
  const base = tempDir(t);
  const cwd = makeDir(join(base, "p"));
  const other = makeDir(join(base, "q"));
  const c = rawAgent(t, { store: join(base, "sessions.db") });
  await c.init();
  const initial = await Promise.all(Array.from({ length: 300 }, (_, i) => c.newSession(i % 10 === 0 ? other : cwd)));
  const mine = new Set(initial.filter((_, i) => i % 10 !== 0));
  const seen = [];
  const seenSet = new Set();
  const deletedUnseen = new Set();
  let page = await list(c, { cwd });
  const pageSize = page.sessions.length;
  assert.ok(pageSize > 0 && pageSize < mine.size, `page size ${pageSize}: the agent must paginate 270 sessions`);
  assert.ok(page.nextCursor, "no nextCursor although more sessions exist");
  let pages = 0;
  let prevUpdated = Infinity;
  for (;;) {
    pages++;
    assert.ok(page.sessions.length <= pageSize, "pages grew beyond the first page's size");
    for (const s of page.sessions) {
      assert.equal(s.cwd, cwd, "cwd filter lost across pages");
      assert.ok(!seenSet.has(s.sessionId), `session ${s.sessionId} repeated on page ${pages}`);
      assert.ok(!deletedUnseen.has(s.sessionId), `deleted session ${s.sessionId} listed on page ${pages}`);
      const u = Date.parse(s.updatedAt);
      assert.ok(u <= prevUpdated, "not newest first across pages");
      prevUpdated = u;
      seen.push(s.sessionId);
      seenSet.add(s.sessionId);
    }
    if (page.nextCursor == null) break;
    // churn between pages: 3 new sessions, 3 not-yet-seen and 2 already-seen ones deleted
    await Promise.all([c.newSession(cwd), c.newSession(cwd), c.newSession(cwd)]);
    const unseen = [...mine].filter((id) => !seenSet.has(id) && !deletedUnseen.has(id));
    for (const id of [unseen[0], unseen[Math.floor(unseen.length / 2)], unseen.at(-1)].filter(Boolean)) {
      if (deletedUnseen.has(id)) continue;
      assert.deepEqual((await c.request("session/delete", { sessionId: id })).result, {});
      deletedUnseen.add(id);
    }
    for (const id of seen.slice(-2)) assert.deepEqual((await c.request("session/delete", { sessionId: id })).result, {});
    page = await list(c, { cwd, cursor: page.nextCursor });
    assert.ok(pages < 1000, "pagination does not end");
  }
  const missing = [...mine].filter((id) => !seenSet.has(id) && !deletedUnseen.has(id));
  assert.deepEqual(missing, [], `${missing.length} sessions that stayed were skipped`);
  assert.ok(pages > 1);
  t.diagnostic(`page size ${pageSize}, ${pages} pages, ${deletedUnseen.size} deleted ahead of the cursor`);
  await c.end();

  // nextCursor only when more: exactly one page, then one more than a page
  const d = rawAgent(t, { store: join(base, "exact.db") });
  await d.init();
  await Promise.all(Array.from({ length: pageSize }, () => d.newSession(cwd)));
  const one = await list(d);
  assert.equal(one.sessions.length, pageSize);
  assert.equal(one.nextCursor ?? null, null, "nextCursor with exactly one full page and nothing more");
  await d.newSession(cwd);
  const p1 = await list(d);
  assert.ok(p1.nextCursor, "no nextCursor with one session more than a page");
  const p2 = await list(d, { cursor: p1.nextCursor });
  assert.equal(p2.sessions.length, 1);
  assert.equal(p2.nextCursor ?? null, null);
  await d.end();
});

test("session/delete: {} ; gone from list (also after a restart) ; load -> -32002 ; prompt refused", async (t) => {
  const base = tempDir(t);
  const store = join(base, "sessions.db");
  const a = sdkAgent(t, { store });
  await a.init();
  const keep = await a.newSession(base);
  const gone = await a.newSession(base);
  await a.prompt(gone, "some history");
  const r = await a.request("session/delete", { sessionId: gone });
  assert.deepEqual(r, {});
  const ids = (await a.request("session/list", {})).sessions.map((s) => s.sessionId);
  assert.deepEqual(ids, [keep]);
  await assert.rejects(a.request("session/load", { sessionId: gone, cwd: base, mcpServers: [] }), (e) => e.code === -32002);
  await assert.rejects(a.prompt(gone, "after delete"), (e) => typeof e.code === "number");
  await a.end();
  const b = rawAgent(t, { store });
  await b.init();
  assert.deepEqual((await listAll(b)).map((s) => s.sessionId), [keep]);
  assert.equal((await b.request("session/load", { sessionId: gone, cwd: base, mcpServers: [] })).error?.code, -32002);
  await b.end();
});

test("session/delete: unknown id and twice succeed silently (raw: the SDK would hide -32002)", async (t) => {
  const base = tempDir(t);
  const c = rawAgent(t, { store: join(base, "sessions.db") });
  await c.init();
  const r = await c.request("session/delete", { sessionId: "sess_never_existed_000000000000000" });
  assert.deepEqual(r.result, {}, JSON.stringify(r));
  const sid = await c.newSession(base);
  await c.request("session/close", { sessionId: sid }); // delete of an inactive stored session
  assert.deepEqual((await c.request("session/delete", { sessionId: sid })).result, {});
  const again = await c.request("session/delete", { sessionId: sid });
  assert.deepEqual(again.result, {}, `second delete: ${JSON.stringify(again)}`);
  // Over HTTP session/delete without a sessionId has no Acp-Session-Id to send: HTTP 400 there.
  if (TRANSPORT !== "http") assert.equal((await c.request("session/delete", {})).error?.code, -32602, "sessionId missing");
  await c.end();
});

test("session/delete during /sleep: the prompt answers cancelled, then the session is gone", async (t) => {
  const base = tempDir(t);
  const c = rawAgent(t, { store: join(base, "sessions.db") });
  await c.init();
  const sid = await c.newSession(base);
  const sleeping = c.prompt(sid, "/sleep 600000");
  await c.request("session/list", {});
  const del = await c.request("session/delete", { sessionId: sid });
  assert.deepEqual(del.result, {});
  const p = await sleeping;
  assert.equal(p.result?.stopReason, "cancelled", JSON.stringify(p));
  assert.deepEqual((await list(c)).sessions, []);
  assert.equal((await c.request("session/load", { sessionId: sid, cwd: base, mcpServers: [] })).error?.code, -32002);
  await c.end();
});

test("session/delete removes the history from disk (the store no longer holds a unique marker)", async (t) => {
  const base = tempDir(t);
  const store = join(base, "sessions.db");
  const a = sdkAgent(t, { store });
  await a.init();
  const doomed = "DOOMED-MARKER-3c9f1e7a";
  const kept = "KEPT-MARKER-8b2d6f04";
  const s1 = await a.newSession(base);
  const s2 = await a.newSession(base);
  await a.prompt(s1, `user says ${doomed}`);
  await a.prompt(s1, `/title title ${doomed}`);
  await a.prompt(s1, `/stream 50 200`);
  await a.prompt(s2, `user says ${kept}`);
  await a.end();
  assert.ok(storeBytes(store).includes(doomed), "sanity: the marker should be on disk before the delete");
  const b = sdkAgent(t, { store });
  await b.init();
  assert.deepEqual(await b.request("session/delete", { sessionId: s1 }), {});
  await b.end();
  const bytes = storeBytes(store);
  assert.ok(!bytes.includes(doomed), "deleted history is still in the store files (free pages or WAL)");
  assert.ok(bytes.includes(kept), "the other session's history went too");
});
