// SPDX-License-Identifier: Apache-2.0
// MCP through ACP: acp-agent driven by the official TypeScript SDK, with real MCP servers of
// every kind (server-everything over stdio, Streamable HTTP and SSE). session/new connects them
// all, /mcp lists them, /call runs their tools (progress becomes tool_call_update), session/close
// and agent exit leave no MCP process behind, session/load connects again.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createServer } from "node:net";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { sdkAgent, tempDir, test, SOURCE } from "../interop-agent/lib.mjs";

const EVERYTHING = join(SOURCE, "node_modules/@modelcontextprotocol/server-everything/dist/index.js");
const LOCALHOST = join(SOURCE, "tests/mcp/localhost.mjs");
const DEADLINE_MS = 30_000; // guards against hangs only

const freePort = () =>
  new Promise((resolve) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

// server-everything in an HTTP mode on 127.0.0.1, stopped after the test.
async function httpServer(t, mode) {
  const port = await freePort();
  const proc = spawn(process.execPath, ["--import", LOCALHOST, EVERYTHING, mode], {
    env: { PATH: process.env.PATH, PORT: String(port) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const srv = { port, out: "", proc, waiters: [] };
  const feed = (d) => {
    srv.out += d;
    srv.waiters = srv.waiters.filter((w) => !(srv.out.includes(w.text) && (w.resolve(), true)));
  };
  proc.stdout.on("data", feed);
  proc.stderr.on("data", feed);
  srv.waitFor = (text) =>
    new Promise((resolve, reject) => {
      if (srv.out.includes(text)) return resolve();
      const timer = setTimeout(() => reject(new Error(`server never printed ${JSON.stringify(text)}:\n${srv.out}`)), DEADLINE_MS);
      srv.waiters.push({ text, resolve: () => (clearTimeout(timer), resolve()) });
    });
  t.after(() => proc.kill("SIGKILL"));
  await srv.waitFor(mode === "sse" ? "Server is running on port" : "listening on port");
  return srv;
}

const stdio = (name, secret = "unused") => ({
  name,
  command: process.execPath,
  args: [EVERYTHING, "stdio"],
  env: [{ name: "ACP_MCP_TEST_SECRET", value: secret }],
});

// Every process whose parent is pid, with its command line.
function children(pid) {
  const out = [];
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid === pid) out.push({ pid: Number(d), cmd: readFileSync(`/proc/${d}/cmdline`, "utf8").replace(/\0/g, " ") });
    } catch {}
  }
  return out;
}

// Whether a process of process group pgid exists (a zombie included).
function groupAlive(pgid) {
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, "utf8");
      if (Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[2]) === pgid) return true;
    } catch {}
  }
  return false;
}

// Teardown has no client-visible event: look until the deadline.
async function until(what, fn) {
  const end = Date.now() + DEADLINE_MS;
  while (!fn()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const toolUpdates = (updates) => updates.filter((u) => u.sessionUpdate === "tool_call" || u.sessionUpdate === "tool_call_update");
const said = (updates) =>
  updates
    .filter((u) => u.sessionUpdate === "agent_message_chunk")
    .map((u) => u.content.text)
    .join("");

async function mcpStatus(a, sid) {
  return said((await a.prompt(sid, "/mcp")).updates);
}

test("session/new with stdio, http and sse servers: /mcp, /call, progress, close leaves nothing", async (t) => {
  const dir = tempDir(t);
  const web = await httpServer(t, "streamableHttp");
  const old = await httpServer(t, "sse");
  const a = sdkAgent(t, { store: join(dir, "sessions.db") });
  const init = await a.init();
  assert.equal(init.agentCapabilities.mcpCapabilities?.http, true);
  assert.equal(init.agentCapabilities.mcpCapabilities?.sse, true);
  const secret = "hdr-SECRET-9d1e";
  const servers = [
    stdio("local", "env-SECRET-77ab"),
    { type: "http", name: "web", url: `http://127.0.0.1:${web.port}/mcp`, headers: [{ name: "X-Api-Key", value: secret }] },
    { type: "sse", name: "old", url: `http://127.0.0.1:${old.port}/sse`, headers: [] },
  ];
  const sid = await a.newSession(dir, { mcpServers: servers });
  const status = await mcpStatus(a, sid);
  for (const name of ["local", "web", "old"]) assert.match(status, new RegExp(`${name}: ready \\(\\d+ tools: [^)]*\\becho\\b`), status);

  for (const name of ["local", "web", "old"]) {
    const r = await a.prompt(sid, `/call ${name} echo {"message":"via ${name}"}`);
    assert.equal(r.stopReason, "end_turn");
    const tu = toolUpdates(r.updates);
    assert.equal(tu[0].sessionUpdate, "tool_call");
    assert.equal(tu[0].status, "in_progress");
    assert.match(tu[0].title, new RegExp(`${name}\\.echo`));
    const last = tu.at(-1);
    assert.equal(last.status, "completed", JSON.stringify(tu));
    assert.equal(last.content[0].content.text, `Echo: via ${name}`);
  }

  // Progress notifications become tool_call_updates before the result.
  const r = await a.prompt(sid, `/call web trigger-long-running-operation {"duration":0.3,"steps":3}`);
  const tu = toolUpdates(r.updates);
  assert.ok(tu.filter((u) => u.sessionUpdate === "tool_call_update" && u.status === "in_progress").length >= 3, JSON.stringify(tu));
  assert.equal(tu.at(-1).status, "completed");

  // A failing call: the server's error, status failed.
  const bad = await a.prompt(sid, `/call local no-such-tool {}`);
  assert.equal(toolUpdates(bad.updates).at(-1).status, "failed");

  const agentPid = a.st.proc.pid;
  const kids = children(agentPid).filter((c) => c.cmd.includes("server-everything"));
  assert.equal(kids.length, 1, JSON.stringify(children(agentPid)));
  await a.request("session/close", { sessionId: sid });
  await until("the stdio MCP server's group to be gone", () => !groupAlive(kids[0].pid));
  await web.waitFor("Received session termination request"); // DELETE
  await old.waitFor("Client Disconnected"); // event stream closed
  await a.end();
  assert.ok(!a.st.stderr.includes(secret), "an HTTP header value reached the agent's log");
  assert.ok(!a.st.stderr.includes("env-SECRET-77ab"), "an env value reached the agent's log");
});

test("a failed server does not fail session/new; /mcp says why", async (t) => {
  const dir = tempDir(t);
  const a = sdkAgent(t, { store: join(dir, "sessions.db") });
  await a.init();
  const servers = [
    stdio("good"),
    { name: "relative", command: "npx", args: [], env: [] },
    { name: "missing", command: "/nonexistent/mcp-server", args: [], env: [] },
  ];
  const sid = await a.newSession(dir, { mcpServers: servers });
  const status = await mcpStatus(a, sid);
  assert.match(status, /good: ready/);
  assert.match(status, /relative: failed: command must be an absolute path: 'npx'/);
  assert.match(status, /missing: failed: .*\/nonexistent\/mcp-server/);
  const r = await a.prompt(sid, `/call missing echo {}`);
  assert.equal(toolUpdates(r.updates).at(-1).status, "failed");
  await a.end();
});

test("session/load connects the servers again; agent exit leaves no MCP process", async (t) => {
  const dir = tempDir(t);
  const store = join(dir, "sessions.db");
  const a = sdkAgent(t, { store });
  await a.init();
  const sid = await a.newSession(dir, { mcpServers: [stdio("ev")] });
  assert.match(await mcpStatus(a, sid), /ev: ready/);
  await a.end();

  const b = sdkAgent(t, { store });
  await b.init();
  await b.request("session/load", { sessionId: sid, cwd: dir, mcpServers: [stdio("ev2")] });
  const status = await mcpStatus(b, sid);
  assert.match(status, /ev2: ready/);
  assert.doesNotMatch(status, /\bev: /); // the servers are the request's, not the stored ones
  const r = await b.prompt(sid, `/call ev2 echo {"message":"reloaded"}`);
  assert.equal(toolUpdates(r.updates).at(-1).content[0].content.text, "Echo: reloaded");
  const kids = children(b.st.proc.pid).filter((c) => c.cmd.includes("server-everything"));
  assert.equal(kids.length, 1);
  await b.end(); // stdin closed: the agent exits, and shuts its MCP servers down first
  assert.ok(!groupAlive(kids[0].pid), "an MCP server outlived the agent");
});
