// SPDX-License-Identifier: Apache-2.0
// A Streamable HTTP ACP server written by hand, just enough of the profile for `acp new` and
// `acp prompt`, that misbehaves the way $MODE says. Prints {"port": N} and serves until killed.
//   init500     initialize answered 500 "boom"
//   noconnid    initialize answered 200 without Acp-Connection-Id
//   badinit     initialize answered 200 with text that is not the JSON-RPC response
//   garbage     junk events on the connection stream before session/new's answer (the client
//               goes on): text that is not JSON, a JSON array, an event of another type
//   big         session/new's answer comes after one event of 65 MiB
//   vanish      the process exits in the middle of a prompt's updates
//   post500     the session/prompt POST is answered 500 "kaput"
//   post404     the session/new POST is answered 404 (the connection is unknown)
//   sse409      the session's GET stream is refused with 409
//   ssejson     the connection's GET is answered 200 application/json
//   sseclose    the session's stream ends in the middle of a prompt (the server stays)
//   burst       h2c (HTTP/2 with prior knowledge) instead of HTTP/1.1; each prompt's updates
//               and its answer go out at once, three DATA frames of 10 KB in one read of the
//               client's, then the stream is quiet (no keep-alive comments): the reader must
//               take all of it without waiting for more bytes from the socket
import { createServer } from "node:http";
import { createServer as createH2cServer } from "node:http2";

const MODE = process.env.MODE ?? "";
const conns = new Map(); // connection id -> {stream: res, sessions: Map(id -> res)}
let next = 0;
const sse = (res, msg) => res.write(`data: ${typeof msg === "string" ? msg : JSON.stringify(msg)}\n\n`);

function openStream(req, res) {
  const c = conns.get(req.headers["acp-connection-id"]);
  if (!c) return res.writeHead(404).end("Unknown Acp-Connection-Id");
  const sid = req.headers["acp-session-id"];
  if (MODE === "ssejson" && !sid) return res.writeHead(200, { "content-type": "application/json" }).end("{}");
  if (MODE === "sse409" && sid) return res.writeHead(409, { "content-type": "text/plain" }).end("Outbound stream already has an active receiver");
  res.writeHead(200, { "content-type": "text/event-stream" });
  res.flushHeaders();
  if (sid) c.sessions.set(sid, res);
  else c.stream = res;
}

function onMessage(c, sid, m) {
  const to = (s) => (s ? c.sessions.get(s) : c.stream);
  if (m.method === "session/new") {
    const sessionId = `h${next++}`;
    if (MODE === "garbage") {
      sse(c.stream, "{not json");
      sse(c.stream, "[1,2]");
      c.stream.write("event: other\ndata: {}\n\n");
      c.stream.write(": a comment\n\n");
    }
    if (MODE === "big") sse(c.stream, JSON.stringify({ jsonrpc: "2.0", method: "_x", params: { pad: "x".repeat(65 << 20) } }));
    sse(c.stream, { jsonrpc: "2.0", id: m.id, result: { sessionId } });
  } else if (m.method === "session/prompt") {
    const s = to(sid);
    if (MODE === "burst") return setTimeout(() => burst(sid, m.id).forEach((part) => s.write(part)), Number(process.env.BURST_DELAY_MS ?? 0));
    sse(s, { jsonrpc: "2.0", method: "session/update", params: { sessionId: sid, update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "first " } } } });
    if (MODE === "vanish") return setTimeout(() => process.exit(0), 50);
    if (MODE === "sseclose") return setTimeout(() => s.end(), 50);
    sse(s, { jsonrpc: "2.0", id: m.id, result: { stopReason: "end_turn" } });
  }
}

// Updates of 200 characters, then the answer, in three parts of about 10 KB: each write is a
// DATA frame, and the three leave in one segment. 10 KB + 10 KB overflow a 16 KiB read buffer
// in the second frame, with the third (the answer) still behind it (see net/shttp_client.c).
function burst(sid, id) {
  const update = (i) => `data: ${JSON.stringify({ jsonrpc: "2.0", method: "session/update", params: { sessionId: sid, update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: `${i} `.padEnd(200, "x") } } } })}\n\n`;
  const parts = [];
  for (let i = 0, part = ""; parts.length < 3; i++) {
    part += update(i);
    if (part.length >= 10000) parts.push(part), (part = "");
  }
  parts[2] += `data: ${JSON.stringify({ jsonrpc: "2.0", id, result: { stopReason: "end_turn" } })}\n\n`;
  return parts;
}

const server = (MODE === "burst" ? createH2cServer : createServer)((req, res) => {
  let body = "";
  req.on("data", (d) => (body += d));
  req.on("end", () => {
    if (req.method === "GET") return openStream(req, res);
    if (req.method === "DELETE") {
      conns.delete(req.headers["acp-connection-id"]);
      return res.writeHead(202).end();
    }
    const m = JSON.parse(body);
    if (m.method === "initialize") {
      if (MODE === "init500") return res.writeHead(500, { "content-type": "text/plain" }).end("boom");
      const id = `c${next++}`;
      conns.set(id, { stream: null, sessions: new Map() });
      const headers = { "content-type": "application/json" };
      if (MODE !== "noconnid") headers["acp-connection-id"] = id;
      if (MODE === "badinit") return res.writeHead(200, headers).end("<html>hello</html>");
      return res.writeHead(200, headers).end(JSON.stringify({ jsonrpc: "2.0", id: m.id, result: { protocolVersion: 1, agentCapabilities: {}, agentInfo: { name: "hostile", version: "0" } } }));
    }
    const c = conns.get(req.headers["acp-connection-id"]);
    if (!c || (MODE === "post404" && m.method === "session/new")) return res.writeHead(404).end("Unknown Acp-Connection-Id");
    if (MODE === "post500" && m.method === "session/prompt") return res.writeHead(500, { "content-type": "text/plain" }).end("kaput");
    res.writeHead(202).end();
    onMessage(c, req.headers["acp-session-id"], m);
  });
});
server.listen(0, "127.0.0.1", () => process.stdout.write(JSON.stringify({ port: server.address().port }) + "\n"));
