#!/usr/bin/env node
// The official SDK's client side of bench/client_ingest.c: @agentclientprotocol/sdk 2.4.0's
// `client()` app (what its ClientSideConnection became) over ndJsonStream on a spawned agent,
// with a counting session/update handler, prompting "/stream N BYTES".
//
//   node client_ingest.mjs N BYTES AGENT_CMD...
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const [nArg, bytes, ...cmd] = process.argv.slice(2);
const N = Number(nArg);
const child = spawn(cmd[0], cmd.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
let chunks = 0;
const app = acp.client().onNotification("session/update", ({ params }) => {
  if (params.update.sessionUpdate === "agent_message_chunk") chunks++;
});
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
const result = await app.connectWith(stream, async (agent) => {
  await agent.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
  const { sessionId } = await agent.request("session/new", { cwd: "/tmp", mcpServers: [] });
  const t0 = performance.now();
  const r = await agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: `/stream ${N} ${bytes}` }] });
  return { dt: (performance.now() - t0) / 1e3, stop: r.stopReason };
});
child.stdin.end();
if (chunks !== N) {
  console.error(`client_ingest.mjs: ${chunks} chunks of ${N}`);
  process.exit(1);
}
console.log(`updates=${chunks} updates_per_s=${(chunks / result.dt).toFixed(0)} stop=${result.stop}`);
await new Promise((r) => child.once("exit", r));
process.exit(0);
