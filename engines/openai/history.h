/* SPDX-License-Identifier: Apache-2.0 */
/* openai_history: the model's message list (chat completions `messages`), derived from the
 * session's history as stored: user_message_chunk, agent_message_chunk, tool_call and
 * tool_call_update, compaction_* updates. Sans-I/O.
 *
 * One derivation serves both ways in: session/load and session/resume feed the stored update
 * texts (openai_history_feed), and a live turn calls the same functions with what it is about
 * to store. So the context a session continues with on another host is exactly the one it had:
 * nothing of it lives outside the store.
 *
 *   - user_message_chunk: consecutive chunks of one messageId are one user message, blocks
 *     joined by "\n" (text as is; a resource's text; a resource_link as "[resource NAME URI]";
 *     other blocks as "[image]", "[audio]").
 *   - agent_message_chunk: assistant text; thoughts are not sent back.
 *   - tool_call with a `name` (the function name the model used; calls of other engines have
 *     none and are left out): a tool call of the current assistant message, its id the one the
 *     model gave it (_meta.openai.toolCallId; some servers insist on their own id format), else
 *     the toolCallId; arguments = rawInput (a JSON string as is, anything else as its JSON text).
 *   - tool_call_update completed/failed: the tool message for that call, its text the text
 *     content items joined by "\n" ("Error: " first when failed), cut to result_max. A call
 *     with no final update gets "(no result)": the API refuses a tool call without its tool
 *     message.
 *   - a completed compaction: its summary stands for every message before it (the user message
 *     being built stays): it is the first message, from the user (as Codex and Claude Code send
 *     theirs), and the system message says so.
 * Text is kept as escaped JSON string content, so rendering a request is concatenation. */
#ifndef ACP_ENGINES_OPENAI_HISTORY_H
#define ACP_ENGINES_OPENAI_HISTORY_H

#include <stdbool.h>
#include <stddef.h>

#include "acp/json.h"

enum openai_msg { OPENAI_MSG_NONE, OPENAI_MSG_USER, OPENAI_MSG_ASSISTANT };

typedef struct openai_result {
    char *id;      /* the toolCallId (owned) */
    char *wire_id; /* the id the model gave the call, sent back to it (owned) */
    acp_buf text;  /* escaped; empty until the result arrived */
    bool has;
} openai_result;

typedef struct openai_history {
    /* Set by the owner: a tool result longer than this (escaped bytes; 0: no limit) reaches
     * the model cut, with the count of bytes left out. The stored result stays whole. */
    size_t result_max;
    acp_buf done;    /* finished messages as JSON objects, comma-joined */
    size_t ndone;    /* how many */
    acp_buf summary; /* escaped text of the last completed compaction; empty: none */
    /* The message being built. */
    enum openai_msg cur;
    char *user_mid;     /* the user message's messageId (owned) */
    acp_buf content;    /* escaped text */
    acp_buf calls;      /* assistant: tool_calls items, comma-joined */
    openai_result *res; /* assistant: one per tool call, in call order */
    size_t nres, capres;
    /* A compaction being read back. */
    char *cmp_id;
    acp_buf cmp_text;
} openai_history;

/* A user message's block (ContentBlock JSON text, validated by the caller), with the message's
 * id: blocks of one id are one message. 0 or ACP_ENOMEM. */
int openai_history_user_block(openai_history *h, const char *mid, acp_span block);
/* Assistant text, plain UTF-8 (escaped here). */
int openai_history_assistant_text(openai_history *h, const char *text, size_t n);
/* A tool call of the assistant message: its toolCallId, the model's own id for it (NULL: none),
 * the function name, and raw_input, the JSON text of the rawInput stored with the call.
 * 0 or ACP_ENOMEM. */
int openai_history_call(openai_history *h, const char *id, const char *wire_id, const char *name,
                        acp_span raw_input);
/* The result of call id from the content array (ToolCallContent[] JSON text) stored when it
 * finished. Unknown ids are ignored. 0 or ACP_ENOMEM. */
int openai_history_result(openai_history *h, const char *id, bool failed, acp_span content);
/* A completed compaction whose summary is plain text. */
int openai_history_compacted(openai_history *h, const char *summary, size_t n);
/* One stored update (JSON text; invalid text is skipped). 0 or ACP_ENOMEM. */
int openai_history_feed(openai_history *h, const char *json, size_t n);

/* Appends the messages, comma-joined (the inside of "messages":[...] after the system
 * message), to out: the compaction summary, the finished ones and the one being built.
 * 0 or ACP_ENOMEM. */
int openai_history_render(const openai_history *h, acp_buf *out);
/* The same without the message being built (what a compaction summarises). */
int openai_history_render_done(const openai_history *h, acp_buf *out);
/* Appends the system message: system (plain; NULL or empty: none), with a sentence on the
 * summary when there is one. Returns whether it wrote one, or ACP_ENOMEM. */
int openai_history_render_system(const openai_history *h, const char *system, acp_buf *out);
/* Bytes of message text held (for the context estimate: about 4 per token). */
size_t openai_history_bytes(const openai_history *h);
/* Whether any user message was seen (the session has had its first exchange). */
bool openai_history_started(const openai_history *h);
/* A deep copy of src into *dst (zeroed first): a forked session's context, which then lives
 * apart from src's. 0, or ACP_ENOMEM with *dst freed and zeroed. */
int openai_history_copy(openai_history *dst, const openai_history *src);
/* Frees everything the history holds; *h is zeroed, ready for reuse. */
void openai_history_free(openai_history *h);

#endif
