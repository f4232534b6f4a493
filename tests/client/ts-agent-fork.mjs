// SPDX-License-Identifier: Apache-2.0
// An ACP agent written with the official TypeScript SDK 2.4.0 that implements the unstable
// session/fork as the SDK's method table types it (AGENT_METHODS.session_fork): each session is
// an in-memory list of its messages, and a fork copies its source's list. A prompt's reply says
// which messages the session holds, so a test sees what a fork inherited. It records every
// message it receives (method and params, one JSON line) in $ACP_RECORD. With $ACP_NO_FORK set
// it advertises no fork (and answers session/fork -32601, as an agent without it would).
import { appendFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk/unstable";

const record = (method, params) => {
  if (process.env.ACP_RECORD) appendFileSync(process.env.ACP_RECORD, JSON.stringify({ method, params }) + "\n");
};
const fork = !process.env.ACP_NO_FORK;
const sessions = new Map(); // id -> {cwd, messages: [text]}
let next = 0;
const newId = () => `ts-sess-${++next}`;

const app = acp
  .agent()
  .onRequest("initialize", ({ params }) => {
    record("initialize", params);
    return {
      protocolVersion: 1,
      agentCapabilities: { sessionCapabilities: fork ? { fork: {} } : {} },
      agentInfo: { name: "ts-agent-fork", version: "1.0.0" },
    };
  })
  .onRequest("session/new", ({ params }) => {
    record("session/new", params);
    const sessionId = newId();
    sessions.set(sessionId, { cwd: params.cwd, messages: [] });
    return { sessionId };
  })
  .onRequest(acp.AGENT_METHODS.session_fork, ({ params }) => {
    record("session/fork", params);
    if (!fork) throw acp.RequestError.methodNotFound("session/fork");
    const src = sessions.get(params.sessionId);
    if (!src) throw acp.RequestError.resourceNotFound(params.sessionId);
    const sessionId = newId();
    sessions.set(sessionId, { cwd: params.cwd, messages: [...src.messages] });
    return { sessionId };
  })
  .onRequest("session/prompt", async ({ params, client }) => {
    record("session/prompt", params);
    const s = sessions.get(params.sessionId);
    if (!s) throw acp.RequestError.resourceNotFound(params.sessionId);
    s.messages.push(params.prompt.map((b) => b.text ?? "").join(""));
    await client.notify("session/update", {
      sessionId: params.sessionId,
      update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: `[${s.messages.join(",")}]` } },
    });
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
