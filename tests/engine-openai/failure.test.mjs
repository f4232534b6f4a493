// SPDX-License-Identifier: Apache-2.0
// The openai engine when the model server fails (issue 12): unreachable, HTTP errors, 429 with
// Retry-After, a stream cut mid-way, and cancel mid-stream. The user is told in words (an agent
// message, or the prompt's error), the turn ends, the agent stays usable; a cancel aborts the HTTP
// request (the server sees the socket close) and the prompt answers `cancelled`.
import {
  test, tempDir, assert, modelServer, openaiAgent, scripted, textOf, closedPort, promptOutcome, toldUser, turnRequests, LIVE,
} from "./lib.mjs";
import { answer, httpError, rateLimited, cutStream, slowStream } from "./fixtures.mjs";

const ENDED = [null, "end_turn", "refusal"]; // null: the prompt answered with a JSON-RPC error

test("server down (connection refused): the user is told, the turn ends, the next prompt works once it is up", async (t) => {
  const dir = tempDir(t);
  const port = await closedPort();
  const a = openaiAgent(t, dir, null, { baseUrl: `http://127.0.0.1:${port}/v1` });
  await a.init();
  const sid = await a.newSession(dir);
  const o = await promptOutcome(a, sid, "Anyone there?");
  assert.ok(ENDED.includes(o.stopReason), `stopReason ${o.stopReason}`);
  assert.match(toldUser(o), new RegExp(`connect|refused|unreachable|reach|${port}`, "i"), `the user was not told the server is down: ${toldUser(o)}`);
  await a.end();
});

test("HTTP 500: the server's error message reaches the user, the turn ends", async (t) => {
  if (scripted(t)) return;
  const dir = tempDir(t);
  const s = await modelServer(t);
  s.repeat = true; // every retry gets the same 500
  s.on("Break.", httpError(500, "model crashed: CUDA out of memory (marker 5e1)"));
  const a = openaiAgent(t, dir, s);
  await a.init();
  const sid = await a.newSession(dir);
  const o = await promptOutcome(a, sid, "Break.");
  assert.ok(ENDED.includes(o.stopReason), `stopReason ${o.stopReason}`);
  assert.match(toldUser(o), /500|CUDA out of memory/, `the user was not told: ${toldUser(o)}`);
  // the agent goes on
  s.on("Again.", answer("Back."));
  const r = await a.prompt(sid, "Again.");
  assert.equal(r.stopReason, "end_turn");
  assert.equal(textOf(r.updates), "Back.");
  await a.end();
});

test("HTTP 401 (a bad key): said once, not retried", async (t) => {
  if (scripted(t)) return;
  const dir = tempDir(t);
  const s = await modelServer(t);
  s.repeat = true;
  s.on("Auth?", httpError(401, "Incorrect API key provided: sk-wro**********ng."));
  const a = openaiAgent(t, dir, s, { apiKey: "sk-wrong" });
  await a.init();
  const sid = await a.newSession(dir);
  const o = await promptOutcome(a, sid, "Auth?");
  assert.ok(ENDED.includes(o.stopReason));
  assert.match(toldUser(o), /401|API key|unauthori[sz]ed/i);
  assert.equal(turnRequests(s, "Auth?").length, 1, "a 401 was retried");
  await a.end();
});

test("429 with Retry-After, then success: retried after the server's delay, the user gets the answer", async (t) => {
  if (scripted(t)) return;
  const dir = tempDir(t);
  const s = await modelServer(t);
  s.on("Busy?", rateLimited(1), answer("Now I can answer."));
  const a = openaiAgent(t, dir, s);
  await a.init();
  const sid = await a.newSession(dir);
  const r = await a.prompt(sid, "Busy?");
  assert.equal(r.stopReason, "end_turn");
  assert.ok(textOf(r.updates).endsWith("Now I can answer."), `got ${textOf(r.updates)}`);
  const reqs = turnRequests(s, "Busy?");
  assert.equal(reqs.length, 2, "one 429, one retry");
  // Retry-After: 1 is a lower bound on the wait (a correctness check, not a timing threshold).
  assert.ok(reqs[1].at - reqs[0].at >= 950, `retried ${reqs[1].at - reqs[0].at} ms after a Retry-After of 1 s`);
  assert.deepEqual(reqs[1].body.messages, reqs[0].body.messages, "the retry sends the same conversation");
  await a.end();
});

test("cancel while waiting out a 429's Retry-After: cancelled at once, no further request", async (t) => {
  if (scripted(t)) return;
  const dir = tempDir(t);
  const s = await modelServer(t);
  s.on("Wait long.", rateLimited(3600), answer("too late"));
  const a = openaiAgent(t, dir, s);
  await a.init();
  const sid = await a.newSession(dir);
  const p = a.prompt(sid, "Wait long.");
  await s.waitRequest((r) => r.body && turnRequests(s, "Wait long.").includes(r));
  await a.notify("session/cancel", { sessionId: sid });
  const r = await p;
  assert.equal(r.stopReason, "cancelled");
  assert.equal(turnRequests(s, "Wait long.").length, 1);
  await a.end();
});

test("stream cut mid-way: what arrived is kept, the user is told the stream broke, the agent goes on", async (t) => {
  if (scripted(t)) return;
  const dir = tempDir(t);
  const s = await modelServer(t);
  s.on("Tell me a story.", cutStream("Once upon a time there was a parser", 4));
  const a = openaiAgent(t, dir, s);
  await a.init();
  const sid = await a.newSession(dir);
  const o = await promptOutcome(a, sid, "Tell me a story.");
  assert.ok(ENDED.includes(o.stopReason), `stopReason ${o.stopReason}`);
  // events 1..3 (3 chunks of 4 characters) got through before the cut
  assert.ok(textOf(o.updates).startsWith("Once upon a "), `the streamed part was lost: ${JSON.stringify(textOf(o.updates))}`);
  assert.match(toldUser(o), /interrupt|cut|closed|incomplete|broke|ended|lost|connection|stream|terminat|reset|abort/i, `the user was not told: ${toldUser(o)}`);
  s.on("Go on.", answer("The end."));
  const r = await a.prompt(sid, "Go on.");
  assert.equal(r.stopReason, "end_turn");
  await a.end();
});

test("cancel mid-stream: the HTTP request is aborted (the server sees the socket close), the prompt answers cancelled", async (t) => {
  const dir = tempDir(t);
  const s = await modelServer(t);
  const q = LIVE ? "Write a 2000-word essay about the history of the C programming language." : "Stream slowly.";
  if (!LIVE) s.on(q, slowStream("one two three four five six seven eight nine ten ".repeat(40), 100));
  const a = openaiAgent(t, dir, s);
  await a.init();
  const sid = await a.newSession(dir);
  const p = a.prompt(sid, q);
  await a.waitFor((m) => m.method === "session/update" && m.params?.sessionId === sid && m.params.update?.sessionUpdate === "agent_message_chunk");
  await a.notify("session/cancel", { sessionId: sid });
  const r = await p;
  assert.equal(r.stopReason, "cancelled");
  const [req] = turnRequests(s, q);
  const closed = await req.closed;
  assert.equal(closed.aborted, true, "the model's stream was not aborted: it ran to its end");
  // What the user saw is kept, and the agent takes the next prompt.
  const seen = textOf(r.updates);
  assert.ok(seen.length > 0);
  if (!LIVE) s.on("Still there?", answer("Yes."));
  const next = await a.prompt(sid, "Still there?");
  assert.equal(next.stopReason, "end_turn");
  if (!LIVE) {
    const body = turnRequests(s, "Still there?")[0].body;
    const prior = body.messages.filter((m) => m.role === "assistant").map((m) => (typeof m.content === "string" ? m.content : "")).join("");
    assert.ok(prior.includes(seen.trim().slice(0, 20)), "the cancelled turn's visible text is not in the next request's context");
  }
  await a.end();
});

test("cancel before the first token (the server sent headers and the role chunk, then nothing)", async (t) => {
  if (scripted(t)) return;
  const dir = tempDir(t);
  const s = await modelServer(t);
  s.on("Hang.", { text: "never", hang: true });
  const a = openaiAgent(t, dir, s);
  await a.init();
  const sid = await a.newSession(dir);
  const p = a.prompt(sid, "Hang.");
  const req = await s.waitRequest((r) => r.body?.messages && turnRequests(s, "Hang.").includes(r));
  await a.notify("session/cancel", { sessionId: sid });
  assert.equal((await p).stopReason, "cancelled");
  assert.equal((await req.closed).aborted, true);
  await a.end();
});
