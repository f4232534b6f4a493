// SPDX-License-Identifier: Apache-2.0
// A hostile agent (issue 13, item 5): every string a client shows carries what a terminal would
// act on: CSI and OSC sequences (retitle the window, clear the screen, write the clipboard with
// OSC 52, a hyperlink that lies with OSC 8), C1 controls, bidi overrides and isolates, CR, DEL.
// Raw NDJSON, no SDK. Imported, it gives the test the payload, the updates a prompt sends and
// how acp must show a text (`shown`); run, it is the agent.
//
// initialize: agentInfo, authMethods; session/new: "s1" with modes and a config option;
// session/list: one session with a hostile title and cwd. session/prompt, by the prompt text:
//   all     every update acp draws, each with the payload, then end_turn
//   error   an error whose message and data.details carry the payload
//   stop42  a result with stopReason 42
//   perm    a permission request whose tool title and option names carry it, then end_turn
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";

export const PAYLOAD =
  "\x1b]0;pwned\x07" + // window title
  "\x1b[2J\x1b[H" + // clear the screen
  "\x1b]52;c;ZXZpbA==\x07" + // write the clipboard
  "\x1b]8;;https://evil.example/\x1b\\trust me\x1b]8;;\x1b\\" + // a hyperlink
  "\u009b31m\u009d0;c1\u009c" + // C1 CSI, OSC, ST
  "\u202egnp.exe\u202c \u2066iso\u2069" + // RLO, PDF, LRI, PDI
  "\u200f" + // RLM: passes
  "a\rb\x7f\x08\x01z\ttab";

export const H = (label) => `${label}:${PAYLOAD}`;

// A text as acp shows it (tools/acp/safe.h): `line` for one-line fields.
export function shown(s, line) {
  let out = "";
  for (let i = 0; i < s.length; i++) {
    const c = s[i], cp = c.codePointAt(0);
    if (c === "\t" || (c === "\n" && !line)) out += c;
    else if (c === "\r" && !line && s[i + 1] === "\n") (out += "\r\n"), i++;
    else if (c === "\n") out += "\\n";
    else if (c === "\r") out += "\\r";
    else if (cp < 0x20 || cp === 0x7f) out += "\\x" + cp.toString(16).padStart(2, "0");
    else if ((cp >= 0x80 && cp <= 0x9f) || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069))
      out += "\\u" + cp.toString(16).padStart(4, "0");
    else out += c;
  }
  return out;
}

// What a prompt "all" sends, as session/update params (acp --json must print each exactly).
export function promptUpdates(sid) {
  const u = (update) => ({ sessionId: sid, update });
  return [
    u({ sessionUpdate: "agent_message_chunk", messageId: "m1", content: { type: "text", text: H("msg") + "\nline two\r\n" } }),
    u({ sessionUpdate: "agent_message_chunk", messageId: "m2", content: { type: "resource_link", uri: H("uri"), name: "n" } }),
    u({ sessionUpdate: "agent_thought_chunk", content: { type: "text", text: H("thought") } }),
    u({
      sessionUpdate: "tool_call",
      toolCallId: "t1",
      title: H("tool") + "\nfake line",
      kind: "edit",
      status: "in_progress",
      content: [{ type: "diff", path: "/tmp/" + H("path"), oldText: "same\n" + H("old") + "\n", newText: "same\n" + H("new") + "\n" }],
    }),
    u({ sessionUpdate: "tool_call_update", toolCallId: "t1", status: "failed", content: [{ type: "content", content: { type: "text", text: H("output") } }] }),
    u({
      sessionUpdate: "plan",
      entries: [
        { content: H("plan1"), priority: "high", status: "completed" },
        { content: H("plan2") + "\nsecond", priority: "low", status: "pending" },
      ],
    }),
    u({ sessionUpdate: "session_info_update", title: H("title") }),
    u({ sessionUpdate: "notice", severity: "warning", title: H("notice"), description: H("desc") }),
    u({ sessionUpdate: "notice", severity: "_" + H("sev"), title: "custom" }),
    u({ sessionUpdate: "usage_update", used: 1, size: 10, cost: { amount: 0.5, currency: H("cur") } }),
    u({ sessionUpdate: "current_mode_update", currentModeId: H("mode") }),
    u({
      sessionUpdate: "config_option_update",
      configOptions: [{ id: H("opt"), name: "Opt", type: "select", currentValue: H("val"), options: [{ value: H("val"), name: "V" }] }],
    }),
    u({ sessionUpdate: "available_commands_update", availableCommands: [{ name: H("cmd"), description: H("cmddesc") }] }),
  ];
}

export const SESSION = {
  sessionId: "s1",
  modes: { currentModeId: "m1", availableModes: [{ id: "m1", name: H("modename"), description: H("modedesc") }] },
  configOptions: [{ id: "o1", name: H("optname"), type: "select", currentValue: "v1", options: [{ value: "v1", name: H("valname") }] }],
};

export const INIT = {
  protocolVersion: 1,
  agentCapabilities: { loadSession: false, sessionCapabilities: { list: {} } },
  agentInfo: { name: H("name"), version: H("version") },
  authMethods: [{ id: "a1", name: H("authname"), description: H("authdesc") }],
};

export const LISTED = { sessionId: "s9", cwd: "/tmp/" + H("cwd"), title: H("listtitle"), updatedAt: "2026-01-01T00:00:00.000Z" };

function serve() {
  const out = (o) => process.stdout.write(JSON.stringify(o) + "\n");
  let asked = null; // the prompt waiting for the permission's answer
  const rl = createInterface({ input: process.stdin });
  rl.on("line", (line) => {
    const m = JSON.parse(line);
    const reply = (result) => out({ jsonrpc: "2.0", id: m.id, result });
    if (m.method === "initialize") reply(INIT);
    else if (m.method === "session/new") reply(SESSION);
    else if (m.method === "session/list") reply({ sessions: [LISTED] });
    else if (m.method === "session/prompt") {
      const text = m.params.prompt.map((b) => b.text ?? "").join("");
      const sid = m.params.sessionId;
      if (text === "all") {
        for (const params of promptUpdates(sid)) out({ jsonrpc: "2.0", method: "session/update", params });
        reply({ stopReason: "end_turn" });
      } else if (text === "error") {
        out({ jsonrpc: "2.0", id: m.id, error: { code: -32603, message: H("err"), data: { details: H("details") } } });
      } else if (text === "stop42") {
        reply({ stopReason: 42 });
      } else if (text === "perm") {
        asked = m;
        out({
          jsonrpc: "2.0",
          id: "p1",
          method: "session/request_permission",
          params: {
            sessionId: sid,
            toolCall: { toolCallId: "t9", title: H("permtitle") + "\nchoose 1-2" },
            options: [
              { optionId: "y", name: H("yes"), kind: "allow_once" },
              { optionId: "n", name: H("no"), kind: "reject_once" },
            ],
          },
        });
      } else reply({ stopReason: "end_turn" });
    } else if (m.id === "p1" && asked) {
      out({ jsonrpc: "2.0", id: asked.id, result: { stopReason: "end_turn" } });
      asked = null;
    } else if (m.id !== undefined && m.method) {
      out({ jsonrpc: "2.0", id: m.id, error: { code: -32601, message: "Method not found" } });
    }
  });
  rl.on("close", () => process.exit(0));
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) serve();
