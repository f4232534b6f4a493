// SPDX-License-Identifier: Apache-2.0
// acp-agent --listen safe by default (issue 20, item 7; docs/remote.md, "Threat model"). Every
// server here listens on 127.0.0.1: the non-loopback rules are reached with --exposed, the
// operator's flag for a listener that a proxy on the same host makes reachable, which makes
// the server treat 127.0.0.1 as non-loopback. Checked: no start without a token (exit 2),
// --insecure-no-auth starts with a warning, --root bounds cwd and additionalDirectories (a
// symlink pointing out is out), stdio MCP servers refused by default when non-loopback or
// with --root (the session works, its MCP status says why) and allowed with --allow-stdio-mcp.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { WebSocket } from "ws";

import { test, tempDir, AGENT, SOURCE } from "../interop-agent/lib.mjs";

/** Starts acp-agent --listen 127.0.0.1:0 with args; resolves once it says where it listens. */
async function startAgent(t, dir, args) {
  const proc = spawn(AGENT, ["--store", join(dir, "sessions.db"), "--listen", "127.0.0.1:0", ...args], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  const exited = new Promise((r) => proc.on("exit", (code) => r(code)));
  t.after(async () => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGTERM");
    await exited;
  });
  const port = await new Promise((resolve, reject) => {
    proc.stderr.on("data", (d) => {
      stderr += d;
      const m = /listening on 127\.0\.0\.1:(\d+)\n/.exec(stderr);
      if (m) resolve(Number(m[1]));
    });
    proc.on("exit", (code) => reject(new Error(`acp-agent exited ${code}: ${stderr}`)));
  });
  return { port, stderr: () => stderr };
}

/** An ACP client over WebSocket: request() resolves with the response; texts() the message chunks. */
async function connect(t, port, token) {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/acp`, token ? { headers: { Authorization: `Bearer ${token}` } } : {});
  const waiting = new Map();
  let next = 1, text = "";
  ws.on("message", (data) => {
    const m = JSON.parse(data.toString());
    if (m.method === "session/update" && m.params.update.sessionUpdate === "agent_message_chunk") text += m.params.update.content.text;
    if (m.id !== undefined && !m.method) waiting.get(m.id)?.(m);
  });
  await new Promise((resolve, reject) => (ws.once("open", resolve), ws.once("error", reject)));
  const closed = new Promise((r) => ws.on("close", r));
  t.after(async () => (ws.close(), await closed));
  const request = (method, params) => {
    const id = next++;
    ws.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
    return new Promise((r) => waiting.set(id, r));
  };
  const init = await request("initialize", { protocolVersion: 1, clientCapabilities: {} });
  assert.equal(init.result?.protocolVersion, 1, JSON.stringify(init));
  return { request, texts: () => text };
}

test("a non-loopback listener without a token does not start (exit 2, nothing bound)", (t) => {
  const dir = tempDir(t);
  const r = spawnSync(AGENT, ["--store", join(dir, "s.db"), "--listen", "127.0.0.1:0", "--exposed"], { encoding: "utf8", timeout: 60000 });
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /refusing to listen on 127\.0\.0\.1:0 without a token: anyone who can reach it could run commands.*--token-file.*--insecure-no-auth/);
  assert.doesNotMatch(r.stderr, /listening on/);
  // Addresses that are not loopback by their text: refused before anything is bound (so no
  // public address is ever bound here).
  for (const listen of ["0.0.0.0:0", "[::]:0", "10.1.2.3:0", "example.com:0", "127.example.com:0", ":0"]) {
    const n = spawnSync(AGENT, ["--store", join(dir, "s.db"), "--listen", listen], { encoding: "utf8", timeout: 60000 });
    assert.equal(n.status, 2, `${listen}: ${n.stderr}`);
    assert.match(n.stderr, /refusing to listen on .* without a token/, listen);
  }
});

test("--insecure-no-auth starts a non-loopback listener without a token, with a warning first", async (t) => {
  const dir = tempDir(t);
  const a = await startAgent(t, dir, ["--exposed", "--insecure-no-auth"]);
  assert.match(a.stderr(), /WARNING: listening on 127\.0\.0\.1:0 without a token \(insecure_no_auth\)[^\n]*\n.*listening on 127\.0\.0\.1:\d+\n/s);
  const c = await connect(t, a.port);
  const s = await c.request("session/new", { cwd: dir, mcpServers: [] });
  assert.ok(s.result?.sessionId, JSON.stringify(s));
  // With a token, no warning.
  writeFileSync(join(dir, "token"), "tok\n", { mode: 0o600 });
  const b = await startAgent(t, dir, ["--exposed", "--token-file", join(dir, "token"), "--store", join(dir, "b.db")]);
  assert.doesNotMatch(b.stderr(), /WARNING/);
});

test("--root: cwd and additionalDirectories inside are accepted, outside and through a symlink out refused", async (t) => {
  const dir = tempDir(t);
  const root = join(dir, "root"), outside = join(dir, "outside");
  mkdirSync(join(root, "sub"), { recursive: true });
  mkdirSync(outside);
  symlinkSync(outside, join(root, "out"));
  symlinkSync(join(root, "sub"), join(dir, "in")); // a link from outside to inside: inside
  const bad = spawnSync(AGENT, ["--store", join(dir, "s.db"), "--listen", "127.0.0.1:0", "--root", join(dir, "nope")], { encoding: "utf8", timeout: 60000 });
  assert.equal(bad.status, 2, bad.stderr);
  assert.match(bad.stderr, /--root '.*nope': No such file or directory/);
  const a = await startAgent(t, dir, ["--root", root]);
  const c = await connect(t, a.port);
  for (const cwd of [root, join(root, "sub"), join(dir, "in")]) {
    const s = await c.request("session/new", { cwd, mcpServers: [] });
    assert.ok(s.result?.sessionId, `${cwd}: ${JSON.stringify(s)}`);
  }
  for (const cwd of [outside, join(root, "out"), join(root, "out", "deeper"), "/", join(root, "..")]) {
    const s = await c.request("session/new", { cwd, mcpServers: [] });
    assert.equal(s.error?.code, -32602, `${cwd}: ${JSON.stringify(s)}`);
    assert.match(s.error.message, /^cwd must lie inside a directory this server allows \(symlinks resolved\): '/);
    assert.equal(s.error.data?.path, "params.cwd");
  }
  // load and resume are bounded too (the session exists; its new cwd does not pass).
  const ok = await c.request("session/new", { cwd: root, mcpServers: [] });
  const id = ok.result.sessionId;
  const load = await c.request("session/load", { sessionId: id, cwd: join(root, "out"), mcpServers: [] });
  assert.equal(load.error?.code, -32602, JSON.stringify(load));
  const resume = await c.request("session/resume", { sessionId: id, cwd: outside, mcpServers: [] });
  assert.equal(resume.error?.code, -32602, JSON.stringify(resume));
  const add = await c.request("session/new", { cwd: root, additionalDirectories: [join(root, "sub"), join(root, "out")], mcpServers: [] });
  assert.equal(add.error?.code, -32602, JSON.stringify(add));
  assert.equal(add.error.data?.path, "params.additionalDirectories[1]");
});

const fakeMcp = (name) => ({ name, command: process.execPath, args: [join(SOURCE, "tests/mcp/fake-server.mjs")], env: [] });

async function mcpStatus(t, port, cwd, token) {
  const c = await connect(t, port, token);
  const s = await c.request("session/new", { cwd, mcpServers: [fakeMcp("local")] });
  assert.ok(s.result?.sessionId, JSON.stringify(s));
  const p = await c.request("session/prompt", { sessionId: s.result.sessionId, prompt: [{ type: "text", text: "/mcp" }] });
  assert.equal(p.result?.stopReason, "end_turn", JSON.stringify(p));
  return c.texts();
}

test("stdio MCP servers: refused on a non-loopback listener (the session works, the status says why), allowed with --allow-stdio-mcp", async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, "token"), "tok\n", { mode: 0o600 });
  const auth = ["--exposed", "--token-file", join(dir, "token")];
  const refused = await startAgent(t, dir, auth);
  assert.match(await mcpStatus(t, refused.port, dir, "tok"), /^local: failed: stdio MCP servers are refused here: this agent runs no commands for its network clients .*--allow-stdio-mcp\) \(0 tools\)$/);
  const allowed = await startAgent(t, dir, [...auth, "--allow-stdio-mcp", "--store", join(dir, "b.db")]);
  assert.match(await mcpStatus(t, allowed.port, dir, "tok"), /^local: ready \(5 tools/);
});

test("stdio MCP servers on loopback: allowed as before, refused with --root or --no-stdio-mcp", async (t) => {
  const dir = tempDir(t);
  const plain = await startAgent(t, dir, []);
  assert.match(await mcpStatus(t, plain.port, dir), /^local: ready/);
  const rooted = await startAgent(t, dir, ["--root", dir, "--store", join(dir, "b.db")]);
  assert.match(await mcpStatus(t, rooted.port, dir), /^local: failed: stdio MCP servers are refused here/);
  const rootedAllowed = await startAgent(t, dir, ["--root", dir, "--allow-stdio-mcp", "--store", join(dir, "c.db")]);
  assert.match(await mcpStatus(t, rootedAllowed.port, dir), /^local: ready/);
  const none = await startAgent(t, dir, ["--no-stdio-mcp", "--store", join(dir, "d.db")]);
  assert.match(await mcpStatus(t, none.port, dir), /^local: failed: stdio MCP servers are refused here/);
});
