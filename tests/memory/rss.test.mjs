// SPDX-License-Identifier: Apache-2.0
// Memory after huge messages (issue 13, item 6): acp-agent's resident set returns to near its idle
// footprint after a huge prompt (its text echoed back, stored) and after an MCP server answers a
// tool call with one huge line (shown and stored as a tool call update), and it serves small
// prompts as before. Before the fix a 60 MB prompt left 81 MB resident and the MCP line 54 MB:
// the connections' line buffers kept the largest line's capacity and glibc kept freed memory
// in its heap.
//
// RSS is only meaningful for a build without sanitizers (ASan keeps freed blocks in quarantine
// and shadows everything), so under ACP_ASAN=ON (the env var the CMake file sets) the huge
// messages still go through every path, checked for their answers, and the RSS bound is
// skipped; tests/memory/huge_test.c and mcp_test.c bound the live heap bytes there instead.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";

import { test, tempDir, rawAgent, textOf, SOURCE } from "../interop-agent/lib.mjs";

const SANITIZED = ["1", "ON", "TRUE", "YES"].includes(String(process.env.ACP_ASAN ?? "").toUpperCase());
// Over the 8 MiB the agent's heap keeps and glibc's 32 MiB threshold cap; under ASan only over
// the buffers' 1 to 8 MiB keeps (the paths are what counts there, and ASan is slow).
const BYTES = SANITIZED ? 9_000_000 : 24_000_000;
const MARGIN_MB = 16; // over idle: caches that fill with use (SQLite's pages), allocator slack
const BIG_MCP = join(SOURCE, "tests/memory/big-mcp.mjs");

const rssMB = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))[1]) / 1024;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// The agent gives memory back about a second after it went quiet: wait for the bound, never long.
async function settlesUnder(pid, bound, what) {
  let now = rssMB(pid);
  for (let i = 0; i < 100 && now > bound; i++) {
    await sleep(100);
    now = rssMB(pid);
  }
  assert.ok(now <= bound, `${what}: RSS ${now.toFixed(1)} MB stays over ${bound.toFixed(1)} MB (idle + ${MARGIN_MB})`);
  return now;
}

test("RSS returns to idle after a huge prompt and a huge MCP line", async (t) => {
  const dir = tempDir(t);
  const a = rawAgent(t, { store: join(dir, "sessions.db") });
  await a.init();
  const mcpServers = [{ name: "big", command: process.execPath, args: [BIG_MCP], env: [] }];
  const sid = await a.newSession(dir, { mcpServers });
  const small = async () => {
    const r = await a.prompt(sid, "hello");
    assert.equal(r.result?.stopReason, "end_turn", JSON.stringify(r));
  };
  // Warm up every path once with small messages: what stays is the idle footprint.
  await small();
  let r = await a.prompt(sid, '/call big big {"bytes":10}');
  assert.equal(r.result?.stopReason, "end_turn", JSON.stringify(r));
  if (!SANITIZED) await sleep(1200);
  const idle = rssMB(a.st.proc.pid);
  const bound = idle + MARGIN_MB;
  const seen = { idle };

  const from = a.lines.length;
  r = await a.prompt(sid, "p".repeat(BYTES));
  assert.equal(r.result?.stopReason, "end_turn", JSON.stringify(r).slice(0, 300));
  const echoed = textOf(a.updatesOf(sid, from).map((e) => e.msg.params.update));
  assert.equal(echoed.length, BYTES, "the prompt is echoed whole");
  if (!SANITIZED) seen.prompt = await settlesUnder(a.st.proc.pid, bound, "after the huge prompt");

  const from2 = a.lines.length;
  r = await a.prompt(sid, `/call big big {"bytes":${BYTES}}`);
  assert.equal(r.result?.stopReason, "end_turn", JSON.stringify(r).slice(0, 300));
  const done = a.updatesOf(sid, from2).map((e) => e.msg.params.update).find((u) => u.sessionUpdate === "tool_call_update" && u.status === "completed");
  assert.equal(done?.content?.[0]?.content?.text?.length, BYTES, "the tool's text arrives whole");
  if (!SANITIZED) seen.mcp = await settlesUnder(a.st.proc.pid, bound, "after the huge MCP line");

  // Small traffic afterwards is served from small buffers again, and nothing grows back.
  for (let i = 0; i < 3; i++) await small();
  if (!SANITIZED) seen.small = await settlesUnder(a.st.proc.pid, bound, "after small prompts");
  t.diagnostic(SANITIZED ? "ASan build: RSS not measured" : `RSS MB: ${JSON.stringify(seen, (k, v) => (typeof v === "number" ? Math.round(v * 10) / 10 : v))}`);
  await a.end();
});
