// SPDX-License-Identifier: Apache-2.0
// Harness for the `openai` engine's tests (issue 12): acp-agent --engine openai driven by the
// official TypeScript SDK (tests/interop-agent/lib.mjs's sdkAgent: schema, capability and turn-order
// checks on every message, exit status and leaks checked at the end) against the scripted model
// server (fake-openai.mjs), one per test, on 127.0.0.1 with an ephemeral port.
//
// Live mode (make test-live): with ACP_LIVE_BASE_URL set (and ACP_LIVE_MODEL, optionally
// ACP_LIVE_API_KEY), the same server runs as a recording proxy in front of the real one, so what the
// model was sent and when the engine hung up are still observed; tests that need a scripted reply
// call scripted(t) and are skipped.

import assert from "node:assert/strict";
import { join } from "node:path";
import { writeFileSync } from "node:fs";
import { test, tempDir, makeDir, sdkAgent, rawAgent, textOf, storeBytes, SOURCE } from "../interop-agent/lib.mjs";
import { startFakeOpenAI, closedPort, lastUserText, contentText } from "./fake-openai.mjs";

export { test, tempDir, makeDir, sdkAgent, rawAgent, textOf, storeBytes, SOURCE, startFakeOpenAI, closedPort, lastUserText, contentText };

export const LIVE = process.env.ACP_LIVE_BASE_URL ?? null;
export const MODEL = LIVE ? (process.env.ACP_LIVE_MODEL ?? "") : "m";

/** Skips a test that needs scripted replies when the suite runs against a real server. */
export function scripted(t) {
  if (LIVE) {
    t.skip("needs the scripted server's replies (live run)");
    return true;
  }
  return false;
}

/** A scripted server for this test (a recording proxy in live mode), closed after it. */
export async function modelServer(t, opts = {}) {
  const s = await startFakeOpenAI({ ...opts, upstream: LIVE ?? undefined });
  t.after(() => s.close());
  return s;
}

// Whatever a test is about, every request the engine made must be JSON a server can parse. Checked
// in an after hook registered behind the agent's own (which kills it if the test failed first): a
// hook that throws skips the hooks after it.
function checkRequests(t, s) {
  if (s.checked) return;
  s.checked = true;
  t.after(() => {
    const bad = (s.requests ?? []).filter((r) => r.invalidJson || (r.method === "POST" && r.raw && r.body === null));
    assert.deepEqual(bad.map((r) => JSON.stringify(r.raw.slice(0, 300))), [], "the engine sent a request body that is not valid JSON");
  });
}

/**
 * acp-agent --engine openai against `server` (or baseUrl), with a fresh SQLite store in `dir`.
 * opts: everything sdkAgent takes (fs, terminal, permission, clientCapabilities, env), plus
 * args (extra acp-agent arguments), apiKey (put in the environment as ACP_TEST_OPENAI_KEY and named
 * by --api-key-env), model.
 */
export function openaiAgent(t, dir, server, opts = {}) {
  const base = opts.baseUrl ?? server.url;
  const env = { ...(opts.env ?? {}) };
  const args = ["--engine", "openai", "--base-url", base, "--model", opts.model ?? MODEL];
  const key = opts.apiKey ?? (LIVE ? process.env.ACP_LIVE_API_KEY : undefined);
  if (key) {
    env.ACP_TEST_OPENAI_KEY = key;
    args.push("--api-key-env", "ACP_TEST_OPENAI_KEY");
  }
  const a = sdkAgent(t, { ...opts, store: opts.store ?? join(dir, "sessions.db"), args: [...args, ...(opts.args ?? [])], env });
  if (server) checkRequests(t, server);
  return a;
}

/** A prompt turn that may end in a JSON-RPC error: {stopReason, updates, error}. */
export async function promptOutcome(a, sid, text) {
  const before = a.updates(sid).length;
  try {
    const r = await a.prompt(sid, text);
    return { stopReason: r.stopReason, updates: r.updates, error: null };
  } catch (e) {
    if (!Number.isInteger(e?.code)) throw e;
    return { stopReason: null, updates: a.updates(sid).slice(before), error: e };
  }
}

/** What the user was told about a failure: the turn's agent text and the error's message. */
export const toldUser = (o) => `${textOf(o.updates)}\n${o.error?.message ?? ""}\n${JSON.stringify(o.error?.data ?? "")}`;

/** The chat requests (POST chat/completions) of a conversation turn: those whose last user message is `text`. */
export const turnRequests = (server, text) => server.chats().filter((r) => lastUserText(r.body) === text);

/** The tool in a request's `tools` whose name matches re and (optionally) whose parameters have these properties. */
export function findTool(body, re, props = []) {
  const tools = Array.isArray(body?.tools) ? body.tools : [];
  return tools.find((x) => re.test(x?.function?.name ?? "") && props.every((p) => x.function.parameters?.properties?.[p] !== undefined));
}

/** Names of the tools offered in a request. */
export const toolNames = (body) => (Array.isArray(body?.tools) ? body.tools.map((x) => x?.function?.name) : []);

/** server-everything over stdio, as an ACP mcpServers entry. */
export const everything = (name = "everything", env = []) => ({
  name,
  command: process.execPath,
  args: [join(SOURCE, "node_modules/@modelcontextprotocol/server-everything/dist/index.js"), "stdio"],
  env,
});

/** The tool_call and tool_call_update updates of a turn, merged per toolCallId (last status wins). */
export function toolCallsOf(updates) {
  const m = new Map();
  for (const u of updates) {
    if (u.sessionUpdate !== "tool_call" && u.sessionUpdate !== "tool_call_update") continue;
    const prev = m.get(u.toolCallId) ?? { toolCallId: u.toolCallId, updates: [] };
    prev.updates.push(u);
    for (const k of ["title", "kind", "status", "locations", "rawInput", "rawOutput", "content"]) if (u[k] !== undefined) prev[k] = u[k];
    if (u.sessionUpdate === "tool_call") prev.announced = true;
    m.set(u.toolCallId, prev);
  }
  return [...m.values()];
}

/** The messages of a chat request, in a short readable form for assertion messages. */
export const brief = (body) => JSON.stringify((body?.messages ?? []).map((m) => ({ role: m.role, content: contentText(m.content).slice(0, 80), tool_calls: m.tool_calls?.length, tool_call_id: m.tool_call_id }))).slice(0, 2000);

/** Writes a file and returns its path. */
export function file(dir, name, text) {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
}

export { assert };
