// SPDX-License-Identifier: Apache-2.0
// SIGHUP re-reads what an operator rotates (issue 25, item 10): acp-agent --listen over wss:// with
// a token file and a certificate the test makes. With one connection open (the official SDK's
// WebSocket stream), the token file and the certificate are replaced and SIGHUP sent: a new
// connection with the old token is refused 401, one with the new token is served with the new
// certificate, and the open connection goes on with the old one, prompts and all. A reload whose
// certificate cannot be loaded changes nothing (not even the token read with it).
import { spawn, execFileSync } from "node:child_process";
import { X509Certificate } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import assert from "node:assert/strict";
import test from "node:test";
import { WebSocket } from "ws";
import * as acp from "@agentclientprotocol/sdk";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";

const BUILD = process.env.ACP_BUILD ?? join(process.cwd(), "build");
const AGENT = join(BUILD, "acp-agent");

function tmp(t) {
  const dir = mkdtempSync(join(tmpdir(), "acp-reload-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function makeCert(dir, name) {
  execFileSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", `/CN=${name}`,
    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem")], { stdio: "ignore" });
  return new X509Certificate(readFileSync(join(dir, "cert.pem"))).fingerprint256;
}

async function until(pred, what) {
  for (let i = 0; i < 6000 && !pred(); i++) await new Promise((r) => setTimeout(r, 5));
  assert.ok(pred(), `timed out waiting for ${what}`);
}

/** An SDK client over wss:// trusting ca; .socket is its TLS socket once open. */
function client(url, token, ca) {
  const c = { ws: null };
  class Tls extends WebSocket {
    constructor(u, p, o) {
      super(u, p, { ...o, ca });
      c.ws = this; // eslint-disable-line consistent-this
    }
  }
  const stream = createWebSocketStream(url, { WebSocket: Tls, headers: { Authorization: `Bearer ${token}` } });
  c.conn = acp.client({ name: "reload-test" }).onNotification("session/update", () => {}).connect(stream);
  c.request = (method, params) => c.conn.agent.request(method, params);
  c.init = () => c.request("initialize", { protocolVersion: 1, clientCapabilities: {}, clientInfo: { name: "reload-test", version: "0" } });
  c.fingerprint = () => c.ws._socket.getPeerCertificate().fingerprint256;
  return c;
}

/** A raw upgrade: the HTTP status the listener answers a token with. */
function status(url, token, ca) {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, { ca, headers: { Authorization: `Bearer ${token}` } });
    ws.on("unexpected-response", (req, res) => {
      resolve(res.statusCode);
      req.destroy();
    });
    ws.on("open", () => {
      resolve(101);
      ws.terminate();
    });
    ws.on("error", () => {});
  });
}

test("SIGHUP: the new token and certificate for new connections, the open connection untouched; a bad certificate changes nothing", async (t) => {
  const dir = tmp(t);
  const tokenFile = join(dir, "token");
  writeFileSync(tokenFile, "first-token\n", { mode: 0o600 });
  const fp1 = makeCert(dir, "first");
  const ca1 = readFileSync(join(dir, "cert.pem"));
  const p = spawn(AGENT, ["--store", join(dir, "s.db"), "--listen", "127.0.0.1:0", "--port-file", join(dir, "port"),
    "--token-file", tokenFile, "--tls-cert", join(dir, "cert.pem"), "--tls-key", join(dir, "key.pem")], { cwd: dir, stdio: ["ignore", "pipe", "pipe"] });
  let err = "";
  p.stderr.on("data", (d) => (err += d));
  const exit = new Promise((r) => p.on("exit", (code, signal) => r({ code, signal })));
  t.after(() => p.exitCode === null && p.signalCode === null && p.kill("SIGKILL"));
  await until(() => existsSync(join(dir, "port")) && readFileSync(join(dir, "port"), "utf8").endsWith("\n"), "the port file");
  const url = `wss://127.0.0.1:${Number(readFileSync(join(dir, "port"), "utf8"))}/acp`;

  const old = client(url, "first-token", ca1);
  await old.init();
  assert.equal(old.fingerprint(), fp1);
  const { sessionId } = await old.request("session/new", { cwd: dir, mcpServers: [] });

  // rotate both, then SIGHUP
  writeFileSync(tokenFile, "second-token\n");
  const fp2 = makeCert(dir, "second");
  assert.notEqual(fp2, fp1);
  const ca2 = readFileSync(join(dir, "cert.pem"));
  p.kill("SIGHUP");
  await until(() => /SIGHUP: reloaded the token file the TLS certificate/.test(err), "the reload");

  assert.equal(await status(url, "first-token", ca2), 401, "the old token still opens new connections");
  const fresh = client(url, "second-token", ca2);
  await fresh.init();
  assert.equal(fresh.fingerprint(), fp2, "a new connection got the old certificate");
  // the connection opened before the reload goes on, with the certificate it was made with
  const r = await old.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "after the reload" }] });
  assert.equal(r.stopReason, "end_turn");
  assert.equal(old.fingerprint(), fp1);

  // a certificate that cannot be loaded: nothing changes, the token read with it neither
  writeFileSync(tokenFile, "third-token\n");
  writeFileSync(join(dir, "cert.pem"), "not a certificate\n");
  p.kill("SIGHUP");
  await until(() => /SIGHUP: .*cannot load the TLS certificate.*keeping the old token and certificate/.test(err), "the refused reload");
  assert.equal(await status(url, "third-token", ca2), 401);
  assert.equal(await status(url, "second-token", ca2), 101);
  // and a token file that cannot be read keeps the old ones too
  rmSync(tokenFile);
  p.kill("SIGHUP");
  await until(() => /cannot read the token file[^]*SIGHUP: keeping the old token and certificate/.test(err), "the unreadable token file");
  assert.equal(await status(url, "second-token", ca2), 101);

  old.conn.close();
  fresh.conn.close();
  p.kill("SIGTERM");
  assert.deepEqual(await exit, { code: 0, signal: null }, err);
});

test("acp serve: SIGHUP re-reads the token file too (the shared server options)", async (t) => {
  const dir = tmp(t);
  const tokenFile = join(dir, "token");
  writeFileSync(tokenFile, "first-token\n", { mode: 0o600 });
  const p = spawn(join(BUILD, "acp"), ["serve", "--listen", "127.0.0.1:0", "--port-file", join(dir, "port"), "--token-file", tokenFile,
    "--", AGENT, "--store", join(dir, "s.db")], { cwd: dir, stdio: ["ignore", "pipe", "pipe"] });
  let err = "";
  p.stderr.on("data", (d) => (err += d));
  const exit = new Promise((r) => p.on("exit", (code, signal) => r({ code, signal })));
  t.after(() => p.exitCode === null && p.signalCode === null && p.kill("SIGKILL"));
  await until(() => existsSync(join(dir, "port")) && readFileSync(join(dir, "port"), "utf8").endsWith("\n"), "the port file");
  const url = `ws://127.0.0.1:${Number(readFileSync(join(dir, "port"), "utf8"))}/acp`;
  assert.equal(await status(url, "first-token"), 101);
  writeFileSync(tokenFile, "second-token\n");
  p.kill("SIGHUP");
  await until(() => /SIGHUP: reloaded the token file for new connections/.test(err), "the reload");
  assert.equal(await status(url, "first-token"), 401);
  assert.equal(await status(url, "second-token"), 101);
  p.kill("SIGTERM");
  assert.deepEqual(await exit, { code: 0, signal: null }, err);
});
