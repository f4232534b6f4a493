// SPDX-License-Identifier: Apache-2.0
// (unstable) The openai engine's endpoint as an ACP provider (rfds/custom-llm-endpoint.mdx), and
// its sign-in state (auth/status), driven by the official SDK 2.4.0 with every message checked
// against schema.unstable.json (the harness's schemaCheck): providers/list names the endpoint with
// no secret; after providers/set the next model request goes to the new URL with the client's
// headers (and not the engine's own key); those headers never reach the store file or the logs;
// providers/disable stops requests; auth/status and auth/status_update follow the key in effect.
import { join } from "node:path";
import { test, tempDir, assert, modelServer, openaiAgent, scripted, storeBytes, turnRequests, textOf } from "./lib.mjs";
import { answer } from "./fixtures.mjs";
import { acp, listeningAgent, wsHeaders } from "../interop-agent/lib.mjs";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";
import { WebSocket } from "ws";

const statusUpdates = (a) => a.msgs.filter((e) => e.msg.method === "auth/status_update").map((e) => e.msg.params);

test("providers/set moves the endpoint: the next request goes to the new server with the client's headers, which no store or log ever sees", async (t) => {
  if (scripted(t)) return;
  const dir = tempDir(t);
  const first = await modelServer(t);
  const second = await modelServer(t);
  first.on("one", answer("from the first server"));
  second.on("two", answer("from the second server"));
  const ownKey = "sk-engine-own-key-3b1c";
  const a = openaiAgent(t, dir, first, { apiKey: ownKey, args: ["--log-level", "info"] });
  const init = await a.init();
  assert.deepEqual(init.agentCapabilities.providers, {});
  assert.deepEqual(init.agentCapabilities.auth?.status, {});

  const list = await a.request("providers/list", {});
  assert.deepEqual(list.providers, [
    { providerId: "openai", supported: ["openai"], required: false, current: { apiType: "openai", baseUrl: first.url } },
  ]);
  assert.ok(!JSON.stringify(list).includes(ownKey), "the list shows a secret");
  const st = await a.request("auth/status", {});
  assert.equal(st.state, "authenticated");
  assert.ok(!JSON.stringify(st).includes(ownKey));

  const sid = await a.newSession(dir);
  const r1 = await a.prompt(sid, "one");
  assert.equal(textOf(r1.updates), "from the first server");
  assert.equal(turnRequests(first, "one")[0].headers.authorization, `Bearer ${ownKey}`);

  const clientKey = "sk-client-handed-over-9e27";
  const gateway = "gw-route-secret-51aa";
  await a.request("providers/set", {
    providerId: "openai",
    apiType: "openai",
    baseUrl: second.url,
    headers: { Authorization: `Bearer ${clientKey}`, "X-Gateway-Route": gateway },
  });
  const after = await a.request("providers/list", {});
  assert.equal(after.providers[0].current.baseUrl, second.url);
  assert.ok(!JSON.stringify(after).includes(clientKey) && !JSON.stringify(after).includes(gateway), "the list shows the headers");

  const firstChats = first.chats().length;
  const r2 = await a.prompt(sid, "two");
  assert.equal(textOf(r2.updates), "from the second server");
  assert.equal(first.chats().length, firstChats, "a request still went to the old endpoint");
  const [req] = turnRequests(second, "two");
  assert.ok(req, "the new endpoint was never asked");
  assert.equal(req.headers.authorization, `Bearer ${clientKey}`, "the client's Authorization header replaces the engine's key");
  assert.equal(req.headers["x-gateway-route"], gateway);
  for (const r of second.requests) assert.ok(!JSON.stringify(r.headers).includes(ownKey), "the engine's own key went to the client's endpoint");

  await a.end();
  const store = storeBytes(join(dir, "sessions.db"));
  for (const secret of [clientKey, gateway]) {
    assert.ok(!store.includes(secret), `${secret} was written to the store`);
    assert.ok(!a.st.stderr.includes(secret), `${secret} was logged`);
  }
  assert.match(a.st.stderr, /provider 'openai' set by the client/, "the change itself is logged");
});

test("providers/disable: listed with current null, prompts are told and no request is made; set brings it back; bad sets are -32602", async (t) => {
  if (scripted(t)) return;
  const dir = tempDir(t);
  const s = await modelServer(t);
  s.on("back", answer("back again"));
  const a = openaiAgent(t, dir, s);
  await a.init();
  const sid = await a.newSession(dir);
  assert.deepEqual(await a.request("auth/status", {}), { state: "not_required" }); // loopback, no key

  await a.request("providers/disable", { providerId: "openai" });
  await a.request("providers/disable", { providerId: "nothing-here" }); // the RFD: idempotent success
  const list = await a.request("providers/list", {});
  assert.equal(list.providers[0].current, null);
  const chats = s.chats().length;
  const r = await a.prompt(sid, "while disabled");
  assert.match(textOf(r.updates), /disabled the provider 'openai'/);
  assert.equal(s.chats().length, chats, "a disabled provider was used");

  const bad = async (params, re) => {
    await assert.rejects(a.request("providers/set", params), (e) => e.code === -32602 && re.test(e.message));
  };
  await bad({ providerId: "main", apiType: "openai", baseUrl: s.url }, /unknown provider 'main'/);
  await bad({ providerId: "openai", apiType: "anthropic", baseUrl: s.url }, /does not speak 'anthropic'/);
  await bad({ providerId: "openai", apiType: "openai", baseUrl: s.url, headers: { "X-A": "1\r\nX-Injected: 2" } }, /header 'X-A'/);
  await bad({ providerId: "openai", apiType: "openai" }, /baseUrl/);
  await bad({ providerId: "openai", apiType: "openai", baseUrl: "file:///etc/passwd" }, /http:\/\/ or https:\/\//);
  assert.equal((await a.request("providers/list", {})).providers[0].current, null, "a refused set changed the route");

  await a.request("providers/set", { providerId: "openai", apiType: "openai", baseUrl: s.url });
  const r2 = await a.prompt(sid, "back");
  assert.equal(textOf(r2.updates), "back again");
  // disabled (unknown: nothing in effect), then back on a loopback server: each told once
  assert.deepEqual(statusUpdates(a).map((p) => p.state), ["unknown", "not_required"]);
  await a.end();
});

// One SDK client over WebSocket to a listening agent: request() and the notifications it got.
function wsClient(url) {
  const stream = createWebSocketStream(url, { WebSocket, headers: wsHeaders() });
  const c = { notes: [] };
  c.conn = acp
    .client({ name: "providers-test" })
    .onNotification("session/update", ({ params }) => c.notes.push(params))
    .connect(stream);
  c.request = (method, params) => c.conn.agent.request(method, params);
  return c;
}

test("on a listener each connection's route is its own: one client's provider and key never carry another's prompts", async (t) => {
  if (scripted(t)) return;
  const dir = tempDir(t);
  const s = await modelServer(t);
  const other = await modelServer(t);
  s.on("mine", answer("engine endpoint"));
  other.on("theirs", answer("client endpoint"));
  const l = await listeningAgent(t, { store: join(dir, "sessions.db"), args: ["--engine", "openai", "--base-url", s.url, "--model", "m"] });
  const a = wsClient(l.url);
  const b = wsClient(l.url);
  for (const c of [a, b]) await c.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
  const key = "sk-connection-a-only-6f02";
  await a.request("providers/set", { providerId: "openai", apiType: "openai", baseUrl: other.url, headers: { Authorization: `Bearer ${key}` } });
  assert.equal((await b.request("providers/list", {})).providers[0].current.baseUrl, s.url);
  assert.equal((await b.request("auth/status", {})).state, "not_required");
  const sb = (await b.request("session/new", { cwd: dir, mcpServers: [] })).sessionId;
  await b.request("session/prompt", { sessionId: sb, prompt: [{ type: "text", text: "mine" }] });
  const sa = (await a.request("session/new", { cwd: dir, mcpServers: [] })).sessionId;
  await a.request("session/prompt", { sessionId: sa, prompt: [{ type: "text", text: "theirs" }] });
  assert.equal(turnRequests(s, "mine").length >= 1, true, "b's prompt did not reach the engine's endpoint");
  assert.equal(turnRequests(other, "mine").length, 0, "b's prompt went to a's endpoint");
  assert.equal(turnRequests(other, "theirs")[0].headers.authorization, `Bearer ${key}`);
  for (const r of s.requests) assert.ok(!JSON.stringify(r.headers).includes(key), "a's key went out for b");
  a.conn.close();
  b.conn.close();
  await l.stop();
  assert.ok(!l.stderr().includes(key), "the key was logged");
  assert.ok(!storeBytes(join(dir, "sessions.db")).includes(key), "the key was stored");
});

test("--unstable-off providers,auth-status: not advertised, the methods are unknown (-32601)", async (t) => {
  const dir = tempDir(t);
  const s = await modelServer(t);
  const a = openaiAgent(t, dir, s, { args: ["--unstable-off", "providers,auth-status"] });
  const init = await a.init();
  assert.equal(init.agentCapabilities.providers, undefined);
  assert.equal(init.agentCapabilities.auth?.status, undefined);
  for (const m of ["providers/list", "auth/status"]) await assert.rejects(a.request(m, {}), (e) => e.code === -32601);
  await a.end();
});
