// SPDX-License-Identifier: Apache-2.0
// Two remote ACP agents written with the official TypeScript SDK 2.4.0: AcpServer behind
// experimental/node's createNodeHttpHandler (Streamable HTTP) and
// createNodeWebSocketUpgradeHandler (WebSocket), each on its own Node http server on
// 127.0.0.1:0, sharing one map of sessions, so a session made on A can be loaded on B (the
// reconnect recipe: new connection, initialize, session/load).
//
// Prints {"a": PORT, "b": PORT} on its first line; stops on SIGTERM or when stdin ends.
// $TOKEN: every request needs "Authorization: Bearer $TOKEN" (401 otherwise).
// $COOKIE: initialize's answer sets "affinity=$COOKIE" and every later request of the
// connection must send it back (403 otherwise), as a load balancer's sticky cookie would.
// $RECORD: a file that gets one JSON line per HTTP request (method, headers but the token).
//
// The agent: initialize advertises loadSession, close and list. A prompt's text is echoed as
// three agent_message_chunk updates; "/ask" asks permission and says which option was chosen;
// "/sleep" waits for session/cancel. Every user and agent chunk is kept as the session's
// history and replayed by session/load.
import { appendFileSync } from "node:fs";
import { createServer } from "node:http";
import { WebSocketServer } from "ws";
import * as acp from "@agentclientprotocol/sdk";
import { AcpServer } from "@agentclientprotocol/sdk/experimental/server";
import { createNodeHttpHandler, createNodeWebSocketUpgradeHandler } from "@agentclientprotocol/sdk/experimental/node";

const sessions = new Map(); // id -> {cwd, history: [update], title}
const waiting = new Map(); // sessionId -> resolve of a /sleep turn
let next = 0;

const app = acp
  .agent()
  .onRequest("initialize", () => ({
    protocolVersion: 1,
    agentCapabilities: { loadSession: true, sessionCapabilities: { close: {}, list: {} } },
    agentInfo: { name: "sdk-remote", version: "1.0.0" },
  }))
  .onRequest("session/new", ({ params }) => {
    const sessionId = `sess-${process.pid}-${next++}`;
    sessions.set(sessionId, { cwd: params.cwd, history: [], title: null, updatedAt: new Date().toISOString() });
    return { sessionId };
  })
  .onRequest("session/load", async ({ params, client }) => {
    const s = sessions.get(params.sessionId);
    if (!s) throw acp.RequestError.resourceNotFound(params.sessionId);
    for (const update of s.history) await client.notify("session/update", { sessionId: params.sessionId, update });
    return {};
  })
  .onRequest("session/list", () => ({
    sessions: [...sessions].map(([sessionId, s]) => ({ sessionId, cwd: s.cwd, title: s.title, updatedAt: s.updatedAt })),
  }))
  .onRequest("session/close", ({ params }) => {
    if (!sessions.has(params.sessionId)) throw acp.RequestError.resourceNotFound(params.sessionId);
    return {};
  })
  .onRequest("session/prompt", async ({ params, client }) => {
    const s = sessions.get(params.sessionId);
    if (!s) throw acp.RequestError.resourceNotFound(params.sessionId);
    const text = params.prompt.map((b) => b.text ?? "").join("");
    const say = async (update) => {
      s.history.push(update);
      s.updatedAt = new Date().toISOString();
      await client.notify("session/update", { sessionId: params.sessionId, update });
    };
    s.history.push({ sessionUpdate: "user_message_chunk", content: { type: "text", text } });
    if (text === "/sleep") {
      await say({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: "sleeping" } });
      await new Promise((resolve) => waiting.set(params.sessionId, resolve));
      return { stopReason: "cancelled" };
    }
    if (text === "/ask") {
      const r = await client.request("session/request_permission", {
        sessionId: params.sessionId,
        toolCall: { toolCallId: "t1", title: "touch remote-file", kind: "edit", status: "pending" },
        options: [
          { optionId: "yes", name: "Allow", kind: "allow_once" },
          { optionId: "no", name: "Reject", kind: "reject_once" },
        ],
      });
      const chosen = r.outcome.outcome === "selected" ? r.outcome.optionId : r.outcome.outcome;
      await say({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: `chose ${chosen}` } });
      return { stopReason: "end_turn" };
    }
    for (const piece of ["echo: ", text, "."])
      await say({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: piece } });
    return { stopReason: "end_turn" };
  })
  .onNotification("session/cancel", ({ params }) => {
    waiting.get(params.sessionId)?.();
    waiting.delete(params.sessionId);
  });

const acpServer = new AcpServer({ agent: app });
const handle = createNodeHttpHandler(acpServer);
const wss = new WebSocketServer({ noServer: true });
const upgrade = createNodeWebSocketUpgradeHandler(acpServer, wss);

// The gate in front of the SDK: token and sticky cookie.
function refused(req) {
  if (process.env.RECORD) {
    const headers = { ...req.headers };
    if (headers.authorization) headers.authorization = headers.authorization === `Bearer ${process.env.TOKEN}` ? "Bearer <right>" : "Bearer <wrong>";
    appendFileSync(process.env.RECORD, JSON.stringify({ method: req.method, headers }) + "\n");
  }
  if (process.env.TOKEN && req.headers.authorization !== `Bearer ${process.env.TOKEN}`) return 401;
  if (process.env.COOKIE && req.headers["acp-connection-id"] && !(req.headers.cookie ?? "").split("; ").includes(`affinity=${process.env.COOKIE}`))
    return 403;
  return 0;
}

function listen() {
  const server = createServer((req, res) => {
    const status = refused(req);
    if (status) {
      res.writeHead(status, { "content-type": "text/plain" }).end(status === 401 ? "Unauthorized" : "Forbidden: no affinity cookie");
      return;
    }
    if (process.env.COOKIE && !req.headers["acp-connection-id"]) res.setHeader("set-cookie", [`affinity=${process.env.COOKIE}; Path=/; HttpOnly`, "other=1"]);
    handle(req, res);
  });
  server.on("upgrade", (req, socket, head) => {
    if (refused(req)) {
      socket.end("HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\n\r\n");
      return;
    }
    upgrade(req, socket, head);
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

const a = await listen();
const b = await listen();
process.stdout.write(JSON.stringify({ a: a.address().port, b: b.address().port }) + "\n");
const stop = async () => {
  for (const resolve of waiting.values()) resolve();
  await acpServer.close().catch(() => {});
  a.closeAllConnections();
  b.closeAllConnections();
  a.close();
  b.close();
  wss.close();
  process.exit(0);
};
process.on("SIGTERM", stop);
process.stdin.on("end", stop);
process.stdin.resume();
