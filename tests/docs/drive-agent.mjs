// SPDX-License-Identifier: Apache-2.0
// Drives an agent through the official SDK: initialize, session/new, one prompt, then EOF on its
// stdin. Prints the agent's message text and exits with the agent's own exit status (1 when the
// exchange failed), so a wrapper such as valgrind --error-exitcode decides.
//   usage: node drive-agent.mjs COMMAND [ARG...]   (run in the directory the agent may use)
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const child = spawn(process.argv[2], process.argv.slice(3), { stdio: ["pipe", "pipe", "inherit"] });
const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve(code ?? 128)));
let text = "";
const app = acp
  .client({ name: "drive-agent" })
  .onNotification("session/update", ({ params }) => {
    if (params.update.sessionUpdate === "agent_message_chunk") text += params.update.content.text;
  });
const conn = app.connect(acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout)));
let failed = false;
try {
  await conn.agent.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
  const { sessionId } = await conn.agent.request("session/new", { cwd: process.cwd(), mcpServers: [] });
  const r = await conn.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "hi" }] });
  console.log(`${text}\nstop: ${r.stopReason}`);
} catch (e) {
  console.error(`drive-agent: ${e.message}`);
  failed = true;
}
child.stdin.end();
const code = await exited;
process.exit(failed ? 1 : code);
