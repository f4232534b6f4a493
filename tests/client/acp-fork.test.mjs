// SPDX-License-Identifier: Apache-2.0
// `acp fork ID` (unstable session/fork, issue 22) end to end through pipes: against acp-agent it
// prints the new id as `acp new` does (--json: the session/fork result), the fork's history is the
// source's, and prompting the fork leaves the source as it was; against acp-agent --unstable-off
// fork and a TypeScript-SDK agent that advertises nothing it is refused locally (exit 3, as every
// missing capability) and the agent never receives session/fork; an unknown source is the agent's
// -32002 (exit 1).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { workspace, nodeAgent, run as runIn, lines } from "./acp-helpers.mjs";

let ws;
before(() => (ws = workspace()));
after(() => ws.done());
const run = (args, opts) => runIn(ws, args, opts);
const ok = (r, what) => assert.equal(r.code, 0, `${what}: ${r.stderr}`);

test("acp fork ID: prints the new id; the fork inherits the conversation, the source keeps its own", async () => {
  const n = await run(["new"]);
  ok(n, "new");
  const src = n.stdout.trim();
  ok(await run(["prompt", "-s", src, "first words"]), "prompt");

  const f = await run(["fork", src]);
  ok(f, "fork");
  assert.equal(f.stdout.split("\n").length, 2, `one line: ${JSON.stringify(f.stdout)}`);
  const fid = f.stdout.trim();
  assert.match(fid, /^sess_[0-9a-f]{32}$/);
  assert.notEqual(fid, src);

  ok(await run(["prompt", "-s", fid, "only in the fork"]), "prompt the fork");
  const hf = await run(["history", fid]);
  ok(hf, "history of the fork");
  assert.match(hf.stdout, /first words/);
  assert.match(hf.stdout, /only in the fork/);
  const hs = await run(["history", src]);
  ok(hs, "history of the source");
  assert.match(hs.stdout, /first words/);
  assert.doesNotMatch(hs.stdout, /only in the fork/);

  // --json: the session/fork result (sessionId, modes, configOptions).
  const j = await run(["--json", "fork", src]);
  ok(j, "fork --json");
  const res = lines(j.stdout).at(-1);
  assert.match(res.sessionId, /^sess_/);
  assert.ok(res.modes?.currentModeId, JSON.stringify(res));

  // The fork outlives its source.
  ok(await run(["delete", src]), "delete the source");
  const after = await run(["history", fid]);
  ok(after, "history of the fork after the delete");
  assert.match(after.stdout, /first words/);

  const none = await run(["fork", "sess_nope"]);
  assert.equal(none.code, 1, none.stderr);
  assert.match(none.stderr, /cannot fork session sess_nope/);
});

test("acp fork is sent only when advertised: refused locally otherwise (exit 3)", async () => {
  const off = `${ws.agent} --unstable-off fork`;
  const n = await run(["new"], { agentCmd: off });
  ok(n, "new");
  const info = await run(["info"], { agentCmd: off });
  assert.match(info.stdout, /^  sessionCapabilities\.fork\s+no$/m);
  const r = await run(["fork", n.stdout.trim()], { agentCmd: off });
  assert.equal(r.code, 3, r.stderr);
  assert.match(r.stderr, /sessionCapabilities\.fork/);
  assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);

  const record = join(ws.dir, "fork-record.jsonl");
  const m = await run(["fork", "1000"], { agentCmd: nodeAgent("ts-agent-minimal.mjs"), env: { ACP_RECORD: record } });
  assert.equal(m.code, 3, m.stderr);
  assert.match(m.stderr, /sessionCapabilities\.fork/);
  const got = existsSync(record) ? readFileSync(record, "utf8") : "";
  assert.match(got, /"initialize"/);
  assert.doesNotMatch(got, /session\/fork/);

  const yes = await run(["info"]);
  assert.match(yes.stdout, /^  sessionCapabilities\.fork\s+yes$/m);
});
