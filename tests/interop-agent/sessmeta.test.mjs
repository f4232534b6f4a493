// SPDX-License-Identifier: Apache-2.0
// The unstable session metadata of acp-agent (issue 22 items 2-5) with the official SDK 2.4.0 as the
// client: session/set_title, session/archive and unarchive with session/list's `archived` filter,
// session/status, and systemPrompt on new, load and resume. Every agent message is validated against
// the SDK's schema.unstable.json (lib.mjs's schemaCheck), and the answers are also decoded with the
// SDK's own unstable zod schemas. Bad input: wrong types, unknown session, empty title, bad filter,
// unadvertised prompt mode.
import assert from "node:assert/strict";
import { join } from "node:path";
import * as zu from "../../node_modules/@agentclientprotocol/sdk/dist/v1/unstable/schema/zod.gen.js";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";
import { WebSocket } from "ws";
import { test, acp, tempDir, sdkAgent, rawAgent, textOf, listAll, listeningAgent, wsHeaders } from "./lib.mjs";

async function err(a, method, params) {
  const r = await a.request(method, params);
  assert.ok(r.error, `${method} ${JSON.stringify(params)} answered ${JSON.stringify(r.result)}`);
  return r.error;
}
const ok = async (a, method, params) => {
  const r = await a.request(method, params);
  assert.ok(r.result, `${method} ${JSON.stringify(params)} -> ${JSON.stringify(r.error)}`);
  return r.result;
};

test("initialize advertises title, archive, status and systemPrompt (the SDK's unstable decoder keeps them)", async (t) => {
  const dir = tempDir(t);
  const a = sdkAgent(t, { store: join(dir, "s.db") });
  await a.init();
  const caps = zu.zInitializeResponse.parse(a.initResult).agentCapabilities.sessionCapabilities;
  assert.deepEqual(caps.title, {});
  assert.deepEqual(caps.archive, {});
  assert.deepEqual(caps.status, {});
  assert.deepEqual(caps.systemPrompt, {}); // the echo engine: append only
  assert.deepEqual(caps.list, {}); // archive needs it
  await a.end();
  // --unstable-off takes them away and their methods are unknown
  const b = rawAgent(t, { store: join(dir, "s.db"), args: ["--unstable-off", "title,archive,status,system-prompt"] });
  const init = await b.init();
  const sc = (init.result ?? init).agentCapabilities.sessionCapabilities;
  for (const k of ["title", "archive", "status", "systemPrompt"]) assert.equal(sc[k], undefined, k);
  for (const m of ["session/set_title", "session/archive", "session/unarchive", "session/status"])
    assert.equal((await err(b, m, { sessionId: "x", title: "y" })).code, -32601, m);
  await b.end();
});

test("session/set_title: stored before the answer, normalised, told as session_info_update, listed, kept over a restart", async (t) => {
  const dir = tempDir(t);
  const store = join(dir, "s.db");
  const a = sdkAgent(t, { store });
  await a.init();
  const sid = await a.newSession(dir);
  const r = zu.zSetSessionTitleResponse.parse(await a.request("session/set_title", { sessionId: sid, title: "  Fix\tthe   parser \n" }));
  assert.equal(r.title, "Fix the parser");
  const info = await a.waitFor((m) => m.method === "session/update" && m.params.update.sessionUpdate === "session_info_update");
  assert.equal(info.msg.params.update.title, "Fix the parser");
  assert.equal((await a.request("session/list", {})).sessions.find((s) => s.sessionId === sid).title, "Fix the parser");
  await a.end();
  const b = rawAgent(t, { store });
  await b.init();
  assert.equal((await listAll(b)).find((s) => s.sessionId === sid).title, "Fix the parser");
  // bad input
  const empty = await err(b, "session/set_title", { sessionId: sid, title: " \t\n " });
  assert.equal(empty.code, -32602);
  assert.equal((await err(b, "session/set_title", { sessionId: sid, title: "" })).code, -32602);
  assert.equal((await err(b, "session/set_title", { sessionId: sid, title: 5 })).code, -32602);
  assert.equal((await err(b, "session/set_title", { sessionId: sid, title: null })).code, -32602);
  assert.equal((await err(b, "session/set_title", { sessionId: sid })).code, -32602);
  assert.equal((await err(b, "session/set_title", { sessionId: 12, title: "x" })).code, -32602);
  const unknown = await err(b, "session/set_title", { sessionId: "sess_nope", title: "x" });
  assert.equal(unknown.code, -32002);
  assert.equal(unknown.data?.sessionId, "sess_nope");
  assert.equal((await listAll(b)).find((s) => s.sessionId === sid).title, "Fix the parser");
  await b.end();
});

test("session/archive closes an active session first, hides it from the default list; unarchive; filters and paging", async (t) => {
  const dir = tempDir(t);
  const a = rawAgent(t, { store: join(dir, "s.db") });
  await a.init();
  const ids = [];
  for (let i = 0; i < 60; i++) ids.push(await a.newSession(dir)); // more than one page (50)
  const busy = ids[0];
  // a turn running in the session: archiving cancels it (its response first), then answers {}
  const running = a.request("session/prompt", { sessionId: busy, prompt: [{ type: "text", text: "/sleep 30000" }] });
  const arch = a.request("session/archive", { sessionId: busy });
  const [p, r] = await Promise.all([running, arch]);
  assert.equal(p.result?.stopReason, "cancelled");
  assert.deepEqual(zu.zArchiveSessionResponse.parse(r.result), {});
  assert.ok(a.lines.findIndex((l) => l.msg?.id === p.id) < a.lines.findIndex((l) => l.msg?.id === r.id), "the prompt's answer comes first");
  assert.equal((await err(a, "session/prompt", { sessionId: busy, prompt: [{ type: "text", text: "hi" }] })).code, -32002);
  assert.equal((await ok(a, "session/status", { sessionId: busy })).status, "saved");
  for (const id of ids.slice(1, 30)) await ok(a, "session/archive", { sessionId: id });
  await ok(a, "session/archive", { sessionId: ids[1] }); // idempotent
  // filters, paged: every session once, archived on every one
  const seen = async (params) => {
    const all = await listAll(a, params);
    for (const s of all) assert.equal(typeof zu.zSessionInfo.parse(s).archived, "boolean");
    assert.equal(new Set(all.map((s) => s.sessionId)).size, all.length, "a session listed twice");
    return all;
  };
  const exclude = await seen({});
  assert.equal(exclude.length, 30);
  assert.ok(exclude.every((s) => s.archived === false));
  assert.deepEqual(new Set(exclude.map((s) => s.sessionId)), new Set(ids.slice(30)));
  assert.equal((await seen({ archived: null })).length, 30);
  assert.equal((await seen({ archived: "exclude" })).length, 30);
  const only = await seen({ archived: "only", cwd: dir });
  assert.equal(only.length, 30);
  assert.ok(only.every((s) => s.archived === true));
  assert.equal((await seen({ archived: "include" })).length, 60);
  // unarchive: listed again, not opened
  await ok(a, "session/unarchive", { sessionId: busy });
  assert.deepEqual(await ok(a, "session/unarchive", { sessionId: busy }), {});
  assert.equal((await seen({})).length, 31);
  assert.equal((await ok(a, "session/status", { sessionId: busy })).status, "saved");
  // bad input
  for (const archived of ["all", "_mine", 1, true, {}]) assert.equal((await err(a, "session/list", { archived })).code, -32602, JSON.stringify(archived));
  for (const m of ["session/archive", "session/unarchive"]) {
    const e = await err(a, m, { sessionId: "sess_nope" });
    assert.equal(e.code, -32002);
    assert.equal(e.data?.sessionId, "sess_nope");
    assert.equal((await err(a, m, {})).code, -32602);
    assert.equal((await err(a, m, { sessionId: ["x"] })).code, -32602);
  }
  await a.end();
});

test("session/status: open while active here, saved otherwise, -32002 unknown; no side effect", async (t) => {
  const dir = tempDir(t);
  const a = sdkAgent(t, { store: join(dir, "s.db") });
  await a.init();
  const sid = await a.newSession(dir);
  assert.deepEqual(zu.zSessionStatusResponse.parse(await a.request("session/status", { sessionId: sid })), { status: "open" });
  await a.request("session/close", { sessionId: sid });
  assert.equal((await a.request("session/status", { sessionId: sid })).status, "saved");
  assert.equal((await a.request("session/status", { sessionId: sid })).status, "saved"); // it did not open it
  await assert.rejects(a.request("session/status", { sessionId: "sess_nope" }), (e) => e.code === -32002 && e.data?.sessionId === "sess_nope");
  await assert.rejects(a.request("session/status", { sessionId: 3 }), (e) => e.code === -32602);
  await a.end();
});

test("systemPrompt on new, load and resume: handed to the engine, stored, refused when it cannot be applied", async (t) => {
  const dir = tempDir(t);
  const store = join(dir, "s.db");
  const a = sdkAgent(t, { store });
  await a.init();
  const sp = (mode, ...texts) => ({ mode, content: texts.map((text) => ({ type: "text", text })) });
  zu.zNewSessionRequest.parse({ cwd: dir, mcpServers: [], systemPrompt: sp("append", "x") }); // the SDK's shape
  const sid = await a.newSession(dir, { systemPrompt: sp("append", "Be brief.", "Answer in French.") });
  const said = async (h, s) => textOf((await h.prompt(s, "/system")).updates);
  assert.equal(await said(a, sid), "system prompt (append): Be brief.\n\nAnswer in French.");
  const plain = await a.newSession(dir);
  assert.equal(await said(a, plain), "no system prompt");
  await a.end();
  // another process: a load without one keeps the stored one; a resume with one replaces it
  const b = sdkAgent(t, { store });
  await b.init();
  await b.request("session/load", { sessionId: sid, cwd: dir, mcpServers: [] });
  assert.equal(await said(b, sid), "system prompt (append): Be brief.\n\nAnswer in French.");
  await b.request("session/close", { sessionId: sid });
  await b.request("session/resume", { sessionId: sid, cwd: dir, mcpServers: [], systemPrompt: sp("append", "Short.") });
  assert.equal(await said(b, sid), "system prompt (append): Short.");
  await b.end();
  // refusals: no session created or loaded
  const c = rawAgent(t, { store });
  await c.init();
  const before = (await listAll(c, { archived: "include" })).length;
  const bad = [
    sp("override", "x"), // not advertised by the echo engine
    sp("_custom", "x"),
    { mode: "append", content: [] },
    { mode: "append", content: [{ type: "image", data: "AAAA", mimeType: "image/png" }] },
    { mode: "append", content: [{ type: "text" }] },
    { content: [{ type: "text", text: "x" }] },
    { mode: "append" },
    "Be brief.",
    [],
  ];
  for (const systemPrompt of bad) {
    const e = await err(c, "session/new", { cwd: dir, mcpServers: [], systemPrompt });
    assert.equal(e.code, -32602, JSON.stringify(systemPrompt));
  }
  assert.equal((await listAll(c, { archived: "include" })).length, before, "a refused systemPrompt created a session");
  assert.equal((await err(c, "session/load", { sessionId: plain, cwd: dir, mcpServers: [], systemPrompt: sp("override", "x") })).code, -32602);
  assert.equal((await ok(c, "session/status", { sessionId: plain })).status, "saved");
  await c.end();
});

test("two connections of one --listen agent: status is open for any connection that has it; archive closes it there", async (t) => {
  const dir = tempDir(t);
  const srv = await listeningAgent(t, { store: join(dir, "s.db") });
  const connect = () => {
    const conn = acp.client({ name: "status-test" }).onNotification("session/update", () => {}).connect(createWebSocketStream(srv.url, { WebSocket, headers: wsHeaders() }));
    const req = (m, p) => conn.agent.request(m, p);
    return { req, close: () => conn.close() };
  };
  const c1 = connect();
  const c2 = connect();
  for (const c of [c1, c2]) await c.req("initialize", { protocolVersion: 1, clientCapabilities: {} });
  const { sessionId } = await c1.req("session/new", { cwd: dir, mcpServers: [] });
  assert.equal((await c2.req("session/status", { sessionId })).status, "open");
  assert.equal((await c1.req("session/status", { sessionId })).status, "open");
  await c1.req("session/close", { sessionId });
  assert.equal((await c2.req("session/status", { sessionId })).status, "saved");
  // archived from connection 2 while connection 1 has it active with a turn running: closed there
  // first (its prompt answered cancelled), as session/close would
  const other = (await c1.req("session/new", { cwd: dir, mcpServers: [] })).sessionId;
  const turn = c1.req("session/prompt", { sessionId: other, prompt: [{ type: "text", text: "/sleep 30000" }] });
  // connection 1's requests are served in order: once this is answered its turn is running
  assert.equal((await c1.req("session/status", { sessionId: other })).status, "open");
  assert.deepEqual(await c2.req("session/archive", { sessionId: other }), {});
  assert.equal((await turn).stopReason, "cancelled");
  assert.equal((await c1.req("session/status", { sessionId: other })).status, "saved");
  await assert.rejects(c1.req("session/prompt", { sessionId: other, prompt: [{ type: "text", text: "hi" }] }), (e) => e.code === -32002);
  c1.close();
  c2.close();
  await srv.stop();
});
