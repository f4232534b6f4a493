// SPDX-License-Identifier: Apache-2.0
// The process-tree test (issue 13): after session/close, after acp-agent exits, and after `acp`
// releases a terminal or exits, nothing an MCP server or a terminal command started is alive,
// whether it double-forked, moved to its own session, ignores SIGTERM or cleared its
// environment. The servers (bad-mcp.sh) and the commands write the pid of every process they
// leave; a pid counts as alive while /proc shows it running what we started (a zombie is dead, a
// reused pid is someone else). docs/processes.md states the bounds checked here.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe } from "node:test";
import { rawAgent, tempDir, test, SOURCE, AGENT } from "../interop-agent/lib.mjs";
import { run } from "../client/acp-helpers.mjs";

const BAD = join(SOURCE, "tests/agent/bad-mcp.sh");
// What each kind of server leaves, besides its own pid ("leader").
const KINDS = {
  doublefork: ["daemon"],
  setsid: ["escaped"],
  daemon: ["daemon"],
  noterm: [],
  envclear: ["scrubbed"],
};
// session/close: stdin closed; SIGTERM after kill_grace_ms (2000 ms); SIGKILL 2000 ms later.
const BOUND_MS = 4000;
// Scheduling, /proc scans and a loaded CI host.
const SLACK_MS = 1500;
// What a server leaves when its stdin closes is killed as the server exits: at once.
const AT_ONCE_MS = 1500;
const REC = `echo $$ >"$0/$1.tmp" && mv "$0/$1.tmp" "$0/$1.pid" && exec sleep 987654`;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function stat(pid) {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = s.slice(s.lastIndexOf(")") + 2).split(" ");
    return { state: f[0], ppid: Number(f[1]), cmd: readFileSync(`/proc/${pid}/cmdline`, "utf8") };
  } catch {
    return null;
  }
}

// Alive: running, and still the process we started (its command line has `marker`).
function alive(pid, marker) {
  const s = stat(pid);
  return !!s && s.state !== "Z" && s.cmd.includes(marker);
}

const children = (ppid) =>
  readdirSync("/proc")
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => stat(d)?.ppid === ppid && stat(d).state !== "Z")
    .map(Number);

async function until(what, fn, ms = 10_000) {
  const end = Date.now() + ms;
  while (!fn()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

// The pid files of one directory, once all of `names` are there: [{name, pid, marker}]. What
// is still alive when the test ends is killed, also when it failed.
async function pids(t, dir, names, marker = (name) => (name === "leader" ? "bad-mcp.sh" : "987654")) {
  await until(`pid files ${names} in ${dir}`, () => names.every((n) => existsSync(join(dir, `${n}.pid`))));
  const procs = names.map((name) => ({ name, pid: Number(readFileSync(join(dir, `${name}.pid`), "utf8")), marker: marker(name) }));
  t.after(() => {
    for (const p of procs) if (alive(p.pid, p.marker)) process.kill(p.pid, "SIGKILL");
  });
  return procs;
}

// Polls until every process in procs is dead; returns {name: ms after t0 it was first seen dead}.
async function deaths(procs, t0, ms) {
  const died = {};
  const check = () => {
    for (const p of procs) if (!(p.name in died) && !alive(p.pid, p.marker)) died[p.name] = Date.now() - t0;
    return procs.every((p) => p.name in died);
  };
  await until("deaths", check, ms).catch(() => {
    const left = procs.filter((p) => !(p.name in died)).map((p) => `${p.name} (${p.pid}, parent ${stat(p.pid)?.ppid})`);
    throw new Error(`still alive after ${ms} ms: ${left.join(", ")}; died: ${JSON.stringify(died)}`);
  });
  return died;
}

// An agent with one session holding a server of every kind, each writing pids to its own dir.
async function agentWithServers(t) {
  const dir = tempDir(t);
  const a = rawAgent(t, { store: join(dir, "s.db") });
  await a.init();
  const servers = Object.keys(KINDS).map((kind) => {
    mkdirSync(join(dir, kind));
    return { name: kind, command: "/bin/sh", args: [BAD, kind, join(dir, kind)], env: [] };
  });
  const sid = await a.newSession(dir, { mcpServers: servers });
  const procs = {};
  for (const kind of Object.keys(KINDS)) {
    procs[kind] = (await pids(t, join(dir, kind), ["leader", ...KINDS[kind]])).map((p) => ({ ...p, name: `${kind}.${p.name}` }));
    for (const p of procs[kind]) assert.ok(alive(p.pid, p.marker), `${p.name} runs before the test`);
  }
  return { a, sid, procs, all: Object.values(procs).flat() };
}

// acp with acp-agent on a store in dir, for acp-helpers' run().
const acpWith = (dir) => ({ dir, agent: `'${AGENT}' --store '${join(dir, "s.db")}'` });

describe("process tree", { concurrency: true }, () => {
  test("session/close: leftovers die as their server exits, a SIGTERM-ignoring server within the bound", async (t) => {
    const { a, sid, procs, all } = await agentWithServers(t);
    const agentPid = a.st.proc.pid;
    const t0 = Date.now();
    const r = await a.request("session/close", { sessionId: sid });
    assert.deepEqual(r.result, {});
    // Only the subreaper reaches a process that cleared its environment: it lives until exit.
    const scrubbed = procs.envclear.find((p) => p.name === "envclear.scrubbed");
    const died = await deaths(
      all.filter((p) => p !== scrubbed),
      t0,
      BOUND_MS + SLACK_MS,
    );
    for (const [name, ms] of Object.entries(died)) {
      if (name === "noterm.leader") continue;
      assert.ok(ms <= AT_ONCE_MS, `${name} died ${ms} ms after session/close (at once expected): ${JSON.stringify(died)}`);
    }
    // It ignored the SIGTERM at 2 s, so it was the SIGKILL at 4 s.
    assert.ok(died["noterm.leader"] >= BOUND_MS - 500, JSON.stringify(died));
    assert.ok(died["noterm.leader"] <= BOUND_MS + SLACK_MS, JSON.stringify(died));
    // The scrubbed orphan came back to the agent (a subreaper), which is all that is left.
    assert.ok(alive(scrubbed.pid, scrubbed.marker));
    assert.deepEqual(children(agentPid), [scrubbed.pid]);
    await a.end();
    await deaths([scrubbed], Date.now(), 500);
  });

  test("agent exit (EOF): every server and everything they left is dead when it has exited", async (t) => {
    const { a, all } = await agentWithServers(t);
    const t0 = Date.now();
    await a.end(); // closes stdin, asserts exit status 0 (and no sanitizer report)
    const took = Date.now() - t0;
    assert.ok(took <= BOUND_MS + SLACK_MS, `exit took ${took} ms`);
    // Dead by the time the agent is: a little time for the kernel to finish SIGKILLed ones.
    await deaths(all, Date.now(), 500);
  });

  // acp runs the command for acp-agent's /term in a client terminal: the shell exits at once,
  // leaving an escaped child, a TERM-ignoring daemon and one without an environment.
  test("acp terminal: what a command leaves dies with it, the scrubbed one when acp exits", async (t) => {
    const dir = tempDir(t);
    const cmd =
      `setsid sh -c '${REC}' '${dir}' escaped & ` +
      `(trap '' TERM; setsid sh -c '${REC}' '${dir}' daemon &); ` +
      `env -i /usr/bin/setsid /bin/sh -c '${REC}' '${dir}' scrubbed & ` +
      `while ! [ -e '${dir}/escaped.pid' -a -e '${dir}/daemon.pid' -a -e '${dir}/scrubbed.pid' ]; do sleep 0.02; done; echo started`;
    const r = await run(acpWith(dir), ["--terminal", "--yes", "prompt", `/term ${cmd}`]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /started/);
    await deaths(await pids(t, dir, ["escaped", "daemon", "scrubbed"]), Date.now(), 500);
  });

  // The command still runs when the turn times out: the terminal is released (or acp exits
  // first), and its group, the escaped child and the scrubbed one all go.
  test("acp terminal: a command still running at release or exit", async (t) => {
    const dir = tempDir(t);
    const cmd =
      `setsid sh -c '${REC}' '${dir}' escaped & ` +
      `env -i /usr/bin/setsid /bin/sh -c '${REC}' '${dir}' scrubbed & ` +
      `echo $$ > '${dir}/leader.pid'; trap '' TERM; while :; do sleep 1; done`;
    const r = await run(acpWith(dir), ["--terminal", "--yes", "--timeout", "1", "prompt", `/term ${cmd}`]);
    assert.equal(r.code, 5, r.stderr);
    const procs = await pids(t, dir, ["leader", "escaped", "scrubbed"], () => "987654");
    await deaths(procs, Date.now(), 500);
  });
});
