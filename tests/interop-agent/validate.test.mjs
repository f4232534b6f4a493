// SPDX-License-Identifier: Apache-2.0
// Request params at the edge (issue 13, item 4): raw lines to build/acp-agent and, for comparison,
// the same lines to an agent built on the official TypeScript SDK 2.4.0 (ts-params-agent.mjs).
//
// acp-agent refuses a request whose params do not fit the schema with -32602, naming the first bad
// member by its JSON path in the message ("params.mcpServers must be an array") and in
// error.data.path, never with a library's words. What the SDK's decoder takes, acp-agent takes:
// unknown members, _meta, null for the x-deserialize-default-on-null arrays (read as []), malformed
// x-deserialize-default-on-error members (dropped). Where the two differ on purpose, the case says
// why (docs/agent.md, "Request validation").
import { spawn } from "node:child_process";
import { join } from "node:path";
import assert from "node:assert/strict";
import { test, rawAgent, tempDir, SOURCE, notOverHttp } from "./lib.mjs";

// The SDK agent over raw NDJSON: request() resolves with the response; stderr is kept.
function tsAgent(t) {
  const proc = spawn(process.execPath, [join(SOURCE, "tests/interop-agent/ts-params-agent.mjs")], {
    stdio: ["pipe", "pipe", "pipe"],
  });
  const waiting = new Map();
  const h = { stderr: "", nextId: 1 };
  let buf = "";
  proc.stdout.on("data", (d) => {
    buf += d;
    for (let nl; (nl = buf.indexOf("\n")) >= 0; ) {
      const msg = JSON.parse(buf.slice(0, nl));
      buf = buf.slice(nl + 1);
      const w = waiting.get(JSON.stringify(msg.id));
      if (w) w(msg);
    }
  });
  proc.stderr.on("data", (d) => (h.stderr += d));
  const exited = new Promise((resolve) => proc.on("exit", resolve));
  t.after(() => proc.kill());
  h.send = (line) => proc.stdin.write(line + "\n");
  h.response = (id) => new Promise((resolve) => waiting.set(JSON.stringify(id), resolve));
  h.request = (method, params) => {
    const id = h.nextId++;
    const p = h.response(id);
    h.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
    return p;
  };
  h.end = async () => {
    proc.stdin.end();
    await exited;
  };
  return h;
}

// A refusal at the edge: -32602 whose message starts with error.data.path.
const edgePath = (r) =>
  r.error?.code === -32602 && typeof r.error.data?.path === "string" && r.error.message.startsWith(r.error.data.path + " ")
    ? r.error.data.path
    : null;

const STDIO = { name: "a", command: "/bin/true" };
const text = (t) => ({ type: "text", text: t });

// [method, params, the path acp-agent names (null: taken)]. The SDK agent refuses exactly the same
// ones. $SID and $DIR are replaced by a real session and directory.
const CASES = [
  // initialize: the shapes
  ["initialize", { protocolVersion: "1" }, "params.protocolVersion"],
  ["initialize", { protocolVersion: [1] }, "params.protocolVersion"],
  ["initialize", { protocolVersion: true }, "params.protocolVersion"],
  ["initialize", { protocolVersion: 1.5 }, "params.protocolVersion"],
  ["initialize", { protocolVersion: -1 }, "params.protocolVersion"],
  ["initialize", { protocolVersion: 65536 }, "params.protocolVersion"],
  ["initialize", {}, "params.protocolVersion"],
  // x-deserialize-default-on-error: a clientCapabilities that is not an object reads as the
  // defaults in the schema and in the SDK; so does a malformed clientInfo or _meta
  ["initialize", { protocolVersion: 1, clientCapabilities: "all" }, null],
  ["initialize", { protocolVersion: 1, clientCapabilities: { fs: true, terminal: "yes" }, clientInfo: { name: 5 }, _meta: "x" }, null],
  ["initialize", { protocolVersion: 1, clientCapabilities: {}, _meta: { "vendor.dev": { x: 1 } }, future: [1] }, null],
  // authenticate, logout
  ["authenticate", {}, "params.methodId"],
  ["authenticate", { methodId: 7 }, "params.methodId"],
  ["logout", { _meta: 3 }, null],
  // session/new
  ["session/new", { cwd: "$DIR" }, "params.mcpServers"],
  ["session/new", { cwd: 5, mcpServers: [] }, "params.cwd"],
  ["session/new", { cwd: "$DIR", mcpServers: "none" }, "params.mcpServers"],
  ["session/new", { cwd: "$DIR", mcpServers: {} }, "params.mcpServers"],
  ["session/new", { cwd: "$DIR", mcpServers: [], additionalDirectories: "/tmp" }, "params.additionalDirectories"],
  ["session/new", { cwd: "$DIR", mcpServers: [], additionalDirectories: [5] }, "params.additionalDirectories[0]"],
  // x-deserialize-default-on-null: null is [] for the schema and the SDK (the issue counted it
  // as lax; the schema says otherwise, so both are taken and read as [])
  ["session/new", { cwd: "$DIR", mcpServers: null, additionalDirectories: null }, null],
  ["session/new", { cwd: "$DIR", mcpServers: [5] }, "params.mcpServers[0]"],
  ["session/new", { cwd: "$DIR", mcpServers: [STDIO] }, "params.mcpServers[0].args"],
  ["session/new", { cwd: "$DIR", mcpServers: [{ ...STDIO, args: [1], env: [] }] }, "params.mcpServers[0].args[0]"],
  ["session/new", { cwd: "$DIR", mcpServers: [{ ...STDIO, args: [], env: [{ name: "A" }] }] }, "params.mcpServers[0].env[0].value"],
  ["session/new", { cwd: "$DIR", mcpServers: [{ type: "http", name: "h", url: "http://127.0.0.1:9/" }] }, "params.mcpServers[0].headers"],
  ["session/new", { cwd: "$DIR", mcpServers: [{ type: "sse", name: "h", url: 5, headers: [] }] }, "params.mcpServers[0].url"],
  ["session/new", { cwd: "$DIR", mcpServers: [], _meta: { k: 1 }, future: true }, null],
  // load, resume
  ["session/load", { cwd: "$DIR", mcpServers: [] }, "params.sessionId"],
  ["session/load", { sessionId: 3, cwd: "$DIR", mcpServers: [] }, "params.sessionId"],
  ["session/load", { sessionId: "$SID", cwd: "$DIR" }, "params.mcpServers"],
  ["session/load", { sessionId: "$SID", cwd: "$DIR", mcpServers: null, additionalDirectories: null }, null],
  ["session/resume", { sessionId: "$SID", cwd: "$DIR", mcpServers: "x" }, "params.mcpServers"],
  ["session/resume", { sessionId: "$SID", cwd: "$DIR", mcpServers: null, _meta: null }, null],
  // list
  ["session/list", { cwd: 5 }, "params.cwd"],
  ["session/list", { cursor: [] }, "params.cursor"],
  ["session/list", { cwd: null, cursor: null, _meta: "x" }, null],
  // prompt
  ["session/prompt", { sessionId: "$SID" }, "params.prompt"],
  ["session/prompt", { sessionId: "$SID", prompt: "text" }, "params.prompt"],
  ["session/prompt", { sessionId: 1, prompt: [] }, "params.sessionId"],
  ["session/prompt", { sessionId: "$SID", prompt: [{}] }, "params.prompt[0].type"],
  ["session/prompt", { sessionId: "$SID", prompt: [text("a"), { type: "video" }] }, "params.prompt[1].type"],
  ["session/prompt", { sessionId: "$SID", prompt: [{ type: "text", text: 5 }] }, "params.prompt[0].text"],
  ["session/prompt", { sessionId: "$SID", prompt: [{ type: "resource_link", name: "n" }] }, "params.prompt[0].uri"],
  ["session/prompt", { sessionId: "$SID", prompt: [{ type: "resource", resource: { uri: "u" } }] }, "params.prompt[0].resource.text"],
  ["session/prompt", { sessionId: "$SID", prompt: [{ type: "image", data: "", mimeType: 1 }] }, "params.prompt[0].mimeType"],
  ["session/prompt", { sessionId: "$SID", prompt: [{ ...text("hi"), annotations: { audience: ["user", "bot"], priority: "high" }, future: 1 }], _meta: { trace: "t" }, x: 1 }, null],
  ["session/prompt", { sessionId: "$SID", prompt: [{ type: "resource_link", name: "n", uri: "file:///x", size: "big" }], _meta: null }, null],
  // set_mode, set_config_option
  ["session/set_mode", { sessionId: "$SID" }, "params.modeId"],
  ["session/set_mode", { sessionId: "$SID", modeId: 1 }, "params.modeId"],
  ["session/set_mode", { sessionId: "$SID", modeId: "ask", _meta: {} }, null],
  ["session/set_config_option", { sessionId: "$SID", value: "echo-large" }, "params.configId"],
  ["session/set_config_option", { sessionId: "$SID", configId: "model", value: 3 }, "params.value"],
  ["session/set_config_option", { sessionId: "$SID", configId: "model", type: "boolean", value: 1 }, "params.value"],
  ["session/set_config_option", { sessionId: "$SID", configId: "model", value: "echo-large", future: 1 }, null],
  // close, delete (last: they end the session)
  ["session/close", {}, "params.sessionId"],
  ["session/close", { sessionId: null }, "params.sessionId"],
  ["session/delete", { sessionId: ["x"] }, "params.sessionId"],
  ["session/close", { sessionId: "$SID", _meta: [] }, null],
  ["session/delete", { sessionId: "$SID" }, null],
];

// Raw lines the SDK reads differently, on purpose (docs/agent.md): JSON.parse keeps a NUL in a
// string, the last of two equal names, and a number as a double; jansson refuses all three, and so
// does acp-agent, in its own words: a NUL would silently cut the C string every engine gets, and
// two equal names leave the meaning to the parser (RFC 8259 §4).
const RAW = [
  ['"method":"session/load","params":{"sessionId":"a\\u0000b","cwd":"$DIR","mcpServers":[]}', "params.sessionId", "params.sessionId must not contain a NUL character (\\u0000)"],
  ['"method":"session/prompt","params":{"sessionId":"$SID","prompt":[{"type":"text","text":"x\\u0000"}]}', "params.prompt[0].text", "params.prompt[0].text must not contain a NUL character (\\u0000)"],
  ['"method":"session/list","params":{"_meta":{"a":1,"a":2}}', "params._meta.a", "params._meta.a is given twice: member names must be unique"],
  ['"method":"session/list","params":{"_meta":{"n":1e400}}', "params._meta.n", "params._meta.n is a number out of range (an integer must fit in 64 bits, a real in a double)"],
];

test("params of the wrong type -> -32602 naming the member by its path; what the SDK agent takes is taken", async (t) => {
  if (notOverHttp(t, "session-scoped messages whose sessionId is not a string have no Acp-Session-Id to send: HTTP 400 before the agent (tests/net/test_shttp.c)")) return;
  const dir = tempDir(t);
  const a = rawAgent(t, { store: join(dir, "sessions.db") });
  const ts = tsAgent(t);
  await a.init();
  assert.ok((await ts.request("initialize", { protocolVersion: 1 })).result);
  const sid = await a.newSession(dir);
  const fill = (v) => JSON.parse(JSON.stringify(v).replaceAll("$SID", sid).replaceAll("$DIR", dir));
  for (const [method, params, path] of CASES) {
    const r = await a.request(method, fill(params));
    const what = `${method} ${JSON.stringify(params)}`;
    if (path) {
      assert.equal(r.error?.code, -32602, `${what} -> ${JSON.stringify(r)}`);
      assert.equal(edgePath(r), path, `${what} -> ${JSON.stringify(r)}`);
      assert.deepEqual(r.error.data, { path });
      assert.doesNotMatch(r.error.message, /json|jansson|near '/i);
    } else {
      assert.equal(edgePath(r), null, `${what} was refused: ${JSON.stringify(r)}`);
    }
    const s = await ts.request(method, fill(params));
    assert.equal(s.error?.code === -32602, path !== null, `the SDK agent ${path ? "took" : "refused"} ${what}: ${JSON.stringify(s)}`);
  }
  // both read the malformed optional members as absent and null arrays as []
  const n = await ts.request("session/new", { cwd: dir, mcpServers: null, additionalDirectories: null, _meta: 5 });
  assert.deepEqual(n.result._meta.params, { cwd: dir, mcpServers: [], additionalDirectories: [] });
  const i = await ts.request("initialize", { protocolVersion: 1, clientCapabilities: "all", clientInfo: { name: 5 } });
  assert.deepEqual(i.result._meta.params.clientCapabilities, { fs: { readTextFile: false, writeTextFile: false }, terminal: false, auth: { terminal: false } });
  assert.equal(i.result._meta.params.clientInfo, undefined);
  const s2 = await a.newSession(dir, { mcpServers: null, additionalDirectories: null });
  const l = await a.request("session/list", {});
  assert.deepEqual(l.result.sessions.find((s) => s.sessionId === s2).additionalDirectories, []);
  await a.end();
  await ts.end();
});

test("NUL characters, names given twice, numbers beyond a double: -32602 in our words (the SDK takes them)", async (t) => {
  if (notOverHttp(t, "session-scoped messages whose sessionId is not a string have no Acp-Session-Id to send: HTTP 400 before the agent (tests/net/test_shttp.c)")) return;
  const dir = tempDir(t);
  const a = rawAgent(t, { store: join(dir, "sessions.db") });
  const ts = tsAgent(t);
  await a.init();
  assert.ok((await ts.request("initialize", { protocolVersion: 1 })).result);
  const sid = await a.newSession(dir);
  let id = 1000;
  for (const [body, path, message] of RAW) {
    const line = `{"jsonrpc":"2.0","id":${++id},${body.replaceAll("$SID", sid).replaceAll("$DIR", dir)}}`;
    const p = a.response(id);
    a.send(line);
    const r = await p;
    assert.deepEqual(r.error, { code: -32602, message, data: { path } }, line);
    const q = ts.response(id);
    ts.send(line);
    assert.ok((await q).result, `the SDK agent refused ${line}`);
  }
  assert.equal((await a.prompt(sid, "still here")).result?.stopReason, "end_turn");
  await a.end();
  await ts.end();
});

test("session/cancel with malformed params is dropped and logged, as the SDK agent drops it", async (t) => {
  if (notOverHttp(t, "session-scoped messages whose sessionId is not a string have no Acp-Session-Id to send: HTTP 400 before the agent (tests/net/test_shttp.c)")) return;
  const dir = tempDir(t);
  const a = rawAgent(t, { store: join(dir, "sessions.db") });
  await a.init();
  const sid = await a.newSession(dir);
  const slow = a.prompt(sid, "/sleep 300");
  a.notify("session/cancel", { sessionId: 5 });
  a.notify("session/cancel", { sessionId: [sid] });
  assert.equal((await slow).result?.stopReason, "end_turn", "a malformed cancel cancelled the turn");
  a.notify("session/cancel", { sessionId: sid, _meta: "x" }); // _meta malformed: dropped, the cancel stands
  const held = a.prompt(sid, "/sleep 60000");
  await new Promise((r) => setTimeout(r, 100));
  a.notify("session/cancel", { sessionId: sid, _meta: "x" });
  assert.equal((await held).result?.stopReason, "cancelled");
  await a.end();
  assert.match(a.st.stderr, /session\/cancel dropped: params\.sessionId must be a string/);
});
