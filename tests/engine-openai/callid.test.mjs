// SPDX-License-Identifier: Apache-2.0
// The model's own tool-call ids go back to it (issue 12): every follow-up request names a tool call
// by exactly the id the model streamed (the assistant message's tool_calls[].id and the tool
// message's tool_call_id), in the same turn, in the next prompt, and after a restart with
// session/load or session/resume, where the context is rebuilt from the store. Servers validate
// the format of the ids they issued: Mistral's are 9 alphanumerics and a request naming a call any
// other way is refused with 400, so an id the engine made up (its ACP toolCallId) would break the
// conversation at the first tool call.
import { join } from "node:path";
import { readFileSync } from "node:fs";
import {
  test, tempDir, assert, modelServer, openaiAgent, scripted, findTool, toolNames, toolCallsOf, brief, lastUserText, file, turnRequests,
} from "./lib.mjs";
import { answer, toolCalls } from "./fixtures.mjs";

/** The ids a request uses: tool_calls[].id of assistant messages and tool_call_id of tool messages, in order. */
const idsIn = (body) => {
  const calls = [];
  const results = [];
  for (const m of body?.messages ?? []) {
    if (m.role === "assistant") for (const c of m.tool_calls ?? []) calls.push(c.id);
    if (m.role === "tool") results.push(m.tool_call_id);
  }
  return { calls, results };
};

/** The messages of a request from the first user message on (the system message differs by nothing here, but is not the point). */
const convo = (body) => (body?.messages ?? []).filter((m) => m.role !== "system");

// Each format as a server streams it, with ids of the shape that server issues.
const FORMATS = [
  { name: "Mistral-style ids (9 alphanumerics), OpenAI chunks", format: "openai", ids: ["Xk3pQ9aZ1", "b7Rt2LmN0", "Q1w2E3r4T"] },
  { name: "llama-server chunks and ids", format: "llama", ids: ["nT4bVq8sKd2LxZ7mP0aH5cR9wE3yF6gJ", "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6", "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz1"] },
];

for (const fmt of FORMATS) {
  test(`tool-call ids, ${fmt.name}: the follow-up request carries exactly the model's ids, live, in the next prompt, after load and after resume`, async (t) => {
    if (scripted(t)) return;
    const dir = tempDir(t);
    const store = join(dir, "sessions.db");
    const s = await modelServer(t);
    const fa = file(dir, "a.txt", "alpha\n");
    const fb = file(dir, "b.txt", "beta\n");
    const [id1, id2, id3] = fmt.ids;
    const q1 = "Read a.txt and b.txt, then a.txt again.";
    let step = 0;
    const prev = s.respond;
    s.respond = (body, req) => {
      if (lastUserText(body) !== q1) return prev?.(body, req);
      const rd = findTool(body, /read/i, ["path"]);
      assert.ok(rd, `no read tool: ${toolNames(body)}`);
      const name = rd.function.name;
      step++;
      // Round 1: two calls in one message; round 2: one more; then the answer.
      if (step === 1) return toolCalls([[name, { path: fa }, id1], [name, { path: fb }, id2]], { format: fmt.format });
      if (step === 2) return toolCalls([[name, { path: fa }, id3]], { format: fmt.format });
      return answer("alpha, beta, alpha.", { format: fmt.format });
    };
    const fs = { read: (p) => readFileSync(p, "utf8") };
    const a = openaiAgent(t, dir, s, { store, fs });
    await a.init();
    const sid = await a.newSession(dir);
    const r1 = await a.prompt(sid, q1);
    assert.equal(r1.stopReason, "end_turn");
    const acpIds = toolCallsOf(r1.updates).map((c) => c.toolCallId);
    assert.equal(acpIds.length, 3, "three tool calls reported");

    const expected = { calls: [id1, id2, id3], results: [id1, id2, id3] };
    const live = turnRequests(s, q1);
    assert.equal(live.length, 3, "three requests in the turn");
    assert.deepEqual(idsIn(live[1].body), { calls: [id1, id2], results: [id1, id2] }, `the second request: ${brief(live[1].body)}`);
    assert.deepEqual(idsIn(live[2].body), expected, `the third request: ${brief(live[2].body)}`);
    // Each result answers its own call (a.txt's under id1 and id3, b.txt's under id2).
    const results = Object.fromEntries(convo(live[2].body).filter((m) => m.role === "tool").map((m) => [m.tool_call_id, m.content]));
    assert.deepEqual(results, { [id1]: "alpha\n", [id2]: "beta\n", [id3]: "alpha\n" }, `results by id: ${brief(live[2].body)}`);
    for (const id of acpIds) if (!fmt.ids.includes(id)) assert.ok(!JSON.stringify(live[2].body.messages).includes(JSON.stringify(id)), `the engine's own id ${id} reached the model`);

    // The next prompt of the same process.
    const q2 = "Thanks. Which file was first?";
    s.on(q2, answer("a.txt.", { format: fmt.format }));
    assert.equal((await a.prompt(sid, q2)).stopReason, "end_turn");
    const [next] = turnRequests(s, q2);
    assert.deepEqual(idsIn(next.body), expected, `the next prompt's request: ${brief(next.body)}`);
    await a.end();

    // A fresh process loads the session from the store: the rebuilt context names the calls alike,
    // and is the one the live process sent.
    for (const how of ["session/load", "session/resume"]) {
      const q3 = `And after ${how}?`;
      s.on(q3, answer("Still a.txt.", { format: fmt.format }));
      const b = openaiAgent(t, dir, s, { store, fs });
      const init = await b.init();
      if (how === "session/resume" && !init.agentCapabilities?.sessionCapabilities?.resume) {
        await b.end();
        continue;
      }
      await b.request(how, { sessionId: sid, cwd: dir, mcpServers: [] });
      assert.equal((await b.prompt(sid, q3)).stopReason, "end_turn");
      const [after] = turnRequests(s, q3);
      assert.deepEqual(idsIn(after.body), expected, `the request after ${how}: ${brief(after.body)}`);
      assert.deepEqual(convo(after.body).slice(0, convo(next.body).length), convo(next.body), `the context after ${how} differs from the live one`);
      await b.end();
    }
  });
}
