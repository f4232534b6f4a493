// SPDX-License-Identifier: Apache-2.0
// Memory after huge messages (issue 13, item 6): VmRSS of a long-running process, idle and after
// one huge message, in MB (/proc/PID/status).
//
//   node bench/huge_rss.mjs agent build/acp-agent [PROMPT_BYTES [MCP_BYTES]]
//     A raw NDJSON client: initialize, session/new with tests/memory/big-mcp.mjs as a stdio MCP
//     server, one small prompt and tool call (idle), a text block of PROMPT_BYTES (default
//     60,000,000; echoed back and stored), a tool call whose answer is one line of MCP_BYTES
//     (default 50,000,000; shown and stored as a tool call update), three small prompts; then a
//     second acp-agent, after one small prompt (load_idle), loads that session (after_load).
//   node bench/huge_rss.mjs chat build/acp build/acp-agent [PROMPT_BYTES]
//     `acp chat` with lines on a pipe: "hi" (idle), a line of PROMPT_BYTES, "hi"; the RSS is acp's.
//
// Each figure is read WAIT_MS (default 1500) after the answer: acp-agent gives freed memory back
// about a second after its loop went quiet. The store is a temp dir's SQLite file (TMPDIR), or
// STORE (a postgresql:// URI) for the agent.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const BIG_MCP = join(dirname(fileURLToPath(import.meta.url)), "../tests/memory/big-mcp.mjs");
const WAIT_MS = Number(process.env.WAIT_MS ?? 1500);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const rss = (pid) => Math.round(Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))[1]) / 102.4) / 10;
const [mode, ...args] = process.argv.slice(2);
const dir = mkdtempSync(join(tmpdir(), "huge-rss-"));
const out = {};

// A raw NDJSON client on a new acp-agent: call() resolves with a response's result (responses
// are found by their head: 100 MB of updates are never parsed).
function agentClient(agent) {
  const p = spawn(resolve(agent), ["--store", process.env.STORE || join(dir, "s.db")], { stdio: ["pipe", "pipe", "inherit"], cwd: dir });
  const waiters = new Map();
  let pend = [];
  let id = 0;
  p.stdout.on("data", (c) => {
    let s = 0;
    for (let nl; (nl = c.indexOf(10, s)) >= 0; s = nl + 1) {
      pend.push(c.subarray(s, nl));
      const line = Buffer.concat(pend);
      pend = [];
      const m = /^\{"jsonrpc":"2.0","id":(\d+),"(result|error)"/.exec(line.subarray(0, 100).toString());
      if (m) waiters.get(+m[1])(m[2] === "result" ? JSON.parse(line.toString()).result : line.toString());
    }
    if (s < c.length) pend.push(c.subarray(s));
  });
  const call = (method, params) =>
    new Promise((resolve, reject) => {
      const i = ++id;
      waiters.set(i, (r) => (typeof r === "string" ? reject(new Error(r.slice(0, 300))) : resolve(r)));
      p.stdin.write(JSON.stringify({ jsonrpc: "2.0", id: i, method, params }) + "\n");
    });
  const end = () => {
    p.stdin.end();
    return new Promise((r) => p.on("exit", r));
  };
  return { pid: p.pid, call, end };
}

if (mode === "agent") {
  const [agent, promptBytes = 60e6, mcpBytes = 50e6] = args;
  const a = agentClient(agent);
  await a.call("initialize", { protocolVersion: 1, clientCapabilities: {} });
  const mcpServers = [{ name: "big", command: process.execPath, args: [BIG_MCP], env: [] }];
  const sid = (await a.call("session/new", { cwd: dir, mcpServers })).sessionId;
  const prompt = (c, s, text) => c.call("session/prompt", { sessionId: s, prompt: [{ type: "text", text }] });
  await prompt(a, sid, "hi");
  await prompt(a, sid, '/call big big {"bytes":10}');
  await sleep(WAIT_MS);
  out.idle = rss(a.pid);
  await prompt(a, sid, "y".repeat(Number(promptBytes)));
  await sleep(WAIT_MS);
  out.after_prompt = rss(a.pid);
  await prompt(a, sid, `/call big big {"bytes":${Number(mcpBytes)}}`);
  await sleep(WAIT_MS);
  out.after_mcp_line = rss(a.pid);
  for (let i = 0; i < 3; i++) await prompt(a, sid, "hi");
  await sleep(WAIT_MS);
  out.after_small = rss(a.pid);
  await a.end();
  // A second agent loads that session: its replay carries the huge updates.
  const b = agentClient(agent);
  await b.call("initialize", { protocolVersion: 1, clientCapabilities: {} });
  await prompt(b, (await b.call("session/new", { cwd: dir, mcpServers: [] })).sessionId, "hi");
  await sleep(WAIT_MS);
  out.load_idle = rss(b.pid);
  await b.call("session/load", { sessionId: sid, cwd: dir, mcpServers: [] });
  await sleep(WAIT_MS);
  out.after_load = rss(b.pid);
  await b.end();
} else if (mode === "chat") {
  const [acp, agent, promptBytes = 60e6] = args;
  const p = spawn(acp, ["--agent", `${agent} --store ${join(dir, "s.db")}`, "--cwd", dir, "chat"], { stdio: ["pipe", "pipe", "inherit"] });
  let got = 0;
  let want = 0;
  let wake = null;
  p.stdout.on("data", (c) => {
    got += c.length;
    if (wake && got >= want) wake();
  });
  // A turn is over once its echo (the line's length in bytes, at least) has been printed.
  const turn = async (text) => {
    want = got + text.length;
    await new Promise((r) => {
      wake = r;
      p.stdin.write(text + "\n");
    });
    wake = null;
    await sleep(WAIT_MS);
  };
  await turn("hi");
  out.idle = rss(p.pid);
  await turn("y".repeat(Number(promptBytes)));
  out.after_prompt = rss(p.pid);
  await turn("hi");
  out.after_small = rss(p.pid);
  p.stdin.end();
  await new Promise((r) => p.on("exit", r));
} else {
  console.error("usage: huge_rss.mjs agent ACP_AGENT [PROMPT_BYTES [MCP_BYTES]] | chat ACP ACP_AGENT [PROMPT_BYTES]");
  process.exit(2);
}
rmSync(dir, { recursive: true, force: true });
console.log(JSON.stringify({ rss_mb: out }));
