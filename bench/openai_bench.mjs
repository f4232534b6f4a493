// SPDX-License-Identifier: Apache-2.0
// The openai engine benchmark (issue 12), run by bench/run.sh for acp-agent --engine openai and for
// the SDK peer (bench/ts-agent/agent.mjs --engine openai, the `openai` npm client), the same client
// and the same scripted server for both, so only the agent differs.
//
//   node bench/openai_bench.mjs stream [-n TOKENS] [-r RUNS] -- AGENT_CMD... --store PATH
//   node bench/openai_bench.mjs rebuild [-t TURNS] [-r RUNS] -- AGENT_CMD... --store PATH
//   node bench/openai_bench.mjs floor [-n TOKENS]
//
// stream: the server (tests/engine-openai/fake-openai.mjs's chunk shapes, OpenAI's) answers one
// prompt with TOKENS content deltas of one token each, prebuilt and written as fast as the socket
// takes them. The figure is the engine's overhead per token: the agent process's CPU time (utime +
// stime from /proc, all its threads) from the prompt sent to its answer, divided by TOKENS; every
// token went in from the SSE stream and out as part of an agent_message_chunk, committed to the
// store (the client checks the text). Wall time per token is printed too.
// floor: the same SSE bytes read by a bare HTTP client in this process (the server's and the
// socket's share of the wall time, no agent).
// rebuild: a session of TURNS exchanges is made through the agent itself (each prompt answered by
// a short scripted reply), the agent stopped; then a fresh agent loads it and is prompted once.
// load_ms is the session/load round trip (the replay of 2 x TURNS messages to the client included),
// first_request_ms the time from that prompt to its request reaching the server with the whole
// context (TURNS x 2 + 1 messages, checked): their sum is the context rebuild a user waits for.
// Medians of RUNS fresh agent processes. Output: one line of key=value per run and a summary line.

import { spawn } from "node:child_process";
import { readFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import http from "node:http";
import { startFakeOpenAI, chunksOf } from "../tests/engine-openai/fake-openai.mjs";

const args = process.argv.slice(2);
const mode = args.shift();
const sep = args.indexOf("--");
const opts = sep >= 0 ? args.slice(0, sep) : args;
const agentCmd = sep >= 0 ? args.slice(sep + 1) : [];
const opt = (name, dflt) => {
  const i = opts.indexOf(name);
  return i >= 0 ? Number(opts[i + 1]) : dflt;
};
const CLK_TCK = 100; // sysconf(_SC_CLK_TCK) on Linux
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
const fix = (x, d = 2) => Number(x).toFixed(d);

/** CPU time (ms) a process has used so far (utime + stime; its threads included). */
function cpuMs(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return ((Number(f[11]) + Number(f[12])) * 1000) / CLK_TCK;
}

/** A minimal NDJSON client: spawn, request(), and a hook on every line (raw text, cheap). */
function startAgent(cmd, extra, onLine = () => {}) {
  const [exe, ...rest] = cmd;
  const proc = spawn(exe, [...rest, ...extra], { stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  proc.stderr.on("data", (d) => (stderr = (stderr + d).slice(-4000)));
  const waits = new Map();
  let buf = "";
  proc.stdout.setEncoding("utf8");
  proc.stdout.on("data", (d) => {
    buf += d;
    let nl;
    let start = 0;
    while ((nl = buf.indexOf("\n", start)) >= 0) {
      const line = buf.slice(start, nl);
      start = nl + 1;
      onLine(line);
      if (line.includes('"result"') || line.includes('"error"')) {
        const m = /^\{"jsonrpc":"2.0","id":(\d+)|"id":(\d+),"(result|error)"/.exec(line);
        const id = m ? Number(m[1] ?? m[2]) : NaN;
        if (waits.has(id)) {
          const msg = JSON.parse(line);
          if (msg.id === id && !("method" in msg)) {
            waits.get(id)(msg);
            waits.delete(id);
          }
        }
      }
    }
    buf = buf.slice(start);
  });
  const exited = new Promise((r) => proc.on("exit", r));
  let next = 1;
  const a = {
    proc,
    exited,
    stderr: () => stderr,
    request(method, params) {
      const id = next++;
      const p = new Promise((resolve, reject) => {
        waits.set(id, resolve);
        exited.then(() => reject(new Error(`agent exited during ${method}; stderr: ${stderr}`)));
      });
      proc.stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
      return p.then((m) => {
        if (m.error) throw new Error(`${method}: ${JSON.stringify(m.error)}`);
        return m.result;
      });
    },
    async stop() {
      proc.stdin.end();
      const t = setTimeout(() => proc.kill("SIGKILL"), 30_000);
      await exited;
      clearTimeout(t);
    },
  };
  return a;
}

const init = (a) => a.request("initialize", { protocolVersion: 1, clientCapabilities: {}, clientInfo: { name: "openai-bench", version: "0" } });

/** The prebuilt SSE body of one answer of n one-token deltas (OpenAI's chunk shape). */
function sseBody(n, model) {
  const events = chunksOf({ text: "tok ".repeat(n), split: 4, usage: { prompt_tokens: 10, completion_tokens: n } }, { model, stream_options: { include_usage: true } });
  return Buffer.from(events.map((e) => `data: ${typeof e === "string" ? e : JSON.stringify(e)}\n\n`).join(""));
}

async function streamRun(n, body, dir) {
  const s = await startFakeOpenAI();
  // The prebuilt body goes out whole: the server's cost is one write, not n JSON.stringify calls.
  s.server.removeAllListeners("request");
  s.server.on("request", (req, res) => {
    req.resume();
    req.on("end", () => {
      if (req.method === "GET") return res.end(JSON.stringify({ object: "list", data: [{ id: "m", object: "model" }] }));
      res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-cache" });
      res.end(body);
    });
  });
  let chunks = 0;
  let text = 0;
  const a = startAgent(agentCmd.map((x) => x.replaceAll("@DIR@", dir)), ["--base-url", s.url], (line) => {
    if (line.includes('"agent_message_chunk"')) {
      chunks++;
      const m = /"text":"((?:[^"\\]|\\.)*)"/.exec(line);
      if (m) text += m[1].length;
    }
  });
  try {
    await init(a);
    const { sessionId } = await a.request("session/new", { cwd: dir, mcpServers: [] });
    const c0 = cpuMs(a.proc.pid);
    const t0 = process.hrtime.bigint();
    const r = await a.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "stream" }] });
    const wall = Number(process.hrtime.bigint() - t0) / 1e6;
    const cpu = cpuMs(a.proc.pid) - c0;
    if (r.stopReason !== "end_turn") throw new Error(`stopReason ${r.stopReason}`);
    if (text !== 4 * n) throw new Error(`the client got ${text} characters of text, expected ${4 * n}`);
    await a.stop();
    return { wall, cpu, chunks };
  } finally {
    if (a.proc.exitCode === null) a.proc.kill("SIGKILL");
    await s.close();
  }
}

async function stream() {
  const n = opt("-n", 100_000);
  const runs = opt("-r", 3);
  const body = sseBody(n, "m");
  const res = [];
  for (let i = 0; i < runs; i++) {
    const dir = mkdtempSync(join(tmpdir(), "openai-bench-"));
    try {
      const r = await streamRun(n, body, dir);
      res.push(r);
      console.log(`run=${i + 1} tokens=${n} sse_bytes=${body.length} chunks_out=${r.chunks} wall_ms=${fix(r.wall, 1)} agent_cpu_ms=${fix(r.cpu, 0)} agent_cpu_us_per_token=${fix((r.cpu * 1000) / n, 3)} wall_us_per_token=${fix((r.wall * 1000) / n, 3)}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const cpu = median(res.map((r) => (r.cpu * 1000) / n));
  const wall = median(res.map((r) => (r.wall * 1000) / n));
  console.log(`summary tokens=${n} runs=${runs} agent_cpu_us_per_token=${fix(cpu, 3)} wall_us_per_token=${fix(wall, 3)} best_cpu_us_per_token=${fix(Math.min(...res.map((r) => (r.cpu * 1000) / n)), 3)}`);
}

async function floor() {
  const n = opt("-n", 100_000);
  const body = sseBody(n, "m");
  const server = http.createServer((req, res) => {
    res.writeHead(200, { "Content-Type": "text/event-stream" });
    res.end(body);
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const t0 = process.hrtime.bigint();
  let got = 0;
  await new Promise((resolve) =>
    http.get(`http://127.0.0.1:${server.address().port}/`, (res) => {
      res.on("data", (d) => (got += d.length));
      res.on("end", resolve);
    }),
  );
  const wall = Number(process.hrtime.bigint() - t0) / 1e6;
  server.close();
  console.log(`summary tokens=${n} sse_bytes=${got} wall_ms=${fix(wall, 1)} wall_us_per_token=${fix((wall * 1000) / n, 3)} (server + loopback + a bare reader, no agent)`);
}

async function rebuild() {
  const turns = opt("-t", 2000);
  const runs = opt("-r", 5);
  const dir = mkdtempSync(join(tmpdir(), "openai-rebuild-"));
  const s = await startFakeOpenAI();
  let k = 0;
  s.respond = () => ({ text: `Answer number ${++k}: a short reply of about twenty tokens, as a chat has.`, split: 16 });
  const cmd = agentCmd.map((x) => x.replaceAll("@DIR@", dir));
  try {
    // Fill: TURNS exchanges through the agent itself, so the store holds what the engine writes.
    const t0 = Date.now();
    let a = startAgent(cmd, ["--base-url", s.url]);
    await init(a);
    const { sessionId } = await a.request("session/new", { cwd: dir, mcpServers: [] });
    for (let i = 1; i <= turns; i++) await a.request("session/prompt", { sessionId, prompt: [{ type: "text", text: `Question number ${i}: what do you think about item ${i} of the list?` }] });
    await a.stop();
    s.requests.length = 0;
    console.log(`fill turns=${turns} fill_s=${fix((Date.now() - t0) / 1000, 1)}`);
    const loads = [];
    const firsts = [];
    for (let r = 0; r < runs; r++) {
      let replayed = 0;
      a = startAgent(cmd, ["--base-url", s.url], (line) => {
        if (line.includes('"session/update"')) replayed++;
      });
      await init(a);
      const t1 = process.hrtime.bigint();
      await a.request("session/load", { sessionId, cwd: dir, mcpServers: [] });
      const load = Number(process.hrtime.bigint() - t1) / 1e6;
      const before = s.requests.length;
      const t2 = process.hrtime.bigint();
      const got = s.waitRequest((q) => q.method === "POST", before).then(() => process.hrtime.bigint());
      const answered = a.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "And the last one?" }] });
      const first = Number((await got) - t2) / 1e6;
      await answered;
      const msgs = s.requests[before].body.messages.filter((m) => m.role === "user" || m.role === "assistant").length;
      // What the model got must be the whole conversation (the turns, plus this question).
      if (msgs < 2 * turns + 1) throw new Error(`the rebuilt context has ${msgs} user/assistant messages, expected ${2 * turns + 1}`);
      await a.stop();
      // The new exchange is stored too: the next run loads 2 more messages, negligible.
      loads.push(load);
      firsts.push(first);
      console.log(`run=${r + 1} turns=${turns} replayed_updates=${replayed} load_ms=${fix(load)} first_request_ms=${fix(first)} rebuild_ms=${fix(load + first)} context_messages=${msgs}`);
    }
    console.log(`summary turns=${turns} runs=${runs} load_ms=${fix(median(loads))} first_request_ms=${fix(median(firsts))} rebuild_ms=${fix(median(loads.map((l, i) => l + firsts[i])))}`);
  } finally {
    await s.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const modes = { stream, rebuild, floor };
if (!modes[mode] || (mode !== "floor" && !agentCmd.length)) {
  console.error("usage: openai_bench.mjs stream|rebuild|floor [-n TOKENS] [-t TURNS] [-r RUNS] -- AGENT_CMD... (@DIR@ in it: the run's temp dir)");
  process.exit(2);
}
await modes[mode]();
