// SPDX-License-Identifier: Apache-2.0
// Signing in with `acp`: listing auth methods of every type real agents send (agent,
// env_var in both of its shapes, terminal), `acp auth METHOD`, --auth, the automatic env_var
// sign-in, terminal sign-ins, logout, and the -32000 error that names the methods. Against
// acp-agent --auth env:VAR (an agent method) and ts-agent-quirks.mjs (env_var and terminal
// methods, as codex-acp and gemini-cli send them).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { workspace, nodeAgent, run as runIn, lines, onPty } from "./acp-helpers.mjs";

let ws, gated;
before(() => {
  ws = workspace();
  gated = `${ws.agent} --auth env:ACP_TEST_TOKEN`;
});
after(() => ws.done());
const run = (args, opts) => runIn(ws, args, opts);
const quirks = nodeAgent("ts-agent-quirks.mjs");
const noKeys = { ACP_TEST_TOKEN: "", QK: "", QUIRKS_LEGACY: "" };

test("an agent method (acp-agent --auth): listed, required, --auth and 'acp auth', logout", async () => {
  const info = await run(["info"], { agentCmd: gated });
  assert.match(info.stdout, /auth methods: echo-token \(agent\)/);
  assert.match(info.stdout, /auth\.logout +yes/);
  const list = await run(["auth"], { agentCmd: gated });
  assert.equal(list.code, 0, list.stderr);
  assert.match(list.stdout, /^echo-token +agent +Echo token$/m);
  assert.match(list.stdout, /Succeeds when the agent's environment holds the token variable/);
  assert.match(list.stdout, /^logout: supported$/m);

  for (const args of [["prompt", "hi"], ["sessions"], ["new"]]) {
    const r = await run(args, { agentCmd: gated, env: noKeys });
    assert.equal(r.code, 3, args.join(" "));
    assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
    assert.match(r.stderr, /agent error -32000 .*sign in with 'acp auth METHOD' or --auth METHOD; methods: echo-token \(agent\)/);
  }
  const token = { ACP_TEST_TOKEN: "t0k3n" };
  const p = await run(["prompt", "hi", "--auth", "echo-token"], { agentCmd: gated, env: token });
  assert.equal(p.code, 0, p.stderr);
  assert.equal(p.stdout, "hi\n");
  const refused = await run(["--auth", "echo-token", "prompt", "hi"], { agentCmd: gated, env: noKeys });
  assert.equal(refused.code, 3);
  assert.match(refused.stderr, /^acp: cannot sign in with 'echo-token': .*ACP_TEST_TOKEN is not set/);
  const a = await run(["auth", "echo-token"], { agentCmd: gated, env: token });
  assert.equal(a.code, 0, a.stderr);
  assert.equal(a.stdout, "signed in with echo-token\n");
  const aj = await run(["--json", "auth", "echo-token"], { agentCmd: gated, env: token });
  assert.deepEqual(lines(aj.stdout).at(-1), { methodId: "echo-token" });
  const unknown = await run(["auth", "nope"], { agentCmd: gated });
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /offers no auth method 'nope'.*echo-token \(agent\)/);
  const out = await run(["logout"], { agentCmd: gated });
  assert.equal(out.code, 0, out.stderr);
  assert.equal(out.stdout, "signed out\n");
  const none = await run(["auth"]);
  assert.equal(none.stdout, "the agent lists no auth methods\n");
});

test("env_var methods: listed with their variables, signed in by themselves when set", async () => {
  const env = { ...noKeys, QUIRKS_AUTH: "QK" };
  const j = await run(["--json", "auth"], { agentCmd: quirks, env });
  assert.equal(j.code, 0, j.stderr);
  const methods = lines(j.stdout).at(-1).authMethods;
  assert.deepEqual(methods.map((m) => [m.id, m.type]), [["quirks-key", "env_var"], ["quirks-legacy", "env_var"], ["quirks-login", "terminal"], ["quirks-qwen", undefined], ["quirks-open", undefined]]);
  assert.deepEqual(methods[0].vars, [{ name: "QK" }], "as the agent sent them");
  const t = await run(["auth"], { agentCmd: quirks, env: { ...env, QK: "set" } });
  assert.match(t.stdout, /^quirks-key +env_var +Quirks key\n +A key in the environment\n +QK \(set\)$/m);
  assert.match(t.stdout, /^quirks-legacy +env_var +Legacy key\n +QUIRKS_LEGACY \(not set\)$/m);
  assert.match(t.stdout, /^quirks-login +terminal +Log in on the terminal\n +runs: \S*node \S*ts-agent-quirks\.mjs --login$/m);
  assert.match(t.stdout, /^quirks-qwen +terminal +qwen-style login\n +runs: \S*node \S*ts-agent-quirks\.mjs --login$/m, "_meta.type");
  assert.match(t.stdout, /^quirks-open +terminal +opencode-style login\n +runs: \S*node \S*ts-agent-quirks\.mjs --login$/m, "_meta terminal-auth");

  const no = await run(["prompt", "hi"], { agentCmd: quirks, env });
  assert.equal(no.code, 3);
  assert.match(no.stderr, /methods: quirks-key \(env_var: QK \(not set\)\), quirks-legacy \(env_var: QUIRKS_LEGACY \(not set\)\), quirks-login \(terminal\), quirks-qwen \(terminal\), quirks-open \(terminal\)/);
  const yes = await run(["prompt", "hi"], { agentCmd: quirks, env: { ...env, QK: "sk-dummy" } });
  assert.equal(yes.code, 0, yes.stderr);
  assert.equal(yes.stdout, "hi\n");
  assert.equal(yes.stderr, "acp: signing in with 'quirks-key' (QK set in the environment)\n");
  const legacy = await run(["--json", "sessions"], { agentCmd: quirks, env: { ...env, QUIRKS_LEGACY: "1" } });
  assert.equal(legacy.code, 0, legacy.stderr);
  assert.match(legacy.stderr, /signing in with 'quirks-legacy' \(QUIRKS_LEGACY set/, "varName, the RFD's first shape");
  const chosen = await run(["--auth", "quirks-legacy", "prompt", "x"], { agentCmd: quirks, env: { ...env, QK: "1", QUIRKS_LEGACY: "1" } });
  assert.equal(chosen.code, 0, chosen.stderr);
  assert.equal(chosen.stderr, "", "--auth is the sign-in: no automatic one");
  const bad = await run(["auth", "quirks-key"], { agentCmd: quirks, env });
  assert.equal(bad.code, 3);
  assert.match(bad.stderr, /cannot sign in with 'quirks-key': agent error -32000 .*\(QK is not set\)/);
});

// A terminal login talks to a person: it runs on a terminal (acp refuses it without one, see
// acp-daily.test.mjs).
const onTerminal = async (args, env, re) => {
  const p = onPty(ws, args, { agentCmd: quirks, env });
  await p.expect(re);
  return p.exited;
};

test("terminal methods run the agent's own command line with the method's args and env", async () => {
  const env = { ...noKeys, QUIRKS_AUTH: "QK" };
  const ok = await onTerminal(["auth", "quirks-login"], env,
    /running the agent's sign-in: Log in on the terminal\r?\nquirks login: QUIRKS_LOGIN=1\r?\nsigned in with quirks-login/);
  assert.equal(ok, 0);
  const failed = await onTerminal(["auth", "quirks-login"], { ...env, QUIRKS_LOGIN_FAIL: "1" },
    /the sign-in failed: exit status 1/);
  assert.equal(failed, 3);
  // Logins told in _meta (qwen-code, opencode): run, then authenticate, as the schema types
  // them agent methods.
  for (const id of ["quirks-qwen", "quirks-open"])
    assert.equal(await onTerminal(["auth", id], env, new RegExp(`quirks login: QUIRKS_LOGIN=\\r?\\nsigned in with ${id}`)), 0);
  const sock = await run(["auth", "quirks-login"], { agentCmd: "unix:/nonexistent.sock" });
  assert.equal(sock.code, 1, "no agent to ask over a socket that is not there");
});
