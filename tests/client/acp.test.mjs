// `acp` end to end against acp-agent on a fresh store: every command through pipes with
// --json parsed and checked, the text output, exit codes and one-line errors, permission
// flags, capability refusals against an agent that advertises nothing, and `chat` / Ctrl-C
// through a pseudo-terminal (tests/pty_run) where the cancel must reach the agent.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const BUILD = process.env.ACP_BUILD;
const SOURCE = process.env.ACP_SOURCE;
const ACP = join(BUILD, "acp");
let dir, agent;

before(() => {
  dir = mkdtempSync(join(tmpdir(), "acp-cli-"));
  agent = `'${join(BUILD, "acp-agent")}' --store '${join(dir, "s.db")}'`;
});
after(() => rmSync(dir, { recursive: true, force: true }));

// Runs acp with args; resolves {code, stdout, stderr}. Never hangs the suite: killed after 120 s.
function run(args, { input, agentCmd = agent, cwd = dir } = {}) {
  return new Promise((resolve, reject) => {
    const p = spawn(ACP, ["--agent", agentCmd, "--cwd", cwd, ...args], { stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "", stderr = "";
    p.stdout.on("data", (d) => (stdout += d));
    p.stderr.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => p.kill("SIGKILL"), 120000);
    p.on("error", reject);
    p.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    p.stdin.on("error", () => {}); // a command that exits before reading its input is fine
    p.stdin.end(input ?? "");
  });
}

const lines = (s) => s.split("\n").filter((l) => l.length).map((l) => JSON.parse(l));
const texts = (objs, kind = "agent_message_chunk") =>
  objs.filter((o) => o.update?.sessionUpdate === kind).map((o) => o.update.content.text).join("");

test("--help for the tool and every command; usage errors exit 2 with one line", async () => {
  const top = await run(["--help"]);
  assert.equal(top.code, 0);
  assert.match(top.stdout, /commands:/);
  for (const cmd of ["info", "new", "prompt", "sessions", "history", "resume", "close", "delete", "chat"]) {
    const r = await run([cmd, "--help"]);
    assert.equal(r.code, 0, cmd);
    assert.match(r.stdout, new RegExp(`usage: acp ${cmd}`));
  }
  for (const args of [["frobnicate"], ["prompt"], ["history"], ["new", "--bogus"], []]) {
    const r = await run(args);
    assert.equal(r.code, 2, args.join(" "));
    assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
    assert.match(r.stderr, /^acp: /);
  }
});

test("info", async () => {
  const j = await run(["--json", "info"]);
  assert.equal(j.code, 0, j.stderr);
  const [init] = lines(j.stdout);
  assert.equal(init.agentInfo.name, "acp-agent");
  assert.equal(init.protocolVersion, 1);
  const t = await run(["info"]);
  assert.match(t.stdout, /agent: +acp-agent/);
  assert.match(t.stdout, /sessionCapabilities\.resume +yes/);
});

test("the whole lifecycle with --json: new, prompt, title, sessions, history, resume, close, delete", async () => {
  const n = await run(["--json", "new"]);
  assert.equal(n.code, 0, n.stderr);
  const out = lines(n.stdout);
  const id = out.at(-1).sessionId;
  assert.match(id, /^\S{16,}$/);

  const p = await run(["--json", "prompt", "-s", id, "hello", "from", "acp"]);
  assert.equal(p.code, 0, p.stderr);
  const po = lines(p.stdout);
  assert.equal(texts(po), "hello from acp");
  assert.deepEqual(po.at(-1), { sessionId: id, stopReason: "end_turn" });
  assert.ok(po.slice(0, -1).every((o) => o.sessionId === id && o.update), "every update raw");

  const t = await run(["--json", "prompt", "-s", id, "/title", "CLI test"]);
  assert.ok(lines(t.stdout).some((o) => o.update?.sessionUpdate === "session_info_update" && o.update.title === "CLI test"));

  const s = await run(["--json", "sessions"]);
  assert.equal(s.code, 0, s.stderr);
  const listed = lines(s.stdout)[0].sessions.find((x) => x.sessionId === id);
  assert.equal(listed.title, "CLI test");
  assert.equal(listed.cwd, dir);
  const st = await run(["sessions"]);
  assert.match(st.stdout, new RegExp(`${id} .*CLI test`));

  const h = await run(["--json", "history", id]);
  assert.equal(h.code, 0, h.stderr);
  const ho = lines(h.stdout);
  assert.match(texts(ho, "user_message_chunk"), /hello from acp/);
  assert.match(texts(ho), /hello from acp/);
  assert.deepEqual(ho.at(-1), { sessionId: id });
  const ht = await run(["history", id]);
  assert.match(ht.stdout, /^> hello from acp$/m);

  const r = await run(["--json", "resume", id]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(lines(r.stdout).at(-1).sessionId, id);
  assert.ok(!lines(r.stdout).some((o) => o.update?.sessionUpdate === "user_message_chunk"), "resume replays nothing");

  const c = await run(["close", id]);
  assert.equal(c.code, 0, c.stderr);
  assert.equal(c.stdout, `closed ${id}\n`);
  const d = await run(["delete", id]);
  assert.equal(d.code, 0, d.stderr);
  assert.equal(d.stdout, `deleted ${id}\n`);
  const s2 = await run(["--json", "sessions", "--all-cwd"]);
  assert.ok(!lines(s2.stdout)[0].sessions.some((x) => x.sessionId === id));
});

test("text output: streamed reply, plan as a checklist, tool call lines", async () => {
  const p = await run(["prompt", "hi", "there"]);
  assert.equal(p.code, 0, p.stderr);
  assert.equal(p.stdout, "hi there\n");
  assert.doesNotMatch(p.stdout, /\x1b\[/, "no colours off a TTY");
  const plan = await run(["prompt", "/plan"]);
  assert.match(plan.stdout, /^ {2}\[x\] /m);
  assert.match(plan.stdout, /^ {2}\[ \] /m);
});

test("prompt text from standard input, relative --add-dir made absolute", async () => {
  const p = await run(["--json", "prompt", "--add-dir", ".", "-"], { input: "from stdin\nsecond line" });
  assert.equal(p.code, 0, p.stderr);
  assert.equal(texts(lines(p.stdout)), "from stdin\nsecond line");
  const missing = await run(["new", "--add-dir", "no/such/dir"]);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /no such directory/);
});

test("permission requests: --yes writes, --deny and no terminal refuse", async () => {
  const f1 = join(dir, "yes.txt"), f2 = join(dir, "deny.txt"), f3 = join(dir, "notty.txt");
  const y = await run(["prompt", "--yes", `/write ${f1} allowed`]);
  assert.equal(y.code, 0, y.stderr);
  assert.equal(readFileSync(f1, "utf8"), "allowed");
  assert.match(y.stdout, /\[tool\] .* completed/);
  const d = await run(["prompt", "--deny", `/write ${f2} denied`]);
  assert.equal(d.code, 0, d.stderr);
  assert.equal(existsSync(f2), false);
  const n = await run(["prompt", `/write ${f3} denied`]);
  assert.equal(existsSync(f3), false);
  assert.match(n.stderr, /permission denied \(no terminal\).*--yes/);
});

test("agent errors exit 1 with one line naming what to do", async () => {
  const a = await run(["info"], { agentCmd: "/nonexistent/agent" });
  assert.equal(a.code, 1);
  assert.match(a.stderr, /^acp: cannot start the agent: .*nonexistent.*--agent/);
  const h = await run(["history", "sess_does_not_exist"]);
  assert.equal(h.code, 1);
  assert.equal(h.stderr.trim().split("\n").length, 1, h.stderr);
});

test("an agent that advertises nothing: refusals are local and nothing forbidden is sent", async () => {
  const record = join(dir, "record.jsonl");
  process.env.ACP_RECORD = record;
  const minimal = `'${process.execPath}' '${join(SOURCE, "tests/client/ts-agent-minimal.mjs")}'`;
  const cases = [
    [["sessions"], /sessionCapabilities\.list/],
    [["history", "x"], /loadSession/],
    [["resume", "x"], /sessionCapabilities\.resume/],
    [["close", "x"], /sessionCapabilities\.close/],
    [["delete", "x"], /sessionCapabilities\.delete/],
    [["new", "--add-dir", "/tmp"], /sessionCapabilities\.additionalDirectories/],
    [["new", "--mcp-http", "h=http://127.0.0.1:9/mcp"], /mcpCapabilities\.http/],
    [["new", "--mcp-sse", "e=http://127.0.0.1:9/sse"], /mcpCapabilities\.sse/],
    [["prompt", "-s", "1000", "hi"], /loadSession/],
  ];
  for (const [args, re] of cases) {
    const r = await run(args, { agentCmd: minimal });
    assert.equal(r.code, 1, args.join(" "));
    assert.match(r.stderr, re);
  }
  const ok = await run(["--json", "prompt", "hi"], { agentCmd: minimal });
  assert.equal(ok.code, 0, ok.stderr);
  assert.equal(lines(ok.stdout).at(-1).sessionId, "1000");
  delete process.env.ACP_RECORD;
  const methods = readFileSync(record, "utf8").trim().split("\n").map((l) => JSON.parse(l));
  const forbidden = methods.filter((m) => !["initialize", "session/new", "session/prompt"].includes(m.method));
  assert.deepEqual(forbidden, []);
  assert.equal(methods.filter((m) => m.method === "session/new").length, 1);
  assert.ok(!JSON.stringify(methods).includes("additionalDirectories"));
});

test("the default agent is acp-agent next to acp", async () => {
  const r = await new Promise((resolve) => {
    const p = spawn(ACP, ["--json", "info"], { env: { ...process.env, XDG_STATE_HOME: dir }, stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    p.stdout.on("data", (d) => (out += d));
    p.on("close", (code) => resolve({ code, out }));
  });
  assert.equal(r.code, 0);
  assert.equal(lines(r.out)[0].agentInfo.name, "acp-agent");
});

// A program on a pty; `expect(re)` waits for output matching re after what the previous
// expect consumed (no fixed sleeps).
function onPty(args, agentCmd = agent) {
  const p = spawn(join(BUILD, "tests", "pty_run"), [ACP, "--agent", agentCmd, "--cwd", dir, ...args], { stdio: ["pipe", "pipe", "inherit"] });
  p.stdin.on("error", () => {});
  let out = "", from = 0;
  const waiters = [];
  p.stdout.on("data", (d) => {
    out += d;
    for (const w of waiters.splice(0)) if (!w(out)) waiters.push(w);
  });
  const exited = new Promise((r) => p.on("close", (code) => r(code)));
  const guard = setTimeout(() => p.kill("SIGKILL"), 120000);
  exited.then(() => clearTimeout(guard));
  return {
    send: (s) => p.stdin.write(s),
    expect: (re) =>
      new Promise((resolve) => {
        const check = (o) => {
          const m = re.exec(o.slice(from));
          if (!m) return false;
          from += m.index + m[0].length;
          resolve(o);
          return true;
        };
        if (!check(out)) waiters.push(check);
      }),
    exited,
    output: () => out,
  };
}

test("chat on a terminal: replies stream, Ctrl-C cancels the turn at the agent, Ctrl-C at the prompt exits", async () => {
  const t = onPty(["chat"]);
  await t.expect(/Ctrl-D exits[\s\S]*> /);
  t.send("hello pty\r");
  await t.expect(/hello pty[\s\S]*hello pty/);
  await t.expect(/> $/);
  t.send("/sleep 600000\r");
  await t.expect(/Ctrl-C cancels\)/);
  t.send("\x03");
  // "turn ended: cancelled" is printed from the agent's stopReason.
  await t.expect(/turn ended: cancelled/);
  await t.expect(/> $/);
  t.send("\x03");
  const code = await t.exited;
  assert.equal(code, 128 + 2, "Ctrl-C at the prompt line ends acp (SIGINT)");
});

test("permission asked on the terminal: the answer is the user's choice", async () => {
  const f = join(dir, "asked.txt");
  const t = onPty(["prompt", `/write ${f} chosen`]);
  await t.expect(/1\) Allow[\s\S]*choose 1-2/);
  t.send("1\r");
  await t.expect(/completed/);
  assert.equal(await t.exited, 0);
  assert.equal(readFileSync(f, "utf8"), "chosen");
  const g = join(dir, "refused.txt");
  const u = onPty(["prompt", `/write ${g} no`]);
  await u.expect(/choose 1-2/);
  u.send("2\r");
  assert.equal(await u.exited, 0);
  assert.equal(existsSync(g), false);
});

test("prompt on a terminal: Ctrl-C cancels, the stop reason is cancelled, exit 0", async () => {
  const t = onPty(["prompt", "/sleep 600000"]);
  await t.expect(/Ctrl-C cancels\)/);
  t.send("\x03");
  await t.expect(/turn ended: cancelled/);
  assert.equal(await t.exited, 0);
});

test("a second Ctrl-C exits when the agent does not end the turn", async () => {
  const record = join(dir, "hang.jsonl");
  process.env.ACP_RECORD = record;
  const minimal = `'${process.execPath}' '${join(SOURCE, "tests/client/ts-agent-minimal.mjs")}'`;
  const t = onPty(["prompt", "hang"], minimal);
  await t.expect(/Ctrl-C cancels\)/);
  t.send("\x03");
  await t.expect(/cancelling/);
  t.send("\x03");
  assert.equal(await t.exited, 130);
  delete process.env.ACP_RECORD;
  // The agent (not our child) records the cancel when it reads it: wait for that.
  while (!readFileSync(record, "utf8").includes('"session/cancel"')) await new Promise((r) => setTimeout(r, 20));
});
