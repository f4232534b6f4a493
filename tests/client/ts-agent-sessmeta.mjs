// SPDX-License-Identifier: Apache-2.0
// An ACP agent written with the official TypeScript SDK (2.4.0) that implements the unstable session
// metadata methods (issue 22 items 2-5) as their schema says, in memory: session/set_title (trimmed,
// -32602 when empty, -32002 unknown), session/archive and unarchive (idempotent), session/list with
// the `archived` filter and SessionInfo.archived, session/status, and systemPrompt on session/new
// (append and override). A prompt answers with what the session holds ("title=... archived=...
// systemPrompt=..."), so a client test can see what reached the agent. It also advertises what acp
// info must show although it knows none of it: an unknown session capability, `providers`, and
// `_meta`. $ACP_RECORD: every message's method and params appended, one JSON line each.
// $ACP_SESSMETA_BARE=1: only session/list is advertised (the unstable methods still answer: a
// client must not call them).
import { appendFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk/unstable"; // the unstable method table
import { validate } from "../interop-agent/schema.mjs"; // strict, against schema.unstable.json

// What the client sent, checked strictly (the SDK's decoder is lenient by design): a violation
// is recorded as {"method": "violation", ...}, which the tests look for.
const REQUEST = {
  initialize: "InitializeRequest",
  "session/new": "NewSessionRequest",
  "session/set_title": "SetSessionTitleRequest",
  "session/archive": "ArchiveSessionRequest",
  "session/unarchive": "UnarchiveSessionRequest",
  "session/status": "SessionStatusRequest",
  "session/list": "ListSessionsRequest",
  "session/prompt": "PromptRequest",
};
const record = (method, params) => {
  if (!process.env.ACP_RECORD) return;
  appendFileSync(process.env.ACP_RECORD, JSON.stringify({ method, params }) + "\n");
  const bad = REQUEST[method] && validate(REQUEST[method], params ?? {});
  if (bad) appendFileSync(process.env.ACP_RECORD, JSON.stringify({ method: "violation", of: method, bad }) + "\n");
};
const bare = process.env.ACP_SESSMETA_BARE === "1";
const sessions = new Map(); // id -> {cwd, title, archived, systemPrompt, open, updatedAt}
let next = 0;

const known = (id) => {
  const s = sessions.get(id);
  if (!s) throw new acp.RequestError(-32002, `session not found: ${id}`, { sessionId: id });
  return s;
};
const bad = (message, path) => new acp.RequestError(-32602, message, { path });

const app = acp
  .agent()
  .onRequest("initialize", ({ params }) => {
    record("initialize", params);
    const sessionCapabilities = bare
      ? { list: {} }
      : {
          list: {},
          title: {},
          archive: {},
          status: {},
          systemPrompt: { mode: { override: {} } },
          futureThing: { depth: { level: 2 } },
        };
    return {
      protocolVersion: 1,
      agentCapabilities: {
        loadSession: false,
        sessionCapabilities,
        ...(bare ? {} : { providers: {}, _meta: { "vendor.dev/beta": { flags: ["x"] } } }),
      },
      agentInfo: { name: "ts-agent-sessmeta", version: "2.4.0" },
    };
  })
  .onRequest("session/new", ({ params }) => {
    record("session/new", params);
    const sp = params.systemPrompt ?? null;
    if (sp && !(sp.mode === "append" || sp.mode === "override")) throw bad(`unsupported mode ${sp.mode}`, "params.systemPrompt.mode");
    const id = `sm-${++next}`;
    sessions.set(id, { cwd: params.cwd, title: null, archived: false, systemPrompt: sp, open: true, updatedAt: new Date(Date.now() + next).toISOString() });
    return { sessionId: id };
  })
  .onRequest("session/set_title", ({ params }) => {
    record("session/set_title", params);
    const s = known(params.sessionId);
    const title = String(params.title).replace(/\s+/g, " ").trim();
    if (!title) throw bad("title is empty", "params.title");
    s.title = title;
    return { title };
  })
  .onRequest("session/archive", ({ params }) => {
    record("session/archive", params);
    const s = known(params.sessionId);
    s.archived = true;
    s.open = false;
    return {};
  })
  .onRequest("session/unarchive", ({ params }) => {
    record("session/unarchive", params);
    known(params.sessionId).archived = false;
    return {};
  })
  .onRequest("session/status", ({ params }) => {
    record("session/status", params);
    return { status: known(params.sessionId).open ? "open" : "saved" };
  })
  .onRequest("session/list", ({ params }) => {
    record("session/list", params);
    const f = params?.archived ?? "exclude";
    if (!["exclude", "include", "only"].includes(f)) throw bad(`unsupported archived filter ${f}`, "params.archived");
    const list = [...sessions.entries()]
      .filter(([, s]) => (f === "include" ? true : f === "only" ? s.archived : !s.archived))
      .filter(([, s]) => !params?.cwd || s.cwd === params.cwd)
      .map(([id, s]) => ({ sessionId: id, cwd: s.cwd, title: s.title, updatedAt: s.updatedAt, ...(bare ? {} : { archived: s.archived }) }));
    return { sessions: list };
  })
  .onRequest("session/prompt", async ({ params, client }) => {
    record("session/prompt", params);
    const s = known(params.sessionId);
    const text = `title=${s.title} archived=${s.archived} systemPrompt=${JSON.stringify(s.systemPrompt)}`;
    await client.notify("session/update", { sessionId: params.sessionId, update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } } });
    return { stopReason: "end_turn" };
  })
  .onRequest("*", ({ method, params }) => {
    record(method, params);
    throw acp.RequestError.methodNotFound(method);
  })
  .onNotification("*", ({ method, params }) => record(method, params));

const conn = app.connect(acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
await conn.closed;
process.exit(0);
