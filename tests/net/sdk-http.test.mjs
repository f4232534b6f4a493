// SPDX-License-Identifier: Apache-2.0
// The official SDK's Streamable HTTP client (createHttpStream, Node fetch = HTTP/1.1) against
// `acp-agent --listen 127.0.0.1:0` (net/shttp.c on the HTTP/1.1 wire): a session streamed over
// its own GET, then the SDK's reconnect recipe (a new stream, initialize, check loadSession,
// session/load) replays it on a new connection and prompting goes on there.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import assert from "node:assert/strict";
import { test } from "node:test";
import * as acp from "@agentclientprotocol/sdk";
import { createHttpStream } from "@agentclientprotocol/sdk/experimental/http-client";

const BUILD = process.env.ACP_BUILD;

async function startServer(t) {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "acp-shttp-")));
  const proc = spawn(join(BUILD, "acp-agent"), ["--store", join(dir, "db"), "--listen", "127.0.0.1:0"], {
    cwd: dir,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, XDG_STATE_HOME: join(dir, "xdg") },
  });
  let stderr = "";
  const exit = new Promise((resolve) => proc.on("exit", (code, signal) => resolve({ code, signal })));
  const port = await new Promise((resolve, reject) => {
    proc.stderr.on("data", (d) => {
      stderr += d;
      const m = /127\.0\.0\.1:([1-9]\d*)/.exec(stderr);
      if (m) resolve(Number(m[1]));
    });
    proc.once("exit", () => reject(new Error("acp-agent exited: " + stderr)));
  });
  t.after(async () => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGKILL");
    await exit;
    rmSync(dir, { recursive: true, force: true });
  });
  return { dir, url: `http://127.0.0.1:${port}/acp`, proc, exit, stderr: () => stderr };
}

// An SDK client over a fresh Streamable HTTP stream; updates recorded per session in order.
function client(url) {
  const c = { updates: new Map() };
  const app = acp.client({ name: "libacp-shttp-test" }).onNotification("session/update", ({ params }) => {
    if (!c.updates.has(params.sessionId)) c.updates.set(params.sessionId, []);
    c.updates.get(params.sessionId).push(params.update);
  });
  c.conn = app.connect(createHttpStream(url));
  c.agent = c.conn.agent;
  c.init = () => c.agent.request("initialize", { protocolVersion: 1, clientCapabilities: {}, clientInfo: { name: "t", version: "0" } });
  return c;
}

const text = (updates) =>
  updates.filter((u) => u.sessionUpdate === "agent_message_chunk").map((u) => u.content.text).join("");

test("createHttpStream: initialize, new, prompts streamed; reconnect loads the session on a new connection", async (t) => {
  const srv = await startServer(t);
  const a = client(srv.url);
  const init = await a.init();
  assert.equal(init.protocolVersion, 1);
  assert.equal(init.agentCapabilities.loadSession, true);
  const { sessionId } = await a.agent.request("session/new", { cwd: srv.dir, mcpServers: [] });
  const r1 = await a.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "first over http" }] });
  assert.equal(r1.stopReason, "end_turn");
  const r2 = await a.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "second" }] });
  assert.equal(r2.stopReason, "end_turn");
  const seen = a.updates.get(sessionId);
  assert.match(text(seen), /first over http/);
  assert.match(text(seen), /second/);
  const listed = await a.agent.request("session/list", {});
  assert.ok(listed.sessions.some((s) => s.sessionId === sessionId));
  a.conn.close(); // DELETE
  await a.conn.closed;

  // The SDK's recipe: a new stream, initialize, loadSession checked, session/load.
  const b = client(srv.url);
  const binit = await b.init();
  assert.equal(binit.agentCapabilities.loadSession, true);
  await b.agent.request("session/load", { sessionId, cwd: srv.dir, mcpServers: [] });
  const replay = b.updates.get(sessionId) ?? [];
  assert.equal(text(replay), text(seen), "every update the client had received is replayed");
  assert.match(text(replay), /first over http/);
  const r3 = await b.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "third after reconnect" }] });
  assert.equal(r3.stopReason, "end_turn");
  assert.match(text(b.updates.get(sessionId)), /third after reconnect/);
  b.conn.close();
  await b.conn.closed;

  srv.proc.kill("SIGTERM");
  assert.deepEqual(await srv.exit, { code: 0, signal: null }, srv.stderr());
});
