// SPDX-License-Identifier: Apache-2.0
// An ACP agent written with the official TypeScript SDK that consumes MCP servers its client
// provides over ACP (unstable: McpOverAcpCaller, mcp/message). It advertises
// mcpCapabilities.acp; each prompt names what to do with the session's "acp" servers, and the
// answer comes back as agent_message_chunk text (one JSON line per step):
//   "list"            server/discover and tools/list on every declared server
//   "call TOOL JSON"  tools/call on the first declared server, progress notifications counted
//   "ghost"           tools/list on a serverId nobody declared (the client answers -33001)
//   "cancel TOOL"     tools/call, aborted after 100 ms (the client sees $/cancel_request)
//   "bench N TOOL"    N sequential tools/call, for bench/mcp_acp.c: says "calls=N"
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk/unstable";

const mcp = new acp.McpOverAcpCaller({ clientInfo: { name: "ts-agent-mcp", version: "1.0.0" } });
const sessions = new Map(); // sessionId -> [declarations]
let next = 0;

const outcome = async (p) => {
  try {
    return await p;
  } catch (e) {
    return { outer: { code: e.code, message: e.message } };
  }
};

const app = acp
  .agent()
  .onNotification("mcp/message", mcp.handleNotification)
  .onRequest("initialize", () => ({
    protocolVersion: 1,
    agentCapabilities: { mcpCapabilities: { acp: true } },
    agentInfo: { name: "ts-agent-mcp", version: "1.0.0" },
  }))
  .onRequest("session/new", ({ params }) => {
    const sessionId = `mcp-${next++}`;
    sessions.set(sessionId, params.mcpServers.filter(acp.isMcpServerAcp));
    return { sessionId };
  })
  .onRequest("session/prompt", async ({ params, client }) => {
    const text = params.prompt.map((b) => b.text ?? "").join("");
    const say = (v) =>
      client.notify("session/update", {
        sessionId: params.sessionId,
        update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: JSON.stringify(v) + "\n" } },
      });
    const servers = sessions.get(params.sessionId) ?? [];
    const [verb, a1, ...rest] = text.split(" ");
    if (verb === "list") {
      for (const s of servers) {
        await say({ server: s.name, discover: await outcome(mcp.request(client, s.serverId, "server/discover", {})) });
        await say({ server: s.name, list: await outcome(mcp.request(client, s.serverId, "tools/list", {})) });
      }
    } else if (verb === "call") {
      let progress = 0;
      const r = await outcome(
        mcp.request(client, servers[0].serverId, "tools/call", { name: a1, arguments: JSON.parse(rest.join(" ") || "{}"), _meta: { progressToken: 7 } }, { onNotification: (n) => n.method === "notifications/progress" && progress++ }),
      );
      await say({ call: r, progress });
    } else if (verb === "ghost") {
      await say({ ghost: await outcome(mcp.request(client, "nobody-declared-this", "tools/list", {})) });
    } else if (verb === "cancel") {
      const ac = new AbortController();
      setTimeout(() => ac.abort(), 100);
      await say({ cancel: await outcome(mcp.request(client, servers[0].serverId, "tools/call", { name: a1, arguments: {} }, { signal: ac.signal })) });
    } else if (verb === "bench") {
      const n = Number(a1);
      const t0 = performance.now();
      for (let i = 0; i < n; i++) await mcp.request(client, servers[0].serverId, "tools/call", { name: rest[0], arguments: { message: "x" } });
      await say({ calls: n, seconds: (performance.now() - t0) / 1e3 });
    }
    return { stopReason: "end_turn" };
  });

const conn = app.connect(acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
await conn.closed;
process.exit(0);
