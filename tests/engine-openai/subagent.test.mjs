// SPDX-License-Identifier: Apache-2.0
// The openai engine's delegate_task tool (unstable, issue 22 item 6): offered only to a client that
// advertised clientCapabilities.subagents; a call runs the task as its own model request (a system
// message of its own, no conversation, no tools) in a subagent session announced on the prompted
// one, the answer streamed into the child, the child reported idle, and the answer given back to the
// model as the tool's result. Run with ACP_UNSTABLE=1: every message is checked against
// schema.unstable.json.
import {
  test, tempDir, assert, modelServer, openaiAgent, scripted, toolNames, lastUserText, contentText, textOf,
} from "./lib.mjs";
import { answer, toolCall } from "./fixtures.mjs";

const isSubagentRequest = (body) => contentText(body?.messages?.[0]?.content).startsWith("You are a subagent");

test("delegate_task: the task runs in a child session the client sees; its answer is the tool's result", async (t) => {
  if (scripted(t)) return;
  const dir = tempDir(t);
  const s = await modelServer(t);
  const q = "Plan the release.";
  const task = "List three release risks.";
  const seen = [];
  s.respond = (body) => {
    if (isSubagentRequest(body)) {
      seen.push(body);
      return answer("risk one, risk two, risk three", { split: 5 });
    }
    if (lastUserText(body) !== q) return undefined;
    seen.push(body);
    return body.messages.some((m) => m.role === "tool") ? answer("Done.") : toolCall("delegate_task", { task, title: "risks" });
  };
  const a = openaiAgent(t, dir, s, { clientCapabilities: { subagents: {} } });
  await a.init();
  const sid = await a.newSession(dir);
  const r = await a.prompt(sid, q);
  assert.equal(r.stopReason, "end_turn");
  assert.ok(toolNames(seen[0]).includes("delegate_task"), "offered to a client that takes subagents");
  // the subagent's own request: its system message and the task, nothing of the conversation, no tools
  const sub = seen.find(isSubagentRequest);
  assert.deepEqual(sub.messages.map((m) => m.role), ["system", "user"]);
  assert.equal(contentText(sub.messages[1].content), task);
  assert.equal(sub.tools, undefined);
  // the child: announced, the task, the answer streamed, then idle
  const subs = a.updates(sid).filter((u) => u.sessionUpdate === "subagent_update");
  const child = subs[0].sessionId;
  assert.equal(subs[0].title, "risks");
  assert.equal(subs[0].description, task);
  assert.deepEqual(subs.at(-1).state, { state: "idle", stopReason: "end_turn" });
  assert.equal(textOf(a.updates(child)), "risk one, risk two, risk three");
  assert.ok(a.updates(child).filter((u) => u.sessionUpdate === "agent_message_chunk").length > 1, "streamed in chunks");
  assert.equal(a.updates(child).find((u) => u.sessionUpdate === "user_message_chunk").content.text, task);
  // the model got the answer back as the tool's result
  const follow = seen.filter((b) => !isSubagentRequest(b)).at(-1);
  assert.match(contentText(follow.messages.find((m) => m.role === "tool").content), /risk one, risk two, risk three/);
  assert.equal(textOf(r.updates), "Done.");
  assert.deepEqual(a.violations, []);
  await a.end();
});

test("delegate_task is not offered to a client without subagents", async (t) => {
  if (scripted(t)) return;
  const dir = tempDir(t);
  const s = await modelServer(t);
  const bodies = [];
  s.respond = (body) => {
    bodies.push(body);
    return answer("hi");
  };
  const a = openaiAgent(t, dir, s);
  await a.init();
  const sid = await a.newSession(dir);
  await a.prompt(sid, "hello");
  assert.ok(!toolNames(bodies[0]).includes("delegate_task"));
  await a.end();
});

test("a cancel during the subagent's request aborts it and reports the child idle (cancelled); closing the parent mid-task too", async (t) => {
  if (scripted(t)) return;
  const dir = tempDir(t);
  const s = await modelServer(t);
  s.respond = (body) => {
    if (isSubagentRequest(body)) return { text: "never", hang: true };
    if (lastUserText(body) === "Delegate.") return toolCall("delegate_task", { task: "wait forever" });
    return undefined;
  };
  const a = openaiAgent(t, dir, s, { clientCapabilities: { subagents: {} } });
  await a.init();
  const sid = await a.newSession(dir);
  const p = a.prompt(sid, "Delegate.");
  const req = await s.waitRequest((r) => isSubagentRequest(r.body));
  await a.notify("session/cancel", { sessionId: sid });
  assert.equal((await p).stopReason, "cancelled");
  assert.equal((await req.closed).aborted, true);
  const subs = a.updates(sid).filter((u) => u.sessionUpdate === "subagent_update");
  assert.deepEqual(subs.at(-1).state, { state: "idle", stopReason: "cancelled" });
  // again, and this time the parent is closed while the subagent works
  const p2 = a.prompt(sid, "Delegate.").catch((e) => e);
  const req2 = await s.waitRequest((r) => isSubagentRequest(r.body) && r !== req);
  await a.request("session/close", { sessionId: sid });
  assert.equal((await p2).stopReason, "cancelled");
  assert.equal((await req2.closed).aborted, true);
  assert.deepEqual(a.violations, []);
  await a.end();
});
