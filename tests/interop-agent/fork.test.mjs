// SPDX-License-Identifier: Apache-2.0
// session/fork (unstable, issue 22; schema.unstable.json ForkSessionRequest/Response,
// docs/rfds/session-fork.mdx) of acp-agent with the official SDK 2.4.0 as the client: advertised as
// sessionCapabilities.fork {}, answered with a new sessionId (the result checked against the
// unstable schema by the harness); the fork's history is the source's; prompting the fork never
// changes the source; a delete of either leaves the other whole; a source open in another agent
// process (its lease held there) forks all the same; -32002 for an unknown source, -32602 for
// bad params; with --unstable-off fork: not advertised and -32601. Also run on PostgreSQL
// (tests/pg, agent-on-pg.sh).
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import * as unstable from "@agentclientprotocol/sdk/unstable";
import { test, tempDir, sdkAgent, textOf, AGENT, TRANSPORT } from "./lib.mjs";

const listIds = async (a) => (await a.request("session/list", {})).sessions.map((x) => x.sessionId);

// The texts a session/load replays (user and agent chunks in order).
async function replayed(a, sid, cwd) {
  const before = a.updates(sid).length;
  await a.request("session/load", { sessionId: sid, cwd, mcpServers: [] });
  return a
    .updates(sid)
    .slice(before)
    .filter((u) => u.sessionUpdate === "user_message_chunk" || u.sessionUpdate === "agent_message_chunk")
    .map((u) => `${u.sessionUpdate === "user_message_chunk" ? ">" : ""}${u.content.text}`);
}

const code = async (p) => {
  try {
    await p;
    return 0;
  } catch (e) {
    return e.code;
  }
};

test("session/fork: a new session with the source's history; the two never change each other", async (t) => {
  const dir = tempDir(t);
  const a = sdkAgent(t, { store: join(dir, "sessions.db") });
  const init = await a.init();
  assert.deepEqual(init.agentCapabilities.sessionCapabilities.fork, {});
  const src = await a.newSession(dir);
  const one = await a.prompt(src, "one");
  assert.equal(one.stopReason, "end_turn");
  const said = textOf(one.updates);

  const r = await a.request("session/fork", { sessionId: src, cwd: dir, mcpServers: [] });
  assert.ok(r.sessionId && r.sessionId !== src, JSON.stringify(r));
  const fid = r.sessionId;
  const two = await a.prompt(fid, "two");
  assert.equal(two.stopReason, "end_turn");
  assert.equal((await a.prompt(src, "three")).stopReason, "end_turn");

  assert.deepEqual(await replayed(a, fid, dir), [">one", said, ">two", textOf(two.updates)]);
  const s = await replayed(a, src, dir);
  assert.ok(s.includes(">one") && s.includes(">three") && !s.includes(">two"), JSON.stringify(s));

  // Both listed, with their own cwd.
  const listed = await listIds(a);
  assert.ok(listed.includes(src) && listed.includes(fid));

  // Deleting the source leaves the fork whole, and a fork of the fork outlives it too.
  const { sessionId: g } = await a.request("session/fork", { sessionId: fid, cwd: dir });
  await a.request("session/delete", { sessionId: src });
  assert.deepEqual((await replayed(a, fid, dir)).filter((x) => x.startsWith(">")), [">one", ">two"]);
  await a.request("session/delete", { sessionId: fid });
  assert.deepEqual((await replayed(a, g, dir)).filter((x) => x.startsWith(">")), [">one", ">two"]);
  await a.end();
});

test("session/fork: unknown source -32002, bad params -32602, nothing made", async (t) => {
  const dir = tempDir(t);
  const a = sdkAgent(t, { store: join(dir, "sessions.db") });
  await a.init();
  const src = await a.newSession(dir);
  let err = await a.request("session/fork", { sessionId: "sess_nope", cwd: dir }).catch((e) => e);
  assert.equal(err.code, -32002);
  assert.equal(err.data?.sessionId, "sess_nope");
  assert.equal(await code(a.ctx.request("session/fork", { sessionId: src })), -32602);
  assert.equal(await code(a.ctx.request("session/fork", { sessionId: src, cwd: "relative" })), -32602);
  assert.equal(await code(a.ctx.request("session/fork", { sessionId: src, cwd: dir, additionalDirectories: ["rel"] })), -32602);
  assert.deepEqual(await listIds(a), [src]);
  await a.end();
});

test("session/fork of a session another agent process has open (its lease held there)", async (t) => {
  const dir = tempDir(t);
  const store = join(dir, "sessions.db");
  const a = sdkAgent(t, { store });
  await a.init();
  const src = await a.newSession(dir);
  await a.prompt(src, "held by A");
  const b = sdkAgent(t, { store });
  await b.init();
  const { sessionId: fid } = await b.request("session/fork", { sessionId: src, cwd: dir });
  await b.prompt(fid, "in B's fork");
  await a.prompt(src, "A goes on");
  assert.deepEqual((await replayed(b, fid, dir)).filter((x) => x.startsWith(">")), [">held by A", ">in B's fork"]);
  await b.end();
  await a.end();
});

test("--unstable-off fork: not advertised, session/fork is -32601", async (t) => {
  const dir = tempDir(t);
  const a = sdkAgent(t, { store: join(dir, "sessions.db"), args: ["--unstable-off", "fork"] });
  const init = await a.init();
  assert.equal(init.agentCapabilities.sessionCapabilities.fork, undefined);
  const src = await a.newSession(dir);
  assert.equal(await code(a.ctx.request("session/fork", { sessionId: src, cwd: dir })), -32601);
  await a.end();
});

test("the SDK's unstable client (its AGENT_METHODS.session_fork, its own response parser) forks on acp-agent", async (t) => {
  if (TRANSPORT !== "stdio") return t.skip("stdio only: the SDK's ndJsonStream on the agent's pipes");
  const dir = tempDir(t);
  const p = spawn(AGENT, ["--store", join(dir, "sessions.db")], { stdio: ["pipe", "pipe", "inherit"] });
  const exited = new Promise((r) => p.on("exit", (code, sig) => r({ code, sig })));
  t.after(() => p.kill("SIGKILL"));
  const said = [];
  const app = unstable.client({ name: "fork-test" }).onNotification("session/update", ({ params }) => {
    if (params.update.sessionUpdate === "agent_message_chunk") said.push([params.sessionId, params.update.content.text]);
  });
  const conn = app.connect(unstable.ndJsonStream(Writable.toWeb(p.stdin), Readable.toWeb(p.stdout)));
  const agent = conn.agent;
  const init = await agent.request(unstable.AGENT_METHODS.initialize, { protocolVersion: 1, clientCapabilities: {} });
  assert.deepEqual(init.agentCapabilities.sessionCapabilities.fork, {});
  const { sessionId: src } = await agent.request(unstable.AGENT_METHODS.session_new, { cwd: dir, mcpServers: [] });
  await agent.request(unstable.AGENT_METHODS.session_prompt, { sessionId: src, prompt: [{ type: "text", text: "hi" }] });
  const r = await agent.request(unstable.AGENT_METHODS.session_fork, { sessionId: src, cwd: dir, mcpServers: [] });
  assert.match(r.sessionId, /^sess_/);
  assert.equal(r.modes?.currentModeId, "code");
  await agent.request(unstable.AGENT_METHODS.session_prompt, { sessionId: r.sessionId, prompt: [{ type: "text", text: "in the fork" }] });
  assert.ok(said.some(([sid, text]) => sid === r.sessionId && /in the fork/.test(text)), JSON.stringify(said));
  p.stdin.end();
  assert.deepEqual(await exited, { code: 0, sig: null });
  conn.close?.();
});

test("session/fork and systemPrompt: the fork keeps the source's unless it gives its own; a bad one makes no fork", async (t) => {
  const dir = tempDir(t);
  const a = sdkAgent(t, { store: join(dir, "sessions.db") });
  await a.init();
  const said = async (s) => textOf((await a.prompt(s, "/system")).updates);
  const sp = (text) => ({ mode: "append", content: [{ type: "text", text }] });
  const src = await a.newSession(dir, { systemPrompt: sp("Be brief.") });
  const { sessionId: inherits } = await a.request("session/fork", { sessionId: src, cwd: dir });
  assert.equal(await said(inherits), "system prompt (append): Be brief.");
  const { sessionId: own } = await a.request("session/fork", { sessionId: src, cwd: dir, systemPrompt: sp("Be thorough.") });
  assert.equal(await said(own), "system prompt (append): Be thorough.");
  assert.equal(await said(src), "system prompt (append): Be brief.");
  const before = (await a.request("session/list", {})).sessions.length;
  assert.equal(await code(a.ctx.request("session/fork", { sessionId: src, cwd: dir, systemPrompt: { mode: "append", content: [] } })), -32602);
  assert.equal((await a.request("session/list", {})).sessions.length, before);
  // A fresh agent process: the forks' prompts were stored with them.
  await a.end();
  const b = sdkAgent(t, { store: join(dir, "sessions.db") });
  await b.init();
  await b.request("session/resume", { sessionId: own, cwd: dir });
  assert.equal(textOf((await b.prompt(own, "/system")).updates), "system prompt (append): Be thorough.");
  await b.end();
});
