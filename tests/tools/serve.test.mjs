// SPDX-License-Identifier: Apache-2.0
// acp serve (issue 24 item 3): a stdio agent on WebSocket and Streamable HTTP, driven by the
// official SDK's remote clients (experimental/ws-client and http-client), in front of acp-agent
// and of an SDK agent (sdk-agent.mjs). Each connection has its own agent process; the token is
// required (401 without it); a closed connection ends its agent's process tree (a grandchild
// that left the agent's session included) and leaves no zombie; SIGTERM ends everything, exit 0;
// over TLS (a certificate the test makes) both transports work and plain HTTP gets nothing.
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { request as httpsRequest } from "node:https";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import test from "node:test";
import * as acp from "@agentclientprotocol/sdk";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";
import { createHttpStream } from "@agentclientprotocol/sdk/experimental/http-client";
import { WebSocket } from "ws";

const BUILD = process.env.ACP_BUILD ?? join(process.cwd(), "build");
const SOURCE = process.env.ACP_SOURCE ?? process.cwd();
const ACP = join(BUILD, "acp");
const AGENT = join(BUILD, "acp-agent");
const SDK_AGENT = [process.execPath, join(SOURCE, "tests", "tools", "sdk-agent.mjs")];
const TOKEN = "tok-" + Math.random().toString(36).slice(2);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Children of pid (from /proc), and whether pid is a zombie. */
function children(pid) {
  const out = [];
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, "utf8");
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(f[1]) === pid) out.push({ pid: Number(d), state: f[0] });
    } catch {}
  }
  return out;
}
const alive = (pid) => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
};
async function until(what, pred, ms = 20000) {
  for (const end = Date.now() + ms; Date.now() < end; await sleep(50)) if (pred()) return;
  assert.fail(`timed out waiting for ${what}`);
}

async function serve(t, agentCmd, extra = () => []) {
  const dir = mkdtempSync(join(tmpdir(), "acp-serve-"));
  writeFileSync(join(dir, "token"), TOKEN + "\n");
  const p = spawn(ACP, ["serve", "--listen=127.0.0.1:0", "--port-file", join(dir, "port"), "--token-file", join(dir, "token"),
    "--close-timeout=1", ...extra(dir), "--", ...agentCmd(dir)], { stdio: ["ignore", "inherit", "pipe"] });
  let stderr = "";
  p.stderr.on("data", (d) => (stderr += d));
  const exited = new Promise((r) => p.on("exit", (code, signal) => r({ code, signal })));
  t.after(async () => {
    p.kill("SIGKILL");
    await exited;
    rmSync(dir, { recursive: true, force: true });
  });
  await until("the port file", () => existsSync(join(dir, "port")));
  const port = Number(readFileSync(join(dir, "port"), "utf8"));
  return { p, dir, port, exited, stderr: () => stderr };
}

/** An SDK client on stream; collects agent_message_chunk texts. */
function client(stream) {
  const texts = [];
  const app = acp.client({ name: "serve-test" }).onNotification("session/update", ({ params }) => {
    if (params.update.sessionUpdate === "agent_message_chunk") texts.push(params.update.content.text);
  });
  const conn = app.connect(stream);
  return { conn, ctx: conn.agent, texts };
}

async function roundTrip(c, text) {
  const init = await c.ctx.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
  assert.equal(init.protocolVersion, 1);
  const { sessionId } = await c.ctx.request("session/new", { cwd: tmpdir(), mcpServers: [] });
  const res = await c.ctx.request("session/prompt", { sessionId, prompt: [{ type: "text", text }] });
  assert.equal(res.stopReason, "end_turn");
  return { init, sessionId };
}

const headers = { Authorization: `Bearer ${TOKEN}` };
const sockets = [];
class Tap extends WebSocket {
  constructor(u, protocols, o) {
    super(u, protocols, o);
    sockets.push(this);
  }
}
const wsStream = (port) => createWebSocketStream(`ws://127.0.0.1:${port}/acp`, { headers, WebSocket: Tap });
const acpAgent = (dir) => [AGENT, "--store", join(dir, "s.db"), "--log-level=warn"];

for (const [name, agentCmd] of [["acp-agent", acpAgent], ["an SDK agent", () => SDK_AGENT]]) {
  test(`acp serve: ${name} through the SDK's WebSocket and HTTP clients, a process each`, async (t) => {
    const s = await serve(t, agentCmd);
    const url = `http://127.0.0.1:${s.port}/acp`;
    const ws = client(wsStream(s.port));
    const http = client(createHttpStream(url, { headers }));
    const a = await roundTrip(ws, "over ws");
    const b = await roundTrip(http, "over http");
    assert.equal(a.init.agentInfo.name, name === "acp-agent" ? "acp-agent" : "sdk-agent");
    assert.ok(ws.texts.join("").includes("over ws"), ws.texts.join(""));
    assert.ok(http.texts.join("").includes("over http"), http.texts.join(""));
    assert.ok(!ws.texts.join("").includes("over http"), "a connection saw another's messages");
    // Two connections, two agent processes.
    assert.equal(children(s.p.pid).length, 2, JSON.stringify(children(s.p.pid)));
    // No token: refused before any ACP byte.
    const r = await fetch(url, { method: "POST", body: "{}", headers: { "content-type": "application/json" } });
    assert.equal(r.status, 401);
    s.p.kill("SIGTERM");
    assert.deepEqual(await s.exited, { code: 0, signal: null }, s.stderr());
  });
}

test("acp serve: a closed connection ends its agent's process tree, no zombie", async (t) => {
  const s = await serve(t, () => SDK_AGENT);
  const c = client(wsStream(s.port));
  await roundTrip(c, "spawn").catch(() => {});
  const grandchild = Number(/pid (\d+)/.exec(c.texts.join(""))?.[1]);
  assert.ok(grandchild > 0, c.texts.join(""));
  const agents = children(s.p.pid);
  assert.equal(agents.length, 1);
  assert.ok(alive(grandchild));
  sockets.at(-1).close(); // the client goes: its agent and everything it started must too
  await until("the grandchild's end", () => !alive(grandchild));
  await until("the agent's end", () => !alive(agents[0].pid));
  await until("no child left (zombies included)", () => children(s.p.pid).length === 0);
  s.p.kill("SIGTERM");
  assert.deepEqual(await s.exited, { code: 0, signal: null }, s.stderr());
});

test("acp serve --root: a session outside the roots is refused -32602 by the server", async (t) => {
  const s = await serve(t, () => SDK_AGENT, (dir) => ["--root", dir]);
  const c = client(createHttpStream(`http://127.0.0.1:${s.port}/acp`, { headers }));
  await c.ctx.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
  const e = await c.ctx.request("session/new", { cwd: "/", mcpServers: [] }).then(() => null, (err) => err);
  assert.equal(e?.code, -32602, String(e));
  assert.match(e.message, /inside a directory this server allows/);
  const ok = await c.ctx.request("session/new", { cwd: s.dir, mcpServers: [] });
  assert.match(ok.sessionId, /^sess_/);
  s.p.kill("SIGTERM");
  assert.deepEqual(await s.exited, { code: 0, signal: null }, s.stderr());
});

test("acp serve --log-level debug: the relayed messages on stderr, secrets redacted", async (t) => {
  const s = await serve(t, () => SDK_AGENT, () => ["--log-level=debug"]);
  const c = client(createHttpStream(`http://127.0.0.1:${s.port}/acp`, { headers }));
  await c.ctx.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
  const mcp = [{ name: "m", command: "/bin/false", args: [], env: [{ name: "K", value: "SECRET-ENV" }] }];
  await c.ctx.request("session/new", { cwd: tmpdir(), mcpServers: mcp });
  s.p.kill("SIGTERM");
  assert.deepEqual(await s.exited, { code: 0, signal: null }, s.stderr());
  assert.match(s.stderr(), /acp: debug: <- \{"jsonrpc":"2.0","id":0,"method":"initialize"/);
  assert.match(s.stderr(), /acp: debug: -> \{"jsonrpc":"2.0","id":1,"result":\{"sessionId":"sess_1"/);
  assert.doesNotMatch(s.stderr(), /SECRET/);
  assert.match(s.stderr(), /<redacted>/);
});

test("acp serve over TLS: wss:// with the SDK's WebSocket client and https:// POSTs, a process each; plain HTTP gets nothing", async (t) => {
  let ca;
  const s = await serve(t, acpAgent, (dir) => {
    execFileSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=acp-serve-test",
      "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem")], { stdio: "ignore" });
    ca = readFileSync(join(dir, "cert.pem"));
    return ["--tls-cert", join(dir, "cert.pem"), "--tls-key", join(dir, "key.pem")];
  });
  class Trusting extends WebSocket {
    constructor(u, protocols, o) {
      super(u, protocols, { ...o, ca });
    }
  }
  const ws = client(createWebSocketStream(`wss://127.0.0.1:${s.port}/acp`, { headers, WebSocket: Trusting }));
  await roundTrip(ws, "over wss");
  assert.ok(ws.texts.join("").includes("over wss"), ws.texts.join(""));
  // Streamable HTTP over TLS: an initialize POSTed by hand (the SDK's HTTP client takes its fetch
  // from Node, which trusts no test certificate).
  const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } });
  const answer = await new Promise((resolve, reject) => {
    const req = httpsRequest(`https://127.0.0.1:${s.port}/acp`, {
      method: "POST", ca,
      headers: { ...headers, "content-type": "application/json", accept: "application/json, text/event-stream" },
    }, (res) => {
      let text = "";
      res.on("data", (d) => {
        text += d;
        if (text.includes('"protocolVersion"')) {
          resolve({ status: res.statusCode, text });
          res.destroy();
        }
      });
      res.on("end", () => resolve({ status: res.statusCode, text }));
    });
    req.on("error", reject);
    req.end(body);
  });
  assert.equal(answer.status, 200, answer.text);
  assert.match(answer.text, /"id":1,"result":\{"protocolVersion":1/);
  await until("the second agent process", () => children(s.p.pid).length === 2);
  // Plain HTTP on the TLS port: no answer but a closed connection.
  await assert.rejects(fetch(`http://127.0.0.1:${s.port}/acp`, { method: "POST", body, headers: { ...headers, "content-type": "application/json" } }));
  s.p.kill("SIGTERM");
  assert.deepEqual(await s.exited, { code: 0, signal: null }, s.stderr());
});
