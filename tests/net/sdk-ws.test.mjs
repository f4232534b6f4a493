// SPDX-License-Identifier: Apache-2.0
// Our WebSocket client (net/ws_connect.c, through tests/net/ws_probe) against the official SDK's
// server: AcpServer behind experimental/node's createNodeWebSocketUpgradeHandler on the ws
// package, as the SDK's docs wire it, serving a tiny SDK agent. The server checks a bearer token
// (401 otherwise) and sets an affinity cookie on the 101, which the client must send back when it
// reconnects (the RFD's cookie rule).
import { spawn } from "node:child_process";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { createServer as createTlsServer } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import assert from "node:assert/strict";
import test from "node:test";
import { WebSocketServer } from "ws";
import * as acp from "@agentclientprotocol/sdk";
import { AcpServer } from "@agentclientprotocol/sdk/experimental/server";
import { createNodeWebSocketUpgradeHandler } from "@agentclientprotocol/sdk/experimental/node";

const BUILD = process.env.ACP_BUILD ?? join(process.cwd(), "build");
const PROBE = join(BUILD, "tests", "ws_probe");
const TOKEN = "tok-" + Math.random().toString(36).slice(2);

function sdkAgent() {
  let n = 0;
  return acp
    .agent()
    .onRequest("initialize", () => ({ protocolVersion: 1, agentCapabilities: { loadSession: false } }))
    .onRequest("session/new", () => ({ sessionId: `sess_${++n}` }))
    .onRequest("session/prompt", async ({ params, client }) => {
      const text = params.prompt.map((b) => b.text).join("");
      for (const chunk of ["you said: ", text, "!"])
        await client.notify("session/update", {
          sessionId: params.sessionId,
          update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: chunk } },
        });
      return { stopReason: "end_turn" };
    });
}

// A self-signed certificate for 127.0.0.1 (and one for another name, which must not pass).
function makeCert(t, dir, name, san) {
  execFileSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", `/CN=${name}`,
    "-addext", `subjectAltName=${san}`, "-keyout", join(dir, `${name}.key`), "-out", join(dir, `${name}.pem`)], { stdio: "ignore" });
  return { key: readFileSync(join(dir, `${name}.key`)), cert: readFileSync(join(dir, `${name}.pem`)), ca: join(dir, `${name}.pem`) };
}

async function startServer(t, tls) {
  const server = new AcpServer({ createAgent: sdkAgent });
  const wss = new WebSocketServer({ noServer: true });
  const upgrades = [];
  wss.on("headers", (headers) => headers.push("Set-Cookie: affinity=node-1; Path=/; HttpOnly"));
  const upgrade = createNodeWebSocketUpgradeHandler(server, wss);
  const handler = (req, res) => res.writeHead(404).end();
  const http = tls ? createTlsServer({ key: tls.key, cert: tls.cert }, handler) : createServer(handler);
  http.on("upgrade", (req, socket, head) => {
    upgrades.push({ authorization: req.headers.authorization, cookie: req.headers.cookie, url: req.url });
    if (req.headers.authorization !== `Bearer ${TOKEN}`) {
      socket.end("HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
      return;
    }
    upgrade(req, socket, head);
  });
  await new Promise((r) => http.listen(0, "127.0.0.1", r));
  t.after(async () => {
    await server.close();
    wss.close();
    http.closeAllConnections();
    await new Promise((r) => http.close(r));
  });
  return { url: `${tls ? "wss" : "ws"}://127.0.0.1:${http.address().port}/acp`, upgrades };
}

function probe(args) {
  return new Promise((resolve) => {
    const p = spawn(PROBE, args, { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    p.stdout.on("data", (d) => (out += d));
    p.stderr.on("data", (d) => (err += d));
    p.on("exit", (code, signal) => {
      const lines = out.split("\n").filter(Boolean).map((l) => JSON.parse(l));
      resolve({ code, signal, lines, err });
    });
  });
}

test("our WebSocket client against the SDK's AcpServer: initialize, new, a prompt's updates, cookies kept on reconnect", async (t) => {
  const s = await startServer(t);
  const r = await probe([s.url, TOKEN]);
  assert.equal(r.code, 0, `ws_probe failed (${r.code}, ${r.signal}): ${r.err}\n${JSON.stringify(r.lines)}`);
  const opens = r.lines.filter((l) => l.event === "open");
  assert.equal(opens.length, 2);
  for (const o of opens) {
    assert.equal(o.status, 0);
    assert.match(o.connectionId, /^[0-9a-f-]{36}$/, "Acp-Connection-Id from the SDK's 101");
  }
  assert.notEqual(opens[0].connectionId, opens[1].connectionId);
  // Both rounds: the turn's three updates, in order, before the prompt's answer.
  const msgs = r.lines.filter((l) => l.jsonrpc === "2.0");
  for (const round of [0, 1]) {
    const start = msgs.findIndex((m, i) => m.id === 1 && msgs.slice(0, i).filter((x) => x.id === 1).length === round);
    const mine = msgs.slice(start);
    const answer = mine.findIndex((m) => m.id === 3);
    assert.ok(answer > 0, "the prompt was answered");
    assert.equal(mine[answer].result.stopReason, "end_turn");
    const text = mine.slice(0, answer).filter((m) => m.method === "session/update").map((m) => m.params.update.content.text).join("");
    assert.equal(text, "you said: hello!");
  }
  // The token on both upgrades; the cookie from the first 101 on the second.
  assert.equal(s.upgrades.length, 2);
  assert.equal(s.upgrades[0].authorization, `Bearer ${TOKEN}`);
  assert.equal(s.upgrades[0].cookie, undefined);
  assert.equal(s.upgrades[1].cookie, "affinity=node-1");
  assert.equal(s.upgrades[0].url, "/acp");
  assert.deepEqual(r.lines.filter((l) => l.event === "cookies").map((l) => l.jar), ["affinity=node-1", "affinity=node-1"]);
  // We closed (1000) and the SDK's server answered the close handshake with 1000.
  for (const c of r.lines.filter((l) => l.event === "close")) assert.deepEqual([c.reason, c.code], ["closed", 1000]);
});

test("our WebSocket client refused by the SDK-fronted server: 401 is reported, nothing sent", async (t) => {
  const s = await startServer(t);
  const r = await probe([s.url, "wrong-token"]);
  assert.equal(r.code, 2, r.err);
  const open = r.lines.find((l) => l.event === "open");
  assert.equal(open.detail, "HTTP 401 Unauthorized");
  assert.equal(open.status, -12); // ACP_EACCES
  assert.equal(r.lines.filter((l) => l.jsonrpc).length, 0);
  assert.equal(s.upgrades.length, 1);
});

test("our client over wss:// to the SDK's server behind TLS: the certificate is verified against the given CA and the address", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "acp-wss-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const good = makeCert(t, dir, "loopback", "IP:127.0.0.1");
  const other = makeCert(t, dir, "elsewhere", "DNS:elsewhere.test");
  const s = await startServer(t, good);
  const r = await probe([s.url, TOKEN, good.ca]);
  assert.equal(r.code, 0, `${r.err}\n${JSON.stringify(r.lines)}`);
  assert.equal(r.lines.filter((l) => l.jsonrpc && l.id === 3 && l.result?.stopReason === "end_turn").length, 2);
  assert.equal(s.upgrades[1].cookie, "affinity=node-1");
  // A certificate for another name, trusted as a CA: refused, nothing sent.
  const s2 = await startServer(t, other);
  const bad = await probe([s2.url, TOKEN, other.ca]);
  assert.equal(bad.code, 2);
  assert.equal(bad.lines[0].status, -6); // ACP_EIO
  assert.equal(s2.upgrades.length, 0);
  // Not trusted at all (the system's anchors): refused too.
  const untrusted = await probe([s.url, TOKEN]);
  assert.equal(untrusted.code, 2);
  assert.equal(s.upgrades.length, 2);
});
