// SPDX-License-Identifier: Apache-2.0
// `acp` as a daily tool (issue 25): --json's error line on every failure, a remote 401 as a
// refusal, terminal sign-ins without a terminal, the api-key sign-in from the environment,
// agents that ignore the end of their input, and the moment a cancelled turn's agent gets to
// answer. Against daily-agent.mjs (one flag per habit) and a loopback server answering 401.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { readFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { BUILD, workspace, nodeAgent, run as runIn, lines, onPty } from "./acp-helpers.mjs";

let ws, server, port;
before(async () => {
  ws = workspace();
  // Refuses every request and every WebSocket upgrade, as acp-agent --listen does without
  // the right bearer token.
  server = createServer((req, res) => {
    res.writeHead(401, { "WWW-Authenticate": 'Bearer realm="acp"' });
    res.end("a valid bearer token is required");
  });
  server.on("upgrade", (req, sock) => {
    sock.end('HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer realm="acp"\r\nContent-Length: 0\r\n\r\n');
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  port = server.address().port;
});
after(async () => {
  await new Promise((r) => server.close(r));
  ws.done();
});
const run = (args, opts) => runIn(ws, args, opts);
const agent = (...flags) => nodeAgent("daily-agent.mjs", ...flags);
let marks = 0;
const markFile = () => join(ws.dir, `mark-${marks++}`);
const marked = (f) => (existsSync(f) ? readFileSync(f, "utf8").trim().split("\n") : []);
const last = (stdout) => lines(stdout).at(-1);

test("--json: every failure ends stdout with an error object (code, message, data, exitStatus)", async () => {
  const refused = await run(["--json", "new"], { agentCmd: agent("--fail") });
  assert.equal(refused.code, 1);
  assert.deepEqual(last(refused.stdout), {
    error: {
      code: -32042,
      message: 'cannot start a session: agent error -32042 on session/new: No sessions today. ({"why":"closed"})',
      data: null,
      exitStatus: 1,
    },
  });
  const usage = await run(["--json", "new", "--bogus"]);
  assert.equal(usage.code, 2);
  assert.equal(last(usage.stdout).error.exitStatus, 2);
  assert.match(last(usage.stdout).error.message, /unknown option '--bogus'/);
  const gone = await run(["--json", "info"], { agentCmd: `'${process.execPath}' -e 'process.exit(7)'` });
  assert.equal(gone.code, 4);
  assert.deepEqual(Object.keys(last(gone.stdout).error), ["code", "message", "data", "exitStatus"]);
  assert.equal(last(gone.stdout).error.code, null);
  assert.match(last(gone.stdout).error.message, /exited with status 7/);
  // The updates a failing prompt streamed come first; the error line is still the last one.
  const timeout = await run(["--json", "--timeout", "0.5", "prompt", "hi"], { agentCmd: agent("--slow-cancel") });
  assert.equal(timeout.code, 5);
  assert.equal(last(timeout.stdout).error.exitStatus, 5);
  const ok = await run(["--json", "new"], { agentCmd: agent() });
  assert.equal(ok.code, 0);
  assert.deepEqual(last(ok.stdout), { sessionId: "s1" });
});

test("a remote 401 is a refusal (exit 3) that names --token and ACP_TOKEN", async () => {
  for (const url of [`ws://127.0.0.1:${port}/acp`, `http://127.0.0.1:${port}/acp`]) {
    for (const args of [["info"], ["--json", "new"]]) {
      const r = await run(args, { agentCmd: url, env: { ACP_TOKEN: "wrong" } });
      assert.equal(r.code, 3, `${url} ${args}: ${r.stderr}`);
      assert.match(r.stderr, /HTTP 401.*the bearer token is missing or wrong.*; pass --token TOKEN or set ACP_TOKEN/);
      assert.doesNotMatch(r.stderr, /cannot start a session/);
      assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
      if (args[0] === "--json") assert.equal(last(r.stdout).error.exitStatus, 3);
    }
  }
});

test("a terminal sign-in without a terminal is refused at once; --timeout bounds one on a terminal", async () => {
  const r = await run(["auth", "login"], { agentCmd: agent("--terminal-auth") });
  assert.equal(r.code, 3);
  assert.match(r.stderr, /'login' is a terminal sign-in and standard input is not a terminal: run 'acp auth login' in one/);
  // On a terminal the login runs; it waits for a person who never comes: --timeout ends it.
  const p = onPty(ws, ["--timeout", "1", "auth", "login"], { agentCmd: agent("--terminal-auth") });
  await p.expect(/did not finish within --timeout 1 s/);
  assert.equal(await p.exited, 5);
});

test("an agent method with _meta api-key signs in by itself when its provider's variable is set", async () => {
  const mark = markFile();
  const r = await run(["new"], { agentCmd: agent("--api-key", "openai", "--mark", mark), env: { OPENAI_API_KEY: "sk-test" } });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, "s1\n");
  assert.match(r.stderr, /signing in with 'api-key' \(OPENAI_API_KEY set in the environment\)/);
  assert.deepEqual(marked(mark), ["auth api-key"]);
  const unset = await run(["new"], { agentCmd: agent("--api-key", "openai"), env: { OPENAI_API_KEY: "" } });
  assert.equal(unset.code, 3);
  assert.match(unset.stderr, /methods: api-key \(agent: OPENAI_API_KEY \(not set\)\)/);
  // The agent's own stop gives way to the hint's, and the methods it put in error.data
  // (qwen-code) are not said twice.
  assert.match(unset.stderr, /Authentication required; sign in with/);
  assert.doesNotMatch(unset.stderr, /authMethods/);
  const google = await run(["auth"], { agentCmd: agent("--api-key", "google"), env: { GEMINI_API_KEY: "k" } });
  assert.match(google.stdout, /GEMINI_API_KEY \(set\)/);
  const other = await run(["auth"], { agentCmd: agent("--api-key", "open-router") });
  assert.match(other.stdout, /OPEN_ROUTER_API_KEY \(not set\)/);
});

// The library waits 2 s for an agent to leave after the end of its input; an agent that ignores
// it is ended at once when no turn ran. Both bounds are about the library's 2 s grace, not the
// machine's speed: at once (100 ms) is anything well before it, so a loaded machine passes.
test("an agent that ignores the end of its input: ended at once after info, given its grace after a turn", async () => {
  const mark = markFile();
  const r = await run(["info"], { agentCmd: agent("--ignore-eof", "--mark", mark) });
  assert.equal(r.code, 0, r.stderr);
  const [term] = marked(mark);
  assert.match(term, /^term \d+$/);
  assert.ok(Number(term.split(" ")[1]) < 1800, term);
  const mark2 = markFile();
  const p = await run(["prompt", "hi"], { agentCmd: agent("--ignore-eof", "--mark", mark2) });
  assert.equal(p.code, 0, p.stderr);
  const [term2] = marked(mark2);
  assert.ok(Number(term2.split(" ")[1]) >= 1500, term2);
});

test("after --timeout, the agent answers the cancel before acp closes its output", async () => {
  const mark = markFile();
  const r = await run(["--timeout", "0.5", "prompt", "hi"], { agentCmd: agent("--slow-cancel", "--mark", mark) });
  assert.equal(r.code, 5);
  assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr); // the late answer is not news
  const m = marked(mark);
  assert.ok(m.includes("answered") && !m.includes("epipe"), m.join(","));
});

test("modes and config without -s leave no session behind: closed and deleted", async () => {
  for (const args of [["modes"], ["config"], ["--json", "modes"]]) {
    const mark = markFile();
    const r = await run(args, { agentCmd: agent("--mark", mark) });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(marked(mark), ["close s1", "delete s1"], args.join(" "));
  }
  const mark = markFile();
  const kept = await run(["modes", "-s", "s1"], { agentCmd: agent("--mark", mark) });
  assert.deepEqual(marked(mark), [], "a session named with -s is the user's: kept");
});

test("colours: NO_COLOR, --color=auto|always|never, TERM=dumb", async () => {
  const quirks = nodeAgent("ts-agent-quirks.mjs");
  const sgr = /\x1b\[[0-9;]*m/;
  const onTerminal = async (args, env) => {
    const t = onPty(ws, args, { agentCmd: quirks, env });
    assert.equal(await t.exited, 0);
    return t.output();
  };
  const plain = { TERM: "xterm", NO_COLOR: "" };
  assert.match(await onTerminal(["prompt", "plans"], plain), sgr, "colours on a terminal");
  const noColor = await onTerminal(["prompt", "plans"], { ...plain, NO_COLOR: "1" });
  assert.doesNotMatch(noColor, sgr);
  assert.match(noColor, /\x1b\[4A\r\x1b\[J/, "NO_COLOR still redraws in place");
  assert.doesNotMatch(await onTerminal(["--color=never", "prompt", "plans"], plain), sgr);
  assert.match(await onTerminal(["--color=always", "prompt", "plans"], { ...plain, NO_COLOR: "1" }), sgr);
  assert.doesNotMatch(await onTerminal(["prompt", "plans"], { ...plain, TERM: "dumb" }), /\x1b/, "TERM=dumb: no escapes at all");
  const piped = await run(["--color=always", "prompt", "plans"], { agentCmd: quirks });
  assert.match(piped.stdout, sgr, "--color=always through a pipe");
  assert.doesNotMatch((await run(["--color", "prompt", "plans"], { agentCmd: quirks, env: { NO_COLOR: "1" } })).stdout, /\x1b\[4A/, "no redraws through a pipe");
  const bad = await run(["--color=sometimes", "info"]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--color wants auto, always or never, not 'sometimes'/);
});

// acp-agent --listen unix:PATH serves HTTP, WebSocket and (told by its first byte, '{') ACP as
// on a pipe: what `acp --agent unix:PATH` speaks.
async function listen(t, sock, extra = []) {
  const proc = spawn(join(BUILD, "acp-agent"), ["--store", join(ws.dir, `${sock}.db`), "--listen", `unix:${join(ws.dir, sock)}`, ...extra], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  const exit = new Promise((r) => proc.on("exit", r));
  await new Promise((resolve, reject) => {
    proc.stderr.on("data", (d) => (stderr += d) && /listening/.test(stderr) && resolve());
    proc.once("exit", () => reject(new Error("acp-agent exited: " + stderr)));
  });
  t.after(async () => {
    proc.kill("SIGTERM");
    await exit;
  });
  return { agent: `unix:${join(ws.dir, sock)}`, stderr: () => stderr };
}

test("acp --agent unix:PATH talks to acp-agent --listen unix:PATH", async (t) => {
  const srv = await listen(t, "plain.sock");
  const p = await run(["prompt", "hello", "there"], { agentCmd: srv.agent });
  assert.equal(p.code, 0, p.stderr);
  assert.equal(p.stdout, "hello there\n");
  const s = await run(["--json", "sessions"], { agentCmd: srv.agent });
  assert.equal(s.code, 0, s.stderr);
  assert.equal(last(s.stdout).sessions.length, 1);
  // A listener that wants a bearer token takes it over HTTP only: the socket peer is refused.
  writeFileSync(join(ws.dir, "token"), "t0k3n\n");
  const guarded = await listen(t, "guarded.sock", ["--token-file", join(ws.dir, "token")]);
  const r = await run(["info"], { agentCmd: guarded.agent });
  assert.notEqual(r.code, 0);
  assert.match(guarded.stderr(), /an NDJSON peer refused: this listener wants a bearer token/);
});
