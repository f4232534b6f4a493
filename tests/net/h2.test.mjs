// SPDX-License-Identifier: Apache-2.0
// HTTP/2 with a client we did not write: Node's http2 module speaks h2c (prior knowledge) to
// `acp-agent --listen unix:PATH` (net/listen.c sniffs the preface, net/h2.c, net/shttp.c).
// Streamable HTTP over it: initialize, session/new, a prompt whose updates arrive on the
// session's GET stream, the errors the SDK gives, a stream reset, 413, DELETE, and SIGTERM's
// GOAWAY and orderly exit.
import { spawn } from "node:child_process";
import http2 from "node:http2";
import net from "node:net";
import { mkdtempSync, rmSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import assert from "node:assert/strict";
import { test } from "node:test";

const BUILD = process.env.ACP_BUILD;
const MAX = 100000;

async function startServer(t, extra = []) {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "acp-h2-")));
  const sock = join(dir, "s");
  const proc = spawn(join(BUILD, "acp-agent"), ["--store", join(dir, "db"), "--listen", `unix:${sock}`, "--max-message", String(MAX), ...extra], {
    cwd: dir,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, XDG_STATE_HOME: join(dir, "xdg") },
  });
  let stderr = "";
  let stdout = "";
  proc.stdout.on("data", (d) => (stdout += d));
  const exit = new Promise((resolve) => proc.on("exit", (code, signal) => resolve({ code, signal })));
  await new Promise((resolve, reject) => {
    proc.stderr.on("data", (d) => {
      stderr += d;
      if (/listening/.test(stderr)) resolve();
    });
    proc.once("exit", () => reject(new Error("acp-agent exited: " + stderr)));
  });
  const srv = { dir, sock, proc, exit, stderr: () => stderr, stdout: () => stdout };
  t.after(async () => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGKILL");
    await exit;
    rmSync(dir, { recursive: true, force: true });
  });
  return srv;
}

function connect(srv) {
  return http2.connect("http://localhost", { createConnection: () => net.connect(srv.sock) });
}

// One whole exchange: { status, headers, body }.
function request(client, headers, body) {
  return new Promise((resolve, reject) => {
    const s = client.request(headers);
    let data = "";
    let head;
    s.setEncoding("utf8");
    s.on("response", (h) => (head = h));
    s.on("data", (d) => (data += d));
    s.on("end", () => resolve({ status: head?.[":status"], headers: head, body: data }));
    s.on("error", reject);
    if (body) s.end(body);
    else s.end();
  });
}

const post = (client, msg, extra = {}) =>
  request(client, { ":method": "POST", ":path": "/acp", "content-type": "application/json", ...extra }, JSON.stringify(msg));

// An SSE stream: messages in arrival order, next(pred) waits for one.
function sse(client, headers) {
  const s = client.request({ ":method": "GET", ":path": "/acp", accept: "text/event-stream", ...headers });
  const st = { s, msgs: [], waiters: [], ended: false, status: null };
  let buf = "";
  st.response = new Promise((resolve) => s.on("response", (h) => resolve((st.status = h[":status"]))));
  s.setEncoding("utf8");
  s.on("data", (d) => {
    buf += d;
    let i;
    while ((i = buf.indexOf("\n\n")) >= 0) {
      const ev = buf.slice(0, i);
      buf = buf.slice(i + 2);
      const data = ev.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n");
      if (data) st.msgs.push(JSON.parse(data));
      st.waiters = st.waiters.filter((w) => !w());
    }
  });
  st.done = new Promise((resolve) => s.on("close", () => { st.ended = true; resolve(); }));
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

async function initialize(client) {
  const r = await post(client, { jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } });
  assert.equal(r.status, 200, r.body);
  assert.equal(r.headers["content-type"], "application/json");
  const id = r.headers["acp-connection-id"];
  assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  const res = JSON.parse(r.body);
  assert.equal(res.id, 0);
  assert.equal(res.result.protocolVersion, 1);
  return id;
}

test("initialize, new, a prompt streamed on the session's GET, errors, reset, 413, delete", async (t) => {
  const srv = await startServer(t);
  const client = connect(srv);
  t.after(() => client.destroy());
  const cid = await initialize(client);
  const C = { "acp-connection-id": cid };

  const cs = sse(client, C);
  assert.equal(await cs.response, 200);
  const dup = await request(client, { ":method": "GET", ":path": "/acp", accept: "text/event-stream", ...C });
  assert.equal(dup.status, 409);

  let r = await post(client, { jsonrpc: "2.0", id: 1, method: "session/new", params: { cwd: srv.dir, mcpServers: [] } }, C);
  assert.equal(r.status, 202);
  assert.equal(r.body, "");
  const created = await cs.next((m) => m.id === 1);
  const sid = created.result.sessionId;
  assert.ok(sid);

  const S = { ...C, "acp-session-id": sid };
  const ss = sse(client, S);
  assert.equal(await ss.response, 200);
  r = await post(client, { jsonrpc: "2.0", id: 2, method: "session/prompt", params: { sessionId: sid, prompt: [{ type: "text", text: "hello over h2" }] } }, S);
  assert.equal(r.status, 202);
  const done = await ss.next((m) => m.id === 2);
  assert.equal(done.result.stopReason, "end_turn");
  const updates = ss.msgs.filter((m) => m.method === "session/update");
  assert.ok(updates.length > 0, "updates on the session stream");
  assert.ok(updates.every((u) => u.params.sessionId === sid));
  assert.ok(ss.msgs.indexOf(done) > ss.msgs.indexOf(updates[updates.length - 1]), "updates before the answer");
  assert.match(JSON.stringify(updates), /hello over h2/);
  assert.ok(!cs.msgs.some((m) => m.method === "session/update"), "nothing of the session on the connection stream");

  // The SDK's refusals, over h2.
  r = await post(client, { jsonrpc: "2.0", id: 3, method: "session/prompt", params: { sessionId: sid, prompt: [] } }, C);
  assert.deepEqual([r.status, r.body], [400, "Missing Acp-Session-Id"]);
  r = await post(client, { jsonrpc: "2.0", id: 3, method: "session/list" }, { "acp-connection-id": "nope" });
  assert.deepEqual([r.status, r.body], [404, "Unknown Acp-Connection-Id"]);
  r = await request(client, { ":method": "POST", ":path": "/acp", "content-type": "text/plain", ...C }, "{}");
  assert.equal(r.status, 415);
  r = await request(client, { ":method": "PUT", ":path": "/acp" }, "");
  assert.equal(r.status, 405);
  r = await request(client, { ":method": "GET", ":path": "/elsewhere" }, "");
  assert.equal(r.status, 404);

  // A body over the server's max message: 413, and the connection goes on.
  r = await request(client, { ":method": "POST", ":path": "/acp", "content-type": "application/json", ...C }, "x".repeat(2 * MAX));
  assert.equal(r.status, 413);

  // The client resets the session stream: the server lets it go, and a new one may open.
  ss.s.close(http2.constants.NGHTTP2_CANCEL);
  await ss.done;
  let again;
  for (;;) {
    again = sse(client, S);
    if ((await again.response) === 200) break;
    again.s.close(); // the reset may not have been read yet: 409 until it is
    await again.done;
  }
  r = await post(client, { jsonrpc: "2.0", id: 4, method: "session/prompt", params: { sessionId: sid, prompt: [{ type: "text", text: "again" }] } }, S);
  assert.equal(r.status, 202);
  assert.equal((await again.next((m) => m.id === 4)).result.stopReason, "end_turn");

  // DELETE ends the connection: its streams end, its id is unknown after.
  r = await request(client, { ":method": "DELETE", ":path": "/acp", ...C }, "");
  assert.equal(r.status, 202);
  await cs.done;
  await again.done;
  r = await post(client, { jsonrpc: "2.0", id: 5, method: "session/list" }, C);
  assert.equal(r.status, 404);

  client.close();
  srv.proc.kill("SIGTERM");
  const ex = await srv.exit;
  assert.deepEqual(ex, { code: 0, signal: null }, srv.stderr());
  assert.equal(srv.stdout(), "", "nothing on stdout in --listen mode");
});

test("SIGTERM: GOAWAY to a connected client, its stream ends, the server exits 0", async (t) => {
  const srv = await startServer(t);
  const client = connect(srv);
  t.after(() => client.destroy());
  const cid = await initialize(client);
  const cs = sse(client, { "acp-connection-id": cid });
  assert.equal(await cs.response, 200);
  const goaway = new Promise((resolve) => client.on("goaway", (code) => resolve(code)));
  srv.proc.kill("SIGTERM");
  assert.equal(await goaway, http2.constants.NGHTTP2_NO_ERROR);
  await cs.done;
  const ex = await srv.exit;
  assert.deepEqual(ex, { code: 0, signal: null }, srv.stderr());
  assert.doesNotMatch(srv.stderr(), /ERROR|Sanitizer/);
});

test("a broken HTTP/2 preface: the connection closes, the server lives", async (t) => {
  const srv = await startServer(t);
  const raw = net.connect(srv.sock);
  raw.write("PRI * HTTP/2.0\r\n\r\nXX\r\n\r\nmore bytes that are no frames");
  let got = Buffer.alloc(0);
  raw.on("data", (d) => (got = Buffer.concat([got, d])));
  await new Promise((resolve) => raw.on("close", resolve));
  // Whatever nghttp2 said (its SETTINGS, a GOAWAY), the socket closed; a real client still works.
  const client = connect(srv);
  t.after(() => client.destroy());
  await initialize(client);
  client.close();
  srv.proc.kill("SIGTERM");
  assert.deepEqual(await srv.exit, { code: 0, signal: null }, srv.stderr());
});

test("bearer token over HTTP/2: refused 401 from the head (net/h2.c's on_head), the body never read; accepted with it", async (t) => {
  const tdir = realpathSync(mkdtempSync(join(tmpdir(), "acp-h2-token-")));
  t.after(() => rmSync(tdir, { recursive: true, force: true }));
  writeFileSync(join(tdir, "token"), "s3cret-h2\n", { mode: 0o600 });
  const srv = await startServer(t, ["--token-file", join(tdir, "token")]);
  const client = connect(srv);
  t.after(() => client.destroy());
  const init = { jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } };
  let r = await post(client, init);
  assert.equal(r.status, 401);
  assert.match(r.headers["www-authenticate"] ?? "", /^Bearer/);
  r = await post(client, init, { authorization: "Bearer wrong" });
  assert.equal(r.status, 401);
  // A refused request's body is never read: even one over the size limit still gets 401.
  r = await request(client, { ":method": "POST", ":path": "/acp", "content-type": "application/json" }, "x".repeat(2 * MAX));
  assert.equal(r.status, 401);
  r = await request(client, { ":method": "POST", ":path": "/acp", "content-type": "application/json", "content-length": String(2 * MAX) }, "x".repeat(2 * MAX));
  assert.equal(r.status, 401, "credentials are checked before the announced size");
  // The same HTTP/2 connection goes on: with the token, initialize works.
  r = await post(client, init, { authorization: "Bearer s3cret-h2" });
  assert.equal(r.status, 200, r.body);
  assert.ok(r.headers["acp-connection-id"]);
  assert.doesNotMatch(srv.stderr(), /s3cret/, "the token never reaches a log");
  client.close();
  srv.proc.kill("SIGTERM");
  assert.deepEqual(await srv.exit, { code: 0, signal: null }, srv.stderr());
});
