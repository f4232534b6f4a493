// SPDX-License-Identifier: Apache-2.0
// The PostgreSQL server stops in the middle of a prompt and comes back (issue 6): the prompt gets a
// clear JSON-RPC error (-32603 "session store unavailable: ..."), so does every request that needs
// the store while it is down, the agent recovers by itself once the server is back, and the store is
// consistent: gapless, holding at least everything the client received (commit before send), nothing
// half-written. The password in the store URI never appears in any message or log. Uses its own
// cluster (fixture pg_outage_node) since it stops the server.
import test from "node:test";
import assert from "node:assert/strict";
import { tempDir, rawAgent, normalize } from "../interop-agent/lib.mjs";
import { freshDb, sql, cluster, PASSWORD } from "./pglib.mjs";

const CLUSTER = "pg_outage_node";
const UNAVAILABLE = /^session store unavailable: /;

function assertUnavailable(r, what) {
  assert.ok(r.error, `${what} succeeded while the server was down: ${JSON.stringify(r.result)?.slice(0, 200)}`);
  assert.equal(r.error.code, -32603, `${what}: ${JSON.stringify(r.error)}`);
  assert.match(r.error.message, UNAVAILABLE, `${what}: ${r.error.message}`);
  assert.ok(!JSON.stringify(r.error).includes(PASSWORD), `${what}: the password is in the error`);
}

const chunks = (a, sid, from) =>
  a.updatesOf(sid, from).filter((e) => e.msg.params.update.sessionUpdate === "agent_message_chunk");

test("server stopped mid-prompt: clear errors while down, recovery after, store consistent", async (t) => {
  const dir = tempDir(t);
  const db = freshDb(t, CLUSTER);
  t.after(() => cluster("up", CLUSTER).catch(() => {})); // never leave the fixture's server down
  const a = rawAgent(t, { store: db.uri, cwd: dir });
  await a.init();
  const sid = await a.newSession(dir);
  assert.equal((await a.prompt(sid, "before the outage")).result?.stopReason, "end_turn");

  const from = a.lines.length;
  const streaming = a.prompt(sid, "/stream 1000000 100");
  await a.waitFor(() => chunks(a, sid, from).length >= 200, from);
  await cluster("down", CLUSTER);
  const r = await streaming;
  assertUnavailable(r, "the prompt running when the server stopped");
  t.diagnostic(`prompt: ${r.error.message}`);
  const received = chunks(a, sid, from).map((e) => e.msg.params.update.content.text).join("");

  // While down: every request that needs the store fails the same clear way, and promptly.
  const down = await a.request("session/list", {});
  assertUnavailable(down, "session/list");
  t.diagnostic(`list: ${down.error.message}`);
  assertUnavailable(await a.request("session/new", { cwd: dir, mcpServers: [] }), "session/new");
  assertUnavailable(await a.prompt(sid, "while down"), "session/prompt");

  await cluster("up", CLUSTER);
  // Recovery by itself: the same agent process serves the store again once its backoff allows.
  let listed;
  for (let i = 0; i < 600 && !listed?.result; i++) {
    listed = await a.request("session/list", {});
    if (!listed.result) await new Promise((res) => setTimeout(res, 100));
  }
  assert.ok(listed.result, `no recovery: ${JSON.stringify(listed.error)}`);
  assert.deepEqual(listed.result.sessions.map((s) => s.sessionId), [sid], "a session appeared or vanished");
  assert.equal((await a.prompt(sid, "after the outage")).result?.stopReason, "end_turn");
  assert.ok(!a.st.stderr.includes(PASSWORD), "the password is in the agent's log");
  await a.end();

  // Consistent: gapless seqs; a fresh process replays the whole conversation, the interrupted stream
  // holding at least what the client saw, and nothing of the requests refused while down.
  const [[n, max]] = sql(db.conninfo, `SELECT count(*), coalesce(max(seq), 0) FROM acp_updates WHERE session_id = '${sid}'`);
  assert.equal(n, max, "seqs are not gapless");
  const b = rawAgent(t, { store: db.uri, cwd: dir });
  await b.init();
  const lf = b.lines.length;
  const ld = await b.request("session/load", { sessionId: sid, cwd: dir, mcpServers: [] });
  assert.ok(ld.result, JSON.stringify(ld.error));
  const replay = normalize(b.updatesOf(sid, lf).map((e) => e.msg.params.update)).map((u) => [u.sessionUpdate, u.content?.text]);
  assert.deepEqual(replay.slice(0, 3), [
    ["user_message_chunk", "before the outage"],
    ["agent_message_chunk", "before the outage"],
    ["user_message_chunk", "/stream 1000000 100"],
  ]);
  const stored = replay[3][1];
  assert.ok(received.length >= 200 * 100);
  assert.ok(stored.startsWith(received) && stored.length >= received.length, `stored ${stored.length} bytes of the stream, the client saw ${received.length}`);
  assert.deepEqual(replay.slice(4), [
    ["user_message_chunk", "after the outage"],
    ["agent_message_chunk", "after the outage"],
  ]);
  await b.end();
});
