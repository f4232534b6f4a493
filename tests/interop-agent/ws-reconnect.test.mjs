// SPDX-License-Identifier: Apache-2.0
// The official SDK's reconnect recipe for remote ACP (ws-stream.js: "ACP v1 reconnect creates a new
// transport connection; callers should save the ACP sessionId, create a new stream with the same auth
// headers/cookie store, call initialize, verify agentCapabilities.loadSession, then call
// session/load"), run with createWebSocketStream against acp-agent --listen (issue 11): after the
// connection is lost mid-turn (the socket dropped without a close handshake), or its agent killed
// with -9, a new stream to the same agent or to another agent on the same store gets every update
// the lost connection had received back in the replay, and the conversation goes on.
import assert from "node:assert/strict";
import { join } from "node:path";
import { WebSocket } from "ws";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";
import { test, acp, tempDir, normalize, listeningAgent, wsHeaders } from "./lib.mjs";

// One ACP client over the SDK's WebSocket stream; session/update params recorded in arrival order.
function connect(url) {
  const c = { updates: [], socket: null };
  class Tap extends WebSocket {
    constructor(u, protocols, o) {
      super(u, protocols, o);
      c.socket = this; // eslint-disable-line consistent-this
    }
  }
  const stream = createWebSocketStream(url, { WebSocket: Tap, headers: wsHeaders() });
  const readable = stream.readable.pipeThrough(
    new TransformStream({
      transform(m, ctl) {
        if (m.method === "session/update") c.updates.push(m.params);
        ctl.enqueue(m);
      },
    }),
  );
  c.conn = acp
    .client({ name: "reconnect-test" })
    .onNotification("session/update", () => {})
    .connect({ readable, writable: stream.writable });
  c.request = (method, params) => c.conn.agent.request(method, params);
  c.chunks = (sid) => c.updates.filter((u) => u.sessionId === sid && u.update.sessionUpdate === "agent_message_chunk");
  c.close = () => c.conn.close();
  return c;
}

const init = (c) => c.request("initialize", { protocolVersion: 1, clientCapabilities: {}, clientInfo: { name: "reconnect-test", version: "0" } });

async function until(pred, what) {
  for (let i = 0; i < 60_000 && !pred(); i++) await new Promise((r) => setTimeout(r, 5));
  assert.ok(pred(), `timed out waiting for ${what}`);
}

// A first turn, then a long /stream on connection 1, cut short once 500 chunks arrived.
async function streamThenLose(dir, url, lose) {
  const c1 = connect(url);
  await init(c1);
  const { sessionId } = await c1.request("session/new", { cwd: dir, mcpServers: [] });
  const first = await c1.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "first turn" }] });
  assert.equal(first.stopReason, "end_turn");
  const turn = c1.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "/stream 1000000 100" }] });
  turn.catch(() => {}); // its answer never comes: the connection is lost under it
  await until(() => c1.chunks(sessionId).length >= 500 + 1, "500 streamed chunks");
  await lose(c1);
  const received = c1.chunks(sessionId).slice(1).map((u) => u.update.content.text).join("");
  return { sessionId, received, c1 };
}

// The recipe on a new stream: initialize, loadSession advertised, session/load; every update the lost
// connection received is in the replay; a prompt continues the conversation.
async function recipe(dir, url, sessionId, received) {
  const c2 = connect(url);
  const ini = await init(c2);
  assert.equal(ini.agentCapabilities?.loadSession, true, "the recipe needs agentCapabilities.loadSession");
  await c2.request("session/load", { sessionId, cwd: dir, mcpServers: [] });
  const replay = normalize(c2.updates.filter((u) => u.sessionId === sessionId).map((u) => u.update));
  assert.deepEqual(
    replay.slice(0, 3).map((u) => [u.sessionUpdate, u.content.text]),
    [
      ["user_message_chunk", "first turn"],
      ["agent_message_chunk", "first turn"],
      ["user_message_chunk", "/stream 1000000 100"],
    ],
  );
  assert.equal(replay.length, 4, `replay shape: ${replay.map((u) => u.sessionUpdate)}`);
  const stored = replay[3].content.text;
  assert.ok(received.length >= 500 * 100);
  assert.ok(stored.startsWith(received), `the replay (${stored.length} bytes) does not hold the ${received.length} bytes the lost connection received`);
  const before = c2.updates.length;
  const after = await c2.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "after the reconnect" }] });
  assert.equal(after.stopReason, "end_turn");
  const echoed = c2.updates.slice(before).filter((u) => u.update.sessionUpdate === "agent_message_chunk").map((u) => u.update.content.text).join("");
  assert.equal(echoed, "after the reconnect");
  c2.close();
}

test("reconnect recipe, same agent: the socket drops mid-/stream (no close handshake); a new stream loads the session with every received update", async (t) => {
  const dir = tempDir(t);
  const a = await listeningAgent(t, { store: join(dir, "sessions.db") });
  const { sessionId, received } = await streamThenLose(dir, a.url, async (c1) => {
    c1.socket.terminate(); // a lost network, not a polite close
  });
  await recipe(dir, a.url, sessionId, received);
  await a.stop();
});

test("reconnect recipe, another agent on the same store: the first agent is killed with -9 mid-/stream; the second replays everything received", async (t) => {
  const dir = tempDir(t);
  const store = join(dir, "sessions.db");
  const a = await listeningAgent(t, { store });
  const b = await listeningAgent(t, { store });
  const { sessionId, received } = await streamThenLose(dir, a.url, async () => {
    a.proc.kill("SIGKILL");
    assert.equal((await a.exit).signal, "SIGKILL");
  });
  await recipe(dir, b.url, sessionId, received);
  await b.stop();
});

test("reconnect recipe, another agent on the same store after a clean close: nothing is lost and the session is not held by the first", async (t) => {
  const dir = tempDir(t);
  const store = join(dir, "sessions.db");
  const a = await listeningAgent(t, { store });
  const b = await listeningAgent(t, { store });
  const { sessionId, received } = await streamThenLose(dir, a.url, async (c1) => {
    c1.close(); // the client's own close (1000)
    await until(() => /connection 1: .*ended/.test(a.stderr()) || c1.socket.readyState === WebSocket.CLOSED, "the close");
  });
  await recipe(dir, b.url, sessionId, received);
  await Promise.all([a.stop(), b.stop()]);
});
