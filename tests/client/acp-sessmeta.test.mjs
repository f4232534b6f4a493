// SPDX-License-Identifier: Apache-2.0
// `acp` and the unstable session metadata (issue 22 items 2-5, 8, and acp info): title, archive,
// unarchive, status, sessions --archived [include|only] and --system-prompt FILE against acp-agent
// (a real store, so each command is a fresh agent process) and against an SDK 2.4.0 agent that
// implements the methods (tests/client/ts-agent-sessmeta.mjs); the same SDK agent without the
// capabilities shows nothing is sent that it did not advertise (exit status 3). acp info shows every
// capability the agent advertises, known or not (unknown members, providers, _meta).
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { workspace, nodeAgent, run as runIn, lines, texts } from "./acp-helpers.mjs";

const ws = workspace();
after(() => ws.done());
const run = (args, opts) => runIn(ws, args, opts);
const sdk = nodeAgent("ts-agent-sessmeta.mjs");
const ok = (r, what) => assert.equal(r.code, 0, `${what}: ${r.stderr}`);
const idsOf = (r) => lines(r.stdout).at(-1).sessions.map((s) => s.sessionId);

test("title, archive, unarchive, status and sessions --archived against acp-agent", async () => {
  const a = (await run(["new"])).stdout.trim();
  const b = (await run(["new"])).stdout.trim();
  const t = await run(["title", a, "  Fix", "the\tparser  "]);
  ok(t, "title");
  assert.equal(t.stdout, "Fix the parser\n");
  const tj = await run(["--json", "title", b, "Other"]);
  ok(tj, "title --json");
  assert.deepEqual(lines(tj.stdout).at(-1), { title: "Other", sessionId: b });
  const ls = await run(["sessions"]);
  assert.match(ls.stdout, new RegExp(`^${a} .* Fix the parser `, "m"));
  const st = await run(["status", a]);
  ok(st, "status");
  assert.equal(st.stdout, "saved\n");
  assert.deepEqual(lines((await run(["--json", "status", a])).stdout).at(-1), { status: "saved", sessionId: a });

  const ar = await run(["archive", a]);
  ok(ar, "archive");
  assert.equal(ar.stdout, `archived ${a}\n`);
  ok(await run(["archive", a]), "archive again");
  assert.deepEqual(idsOf(await run(["--json", "sessions"])), [b]);
  assert.deepEqual(idsOf(await run(["--json", "sessions", "--archived"])), [a]);
  assert.deepEqual(idsOf(await run(["--json", "sessions", "--archived", "only"])), [a]);
  assert.deepEqual(idsOf(await run(["--json", "sessions", "--archived=only"])), [a]);
  assert.deepEqual(new Set(idsOf(await run(["--json", "sessions", "--archived", "include"]))), new Set([a, b]));
  const inc = await run(["sessions", "--archived", "include"]);
  assert.match(inc.stdout, /ARCHIVED/);
  assert.match(inc.stdout, new RegExp(`^${a} .* yes +Fix the parser`, "m"));
  assert.match(inc.stdout, new RegExp(`^${b} .* no +Other`, "m"));
  const un = await run(["unarchive", a]);
  ok(un, "unarchive");
  assert.equal(un.stdout, `unarchived ${a}\n`);
  assert.deepEqual(new Set(idsOf(await run(["--json", "sessions"]))), new Set([a, b]));
  assert.match((await run(["sessions", "--archived"])).stdout, /^no archived sessions/m);

  // bad input: the agent's refusals exit 1, usage errors 2
  const empty = await run(["title", a, "   "]);
  assert.equal(empty.code, 1);
  assert.match(empty.stderr, /-32602/);
  for (const args of [["status", "sess_nope"], ["archive", "sess_nope"], ["unarchive", "sess_nope"], ["title", "sess_nope", "x"]]) {
    const r = await run(args);
    assert.equal(r.code, 1, args.join(" "));
    assert.match(r.stderr, /-32002/);
  }
  const je = await run(["--json", "status", "sess_nope"]);
  assert.equal(lines(je.stdout).at(-1).error.code, -32002);
  for (const args of [["title", a], ["sessions", "--archived", "bogus"], ["sessions", "--archived=all"], ["status"], ["archive", a, b]])
    assert.equal((await run(args)).code, 2, args.join(" "));
});

test("--system-prompt FILE reaches acp-agent's engine and is stored with the session", async () => {
  const f = join(ws.dir, "prompt.txt");
  writeFileSync(f, "Be brief.\nAnswer in French.\n");
  const p = await run(["--json", "--system-prompt", f, "prompt", "/system"]);
  ok(p, "prompt");
  assert.equal(texts(lines(p.stdout)), "system prompt (append): Be brief.\nAnswer in French.\n");
  const id = (await run(["--system-prompt", f, "new"])).stdout.trim();
  // a later process: the stored one, without --system-prompt
  const again = await run(["--json", "prompt", "-s", id, "/system"]);
  ok(again, "prompt -s");
  assert.equal(texts(lines(again.stdout)), "system prompt (append): Be brief.\nAnswer in French.\n");
  assert.equal((await run(["--system-prompt", join(ws.dir, "missing"), "new"])).code, 2);
  writeFileSync(join(ws.dir, "empty.txt"), "");
  assert.equal((await run(["--system-prompt", join(ws.dir, "empty.txt"), "new"])).code, 2);
  assert.equal((await run(["--system-prompt", f, "status", id])).code, 2, "status takes no session options");
});

test("acp info shows every capability advertised, known or not; --json keeps them all", async () => {
  const t = await run(["info"], { agentCmd: sdk });
  ok(t, "info");
  for (const re of [
    /sessionCapabilities\.title +yes/,
    /sessionCapabilities\.archive +yes/,
    /sessionCapabilities\.status +yes/,
    /sessionCapabilities\.systemPrompt\.mode\.override +yes/,
    /sessionCapabilities\.futureThing\.depth\.level +2/,
    /^ {2}providers +yes$/m,
    /^ {2}_meta +\{"vendor\.dev\/beta":\{"flags":\["x"\]\}\}$/m,
    /sessionCapabilities\.resume +no/,
  ])
    assert.match(t.stdout, re);
  const j = lines((await run(["--json", "info"], { agentCmd: sdk })).stdout).at(-1);
  assert.deepEqual(j.agentCapabilities.sessionCapabilities.futureThing, { depth: { level: 2 } });
  assert.deepEqual(j.agentCapabilities.providers, {});
  assert.deepEqual(j.agentCapabilities._meta, { "vendor.dev/beta": { flags: ["x"] } });
  // acp-agent: its unstable capabilities too
  const own = await run(["info"]);
  for (const k of ["title", "archive", "status", "systemPrompt"]) assert.match(own.stdout, new RegExp(`sessionCapabilities\\.${k} +yes`));
});

test("an SDK agent: --system-prompt sent on session/new as the schema has it", async () => {
  const f = join(ws.dir, "sp.txt");
  writeFileSync(f, "Use tabs.");
  const rec = join(ws.dir, "rec1.jsonl");
  const p = await run(["--system-prompt", f, "prompt", "hi"], { agentCmd: sdk, env: { ACP_RECORD: rec } });
  ok(p, "prompt");
  assert.match(p.stdout, /systemPrompt=\{"mode":"append","content":\[\{"(type|text)"/);
  const sent = readFileSync(rec, "utf8").trim().split("\n").map((l) => JSON.parse(l));
  assert.deepEqual(sent.find((m) => m.method === "session/new").params.systemPrompt, { mode: "append", content: [{ type: "text", text: "Use tabs." }] });
  assert.deepEqual(sent.filter((m) => m.method === "violation"), [], "messages that break schema.unstable.json");
  // override, which this agent advertises and acp-agent's echo engine does not
  const rec2 = join(ws.dir, "rec1b.jsonl");
  ok(await run(["--system-prompt", f, "--system-prompt-mode", "override", "new"], { agentCmd: sdk, env: { ACP_RECORD: rec2 } }), "override");
  const sent2 = readFileSync(rec2, "utf8").trim().split("\n").map((l) => JSON.parse(l));
  assert.equal(sent2.find((m) => m.method === "session/new").params.systemPrompt.mode, "override");
  const refused = await run(["--system-prompt", f, "--system-prompt-mode", "override", "new"]);
  assert.equal(refused.code, 3, refused.stderr);
  assert.match(refused.stderr, /sessionCapabilities\.systemPrompt\.mode\.override/);
  assert.equal((await run(["--system-prompt-mode", "override", "new"])).code, 2, "a mode without a prompt");
  assert.equal((await run(["--system-prompt", f, "--system-prompt-mode", "replace", "new"])).code, 2);
});

test("an SDK agent that does not advertise them: refused here (exit 3), nothing sent", async () => {
  const rec = join(ws.dir, "rec2.jsonl");
  const env = { ACP_SESSMETA_BARE: "1", ACP_RECORD: rec };
  const f = join(ws.dir, "sp2.txt");
  writeFileSync(f, "x");
  for (const [args, cap] of [
    [["title", "sm-1", "x"], "sessionCapabilities.title"],
    [["archive", "sm-1"], "sessionCapabilities.archive"],
    [["unarchive", "sm-1"], "sessionCapabilities.archive"],
    [["status", "sm-1"], "sessionCapabilities.status"],
    [["sessions", "--archived"], "sessionCapabilities.archive"],
    [["--system-prompt", f, "new"], "sessionCapabilities.systemPrompt"],
  ]) {
    const r = await run(args, { agentCmd: sdk, env });
    assert.equal(r.code, 3, `${args.join(" ")}: ${r.stderr}`);
    assert.ok(r.stderr.includes(cap), `${args.join(" ")}: ${r.stderr}`);
  }
  ok(await run(["sessions"], { agentCmd: sdk, env }), "sessions without the filter");
  const methods = readFileSync(rec, "utf8").trim().split("\n").map((l) => JSON.parse(l));
  const sent = new Set(methods.map((m) => m.method));
  for (const m of ["session/set_title", "session/archive", "session/unarchive", "session/status", "session/new"]) assert.ok(!sent.has(m), `${m} was sent`);
  assert.ok(methods.filter((m) => m.method === "session/list").every((m) => !("archived" in (m.params ?? {}))), "archived sent");
});
