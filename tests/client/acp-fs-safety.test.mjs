// SPDX-License-Identifier: Apache-2.0
// `acp --fs` against a hostile or careless agent (issue 20): a process swapping a directory
// for a link to the outside while the agent reads and writes under it, a reader watching a
// file the agent rewrites, FIFOs and sockets, huge files, and signals while all that runs.
// The racing tests run twice: through openat2 and through the pre-5.6 walk
// (ACP_ROOTS_COMPAT=1).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, readdirSync, writeFileSync, truncateSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { ACP, SOURCE, workspace, nodeAgent, run as runIn } from "./acp-helpers.mjs";

let ws;
before(() => (ws = workspace()));
after(() => ws.done());
const fsAgent = nodeAgent("ts-agent-fs.mjs");
const run = (args, opts) => runIn(ws, args, { agentCmd: fsAgent, ...opts });
const MODES = [["openat2", {}], ["pre-5.6 walk", { ACP_ROOTS_COMPAT: "1" }]];

// The outcomes ts-agent-fs sends back: the JSON array at the end of the output.
const outcomes = (r) => JSON.parse(r.stdout.slice(r.stdout.lastIndexOf("[{")));
const calls = (...c) => JSON.stringify(c);

// A helper process from tests/client; resolves with its JSON line once it exits.
function helper(script, ...args) {
  const p = spawn(process.execPath, [join(SOURCE, "tests/client", script), ...args], { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  p.stdout.on("data", (d) => (out += d));
  return new Promise((resolve) => p.on("close", () => resolve(JSON.parse(out))));
}

test("a FIFO, a socket or a directory is refused at once, read or written", async () => {
  const dir = join(ws.dir, "special");
  mkdirSync(dir);
  const fifo = join(dir, "fifo");
  execFileSync("mkfifo", [fifo]);
  const srv = createServer();
  await new Promise((r) => srv.listen(join(dir, "sock"), r));
  try {
    // Before issue 20 the read blocked acp in open() for good: nothing else was answered.
    const r = await run(["--fs", "--yes", "prompt", calls(
      { method: "fs/read_text_file", params: { path: fifo } },
      { method: "fs/write_text_file", params: { path: fifo, content: "x" } },
      { method: "fs/read_text_file", params: { path: join(dir, "sock") } },
      { method: "fs/read_text_file", params: { path: dir } },
    )]);
    assert.equal(r.code, 0, r.stderr);
    const o = outcomes(r);
    assert.deepEqual(o.map((x) => x.code), [-32602, -32602, -32602, -32602]);
    assert.match(o[0].message, /fifo' is a FIFO: only regular files are read or written/);
    assert.match(o[1].message, /is a FIFO/);
    assert.match(o[3].message, /is a directory/);
    assert.match(r.stderr, /refused the agent's fs\/read_text_file: .*is a FIFO/);
  } finally {
    srv.close();
  }
});

test("SIGTERM and SIGINT are answered while the agent reads a FIFO and large files", { timeout: 60000 }, async () => {
  const fifo = join(ws.dir, "sig-fifo");
  execFileSync("mkfifo", [fifo]);
  const big = join(ws.dir, "big.txt");
  writeFileSync(big, "x".repeat(32 << 20));
  for (const [sig, want] of [["SIGTERM", 143], ["SIGINT", 130]]) {
    const p = spawn(ACP, ["--agent", fsAgent, "--cwd", ws.dir, "--fs", "--yes", "prompt", calls(
      { method: "$say", text: "busy\n" },
      { method: "fs/read_text_file", params: { path: fifo } }, // acp blocked in open() for good
      { method: "$repeat", times: 100000, call: { method: "fs/read_text_file", params: { path: big } } },
    )], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "", err = "";
    const code = new Promise((resolve) => p.on("close", (c, s) => resolve(c ?? s)));
    const cancelling = new Promise((resolve) => p.stderr.on("data", (d) => (err += d).includes("cancelling") && resolve()));
    await new Promise((resolve) => p.stdout.on("data", (d) => (out += d).includes("busy") && resolve()));
    p.kill(sig);
    if (sig === "SIGINT") {
      await cancelling; // the first one cancels the turn (which this agent ignores)...
      p.kill(sig); // ... the second leaves
    }
    assert.equal(await code, want, `${sig} answered: ${err}`);
  }
});

test("a read over --max-read is refused and says so; line and limit read a huge sparse file", async (t) => {
  const huge = join(ws.dir, "huge.txt");
  writeFileSync(huge, "one\ntwo\nthree\nfour\n");
  truncateSync(huge, 6 * 2 ** 30); // 6 GiB, sparse: acp used to read all of it into memory
  const stop = join(ws.dir, "huge-measured");
  const p = spawn(ACP, ["--agent", fsAgent, "--cwd", ws.dir, "--fs", "--max-read", "1M", "prompt", calls(
    { method: "fs/read_text_file", params: { path: huge, line: 2, limit: 2 } },
    { method: "fs/read_text_file", params: { path: huge } },
    { method: "fs/read_text_file", params: { path: huge, line: 5, limit: 1 } },
    { method: "$say", text: "measure\n" },
    { method: "$waitfile", path: stop },
  )], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "", hwm = 0;
  const code = new Promise((resolve) => p.on("close", resolve));
  await new Promise((resolve) => p.stdout.on("data", (d) => (out += d).includes("measure") && resolve()));
  hwm = Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${p.pid}/status`, "utf8"))[1]);
  writeFileSync(stop, "");
  assert.equal(await code, 0);
  const o = outcomes({ stdout: out });
  assert.deepEqual(o[0], { ok: true, result: { content: "two\nthree\n" } });
  assert.equal(o[1].code, -32602);
  assert.match(o[1].message, /more than the maximum of one read \(1048576 bytes\)/);
  assert.equal(o[2].code, -32602, "a line longer than the maximum");
  // Generous: under ASan acp's own footprint is tens of MB; the old full read took 6 GiB.
  t.diagnostic(`acp's peak RSS after reading a 6 GiB sparse file: ${hwm} kB`);
  assert.ok(hwm < 512 * 1024, `peak RSS ${hwm} kB`);
  const bad = await run(["--fs", "--max-read", "lots", "info"]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--max-read wants a SIZE/);
});

for (const [mode, env] of MODES) {
  test(`a process swapping a directory for a link outside gets nothing out (${mode})`, async () => {
    const base = join(ws.dir, `race-${env.ACP_ROOTS_COMPAT ?? 0}`);
    const root = join(base, "root"), outside = join(base, "outside"), stop = join(base, "stop");
    mkdirSync(join(root, "d"), { recursive: true });
    mkdirSync(outside);
    writeFileSync(join(root, "d", "victim"), "inside");
    writeFileSync(join(outside, "victim"), "SECRET");
    const swapper = helper("fs-swapper.mjs", root, outside, stop);
    const victim = join(root, "d", "victim");
    const r = await run(["--fs", "--yes", "prompt", calls(
      { method: "$repeat", ms: 2000, call: { method: "fs/write_text_file", params: { path: victim, content: "inside" } } },
      { method: "$repeat", ms: 2000, call: { method: "fs/write_text_file", params: { path: join(root, "d", "created"), content: "" } } },
      { method: "$repeat", ms: 2000, call: { method: "fs/read_text_file", params: { path: victim } } },
    )], { cwd: root, env });
    writeFileSync(stop, "");
    const { swaps } = await swapper;
    assert.equal(r.code, 0, r.stderr);
    const [w, c, rd] = outcomes(r).map((x) => x.result);
    assert.ok(swaps > 0);
    assert.equal(rd.leaked, 0, "a read returned the file outside");
    assert.equal(readFileSync(join(outside, "victim"), "utf8"), "SECRET", "the file outside was written");
    assert.deepEqual(readdirSync(outside), ["victim"], "a file was created outside");
    assert.ok(w.done + c.done + rd.done > 0, "every access was refused");
  });

  test(`a reader never sees a torn file while the agent rewrites 4 MB again and again (${mode})`, async () => {
    const dir = join(ws.dir, `torn-${env.ACP_ROOTS_COMPAT ?? 0}`), file = join(dir, "big.txt"), stop = join(dir, "stop");
    const SIZE = 4 << 20;
    mkdirSync(dir);
    writeFileSync(file, "A".repeat(SIZE));
    const reader = helper("fs-reader.mjs", file, String(SIZE), stop);
    const r = await run(["--fs", "--yes", "prompt", calls(
      { method: "$repeat", times: 12, fill: SIZE, call: { method: "fs/write_text_file", params: { path: file } } },
    )], { cwd: dir, env });
    writeFileSync(stop, "");
    const { reads, torn } = await reader;
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(outcomes(r)[0].result, { done: 12, refused: 0, leaked: 0, torn: 0 });
    assert.ok(reads > 0);
    assert.equal(torn, 0, `${torn} of ${reads} reads saw a torn file`);
    assert.deepEqual(readdirSync(dir).sort(), ["big.txt", "stop"], "no temporary file left");
  });
}
