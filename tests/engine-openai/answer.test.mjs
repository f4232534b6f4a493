// SPDX-License-Identifier: Apache-2.0
// The openai engine's plain turns (issue 12): what the model streams reaches the client as
// agent_message_chunk (reasoning as agent_thought_chunk), and what the engine sends the model: the
// model name, stream:true, the system prompt, the user's message, max_tokens, the API key as a
// Bearer token (never in the store or the logs), the server's models as the `model` option, and no
// write or terminal tools in mode `ask`.
import { join } from "node:path";
import {
  test, tempDir, assert, modelServer, openaiAgent, scripted, textOf, storeBytes, LIVE, MODEL,
  promptOutcome, toolNames, file, brief, contentText, turnRequests,
} from "./lib.mjs";
import { answer, thinking } from "./fixtures.mjs";

test("plain answer: streamed content arrives as agent_message_chunk, end_turn; the request carries the model and the user's text", async (t) => {
  const dir = tempDir(t);
  const s = await modelServer(t);
  s.on("Say hello.", answer("Hello from the scripted model, split into many small chunks."));
  const a = openaiAgent(t, dir, s);
  await a.init();
  const sid = await a.newSession(dir);
  const r = await a.prompt(sid, "Say hello.");
  assert.equal(r.stopReason, "end_turn");
  const text = textOf(r.updates);
  if (!LIVE) assert.equal(text, "Hello from the scripted model, split into many small chunks.");
  else assert.ok(text.length > 0, "the live model said nothing");
  const chunks = r.updates.filter((u) => u.sessionUpdate === "agent_message_chunk");
  if (!LIVE) assert.ok(chunks.length >= 1);
  const reqs = turnRequests(s, "Say hello.");
  assert.ok(reqs.length >= 1, "the model was never asked");
  const body = reqs[0].body;
  assert.equal(body.model, MODEL);
  assert.equal(body.stream, true, "the engine streams (SSE)");
  assert.equal(body.messages.at(-1).role, "user");
  assert.equal(contentText(body.messages.at(-1).content), "Say hello.");
  assert.ok(!reqs[0].headers.authorization || LIVE, "no key configured, yet an Authorization header was sent");
  await a.end();
});

test("reasoning (llama-server's reasoning_content) arrives as agent_thought_chunk, the answer as agent_message_chunk", async (t) => {
  if (scripted(t)) return;
  const dir = tempDir(t);
  const s = await modelServer(t);
  s.on("Think first.", thinking("The user wants me to think. 2 + 2 is 4.", "It is 4."));
  const a = openaiAgent(t, dir, s);
  await a.init();
  const sid = await a.newSession(dir);
  const r = await a.prompt(sid, "Think first.");
  assert.equal(r.stopReason, "end_turn");
  assert.equal(textOf(r.updates, "agent_thought_chunk"), "The user wants me to think. 2 + 2 is 4.");
  assert.equal(textOf(r.updates), "It is 4.");
  const firstThought = r.updates.findIndex((u) => u.sessionUpdate === "agent_thought_chunk");
  const firstMessage = r.updates.findIndex((u) => u.sessionUpdate === "agent_message_chunk");
  assert.ok(firstThought < firstMessage, "the thought came first, as streamed");
  await a.end();
});

test("system prompt file, max_tokens, and the API key: Bearer to the server, never in the store, stderr or argv", async (t) => {
  if (scripted(t)) return;
  const dir = tempDir(t);
  const s = await modelServer(t);
  s.on("Who are you?", answer("A test model."));
  const key = "sk-test-4f1d9a0e77c2b3aa5e";
  const sys = file(dir, "system.txt", "You are a terse assistant. SYSTEM-MARKER-91b2.");
  const a = openaiAgent(t, dir, s, { apiKey: key, args: ["--system-prompt", sys, "--max-tokens", "333", "--log-level", "info"] });
  await a.init();
  const sid = await a.newSession(dir);
  const r = await a.prompt(sid, "Who are you?");
  assert.equal(r.stopReason, "end_turn");
  const [req] = turnRequests(s, "Who are you?");
  assert.equal(req.headers.authorization, `Bearer ${key}`);
  const sysMsg = req.body.messages.find((m) => m.role === "system" || m.role === "developer");
  assert.ok(sysMsg && contentText(sysMsg.content).includes("SYSTEM-MARKER-91b2"), `no system message from --system-prompt: ${brief(req.body)}`);
  assert.equal(req.body.messages.indexOf(sysMsg), 0, "the system prompt comes first");
  assert.equal(req.body.max_tokens ?? req.body.max_completion_tokens, 333, "--max-tokens is sent as max_tokens");
  await a.end();
  assert.ok(!storeBytes(join(dir, "sessions.db")).includes(key), "the API key was written to the store");
  assert.ok(!a.st.stderr.includes(key), "the API key was logged");
  assert.ok(!a.st.proc.spawnargs.join(" ").includes(key), "the key went through argv");
});

test("an API key variable that is not set: a clear error, not a silent unauthenticated request", async (t) => {
  if (scripted(t)) return;
  const dir = tempDir(t);
  const s = await modelServer(t);
  const a = openaiAgent(t, dir, s, { args: ["--api-key-env", "ACP_TEST_NO_SUCH_VARIABLE_3c1"], env: { ACP_TEST_NO_SUCH_VARIABLE_3c1: null } });
  // Either the program refuses to start (exit status != 0 with a message), or the prompt says so.
  const started = await a.init().then(
    () => true,
    () => false,
  );
  if (!started) {
    const ex = await a.st.exit;
    assert.notEqual(ex.code, 0);
    assert.match(a.st.stderr, /ACP_TEST_NO_SUCH_VARIABLE_3c1/);
    return;
  }
  const sid = await a.newSession(dir);
  const o = await promptOutcome(a, sid, "hi");
  const told = `${textOf(o.updates)} ${o.error?.message ?? ""}`;
  assert.match(told, /ACP_TEST_NO_SUCH_VARIABLE_3c1|api.?key/i, `the user was not told the key is missing: ${told}`);
  await a.end();
});

test("GET /models fills the `model` config option; choosing another model changes the next request", async (t) => {
  if (scripted(t)) return;
  const dir = tempDir(t);
  const s = await modelServer(t, { models: ["m", "qwen3-coder-30b", "gpt-oss-20b"] });
  const a = openaiAgent(t, dir, s);
  await a.init();
  const res = await a.request("session/new", { cwd: dir, mcpServers: [] });
  const opt = (res.configOptions ?? []).find((o) => o.id === "model" || o.category === "model");
  assert.ok(opt, `no model config option: ${JSON.stringify(res.configOptions)}`);
  const values = (opt.options ?? []).flatMap((o) => (o.options ? o.options : [o])).map((o) => o.value);
  for (const m of ["m", "qwen3-coder-30b", "gpt-oss-20b"]) assert.ok(values.includes(m), `model ${m} from GET /models missing: ${JSON.stringify(values)}`);
  assert.equal(opt.currentValue, "m", "the --model is the current value");
  await a.request("session/set_config_option", { sessionId: res.sessionId, configId: opt.id, value: "gpt-oss-20b" });
  s.on("Which model?", answer("This one."));
  await a.prompt(res.sessionId, "Which model?");
  assert.equal(turnRequests(s, "Which model?")[0].body.model, "gpt-oss-20b");
  await a.end();
});

test("mode ask offers the model no write or terminal tools; mode code does", async (t) => {
  if (scripted(t)) return;
  const dir = tempDir(t);
  const s = await modelServer(t);
  const a = openaiAgent(t, dir, s, { fs: { read: () => "x" }, terminal: true });
  await a.init();
  const res = await a.request("session/new", { cwd: dir, mcpServers: [] });
  const modes = (res.modes?.availableModes ?? []).map((m) => m.id);
  assert.ok(modes.includes("ask") && modes.includes("code"), `modes ask and code expected: ${JSON.stringify(modes)}`);
  await a.request("session/set_mode", { sessionId: res.sessionId, modeId: "code" });
  s.on("in code", answer("ok"));
  await a.prompt(res.sessionId, "in code");
  const codeTools = toolNames(turnRequests(s, "in code")[0].body);
  assert.ok(codeTools.some((n) => /write/i.test(n)), `no write tool in mode code: ${codeTools}`);
  assert.ok(codeTools.some((n) => /term|shell|command|exec|run/i.test(n)), `no terminal tool in mode code: ${codeTools}`);
  await a.request("session/set_mode", { sessionId: res.sessionId, modeId: "ask" });
  s.on("in ask", answer("ok"));
  await a.prompt(res.sessionId, "in ask");
  const askTools = toolNames(turnRequests(s, "in ask")[0].body);
  assert.ok(!askTools.some((n) => /write/i.test(n)), `a write tool in mode ask: ${askTools}`);
  assert.ok(!askTools.some((n) => /term|shell|command|exec/i.test(n)), `a terminal tool in mode ask: ${askTools}`);
  assert.ok(askTools.some((n) => /read/i.test(n)), `reading stays allowed in mode ask: ${askTools}`);
  await a.end();
});

test("a title the model proposes after the first exchange arrives as session_info_update", async (t) => {
  if (scripted(t)) return;
  const dir = tempDir(t);
  const s = await modelServer(t);
  s.on("Help me fix the parser in rpc/conn.c", answer("Sure, let us look at it."));
  // Whatever the engine asks for its title (another request) gets this answer.
  s.fallback = answer("Fixing the RPC parser");
  const a = openaiAgent(t, dir, s);
  await a.init();
  const sid = await a.newSession(dir);
  await a.prompt(sid, "Help me fix the parser in rpc/conn.c");
  // The title may come with the turn or just after it: wait for the update (20 s guards a hang,
  // it measures nothing).
  const e = await Promise.race([
    a.waitFor((m) => m.method === "session/update" && m.params?.update?.sessionUpdate === "session_info_update" && typeof m.params.update.title === "string"),
    new Promise((_, reject) => setTimeout(() => reject(new Error(`no session_info_update with a title; the model was asked: ${JSON.stringify(s.chats().map((r) => r.raw.slice(0, 200)))}`)), 20_000).unref()),
  ]);
  assert.match(e.msg.params.update.title, /Fixing the RPC parser/);
  const list = await a.request("session/list", {});
  assert.match(list.sessions.find((x) => x.sessionId === sid)?.title ?? "", /Fixing the RPC parser/);
  await a.end();
});

test("a server without GET /models (404): sessions and prompts work, the model option holds --model", async (t) => {
  if (scripted(t)) return;
  const dir = tempDir(t);
  const s = await modelServer(t);
  s.modelsStatus = 404;
  s.on("Hi there.", answer("Hello."));
  const a = openaiAgent(t, dir, s);
  await a.init();
  const res = await a.request("session/new", { cwd: dir, mcpServers: [] });
  const opt = (res.configOptions ?? []).find((o) => o.id === "model" || o.category === "model");
  if (opt) assert.equal(opt.currentValue, "m");
  const r = await a.prompt(res.sessionId, "Hi there.");
  assert.equal(r.stopReason, "end_turn");
  assert.equal(textOf(r.updates), "Hello.");
  await a.end();
});
