// SPDX-License-Identifier: Apache-2.0
// The openai engine under a model that streams as fast as it can and a client that stops reading
// (issue 21, item 6): the model's stream must wait (libcurl paused while the connection is over
// its high-water mark, TCP flow control back to the server) instead of piling up in the agent
// (3.5 GB in 18 s before). Measured as the agent's RSS growth and the bytes the model got rid
// of, with generous margins; then the client reads again and the turn finishes.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import http from "node:http";
import { join } from "node:path";

import { test, tempDir } from "../interop-agent/lib.mjs";
import { AGENT } from "../interop-agent/lib.mjs";

const rssMB = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))[1]) / 1024;
const CAP = 160 << 20; // the model stops here: far past what a paused stream lets through
const piece = `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: "x".repeat(16384) } }] })}\n\n`;

test("a fast model and a client that stops reading: the stream waits, memory stays bounded", async (t) => {
  let sent = 0;
  let blocked = null; // resolves when the model's socket stops taking bytes
  let onBlocked;
  blocked = new Promise((r) => (onBlocked = r));
  const server = http.createServer((req, res) => {
    if (req.url.endsWith("/models")) {
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ object: "list", data: [{ id: "m", object: "model" }] }));
      return;
    }
    req.resume();
    res.writeHead(200, { "content-type": "text/event-stream" });
    const pump = () => {
      while (sent < CAP) {
        sent += piece.length;
        if (!res.write(piece)) {
          const again = setTimeout(() => onBlocked(sent), 3000); // no drain for a while: blocked
          res.once("drain", () => {
            clearTimeout(again);
            pump();
          });
          return;
        }
      }
      onBlocked(sent);
      res.end('data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n');
    };
    pump();
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  t.after(() => server.close());
  server.on("connection", (s) => t.after(() => s.destroy()));

  const dir = tempDir(t);
  const env = { ...process.env, ASAN_OPTIONS: `${process.env.ASAN_OPTIONS ?? ""}:quarantine_size_mb=0` };
  const base = `http://127.0.0.1:${server.address().port}/v1`;
  const proc = spawn(AGENT, ["--engine", "openai", "--base-url", base, "--model", "m", "--store", join(dir, "s.db")], {
    stdio: ["pipe", "pipe", "inherit"],
    env,
  });
  const exited = new Promise((r) => proc.on("exit", r));
  t.after(async () => {
    if (proc.exitCode === null) proc.kill("SIGKILL");
    await exited;
  });
  let buf = "";
  const waiters = [];
  proc.stdout.setEncoding("utf8");
  proc.stdout.on("data", (d) => {
    buf += d;
    let i;
    while ((i = buf.indexOf("\n")) >= 0) {
      const m = JSON.parse(buf.slice(0, i));
      buf = buf.slice(i + 1);
      for (const w of [...waiters]) if (w.pred(m)) waiters.splice(waiters.indexOf(w), 1) && w.resolve(m);
    }
  });
  const waitFor = (pred) => new Promise((resolve) => waiters.push({ pred, resolve }));
  const send = (m) => proc.stdin.write(JSON.stringify({ jsonrpc: "2.0", ...m }) + "\n");

  send({ id: 1, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } });
  await waitFor((m) => m.id === 1);
  send({ id: 2, method: "session/new", params: { cwd: dir, mcpServers: [] } });
  const sid = (await waitFor((m) => m.id === 2)).result.sessionId;
  const before = rssMB(proc.pid);
  send({ id: 3, method: "session/prompt", params: { sessionId: sid, prompt: [{ type: "text", text: "go" }] } });
  await waitFor((m) => m.method === "session/update");
  proc.stdout.pause(); // the client stops reading

  const at = await blocked;
  const grown = rssMB(proc.pid) - before;
  console.log(`model sent ${(at / 1048576).toFixed(1)} MiB before it blocked; agent RSS grew ${grown.toFixed(1)} MiB`);
  assert.ok(at < CAP, `the model was never held back: it sent all ${CAP >> 20} MiB`);
  assert.ok(grown < 96, `the agent's RSS grew ${grown.toFixed(1)} MiB`);

  // The client reads again: the stream resumes and the turn ends (the answer stops at its
  // 64 MiB bound at the latest).
  const done = waitFor((m) => m.id === 3);
  proc.stdout.resume();
  const r = await done;
  assert.ok(r.result?.stopReason, JSON.stringify(r).slice(0, 300));
  proc.stdin.end();
  assert.equal(await exited, 0);
});
