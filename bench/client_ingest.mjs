#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
// The official SDK's client side of bench/client_ingest.c: @agentclientprotocol/sdk 2.4.0's
// `client()` app (what its ClientSideConnection became: 2.x removed that class) over
// ndJsonStream on a spawned agent, with a counting session/update handler. SESSIONS (default
// 1) session/new requests at once, then SESSIONS "/stream N BYTES" prompts as concurrent
// promises on the one connection; the rate is every agent_message_chunk over the time from the
// first prompt sent to the last answer, and each session must get exactly N.
//
//   node client_ingest.mjs [-s SESSIONS] N BYTES AGENT_CMD...
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

let args = process.argv.slice(2);
let K = 1;
if (args[0] === "-s") {
  K = Number(args[1]);
  args = args.slice(2);
}
const [nArg, bytes, ...cmd] = args;
const N = Number(nArg);
const child = spawn(cmd[0], cmd.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
let chunks = 0;
const perSession = new Map();
const app = acp.client().onNotification("session/update", ({ params }) => {
  if (params.update.sessionUpdate === "agent_message_chunk") {
    chunks++;
    perSession.set(params.sessionId, (perSession.get(params.sessionId) ?? 0) + 1);
  }
});
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
const result = await app.connectWith(stream, async (agent) => {
  await agent.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
  const ids = await Promise.all(
    Array.from({ length: K }, () => agent.request("session/new", { cwd: "/tmp", mcpServers: [] }).then((r) => r.sessionId)),
  );
  const prompt = [{ type: "text", text: `/stream ${N} ${bytes}` }];
  const t0 = performance.now();
  const rs = await Promise.all(ids.map((sessionId) => agent.request("session/prompt", { sessionId, prompt })));
  return { dt: (performance.now() - t0) / 1e3, stop: rs[rs.length - 1].stopReason, ids };
});
child.stdin.end();
const short = result.ids.filter((id) => perSession.get(id) !== N);
if (chunks !== N * K || short.length) {
  console.error(`client_ingest.mjs: ${chunks} chunks of ${N * K}, ${short.length} sessions short`);
  process.exit(1);
}
const rate = (chunks / result.dt).toFixed(0);
if (K === 1) console.log(`updates=${chunks} updates_per_s=${rate} stop=${result.stop}`);
else console.log(`sessions=${K} updates=${chunks} updates_per_s=${rate} prompt_s=${result.dt.toFixed(3)} stop=${result.stop}`);
await new Promise((r) => child.once("exit", r));
process.exit(0);
