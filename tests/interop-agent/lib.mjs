// SPDX-License-Identifier: Apache-2.0
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
//     outside _meta, and respects the capabilities the client advertised in its initialize (fs/*,
//     terminal/*, elicitation modes, notices, compaction, boolean config options, terminal auth
//     methods) and the agent's own (logout only when advertised) (schemaCheck);
//   - history updates of a session arrive only while a session/prompt or session/load of it is
//     unanswered (turnTracker): every turn's updates precede its response, replay precedes the load
//     response.
// Use `test` from here (node:test with a guard timeout) so an agent that never answers fails one test.
// The agent binary can be overridden with ACP_AGENT (e.g. mutate.mjs, or another agent to compare).
//
// Transport (ACP_TRANSPORT): "stdio" (default) talks to the agent on its stdin/stdout. "ws" starts
// `acp-agent --listen 127.0.0.1:0 --token-file F` instead and connects over WebSocket (issue 11):
// sdkAgent through the official SDK's createWebSocketStream (experimental/ws-client, on the ws
// package, with the bearer token), rawAgent with a plain ws WebSocket (one text message per line,
// so raw text still goes out as written). Then closeStdin() closes the WebSocket (the connection's
// EOF, both ways: a WebSocket has no half-close), finish() is the end after which the agent still
// writes (stdio: EOF; WebSocket: SIGTERM, the orderly shutdown: turns cancelled and answered,
// commits, close), end() finishes and still asserts exit 0 and no stray stdout; kill9() kills the same agent process. Tests that
// only mean something on stdio (byte framing, a half-closed stdin) call stdioOnly(t, why).
// "http" is the same over Streamable HTTP (HTTP/1.1, Node's fetch): sdkAgent through the SDK's
// createHttpStream (experimental/http-client), rawAgent through a small client of ours that
// POSTs each line as written (Acp-Session-Id from its params.sessionId, or the session of the
// request it answers) and reads the connection's and each session's SSE stream, opening a
// session's before the first POST naming it (as the SDK's client does). A POST the server
// refuses is recorded as stray ("(HTTP 400 ...)"): what stdio answers with a JSON-RPC error for
// an unparsable line is an HTTP status here, so such tests call notOverHttp(t, why).
// closeStdin() sends DELETE.

import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, realpathSync, mkdirSync, writeFileSync, readdirSync, readFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import assert from "node:assert/strict";
import nodeTest from "node:test";
import * as acpStable from "@agentclientprotocol/sdk";
import * as acpUnstable from "@agentclientprotocol/sdk/unstable";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";
import { createHttpStream } from "@agentclientprotocol/sdk/experimental/http-client";
import { WebSocket } from "ws";
import { randomBytes } from "node:crypto";

import { validate, unknownKeys } from "./schema.mjs";

// ACP_UNSTABLE=1: the SDK's unstable build as the client (its unstable methods and types, e.g.
// subagent_update); schema.mjs checks against the unstable schema either way.
const acp = process.env.ACP_UNSTABLE ? acpUnstable : acpStable;
export { acp };

const isObj = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

// Checks one message from the agent against the schema and the peer's capabilities. `methodOf(id)`
// names the request a response answers; `caps` is the clientCapabilities of the client's initialize
// (the legacy form {readTextFile, writeTextFile} still means the fs capabilities alone); `agentInit`
// is the agent's initialize result when known (for the auth.logout rule). Returns a list of
// violations (empty when fine). Capability rules (initialization.mdx: omitted = unsupported; an
// object marker means supported, omitted or null means not):
//   fs/read_text_file, fs/write_text_file  only with fs.readTextFile / fs.writeTextFile true
//   terminal/*                              only with terminal true (terminals.mdx MUST NOT)
//   elicitation/create                      only for a mode the client advertised (elicitation.mdx)
//   elicitation/complete                    only to a client with URL elicitation
//   notice updates                          only with session.notices (schema Notice MUST)
//   compaction_update / _summary_chunk      only with session.compaction (v1-draft/prompt-turn MUST NOT)
//   type "boolean" config options           only with session.configOptions.boolean, in every result
//                                           and config_option_update (session-config-options MUST NOT)
//   authMethods of type "terminal"          only with auth.terminal true (schema AuthMethodTerminal)
//   logout                                  answered iff agentCapabilities.auth.logout was advertised
const RESPONSE = {
  initialize: "InitializeResponse",
  authenticate: "AuthenticateResponse",
  logout: "LogoutResponse",
  "session/new": "NewSessionResponse",
  "session/load": "LoadSessionResponse",
  "session/resume": "ResumeSessionResponse",
  "session/list": "ListSessionsResponse",
  "session/delete": "DeleteSessionResponse",
  "session/close": "CloseSessionResponse",
  "session/prompt": "PromptResponse",
  "session/set_mode": "SetSessionModeResponse",
  "session/set_config_option": "SetSessionConfigOptionResponse",
  // the unstable schema's (schema.mjs reads schema.unstable.json)
  "session/set_title": "SetSessionTitleResponse",
  "session/archive": "ArchiveSessionResponse",
  "session/unarchive": "UnarchiveSessionResponse",
  "session/status": "SessionStatusResponse",
  // unstable (schema.unstable.json)
  "providers/list": "ListProvidersResponse",
  "providers/set": "SetProviderResponse",
  "providers/disable": "DisableProviderResponse",
  "auth/status": "AuthStatusResponse",
};
const AGENT_REQUEST = {
  "session/request_permission": "RequestPermissionRequest",
  "fs/read_text_file": "ReadTextFileRequest",
  "fs/write_text_file": "WriteTextFileRequest",
  "terminal/create": "CreateTerminalRequest",
  "terminal/output": "TerminalOutputRequest",
  "terminal/wait_for_exit": "WaitForTerminalExitRequest",
  "terminal/kill": "KillTerminalRequest",
  "terminal/release": "ReleaseTerminalRequest",
  "elicitation/create": "CreateElicitationRequest",
};
const AGENT_NOTIFICATION = {
  "session/update": "SessionNotification",
  "$/cancel_request": "CancelRequestNotification",
  "elicitation/complete": "CompleteElicitationNotification",
  "auth/status_update": "AuthStatusUpdateNotification", // unstable
};
const FULL_CAPS = ["fs", "terminal", "session", "auth", "elicitation", "_meta"];
/** clientCapabilities in full form; the legacy fs-only object {readTextFile, writeTextFile} is wrapped. */
export function clientCaps(caps) {
  if (!isObj(caps)) return {};
  if (Object.keys(caps).some((k) => FULL_CAPS.includes(k)) || !("readTextFile" in caps || "writeTextFile" in caps)) return caps;
  return { fs: caps };
}
// The boolean capabilities; every other one is a marker object ({} = supported, omitted or null = not).
// A value of the wrong type is malformed and, as the schema's x-deserialize-default-on-error says (and
// the SDK does), decodes to the default: unsupported. So `notices: true` or `terminal: "true"` advertise
// nothing.
const BOOLEAN_CAPS = new Set(["terminal", "fs.readTextFile", "fs.writeTextFile", "auth.terminal"]);
/** True when the capability object advertises `path` (dotted): a boolean cap true, a marker an object. */
export function hasCap(caps, path) {
  let v = caps;
  for (const k of path.split(".")) v = isObj(v) ? v[k] : undefined;
  return BOOLEAN_CAPS.has(path) ? v === true : isObj(v);
}
function booleanOptions(configOptions) {
  return Array.isArray(configOptions) ? configOptions.filter((o) => isObj(o) && o.type === "boolean").map((o) => o.id) : [];
}
export function schemaCheck(msg, methodOf, caps = {}, agentInit = null) {
  const bad = [];
  const cc = clientCaps(caps);
  const check = (type, value, what) => {
    const r = validate(type, value);
    if (r) bad.push(`${what}: ${r}`);
    for (const k of unknownKeys(value, type)) bad.push(`${what}: custom field ${k} outside _meta (extensibility.mdx MUST NOT)`);
  };
  const noBooleans = (configOptions, what) => {
    if (hasCap(cc, "session.configOptions.boolean")) return;
    for (const id of booleanOptions(configOptions))
      bad.push(`${what}: config option ${id} of type "boolean" without the client's session.configOptions.boolean (session-config-options.mdx MUST NOT)`);
  };
  if ("method" in msg) {
    const table = "id" in msg ? AGENT_REQUEST : AGENT_NOTIFICATION;
    // An extension method ('_' name) only to a client that advertised extensions under its
    // capabilities' _meta (extensibility.mdx: advertise custom capabilities so callers can check).
    const ext = typeof msg.method === "string" && msg.method.startsWith("_") && isObj(cc?._meta);
    if (!table[msg.method] && !ext) bad.push(`agent sent ${"id" in msg ? "request" : "notification"} ${msg.method}, which a v1 client without extensions does not know`);
    else if (table[msg.method]) check(table[msg.method], msg.params, msg.method);
    const p = isObj(msg.params) ? msg.params : {};
    if (msg.method === "fs/read_text_file" && !hasCap(cc, "fs.readTextFile")) bad.push("fs/read_text_file without the client's readTextFile capability");
    if (msg.method === "fs/write_text_file" && !hasCap(cc, "fs.writeTextFile")) bad.push("fs/write_text_file without the client's writeTextFile capability");
    if (msg.method.startsWith("terminal/") && cc.terminal !== true) bad.push(`${msg.method} without the client's terminal capability (terminals.mdx MUST NOT)`);
    if (msg.method === "elicitation/create" && !(typeof p.mode === "string" && hasCap(cc, `elicitation.${p.mode}`)))
      bad.push(`elicitation/create in mode ${JSON.stringify(p.mode)}, which the client did not advertise (elicitation.mdx MUST NOT)`);
    if (msg.method === "elicitation/complete" && !hasCap(cc, "elicitation.url")) bad.push("elicitation/complete to a client without URL elicitation");
    if (msg.method === "session/update" && isObj(p.update)) {
      const kind = p.update.sessionUpdate;
      if (kind === "notice" && !hasCap(cc, "session.notices")) bad.push("notice update without the client's session.notices (schema Notice: MUST only)");
      if ((kind === "compaction_update" || kind === "compaction_summary_chunk") && !hasCap(cc, "session.compaction"))
        bad.push(`${kind} without the client's session.compaction (prompt-turn MUST NOT)`);
      if (kind === "config_option_update") noBooleans(p.update.configOptions, "config_option_update");
      if (kind === "subagent_update" && !hasCap(cc, "subagents")) bad.push("subagent_update without the client's subagents capability (schema SubagentCapabilities: must advertise before)");
    }
  } else {
    const m = methodOf(msg.id);
    if ("error" in msg) {
      check("Error", msg.error, "error");
      if (m === "logout" && msg.error?.code === -32601 && agentInit && isObj(agentInit.agentCapabilities?.auth?.logout))
        bad.push("logout answered -32601 although agentCapabilities.auth.logout was advertised");
    } else {
      if (m && RESPONSE[m]) check(RESPONSE[m], msg.result, `${m} result`);
      const r = isObj(msg.result) ? msg.result : {};
      if (["session/new", "session/load", "session/resume", "session/set_config_option"].includes(m)) noBooleans(r.configOptions, `${m} result`);
      if (m === "initialize") {
        if (!hasCap(cc, "auth.terminal"))
          for (const am of Array.isArray(r.authMethods) ? r.authMethods : [])
            if (am?.type === "terminal") bad.push(`authMethods offers terminal method ${am.id} without the client's auth.terminal (schema AuthMethodTerminal MUST)`);
      }
      if (m === "logout" && agentInit && !isObj(agentInit.agentCapabilities?.auth?.logout))
        bad.push("logout succeeded although agentCapabilities.auth.logout was not advertised (clients MUST NOT call it: advertise what works)");
    }
  }
  return bad;
}
export const BUILD = process.env.ACP_BUILD ?? join(process.cwd(), "build");
export const SOURCE = process.env.ACP_SOURCE ?? process.cwd();
export const AGENT = process.env.ACP_AGENT ?? join(BUILD, "acp-agent");
export const TRANSPORT = process.env.ACP_TRANSPORT ?? "stdio";
if (!["stdio", "ws", "http"].includes(TRANSPORT)) throw new Error(`ACP_TRANSPORT=${TRANSPORT}: stdio, ws or http`);
// ws mode: every agent this process starts wants this token (a file the agent reads), every
// connection sends it.
const TOKEN = randomBytes(16).toString("hex");
let tokenFile = null;
function tokenPath() {
  if (!tokenFile) {
    const dir = mkdtempSync(join(tmpdir(), "acp-token-"));
    process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
    tokenFile = join(dir, "token");
    writeFileSync(tokenFile, TOKEN + "\n", { mode: 0o600 });
  }
  return tokenFile;
}

/** Skips the test over Streamable HTTP: `if (notOverHttp(t, "why")) return;`. */
export function notOverHttp(t, why) {
  if (TRANSPORT !== "http") return false;
  t.skip(`not over Streamable HTTP: ${why}`);
  return true;
}

/** Skips the test when not on stdio: `if (stdioOnly(t, "why")) return;`. */
export function stdioOnly(t, why) {
  if (TRANSPORT === "stdio") return false;
  t.skip(`stdio only: ${why}`);
  return true;
}

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


// Spawns the agent and hands each message it sends to onLine(line, msg), in order: on stdio its
// stdout split into lines; over WebSocket (TRANSPORT "ws") each text message. store: a file path or
// a postgresql:// URI (then pass home: a temp dir for the agent's cwd and XDG state); null runs the
// agent without --store (env must then point XDG_STATE_HOME/HOME somewhere safe). sdk: the messages
// go through the SDK's own WebSocket stream (objects; line is their JSON) instead of a raw socket.
// The returned st: proc, stderr, stray, exited, exit; send(text or message); closeInput() (EOF);
// onEnd(cb(why)) once nothing more can arrive; inputEnded(); pauseInput()/resumeInput(); closeCode
// (WebSocket: the close code the agent's end of it gave).
function spawnAgent(t, { store, home: homeDir, args = [], cwd, env = {}, sdk = false }, onLine) {
  assert.ok(store || env.XDG_STATE_HOME || env.HOME, "every test uses its own store");
  const home = homeDir ?? (store ? store.slice(0, store.lastIndexOf("/")) : (env.XDG_STATE_HOME ?? env.HOME));
  const xdg = home + "/xdg";
  const ws = TRANSPORT === "ws";
  const http = TRANSPORT === "http";
  const listen = [];
  if (ws || http) listen.push("--listen", "127.0.0.1:0", "--token-file", tokenPath());
  const proc = spawn(AGENT, [...(store ? ["--store", store] : []), ...args, ...listen], {
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
  let onAddress = null;
  proc.stderr.on("data", (d) => {
    st.stderr += d.toString("utf8");
    if (st.stderr.length > 1 << 20) st.stderr = st.stderr.slice(-(1 << 19));
    const m = onAddress && /\b127\.0\.0\.1:([1-9]\d*)\b/.exec(st.stderr);
    if (m) {
      onAddress(`${http ? "http" : "ws"}://127.0.0.1:${m[1]}/acp`);
      onAddress = null;
    }
  });
  // One message from the agent, as text: JSON-RPC goes to onLine, anything else is stray.
  const received = (line) => {
    let msg;
    try {
      msg = JSON.parse(line);
    } catch {
      msg = undefined;
    }
    if (!isObj(msg) || msg.jsonrpc !== "2.0") st.stray.push(line.slice(0, 200));
    else onLine(line, msg);
  };
  // stdout: the messages on stdio; on WebSocket nothing may appear there at all.
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
      if (ws || http) st.stray.push(`(stdout in --listen mode) ${line.slice(0, 200)}`);
      else received(line);
    }
    if (start < chunk.length) pending.push(chunk.subarray(start));
  });
  proc.stdout.on("end", () => {
    if (pending.length) st.stray.push("(unterminated) " + Buffer.concat(pending).toString("utf8").slice(0, 200));
    pending = [];
  });
  const ends = [];
  let endWhy = null;
  const ended = (why) => {
    if (endWhy) return;
    endWhy = why;
    for (const cb of ends.splice(0)) cb(why);
  };
  st.onEnd = (cb) => (endWhy ? cb(endWhy) : ends.push(cb));
  st.inputEnded = () => endWhy !== null;
  t.after(() => {
    if (!st.exited) proc.kill("SIGKILL");
  });
  if (http) {
    proc.on("exit", () => ended(`acp-agent exited before the HTTP connection was made`));
    const where = new Promise((resolve) => (onAddress = resolve));
    Object.assign(st, sdk ? sdkHttp(st, where, onLine, ended) : rawHttp(st, where, received, ended));
    return st;
  }
  if (!ws) {
    proc.on("close", (code, signal) => ended(`acp-agent closed stdout (exit ${code}, signal ${signal})`));
    st.send = (m) => {
      if (!st.exited && !st.stdinClosed) proc.stdin.write((typeof m === "string" ? m : JSON.stringify(m)) + "\n");
    };
    st.closeInput = () => {
      st.stdinClosed = true;
      proc.stdin.end();
    };
    st.pauseInput = () => proc.stdout.pause();
    st.resumeInput = () => proc.stdout.resume();
    return st;
  }

  // WebSocket: connect once the agent says where it listens; what is sent before waits.
  proc.on("exit", () => ended(`acp-agent exited before the WebSocket connected`));
  const queue = [];
  let sock = null; // the ws WebSocket (raw, or the one inside the SDK's stream)
  let writer = null; // sdk: the stream's writer
  let closing = false;
  const headers = { Authorization: `Bearer ${TOKEN}` };
  const flush = () => {
    for (const m of queue.splice(0)) {
      if (writer) writer.write(m).catch(() => {});
      else sock.send(m);
    }
    if (closing) (writer ? writer.close().catch(() => {}) : sock.close(1000));
  };
  new Promise((resolve) => (onAddress = resolve)).then((url) => {
    if (st.exited) return;
    if (!sdk) {
      sock = new WebSocket(url, { headers, maxPayload: 0 });
      sock.on("open", flush);
      sock.on("message", (data, isBinary) => (isBinary ? st.stray.push("(binary frame)") : received(data.toString("utf8"))));
      sock.on("close", (code) => {
        st.closeCode = code;
        ended(`the agent's WebSocket closed (${code}); acp-agent ${st.exited ? `exit ${st.exited.code}` : "running"}`);
      });
      sock.on("error", () => {});
      return;
    }
    // The SDK's own client stream; a subclass keeps hold of its socket (for pause/resume).
    class Tap extends WebSocket {
      constructor(u, protocols, o) {
        super(u, protocols, { ...o, maxPayload: 0 });
        sock = this; // eslint-disable-line consistent-this
        this.on("close", (code) => {
          st.closeCode = code;
          ended(`the agent's WebSocket closed (${code})`);
        });
      }
    }
    const stream = createWebSocketStream(url, { WebSocket: Tap, headers });
    writer = stream.writable.getWriter();
    flush();
    (async () => {
      const reader = stream.readable.getReader();
      for (;;) {
        const r = await reader.read().catch(() => ({ done: true }));
        if (r.done) break;
        onLine(JSON.stringify(r.value), r.value);
      }
      ended("the SDK's WebSocket stream ended");
    })();
  });
  st.send = (m) => {
    if (closing || st.exited) return;
    const out = sdk ? (typeof m === "string" ? JSON.parse(m) : m) : typeof m === "string" ? m : JSON.stringify(m);
    if (!sock || sock.readyState !== WebSocket.OPEN) queue.push(out);
    else if (writer) writer.write(out).catch(() => {});
    else sock.send(out);
  };
  st.closeInput = () => {
    st.stdinClosed = closing = true;
    if (sock && sock.readyState === WebSocket.OPEN) flush();
  };
  st.pauseInput = () => sock?.pause();
  st.resumeInput = () => sock?.resume();
  return st;
}

// The end that still lets the agent write: stdio, EOF on stdin; WebSocket (no half-close there)
// and Streamable HTTP, SIGTERM, the listening agent's orderly end (turns cancelled and answered,
// then the close).
function finish(st) {
  if (TRANSPORT === "stdio") return st.closeInput();
  if (!st.termSent) st.proc.kill("SIGTERM");
  st.termSent = true;
}

// Streamable HTTP through the SDK's client: messages are objects both ways.
function sdkHttp(st, where, onLine, ended) {
  const headers = { Authorization: `Bearer ${TOKEN}` };
  const queue = [];
  let writer = null;
  let closing = false;
  let last = Promise.resolve(); // the newest write: it settles once its POST is answered
  where.then((url) => {
    if (st.exited) return;
    const stream = createHttpStream(url, { headers });
    writer = stream.writable.getWriter();
    for (const m of queue.splice(0)) last = writer.write(m).catch(() => {});
    if (closing) writer.close().catch(() => {});
    (async () => {
      const reader = stream.readable.getReader();
      for (;;) {
        const r = await reader.read().catch((e) => ({ done: true, error: e }));
        if (r.done) break;
        onLine(JSON.stringify(r.value), r.value);
      }
      ended("the SDK's HTTP stream ended");
    })();
  });
  return {
    send(m) {
      if (closing || st.exited) return;
      const out = typeof m === "string" ? JSON.parse(m) : m;
      if (writer) last = writer.write(out).catch(() => {});
      else queue.push(out);
    },
    settle: () => last,
    closeInput() {
      st.stdinClosed = closing = true;
      if (writer) writer.close().catch(() => {});
    },
    pauseInput() {},
    resumeInput() {},
  };
}

// Streamable HTTP by hand, for rawAgent: each line POSTed as written, in order; what the agent
// sends read from the connection's SSE stream and each session's.
function rawHttp(st, where, received, ended) {
  const auth = { Authorization: `Bearer ${TOKEN}` };
  const abort = new AbortController();
  const streams = new Map(); // sessionId ("" = the connection's) -> promise of its response head
  const askedOn = new Map(); // id of a request of the agent's -> the session stream it came on
  let url = null;
  let cid = null;
  let chain = where.then((u) => (url = u));
  let closing = false;
  // The end: once the connection's stream has ended and every session's has too (they end in
  // any order, and the last messages may be on any of them).
  let pumping = 0;
  let connEnded = false;
  const maybeEnded = () => {
    if (connEnded && pumping === 0) ended("the connection's SSE streams ended");
  };
  const parse = (text) => {
    try {
      return JSON.parse(text);
    } catch {
      return undefined;
    }
  };
  // After SIGTERM (finish) a POST racing the shutdown may be refused or cut: not the agent's doing.
  const refused = async (r) => {
    const body = await r.text();
    if (!st.termSent) st.stray.push(`(HTTP ${r.status} ${body.slice(0, 200)})`);
  };
  const open = (sid) => {
    if (streams.has(sid)) return streams.get(sid);
    const headers = { ...auth, accept: "text/event-stream", "acp-connection-id": cid, ...(sid ? { "acp-session-id": sid } : {}) };
    const head = fetch(url, { headers, signal: abort.signal }).then(async (r) => {
      if (r.status !== 200) return refused(r);
      pump(r, sid).catch(() => {});
    }, () => {});
    streams.set(sid, head);
    return head;
  };
  const pump = async (r, sid) => {
    pumping++;
    try {
      await pumpBody(r, sid);
    } finally {
      pumping--;
      if (!sid) connEnded = true;
      maybeEnded();
    }
  };
  const pumpBody = async (r, sid) => {
    const dec = new TextDecoder();
    let buf = "";
    for await (const chunk of r.body) {
      if (gate) await gate;
      buf += dec.decode(chunk, { stream: true });
      let i;
      while ((i = buf.indexOf("\n\n")) >= 0) {
        const data = buf.slice(0, i).split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(l[5] === " " ? 6 : 5)).join("\n");
        buf = buf.slice(i + 2);
        if (!data) continue;
        const msg = parse(data);
        if (isObj(msg) && "method" in msg && "id" in msg && sid) askedOn.set(JSON.stringify(msg.id), sid);
        if (typeof msg?.result?.sessionId === "string") open(msg.result.sessionId);
        received(data);
      }
    }
  };
  // pauseInput: stop reading the streams, so the server's output backs up (TCP, then its queue).
  let gate = null;
  let release = null;
  const post = async (text) => {
    const msg = parse(text);
    const headers = { ...auth, "content-type": "application/json" };
    if (!cid) {
      const r = await fetch(url, { method: "POST", headers, body: text, signal: abort.signal });
      if (r.status !== 200) return refused(r);
      cid = r.headers.get("acp-connection-id");
      open("");
      received(await r.text());
      return;
    }
    headers["acp-connection-id"] = cid;
    let sid = isObj(msg) && isObj(msg.params) && typeof msg.params.sessionId === "string" ? msg.params.sessionId : undefined;
    if (!sid && isObj(msg) && !("method" in msg)) sid = askedOn.get(JSON.stringify(msg.id));
    if (sid !== undefined) {
      headers["acp-session-id"] = sid;
      await open(sid);
    }
    const r = await fetch(url, { method: "POST", headers, body: text, signal: abort.signal });
    if (r.status !== 202) return refused(r);
    await r.body?.cancel();
  };
  return {
    send(m) {
      if (closing || st.exited) return;
      const text = typeof m === "string" ? m : JSON.stringify(m);
      chain = chain.then(() => post(text)).catch((e) => {
        if (!closing && !st.termSent) st.stray.push(`(HTTP failed: ${e.cause?.message ?? e.message})`);
      });
    },
    closeInput() {
      if (closing) return;
      st.stdinClosed = closing = true;
      chain = chain.then(async () => {
        if (cid) await fetch(url, { method: "DELETE", headers: { ...auth, "acp-connection-id": cid } }).catch(() => {});
        abort.abort();
        ended("DELETE");
      });
    },
    pauseInput() {
      gate ??= new Promise((r) => (release = r));
    },
    resumeInput() {
      release?.();
      gate = release = null;
    },
    settle: () => chain,
  };
}

async function endAgent(st, { expectCode = 0 } = {}, violations = []) {
  // The POSTs already sent are answered first (one cut by the shutdown is not the agent's doing).
  if (!st.exited && st.settle) await st.settle();
  if (!st.exited) finish(st);
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
  const children = new Set(); // subagent sessions announced (subagent_update): no turns of their own
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
      } else if (msg.method === "session/update" && msg.params?.update?.sessionUpdate === "subagent_update") {
        children.add(msg.params.update.sessionId);
      } else if (msg.method === "session/update" && CONVERSATION.has(msg.params?.update?.sessionUpdate)) {
        const sid = msg.params.sessionId;
        // A child's traffic needs its announcement first (SubagentUpdate: MUST), not a turn.
        if (!open.get(sid) && !children.has(sid))
          violations.push(`${msg.params.update.sessionUpdate} for ${sid} outside any prompt turn or load replay (after its response?)`);
      }
    },
  };
}

/** The answer a client gives to session/request_permission under a policy: "allow" (the first allow_*
 * option), "deny" (the first reject_*), "cancel" (outcome cancelled), one of the four option kinds
 * (exactly that kind), or a function(params) returning the whole result. */
function permissionAnswer(policy, params) {
  if (typeof policy === "function") return policy(params);
  if (policy === "cancel") return { outcome: { outcome: "cancelled" } };
  const KINDS = ["allow_once", "allow_always", "reject_once", "reject_always"];
  const want = KINDS.includes(policy) ? [policy] : policy === "deny" ? ["reject_once", "reject_always"] : ["allow_once", "allow_always"];
  const opt = params.options.find((o) => want.includes(o.kind));
  assert.ok(opt, `permission request offers no ${want.join("/")} option: ${JSON.stringify(params.options)}`);
  return { outcome: { outcome: "selected", optionId: opt.optionId } };
}

/** The answer to elicitation/create under a policy: "accept" (content {name: "libacp", count: 3}),
 * "decline", "cancel", "malformed" (accept with count a string), an object (sent as is) or a
 * function(params) returning the result. */
export const ELICIT_CONTENT = { name: "libacp", count: 3 };
function elicitationAnswer(policy, params) {
  if (typeof policy === "function") return policy(params);
  if (isObj(policy)) return policy;
  if (policy === "accept") return { action: "accept", content: ELICIT_CONTENT };
  if (policy === "decline") return { action: "decline" };
  if (policy === "cancel") return { action: "cancel" };
  if (policy === "malformed") return { action: "accept", content: { name: "libacp", count: "three" } };
  throw new Error(`unknown elicitation policy ${policy}`);
}

/** Plain-object deep merge: b's values win, objects merge key by key (null replaces). */
function deepMerge(a, b) {
  if (!isObj(a) || !isObj(b)) return b === undefined ? a : b;
  const out = { ...a };
  for (const [k, v] of Object.entries(b)) out[k] = deepMerge(a[k], v);
  return out;
}

// A client's terminals (terminals.mdx) behind the SDK client's terminal/* handlers. terminal/create
// spawns the command in its own process group (stdout and stderr into one buffer, truncated from the
// beginning at a character boundary past outputByteLimit, as the spec asks of a client);
// wait_for_exit resolves at exit, or answers -32800 when the agent cancels the request; kill kills
// the group and keeps the terminal; release kills it when still running and forgets the id. Every
// call is recorded in h.terminalCalls ({method, params}) in the order the SDK handled them; an id used
// after its release is a violation (the id "becomes invalid for all other terminal/* methods").
function terminalHost(t, h) {
  const live = new Map(); // terminalId -> {proc, chunks, exit, waiters, limit}
  const released = new Set();
  let n = 0;
  const killGroup = (x) => {
    if (x.exit) return;
    try {
      process.kill(-x.proc.pid, "SIGKILL");
    } catch {}
  };
  t.after(() => {
    for (const x of live.values()) killGroup(x);
  });
  h.terminalProcs = []; // {terminalId, pid, exited: () => bool}
  const get = (method, params) => {
    const x = live.get(params.terminalId);
    if (x) return x;
    if (released.has(params.terminalId)) h.violations.push(`${method} for terminal ${params.terminalId} after its release (terminals.mdx: the id is invalid)`);
    throw acp.RequestError.invalidParams({ terminalId: params.terminalId }, `unknown terminal ${params.terminalId}`);
  };
  const exited = (x, code, signal) => {
    if (x.exit) return;
    x.exit = { exitCode: signal ? null : code, signal: signal ?? null };
    for (const w of x.waiters.splice(0)) w();
  };
  const output = (x) => {
    let buf = Buffer.concat(x.chunks);
    let truncated = false;
    if (x.limit != null && buf.length > x.limit) {
      buf = buf.subarray(buf.length - x.limit);
      while (buf.length && (buf[0] & 0xc0) === 0x80) buf = buf.subarray(1);
      truncated = true;
    }
    return { output: buf.toString("utf8"), truncated };
  };
  return {
    create(params) {
      if (params.cwd != null && !existsSync(params.cwd)) throw acp.RequestError.invalidParams({ cwd: params.cwd }, `no directory ${params.cwd}`);
      const env = { ...process.env };
      for (const e of params.env ?? []) env[e.name] = e.value;
      const proc = spawn(params.command, params.args ?? [], { cwd: params.cwd ?? undefined, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
      const terminalId = `term-${++n}`;
      const x = { proc, chunks: [], exit: null, waiters: [], limit: params.outputByteLimit ?? null };
      proc.stdout.on("data", (d) => x.chunks.push(d));
      proc.stderr.on("data", (d) => x.chunks.push(d));
      proc.on("close", (code, signal) => exited(x, code, signal));
      proc.on("error", () => exited(x, 127, null));
      live.set(terminalId, x);
      h.terminalProcs.push({ terminalId, pid: proc.pid, exited: () => x.exit !== null });
      return { terminalId };
    },
    output(params) {
      const x = get("terminal/output", params);
      return { ...output(x), ...(x.exit ? { exitStatus: x.exit } : {}) };
    },
    waitForExit(params, signal) {
      const x = get("terminal/wait_for_exit", params);
      if (x.exit) return x.exit;
      return new Promise((resolve, reject) => {
        x.waiters.push(() => resolve(x.exit));
        signal?.addEventListener("abort", () => reject(acp.RequestError.requestCancelled({ terminalId: params.terminalId })), { once: true });
      });
    },
    kill(params) {
      killGroup(get("terminal/kill", params));
      return {};
    },
    release(params) {
      const x = get("terminal/release", params);
      killGroup(x);
      live.delete(params.terminalId);
      released.add(params.terminalId);
      return {};
    },
  };
}

// A resolver per held request: the test answers it with resolve(result); when the agent cancels the
// request ($/cancel_request) it is answered as a correct client would (cancelledAnswer).
function holdRequest(list, params, signal, cancelledAnswer) {
  return new Promise((resolve) => {
    const e = { params, resolve, cancelled: false };
    list.push(e);
    signal?.addEventListener(
      "abort",
      () => {
        e.cancelled = true;
        resolve(cancelledAnswer);
      },
      { once: true },
    );
  });
}

// Waiters on the received lines of a connection, shared by both clients: resolves with the first
// entry (already received or future) for which pred(msg, entry) holds; rejected once stdout closed.
function lineWaiters(h, entries) {
  h.waiters = [];
  h.waitFor = (pred, from = 0) => {
    for (let i = from; i < entries.length; i++) if (pred(entries[i].msg, entries[i])) return Promise.resolve(entries[i]);
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
  return {
    received: (e) => (h.waiters = h.waiters.filter((w) => !w.test(e))),
    closed: (err) => {
      for (const w of h.waiters) w.reject(err());
      h.waiters = [];
    },
  };
}

// The capabilities the client advertised (its latest initialize) and the agent's answer, as seen on
// the wire: what schemaCheck judges every agent message against.
function peerTracker(h) {
  h.clientCaps = {};
  h.agentInit = null;
  return {
    sent(msg) {
      if (msg.method === "initialize" && "id" in msg) h.clientCaps = isObj(msg.params?.clientCapabilities) ? msg.params.clientCapabilities : {};
    },
    received(msg, method) {
      if (method === "initialize" && isObj(msg.result)) h.agentInit = msg.result;
    },
  };
}

/**
 * The official SDK as the client.
 * opts: store (required), args, cwd (the agent process's cwd), env,
 *       fs: false | {read: (path) => string, caps?: {readTextFile, writeTextFile}} — advertises fs
 *           capabilities (both unless caps says otherwise) and answers fs requests,
 *       permission: "allow" | "deny" | "cancel" | "hold" | "allow_once" | "allow_always" |
 *           "reject_once" | "reject_always" | function(params) -> result (see permissionAnswer);
 *           "hold" keeps each request in heldPermissions ({params, resolve(result), cancelled}),
 *           answered `cancelled` by itself if the agent sends $/cancel_request for it,
 *       terminal: true — advertises terminal: true and runs terminal/* for real (terminalHost:
 *           terminalCalls, terminalProcs),
 *       elicitation: {form = true, url = false, answer = "accept"} — advertises those modes and
 *           answers elicitation/create per elicitationAnswer ("hold": heldElicitations, like
 *           permissions); elicitation/complete notifications land in elicitationCompletes,
 *       clientCapabilities: merged (deeply) over what the above advertise, e.g.
 *           {session: {notices: {}, compaction: {}, configOptions: {boolean: {}}}}.
 * Whatever is advertised, every agent→client request is recorded (permissions, fsReads, fsWrites,
 * terminalCalls, elicitations); a method the client did not advertise is answered -32601 and the
 * schema check reports the call as a violation.
 * Returns {ctx (ClientContext), init(), newSession(cwd, extra), prompt(sid, text), updates(sid), all, msgs,
 *          waitFor(pred, from), requestsOf(prefix), closeStdin(), end(), kill9(), ...the records}.
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
    heldPermissions: [],
    terminalCalls: [],
    elicitations: [],
    heldElicitations: [],
    elicitationCompletes: [],
    permission: opts.permission ?? "allow",
  };
  let controller;
  const readable = new ReadableStream({ start: (c) => (controller = c) });
  const fsCaps = opts.fs ? { readTextFile: true, writeTextFile: true, ...opts.fs.caps } : {};
  const elic = opts.elicitation ? { form: true, url: false, answer: "accept", ...opts.elicitation } : null;
  h.elicitation = elic?.answer;
  h.turns = turnTracker(h.violations);
  const peer = peerTracker(h);
  const waits = lineWaiters(h, h.msgs);
  h.st = spawnAgent(t, { ...opts, sdk: true }, (line, msg) => {
    const seq = h.msgs.length;
    const e = { seq, msg };
    h.msgs.push(e);
    const method = "method" in msg ? undefined : h.sent.get(JSON.stringify(msg.id));
    peer.received(msg, method);
    h.violations.push(...schemaCheck(msg, (id) => h.sent.get(JSON.stringify(id)), h.clientCaps, h.agentInit));
    h.turns.received(msg, seq);
    if (msg.method === "session/update" && isObj(msg.params)) {
      const u = { seq, sessionId: msg.params.sessionId, update: msg.params.update };
      h.all.push(u);
      if (!h.bySession.has(u.sessionId)) h.bySession.set(u.sessionId, []);
      h.bySession.get(u.sessionId).push(u);
    }
    controller.enqueue(msg);
    waits.received(e);
  });
  h.st.onEnd((why) => {
    try {
      controller.close();
    } catch {}
    waits.closed(() => new Error(`${why} while a line was awaited; stderr:\n${h.st.stderr.slice(-3000)}`));
  });
  const writable = new WritableStream({
    write(msg) {
      if ("id" in msg && "method" in msg) h.sent.set(JSON.stringify(msg.id), msg.method);
      h.turns.sent(msg);
      peer.sent(msg);
      h.st.send(msg);
    },
  });
  const terms = terminalHost(t, h);
  const terminal = (method, fn) => (ctx) => {
    h.terminalCalls.push({ method, params: ctx.params });
    if (!opts.terminal) throw acp.RequestError.methodNotFound(method);
    return fn(ctx.params, ctx.signal);
  };
  const app = acp
    .client({ name: "libacp-interop" })
    .onNotification("session/update", () => {}) // recorded by the tap above, in arrival order
    .onRequest("session/request_permission", ({ params, signal }) => {
      h.permissions.push(params);
      if (h.permission === "hold") return holdRequest(h.heldPermissions, params, signal, { outcome: { outcome: "cancelled" } });
      return permissionAnswer(h.permission, params);
    })
    .onRequest("fs/read_text_file", ({ params }) => {
      h.fsReads.push(params);
      if (!opts.fs) throw acp.RequestError.methodNotFound("fs/read_text_file");
      return { content: opts.fs.read(params.path, params) };
    })
    .onRequest("fs/write_text_file", ({ params }) => {
      h.fsWrites.push(params);
      if (!opts.fs) throw acp.RequestError.methodNotFound("fs/write_text_file");
      return {};
    })
    .onRequest("terminal/create", terminal("terminal/create", (p) => terms.create(p)))
    .onRequest("terminal/output", terminal("terminal/output", (p) => terms.output(p)))
    .onRequest("terminal/wait_for_exit", terminal("terminal/wait_for_exit", (p, signal) => terms.waitForExit(p, signal)))
    .onRequest("terminal/kill", terminal("terminal/kill", (p) => terms.kill(p)))
    .onRequest("terminal/release", terminal("terminal/release", (p) => terms.release(p)))
    .onRequest("elicitation/create", ({ params, signal }) => {
      h.elicitations.push(params);
      if (!elic) throw acp.RequestError.methodNotFound("elicitation/create");
      if (h.elicitation === "hold") return holdRequest(h.heldElicitations, params, signal, { action: "cancel" });
      return elicitationAnswer(h.elicitation, params);
    })
    .onNotification("elicitation/complete", ({ params }) => {
      h.elicitationCompletes.push(params);
    });
  h.conn = app.connect({ readable, writable });
  h.ctx = h.conn.agent;
  // When the agent dies the SDK only says "ACP connection closed": add the exit status and stderr.
  // An error response from a live agent (a numeric code) is the answer itself: no waiting.
  const explain = async (e) => {
    if (Number.isInteger(e?.code) && !h.st.exited && !h.st.inputEnded()) throw e;
    if (!h.st.exited) await Promise.race([h.st.exit, new Promise((r) => setTimeout(r, 2000))]);
    if (h.st.exited) e.message += ` (acp-agent exit ${h.st.exited.code}, signal ${h.st.exited.signal}; stray stdout ${JSON.stringify(h.st.stray)}; stderr:\n${h.st.stderr.slice(-3000)})`;
    throw e;
  };
  h.request = (method, params) => h.ctx.request(method, params).catch(explain);
  h.notify = (method, params) => h.ctx.notify(method, params);
  h.updates = (sid) => (h.bySession.get(sid) ?? []).map((e) => e.update);
  /** Agent→client requests on the wire whose method starts with prefix: [{seq, msg}]. */
  h.requestsOf = (prefix) => h.msgs.filter((e) => "id" in e.msg && typeof e.msg.method === "string" && e.msg.method.startsWith(prefix));
  /** Closes the agent's stdin (EOF) and keeps reading its stdout (WebSocket: closes it). */
  h.closeStdin = () => h.st.closeInput();
  /** Ends the agent's input and keeps reading what it still writes (see finish()). */
  h.finish = () => finish(h.st);
  h.clientCapabilities = () => {
    const fs = opts.fs ? fsCaps : { readTextFile: false, writeTextFile: false };
    const base = { fs, terminal: !!opts.terminal };
    if (elic) base.elicitation = { ...(elic.form ? { form: {} } : {}), ...(elic.url ? { url: {} } : {}) };
    return deepMerge(base, opts.clientCapabilities ?? {});
  };
  h.init = async (params = {}) => {
    h.initResult = await h.request("initialize", {
      protocolVersion: 1,
      clientCapabilities: h.clientCapabilities(),
      clientInfo: { name: "libacp-interop", version: "0.0.0" },
      ...params,
    });
    return h.initResult;
  };
  h.newSession = async (cwd, extra = {}) => {
    const r = await h.request("session/new", { cwd, mcpServers: [], ...extra });
    h.lastSession = r;
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
 * permission: as sdkAgent's, or "hold": kept unanswered in `held`, answer with reply(),
 * handlers: {method: (msg, h) => void} for agent→client requests, answered by hand (h.reply,
 *           h.replyError, h.send: malformed, late or never).
 * lines: every stdout line {seq, raw, msg}. request() resolves with the whole response message (never
 * throws on error responses). Agent→client requests without a handler: session/request_permission
 * answered per policy, anything else -32601. The schema check judges the agent against the
 * clientCapabilities of the raw client's own initialize (none unless it sends some).
 */
export function rawAgent(t, opts) {
  const h = { lines: [], responses: new Map(), nextId: 1, permission: opts.permission ?? "allow", held: [] };
  h.violations = [];
  h.sent = new Map();
  h.turns = turnTracker(h.violations);
  const peer = peerTracker(h);
  const waits = lineWaiters(h, h.lines);
  const handlers = opts.handlers ?? {};
  h.st = spawnAgent(t, opts, (raw, msg) => {
    const e = { seq: h.lines.length, raw, msg };
    h.lines.push(e);
    const method = "method" in msg ? undefined : h.sent.get(JSON.stringify(msg.id));
    peer.received(msg, method);
    h.violations.push(...schemaCheck(msg, (id) => h.sent.get(JSON.stringify(id)), h.clientCaps, h.agentInit));
    h.turns.received(msg, e.seq);
    if ("id" in msg && !("method" in msg)) {
      const key = JSON.stringify(msg.id);
      const w = h.responses.get(key);
      if (w) {
        h.responses.delete(key);
        w.resolve(msg);
      }
    } else if ("id" in msg && "method" in msg) {
      if (handlers[msg.method]) handlers[msg.method](msg, h);
      else if (msg.method === "session/request_permission" && h.permission === "hold") h.held.push(msg);
      else if (msg.method === "session/request_permission")
        h.send({ jsonrpc: "2.0", id: msg.id, result: permissionAnswer(h.permission, msg.params) });
      else h.send({ jsonrpc: "2.0", id: msg.id, error: { code: -32601, message: "Method not found" } });
    }
    waits.received(e);
  });
  // Once stdout has closed nothing more can arrive: fail every wait with the agent's exit status
  // instead of leaving the test hanging.
  h.st.onEnd((why) => {
    const err = () => new Error(`${why} while a response/line was awaited; stderr:\n${h.st.stderr.slice(-3000)}`);
    for (const w of h.responses.values()) w.reject(err());
    h.responses.clear();
    waits.closed(err);
  });
  /** Writes a message (object) or raw text (string, newline appended). */
  h.send = (m) => {
    if (typeof m !== "string") peer.sent(m);
    h.st.send(m);
  };
  /** Closes the agent's stdin (EOF) and keeps reading its stdout (WebSocket: closes it). */
  h.closeStdin = () => h.st.closeInput();
  /** Ends the agent's input and keeps reading what it still writes (see finish()). */
  h.finish = () => finish(h.st);
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
  h.replyError = (id, code, message, data) => h.send({ jsonrpc: "2.0", id, error: { code, message, ...(data !== undefined ? { data } : {}) } });
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
  /** Agent→client requests whose method starts with prefix, from line `from` on. */
  h.requestsOf = (prefix, from = 0) =>
    h.lines.filter((e) => e.seq >= from && "id" in e.msg && typeof e.msg.method === "string" && e.msg.method.startsWith(prefix));
  h.end = (o) => endAgent(h.st, o, h.violations);
  h.kill9 = () => kill9(h.st);
  return h;
}

// ---- listening agents (remote ACP, issue 11) ------------------------------------------------------

/** The Authorization header every listening agent started here wants. */
export const wsHeaders = () => ({ Authorization: `Bearer ${TOKEN}` });

/**
 * Starts `acp-agent --listen 127.0.0.1:0 --token-file F` (whatever ACP_TRANSPORT says) on a store;
 * resolves once it listens: {url (ws://.../acp), proc, stderr(), stop()}. stop() sends SIGTERM and
 * asserts exit 0 (ASan's 66 would be a leak); t.after kills it if the test did not.
 */
export async function listeningAgent(t, { store, home, args = [] }) {
  home = home ?? store.slice(0, store.lastIndexOf("/"));
  const proc = spawn(AGENT, ["--store", store, ...args, "--listen", "127.0.0.1:0", "--token-file", tokenPath()], {
    cwd: home,
    env: { ...process.env, XDG_STATE_HOME: home + "/xdg" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  let stdout = "";
  const exit = new Promise((resolve) => proc.on("exit", (code, signal) => resolve({ code, signal })));
  t.after(() => proc.exitCode === null && proc.signalCode === null && proc.kill("SIGKILL"));
  proc.stdout.on("data", (d) => (stdout += d));
  const url = await new Promise((resolve, reject) => {
    proc.stderr.on("data", (d) => {
      stderr += d;
      const m = /\b127\.0\.0\.1:([1-9]\d*)\b/.exec(stderr);
      if (m) resolve(`ws://127.0.0.1:${m[1]}/acp`);
    });
    exit.then((e) => reject(new Error(`acp-agent --listen exited (${e.code}, ${e.signal}): ${stderr}`)));
  });
  return {
    url,
    proc,
    exit,
    stderr: () => stderr,
    async stop() {
      proc.kill("SIGTERM");
      const guard = setTimeout(() => proc.kill("SIGKILL"), EXIT_TIMEOUT_MS);
      const e = await exit;
      clearTimeout(guard);
      assert.equal(stdout, "", "acp-agent --listen wrote to stdout");
      assert.deepEqual([e.code, e.signal], [0, null], `acp-agent exit ${e.code} (66 = sanitizer/leak report); stderr:\n${stderr.slice(-4000)}`);
    },
  };
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
// Compaction entities are history too ("a compaction keeps its position in the session timeline and
// is part of replay"); only clients with session.compaction ever see them.
export const CONVERSATION = new Set([
  "user_message_chunk",
  "agent_message_chunk",
  "agent_thought_chunk",
  "tool_call",
  "tool_call_update",
  "plan",
  "compaction_update",
  "compaction_summary_chunk",
]);
// The ContentChunk kinds: one message may be split into chunks (and coalesced on replay).
const MESSAGE_CHUNKS = new Set(["user_message_chunk", "agent_message_chunk", "agent_thought_chunk"]);

/**
 * Normal form of a conversation for comparing a live run with its replay: conversation kinds only,
 * consecutive chunks of one message (same kind, same messageId) coalesced (the issue allows the agent
 * to coalesce on replay), messageIds dropped (not required to be stable across loads).
 */
export function normalize(updates) {
  const out = [];
  for (const u of updates) {
    if (!CONVERSATION.has(u.sessionUpdate)) continue;
    if (MESSAGE_CHUNKS.has(u.sessionUpdate) && u.content?.type === "text") {
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
