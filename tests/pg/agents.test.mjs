// SPDX-License-Identifier: Apache-2.0
// Two acp-agent processes on one PostgreSQL store (issue 6), the official SDK as both clients:
// a session created through one is listed, loaded (full replay), prompted and deleted through the
// other; the lease in the database names its holder and moves between them (issue 11); history
// written by two processes in turn (checked in the database itself) is gapless and replays in
// exactly that commit order.
import test from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { tempDir, sdkAgent, normalize, userMsg, SOURCE } from "../interop-agent/lib.mjs";
import { freshDb, sql, PASSWORD } from "./pglib.mjs";

test("two agents on one postgresql:// store: create in A; list, load, prompt, delete in B", async (t) => {
  const dir = tempDir(t);
  const db = freshDb(t);
  const a = sdkAgent(t, { store: db.uri, cwd: dir });
  const b = sdkAgent(t, { store: db.uri, cwd: dir });
  await Promise.all([a.init(), b.init()]);
  const sid = await a.newSession(dir);
  const t1 = await a.prompt(sid, "/title shared on pg");
  const t2 = await a.prompt(sid, "hello from A");
  assert.equal(t2.stopReason, "end_turn");

  const info = (await b.request("session/list", {})).sessions.find((s) => s.sessionId === sid);
  assert.ok(info, "created in A, not listed in B");
  assert.equal(info.title, "shared on pg");
  assert.equal(info.cwd, dir);

  // A holds the lease (the database says who: host/pid/...); A is idle, so B's load takes it over
  const lease = () => sql(db.conninfo, `SELECT lease_holder, lease_epoch, lease_expires > clock_timestamp() FROM acp_sessions WHERE id = '${sid}'`)[0];
  const [holderA, epochA, fresh] = lease();
  assert.match(holderA, new RegExp(`/${a.st.proc.pid}/`), `lease_holder ${holderA} does not name A's process`);
  assert.equal(fresh, "t");
  await b.request("session/load", { sessionId: sid, cwd: dir, mcpServers: [] });
  const [holderB, epochB] = lease();
  assert.match(holderB, new RegExp(`/${b.st.proc.pid}/`));
  assert.ok(Number(epochB) > Number(epochA), "B's lease has no new epoch");
  await assert.rejects(a.request("session/prompt", { sessionId: sid, prompt: [{ type: "text", text: "A, fenced" }] }), (e) => e.code === -32002 && e.data?.reason === "lease_lost");
  const expected = [userMsg("/title shared on pg"), ...t1.updates, userMsg("hello from A"), ...t2.updates];
  assert.deepEqual(normalize(b.updates(sid)), normalize(expected), "B's replay is not A's conversation");

  const t3 = await b.prompt(sid, "hello from B");
  assert.equal(t3.stopReason, "end_turn");
  const rows = sql(db.conninfo, `SELECT count(*), max(seq) FROM acp_updates WHERE session_id = '${sid}'`);
  assert.equal(rows[0][0], rows[0][1], "seqs are not gapless");

  await b.request("session/delete", { sessionId: sid });
  assert.ok(!(await a.request("session/list", {})).sessions.some((s) => s.sessionId === sid), "deleted in B, listed in A");
  await assert.rejects(a.request("session/load", { sessionId: sid, cwd: dir, mcpServers: [] }), (e) => e.code === -32002);
  assert.deepEqual(sql(db.conninfo, `SELECT count(*) FROM acp_updates WHERE session_id = '${sid}'`), [["0"]]);
  assert.deepEqual(sql(db.conninfo, `SELECT count(*) FROM acp_sessions WHERE id = '${sid}'`), [["0"]]);
  await Promise.all([a.end(), b.end()]);
});

test("two agents taking turns on one session: every turn whole, seqs gapless, replay in commit order", async (t) => {
  const dir = tempDir(t);
  const db = freshDb(t);
  const a = sdkAgent(t, { store: db.uri, cwd: dir });
  const b = sdkAgent(t, { store: db.uri, cwd: dir });
  await Promise.all([a.init(), b.init()]);
  const sid = await a.newSession(dir);
  const turns = [];
  for (const [x, text] of [[a, "/stream 400 40"], [b, "/stream 300 70"], [a, "/stream 200 30"]]) {
    if (x === b || turns.length) await x.request("session/load", { sessionId: sid, cwd: dir, mcpServers: [] });
    const r = await x.prompt(sid, text);
    assert.equal(r.stopReason, "end_turn");
    turns.push([r, text]);
    await x.request("session/close", { sessionId: sid });
  }

  // The database: gapless seqs; each turn's chunks are exactly what its client got (consecutive
  // chunks of one message may be stored as one update, issue 3: the texts are compared joined).
  const rows = sql(db.conninfo, `SELECT seq, body FROM acp_updates WHERE session_id = '${sid}' ORDER BY seq`);
  rows.forEach(([seq], i) => assert.equal(Number(seq), i + 1, "seqs are not gapless"));
  const stored = rows.map(([, body]) => JSON.parse(body));
  for (const [r, text] of turns) {
    const live = r.updates.filter((u) => u.sessionUpdate === "agent_message_chunk");
    const mid = live[0].messageId;
    const mine = stored.filter((u) => u.sessionUpdate === "agent_message_chunk" && u.messageId === mid);
    assert.equal(mine.map((u) => u.content.text).join(""), live.map((u) => u.content.text).join(""), `${text}: stored turn not whole or reordered`);
    const q = stored.findIndex((u) => u.sessionUpdate === "user_message_chunk" && u.content.text === text);
    assert.ok(q >= 0 && q < stored.indexOf(mine[0]), `${text}: the question is not stored before its answer`);
  }

  // A third process replays exactly the stored order (commit order), coalescing allowed.
  const c = sdkAgent(t, { store: db.uri, cwd: dir });
  await c.init();
  await c.request("session/load", { sessionId: sid, cwd: dir, mcpServers: [] });
  assert.deepEqual(normalize(c.updates(sid)), normalize(stored), "replay order differs from commit order");
  await Promise.all([a.end(), b.end(), c.end()]);
});

test("MCP env values and the URI's password never reach the database", async (t) => {
  const dir = tempDir(t);
  const db = freshDb(t);
  const a = sdkAgent(t, { store: db.uri, cwd: dir });
  await a.init();
  const secret = "PG-SECRET-" + Math.random().toString(36).slice(2);
  const server = {
    name: "ev",
    command: process.execPath,
    args: [join(SOURCE, "node_modules/@modelcontextprotocol/server-everything/dist/index.js"), "stdio"],
    env: [{ name: "ACP_ITEST_SECRET", value: secret }],
  };
  let sid;
  try {
    sid = await a.newSession(dir, { mcpServers: [server] });
  } catch (e) {
    t.skip(`session/new with a stdio MCP server refused (${e.message})`);
    await a.end();
    return;
  }
  assert.equal((await a.prompt(sid, "hi")).stopReason, "end_turn");
  await a.request("session/load", { sessionId: sid, cwd: dir, mcpServers: [server] });
  await a.end();
  // Everything the store holds, as text.
  const dump = sql(
    db.conninfo,
    "SELECT string_agg(t, ' ') FROM (SELECT row_to_json(s)::text AS t FROM acp_sessions s" +
      " UNION ALL SELECT row_to_json(u)::text FROM acp_updates u) x",
  )[0][0];
  assert.ok(dump.includes(sid), "sanity: the dump holds the session");
  assert.ok(!dump.includes(secret), "an MCP env value was written to the store");
  assert.ok(!dump.includes(PASSWORD), "the store URI's password was written to the store");
});
