// Shared harness for the acp-agent interop tests (importable by other test authors).
//
// Two ways to talk to a spawned `$ACP_BUILD/acp-agent`:
//   - sdkAgent(): the official TypeScript SDK (`@agentclientprotocol/sdk`) is the client. We hand it a
//     Stream of our own so that every stdout line is first checked (valid JSON-RPC, nothing stray) and
//     stamped with its arrival index before the SDK sees it.
//   - rawAgent(): a tiny NDJSON client for what the SDK hides: raw ids, byte order on stdout, malformed
//     input, batches.
// Both record every stdout line in order, collect session/update notifications per session in arrival
// order, and end with end(): close stdin, wait for the exit, and assert exit code 0 (ASan/LSan exit 66 on
// leaks) with no stray stdout. Every agent and temp dir a test starts is stopped/removed by t.after.
// Checked on every message of every connection, and asserted by end():
//   - the message validates against the v1 JSON Schema (schema.mjs, strict) with no custom field
//     outside _meta, and fs/* calls only when the client advertised them (schemaCheck);
//   - history updates of a session arrive only while a session/prompt or session/load of it is
//     unanswered (turnTracker): every turn's updates precede its response, replay precedes the load
//     response.
// Use `test` from here (node:test with a guard timeout) so an agent that never answers fails one test.
// The agent binary can be overridden with ACP_AGENT (e.g. mutate.mjs, or another agent to compare).

import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, realpathSync, mkdirSync, writeFileSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import assert from "node:assert/strict";
import nodeTest from "node:test";
import * as acp from "@agentclientprotocol/sdk";

import { validate, unknownKeys } from "./schema.mjs";

export { acp };

// Checks one message from the agent against the schema. `methodOf(id)` names the request a response
// answers; `caps` are the client's fs capabilities. Returns a list of violations (empty when fine).
const RESPONSE = {
  initialize: "InitializeResponse",
  "session/new": "NewSessionResponse",
  "session/load": "LoadSessionResponse",
  "session/resume": "ResumeSessionResponse",
  "session/list": "ListSessionsResponse",
  "session/delete": "DeleteSessionResponse",
  "session/close": "CloseSessionResponse",
  "session/prompt": "PromptResponse",
};
const AGENT_REQUEST = {
  "session/request_permission": "RequestPermissionRequest",
  "fs/read_text_file": "ReadTextFileRequest",
  "fs/write_text_file": "WriteTextFileRequest",
};
const AGENT_NOTIFICATION = { "session/update": "SessionNotification", "$/cancel_request": "CancelRequestNotification" };
export function schemaCheck(msg, methodOf, caps = {}) {
  const bad = [];
  const check = (type, value, what) => {
    const r = validate(type, value);
    if (r) bad.push(`${what}: ${r}`);
    for (const k of unknownKeys(value, type)) bad.push(`${what}: custom field ${k} outside _meta (extensibility.mdx MUST NOT)`);
  };
  if ("method" in msg) {
    const table = "id" in msg ? AGENT_REQUEST : AGENT_NOTIFICATION;
    if (!table[msg.method]) bad.push(`agent sent ${"id" in msg ? "request" : "notification"} ${msg.method}, which a v1 client without extensions does not know`);
    else check(table[msg.method], msg.params, msg.method);
    if (msg.method === "fs/read_text_file" && !caps.readTextFile) bad.push("fs/read_text_file without the client's readTextFile capability");
    if (msg.method === "fs/write_text_file" && !caps.writeTextFile) bad.push("fs/write_text_file without the client's writeTextFile capability");
  } else if ("error" in msg) {
    check("Error", msg.error, "error");
  } else {
    const m = methodOf(msg.id);
    if (m && RESPONSE[m]) check(RESPONSE[m], msg.result, `${m} result`);
  }
  return bad;
}
export const BUILD = process.env.ACP_BUILD ?? join(process.cwd(), "build");
export const SOURCE = process.env.ACP_SOURCE ?? process.cwd();
export const AGENT = process.env.ACP_AGENT ?? join(BUILD, "acp-agent");

// Generous: a loaded 2-core machine running ASan builds. These guard against hangs, they do not measure.
export const EXIT_TIMEOUT_MS = 60_000;
const TEST_TIMEOUT_MS = Number(process.env.ACP_TEST_TIMEOUT_MS ?? 240_000);

/** node:test's test() with a guard timeout, so an agent that never answers fails one test, not the file. */
export const test = (name, fn) => nodeTest(name, { timeout: TEST_TIMEOUT_MS }, fn);

/** A fresh temp dir (realpath'd, so root-set comparisons are exact), removed after the test. */
export function tempDir(t, prefix = "acp-itest-") {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** mkdir -p + optional files: {"a.txt": "text"}; returns the dir. */
export function makeDir(dir, files = {}) {
  mkdirSync(dir, { recursive: true });
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

/** Concatenated bytes of every file of the store (db, -wal, -shm, -journal) for on-disk checks. */
export function storeBytes(storePath) {
  const dir = storePath.slice(0, storePath.lastIndexOf("/"));
  const base = storePath.slice(storePath.lastIndexOf("/") + 1);
  const parts = [];
  for (const f of readdirSync(dir)) if (f.startsWith(base)) parts.push(readFileSync(join(dir, f)));
  return Buffer.concat(parts);
}

const isObj = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

// Spawns the agent and splits its stdout into lines; onLine(line, msg) gets each one in order.
// store: a file path or a postgresql:// URI (then pass home: a temp dir for the agent's cwd and XDG
// state); null runs the agent without --store (env must then point XDG_STATE_HOME/HOME somewhere safe).
function spawnAgent(t, { store, home: homeDir, args = [], cwd, env = {} }, onLine) {
  assert.ok(store || env.XDG_STATE_HOME || env.HOME, "every test uses its own store");
  const home = homeDir ?? (store ? store.slice(0, store.lastIndexOf("/")) : (env.XDG_STATE_HOME ?? env.HOME));
  const xdg = home + "/xdg";
  const proc = spawn(AGENT, [...(store ? ["--store", store] : []), ...args], {
    cwd: cwd ?? home,
    env: Object.fromEntries(Object.entries({ ...process.env, XDG_STATE_HOME: xdg, ...env }).filter(([, v]) => v != null)),
    stdio: ["pipe", "pipe", "pipe"],
  });
  const st = {
    proc,
    stderr: "",
    stray: [], // stdout lines that are not JSON-RPC messages
    exited: null, // {code, signal} once exited
    exit: null,
  };
  st.exit = new Promise((resolve) => {
    proc.on("exit", (code, signal) => {
      st.exited = { code, signal };
      resolve(st.exited);
    });
    proc.on("error", (err) => {
      st.exited = { code: -1, signal: null, error: err };
      resolve(st.exited);
    });
  });
  proc.stdin.on("error", () => {}); // EPIPE after the agent died is checked via the exit code instead
  proc.stderr.on("data", (d) => {
    st.stderr += d.toString("utf8");
    if (st.stderr.length > 1 << 20) st.stderr = st.stderr.slice(-(1 << 19));
  });
  let pending = [];
  proc.stdout.on("data", (chunk) => {
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(10, start);
      if (nl < 0) break;
      pending.push(chunk.subarray(start, nl));
      const line = Buffer.concat(pending).toString("utf8");
      pending = [];
      start = nl + 1;
      let msg;
      try {
        msg = JSON.parse(line);
      } catch {
        msg = undefined;
      }
      if (!isObj(msg) || msg.jsonrpc !== "2.0") {
        st.stray.push(line.slice(0, 200));
        continue;
      }
      onLine(line, msg);
    }
    if (start < chunk.length) pending.push(chunk.subarray(start));
  });
  proc.stdout.on("end", () => {
    if (pending.length) st.stray.push("(unterminated) " + Buffer.concat(pending).toString("utf8").slice(0, 200));
    pending = [];
  });
  t.after(() => {
    if (!st.exited) proc.kill("SIGKILL");
  });
  return st;
}

async function endAgent(st, { expectCode = 0 } = {}, violations = []) {
  if (!st.exited) st.proc.stdin.end();
  const guard = setTimeout(() => st.proc.kill("SIGKILL"), EXIT_TIMEOUT_MS);
  const ex = await st.exit;
  clearTimeout(guard);
  const tail = st.stderr.slice(-4000);
  assert.deepEqual(st.stray, [], "stdout carried something that is not a JSON-RPC message");
  assert.deepEqual(violations.slice(0, 10), [], "messages from the agent that break the v1 schema, the client's capabilities or turn order");
  assert.equal(ex.signal, null, `agent died by ${ex.signal}; stderr:\n${tail}`);
  assert.equal(ex.code, expectCode, `agent exit code ${ex.code} (66 = sanitizer/leak report); stderr:\n${tail}`);
  return ex;
}

async function kill9(st) {
  st.proc.kill("SIGKILL");
  await st.exit;
}

// Ordering invariant checked on every connection: history updates (CONVERSATION kinds) of a session
// arrive only while a session/prompt or session/load of that session is unanswered, i.e. every turn's
// updates precede its response and every replayed update precedes the load response.
function turnTracker(violations) {
  const pending = new Map(); // request id key -> sessionId
  const open = new Map(); // sessionId -> unanswered prompt/load count
  const done = new Map(); // sessionId -> seq of the last prompt/load response
  return {
    done,
    sent(msg) {
      if ((msg.method === "session/prompt" || msg.method === "session/load") && typeof msg.params?.sessionId === "string") {
        pending.set(JSON.stringify(msg.id), msg.params.sessionId);
        open.set(msg.params.sessionId, (open.get(msg.params.sessionId) ?? 0) + 1);
      }
    },
    received(msg, seq) {
      if (!("method" in msg) && "id" in msg) {
        const sid = pending.get(JSON.stringify(msg.id));
        if (sid === undefined) return;
        pending.delete(JSON.stringify(msg.id));
        open.set(sid, open.get(sid) - 1);
        done.set(sid, seq);
      } else if (msg.method === "session/update" && CONVERSATION.has(msg.params?.update?.sessionUpdate)) {
        const sid = msg.params.sessionId;
        if (!open.get(sid))
          violations.push(`${msg.params.update.sessionUpdate} for ${sid} outside any prompt turn or load replay (after its response?)`);
      }
    },
  };
}

/** Default answers a client gives to agent→client requests; tests override per agent. */
function permissionAnswer(policy, params) {
  if (policy === "cancel") return { outcome: { outcome: "cancelled" } };
  const want = policy === "deny" ? ["reject_once", "reject_always"] : ["allow_once", "allow_always"];
  const opt = params.options.find((o) => want.includes(o.kind));
  assert.ok(opt, `permission request offers no ${want.join("/")} option: ${JSON.stringify(params.options)}`);
  return { outcome: { outcome: "selected", optionId: opt.optionId } };
}

/**
 * The official SDK as the client.
 * opts: store (required), args, cwd (the agent process's cwd), env,
 *       fs: false | {read: (path) => string, caps?: {readTextFile, writeTextFile}} — advertises fs
 *           capabilities (both unless caps says otherwise) and answers fs requests,
 *       permission: "allow" | "deny" | "cancel".
 * Returns {ctx (ClientContext), init(), newSession(cwd, extra), prompt(sid, text), updates(sid), all, msgs,
 *          fsReads, fsWrites, permissions, end(), kill9()}.
 */
export function sdkAgent(t, opts) {
  const h = {
    violations: [],
    sent: new Map(), // request id -> method, for checking responses
    msgs: [], // every received message in order: {seq, msg}
    all: [], // every session/update in order: {seq, sessionId, update}
    bySession: new Map(),
    fsReads: [],
    fsWrites: [],
    permissions: [],
    permission: opts.permission ?? "allow",
  };
  let controller;
  const readable = new ReadableStream({ start: (c) => (controller = c) });
  const fsCaps = opts.fs ? { readTextFile: true, writeTextFile: true, ...opts.fs.caps } : {};
  h.turns = turnTracker(h.violations);
  h.st = spawnAgent(t, opts, (line, msg) => {
    const seq = h.msgs.length;
    h.msgs.push({ seq, msg });
    h.violations.push(...schemaCheck(msg, (id) => h.sent.get(JSON.stringify(id)), fsCaps));
    h.turns.received(msg, seq);
    if (msg.method === "session/update" && isObj(msg.params)) {
      const e = { seq, sessionId: msg.params.sessionId, update: msg.params.update };
      h.all.push(e);
      if (!h.bySession.has(e.sessionId)) h.bySession.set(e.sessionId, []);
      h.bySession.get(e.sessionId).push(e);
    }
    controller.enqueue(msg);
  });
  h.st.proc.stdout.on("end", () => {
    try {
      controller.close();
    } catch {}
  });
  const writable = new WritableStream({
    write(msg) {
      if ("id" in msg && "method" in msg) h.sent.set(JSON.stringify(msg.id), msg.method);
      h.turns.sent(msg);
      if (!h.st.exited) h.st.proc.stdin.write(JSON.stringify(msg) + "\n");
    },
  });
  const app = acp
    .client({ name: "libacp-interop" })
    .onNotification("session/update", () => {}) // recorded by the tap above, in arrival order
    .onRequest("session/request_permission", ({ params }) => {
      h.permissions.push(params);
      return permissionAnswer(h.permission, params);
    })
    .onRequest("fs/read_text_file", ({ params }) => {
      h.fsReads.push(params);
      if (!opts.fs) throw acp.RequestError.methodNotFound("fs/read_text_file");
      return { content: opts.fs.read(params.path) };
    })
    .onRequest("fs/write_text_file", ({ params }) => {
      h.fsWrites.push(params);
      if (!opts.fs) throw acp.RequestError.methodNotFound("fs/write_text_file");
      return {};
    });
  h.conn = app.connect({ readable, writable });
  h.ctx = h.conn.agent;
  // When the agent dies the SDK only says "ACP connection closed": add the exit status and stderr.
  const explain = async (e) => {
    if (!h.st.exited) await Promise.race([h.st.exit, new Promise((r) => setTimeout(r, 2000))]);
    if (h.st.exited) e.message += ` (acp-agent exit ${h.st.exited.code}, signal ${h.st.exited.signal}; stray stdout ${JSON.stringify(h.st.stray)}; stderr:\n${h.st.stderr.slice(-3000)})`;
    throw e;
  };
  h.request = (method, params) => h.ctx.request(method, params).catch(explain);
  h.updates = (sid) => (h.bySession.get(sid) ?? []).map((e) => e.update);
  h.init = async (params = {}) => {
    const fs = opts.fs ? fsCaps : { readTextFile: false, writeTextFile: false };
    h.initResult = await h.request("initialize", {
      protocolVersion: 1,
      clientCapabilities: { fs, terminal: false },
      clientInfo: { name: "libacp-interop", version: "0.0.0" },
      ...params,
    });
    return h.initResult;
  };
  h.newSession = async (cwd, extra = {}) => {
    const r = await h.request("session/new", { cwd, mcpServers: [], ...extra });
    return r.sessionId;
  };
  // One prompt turn: the updates of this session that arrived between send and response.
  h.prompt = async (sid, text) => {
    const before = (h.bySession.get(sid) ?? []).length;
    const prompt = typeof text === "string" ? [{ type: "text", text }] : text;
    const response = await h.request("session/prompt", { sessionId: sid, prompt });
    // the tap runs ahead of the SDK: keep what arrived before the response line
    const respSeq = h.turns.done.get(sid);
    const updates = (h.bySession.get(sid) ?? []).slice(before).filter((e) => e.seq < respSeq).map((e) => e.update);
    return { response, stopReason: response.stopReason, updates };
  };
  h.end = async (o) => {
    const ex = await endAgent(h.st, o, h.violations);
    h.conn.close();
    return ex;
  };
  h.kill9 = async () => {
    await kill9(h.st);
    h.conn.close();
  };
  return h;
}

/**
 * Raw NDJSON client. opts: store (required), args, cwd, env,
 * permission ("allow" | "deny" | "cancel" | "hold": kept unanswered in `held`, answer with reply()).
 * lines: every stdout line {seq, raw, msg}. request() resolves with the whole response message (never
 * throws on error responses). Agent→client requests: session/request_permission answered per policy,
 * anything else gets -32601 (the raw client advertises no capabilities).
 */
export function rawAgent(t, opts) {
  const h = { lines: [], waiters: [], responses: new Map(), nextId: 1, permission: opts.permission ?? "allow", held: [] };
  h.violations = [];
  h.sent = new Map();
  h.turns = turnTracker(h.violations);
  h.st = spawnAgent(t, opts, (raw, msg) => {
    const e = { seq: h.lines.length, raw, msg };
    h.lines.push(e);
    h.violations.push(...schemaCheck(msg, (id) => h.sent.get(JSON.stringify(id))));
    h.turns.received(msg, e.seq);
    if ("id" in msg && !("method" in msg)) {
      const key = JSON.stringify(msg.id);
      const w = h.responses.get(key);
      if (w) {
        h.responses.delete(key);
        w.resolve(msg);
      }
    } else if ("id" in msg && "method" in msg) {
      if (msg.method === "session/request_permission" && h.permission === "hold") h.held.push(msg);
      else if (msg.method === "session/request_permission")
        h.send({ jsonrpc: "2.0", id: msg.id, result: permissionAnswer(h.permission, msg.params) });
      else h.send({ jsonrpc: "2.0", id: msg.id, error: { code: -32601, message: "Method not found" } });
    }
    h.waiters = h.waiters.filter((w) => !w.test(e));
  });
  // Once stdout has closed nothing more can arrive: fail every wait with the agent's exit status
  // instead of leaving the test hanging.
  h.st.proc.on("close", (code, signal) => {
    const err = () => new Error(`acp-agent closed stdout (exit ${code}, signal ${signal}) while a response/line was awaited; stderr:\n${h.st.stderr.slice(-3000)}`);
    for (const w of h.responses.values()) w.reject(err());
    for (const w of h.waiters) w.reject(err());
    h.responses.clear();
    h.waiters = [];
  });
  /** Writes a message (object) or raw text (string, newline appended). */
  h.send = (m) => {
    if (!h.st.exited) h.st.proc.stdin.write((typeof m === "string" ? m : JSON.stringify(m)) + "\n");
  };
  /** Sends a request; id defaults to a fresh integer. Resolves with the response message. */
  // A request fired and never awaited (a /stream cut short by kill -9) must not become an unhandled
  // rejection when stdout closes: the catch marks it handled, awaiting callers still see the error.
  const expect = (id) => {
    const p = new Promise((resolve, reject) => h.responses.set(JSON.stringify(id), { resolve, reject }));
    p.catch(() => {});
    return p;
  };
  h.request = (method, params, id = h.nextId++) => {
    const p = expect(id);
    h.sent.set(JSON.stringify(id), method);
    const m = { jsonrpc: "2.0", id, method };
    if (params !== undefined) m.params = params;
    h.turns.sent(m);
    h.send(m);
    return p;
  };
  /** Resolves with the response to an id sent by hand (raw text). */
  h.response = (id) => expect(id);
  h.notify = (method, params) => h.send({ jsonrpc: "2.0", method, params });
  h.reply = (id, result) => h.send({ jsonrpc: "2.0", id, result });
  /** Resolves with the first line (already received or future) for which pred(msg, line) holds. */
  h.waitFor = (pred, from = 0) => {
    for (let i = from; i < h.lines.length; i++) if (pred(h.lines[i].msg, h.lines[i])) return Promise.resolve(h.lines[i]);
    return new Promise((resolve, reject) =>
      h.waiters.push({
        reject,
        test: (e) => {
          if (e.seq >= from && pred(e.msg, e)) {
            resolve(e);
            return true;
          }
          return false;
        },
      }),
    );
  };
  h.nextLine = () => h.waitFor(() => true, h.lines.length);
  h.init = async (params = {}) => {
    const r = await h.request("initialize", { protocolVersion: 1, clientCapabilities: {}, ...params });
    assert.ok(r.result, `initialize failed: ${JSON.stringify(r)}`);
    return r.result;
  };
  h.newSession = async (cwd, extra = {}) => {
    const r = await h.request("session/new", { cwd, mcpServers: [], ...extra });
    assert.ok(r.result?.sessionId, `session/new failed: ${JSON.stringify(r)}`);
    return r.result.sessionId;
  };
  h.prompt = (sid, text) => h.request("session/prompt", { sessionId: sid, prompt: [{ type: "text", text }] });
  /** session/update lines (seq + update) for a session, optionally in [from, to). */
  h.updatesOf = (sid, from = 0, to = Infinity) =>
    h.lines.filter((e) => e.seq >= from && e.seq < to && e.msg.method === "session/update" && e.msg.params?.sessionId === sid);
  h.end = (o) => endAgent(h.st, o, h.violations);
  h.kill9 = () => kill9(h.st);
  return h;
}

// ---- update helpers --------------------------------------------------------------------------------

export const kindOf = (u) => u.sessionUpdate;
export const textOf = (updates, kind = "agent_message_chunk") =>
  updates
    .filter((u) => u.sessionUpdate === kind && u.content?.type === "text")
    .map((u) => u.content.text)
    .join("");

// The kinds that make up a conversation (what session/load must replay). Live-only kinds
// (available_commands_update, session_info_update, usage_update, notices) are left out of comparisons.
export const CONVERSATION = new Set([
  "user_message_chunk",
  "agent_message_chunk",
  "agent_thought_chunk",
  "tool_call",
  "tool_call_update",
  "plan",
]);

/**
 * Normal form of a conversation for comparing a live run with its replay: conversation kinds only,
 * consecutive chunks of one message (same kind, same messageId) coalesced (the issue allows the agent
 * to coalesce on replay), messageIds dropped (not required to be stable across loads).
 */
export function normalize(updates) {
  const out = [];
  for (const u of updates) {
    if (!CONVERSATION.has(u.sessionUpdate)) continue;
    if (u.sessionUpdate.endsWith("_chunk") && u.content?.type === "text") {
      const last = out[out.length - 1];
      if (last && last.sessionUpdate === u.sessionUpdate && last._mid === (u.messageId ?? null)) {
        last.content.text += u.content.text;
        continue;
      }
      out.push({ sessionUpdate: u.sessionUpdate, _mid: u.messageId ?? null, content: { type: "text", text: u.content.text } });
      continue;
    }
    out.push(structuredClone(u));
  }
  for (const o of out) delete o._mid;
  return out;
}

/** Live-turn expectation: the user message the agent must store, followed by what the turn streamed. */
// (A unique placeholder messageId keeps two consecutive user messages apart; normalize() drops it.)
let userMsgSeq = 0;
export const userMsg = (text) => ({
  sessionUpdate: "user_message_chunk",
  messageId: `expected-user-${++userMsgSeq}`,
  content: { type: "text", text },
});

/** Resolves once Date.now() has moved past an ISO timestamp (so the next write gets a later one). */
export async function clockPast(iso) {
  const t = Date.parse(iso);
  while (Date.now() <= t + 1) await new Promise((r) => setTimeout(r, 2));
}

/** Collects every page of session/list (raw client) following nextCursor. */
export async function listAll(a, params = {}) {
  const out = [];
  let cursor;
  for (let i = 0; i < 10_000; i++) {
    const r = await a.request("session/list", cursor ? { ...params, cursor } : params);
    assert.ok(r.result, `session/list failed: ${JSON.stringify(r.error)}`);
    out.push(...r.result.sessions);
    cursor = r.result.nextCursor;
    if (cursor == null) return out;
  }
  throw new Error("session/list never ended");
}

export const ISO8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
