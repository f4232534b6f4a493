#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
// The benchmark peer: an ACP agent written with the official TypeScript SDK
// (@agentclientprotocol/sdk 2.4.0, its `agent()` app over `ndJsonStream` on stdio), running the same
// echo engine as build/acp-agent, so that the benchmarks compare libacp with what a Node agent
// author gets from the SDK. Not part of libacp; nothing in the tree depends on it.
//
//   node bench/ts-agent/agent.mjs --store DIR
//   node bench/ts-agent/agent.mjs --store DIR --listen PORT   (remote ACP, the SDK's AcpServer)
//
// With --listen the same app is served by the SDK's experimental AcpServer over Streamable HTTP
// and WebSocket on 127.0.0.1:PORT/acp (0: any free port; the bound port is printed on stdout as
// "listening PORT"), the peer of `acp-agent --listen` in the remote benchmarks.
//
// Echo engine: text not starting with "/" comes back as one agent_message_chunk; "/stream N BYTES"
// sends N agent_message_chunk updates of exactly BYTES ASCII bytes with one messageId; "/title TEXT"
// sends session_info_update (title, updatedAt). After session/new: available_commands_update.
// Modes ask/code (default code) and config options as acp-agent's echo engine has them: `model`, a
// select of echo-small/echo-large (echo-large echoes the text twice), and `verbose`, a boolean
// (each reply starts with a thought naming mode and model) that clients without
// clientCapabilities.session.configOptions.boolean see as a select of "true"/"false".
// session/set_config_option and session/set_mode validate (-32602 otherwise), store the session's
// values in its meta file (below) before answering, and set_config_option answers with the
// complete configOptions list.
//
// Store (a JSON-file store, the natural thing for a Node agent), in DIR:
//   <id>.meta.json  the session's SessionInfo plus createdAt, mode and config values; rewritten
//                   whole (write to a temp file, then rename) when the title, roots, updatedAt,
//                   mode or a config value change.
//   <id>.jsonl      its history: one `update` object per line (the JSON of session/update's
//                   `update`), appended with fs.appendFileSync once per batch.
// Durability: every batch of updates is appended (one write(2), no fsync) before any of its
// notifications is handed to the SDK, so after kill -9 the files hold everything the client saw.
// That is the promise acp-agent's SQLite store makes (WAL, synchronous=NORMAL: survives a process
// crash, not a power cut). session/list reads every meta file (several processes may share DIR, so
// no in-memory index), sorts newest first and pages 50 at a time with a keyset cursor.
import * as fs from "node:fs";
import * as path from "node:path";
import * as crypto from "node:crypto";
import { Readable, Writable } from "node:stream";
// The unstable entry point: the same API with the unstable methods and fields (session/archive,
// session/list's `archived`), which the stable one refuses or strips.
import * as acp from "@agentclientprotocol/sdk/unstable";

const argv = process.argv.slice(2);
let storeDir = path.join(process.env.XDG_STATE_HOME || path.join(process.env.HOME || "/tmp", ".local/state"), "acp-ts-agent");
let listenPort = null;
// --engine openai: prompts go to an OpenAI-compatible server through the `openai` npm client
// (bench/ts-agent/openai.mjs), as acp-agent --engine openai does with libcurl (issue 12).
const openaiOpts = { engine: "echo", baseURL: "http://127.0.0.1:11434/v1", model: "", apiKeyEnv: null };
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === "--store") storeDir = argv[++i];
  else if (argv[i] === "--engine") openaiOpts.engine = argv[++i];
  else if (argv[i] === "--base-url") openaiOpts.baseURL = argv[++i];
  else if (argv[i] === "--model") openaiOpts.model = argv[++i];
  else if (argv[i] === "--api-key-env") openaiOpts.apiKeyEnv = argv[++i];
  else if (argv[i] === "--listen") listenPort = Number(argv[++i]);
}
const openaiEngine = openaiOpts.engine === "openai" ? await import("./openai.mjs").then((m) => m.openaiEngine(openaiOpts)) : null;
fs.mkdirSync(storeDir, { recursive: true });

const PAGE = 50;
// Batch sizes: the fastest of those tried (32 to 16,384) for each workload on this machine.
const BATCH = 4096; // updates per appendFileSync (and per await of their notifications) in /stream
const REPLAY_BATCH = 256; // notifications handed to the SDK per await in session/load
const metaPath = (id) => path.join(storeDir, `${id}.meta.json`);
const histPath = (id) => path.join(storeDir, `${id}.jsonl`);
const validId = (id) => typeof id === "string" && /^[0-9a-f]{32}$/.test(id);

function readMeta(id) {
  if (!validId(id)) return null;
  try {
    return JSON.parse(fs.readFileSync(metaPath(id), "utf8"));
  } catch {
    return null;
  }
}
// session/archive closes the session if it is live (as session/close), then flags its meta file.
function setArchived(id, on) {
  const meta = readMeta(id);
  if (!meta) throw acp.RequestError.resourceNotFound(id);
  const s = live.get(id);
  if (on && s) {
    s.cancelled = true;
    live.delete(id);
  }
  meta.archived = on;
  writeMeta(meta);
  return {};
}

function writeMeta(meta) {
  const tmp = `${metaPath(meta.sessionId)}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(meta));
  fs.renameSync(tmp, metaPath(meta.sessionId));
}
function appendHistory(id, updates) {
  let text = "";
  for (const u of updates) text += JSON.stringify(u) + "\n";
  fs.appendFileSync(histPath(id), text);
}

function checkRoots(params) {
  if (typeof params.cwd !== "string" || !path.isAbsolute(params.cwd))
    throw acp.RequestError.invalidParams(undefined, `cwd must be an absolute path: '${params.cwd}'`);
  for (const d of params.additionalDirectories ?? [])
    if (typeof d !== "string" || d === "" || !path.isAbsolute(d))
      throw acp.RequestError.invalidParams(undefined, `additionalDirectories entries must be absolute paths: '${d}'`);
}

// Live sessions of this connection: id -> { meta, cancelled }
const live = new Map();
// Whether the client shows boolean config options (from initialize); else the select fallback.
let clientBools = false;

// Modes and config options: the echo engine's (tools/acp-agent/echo.c), the same ids, names and
// descriptions, so that both agents answer with the same JSON.
const MODES = [
  { id: "ask", name: "Ask", description: "Answers and reads files; no writes or terminal commands" },
  { id: "code", name: "Code", description: "Reads, writes and runs commands, asking first" },
];
const DEFAULT_MODE = "code";
const OPTIONS = [
  {
    // the mode as a config option too, kept in step with the mode (as acp-agent's runtime does)
    id: "mode",
    name: "Mode",
    category: "mode",
    values: MODES.map(({ id, name, description }) => ({ value: id, name, description })),
    default: DEFAULT_MODE,
  },
  {
    id: "model",
    name: "Model",
    category: "model",
    values: [
      { value: "echo-small", name: "Echo small", description: "Echoes the prompt once" },
      { value: "echo-large", name: "Echo large", description: "Echoes the prompt twice" },
    ],
    default: "echo-small",
  },
  {
    id: "verbose",
    name: "Verbose",
    description: "Start each reply with a thought naming the mode and model",
    boolean: true,
    default: false,
  },
];
const BOOL_VALUES = [
  { value: "true", name: "On" },
  { value: "false", name: "Off" },
];
const optionById = new Map(OPTIONS.map((o) => [o.id, o]));

// A session's values, stored in its meta file; a stored value no longer offered falls back to
// the default (as acp-agent does).
function modeOf(meta) {
  return MODES.some((m) => m.id === meta.mode) ? meta.mode : DEFAULT_MODE;
}
function valueOf(meta, o) {
  if (o.id === "mode") return modeOf(meta);
  const v = meta.config?.[o.id];
  if (o.boolean) return typeof v === "boolean" ? v : o.default;
  return o.values.some((x) => x.value === v) ? v : o.default;
}
function configOptions(meta) {
  return OPTIONS.map((o) => {
    const v = valueOf(meta, o);
    const head = { id: o.id, name: o.name };
    if (o.description) head.description = o.description;
    if (o.category) head.category = o.category;
    if (o.boolean && clientBools) return { ...head, type: "boolean", currentValue: v };
    if (o.boolean) return { ...head, type: "select", currentValue: v ? "true" : "false", options: BOOL_VALUES };
    return { ...head, type: "select", currentValue: v, options: o.values };
  });
}
function sessionState(meta) {
  return {
    modes: { currentModeId: modeOf(meta), availableModes: MODES },
    configOptions: configOptions(meta),
  };
}
// The live session of a set_mode / set_config_option request; its meta file must still exist
// (another process may have deleted the session): rewriting it would bring the session back.
function liveSession(sessionId) {
  const s = live.get(sessionId);
  if (!s || !fs.existsSync(metaPath(s.meta.sessionId))) throw acp.RequestError.resourceNotFound(sessionId);
  return s;
}

const commands = [
  { name: "stream", description: "N chunks of BYTES bytes", input: { hint: "N BYTES" } },
  { name: "title", description: "set the session title", input: { hint: "TEXT" } },
];

const app = acp.agent({ name: "acp-ts-agent" })
  .onRequest("initialize", ({ params }) => {
    clientBools = params.clientCapabilities?.session?.configOptions?.boolean != null;
    return {
      protocolVersion: 1,
      agentInfo: { name: "acp-ts-agent", version: "0.1.0" },
      agentCapabilities: {
        loadSession: true,
        promptCapabilities: {},
        mcpCapabilities: { http: false, sse: false },
        sessionCapabilities: { list: {}, resume: {}, close: {}, delete: {}, additionalDirectories: {}, archive: {} },
      },
      authMethods: [],
    };
  })
  .onRequest("session/new", async ({ params, client }) => {
    checkRoots(params);
    const now = new Date().toISOString();
    const meta = {
      sessionId: crypto.randomBytes(16).toString("hex"),
      cwd: params.cwd,
      additionalDirectories: params.additionalDirectories ?? [],
      title: null,
      createdAt: now,
      updatedAt: now,
      mode: DEFAULT_MODE,
      config: Object.fromEntries(OPTIONS.map((o) => [o.id, o.default])),
    };
    writeMeta(meta);
    fs.writeFileSync(histPath(meta.sessionId), "");
    live.set(meta.sessionId, { meta, cancelled: false });
    // After the response: the SDK writes in order, and the update is queued behind it.
    setImmediate(() => {
      client
        .notify("session/update", {
          sessionId: meta.sessionId,
          update: { sessionUpdate: "available_commands_update", availableCommands: commands },
        })
        .catch(() => {});
    });
    return { sessionId: meta.sessionId, ...sessionState(meta) };
  })
  .onRequest("session/load", async ({ params, client }) => {
    checkRoots(params);
    const meta = readMeta(params.sessionId);
    if (!meta) throw acp.RequestError.resourceNotFound(params.sessionId);
    const hist = fs.readFileSync(histPath(meta.sessionId), "utf8");
    let pending = [];
    for (const line of hist.split("\n")) {
      if (!line) continue;
      pending.push(client.notify("session/update", { sessionId: meta.sessionId, update: JSON.parse(line) }));
      if (pending.length >= REPLAY_BATCH) {
        await Promise.all(pending);
        pending = [];
      }
    }
    await Promise.all(pending);
    meta.cwd = params.cwd;
    meta.additionalDirectories = params.additionalDirectories ?? [];
    writeMeta(meta);
    live.set(meta.sessionId, { meta, cancelled: false });
    return sessionState(meta);
  })
  .onRequest("session/resume", async ({ params }) => {
    checkRoots(params);
    const meta = readMeta(params.sessionId);
    if (!meta) throw acp.RequestError.resourceNotFound(params.sessionId);
    meta.cwd = params.cwd;
    meta.additionalDirectories = params.additionalDirectories ?? [];
    writeMeta(meta);
    live.set(meta.sessionId, { meta, cancelled: false });
    return sessionState(meta);
  })
  .onRequest("session/close", async ({ params }) => {
    const s = live.get(params.sessionId);
    if (s) s.cancelled = true;
    live.delete(params.sessionId);
    return {};
  })
  .onRequest("session/delete", async ({ params }) => {
    const s = live.get(params.sessionId);
    if (s) s.cancelled = true;
    live.delete(params.sessionId);
    if (validId(params.sessionId)) {
      fs.rmSync(metaPath(params.sessionId), { force: true });
      fs.rmSync(histPath(params.sessionId), { force: true });
    }
    return {};
  })
  .onRequest("session/archive", async ({ params }) => setArchived(params.sessionId, true))
  .onRequest("session/unarchive", async ({ params }) => setArchived(params.sessionId, false))
  .onRequest("session/list", async ({ params }) => {
    const filter = params.archived ?? "exclude";
    if (!["exclude", "include", "only"].includes(filter)) throw acp.RequestError.invalidParams(undefined, `unsupported archived filter '${filter}'`);
    const keep = (m) => filter === "include" || (filter === "only") === (m.archived === true);
    const all = [];
    for (const f of fs.readdirSync(storeDir)) {
      if (!f.endsWith(".meta.json")) continue;
      const m = readMeta(f.slice(0, -10));
      if (m && (params.cwd == null || m.cwd === params.cwd) && keep(m)) all.push(m);
    }
    const key = (m) => `${m.updatedAt}\u0000${m.sessionId}`;
    all.sort((a, b) => (key(a) < key(b) ? 1 : key(a) > key(b) ? -1 : 0));
    let start = 0;
    if (params.cursor != null) {
      let c;
      try {
        c = Buffer.from(params.cursor, "base64url").toString("utf8");
      } catch {
        c = "";
      }
      if (!c.includes("\u0000")) throw acp.RequestError.invalidParams(undefined, "malformed cursor");
      start = all.findIndex((m) => key(m) < c);
      if (start < 0) start = all.length;
    }
    const page = all.slice(start, start + PAGE);
    const res = {
      sessions: page.map((m) => ({
        sessionId: m.sessionId,
        cwd: m.cwd,
        additionalDirectories: m.additionalDirectories,
        title: m.title,
        updatedAt: m.updatedAt,
        archived: m.archived === true,
      })),
    };
    if (start + PAGE < all.length) res.nextCursor = Buffer.from(key(page[page.length - 1])).toString("base64url");
    return res;
  })
  .onRequest("session/set_mode", async ({ params, client }) => {
    const s = liveSession(params.sessionId);
    if (!MODES.some((m) => m.id === params.modeId))
      throw acp.RequestError.invalidParams({ modeId: params.modeId }, `unknown mode '${params.modeId}': not one of the session's availableModes`);
    const moved = s.meta.mode !== params.modeId;
    s.meta.mode = params.modeId;
    writeMeta(s.meta);
    // the mode option followed: tell the client, as acp-agent does
    if (moved) await client.notify("session/update", { sessionId: s.meta.sessionId, update: { sessionUpdate: "config_option_update", configOptions: configOptions(s.meta) } });
    return {};
  })
  .onRequest("session/set_config_option", async ({ params, client }) => {
    const s = liveSession(params.sessionId);
    const o = optionById.get(params.configId);
    if (!o) throw acp.RequestError.invalidParams({ configId: params.configId }, `unknown config option '${params.configId}'`);
    const v = params.value;
    let value;
    if (params.type === "boolean") {
      // The SDK's schema has checked that value is a boolean.
      if (!o.boolean || !clientBools)
        throw acp.RequestError.invalidParams(undefined, o.boolean ? `config option '${o.id}' takes the value "true" or "false"` : `config option '${o.id}' is a select: send one of its value ids`);
      value = v;
    } else if (o.boolean) {
      if (clientBools || (v !== "true" && v !== "false"))
        throw acp.RequestError.invalidParams(undefined, clientBools ? `config option '${o.id}' is boolean: send type "boolean" and a boolean value` : `config option '${o.id}' takes the value "true" or "false"`);
      value = v === "true";
    } else {
      if (!o.values.some((x) => x.value === v))
        throw acp.RequestError.invalidParams({ configId: o.id, value: v }, `config option '${o.id}' has no value '${v}'`);
      value = v;
    }
    const modeMoved = o.id === "mode" && s.meta.mode !== value;
    if (o.id === "mode") s.meta.mode = value;
    else s.meta.config = { ...s.meta.config, [o.id]: value };
    writeMeta(s.meta); // stored before the answer, as acp-agent stores it in SQLite
    if (modeMoved) await client.notify("session/update", { sessionId: s.meta.sessionId, update: { sessionUpdate: "current_mode_update", currentModeId: value } });
    return { configOptions: configOptions(s.meta) };
  })
  .onRequest("session/prompt", async ({ params, client }) => {
    const s = live.get(params.sessionId);
    if (!s) throw acp.RequestError.resourceNotFound(params.sessionId);
    s.cancelled = false;
    const id = s.meta.sessionId;
    const text = (params.prompt ?? []).filter((b) => b.type === "text").map((b) => b.text).join("");
    const userMsg = crypto.randomUUID();
    const send = async (updates) => {
      appendHistory(id, updates);
      s.meta.updatedAt = new Date().toISOString();
      writeMeta(s.meta);
      await Promise.all(updates.map((update) => client.notify("session/update", { sessionId: id, update })));
    };
    const user = { sessionUpdate: "user_message_chunk", messageId: userMsg, content: { type: "text", text } };
    const msgId = crypto.randomUUID();
    const chunk = (t) => ({ sessionUpdate: "agent_message_chunk", messageId: msgId, content: { type: "text", text: t } });
    let m;
    if (openaiEngine) {
      const stopReason = await openaiEngine.prompt({ s, id, user, msgId, history: () => fs.readFileSync(histPath(id), "utf8"), appendHistory, client });
      s.meta.updatedAt = new Date().toISOString();
      writeMeta(s.meta);
      return { stopReason };
    } else if ((m = /^\/stream\s+(\d+)\s+(\d+)\s*$/.exec(text))) {
      const n = Number(m[1]);
      const body = "x".repeat(Number(m[2]));
      // The user message goes into the first batch: stored, but not sent (the client wrote it).
      appendHistory(id, [user]);
      for (let i = 0; i < n && !s.cancelled; i += BATCH) {
        const batch = [];
        for (let j = i; j < Math.min(n, i + BATCH); j++) batch.push(chunk(body));
        await send(batch);
      }
    } else if ((m = /^\/title\s+([\s\S]*)$/.exec(text))) {
      appendHistory(id, [user]);
      s.meta.title = m[1];
      await send([{ sessionUpdate: "session_info_update", title: m[1], updatedAt: new Date().toISOString() }]);
    } else {
      appendHistory(id, [user]);
      // As the echo engine: verbose starts with a thought, echo-large echoes twice.
      const out = [];
      if (valueOf(s.meta, optionById.get("verbose")))
        out.push({ sessionUpdate: "agent_thought_chunk", content: { type: "text", text: `mode: ${modeOf(s.meta)}, model: ${valueOf(s.meta, optionById.get("model"))}` } });
      out.push(chunk(text));
      if (valueOf(s.meta, optionById.get("model")) === "echo-large") out.push(chunk(text));
      await send(out);
    }
    return { stopReason: s.cancelled ? "cancelled" : "end_turn" };
  })
  .onNotification("session/cancel", ({ params }) => {
    const s = live.get(params.sessionId);
    if (s) {
      s.cancelled = true;
      s.abort?.abort(); // the model's HTTP stream, when one is open
    }
  });

if (listenPort === null) {
  const stream = acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
  const conn = app.connect(stream);
  conn.closed.then(() => process.exit(0));
} else {
  const { AcpServer } = await import("@agentclientprotocol/sdk/experimental/server");
  const { createNodeHttpHandler, createNodeWebSocketUpgradeHandler } = await import("@agentclientprotocol/sdk/experimental/node");
  const { WebSocketServer } = await import("ws");
  const http = await import("node:http");
  const server = new AcpServer({ agent: app });
  const onHttp = createNodeHttpHandler(server);
  const httpServer = http.createServer((req, res) => {
    if (new URL(req.url, "http://x").pathname !== "/acp") {
      res.writeHead(404).end();
      return;
    }
    onHttp(req, res);
  });
  httpServer.on("upgrade", createNodeWebSocketUpgradeHandler(server, new WebSocketServer({ noServer: true })));
  httpServer.listen(listenPort, "127.0.0.1", () => console.log(`listening ${httpServer.address().port}`));
  const stop = () => server.close().finally(() => process.exit(0));
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}
