/* SPDX-License-Identifier: Apache-2.0 */
/* openai_stream: one streamed chat completion (POST /chat/completions with stream: true), put
 * together from its SSE body as it arrives. Sans-I/O: feed it body bytes in any pieces.
 *
 * Each `data:` event is a chat.completion.chunk. Of choices[0].delta, text (`content`) and
 * reasoning (`reasoning_content`, or `reasoning` as Ollama and newer vLLM name it) are handed
 * to on_text at once, so a token reaches the client in the loop turn it arrived in; tool-call
 * fragments ({index, id?, function: {name?, arguments?}}) are assembled into calls[]: the id and
 * name as last sent, the arguments text concatenated. finish_reason, the usage (the last chunk's
 * when stream_options.include_usage was asked) and an in-stream {"error": ...} are kept.
 * `data: [DONE]` sets done.
 *
 * The per-chunk path uses the validating scanner (acp_json_*), not jansson: a token's text is
 * passed without a copy when it holds no escapes. */
#ifndef ACP_ENGINES_OPENAI_STREAM_H
#define ACP_ENGINES_OPENAI_STREAM_H

#include <stdbool.h>
#include <stdint.h>

#include "acp/json.h"
#include "acp/sse.h"

/* One answer's bounds: a model that streams without end (text, or a tool call's arguments)
 * would otherwise grow the agent without end (issue 21). Past one, the feed fails (ACP_EPROTO,
 * error says which). */
#define OPENAI_ANSWER_MAX    (64u << 20) /* text, reasoning and arguments bytes together */
#define OPENAI_CALL_ARGS_MAX (16u << 20) /* one tool call's arguments */
#define OPENAI_CALLS_MAX     256         /* tool calls in one answer */

typedef struct openai_call {
    char *id;      /* owned; NULL until a fragment carried one */
    char *name;    /* owned; NULL until a fragment carried one */
    acp_buf args;  /* the arguments text as concatenated (JSON, if the model got it right) */
    int64_t index; /* the delta's index */
} openai_call;

typedef struct openai_stream {
    acp_sse sse;
    /* UTF-8 text of a content (reasoning false) or reasoning delta, borrowed for the call.
     * Non-zero stops the feed and is returned by openai_stream_feed(). */
    int (*on_text)(void *user, bool reasoning, const char *text, size_t n);
    void *user;
    openai_call *calls; /* in the order their first fragment arrived */
    size_t ncalls, cap;
    char finish[32]; /* choices[0].finish_reason ("stop", "length", "tool_calls", ...); "" none */
    bool done;       /* data: [DONE] arrived */
    bool has_usage;
    uint64_t prompt_tokens, completion_tokens, total_tokens;
    char *error;  /* owned: the message of an error event inside the stream; NULL none */
    size_t bytes; /* of text, reasoning and arguments so far (OPENAI_ANSWER_MAX) */
} openai_stream;

/* Zeroes *st and sets the text callback (may be NULL). */
void openai_stream_init(openai_stream *st, int (*on_text)(void *, bool, const char *, size_t),
                        void *user);
/* Body bytes. 0; ACP_EPROTO when a data event is not a JSON object or the answer went past a
 * bound above (st->error says so: the stream cannot be trusted further); the callback's non-zero
 * value; ACP_ETOOBIG (an event over 16 MiB) or ACP_ENOMEM. */
int openai_stream_feed(openai_stream *st, const char *p, size_t n);
/* Frees what the stream owns (calls, error, parser buffers); *st is zeroed, ready for init. */
void openai_stream_free(openai_stream *st);

#endif
