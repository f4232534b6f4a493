// SPDX-License-Identifier: Apache-2.0
// Probes real ACP agents installed from npm (tests/real-agents/package.json) with raw
// newline-delimited JSON-RPC over their stdio, and prints one JSON report on stdout.
//
//   node probe.mjs [--agents opencode,codex,...] [--timeout SECONDS] [--no-prompt]
//                  [--prompt-timeout SECONDS] [--out FILE]
//   node probe.mjs --summarize REPORT.json      (the report as Markdown tables)
//
// For each agent, with HOME (and XDG_*) pointed at a fresh temp dir and no API keys (codex alone
// gets the dummy OPENAI_API_KEY=sk-dummy its env_var auth method names; the *-key variants get a
// dummy key each, see AGENTS):
//   initialize -> session/new (before any authenticate) -> authenticate with every env_var method
//   whose variables are set (then session/new again) -> session/prompt "hello" (bounded, then
//   session/cancel) -> session/list -> session/resume -> session/load -> session/close ->
//   session/delete -> session/list -> a few refusals (unknown id, empty id) -> logout ->
//   session/new. Then, for each agent but the *-key variants, a second agent process is only
//   initialized, as a client with auth.terminal (and _meta["terminal-auth"]), to record the
//   auth methods it offers such a client.
// Every session method is tried whether or not the agent advertises it, and the report says
// which were advertised, so "advertised but fails" and "works unadvertised" both show. Each call
// has a timeout; a call that times out is recorded as such and the probe goes on. Requests the
// agent sends us (fs/*, terminal/*, session/request_permission) are recorded and answered
// (-32601, or "cancelled" for permissions). At the end the agent's whole process group, its
// session and every descendant are killed, and every temp dir is removed.
//
// Nothing here needs an SDK: the point is to see the exact wire shapes.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const here = import.meta.dirname;
const bin = path.join(here, 'node_modules/.bin');

// The agents. `cmd` is run from node_modules/.bin; `env` is added to the clean environment;
// `auth` lists methods to `authenticate` with when a session call is first refused with -32000
// (after the env_var methods, which are tried when their variables are set). The *-key variants give
// a dummy, never a real, key: they show how each agent authenticates and how it then fails.
const AGENTS = {
  opencode: { pkg: 'opencode-ai', cmd: ['opencode', 'acp'] },
  // two codex-acp packages name the same bin: .bin/codex-acp is 2.6.0's, 0.16.0 by its path
  codex: { pkg: '@zed-industries/codex-acp', cmd: ['../@zed-industries/codex-acp/bin/codex-acp.js'], env: { OPENAI_API_KEY: 'sk-dummy' } },
  codex2: { pkg: '@agentclientprotocol/codex-acp', cmd: ['codex-acp'], env: { OPENAI_API_KEY: 'sk-dummy' } },
  copilot: { pkg: '@github/copilot', cmd: ['copilot', '--acp'] },
  pi: { pkg: 'pi-acp', cmd: ['pi-acp'] },
  gemini: { pkg: '@google/gemini-cli', cmd: ['gemini', '--acp'] },
  qwen: { pkg: '@qwen-code/qwen-code', cmd: ['qwen', '--acp'] },
  claude: { pkg: '@agentclientprotocol/claude-agent-acp', cmd: ['claude-agent-acp'] },
  'gemini-key': {
    variant: true, pkg: '@google/gemini-cli', cmd: ['gemini', '--acp'], auth: ['gemini-api-key'],
    env: { GEMINI_API_KEY: 'dummy-gemini-key', GOOGLE_GEMINI_BASE_URL: 'http://127.0.0.1:9' },
  },
  // qwen takes its OpenAI-compatible auth from the environment only with all three variables;
  // the base URLs are a closed loopback port, so a prompt fails here, not on the internet
  'qwen-key': {
    variant: true, pkg: '@qwen-code/qwen-code', cmd: ['qwen', '--acp'], auth: ['openai'],
    env: { OPENAI_API_KEY: 'sk-dummy', OPENAI_MODEL: 'dummy-model', OPENAI_BASE_URL: 'http://127.0.0.1:9/v1' },
  },
  'claude-key': {
    variant: true, pkg: '@agentclientprotocol/claude-agent-acp', cmd: ['claude-agent-acp'],
    env: { ANTHROPIC_API_KEY: 'sk-ant-dummy', ANTHROPIC_BASE_URL: 'http://127.0.0.1:9' },
  },
};

// The client capabilities of the main run, and of the second, initialize-only run that shows
// which auth methods an agent adds for a client that can run terminal logins.
const CLIENT_CAPS = { fs: { readTextFile: true, writeTextFile: true }, terminal: true };
const CLIENT_CAPS_AUTH = { ...CLIENT_CAPS, auth: { terminal: true }, _meta: { 'terminal-auth': true } };
const CLIENT_INFO = { name: 'libacp-real-agents-probe', title: 'libacp real-agent probe', version: '1.0.0' };

function parseArgs(argv) {
  const o = { agents: Object.keys(AGENTS), timeout: 60, prompt: true, promptTimeout: 45, out: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--agents') o.agents = argv[++i].split(',').filter(Boolean);
    else if (a === '--timeout') o.timeout = Number(argv[++i]);
    else if (a === '--no-prompt') o.prompt = false;
    else if (a === '--prompt-timeout') o.promptTimeout = Number(argv[++i]);
    else if (a === '--out') o.out = argv[++i];
    else {
      process.stderr.write(`usage: node probe.mjs [--agents ${Object.keys(AGENTS).join(',')}] [--timeout S] [--no-prompt] [--prompt-timeout S] [--out FILE]\n`);
      process.exit(2);
    }
  }
  for (const a of o.agents) if (!AGENTS[a]) throw new Error(`unknown agent ${a}`);
  return o;
}

const say = (...m) => process.stderr.write(`probe: ${m.join(' ')}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function pkgVersion(pkg) {
  try {
    return JSON.parse(readFileSync(path.join(here, 'node_modules', pkg, 'package.json'), 'utf8')).version;
  } catch {
    return null;
  }
}

// ---- processes -----------------------------------------------------------------------------

function procStat(pid) {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const rest = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return { pid, ppid: +rest[1], pgid: +rest[2], sid: +rest[3] };
  } catch {
    return null;
  }
}

function allProcs() {
  const out = [];
  for (const d of readdirSync('/proc')) if (/^\d+$/.test(d)) {
    const st = procStat(+d);
    if (st) out.push(st);
  }
  return out;
}

function environHas(pid, needle) {
  try {
    return readFileSync(`/proc/${pid}/environ`, 'latin1').includes(needle);
  } catch {
    return false;
  }
}

function cmdline(pid) {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0').join(' ').trim();
  } catch {
    return '';
  }
}

// Every process that belongs to the agent: its session and group (spawned detached, so the
// agent leads a new session), its descendants, and anything whose environment names its temp
// root (children that setsid'd away and were reparented).
function agentProcs(rootPid, marker) {
  const procs = allProcs();
  const set = new Set();
  for (const p of procs) if (p.sid === rootPid || p.pgid === rootPid) set.add(p.pid);
  let grew = true;
  set.add(rootPid);
  while (grew) {
    grew = false;
    for (const p of procs) if (!set.has(p.pid) && set.has(p.ppid)) { set.add(p.pid); grew = true; }
  }
  for (const p of procs) if (!set.has(p.pid) && p.pid !== process.pid && environHas(p.pid, marker)) set.add(p.pid);
  set.delete(process.pid);
  return [...set].filter((pid) => procStat(pid));
}

async function killAll(rootPid, marker) {
  const killed = new Set();
  for (const sig of ['SIGTERM', 'SIGKILL']) {
    const pids = agentProcs(rootPid, marker);
    if (!pids.length) break;
    try { process.kill(-rootPid, sig); } catch {}
    for (const pid of pids) { try { process.kill(pid, sig); killed.add(pid); } catch {} }
    for (let i = 0; i < 20 && agentProcs(rootPid, marker).length; i++) await sleep(100);
  }
  const left = agentProcs(rootPid, marker).map((pid) => ({ pid, cmd: cmdline(pid) }));
  return { killed: killed.size, left };
}

// ---- the connection --------------------------------------------------------------------------

class Conn {
  constructor(child, log) {
    this.child = child;
    this.nextId = 1;
    this.pending = new Map();
    this.updates = [];         // every session/update params, in order
    this.incoming = [];        // requests and other notifications from the agent
    this.badLines = [];
    this.exited = null;
    this.stderr = '';
    this.log = log;
    let buf = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (d) => {
      buf += d;
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i).trim();
        buf = buf.slice(i + 1);
        if (line) this.onLine(line);
      }
    });
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (d) => {
      this.stderr += d;
      if (this.stderr.length > 200000) this.stderr = this.stderr.slice(-100000);
    });
    child.on('exit', (code, signal) => {
      this.exited = { code, signal, at: Date.now() };
      for (const [, p] of this.pending) p.reject(Object.assign(new Error('agent exited'), { exited: this.exited }));
      this.pending.clear();
    });
    child.stdin.on('error', () => {});
  }

  send(obj) {
    if (this.exited || this.child.stdin.destroyed) return;
    this.child.stdin.write(JSON.stringify(obj) + '\n');
  }

  onLine(line) {
    let m;
    try { m = JSON.parse(line); } catch { this.badLines.push(line.slice(0, 500)); return; }
    if (m.method !== undefined && m.id !== undefined) return this.onRequest(m);
    if (m.method !== undefined) {
      if (m.method === 'session/update') this.updates.push({ at: Date.now(), params: m.params });
      else this.incoming.push({ kind: 'notification', method: m.method, params: m.params });
      return;
    }
    const p = this.pending.get(m.id);
    if (!p) { this.incoming.push({ kind: 'stray-response', msg: m }); return; }
    this.pending.delete(m.id);
    p.resolve(m);
  }

  onRequest(m) {
    this.incoming.push({ kind: 'request', method: m.method, params: m.params });
    if (m.method === 'session/request_permission')
      return this.send({ jsonrpc: '2.0', id: m.id, result: { outcome: { outcome: 'cancelled' } } });
    this.send({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: `probe does not serve ${m.method}` } });
  }

  // Resolves with {ok, ms, result | error | timeout | exited}; never rejects.
  async call(method, params, timeoutS) {
    const id = this.nextId++;
    const t0 = Date.now();
    const u0 = this.updates.length;
    let timer;
    const answer = new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      timer = setTimeout(() => { this.pending.delete(id); reject(Object.assign(new Error('timeout'), { timeout: true })); }, timeoutS * 1000);
    });
    this.send({ jsonrpc: '2.0', id, method, params });
    const rec = { method, params };
    try {
      const m = await answer;
      rec.ms = Date.now() - t0;
      if (m.error !== undefined) { rec.ok = false; rec.error = m.error; } else { rec.ok = true; rec.result = m.result; }
    } catch (e) {
      rec.ms = Date.now() - t0;
      rec.ok = false;
      if (e.timeout) rec.timeout = `no answer in ${timeoutS} s`;
      else rec.exited = e.exited ?? this.exited;
    } finally {
      clearTimeout(timer);
    }
    const ups = this.updates.slice(u0);
    if (ups.length) rec.updates = summarizeUpdates(ups, t0);
    this.log(`${method} -> ${rec.ok ? 'ok' : rec.error ? `error ${rec.error.code} ${rec.error.message}` : rec.timeout ?? 'agent exited'} (${rec.ms} ms)`);
    return rec;
  }
}

// Counts session/update kinds, keeps the first of each kind (truncated) as a sample.
// firstMs/lastMs: when the first and last arrived, from the call's start.
function summarizeUpdates(ups, t0) {
  const counts = {};
  const samples = {};
  for (const u of ups) {
    const k = u.params?.update?.sessionUpdate ?? '(no sessionUpdate)';
    counts[k] = (counts[k] ?? 0) + 1;
    if (!samples[k]) samples[k] = truncate(u.params, 1500);
  }
  return { count: ups.length, firstMs: ups[0].at - t0, lastMs: ups.at(-1).at - t0, kinds: counts, samples };
}

function truncate(v, max) {
  const s = JSON.stringify(v);
  if (s === undefined || s.length <= max) return v;
  return { truncated: true, chars: s.length, head: s.slice(0, max) };
}

// ---- auth --------------------------------------------------------------------------------------

// The variable names an env_var auth method asks for, whatever field carries them: the
// unstable schema's `vars: [{name, ...}]`, a plain `vars: ["NAME"]`, or an older `varName`.
function envVarNames(m) {
  const names = [];
  if (Array.isArray(m.vars)) for (const v of m.vars) names.push(typeof v === 'string' ? v : v?.name);
  if (typeof m.varName === 'string') names.push(m.varName);
  if (typeof m.var === 'string') names.push(m.var);
  return names.filter(Boolean);
}

function isOptionalVar(m, name) {
  return Array.isArray(m.vars) && m.vars.some((v) => v && typeof v === 'object' && v.name === name && v.optional === true);
}

// Field-by-field shape of every auth method: which keys it has and their JSON types.
function authShape(m) {
  const shape = {};
  for (const [k, v] of Object.entries(m ?? {})) shape[k] = Array.isArray(v) ? 'array' : v === null ? 'null' : typeof v;
  return shape;
}

// ---- one agent -------------------------------------------------------------------------------

// Spawns the agent in its own session and group, with a clean environment and a fresh HOME under
// `dir`. stop() closes stdin, waits up to 2 s for the agent to exit, then kills everything of it.
function startAgent(name, dir, log) {
  const a = AGENTS[name];
  const home = path.join(dir, 'home');
  const cwd = path.join(dir, 'work');
  const env = {
    PATH: `${path.dirname(process.execPath)}:${bin}:/usr/local/bin:/usr/bin:/bin`,
    HOME: home,
    USER: process.env.USER ?? 'probe',
    LANG: 'C.UTF-8',
    TERM: 'dumb',
    NO_COLOR: '1',
    XDG_CONFIG_HOME: path.join(home, '.config'),
    XDG_DATA_HOME: path.join(home, '.local/share'),
    XDG_STATE_HOME: path.join(home, '.local/state'),
    XDG_CACHE_HOME: path.join(home, '.cache'),
    TMPDIR: path.join(dir, 'tmp'),
    ACP_REAL_PROBE: dir, // the marker the sweeps look for in /proc/*/environ
    ...(a.env ?? {}),
  };
  for (const d of [home, cwd, env.TMPDIR]) mkdirSync(d, { recursive: true });
  const child = spawn(path.join(bin, a.cmd[0]), a.cmd.slice(1), { cwd, env, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
  const spawnError = new Promise((r) => child.on('error', (e) => r(String(e))));
  const conn = new Conn(child, log);
  const stop = async () => {
    const out = {};
    try { child.stdin.end(); } catch {}
    for (let i = 0; i < 20 && !conn.exited; i++) await sleep(100);
    out.exitAfterEOF = conn.exited ? { code: conn.exited.code, signal: conn.exited.signal } : 'still running 2 s after EOF';
    if (child.pid) out.cleanup = await killAll(child.pid, dir);
    return out;
  };
  return { child, conn, env, cwd, spawnError, stop };
}

async function initialize(ag, caps, timeout) {
  return Promise.race([
    ag.conn.call('initialize', { protocolVersion: 1, clientCapabilities: caps, clientInfo: CLIENT_INFO }, timeout),
    ag.spawnError.then((e) => ({ method: 'initialize', ok: false, spawnError: e })),
  ]);
}

async function probeAgent(name, root, opts) {
  const a = AGENTS[name];
  const dir = path.join(root, name);
  const log = (m) => say(`${name}: ${m}`);
  const rep = {
    agent: name,
    package: a.pkg,
    version: pkgVersion(a.pkg),
    command: a.cmd.join(' '),
    env_given: a.env ?? {},
    calls: [],
  };
  const t0 = Date.now();
  const ag = startAgent(name, dir, log);
  const { conn, env, cwd } = ag;
  const T = opts.timeout;
  const call = async (method, params, timeout = T, label) => {
    const r = await conn.call(method, params, timeout);
    if (label) r.label = label;
    rep.calls.push(r);
    return r;
  };

  try {
    const first = await initialize(ag, CLIENT_CAPS, T);
    rep.calls.push(first);
    rep.startup_ms = Date.now() - t0;
    if (first.spawnError) { rep.spawnError = first.spawnError; return rep; }
    if (!first.ok) return rep;
    const init = first.result ?? {};
    rep.initialize = init;
    const caps = init.agentCapabilities ?? {};
    const sc = caps.sessionCapabilities ?? {};
    rep.advertised = {
      loadSession: caps.loadSession === true,
      list: sc.list != null,
      resume: sc.resume != null,
      close: sc.close != null,
      delete: sc.delete != null,
      fork: sc.fork != null,
      additionalDirectories: sc.additionalDirectories != null,
      logout: caps.auth?.logout != null,
    };
    rep.authMethods = (init.authMethods ?? []).map((m) => ({
      shape: authShape(m),
      type: m.type ?? '(absent: agent-handled)',
      envVars: envVarNames(m),
      method: m,
    }));

    // authenticate: every env_var method whose (non-optional) variables are set, then the
    // variant's listed methods; done the first time a call is refused with -32000, and that
    // call is then retried once (what a client that authenticates on demand would do)
    rep.authenticate = [];
    const candidates = [];
    for (const m of init.authMethods ?? []) {
      if (m.type !== 'env_var') continue;
      const names = envVarNames(m);
      const missing = names.filter((v) => !env[v] && !isOptionalVar(m, v));
      if (names.length && !missing.length) candidates.push(m.id);
      else rep.authenticate.push({ methodId: m.id, skipped: names.length ? `unset: ${missing.join(', ')}` : 'no variable names found in the method' });
    }
    for (const id of a.auth ?? []) if (!candidates.includes(id)) candidates.push(id);
    let authed = null; // null: not tried; true/false: the outcome
    const tryAuth = async () => {
      authed = false;
      for (const id of candidates) {
        const r = await call('authenticate', { methodId: id }, T);
        rep.authenticate.push({ methodId: id, ok: r.ok, error: r.error, ms: r.ms, listed: (a.auth ?? []).includes(id) || undefined });
        if (r.ok) { authed = true; break; }
      }
    };
    const callA = async (method, params, timeout, label) => {
      const r = await call(method, params, timeout, label);
      if (r.ok || r.error?.code !== -32000 || authed !== null || !candidates.length) return r;
      await tryAuth();
      return authed ? call(method, params, timeout, `${label ?? method} after authenticate`) : r;
    };

    const newParams = { cwd, mcpServers: [] };
    const nw = await callA('session/new', newParams, T, 'session/new');

    const sid = nw.ok ? nw.result?.sessionId : null;
    rep.sessionId = sid;
    if (sid) {
      if (opts.prompt) {
        const p = call('session/prompt', { sessionId: sid, prompt: [{ type: 'text', text: 'Say hello in one word.' }] }, opts.promptTimeout + 15);
        // cancel after promptTimeout if still running, then give it 15 s to answer "cancelled"
        let done = false;
        p.then(() => { done = true; });
        const until = Date.now() + opts.promptTimeout * 1000;
        while (!done && Date.now() < until && !conn.exited) await sleep(200);
        if (!done && !conn.exited) {
          log('session/prompt still running: session/cancel');
          conn.send({ jsonrpc: '2.0', method: 'session/cancel', params: { sessionId: sid } });
          rep.promptCancelledAfterS = opts.promptTimeout;
        }
        await p;
      }
      await callA('session/list', {}, T, 'session/list');
      await callA('session/list', { cwd }, T, 'session/list with cwd filter');
      await callA('session/resume', { sessionId: sid, cwd, mcpServers: [] }, T, 'session/resume');
      await callA('session/load', { sessionId: sid, cwd, mcpServers: [] }, T, 'session/load');
      await callA('session/close', { sessionId: sid }, T, 'session/close');
      await callA('session/close', { sessionId: sid }, T, 'session/close again (not open)');
      await callA('session/delete', { sessionId: sid }, T, 'session/delete');
      await callA('session/list', {}, T, 'session/list after delete');
      await callA('session/load', { sessionId: sid, cwd, mcpServers: [] }, T, 'session/load of the deleted session');
    } else {
      await callA('session/list', {}, T, 'session/list without a session');
    }
    // refusals
    const unknown = 'acp-probe-no-such-session';
    await callA('session/load', { sessionId: unknown, cwd, mcpServers: [] }, T, 'session/load unknown id');
    await callA('session/resume', { sessionId: unknown, cwd, mcpServers: [] }, T, 'session/resume unknown id');
    await callA('session/close', { sessionId: unknown }, T, 'session/close unknown id');
    await callA('session/delete', { sessionId: unknown }, T, 'session/delete unknown id');
    await callA('session/resume', { sessionId: '', cwd, mcpServers: [] }, T, 'session/resume empty id');
    await callA('session/load', { sessionId: '', cwd, mcpServers: [] }, T, 'session/load empty id');
    // logout (agentCapabilities.auth.logout), then whether session/new needs authenticate again
    const lo = await call('logout', {}, T, rep.advertised.logout ? 'logout' : 'logout (not advertised)');
    if (lo.ok) await call('session/new', newParams, T, 'session/new after logout');
  } finally {
    rep.total_ms = Date.now() - t0;
    rep.slow_calls = rep.calls.filter((c) => c.ms >= 3000).map((c) => ({ call: c.label ?? c.method, ms: c.ms }));
    rep.incoming = conn.incoming.map((m) => truncate(m, 1500));
    if (conn.badLines.length) rep.nonJsonStdout = conn.badLines.slice(0, 10);
    rep.unsolicitedUpdates = conn.updates.length - rep.calls.reduce((n, c) => n + (c.updates?.count ?? 0), 0);
    Object.assign(rep, await ag.stop());
    rep.stderr_tail = conn.stderr.slice(-4000);
  }

  // a second agent, initialize only, as a client that can run terminal logins
  if (!a.variant) {
    const ag2 = startAgent(name, path.join(root, `${name}-auth-terminal`), (m) => say(`${name} (auth.terminal): ${m}`));
    try {
      const r = await initialize(ag2, CLIENT_CAPS_AUTH, T);
      rep.withAuthTerminal = {
        clientCapabilities: CLIENT_CAPS_AUTH,
        ok: r.ok,
        ms: r.ms,
        authMethods: r.result?.authMethods,
        agentCapabilitiesChanged: r.ok ? JSON.stringify(r.result.agentCapabilities) !== JSON.stringify(rep.initialize?.agentCapabilities) : undefined,
        error: r.error ?? r.spawnError ?? r.timeout,
      };
    } finally {
      rep.withAuthTerminal = { ...(rep.withAuthTerminal ?? {}), ...(await ag2.stop()) };
    }
  }
  return rep;
}

// ---- the Markdown summary (node probe.mjs --summarize REPORT.json) --------------------------------

const ADV = { logout: 'logout', 'session/list': 'list', 'session/resume': 'resume', 'session/close': 'close', 'session/delete': 'delete', 'session/load': 'loadSession' };

function cell(v, max = 160) {
  if (v === undefined) return '';
  let s = typeof v === 'string' ? v : JSON.stringify(v);
  if (s.length > max) s = s.slice(0, max - 1) + '…';
  return s.replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

function outcome(c) {
  if (c.ok) {
    const r = c.result ?? {};
    if (c.method === 'session/new') return `ok, ${cell(r.sessionId)}`;
    if (c.method === 'session/list') return `ok, ${r.sessions?.length ?? '?'} sessions`;
    if (c.method === 'session/prompt') return `ok, stopReason ${cell(r.stopReason)}`;
    if (c.method === 'session/resume' || c.method === 'session/load')
      return r.sessionId && c.params?.sessionId !== r.sessionId ? `ok, **new id** ${cell(r.sessionId)}` : 'ok';
    return `ok ${cell(r, 60)}`;
  }
  if (c.error) return `**${c.error.code}** ${cell(c.error.message, 90)}`;
  if (c.timeout) return c.timeout;
  if (c.spawnError) return `spawn: ${c.spawnError}`;
  return `agent exited ${cell(c.exited)}`;
}

function summarize(file) {
  const R = JSON.parse(readFileSync(file, 'utf8'));
  const out = [];
  out.push(`Probe of ${R.date}, ${R.node}, call timeout ${R.timeoutS} s${R.prompt ? `, prompt cancelled after ${R.prompt.timeoutS} s` : ''}.`, '');
  out.push('| agent | version | startup | advertised | auth methods (id: type) |', '|---|---|---|---|---|');
  for (const r of R.agents) {
    const adv = Object.entries(r.advertised ?? {}).filter(([, v]) => v).map(([k]) => k).join(', ');
    const am = (r.authMethods ?? []).map((m) => `${m.method.id}: ${m.method.type ?? (m.method._meta?.type ? `_meta.type ${m.method._meta.type}` : '–')}`).join('; ');
    out.push(`| ${r.agent} | ${r.version} | ${r.startup_ms ?? '?'} ms | ${adv} | ${am} |`);
  }
  for (const r of R.agents) {
    out.push('', `### ${r.agent} (${r.command}${Object.keys(r.env_given ?? {}).length ? `; env ${Object.keys(r.env_given).join(', ')}` : ''})`, '');
    if (r.probeError || r.spawnError) { out.push('probe failed: ' + cell(r.probeError ?? r.spawnError, 400)); continue; }
    out.push('| call | advertised | outcome | error.data | ms | updates |', '|---|---|---|---|---|---|');
    for (const c of r.calls) {
      if (c.method === 'initialize') continue;
      const adv = ADV[c.method] ? (r.advertised?.[ADV[c.method]] ? 'yes' : 'no') : '';
      const ups = c.updates ? Object.entries(c.updates.kinds).map(([k, n]) => `${k}×${n}`).join(' ') : '';
      out.push(`| ${cell(c.label ?? c.method)} | ${adv} | ${outcome(c)} | ${cell(c.error?.data, 200)} | ${c.ms} | ${ups} |`);
    }
    const wt = r.withAuthTerminal;
    if (wt?.authMethods && JSON.stringify(wt.authMethods) !== JSON.stringify(r.initialize?.authMethods))
      out.push('', `With \`auth.terminal\`: ${cell(wt.authMethods, 2000)}`);
    out.push('', `After EOF: ${cell(r.exitAfterEOF)}; killed ${r.cleanup?.killed ?? 0}, left ${cell(r.cleanup?.left ?? [])}.`);
  }
  if (R.strays?.length) out.push('', `**Strays killed by the final sweep:** ${cell(R.strays, 1000)}`);
  return out.join('\n') + '\n';
}

// ---- main --------------------------------------------------------------------------------------

if (process.argv[2] === '--summarize') {
  process.stdout.write(summarize(process.argv[3]));
  process.exit(0);
}
const opts = parseArgs(process.argv.slice(2));
const root = mkdtempSync(path.join(tmpdir(), 'acp-real-agents-'));
const report = {
  probe: 'tests/real-agents/probe.mjs',
  date: new Date().toISOString(),
  node: process.version,
  timeoutS: opts.timeout,
  prompt: opts.prompt ? { timeoutS: opts.promptTimeout } : false,
  agents: [],
};
let interrupted = false;
const onSignal = (sig) => {
  interrupted = true;
  say(`${sig}: cleaning up`);
  for (const pid of allProcs().filter((p) => environHas(p.pid, root)).map((p) => p.pid)) try { process.kill(pid, 'SIGKILL'); } catch {}
  rmSync(root, { recursive: true, force: true });
  process.exit(130);
};
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);
try {
  for (const name of opts.agents) {
    if (interrupted) break;
    say(`${name}: starting`);
    try {
      report.agents.push(await probeAgent(name, root, opts));
    } catch (e) {
      report.agents.push({ agent: name, probeError: String(e?.stack ?? e) });
    }
  }
} finally {
  // the final sweep: nothing started here may outlive the probe
  const strays = allProcs().filter((p) => p.pid !== process.pid && environHas(p.pid, root));
  for (const p of strays) try { process.kill(p.pid, 'SIGKILL'); } catch {}
  report.strays = strays.map((p) => ({ pid: p.pid, cmd: cmdline(p.pid) }));
  rmSync(root, { recursive: true, force: true });
}
const text = JSON.stringify(report, null, 2) + '\n';
if (opts.out) writeFileSync(opts.out, text);
process.stdout.write(text);
