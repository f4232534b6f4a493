// SPDX-License-Identifier: Apache-2.0
// The openai engine's context comes from the store (issue 12): after a restart, session/load (and
// session/resume) rebuild the model's message list from the stored history, so the next request to
// the model carries the earlier conversation: user and agent messages in order, tool calls with
// their results; a kill -9 mid-stream loses nothing the user saw. Nothing engine-private lives
// outside the store: a second agent process on the same store continues the session.
import { join } from "node:path";
import {
  test, tempDir, assert, modelServer, openaiAgent, scripted, textOf, findTool, everything, brief, contentText, turnRequests, lastUserText, LIVE,
} from "./lib.mjs";
import { answer, toolCall, slowStream } from "./fixtures.mjs";

/** The conversation of a request without the system prompt: [[role, text]] (tool calls as names). */
const convo = (body) =>
  body.messages
    .filter((m) => m.role !== "system" && m.role !== "developer")
    .map((m) => [m.role, m.tool_calls ? `${contentText(m.content)}${m.tool_calls.map((c) => `[call ${c.function.name} ${c.function.arguments}]`).join("")}` : contentText(m.content)]);

test("load after restart: the next request to the model contains the earlier conversation, in order", async (t) => {
  const dir = tempDir(t);
  const store = join(dir, "sessions.db");
  const s = await modelServer(t);
  const q1 = "My name is Ada and my favourite number is 7219. Please remember both.";
  const q2 = "What is my name and my favourite number?";
  if (!LIVE) {
    s.on(q1, answer("Noted, Ada: 7219."));
    s.on(q2, answer("You are Ada and your number is 7219."));
  }
  // A window no answer fills: this test is about the rebuild, not compaction (compaction.test.mjs).
  const wide = ["--context-tokens", "100000000"];
  const a = openaiAgent(t, dir, s, { store, args: wide });
  await a.init();
  const sid = await a.newSession(dir);
  const r1 = await a.prompt(sid, q1);
  assert.equal(r1.stopReason, "end_turn");
  const said = textOf(r1.updates);
  await a.end();

  const b = openaiAgent(t, dir, s, { store, args: wide });
  await b.init();
  await b.request("session/load", { sessionId: sid, cwd: dir, mcpServers: [] });
  const r2 = await b.prompt(sid, q2);
  assert.equal(r2.stopReason, "end_turn");
  const [req] = turnRequests(s, q2);
  assert.deepEqual(convo(req.body), [["user", q1], ["assistant", said], ["user", q2]], `the rebuilt context: ${brief(req.body)}`);
  if (LIVE) assert.match(textOf(r2.updates), /7219/, "the live model did not recall the number from the rebuilt context");
  await b.end();
});

test("load after restart with a tool call in history: the assistant's call and its result are in the rebuilt context", async (t) => {
  if (scripted(t)) return;
  const dir = tempDir(t);
  const store = join(dir, "sessions.db");
  const s = await modelServer(t);
  const q1 = "Add 20 and 22.";
  let step = 0;
  s.respond = (body) => {
    if (lastUserText(body) !== q1) return;
    return step++ === 0 ? toolCall(findTool(body, /sum/i, ["a", "b"]).function.name, { a: 20, b: 22 }, { id: "call_sum_hist" }) : answer("It is 42.");
  };
  const a = openaiAgent(t, dir, s, { store });
  await a.init();
  const sid = await a.newSession(dir, { mcpServers: [everything("ev")] });
  assert.equal((await a.prompt(sid, q1)).stopReason, "end_turn");
  const live = turnRequests(s, q1)[1].body; // what the model saw in the live session, after the tool ran
  await a.end();

  const b = openaiAgent(t, dir, s, { store });
  await b.init();
  await b.request("session/load", { sessionId: sid, cwd: dir, mcpServers: [everything("ev")] });
  const q2 = "And double it?";
  s.on(q2, answer("84."));
  assert.equal((await b.prompt(sid, q2)).stopReason, "end_turn");
  const body = turnRequests(s, q2)[0].body;
  const msgs = body.messages.filter((m) => m.role !== "system" && m.role !== "developer");
  const call = msgs.find((m) => m.role === "assistant" && m.tool_calls?.length);
  assert.ok(call, `the tool call is missing from the rebuilt context: ${brief(body)}`);
  const id = call.tool_calls[0].id;
  assert.deepEqual(JSON.parse(call.tool_calls[0].function.arguments), { a: 20, b: 22 });
  const result = msgs.find((m) => m.role === "tool" && m.tool_call_id === id);
  assert.ok(result, `the tool result is missing from the rebuilt context: ${brief(body)}`);
  assert.match(contentText(result.content), /The sum of 20 and 22 is 42/);
  assert.deepEqual(
    convo(body).map(([r]) => r),
    ["user", "assistant", "tool", "assistant", "user"],
    `order: ${brief(body)}`,
  );
  // The rebuilt context is what the live session sent, plus the new exchange.
  assert.deepEqual(convo(body).slice(0, 3), convo(live).slice(0, 3));
  await b.end();
});

test("resume after restart rebuilds the same context (no replay to the client)", async (t) => {
  if (scripted(t)) return;
  const dir = tempDir(t);
  const store = join(dir, "sessions.db");
  const s = await modelServer(t);
  s.on("Remember: blue.", answer("Blue, noted."));
  s.on("Which colour?", answer("Blue."));
  const a = openaiAgent(t, dir, s, { store });
  const init = await a.init();
  const sid = await a.newSession(dir);
  await a.prompt(sid, "Remember: blue.");
  await a.end();
  if (!init.agentCapabilities?.sessionCapabilities?.resume) return t.skip("the agent does not advertise session/resume");
  const b = openaiAgent(t, dir, s, { store });
  await b.init();
  await b.request("session/resume", { sessionId: sid, cwd: dir, mcpServers: [] });
  assert.equal(b.updates(sid).filter((u) => u.sessionUpdate === "agent_message_chunk").length, 0, "resume replayed history");
  await b.prompt(sid, "Which colour?");
  assert.deepEqual(convo(turnRequests(s, "Which colour?")[0].body), [["user", "Remember: blue."], ["assistant", "Blue, noted."], ["user", "Which colour?"]]);
  await b.end();
});

test("kill -9 mid-stream: what the user saw is replayed on load and is in the next request's context", async (t) => {
  if (scripted(t)) return;
  const dir = tempDir(t);
  const store = join(dir, "sessions.db");
  const s = await modelServer(t);
  s.on("Count slowly.", slowStream("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu ".repeat(20), 50));
  const a = openaiAgent(t, dir, s, { store });
  await a.init();
  const sid = await a.newSession(dir);
  a.prompt(sid, "Count slowly.").catch(() => {});
  // Wait until a good part has been seen, then kill.
  await a.waitFor(() => textOf(a.updates(sid)).length >= 40);
  const seenBefore = textOf(a.updates(sid));
  await a.kill9();

  const b = openaiAgent(t, dir, s, { store });
  await b.init();
  await b.request("session/load", { sessionId: sid, cwd: dir, mcpServers: [] });
  const replayed = textOf(b.updates(sid));
  // Everything delivered to the client before the kill was committed first (issue 12: "a crash
  // loses nothing that the user saw").
  assert.ok(replayed.startsWith(seenBefore), `seen ${JSON.stringify(seenBefore)} but replayed ${JSON.stringify(replayed)}`);
  s.on("Where were we?", answer("At counting."));
  await b.prompt(sid, "Where were we?");
  const c = convo(turnRequests(s, "Where were we?")[0].body);
  assert.equal(c[0][0], "user");
  assert.equal(c[0][1], "Count slowly.");
  assert.equal(c[1][0], "assistant");
  assert.ok(c[1][1].startsWith(seenBefore.trim().slice(0, 30)), `the interrupted answer is not in the context: ${JSON.stringify(c)}`);
  await b.end();
});

test("a second agent process on the same store continues a session the first one closed (no engine-private state)", async (t) => {
  if (scripted(t)) return;
  const dir = tempDir(t);
  const store = join(dir, "sessions.db");
  const s = await modelServer(t);
  s.on("First on host A.", answer("Hello from A."));
  s.on("Then on host B.", answer("Hello from B."));
  const a = openaiAgent(t, dir, s, { store });
  await a.init();
  const sid = await a.newSession(dir);
  await a.prompt(sid, "First on host A.");
  await a.request("session/close", { sessionId: sid });
  const b = openaiAgent(t, dir, s, { store });
  await b.init();
  await b.request("session/load", { sessionId: sid, cwd: dir, mcpServers: [] });
  await b.prompt(sid, "Then on host B.");
  assert.deepEqual(convo(turnRequests(s, "Then on host B.")[0].body), [["user", "First on host A."], ["assistant", "Hello from A."], ["user", "Then on host B."]]);
  await b.end();
  await a.end();
});
