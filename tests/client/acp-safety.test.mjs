// SPDX-License-Identifier: Apache-2.0
// `acp` against an agent that tries what issue 20 found (unsafe-agent.mjs): a terminal/create
// whose cwd lies outside the session's roots (item 5), escape sequences on the agent's stderr
// (item 6: shown made safe, logged raw with --agent-log, dropped with --quiet), and updates
// for a session acp never created (item 8: dropped, said on stderr).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, realpathSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { ACP, workspace, nodeAgent, run as runIn, lines, texts } from "./acp-helpers.mjs";
import { STDERR } from "./unsafe-agent.mjs";

let ws;
before(() => {
  ws = workspace();
  mkdirSync(join(ws.dir, "sub"));
  symlinkSync("/etc", join(ws.dir, "out"));
});
after(() => ws.done());
const agentCmd = nodeAgent("unsafe-agent.mjs");
const run = (args) => runIn(ws, args, { agentCmd });

test("terminal/create: a cwd outside the roots is refused, inside runs, relative is refused", async () => {
  const root = realpathSync(ws.dir);
  const cases = [
    ["/etc", /refused: -32602 a terminal's cwd must lie inside the session's directories: .*\/etc/],
    [join(ws.dir, "out"), /refused: -32602 a terminal's cwd must lie inside .*outside the session's directories/],
    ["sub", /refused: -32602 cwd must be an absolute path: 'sub'/],
    [join(ws.dir, "sub"), new RegExp(`ok: ${join(root, "sub")}\\n`)],
    ["-", new RegExp(`ok: ${root}\\n`)],
  ];
  for (const [cwd, want] of cases) {
    const r = await run(["--terminal", "--yes", "prompt", `term ${cwd}`]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, want, cwd);
  }
});

// What a terminal acts on: ESC and BEL (and the other C0 controls but LF and TAB).
const raw = /[\x00-\x08\x0b-\x1f\x7f]/;

test("the agent's stderr: shown line by line made safe, colours dropped, the partial line too", async () => {
  const r = await run(["prompt", "stderr"]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(raw.exec(r.stderr), null, JSON.stringify(r.stderr));
  for (const l of ["plain line", "\\x1b]0;owned title\\x07title line", "\\x1b[2Jcleared", "\\x1b]52;c;cHduZWQ=\\x07clipboard", "red text", "partial"])
    assert.ok(r.stderr.split("\n").includes(l), `${l} in ${JSON.stringify(r.stderr)}`);
});

test("a line longer than 4096 bytes is shown in pieces of 4096", async () => {
  const r = await run(["prompt", "long"]);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(r.stderr.split("\n"), ["y".repeat(4096), "y".repeat(904), ""]);
});

test("a line the agent leaves unfinished is shown once it goes quiet, before it exits", async () => {
  const p = spawn(ACP, ["--agent", agentCmd, "--cwd", ws.dir, "prompt", "stall"], { stdio: ["ignore", "ignore", "pipe"] });
  let err = "";
  await new Promise((resolve) => p.stderr.on("data", (d) => (err += d).includes("stalled partial\n") && resolve()));
  const code = new Promise((r) => p.on("close", (c, sig) => r(c ?? sig)));
  p.kill("SIGTERM");
  assert.equal(await code, 143);
});

test("--agent-log FILE: the agent's stderr byte for byte in FILE, none of it on acp's", async () => {
  const log = join(ws.dir, "agent.log");
  const r = await run(["--agent-log", log, "prompt", "stderr"]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(readFileSync(log, "latin1"), STDERR);
  assert.equal(r.stderr, "");
  const bad = await run(["--agent-log", join(ws.dir, "no/such/dir"), "prompt", "stderr"]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--agent-log: cannot open/);
});

test("--quiet: nothing of the agent's stderr", async () => {
  const r = await run(["--quiet", "prompt", "stderr"]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stderr, "");
});

test("updates for a session acp never created are dropped, and said", async () => {
  const r = await run(["prompt", "ghost"]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /real text/);
  assert.doesNotMatch(r.stdout + r.stderr, /GHOST TEXT/);
  assert.equal(r.stderr.match(/dropped a session\/update for session "ghost-1", which this client does not have open/g)?.length, 1, r.stderr);
  const j = await run(["--json", "prompt", "ghost"]);
  assert.equal(texts(lines(j.stdout)), "real text");
  assert.ok(!j.stdout.includes("ghost-1"));
});
