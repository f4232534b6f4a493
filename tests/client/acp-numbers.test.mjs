// SPDX-License-Identifier: Apache-2.0
// Numbers `acp` and `acp-agent` read from people (issue 13, item 2): --timeout, the number
// typed to a permission question, acp-agent's flags. Each goes through acp_parse_* (acp/num.h):
// a bad one is a usage error that says what is wrong, never a number that wrapped or a
// prefix that was read ("1x" as 1). The echo engine's /stream and /sleep are tested in
// tests/interop-agent/prompt.test.mjs, the helper itself in tests/rpc/test_num.c.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { BUILD, workspace, run as runIn, onPty as onPtyIn } from "./acp-helpers.mjs";

let ws;
before(() => (ws = workspace()));
after(() => ws.done());
const run = (args, opts) => runIn(ws, args, opts);
const onPty = (args, opts) => onPtyIn(ws, args, opts);

test("--timeout: a bad number of seconds is a usage error (exit 2, one line) saying what is wrong", async () => {
  const range = "out of range: 0.001 to 4000000";
  for (const [value, said] of [
    ["-1", `'-1' is ${range}`],
    ["0", `'0' is ${range}`],
    ["0.0001", `'0.0001' is ${range}`],
    ["5000000", `'5000000' is ${range}`],
    ["1e999", `'1e999' is ${range}`],
    ["99999999999999999999", `'99999999999999999999' is ${range}`],
    ["abc", "'abc' is not a number"],
    ["10s", "'10s' is not a number"],
    ["inf", "'inf' is not a number"],
    ["nan", "'nan' is not a number"],
    ["0x10", "'0x10' is not a number"],
    [" 5", "' 5' is not a number"],
    ["", "no number given"],
    ["5\x1b[2J", "'5\\x1b[2J' is not a number"], // quoted safely: no escape reaches the terminal
  ]) {
    const r = await run(["--timeout", value, "info"]);
    assert.equal(r.code, 2, `--timeout '${value}': ${r.stderr}`);
    assert.equal(r.stderr, `acp: --timeout wants a number of SECONDS: ${said}; see 'acp --help'\n`);
    assert.equal(r.stdout, "");
  }
  for (const value of ["30", "0.5", "1e1", "3.", ".75"]) {
    const r = await run(["--timeout", value, "info"]);
    assert.equal(r.code, 0, `--timeout '${value}': ${r.stderr}`);
  }
});

test("a permission question takes the number of an option, blanks around it, and nothing else", async () => {
  // /ask offers allow_once, allow_always, reject_once, reject_always; whatever is not the
  // number of one denies (exit 3). "1x" was read as 1 (allowed) by strtol.
  for (const [typed, chosen, code] of [
    ["1x", "reject_once", 3],
    ["-1", "reject_once", 3],
    ["0", "reject_once", 3],
    ["5", "reject_once", 3],
    ["99999999999999999999", "reject_once", 3],
    ["18446744073709551617", "reject_once", 3], // 2^64 + 1: wraps to 1 in 64 bits
    ["1.0", "reject_once", 3],
    ["", "reject_once", 3],
    [" 2 ", "allow_always", 0],
    ["01", "allow_once", 0],
  ]) {
    const t = onPty(["prompt", "/ask"]);
    await t.expect(/choose 1-4/);
    t.send(`${typed}\r`);
    await t.expect(new RegExp(`permission: selected ${chosen}`));
    assert.equal(await t.exited, code, `typed '${typed}'`);
  }
});

test("acp-agent: a --log-level other than error, warn, info or debug is a usage error", () => {
  const r = spawnSync(join(BUILD, "acp-agent"), ["--log-level", "verbose"], { input: "", encoding: "utf8" });
  assert.equal(r.status, 2);
  assert.equal(r.stderr, "acp-agent: --log-level takes error, warn, info or debug, not 'verbose'\n");
});
