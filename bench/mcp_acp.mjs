#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
// The TypeScript SDKs' side of bench/mcp_acp.c: MCP tool calls per second over MCP over ACP
// and over stdio, the same echo tool, sequential calls.
//
//   node mcp_acp.mjs acp N              one process: @agentclientprotocol/sdk's McpOverAcpCaller
//                                       (agent app) calling a McpOverAcpProvider server (client
//                                       app), the two joined by NDJSON byte streams in memory
//   node mcp_acp.mjs stdio N CMD ARGS   @modelcontextprotocol/sdk's Client over
//                                       StdioClientTransport (bench/mcp_acp server as the server)
// Prints one line: calls=N calls_per_s=X us_per_call=Y.
import * as acp from "@agentclientprotocol/sdk/unstable";

const [mode, nArg, ...cmd] = process.argv.slice(2);
const N = Number(nArg ?? 10000);
const report = (dt) => console.log(`calls=${N} calls_per_s=${(N / dt).toFixed(0)} us_per_call=${((dt * 1e6) / N).toFixed(1)}`);

if (mode === "acp") {
  const up = new TransformStream(), down = new TransformStream(); // bytes each way
  const caller = new acp.McpOverAcpCaller({ clientInfo: { name: "bench", version: "1" } });
  const provider = new acp.McpOverAcpProvider();
  const agentConn = acp.agent().onNotification("mcp/message", caller.handleNotification).connect(acp.ndJsonStream(down.writable, up.readable));
  const clientConn = acp.client().onRequest("mcp/message", provider.handleRequest).connect(acp.ndJsonStream(up.writable, down.readable));
  const reg = provider.registerServer(clientConn.agent, {
    name: "b",
    handler: async (cx) => ({ result: { content: [{ type: "text", text: cx.params.arguments.message }] } }),
  });
  const t0 = performance.now();
  for (let i = 0; i < N; i++) {
    const r = await caller.request(agentConn.client, reg.serverId, "tools/call", { name: "echo", arguments: { message: "x" } });
    if (r.result?.content?.[0]?.text !== "x") throw new Error(`bad answer ${JSON.stringify(r)}`);
  }
  report((performance.now() - t0) / 1e3);
  process.exit(0);
} else if (mode === "stdio") {
  const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
  const { StdioClientTransport } = await import("@modelcontextprotocol/sdk/client/stdio.js");
  const client = new Client({ name: "bench", version: "1" });
  await client.connect(new StdioClientTransport({ command: cmd[0], args: cmd.slice(1) }));
  const t0 = performance.now();
  for (let i = 0; i < N; i++) {
    const r = await client.callTool({ name: "echo", arguments: { message: "x" } });
    if (r.content?.[0]?.text !== "x") throw new Error(`bad answer ${JSON.stringify(r)}`);
  }
  report((performance.now() - t0) / 1e3);
  await client.close();
  process.exit(0);
} else {
  console.error("usage: node mcp_acp.mjs acp N | stdio N CMD ARGS...");
  process.exit(2);
}
