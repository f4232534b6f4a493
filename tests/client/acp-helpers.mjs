// SPDX-License-Identifier: Apache-2.0
// What the `acp` test files share: running acp through pipes or on a pseudo-terminal
// (tests/pty_run), a fresh store per file, and reading --json output.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const BUILD = process.env.ACP_BUILD;
export const SOURCE = process.env.ACP_SOURCE;
export const ACP = join(BUILD, "acp");

// A temporary directory with its own session store; call done() in after().
export function workspace() {
  const dir = mkdtempSync(join(tmpdir(), "acp-cli-"));
  return {
    dir,
    agent: `'${join(BUILD, "acp-agent")}' --store '${join(dir, "s.db")}'`,
    done: () => rmSync(dir, { recursive: true, force: true }),
  };
}

// A Node agent of tests/client as an --agent command line.
export const nodeAgent = (file, ...args) =>
  [`'${process.execPath}'`, `'${join(SOURCE, "tests/client", file)}'`, ...args].join(" ");

// Runs acp; resolves {code, stdout, stderr}. `bare`: no --agent / --cwd added. Never hangs
// the suite: killed after 120 s.
export function run(ws, args, { input, agentCmd = ws.agent, cwd = ws.dir, env, bare } = {}) {
  return new Promise((resolve, reject) => {
    const argv = bare ? args : ["--agent", agentCmd, "--cwd", cwd, ...args];
    const p = spawn(ACP, argv, { stdio: ["pipe", "pipe", "pipe"], env: { ...process.env, ...env } });
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

export const lines = (s) => s.split("\n").filter((l) => l.length).map((l) => JSON.parse(l));
export const texts = (objs, kind = "agent_message_chunk") =>
  objs.filter((o) => o.update?.sessionUpdate === kind).map((o) => o.update.content.text).join("");

// acp on a pty; `expect(re)` waits for output matching re after what the previous expect
// consumed (no fixed sleeps).
export function onPty(ws, args, { agentCmd = ws.agent, env } = {}) {
  const p = spawn(join(BUILD, "tests", "pty_run"), [ACP, "--agent", agentCmd, "--cwd", ws.dir, ...args], {
    stdio: ["pipe", "pipe", "inherit"],
    env: { ...process.env, ...env },
  });
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
