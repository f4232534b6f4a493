// SPDX-License-Identifier: Apache-2.0
// acp serve (issue 24 item 3): a stdio agent on WebSocket and Streamable HTTP, driven by the
// official SDK's remote clients (experimental/ws-client and http-client), in front of acp-agent
// and of an SDK agent (sdk-agent.mjs). Each connection has its own agent process; the token is
// required (401 without it); a closed connection ends its agent's process tree (a grandchild
// that left the agent's session included) and leaves no zombie; SIGTERM ends everything, exit 0.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
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

async function serve(t, agentCmd) {
  const dir = mkdtempSync(join(tmpdir(), "acp-serve-"));
  writeFileSync(join(dir, "token"), TOKEN + "\n");
  const p = spawn(ACP, ["serve", "--listen=127.0.0.1:0", "--port-file", join(dir, "port"), "--token-file", join(dir, "token"),
    "--close-timeout=1", "--", ...agentCmd(dir)], { stdio: ["ignore", "inherit", "pipe"] });
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
