// SPDX-License-Identifier: Apache-2.0
// Two acp-agent processes on one store (issue 13, item 1: "silent data loss across processes"). A
// has a session open, B (another process on the same store) deletes it, then A writes for it: the
// request that wrote (a prompt, set_mode, set_config_option, a /title) is answered -32002 "deleted
// elsewhere", nothing of it is streamed as if stored, nothing brings the session back, and A has
// closed it. Also: a delete during a load's replay, a second process's load of a session A has open
// (refused: A holds its lease, issue 11), and the 60 prompts while B deletes six times, reduced.
// The SDK client is A; B is a raw client. ctest also runs this file on PostgreSQL
// (tests/pg/agent-on-pg.sh maps one --store path to one schema: the two agents share it).
import assert from "node:assert/strict";
import { join } from "node:path";
import { test, tempDir, sdkAgent, rawAgent, normalize, userMsg, CONVERSATION, TRANSPORT } from "./lib.mjs";

/** A's store and B, a raw client on the same store that deletes. */
async function twoAgents(t) {
  const home = tempDir(t);
  const store = join(home, "sessions.db");
  const a = sdkAgent(t, { store, home });
  const b = rawAgent(t, { store, home });
  await Promise.all([a.init(), b.init()]);
  const del = async (sid) => {
    const r = await b.request("session/delete", { sessionId: sid });
    assert.deepEqual(r.result, {}, `B's delete: ${JSON.stringify(r.error)}`);
  };
  return { home, store, a, b, del };
}

/** The error a request was answered with (it must fail). */
async function failure(p) {
  try {
    await p;
  } catch (e) {
    if (Number.isInteger(e?.code)) return e;
    throw e;
  }
  assert.fail("the request succeeded");
}

/** -32002 for sid: "deleted elsewhere" (the request that found it gone) or "not found" (A had
 * closed it already). */
function assertGone(e, sid, gone = true) {
  assert.equal(e.code, -32002, e.message);
  assert.equal(e.data?.sessionId, sid);
  assert.match(e.message, gone ? /deleted elsewhere/ : /not found/);
}

/** A has closed sid (a prompt finds it not open: the SDK hides -32002 for session/close), and
 * no process can load it: the failed write did not bring it back. */
async function assertClosed(t, env, sid) {
  const { a, b, home } = env;
  assertGone(await failure(a.request("session/prompt", { sessionId: sid, prompt: [{ type: "text", text: "again" }] })), sid, false);
  const r = await b.request("session/load", { sessionId: sid, cwd: home, mcpServers: [] });
  assert.equal(r.error?.code, -32002, "the deleted session came back");
  const list = await b.request("session/list", {});
  assert.ok(!list.result.sessions.some((s) => s.sessionId === sid), "the deleted session is listed");
}

const conversation = (a, sid, from) => a.updates(sid).slice(from).filter((u) => CONVERSATION.has(u.sessionUpdate));

test("A opens S, B deletes S, A prompts S: -32002, nothing streamed as stored, S closed on A", async (t) => {
  const env = await twoAgents(t);
  const { a, b, home, del } = env;
  const sid = await a.newSession(home);
  assert.equal((await a.prompt(sid, "kept")).stopReason, "end_turn");
  await del(sid);
  const before = a.updates(sid).length;
  assertGone(await failure(a.request("session/prompt", { sessionId: sid, prompt: [{ type: "text", text: "LOST-TURN" }] })), sid);
  assert.deepEqual(a.updates(sid).slice(before), [], "updates of a turn stored nowhere reached the client");
  await assertClosed(t, env, sid);
  await Promise.all([a.end(), b.end()]);
});

test("B deletes S during A's /sleep: the turn writes nothing more, and is still not end_turn", async (t) => {
  const env = await twoAgents(t);
  const { a, b, home, del } = env;
  const sid = await a.newSession(home);
  const p = a.request("session/prompt", { sessionId: sid, prompt: [{ type: "text", text: "/sleep 400" }] });
  await new Promise((r) => setTimeout(r, 50));
  await del(sid);
  assertGone(await failure(p), sid);
  await assertClosed(t, env, sid);
  await Promise.all([a.end(), b.end()]);
});

test("after B's delete, set_mode, set_config_option and a /title on A are -32002 and close S", async (t) => {
  const env = await twoAgents(t);
  const { a, b, home, del } = env;
  const changes = [
    (sid) => a.request("session/set_mode", { sessionId: sid, modeId: "ask" }),
    (sid) => a.request("session/set_config_option", { sessionId: sid, configId: "model", value: "echo-large" }),
    (sid) => a.request("session/prompt", { sessionId: sid, prompt: [{ type: "text", text: "/title never stored" }] }),
    (sid) => a.request("session/prompt", { sessionId: sid, prompt: [{ type: "text", text: "/mode ask" }] }),
  ];
  for (const change of changes) {
    const sid = await a.newSession(home);
    // Over Streamable HTTP the session's first update (its commands) comes on the session's
    // stream and the session/new answer on the connection's: it may arrive after the answer.
    if (TRANSPORT === "http") await a.waitFor((m) => m.method === "session/update" && m.params?.sessionId === sid);
    await del(sid);
    const before = a.updates(sid).length;
    assertGone(await failure(change(sid)), sid);
    const after = a.updates(sid).slice(before).map((u) => u.sessionUpdate);
    assert.deepEqual(after, [], `updates after the delete: ${after}`);
    await assertClosed(t, env, sid);
  }
  await Promise.all([a.end(), b.end()]);
});

test("delete during a load: the replay stops and the load is -32002, nothing stays open", async (t) => {
  const home = tempDir(t);
  const store = join(home, "sessions.db");
  const w = rawAgent(t, { store, home });
  await w.init();
  const sid = await w.newSession(home);
  // 16 MB of history: more than the agent queues (4 MiB) plus a replay step (2 MiB)
  const made = await w.prompt(sid, "/stream 80 200000");
  assert.equal(made.result?.stopReason, "end_turn");
  await w.end();
  const a = rawAgent(t, { store, home });
  const b = rawAgent(t, { store, home });
  await Promise.all([a.init(), b.init()]);
  const load = a.request("session/load", { sessionId: sid, cwd: home, mcpServers: [] });
  await a.waitFor((m) => m.method === "session/update" && m.params?.update?.sessionUpdate === "agent_message_chunk");
  a.st.pauseInput(); // A stops reading: the replay stalls on back-pressure
  await new Promise((r) => setTimeout(r, 200));
  const del = await b.request("session/delete", { sessionId: sid });
  assert.deepEqual(del.result, {});
  a.st.resumeInput();
  const r = await load;
  assert.equal(r.error?.code, -32002, `load answered ${JSON.stringify(r.result ?? r.error)}`);
  assert.equal(r.error.data?.sessionId, sid);
  assert.match(r.error.message, /deleted elsewhere/);
  const text = a.updatesOf(sid).filter((e) => e.msg.params.update.sessionUpdate === "agent_message_chunk")
    .reduce((n, e) => n + e.msg.params.update.content.text.length, 0);
  assert.ok(text < 80 * 200000, "the whole history was replayed although the load failed");
  const close = await a.request("session/close", { sessionId: sid });
  assert.equal(close.error?.code, -32002, "the failed load left the session open");
  await Promise.all([a.end(), b.end()]);
});

test("a session with a turn running in A cannot be loaded in C (-32010); a delete by B closes it on A, and then C finds it gone", async (t) => {
  const env = await twoAgents(t);
  const { a, b, home, del } = env;
  const sid = await a.newSession(home);
  const first = await a.prompt(sid, "from A before");
  const c = sdkAgent(t, { store: env.store, home });
  await c.init();
  // A idle would be taken over (lease.test.mjs): A streams while C asks
  const mark = a.msgs.length;
  const streaming = a.request("session/prompt", { sessionId: sid, prompt: [{ type: "text", text: "/stream 100000 10" }] });
  await a.waitFor((m) => m.method === "session/update" && m.params?.update?.sessionUpdate === "agent_message_chunk", mark);
  for (const method of ["session/load", "session/resume"]) {
    const e = await failure(c.request(method, { sessionId: sid, cwd: home, mcpServers: [] }));
    assert.equal(e.code, -32010, e.message);
    assert.equal(e.data?.sessionId, sid);
    assert.equal(e.data?.reason, "turn_running");
    assert.ok(e.data.retryAfterMs > 0, JSON.stringify(e.data));
  }
  await a.notify("session/cancel", { sessionId: sid });
  assert.equal((await streaming).stopReason, "cancelled");
  // the refused loads took nothing from A: it goes on, and its turns are stored
  const ra = await a.prompt(sid, "from A");
  assert.equal(ra.stopReason, "end_turn");
  await del(sid); // a delete needs no lease: the user's word beats an open session
  assertGone(await failure(a.request("session/set_mode", { sessionId: sid, modeId: "ask" })), sid);
  await assertClosed(t, env, sid);
  assertGone(await failure(c.request("session/load", { sessionId: sid, cwd: home, mcpServers: [] })), sid, false);
  assert.ok(first.updates.length > 0);
  await Promise.all([a.end(), b.end(), c.end()]);
});

// The issue: "the same happens for every one of 60 prompts while B deletes S six times". Six sessions,
// ten prompts each, B's delete racing them (not awaited by A); a session B leaves alone is prompted
// throughout and keeps everything A acknowledged.
test("60 prompts while B deletes six times: end_turn only while stored, then -32002; the untouched session keeps everything", async (t) => {
  const env = await twoAgents(t);
  const { a, b, home, store, del } = env;
  const keep = await a.newSession(home);
  const kept = [];
  for (let round = 0; round < 6; round++) {
    const sid = await a.newSession(home);
    let deleted = null; // settles when B's delete was answered
    let deletedAt = Infinity; // how many prompts had been sent by then
    let sent = 0;
    let goneSeen = false;
    for (let i = 0; i < 10; i++) {
      if (i === 1 + round) {
        deleted = new Promise((r) => setTimeout(r, round)).then(() => del(sid)).then(() => (deletedAt = sent));
      }
      if (i === 9) await deleted; // the last prompt is sent after the delete: it must fail
      const from = a.updates(sid).length;
      const p = a.request("session/prompt", { sessionId: sid, prompt: [{ type: "text", text: `turn ${round}.${i}` }] });
      const mine = ++sent;
      let e = null;
      try {
        assert.equal((await p).stopReason, "end_turn");
      } catch (err) {
        if (!Number.isInteger(err?.code)) throw err;
        e = err;
      }
      if (e) {
        assertGone(e, sid, !goneSeen);
        goneSeen = true;
        assert.deepEqual(conversation(a, sid, from), [], "a failed turn streamed updates as if stored");
      } else {
        assert.ok(!goneSeen, "end_turn after the session was found deleted");
        assert.ok(mine <= deletedAt, "end_turn for a prompt sent after B's delete was answered");
      }
      const k = await a.prompt(keep, `keep ${round}.${i}`);
      assert.equal(k.stopReason, "end_turn");
      kept.push(userMsg(`keep ${round}.${i}`), ...k.updates);
    }
    await deleted;
    assert.ok(goneSeen, "no prompt noticed the delete");
    await assertClosed(t, env, sid);
  }
  await a.request("session/close", { sessionId: keep }); // gives its lease up: C may load it
  const c = sdkAgent(t, { store, home });
  await c.init();
  await c.request("session/load", { sessionId: keep, cwd: home, mcpServers: [] });
  assert.deepEqual(normalize(c.updates(keep)), normalize(kept), "an acknowledged turn of the untouched session was lost");
  await Promise.all([a.end(), b.end(), c.end()]);
});
