// SPDX-License-Identifier: Apache-2.0
// Session leases (issue 11, part 3; issue 22, item 7): two acp-agent processes on one store. B's
// load takes a session over from A when A is alive but idle (A's next request is -32002 lease_lost);
// while A has a turn running B is refused -32010 with reason "turn_running" and a retry hint that
// holds (retrying once the turn's answer is out succeeds). A killed mid-stream, B takes the session
// over and replays everything A's client received; A paused past its lease's TTL, B takes over, and
// A, resumed, is fenced out: its turn ends -32002 (lease_lost) and nothing it does reaches the
// history B now writes. The official SDK as the clients: two processes, and two connections of one
// `acp-agent --listen`. ctest runs this file on SQLite and, through tests/pg/agent-on-pg.sh, on
// PostgreSQL (one --store path is one store there too).
import assert from "node:assert/strict";
import { join } from "node:path";
import { WebSocket } from "ws";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";
import { test, acp, tempDir, rawAgent, sdkAgent, normalize, listeningAgent, wsHeaders, TRANSPORT } from "./lib.mjs";

const TTL = 1500; // short, so the test waits little: it is the agents' own flag
const ON_PG = (process.env.ACP_AGENT ?? "").endsWith("agent-on-pg.sh");

const chunks = (x, sid, from = 0, to = Infinity) =>
  x.updatesOf(sid, from, to).filter((e) => e.msg.params.update.sessionUpdate === "agent_message_chunk");
const text = (lines) => lines.map((e) => e.msg.params.update.content.text).join("");
const load = (x, sid, home) => x.request("session/load", { sessionId: sid, cwd: home, mcpServers: [] });

function assertBusy(r, sid) {
  assert.equal(r.error?.code, -32010, `expected the lease refusal, got ${JSON.stringify(r.result ?? r.error)}`);
  assert.equal(r.error.data?.sessionId, sid);
  assert.equal(r.error.data?.reason, "turn_running");
  const wait = r.error.data?.retryAfterMs;
  assert.ok(Number.isInteger(wait) && wait >= 0 && wait <= Math.min(TTL, 1000), `retryAfterMs ${wait}: a poll within the TTL`);
  return wait;
}

function assertLost(r, sid, what = "") {
  assert.equal(r.error?.code, -32002, `${what}: expected lease_lost, got ${JSON.stringify(r.result ?? r.error)}`);
  assert.equal(r.error.data?.sessionId, sid);
  assert.equal(r.error.data?.reason, "lease_lost");
  assert.match(r.error.message, /taken over by another agent/);
}

/** Loads sid in x, waiting out refusals as their retry hint says; returns how many were refused. */
async function loadWhenFree(x, sid, home) {
  for (let refused = 0; ; refused++) {
    const r = await load(x, sid, home);
    if (r.result) return refused;
    const wait = assertBusy(r, sid);
    assert.ok(refused < 20, "the lease never came free");
    await new Promise((res) => setTimeout(res, wait + 20));
  }
}

async function twoAgents(t, aOpts = {}) {
  const home = tempDir(t);
  const store = join(home, "sessions.db");
  const args = ["--lease-ttl", String(TTL)];
  const a = rawAgent(t, { store, home, args, ...aOpts });
  const b = rawAgent(t, { store, home, args });
  await Promise.all([a.init(), b.init()]);
  return { home, store, a, b, args };
}

test("A opens S: B's load is refused while A streams; kill -9 A mid-/stream 100000 10: B loads and replays every update A's client received", async (t) => {
  const { home, a, b } = await twoAgents(t);
  const sid = await a.newSession(home);
  assert.equal((await a.prompt(sid, "before the stream")).result?.stopReason, "end_turn");
  const from = a.lines.length;
  a.prompt(sid, "/stream 100000 10");
  await a.waitFor(() => chunks(a, sid, from).length >= 2000, from);
  assertBusy(await load(b, sid, home), sid); // A streaming
  assert.equal(b.updatesOf(sid).length, 0, "a refused load replayed history");
  await a.kill9();
  const received = text(chunks(a, sid, from));
  // A's process is gone: on this machine B need not even wait out the TTL (elsewhere it would)
  const lf = b.lines.length;
  assert.equal(await loadWhenFree(b, sid, home), 0, "A is dead on this machine: B waited for its lease");
  const replay = normalize(b.updatesOf(sid, lf).map((e) => e.msg.params.update));
  assert.deepEqual(replay.slice(0, 3).map((u) => [u.sessionUpdate, u.content?.text]), [
    ["user_message_chunk", "before the stream"],
    ["agent_message_chunk", "before the stream"],
    ["user_message_chunk", "/stream 100000 10"],
  ]);
  const streamed = replay.slice(3).filter((u) => u.sessionUpdate === "agent_message_chunk").map((u) => u.content.text).join("");
  assert.ok(received.length >= 20000);
  assert.ok(streamed.startsWith(received), `replay holds ${streamed.length} bytes of the stream, A's client saw ${received.length}`);
  // B holds S idle now: a third process takes it over, and B hears so at its next request
  const c = rawAgent(t, { store: join(home, "sessions.db"), home, args: ["--lease-ttl", String(TTL)] });
  await c.init();
  assert.ok((await load(c, sid, home)).result);
  const bl = b.lines.length;
  assertLost(await b.prompt(sid, "B after C took it"), sid);
  assert.equal(b.updatesOf(sid, bl).length, 0, "B sent updates for a session taken from it");
  assert.equal((await c.prompt(sid, "C goes on")).result?.stopReason, "end_turn");
  await Promise.all([b.end(), c.end()]);
});

// On SQLite a process paused inside a write transaction holds the file's write lock, and every
// other process waits for it (docs/store.md): A is paused between writes there, in a turn waiting
// for the client's answer to a permission request (/ask, held unanswered). On PostgreSQL a statement
// never waits for its client, so A is paused mid-/stream.
test("SIGSTOP A past its lease's TTL: B takes over; SIGCONT A: A's turn is -32002 lease_lost and nothing of A interleaves with B", async (t) => {
  const { home, store, a, b, args } = await twoAgents(t, { permission: "hold" });
  const sid = await a.newSession(home);
  const from = a.lines.length;
  const turn = ON_PG ? "/stream 100000 10" : "/ask";
  const pa = a.prompt(sid, turn);
  if (ON_PG) await a.waitFor(() => chunks(a, sid, from).length >= 500, from);
  else await a.waitFor((m) => m.method === "session/request_permission", from);
  assertBusy(await load(b, sid, home), sid);
  a.st.proc.kill("SIGSTOP");
  t.after(() => a.st.proc.kill("SIGCONT"));
  // A stopped renewing: B gets S once the lease runs out, by the retry hint
  const lf = b.lines.length;
  assert.ok((await loadWhenFree(b, sid, home)) >= 1, "B took the session over while A's lease was fresh");
  const takenOver = text(chunks(b, sid, lf));
  assert.equal((await b.prompt(sid, "B after the takeover")).result?.stopReason, "end_turn");
  a.st.proc.kill("SIGCONT");
  const ra = await pa;
  assert.equal(ra.error?.code, -32002, `A's turn after the takeover: ${JSON.stringify(ra.result ?? ra.error)}`);
  assert.equal(ra.error.data?.sessionId, sid);
  assert.equal(ra.error.data?.reason, "lease_lost");
  assert.match(ra.error.message, /taken over by another agent/);
  // A's client saw nothing that is not stored: all of it was in B's replay
  assert.ok(takenOver.startsWith(text(chunks(a, sid, from))), "A's client received updates B's replay lacks");
  // A has closed S: its next prompt is refused too
  assertLost(await a.request("session/prompt", { sessionId: sid, prompt: [{ type: "text", text: "A again" }] }), sid);
  // The history: A's part exactly as B replayed it, then B's turn; nothing of A after the takeover
  await b.request("session/close", { sessionId: sid });
  const c = rawAgent(t, { store, home, args });
  await c.init();
  const cf = c.lines.length;
  assert.ok((await load(c, sid, home)).result);
  const stored = normalize(c.updatesOf(sid, cf).map((e) => e.msg.params.update));
  const kinds = stored.map((u) => [u.sessionUpdate, u.sessionUpdate.endsWith("_chunk") && u.sessionUpdate !== "agent_message_chunk" ? u.content.text : null]);
  assert.deepEqual(kinds.filter(([k]) => k === "user_message_chunk").map(([, x]) => x), [turn, "B after the takeover"]);
  const ofA = stored.slice(0, stored.findIndex((u) => u.sessionUpdate === "user_message_chunk" && u.content.text === "B after the takeover"));
  assert.equal(ofA.filter((u) => u.sessionUpdate === "agent_message_chunk").map((u) => u.content.text).join(""), takenOver, "A's part of the history changed after B took over");
  assert.equal(stored.at(-1).content?.text, "B after the takeover");
  await Promise.all([a.end(), b.end(), c.end()]);
});

// --- taking over with the official SDK as the clients ------------------------------------------------

/** What the SDK rejects a request with, as {error} (or {result}). */
const settle = (p) => p.then((result) => ({ result }), (e) => ({ error: { code: e.code, message: e.message, data: e.data } }));

/**
 * The scenario of issue 22, item 7, for two SDK clients x and y on one store (two processes, or two
 * connections of one listening agent): x idle is taken over by y's load at once; x's next request is
 * -32002 lease_lost and x gets nothing more of the session; x takes it back with resume; while x has a
 * turn running (a permission held unanswered) y is refused with the honest hint, and the retry after
 * it, once x's turn answered, goes through.
 * x, y: {request(method, params), updates(sid) (session/update params seen), held (permission waits)}
 */
async function takeOver(home, x, y) {
  const { sessionId: sid } = await x.request("session/new", { cwd: home, mcpServers: [] });
  assert.equal((await x.request("session/prompt", { sessionId: sid, prompt: [{ type: "text", text: "x first" }] })).stopReason, "end_turn");
  // x is idle: y takes over at once and replays x's turn
  await y.request("session/load", { sessionId: sid, cwd: home, mcpServers: [] });
  assert.deepEqual(y.updates(sid).filter((u) => u.update.sessionUpdate === "user_message_chunk").map((u) => u.update.content.text), ["x first"]);
  const seen = x.updates(sid).length;
  assertLost(await settle(x.request("session/prompt", { sessionId: sid, prompt: [{ type: "text", text: "x again" }] })), sid, "prompt");
  assertLost(await settle(x.request("session/set_mode", { sessionId: sid, modeId: "code" })), sid, "set_mode");
  assert.equal((await y.request("session/prompt", { sessionId: sid, prompt: [{ type: "text", text: "y turn" }] })).stopReason, "end_turn");
  assert.equal(x.updates(sid).length, seen, "x got updates of a session taken from it");
  // x takes it back (y idle) and runs a turn that waits for its client
  await x.request("session/resume", { sessionId: sid, cwd: home, mcpServers: [] });
  const turn = x.request("session/prompt", { sessionId: sid, prompt: [{ type: "text", text: "/ask" }] });
  for (let i = 0; i < 6000 && x.held.length === 0; i++) await new Promise((r) => setTimeout(r, 5));
  assert.equal(x.held.length, 1, "x's turn never asked for permission");
  const busy = await settle(y.request("session/load", { sessionId: sid, cwd: home, mcpServers: [] }));
  const wait = assertBusy(busy, sid);
  assert.equal((await settle(y.request("session/prompt", { sessionId: sid, prompt: [{ type: "text", text: "y blocked" }] }))).error?.code, -32002);
  // the turn ends; retried after the hint, y's load takes the session
  x.held.shift().resolve({ outcome: { outcome: "cancelled" } });
  assert.ok(["end_turn", "cancelled"].includes((await turn).stopReason));
  await new Promise((r) => setTimeout(r, wait));
  await y.request("session/load", { sessionId: sid, cwd: home, mcpServers: [] });
  assertLost(await settle(x.request("session/set_config_option", { sessionId: sid, configId: "mode", value: "ask" })), sid, "set_config_option");
  await x.request("session/close", { sessionId: sid }); // (the SDK takes its -32002 as closed)
  assert.equal((await y.request("session/prompt", { sessionId: sid, prompt: [{ type: "text", text: "y last" }] })).stopReason, "end_turn");
  return sid;
}

test("two acp-agent processes, the SDK as both clients: an idle session is taken over, a running turn keeps it until it ends", async (t) => {
  const home = tempDir(t);
  const store = join(home, "sessions.db");
  const args = ["--lease-ttl", "60000"]; // a live holder's lease never lapses here: only take-overs
  const mk = () => {
    const h = sdkAgent(t, { store, home, args, permission: "hold" });
    return { h, request: h.request, updates: (sid) => h.updates(sid).map((update) => ({ update })), held: h.heldPermissions };
  };
  const x = mk();
  const y = mk();
  await Promise.all([x.h.init(), y.h.init()]);
  await takeOver(home, x, y);
  await Promise.all([x.h.end(), y.h.end()]);
});

/** One SDK client over the SDK's WebSocket stream to a listening agent, permissions held. */
function wsClient(url) {
  const c = { seen: [], held: [] };
  const stream = createWebSocketStream(url, { WebSocket, headers: wsHeaders() });
  const readable = stream.readable.pipeThrough(
    new TransformStream({
      transform(m, ctl) {
        if (m.method === "session/update") c.seen.push(m.params);
        ctl.enqueue(m);
      },
    }),
  );
  c.conn = acp
    .client({ name: "takeover-test" })
    .onNotification("session/update", () => {})
    .onRequest("session/request_permission", ({ signal }) =>
      new Promise((resolve) => {
        c.held.push({ resolve });
        signal?.addEventListener("abort", () => resolve({ outcome: { outcome: "cancelled" } }), { once: true });
      }),
    )
    .connect({ readable, writable: stream.writable });
  c.request = (method, params) => c.conn.agent.request(method, params);
  c.updates = (sid) => c.seen.filter((u) => u.sessionId === sid);
  return c;
}

test("two connections of one acp-agent --listen, the SDK's WebSocket stream as both clients: the same take-over", async (t) => {
  if (TRANSPORT !== "stdio") return t.skip("one run is enough: the clients here are WebSocket whatever ACP_TRANSPORT says");
  const home = tempDir(t);
  const agent = await listeningAgent(t, { store: join(home, "sessions.db"), home, args: ["--lease-ttl", "60000"] });
  const x = wsClient(agent.url);
  const y = wsClient(agent.url);
  const init = (c) => c.request("initialize", { protocolVersion: 1, clientCapabilities: {}, clientInfo: { name: "takeover-test", version: "0" } });
  await Promise.all([init(x), init(y)]);
  await takeOver(home, x, y);
  x.conn.close();
  y.conn.close();
  await agent.stop();
});
