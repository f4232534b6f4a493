// SPDX-License-Identifier: Apache-2.0
// A compaction made for a client without session.compaction (issue 12): the client gets no
// compaction updates, but the compaction is stored all the same, so after a restart the context is
// rebuilt from its summary, not from the turns it replaced (agent.h: compaction_* are stored
// whatever the client advertised). The client is told by a thought.
import { join } from "node:path";
import { test, tempDir, assert, modelServer, openaiAgent, scripted, contentText, brief, turnRequests } from "./lib.mjs";
import { answer } from "./fixtures.mjs";

const SUMMARY = "SUMMARY-5e1: the user described project Kestrel.";
const asksSummary = (body) => body.messages.some((m) => /summar/i.test(contentText(m.content)) && !contentText(m.content).startsWith("SUMMARY-5e1"));
const mentions = (body, text) => body.messages.some((m) => contentText(m.content).includes(text));

test("without session.compaction: nothing compaction-shaped reaches the client, the summary is stored and used after a restart", async (t) => {
  if (scripted(t)) return;
  const dir = tempDir(t);
  const store = join(dir, "sessions.db");
  const s = await modelServer(t);
  s.respond = (body) => (asksSummary(body) ? answer(SUMMARY) : undefined);
  s.on("About Kestrel (OLD-TURN-7f2).", answer("Noted.", { usage: { prompt_tokens: 950, completion_tokens: 5 } }));
  s.on("Next question.", answer("Sure."));
  const a = openaiAgent(t, dir, s, { store, args: ["--context-tokens", "1000"] });
  await a.init();
  const sid = await a.newSession(dir);
  await a.prompt(sid, "About Kestrel (OLD-TURN-7f2).");
  const r = await a.prompt(sid, "Next question.");
  assert.ok(s.chats().some((x) => asksSummary(x.body)), "no summary was asked for");
  assert.ok(!a.updates(sid).some((u) => u.sessionUpdate.startsWith("compaction_")), "compaction updates reached a client without session.compaction");
  assert.ok(r.updates.some((u) => u.sessionUpdate === "agent_thought_chunk"), "the client was not told of the compaction");
  await a.end();

  const b = openaiAgent(t, dir, s, { store, args: ["--context-tokens", "1000"] });
  await b.init();
  await b.request("session/load", { sessionId: sid, cwd: dir, mcpServers: [] });
  assert.ok(!b.updates(sid).some((u) => u.sessionUpdate.startsWith("compaction_")), "compaction replayed to a client without session.compaction");
  s.on("After the restart.", answer("Yes."));
  await b.prompt(sid, "After the restart.");
  const body = turnRequests(s, "After the restart.")[0].body;
  assert.ok(mentions(body, "SUMMARY-5e1"), `the rebuilt context lacks the summary: ${brief(body)}`);
  assert.ok(!mentions(body, "OLD-TURN-7f2"), `the rebuilt context has the summarised turn: ${brief(body)}`);
  await b.end();
});
