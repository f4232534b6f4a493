// SPDX-License-Identifier: Apache-2.0
// The rest of the ACP v1 agent surface of acp-agent, with the official SDK as the client wherever it can
// say it (a raw NDJSON client where the SDK would hide the wire: malformed and late replies, byte order):
// session modes, config options (select and boolean), authenticate / logout, notices, compaction,
// usage, session_info_update after load/resume, client terminals (/term), permission requests (/ask),
// form elicitation (/elicit), and the capability gates on each of them. Spec: session-modes.mdx,
// session-config-options.mdx, authentication.mdx, terminals.mdx, elicitation.mdx, v1-draft/prompt-turn.mdx
// (notices, compaction), tool-calls.mdx (REQUIREMENTS §4, §6.2, §6.3, §6.11, §6.12, §8.8-8.14, §9.1,
// §9.4-9.6). The MUST/SHOULD rows these tests stand for are in the table at the top of session.test.mjs
// (file letter u).
//
// Every message the agent writes is also checked by lib.mjs schemaCheck against the v1 schema and the
// capabilities the client advertised (terminal/*, elicitation modes, notices, compaction, boolean config
// options, terminal auth methods, logout); the first test proves those checks fire.
import assert from "node:assert/strict";
import { join } from "node:path";
import { existsSync, readFileSync } from "node:fs";
import {
  test,
  tempDir,
  sdkAgent,
  rawAgent,
  schemaCheck,
  textOf,
  normalize,
  userMsg,
  ELICIT_CONTENT,
  CONVERSATION,
  ISO8601,
  notOverHttp,
} from "./lib.mjs";

// ---- helpers -----------------------------------------------------------------------------------------

/** Rejects after ms with a message naming what never came (a guard, not a measurement). */
function soon(p, what, ms = 10_000) {
  let timer;
  const guard = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms);
  });
  return Promise.race([p, guard]).finally(() => clearTimeout(timer));
}

/** Polls pred every 10 ms until it holds. */
async function until(pred, what, ms = 10_000) {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** An SDK request that must fail with `code`, its message naming every word. */
async function refused(p, code, ...words) {
  await assert.rejects(p, (e) => {
    assert.equal(e.code, code, `expected ${code}, got ${e.code}: ${e.message}`);
    for (const w of words) assert.ok(String(e.message).includes(w), `error message does not name ${w}: ${e.message}`);
    return true;
  });
}

const TOOL = new Set(["tool_call", "tool_call_update"]);
/** The tool call updates of one toolCallId (or of the first tool call) in order. */
function toolUpdates(updates, id) {
  const tc = updates.filter((u) => TOOL.has(u.sessionUpdate));
  const tid = id ?? tc.find((u) => u.sessionUpdate === "tool_call")?.toolCallId;
  return tc.filter((u) => u.toolCallId === tid);
}
const lastStatus = (tus) => tus.filter((u) => u.status != null).at(-1)?.status;
/** Text of every content item of the updates (tool call content and message chunks). */
function allText(updates) {
  let s = "";
  for (const u of updates) {
    if (u.content?.type === "text") s += u.content.text + "\n";
    for (const c of Array.isArray(u.content) ? u.content : []) if (c.type === "content" && c.content?.type === "text") s += c.content.text + "\n";
  }
  return s;
}
const terminalIdsIn = (tus) =>
  tus.flatMap((u) => (Array.isArray(u.content) ? u.content : []).filter((c) => c.type === "terminal").map((c) => c.terminalId));

/** A prompt turn of the raw client: the response message and the session's updates before it. */
async function rawTurn(a, sid, text) {
  const from = a.lines.length;
  const resp = await a.prompt(sid, text);
  const at = a.lines.findIndex((l) => l.msg === resp);
  return { resp, updates: a.updatesOf(sid, from, at).map((e) => e.msg.params.update) };
}

/** The connection lives: the raw client's next prompt is echoed. */
async function alive(a, sid, what = "") {
  assert.equal(textOf((await rawTurn(a, sid, "alive")).updates), "alive", `${what}: the connection did not survive`);
}

/** With verbose on, every reply starts with the thought "mode: M, model: X": the session's state. */
async function probe(a, sid, text = "probe") {
  const r = await a.prompt(sid, text);
  assert.equal(r.stopReason, "end_turn");
  return { thought: textOf(r.updates, "agent_thought_chunk"), reply: textOf(r.updates) };
}

/** An agent (make: sdkAgent or rawAgent) on dir's sessions.db with opts, initialized (with init's
 * params), and a new session in dir. */
async function opened(make, t, dir, opts = {}, init) {
  const a = make(t, { store: join(dir, "sessions.db"), ...opts });
  await a.init(init);
  return { a, sid: await a.newSession(dir) };
}

const values = (configOptions) => Object.fromEntries(configOptions.map((o) => [o.id, o.currentValue]));

/** The echo engine's modes and options as a result (new/load/resume) shows them. */
function checkSetup(result, { mode, model, verbose, booleans }) {
  assert.equal(result.modes?.currentModeId, mode, `modes: ${JSON.stringify(result.modes)}`);
  assert.deepEqual(
    result.modes.availableModes.map((m) => m.id),
    ["ask", "code"],
  );
  for (const m of result.modes.availableModes) assert.ok(typeof m.name === "string" && m.name.length > 0);
  const opts = result.configOptions;
  assert.deepEqual(
    opts.map((o) => o.id),
    ["mode", "model", "verbose"],
    "options in the agent's priority order",
  );
  const [mo, m, v] = opts;
  // session-config-options.mdx: agents with modes SHOULD send a category "mode" option too, and
  // SHOULD keep both in sync
  assert.equal(mo.category, "mode");
  assert.equal(mo.type, "select");
  assert.deepEqual(mo.options.map((x) => x.value), ["ask", "code"]);
  assert.equal(mo.currentValue, mode, "the mode option is out of step with the mode");
  assert.equal(m.type, "select");
  assert.equal(m.category, "model");
  assert.deepEqual(
    m.options.map((x) => x.value),
    ["echo-small", "echo-large"],
  );
  assert.equal(m.currentValue, model);
  if (booleans) {
    assert.equal(v.type, "boolean");
    assert.equal(v.currentValue, verbose);
  } else {
    assert.equal(v.type, "select", "a boolean option must reach a client without configOptions.boolean as a select");
    assert.deepEqual(v.options.map((x) => x.value).sort(), ["false", "true"]);
    assert.equal(v.currentValue, String(verbose));
  }
}

const BOOL_CAPS = { session: { configOptions: { boolean: {} } } };
const TOKEN_VAR = "ACP_ITEST_ECHO_TOKEN";
const authArgs = ["--auth", `env:${TOKEN_VAR}`];

// ---- the harness's capability checks -------------------------------------------------------------------

test("harness: schemaCheck reports each capability rule it enforces (so a clean agent run means something)", () => {
  const none = () => undefined;
  const upd = (update) => ({ jsonrpc: "2.0", method: "session/update", params: { sessionId: "s", update } });
  const req = (method, params) => ({ jsonrpc: "2.0", id: 1, method, params });
  const flagged = (msg, caps, re, methodOf = none, init = null) => {
    const v = schemaCheck(msg, methodOf, caps, init);
    assert.ok(v.some((x) => re.test(x)), `${JSON.stringify(msg).slice(0, 120)} with ${JSON.stringify(caps)}: ${JSON.stringify(v)}`);
  };
  const clean = (msg, caps, methodOf = none, init = null) => assert.deepEqual(schemaCheck(msg, methodOf, caps, init), []);
  // terminal/*
  const create = req("terminal/create", { sessionId: "s", command: "/bin/sh", args: ["-c", "true"] });
  clean(create, { terminal: true });
  for (const caps of [{}, { terminal: false }, { fs: { readTextFile: true } }]) flagged(create, caps, /terminal capability/);
  flagged(req("terminal/release", { sessionId: "s", terminalId: "t" }), {}, /terminal capability/);
  // elicitation/create per mode
  const form = req("elicitation/create", {
    sessionId: "s",
    message: "Name?",
    mode: "form",
    requestedSchema: { type: "object", properties: { name: { type: "string" }, count: { type: "integer" } }, required: ["name"] },
  });
  clean(form, { elicitation: { form: {} } });
  for (const caps of [{}, { elicitation: {} }, { elicitation: { form: null, url: {} } }]) flagged(form, caps, /did not advertise/);
  const url = req("elicitation/create", { sessionId: "s", message: "Sign in", mode: "url", elicitationId: "e1", url: "https://example.com/x" });
  clean(url, { elicitation: { url: {} } });
  flagged(url, { elicitation: { form: {} } }, /did not advertise/);
  flagged({ jsonrpc: "2.0", method: "elicitation/complete", params: { elicitationId: "e1" } }, { elicitation: { form: {} } }, /URL elicitation/);
  // notices, compaction
  const notice = upd({ sessionUpdate: "notice", severity: "info", title: "hi" });
  clean(notice, { session: { notices: {} } });
  flagged(notice, { session: { notices: null } }, /session\.notices/);
  flagged(notice, { session: { notices: true } }, /session\.notices/); // malformed marker: unsupported
  flagged(create, { terminal: "true" }, /terminal capability/);
  flagged(form, { elicitation: { form: true } }, /did not advertise/);
  flagged(upd({ sessionUpdate: "notice", severity: "info", title: "" }), { session: { notices: {} } }, /shorter than 1/);
  for (const u of [
    { sessionUpdate: "compaction_update", compactionId: "c", status: "in_progress" },
    { sessionUpdate: "compaction_summary_chunk", compactionId: "c", content: { type: "text", text: "x" } },
  ]) {
    clean(upd(u), { session: { compaction: {} } });
    flagged(upd(u), {}, /session\.compaction/);
  }
  // boolean config options, in config_option_update and in results
  const bool = [{ id: "verbose", name: "Verbose", type: "boolean", currentValue: true }];
  clean(upd({ sessionUpdate: "config_option_update", configOptions: bool }), BOOL_CAPS);
  flagged(upd({ sessionUpdate: "config_option_update", configOptions: bool }), {}, /boolean/);
  for (const m of ["session/new", "session/load", "session/resume", "session/set_config_option"]) {
    const res = { jsonrpc: "2.0", id: 7, result: { ...(m === "session/new" ? { sessionId: "s" } : {}), configOptions: bool } };
    clean(res, BOOL_CAPS, () => m);
    flagged(res, {}, /boolean/, () => m);
  }
  // terminal auth methods, logout
  const init = { jsonrpc: "2.0", id: 1, result: { protocolVersion: 1, authMethods: [{ type: "terminal", id: "login", name: "Log in", args: ["--login"], env: { A_VAR: "1" } }] } };
  clean(init, { auth: { terminal: true } }, () => "initialize");
  flagged(init, {}, /auth\.terminal/, () => "initialize");
  const noLogout = { protocolVersion: 1, agentCapabilities: {} };
  const withLogout = { protocolVersion: 1, agentCapabilities: { auth: { logout: {} } } };
  flagged({ jsonrpc: "2.0", id: 3, result: {} }, {}, /not advertised/, () => "logout", noLogout);
  clean({ jsonrpc: "2.0", id: 3, result: {} }, {}, () => "logout", withLogout);
  flagged({ jsonrpc: "2.0", id: 3, error: { code: -32601, message: "Method not found" } }, {}, /was advertised/, () => "logout", withLogout);
  // new response shapes
  flagged({ jsonrpc: "2.0", id: 4, result: {} }, {}, /configOptions/, () => "session/set_config_option");
  clean({ jsonrpc: "2.0", id: 4, result: {} }, {}, () => "session/set_mode");
  flagged({ jsonrpc: "2.0", id: 4, result: { x: 1 } }, {}, /custom field/, () => "authenticate");
  // the legacy fs-only caps still work
  clean(req("fs/read_text_file", { sessionId: "s", path: "/x" }), { readTextFile: true });
  flagged(req("fs/write_text_file", { sessionId: "s", path: "/x", content: "" }), { readTextFile: true }, /writeTextFile/);
});

// ---- modes and config options ------------------------------------------------------------------------

test("session/new, load and resume return the modes (ask, code; current code) and config options model and verbose with their defaults", async (t) => {
  const dir = tempDir(t);
  const a = sdkAgent(t, { store: join(dir, "sessions.db") });
  await a.init();
  const created = await a.request("session/new", { cwd: dir, mcpServers: [] });
  checkSetup(created, { mode: "code", model: "echo-small", verbose: false, booleans: false });
  const sid = created.sessionId;
  await a.request("session/close", { sessionId: sid });
  checkSetup(await a.request("session/load", { sessionId: sid, cwd: dir, mcpServers: [] }), { mode: "code", model: "echo-small", verbose: false, booleans: false });
  await a.request("session/close", { sessionId: sid });
  checkSetup(await a.request("session/resume", { sessionId: sid, cwd: dir, mcpServers: [] }), { mode: "code", model: "echo-small", verbose: false, booleans: false });
  // the defaults at work: code mode allows /write (asks first), echo-small echoes once, no thought
  const r = await a.prompt(sid, "once");
  assert.equal(textOf(r.updates), "once");
  assert.equal(textOf(r.updates, "agent_thought_chunk"), "");
  await a.end();
});

test("boolean config options: type boolean only with session.configOptions.boolean, else a true/false select (results, answers, config_option_update)", async (t) => {
  const dir = tempDir(t);
  const store = join(dir, "sessions.db");
  const a = sdkAgent(t, { store, clientCapabilities: BOOL_CAPS });
  await a.init();
  const created = await a.request("session/new", { cwd: dir, mcpServers: [] });
  checkSetup(created, { mode: "code", model: "echo-small", verbose: false, booleans: true });
  const sid = created.sessionId;
  const set = await a.request("session/set_config_option", { sessionId: sid, configId: "verbose", type: "boolean", value: true });
  checkSetup({ modes: created.modes, configOptions: set.configOptions }, { mode: "code", model: "echo-small", verbose: true, booleans: true });
  const r = await a.prompt(sid, "/set model echo-large");
  const cou = r.updates.filter((u) => u.sessionUpdate === "config_option_update");
  assert.equal(cou.length, 1, `one config_option_update: ${JSON.stringify(r.updates)}`);
  checkSetup({ modes: created.modes, configOptions: cou[0].configOptions }, { mode: "code", model: "echo-large", verbose: true, booleans: true });
  await a.end();

  // the same stored session, to a client that takes no boolean options: a select, "true"
  const b = sdkAgent(t, { store });
  await b.init();
  const loaded = await b.request("session/load", { sessionId: sid, cwd: dir, mcpServers: [] });
  checkSetup(loaded, { mode: "code", model: "echo-large", verbose: true, booleans: false });
  const off = await b.request("session/set_config_option", { sessionId: sid, configId: "verbose", value: "false" });
  checkSetup({ modes: loaded.modes, configOptions: off.configOptions }, { mode: "code", model: "echo-large", verbose: false, booleans: false });
  const r2 = await b.prompt(sid, "/set verbose true");
  const cou2 = r2.updates.filter((u) => u.sessionUpdate === "config_option_update");
  assert.equal(cou2.length, 1);
  checkSetup({ modes: loaded.modes, configOptions: cou2[0].configOptions }, { mode: "code", model: "echo-large", verbose: true, booleans: false });
  assert.equal((await probe(b, sid)).thought, "mode: code, model: echo-large");
  await b.end();
});

test("session/set_mode: {} and the mode takes effect (ask refuses /write, code allows it), also while a prompt runs", async (t) => {
  const dir = tempDir(t);
  const { a, sid } = await opened(sdkAgent, t, dir);
  await a.request("session/set_config_option", { sessionId: sid, configId: "verbose", value: "true" });
  assert.equal((await probe(a, sid)).thought, "mode: code, model: echo-small");
  assert.deepEqual(await a.request("session/set_mode", { sessionId: sid, modeId: "ask" }), {});
  assert.equal((await probe(a, sid)).thought, "mode: ask, model: echo-small");
  const w = await a.prompt(sid, "/write in-ask.txt nope");
  assert.equal(textOf(w.updates), "/write is not allowed in ask mode");
  assert.equal(a.permissions.length, 0, "ask mode asked for permission to write");
  assert.ok(!existsSync(join(dir, "in-ask.txt")));
  // "The current mode can be changed at any point during a session, whether the Agent is idle or
  // generating a response."
  const sleeping = a.prompt(sid, "/sleep 400");
  assert.deepEqual(await a.request("session/set_mode", { sessionId: sid, modeId: "code" }), {});
  assert.deepEqual(await a.request("session/set_config_option", { sessionId: sid, configId: "model", value: "echo-large" }).then((r) => values(r.configOptions)), {
    mode: "code",
    model: "echo-large",
    verbose: "true",
  });
  assert.equal((await sleeping).stopReason, "end_turn");
  assert.equal((await probe(a, sid, "ab")).thought, "mode: code, model: echo-large");
  const w2 = await a.prompt(sid, "/write in-code.txt yes");
  assert.equal(w2.stopReason, "end_turn");
  assert.equal(a.permissions.length, 1);
  assert.equal(readFileSync(join(dir, "in-code.txt"), "utf8"), "yes");
  await a.end();
});

test("session/set_mode: an unknown mode id or a non-string -> -32602 naming it, mode unchanged; unknown session -> -32002", async (t) => {
  const dir = tempDir(t);
  const { a, sid } = await opened(sdkAgent, t, dir);
  await a.request("session/set_config_option", { sessionId: sid, configId: "verbose", value: "true" });
  await a.request("session/set_mode", { sessionId: sid, modeId: "ask" });
  await refused(a.request("session/set_mode", { sessionId: sid, modeId: "architect" }), -32602, "architect");
  await refused(a.request("session/set_mode", { sessionId: sid, modeId: "ASK" }), -32602, "ASK");
  await refused(a.request("session/set_mode", { sessionId: sid, modeId: 1 }), -32602, "modeId");
  await refused(a.request("session/set_mode", { sessionId: sid }), -32602, "modeId");
  await refused(a.request("session/set_mode", { sessionId: "sess_unknown_0000", modeId: "code" }), -32002);
  assert.equal((await probe(a, sid)).thought, "mode: ask, model: echo-small", "a refused set_mode changed the mode");
  await a.request("session/close", { sessionId: sid });
  const loaded = await a.request("session/load", { sessionId: sid, cwd: dir, mcpServers: [] });
  assert.equal(loaded.modes.currentModeId, "ask");
  await a.end();
});

test("session/set_config_option: the complete option list comes back; echo-large echoes twice, verbose adds the thought", async (t) => {
  const dir = tempDir(t);
  const { a, sid } = await opened(sdkAgent, t, dir);
  const r1 = await a.request("session/set_config_option", { sessionId: sid, configId: "model", value: "echo-large" });
  checkSetup({ modes: a.lastSession.modes, configOptions: r1.configOptions }, { mode: "code", model: "echo-large", verbose: false, booleans: false });
  const twice = await a.prompt(sid, "abc");
  assert.equal(textOf(twice.updates), "abcabc");
  assert.equal(textOf(twice.updates, "agent_thought_chunk"), "");
  const r2 = await a.request("session/set_config_option", { sessionId: sid, configId: "verbose", value: "true" });
  assert.deepEqual(values(r2.configOptions), { mode: "code", model: "echo-large", verbose: "true" });
  // schema: "Unknown type values with string payloads also gracefully deserialize into" a value id
  for (const type of ["select", "_vendor_kind"]) {
    const r = await a.request("session/set_config_option", { sessionId: sid, configId: "model", type, value: "echo-small" });
    assert.equal(values(r.configOptions).model, "echo-small", `type ${type}`);
    await a.request("session/set_config_option", { sessionId: sid, configId: "model", value: "echo-large" });
  }
  const p = await probe(a, sid, "xy");
  assert.equal(p.thought, "mode: code, model: echo-large");
  assert.equal(p.reply, "xyxy");
  await a.end();
});

test("session/set_config_option: unknown option, a value not among the options, wrong value types -> -32602 naming it; state unchanged", async (t) => {
  const dir = tempDir(t);
  const store = join(dir, "sessions.db");
  const { a, sid } = await opened(sdkAgent, t, dir, { clientCapabilities: BOOL_CAPS });
  await a.request("session/set_config_option", { sessionId: sid, configId: "verbose", type: "boolean", value: true });
  const bad = [
    [{ configId: "temperature", value: "hot" }, "temperature"],
    [{ configId: "model", value: "echo-huge" }, "echo-huge"],
    [{ configId: "model", value: "Echo-Large" }, "Echo-Large"],
    [{ configId: "model", value: 3 }, "params.value must be a string"],
    [{ configId: "model", type: "boolean", value: true }, "model"],
    [{ configId: "verbose", type: "boolean", value: "yes" }, "verbose"], // the value id "yes" (the schema's anyOf)
    [{ configId: "verbose", type: "boolean", value: 1 }, "params.value must be a boolean"],
    [{ configId: "verbose", value: "false" }, "verbose"], // a boolean option takes type "boolean" from this client
    [{ configId: "model" }, "params.value is required"],
    [{ configId: 5, value: "echo-large" }, "configId"],
  ];
  for (const [params, word] of bad) await refused(a.request("session/set_config_option", { sessionId: sid, ...params }), -32602, word);
  await refused(a.request("session/set_config_option", { sessionId: "sess_unknown_0000", configId: "model", value: "echo-large" }), -32002);
  const p = await probe(a, sid, "once");
  assert.equal(p.thought, "mode: code, model: echo-small", "a refused set_config_option changed a value");
  assert.equal(p.reply, "once");
  await a.end();

  // a client shown the select fallback: the boolean form and values outside "true"/"false" are refused
  const b = sdkAgent(t, { store });
  await b.init();
  await b.request("session/resume", { sessionId: sid, cwd: dir, mcpServers: [] });
  await refused(b.request("session/set_config_option", { sessionId: sid, configId: "verbose", type: "boolean", value: false }), -32602, "verbose");
  await refused(b.request("session/set_config_option", { sessionId: sid, configId: "verbose", value: "maybe" }), -32602, "verbose");
  assert.equal((await probe(b, sid)).thought, "mode: code, model: echo-small");
  await b.end();
});

test("the mode and the category \"mode\" config option move together: set_config_option mode -> current_mode_update; set_mode -> config_option_update (SDK)", async (t) => {
  const dir = tempDir(t);
  const { a, sid } = await opened(sdkAgent, t, dir);
  const before = a.updates(sid).length;
  const r = await a.request("session/set_config_option", { sessionId: sid, configId: "mode", value: "ask" });
  assert.equal(values(r.configOptions).mode, "ask");
  await until(() => a.updates(sid).slice(before).some((u) => u.sessionUpdate === "current_mode_update"), "current_mode_update");
  assert.deepEqual(a.updates(sid).slice(before).filter((u) => u.sessionUpdate === "current_mode_update"), [{ sessionUpdate: "current_mode_update", currentModeId: "ask" }]);
  assert.equal((await a.prompt(sid, "/write no.txt x")).updates.length > 0, true);
  assert.ok(!existsSync(join(dir, "no.txt")), "the mode option did not move the mode");
  const mid = a.updates(sid).length;
  assert.deepEqual(await a.request("session/set_mode", { sessionId: sid, modeId: "code" }), {});
  await until(() => a.updates(sid).slice(mid).some((u) => u.sessionUpdate === "config_option_update"), "config_option_update");
  const cu = a.updates(sid).slice(mid).filter((u) => u.sessionUpdate === "config_option_update");
  assert.equal(values(cu[0].configOptions).mode, "code");
  await a.end();
});

test("/mode and /set: current_mode_update and config_option_update (complete state) from the agent's side; unknown ones change nothing", async (t) => {
  const dir = tempDir(t);
  const { a, sid } = await opened(sdkAgent, t, dir);
  const v = await a.prompt(sid, "/set verbose true");
  const vu = v.updates.filter((u) => u.sessionUpdate === "config_option_update");
  assert.equal(vu.length, 1);
  assert.deepEqual(values(vu[0].configOptions), { mode: "code", model: "echo-small", verbose: "true" }, "config_option_update carries every option");
  const m = await a.prompt(sid, "/mode ask");
  assert.deepEqual(
    m.updates.filter((u) => u.sessionUpdate === "current_mode_update"),
    [{ sessionUpdate: "current_mode_update", currentModeId: "ask" }],
  );
  // the dependent change: the mode option follows, and the client is told
  const mu = m.updates.filter((u) => u.sessionUpdate === "config_option_update");
  assert.equal(mu.length, 1, "the mode option moved silently");
  assert.equal(values(mu[0].configOptions).mode, "ask");
  assert.equal((await probe(a, sid)).thought, "mode: ask, model: echo-small");
  const s = await a.prompt(sid, "/set model echo-large");
  const su = s.updates.filter((u) => u.sessionUpdate === "config_option_update");
  assert.equal(su.length, 1);
  assert.deepEqual(values(su[0].configOptions), { mode: "ask", model: "echo-large", verbose: "true" });
  for (const cmd of ["/mode turbo", "/set model echo-giant", "/set colour blue"]) {
    const r = await a.prompt(sid, cmd);
    assert.equal(r.stopReason, "end_turn");
    assert.ok(!r.updates.some((u) => u.sessionUpdate === "current_mode_update" || u.sessionUpdate === "config_option_update"), `${cmd} announced a change`);
    assert.ok(textOf(r.updates).length > 0, `${cmd}: no message saying why nothing changed`);
  }
  assert.equal((await probe(a, sid)).thought, "mode: ask, model: echo-large");
  await a.end();
});

test("modes and config options persist across a restart (SQLite): load and resume return them, replies follow them", async (t) => {
  const dir = tempDir(t);
  const store = join(dir, "sessions.db");
  const { a, sid } = await opened(sdkAgent, t, dir);
  await a.request("session/set_mode", { sessionId: sid, modeId: "ask" });
  await a.request("session/set_config_option", { sessionId: sid, configId: "model", value: "echo-large" });
  await a.request("session/set_config_option", { sessionId: sid, configId: "verbose", value: "true" });
  await a.end();

  const b = sdkAgent(t, { store });
  await b.init();
  checkSetup(await b.request("session/load", { sessionId: sid, cwd: dir, mcpServers: [] }), { mode: "ask", model: "echo-large", verbose: true, booleans: false });
  const p = await probe(b, sid, "hi");
  assert.deepEqual(p, { thought: "mode: ask, model: echo-large", reply: "hihi" });
  // changes made from the agent's side persist too
  await b.prompt(sid, "/mode code");
  await b.prompt(sid, "/set model echo-small");
  await b.end();

  const c = sdkAgent(t, { store, clientCapabilities: BOOL_CAPS });
  await c.init();
  checkSetup(await c.request("session/resume", { sessionId: sid, cwd: dir, mcpServers: [] }), { mode: "code", model: "echo-small", verbose: true, booleans: true });
  assert.deepEqual(await probe(c, sid, "yo"), { thought: "mode: code, model: echo-small", reply: "yo" });
  await c.end();
});

// ---- authentication --------------------------------------------------------------------------------

test("--auth env:VAR: one agent-type method echo-token and auth.logout; before authenticate new, load, resume, prompt, list, delete, set_mode -> -32000", async (t) => {
  const dir = tempDir(t);
  const store = join(dir, "sessions.db");
  const pre = sdkAgent(t, { store }); // a session stored by an agent without --auth
  await pre.init();
  const sid = await pre.newSession(dir);
  await pre.prompt(sid, "stored before auth");
  await pre.end();

  const a = sdkAgent(t, { store, args: authArgs, env: { [TOKEN_VAR]: "s3cret" } });
  const init = await a.init();
  assert.equal(init.authMethods.length, 1, JSON.stringify(init.authMethods));
  const m = init.authMethods[0];
  assert.equal(m.id, "echo-token");
  assert.ok(typeof m.name === "string" && m.name.length > 0);
  assert.ok(m.type === undefined || m.type === "agent", `an agent-type method, got type ${m.type}`);
  assert.deepEqual(init.agentCapabilities.auth?.logout, {}, "logout is supported, so auth.logout: {} is advertised");
  const gated = [
    ["session/new", { cwd: dir, mcpServers: [] }],
    ["session/load", { sessionId: sid, cwd: dir, mcpServers: [] }],
    ["session/resume", { sessionId: sid, cwd: dir, mcpServers: [] }],
    ["session/prompt", { sessionId: sid, prompt: [{ type: "text", text: "x" }] }],
    ["session/list", {}],
    ["session/delete", { sessionId: sid }],
    ["session/set_mode", { sessionId: sid, modeId: "ask" }],
    ["session/set_config_option", { sessionId: sid, configId: "model", value: "echo-large" }],
  ];
  for (const [method, params] of gated) await refused(a.request(method, params), -32000);
  assert.deepEqual(await a.request("authenticate", { methodId: "echo-token" }), {});
  const { sessions } = await a.request("session/list", {});
  assert.ok(sessions.some((s) => s.sessionId === sid), "the stored session is listed once authenticated");
  await a.request("session/load", { sessionId: sid, cwd: dir, mcpServers: [] });
  assert.equal(textOf((await a.prompt(sid, "after auth")).updates), "after auth");
  await a.end();
});

test("authenticate: an unknown method id -> -32602 naming it; echo-token with VAR unset or empty -> an error and still unauthenticated", async (t) => {
  const dir = tempDir(t);
  for (const env of [{ [TOKEN_VAR]: null }, { [TOKEN_VAR]: "" }]) {
    const a = sdkAgent(t, { store: join(dir, "sessions.db"), args: authArgs, env });
    await a.init();
    await refused(a.request("authenticate", { methodId: "password" }), -32602, "password");
    await refused(a.request("authenticate", {}), -32602, "methodId");
    await assert.rejects(a.request("authenticate", { methodId: "echo-token" }), (e) => {
      assert.ok(Number.isInteger(e.code), `authenticate without the token must fail: ${e.message}`);
      assert.ok(e.message.includes(TOKEN_VAR), `the refusal should say which variable is missing: ${e.message}`);
      return true;
    });
    await refused(a.request("session/new", { cwd: dir, mcpServers: [] }), -32000);
    await a.end();
  }
});

test("logout: {}, then sessions need authentication again (open ones too); authenticate restores them", async (t) => {
  const dir = tempDir(t);
  const a = sdkAgent(t, { store: join(dir, "sessions.db"), args: authArgs, env: { [TOKEN_VAR]: "s3cret" } });
  await a.init();
  await a.request("authenticate", { methodId: "echo-token" });
  const sid = await a.newSession(dir);
  assert.equal(textOf((await a.prompt(sid, "signed in")).updates), "signed in");
  assert.deepEqual(await a.request("logout", {}), {});
  await refused(a.request("session/new", { cwd: dir, mcpServers: [] }), -32000);
  await refused(a.request("session/list", {}), -32000);
  // authentication.mdx: Clients SHOULD be prepared for active session operations to fail after logout
  await refused(a.request("session/prompt", { sessionId: sid, prompt: [{ type: "text", text: "x" }] }), -32000);
  assert.deepEqual(await a.request("authenticate", { methodId: "echo-token" }), {});
  assert.equal(textOf((await a.prompt(sid, "again")).updates), "again");
  await a.end();
});

test("without --auth: no authMethods and no auth.logout; logout -> -32601, authenticate -> -32602", async (t) => {
  const dir = tempDir(t);
  const a = sdkAgent(t, { store: join(dir, "sessions.db") });
  const init = await a.init();
  assert.deepEqual(init.authMethods ?? [], []);
  assert.ok(init.agentCapabilities.auth?.logout == null, "auth.logout advertised without any sign-in");
  await refused(a.request("logout", {}), -32601);
  await refused(a.request("authenticate", { methodId: "echo-token" }), -32602, "echo-token");
  await a.newSession(dir); // nothing is gated
  await a.end();
});

// ---- notices, compaction, usage, session_info_update ---------------------------------------------------

test("/notice: a notice update with session.notices, else an agent message 'notice: TEXT'; notices are never replayed", async (t) => {
  const dir = tempDir(t);
  const { a, sid } = await opened(sdkAgent, t, dir, { clientCapabilities: { session: { notices: {} } } });
  const r = await a.prompt(sid, "/notice disk almost full");
  const notices = r.updates.filter((u) => u.sessionUpdate === "notice");
  assert.equal(notices.length, 1, JSON.stringify(r.updates));
  assert.ok(notices[0].title.includes("disk almost full"), JSON.stringify(notices[0]));
  assert.equal(typeof notices[0].severity, "string");
  assert.equal(textOf(r.updates), "", "a client that takes notices got the fallback message too");
  await a.request("session/close", { sessionId: sid });
  const before = a.updates(sid).length;
  await a.request("session/load", { sessionId: sid, cwd: dir, mcpServers: [] });
  const replay = a.updates(sid).slice(before);
  assert.ok(
    replay.some((u) => u.sessionUpdate === "user_message_chunk" && u.content.text === "/notice disk almost full"),
    "the turn itself is history",
  );
  assert.ok(!replay.some((u) => u.sessionUpdate === "notice"), "a live-only notice was replayed");
  await a.end();

  // omitted and null both mean unsupported
  const { a: b, sid: s2 } = await opened(sdkAgent, t, dir, { clientCapabilities: { session: { notices: null } } });
  const r2 = await b.prompt(s2, "/notice hi there");
  assert.equal(textOf(r2.updates), "notice: hi there");
  assert.ok(!r2.updates.some((u) => u.sessionUpdate === "notice"));
  await b.end();
});

const COMPACTION = new Set(["compaction_update", "compaction_summary_chunk"]);

/** Checks one compaction entity: in_progress first, summary chunks, exactly one terminal status last. */
function checkCompaction(updates) {
  const c = updates.filter((u) => COMPACTION.has(u.sessionUpdate));
  assert.ok(c.length >= 2, `no compaction reported: ${JSON.stringify(updates)}`);
  const id = c[0].compactionId;
  assert.ok(typeof id === "string" && id.length > 0);
  assert.ok(c.every((u) => u.compactionId === id), "one compaction, one compactionId");
  assert.deepEqual([c[0].sessionUpdate, c[0].status], ["compaction_update", "in_progress"]);
  const statuses = c.filter((u) => u.sessionUpdate === "compaction_update").map((u) => u.status);
  assert.deepEqual(statuses.slice(1), ["completed"], `exactly one terminal status, last: ${statuses}`);
  assert.equal(c.at(-1).sessionUpdate, "compaction_update", "summary chunks come only before the terminal update");
  const summary = c.filter((u) => u.sessionUpdate === "compaction_summary_chunk").map((u) => u.content.text).join("");
  assert.ok(summary.length > 0, "no summary");
  return id;
}

test("/compact with session.compaction: in_progress, a summary, completed under one compactionId; session/load replays it in its timeline position", async (t) => {
  const dir = tempDir(t);
  const store = join(dir, "sessions.db");
  const caps = { session: { compaction: {} } };
  const { a, sid } = await opened(sdkAgent, t, dir, { clientCapabilities: caps });
  const expected = [];
  let compactionId;
  for (const text of ["before the compaction", "/compact", "after the compaction"]) {
    const r = await a.prompt(sid, text);
    assert.equal(r.stopReason, "end_turn");
    if (text === "/compact") compactionId = checkCompaction(r.updates);
    expected.push(userMsg(text), ...r.updates);
  }
  // schema CompactionUpdate: the id is unique within the session
  const again = checkCompaction((await a.prompt(sid, "/compact")).updates);
  assert.notEqual(again, compactionId, "two compactions of one session share a compactionId");
  await a.request("session/close", { sessionId: sid });
  await a.end();
  const b = sdkAgent(t, { store, clientCapabilities: caps });
  await b.init();
  await b.request("session/load", { sessionId: sid, cwd: dir, mcpServers: [] });
  const replay = b.updates(sid).filter((u) => CONVERSATION.has(u.sessionUpdate));
  const second = replay.findLastIndex((u) => u.sessionUpdate === "user_message_chunk" && u.content.text === "/compact");
  assert.ok(second > replay.findIndex((u) => u.sessionUpdate === "user_message_chunk" && u.content.text === "/compact"), "the second /compact turn is not replayed");
  assert.equal(checkCompaction(replay.slice(second)), again);
  assert.deepEqual(normalize(replay.slice(0, second)), normalize(expected));
  // its place: after the user's /compact, before the next user message
  const kinds = normalize(replay.slice(0, second)).map((u) => (u.sessionUpdate === "user_message_chunk" ? `user:${u.content.text}` : u.sessionUpdate));
  const at = kinds.indexOf("user:/compact");
  assert.ok(at >= 0 && kinds.indexOf("compaction_update") > at && kinds.lastIndexOf("compaction_update") < kinds.indexOf("user:after the compaction"), kinds.join(" "));
  assert.equal(checkCompaction(replay.slice(0, second)), compactionId, "the replay keeps the compactionId");
  await b.end();
});

test("/compact without session.compaction: an agent message; a stored compaction is left out of the replay to such a client", async (t) => {
  const dir = tempDir(t);
  const store = join(dir, "sessions.db");
  const { a, sid } = await opened(sdkAgent, t, dir, { clientCapabilities: { session: { compaction: {} } } });
  const expected = [];
  for (const text of ["one", "/compact", "two"]) {
    const r = await a.prompt(sid, text);
    expected.push(userMsg(text), ...r.updates.filter((u) => !COMPACTION.has(u.sessionUpdate)));
  }
  await a.end();
  const b = sdkAgent(t, { store, clientCapabilities: { session: { compaction: null } } });
  await b.init();
  await b.request("session/load", { sessionId: sid, cwd: dir, mcpServers: [] });
  const replay = b.updates(sid);
  assert.ok(!replay.some((u) => COMPACTION.has(u.sessionUpdate)), "compaction replayed to a client without session.compaction");
  assert.deepEqual(normalize(replay), normalize(expected), "the rest of the history replays whole and in order");
  const r = await b.prompt(sid, "/compact");
  assert.equal(r.stopReason, "end_turn");
  assert.ok(textOf(r.updates).length > 0, "no message in place of the compaction updates");
  assert.ok(!r.updates.some((u) => COMPACTION.has(u.sessionUpdate)));
  await b.end();
});

test("/usage: a usage_update with used <= size and a cost", async (t) => {
  const dir = tempDir(t);
  const { a, sid } = await opened(sdkAgent, t, dir);
  await a.prompt(sid, "some words to count ".repeat(50));
  const r = await a.prompt(sid, "/usage");
  const u = r.updates.filter((x) => x.sessionUpdate === "usage_update");
  assert.equal(u.length, 1, JSON.stringify(r.updates));
  assert.ok(Number.isInteger(u[0].used) && Number.isInteger(u[0].size), JSON.stringify(u[0]));
  assert.ok(u[0].size > 0 && u[0].used > 0 && u[0].used <= u[0].size, JSON.stringify(u[0]));
  assert.equal(typeof u[0].cost?.amount, "number");
  assert.equal(typeof u[0].cost?.currency, "string");
  await a.end();
});

test("session_info_update with the stored title and updatedAt after a load's replay, before its response; nothing before a resume's response (raw)", async (t) => {
  const dir = tempDir(t);
  const store = join(dir, "sessions.db");
  const { a, sid } = await opened(sdkAgent, t, dir);
  await a.prompt(sid, "hello");
  await a.prompt(sid, "/title Stored title");
  await a.end();

  const b = rawAgent(t, { store });
  await b.init();
  const listed = (await b.request("session/list", {})).result.sessions.find((s) => s.sessionId === sid);
  const from = b.lines.length;
  const resp = await b.request("session/load", { sessionId: sid, cwd: dir, mcpServers: [] });
  const respSeq = b.lines.findIndex((l) => l.msg === resp);
  const ups = b.updatesOf(sid, from);
  const info = ups.filter((e) => e.msg.params.update.sessionUpdate === "session_info_update");
  assert.equal(info.length, 1, JSON.stringify(ups.map((e) => e.msg.params.update.sessionUpdate)));
  const lastHistory = ups.filter((e) => CONVERSATION.has(e.msg.params.update.sessionUpdate)).at(-1);
  assert.ok(lastHistory.seq < info[0].seq && info[0].seq < respSeq, "session_info_update must follow the replay and precede the load response");
  assert.equal(info[0].msg.params.update.title, "Stored title");
  assert.match(info[0].msg.params.update.updatedAt, ISO8601);
  assert.equal(info[0].msg.params.update.updatedAt, listed.updatedAt, "the same updatedAt as session/list");
  await b.end();

  const c = rawAgent(t, { store });
  await c.init();
  const from2 = c.lines.length;
  const resp2 = await c.request("session/resume", { sessionId: sid, cwd: dir, mcpServers: [] });
  assert.ok(resp2.result, JSON.stringify(resp2));
  const resp2Seq = c.lines.findIndex((l) => l.msg === resp2);
  assert.deepEqual(c.updatesOf(sid, from2, resp2Seq), [], "nothing may precede the resume response");
  // a resume restores silently (the agent's choice); the title stays where session/list shows it
  assert.equal((await c.request("session/list", {})).result.sessions.find((s) => s.sessionId === sid).title, "Stored title");
  await c.end();
});

// ---- /term: client terminals ----------------------------------------------------------------------------

/** The wire position of a received message (tap order). */
const seqOf = (a, pred) => a.msgs.find((e) => pred(e.msg))?.seq ?? -1;

test("/term CMD: tool_call execute, permission, terminal/create /bin/sh -c CMD, the terminal in the tool call, wait_for_exit, output, completed with the output, then release (SDK)", async (t) => {
  const dir = tempDir(t);
  const { a, sid } = await opened(sdkAgent, t, dir, { terminal: true });
  const cmd = "printf 'term-out-%s\\n' 42; echo term-err >&2";
  const r = await a.prompt(sid, `/term ${cmd}`);
  assert.equal(r.stopReason, "end_turn");
  const release = await soon(a.waitFor((m) => m.method === "terminal/release"), "terminal/release");
  const tus = toolUpdates(r.updates);
  assert.ok(tus.length > 0 && tus[0].sessionUpdate === "tool_call", `no tool_call: ${JSON.stringify(r.updates)}`);
  assert.equal(tus[0].kind, "execute");
  const tcid = tus[0].toolCallId;
  assert.equal(a.permissions.length, 1, "no session/request_permission before running the command");
  assert.equal(a.permissions[0].toolCall.toolCallId, tcid);
  const creates = a.requestsOf("terminal/create");
  assert.equal(creates.length, 1);
  const cp = creates[0].msg.params;
  assert.deepEqual([cp.sessionId, cp.command, cp.args], [sid, "/bin/sh", ["-c", cmd]]);
  if (cp.cwd != null) assert.ok(cp.cwd.startsWith("/"), "terminal cwd must be absolute");
  const terminalId = a.terminalProcs[0].terminalId;
  assert.ok(terminalIdsIn(tus).includes(terminalId), `the terminal is not embedded in the tool call: ${JSON.stringify(tus)}`);
  // the order on the wire
  const at = {
    toolCall: a.all.find((e) => e.update.sessionUpdate === "tool_call" && e.update.toolCallId === tcid).seq,
    permission: seqOf(a, (m) => m.method === "session/request_permission"),
    create: creates[0].seq,
    embedded: a.all.find((e) => e.update.toolCallId === tcid && terminalIdsIn([e.update]).includes(terminalId)).seq,
    wait: seqOf(a, (m) => m.method === "terminal/wait_for_exit" && m.params.terminalId === terminalId),
    output: seqOf(a, (m) => m.method === "terminal/output" && m.params.terminalId === terminalId),
    completed: a.all.find((e) => e.update.toolCallId === tcid && e.update.status === "completed")?.seq ?? -1,
    release: release.seq,
  };
  const order = ["toolCall", "permission", "create", "wait", "output", "completed", "release"];
  for (let i = 1; i < order.length; i++)
    assert.ok(at[order[i - 1]] >= 0 && at[order[i - 1]] < at[order[i]], `${order[i - 1]} must precede ${order[i]}: ${JSON.stringify(at)}`);
  assert.ok(at.embedded < at.release, "the terminal must be added to the tool call before terminal/release (schema Terminal)");
  assert.equal(lastStatus(tus), "completed");
  assert.ok(allText(tus).includes("term-out-42"), `the output is not in the tool call: ${allText(tus)}`);
  assert.deepEqual(release.msg.params, { sessionId: sid, terminalId });
  assert.equal(a.requestsOf("terminal/release").length, 1, "released twice");
  await until(() => a.terminalProcs[0].exited(), "the command to be gone");
  await a.end();
});

test("/term with a non-zero exit: the tool call fails with the output; the terminal is still released", async (t) => {
  const dir = tempDir(t);
  const { a, sid } = await opened(sdkAgent, t, dir, { terminal: true });
  const r = await a.prompt(sid, "/term echo term-fail-out; exit 3");
  assert.equal(r.stopReason, "end_turn");
  const release = await soon(a.waitFor((m) => m.method === "terminal/release"), "terminal/release");
  const tus = toolUpdates(r.updates);
  assert.equal(lastStatus(tus), "failed", `exit 3 must fail the tool call: ${JSON.stringify(tus)}`);
  assert.ok(allText(tus).includes("term-fail-out"));
  assert.equal(release.msg.params.terminalId, a.terminalProcs[0].terminalId);
  await a.end();
});

test("/term without the client's terminal capability: a failed tool call, no terminal/* request", async (t) => {
  const dir = tempDir(t);
  for (const clientCapabilities of [{}, { terminal: false }]) {
    const { a, sid } = await opened(sdkAgent, t, dir, { clientCapabilities });
    const r = await a.prompt(sid, "/term echo never-run");
    assert.equal(r.stopReason, "end_turn");
    const tus = toolUpdates(r.updates);
    assert.ok(tus.length > 0, `no tool call: ${JSON.stringify(r.updates)}`);
    assert.equal(lastStatus(tus), "failed");
    assert.ok(allText(r.updates).length > 0, "no word on why the command did not run");
    assert.deepEqual(a.requestsOf("terminal/"), [], "terminal/* without the client's terminal capability");
    assert.deepEqual(a.terminalCalls, []);
    await a.end();
  }
});

test("/term in ask mode: refused with a message, no permission asked, no terminal/*", async (t) => {
  const dir = tempDir(t);
  const { a, sid } = await opened(sdkAgent, t, dir, { terminal: true });
  await a.request("session/set_mode", { sessionId: sid, modeId: "ask" });
  const r = await a.prompt(sid, "/term touch should-not-exist");
  assert.equal(textOf(r.updates), "/term is not allowed in ask mode");
  assert.equal(a.permissions.length, 0);
  assert.deepEqual(a.requestsOf("terminal/"), []);
  assert.ok(!existsSync(join(dir, "should-not-exist")));
  await a.end();
});

test("/term with permission rejected: no terminal is created and the tool call does not complete", async (t) => {
  const dir = tempDir(t);
  for (const permission of ["deny", "cancel"]) {
    const { a, sid } = await opened(sdkAgent, t, dir, { terminal: true, permission });
    const r = await a.prompt(sid, "/term touch refused-run");
    assert.ok(r.stopReason, "the turn must end");
    assert.equal(a.permissions.length, 1);
    assert.deepEqual(a.requestsOf("terminal/"), [], `a terminal was created although permission was ${permission}`);
    assert.notEqual(lastStatus(toolUpdates(r.updates)), "completed");
    assert.ok(!existsSync(join(dir, "refused-run")));
    await a.end();
  }
});

test("/term cancelled mid-command: the prompt answers cancelled, terminal/release still goes out and the command dies", async (t) => {
  const dir = tempDir(t);
  const { a, sid } = await opened(sdkAgent, t, dir, { terminal: true });
  const p = a.prompt(sid, "/term sleep 30");
  await soon(a.waitFor((m) => m.method === "terminal/wait_for_exit"), "terminal/wait_for_exit");
  const terminalId = a.terminalProcs[0].terminalId;
  await a.notify("session/cancel", { sessionId: sid });
  const r = await soon(p, "the cancelled prompt's response");
  assert.equal(r.stopReason, "cancelled");
  const release = await soon(a.waitFor((m) => m.method === "terminal/release"), "terminal/release after cancel");
  assert.equal(release.msg.params.terminalId, terminalId);
  await until(() => a.terminalProcs[0].exited(), "the command to be killed by the release", 10_000);
  const st = lastStatus(toolUpdates(r.updates));
  assert.ok(st === "failed" || st === "completed", `the tool call is left ${st} (history must not keep a call that never finishes)`);
  // the session goes on
  assert.equal(textOf((await a.prompt(sid, "still here")).updates), "still here");
  await a.end();
});

test("/term when the client closes the agent's stdin mid-command (EOF): terminal/release is still written, the agent exits 0", async (t) => {
  // The raw client's twin ("EOF while a turn waits on the client") runs over HTTP. The SDK's HTTP
  // client ends everything when the connection's stream ends, and over HTTP/1.1 that stream's end
  // and a session stream's last message (this terminal/release) travel on two TCP connections in
  // no order the client can know: the server ends the session streams first, but may still lose.
  if (notOverHttp(t, "the SDK's HTTP client may drop a session message that races its connection stream's end")) return;
  const dir = tempDir(t);
  const { a, sid } = await opened(sdkAgent, t, dir, { terminal: true });
  a.prompt(sid, "/term sleep 30").catch(() => {}); // the connection ends under it
  await soon(a.waitFor((m) => m.method === "terminal/wait_for_exit"), "terminal/wait_for_exit");
  const terminalId = a.terminalProcs[0].terminalId;
  a.finish(); // EOF (over WebSocket, whose close is both ways: SIGTERM, which still writes)
  const release = await soon(a.waitFor((m) => m.method === "terminal/release"), "terminal/release after EOF");
  assert.deepEqual(release.msg.params, { sessionId: sid, terminalId });
  await a.end();
});

// A raw client with the terminal capability (terminal/* answered by hand) and a new session.
const rawTerminalSession = (t, dir, handlers) =>
  opened(rawAgent, t, dir, { handlers: { "terminal/release": (m, h) => h.reply(m.id, {}), ...handlers } }, { clientCapabilities: { terminal: true } });

test("terminal/create answered with an error or a malformed result: that tool call fails with a message, the connection lives (raw)", async (t) => {
  const dir = tempDir(t);
  const answers = [
    ["error", (m, h) => h.replyError(m.id, -32603, "no pty left on this client")],
    ["no terminalId", (m, h) => h.reply(m.id, {})],
    ["terminalId a number", (m, h) => h.reply(m.id, { terminalId: 42 })],
    ["result null", (m, h) => h.reply(m.id, null)],
  ];
  for (const [what, answer] of answers) {
    const { a, sid } = await rawTerminalSession(t, dir, { "terminal/create": answer });
    const { resp, updates } = await rawTurn(a, sid, "/term echo hi");
    assert.equal(resp.result?.stopReason, "end_turn", `${what}: ${JSON.stringify(resp)}`);
    const tus = toolUpdates(updates);
    assert.equal(lastStatus(tus), "failed", `${what}: ${JSON.stringify(tus)}`);
    assert.ok(allText(updates).trim().length > 0, `${what}: the failure says nothing`);
    if (what === "error") assert.ok(allText(updates).includes("no pty left on this client"), `the client's error is not passed on: ${allText(updates)}`);
    assert.deepEqual(
      a.requestsOf("terminal/").map((e) => e.msg.method),
      ["terminal/create"],
      `${what}: terminal/* for a terminal that was never created`,
    );
    await alive(a, sid, what);
    await a.end();
  }
});

test("malformed terminal/wait_for_exit or terminal/output answers: the tool call fails, the terminal is still released (raw)", async (t) => {
  const dir = tempDir(t);
  const cases = [
    ["wait_for_exit exitCode a string", { "terminal/wait_for_exit": (m, h) => h.reply(m.id, { exitCode: "zero" }) }],
    ["wait_for_exit error", { "terminal/wait_for_exit": (m, h) => h.replyError(m.id, -32603, "lost the process") }],
    ["output not a string", { "terminal/wait_for_exit": (m, h) => h.reply(m.id, { exitCode: 0 }), "terminal/output": (m, h) => h.reply(m.id, { output: 7, truncated: "no" }) }],
  ];
  for (const [what, handlers] of cases) {
    const { a, sid } = await rawTerminalSession(t, dir, {
      "terminal/create": (m, h) => h.reply(m.id, { terminalId: "t-1" }),
      "terminal/output": (m, h) => h.reply(m.id, { output: "ok\n", truncated: false, exitStatus: { exitCode: 0 } }),
      ...handlers,
    });
    const { resp, updates } = await rawTurn(a, sid, "/term echo ok");
    assert.equal(resp.result?.stopReason, "end_turn", `${what}: ${JSON.stringify(resp)}`);
    assert.equal(lastStatus(toolUpdates(updates)), "failed", `${what}: ${JSON.stringify(toolUpdates(updates))}`);
    const rel = await soon(a.waitFor((m) => m.method === "terminal/release"), `${what}: terminal/release`);
    assert.equal(rel.msg.params.terminalId, "t-1");
    await alive(a, sid, what);
    await a.end();
  }
});

test("a late terminal/create answer, after the turn was cancelled: the agent releases the terminal it then learns of; stray answers are ignored (raw)", async (t) => {
  const dir = tempDir(t);
  const held = [];
  const { a, sid } = await rawTerminalSession(t, dir, { "terminal/create": (m) => held.push(m) });
  const p = a.prompt(sid, "/term sleep 5");
  await until(() => held.length === 1, "terminal/create");
  a.notify("session/cancel", { sessionId: sid });
  const resp = await soon(p, "the cancelled prompt's response");
  assert.equal(resp.result?.stopReason, "cancelled", JSON.stringify(resp));
  const from = a.lines.length;
  a.reply(held[0].id, { terminalId: "late-1" });
  const rel = await soon(a.waitFor((m) => m.method === "terminal/release", from), "terminal/release of the late terminal");
  assert.deepEqual(rel.msg.params, { sessionId: sid, terminalId: "late-1" });
  assert.deepEqual(
    a.requestsOf("terminal/", from).map((e) => e.msg.method),
    ["terminal/release"],
    "a terminal of a cancelled turn is released, not used",
  );
  // answers to ids the agent never used, or used already, change nothing
  a.reply(987654321, { terminalId: "nobody-asked" });
  a.reply(held[0].id, { terminalId: "late-again" });
  a.send({ jsonrpc: "2.0", id: "not-ours", error: { code: -32603, message: "stray" } });
  await alive(a, sid);
  assert.ok(!a.requestsOf("terminal/").some((e) => ["nobody-asked", "late-again"].includes(e.msg.params.terminalId)));
  await a.end();
});

// ---- /ask: permission requests --------------------------------------------------------------------------

const PERMISSION_KINDS = ["allow_once", "allow_always", "reject_once", "reject_always"];

test("/ask: a permission request with allow_once, allow_always, reject_once, reject_always; the reply names the selected optionId (SDK)", async (t) => {
  const dir = tempDir(t);
  const { a, sid } = await opened(sdkAgent, t, dir);
  for (const kind of PERMISSION_KINDS) {
    a.permission = kind;
    const n = a.permissions.length;
    const r = await a.prompt(sid, "/ask");
    assert.equal(r.stopReason, "end_turn");
    assert.equal(a.permissions.length, n + 1, "no session/request_permission");
    const req = a.permissions.at(-1);
    assert.equal(req.sessionId, sid);
    assert.deepEqual(req.options.map((o) => o.kind).sort(), [...PERMISSION_KINDS].sort());
    assert.equal(new Set(req.options.map((o) => o.optionId)).size, 4, "optionIds must be distinct");
    const tus = toolUpdates(r.updates);
    assert.ok(tus.length > 0 && tus[0].toolCallId === req.toolCall.toolCallId, "the permission is for the turn's tool call");
    const chosen = req.options.find((o) => o.kind === kind).optionId;
    assert.equal(textOf(r.updates), `permission: selected ${chosen}`);
  }
  await a.end();
});

test("/ask answered cancelled: 'permission: cancelled'", async (t) => {
  const dir = tempDir(t);
  const { a, sid } = await opened(sdkAgent, t, dir, { permission: "cancel" });
  const r = await a.prompt(sid, "/ask");
  assert.equal(a.permissions.length, 1);
  assert.equal(textOf(r.updates), "permission: cancelled");
  await a.end();
});

test("/ask: session/cancel while the permission request waits -> the prompt answers cancelled", async (t) => {
  const dir = tempDir(t);
  const { a, sid } = await opened(sdkAgent, t, dir, { permission: "hold" });
  const p = a.prompt(sid, "/ask");
  await until(() => a.heldPermissions.length === 1, "session/request_permission");
  await a.notify("session/cancel", { sessionId: sid });
  // prompt-turn.mdx: the Client MUST answer pending permission requests with "cancelled"
  a.heldPermissions[0].resolve({ outcome: { outcome: "cancelled" } });
  const r = await soon(p, "the cancelled prompt's response");
  assert.equal(r.stopReason, "cancelled");
  assert.ok(!textOf(r.updates).includes("selected"));
  a.permission = "allow_once";
  assert.ok(textOf((await a.prompt(sid, "/ask")).updates).startsWith("permission: selected "), "the session goes on");
  await a.end();
});

test("/ask answered with an option never offered, a malformed outcome, or late: that call fails with a message, the connection lives (raw)", async (t) => {
  const dir = tempDir(t);
  const answers = [
    ["unknown optionId", { outcome: { outcome: "selected", optionId: "bogus-option" } }],
    ["selected without optionId", { outcome: { outcome: "selected" } }],
    ["outcome a number", { outcome: 42 }],
    ["empty result", {}],
    ["result a string", "yes"],
  ];
  for (const [what, result] of answers) {
    const { a, sid } = await opened(rawAgent, t, dir, { handlers: { "session/request_permission": (m, h) => h.reply(m.id, result) } });
    const { resp, updates } = await rawTurn(a, sid, "/ask");
    assert.ok(resp.result?.stopReason || resp.error, `${what}: ${JSON.stringify(resp)}`);
    const text = allText(updates);
    assert.ok(!/permission: selected/.test(text), `${what}: a malformed answer was taken as a selection: ${text}`);
    assert.ok(text.trim().length > 0 || resp.error?.message, `${what}: the failure says nothing`);
    await alive(a, sid, what);
    await a.end();
  }
  // late: answered after the turn was cancelled
  const { a, sid } = await opened(rawAgent, t, dir, { permission: "hold" });
  const p = a.prompt(sid, "/ask");
  const req = await soon(a.waitFor((m) => m.method === "session/request_permission"), "session/request_permission");
  a.notify("session/cancel", { sessionId: sid });
  const resp = await soon(p, "the cancelled prompt's response");
  assert.equal(resp.result?.stopReason, "cancelled");
  const from = a.lines.length;
  a.reply(req.msg.id, { outcome: { outcome: "selected", optionId: req.msg.params.options[0].optionId } });
  await alive(a, sid);
  assert.ok(!a.updatesOf(sid, from).some((e) => allText([e.msg.params.update]).includes("permission:")), "a late answer was acted on");
  await a.end();
});

// ---- /elicit: form elicitation ----------------------------------------------------------------------------

/** "elicitation: accept {...}" -> the JSON after the action, parsed. */
function acceptedContent(text) {
  const m = /^elicitation: accept (.*)$/s.exec(text);
  assert.ok(m, `not an accept reply: ${JSON.stringify(text)}`);
  return JSON.parse(m[1]);
}

test("/elicit with elicitation.form: elicitation/create form, requestedSchema name (string, required) and count (integer); accept echoes the content (SDK)", async (t) => {
  const dir = tempDir(t);
  const { a, sid } = await opened(sdkAgent, t, dir, { elicitation: { answer: "accept" } });
  const r = await a.prompt(sid, "/elicit");
  assert.equal(r.stopReason, "end_turn");
  assert.equal(a.elicitations.length, 1, "no elicitation/create");
  const e = a.elicitations[0];
  assert.equal(e.mode, "form");
  assert.equal(e.sessionId, sid);
  assert.ok(typeof e.message === "string" && e.message.length > 0);
  const s = e.requestedSchema;
  assert.ok(s.type === undefined || s.type === "object");
  assert.equal(s.properties.name.type, "string");
  assert.equal(s.properties.count.type, "integer");
  assert.ok(s.required?.includes("name"), `name must be required: ${JSON.stringify(s.required)}`);
  // elicitation.mdx: form mode MUST NOT ask for secrets; no clickable URLs in a form request
  assert.ok(!Object.keys(s.properties).some((k) => /pass|secret|token|key|credential/i.test(k)), Object.keys(s.properties).join());
  assert.ok(!/https?:\/\//.test(JSON.stringify(e)), "a URL in a form-mode request");
  assert.deepEqual(acceptedContent(textOf(r.updates)), ELICIT_CONTENT);
  // a second one with other content: the reply is this answer's, not a constant
  a.elicitation = { action: "accept", content: { name: "zweite Antwort ✓", count: -7 } };
  assert.deepEqual(acceptedContent(textOf((await a.prompt(sid, "/elicit")).updates)), { name: "zweite Antwort ✓", count: -7 });
  await a.end();
});

test("/elicit declined or cancelled: 'elicitation: decline' / 'elicitation: cancel'", async (t) => {
  const dir = tempDir(t);
  const { a, sid } = await opened(sdkAgent, t, dir, { elicitation: { answer: "decline" } });
  assert.equal(textOf((await a.prompt(sid, "/elicit")).updates), "elicitation: decline");
  a.elicitation = "cancel";
  assert.equal(textOf((await a.prompt(sid, "/elicit")).updates), "elicitation: cancel");
  assert.equal(a.elicitations.length, 2);
  await a.end();
});

test("/elicit without form elicitation (none, URL only, form: null): an agent message saying so, no elicitation/create on the wire", async (t) => {
  const dir = tempDir(t);
  const variants = [
    ["no elicitation", {}],
    ["URL only", { elicitation: { form: false, url: true } }],
    ["form: null", { clientCapabilities: { elicitation: { form: null, url: null } } }],
    ["elicitation: {}", { clientCapabilities: { elicitation: {} } }],
  ];
  for (const [what, opts] of variants) {
    const { a, sid } = await opened(sdkAgent, t, dir, opts);
    const r = await a.prompt(sid, "/elicit");
    assert.equal(r.stopReason, "end_turn", what);
    assert.match(textOf(r.updates), /form/i, `${what}: the message should say form elicitation is missing: ${textOf(r.updates)}`);
    assert.deepEqual(a.requestsOf("elicitation/"), [], `${what}: elicitation/create to a client without form mode`);
    assert.deepEqual(a.elicitations, []);
    await a.end();
  }
});

test("/elicit accepted with content that breaks the requested schema (count a string, name missing): that call fails with a message naming the field (SDK)", async (t) => {
  const dir = tempDir(t);
  const { a, sid } = await opened(sdkAgent, t, dir, { elicitation: { answer: "malformed" } });
  const cases = [
    ["malformed", "count"], // {name, count: "three"}
    [{ action: "accept", content: { name: "x", count: 2.5 } }, "count"],
    [{ action: "accept", content: { count: 3 } }, "name"],
    [{ action: "accept" }, "name"],
    [{ action: "accept", content: { name: 5 } }, "name"],
  ];
  for (const [answer, field] of cases) {
    a.elicitation = answer;
    const r = await a.prompt(sid, "/elicit");
    assert.equal(r.stopReason, "end_turn", JSON.stringify(answer));
    const text = allText(r.updates);
    assert.ok(!text.includes("elicitation: accept"), `content breaking the schema was accepted: ${text}`);
    assert.ok(text.includes(field), `the failure should name ${field}: ${text}`);
  }
  a.elicitation = "accept";
  assert.deepEqual(acceptedContent(textOf((await a.prompt(sid, "/elicit")).updates)), ELICIT_CONTENT, "the connection lives");
  await a.end();
});

test("/elicit answered with no action, a non-object result or an error, or late after a cancel: that call fails, the connection lives (raw)", async (t) => {
  const dir = tempDir(t);
  const answers = [
    ["no action", (m, h) => h.reply(m.id, { content: { name: "x" } })],
    ["result a string", (m, h) => h.reply(m.id, "accept")],
    ["action a number", (m, h) => h.reply(m.id, { action: 1 })],
    ["error", (m, h) => h.replyError(m.id, -32603, "the form window crashed")],
  ];
  const caps = { elicitation: { form: {} } };
  for (const [what, answer] of answers) {
    const { a, sid } = await opened(rawAgent, t, dir, { handlers: { "elicitation/create": answer } }, { clientCapabilities: caps });
    const { resp, updates } = await rawTurn(a, sid, "/elicit");
    assert.equal(a.requestsOf("elicitation/create").length, 1, what);
    assert.equal(resp.result?.stopReason, "end_turn", `${what}: ${JSON.stringify(resp)}`);
    const text = allText(updates);
    assert.ok(!text.includes("elicitation: accept"), `${what}: ${text}`);
    assert.ok(text.trim().length > 0, `${what}: the failure says nothing`);
    if (what === "error") assert.ok(text.includes("the form window crashed"), `the client's error is not passed on: ${text}`);
    await alive(a, sid, what);
    await a.end();
  }
  const held = [];
  const { a, sid } = await opened(rawAgent, t, dir, { handlers: { "elicitation/create": (m) => held.push(m) } }, { clientCapabilities: caps });
  const p = a.prompt(sid, "/elicit");
  await until(() => held.length === 1, "elicitation/create");
  a.notify("session/cancel", { sessionId: sid });
  assert.equal((await soon(p, "the cancelled prompt's response")).result?.stopReason, "cancelled");
  const from = a.lines.length;
  a.reply(held[0].id, { action: "accept", content: { name: "late", count: 1 } });
  await alive(a, sid);
  assert.ok(!a.updatesOf(sid, from).some((e) => allText([e.msg.params.update]).includes("elicitation:")), "a late answer was acted on");
  await a.end();
});

test("/elicit accepted with count written 3.0: an integer in JSON Schema's sense, accepted (raw)", async (t) => {
  const dir = tempDir(t);
  // JSON.stringify would write 3: the answer goes out as text so the agent sees 3.0
  const answer = (m, h) => h.send(`{"jsonrpc":"2.0","id":${JSON.stringify(m.id)},"result":{"action":"accept","content":{"name":"n","count":3.0}}}`);
  const { a, sid } = await opened(rawAgent, t, dir, { handlers: { "elicitation/create": answer } }, { clientCapabilities: { elicitation: { form: {} } } });
  const { resp, updates } = await rawTurn(a, sid, "/elicit");
  assert.equal(resp.result?.stopReason, "end_turn");
  assert.ok(allText(updates).startsWith("elicitation: accept"), allText(updates));
  await a.end();
});

// ---- closing a session under a running client call --------------------------------------------------------

/** A raw client (terminal, form elicitation) and a new session; it never answers what cmd (/ask, /elicit,
 * /term) waits on, and answers the rest: the permission allowed, terminal/create as t-1, `more`. */
function stalling(t, dir, cmd, more = {}) {
  const hold = () => {};
  const handlers = {
    "terminal/create": (m, h) => h.reply(m.id, { terminalId: "t-1" }),
    "terminal/wait_for_exit": hold,
    "elicitation/create": hold,
    "session/request_permission": (m, h) =>
      cmd === "/ask" ? hold() : h.reply(m.id, { outcome: { outcome: "selected", optionId: m.params.options.find((o) => o.kind.startsWith("allow")).optionId } }),
    ...more,
  };
  return opened(rawAgent, t, dir, { handlers }, { clientCapabilities: { terminal: true, elicitation: { form: {} } } });
}

test("session/close or session/delete while /term or /ask waits on the client: the prompt answers cancelled before the close/delete response, no update after it, the terminal released (raw)", async (t) => {
  const dir = tempDir(t);
  const problems = [];
  const cases = [
    ["/term sleep 20", "terminal/wait_for_exit", "session/close"],
    ["/term sleep 20", "terminal/wait_for_exit", "session/delete"],
    ["/ask", "session/request_permission", "session/close"],
    ["/elicit", "elicitation/create", "session/close"],
  ];
  for (const [cmd, waitsOn, how] of cases) {
    const what = `${cmd} + ${how}`;
    const { a, sid } = await stalling(t, dir, cmd, { "terminal/release": (m, h) => h.reply(m.id, {}) });
    const from = a.lines.length;
    const prompt = a.prompt(sid, cmd);
    await soon(a.waitFor((m) => m.method === waitsOn, from), `${what}: ${waitsOn}`);
    const closed = await soon(a.request(how, { sessionId: sid }), `${what}: the ${how} response`);
    assert.deepEqual(closed.result, {}, `${what}: ${JSON.stringify(closed)}`);
    const p = await soon(prompt, `${what}: the prompt response`);
    assert.equal(p.result?.stopReason, "cancelled", `${what}: ${JSON.stringify(p)}`);
    await a.request("session/list", {}); // a round trip: whatever was queued is out
    const at = (m) => a.lines.findIndex((l) => l.msg === m);
    const order = a.lines.slice(from).map((l) => l.msg.method ?? (l.msg === p ? "prompt response" : l.msg === closed ? `${how} response` : "response")).join(", ");
    // session-setup.mdx: cancel as if session/cancel (the prompt answers cancelled), then free
    if (!(at(p) < at(closed))) problems.push(`${what}: the ${how} response overtook the cancelled prompt's: ${order}`);
    if (a.updatesOf(sid, at(closed)).length) problems.push(`${what}: session/update for a session already closed/deleted: ${order}`);
    if (cmd.startsWith("/term") && a.requestsOf("terminal/release", from).length !== 1) problems.push(`${what}: the terminal was not released once: ${order}`);
    const list = (await a.request("session/list", {})).result.sessions.map((s) => s.sessionId);
    if (list.includes(sid) !== (how === "session/close")) problems.push(`${what}: listed after ${how}: ${list.includes(sid)}`);
    await a.end();
  }
  assert.deepEqual(problems, []);
});

test("EOF while a turn waits on the client (/ask, /elicit, /term): the turn answers cancelled like any running turn, a terminal is released, the agent exits 0 (raw)", async (t) => {
  // acp-agent --help: "EOF on stdin, SIGTERM or SIGINT: running turns are cancelled"; agent.h:
  // acp_agent_shutdown() "Cancels every turn". A /sleep answers cancelled at EOF (wire.test.mjs); a turn
  // blocked on a client request is a running turn too.
  const dir = tempDir(t);
  const problems = [];
  for (const [cmd, waitsOn] of [
    ["/sleep 20000", null],
    ["/ask", "session/request_permission"],
    ["/elicit", "elicitation/create"],
    ["/term sleep 20", "terminal/wait_for_exit"],
  ]) {
    const { a, sid } = await stalling(t, dir, cmd);
    const from = a.lines.length;
    const prompt = a.prompt(sid, cmd);
    if (waitsOn) await soon(a.waitFor((m) => m.method === waitsOn, from), `${cmd}: ${waitsOn}`);
    else await a.request("session/list", {});
    a.finish(); // EOF (over WebSocket, whose close is both ways: SIGTERM, which still writes)
    const p = await soon(prompt, `${cmd}: the prompt response after EOF`);
    if (p.result?.stopReason !== "cancelled") problems.push(`${cmd}: EOF answered the running turn ${JSON.stringify(p.result ?? p.error)}, not cancelled`);
    if (cmd.startsWith("/term") && a.requestsOf("terminal/release", from).length !== 1) problems.push(`${cmd}: no terminal/release after EOF`);
    await a.end();
  }
  assert.deepEqual(problems, []);
});

test("/elicit: a decline or cancel that carries extra members (content, _meta) is still a decline or cancel (SDK)", async (t) => {
  // The schema's decline and cancel variants do not forbid other members, and agents decode leniently
  // (REQUIREMENTS §5): elicitation.mdx "Agents MUST handle decline, cancel".
  const dir = tempDir(t);
  const { a, sid } = await opened(sdkAgent, t, dir, { elicitation: {} });
  for (const [answer, text] of [
    [{ action: "decline", content: { name: "typed before declining" } }, "elicitation: decline"],
    [{ action: "cancel", content: {} }, "elicitation: cancel"],
    [{ action: "decline", _meta: { "vendor.example/reason": "user closed the form" } }, "elicitation: decline"],
  ]) {
    a.elicitation = answer;
    assert.equal(textOf((await a.prompt(sid, "/elicit")).updates), text, JSON.stringify(answer));
  }
  await a.end();
});

test("malformed capability markers (true instead of {}, 'true' for terminal) advertise nothing: no notice, compaction, elicitation/create, terminal/* or boolean option (raw)", async (t) => {
  // initialization.mdx: omitted capabilities are unsupported; the schema marks each of these
  // x-deserialize-default-on-error (a malformed value decodes as the default: null / false), and the
  // official SDK decodes {notices: true, compaction: true, form: true, boolean: true, terminal: "true"}
  // to none of them. An agent that reads `true` as `{}` sends what the client never opted into.
  const dir = tempDir(t);
  const a = rawAgent(t, {
    store: join(dir, "sessions.db"),
    handlers: { "elicitation/create": (m, h) => h.reply(m.id, { action: "decline" }), "terminal/create": (m, h) => h.replyError(m.id, -32601, "Method not found") },
  });
  await a.init({
    clientCapabilities: { terminal: "true", elicitation: { form: true }, session: { notices: true, compaction: true, configOptions: { boolean: true } } },
  });
  const r = await a.request("session/new", { cwd: dir, mcpServers: [] });
  const problems = [];
  if (r.result.configOptions.some((o) => o.type === "boolean")) problems.push("a boolean config option for configOptions.boolean: true");
  const sid = r.result.sessionId;
  for (const cmd of ["/notice hi", "/compact", "/elicit", "/term echo hi"]) {
    const from = a.lines.length;
    await a.prompt(sid, cmd);
    const sent = a.lines.slice(from).map((l) => l.msg.params?.update?.sessionUpdate ?? l.msg.method).filter((k) => k && /notice|compaction|elicitation|terminal/.test(k));
    if (sent.length) problems.push(`${cmd}: sent ${[...new Set(sent)].join(", ")}`);
  }
  assert.deepEqual(problems, []);
  a.violations.length = 0; // reported above, one line per command
  await a.end();
});

// ---- extension methods (extensibility.mdx) ----------------------------------------------------------------

test("extension methods: _acp-agent/echo answers its params, advertised under agentCapabilities._meta; unknown _x -> -32601, unknown notifications ignored (raw)", async (t) => {
  const dir = tempDir(t);
  const a = rawAgent(t, { store: join(dir, "sessions.db") });
  const init = await a.init();
  assert.deepEqual(init.agentCapabilities._meta?.["acp-agent"]?.methods, ["_acp-agent/echo"], JSON.stringify(init.agentCapabilities));
  const params = { text: "héllo", n: 12345678901234, nested: { list: [1, null, true] } };
  assert.deepEqual((await a.request("_acp-agent/echo", params)).result, params);
  const unknown = await a.request("_acp-agent/nope", {});
  assert.equal(unknown.error?.code, -32601, JSON.stringify(unknown));
  a.notify("_acp-agent/whatever", { x: 1 }); // SHOULD be ignored: no answer, the connection lives
  const sid = await a.newSession(dir);
  await alive(a, sid);
  assert.ok(!a.lines.some((e) => e.msg.id === undefined && "error" in e.msg), "a notification was answered");
  await a.end();
});

test("/ext: the agent calls the client's _acp-agent/ping only when the client advertised _meta.acp-agent, and reports its answer or error (raw)", async (t) => {
  const dir = tempDir(t);
  const pong = (m, h) => h.reply(m.id, { pong: m.params?.from ?? null, session: m.params?.sessionId === undefined ? null : "yes" });
  const { a, sid } = await opened(rawAgent, t, dir, { handlers: { "_acp-agent/ping": pong } }, { clientCapabilities: { _meta: { "acp-agent": {} } } });
  const r = await rawTurn(a, sid, "/ext");
  assert.equal(r.resp.result?.stopReason, "end_turn");
  assert.equal(allText(r.updates).trim(), 'ext: {"pong":"acp-agent","session":"yes"}');
  await a.end();

  // the client does not know it: its -32601 is reported, the connection lives
  const { a: b, sid: sid2 } = await opened(rawAgent, t, dir, {}, { clientCapabilities: { _meta: { "acp-agent": {} } } });
  const r2 = await rawTurn(b, sid2, "/ext");
  assert.match(allText(r2.updates), /^ext: error: /);
  await alive(b, sid2);
  await b.end();

  // not advertised: nothing is sent
  const { a: c, sid: sid3 } = await opened(rawAgent, t, dir, { handlers: { "_acp-agent/ping": pong } });
  const r3 = await rawTurn(c, sid3, "/ext");
  assert.match(allText(r3.updates), /did not advertise/);
  assert.ok(!c.lines.some((e) => e.msg.method === "_acp-agent/ping"), "an extension request to a client that never advertised it");
  await c.end();
});
