// SPDX-License-Identifier: Apache-2.0
// The openai engine and the unstable session metadata (issue 22 items 2 and 5): a title the client set
// (session/set_title) is never replaced by one the engine generates, and the client's systemPrompt
// reaches the model's system message (append: after the engine's own; override: in its place).
import assert from "node:assert/strict";
import { test, tempDir, modelServer, openaiAgent, scripted, turnRequests } from "./lib.mjs";
import { answer } from "./fixtures.mjs";

const systemOf = (body) => (body.messages ?? []).filter((m) => m.role === "system").map((m) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content))).join("\n");

test("a title set by the client is kept: the engine does not ask the model for one", async (t) => {
  if (scripted(t)) return;
  const dir = tempDir(t);
  const s = await modelServer(t);
  s.on("Help me fix the parser", answer("Sure."));
  s.fallback = answer("Generated title");
  const a = openaiAgent(t, dir, s);
  await a.init();
  assert.deepEqual(a.initResult.agentCapabilities.sessionCapabilities.title, {});
  const sid = await a.newSession(dir);
  const r = await a.request("session/set_title", { sessionId: sid, title: "  My\ttitle  " });
  assert.equal(r.title, "My title");
  await a.prompt(sid, "Help me fix the parser");
  // A second exchange: had the engine proposed a title, its request was sent by now.
  s.on("And the tests", answer("Done."));
  await a.prompt(sid, "And the tests");
  assert.equal(s.chats().filter((c) => /Propose a short title/.test(JSON.stringify(c.body))).length, 0, "the model was asked for a title");
  const list = await a.request("session/list", {});
  assert.equal(list.sessions.find((x) => x.sessionId === sid)?.title, "My title");
  assert.ok(!a.updates(sid).some((u) => u.sessionUpdate === "session_info_update" && u.title === "Generated title"));
  await a.end();
});

test("systemPrompt append follows the engine's instructions; override replaces them; stored for a load", async (t) => {
  if (scripted(t)) return;
  const dir = tempDir(t);
  const s = await modelServer(t);
  s.fallback = answer("ok");
  const a = openaiAgent(t, dir, s);
  await a.init();
  assert.deepEqual(a.initResult.agentCapabilities.sessionCapabilities.systemPrompt, { mode: { override: {} } });
  const sp = (mode, text) => ({ systemPrompt: { mode, content: [{ type: "text", text }] } });
  const s1 = await a.newSession(dir, sp("append", "Always answer in French."));
  await a.prompt(s1, "first");
  const sys1 = systemOf(turnRequests(s, "first")[0].body);
  assert.match(sys1, /Always answer in French\.$/);
  assert.ok(sys1.length > "Always answer in French.".length, "append keeps the engine's own instructions");
  const s2 = await a.newSession(dir, sp("override", "You are a pirate."));
  await a.prompt(s2, "second");
  assert.equal(systemOf(turnRequests(s, "second")[0].body), "You are a pirate.");
  await a.end();

  // Another process: a load without systemPrompt keeps the stored one.
  const b = openaiAgent(t, dir, s);
  await b.init();
  await b.request("session/load", { sessionId: s2, cwd: dir, mcpServers: [] });
  await b.prompt(s2, "third");
  assert.equal(systemOf(turnRequests(s, "third")[0].body), "You are a pirate.");
  await b.end();
});
