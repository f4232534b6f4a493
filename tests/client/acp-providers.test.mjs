// SPDX-License-Identifier: Apache-2.0
// (unstable) `acp providers`, `acp provider set|disable` and --provider/--header: libacp's client
// against an agent of the official SDK 2.4.0 (ts-agent-providers.mjs, which checks every request
// it gets against schema.unstable.json) and against acp-agent's openai engine; `acp info` shows
// the capabilities and auth/status. Headers are secrets: never on acp's output.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { workspace, run, nodeAgent, BUILD, lines } from "./acp-helpers.mjs";

const ws = workspace();
after(() => ws.done());
const agent = nodeAgent("ts-agent-providers.mjs");
let n = 0;
// A fresh record file per run: what the SDK agent received, each with its schema verdict.
function recorded() {
  const file = join(ws.dir, `record-${n++}.jsonl`);
  return {
    env: { ACP_RECORD: file },
    get: () => (existsSync(file) ? readFileSync(file, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l)) : []),
  };
}

test("acp info shows providers and auth.status (unstable) and the agent's auth status", async () => {
  const r = await run(ws, ["info"], { agentCmd: agent });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^\s+providers\s+yes$/m);
  assert.match(r.stdout, /^\s+auth\.status\s+yes$/m);
  assert.match(r.stdout, /auth status: unauthenticated/);
});

test("acp providers lists them; --json prints the providers/list result", async () => {
  const rec = recorded();
  const r = await run(ws, ["providers"], { agentCmd: agent, env: rec.env });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^main  anthropic https:\/\/api\.anthropic\.example  \(supports anthropic,bedrock; required\)$/m);
  assert.match(r.stdout, /^openai  disabled  \(supports openai\)$/m);
  const j = await run(ws, ["--json", "providers"], { agentCmd: agent });
  assert.equal(j.code, 0, j.stderr);
  const res = lines(j.stdout).at(-1);
  assert.deepEqual(res.providers.map((p) => p.providerId), ["main", "openai"]);
  const got = rec.get().filter((e) => e.method === "providers/list");
  assert.equal(got.length, 1);
  assert.equal(got[0].bad, null, `providers/list params off the schema: ${got[0].bad}`);
});

test("acp provider set sends the schema's SetProviderRequest with the headers, and never prints them", async () => {
  const rec = recorded();
  const key = "sk-cli-secret-77e1";
  const r = await run(ws, ["provider", "set", "main", "https://gw.example/anthropic", "--api-type", "anthropic", "--header", `Authorization: Bearer ${key}`, "--header", "X-Team:  blue"], { agentCmd: agent, env: rec.env });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /provider main: anthropic at https:\/\/gw\.example\/anthropic \(2 headers; for this connection\)/);
  assert.ok(!r.stdout.includes(key) && !r.stderr.includes(key), "a header value was printed");
  const [set] = rec.get().filter((e) => e.method === "providers/set");
  assert.equal(set.bad, null, `providers/set params off the schema: ${set.bad}`);
  assert.deepEqual(set.params, { providerId: "main", apiType: "anthropic", baseUrl: "https://gw.example/anthropic", headers: { Authorization: `Bearer ${key}`, "X-Team": "blue" } });
  assert.match(set.parentArgv ?? "", /provider set main/, "the agent could not read acp's command line");
  assert.ok(!set.parentArgv.includes(key), `the key is in acp's command line (ps): ${set.parentArgv}`);
});

test("--provider ID=URL routes the connection before the command: the prompt runs through it", async () => {
  const rec = recorded();
  const r = await run(ws, ["--provider", "openai=http://127.0.0.1:9/v1", "--header", "Authorization: Bearer k", "prompt", "hi"], { agentCmd: agent, env: rec.env });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /openai=openai@http:\/\/127\.0\.0\.1:9\/v1\[Authorization\]/);
  const methods = rec.get().map((e) => e.method);
  assert.ok(methods.indexOf("providers/set") < methods.indexOf("session/new"), `order: ${methods}`);
});

test("refusals: disabling a required provider is the agent's -32602 (exit 1); a bad --provider or --header is a usage error", async () => {
  const r = await run(ws, ["provider", "disable", "main"], { agentCmd: agent });
  assert.equal(r.code, 1);
  assert.match(r.stderr, /cannot disable provider main: .*main is required/);
  const d = await run(ws, ["provider", "disable", "openai"], { agentCmd: agent });
  assert.equal(d.code, 0, d.stderr);
  assert.match(d.stdout, /provider openai: disabled/);
  for (const args of [["--provider", "openai", "providers"], ["--header", "novalue", "providers"], ["provider", "rename", "x"]]) {
    const u = await run(ws, args, { agentCmd: agent });
    assert.equal(u.code, 2, `${args}: ${u.stderr}`);
  }
});

test("against acp-agent's openai engine: the endpoint listed; switched off, acp says the capability is missing (exit 3)", async () => {
  const oa = `'${join(BUILD, "acp-agent")}' --store '${join(ws.dir, "oa.db")}' --engine openai --base-url http://127.0.0.1:9/v1`;
  const r = await run(ws, ["providers"], { agentCmd: oa });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^openai  openai http:\/\/127\.0\.0\.1:9\/v1  \(supports openai\)$/m);
  const i = await run(ws, ["info"], { agentCmd: oa });
  assert.match(i.stdout, /auth status: not_required/);
  const off = await run(ws, ["providers"], { agentCmd: `${oa} --unstable-off providers` });
  assert.equal(off.code, 3);
  assert.match(off.stderr, /does not advertise providers/);
});
