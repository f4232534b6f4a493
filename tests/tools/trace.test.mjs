// SPDX-License-Identifier: Apache-2.0
// acp trace (issue 24 item 2): between acp and acp-agent, and between the SDK's client and an
// SDK agent (sdk-agent.mjs), every message recorded (t, dir, msg) and no finding; against
// peers built to break rules, the right findings (an update after its prompt's answer, a result
// off the schema, a method the client did not advertise; a response to an unknown id, a
// malformed line, a method the agent did not advertise); bytes relayed unchanged both ways; and
// acp trace show's summary.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import test from "node:test";
import * as acp from "@agentclientprotocol/sdk";

const BUILD = process.env.ACP_BUILD ?? join(process.cwd(), "build");
const SOURCE = process.env.ACP_SOURCE ?? process.cwd();
const ACP = join(BUILD, "acp");
const AGENT = join(BUILD, "acp-agent");
const SDK_AGENT = [process.execPath, join(SOURCE, "tests", "tools", "sdk-agent.mjs")];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function temp(t) {
  const dir = mkdtempSync(join(tmpdir(), "acp-trace-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}
const records = (file) => readFileSync(file, "utf8").trim().split("\n").map((l) => JSON.parse(l));
const findings = (file) => records(file).filter((r) => "finding" in r);

/** acp trace --out file -- cmd, its stdio ours. */
function traced(t, file, cmd, env = {}) {
  const p = spawn(ACP, ["trace", "--out", file, "--", ...cmd], { stdio: ["pipe", "pipe", "pipe"], env: { ...process.env, ...env } });
  let stderr = "";
  p.stderr.on("data", (d) => (stderr += d));
  const exited = new Promise((r) => p.on("exit", (code, signal) => r({ code, signal })));
  t.after(() => p.kill("SIGKILL"));
  return { p, exited, stderr: () => stderr };
}

test("acp trace between acp and acp-agent: all recorded, no finding, show summarises", (t) => {
  const dir = temp(t);
  const file = join(dir, "trace.jsonl");
  const agent = `${ACP} trace --out ${file} -- ${AGENT} --store ${join(dir, "s.db")}`;
  const r = spawnSync(ACP, ["--agent", agent, "prompt", "hello", "trace"], { encoding: "utf8", env: { ...process.env, HOME: dir } });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim(), "hello trace");
  const recs = records(file);
  assert.deepEqual(findings(file), [], r.stderr);
  for (const x of recs) {
    assert.equal(typeof x.t, "number");
    assert.ok(["client", "agent"].includes(x.dir));
    assert.equal(x.msg.jsonrpc, "2.0");
  }
  const methods = recs.filter((x) => x.msg.method).map((x) => `${x.dir} ${x.msg.method}`);
  for (const m of ["client initialize", "client session/new", "client session/prompt", "agent session/update"])
    assert.ok(methods.includes(m), `${m} in ${methods}`);
  assert.ok(recs.some((x) => x.dir === "agent" && x.msg.result?.stopReason === "end_turn"));
  const show = spawnSync(ACP, ["trace", "show", file], { encoding: "utf8" });
  assert.equal(show.status, 0, show.stderr);
  assert.match(show.stdout, /client session\/prompt\s+1\s+0\s+0\s+[\d.]+/);
  assert.match(show.stdout, /findings: 0/);
});

async function sdkClient(tr, { wait = 0, caps = {} } = {}) {
  const texts = [];
  const app = acp.client({ name: "trace-test" }).onNotification("session/update", ({ params }) => {
    if (params.update.sessionUpdate === "agent_message_chunk") texts.push(params.update.content.text);
  });
  const conn = app.connect(acp.ndJsonStream(Writable.toWeb(tr.p.stdin), Readable.toWeb(tr.p.stdout)));
  await conn.agent.request("initialize", { protocolVersion: 1, clientCapabilities: caps });
  const { sessionId } = await conn.agent.request("session/new", { cwd: tmpdir(), mcpServers: [] });
  const res = await conn.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "hi" }] }).catch((e) => e);
  await sleep(wait);
  tr.p.stdin.end();
  return { texts, res };
}

test("acp trace between the SDK's client and an SDK agent: no finding", async (t) => {
  const file = join(temp(t), "trace.jsonl");
  const tr = traced(t, file, SDK_AGENT);
  const c = await sdkClient(tr);
  assert.deepEqual(await tr.exited, { code: 0, signal: null }, tr.stderr());
  assert.equal(c.res.stopReason, "end_turn");
  assert.ok(c.texts.join("").includes("you said: hi"));
  assert.deepEqual(findings(file), [], tr.stderr());
  assert.equal(records(file).filter((r) => r.dir === "client").length, 3);
});

test("acp trace finds what a wrong agent does", async (t) => {
  const file = join(temp(t), "trace.jsonl");
  const tr = traced(t, file, SDK_AGENT, { ACP_WRONG: "1" });
  await sdkClient(tr, { wait: 400 });
  await tr.exited;
  const f = findings(file);
  const says = (rule, re) => assert.ok(f.some((x) => x.rule === rule && x.dir === "agent" && re.test(x.finding)), `${rule} ${re} in ${JSON.stringify(f)}`);
  says("order", /session\/update \(agent_message_chunk\) for session sess_1 after its prompt's answer/);
  says("schema", /session\/prompt result: \/stopReason/);
  says("capability", /fs\/read_text_file was sent although the client did not advertise readTextFile/);
  assert.match(tr.stderr(), /acp trace: agent: fs\/read_text_file was sent/);
  const show = spawnSync(ACP, ["trace", "show", file], { encoding: "utf8" });
  assert.equal(show.status, 1); // findings
  assert.match(show.stdout, /findings: 3/);
  assert.match(show.stdout, /fs\/read_text_file -32601/);
});

test("acp trace finds what a wrong client does", async (t) => {
  const file = join(temp(t), "trace.jsonl");
  const tr = traced(t, file, SDK_AGENT);
  let out = "";
  tr.p.stdout.on("data", (d) => (out += d));
  const lines = [
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}',
    "{oops",
    '{"jsonrpc":"2.0","id":99,"result":{}}',
    '{"jsonrpc":"2.0","id":2,"method":"session/load","params":{"sessionId":"s","cwd":"/tmp","mcpServers":[]}}',
    '{"jsonrpc":"2.0","id":3,"method":"session/new","params":{"mcpServers":[]}}',
    '{"jsonrpc":"2.0","id":4,"method":"sessions/new","params":{}}',
  ];
  tr.p.stdin.write(lines[0] + "\n");
  while (!out.includes('"id":1')) await sleep(20); // the capabilities are known from here
  for (const l of lines.slice(1)) tr.p.stdin.write(l + "\n");
  await sleep(300);
  tr.p.stdin.end();
  await tr.exited;
  const f = findings(file).filter((x) => x.dir === "client");
  const rules = f.map((x) => x.rule).sort();
  assert.deepEqual(rules, ["capability", "id", "malformed", "method", "schema"], JSON.stringify(f));
  assert.match(f.find((x) => x.rule === "id").finding, /a response to an unknown id 99/);
  assert.match(f.find((x) => x.rule === "capability").finding, /session\/load .* did not advertise loadSession/);
  assert.match(f.find((x) => x.rule === "schema").finding, /session\/new params: \/: lacks required cwd/);
  // The malformed line is recorded as the string it was.
  assert.ok(records(file).some((r) => r.msg === "{oops"));
});

test("acp trace passes bytes unchanged both ways", async (t) => {
  const file = join(temp(t), "trace.jsonl");
  const tr = traced(t, file, ["cat"]);
  const chunks = [];
  tr.p.stdout.on("data", (d) => chunks.push(d));
  const sent = Buffer.from('{ "jsonrpc" : "2.0",  "method":"x/y" }\r\nnot json \xff\n{"jsonrpc":"2.0","method":"_z","params":{"a":"\\u00e9"}}\n', "latin1");
  tr.p.stdin.end(sent);
  assert.deepEqual(await tr.exited, { code: 0, signal: null });
  assert.ok(Buffer.concat(chunks).equals(sent), "the bytes changed on the way");
  assert.equal(records(file).filter((r) => !("finding" in r)).length, 6); // 3 each way
});
