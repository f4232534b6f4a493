// SPDX-License-Identifier: Apache-2.0
// The SDK peer's model engine for the openai benchmark (issue 12): what a Node agent author writes
// with the `openai` npm client (7.60.0, pinned in package.json) on top of bench/ts-agent/agent.mjs's
// sessions and JSON-file store. Not part of libacp.
//
// A prompt: the model's context is rebuilt from the session's stored history (user and agent
// messages, chunks of one messageId joined), sent with stream:true, and every streamed delta becomes
// an agent_message_chunk (reasoning_content: agent_thought_chunk). Updates are committed the way
// agent.mjs commits a batch (appended to the history file before their notifications go out),
// one batch per event-loop turn: what a careful author does instead of a write per token. A cancel
// aborts the HTTP request. No tools: the benchmark streams text.
import OpenAI from "openai";

export function openaiEngine(opts) {
  const client = new OpenAI({
    baseURL: opts.baseURL,
    apiKey: (opts.apiKeyEnv && process.env[opts.apiKeyEnv]) || "none",
    maxRetries: 2,
  });

  /** The chat messages of a stored history (JSONL of session/update `update` objects). */
  function messagesOf(jsonl) {
    const out = [];
    let last = null;
    for (const line of jsonl.split("\n")) {
      if (!line) continue;
      const u = JSON.parse(line);
      const role = u.sessionUpdate === "user_message_chunk" ? "user" : u.sessionUpdate === "agent_message_chunk" ? "assistant" : null;
      if (!role || u.content?.type !== "text") continue;
      if (last && last.role === role && last.mid === (u.messageId ?? null)) last.content += u.content.text;
      else out.push((last = { role, mid: u.messageId ?? null, content: u.content.text }));
    }
    return out.map(({ role, content }) => ({ role, content }));
  }

  return {
    messagesOf,
    async prompt({ s, id, user, msgId, history, appendHistory, client: acpClient }) {
      appendHistory(id, [user]);
      const messages = messagesOf(history());
      const thoughtId = crypto.randomUUID();
      let pending = [];
      let flushing = null;
      const flush = async () => {
        const batch = pending;
        pending = [];
        flushing = null;
        if (!batch.length) return;
        appendHistory(id, batch);
        await Promise.all(batch.map((update) => acpClient.notify("session/update", { sessionId: id, update })));
      };
      const emit = (update) => {
        pending.push(update);
        if (!flushing) flushing = new Promise((r) => setImmediate(r)).then(flush);
      };
      s.abort = new AbortController();
      try {
        const stream = await client.chat.completions.create(
          { model: opts.model, messages, stream: true, stream_options: { include_usage: true } },
          { signal: s.abort.signal },
        );
        for await (const chunk of stream) {
          const d = chunk.choices?.[0]?.delta;
          if (!d) continue;
          if (d.reasoning_content) emit({ sessionUpdate: "agent_thought_chunk", messageId: thoughtId, content: { type: "text", text: d.reasoning_content } });
          if (d.content) emit({ sessionUpdate: "agent_message_chunk", messageId: msgId, content: { type: "text", text: d.content } });
        }
      } catch (e) {
        if (!s.cancelled) emit({ sessionUpdate: "agent_message_chunk", messageId: msgId, content: { type: "text", text: `\n[model server error: ${e.message}]` } });
      } finally {
        s.abort = null;
      }
      await flushing;
      await flush();
      return s.cancelled ? "cancelled" : "end_turn";
    },
  };
}
