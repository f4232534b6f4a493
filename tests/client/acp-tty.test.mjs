// SPDX-License-Identifier: Apache-2.0
// `acp` on a pseudo-terminal (tests/pty_run), as a person uses it: chat with line editing,
// history, slash-command completion and Ctrl-C; questions for permissions, writes and
// commands; the waiting line; plans and usage redrawn in place.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { workspace, nodeAgent, onPty as onPtyIn } from "./acp-helpers.mjs";

let ws;
before(() => (ws = workspace()));
after(() => ws.done());
const env = () => ({ XDG_STATE_HOME: ws.dir, ACP_HISTFILE: undefined });
const onPty = (args, opts = {}) => onPtyIn(ws, args, { env: env(), ...opts });
const quirks = nodeAgent("ts-agent-quirks.mjs");

test("chat: replies stream, Tab completes, history recalls, Ctrl-C clears a line, cancels a turn at the agent, and exits at an empty prompt", async () => {
  const t = onPty(["chat"]);
  await t.expect(/Ctrl-D exits[\s\S]*> /);
  t.send("hello pty\r");
  await t.expect(/hello pty[\s\S]*hello pty[\s\S]*> /);
  t.send("/pla");
  await t.expect(/\/pla/);
  t.send("\t"); // one match: completed, with a space
  await t.expect(/n /);
  t.send("\r");
  await t.expect(/Plan:[\s\S]*\[ \] Test it[\s\S]*> /);
  t.send("/s");
  await t.expect(/\/s/);
  t.send("\t"); // several: listed
  await t.expect(/\/stream {2}\/sleep {2}\/set/);
  t.send("\x1b[A"); // history: the last line
  await t.expect(/\/plan/);
  t.send("\x03");
  await t.expect(/\^C[\s\S]*> /);
  t.send("/sleep 600000\r");
  await t.expect(/waiting for the agent… \d+ s \(Ctrl-C cancels\)/);
  t.send("\x03");
  await t.expect(/cancelling[\s\S]*turn ended: cancelled[\s\S]*> /);
  t.send("\x03");
  assert.equal(await t.exited, 130, "Ctrl-C at an empty prompt ends acp");
  const hist = readFileSync(join(ws.dir, "acp", "history"), "utf8");
  assert.match(hist, /^hello\\040pty$/m, "libedit's file format");
  assert.match(hist, /sleep/);
});

test("chat: Ctrl-D exits 0; history comes back in the next chat; the agent exiting ends it with 4", async () => {
  const t = onPty(["chat"]);
  await t.expect(/> /);
  t.send("\x1b[A"); // from the history file of the test before
  await t.expect(/\/sleep 600000/);
  t.send("\x03");
  await t.expect(/\^C[\s\S]*> /);
  t.send("\x04");
  assert.equal(await t.exited, 0);
  const q = onPty(["chat"], { agentCmd: quirks });
  await q.expect(/> /);
  q.send("exit 3\r");
  await q.expect(/the agent exited with status 3/);
  assert.equal(await q.exited, 4);
});

test("chat: a question of the agent's between turns is answered on the terminal, then editing goes on", async () => {
  const t = onPty(["chat"], { agentCmd: quirks });
  await t.expect(/> /);
  t.send("later\r");
  await t.expect(/ok, later[\s\S]*The agent asks permission: A late question[\s\S]*choose 1-2/);
  t.send("1\r");
  await t.expect(/late answer: yes[\s\S]*> /);
  t.send("after\r");
  await t.expect(/after[\s\S]*after[\s\S]*> /);
  t.send("\x04");
  assert.equal(await t.exited, 0);
});

test("permission asked on the terminal: the user's choice; a refusal exits 3", async () => {
  const f = join(ws.dir, "asked.txt");
  const t = onPty(["prompt", `/write ${f} chosen`]);
  await t.expect(/1\) Allow[\s\S]*choose 1-2/);
  t.send("1\r");
  await t.expect(/completed/);
  assert.equal(await t.exited, 0);
  assert.equal(readFileSync(f, "utf8"), "chosen");
  const g = join(ws.dir, "refused.txt");
  const u = onPty(["prompt", `/write ${g} no`]);
  await u.expect(/choose 1-2/);
  u.send("2\r");
  assert.equal(await u.exited, 3);
  assert.equal(existsSync(g), false);
});

test("--fs writes asked on the terminal: y writes, n refuses; a file allowed in a permission request is not asked again", async () => {
  const f = join(ws.dir, "fs-yes.txt"), g = join(ws.dir, "fs-no.txt");
  const t = onPty(["--fs", "prompt", "write", f, "abc"], { agentCmd: quirks });
  await t.expect(new RegExp(`write 3 bytes to ${f}\\? \\[y/N\\]`));
  t.send("y\r");
  await t.expect(/written/);
  assert.equal(await t.exited, 0);
  assert.equal(readFileSync(f, "utf8"), "abc");
  const u = onPty(["--fs", "prompt", "write", g, "abc"], { agentCmd: quirks });
  await u.expect(/\[y\/N\]/);
  u.send("n\r");
  await u.expect(/write refused: -32603 denied by the user/);
  assert.equal(await u.exited, 3);
  assert.equal(existsSync(g), false);
  const h = join(ws.dir, "fs-once.txt");
  const v = onPty(["--fs", "prompt", `/write ${h} once`]);
  await v.expect(/choose 1-2/);
  v.send("1\r");
  await v.expect(/completed/);
  assert.equal(await v.exited, 0);
  assert.equal(readFileSync(h, "utf8"), "once");
  assert.doesNotMatch(v.output(), /\[y\/N\]/, "asked once, in the permission request");
});

test("--terminal commands asked on the terminal, after the permission", async () => {
  const t = onPty(["--terminal", "prompt", "/term echo from-pty"]);
  await t.expect(/choose 1-2/);
  t.send("1\r");
  await t.expect(new RegExp(`run /bin/sh -c 'echo from-pty' in ${ws.dir}\\? \\[y/N\\]`));
  t.send("y\r");
  await t.expect(/│(\x1b\[0m)? from-pty/);
  assert.equal(await t.exited, 0);
});

test("Ctrl-C while a question is open cancels the turn: exit 130", async () => {
  const t = onPty(["prompt", "/ask"]);
  await t.expect(/choose 1-4/);
  t.send("\x03");
  await t.expect(/cancelled[\s\S]*turn ended: cancelled/);
  assert.equal(await t.exited, 130);
});

test("prompt on a terminal: the waiting line, Ctrl-C cancels, the stop reason is cancelled, exit 130", async () => {
  const t = onPty(["prompt", "/sleep 600000"]);
  await t.expect(/waiting for the agent… \d+ s \(Ctrl-C cancels\)/);
  t.send("\x03");
  await t.expect(/\r\x1b\[K[\s\S]*turn ended: cancelled/); // the waiting line is cleared first
  assert.equal(await t.exited, 130);
});

test("a second Ctrl-C exits when the agent does not end the turn", async () => {
  const record = join(ws.dir, "hang.jsonl");
  const t = onPty(["prompt", "hang"], { agentCmd: nodeAgent("ts-agent-minimal.mjs"), env: { ...env(), ACP_RECORD: record } });
  await t.expect(/waiting for the agent/);
  t.send("\x03");
  await t.expect(/cancelling/);
  // The agent records the cancel when it reads it; the second Ctrl-C stops it, so wait first.
  for (let i = 0; !readFileSync(record, "utf8").includes('"session/cancel"'); i++) {
    assert.ok(i < 1000, "the agent got session/cancel");
    await new Promise((r) => setTimeout(r, 20));
  }
  t.send("\x03");
  assert.equal(await t.exited, 130);
});

test("plans and usage are redrawn in place on a terminal", async () => {
  const t = onPty(["prompt", "plans"], { agentCmd: quirks });
  assert.equal(await t.exited, 0);
  const out = t.output();
  assert.equal(out.split("\x1b[4A\r\x1b[J").length, 3, "two redraws of the four-line plan");
  assert.match(out, /\x1b\[1A\r\x1b\[J\S*\[usage\]\S* 20\/100 tokens \(20%\), 0\.50 EUR/);
});
