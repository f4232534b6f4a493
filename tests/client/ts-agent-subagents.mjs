// SPDX-License-Identifier: Apache-2.0
// An agent written with the official TypeScript SDK's unstable build that exposes subagent
// sessions (issue 22): "spawn" announces a child with subagent_update on the prompted session,
// streams into the child, then reports it idle (clearing its description); "spawn-nocancel"
// does the same without granting cancel; "spawn-tool" with a tool call in the child; "spawn-plan"
// with a plan of the parent's, then the child's plan, usage and a notice; "hijack" sends a subagent_update naming the prompted
// session itself (a client must not take it for a child). A session/load replays a spawn.
// Nothing of a child is sent to a client that did not advertise clientCapabilities.subagents.
// $ACP_RECORD: every message received, one JSON line each.
import { appendFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk/unstable";

const record = (method, params) => {
  if (process.env.ACP_RECORD) appendFileSync(process.env.ACP_RECORD, JSON.stringify({ method, params }) + "\n");
};

let next = 0;
let subagents = false;
async function spawn(client, sessionId, cancel, tool = false, plan = false) {
  if (!subagents) return;
  const child = `child-${next++}`;
  const send = (sid, update) => client.notify("session/update", { sessionId: sid, update });
  await send(sessionId, {
    sessionUpdate: "subagent_update",
    sessionId: child,
    title: "kid",
    description: "looks around",
    ...(cancel ? { capabilities: { cancel: {} } } : {}),
    state: { state: "running" },
  });
  await send(child, { sessionUpdate: "user_message_chunk", content: { type: "text", text: "look" } });
  if (tool) await send(child, { sessionUpdate: "tool_call", toolCallId: "t1", title: "grep", kind: "search", status: "completed" });
  if (plan) {
    await send(sessionId, { sessionUpdate: "plan", entries: [{ content: "delegate", priority: "high", status: "in_progress" }] });
    await send(child, { sessionUpdate: "plan", entries: [{ content: "search", priority: "high", status: "in_progress" }] });
    await send(child, { sessionUpdate: "usage_update", used: 10, size: 100 });
    await send(child, { sessionUpdate: "notice", severity: "info", title: "halfway" });
  }
  await send(child, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "found it" } });
  await send(sessionId, { sessionUpdate: "subagent_update", sessionId: child, description: null, state: { state: "idle", stopReason: "end_turn" } });
}

const app = acp
  .agent()
  .onRequest("initialize", ({ params }) => {
    record("initialize", params);
    subagents = params.clientCapabilities?.subagents != null;
    return { protocolVersion: 1, agentCapabilities: { loadSession: true }, agentInfo: { name: "ts-agent-subagents", version: "1.0.0" } };
  })
  .onRequest("session/new", ({ params }) => {
    record("session/new", params);
    return { sessionId: `parent-${next++}` };
  })
  .onRequest("session/load", async ({ params, client }) => {
    record("session/load", params);
    await spawn(client, params.sessionId, true);
    return {};
  })
  .onRequest("session/prompt", async ({ params, client }) => {
    record("session/prompt", params);
    const text = params.prompt.map((b) => b.text ?? "").join("");
    if (text === "spawn" || text === "spawn-nocancel") await spawn(client, params.sessionId, text === "spawn");
    if (text === "spawn-tool") await spawn(client, params.sessionId, false, true);
    if (text === "spawn-plan") await spawn(client, params.sessionId, false, false, true);
    if (text === "hijack" && subagents)
      await client.notify("session/update", { sessionId: params.sessionId, update: { sessionUpdate: "subagent_update", sessionId: params.sessionId, title: "me" } });
    return { stopReason: "end_turn" };
  })
  .onNotification("session/cancel", ({ params }) => record("session/cancel", params))
  .onRequest("*", ({ method, params }) => {
    record(method, params);
    throw acp.RequestError.methodNotFound(method);
  })
  .onNotification("*", ({ method, params }) => record(method, params));

const conn = app.connect(acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
await conn.closed;
process.exit(0);
