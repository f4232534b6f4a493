// SPDX-License-Identifier: Apache-2.0
// The echo engine's own file access (/read and /write with a client that does not offer fs)
// against a hostile process and a watching reader (issue 20): a directory swapped for a link
// to the outside while it reads and writes under it, a 4 MB file rewritten while another
// process reads it, FIFOs, and acp-agent --max-read. The racing tests run through openat2 and
// through the pre-5.6 walk (ACP_ROOTS_COMPAT=1). The client side is tests/client/acp-fs-safety.
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test, tempDir, makeDir, sdkAgent, textOf, SOURCE } from "./lib.mjs";

const MODES = [["openat2", {}], ["pre-5.6 walk", { ACP_ROOTS_COMPAT: "1" }]];
const failure = (updates) =>
  updates.filter((u) => u.sessionUpdate === "tool_call_update" && u.status === "failed").map((u) => JSON.stringify(u.content)).join("");

// A helper process of tests/client; resolves with its JSON line once it exits.
function helper(script, ...args) {
  const p = spawn(process.execPath, [join(SOURCE, "tests/client", script), ...args], { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  p.stdout.on("data", (d) => (out += d));
  return new Promise((resolve) => p.on("close", () => resolve(JSON.parse(out))));
}

test("/read of a FIFO fails at once and the agent goes on; /write to it too; --max-read bounds /read", async (t) => {
  const base = tempDir(t);
  const cwd = makeDir(join(base, "proj"), { "two-k.txt": "x".repeat(2048) });
  execFileSync("mkfifo", [join(cwd, "fifo")]);
  const a = sdkAgent(t, { store: join(base, "s.db"), args: ["--max-read", "1K"] });
  await a.init();
  const sid = await a.newSession(cwd);
  // Before issue 20 this froze the agent (every session of a --listen server) in open().
  const r = await a.prompt(sid, "/read fifo");
  assert.match(failure(r.updates), /fifo' is a FIFO: only regular files are read or written/);
  const w = await a.prompt(sid, "/write fifo text");
  assert.match(failure(w.updates), /is a FIFO/);
  const big = await a.prompt(sid, "/read two-k.txt");
  assert.match(failure(big.updates), /more than the maximum of one read \(1024 bytes\)/);
  const ok = await a.prompt(sid, "/write small.txt fits");
  assert.equal(failure(ok.updates), "");
  assert.equal(textOf((await a.prompt(sid, "/read small.txt")).updates), "fits");
  await a.end();
});

for (const [mode, env] of MODES) {
  test(`a process swapping a directory for a link outside gets nothing out of /read and /write (${mode})`, async (t) => {
    const base = tempDir(t);
    const root = makeDir(join(base, "root")), outside = makeDir(join(base, "outside"), { victim: "SECRET" });
    makeDir(join(root, "d"), { victim: "inside" });
    const stop = join(base, "stop");
    const a = sdkAgent(t, { store: join(base, "s.db"), env });
    await a.init();
    const sid = await a.newSession(root);
    const swapper = helper("fs-swapper.mjs", root, outside, stop);
    let done = 0;
    for (const end = Date.now() + 3000; Date.now() < end; ) {
      const w = await a.prompt(sid, "/write d/victim inside");
      const r = await a.prompt(sid, "/read d/victim");
      assert.doesNotMatch(textOf(r.updates), /SECRET/, "a read returned the file outside");
      done += (failure(w.updates) === "") + (failure(r.updates) === "");
    }
    writeFileSync(stop, "");
    assert.ok((await swapper).swaps > 0);
    assert.equal(readFileSync(join(outside, "victim"), "utf8"), "SECRET", "the file outside was written");
    assert.deepEqual(readdirSync(outside), ["victim"], "a file was created outside");
    assert.ok(done > 0, "every access was refused");
    await a.end();
  });

  test(`a reader never sees a torn file while /write rewrites 4 MB again and again (${mode})`, async (t) => {
    const base = tempDir(t);
    const dir = makeDir(join(base, "proj")), file = join(dir, "big.txt"), stop = join(base, "stop");
    const SIZE = 4 << 20;
    writeFileSync(file, "A".repeat(SIZE));
    const a = sdkAgent(t, { store: join(base, "s.db"), env });
    await a.init();
    const sid = await a.newSession(dir);
    const reader = helper("fs-reader.mjs", file, String(SIZE), stop);
    for (let i = 0; i < 10; i++) {
      const w = await a.prompt(sid, `/write big.txt ${(i & 1 ? "A" : "B").repeat(SIZE)}`);
      assert.equal(failure(w.updates), "");
    }
    writeFileSync(stop, "");
    const { reads, torn } = await reader;
    assert.ok(reads > 0);
    assert.equal(torn, 0, `${torn} of ${reads} reads saw a torn file`);
    assert.deepEqual(readdirSync(dir), ["big.txt"], "no temporary file left");
    await a.end();
  });
}
