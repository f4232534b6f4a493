// SPDX-License-Identifier: Apache-2.0
// Agents by name from the ACP Registry (rfds/acp-agent-registry.mdx): `acp agents` and
// `acp --agent ID`, with a registry this test writes (the aggregate's shape: {version, agents}).
//   - an npx entry: a local npm package (made here, in a temp dir) whose bin runs an agent built
//     on the official SDK from node_modules (ts-agent-minimal.mjs). npx installs a local
//     directory without a registry, so npx runs offline (npm_config_offline); the manifest's env
//     reaches the agent;
//   - a binary entry: a .tar.gz built here (a script that runs the build's acp-agent), served by
//     an HTTP server on 127.0.0.1 behind a redirect, sha256 checked, unpacked into
//     $XDG_CACHE_HOME/acp/agents once and reused (no second download);
//   - a uvx entry: `uvx` is a script of this test's, first in PATH, that records how it was
//     called (package, args, the manifest's env) and runs the build's acp-agent;
//   - a URL registry: fetched, cached, and read from the cache when the server fails;
//     $ACP_REGISTRY names one too.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { createHash } from "node:crypto";
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync, readFileSync, existsSync, chmodSync } from "node:fs";
import { join } from "node:path";
import { workspace, run, lines, BUILD, SOURCE } from "./acp-helpers.mjs";

const ws = workspace();
const plat = `linux-${process.arch === "arm64" ? "aarch64" : "x86_64"}`;
const cache = join(ws.dir, "cache");
const npmCache = join(ws.dir, "npm-cache");
const baseEnv = { XDG_CACHE_HOME: cache, npm_config_cache: npmCache, npm_config_offline: "true", npm_config_update_notifier: "false", ACP_REGISTRY: "" };

// The npx package: a bin that runs the SDK agent.
const pkg = join(ws.dir, "pkg");
mkdirSync(pkg);
writeFileSync(join(pkg, "package.json"), JSON.stringify({ name: "acp-registry-test-agent", version: "1.0.0", bin: { "acp-registry-test-agent": "agent.mjs" } }));
writeFileSync(join(pkg, "agent.mjs"), `#!/usr/bin/env node\nawait import(${JSON.stringify(join(SOURCE, "tests/client/ts-agent-minimal.mjs"))});\n`);
chmodSync(join(pkg, "agent.mjs"), 0o755);
const npxRecord = join(ws.dir, "npx-record.jsonl");

// uvx: a stand-in for uv's, which records its argv and the manifest's env, then runs acp-agent.
const uvBin = join(ws.dir, "uvbin");
mkdirSync(uvBin);
const uvxCalls = join(ws.dir, "uvx-calls.txt");
writeFileSync(join(uvBin, "uvx"), `#!/bin/sh\nprintf '%s\\n' "$*" "$ACP_TEST_UVX_MARK" >>'${uvxCalls}'\nexec '${join(BUILD, "acp-agent")}' --store '${join(ws.dir, "uvx.db")}'\n`);
chmodSync(join(uvBin, "uvx"), 0o755);

// The binary's archive: dist/bin/agent, a script running the build's acp-agent.
const tree = join(ws.dir, "tree");
mkdirSync(join(tree, "dist/bin"), { recursive: true });
writeFileSync(join(tree, "dist/bin/agent"), `#!/bin/sh\n[ "$ACP_TEST_BINARY_MARK" = from-manifest ] || exit 9\nexec '${join(BUILD, "acp-agent")}' "$@"\n`);
chmodSync(join(tree, "dist/bin/agent"), 0o755);
const tarball = join(ws.dir, "agent.tar.gz");
execFileSync("tar", ["-czf", tarball, "-C", tree, "dist"]);
const tarBytes = readFileSync(tarball);
const sha = createHash("sha256").update(tarBytes).digest("hex");

const served = { archive: 0, registry: 0, failRegistry: false };
let server, base;
let registryText = "";
before(async () => {
  server = http.createServer((req, res) => {
    if (req.url === "/dl/agent.tar.gz") {
      res.writeHead(302, { Location: `${base}/files/agent.tar.gz` });
      return res.end();
    }
    if (req.url === "/files/agent.tar.gz") {
      served.archive++;
      res.writeHead(200, { "Content-Type": "application/gzip" });
      return res.end(tarBytes);
    }
    if (req.url === "/registry.json") {
      served.registry++;
      if (served.failRegistry) {
        res.writeHead(503);
        return res.end("down");
      }
      res.writeHead(200, { "Content-Type": "application/json" });
      return res.end(registryText);
    }
    res.writeHead(404);
    res.end();
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${server.address().port}`;
  registryText = JSON.stringify(registry(sha));
  writeFileSync(join(ws.dir, "registry.json"), registryText);
  writeFileSync(join(ws.dir, "bad-sha.json"), JSON.stringify(registry("0".repeat(64), "2.0.0")));
});
after(async () => {
  await new Promise((r) => server.close(r));
  ws.done();
});

function registry(sum, version = "1.0.0") {
  return {
    version: "1.0.0",
    agents: [
      {
        id: "sdk-minimal",
        name: "SDK minimal agent",
        version: "1.0.0",
        description: "An agent on the official TypeScript SDK",
        distribution: { npx: { package: pkg, args: [], env: { ACP_RECORD: npxRecord } } },
      },
      {
        id: "py-agent",
        name: "A Python agent",
        version: "0.3.0",
        description: "run with uv",
        distribution: { uvx: { package: "acp-registry-test-agent==0.3.0", args: ["--acp", "--quiet"], env: { ACP_TEST_UVX_MARK: "from-manifest" } } },
      },
      {
        id: "libacp-echo",
        name: "libacp echo",
        version,
        description: "acp-agent's echo engine, as a binary",
        distribution: {
          binary: {
            [plat]: { archive: `${base}/dl/agent.tar.gz`, cmd: "./dist/bin/agent", args: ["--store", join(ws.dir, "bin.db")], env: { ACP_TEST_BINARY_MARK: "from-manifest" }, sha256: sum },
            "windows-x86_64": { archive: `${base}/nothing.zip`, cmd: "agent.exe" },
          },
        },
      },
    ],
  };
}

const reg = (...args) => ["--registry", join(ws.dir, "registry.json"), ...args];

test("acp agents lists the registry: id, version, name, how it runs here, description; --json the agents", async () => {
  const r = await run(ws, reg("agents"), { bare: true, env: baseEnv });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^sdk-minimal\s+1\.0\.0\s+SDK minimal agent\s+npx\s+An agent on the official TypeScript SDK$/m);
  assert.match(r.stdout, /^libacp-echo\s+1\.0\.0\s+libacp echo\s+binary\s+acp-agent's echo engine, as a binary$/m);
  const j = await run(ws, ["--json", ...reg("agents")], { bare: true, env: baseEnv });
  assert.match(r.stdout, /^py-agent\s+0\.3\.0\s+A Python agent\s+uvx\s+run with uv$/m);
  assert.deepEqual(lines(j.stdout).at(-1).agents.map((a) => a.id), ["sdk-minimal", "py-agent", "libacp-echo"]);
});

test("--agent ID of an npx distribution runs npx -y PACKAGE with the manifest's env", async () => {
  const r = await run(ws, ["--agent", "sdk-minimal", ...reg("prompt", "hello registry")], { bare: true, env: baseEnv });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /hello registry/);
  const got = readFileSync(npxRecord, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l).method);
  assert.ok(got.includes("session/prompt"), `the manifest's ACP_RECORD did not reach the agent: ${got}`);
});

test("--agent ID of a uvx distribution runs uvx PACKAGE ARGS with the manifest's env", async () => {
  const env = { ...baseEnv, PATH: `${uvBin}:${process.env.PATH}` };
  const r = await run(ws, ["--agent", "py-agent", ...reg("prompt", "hello uv")], { bare: true, env });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /hello uv/);
  assert.deepEqual(readFileSync(uvxCalls, "utf8").split("\n").filter(Boolean), ["acp-registry-test-agent==0.3.0 --acp --quiet", "from-manifest"]);
});

test("--agent ID of a binary distribution: downloaded once (redirect followed, sha256 checked), unpacked into the XDG cache, run with its args and env", async () => {
  const r = await run(ws, ["--agent", "libacp-echo", ...reg("prompt", "echo me")], { bare: true, env: baseEnv });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /echo me/);
  assert.equal(served.archive, 1);
  assert.ok(existsSync(join(cache, `acp/agents/libacp-echo/1.0.0/${plat}/dist/bin/agent`)), "not unpacked into the cache");
  const again = await run(ws, ["--agent", "libacp-echo", ...reg("info")], { bare: true, env: baseEnv });
  assert.equal(again.code, 0, again.stderr);
  assert.equal(served.archive, 1, "downloaded again although unpacked in the cache");
});

test("a sha256 that does not match: not unpacked, not run (exit 1)", async () => {
  const r = await run(ws, ["--agent", "libacp-echo", "--registry", join(ws.dir, "bad-sha.json"), "info"], { bare: true, env: baseEnv });
  assert.equal(r.code, 1);
  assert.match(r.stderr, /sha256 is not the registry's/);
  assert.ok(!existsSync(join(cache, `acp/agents/libacp-echo/2.0.0/${plat}/dist`)), "unpacked anyway");
});

test("a URL registry is cached and serves when the server fails; ACP_REGISTRY names it; an unknown id is a usage error", async () => {
  const url = `${base}/registry.json`;
  const r = await run(ws, ["agents"], { bare: true, env: { ...baseEnv, ACP_REGISTRY: url } });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^sdk-minimal /m);
  served.failRegistry = true;
  const off = await run(ws, ["--registry", url, "agents"], { bare: true, env: baseEnv });
  assert.equal(off.code, 0, off.stderr);
  assert.match(off.stdout, /^libacp-echo /m);
  assert.match(off.stderr, /cannot fetch the registry .*HTTP status 503.*using the copy in/);
  served.failRegistry = false;
  const none = await run(ws, ["--agent", "no-such-agent", ...reg("info")], { bare: true, env: baseEnv });
  assert.equal(none.code, 2);
  assert.match(none.stderr, /no agent 'no-such-agent' in the registry/);
  const nofile = await run(ws, ["--agent", "sdk-minimal", "--registry", join(ws.dir, "missing.json"), "info"], { bare: true, env: baseEnv });
  assert.equal(nofile.code, 1);
  assert.match(nofile.stderr, /cannot read the registry/);
  assert.match(nofile.stderr, /cannot start agent 'sdk-minimal': no such program in PATH, and no registry to look it up in/);
});
