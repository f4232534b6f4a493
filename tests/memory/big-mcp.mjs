// SPDX-License-Identifier: Apache-2.0
// A stdio MCP server with one tool, "big": its answer to tools/call is one line carrying a text
// block of arguments.bytes bytes ("m" repeated), the way a server dumps a whole file or log.
import readline from "node:readline";

const send = (m) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...m }) + "\n");
readline.createInterface({ input: process.stdin }).on("line", (line) => {
  const m = JSON.parse(line);
  if (m.id === undefined) return;
  switch (m.method) {
    case "initialize":
      return send({ id: m.id, result: { protocolVersion: "2025-06-18", capabilities: { tools: {} }, serverInfo: { name: "big", version: "1" } } });
    case "tools/list":
      return send({ id: m.id, result: { tools: [{ name: "big", inputSchema: { type: "object", properties: { bytes: { type: "integer" } } } }] } });
    case "tools/call":
      return send({ id: m.id, result: { content: [{ type: "text", text: "m".repeat(Number(m.params?.arguments?.bytes ?? 1)) }] } });
    default:
      return send({ id: m.id, error: { code: -32601, message: "Method not found" } });
  }
});
