// SPDX-License-Identifier: Apache-2.0
// MCP over ACP (unstable, issue 23): an MCP server that lives in the ACP client and is reached
// through `mcp/message` on the ACP connection itself. The official SDK 2.4.0 is the client
// (McpOverAcpProvider from @agentclientprotocol/sdk/unstable, a raw MCP handler) and acp-agent
// (echo engine: /mcp lists the session's servers, /call runs a tool) the consumer:
//   - mcpCapabilities.acp advertised, and not with --unstable-off mcp-acp (then type "acp" is
//     refused -32602 as any unsupported type);
//   - discovery, tools/list, tools/call with progress, the inner _meta MCP 2026-07-28 wants;
//   - bad input: an unknown serverId (that server fails, the session does not), an inner MCP
//     error, an answer that is no carrier, an oversized answer (each fails its call only, the
//     server stays ready), cancellation (the handler's signal aborts), a client that never
//     answers (bounded by the connect timeout: session/new still answers);
//   - session/load declares the server again and it works there too.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { join } from "node:path";
import * as acp from "@agentclientprotocol/sdk/unstable";
import { BUILD, tempDir, test } from "../interop-agent/lib.mjs";

const AGENT = join(BUILD, "acp-agent");
const META_VERSION = "io.modelcontextprotocol/protocolVersion";

function startAgent(t, dir, args = []) {
  const proc = spawn(AGENT, ["--store", join(dir, "s.db"), ...args], {
    cwd: dir,
    env: { ...process.env, XDG_STATE_HOME: join(dir, "xdg") },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stderr = "";
  proc.stderr.on("data", (d) => (stderr += d));
  const exit = new Promise((r) => proc.on("exit", (code, signal) => r({ code, signal })));
  t.after(() => proc.exitCode === null && proc.signalCode === null && proc.kill("SIGKILL"));
  return {
    proc,
    stderr: () => stderr,
    stream: acp.ndJsonStream(Writable.toWeb(proc.stdin), Readable.toWeb(proc.stdout)),
    async end() {
      proc.stdin.end();
      const e = await exit;
      assert.deepEqual([e.code, e.signal], [0, null], `acp-agent exit ${e.code} (66: leak); stderr:\n${stderr.slice(-3000)}`);
    },
  };
}

// The MCP server the SDK client provides: a raw handler, as MCP 2026-07-28 has it.
function toolsHandler(log) {
  return async (cx) => {
    log.push({ method: cx.method, version: cx.protocolVersion, params: cx.params });
    switch (cx.method) {
      case "server/discover":
        return { result: { supportedVersions: ["2026-07-28"], capabilities: { tools: {} }, serverInfo: { name: "sdk-tools", version: "1.0.0" } } };
      case "tools/list":
        return {
          result: {
            tools: ["echo", "fail", "nocarrier", "huge", "hang"].map((name) => ({ name, description: `the ${name} tool`, inputSchema: { type: "object" } })),
          },
        };
      case "tools/call": {
        const { name, arguments: args } = cx.params;
        const token = cx.params._meta?.progressToken;
        if (name === "echo") {
          if (token !== undefined) await cx.notify("notifications/progress", { progressToken: token, progress: 1, total: 2, message: "half" });
          return { result: { content: [{ type: "text", text: `sdk: ${args.message}` }] } };
        }
        if (name === "fail") return { error: { code: -32000, message: "the tool broke" } };
        if (name === "nocarrier") return { neither: true }; // the provider refuses it: an outer -33002
        if (name === "huge") return { result: { content: [{ type: "text", text: "x".repeat(17 << 20) }] } };
        if (name === "hang")
          return new Promise((_, reject) => cx.signal.addEventListener("abort", () => (log.push({ aborted: name }), reject(cx.signal.reason))));
        return { error: { code: -32602, message: `no tool ${name}` } };
      }
      default:
        return { error: { code: -32601, message: `Method not found: ${cx.method}` } };
    }
  };
}

function clientApp(updates) {
  const provider = new acp.McpOverAcpProvider();
  const app = acp
    .client()
    .onRequest("mcp/message", provider.handleRequest)
    .onNotification("session/update", ({ params }) => updates.push(params.update));
  return { provider, app };
}

async function prompt(agent, updates, sessionId, text) {
  updates.length = 0;
  const r = await agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text }] });
  return { stop: r.stopReason, updates: [...updates] };
}
const said = (u) => u.filter((x) => x.sessionUpdate === "agent_message_chunk").map((x) => x.content.text).join("");
const tools = (u) => u.filter((x) => x.sessionUpdate === "tool_call" || x.sessionUpdate === "tool_call_update");

test("an SDK client's MCP server over mcp/message: discover, list, call, progress, failures, cancel, load, resume", async (t) => {
  const dir = tempDir(t);
  const ag = startAgent(t, dir);
  const updates = [];
  const log = [];
  const { provider, app } = clientApp(updates);
  await app.connectWith(ag.stream, async (agent) => {
    const init = await agent.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
    assert.equal(init.agentCapabilities.mcpCapabilities.acp, true);
    const reg = provider.registerServer(agent, { name: "tools", handler: toolsHandler(log) });
    const servers = [reg.declaration, { type: "acp", name: "ghost", serverId: "no-such-server" }];
    const { sessionId } = await agent.request("session/new", { cwd: dir, mcpServers: servers });
    assert.equal(log[0].method, "server/discover");
    assert.equal(log[0].version, "2026-07-28", "every inner request carries the MCP version in _meta");
    assert.equal(log[1].method, "tools/list");

    let r = await prompt(agent, updates, sessionId, "/mcp");
    assert.match(said(r.updates), /tools: ready \(5 tools: [^)]*\becho\b/, said(r.updates));
    assert.match(said(r.updates), /ghost: failed: .*(unavailable|-33001)/, said(r.updates));

    r = await prompt(agent, updates, sessionId, '/call tools echo {"message":"over acp"}');
    let tu = tools(r.updates);
    assert.equal(tu.at(-1).status, "completed", JSON.stringify(tu));
    assert.equal(tu.at(-1).content[0].content.text, "sdk: over acp");
    assert.ok(tu.some((u) => u.sessionUpdate === "tool_call_update" && u.status === "in_progress"), "progress became an update");
    assert.equal(log.at(-1).params[`_meta`][META_VERSION], "2026-07-28");

    // Each of these fails its own call; the server stays ready for the next one.
    for (const bad of ["fail", "nocarrier", "huge", "missing"]) {
      r = await prompt(agent, updates, sessionId, `/call tools ${bad} {}`);
      assert.equal(tools(r.updates).at(-1).status, "failed", `${bad}: ${JSON.stringify(tools(r.updates))}`);
      r = await prompt(agent, updates, sessionId, '/call tools echo {"message":"still"}');
      assert.equal(tools(r.updates).at(-1).content[0].content.text, "sdk: still", bad);
    }

    // Cancelling the turn cancels the tool call, and the mcp/message behind it.
    updates.length = 0;
    const p = agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "/call tools hang {}" }] });
    while (!log.some((e) => e.params?.name === "hang")) await new Promise((res) => setTimeout(res, 10));
    await agent.notify("session/cancel", { sessionId });
    assert.equal((await p).stopReason, "cancelled");
    while (!log.some((e) => e.aborted === "hang")) await new Promise((res) => setTimeout(res, 10));

    await agent.request("session/close", { sessionId });
    // load declares it again: the set is the request's.
    log.length = 0;
    await agent.request("session/load", { sessionId, cwd: dir, mcpServers: [reg.declaration] });
    r = await prompt(agent, updates, sessionId, '/call tools echo {"message":"loaded"}');
    assert.equal(tools(r.updates).at(-1).content[0].content.text, "sdk: loaded");
    await agent.request("session/close", { sessionId });
    await agent.request("session/resume", { sessionId, cwd: dir, mcpServers: [reg.declaration] });
    r = await prompt(agent, updates, sessionId, '/call tools echo {"message":"resumed"}');
    assert.equal(tools(r.updates).at(-1).content[0].content.text, "sdk: resumed");
  });
  await ag.end();
});

test("a client that never answers: the server fails after the connect timeout, the session opens", async (t) => {
  const dir = tempDir(t);
  const ag = startAgent(t, dir);
  const updates = [];
  const { provider, app } = clientApp(updates);
  await app.connectWith(ag.stream, async (agent) => {
    await agent.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
    const mute = provider.registerServer(agent, { name: "mute", handler: (cx) => new Promise((_, rej) => cx.signal.addEventListener("abort", () => rej(cx.signal.reason))) });
    const { sessionId } = await agent.request("session/new", { cwd: dir, mcpServers: [mute.declaration] });
    const r = await prompt(agent, updates, sessionId, "/mcp");
    assert.match(said(r.updates), /mute: failed: no answer to server\/discover within \d+ ms/, said(r.updates));
  });
  await ag.end();
});

test("--unstable-off mcp-acp: no capability, type acp refused", async (t) => {
  const dir = tempDir(t);
  const ag = startAgent(t, dir, ["--unstable-off", "mcp-acp"]);
  const { app } = clientApp([]);
  await app.connectWith(ag.stream, async (agent) => {
    const init = await agent.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
    assert.notEqual(init.agentCapabilities.mcpCapabilities.acp, true);
    await assert.rejects(agent.request("session/new", { cwd: dir, mcpServers: [{ type: "acp", name: "x", serverId: "x" }] }), (e) => e.code === -32602 && /acp/.test(e.message));
  });
  await ag.end();
});

test("one serverId declared twice in a session: -32602", async (t) => {
  const dir = tempDir(t);
  const ag = startAgent(t, dir);
  const { app } = clientApp([]);
  await app.connectWith(ag.stream, async (agent) => {
    await agent.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
    const twice = [{ type: "acp", name: "a", serverId: "same" }, { type: "acp", name: "b", serverId: "same" }];
    await assert.rejects(agent.request("session/new", { cwd: dir, mcpServers: twice }), (e) => e.code === -32602 && /duplicate serverId 'same'/.test(e.message));
  });
  await ag.end();
});

test("the client goes away with calls in flight: the agent cleans up and exits 0", async (t) => {
  const dir = tempDir(t);
  const ag = startAgent(t, dir);
  const updates = [];
  const log = [];
  const { provider, app } = clientApp(updates);
  const conn = app.connect(ag.stream);
  const agent = conn.agent;
  await agent.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
  const reg = provider.registerServer(agent, { name: "tools", handler: toolsHandler(log) });
  for (let i = 0; i < 2; i++) {
    const { sessionId } = await agent.request("session/new", { cwd: dir, mcpServers: [reg.declaration] });
    agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "/call tools hang {}" }] }).catch(() => {});
  }
  while (log.filter((e) => e.params?.name === "hang").length < 2) await new Promise((res) => setTimeout(res, 10));
  await ag.end(); // stdin closed mid-call: exit 0 under ASan means nothing leaked
  conn.close();
});
