// SPDX-License-Identifier: Apache-2.0
// Our WebSocket client (net/ws_connect.c through tests/net/ws_probe) against our own server:
// acp-agent --listen with the echo engine, over ws:// and over wss:// with a certificate the test
// makes (the listener's TLS, then our upgrade, then the agent), a wrong token refused with 401
// before anything reaches the agent, and a slow-reading WebSocket client that still gets every
// update in order. The agent must exit 0 (no leak under ASan) after SIGTERM.
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import assert from "node:assert/strict";
import test from "node:test";
import { WebSocket } from "ws";

const BUILD = process.env.ACP_BUILD ?? join(process.cwd(), "build");
const PROBE = join(BUILD, "tests", "ws_probe");
const AGENT = join(BUILD, "acp-agent");
const TOKEN = "tok-" + Math.random().toString(36).slice(2);

function tmp(t) {
  const dir = mkdtempSync(join(tmpdir(), "acp-ws-agent-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function agent(t, dir, extra = []) {
  writeFileSync(join(dir, "token"), TOKEN + "\n", { mode: 0o600 });
  const listen = extra.includes("--listen") ? [] : ["--listen", "127.0.0.1:0"];
  const p = spawn(AGENT, ["--store", join(dir, "s.db"), ...listen, "--token-file", join(dir, "token"), ...extra], {
    cwd: dir,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let err = "";
  const exit = new Promise((r) => p.on("exit", (code, signal) => r({ code, signal })));
  const unix = extra.includes("--listen");
  t.after(() => p.exitCode === null && p.signalCode === null && p.kill("SIGKILL"));
  const port = await new Promise((resolve, reject) => {
    p.stderr.on("data", (d) => {
      err += d;
      const m = /127\.0\.0\.1:([1-9]\d*)/.exec(err);
      if (m) resolve(Number(m[1]));
      if (unix && /listening on unix:/.test(err)) resolve(0);
    });
    exit.then(() => reject(new Error(err)));
  });
  return {
    port,
    stderr: () => err,
    async stop() {
      p.kill("SIGTERM");
      assert.deepEqual(await exit, { code: 0, signal: null }, err);
    },
  };
}

function probe(args, env = {}) {
  return new Promise((resolve) => {
    const p = spawn(PROBE, args, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...env } });
    let out = "";
    let err = "";
    p.stdout.on("data", (d) => (out += d));
    p.stderr.on("data", (d) => (err += d));
    p.on("exit", (code) => resolve({ code, err, lines: out.split("\n").filter(Boolean).map((l) => JSON.parse(l)) }));
  });
}

// Both rounds of the probe: initialize, session/new, a prompt echoed back before its answer.
function assertRounds(r) {
  assert.equal(r.code, 0, `${r.err}\n${JSON.stringify(r.lines).slice(0, 3000)}`);
  const opens = r.lines.filter((l) => l.event === "open");
  assert.equal(opens.length, 2);
  for (const o of opens) assert.match(o.connectionId, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.notEqual(opens[0].connectionId, opens[1].connectionId);
  const msgs = r.lines.filter((l) => l.jsonrpc);
  const answers = msgs.filter((m) => m.id === 3);
  assert.equal(answers.length, 2);
  for (const a of answers) assert.equal(a.result.stopReason, "end_turn");
  const echoed = msgs.filter((m) => m.method === "session/update" && m.params.update.sessionUpdate === "agent_message_chunk").map((m) => m.params.update.content.text);
  assert.deepEqual(echoed, ["hello", "hello"]);
  for (const c of r.lines.filter((l) => l.event === "close")) assert.deepEqual([c.reason, c.code], ["closed", 1000]);
}

test("our client and acp-agent --listen over ws://: two connections, echo, close 1000 both ways", async (t) => {
  const dir = tmp(t);
  const a = await agent(t, dir);
  assertRounds(await probe([`ws://127.0.0.1:${a.port}/acp`, TOKEN]));
  await a.stop();
});

test("our client and acp-agent --listen over wss://: the listener's TLS with a test-made certificate, verified by the client", async (t) => {
  const dir = tmp(t);
  execFileSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=loopback",
    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem")], { stdio: "ignore" });
  const a = await agent(t, dir, ["--tls-cert", join(dir, "cert.pem"), "--tls-key", join(dir, "key.pem")]);
  assertRounds(await probe([`wss://127.0.0.1:${a.port}/acp`, TOKEN, join(dir, "cert.pem")]));
  // Cleartext to a TLS port: no upgrade.
  const plain = await probe([`ws://127.0.0.1:${a.port}/acp`, TOKEN]);
  assert.equal(plain.code, 2);
  await a.stop();
});

test("a wrong or missing token: 401 before any ACP byte, the agent serves the next client", async (t) => {
  const dir = tmp(t);
  const a = await agent(t, dir);
  for (const tok of ["wrong", ""]) {
    const r = await probe([`ws://127.0.0.1:${a.port}/acp`, tok]);
    assert.equal(r.code, 2);
    assert.equal(r.lines[0].status, -12); // ACP_EACCES
    assert.match(r.lines[0].detail, /^HTTP 401/);
  }
  assertRounds(await probe([`ws://127.0.0.1:${a.port}/acp`, TOKEN]));
  await a.stop();
});

test("a client that pauses reading mid-/stream gets every update in order once it reads again (back-pressure, nothing dropped)", async (t) => {
  const dir = tmp(t);
  const a = await agent(t, dir, ["--high-water", "256K"]);
  const ws = new WebSocket(`ws://127.0.0.1:${a.port}/acp`, { headers: { Authorization: `Bearer ${TOKEN}` } });
  const msgs = [];
  const answers = new Map(); // id -> response
  let waiter = null;
  ws.on("message", (d) => {
    const m = JSON.parse(d.toString());
    msgs.push(m);
    if ("id" in m && !("method" in m)) answers.set(m.id, m);
    if (waiter?.pred()) waiter.resolve();
  });
  const until = (pred) => (pred() ? Promise.resolve() : new Promise((resolve) => (waiter = { pred, resolve })));
  await new Promise((r) => ws.on("open", r));
  const send = (m) => ws.send(JSON.stringify({ jsonrpc: "2.0", ...m }));
  send({ id: 1, method: "initialize", params: { protocolVersion: 1 } });
  send({ id: 2, method: "session/new", params: { cwd: dir, mcpServers: [] } });
  await until(() => answers.has(2));
  const sid = answers.get(2).result.sessionId;
  const N = 20000;
  send({ id: 3, method: "session/prompt", params: { sessionId: sid, prompt: [{ type: "text", text: `/stream ${N} 200` }] } });
  await until(() => msgs.length > 100);
  ws.pause(); // stop reading: the agent must wait, not buffer 4 MB of updates for us
  await new Promise((r) => setTimeout(r, 300));
  ws.resume();
  await until(() => answers.has(3));
  const chunks = msgs.filter((m) => m.method === "session/update" && m.params.update.sessionUpdate === "agent_message_chunk");
  assert.equal(chunks.length, N);
  assert.ok(chunks.every((m) => m.params.update.content.text.length === 200));
  assert.equal(answers.get(3).result.stopReason, "end_turn");
  ws.close();
  await new Promise((r) => ws.on("close", r));
  await a.stop();
});

test("our client and acp-agent --listen unix:PATH: the same over a Unix-domain socket", async (t) => {
  const dir = tmp(t);
  const path = join(dir, "agent.sock");
  const a = await agent(t, dir, ["--listen", `unix:${path}`]);
  assertRounds(await probe(["ws://localhost/acp", TOKEN], { WS_PROBE_UNIX: path }));
  await a.stop();
});

// A raw ws client (ws package) of a listening agent, recording messages and its close.
async function rawClient(port, options = {}) {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/acp`, { headers: { Authorization: `Bearer ${TOKEN}` }, ...options });
  const c = { ws, msgs: [], closed: new Promise((r) => ws.on("close", (code) => r(code))) };
  ws.on("message", (d) => c.msgs.push(JSON.parse(d.toString())));
  ws.on("error", () => {});
  await new Promise((r) => ws.on("open", r));
  c.send = (m) => ws.send(JSON.stringify({ jsonrpc: "2.0", ...m }));
  return c;
}

test("a client that stops reading for good mid-/stream is dropped (two ping intervals without progress, or two missed pongs); the agent serves others and exits 0", async (t) => {
  const dir = tmp(t);
  const a = await agent(t, dir, ["--high-water", "64K", "--ping-interval", "0.2"]);
  const c = await rawClient(a.port);
  c.send({ id: 1, method: "initialize", params: { protocolVersion: 1 } });
  c.send({ id: 2, method: "session/new", params: { cwd: dir, mcpServers: [] } });
  while (!c.msgs.some((m) => m.id === 2)) await new Promise((r) => setTimeout(r, 5));
  const sid = c.msgs.find((m) => m.id === 2).result.sessionId;
  c.send({ id: 3, method: "session/prompt", params: { sessionId: sid, prompt: [{ type: "text", text: "/stream 1000000 1000" }] } });
  while (c.msgs.length < 10) await new Promise((r) => setTimeout(r, 5));
  c.ws._socket.pause(); // the TCP socket itself: nothing more is read, not even a close frame
  // Dropped as stalled, or (when the kernel's buffers took a while to fill, on a busy machine) for
  // the pongs a client that reads nothing cannot send: either way within a few ping intervals.
  const dropped = /connection 1: .*(peer stopped reading|ping timeout)/;
  for (let i = 0; i < 3000 && !dropped.test(a.stderr()); i++) await new Promise((r) => setTimeout(r, 20));
  assert.match(a.stderr(), dropped);
  c.ws.terminate();
  assertRounds(await probe([`ws://127.0.0.1:${a.port}/acp`, TOKEN]));
  await a.stop();
});

test("a client that never answers pings is dropped after two; one that answers stays", async (t) => {
  const dir = tmp(t);
  const a = await agent(t, dir, ["--ping-interval", "0.1"]);
  const mute = await rawClient(a.port, { autoPong: false });
  const polite = await rawClient(a.port);
  let pings = 0;
  polite.ws.on("ping", () => pings++);
  assert.equal(await mute.closed, 1006); // dropped without a close handshake
  // The agent logs before it closes, but its stderr pipe may reach us after the socket's end.
  for (let i = 0; i < 1000 && !/ping timeout/.test(a.stderr()); i++) await new Promise((r) => setTimeout(r, 10));
  assert.match(a.stderr(), /ping timeout/);
  assert.ok(pings >= 2, `the answering client saw ${pings} pings`);
  polite.send({ id: 1, method: "initialize", params: { protocolVersion: 1 } });
  while (!polite.msgs.some((m) => m.id === 1)) await new Promise((r) => setTimeout(r, 5));
  polite.ws.close(1000);
  assert.equal(await polite.closed, 1000); // the server echoes the client's code
  await a.stop();
});
