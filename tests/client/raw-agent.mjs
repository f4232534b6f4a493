// SPDX-License-Identifier: Apache-2.0
// An agent that is not ours and not the SDK's: raw NDJSON, written to exercise what a client
// must tolerate. Its own requests use string ids; its session id needs JSON escapes and is
// written differently (escaped vs literal) in different messages; results carry unknown
// fields; a line may be split across writes. Each prompt: one permission request with id
// "perm-\"1\"", then an agent_message_chunk whose text is the raw response line we got back.
import { createInterface } from "node:readline";

const SID = 's"1\u00e9';
const out = (o) => process.stdout.write(JSON.stringify(o) + "\n");
let prompt = null;
const rl = createInterface({ input: process.stdin });
rl.on("line", (line) => {
  const m = JSON.parse(line);
  if (m.method === "initialize") {
    out({ jsonrpc: "2.0", id: m.id, result: { protocolVersion: 1, agentCapabilities: { futureCap: { x: 1 } }, agentInfo: { name: "raw", version: "0" }, extra: true } });
  } else if (m.method === "session/new") {
    out({ jsonrpc: "2.0", id: m.id, result: { sessionId: SID, somethingNew: [1, 2] } });
  } else if (m.method === "session/prompt") {
    prompt = m;
    // The same session id, escaped instead of literal, and the line in two pieces.
    const line = '{"jsonrpc":"2.0","id":"perm-\\"1\\"","method":"session/request_permission","params":{"sessionId":"s\\u00221\\u00e9","toolCall":{"toolCallId":"t"},"options":[{"optionId":"o1","name":"Allow","kind":"allow_once"}]}}\n';
    process.stdout.write(line.slice(0, 40));
    setTimeout(() => process.stdout.write(line.slice(40)), 5);
  } else if (m.id === 'perm-"1"' && prompt) {
    out({ jsonrpc: "2.0", method: "session/update", params: { sessionId: "s\\u00221é".replace("\\u0022", '"'), update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: line } } } });
    out({ jsonrpc: "2.0", id: prompt.id, result: { stopReason: "end_turn", futureField: {} } });
    prompt = null;
  } else if (m.id !== undefined && m.method) {
    out({ jsonrpc: "2.0", id: m.id, error: { code: -32601, message: "Method not found" } });
  }
});
rl.on("close", () => process.exit(0));
