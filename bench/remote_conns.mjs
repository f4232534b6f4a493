#!/usr/bin/env node
// Many idle WebSocket connections on one agent process, then the round trip of a prompt on one
// of them. Opens CONNS WebSocket connections to URL (each sends `initialize` and waits for the
// answer, then stays idle), reads the server's RSS before and after from /proc/PID/status, then
// sends PROMPTS short prompts one after another on the first connection and times each from
// request to response. Prints one line of key=value figures. Raw JSON-RPC over the `ws`
// package, so that the client stays light and the same for both servers.
//
//   node remote_conns.mjs URL SERVER_PID CONNS PROMPTS
import { WebSocket } from "ws";
import * as fs from "node:fs";

const [url, pidArg, connsArg, promptsArg] = process.argv.slice(2);
const CONNS = Number(connsArg), PROMPTS = Number(promptsArg);
const wsUrl = url.replace(/^http/, "ws");
const headers = process.env.ACP_TOKEN ? { Authorization: `Bearer ${process.env.ACP_TOKEN}` } : {};
const rssKb = () => Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pidArg}/status`, "utf8"))[1]);

function open() {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(wsUrl, { headers, perMessageDeflate: false });
    const pending = new Map();
    let next = 1;
    ws.call = (method, params) =>
      new Promise((res, rej) => {
        const id = next++;
        pending.set(id, { res, rej });
        ws.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
      });
    ws.on("message", (data) => {
      const m = JSON.parse(data.toString());
      if (m.id !== undefined && pending.has(m.id) && !m.method) {
        const p = pending.get(m.id);
        pending.delete(m.id);
        m.error ? p.rej(new Error(m.error.message)) : p.res(m.result);
      }
    });
    ws.on("error", reject);
    ws.on("open", () => ws.call("initialize", { protocolVersion: 1, clientCapabilities: {} }).then(() => resolve(ws), reject));
  });
}

const before = rssKb();
const conns = [];
const BATCH = 200; // connections opened at once
for (let i = 0; i < CONNS; i += BATCH)
  conns.push(...(await Promise.all(Array.from({ length: Math.min(BATCH, CONNS - i) }, open))));
await new Promise((r) => setTimeout(r, 500));
const after = rssKb();
const ws = conns[0];
const { sessionId } = await ws.call("session/new", { cwd: "/tmp", mcpServers: [] });
const lat = [];
for (let i = 0; i < PROMPTS; i++) {
  const t0 = process.hrtime.bigint();
  await ws.call("session/prompt", { sessionId, prompt: [{ type: "text", text: "ping" }] });
  lat.push(Number(process.hrtime.bigint() - t0) / 1e6);
}
lat.sort((a, b) => a - b);
const q = (p) => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))].toFixed(3);
console.log(
  `conns=${CONNS} rss_before_kb=${before} rss_after_kb=${after} kb_per_conn=${((after - before) / CONNS).toFixed(2)} ` +
    `prompts=${PROMPTS} p50_ms=${q(0.5)} p99_ms=${q(0.99)}`,
);
for (const c of conns) c.terminate();
process.exit(0);
