// SPDX-License-Identifier: Apache-2.0
// The openai engine's context window (issue 12): usage_update reports the tokens used against
// --context-tokens; near the window the engine has the model summarise the older turns, records a
// compaction entity (stored and replayed to clients with session.compaction), and from then on sends
// the summary instead of those turns, also after a restart.
import { join } from "node:path";
import { test, tempDir, assert, modelServer, openaiAgent, scripted, contentText, brief, turnRequests } from "./lib.mjs";
import { answer } from "./fixtures.mjs";

const SUMMARY = "SUMMARY-7c3: the user introduced the project Zephyr and asked about its parser.";
// A summarisation request is recognised by what any summarising prompt says ("summar...") in its
// last message (a conversation request after the compaction carries the summary, not the ask).
const asksSummary = (body) => {
  const last = (body?.messages ?? []).at(-1);
  return !!last && /summar/i.test(contentText(last.content)) && !contentText(last.content).includes("SUMMARY-7c3");
};
const mentions = (body, text) => (body?.messages ?? []).some((m) => contentText(m.content).includes(text));

test("near --context-tokens: usage_update against the window, a model-written summary replaces the older turns, stored and used after a restart", async (t) => {
  if (scripted(t)) return;
  const dir = tempDir(t);
  const store = join(dir, "sessions.db");
  const s = await modelServer(t);
  const q1 = "Let me tell you about project Zephyr (OLD-TURN-MARKER).";
  const q2 = "Now, about its parser.";
  const q3 = "Anything else?";
  s.respond = (body) => (asksSummary(body) ? answer(SUMMARY, { usage: { prompt_tokens: 300, completion_tokens: 20 } }) : undefined);
  // Each answer reports a prompt that nearly fills the 1,000-token window.
  s.on(q1, answer("Zephyr sounds interesting.", { usage: { prompt_tokens: 940, completion_tokens: 8 } }));
  s.on(q2, answer("The parser is sans-I/O.", { usage: { prompt_tokens: 960, completion_tokens: 8 } }));
  s.on(q3, answer("No.", { usage: { prompt_tokens: 120, completion_tokens: 2 } }));
  const caps = { session: { compaction: {} } };
  const a = openaiAgent(t, dir, s, { store, args: ["--context-tokens", "1000"], clientCapabilities: caps });
  await a.init();
  const sid = await a.newSession(dir);
  await a.prompt(sid, q1);
  const usage = a.updates(sid).filter((u) => u.sessionUpdate === "usage_update");
  assert.ok(usage.length >= 1, "no usage_update");
  assert.equal(usage.at(-1).size, 1000, "usage_update.size is --context-tokens");
  assert.ok(usage.at(-1).used >= 900, `usage_update.used ${usage.at(-1).used} does not reflect the server's usage`);
  await a.prompt(sid, q2);
  await a.prompt(sid, q3);
  const summaryReq = s.chats().find((r) => asksSummary(r.body));
  assert.ok(summaryReq, "the engine never asked the model for a summary near the window");
  assert.ok(mentions(summaryReq.body, "OLD-TURN-MARKER"), "the summary request did not carry the older turns");
  const comp = a.updates(sid).filter((u) => u.sessionUpdate === "compaction_update" || u.sessionUpdate === "compaction_summary_chunk");
  assert.ok(comp.length >= 1, "no compaction entity reached a client with session.compaction");
  const after = s.chats().filter((r) => r.at >= summaryReq.at && !asksSummary(r.body));
  assert.ok(after.length >= 1, "no conversation request after the summary");
  const last = after.at(-1).body;
  assert.ok(mentions(last, "SUMMARY-7c3"), `the summary is not in the context after compaction: ${brief(last)}`);
  assert.ok(!mentions(last, "OLD-TURN-MARKER"), `the summarised turn is still sent verbatim: ${brief(last)}`);
  await a.end();

  // After a restart the context is rebuilt from the compaction, not from the older turns.
  const b = openaiAgent(t, dir, s, { store, args: ["--context-tokens", "1000"], clientCapabilities: caps });
  await b.init();
  await b.request("session/load", { sessionId: sid, cwd: dir, mcpServers: [] });
  assert.ok(b.updates(sid).some((u) => u.sessionUpdate === "compaction_update"), "the compaction was not replayed");
  s.on("After restart?", answer("Yes."));
  await b.prompt(sid, "After restart?");
  const body = turnRequests(s, "After restart?")[0].body;
  assert.ok(mentions(body, "SUMMARY-7c3"), `the rebuilt context lacks the summary: ${brief(body)}`);
  assert.ok(!mentions(body, "OLD-TURN-MARKER"), `the rebuilt context has the summarised turn: ${brief(body)}`);
  await b.end();
});
