// SPDX-License-Identifier: Apache-2.0
// What session leases cost (issue 11, part 3): two acp-agent builds side by side on one store
// kind, printed as ratios (NEW / BASE), medians of RUNS runs (default 5). session/new one at a
// time (new now takes a lease: one more statement), /stream 200000 200 (every commit carries a
// fence), and session/load of the streamed session (the load takes the lease before reading). Issue
// 22 (taking over an idle holder) adds: short prompts one at a time (each marks the lease busy as
// it starts and idle before its answer: two more statements) and session/set_config_option one at
// a time (each checks the lease first: one more).
//   node bench/lease.mjs BASE_AGENT NEW_AGENT [STORE]
// STORE: "sqlite" (default; a new file per run) or a postgresql:// URI / conninfo (a new schema
// per run is not made: each run's sessions are new, the database is shared).
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const [BASE, NEW] = process.argv.slice(2, 4).map((p) => p && resolve(p));
const STORE = process.argv[4] ?? "sqlite";
if (!BASE || !NEW) {
  console.error("usage: node bench/lease.mjs BASE_AGENT NEW_AGENT [sqlite|postgresql://...]");
  process.exit(2);
}
const RUNS = Number(process.env.RUNS ?? 5);
const NEWS = 1000;

function agent(bin, store, dir) {
  const p = spawn(bin, ["--store", store, "--log-level", "quiet"], { cwd: dir, stdio: ["pipe", "pipe", "inherit"] });
  const waiting = new Map();
  let id = 0, buf = "";
  p.stdout.on("data", (d) => {
    buf += d;
    for (let nl; (nl = buf.indexOf("\n")) >= 0; ) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (line.startsWith('{"jsonrpc":"2.0","method"')) continue; // notifications: not timed here
      const m = JSON.parse(line);
      if (m.id !== undefined && !m.method && waiting.has(m.id)) {
        waiting.get(m.id)(m);
        waiting.delete(m.id);
      }
    }
  });
  const request = (method, params) =>
    new Promise((res) => {
      const i = ++id;
      waiting.set(i, res);
      p.stdin.write(JSON.stringify({ jsonrpc: "2.0", id: i, method, params }) + "\n");
    });
  const end = () => new Promise((res) => (p.on("exit", res), p.stdin.end()));
  return { request, end };
}

async function run(bin) {
  const dir = mkdtempSync(join(tmpdir(), "lease-bench-"));
  const store = STORE === "sqlite" ? join(dir, "s.db") : STORE;
  const a = agent(bin, store, dir);
  await a.request("initialize", { protocolVersion: 1 });
  let t = performance.now();
  let sid;
  for (let i = 0; i < NEWS; i++) sid = (await a.request("session/new", { cwd: dir, mcpServers: [] })).result.sessionId;
  const news = NEWS / ((performance.now() - t) / 1000);
  t = performance.now();
  const r = await a.request("session/prompt", { sessionId: sid, prompt: [{ type: "text", text: "/stream 200000 200" }] });
  if (r.result?.stopReason !== "end_turn") throw new Error(JSON.stringify(r));
  const stream = 200000 / ((performance.now() - t) / 1000);
  t = performance.now();
  for (let i = 0; i < NEWS; i++) {
    const p = await a.request("session/prompt", { sessionId: sid, prompt: [{ type: "text", text: "hi" }] });
    if (p.result?.stopReason !== "end_turn") throw new Error(JSON.stringify(p));
  }
  const prompts = NEWS / ((performance.now() - t) / 1000);
  t = performance.now();
  for (let i = 0; i < NEWS; i++) {
    const c = await a.request("session/set_config_option", { sessionId: sid, configId: "model", value: i & 1 ? "echo-small" : "echo-large" });
    if (!c.result) throw new Error(JSON.stringify(c));
  }
  const configs = NEWS / ((performance.now() - t) / 1000);
  await a.request("session/close", { sessionId: sid });
  t = performance.now();
  await a.request("session/load", { sessionId: sid, cwd: dir, mcpServers: [] });
  const load = performance.now() - t; // ms
  await a.end();
  rmSync(dir, { recursive: true, force: true });
  return { news, stream, load, prompts, configs };
}

const median = (xs) => xs.slice().sort((x, y) => x - y)[xs.length >> 1];
const res = { base: [], new: [] };
for (let i = 0; i < RUNS; i++) {
  res.base.push(await run(BASE)); // interleaved, so drift in the machine's load hits both
  res.new.push(await run(NEW));
}
const store = STORE === "sqlite" ? "sqlite" : "postgresql";
for (const [k, what] of [["news", "session/new per s, one at a time"], ["stream", "/stream 200000 200 updates/s"], ["load", "session/load of the streamed session, ms"], ["prompts", "short session/prompt round trips per s"], ["configs", "session/set_config_option round trips per s"]]) {
  const b = median(res.base.map((r) => r[k])), n = median(res.new.map((r) => r[k]));
  console.log(`${store}: ${what}: base ${b.toFixed(0)}, leases ${n.toFixed(0)}: ${(n / b).toFixed(3)}x`); // ms: lower is better
}
