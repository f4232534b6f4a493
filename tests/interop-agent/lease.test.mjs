// SPDX-License-Identifier: Apache-2.0
// Session leases (issue 11, part 3): two acp-agent processes on one store, one of them holding an
// open session. B's load is refused while A lives; A killed mid-stream, B takes the session over
// and replays everything A's client received; A paused past its lease's TTL, B takes over, and A,
// resumed, is fenced out: its turn ends -32002 (lease_lost) and nothing it does reaches the history
// B now writes. ctest runs this file on SQLite and, through tests/pg/agent-on-pg.sh, on PostgreSQL
// (one --store path is one store there too).
import assert from "node:assert/strict";
import { join } from "node:path";
import { test, tempDir, rawAgent, normalize } from "./lib.mjs";

const TTL = 1500; // short, so the test waits little: it is the agents' own flag
const ON_PG = (process.env.ACP_AGENT ?? "").endsWith("agent-on-pg.sh");

const chunks = (x, sid, from = 0, to = Infinity) =>
  x.updatesOf(sid, from, to).filter((e) => e.msg.params.update.sessionUpdate === "agent_message_chunk");
const text = (lines) => lines.map((e) => e.msg.params.update.content.text).join("");
const load = (x, sid, home) => x.request("session/load", { sessionId: sid, cwd: home, mcpServers: [] });

function assertBusy(r, sid) {
  assert.equal(r.error?.code, -32010, `expected the lease refusal, got ${JSON.stringify(r.result ?? r.error)}`);
  assert.equal(r.error.data?.sessionId, sid);
  const wait = r.error.data?.retryAfterMs;
  assert.ok(Number.isInteger(wait) && wait >= 0 && wait <= TTL, `retryAfterMs ${wait} not within the TTL`);
  return wait;
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

test("A opens S: B's load is refused while A lives; kill -9 A mid-/stream 100000 10: B loads and replays every update A's client received", async (t) => {
  const { home, a, b } = await twoAgents(t);
  const sid = await a.newSession(home);
  assert.equal((await a.prompt(sid, "before the stream")).result?.stopReason, "end_turn");
  assertBusy(await load(b, sid, home), sid); // A idle, but it has S open
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
  // B holds S now: a third process is refused as B was
  const c = rawAgent(t, { store: join(home, "sessions.db"), home, args: ["--lease-ttl", String(TTL)] });
  await c.init();
  assertBusy(await load(c, sid, home), sid);
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
  // A has closed S; its own load is refused now (B holds it)
  assert.equal((await a.request("session/prompt", { sessionId: sid, prompt: [{ type: "text", text: "A again" }] })).error?.code, -32002);
  assertBusy(await load(a, sid, home), sid);
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
