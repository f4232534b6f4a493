// SPDX-License-Identifier: Apache-2.0
// A small ACP agent on raw stdio that breaks one rule, named by its first argument, so that
// `acp check` has something to catch (tests/check/check.test.mjs). Without an argument it
// breaks nothing. Sessions persist in ./broken-agent.json (the check's temporary directory),
// written at once, so a SIGKILL and a fresh process see them.
//   update-after-load   the replay of session/load comes after its answer
//   id-as-string        integer ids are echoed as strings
//   delete-not-idempotent  deleting an unknown (or deleted) session is an error
//   delete-comes-back   a deleted session is listed again by the next process
//   resume-replays      session/resume replays the conversation
//   list-ignores-cwd    session/list returns the sessions of every directory
//   stdout-noise        a line that is not JSON-RPC on stdout
//   bad-schema          session/new's result lacks sessionId's type (a number)
//   update-after-prompt an agent_message_chunk after the prompt's answer
import { readFileSync, writeFileSync, existsSync } from "node:fs";
import { createInterface } from "node:readline";

const mode = process.argv[2] ?? "";
const FILE = "broken-agent.json";
const db = existsSync(FILE) ? JSON.parse(readFileSync(FILE, "utf8")) : { sessions: {}, deleted: {} };
if (mode === "delete-comes-back") {
  for (const [id, s] of Object.entries(db.deleted)) db.sessions[id] = s;
  db.deleted = {};
}
const save = () => writeFileSync(FILE, JSON.stringify(db));
let n = 0;

// Integer ids are echoed as written (JSON.parse would round those beyond 2^53).
let rawId = null;
const out = (m) => {
  let t = JSON.stringify(m);
  if (rawId !== null && typeof m.id === "number") t = t.replace(/^\{"jsonrpc":"2.0","id":[^,]*/, `{"jsonrpc":"2.0","id":${rawId}`);
  process.stdout.write(t + "\n");
};
let inInit = false;
const idOf = (id) => (mode === "id-as-string" && typeof id === "number" && !inInit ? String(id) : id);
const reply = (id, result) => out({ jsonrpc: "2.0", id: idOf(id), result });
const fail = (id, code, message) => out({ jsonrpc: "2.0", id: id === undefined ? null : idOf(id), error: { code, message } });
const update = (sessionId, u) => out({ jsonrpc: "2.0", method: "session/update", params: { sessionId, update: u } });
const replay = (sid) => {
  for (const [i, h] of (db.sessions[sid]?.history ?? []).entries())
    update(sid, { sessionUpdate: h.kind, messageId: `m${i}`, content: { type: "text", text: h.text } });
};
const absolute = (p) => typeof p === "string" && p.startsWith("/");
const turns = new Map(); // sessionId -> {id, timer}

function handle(m) {
  const { id, method, params = {} } = m;
  if (typeof method !== "string") return fail(id, -32600, "Invalid request");
  if (id === undefined) {
    if (method === "session/cancel") {
      const t = turns.get(params.sessionId);
      if (t) {
        clearTimeout(t.timer);
        turns.delete(params.sessionId);
        reply(t.id, { stopReason: "cancelled" });
      }
    }
    return;
  }
  switch (method) {
    case "initialize":
      return reply(id, {
        protocolVersion: 1,
        agentInfo: { name: "broken-agent", version: "0.0.1" },
        agentCapabilities: {
          loadSession: true,
          sessionCapabilities: { list: {}, delete: {}, resume: {}, close: {} },
        },
        authMethods: [],
      });
    case "session/new": {
      if (!absolute(params.cwd)) return fail(id, -32602, "cwd must be absolute");
      if (!Array.isArray(params.mcpServers)) return fail(id, -32602, "mcpServers is required");
      const sid = `sess_${process.pid}_${++n}`;
      db.sessions[sid] = { cwd: params.cwd, history: [], updatedAt: new Date().toISOString() };
      save();
      if (mode === "stdout-noise") process.stdout.write("hello from a broken agent\n");
      return reply(id, { sessionId: mode === "bad-schema" ? 42 : sid });
    }
    case "session/prompt": {
      const s = db.sessions[params.sessionId];
      if (!s) return fail(id, -32602, "no such session");
      const text = params.prompt?.map((b) => b.text ?? "").join("") ?? "";
      if (text.startsWith("/sleep")) {
        turns.set(params.sessionId, { id, timer: setTimeout(() => reply(id, { stopReason: "end_turn" }), 30000) });
        return;
      }
      s.history.push({ kind: "user_message_chunk", text }, { kind: "agent_message_chunk", text: `echo: ${text}` });
      save();
      update(params.sessionId, { sessionUpdate: "agent_message_chunk", messageId: "r1", content: { type: "text", text: `echo: ${text}` } });
      reply(id, { stopReason: "end_turn" });
      if (mode === "update-after-prompt")
        update(params.sessionId, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "late" } });
      return;
    }
    case "session/load":
      if (!db.sessions[params.sessionId]) return fail(id, -32602, "no such session");
      if (mode !== "update-after-load") replay(params.sessionId);
      reply(id, {});
      if (mode === "update-after-load") replay(params.sessionId);
      return;
    case "session/resume":
      if (!db.sessions[params.sessionId]) return fail(id, -32602, "no such session");
      if (mode === "resume-replays") replay(params.sessionId);
      return reply(id, {});
    case "session/close": {
      const t = turns.get(params.sessionId);
      if (t) {
        clearTimeout(t.timer);
        turns.delete(params.sessionId);
        reply(t.id, { stopReason: "cancelled" });
      }
      return reply(id, {});
    }
    case "session/list": {
      if (params.cursor !== undefined) return fail(id, -32602, "invalid cursor");
      const sessions = Object.entries(db.sessions)
        .filter(([, s]) => mode === "list-ignores-cwd" || !params.cwd || s.cwd === params.cwd)
        .map(([sessionId, s]) => ({ sessionId, cwd: s.cwd, updatedAt: s.updatedAt }));
      return reply(id, { sessions });
    }
    case "session/delete":
      if (!db.sessions[params.sessionId] && mode === "delete-not-idempotent")
        return fail(id, -32602, "no such session");
      if (db.sessions[params.sessionId]) db.deleted[params.sessionId] = db.sessions[params.sessionId];
      delete db.sessions[params.sessionId];
      save();
      return reply(id, {});
    default:
      return fail(id, -32601, `Method not found: ${method}`);
  }
}

const rl = createInterface({ input: process.stdin });
rl.on("line", (line) => {
  if (!line.trim()) return;
  let m;
  try {
    m = JSON.parse(line);
  } catch {
    return fail(undefined, -32700, "Parse error");
  }
  if (Array.isArray(m)) return fail(undefined, -32600, "batches are not supported");
  if (m === null || typeof m !== "object") return fail(undefined, -32600, "Invalid request");
  const raw = /^\s*\{\s*"jsonrpc"\s*:\s*"2.0"\s*,\s*"id"\s*:\s*(-?\d+)/.exec(line);
  rawId = raw && mode !== "id-as-string" ? raw[1] : null;
  inInit = m.method === "initialize";
  handle(m);
  rawId = null;
});
rl.on("close", () => process.exit(0));
