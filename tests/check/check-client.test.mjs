// SPDX-License-Identifier: Apache-2.0
// acp-agent --check-client (issue 24 item 1): the agent that checks its client, driven by
// libacp's client (acp with --fs --terminal --yes) and by the official SDK's client
// (tests/interop-agent/lib.mjs's sdkAgent: fs reads, permissions, terminals, form
// elicitation). Both pass every MUST; what a client does not advertise is skipped and says so.
import { test as nodeTest, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sdkAgent } from "../interop-agent/lib.mjs";

const BUILD = process.env.ACP_BUILD;
const dir = mkdtempSync(join(tmpdir(), "acp-check-client-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const report = (file) => readFileSync(file, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
const by = (checks) => Object.fromEntries(checks.map((c) => [c.id, c]));
const mustFails = (checks) => checks.filter((c) => c.level === "MUST" && c.result === "fail");

nodeTest("libacp's client (acp --fs --terminal --yes) passes acp-agent --check-client", async () => {
  const file = join(dir, "acp.jsonl");
  const agent = `'${join(BUILD, "acp-agent")}' --store '${join(dir, "a.db")}' --check-client --check-report '${file}' --check-json`;
  const r = await new Promise((resolve, reject) => {
    const p = spawn(join(BUILD, "acp"), ["--agent", agent, "--cwd", dir, "--fs", "--terminal", "--yes", "prompt", "check me"], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "", stderr = "";
    p.stdout.on("data", (d) => (stdout += d));
    p.stderr.on("data", (d) => (stderr += d));
    p.on("error", reject);
    p.on("close", (code) => resolve({ code, stdout, stderr }));
  });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /acp check of the client: \d+ passed, 0 failed/);
  const checks = report(file);
  assert.deepEqual(mustFails(checks), []);
  const b = by(checks);
  for (const id of ["client.init.version", "client.schema.initialize", "client.schema.prompt", "client.updates.sent",
    "client.updates.accepted", "client.permission", "client.fs.read", "client.fs.read_line_limit", "client.fs.write_creates",
    "client.terminal.create", "client.terminal.wait_for_exit", "client.terminal.output", "client.terminal.truncation",
    "client.ext.unknown_method"])
    assert.equal(b[id]?.result, "pass", `${id}: ${JSON.stringify(b[id])}`);
  assert.equal(b["client.elicitation.form"].result, "skip"); // acp does not advertise elicitation
  assert.equal(b["client.elicitation.url"].result, "skip");
  // the probe files are gone
  assert.deepEqual(readdirSync(dir).filter((f) => f.startsWith(".acp-check-client")), []);
});

nodeTest("the SDK's client passes acp-agent --check-client", async (t) => {
  const file = join(dir, "sdk.jsonl");
  const h = sdkAgent(t, {
    store: join(dir, "s.db"),
    args: ["--check-client", "--check-report", file, "--check-json"],
    // line (1-based) and limit as file-system.mdx has them
    fs: {
      read: (p, { line, limit } = {}) => {
        const lines = readFileSync(p, "utf8").split(/(?<=\n)/);
        return lines.slice((line ?? 1) - 1, limit == null ? undefined : (line ?? 1) - 1 + limit).join("");
      },
      caps: { writeTextFile: false },
    },
    terminal: true,
    elicitation: { form: true, url: true, answer: "accept" },
    permission: "allow",
  });
  await h.init();
  const sid = await h.newSession(dir);
  const { stopReason, updates } = await h.prompt(sid, "check me");
  assert.equal(stopReason, "end_turn");
  const kinds = new Set(updates.map((u) => u.sessionUpdate));
  for (const k of ["agent_message_chunk", "agent_thought_chunk", "plan", "tool_call", "tool_call_update", "usage_update"])
    assert.ok(kinds.has(k), `${k} in ${[...kinds]}`);
  const checks = report(file);
  assert.deepEqual(mustFails(checks), []);
  const b = by(checks);
  for (const id of ["client.permission", "client.fs.read", "client.terminal.output", "client.terminal.truncation", "client.elicitation.form", "client.elicitation.url"])
    assert.equal(b[id]?.result, "pass", `${id}: ${JSON.stringify(b[id])}`);
  // the URL elicitation's completion reached the client, with the id the request carried
  const url = h.elicitations.find((e) => e.mode === "url");
  assert.ok(url && url.url === "https://example.invalid/acp-check", JSON.stringify(h.elicitations));
  assert.deepEqual(h.elicitationCompletes.map((c) => c.elicitationId), [url.elicitationId]);
  assert.equal(b["client.fs.write_creates"].result, "skip");
  assert.match(b["client.fs.write_creates"].detail, /fs.writeTextFile is not advertised/);
  // the unknown extension method is called on purpose (client.ext.unknown_method)
  const others = h.violations.filter((v) => !v.includes("_acp-check/no_such_method"));
  h.violations.splice(0, h.violations.length, ...others);
  assert.deepEqual(others, []);
  await h.end();
});
