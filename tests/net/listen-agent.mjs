// SPDX-License-Identifier: Apache-2.0
// acp-agent --listen for the node tests of net/ (listen.test.mjs, bounds.test.mjs).
import { spawn } from "node:child_process";
import { join } from "node:path";

import { AGENT } from "../interop-agent/lib.mjs";

/** Starts `acp-agent --listen` (127.0.0.1:0 unless args say otherwise); resolves once it logs
 * where it listens (env: the agent's environment). Killed (and awaited) after the test if it is still running. */
export async function startAgent(t, dir, args = [], listen = "127.0.0.1:0", env = process.env) {
  const proc = spawn(AGENT, ["--store", join(dir, "sessions.db"), "--listen", listen, ...args], {
    stdio: ["ignore", "ignore", "pipe"],
    env,
  });
  let stderr = "";
  const exited = new Promise((r) => proc.on("exit", (code, signal) => r({ code, signal })));
  t.after(async () => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGKILL");
    await exited;
  });
  const port = await new Promise((resolve, reject) => {
    proc.stderr.on("data", (d) => {
      stderr += d;
      const m = /listening on (\S+?)(?::(\d+))?(?: \(TLS\))?\n/.exec(stderr);
      if (m) resolve(m[2] ? Number(m[2]) : 0);
    });
    proc.on("exit", (code) => reject(new Error(`acp-agent exited ${code}: ${stderr}`)));
  });
  return { proc, port, exited, stderr: () => stderr };
}
