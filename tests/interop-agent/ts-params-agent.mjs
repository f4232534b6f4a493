// SPDX-License-Identifier: Apache-2.0
// The official TypeScript SDK (@agentclientprotocol/sdk 2.4.0) as an agent serving every method
// acp-agent serves, answering each request with a minimal valid result whose _meta.params is what
// the SDK's decoder made of the request's params (after its own validation: -32602 when they do
// not fit). validate.test.mjs sends it and acp-agent the same bytes and compares what each takes,
// what each refuses, and how each reads the malformed optional members the schema lets a decoder
// drop. A session/cancel's decoded params go to stderr, one JSON line each.
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const seen = (params, result = {}) => ({ ...result, _meta: { params } });
const caps = {
  loadSession: true,
  promptCapabilities: { image: true, audio: true, embeddedContext: true },
  sessionCapabilities: { list: {}, delete: {}, resume: {}, close: {}, additionalDirectories: {} },
  auth: { logout: {} },
};

const app = acp
  .agent()
  .onRequest("initialize", ({ params }) => seen(params, { protocolVersion: 1, agentCapabilities: caps }))
  .onRequest("authenticate", ({ params }) => seen(params))
  .onRequest("logout", ({ params }) => seen(params))
  .onRequest("session/new", ({ params }) => seen(params, { sessionId: "sess_ts" }))
  .onRequest("session/load", ({ params }) => seen(params))
  .onRequest("session/resume", ({ params }) => seen(params))
  .onRequest("session/close", ({ params }) => seen(params))
  .onRequest("session/delete", ({ params }) => seen(params))
  .onRequest("session/list", ({ params }) => seen(params, { sessions: [] }))
  .onRequest("session/prompt", ({ params }) => seen(params, { stopReason: "end_turn" }))
  .onRequest("session/set_mode", ({ params }) => seen(params))
  .onRequest("session/set_config_option", ({ params }) => seen(params, { configOptions: [] }))
  .onNotification("session/cancel", ({ params }) => process.stderr.write(JSON.stringify({ cancel: params }) + "\n"));

const conn = app.connect(acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
await conn.closed;
process.exit(0);
