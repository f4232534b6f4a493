// SPDX-License-Identifier: Apache-2.0
// acp check (issue 24 item 1): against acp-agent on stdio, WebSocket and Streamable HTTP no
// MUST fails; against broken-agent.mjs, which breaks one rule per mode, the check tied to
// that rule fails, and the exit status says whether a MUST did.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const BUILD = process.env.ACP_BUILD;
const SOURCE = process.env.ACP_SOURCE;
const ACP = join(BUILD, "acp");
let dir;
before(() => (dir = mkdtempSync(join(tmpdir(), "acp-check-test-"))));
after(() => rmSync(dir, { recursive: true, force: true }));

const agent = () => `'${join(BUILD, "acp-agent")}' --store '${join(dir, "s.db")}'`;
const broken = (mode) => `'${process.execPath}' '${join(SOURCE, "tests/check/broken-agent.mjs")}' ${mode}`;

function check(agentCmd, ...args) {
  return new Promise((resolve, reject) => {
    const p = spawn(ACP, ["--agent", agentCmd, "--json", "check", ...args], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, TMPDIR: dir },
    });
    let stdout = "", stderr = "";
    p.stdout.on("data", (d) => (stdout += d));
    p.stderr.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => p.kill("SIGKILL"), 300000);
    p.on("error", reject);
    p.on("close", (code) => {
      clearTimeout(timer);
      const checks = stdout.split("\n").filter(Boolean).map((l) => JSON.parse(l));
      const by = Object.fromEntries(checks.map((c) => [c.id, c]));
      resolve({ code, checks, by, stderr });
    });
  });
}

const mustFails = (r) => r.checks.filter((c) => c.level === "MUST" && c.result === "fail");

test("acp-agent on stdio: every check runs, no MUST fails, in a temporary directory", async () => {
  const r = await check(agent());
  assert.deepEqual(mustFails(r), [], r.stderr);
  assert.equal(r.code, 0);
  for (const c of r.checks) {
    for (const k of ["id", "level", "result", "detail", "spec"]) assert.equal(typeof c[k], "string", `${c.id}.${k}`);
    assert.match(c.level, /^(MUST|SHOULD|MAY)$/);
    assert.match(c.result, /^(pass|fail|skip)$/);
  }
  // the session layer, hygiene and the aggregate checks all ran and passed
  for (const id of ["init.version.same", "session.new.unique", "load.replay_before_answer", "load.replay",
    "resume.no_replay", "close.cancels", "list.cwd_filter", "list.paging", "delete.gone", "delete.after_restart",
    "persist.listed", "roots.not_restored", "prompt.cancel", "prompt.no_update_after_answer", "rpc.parse_error",
    "rpc.id.integer.4", "rpc.id.string_8k.12", "rpc.batch", "rpc.invalid_utf8", "rpc.deep_nesting",
    "transport.stdout_only_jsonrpc", "schema.messages"])
    assert.equal(r.by[id]?.result, "pass", `${id}: ${JSON.stringify(r.by[id])}`);
  assert.match(r.by["list.paging"].detail, /over [2-9] page/);
  const m = /working in the temporary directory (\S+)/.exec(r.stderr);
  assert.ok(m, r.stderr);
  assert.equal(existsSync(m[1]), false, "the temporary directory is removed");
});

test("--no-prompt skips the turns; --only runs the checks it names", async () => {
  const r = await check(agent(), "--no-prompt");
  assert.equal(r.code, 0);
  assert.equal(r.by["prompt.turn"].result, "skip");
  assert.match(r.by["prompt.turn"].detail, /--no-prompt/);
  const o = await check(agent(), "--only", "list.*");
  assert.equal(o.code, 0);
  assert.ok(o.checks.length >= 3);
  assert.ok(o.checks.every((c) => c.id.startsWith("list.")), JSON.stringify(o.checks.map((c) => c.id)));
});

// Each mode breaks the rule its check is tied to.
const cases = [
  ["", null],
  ["update-after-load", "load.replay_before_answer"],
  ["id-as-string", "rpc.id.integer.2"],
  ["delete-not-idempotent", "delete.idempotent"],
  ["delete-comes-back", "delete.after_restart"],
  ["resume-replays", "resume.no_replay"],
  ["list-ignores-cwd", "list.cwd_filter"],
  ["stdout-noise", "transport.stdout_only_jsonrpc"],
  ["bad-schema", "schema.messages"],
  ["update-after-prompt", "prompt.no_update_after_answer"],
];
for (const [mode, id] of cases) {
  test(`broken agent '${mode || "(none)"}': ${id ?? "no MUST fails"}`, async () => {
    const r = await check(broken(mode));
    if (!id) {
      assert.deepEqual(mustFails(r), []);
      assert.equal(r.code, 0);
      return;
    }
    assert.equal(r.by[id]?.result, "fail", JSON.stringify(r.by[id]));
    assert.ok(r.by[id].spec.length > 20);
    // the failure shows what was sent or received
    assert.ok(r.by[id].sent || r.by[id].received, JSON.stringify(r.by[id]));
    assert.equal(r.code, r.by[id].level === "MUST" ? 1 : mustFails(r).length ? 1 : 0);
    // no other rule of the session layer is blamed for it
    const others = mustFails(r).filter((c) => c.id.split(".")[0] !== id.split(".")[0]);
    if (mode !== "bad-schema") assert.deepEqual(others, []);
  });
}

// The same checks through the client's remote transports.
for (const scheme of ["ws", "http"]) {
  test(`acp-agent --listen over ${scheme}://: no MUST fails`, async (t) => {
    const pf = join(dir, `${scheme}.port`);
    const proc = spawn(join(BUILD, "acp-agent"), ["--store", join(dir, `${scheme}.db`), "--listen", "127.0.0.1:0", "--port-file", pf], {
      stdio: ["ignore", "ignore", "pipe"],
    });
    const exit = new Promise((r) => proc.on("exit", r));
    let err = "";
    await new Promise((resolve, reject) => {
      proc.stderr.on("data", (d) => (err += d) && /listening/.test(err) && resolve());
      proc.once("exit", () => reject(new Error(err)));
    });
    t.after(async () => {
      proc.kill("SIGTERM");
      await exit;
    });
    const port = readFileSync(pf, "utf8").trim();
    const r = await check(`${scheme}://127.0.0.1:${port}/acp`);
    assert.deepEqual(mustFails(r), []);
    assert.equal(r.code, 0);
    assert.equal(r.by["persist.listed"]?.result, "pass");
    assert.equal(r.by["load.replay_before_answer"]?.result, "pass");
    assert.equal(r.by["rpc.id.integer.4"]?.result, "pass");
    if (scheme === "http") assert.equal(r.by["rpc.parse_error"].result, "skip");
  });
}
