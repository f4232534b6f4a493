// SPDX-License-Identifier: Apache-2.0
// systemd socket activation (issue 25, item 10): `acp-agent --listen systemd` serves the sockets a
// service manager passed (LISTEN_FDS, LISTEN_PID, LISTEN_FDNAMES; sd_listen_fds(3)'s protocol,
// read without libsystemd). tests/net/sdlaunch plays the service manager: it binds a TCP socket on
// 127.0.0.1 and a Unix socket, passes them as descriptors 3 and 4, and execs acp-agent. The
// official SDK's WebSocket stream talks ACP on both; the agent's children (a stdio MCP server that
// dumps its environment) do not see LISTEN_*; the Unix socket file is
// systemd's and stays after exit. Sockets for another process (a wrong LISTEN_PID) and none at
// all are refused with exit 1.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import assert from "node:assert/strict";
import test from "node:test";
import { WebSocket } from "ws";
import * as acp from "@agentclientprotocol/sdk";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";

const BUILD = process.env.ACP_BUILD ?? join(process.cwd(), "build");
const LAUNCH = join(BUILD, "tests", "sdlaunch");
const AGENT = join(BUILD, "acp-agent");
const TOKEN = "tok-" + Math.random().toString(36).slice(2);

function tmp(t) {
  const dir = mkdtempSync(join(tmpdir(), "acp-sd-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function launch(t, dir, pre = [], extra = []) {
  writeFileSync(join(dir, "token"), TOKEN + "\n", { mode: 0o600 });
  const args = [...pre, join(dir, "port"), join(dir, "acp.sock"), AGENT, "--store", join(dir, "s.db"), "--listen", "systemd", "--token-file", join(dir, "token"), ...extra];
  const p = spawn(LAUNCH, args, { cwd: dir, stdio: ["ignore", "pipe", "pipe"] });
  let err = "";
  p.stderr.on("data", (d) => (err += d));
  const exit = new Promise((r) => p.on("exit", (code, signal) => r({ code, signal })));
  t.after(() => p.exitCode === null && p.signalCode === null && p.kill("SIGKILL"));
  return { p, exit, stderr: () => err };
}

/** An SDK client over its WebSocket stream (url ws://... or ws+unix:PATH:/acp). */
function client(url) {
  const c = { updates: [] };
  const stream = createWebSocketStream(url, { WebSocket, headers: { Authorization: `Bearer ${TOKEN}` } });
  c.conn = acp
    .client({ name: "systemd-test" })
    .onNotification("session/update", ({ params }) => void c.updates.push(params))
    .connect(stream);
  c.request = (method, params) => c.conn.agent.request(method, params);
  return c;
}

async function session(c, dir) {
  const init = await c.request("initialize", { protocolVersion: 1, clientCapabilities: {}, clientInfo: { name: "systemd-test", version: "0" } });
  assert.equal(init.protocolVersion, 1);
  const { sessionId } = await c.request("session/new", { cwd: dir, mcpServers: [] });
  const r = await c.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "over a socket systemd passed" }] });
  assert.equal(r.stopReason, "end_turn");
  return sessionId;
}

async function until(pred, what) {
  for (let i = 0; i < 6000 && !pred(); i++) await new Promise((r) => setTimeout(r, 5));
  assert.ok(pred(), `timed out waiting for ${what}`);
}

test("--listen systemd serves both passed sockets (TCP and Unix) to the SDK; LISTEN_* do not reach children; the socket file stays", async (t) => {
  const dir = tmp(t);
  const a = launch(t, dir);
  await until(() => existsSync(join(dir, "port")) && /listening on the sockets systemd passed/.test(a.stderr()), "the agent to listen");
  assert.match(a.stderr(), /serving socket 3 \(web\) from systemd/);
  assert.match(a.stderr(), /serving socket 4 \(local\) from systemd/);
  const port = Number(readFileSync(join(dir, "port"), "utf8"));
  const tcp = client(`ws://127.0.0.1:${port}/acp`);
  const sid = await session(tcp, dir);
  const unix = client(`ws+unix:${join(dir, "acp.sock")}:/acp`);
  await session(unix, dir);
  // a child of the agent: it must not take the sockets (LISTEN_PID would name its parent anyway)
  const dump = join(dir, "env.txt");
  const mcp = [{ name: "envdump", command: "/bin/sh", args: ["-c", `env > ${dump}`], env: [] }];
  await unix.request("session/new", { cwd: dir, mcpServers: mcp });
  await until(() => existsSync(dump), "the MCP server to start");
  assert.doesNotMatch(readFileSync(dump, "utf8"), /^LISTEN_/m);
  // a session made over TCP loads over the Unix socket: one agent, one store
  await unix.request("session/load", { sessionId: sid, cwd: dir, mcpServers: [] });
  assert.ok(unix.updates.some((u) => u.sessionId === sid && u.update.sessionUpdate === "user_message_chunk"));
  tcp.conn.close();
  unix.conn.close();
  a.p.kill("SIGTERM");
  assert.deepEqual(await a.exit, { code: 0, signal: null }, a.stderr());
  assert.ok(existsSync(join(dir, "acp.sock")), "the socket file is systemd's, not the agent's to remove");
});

test("--listen systemd refuses sockets for another process (LISTEN_PID) and a start without any, exit 1", async (t) => {
  const dir = tmp(t);
  const a = launch(t, dir, ["--pid", "1"]);
  assert.deepEqual(await a.exit, { code: 1, signal: null });
  assert.match(a.stderr(), /--listen systemd: the sockets are for another process \(LISTEN_PID\): 1/);
  const p = spawn(AGENT, ["--store", join(dir, "s2.db"), "--listen", "systemd", "--token-file", join(dir, "token")], {
    cwd: dir,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, LISTEN_PID: undefined, LISTEN_FDS: undefined },
  });
  let err = "";
  p.stderr.on("data", (d) => (err += d));
  const code = await new Promise((r) => p.on("exit", (c) => r(c)));
  assert.equal(code, 1);
  assert.match(err, /no sockets were passed/);
});

test("docs/acp-agent.socket and docs/acp-agent.service pass systemd-analyze verify (ExecStart pointed at this build)", async (t) => {
  const which = spawnSync("sh", ["-c", "command -v systemd-analyze"], { encoding: "utf8" });
  if (which.status !== 0) return t.skip("no systemd-analyze on this machine");
  const dir = tmp(t);
  const src = join(process.env.ACP_SOURCE ?? process.cwd(), "docs");
  const service = readFileSync(join(src, "acp-agent.service"), "utf8");
  assert.match(service, /^ExecStart=\/usr\/bin\/acp-agent --listen systemd /m);
  assert.match(service, /^ExecReload=\/bin\/kill -HUP \$MAINPID$/m);
  writeFileSync(join(dir, "acp-agent.service"), service.replace("/usr/bin/acp-agent", AGENT));
  writeFileSync(join(dir, "acp-agent.socket"), readFileSync(join(src, "acp-agent.socket")));
  const r = spawnSync("systemd-analyze", ["verify", "--man=no", "./acp-agent.socket", "./acp-agent.service"], { cwd: dir, encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stderr.trim(), "", "systemd-analyze has remarks");
});
