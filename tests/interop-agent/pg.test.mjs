// SPDX-License-Identifier: Apache-2.0
// The same session lifecycle with acp-agent on the PostgreSQL store (issue 3: "a PostgreSQL backend for
// many agent processes on many hosts"; everything above the store is backend-blind). A throwaway
// cluster (scripts/pg-test-cluster.sh: unix socket only, no TCP) is started for this file and stopped
// after it; each test gets its own database. Skipped when no PostgreSQL server is installed.
// The session state (mode, config option values) is stored beside the history: the last test
// restarts the agent on it as surface.test.mjs does on SQLite.
import assert from "node:assert/strict";
import { after, before } from "node:test";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, readFileSync, realpathSync, chmodSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test, SOURCE, tempDir, rawAgent, sdkAgent, normalize, listAll, userMsg } from "./lib.mjs";

const CLUSTER = join(SOURCE, "scripts/pg-test-cluster.sh");
let state = null; // the cluster's STATE dir, or null when PostgreSQL is not installed
let uri = "";
let conninfo = "";
let dbs = 0;

before(() => {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "acp-itest-pg-")));
  chmodSync(dir, 0o755);
  const r = spawnSync("sh", [CLUSTER, "start", dir], { encoding: "utf8" });
  if (r.status === 77) {
    rmSync(dir, { recursive: true, force: true });
    return;
  }
  assert.equal(r.status, 0, `pg-test-cluster start: ${r.stderr}`);
  state = dir;
  uri = readFileSync(join(dir, "uri"), "utf8").trim();
  conninfo = readFileSync(join(dir, "conninfo"), "utf8").trim();
});

after(() => {
  if (!state) return;
  spawnSync("sh", [CLUSTER, "stop", state], { encoding: "utf8" });
  rmSync(state, { recursive: true, force: true });
});

// A fresh database for one test; returns its URI.
function newDb(t) {
  if (!state) {
    t.skip("no PostgreSQL server installed");
    return null;
  }
  const name = `itest${++dbs}`;
  execFileSync("psql", [conninfo, "-q", "-c", `CREATE DATABASE ${name}`]);
  return { uri: uri.replace("/postgres?", `/${name}?`), dump: () => execFileSync("pg_dump", [conninfo.replace("dbname=postgres", `dbname=${name}`)], { maxBuffer: 1 << 30 }).toString() };
}

test("PostgreSQL store: new, prompt, list and load in a fresh process, delete leaves no row with its text", async (t) => {
  const db = newDb(t);
  if (!db) return;
  const home = tempDir(t);
  const a = sdkAgent(t, { store: db.uri, home });
  await a.init();
  const keep = await a.newSession(home, { additionalDirectories: [join(home, "x")] });
  const gone = await a.newSession(home);
  const expected = [];
  for (const text of ["hello postgres", "/stream 5 7", "/title PG title"]) {
    const r = await a.prompt(keep, text);
    expected.push(userMsg(text), ...r.updates);
  }
  await a.prompt(gone, "PG-DOOMED-MARKER-51be");
  await a.end();
  const b = sdkAgent(t, { store: db.uri, home });
  await b.init();
  const list = (await b.request("session/list", {})).sessions;
  assert.deepEqual(list.map((s) => s.sessionId), [gone, keep], "newest first");
  assert.equal(list[1].title, "PG title");
  assert.deepEqual(list[1].additionalDirectories, [join(home, "x")]);
  await b.request("session/load", { sessionId: keep, cwd: home, mcpServers: [] });
  assert.deepEqual(normalize(b.updates(keep)), normalize(expected));
  assert.ok(db.dump().includes("PG-DOOMED-MARKER-51be"), "sanity: the marker is in the database before the delete");
  assert.deepEqual(await b.request("session/delete", { sessionId: gone }), {});
  await assert.rejects(b.request("session/load", { sessionId: gone, cwd: home, mcpServers: [] }), (e) => e.code === -32002);
  await b.end();
  assert.ok(!db.dump().includes("PG-DOOMED-MARKER-51be"), "the deleted session's history is still in the database");
});

test("PostgreSQL store: one process at a time has a session open; B's resume is -32010 until A exits, then replays both turns whole", async (t) => {
  const db = newDb(t);
  if (!db) return;
  const home = tempDir(t);
  const a = sdkAgent(t, { store: db.uri, home });
  const b = sdkAgent(t, { store: db.uri, home });
  await Promise.all([a.init(), b.init()]);
  const sid = await a.newSession(home);
  assert.ok((await b.request("session/list", {})).sessions.some((s) => s.sessionId === sid));
  const resume = () => b.request("session/resume", { sessionId: sid, cwd: home, mcpServers: [] });
  await assert.rejects(resume(), (e) => e.code === -32010 && e.data?.sessionId === sid && e.data.retryAfterMs > 0);
  const alpha = "alpha-" + "a".repeat(200_000);
  const beta = "beta-" + "b".repeat(200_000);
  assert.equal((await a.prompt(sid, alpha)).stopReason, "end_turn");
  await a.end(); // exiting gives A's leases up at once
  await resume();
  assert.equal((await b.prompt(sid, beta)).stopReason, "end_turn");
  await b.end();
  const c = sdkAgent(t, { store: db.uri, home });
  await c.init();
  await c.request("session/load", { sessionId: sid, cwd: home, mcpServers: [] });
  const msgs = new Map();
  for (const u of c.updates(sid)) {
    if (!u.sessionUpdate.endsWith("_message_chunk")) continue;
    const k = u.sessionUpdate + " " + u.messageId;
    msgs.set(k, (msgs.get(k) ?? "") + u.content.text);
  }
  const texts = [...msgs.entries()].map(([k, v]) => [k.split(" ")[0], v]);
  for (const text of [alpha, beta]) {
    assert.ok(texts.some(([k, v]) => k === "user_message_chunk" && v === text), `user message ${text.slice(0, 6)} not whole`);
    assert.ok(texts.some(([k, v]) => k === "agent_message_chunk" && v === text), `agent message ${text.slice(0, 6)} not whole`);
  }
  await c.end();
});

test("PostgreSQL store: kill -9 mid-/stream, every update the client received is replayed", async (t) => {
  const db = newDb(t);
  if (!db) return;
  const home = tempDir(t);
  const a = rawAgent(t, { store: db.uri, home });
  await a.init();
  const sid = await a.newSession(home);
  const from = a.lines.length;
  a.prompt(sid, "/stream 1000000 100");
  const chunks = () => a.updatesOf(sid, from).filter((e) => e.msg.params.update.sessionUpdate === "agent_message_chunk");
  await a.waitFor(() => chunks().length >= 300, from);
  await a.kill9();
  const received = chunks().map((e) => e.msg.params.update.content.text).join("");
  const b = rawAgent(t, { store: db.uri, home });
  await b.init();
  assert.ok((await listAll(b)).some((s) => s.sessionId === sid));
  const lf = b.lines.length;
  assert.ok((await b.request("session/load", { sessionId: sid, cwd: home, mcpServers: [] })).result);
  const replay = normalize(b.updatesOf(sid, lf).map((e) => e.msg.params.update));
  assert.equal(replay[0].content.text, "/stream 1000000 100");
  assert.ok(replay[1].content.text.startsWith(received), `replay holds ${replay[1].content.text.length} bytes, the client saw ${received.length}`);
  await b.end();
});

test("PostgreSQL store: list pagination with deletions between pages, exact cwd filter", async (t) => {
  const db = newDb(t);
  if (!db) return;
  const home = tempDir(t);
  const a = rawAgent(t, { store: db.uri, home });
  await a.init();
  const p = join(home, "p");
  const ids = await Promise.all(Array.from({ length: 130 }, (_, i) => a.newSession(i % 13 ? p : home)));
  const mine = new Set(ids.filter((_, i) => i % 13));
  const seen = new Set();
  const deleted = new Set();
  let page = (await a.request("session/list", { cwd: p })).result;
  assert.ok(page.nextCursor, "no nextCursor over 120 sessions");
  for (;;) {
    for (const s of page.sessions) {
      assert.equal(s.cwd, p);
      assert.ok(!seen.has(s.sessionId) && !deleted.has(s.sessionId), `${s.sessionId} repeated or deleted`);
      seen.add(s.sessionId);
    }
    if (!page.nextCursor) break;
    const unseen = [...mine].filter((id) => !seen.has(id) && !deleted.has(id));
    for (const id of unseen.slice(0, 2)) {
      await a.request("session/delete", { sessionId: id });
      deleted.add(id);
    }
    await a.newSession(p);
    page = (await a.request("session/list", { cwd: p, cursor: page.nextCursor })).result;
  }
  assert.deepEqual([...mine].filter((id) => !seen.has(id) && !deleted.has(id)), [], "sessions skipped");
  assert.equal((await a.request("session/list", { cursor: "bogus" })).error?.code, -32602);
  await a.end();
});

test("PostgreSQL store: modes and config options persist across a restart; load and resume return them, replies follow them", async (t) => {
  const db = newDb(t);
  if (!db) return;
  const home = tempDir(t);
  const a = sdkAgent(t, { store: db.uri, home });
  await a.init();
  const sid = await a.newSession(home);
  await a.request("session/set_mode", { sessionId: sid, modeId: "ask" });
  await a.request("session/set_config_option", { sessionId: sid, configId: "model", value: "echo-large" });
  await a.request("session/set_config_option", { sessionId: sid, configId: "verbose", value: "true" });
  await a.end();
  const current = (r) => [r.modes?.currentModeId, Object.fromEntries(r.configOptions.map((o) => [o.id, o.currentValue]))];
  const turn = async (c, text) => {
    const r = await c.prompt(sid, text);
    const of = (kind) => r.updates.filter((u) => u.sessionUpdate === kind).map((u) => u.content.text).join("");
    return [of("agent_thought_chunk"), of("agent_message_chunk")];
  };
  const b = sdkAgent(t, { store: db.uri, home });
  await b.init();
  assert.deepEqual(current(await b.request("session/load", { sessionId: sid, cwd: home, mcpServers: [] })), ["ask", { mode: "ask", model: "echo-large", verbose: "true" }]);
  assert.deepEqual(await turn(b, "pg"), ["mode: ask, model: echo-large", "pgpg"]);
  await b.prompt(sid, "/mode code"); // changes from the agent's side are stored too
  await b.prompt(sid, "/set model echo-small");
  await b.end();
  // a client that takes boolean options sees the stored verbose as a boolean
  const c = sdkAgent(t, { store: db.uri, home, clientCapabilities: { session: { configOptions: { boolean: {} } } } });
  await c.init();
  assert.deepEqual(current(await c.request("session/resume", { sessionId: sid, cwd: home, mcpServers: [] })), ["code", { mode: "code", model: "echo-small", verbose: true }]);
  assert.deepEqual(await turn(c, "pg"), ["mode: code, model: echo-small", "pg"]);
  await c.end();
});

test("PostgreSQL store: title, archive filter with paging, status and systemPrompt persist across processes (issue 22)", async (t) => {
  const db = newDb(t);
  if (!db) return;
  const home = tempDir(t);
  const a = rawAgent(t, { store: db.uri, home });
  await a.init();
  const ids = [];
  for (let i = 0; i < 55; i++) ids.push(await a.newSession(home));
  const sp = { mode: "append", content: [{ type: "text", text: "Keep it short." }] };
  const withSp = await a.newSession(home, { systemPrompt: sp });
  assert.equal((await a.request("session/set_title", { sessionId: ids[0], title: " Stored  title " })).result.title, "Stored title");
  for (const id of ids.slice(0, 40)) assert.deepEqual((await a.request("session/archive", { sessionId: id })).result, {});
  assert.equal((await a.request("session/status", { sessionId: withSp })).result.status, "open");
  await a.end();
  const b = rawAgent(t, { store: db.uri, home });
  await b.init();
  const exclude = await listAll(b);
  assert.equal(exclude.length, 16);
  assert.ok(exclude.every((s) => s.archived === false));
  const only = await listAll(b, { archived: "only" });
  assert.equal(new Set(only.map((s) => s.sessionId)).size, 40);
  assert.equal(only.find((s) => s.sessionId === ids[0]).title, "Stored title");
  assert.equal((await listAll(b, { archived: "include" })).length, 56);
  assert.equal((await b.request("session/status", { sessionId: withSp })).result.status, "saved");
  await b.request("session/load", { sessionId: withSp, cwd: home, mcpServers: [] });
  const said = await b.prompt(withSp, "/system");
  assert.ok(said.result, JSON.stringify(said.error));
  const text = b.lines.filter((l) => l.msg?.method === "session/update" && l.msg.params.update.sessionUpdate === "agent_message_chunk").map((l) => l.msg.params.update.content.text).join("");
  assert.match(text, /system prompt \(append\): Keep it short\./);
  assert.equal((await b.request("session/unarchive", { sessionId: ids[1] })).result !== undefined, true);
  assert.equal((await listAll(b)).length, 17);
  assert.equal((await b.request("session/archive", { sessionId: "sess_nope" })).error.code, -32002);
  await b.end();
});
