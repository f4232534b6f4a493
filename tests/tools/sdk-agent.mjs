// SPDX-License-Identifier: Apache-2.0
// A stdio ACP agent written with the official SDK, for acp serve and acp trace. A prompt is
// echoed ("you said: TEXT"); the prompt "spawn" starts a grandchild (sleep, in a new session of
// its own, as a daemon would) and answers its pid, so a test can see the process tree ended.
// ACP_WRONG=1 makes it break rules acp trace must find: an update after the prompt's answer,
// a stopReason that is no enum value, and fs/read_text_file that the client never advertised.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const wrong = process.env.ACP_WRONG === "1";
let next = 0;
const app = acp
  .agent()
  .onRequest("initialize", () => ({ protocolVersion: 1, agentCapabilities: {}, agentInfo: { name: "sdk-agent", version: "1.0.0" } }))
  .onRequest("session/new", () => ({ sessionId: `sess_${++next}` }))
  .onRequest("session/prompt", async ({ params, client }) => {
    const text = params.prompt.map((b) => b.text ?? "").join("");
    const say = (t) =>
      client.notify("session/update", { sessionId: params.sessionId, update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: t } } });
    if (text === "spawn") {
      const child = spawn("sleep", ["300"], { detached: true, stdio: "ignore" });
      child.unref();
      await say(`pid ${child.pid}`);
      return { stopReason: "end_turn" };
    }
    await say(`you said: ${text}`);
    if (!wrong) return { stopReason: "end_turn" };
    await client.request("fs/read_text_file", { sessionId: params.sessionId, path: "/etc/hostname" }).catch(() => {});
    setTimeout(() => say("late"), 50); // after the answer below
    return { stopReason: "finished" };
  });

const conn = app.connect(acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
await conn.closed;
setTimeout(() => process.exit(0), 100); // the late update, then go
