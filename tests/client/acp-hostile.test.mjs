// SPDX-License-Identifier: Apache-2.0
// `acp` against a hostile agent (hostile-agent.mjs; issue 13, item 5): whatever a terminal would
// act on (CSI/OSC sequences: window title, clear screen, OSC 52 clipboard, OSC 8 hyperlinks;
// C1 controls; bidi overrides; CR, DEL) in message chunks, titles, tool titles and output,
// diffs, plan entries, notices, usage, modes, config options, session lists, auth methods,
// agent info, error messages and data.details, permission questions, never reaches the
// terminal raw: it is shown visibly (tools/acp/safe.h), nothing is dropped, and the only
// escape sequences on a terminal are acp's own styling. --json stays byte-exact. A prompt
// result with stopReason 42 is a protocol error: a message and exit status 1.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { join } from "node:path";
import { ACP, BUILD, workspace, nodeAgent } from "./acp-helpers.mjs";
import { H, shown, promptUpdates, SESSION } from "./hostile-agent.mjs";

let ws;
before(() => (ws = workspace()));
after(() => ws.done());
const hostile = nodeAgent("hostile-agent.mjs");

// Runs acp through pipes; stdout and stderr as bytes (a split UTF-8 sequence must not hide).
function acp(args) {
  const r = spawnSync(ACP, ["--agent", hostile, "--cwd", ws.dir, ...args], { input: "", timeout: 60000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

// What a terminal would act on, raw: C0 controls but LF and TAB (CR only before LF), DEL,
// C1 controls, bidi embeddings/overrides/isolates; and bytes that are not UTF-8.
function assertHarmless(buf, what) {
  const text = buf.toString("utf8");
  assert.ok(Buffer.from(text, "utf8").equals(buf), `${what}: not UTF-8`);
  const bad = /[\x00-\x08\x0b-\x1f\x7f\u0080-\u009f\u202a-\u202e\u2066-\u2069]/u;
  const m = bad.exec(text.replaceAll("\r\n", "\n"));
  assert.equal(m, null, `${what}: raw U+${m?.[0].codePointAt(0).toString(16)} at ${m?.index}: ${JSON.stringify(text.slice(Math.max(0, (m?.index ?? 0) - 40), (m?.index ?? 0) + 10))}`);
}

const has = (buf, s, what) => assert.ok(buf.toString("utf8").includes(s), `${what}: ${JSON.stringify(s)} not in ${JSON.stringify(buf.toString("utf8").slice(0, 3000))}`);

test("prompt: every update's agent text is shown visibly, none raw, nothing dropped", () => {
  const r = acp(["prompt", "all"]);
  assert.equal(r.code, 0, r.err.toString());
  assertHarmless(r.out, "stdout");
  assertHarmless(r.err, "stderr");
  assert.equal(r.err.toString(), "", "no update was dropped as malformed");
  const line = (s) => shown(s, true);
  for (const [s, what] of [
    [shown(H("msg") + "\nline two\r\n"), "message chunk (LF and CRLF pass)"],
    [`[${line(H("uri"))}]`, "resource link"],
    [`[tool] ${line(H("tool") + "\nfake line")} · edit`, "tool title (one line)"],
    [`--- /tmp/${line(H("path"))}`, "diff path"],
    [`-${line(H("old"))}`, "diff old line"],
    [`+${line(H("new"))}`, "diff new line"],
    [`│ ${line(H("output"))}`, "failed tool output"],
    [`[x] ${line(H("plan1"))}`, "plan entry"],
    [`[ ] ${line(H("plan2") + "\nsecond")}`, "plan entry (one line)"],
    [`[title] ${line(H("title"))}`, "session title"],
    [`[notice] warning ${line(H("notice"))}: ${shown(H("desc"))}`, "notice"],
    [`[notice] _${line(H("sev"))} custom`, "custom notice severity"],
    [`0.50 ${line(H("cur"))}`, "usage currency"],
    [`[mode] ${line(H("mode"))}`, "mode"],
    [`[config] ${line(H("opt"))}: ${line(H("val"))}`, "config option"],
  ])
    has(r.out, s, what);
  // the visible forms are there: nothing was stripped silently
  for (const s of ["\\x1b]0;pwned\\x07", "\\x1b]52;c;ZXZpbA==\\x07", "\\u009b31m", "\\u202egnp.exe", "a\\rb\\x7f\\x08\\x01z\ttab"])
    has(r.out, s, "escapes");
});

test("--json prints every update's params byte for byte, C1 and bidi characters included", () => {
  const r = acp(["--json", "prompt", "all"]);
  assert.equal(r.code, 0, r.err.toString());
  const want = promptUpdates(SESSION.sessionId).map((p) => JSON.stringify(p) + "\n").join("") +
    JSON.stringify({ sessionId: SESSION.sessionId, stopReason: "end_turn" }) + "\n";
  assert.ok(r.out.equals(Buffer.from(want, "utf8")), `not byte-exact:\n${r.out}\n---\n${want}`);
  assert.ok(r.out.includes(Buffer.from("\u009b", "utf8")), "raw C1 kept in --json");
});

test("the agent's text in info, sessions, modes, config and auth is shown visibly", () => {
  const line = (s) => shown(s, true);
  const checks = [
    [["info"], [`agent:    ${line(H("name"))} ${line(H("version"))}`]],
    [["sessions"], [line(H("listtitle")).slice(0, 30), `/tmp/${line(H("cwd"))}`]],
    [["modes"], [`${line(H("modename"))}  ${line(H("modedesc"))}`]],
    [["config"], [line(H("optname"))]],
    [["auth"], [line(H("authname")), line(H("authdesc"))]],
  ];
  for (const [args, wants] of checks) {
    const r = acp(args);
    assert.equal(r.code, 0, `${args}: ${r.err}`);
    assertHarmless(r.out, `${args} stdout`);
    assertHarmless(r.err, `${args} stderr`);
    for (const w of wants) has(r.out, w, args.join(" "));
  }
});

test("the agent's error message and data.details reach stderr made safe, on one line", () => {
  const r = acp(["prompt", "error"]);
  assert.equal(r.code, 1);
  assertHarmless(r.err, "stderr");
  const err = r.err.toString();
  assert.equal(err.split("\n").length, 2, err); // one line and its end
  has(r.err, `acp: prompt failed: agent error -32603 on session/prompt: ${shown(H("err"), true)} (`, "message");
  has(r.err, shown(H("details"), true).slice(0, 100), "data.details");
});

test("a permission refused with --deny names the tool made safe", () => {
  const r = acp(["--deny", "prompt", "perm"]);
  assert.equal(r.code, 3);
  assertHarmless(r.err, "stderr");
  has(r.err, `acp: permission denied (--deny): ${shown(H("permtitle") + "\nchoose 1-2", true)}\n`, "title");
});

test("stopReason 42 is a protocol error: a message and exit status 1, with and without --json", () => {
  for (const json of [[], ["--json"]]) {
    const r = acp([...json, "prompt", "stop42"]);
    assert.equal(r.code, 1, `${json}: ${r.err}`);
    assert.equal(r.err.toString(), "acp: prompt failed: the agent's session/prompt answer has no known stopReason\n");
    assert.doesNotMatch(r.out.toString(), /"stopReason"/, "no result line");
    if (json.length) assert.equal(JSON.parse(r.out.toString().trim().split("\n").at(-1)).error.exitStatus, 1);
  }
});

// acp on a pty (tests/pty_run) as bytes; answer() waits for re in the output, then types.
function onPty(args) {
  const p = spawn(join(BUILD, "tests", "pty_run"), [ACP, "--agent", hostile, "--cwd", ws.dir, ...args], { stdio: ["pipe", "pipe", "inherit"] });
  const chunks = [];
  let waiting = null;
  p.stdout.on("data", (d) => {
    chunks.push(d);
    if (waiting && waiting.re.test(Buffer.concat(chunks).toString("latin1"))) waiting.go();
  });
  const guard = setTimeout(() => p.kill("SIGKILL"), 60000);
  const exited = new Promise((r) => p.on("close", (code) => (clearTimeout(guard), r(code))));
  return {
    exited,
    bytes: () => Buffer.concat(chunks),
    answer: (re, keys) =>
      new Promise((resolve) => {
        const go = () => ((waiting = null), p.stdin.write(keys), resolve());
        if (re.test(Buffer.concat(chunks).toString("latin1"))) go();
        else waiting = { re, go };
      }),
  };
}

// acp's own styling on a terminal: SGR colours, erase line/below, cursor up, CR.
const ours = /\x1b\[[0-9;]*m|\x1b\[K|\x1b\[J|\x1b\[\d+A|\r/g;

test("on a terminal the only escape sequences are acp's own styling; questions are made safe", async () => {
  const t = onPty(["prompt", "all"]);
  assert.equal(await t.exited, 0);
  const out = t.bytes();
  assert.match(out.toString("latin1"), /\x1b\[2m/, "acp styles on a terminal");
  assertHarmless(Buffer.from(out.toString("utf8").replace(ours, ""), "utf8"), "pty");
  has(out, shown(H("thought")), "thought (shown on a terminal)");
  const q = onPty(["prompt", "perm"]);
  await q.answer(/choose 1-2/, "2\r");
  assert.equal(await q.exited, 3);
  const asked = q.bytes();
  assertHarmless(Buffer.from(asked.toString("utf8").replace(ours, ""), "utf8"), "question");
  has(asked, `The agent asks permission: ${shown(H("permtitle") + "\nchoose 1-2", true)}`, "question title");
  has(asked, `1) ${shown(H("yes"), true)}`, "option name");
});
