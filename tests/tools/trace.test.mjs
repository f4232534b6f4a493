// SPDX-License-Identifier: Apache-2.0
// acp trace (issue 24 item 2): between acp and acp-agent, and between the SDK's client and an
// SDK agent (sdk-agent.mjs), every message recorded (t, dir, msg) and no finding; against
// peers built to break rules, the right findings (an update after its prompt's answer, a result
// off the schema, a method the client did not advertise; a response to an unknown id, a
// malformed line, a method the agent did not advertise); bytes relayed unchanged both ways; and
// acp trace show's summary.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
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

/** A child's stderr, its end, and its death with the test. */
function watched(t, p) {
  let stderr = "";
  p.stderr.on("data", (d) => (stderr += d));
  const exited = new Promise((r) => p.on("exit", (code, signal) => r({ code, signal })));
  t.after(() => p.kill("SIGKILL"));
  return { p, exited, stderr: () => stderr };
}

/** acp trace --out file -- cmd, its stdio ours. */
const traced = (t, file, cmd, env = {}) =>
  watched(t, spawn(ACP, ["trace", "--out", file, "--", ...cmd], { stdio: ["pipe", "pipe", "pipe"], env: { ...process.env, ...env } }));

/** A shell line that ends in acp trace, its stdio ours. */
const tracedSh = (t, line) => watched(t, spawn("sh", ["-c", line], { stdio: ["pipe", "pipe", "pipe"] }));

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

test("acp trace: an agent that cannot start is said, exit 4", (t) => {
  const file = join(temp(t), "trace.jsonl");
  const r = spawnSync("sh", ["-c", `echo '{}' | ${ACP} trace --out ${file} -- /nonexistent/agent | cat`], { encoding: "utf8" });
  assert.match(r.stderr, /cannot run '\/nonexistent\/agent'/);
  const direct = spawnSync(ACP, ["trace", "--out", file, "--", "/nonexistent/agent"], { stdio: ["pipe", "pipe", "pipe"], encoding: "utf8" });
  assert.equal(direct.status, 4, direct.stderr);
});

test("acp trace: an agent's last output reaches a slow client after the agent exited", async (t) => {
  const file = join(temp(t), "trace.jsonl");
  const tr = traced(t, file, ["sh", "-c", "head -c 8000000 /dev/zero | tr '\\0' x; echo"]);
  tr.p.stdout.pause(); // the client reads only once the agent is long gone
  tr.p.stdin.end();
  await sleep(1000);
  let n = 0;
  tr.p.stdout.on("data", (d) => (n += d.length));
  tr.p.stdout.resume();
  assert.deepEqual(await tr.exited, { code: 0, signal: null }, tr.stderr());
  await new Promise((r) => (tr.p.stdout.readableEnded ? r() : tr.p.stdout.on("end", r)));
  assert.equal(n, 8000001);
});

/** The client's side spoken by hand: lines out, lines in, the agent's requests answered. */
function rawClient(tr, answer) {
  const got = [];
  let buf = "";
  tr.p.stdout.on("data", (d) => {
    buf += d;
    let nl;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const m = JSON.parse(buf.slice(0, nl));
      buf = buf.slice(nl + 1);
      got.push(m);
      if (m.method && m.id !== undefined) tr.p.stdin.write(JSON.stringify({ jsonrpc: "2.0", id: m.id, result: answer(m) }) + "\n");
    }
  });
  const send = (m) => tr.p.stdin.write(JSON.stringify({ jsonrpc: "2.0", ...m }) + "\n");
  const reply = async (id) => {
    for (;;) {
      const r = got.find((m) => m.id === id && !m.method);
      if (r) return r;
      await sleep(5);
    }
  };
  return { got, send, reply };
}

/** The agent's requests answered by the client, around a long stream: every message recorded,
 * in order, no finding. `limit`: acp trace's file descriptors, so few that the agent's bytes
 * soon find no holding pipe and are copied instead. */
async function ordered(t, limit) {
  // The agent's bytes wait for the examiner in holding pipes (tee(2)), the client's in memory:
  // an answer read from the client must be queued after the request that it answers (else: 'a
  // response to an unknown id').
  const dir = temp(t);
  const file = join(dir, "trace.jsonl");
  writeFileSync(join(dir, "r.txt"), "text to read\n");
  const cmd = [AGENT, "--store", join(dir, "s.db")];
  const tr = limit
    ? tracedSh(t, `ulimit -n ${limit} && exec ${ACP} trace --out ${file} -- ${cmd.join(" ")}`)
    : traced(t, file, cmd);
  const c = rawClient(tr, (m) => (m.method === "fs/read_text_file" ? { content: "from the client" } : {}));
  c.send({ id: 1, method: "initialize", params: { protocolVersion: 1, clientCapabilities: { fs: { readTextFile: true } } } });
  await c.reply(1);
  c.send({ id: 2, method: "session/new", params: { cwd: dir, mcpServers: [] } });
  const sessionId = (await c.reply(2)).result.sessionId;
  let id = 3;
  c.send({ id, method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text: "/stream 40000 400" }] } });
  assert.equal((await c.reply(id)).result.stopReason, "end_turn");
  for (let i = 0; i < 30; i++) {
    c.send({ id: ++id, method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text: `/read ${join(dir, "r.txt")}` }] } });
    assert.equal((await c.reply(id)).result.stopReason, "end_turn");
  }
  tr.p.stdin.end();
  assert.deepEqual(await tr.exited, { code: 0, signal: null }, tr.stderr());
  assert.deepEqual(findings(file), [], tr.stderr());
  const recs = records(file);
  assert.equal(recs.filter((r) => r.dir === "agent").length, c.got.length);
  assert.equal(recs.filter((r) => r.dir === "agent" && r.msg.method === "session/update").length, c.got.filter((m) => m.method === "session/update").length);
  assert.equal(recs.filter((r) => r.dir === "agent" && r.msg.method === "fs/read_text_file").length, 30);
  assert.equal(recs.filter((r) => r.dir === "client" && r.msg.result?.content === "from the client").length, 30);
  const ts = recs.map((r) => r.t);
  assert.deepEqual(ts, [...ts].sort((a, b) => a - b));
}

test("acp trace keeps the order of the agent's requests and the client's answers, over a long stream", (t) => ordered(t, 0));

test("acp trace keeps every message when it runs out of holding pipes (a low file limit)", (t) => ordered(t, 24));

test("acp trace: standard input and output may be files", (t) => {
  const dir = temp(t);
  const file = join(dir, "trace.jsonl");
  const input = join(dir, "in.jsonl"), output = join(dir, "out.jsonl");
  writeFileSync(
    input,
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}\n' +
      `{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":${JSON.stringify(dir)},"mcpServers":[]}}\n`,
  );
  const r = spawnSync("sh", ["-c", `${ACP} trace --out ${file} -- ${AGENT} --store ${join(dir, "s.db")} <${input} >${output}`], { encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  const out = readFileSync(output, "utf8").trim().split("\n").map((l) => JSON.parse(l));
  assert.ok(out.some((m) => m.id === 2 && m.result?.sessionId), JSON.stringify(out));
  assert.equal(records(file).filter((x) => x.dir === "agent").length, out.length);
  assert.deepEqual(findings(file), []);
});

test("acp trace: the file is current while the session runs, so an editor that kills it loses nothing said", async (t) => {
  const dir = temp(t);
  const file = join(dir, "trace.jsonl");
  const tr = traced(t, file, [AGENT, "--store", join(dir, "s.db")]);
  const c = rawClient(tr, () => ({}));
  c.send({ id: 1, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } });
  await c.reply(1);
  c.send({ id: 2, method: "session/new", params: { cwd: dir, mcpServers: [] } });
  await c.reply(2);
  await sleep(200); // an editor closing: no EOF, no grace
  tr.p.kill("SIGKILL");
  await tr.exited;
  const recs = records(file);
  assert.deepEqual(recs.filter((r) => r.dir === "client").map((r) => r.msg.method), ["initialize", "session/new"]);
  assert.equal(recs.filter((r) => r.dir === "agent" && r.msg.id === 2 && r.msg.result?.sessionId).length, 1);
});
