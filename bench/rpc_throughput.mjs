#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
// The TypeScript-SDK side of bench/rpc_throughput.c: the same workloads on
// @agentclientprotocol/sdk 2.4.0's connection (its public `agent()` / `client()` apps over
// `ndJsonStream`, which is how an SDK user gets a connection).
//
//   node rpc_throughput.mjs inproc N      one process: N 200-byte `_bench/ping` notifications fed
//                                         in 64 KiB pieces; the handler re-emits each as
//                                         session/update; the output is drained and counted
//   node rpc_throughput.mjs emit N        CPU time per emitted session/update (output discarded)
//   node rpc_throughput.mjs writer N      emits N session/update notifications on stdout
//   node rpc_throughput.mjs reader        counts session/update notifications from stdin
// Each prints one line of key=value figures.
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const [mode, nArg] = process.argv.slice(2);
const N = Number(nArg ?? 100000);
const SID = "0123456789abcdef0123456789abcdef";

// The 200-byte notification both implementations exchange (same text as rpc_throughput.c).
function pingLine(method) {
  const head = `{"jsonrpc":"2.0","method":"${method}","params":{"sessionId":"${SID}","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"`;
  const tail = `"}}}}`;
  return head + "x".repeat(200 - head.length - tail.length - 1) + tail + "\n";
}
const update = JSON.parse(pingLine("session/update")).params;

const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

// A sink that counts lines, resolving `done` once `want` lines arrived.
function countingSink(want) {
  let lines = 0, bytes = 0, resolve;
  const done = new Promise((r) => (resolve = r));
  const writable = new WritableStream({
    write(chunk) {
      bytes += chunk.length;
      for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++;
      if (lines >= want) resolve();
    },
  });
  return { writable, done, stats: () => ({ lines, bytes }) };
}

function piecesOf(text, size) {
  const buf = Buffer.from(text);
  const out = [];
  for (let i = 0; i < buf.length; i += size) out.push(new Uint8Array(buf.subarray(i, i + size)));
  return out;
}

if (mode === "inproc") {
  const input = piecesOf(pingLine("_bench/ping").repeat(N), 65536);
  let k = 0;
  const readable = new ReadableStream({
    pull(ctl) {
      if (k < input.length) ctl.enqueue(input[k++]);
      // no close: the connection must stay open until every re-emitted message is drained
    },
  });
  const sink = countingSink(N);
  const app = acp.agent().onNotification("_bench/ping", (p) => p, ({ params, client }) => client.notify("session/update", params));
  const t0 = performance.now(), c0 = cpu();
  const conn = app.connect(acp.ndJsonStream(sink.writable, readable));
  await sink.done;
  const dt = (performance.now() - t0) / 1e3, dc = cpu() - c0;
  console.log(`msgs=${N} msgs_per_s=${(N / dt).toFixed(0)} cpu_us_per_msg=${((dc / N) * 1e6).toFixed(3)}`);
  conn.close();
  process.exit(0);
} else if (mode === "emit") {
  const sink = countingSink(N);
  const idle = new ReadableStream({ pull() {} });
  const app = acp.agent();
  let client;
  app.onConnect((c) => (client = c.client));
  const conn = app.connect(acp.ndJsonStream(sink.writable, idle));
  const t0 = performance.now(), c0 = cpu();
  for (let i = 0; i < N; i += 1024) {
    const batch = [];
    for (let j = i; j < Math.min(N, i + 1024); j++) batch.push(client.notify("session/update", update));
    await Promise.all(batch);
  }
  await sink.done;
  const dt = (performance.now() - t0) / 1e3, dc = cpu() - c0;
  console.log(`msgs=${N} msgs_per_s=${(N / dt).toFixed(0)} cpu_us_per_msg=${((dc / N) * 1e6).toFixed(3)}`);
  conn.close();
  process.exit(0);
} else if (mode === "writer") {
  const app = acp.agent();
  let client;
  app.onConnect((c) => (client = c.client));
  const out = Writable.toWeb(process.stdout);
  // Its input never ends: the writer does not depend on what stdin is.
  app.connect(acp.ndJsonStream(out, new ReadableStream({ pull() {} })));
  // Batches of 1024 awaited: the SDK's write queue is the back-pressure.
  for (let i = 0; i < N; i += 1024) {
    const batch = [];
    for (let j = i; j < Math.min(N, i + 1024); j++) batch.push(client.notify("session/update", update));
    await Promise.all(batch);
  }
  process.stdout.end(() => process.exit(0));
} else if (mode === "reader") {
  let count = 0, t0 = 0;
  const app = acp.client().onNotification("session/update", () => {
    if (count++ === 0) t0 = performance.now();
  });
  const c0 = cpu();
  const conn = app.connect(acp.ndJsonStream(new WritableStream({ write() {} }), Readable.toWeb(process.stdin)));
  await conn.closed;
  const dt = (performance.now() - t0) / 1e3;
  console.log(`msgs=${count} msgs_per_s=${(count / dt).toFixed(0)} cpu_s=${(cpu() - c0).toFixed(3)}`);
  process.exit(0);
} else {
  console.error("usage: rpc_throughput.mjs inproc|emit|writer|reader [N]");
  process.exit(2);
}
