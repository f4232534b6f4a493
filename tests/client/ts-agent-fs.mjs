// SPDX-License-Identifier: Apache-2.0
// An ACP agent written with the official TypeScript SDK that drives the client's own methods
// (fs/*, terminal/*, session/request_permission). Each prompt's text is a JSON array of calls
// [{"method": "fs/read_text_file", "params": {...}}, ...], run in order; "sessionId" is filled
// in, and the string "$T" in params stands for the terminalId of the last terminal/create.
// The reply is one agent_message_chunk whose text is the JSON array of outcomes:
// {"ok": true, "result": ...} or {"ok": false, "code": N, "message": "..."}.
// {"method": "$waitfile", "path": P} waits until file P exists (a terminal's command started).
// {"method": "$say", "text": T} sends T as an agent_message_chunk at once (a test waits on it).
// {"method": "$repeat", "call": {...}, "times": N | "ms": M, "fill": S} makes the call again
// and again (N times, or for M milliseconds), with params.content S bytes of "A", then "B", ...
// when fill is given; its result: {done, refused, leaked (contents that held "SECRET"),
// torn (contents that were neither all "A" nor all "B" of fill's size)}.
// The turn stops with "cancelled" when session/cancel arrived during it.
import { existsSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const cancelled = new Set();
const config = { id: "model", name: "Model", type: "select", currentValue: "a", options: [{ value: "a", name: "A" }, { value: "b", name: "B" }] };
const subst = (v, t) =>
  v === "$T" ? t : Array.isArray(v) ? v.map((x) => subst(x, t))
    : v && typeof v === "object" ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, subst(x, t)]))
    : v;

const app = acp
  .agent()
  .onRequest("initialize", () => ({
    protocolVersion: 1,
    agentInfo: { name: "ts-agent-fs", version: "1.0.0" },
  }))
  .onRequest("session/new", () => ({
    sessionId: "fs-" + Math.random().toString(16).slice(2),
    // Modes and config options make session/set_mode and set_config_option callable.
    modes: { currentModeId: "ask", availableModes: [{ id: "ask", name: "Ask" }, { id: "code", name: "Code" }] },
    configOptions: [config],
  }))
  .onRequest("session/set_mode", ({ params }) => {
    if (!["ask", "code"].includes(params.modeId)) throw acp.RequestError.invalidParams({}, "no such mode");
    return {};
  })
  .onRequest("session/set_config_option", ({ params }) => {
    if (params.configId !== "model" || !["a", "b"].includes(params.value)) throw acp.RequestError.invalidParams({}, "no such value");
    config.currentValue = params.value;
    return { configOptions: [config] };
  })
  .onRequest("session/prompt", async ({ params, client }) => {
    const calls = JSON.parse(params.prompt.map((b) => b.text ?? "").join(""));
    const out = [];
    let term;
    for (const call of calls) {
      try {
        if (call.method === "$waitfile") {
          // Waits (polling) until a file exists: a terminal's command has got going.
          while (!existsSync(call.path)) await new Promise((r) => setTimeout(r, 10));
          out.push({ ok: true });
          continue;
        }
        if (call.method === "$say") {
          await client.notify("session/update", {
            sessionId: params.sessionId,
            update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: call.text } },
          });
          out.push({ ok: true });
          continue;
        }
        if (call.method === "$repeat") {
          const r = { done: 0, refused: 0, leaked: 0, torn: 0 };
          const fills = call.fill ? ["A", "B"].map((c) => c.repeat(call.fill)) : null;
          const end = Date.now() + (call.ms ?? 0);
          for (let i = 0; call.times ? i < call.times : Date.now() < end; i++) {
            const p = { sessionId: params.sessionId, ...call.call.params };
            if (fills && call.call.method === "fs/write_text_file") p.content = fills[i & 1];
            try {
              const res = await client.request(call.call.method, p);
              r.done++;
              const c = res?.content;
              if (typeof c === "string" && c.includes("SECRET")) r.leaked++;
              if (typeof c === "string" && fills && !fills.includes(c)) r.torn++;
            } catch {
              r.refused++;
            }
          }
          out.push({ ok: true, result: r });
          continue;
        }
        if (process.env.ACP_TEST_DEBUG) console.error("ts-agent-fs:", call.method);
        const p = { sessionId: params.sessionId, ...subst(call.params ?? {}, term) };
        const result = await client.request(call.method, p);
        if (call.method === "terminal/create") term = result.terminalId;
        out.push({ ok: true, result });
      } catch (e) {
        out.push({ ok: false, code: e.code, message: e.message });
      }
    }
    await client.notify("session/update", {
      sessionId: params.sessionId,
      update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: JSON.stringify(out) } },
    });
    return { stopReason: cancelled.delete(params.sessionId) ? "cancelled" : "end_turn" };
  })
  .onNotification("session/cancel", ({ params }) => {
    cancelled.add(params.sessionId);
  });

const conn = app.connect(acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
await conn.closed;
process.exit(0); // pending timers must not keep an orphaned agent alive
