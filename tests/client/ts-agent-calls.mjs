// SPDX-License-Identifier: Apache-2.0
// An ACP agent written with the official TypeScript SDK that serves every agent method a client
// can call and reports what it received, so tests/client/test_calls.c can check the client's
// calls as the SDK sees them:
// - every request and notification it receives is logged as {method, params} (params as the
//   SDK's typed handlers got them); the extension request `_test/log` answers the log;
// - authenticate: "key" succeeds, "refuse" fails -32000 with error.data, "elicit" asks the
//   client for a key through a request-scoped form elicitation first;
// - sessions: new, load (replays one update), resume, close, list (pages of 2), delete,
//   set_mode, set_config_option (select "model", boolean "fast");
// - extension requests: `_x/echo` answers its params, `_x/err` fails with the code, message
//   and data it is given, `_x/slow` waits for $/cancel_request and answers -32800, `_x/hang`
//   never answers; both say `_test/cancel_seen` when the cancel arrives;
// - the extension notification `_x/poke` {sessionId, modeId, fast} makes the agent change the
//   session's mode and config on its own (current_mode_update, config_option_update);
// - session/prompt: the prompt's text is a JSON array of actions run in order, as in
//   ts-agent-fs.mjs: {"method", "params", "bare", "withdrawMs"} calls the client ("sessionId"
//   filled in unless bare; "$T" is the last terminalId; withdrawMs: $/cancel_request after), {"notify", "params"} notifies it, {"update"}
//   sends a session/update. The reply is one agent_message_chunk with the JSON array of
//   outcomes ({"ok": true, "result"} or {"ok": false, "code", "message", "data"}); the turn
//   stops "cancelled" when session/cancel arrived during it.
// $ACP_CALLS_BARE=1: no optional capability, no auth methods, no modes or config options.
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const bare = process.env.ACP_CALLS_BARE === "1";
const log = [];
const record = (method, params) => log.push({ method, params: params ?? null });
const sessions = new Map(); // id -> { cwd, mode, model, fast, open }
const cancelled = new Set();
let next = 0;

const modesOf = (s) => ({
  currentModeId: s.mode,
  availableModes: [{ id: "ask", name: "Ask" }, { id: "code", name: "Code" }],
});
const configOf = (s) => [
  { id: "model", name: "Model", type: "select", currentValue: s.model, options: [{ value: "a", name: "A" }, { value: "b", name: "B" }] },
  { id: "fast", name: "Fast", type: "boolean", currentValue: s.fast },
];
const stateOf = (s) => (bare ? {} : { modes: modesOf(s), configOptions: configOf(s) });
const known = (id) => {
  const s = sessions.get(id);
  if (!s) throw acp.RequestError.resourceNotFound(id);
  return s;
};
const subst = (v, t) =>
  v === "$T" ? t : Array.isArray(v) ? v.map((x) => subst(x, t))
    : v && typeof v === "object" ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, subst(x, t)]))
    : v;
const aborted = (signal) => new Promise((res) => (signal.aborted ? res() : signal.addEventListener("abort", res, { once: true })));

const agentCapabilities = bare ? {} : {
  loadSession: true,
  sessionCapabilities: { resume: {}, close: {}, list: {}, delete: {} },
  auth: { logout: {} },
};
const authMethods = bare ? [] : [
  { id: "key", name: "API key", description: "Use the key in the environment" },
  { id: "refuse", name: "Refuser" },
  { id: "elicit", name: "Ask for a key" },
  { id: "tui", name: "Log in", type: "terminal", args: ["--login"] },
];

const app = acp
  .agent()
  .onRequest("initialize", ({ params }) => {
    record("initialize", params);
    return { protocolVersion: 1, agentCapabilities, authMethods, agentInfo: { name: "ts-agent-calls", version: "1.0.0" } };
  })
  .onRequest("authenticate", async ({ params, client, requestId }) => {
    record("authenticate", params);
    if (params.methodId === "key") return {};
    if (params.methodId === "elicit") {
      const r = await client.request("elicitation/create", {
        mode: "form",
        message: "Your API key?",
        requestId,
        requestedSchema: { type: "object", properties: { key: { type: "string" } }, required: ["key"] },
      });
      if (r.action === "accept" && r.content?.key === "sekrit") return {};
      throw acp.RequestError.authRequired({ details: `the key was not given (${r.action})` });
    }
    throw acp.RequestError.authRequired({ details: "the key was refused" });
  })
  .onRequest("logout", ({ params }) => {
    record("logout", params);
    return {};
  })
  .onRequest("session/new", ({ params }) => {
    record("session/new", params);
    const id = "s" + next++;
    const s = { cwd: params.cwd, mode: "ask", model: "a", fast: false, open: true };
    sessions.set(id, s);
    return { sessionId: id, ...stateOf(s) };
  })
  .onRequest("session/load", async ({ params, client }) => {
    record("session/load", params);
    const s = known(params.sessionId);
    s.open = true;
    await client.notify("session/update", {
      sessionId: params.sessionId,
      update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "replayed" } },
    });
    return stateOf(s);
  })
  .onRequest("session/resume", ({ params }) => {
    record("session/resume", params);
    const s = known(params.sessionId);
    s.open = true;
    return stateOf(s);
  })
  .onRequest("session/close", ({ params }) => {
    record("session/close", params);
    known(params.sessionId).open = false;
    return {};
  })
  .onRequest("session/delete", ({ params }) => {
    record("session/delete", params);
    known(params.sessionId);
    sessions.delete(params.sessionId);
    return {};
  })
  .onRequest("session/list", ({ params }) => {
    record("session/list", params);
    const all = [...sessions].filter(([, s]) => !params.cwd || s.cwd === params.cwd)
      .map(([sessionId, s]) => ({ sessionId, cwd: s.cwd }));
    const at = Number(params.cursor ?? 0);
    const page = { sessions: all.slice(at, at + 2) };
    if (at + 2 < all.length) page.nextCursor = String(at + 2);
    return page;
  })
  .onRequest("session/set_mode", ({ params }) => {
    record("session/set_mode", params);
    const s = known(params.sessionId);
    if (!["ask", "code"].includes(params.modeId)) throw acp.RequestError.invalidParams({ details: "no such mode" });
    s.mode = params.modeId;
    return {};
  })
  .onRequest("session/set_config_option", ({ params }) => {
    record("session/set_config_option", params);
    const s = known(params.sessionId);
    if (params.configId === "model" && ["a", "b"].includes(params.value)) s.model = params.value;
    else if (params.configId === "fast" && params.type === "boolean") s.fast = params.value;
    else throw acp.RequestError.invalidParams({ details: "no such option or value" });
    return { configOptions: configOf(s) };
  })
  .onRequest("session/prompt", async ({ params, client }) => {
    record("session/prompt", params);
    const actions = JSON.parse(params.prompt.map((b) => b.text ?? "").join(""));
    const out = [];
    let term;
    for (const a of actions) {
      try {
        if (a.update) {
          await client.notify("session/update", { sessionId: params.sessionId, update: a.update });
          out.push({ ok: true });
        } else if (a.notify) {
          await client.notify(a.notify, a.params ?? {});
          out.push({ ok: true });
        } else {
          const p = subst(a.params ?? {}, term);
          const opts = {};
          if (a.withdrawMs) { // $/cancel_request for our own request after that long
            const ac = new AbortController();
            setTimeout(() => ac.abort(), a.withdrawMs);
            opts.cancellationSignal = ac.signal;
          }
          const result = await client.request(a.method, a.bare ? p : { sessionId: params.sessionId, ...p }, opts);
          if (a.method === "terminal/create") term = result.terminalId;
          out.push({ ok: true, result: result ?? null });
        }
      } catch (e) {
        out.push({ ok: false, code: e.code, message: e.message, data: e.data ?? null });
      }
    }
    await client.notify("session/update", {
      sessionId: params.sessionId,
      update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: JSON.stringify(out) } },
    });
    return { stopReason: cancelled.delete(params.sessionId) ? "cancelled" : "end_turn" };
  })
  .onNotification("session/cancel", ({ params }) => {
    record("session/cancel", params);
    cancelled.add(params.sessionId);
  })
  .onRequest("*", async ({ method, params, signal, requestId, client }) => {
    if (method === "_test/log") return { log };
    record(method, params);
    if (method === "_x/echo") return { echo: params };
    if (method === "_x/err") throw new acp.RequestError(params.code, params.message, params.data);
    if (method === "_x/slow" || method === "_x/hang") {
      await aborted(signal);
      await client.notify("_test/cancel_seen", { method, requestId });
      if (method === "_x/hang") return new Promise(() => {});
      throw signal.reason; // RequestError -32800
    }
    throw acp.RequestError.methodNotFound(method);
  })
  .onNotification("*", async ({ method, params, client }) => {
    record(method, params);
    if (method !== "_x/poke") return;
    const s = known(params.sessionId);
    s.mode = params.modeId;
    s.fast = params.fast;
    await client.notify("session/update", {
      sessionId: params.sessionId,
      update: { sessionUpdate: "current_mode_update", currentModeId: s.mode },
    });
    await client.notify("session/update", {
      sessionId: params.sessionId,
      update: { sessionUpdate: "config_option_update", configOptions: configOf(s) },
    });
  });

const conn = app.connect(acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
await conn.closed;
process.exit(0); // pending timers must not keep an orphaned agent alive
