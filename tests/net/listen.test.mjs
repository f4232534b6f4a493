// SPDX-License-Identifier: Apache-2.0
// acp-agent --listen as an operator runs it: real processes on 127.0.0.1 and a Unix socket,
// driven with raw HTTP/1.1 (so every byte on the wire is ours to choose), Node's https and
// http2 clients, and the ws package for WebSocket round trips. What is checked is what the
// server promises in docs/remote.md: the Origin check (403 for a web page not allowed),
// bearer-token auth answered 401 before the body is read,
// TLS with a certificate the test makes, the connection limit (503), the message limit (413 /
// close 1009), a client that never reads (turns wait at the high-water mark, the connection
// is closed, the agent lives on), the idle and header timeouts, SIGTERM in the middle of a turn
// (the turn answers, the store has it, exit 0), unix:/path, h2c with prior knowledge.
import assert from "node:assert/strict";
import { spawnSync, execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import http from "node:http";
import http2 from "node:http2";
import https from "node:https";
import net from "node:net";
import { join } from "node:path";
import { WebSocket } from "ws";

import { test, tempDir, AGENT } from "../interop-agent/lib.mjs";
import { startAgent } from "./listen-agent.mjs";

const SANITIZED = ["1", "ON", "TRUE", "YES"].includes(String(process.env.ACP_ASAN ?? "").toUpperCase());
const INIT = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1 } };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Has `got` one whole response (head and Content-Length body)? */
function complete(got) {
  const end = got.indexOf("\r\n\r\n");
  if (end < 0) return false;
  const len = /\r\ncontent-length: (\d+)\r\n/i.exec(got.slice(0, end + 2));
  return !!len && Buffer.byteLength(got.slice(end + 4)) >= Number(len[1]);
}

/** Writes `text` on a new connection and collects what comes back: one whole response (then
 * the client closes: a server that refused a request keeps reading what the client may still
 * send until the client closes), or with waitClose everything until the server closes. */
function raw(port, text, { waitClose = false } = {}) {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, "127.0.0.1");
    let got = "";
    s.on("data", (d) => {
      got += d;
      if (!waitClose && complete(got)) {
        s.destroy();
        resolve(got);
      }
    });
    s.on("error", (e) => (e.code === "ECONNRESET" ? resolve(got) : reject(e)));
    s.on("close", () => resolve(got));
    if (text) s.write(text);
  });
}

const statusOf = (response) => Number(/^HTTP\/1\.1 (\d{3})/.exec(response)?.[1]);

function post(port, body, headers = {}) {
  const b = typeof body === "string" ? body : JSON.stringify(body);
  return (
    `POST /acp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\n` +
    Object.entries(headers)
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join("") +
    `Content-Length: ${Buffer.byteLength(b)}\r\nConnection: close\r\n\r\n${b}`
  );
}

/** A WebSocket ACP client: request() resolves with the response; every message is kept. */
function wsClient(url, opts = {}) {
  const ws = new WebSocket(url, opts);
  const msgs = [];
  const waiting = new Map();
  let next = 1;
  ws.on("message", (data) => {
    const m = JSON.parse(data.toString());
    msgs.push(m);
    if (m.id !== undefined && waiting.has(m.id) && !m.method) {
      waiting.get(m.id)(m);
      waiting.delete(m.id);
    }
  });
  const opened = new Promise((resolve, reject) => {
    ws.once("open", resolve);
    ws.once("error", reject);
    ws.once("unexpected-response", (req, res) => reject(Object.assign(new Error(`HTTP ${res.statusCode}`), { status: res.statusCode })));
  });
  const closed = new Promise((r) => ws.on("close", (code) => r(code)));
  const request = (method, params) => {
    const id = next++;
    ws.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
    return new Promise((r) => waiting.set(id, r));
  };
  return { ws, msgs, opened, closed, request };
}

async function session(c, cwd, clientCapabilities = {}) {
  const init = await c.request("initialize", { protocolVersion: 1, clientCapabilities });
  assert.equal(init.result?.protocolVersion, 1, JSON.stringify(init));
  const s = await c.request("session/new", { cwd, mcpServers: [] });
  assert.ok(s.result?.sessionId, JSON.stringify(s));
  return s.result.sessionId;
}

test("bearer token: none or a wrong one is answered 401 before the body is read, and the token is never logged", async (t) => {
  const dir = tempDir(t);
  const token = "s3cret-" + Math.random().toString(36).slice(2);
  writeFileSync(join(dir, "token"), token + "\n", { mode: 0o600 });
  const a = await startAgent(t, dir, ["--token-file", join(dir, "token")]);

  // A head announcing a megabyte that never comes: the answer arrives anyway, so nothing of
  // the body (the ACP bytes) was waited for, let alone read.
  const head = (auth) =>
    `POST /acp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${auth}Content-Length: 1000000\r\n\r\n`;
  for (const auth of ["", "Authorization: Bearer wrong\r\n", `Authorization: Basic ${token}\r\n`, `Authorization: Bearer ${token}x\r\n`]) {
    const r = await raw(a.port, head(auth));
    assert.equal(statusOf(r), 401, r);
    assert.match(r, /\r\n\r\na valid bearer token is required/);
    assert.match(r, /WWW-Authenticate: Bearer/);
    assert.match(r, /Connection: close/);
  }
  // A WebSocket upgrade with a wrong token never becomes a WebSocket.
  const bad = wsClient(`ws://127.0.0.1:${a.port}/acp`, { headers: { Authorization: "Bearer nope" } });
  await assert.rejects(bad.opened, (e) => e.status === 401);

  // The right token: Streamable HTTP and WebSocket both serve ACP.
  const ok = await raw(a.port, post(a.port, INIT, { Authorization: `Bearer ${token}` }));
  assert.equal(statusOf(ok), 200, ok);
  assert.match(ok, /Acp-Connection-Id: \S+/);
  const c = wsClient(`ws://127.0.0.1:${a.port}/acp`, { headers: { Authorization: `bearer ${token}` } });
  await c.opened;
  await session(c, dir);
  c.ws.close();
  await c.closed;

  a.proc.kill("SIGTERM");
  assert.deepEqual(await a.exited, { code: 0, signal: null });
  assert.match(a.stderr(), /refused a request: no bearer token/);
  assert.match(a.stderr(), /refused a request: wrong bearer token/);
  assert.ok(!a.stderr().includes(token), "the token reached the log");
});

test("Origin: a web page is refused 403 (WebSocket, HTTP/1.1, h2) unless --allow-origin lists it, token or not", async (t) => {
  const dir = tempDir(t);
  const evil = "http://evil.example";
  // No --allow-origin: no web page may connect; clients that send no Origin (Node, curl) may.
  const a = await startAgent(t, dir);
  const ws = wsClient(`ws://127.0.0.1:${a.port}/acp`, { origin: evil });
  await assert.rejects(ws.opened, (e) => e.status === 403);
  const r = await raw(a.port, post(a.port, INIT, { Origin: evil }));
  assert.equal(statusOf(r), 403, r);
  assert.match(r, /Origin is not allowed/);
  const h2 = http2.connect(`http://127.0.0.1:${a.port}`);
  const status = await new Promise((resolve, reject) => {
    const s = h2.request({ ":method": "POST", ":path": "/acp", "content-type": "application/json", origin: evil });
    let st;
    s.on("response", (h) => (st = h[":status"]));
    s.on("end", () => resolve(st));
    s.on("error", reject);
    s.resume();
    s.end(JSON.stringify(INIT));
  });
  assert.equal(status, 403);
  await new Promise((r) => h2.close(r));
  const plain = wsClient(`ws://127.0.0.1:${a.port}/acp`);
  await plain.opened;
  await session(plain, dir);
  plain.ws.close();
  await plain.closed;
  a.proc.kill("SIGTERM");
  assert.deepEqual(await a.exited, { code: 0, signal: null });
  assert.match(a.stderr(), /Origin is not allowed/);

  // Listed origins match exactly; with a token, a valid token does not excuse another Origin.
  const token = "tok-" + Math.random().toString(36).slice(2);
  writeFileSync(join(dir, "token"), token, { mode: 0o600 });
  const app = "https://app.example";
  const b = await startAgent(t, dir, ["--token-file", join(dir, "token"), "--allow-origin", "null", "--allow-origin", app]);
  const auth = { Authorization: `Bearer ${token}` };
  for (const origin of [evil, app + ".evil", app + "/", "HTTPS://APP.EXAMPLE", "http://app.example"]) {
    const c = wsClient(`ws://127.0.0.1:${b.port}/acp`, { origin, headers: auth });
    await assert.rejects(c.opened, (e) => e.status === 403, origin);
  }
  for (const origin of [app, "null"]) {
    const c = wsClient(`ws://127.0.0.1:${b.port}/acp`, { origin, headers: auth });
    await c.opened;
    await session(c, dir);
    c.ws.close();
    await c.closed;
  }
  const noTok = wsClient(`ws://127.0.0.1:${b.port}/acp`, { origin: app });
  await assert.rejects(noTok.opened, (e) => e.status === 401);
  b.proc.kill("SIGTERM");
  assert.deepEqual(await b.exited, { code: 0, signal: null });

  // "*" allows any page.
  const c2 = await startAgent(t, dir, ["--allow-origin", "*"]);
  const any = wsClient(`ws://127.0.0.1:${c2.port}/acp`, { origin: evil });
  await any.opened;
  await session(any, dir);
  any.ws.close();
  await any.closed;
  assert.equal(statusOf(await raw(c2.port, post(c2.port, INIT, { Origin: evil }))), 200);
  c2.proc.kill("SIGTERM");
  assert.deepEqual(await c2.exited, { code: 0, signal: null });
});

test("numbers from the network and the command line are read checked: bad ports and Content-Lengths are refused", async (t) => {
  const dir = tempDir(t);
  // --listen's port: trailing junk, a sign, out of range, nothing.
  for (const port of ["80x", "-1", "99999", "+80", " 80", "99999999999999999999", ""]) {
    const r = spawnSync(AGENT, ["--store", join(dir, "sessions.db"), "--listen", `127.0.0.1:${port}`], {
      encoding: "utf8",
      timeout: 60000, // a port read loosely would start a server: it is killed, and the check below fails
      killSignal: "SIGKILL",
    });
    assert.notEqual(r.status, 0, `port '${port}' was accepted`);
    assert.match(r.stderr, port ? /the port: .* (is not a whole number|is out of range)/ : /expected HOST:PORT/, r.stderr);
  }
  // Content-Length over HTTP/1.1: not a number, negative, too large to hold: 400; the agent lives.
  const a = await startAgent(t, dir);
  const b = JSON.stringify(INIT);
  for (const cl of ["1e3", "-5", "99999999999999999999999", "0x10", "+5", `${b.length} x`]) {
    const r = await raw(a.port, `POST /acp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${cl}\r\n\r\n${b}`);
    assert.equal(statusOf(r), 400, `Content-Length ${cl}: ${r}`);
  }
  // Over HTTP/2 as well: the stream is refused (nghttp2 resets it, or we answer 400), never served.
  const h2 = http2.connect(`http://127.0.0.1:${a.port}`);
  h2.on("error", () => {});
  for (const cl of ["1e3", "-5", "99999999999999999999999"]) {
    const got = await new Promise((resolve) => {
      const s = h2.request({ ":method": "POST", ":path": "/acp", "content-type": "application/json", "content-length": cl });
      let st = 0;
      s.on("response", (h) => (st = h[":status"]));
      s.on("error", () => resolve(st || "reset"));
      s.on("close", () => resolve(st || "reset"));
      s.resume();
      s.end(b);
    });
    assert.ok(got === "reset" || got === 400, `h2 Content-Length ${cl}: ${got}`);
  }
  h2.destroy();
  assert.equal(statusOf(await raw(a.port, post(a.port, INIT))), 200);
  a.proc.kill("SIGTERM");
  assert.deepEqual(await a.exited, { code: 0, signal: null });
});

test("TLS with a self-signed certificate: verified clients get HTTP/1.1, h2 and wss; an unverified one fails", async (t) => {
  const dir = tempDir(t);
  const cert = join(dir, "cert.pem");
  const key = join(dir, "key.pem");
  execFileSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
    "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"], { stdio: "ignore" });
  const a = await startAgent(t, dir, ["--tls-cert", cert, "--tls-key", key]);
  const ca = readFileSync(cert);

  const body = JSON.stringify(INIT);
  const req = (opts) =>
    new Promise((resolve, reject) => {
      const r = https.request({ host: "127.0.0.1", port: a.port, path: "/acp", method: "POST",
        headers: { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(body) }, ...opts }, (res) => {
        let text = "";
        res.on("data", (d) => (text += d));
        res.on("end", () => resolve({ status: res.statusCode, text, alpn: res.socket?.alpnProtocol, id: res.headers["acp-connection-id"] }));
      });
      r.on("error", reject);
      r.end(body);
    });
  const r = await req({ ca, servername: "localhost", agent: false });
  assert.equal(r.status, 200);
  assert.equal(JSON.parse(r.text).result.protocolVersion, 1);
  assert.ok(r.id);
  // No trust anchor: the handshake fails on the client's side, and the server goes on.
  await assert.rejects(req({ agent: false }), /self[- ]signed/i);
  // HTTP/2 over TLS (ALPN h2).
  const h2 = http2.connect(`https://localhost:${a.port}`, { ca });
  t.after(() => h2.close());
  const h2res = await new Promise((resolve, reject) => {
    const s = h2.request({ ":method": "POST", ":path": "/acp", "content-type": "application/json" });
    let text = "";
    let status;
    s.on("response", (h) => (status = h[":status"]));
    s.on("data", (d) => (text += d));
    s.on("end", () => resolve({ status, text }));
    s.on("error", reject);
    s.end(body);
  });
  assert.equal(h2res.status, 200);
  assert.equal(h2.alpnProtocol, "h2");
  h2.close();

  // WebSocket over TLS.
  const c = wsClient(`wss://localhost:${a.port}/acp`, { ca });
  await c.opened;
  await session(c, dir);
  c.ws.close();
  await c.closed;
  a.proc.kill("SIGTERM");
  assert.deepEqual(await a.exited, { code: 0, signal: null });
});

test("TLS: a client that expects another host name is refused by its own verification", async (t) => {
  const dir = tempDir(t);
  const cert = join(dir, "cert.pem");
  const key = join(dir, "key.pem");
  execFileSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
    "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost"], { stdio: "ignore" });
  const a = await startAgent(t, dir, ["--tls-cert", cert, "--tls-key", key]);
  const err = await new Promise((resolve) => {
    const r = https.request({ host: "127.0.0.1", port: a.port, path: "/acp", ca: readFileSync(cert), servername: "other.example", agent: false }, () => resolve(null));
    r.on("error", resolve);
    r.end();
  });
  assert.ok(err, "a certificate for localhost was accepted for other.example");
  assert.match(String(err.code ?? err.message), /ERR_TLS_CERT_ALTNAME_INVALID|altname/i);
  // A cleartext client on a TLS port gets no HTTP answer, and the server lives on.
  const r = await raw(a.port, "GET /acp HTTP/1.1\r\nHost: x\r\n\r\n");
  assert.ok(!/^HTTP\/1\.1 2/.test(r));
  a.proc.kill("SIGTERM");
  assert.deepEqual(await a.exited, { code: 0, signal: null });
});

test("too many connections: past --max-connections a request is answered 503, and a freed slot serves again", async (t) => {
  const dir = tempDir(t);
  const a = await startAgent(t, dir, ["--max-connections", "2"]);
  // Two keep-alive connections, each proven accepted by an answer (404 for another path).
  const held = [];
  for (let i = 0; i < 2; i++) {
    const s = net.connect(a.port, "127.0.0.1");
    const answered = new Promise((r) => s.once("data", (d) => r(String(d))));
    s.write("GET /other HTTP/1.1\r\nHost: x\r\n\r\n");
    assert.equal(statusOf(await answered), 404);
    held.push(s);
  }
  const r = await raw(a.port, post(a.port, INIT));
  assert.equal(statusOf(r), 503, r);
  assert.match(r, /too many connections/);
  // One goes away; the server notices its close and the slot is free again.
  held[0].destroy();
  let ok = 503;
  for (let i = 0; i < 200 && ok === 503; i++) {
    ok = statusOf(await raw(a.port, post(a.port, INIT)));
    if (ok === 503) await sleep(10);
  }
  assert.equal(ok, 200);
  held[1].destroy();
  a.proc.kill("SIGTERM");
  assert.deepEqual(await a.exited, { code: 0, signal: null });
  assert.match(a.stderr(), /connection refused: 2 connections open/);
});

test("an oversized message: 413 for a POST body, close 1009 for a WebSocket message; the agent serves on", async (t) => {
  const dir = tempDir(t);
  const a = await startAgent(t, dir, ["--max-message", "4K"]);
  const big = { ...INIT, params: { protocolVersion: 1, _meta: { pad: "x".repeat(5000) } } };
  assert.equal(statusOf(await raw(a.port, post(a.port, big))), 413);
  // Chunked, so the size is only known as it arrives.
  const b = JSON.stringify(big);
  const chunked = `POST /acp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n` +
    `${(b.length / 2 | 0).toString(16)}\r\n${b.slice(0, b.length / 2 | 0)}\r\n` +
    `${(b.length - (b.length / 2 | 0)).toString(16)}\r\n${b.slice(b.length / 2 | 0)}\r\n0\r\n\r\n`;
  assert.equal(statusOf(await raw(a.port, chunked)), 413);
  const c = wsClient(`ws://127.0.0.1:${a.port}/acp`);
  await c.opened;
  c.ws.send(JSON.stringify(big));
  assert.equal(await c.closed, 1009);
  // Just under the limit still works.
  const fine = { ...INIT, params: { protocolVersion: 1, _meta: { pad: "x".repeat(3500) } } };
  assert.equal(statusOf(await raw(a.port, post(a.port, fine))), 200);
  a.proc.kill("SIGTERM");
  assert.deepEqual(await a.exited, { code: 0, signal: null });
});

const rssMB = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))[1]) / 1024;

test("a client that never reads: the turn waits at the high-water mark, memory stays bounded, the connection is closed", async (t) => {
  const dir = tempDir(t);
  const a = await startAgent(t, dir, ["--high-water", "256K", "--idle-timeout", "1", "--ping-interval", "0.5"]);
  const c = wsClient(`ws://127.0.0.1:${a.port}/acp`);
  await c.opened;
  const sid = await session(c, dir);
  const before = rssMB(a.proc.pid);
  // 400 MB of updates asked for; the client stops reading at once.
  c.ws._socket.pause();
  c.ws.send(JSON.stringify({ jsonrpc: "2.0", id: 99, method: "session/prompt",
    params: { sessionId: sid, prompt: [{ type: "text", text: "/stream 4000 100000" }] } }));
  // The server gives up on the connection (the stall bound, or the pings left unanswered).
  for (let i = 0; i < 600 && !/closing its connection|client connection ended/.test(a.stderr()); i++) {
    if (!SANITIZED) assert.ok(rssMB(a.proc.pid) < before + 96, `RSS grew to ${rssMB(a.proc.pid)} MB`);
    await sleep(50);
  }
  assert.match(a.stderr(), /client connection ended/);
  if (!SANITIZED) assert.ok(rssMB(a.proc.pid) < before + 96);
  c.ws._socket.resume();
  await c.closed;
  // What arrived is far less than what was asked: the turn waited instead of buffering.
  const got = c.msgs.filter((m) => m.method === "session/update").length;
  assert.ok(got < 4000, `${got} updates arrived`);
  // The agent lives on and serves a new connection.
  assert.equal(statusOf(await raw(a.port, post(a.port, INIT))), 200);
  a.proc.kill("SIGTERM");
  assert.deepEqual(await a.exited, { code: 0, signal: null });
});

test("idle and header timeouts: a quiet keep-alive connection is closed, a slow head gets 408, silence is dropped", async (t) => {
  const dir = tempDir(t);
  const a = await startAgent(t, dir, ["--idle-timeout", "0.3", "--header-timeout", "0.3"]);
  // Keep-alive: the answer comes, then the server closes the quiet connection itself.
  const r = await raw(a.port, "GET /other HTTP/1.1\r\nHost: x\r\n\r\n", { waitClose: true });
  assert.equal(statusOf(r), 404);
  // Half a head: 408.
  const slow = await raw(a.port, "GET /acp HTTP/1.1\r\nHost: x\r\n");
  assert.equal(statusOf(slow), 408, slow);
  // Nothing at all: closed without a word.
  assert.equal(await raw(a.port, ""), "");
  a.proc.kill("SIGTERM");
  assert.deepEqual(await a.exited, { code: 0, signal: null });
});

test("SIGTERM mid-turn: the turn answers cancelled, the store has the session, exit 0", async (t) => {
  const dir = tempDir(t);
  const a = await startAgent(t, dir);
  const c = wsClient(`ws://127.0.0.1:${a.port}/acp`);
  await c.opened;
  const sid = await session(c, dir, { _meta: { "acp-agent": {} } });
  // /ext: the turn calls the client's _acp-agent/ping and waits for the answer, which never
  // comes: once the ping is here, the turn is running.
  const turn = c.request("session/prompt", { sessionId: sid, prompt: [{ type: "text", text: "/ext" }] });
  while (!c.msgs.some((m) => m.method === "_acp-agent/ping")) await sleep(10);
  a.proc.kill("SIGTERM");
  const r = await turn;
  assert.equal(r.result?.stopReason, "cancelled", JSON.stringify(r));
  assert.deepEqual(await a.exited, { code: 0, signal: null });
  await c.closed;
  assert.match(a.stderr(), /SIGTERM: closing 1 connection/);

  // Another agent on the same store lists the session and replays the prompt.
  const b = await startAgent(t, dir);
  const d = wsClient(`ws://127.0.0.1:${b.port}/acp`);
  await d.opened;
  await d.request("initialize", { protocolVersion: 1 });
  const list = await d.request("session/list", {});
  assert.ok(list.result.sessions.some((s) => s.sessionId === sid), JSON.stringify(list));
  const load = await d.request("session/load", { sessionId: sid, cwd: dir, mcpServers: [] });
  assert.ok(load.result, JSON.stringify(load));
  const replayed = d.msgs.filter((m) => m.method === "session/update" && m.params.update.sessionUpdate === "user_message_chunk");
  assert.ok(replayed.some((m) => m.params.update.content.text === "/ext"), JSON.stringify(d.msgs));
  d.ws.close();
  await d.closed;
  b.proc.kill("SIGTERM");
  assert.deepEqual(await b.exited, { code: 0, signal: null });
});

test("unix:/path serves both profiles, and the socket file goes when the agent ends", async (t) => {
  const dir = tempDir(t);
  const path = join(dir, "acp.sock");
  const a = await startAgent(t, dir, [], `unix:${path}`);
  assert.ok(existsSync(path));
  const res = await new Promise((resolve, reject) => {
    const body = JSON.stringify(INIT);
    const r = http.request({ socketPath: path, path: "/acp", method: "POST", headers: { "Content-Type": "application/json" } }, (res) => {
      let text = "";
      res.on("data", (d) => (text += d));
      res.on("end", () => resolve({ status: res.statusCode, text }));
    });
    r.on("error", reject);
    r.end(body);
  });
  assert.equal(res.status, 200);
  const c = wsClient(`ws+unix://${path}:/acp`);
  await c.opened;
  await session(c, dir);
  c.ws.close();
  await c.closed;
  a.proc.kill("SIGTERM");
  assert.deepEqual(await a.exited, { code: 0, signal: null });
  assert.ok(!existsSync(path), "the socket file stayed");
});

test("h2c with prior knowledge on the same port as HTTP/1.1", async (t) => {
  const dir = tempDir(t);
  const a = await startAgent(t, dir);
  const h2 = http2.connect(`http://127.0.0.1:${a.port}`);
  const res = await new Promise((resolve, reject) => {
    const s = h2.request({ ":method": "POST", ":path": "/acp", "content-type": "application/json" });
    let text = "";
    let headers;
    s.on("response", (h) => (headers = h));
    s.on("data", (d) => (text += d));
    s.on("end", () => resolve({ headers, text }));
    s.on("error", reject);
    s.end(JSON.stringify(INIT));
  });
  assert.equal(res.headers[":status"], 200);
  assert.ok(res.headers["acp-connection-id"]);
  assert.equal(JSON.parse(res.text).result.protocolVersion, 1);
  await new Promise((r) => h2.close(r));
  assert.equal(statusOf(await raw(a.port, post(a.port, INIT))), 200);
  a.proc.kill("SIGTERM");
  assert.deepEqual(await a.exited, { code: 0, signal: null });
});

test("connections leave no descriptor behind: after HTTP, WebSocket, refused and abandoned ones the agent is back to its count", async (t) => {
  const dir = tempDir(t);
  const token = "tok";
  writeFileSync(join(dir, "token"), token);
  const a = await startAgent(t, dir, ["--token-file", join(dir, "token")]);
  const fds = () => readdirSync(`/proc/${a.proc.pid}/fd`).length;
  const auth = { Authorization: `Bearer ${token}` };
  // The store is open from the start; nothing a connection uses should stay.
  const base = fds();
  for (let i = 0; i < 10; i++) {
    assert.equal(statusOf(await raw(a.port, post(a.port, INIT, auth))), 200);
    assert.equal(statusOf(await raw(a.port, post(a.port, INIT))), 401);
    const c = wsClient(`ws://127.0.0.1:${a.port}/acp`, { headers: auth });
    await c.opened;
    await session(c, dir);
    c.ws.close();
    await c.closed;
    // Abandoned: half a head, then gone; and a connection that never says anything.
    const s = net.connect(a.port, "127.0.0.1");
    await new Promise((r) => s.on("connect", r));
    s.write("POST /acp HTTP/1.1\r\nHost: x\r\n");
    s.destroy();
    const q = net.connect(a.port, "127.0.0.1");
    await new Promise((r) => q.on("connect", r));
    q.destroy();
  }
  let now = fds();
  for (let i = 0; i < 200 && now !== base; i++) {
    await sleep(20);
    now = fds();
  }
  assert.equal(now, base, `descriptors: ${base} before, ${now} after`);
  a.proc.kill("SIGTERM");
  assert.deepEqual(await a.exited, { code: 0, signal: null });
});
