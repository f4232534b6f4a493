// SPDX-License-Identifier: Apache-2.0
// `acp` end to end through pipes, against acp-agent on a fresh store and against TypeScript-SDK
// agents: every command with --json parsed and checked, the text output, options before and
// after the command, every exit status, --fs / --terminal with --yes and --deny, capability
// refusals, the workarounds for real agents (ts-agent-quirks.mjs), a Unix socket agent.
// Auth is in acp-auth.test.mjs, everything on a terminal in acp-tty.test.mjs.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { ACP, BUILD, SOURCE, workspace, nodeAgent, run as runIn, lines, texts } from "./acp-helpers.mjs";

let ws;
before(() => (ws = workspace()));
after(() => ws.done());
const run = (args, opts) => runIn(ws, args, opts);
const quirks = nodeAgent("ts-agent-quirks.mjs");
const minimal = nodeAgent("ts-agent-minimal.mjs");
const oneLine = (r) => assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);

const COMMANDS = ["info", "new", "prompt", "chat", "sessions", "history", "resume", "close", "delete", "title", "archive", "unarchive", "status", "modes", "mode", "config", "auth", "logout", "providers", "provider", "agents"];

test("--help for the tool and every command; the man page has every option and command", async () => {
  const top = await run(["--help"]);
  assert.equal(top.code, 0);
  assert.match(top.stdout, /commands:/);
  assert.match(top.stdout, /exit status: 0 ok, 1 agent error, 2 usage error, 3 refused/);
  const man = readFileSync(join(SOURCE, "docs/acp.1"), "utf8").replaceAll("\\-", "-");
  const options = new Set(top.stdout.match(/--[a-z][a-z-]+/g));
  for (const cmd of COMMANDS) {
    const r = await run([cmd, "--help"]);
    assert.equal(r.code, 0, cmd);
    assert.match(r.stdout, new RegExp(`usage: acp ${cmd}`));
    assert.match(top.stdout.split("\noptions")[0], new RegExp(`\\b${cmd}\\b`), `${cmd} in acp --help`);
    assert.ok(new RegExp(`^\\.BI? ${cmd}\\b|^\\\\fB${cmd}\\\\fR`, "m").test(man), `${cmd} in acp(1)`);
    for (const o of r.stdout.match(/--[a-z][a-z-]+/g) ?? []) options.add(o);
    assert.equal((await run(["help", cmd])).stdout, r.stdout, "acp help CMD");
  }
  for (const o of options) assert.ok(man.includes(o), `${o} in acp(1)`);
  for (const o of ["--yes", "--deny", "--fs", "--terminal", "--auth", "--timeout", "--json", "--agent", "--cwd", "--session"])
    assert.ok(options.has(o), `${o} in --help`);
  for (const st of ["0", "1", "2", "3", "4", "5", "130"]) assert.ok(new RegExp(`^\\.IP ${st}$`, "m").test(man), `exit ${st} in acp(1)`);
});

test("usage errors exit 2 with one line", async () => {
  const cases = [
    ["frobnicate"], ["prompt"], ["history"], ["new", "--bogus"], [], ["mode", "ask"], ["config", "-s", "x", "model"],
    ["info", "-s", "x"], ["sessions", "--add-dir", "."], ["--yes", "--deny", "prompt", "x"], ["--timeout", "abc", "info"],
    ["prompt", "-s"], ["new", "--add-dir", "no/such/dir"], ["delete", "a", "b"], ["auth", "a", "b"],
  ];
  for (const args of cases) {
    const r = await run(args);
    assert.equal(r.code, 2, args.join(" "));
    oneLine(r);
    assert.match(r.stderr, /^acp: /);
  }
});

test("options go before or after the command", async () => {
  const a = await run(["--json", "new"]);
  const b = await run(["new", "--json"]);
  assert.equal(a.code, 0, a.stderr);
  assert.equal(b.code, 0, b.stderr);
  assert.ok(lines(a.stdout).at(-1).sessionId && lines(b.stdout).at(-1).sessionId);
  const f1 = join(ws.dir, "order1.txt"), f2 = join(ws.dir, "order2.txt");
  const y1 = await run(["--yes", "prompt", `/write ${f1} one`]);
  const y2 = await run(["prompt", `/write ${f2} two`, "--yes"]);
  assert.equal(y1.code, 0, y1.stderr);
  assert.equal(y2.code, 0, y2.stderr);
  assert.equal(readFileSync(f2, "utf8"), "two");
  // Everything after the command, the agent included; '--' ends the options.
  const bare = await run(["prompt", "--cwd", ws.dir, "--agent", ws.agent, "--json", "--", "--not-an-option"], { bare: true });
  assert.equal(bare.code, 0, bare.stderr);
  assert.equal(texts(lines(bare.stdout)), "--not-an-option");
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
  assert.match(t.stdout, /auth methods: none/);
});

test("the whole lifecycle with --json: new, prompt, title, sessions, history, resume, close, delete", async () => {
  const n = await run(["--json", "new"]);
  assert.equal(n.code, 0, n.stderr);
  const id = lines(n.stdout).at(-1).sessionId;
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
  assert.equal(listed.cwd, ws.dir);
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

test("text output: reply, plan, usage, notice, mode and config changes, title", async () => {
  const p = await run(["prompt", "hi", "there"]);
  assert.equal(p.code, 0, p.stderr);
  assert.equal(p.stdout, "hi there\n");
  assert.doesNotMatch(p.stdout, /\x1b\[/, "no colours off a TTY");
  const plan = await run(["prompt", "/plan"]);
  assert.equal(plan.stdout, "Plan:\n  [x] Understand the request\n  [~] Write the code\n  [ ] Test it\n");
  const id = (await run(["new"])).stdout.trim();
  const u = await run(["prompt", "-s", id, "/usage"]);
  assert.match(u.stdout, /^\[usage\] \d+\/128000 tokens \(\d+%\), 0\.00 USD$/m);
  // notices are advertised: the agent sends a notice, not a message
  const n = await run(["prompt", "-s", id, "/notice", "Heads up"]);
  assert.equal(n.stdout, "[notice] info Heads up\n");
  const m = await run(["prompt", "-s", id, "/mode", "ask"]);
  assert.equal(m.stdout, "[mode] ask\n", "the mode option moves too, said once");
  const c = await run(["prompt", "-s", id, "/set", "model", "echo-large"]);
  assert.equal(c.stdout, "[config] model: echo-large\n");
  const b = await run(["prompt", "-s", id, "/set", "verbose", "true"]);
  assert.equal(b.stdout, "[config] verbose: true\n");
  const tt = await run(["prompt", "-s", id, "/title", "Named"]);
  assert.equal(tt.stdout, "[title] Named\n");
});

test("tool calls show their diffs: a short unified diff, a new file's first lines", async () => {
  const r = await run(["prompt", "diff"], { agentCmd: quirks });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(
    r.stdout,
    [
      "[tool] Edit a.txt · edit pending",
      "  --- /w/a.txt", "  +++ /w/a.txt", "  @@ -1,5 +1,5 @@", "   one", "   two", "  -three", "  +3", "   four", "   five",
      "  +++ /w/new.txt (new file, 2 lines)", "  +hello", "  +world",
      "[tool] Edit a.txt · edit completed", // the same path again: not shown twice
      "",
    ].join("\n"),
  );
});

test("modes, mode, config: list, set, check values, booleans, kept with the session", async () => {
  const id = (await run(["new"])).stdout.trim();
  const ms = await run(["modes", "-s", id]);
  assert.equal(ms.code, 0, ms.stderr);
  assert.match(ms.stdout, /^  ask +Ask +Answers/m);
  assert.match(ms.stdout, /^\* code +Code +Reads/m);
  const set = await run(["mode", "-s", id, "ask"]);
  assert.equal(set.code, 0, set.stderr);
  assert.equal(set.stdout, "mode: ask\n");
  const mj = await run(["--json", "modes", "-s", id]);
  const mo = lines(mj.stdout).at(-1);
  assert.equal(mo.currentModeId, "ask");
  assert.deepEqual(mo.availableModes.map((x) => x.id), ["ask", "code"]);
  const bad = await run(["mode", "-s", id, "yolo"]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /has no mode 'yolo' \(modes: ask, code\)/);

  const cl = await run(["config", "-s", id]);
  assert.equal(cl.code, 0, cl.stderr);
  assert.match(cl.stdout, /^mode +Mode +ask +ask, code$/m, "the mode option moved with the mode");
  assert.match(cl.stdout, /^model +Model +echo-small +echo-small, echo-large$/m);
  assert.match(cl.stdout, /^verbose +Verbose +false +true, false$/m, "config_boolean is advertised");
  const cs = await run(["config", "-s", id, "model", "echo-large"]);
  assert.equal(cs.stdout, "model: echo-large\n");
  const cb = await run(["--json", "config", "-s", id, "verbose", "on"]);
  assert.equal(cb.code, 0, cb.stderr);
  const opts = lines(cb.stdout).at(-1).configOptions;
  assert.equal(opts.find((o) => o.id === "verbose").currentValue, true);
  assert.equal(opts.find((o) => o.id === "verbose").type, "boolean");
  for (const [args, re] of [
    [["config", "-s", id, "verbose", "maybe"], /is a boolean: true or false/],
    [["config", "-s", id, "model", "huge"], /has no value 'huge' \(values: echo-small, echo-large\)/],
    [["config", "-s", id, "colour", "red"], /has no config option 'colour' \(options: mode, model, verbose\)/],
  ]) {
    const r = await run(args);
    assert.equal(r.code, 2, args.join(" "));
    assert.match(r.stderr, re);
  }
  // Stored with the session: the next prompt runs verbose on echo-large, in ask mode.
  const p = await run(["--json", "prompt", "-s", id, "twice"]);
  assert.equal(texts(lines(p.stdout)), "twicetwice");
  assert.equal(texts(lines(p.stdout), "agent_thought_chunk"), "mode: ask, model: echo-large");
  // without -s: a new session's
  const fresh = await run(["--json", "config"]);
  assert.equal(lines(fresh.stdout).at(-1).configOptions.find((o) => o.id === "model").currentValue, "echo-small");
});

test("prompt text from standard input, relative --add-dir made absolute", async () => {
  const p = await run(["--json", "prompt", "--add-dir", ".", "-"], { input: "from stdin\nsecond line" });
  assert.equal(p.code, 0, p.stderr);
  assert.equal(texts(lines(p.stdout)), "from stdin\nsecond line");
});

test("permission requests: --yes writes, --deny and no terminal refuse (exit 3)", async () => {
  const f1 = join(ws.dir, "yes.txt"), f2 = join(ws.dir, "deny.txt"), f3 = join(ws.dir, "notty.txt");
  const y = await run(["prompt", "--yes", `/write ${f1} allowed`]);
  assert.equal(y.code, 0, y.stderr);
  assert.equal(readFileSync(f1, "utf8"), "allowed");
  assert.match(y.stdout, /\[tool\] .* completed/);
  const d = await run(["prompt", "--deny", `/write ${f2} denied`]);
  assert.equal(d.code, 3, d.stderr);
  assert.equal(existsSync(f2), false);
  assert.match(d.stderr, /permission denied \(--deny\): Write/);
  const n = await run(["prompt", `/write ${f3} denied`]);
  assert.equal(n.code, 3);
  assert.equal(existsSync(f3), false);
  assert.match(n.stderr, /permission denied \(no terminal\).*--yes/);
});

test("--fs: reads and writes inside the roots, --yes / --deny / no terminal, nothing outside", async () => {
  const inside = join(ws.dir, "fs-in.txt"), outside = join(ws.dir, "..", `acp-outside-${process.pid}.txt`);
  writeFileSync(inside, "inside text");
  writeFileSync(outside, "secret");
  try {
    const r = await run(["--fs", "prompt", "read", inside], { agentCmd: quirks });
    assert.equal(r.stdout, "read: inside text\n");
    const o = await run(["--fs", "prompt", "read", outside], { agentCmd: quirks });
    assert.equal(o.code, 0, o.stderr);
    assert.equal(o.stdout, "read refused: -32602\n");
    assert.match(o.stderr, /^acp: refused the agent's fs\/read_text_file: .*outside the session's directories$/m);
    const nofs = await run(["prompt", "read", inside], { agentCmd: quirks });
    assert.equal(nofs.stdout, "read refused: -32601\n", "without --fs the methods are not served");

    const w = join(ws.dir, "fs-w.txt");
    const deny = await run(["--fs", "--deny", "prompt", "write", w, "no"], { agentCmd: quirks });
    assert.equal(deny.code, 3);
    assert.match(deny.stderr, /refused to write 2 bytes to .*fs-w\.txt \(--deny\)/);
    const notty = await run(["--fs", "prompt", "write", w, "no"], { agentCmd: quirks });
    assert.equal(notty.code, 3);
    assert.match(notty.stderr, /refused to write 2 bytes to .*\(no terminal\); pass --yes/);
    assert.equal(existsSync(w), false);
    const yes = await run(["--fs", "--yes", "prompt", "write", w, "yes it is"], { agentCmd: quirks });
    assert.equal(yes.code, 0, yes.stderr);
    assert.equal(readFileSync(w, "utf8"), "yes it is");
    const out = await run(["--fs", "--yes", "prompt", "write", outside, "overwritten"], { agentCmd: quirks });
    assert.match(out.stderr, /refused the agent's fs\/write_text_file: .*outside the session's directories/);
    assert.equal(readFileSync(outside, "utf8"), "secret", "nothing written outside the roots");
    // acp-agent writes through the client when it offers fs (its permission request first)
    const e = join(ws.dir, "fs-echo.txt");
    const ey = await run(["--fs", "--yes", "--json", "prompt", `/write ${e} via client`]);
    assert.equal(ey.code, 0, ey.stderr);
    assert.equal(readFileSync(e, "utf8"), "via client");
  } finally {
    writeFileSync(outside, "");
  }
});

test("--terminal: commands run with --yes, are refused without a terminal, not offered without it", async () => {
  const y = await run(["--terminal", "--yes", "prompt", "/term echo from-terminal"]);
  assert.equal(y.code, 0, y.stderr);
  assert.match(y.stdout, /\[tool\] Run: echo from-terminal · execute completed\n  │ from-terminal\n/);
  const n = await run(["--terminal", "prompt", "/term echo never"]);
  assert.equal(n.code, 3);
  assert.doesNotMatch(n.stdout, /│ never/);
  const off = await run(["--yes", "prompt", "/term echo never"]);
  assert.match(off.stdout, /failed\n  │ the client offers no terminal/);
});

test("exit statuses: 1 agent error (with error.data), 3 refused, 4 exited, 5 timed out, 130 cancelled", async () => {
  const fail = await run(["prompt", "fail"], { agentCmd: quirks });
  assert.equal(fail.code, 1);
  oneLine(fail);
  assert.match(fail.stderr, /^acp: prompt failed: agent error -32603 on session\/prompt: Internal error \(Claude Code process exited with code 1\)\n$/);
  const start = await run(["info"], { agentCmd: "/nonexistent/agent" });
  assert.equal(start.code, 1);
  assert.match(start.stderr, /^acp: cannot start the agent: .*nonexistent.*--agent/);
  const h = await run(["history", "sess_does_not_exist"]);
  assert.equal(h.code, 1);
  oneLine(h);

  const exited = await run(["prompt", "exit", "7"], { agentCmd: quirks });
  assert.equal(exited.code, 4);
  assert.match(exited.stderr, /^acp: prompt failed: the agent exited with status 7/m);
  const killed = await run(["prompt", "kill"], { agentCmd: quirks });
  assert.equal(killed.code, 4);
  assert.match(killed.stderr, /the agent was killed by signal 9/);
  const early = await run(["info"], { agentCmd: "/bin/false" });
  assert.equal(early.code, 4);
  assert.match(early.stderr, /exited with status 1/);

  const t0 = Date.now();
  const slow = await run(["--timeout", "3", "prompt", "hang"], { agentCmd: quirks }); // Node may take a second to start under load
  assert.equal(slow.code, 5);
  assert.match(slow.stderr, /did not answer session\/prompt in time.*--timeout 3 s/);
  assert.ok(Date.now() - t0 < 20000);
  const notAgent = await run(["--timeout", "0.5", "info"], { agentCmd: "/bin/sleep 30" });
  assert.equal(notAgent.code, 5);
  assert.match(notAgent.stderr, /initialize/);

  const cancelled = await run(["prompt", "stop", "cancelled"], { agentCmd: quirks });
  assert.equal(cancelled.code, 130);
  assert.match(cancelled.stderr, /turn ended: cancelled/);
  const maxed = await run(["prompt", "stop", "max_tokens"], { agentCmd: quirks });
  assert.equal(maxed.code, 0);
  assert.equal(maxed.stderr, "acp: turn ended: max_tokens\n");
});

test("workarounds: resume answered -32601 falls back to load; empty ids; close errors say close", async () => {
  const r = await run(["prompt", "-s", "q-7", "after", "load"], { agentCmd: quirks });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, "after load\n", "the replay is not printed");
  assert.match(r.stderr, /advertises session\/resume but answered -32601.*loading the session instead/);
  const h = await run(["history", "q-7"], { agentCmd: quirks });
  assert.match(h.stdout, /^> replayed question\n\nreplayed answer\n$/);
  for (const args of [["prompt", "-s", "", "x"], ["delete", ""], ["history", ""]]) {
    const e = await run(args);
    assert.equal(e.code, 2, args.join(" "));
    assert.equal(e.stderr, "acp: a session id cannot be empty\n");
  }
  const c = await run(["close", "q-8"], { agentCmd: quirks });
  assert.equal(c.code, 1);
  assert.match(c.stderr, /^acp: cannot close session q-8: agent error -32603 on session\/close: .*close exploded/m);
});

test("an agent that advertises nothing: refusals are local (exit 3) and nothing forbidden is sent", async () => {
  const record = join(ws.dir, "record.jsonl");
  const env = { ACP_RECORD: record };
  const cases = [
    [["sessions"], /sessionCapabilities\.list/],
    [["history", "x"], /loadSession/],
    [["resume", "x"], /sessionCapabilities\.resume/],
    [["close", "x"], /sessionCapabilities\.close/],
    [["delete", "x"], /sessionCapabilities\.delete/],
    [["logout"], /auth\.logout/],
    [["new", "--add-dir", "/tmp"], /sessionCapabilities\.additionalDirectories/],
    [["new", "--mcp-http", "h=http://127.0.0.1:9/mcp"], /mcpCapabilities\.http/],
    [["new", "--mcp-sse", "e=http://127.0.0.1:9/sse"], /mcpCapabilities\.sse/],
    [["prompt", "-s", "1000", "hi"], /loadSession/],
    [["mode", "-s", "1000", "x"], /loadSession/],
  ];
  for (const [args, re] of cases) {
    const r = await run(args, { agentCmd: minimal, env });
    assert.equal(r.code, 3, args.join(" "));
    assert.match(r.stderr, re);
    oneLine(r);
  }
  const ok = await run(["--json", "prompt", "hi"], { agentCmd: minimal, env });
  assert.equal(ok.code, 0, ok.stderr);
  assert.equal(lines(ok.stdout).at(-1).sessionId, "1000");
  const nomodes = await run(["modes"], { agentCmd: minimal, env });
  assert.equal(nomodes.code, 0);
  assert.match(nomodes.stdout, /offers no modes/);
  const noset = await run(["--json", "config"], { agentCmd: minimal, env });
  assert.deepEqual(lines(noset.stdout).at(-1).configOptions, []);
  const methods = readFileSync(record, "utf8").trim().split("\n").map((l) => JSON.parse(l));
  const forbidden = methods.filter((m) => !["initialize", "session/new", "session/prompt"].includes(m.method));
  assert.deepEqual(forbidden, []);
  assert.ok(!JSON.stringify(methods).includes("additionalDirectories"));
  const init = methods.find((m) => m.method === "initialize").params;
  assert.deepEqual(init.clientInfo, { name: "acp", title: "acp (libacp command-line client)", version: init.clientInfo.version });
  assert.deepEqual(init.clientCapabilities.session, { notices: {}, configOptions: { boolean: {} } });
  assert.deepEqual(init.clientCapabilities.fs, { readTextFile: false, writeTextFile: false });
  assert.equal(init.clientCapabilities.auth.terminal, true);
  assert.deepEqual(init.clientCapabilities._meta, { "terminal-auth": true }, "the convention opencode keys on");
});

test("bad updates: each dropped with a line on stderr; unknown kinds pass quietly; --json keeps them raw", async () => {
  const r = await run(["prompt", "bad"], { agentCmd: quirks });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, "still fine\n");
  assert.match(r.stderr, /^acp: dropped a session\/update the schema does not allow \(usage_update\): .*used/m);
  assert.match(r.stderr, /^acp: dropped a session\/update the schema does not allow \(agent_message_chunk\): .*content/m);
  assert.match(r.stderr, /^acp: dropped a session\/update without a sessionId/m);
  assert.doesNotMatch(r.stderr, /future_kind/);
  const j = await run(["--json", "prompt", "bad"], { agentCmd: quirks });
  assert.deepEqual(lines(j.stdout).slice(0, 3).map((o) => o.update.sessionUpdate), ["usage_update", "agent_message_chunk", "future_kind"]);
});

test("chat without a terminal: one prompt per line; a failing turn is said and the chat goes on", async () => {
  const r = await run(["--json", "chat"], { input: "first line\n\nsecond line\n" });
  assert.equal(r.code, 0, r.stderr);
  const out = lines(r.stdout);
  assert.equal(texts(out), "first linesecond line");
  assert.deepEqual(out.filter((o) => o.stopReason).map((o) => o.stopReason), ["end_turn", "end_turn"]);
  const q = await run(["chat"], { agentCmd: quirks, input: "fail\nstill here\nexit 9\nnever\n" });
  assert.equal(q.code, 4);
  assert.equal(q.stdout, "still here\n");
  assert.match(q.stderr, /Claude Code process exited with code 1[\s\S]*the agent exited with status 9/);
});

test("SIGTERM stops the agent's process group, also an agent that ignores the end of its input", async () => {
  const p = spawn(ACP, ["--agent", quirks, "--cwd", ws.dir, "prompt", "hang"], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  const pid = await new Promise((resolve) =>
    p.stdout.on("data", (d) => {
      out += d;
      const m = /pid (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    }),
  );
  const closed = new Promise((r) => p.on("close", (code) => r(code)));
  p.kill("SIGTERM");
  assert.equal(await closed, 128 + 15);
  // gone, or a zombie waiting for init to reap it
  const alive = () => existsSync(`/proc/${pid}`) && !/^\S+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  for (let i = 0; i < 100 && alive(); i++) await new Promise((r) => setTimeout(r, 20));
  assert.equal(alive(), false);
});

test("the default agent is acp-agent next to acp", async () => {
  const r = await runIn(ws, ["--json", "info"], { bare: true, env: { XDG_STATE_HOME: ws.dir } });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(lines(r.stdout)[0].agentInfo.name, "acp-agent");
});

test("--agent unix:PATH: an agent on a Unix socket; a closed connection exits 4", async () => {
  const sock = join(ws.dir, "agent.sock");
  const children = [];
  const server = createServer((c) => {
    const p = spawn(join(BUILD, "acp-agent"), ["--store", join(ws.dir, "s.db")], { stdio: ["pipe", "pipe", "inherit"] });
    children.push(p);
    c.pipe(p.stdin);
    p.stdout.pipe(c);
    c.on("error", () => {});
    c.on("close", () => p.stdin.end());
  });
  await new Promise((r) => server.listen(sock, r));
  try {
    const r = await run(["--json", "prompt", "over", "a", "socket"], { agentCmd: `unix:${sock}` });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(texts(lines(r.stdout)), "over a socket");
  } finally {
    server.close();
    await Promise.all(children.map((p) => new Promise((r) => (p.exitCode !== null ? r() : p.on("close", r)))));
  }
  const hangup = join(ws.dir, "hangup.sock");
  const rude = createServer((c) => c.destroy());
  await new Promise((r) => rude.listen(hangup, r));
  const h = await run(["info"], { agentCmd: `unix:${hangup}` });
  rude.close();
  assert.equal(h.code, 4);
  assert.match(h.stderr, /closed the connection/);
  const none = await run(["info"], { agentCmd: `unix:${join(ws.dir, "none.sock")}` });
  assert.equal(none.code, 1);
  assert.match(none.stderr, /^acp: cannot connect to the agent: /);
});
