// SPDX-License-Identifier: Apache-2.0
// Prompt turns of acp-agent's echo engine with the official SDK as the client: echo, /stream, /title,
// /plan, /write with and without the client's fs, permission outcomes, a 20 MB prompt, two sessions at
// once. Spec: prompt-turn.mdx, cancellation.mdx, file-system.mdx, tool-calls.mdx (REQUIREMENTS §6.9,
// §6.10, §8, §9.1-9.3); issue 3 "acp-agent".
import assert from "node:assert/strict";
import { join } from "node:path";
import { existsSync, readFileSync } from "node:fs";
import { test, tempDir, makeDir, sdkAgent, rawAgent, textOf, normalize, userMsg, listAll, clockPast, ISO8601 } from "./lib.mjs";

const chunks = (updates) => updates.filter((u) => u.sessionUpdate === "agent_message_chunk");
const failedTool = (updates) =>
  updates.some((u) => (u.sessionUpdate === "tool_call" || u.sessionUpdate === "tool_call_update") && u.status === "failed");

test("echo: chunks concatenate to the prompt text, end_turn, every update before the response", async (t) => {
  const dir = tempDir(t);
  const a = sdkAgent(t, { store: join(dir, "sessions.db") });
  await a.init();
  const sid = await a.newSession(dir);
  for (const text of ["hello", "héllo wörld 🌍\nsecond line\ttab \"quoted\" \\ back", "x".repeat(100_000)]) {
    const r = await a.prompt(sid, text);
    assert.equal(r.stopReason, "end_turn");
    assert.equal(textOf(r.updates), text);
    const ids = new Set(chunks(r.updates).map((u) => u.messageId));
    assert.equal(ids.size, 1, "one message, one messageId");
  }
  const n = a.updates(sid).length;
  await a.request("session/list", {});
  assert.equal(a.updates(sid).length, n, "updates arrived after the prompt response");
  await a.end();
});

test("prompt: resource_link accepted (baseline); unadvertised image -> -32602; unknown session -> error", async (t) => {
  const dir = tempDir(t);
  const a = rawAgent(t, { store: join(dir, "sessions.db") });
  const caps = (await a.init()).agentCapabilities;
  const sid = await a.newSession(dir);
  const rl = await a.request("session/prompt", {
    sessionId: sid,
    prompt: [
      { type: "text", text: "see " },
      { type: "resource_link", uri: "file:///etc/hosts", name: "hosts" },
    ],
  });
  assert.equal(rl.result?.stopReason, "end_turn", JSON.stringify(rl));
  if (!caps.promptCapabilities?.image) {
    const im = await a.request("session/prompt", { sessionId: sid, prompt: [{ type: "image", data: "AAAA", mimeType: "image/png" }] });
    assert.equal(im.error?.code, -32602, JSON.stringify(im));
  }
  const un = await a.prompt("sess_no_such_session_000000000000", "hi");
  assert.ok(un.error, JSON.stringify(un));
  await a.end();
});

test("/stream N BYTES: exactly N chunks of BYTES ASCII bytes, one messageId, all before the response (raw)", async (t) => {
  const dir = tempDir(t);
  const a = rawAgent(t, { store: join(dir, "sessions.db") });
  await a.init();
  const sid = await a.newSession(dir);
  for (const [n, bytes] of [
    [50, 1000],
    [2000, 1],
    [1, 65536],
  ]) {
    const from = a.lines.length;
    const resp = await a.prompt(sid, `/stream ${n} ${bytes}`);
    assert.equal(resp.result?.stopReason, "end_turn");
    const respSeq = a.lines.findIndex((l) => l.msg === resp);
    await a.request("session/list", {});
    const got = a.updatesOf(sid, from).filter((e) => e.msg.params.update.sessionUpdate === "agent_message_chunk");
    assert.equal(got.length, n, `/stream ${n} ${bytes} sent ${got.length} chunks`);
    for (const e of got) {
      const text = e.msg.params.update.content.text;
      assert.equal(Buffer.byteLength(text, "utf8"), bytes);
      assert.match(text, /^[\x20-\x7e]*$/, "not printable ASCII");
      assert.ok(e.seq < respSeq, "a chunk was written after the prompt response");
    }
    assert.equal(new Set(got.map((e) => e.msg.params.update.messageId)).size, 1, "more than one messageId");
    assert.equal(typeof got[0].msg.params.update.messageId, "string");
  }
  await a.end();
});

test("bad numbers in /stream and /sleep: an agent message says what is wrong and the turn ends at once (issue 13)", async (t) => {
  // Each of these wrapped to a huge unsigned count (strtoul, sscanf %llu) and never ended.
  const dir = tempDir(t);
  const a = rawAgent(t, { store: join(dir, "sessions.db") });
  await a.init();
  const sid = await a.newSession(dir);
  for (const [text, said] of [
    ["/stream -1 10", "/stream: N: '-1' is out of range: 0 to 10000000"],
    ["/stream 99999999999999999999 1", "/stream: N: '99999999999999999999' is out of range: 0 to 10000000"],
    ["/sleep -5", "/sleep: MS: '-5' is out of range: 0 to 86400000"],
    ["/sleep 18446744073709551611", "/sleep: MS: '18446744073709551611' is out of range: 0 to 86400000"],
    ["/sleep 1e9", "/sleep: MS: '1e9' is not a whole number"],
    ["/stream 10x 1", "/stream: N: '10x' is not a whole number"],
    ["/stream 1 -1", "/stream: BYTES: '-1' is out of range: 0 to 67108864"],
    ["/stream 1 67108865", "/stream: BYTES: '67108865' is out of range: 0 to 67108864"],
    ["/stream 10000000 200", "/stream: N x BYTES is 2000000000 bytes, over the 1073741824 a stream may send"],
    ["/stream 3", "usage: /stream N BYTES"],
    ["/stream 3 4 5", "usage: /stream N BYTES"],
    ["/sleep", "usage: /sleep MS"],
    ["/sleep 5 5", "usage: /sleep MS"],
  ]) {
    const from = a.lines.length;
    const started = Date.now();
    const resp = await a.prompt(sid, text);
    assert.equal(resp.result?.stopReason, "end_turn", `${text}: ${JSON.stringify(resp)}`);
    assert.ok(Date.now() - started < 5000, `${text} took ${Date.now() - started} ms`);
    const msgs = a.updatesOf(sid, from).filter((e) => e.msg.params.update.sessionUpdate === "agent_message_chunk");
    assert.deepEqual(msgs.map((e) => e.msg.params.update.content.text), [said], text);
  }
  // The edges still work: zero chunks, zero bytes, no wait, and the largest stream's shape.
  for (const text of ["/stream 0 10", "/stream 2 0", "/sleep 0", "/sleep 00"]) {
    const resp = await a.prompt(sid, text);
    assert.equal(resp.result?.stopReason, "end_turn", `${text}: ${JSON.stringify(resp)}`);
  }
  await a.end();
});

test("/title: session_info_update, shown by session/list, persisted across a restart", async (t) => {
  const dir = tempDir(t);
  const store = join(dir, "sessions.db");
  const a = sdkAgent(t, { store });
  await a.init();
  const sid = await a.newSession(dir);
  const r = await a.prompt(sid, "/title My Fancy Title");
  const info = r.updates.filter((u) => u.sessionUpdate === "session_info_update");
  assert.equal(info.length, 1, JSON.stringify(r.updates));
  assert.equal(info[0].title, "My Fancy Title");
  if (info[0].updatedAt != null) assert.match(info[0].updatedAt, ISO8601);
  const s = (await a.request("session/list", {})).sessions.find((x) => x.sessionId === sid);
  assert.equal(s.title, "My Fancy Title");
  assert.match(s.updatedAt, ISO8601);
  await a.end();
  const b = rawAgent(t, { store });
  await b.init();
  const s2 = (await listAll(b)).find((x) => x.sessionId === sid);
  assert.equal(s2.title, "My Fancy Title");
  await b.end();
});

test("a prompt is activity: updatedAt moves forward and the session goes to the front of session/list", async (t) => {
  const dir = tempDir(t);
  const a = sdkAgent(t, { store: join(dir, "sessions.db") });
  await a.init();
  const s1 = await a.newSession(dir);
  const s2 = await a.newSession(dir);
  const l1 = (await a.request("session/list", {})).sessions;
  const t1 = l1.find((s) => s.sessionId === s1).updatedAt;
  await clockPast(l1.map((s) => s.updatedAt).sort().at(-1));
  await a.prompt(s1, "activity");
  const l2 = (await a.request("session/list", {})).sessions;
  assert.equal(l2[0].sessionId, s1, "the prompted session is not newest");
  assert.ok(Date.parse(l2[0].updatedAt) > Date.parse(t1), `updatedAt did not move: ${t1} -> ${l2[0].updatedAt}`);
  assert.equal(l2[1].sessionId, s2);
  await a.end();
});

test("/plan: a plan of 3 entries with valid priority and status", async (t) => {
  const dir = tempDir(t);
  const a = sdkAgent(t, { store: join(dir, "sessions.db") });
  await a.init();
  const sid = await a.newSession(dir);
  const r = await a.prompt(sid, "/plan");
  assert.equal(r.stopReason, "end_turn");
  const plans = r.updates.filter((u) => u.sessionUpdate === "plan");
  assert.ok(plans.length >= 1);
  for (const p of plans) {
    assert.equal(p.entries.length, 3, "each plan update carries the complete list (agent-plan.mdx MUST)");
    for (const e of p.entries) {
      assert.equal(typeof e.content, "string");
      assert.ok(["high", "medium", "low"].includes(e.priority));
      assert.ok(["pending", "in_progress", "completed"].includes(e.status));
    }
  }
  await a.end();
});

function writeFixture(t) {
  const base = tempDir(t);
  return {
    base,
    cwd: makeDir(join(base, "proj")),
    out: makeDir(join(base, "outside")),
    store: join(base, "sessions.db"),
  };
}

test("/write inside the root set: permission asked, then local write (no client fs)", async (t) => {
  const f = writeFixture(t);
  const a = sdkAgent(t, { store: f.store });
  await a.init();
  const sid = await a.newSession(f.cwd);
  const r = await a.prompt(sid, "/write new.txt written-locally-42");
  assert.equal(r.stopReason, "end_turn");
  assert.equal(a.permissions.length, 1, "no session/request_permission before the write");
  assert.equal(a.permissions[0].sessionId, sid);
  assert.equal(typeof a.permissions[0].toolCall.toolCallId, "string");
  const kinds = a.permissions[0].options.map((o) => o.kind);
  assert.ok(kinds.some((k) => k.startsWith("allow")) && kinds.some((k) => k.startsWith("reject")), `options: ${kinds}`);
  assert.equal(readFileSync(join(f.cwd, "new.txt"), "utf8"), "written-locally-42");
  assert.equal(a.fsWrites.length, 0, "fs/write_text_file called although the client did not offer it");
  assert.ok(!failedTool(r.updates));
  // the tool call is reported (tool-calls.mdx SHOULD) and ends completed
  const tc = r.updates.filter((u) => u.sessionUpdate === "tool_call" || u.sessionUpdate === "tool_call_update");
  assert.ok(tc.length > 0, "no tool_call reported");
  assert.equal(tc.at(-1).status, "completed");
  await a.end();
});

test("/write with the client offering fs: fs/write_text_file with the absolute path, disk untouched", async (t) => {
  const f = writeFixture(t);
  const a = sdkAgent(t, { store: f.store, fs: { read: () => "" } });
  await a.init();
  const sid = await a.newSession(f.cwd);
  const r = await a.prompt(sid, "/write sub.txt via-client-77");
  assert.equal(r.stopReason, "end_turn");
  assert.equal(a.permissions.length, 1);
  assert.deepEqual(
    a.fsWrites.map((w) => [w.sessionId, w.path, w.content]),
    [[sid, join(f.cwd, "sub.txt"), "via-client-77"]],
  );
  assert.ok(!existsSync(join(f.cwd, "sub.txt")), "wrote locally although the client offers fs");
  await a.end();
});

test("/write permission denied or cancelled: nothing written", async (t) => {
  const f = writeFixture(t);
  for (const permission of ["deny", "cancel"]) {
    for (const fs of [false, { read: () => "" }]) {
      const a = sdkAgent(t, { store: f.store, permission, fs });
      await a.init();
      const sid = await a.newSession(f.cwd);
      const r = await a.prompt(sid, `/write denied-${permission}.txt nope`);
      assert.ok(r.stopReason, "the turn must still end");
      assert.equal(a.permissions.length, 1);
      assert.ok(!existsSync(join(f.cwd, `denied-${permission}.txt`)), `written although permission was ${permission}`);
      assert.equal(a.fsWrites.length, 0);
      const tc = r.updates.filter((u) => u.sessionUpdate === "tool_call" || u.sessionUpdate === "tool_call_update");
      assert.ok(tc.length === 0 || tc.at(-1).status !== "completed", "tool call reported completed although refused");
      await a.end();
    }
  }
});

test("/write outside the root set (absolute, .., symlinked dir): refused, nothing written", async (t) => {
  const f = writeFixture(t);
  const { symlinkSync } = await import("node:fs");
  symlinkSync(f.out, join(f.cwd, "escape"));
  for (const fs of [false, { read: () => "" }]) {
    const a = sdkAgent(t, { store: f.store, fs });
    await a.init();
    const sid = await a.newSession(f.cwd);
    for (const path of [join(f.out, "a.txt"), "../outside/b.txt", "escape/c.txt"]) {
      const r = await a.prompt(sid, `/write ${path} escaped`);
      assert.ok(failedTool(r.updates), `${path}: no failed tool_call`);
    }
    assert.deepEqual(a.fsWrites, []);
    for (const n of ["a.txt", "b.txt", "c.txt"]) assert.ok(!existsSync(join(f.out, n)), `${n} written outside the root set`);
    await a.end();
  }
});

test("a 20 MB prompt is echoed back whole, and replays whole after a restart", async (t) => {
  const dir = tempDir(t);
  const store = join(dir, "sessions.db");
  const a = sdkAgent(t, { store });
  await a.init();
  const sid = await a.newSession(dir);
  let big = "";
  const unit = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_"; // 64 bytes
  big = unit.repeat((20 << 20) / 64);
  const r = await a.prompt(sid, big);
  assert.equal(r.stopReason, "end_turn");
  const echoed = textOf(r.updates);
  assert.equal(echoed.length, big.length);
  assert.ok(echoed === big, "echo differs from the prompt");
  await a.end();
  const b = sdkAgent(t, { store });
  await b.init();
  await b.request("session/load", { sessionId: sid, cwd: dir, mcpServers: [] });
  const n = normalize(b.updates(sid));
  assert.equal(n.length, 2);
  assert.ok(n[0].sessionUpdate === "user_message_chunk" && n[0].content.text === big, "user message not replayed whole");
  assert.ok(n[1].sessionUpdate === "agent_message_chunk" && n[1].content.text === big, "agent message not replayed whole");
  await b.end();
});

test("two sessions at once: a prompt completes while another session sleeps; two streams stay separate", async (t) => {
  const dir = tempDir(t);
  const a = sdkAgent(t, { store: join(dir, "sessions.db") });
  await a.init();
  const s1 = await a.newSession(dir);
  const s2 = await a.newSession(dir);
  const sleeping = a.prompt(s1, "/sleep 600000");
  let settled = false;
  sleeping.then(() => (settled = true));
  const r2 = await a.prompt(s2, "while s1 sleeps");
  assert.equal(textOf(r2.updates), "while s1 sleeps");
  const st = await a.prompt(s2, "/stream 20 10");
  assert.equal(chunks(st.updates).length, 20);
  assert.equal(settled, false, "the sleeping prompt ended by itself");
  await a.ctx.notify("session/cancel", { sessionId: s1 });
  assert.equal((await sleeping).stopReason, "cancelled");
  // two concurrent streams: each gets exactly its own chunks
  const [x, y] = await Promise.all([a.prompt(s1, "/stream 3000 7"), a.prompt(s2, "/stream 2000 9")]);
  assert.equal(chunks(x.updates).length, 3000);
  assert.equal(chunks(y.updates).length, 2000);
  assert.ok(chunks(x.updates).every((u) => u.content.text.length === 7));
  assert.ok(chunks(y.updates).every((u) => u.content.text.length === 9));
  const order = a.all.filter((e) => e.update.sessionUpdate === "agent_message_chunk").slice(-5000).map((e) => e.sessionId);
  let switches = 0;
  for (let i = 1; i < order.length; i++) if (order[i] !== order[i - 1]) switches++;
  t.diagnostic(`interleaving: the two streams switched ${switches} times on stdout`);
  await a.end();
});

test("user messages are stored as the client sent them (replay compares exactly)", async (t) => {
  const dir = tempDir(t);
  const store = join(dir, "sessions.db");
  const a = sdkAgent(t, { store });
  await a.init();
  const sid = await a.newSession(dir);
  const texts = ["plain", "/stream 2 3", "émoji 🎉 and \u2028 sep"];
  const expected = [];
  for (const text of texts) {
    const r = await a.prompt(sid, text);
    expected.push(userMsg(text), ...r.updates);
  }
  await a.end();
  const b = sdkAgent(t, { store });
  await b.init();
  await b.request("session/load", { sessionId: sid, cwd: dir, mcpServers: [] });
  assert.deepEqual(normalize(b.updates(sid)), normalize(expected));
  await b.end();
});

test("session/cancel mid-/stream: cancelled, and no update of the turn after the response (raw)", async (t) => {
  const dir = tempDir(t);
  const a = rawAgent(t, { store: join(dir, "sessions.db") });
  await a.init();
  const sid = await a.newSession(dir);
  const from = a.lines.length;
  const p = a.prompt(sid, "/stream 1000000 10");
  await a.waitFor(() => a.updatesOf(sid, from).length >= 100, from);
  a.notify("session/cancel", { sessionId: sid });
  const r = await p;
  assert.equal(r.result?.stopReason, "cancelled", JSON.stringify(r));
  const respSeq = a.lines.findIndex((l) => l.msg === r);
  await a.request("session/list", {});
  assert.equal(a.updatesOf(sid, respSeq).length, 0, "updates of the cancelled turn after its response");
  assert.ok(a.updatesOf(sid, from).length < 1000000, "the stream was not stopped");
  const next = await a.prompt(sid, "next");
  assert.equal(next.result?.stopReason, "end_turn");
  await a.end();
});

test("session/cancel while a permission request is pending: prompt cancelled, nothing written", async (t) => {
  const dir = tempDir(t);
  const a = rawAgent(t, { store: join(dir, "sessions.db"), permission: "hold" });
  await a.init();
  const sid = await a.newSession(dir);
  const p = a.prompt(sid, "/write pending.txt data");
  const req = await a.waitFor((m) => m.method === "session/request_permission");
  assert.equal(req.msg.params.sessionId, sid);
  a.notify("session/cancel", { sessionId: sid });
  // prompt-turn.mdx: the Client MUST answer pending permission requests with "cancelled"
  a.reply(req.msg.id, { outcome: { outcome: "cancelled" } });
  const r = await p;
  assert.equal(r.result?.stopReason, "cancelled", JSON.stringify(r));
  assert.ok(!existsSync(join(dir, "pending.txt")));
  const cr = a.lines.filter((l) => l.msg.method === "$/cancel_request");
  t.diagnostic(`agent sent $/cancel_request: ${JSON.stringify(cr.map((l) => l.msg.params))} (permission request id ${req.msg.id})`);
  for (const l of cr) assert.deepEqual(l.msg.params.requestId, req.msg.id, "$/cancel_request for a request the agent never sent");
  await a.end();
});

test("overlapping prompts in one session: each request answered exactly once", async (t) => {
  const dir = tempDir(t);
  const a = rawAgent(t, { store: join(dir, "sessions.db") });
  await a.init();
  const sid = await a.newSession(dir);
  const p1 = a.prompt(sid, "/sleep 600000");
  const p2 = a.prompt(sid, "second while the first runs");
  await a.request("session/list", {});
  a.notify("session/cancel", { sessionId: sid });
  const [r1, r2] = await Promise.all([p1, p2]);
  assert.equal(r1.result?.stopReason, "cancelled");
  assert.ok(r2.error || ["end_turn", "cancelled"].includes(r2.result?.stopReason), JSON.stringify(r2));
  await a.request("session/list", {});
  for (const id of [r1.id, r2.id]) assert.equal(a.lines.filter((l) => l.msg.id === id && !l.msg.method).length, 1, `request ${id} answered twice`);
  t.diagnostic(`second prompt: ${JSON.stringify(r2.error ?? r2.result)}`);
  await a.end();
});

test("client fs capabilities are honoured one by one: only what was advertised is called", async (t) => {
  const f = writeFixture(t);
  const { writeFileSync } = await import("node:fs");
  writeFileSync(join(f.cwd, "disk.txt"), "ON-DISK-CONTENT");
  // readTextFile only: reads go to the client, writes stay local
  const a = sdkAgent(t, { store: f.store, fs: { read: () => "FROM-CLIENT", caps: { writeTextFile: false } } });
  await a.init();
  const s1 = await a.newSession(f.cwd);
  const r = await a.prompt(s1, "/read disk.txt");
  assert.ok(JSON.stringify(r.updates).includes("FROM-CLIENT"));
  await a.prompt(s1, "/write local1.txt L1");
  assert.equal(a.fsWrites.length, 0, "fs/write_text_file called without writeTextFile");
  assert.equal(readFileSync(join(f.cwd, "local1.txt"), "utf8"), "L1");
  await a.end();
  // writeTextFile only: writes go to the client, reads stay local
  const b = sdkAgent(t, { store: f.store, fs: { read: () => "FROM-CLIENT", caps: { readTextFile: false } } });
  await b.init();
  const s2 = await b.newSession(f.cwd);
  const rb = await b.prompt(s2, "/read disk.txt");
  assert.ok(JSON.stringify(rb.updates).includes("ON-DISK-CONTENT"));
  assert.equal(b.fsReads.length, 0, "fs/read_text_file called without readTextFile");
  await b.prompt(s2, "/write remote.txt R1");
  assert.deepEqual(b.fsWrites.map((w) => w.path), [join(f.cwd, "remote.txt")]);
  assert.ok(!existsSync(join(f.cwd, "remote.txt")));
  await b.end();
});

test("a long /stream in one session does not hold up the other sessions: their turns interleave (raw)", async (t) => {
  const dir = tempDir(t);
  const a = rawAgent(t, { store: join(dir, "sessions.db") });
  await a.init();
  const s1 = await a.newSession(dir);
  const s2 = await a.newSession(dir);
  const from = a.lines.length;
  const long = a.prompt(s1, "/stream 60000 10");
  await a.waitFor((m) => m.method === "session/update" && m.params.sessionId === s1, from);
  const ping = await a.prompt(s2, "ping while s1 streams");
  const l = await long;
  const seqOf = (r) => a.lines.findIndex((x) => x.msg === r);
  assert.equal(l.result?.stopReason, "end_turn");
  assert.ok(seqOf(ping) < seqOf(l), "session 2's echo waited for session 1's whole stream");
  // two long streams at once: their chunks alternate on stdout
  const f2 = a.lines.length;
  const [x, y] = await Promise.all([a.prompt(s1, "/stream 20000 10"), a.prompt(s2, "/stream 20000 10")]);
  assert.equal(x.result?.stopReason, "end_turn");
  assert.equal(y.result?.stopReason, "end_turn");
  const order = a.lines.slice(f2).filter((e) => e.msg.method === "session/update").map((e) => e.msg.params.sessionId);
  let switches = 0;
  for (let i = 1; i < order.length; i++) if (order[i] !== order[i - 1]) switches++;
  assert.ok(switches >= 2, `the two streams did not interleave (${switches} switches)`);
  t.diagnostic(`two /stream 20000 10 at once: ${switches} switches between sessions`);
  assert.equal(a.updatesOf(s1, f2).length, 20000);
  assert.equal(a.updatesOf(s2, f2).length, 20000);
  await a.end();
});
