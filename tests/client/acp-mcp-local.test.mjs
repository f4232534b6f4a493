// SPDX-License-Identifier: Apache-2.0
// acp --mcp-local (unstable, issue 23): acp runs a stdio MCP server on this machine and hands it
// to the agent over the ACP connection (MCP over ACP), relaying mcp/message both ways. Real
// servers: @modelcontextprotocol/server-everything and tests/mcp/fake-server.mjs (a tool that
// crashes the server mid-call); acp-agent over stdio, WebSocket and Streamable HTTP (--listen).
// The server stops with acp; a server that dies fails its call, not the turn.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before } from "node:test";
import { listeningAgent, test, wsHeaders } from "../interop-agent/lib.mjs";
import { lines, run, SOURCE, workspace } from "./acp-helpers.mjs";

const EVERYTHING = join(SOURCE, "node_modules/@modelcontextprotocol/server-everything/dist/index.js");
const FAKE = join(SOURCE, "tests/mcp/fake-server.mjs");
const node = process.execPath;

let ws;
before(() => (ws = workspace()));
after(() => ws.done());

const tools = (out) => lines(out).filter((o) => o.update?.sessionUpdate?.startsWith("tool_call")).map((o) => o.update);

// Processes whose command line holds marker (the servers acp started).
function running(marker) {
  const out = [];
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (readFileSync(`/proc/${d}/cmdline`, "utf8").includes(marker)) out.push(Number(d));
    } catch {}
  }
  return out;
}

async function callEcho(agentCmd, env = {}) {
  const marker = `marker-${Math.random().toString(16).slice(2)}`;
  const r = await run(
    ws,
    ["--json", "--mcp-local", `ev=${node} ${EVERYTHING} stdio`, "--mcp-local", `fk=${node} ${FAKE} paged ${marker}`, "prompt", '/call ev echo {"message":"from my machine"}'],
    { agentCmd, env },
  );
  assert.equal(r.code, 0, r.stderr);
  const tu = tools(r.stdout);
  assert.equal(tu.at(-1).status, "completed", r.stdout);
  assert.equal(tu.at(-1).content[0].content.text, "Echo: from my machine");
  assert.deepEqual(running(marker), [], "the local MCP server outlived acp");
}

test("stdio agent: a local server-everything's tool, progress relayed", async () => {
  await callEcho(ws.agent);
  const r = await run(ws, ["--json", "--mcp-local", `ev=${node} ${EVERYTHING} stdio`, "prompt", '/call ev trigger-long-running-operation {"duration":0.2,"steps":2}']);
  assert.equal(r.code, 0, r.stderr);
  const tu = tools(r.stdout);
  assert.ok(tu.filter((u) => u.status === "in_progress" && /progress/.test(u.content?.[0]?.content?.text ?? "")).length >= 2, r.stdout);
  assert.equal(tu.at(-1).status, "completed");
});

test("a local server that exits mid-call fails that call; an MCP error fails its call", async () => {
  let r = await run(ws, ["--json", "--mcp-local", `fk=${node} ${FAKE}`, "prompt", "/call fk crash {}"]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(tools(r.stdout).at(-1).status, "failed", r.stdout);
  r = await run(ws, ["--json", "--mcp-local", `fk=${node} ${FAKE}`, "prompt", "/call fk fail {}"]);
  assert.equal(tools(r.stdout).at(-1).status, "failed", r.stdout);
  assert.match(JSON.stringify(tools(r.stdout).at(-1)), /bad arguments for fail/);
});

test("bad --mcp-local values are usage errors; an agent without mcpCapabilities.acp is refused", async () => {
  let r = await run(ws, ["--mcp-local", "noequals", "prompt", "hi"]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--mcp-local wants NAME=CMD ARGS/);
  r = await run(ws, ["--mcp-local", "x=/nonexistent/cmd", "prompt", "hi"]);
  assert.equal(r.code, 2);
  r = await run(ws, ["--mcp-local", `ev=${node} ${EVERYTHING} stdio`, "prompt", "hi"], { agentCmd: `${ws.agent} --unstable-off mcp-acp` });
  assert.equal(r.code, 3, r.stderr);
  assert.match(r.stderr, /mcpCapabilities\.acp/);
});

for (const scheme of ["ws", "http"]) {
  test(`remote agent over ${scheme === "ws" ? "WebSocket" : "Streamable HTTP"}: the tool runs here`, async (t) => {
    const ag = await listeningAgent(t, { store: join(ws.dir, `remote-${scheme}.db`) });
    const url = ag.url.replace(/^ws:/, `${scheme}:`);
    await callEcho(url, { ACP_TOKEN: wsHeaders().Authorization.split(" ")[1] });
    await ag.stop();
  });
}
