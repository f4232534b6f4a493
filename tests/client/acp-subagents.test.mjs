// SPDX-License-Identifier: Apache-2.0
// `acp` and subagent sessions (unstable, issue 22): acp advertises clientCapabilities.subagents,
// labels a child's output "[subagent TITLE]" in prompt and history, says each subagent_update
// as the child's state, keeps --json raw (every update with its own sessionId), and lists only
// top-level sessions; a child's plan, usage and notices are labelled too, and on a terminal its
// plan is never drawn over its parent's. Against acp-agent's /subagent and an SDK 2.4.0
// (unstable) agent.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { workspace, nodeAgent, onPty, run as runIn, lines } from "./acp-helpers.mjs";

let ws;
before(() => (ws = workspace()));
after(() => ws.done());
const run = (args, opts) => runIn(ws, args, opts);

test("prompt and history label the child's output; --json carries each update raw", async () => {
  const p = await run(["prompt", "/subagent", "look", "around"]);
  assert.equal(p.code, 0, p.stderr);
  assert.deepEqual(p.stdout.trimEnd().split("\n").slice(0, 3), [
    "[subagent echo subagent] running",
    "[subagent echo subagent] look around",
    "[subagent echo subagent] idle (end_turn)",
  ]);
  const child = p.stdout.match(/subagent (sess_[0-9a-f]+) answered/)[1];
  const list = lines((await run(["--json", "sessions"])).stdout)[0].sessions;
  assert.equal(list.length, 1, "only the parent is listed");
  const sid = list[0].sessionId;
  assert.notEqual(sid, child);
  const h = await run(["history", sid]);
  assert.equal(h.code, 0, h.stderr);
  const lines_ = h.stdout.split("\n");
  const at = (re) => lines_.findIndex((l) => re.test(l));
  assert.ok(at(/^> \/subagent look around/) < at(/^\[subagent echo subagent\] running/), h.stdout);
  assert.ok(at(/^\[subagent echo subagent\] running/) < at(/^\[subagent echo subagent\] > look around/), h.stdout);
  assert.ok(at(/^\[subagent echo subagent\] look around/) < at(/idle \(end_turn\)/), h.stdout);
  assert.ok(at(/idle \(end_turn\)/) < at(/answered/), h.stdout);
  const j = lines((await run(["--json", "history", sid])).stdout);
  const ups = j.filter((o) => o.update);
  assert.ok(ups.some((o) => o.sessionId === child && o.update.sessionUpdate === "agent_message_chunk"));
  assert.equal(ups.find((o) => o.update.sessionUpdate === "subagent_update").update.sessionId, child);
  // the child is its parent's: acp cannot load it on its own
  const c = await run(["history", child]);
  assert.notEqual(c.code, 0);
  assert.match(c.stderr, /subagent session/);
});

test("an SDK agent's subagents: labelled by their title, state said, the capability sent", async () => {
  const r = await run(["prompt", "spawn"], { agentCmd: nodeAgent("ts-agent-subagents.mjs") });
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(r.stdout.trimEnd().split("\n"), ["[subagent kid] running", "[subagent kid] found it", "[subagent kid] idle (end_turn)"]);
});

test("a child's plan, usage and notices are labelled, and its plan never drawn over its parent's", async () => {
  const r = await run(["prompt", "spawn-plan"], { agentCmd: nodeAgent("ts-agent-subagents.mjs") });
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(r.stdout.trimEnd().split("\n"), [
    "[subagent kid] running",
    "Plan:",
    "  [~] delegate",
    "[subagent kid] Plan:",
    "  [~] search",
    "[subagent kid] [usage] 10/100 tokens (10%)",
    "[subagent kid] [notice] info halfway",
    "[subagent kid] found it",
    "[subagent kid] idle (end_turn)",
  ]);
  // On a terminal plans are redrawn in place, but only one speaker's over the same speaker's.
  const t = onPty(ws, ["prompt", "spawn-plan"], { agentCmd: nodeAgent("ts-agent-subagents.mjs") });
  assert.equal(await t.exited, 0);
  assert.ok(!t.output().includes("\x1b[2A\r\x1b[J"), JSON.stringify(t.output()));
  assert.match(t.output(), /delegate[\s\S]*subagent kid[\s\S]*Plan:[\s\S]*search/);
});

test("a child's tool calls are labelled too", async () => {
  const r = await run(["prompt", "spawn-tool"], { agentCmd: nodeAgent("ts-agent-subagents.mjs") });
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(r.stdout.trimEnd().split("\n"), [
    "[subagent kid] running",
    "[subagent kid] [tool] grep · search completed",
    "[subagent kid] found it",
    "[subagent kid] idle (end_turn)",
  ]);
});
