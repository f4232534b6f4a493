// SPDX-License-Identifier: Apache-2.0
// Long event streams over HTTP/2 with back-pressure (issue 11: streams that paused for 8-16 s).
// Node's http2 module is the client: a small stream window and a reader that pauses after every
// chunk keep the agent at its high-water mark (--high-water 16K) over and over, and every update
// of a /stream turn must arrive. Before net/h2.c reported a drain each time a stream's queue
// halved, a queue whose peak overshot the mark reported too early, once, and the agent waited
// for the next 15 s keep-alive comment. Measured with the old net/h2.c: the 20000-update tests
// took 90 s each (about six such pauses), the over-the-mark one 15 s (one pause), against 2 s
// each now. The keep-alive always rescues a pause, so these tests pass late rather than fail on
// the old code: they assert completeness, and the timeout is only a guard against a hang.
import { spawn, execFileSync } from "node:child_process";
import http2 from "node:http2";
import net from "node:net";
import { mkdtempSync, rmSync, realpathSync, readFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import assert from "node:assert/strict";
import { test } from "node:test";

const BUILD = process.env.ACP_BUILD;
const GUARD = { timeout: 240000 };

// acp-agent --listen on a unix socket (h2c) or, with tls, 127.0.0.1:0 with a certificate made here.
async function startServer(t, { tls = false } = {}) {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "acp-h2s-")));
  const args = ["--store", join(dir, "db"), "--high-water", "16K"];
  let connect;
  if (tls) {
    const key = join(dir, "key.pem"), cert = join(dir, "cert.pem");
    execFileSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "1",
      "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost"], { stdio: "ignore" });
    args.push("--listen", "127.0.0.1:0", "--port-file", join(dir, "port"), "--tls-cert", cert, "--tls-key", key);
    const ca = readFileSync(cert);
    connect = (settings) =>
      http2.connect(`https://localhost:${readFileSync(join(dir, "port"), "utf8").trim()}`, { ca, settings });
  } else {
    const sock = join(dir, "s");
    args.push("--listen", `unix:${sock}`);
    connect = (settings) => http2.connect("http://localhost", { createConnection: () => net.connect(sock), settings });
  }
  const proc = spawn(join(BUILD, "acp-agent"), args, {
    cwd: dir,
    stdio: ["ignore", "ignore", "pipe"],
    env: { ...process.env, XDG_STATE_HOME: join(dir, "xdg") },
  });
  let stderr = "";
  const exit = new Promise((resolve) => proc.on("exit", (code, signal) => resolve({ code, signal })));
  await new Promise((resolve, reject) => {
    proc.stderr.on("data", (d) => {
      stderr += d;
      if (/listening/.test(stderr) && (!tls || existsSync(join(dir, "port")))) resolve();
    });
    proc.once("exit", () => reject(new Error("acp-agent exited: " + stderr)));
  });
  t.after(async () => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGKILL");
    await exit;
    rmSync(dir, { recursive: true, force: true });
  });
  return { dir, proc, exit, connect, stderr: () => stderr };
}

function request(client, headers, body) {
  return new Promise((resolve, reject) => {
    const s = client.request(headers);
    let data = "", head;
    s.setEncoding("utf8");
    s.on("response", (h) => (head = h));
    s.on("data", (d) => (data += d));
    s.on("end", () => resolve({ status: head?.[":status"], headers: head, body: data }));
    s.on("error", reject);
    s.end(body ? JSON.stringify(body) : undefined);
  });
}

const post = (client, msg, extra = {}) =>
  request(client, { ":method": "POST", ":path": "/acp", "content-type": "application/json", ...extra }, msg);

// An SSE stream whose reader, when slow, pauses after every chunk and resumes on the next turn
// of Node's loop: the server sees a client that takes its window back a little at a time.
function sse(client, headers, { slow = false } = {}) {
  const s = client.request({ ":method": "GET", ":path": "/acp", accept: "text/event-stream", ...headers });
  const st = { msgs: [], waiters: [] };
  let buf = "";
  s.setEncoding("utf8");
  s.on("data", (d) => {
    buf += d;
    let i;
    while ((i = buf.indexOf("\n\n")) >= 0) {
      const ev = buf.slice(0, i);
      buf = buf.slice(i + 2);
      if (ev.startsWith("data: ")) st.msgs.push(JSON.parse(ev.slice(6)));
    }
    st.waiters = st.waiters.filter((w) => !w());
    if (slow) {
      s.pause();
      setImmediate(() => s.resume());
    }
  });
  s.on("error", () => {});
  st.next = (pred) =>
    new Promise((resolve) => {
      const check = () => {
        const m = st.msgs.find(pred);
        if (m) resolve(m);
        return !!m;
      };
      if (!check()) st.waiters.push(check);
    });
  return st;
}

// initialize, session/new, then /stream N BYTES read slowly on the session's stream: the chunks.
async function streamTurn(srv, client, n, bytes) {
  const r = await post(client, { jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } });
  assert.equal(r.status, 200, r.body);
  const C = { "acp-connection-id": r.headers["acp-connection-id"] };
  const cs = sse(client, C);
  assert.equal((await post(client, { jsonrpc: "2.0", id: 1, method: "session/new", params: { cwd: srv.dir, mcpServers: [] } }, C)).status, 202);
  const sid = (await cs.next((m) => m.id === 1)).result.sessionId;
  const S = { ...C, "acp-session-id": sid };
  const ss = sse(client, S, { slow: true });
  const p = await post(client, { jsonrpc: "2.0", id: 2, method: "session/prompt", params: { sessionId: sid, prompt: [{ type: "text", text: `/stream ${n} ${bytes}` }] } }, S);
  assert.equal(p.status, 202);
  const done = await ss.next((m) => m.id === 2);
  assert.equal(done.result.stopReason, "end_turn");
  return ss.msgs
    .filter((m) => m.method === "session/update" && m.params.update.sessionUpdate === "agent_message_chunk")
    .map((m) => m.params.update.content.text);
}

// The chunk /stream sends: BYTES letters a..z repeating.
const chunkOf = (bytes) => Array.from({ length: bytes }, (_, i) => String.fromCharCode(97 + (i % 26))).join("");

async function stopServer(srv) {
  srv.proc.kill("SIGTERM");
  assert.deepEqual(await srv.exit, { code: 0, signal: null }, srv.stderr());
  assert.doesNotMatch(srv.stderr(), /stalled|ERROR|Sanitizer/);
}

for (const tls of [false, true])
  test(`${tls ? "h2 over TLS" : "h2c"}: 20000 updates through a 4 KiB window and a slow reader, every one arrives`, GUARD, async (t) => {
    const srv = await startServer(t, { tls });
    const client = srv.connect({ initialWindowSize: 4096 });
    t.after(() => client.destroy());
    const chunks = await streamTurn(srv, client, 20000, 200);
    assert.equal(chunks.length, 20000);
    const want = chunkOf(200);
    assert.ok(chunks.every((c) => c === want), "every chunk whole");
    client.close();
    await stopServer(srv);
  });

test("h2c: updates larger than the high-water mark each arrive without waiting for a keep-alive", GUARD, async (t) => {
  const srv = await startServer(t);
  const client = srv.connect({ initialWindowSize: 16384 });
  t.after(() => client.destroy());
  const chunks = await streamTurn(srv, client, 40, 48 * 1024);
  assert.equal(chunks.length, 40);
  const want = chunkOf(48 * 1024);
  assert.ok(chunks.every((c) => c === want), "every chunk whole");
  client.close();
  await stopServer(srv);
});
