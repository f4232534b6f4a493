// SPDX-License-Identifier: Apache-2.0
// Idle connections on one acp-agent --listen (issue 11, "Connections"): N WebSocket connections
// opened and initialized (no session), then the agent's RSS per connection over a 50-connection
// warm-up, and the latency of an _acp-agent/echo round trip on one of them (p50, p99 of 2000).
//   AGENT=build/acp-agent node bench/idle_ws.mjs 8000      (the release build; ulimit -n > N)
// Not in run.sh yet: a figure of its own, no SDK counterpart (the SDK's AcpServer keeps each
// connection in JS objects of its own; measuring it the same way is future work).
import { spawn } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import { WebSocket } from "ws";
const N = Number(process.argv[2] ?? 2000);
const rss = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))[1]);
const db = `${process.env.TMPDIR ?? "/tmp"}/idle-ws-${process.pid}.db`;
const p = spawn(process.env.AGENT, ["--store", db, "--listen", "127.0.0.1:0", "--log-level", "info", "--max-connections", "20000"], { stdio: ["ignore", "ignore", "pipe"] });
let err = "";
p.stderr.on("data", (d) => (err += d));
await new Promise((r) => { const i = setInterval(() => { if (/listening on/.test(err)) { clearInterval(i); r(); } }, 20); });
const port = /:(\d+)\n/.exec(err)[1];
const open = async () => {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/acp`);
  await new Promise((r, j) => { ws.on("open", r); ws.on("error", j); });
  const got = new Promise((r) => ws.once("message", r));
  ws.send(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1 } }));
  await got;
  return ws;
};
const warm = [];
for (let i = 0; i < 50; i++) warm.push(await open());
await new Promise((r) => setTimeout(r, 1500));
const base = rss(p.pid);
const conns = [];
for (let i = 0; i < N; i += 100) conns.push(...(await Promise.all(Array.from({ length: 100 }, open))));
await new Promise((r) => setTimeout(r, 2500));
const after = rss(p.pid);
// p99 of a round trip (_acp-agent/echo) on one idle connection among them
const ws = conns[conns.length >> 1];
const lat = [];
for (let i = 0; i < 2000; i++) {
  const t0 = process.hrtime.bigint();
  const got = new Promise((r) => ws.once("message", r));
  ws.send(JSON.stringify({ jsonrpc: "2.0", id: 10 + i, method: "_acp-agent/echo", params: { i } }));
  await got;
  lat.push(Number(process.hrtime.bigint() - t0) / 1e6);
}
lat.sort((a, b) => a - b);
console.log(`connections ${N}: RSS ${base} kB -> ${after} kB = ${((after - base) / N).toFixed(1)} kB per idle connection; echo round trip p50 ${lat[1000].toFixed(3)} ms p99 ${lat[1980].toFixed(3)} ms`);
p.kill("SIGTERM");
await new Promise((r) => p.on("exit", r));
for (const f of [db, `${db}-wal`, `${db}-shm`]) rmSync(f, { force: true });
process.exit(0);
