// SPDX-License-Identifier: Apache-2.0
// session/fork (unstable, issue 22) with the openai engine: the fork's next request to the model
// carries the inherited conversation, the source's next request never carries the fork's turn (nor
// the fork the source's), whether the source is open in the same agent (the engine copies its
// context) or only stored (rebuilt from the fork's stored copy). A load of the fork after the source
// was deleted still gives the model the whole conversation.
import { join } from "node:path";
import { test, tempDir, assert, modelServer, openaiAgent, scripted, textOf, brief, contentText, turnRequests } from "./lib.mjs";
import { answer } from "./fixtures.mjs";

/** The conversation of a request without the system prompt: [[role, text]]. */
const convo = (body) => body.messages.filter((m) => m.role !== "system" && m.role !== "developer").map((m) => [m.role, contentText(m.content)]);
const wide = ["--context-tokens", "100000000"];

test("fork of an open session: the fork inherits the context, and the two never see each other's turns", async (t) => {
  if (scripted(t)) return;
  const dir = tempDir(t);
  const s = await modelServer(t);
  const q1 = "My name is Ada.";
  const q2 = "(fork) Summarise our conversation.";
  const q3 = "(source) What is my name?";
  const q4 = "(fork) And once more?";
  s.on(q1, answer("Hello Ada."));
  s.on(q2, answer("You told me your name."));
  s.on(q3, answer("Ada."));
  s.on(q4, answer("Still Ada."));
  const a = openaiAgent(t, dir, s, { args: wide });
  const init = await a.init();
  assert.deepEqual(init.agentCapabilities.sessionCapabilities.fork, {});
  const sid = await a.newSession(dir);
  const r1 = await a.prompt(sid, q1);
  const said1 = textOf(r1.updates);
  const { sessionId: fid } = await a.request("session/fork", { sessionId: sid, cwd: dir, mcpServers: [] });
  assert.ok(fid && fid !== sid);

  const r2 = await a.prompt(fid, q2);
  assert.equal(r2.stopReason, "end_turn");
  const said2 = textOf(r2.updates);
  const [req2] = turnRequests(s, q2);
  assert.deepEqual(convo(req2.body), [["user", q1], ["assistant", said1], ["user", q2]], `the fork's request: ${brief(req2.body)}`);

  assert.equal((await a.prompt(sid, q3)).stopReason, "end_turn");
  const [req3] = turnRequests(s, q3);
  assert.deepEqual(convo(req3.body), [["user", q1], ["assistant", said1], ["user", q3]], `the source's request carries the fork's turn: ${brief(req3.body)}`);

  assert.equal((await a.prompt(fid, q4)).stopReason, "end_turn");
  const [req4] = turnRequests(s, q4);
  assert.deepEqual(
    convo(req4.body),
    [["user", q1], ["assistant", said1], ["user", q2], ["assistant", said2], ["user", q4]],
    `the fork's request carries the source's later turn: ${brief(req4.body)}`,
  );
  await a.end();
});

test("fork of a stored session, then the source deleted: a load of the fork still gives the model everything", async (t) => {
  if (scripted(t)) return;
  const dir = tempDir(t);
  const store = join(dir, "sessions.db");
  const s = await modelServer(t);
  const q1 = "Remember 7219.";
  const q2 = "(fork) Which number?";
  const q3 = "(fork, reloaded) And now?";
  s.on(q1, answer("Noted: 7219."));
  s.on(q2, answer("7219."));
  s.on(q3, answer("Still 7219."));
  const a = openaiAgent(t, dir, s, { store, args: wide });
  await a.init();
  const sid = await a.newSession(dir);
  const said1 = textOf((await a.prompt(sid, q1)).updates);
  await a.end();

  // A fresh process: the source is only stored, so the engine rebuilds the fork from its copy.
  const b = openaiAgent(t, dir, s, { store, args: wide });
  await b.init();
  const { sessionId: fid } = await b.request("session/fork", { sessionId: sid, cwd: dir });
  const said2 = textOf((await b.prompt(fid, q2)).updates);
  assert.deepEqual(convo(turnRequests(s, q2)[0].body), [["user", q1], ["assistant", said1], ["user", q2]]);
  await b.request("session/delete", { sessionId: sid });
  await b.end();

  const c = openaiAgent(t, dir, s, { store, args: wide });
  await c.init();
  await c.request("session/load", { sessionId: fid, cwd: dir, mcpServers: [] });
  assert.equal((await c.prompt(fid, q3)).stopReason, "end_turn");
  assert.deepEqual(convo(turnRequests(s, q3)[0].body), [
    ["user", q1],
    ["assistant", said1],
    ["user", q2],
    ["assistant", said2],
    ["user", q3],
  ]);
  await c.end();
});
