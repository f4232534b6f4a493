#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
// Remote-ACP streaming through the official SDK's experimental clients: initialize, session/new,
// one "/stream N BYTES" prompt, counting agent_message_chunk updates; prints one line of
// key=value figures. The same client drives both servers (acp-agent --listen and the SDK's
// AcpServer around bench/ts-agent), so only the server differs.
//
//   node remote_stream.mjs ws|http URL N BYTES
import * as acp from "@agentclientprotocol/sdk";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";
import { createHttpStream } from "@agentclientprotocol/sdk/experimental/http-client";

const [profile, url, nArg, bytes] = process.argv.slice(2);
const N = Number(nArg);
const headers = process.env.ACP_TOKEN ? { Authorization: `Bearer ${process.env.ACP_TOKEN}` } : undefined;
const stream = profile === "ws" ? createWebSocketStream(url, { headers }) : createHttpStream(url, { headers });
let chunks = 0;
const app = acp.client().onNotification("session/update", ({ params }) => {
  if (params.update.sessionUpdate === "agent_message_chunk") chunks++;
});
const r = await app.connectWith(stream, async (agent) => {
  await agent.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
  const { sessionId } = await agent.request("session/new", { cwd: "/tmp", mcpServers: [] });
  const t0 = performance.now();
  const res = await agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: `/stream ${N} ${bytes}` }] });
  return { dt: (performance.now() - t0) / 1e3, stop: res.stopReason };
});
if (chunks !== N) {
  console.error(`remote_stream: got ${chunks} of ${N} updates (${r.stop})`);
  process.exit(1);
}
console.log(`profile=${profile} updates=${chunks} seconds=${r.dt.toFixed(3)} updates_per_s=${Math.round(chunks / r.dt)} stop=${r.stop}`);
process.exit(0);
