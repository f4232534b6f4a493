// SPDX-License-Identifier: Apache-2.0
// The openai engine's "Always allow" (issue 12): a permission answered allow_always is not asked
// again for that kind of tool in the session (commands here); other kinds and other sessions
// still ask, and allow_once asks every time.
import { test, tempDir, assert, modelServer, openaiAgent, scripted, lastUserText, contentText } from "./lib.mjs";
import { answer, toolCall } from "./fixtures.mjs";

/** A turn in which the model runs `n` commands, one per round, then answers. */
function commands(s, text, n) {
  const seen = [];
  const prev = s.respond;
  s.respond = (body, req) => {
    if (lastUserText(body) !== text) return prev?.(body, req);
    seen.push(body);
    return seen.length <= n ? toolCall("run_command", { command: `echo step-${seen.length}` }, { id: `call_${seen.length}` }) : answer("Done.");
  };
  return seen;
}

const pick = (kind) => (params) => ({ outcome: { outcome: "selected", optionId: params.options.find((o) => o.kind === kind).optionId } });

test("allow_always: later commands of the session run without asking; another session asks again", async (t) => {
  if (scripted(t)) return;
  const dir = tempDir(t);
  const s = await modelServer(t);
  const a = openaiAgent(t, dir, s, { terminal: true, permission: pick("allow_always") });
  await a.init();
  const sid = await a.newSession(dir);
  const seen = commands(s, "Run three steps.", 3);
  const r = await a.prompt(sid, "Run three steps.");
  assert.equal(r.stopReason, "end_turn");
  assert.equal(a.permissions.length, 1, "asked again after allow_always");
  assert.ok(a.permissions[0].options.some((o) => o.kind === "allow_always"), "no allow_always offered");
  const last = seen.at(-1).messages.filter((m) => m.role === "tool").map((m) => contentText(m.content)).join("\n");
  for (const k of [1, 2, 3]) assert.match(last, new RegExp(`step-${k}`), `step ${k} did not run: ${last}`);
  const other = await a.newSession(dir);
  commands(s, "One more.", 1);
  await a.prompt(other, "One more.");
  assert.equal(a.permissions.length, 2, "another session did not ask");
  await a.end();
});

test("allow_once: every command asks", async (t) => {
  if (scripted(t)) return;
  const dir = tempDir(t);
  const s = await modelServer(t);
  const a = openaiAgent(t, dir, s, { terminal: true, permission: pick("allow_once") });
  await a.init();
  const sid = await a.newSession(dir);
  commands(s, "Run two steps.", 2);
  const r = await a.prompt(sid, "Run two steps.");
  assert.equal(r.stopReason, "end_turn");
  assert.equal(a.permissions.length, 2);
  await a.end();
});
