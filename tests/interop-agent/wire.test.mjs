// SPDX-License-Identifier: Apache-2.0
// initialize and JSON-RPC framing of acp-agent: version negotiation, capabilities, agentInfo, and what a
// raw NDJSON client sees on the wire (ids echoed byte-exact, malformed input, batches, unknown methods,
// requests before initialize, EOF mid-turn). Spec: REQUIREMENTS.md §1-§6.1, transports.mdx,
// initialization.mdx, extensibility.mdx; issue 3 "initialize".
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { existsSync } from "node:fs";
import { test, AGENT, TRANSPORT, tempDir, rawAgent, sdkAgent, notOverHttp } from "./lib.mjs";

const SESSION_CAPS = ["additionalDirectories", "close", "delete", "list", "resume"];
// The unstable members of schema.unstable.json's SessionCapabilities (acp-agent offers them by default;
// sessmeta.test.mjs checks them).
const UNSTABLE_CAPS = new Set(["archive", "fork", "status", "systemPrompt", "title"]);

test("initialize: protocolVersion 1 for requested 1, 2, 0, 999", async (t) => {
  const dir = tempDir(t);
  for (const v of [1, 2, 0, 999]) {
    const a = rawAgent(t, { store: join(dir, `s${v}.db`) });
    const r = await a.request("initialize", { protocolVersion: v, clientCapabilities: {} });
    assert.equal(r.result?.protocolVersion, 1, `requested ${v}: ${JSON.stringify(r)}`);
    await a.end();
  }
});

test("initialize: capabilities exactly as issue 3 lists, agentInfo (SDK client)", async (t) => {
  const dir = tempDir(t);
  const a = sdkAgent(t, { store: join(dir, "sessions.db") });
  const r = await a.init();
  const caps = r.agentCapabilities;
  assert.equal(caps.loadSession, true);
  assert.deepEqual(Object.keys(caps.sessionCapabilities).filter((k) => k !== "_meta" && !UNSTABLE_CAPS.has(k)).sort(), SESSION_CAPS);
  for (const k of SESSION_CAPS) assert.deepEqual(caps.sessionCapabilities[k], {}, `sessionCapabilities.${k}`);
  // http/sse: booleans when present (the MCP issue decides true); acp: MCP over ACP (unstable,
  // issue 23); nothing else in mcpCapabilities.
  for (const [k, v] of Object.entries(caps.mcpCapabilities ?? {})) {
    assert.ok(["http", "sse", "acp", "_meta"].includes(k), `unexpected mcpCapabilities.${k}`);
    if (k !== "_meta") assert.equal(typeof v, "boolean");
  }
  for (const [k, v] of Object.entries(caps.promptCapabilities ?? {})) {
    assert.ok(["image", "audio", "embeddedContext", "_meta"].includes(k), `unexpected promptCapabilities.${k}`);
    if (k !== "_meta") assert.equal(typeof v, "boolean");
  }
  for (const k of Object.keys(caps))
    assert.ok(
      ["loadSession", "promptCapabilities", "mcpCapabilities", "sessionCapabilities", "auth", "_meta"].includes(k),
      `custom field at the root of agentCapabilities: ${k} (extensibility.mdx: MUST NOT)`,
    );
  assert.deepEqual(r.authMethods ?? [], []);
  assert.equal(typeof r.agentInfo?.name, "string");
  assert.ok(r.agentInfo.name.length > 0);
  assert.equal(typeof r.agentInfo.version, "string");
  assert.ok(r.agentInfo.version.length > 0);
  await a.end();
});

test("acp-agent --version names agentInfo.version; --help exits 0 and mentions --store", async (t) => {
  const dir = tempDir(t);
  const a = rawAgent(t, { store: join(dir, "sessions.db") });
  const info = (await a.init()).agentInfo;
  await a.end();
  const env = { ...process.env, XDG_STATE_HOME: join(dir, "xdg") };
  const version = execFileSync(AGENT, ["--version"], { env, encoding: "utf8" });
  assert.ok(version.includes(info.version), `--version printed ${JSON.stringify(version)}`);
  const help = execFileSync(AGENT, ["--help"], { env, encoding: "utf8" });
  assert.match(help, /--store/);
});

test("request ids are echoed exactly: strings, 0, negative, and integers beyond 2^53", async (t) => {
  const dir = tempDir(t);
  const a = rawAgent(t, { store: join(dir, "sessions.db") });
  await a.init();
  const ids = ['"abc"', '""', '"\\u00e9x"', "0", "-7", "9007199254740993", "123456789012345678"];
  for (const id of ids) {
    a.send(`{"jsonrpc":"2.0","id":${id},"method":"session/list","params":{}}`);
    const line = await a.nextLine();
    const m = line.raw.match(/"id"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+)/);
    assert.ok(m, `no id in ${line.raw.slice(0, 200)}`);
    assert.equal(JSON.parse(m[1]), JSON.parse(id), `id ${id} came back as ${m[1]}`);
    if (/^-?\d+$/.test(id)) assert.equal(m[1], id, "integer ids must come back digit for digit");
    assert.ok(line.msg.result, `session/list with id ${id}: ${line.raw.slice(0, 200)}`);
  }
  await a.end();
});

test("malformed JSON line -> -32700 with id null, and the connection survives", async (t) => {
  if (notOverHttp(t, "an unparsable POST body is HTTP 400 Invalid JSON (tests/net/test_shttp.c)")) return;
  const dir = tempDir(t);
  const a = rawAgent(t, { store: join(dir, "sessions.db") });
  await a.init();
  a.send('{"jsonrpc":"2.0","id":5,"method":"session/list"');
  const err = await a.nextLine();
  assert.equal(err.msg.error?.code, -32700, err.raw);
  assert.equal(err.msg.id, null);
  a.send("this is not json");
  assert.equal((await a.nextLine()).msg.error?.code, -32700);
  const ok = await a.request("session/list", {});
  assert.ok(Array.isArray(ok.result?.sessions), JSON.stringify(ok));
  await a.end();
});

test("a JSON array (batch) -> -32600, entries not processed", async (t) => {
  if (notOverHttp(t, "a batch is HTTP 400 with the -32600 as its body (tests/net/test_shttp.c)")) return;
  const dir = tempDir(t);
  const a = rawAgent(t, { store: join(dir, "sessions.db") });
  await a.init();
  a.send(JSON.stringify([{ jsonrpc: "2.0", id: 77, method: "session/list", params: {} }]));
  const r = await a.nextLine();
  assert.equal(r.msg.error?.code, -32600, r.raw);
  assert.equal(r.msg.id, null);
  const after = await a.request("session/list", {});
  assert.ok(after.result, JSON.stringify(after));
  assert.ok(!a.lines.some((l) => l.msg.id === 77), "batch entry was processed");
  await a.end();
});

test("unknown method -> -32601; _-extension method -> -32601; unknown notifications ignored", async (t) => {
  const dir = tempDir(t);
  const a = rawAgent(t, { store: join(dir, "sessions.db") });
  await a.init();
  assert.equal((await a.request("session/frobnicate", {})).error?.code, -32601);
  assert.equal((await a.request("_acme/thing", {})).error?.code, -32601);
  const n = a.lines.length;
  a.notify("_acme/notice", { x: 1 });
  a.notify("unknown/notification", {});
  const r = await a.request("session/list", {});
  assert.ok(r.result);
  assert.equal(a.lines.length, n + 1, "a notification got a response");
  await a.end();
});

test("request before initialize -> error response; initialize still works afterwards", async (t) => {
  if (notOverHttp(t, "without initialize there is no connection: HTTP 400 Missing Acp-Connection-Id")) return;
  const dir = tempDir(t);
  const a = rawAgent(t, { store: join(dir, "sessions.db") });
  const r = await a.request("session/new", { cwd: dir, mcpServers: [] });
  assert.ok(r.error, `session/new before initialize answered ${JSON.stringify(r)}`);
  assert.equal(r.result, undefined);
  const l = await a.request("session/list", {});
  assert.ok(l.error, `session/list before initialize answered ${JSON.stringify(l)}`);
  await a.init();
  const sid = await a.newSession(dir);
  assert.equal(typeof sid, "string");
  await a.end();
});

test("params missing or invalid types -> -32602, not a crash", async (t) => {
  const dir = tempDir(t);
  const a = rawAgent(t, { store: join(dir, "sessions.db") });
  await a.init();
  assert.equal((await a.request("session/new")).error?.code, -32602);
  assert.equal((await a.request("session/new", { cwd: 5, mcpServers: [] })).error?.code, -32602);
  const sid = await a.newSession(dir);
  assert.equal((await a.request("session/prompt", { sessionId: sid })).error?.code, -32602, "prompt missing");
  assert.equal((await a.request("session/prompt", { sessionId: sid, prompt: "text" })).error?.code, -32602, "prompt not an array");
  // Over HTTP session/load needs Acp-Session-Id, which a number cannot be: HTTP 400, not -32602.
  if (TRANSPORT !== "http") assert.equal((await a.request("session/load", { sessionId: 3, cwd: dir, mcpServers: [] })).error?.code, -32602);
  await a.end();
});

test("EOF mid-turn (a /sleep and a /stream running): agent exits 0 without leaks", async (t) => {
  const dir = tempDir(t);
  const a = rawAgent(t, { store: join(dir, "sessions.db") });
  await a.init();
  const s1 = await a.newSession(dir);
  const s2 = await a.newSession(dir);
  a.prompt(s1, "/sleep 600000");
  a.prompt(s2, "/stream 100000 100");
  await a.waitFor((m) => m.method === "session/update" && m.params.sessionId === s2 && m.params.update.sessionUpdate === "agent_message_chunk");
  await a.end(); // asserts exit code 0 (66 would be a leak report) and clean stdout
});

test("stdout carries only JSON-RPC lines across a session's life (SDK client)", async (t) => {
  const dir = tempDir(t);
  const a = sdkAgent(t, { store: join(dir, "sessions.db") });
  await a.init();
  const sid = await a.newSession(dir);
  await a.prompt(sid, "hello");
  await a.prompt(sid, "/plan");
  await a.prompt(sid, "/title t");
  await a.prompt(sid, "/stream 10 10");
  await a.end(); // asserts no stray line and exit 0
  assert.ok(a.msgs.every((m) => m.msg.jsonrpc === "2.0"));
});

test("an oversized line (80 MiB) -> -32600 with its id, and the connection survives", async (t) => {
  const dir = tempDir(t);
  const a = rawAgent(t, { store: join(dir, "sessions.db") });
  await a.init();
  // rpc.h: a line longer than max_message (64 MiB) is discarded whole and answered -32600, with the
  // request's id when it can be read from the line's first bytes.
  const pad = "x".repeat(80 << 20);
  a.send(`{"jsonrpc":"2.0","id":9,"method":"session/list","params":{"_meta":{"pad":"${pad}"}}}`);
  if (TRANSPORT === "ws") {
    // One WebSocket message over max_message ends that connection with close code 1009 (RFC 6455:
    // "message too big"), not a JSON-RPC error: the agent process lives on and exits cleanly.
    await new Promise((r) => a.st.onEnd(r));
    assert.equal(a.st.closeCode, 1009);
    await a.end();
    return;
  }
  if (TRANSPORT === "http") {
    // A POST body over max_message is refused 413 before the agent reads it, and the HTTP/1.1
    // connection it came on is closed (fetch may see that rather than the 413); the ACP
    // connection goes on. The harness records the refusal as stray text, taken back here.
    while (!a.st.stray.some((x) => /^\(HTTP (413|failed)/.test(x))) await new Promise((r) => setTimeout(r, 20));
    a.st.stray.length = 0;
    assert.ok((await a.request("session/list", {})).result);
    await a.end();
    return;
  }
  const r = await a.nextLine();
  assert.equal(r.msg.error?.code, -32600, r.raw.slice(0, 300));
  assert.equal(r.msg.id, 9);
  const ok = await a.request("session/list", {});
  assert.ok(ok.result, JSON.stringify(ok));
  await a.end();
});

test("valid JSON with U+0000 in a prompt string is not a parse error: echoed, or refused -32602", async (t) => {
  const dir = tempDir(t);
  const a = rawAgent(t, { store: join(dir, "sessions.db") });
  await a.init();
  const sid = await a.newSession(dir);
  const from = a.lines.length;
  const r = await a.prompt(sid, "nul\u0000inside");
  if (r.error) assert.equal(r.error.code, -32602, JSON.stringify(r));
  else {
    const text = a.updatesOf(sid, from).map((e) => e.msg.params.update).filter((u) => u.sessionUpdate === "agent_message_chunk").map((u) => u.content.text).join("");
    assert.equal(text, "nul\u0000inside");
  }
  assert.equal((await a.prompt(sid, "after")).result?.stopReason, "end_turn");
  await a.end();
});

test("default store: $XDG_STATE_HOME/acp-agent/sessions.db, else ~/.local/state/acp-agent/sessions.db", async (t) => {
  const dir = tempDir(t);
  const xdg = join(dir, "state");
  const a = rawAgent(t, { store: null, cwd: dir, env: { XDG_STATE_HOME: xdg, HOME: join(dir, "home-unused") } });
  await a.init();
  const sid = await a.newSession(dir);
  await a.end();
  assert.ok(existsSync(join(xdg, "acp-agent", "sessions.db")), "no store under $XDG_STATE_HOME/acp-agent");
  const home = join(dir, "home");
  const b = rawAgent(t, { store: null, cwd: dir, env: { XDG_STATE_HOME: null, HOME: home } });
  await b.init();
  await b.newSession(dir);
  await b.end();
  assert.ok(existsSync(join(home, ".local", "state", "acp-agent", "sessions.db")), "no store under ~/.local/state/acp-agent");
  // the first store holds the first session: same default, same sessions
  const c = rawAgent(t, { store: null, cwd: dir, env: { XDG_STATE_HOME: xdg } });
  await c.init();
  assert.deepEqual((await c.request("session/list", {})).result.sessions.map((s) => s.sessionId), [sid]);
  await c.end();
});

test("EOF while a permission request is outstanding: agent exits 0, nothing written", async (t) => {
  const dir = tempDir(t);
  const a = rawAgent(t, { store: join(dir, "sessions.db"), permission: "hold" });
  await a.init();
  const sid = await a.newSession(dir);
  a.prompt(sid, "/write held.txt never");
  await a.waitFor((m) => m.method === "session/request_permission");
  await a.end();
  assert.ok(!existsSync(join(dir, "held.txt")));
});

test("$/cancel_request: a running prompt gets exactly one response (-32800 or a result); unknown ids ignored", async (t) => {
  const dir = tempDir(t);
  const a = rawAgent(t, { store: join(dir, "sessions.db") });
  await a.init();
  const sid = await a.newSession(dir);
  a.notify("$/cancel_request", { requestId: 424242 }); // nothing to cancel: no response
  const id = 777;
  const p = a.request("session/prompt", { sessionId: sid, prompt: [{ type: "text", text: "/sleep 1500" }] }, id);
  await a.request("session/list", {});
  a.notify("$/cancel_request", { requestId: id });
  const r = await p;
  if (r.error) assert.equal(r.error.code, -32800, JSON.stringify(r));
  else assert.ok(["cancelled", "end_turn"].includes(r.result.stopReason), JSON.stringify(r));
  t.diagnostic(`prompt after $/cancel_request: ${JSON.stringify(r.error ?? r.result)}`);
  await a.request("session/list", {});
  assert.equal(a.lines.filter((l) => l.msg.id === id && !l.msg.method).length, 1);
  assert.ok(!a.lines.some((l) => l.msg.id === 424242));
  await a.end();
});

test("lenient decoding: unknown fields and _meta ignored, params omitted for session/list, CRLF and blank lines", async (t) => {
  const dir = tempDir(t);
  const a = rawAgent(t, { store: join(dir, "sessions.db") });
  const init = await a.request("initialize", {
    protocolVersion: 1,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, futureCapability: { x: 1 }, _meta: { "vendor.example": true } },
    clientInfo: { name: "c", version: "1", title: null },
    _meta: { traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" },
  });
  assert.ok(init.result, JSON.stringify(init));
  const nw = await a.request("session/new", { cwd: dir, mcpServers: [], futureField: 1, _meta: { k: "v" } });
  assert.ok(nw.result?.sessionId, JSON.stringify(nw));
  const pr = await a.request("session/prompt", {
    sessionId: nw.result.sessionId,
    prompt: [{ type: "text", text: "annotated", annotations: { audience: ["user"], priority: 0.5 }, _meta: {} }],
    _meta: {},
  });
  assert.equal(pr.result?.stopReason, "end_turn", JSON.stringify(pr));
  const noParams = await a.request("session/list");
  assert.equal(noParams.result?.sessions.length, 1, `session/list without params: ${JSON.stringify(noParams)}`);
  if (TRANSPORT !== "http") {
    // Blank lines are a line framing's; over HTTP there are no lines, and an empty body is 400.
    a.send("");
    a.send("   ");
  }
  a.send('{"jsonrpc":"2.0","id":"crlf","method":"session/list","params":{}}\r');
  const crlf = await a.response("crlf");
  assert.ok(crlf.result, JSON.stringify(crlf));
  await a.end();
});

test("hostile ids and paths: huge or odd sessionIds and cwds get error responses, the agent stays up", async (t) => {
  const dir = tempDir(t);
  const a = rawAgent(t, { store: join(dir, "sessions.db") });
  await a.init();
  const huge = "s".repeat(200_000);
  let ids = [huge, "", "../../etc/passwd", "sess_\u0000nul", "'; DROP TABLE sessions; --"];
  if (TRANSPORT === "http") {
    // Over HTTP a session id travels in Acp-Session-Id: 200 KB of it is refused before the agent
    // sees it (the HTTP/1.1 wire's head limit, 431; under it, the SDK's maxIdLength, 400), and a
    // NUL cannot be sent in a header at all.
    // An empty one is no Acp-Session-Id at all (the SDK's server says the same): 400.
    for (const sessionId of [huge, ""]) {
      a.send({ jsonrpc: "2.0", id: "x", method: "session/load", params: { sessionId, cwd: dir, mcpServers: [] } });
      await a.st.settle(); // the harness's POSTs (and the session GET it opens first) answered
      assert.ok(a.st.stray.length && a.st.stray.every((x) => /^\(HTTP (431|400) /.test(x)), JSON.stringify(a.st.stray));
      a.st.stray.length = 0;
    }
    ids = ids.filter((x) => x !== huge && x !== "" && !x.includes("\u0000"));
  }
  for (const sessionId of ids) {
    const ld = await a.request("session/load", { sessionId, cwd: dir, mcpServers: [] });
    assert.ok(ld.error, `load ${JSON.stringify(sessionId.slice(0, 20))}: ${JSON.stringify(ld).slice(0, 200)}`);
    assert.ok([-32002, -32602].includes(ld.error.code), JSON.stringify(ld.error).slice(0, 200));
    const pr = await a.prompt(sessionId, "x");
    assert.ok(pr.error, "prompt to a bogus session answered");
    const del = await a.request("session/delete", { sessionId });
    assert.ok(del.result || del.error?.code === -32602, JSON.stringify(del).slice(0, 200));
  }
  const longCwd = await a.request("session/new", { cwd: "/" + "d".repeat(100_000), mcpServers: [] });
  assert.ok(longCwd.result || longCwd.error, "no answer");
  const sid = await a.newSession(dir);
  assert.equal((await a.prompt(sid, "still alive")).result?.stopReason, "end_turn");
  await a.end();
});

test("requests piped with EOF right after them (printf ... | acp-agent): new and load are still answered", async (t) => {
  // A client may close its side and keep reading; the agent must not drop the answers it owes.
  const dir = tempDir(t);
  const run = (...msgs) =>
    execFileSync(AGENT, ["--store", join(dir, "sessions.db")], {
      input: msgs.map((m, i) => JSON.stringify({ jsonrpc: "2.0", id: i, ...m })).join("\n") + "\n",
      cwd: dir,
    })
      .toString()
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
  const init = { method: "initialize", params: { protocolVersion: 1 } };
  const created = run(init, { method: "session/new", params: { cwd: dir, mcpServers: [] } });
  const sessionId = created.find((m) => m.id === 1)?.result?.sessionId;
  assert.ok(sessionId, `session/new answered: ${JSON.stringify(created)}`);
  const prompted = run(init, { method: "session/prompt", params: { sessionId: "nope", prompt: [] } },
    { method: "session/resume", params: { sessionId, cwd: dir } });
  assert.equal(prompted.find((m) => m.id === 2)?.result?.modes?.currentModeId, "code", "resume answered (with the session's modes)");
  const loaded = run(init, { method: "session/load", params: { sessionId, cwd: dir, mcpServers: [] } });
  assert.equal(loaded.find((m) => m.id === 1)?.result?.modes?.currentModeId, "code", `session/load answered: ${JSON.stringify(loaded)}`);
});
