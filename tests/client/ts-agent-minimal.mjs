// SPDX-License-Identifier: Apache-2.0
// An ACP agent written with the official TypeScript SDK that advertises NO optional
// capabilities, and records the method of every message it receives (one per line) in the
// file named by $ACP_RECORD, with the params of session/new so a test can see whether
// additionalDirectories or http/sse MCP servers were ever sent. Tests use it to prove that
// libacp's client never calls what an agent did not advertise. $ACP_AGENT_CAPS, when set, is
// the agentCapabilities it answers (capabilities set to false or null: still not advertised).
import { appendFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const record = (method, params) => {
  if (process.env.ACP_RECORD)
    appendFileSync(process.env.ACP_RECORD, JSON.stringify({ method, params }) + "\n");
};

let next = 0;
const cancelled = new Set();
const app = acp
  .agent()
  .onRequest("initialize", ({ params }) => {
    record("initialize", params);
    // $ACP_AGENT_CAPS: agentCapabilities spelled another way that still advertises nothing
    // (false and null rather than omitted).
    const caps = process.env.ACP_AGENT_CAPS ? { agentCapabilities: JSON.parse(process.env.ACP_AGENT_CAPS) } : {};
    return { protocolVersion: 1, ...caps, agentInfo: { name: "ts-agent-minimal", version: "1.0.0" } };
  })
  .onRequest("session/new", ({ params }) => {
    record("session/new", params);
    // A string id that looks like a number: the client must treat ids as opaque strings.
    return { sessionId: String(1000 + next++) };
  })
  .onRequest("session/prompt", async ({ params, client }) => {
    record("session/prompt", params);
    const text = params.prompt.map((b) => b.text ?? "").join("");
    const send = (update) => client.notify("session/update", { sessionId: params.sessionId, update });
    if (text === "hang") return new Promise(() => {}); // ignores even session/cancel
    if (text === "future") {
      // An update kind from the future: the client must hand it to the application raw.
      await send({ sessionUpdate: "future_kind", payload: [1, 2, 3] });
    } else if (text.startsWith("big ")) {
      await send({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: "x".repeat(Number(text.slice(4))) } });
    } else {
      // Unknown fields: the client must ignore them and pass them through raw.
      await send({ sessionUpdate: "agent_message_chunk", content: { type: "text", text }, futureField: 1 });
    }
    return { stopReason: cancelled.delete(params.sessionId) ? "cancelled" : "end_turn" };
  })
  .onNotification("session/cancel", ({ params }) => {
    record("session/cancel", params);
    cancelled.add(params.sessionId);
  })
  .onRequest("*", ({ method, params }) => {
    record(method, params);
    throw acp.RequestError.methodNotFound(method);
  })
  .onNotification("*", ({ method, params }) => record(method, params));

const conn = app.connect(acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
await conn.closed;
process.exit(0); // pending timers must not keep an orphaned agent alive
