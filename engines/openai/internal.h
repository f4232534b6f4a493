/* SPDX-License-Identifier: Apache-2.0 */
/* The openai engine's shared state: the engine, a session, and the functions its files call
 * on each other. chat.c: requests to the model server; turn.c: a prompt's loop of requests;
 * exec.c: the model's tool calls; engine.c: the engine callbacks, models and titles. */
#ifndef ACP_ENGINES_OPENAI_INTERNAL_H
#define ACP_ENGINES_OPENAI_INTERNAL_H

#include "acp/http.h"
#include "engines/openai/history.h"
#include "engines/openai/openai.h"
#include "engines/openai/stream.h"
#include "engines/openai/tools.h"

#define OA_RETRIES     5     /* 429 / 503 retries of one request */
#define OA_RETRY_MAX_S 60    /* the longest Retry-After honoured */
#define OA_ERRBODY_MAX 65536 /* an error response's body kept for its message */
#define OA_CALLS_MAX   64    /* tool calls run from one model message */

typedef struct oa_sess oa_sess;

struct openai {
    uv_loop_t *loop;
    openai_opts o; /* strings owned */
    acp_http_client *http;
    acp_http *models_req;
    acp_buf models_body;
    void (*ready)(void *user); /* openai_start's */
    void *ready_user;
    char **models; /* from GET /models, NULL-terminated; NULL: not (yet) listed */
    oa_sess *sessions;
    acp_config_value *model_values; /* the listed models' (names borrowed from models) */
    acp_config_value default_model; /* the one model until the list arrives */
    unsigned *model_windows;        /* per model_values entry: the window listed for it, 0: none */
    bool window_given;              /* --context-tokens was given: it wins over a listed window */
    acp_config_option options[2];   /* mode, model */
    acp_provider provider;          /* "openai": base_url, unless a client moves it */
};

/* What a request is for: the turn's answer, a compaction summary, or the session title. */
enum oa_req { OA_CHAT, OA_SUMMARY, OA_TITLE, OA_SUBAGENT };

/* One exchange with the model server and what came back. */
typedef struct oa_call {
    oa_sess *os;
    enum oa_req kind;
    acp_http *h;
    openai_stream st;
    acp_buf text;  /* OA_SUMMARY, OA_TITLE: the answer; OA_CHAT: an error body */
    bool streamed; /* any text or tool call of the answer arrived */
    unsigned retries;
    uv_timer_t *timer; /* the wait before a retry (allocated: closed after the session) */
    acp_buf body;      /* the request, kept for a retry */
} oa_call;

/* A tool call of the current round. */
typedef struct oa_tool {
    const openai_tool *def; /* NULL: the model named no tool we offered */
    char *fn;               /* the function name the model used */
    json_t *args;           /* the arguments object; NULL when they were not a JSON object */
    char *bad_args;         /* why not */
    acp_tool_call *tc;      /* the turn's */
    char *path;             /* read/write: absolute */
} oa_tool;

struct oa_sess {
    openai *oa;
    acp_session *s;
    oa_sess *prev_s, *next_s; /* the engine's open sessions */
    openai_history h;
    bool titled;
    char *broken; /* why its context could not be rebuilt (prompts are refused); owned */
    bool always[OPENAI_TOOL_MCP]; /* the user chose "always allow" for writes or for commands */
    uint64_t used;                /* tokens in context after the last answer (the server's count) */
    /* The turn. */
    acp_turn *t;
    unsigned round;
    char mid[48], tid[48]; /* message ids of this round's answer and thoughts */
    char cmp_id[48];       /* the compaction being made */
    bool compacting;       /* its summary is being asked for */
    oa_call chat;
    oa_call title;
    openai_tools tools;
    oa_tool *calls;
    size_t ncalls, next;
    acp_mcp_call *mcp;
    acp_terminal *term;
    unsigned long turn_seq;
    /* delegate_task (unstable): the subagent session running it and its exchange. */
    acp_session *child;
    char child_mid[48];
    oa_call sub;
};

/* chat.c */
/* Starts exchange c (stopping what it had in flight) with body (taken: *body is left empty).
 * Its answer comes to oa_turn_answered (OA_CHAT, OA_SUMMARY) or oa_title_answered, once,
 * after any 429/503 retries. 0, ACP_EIO (no libcurl) or ACP_ENOMEM: then nothing comes. */
int oa_request(oa_sess *os, oa_call *c, enum oa_req kind, acp_buf *body);
/* Aborts c's exchange or retry wait: no answer comes. The socket closes on the next loop
 * turn. */
void oa_call_stop(oa_call *c);
/* Stops and frees what c holds (its timer closes from the loop). */
void oa_call_free(oa_call *c);
/* The request body up to and inside "messages":[ : the system message (system and the
 * compaction summary) and, with history, the whole message list. Without history it returns
 * 1 when it wrote the system message (the next message needs a comma), else 0; ACP_ENOMEM. */
int oa_body_begin(oa_sess *os, acp_buf *b, const char *system, bool history);
/* Closes the messages and the body, with the round's tools when asked, and tool_choice (a
 * plain word; NULL: not sent, the server's default). */
int oa_body_end(oa_sess *os, acp_buf *b, bool tools, const char *tool_choice);

/* The request's URL (base + path) and headers for agent a's connection (a NULL: the engine's
 * own route): the client's providers/set route when it set one, else base_url and the key.
 * *headers is NULL-terminated, for oa_route_free() (it wipes the key). 0, ACP_EACCES (the
 * client disabled the provider) or ACP_ENOMEM. */
int oa_route(openai *oa, acp_agent *a, const char *path, char *url, size_t n, const char *accept,
             const char ***headers);
void oa_route_free(const char **headers);

/* turn.c: the turn is os->t, NULL when none runs. */
void oa_turn_prompt(oa_sess *os, acp_turn *t, const json_t *blocks);
/* Offers the round's tools and asks the model. */
void oa_turn_round(oa_sess *os);
void oa_turn_answered(oa_sess *os, oa_call *c, int result, long status);
/* A streamed delta: to the client, and (not reasoning) to the context. Non-zero when the turn
 * cannot take it (its response is decided): the stream is then dropped. */
int oa_turn_text(oa_sess *os, bool reasoning, const char *text, size_t n);
/* Ends the turn with a StopReason (after stopping what runs), then proposes a title. */
void oa_turn_end(oa_sess *os, const char *reason);
/* An agent message, also part of the context (what the user was told, the model is told). */
void oa_turn_say(oa_sess *os, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Stops the request and the tool calls in flight and forgets the turn (cancel, close). */
void oa_turn_stop(oa_sess *os);
/* The round's tool calls are done: ask again, or stop at max_turns. */
void oa_turn_next_round(oa_sess *os);

/* exec.c: the tool calls of the answer in os->chat.st. */
void oa_exec_begin(oa_sess *os);
/* Cancels the MCP call, releases the terminal and frees the round's calls. */
void oa_exec_clear(oa_sess *os);
/* delegate_task's exchange: its text streamed into the child, its end. */
int oa_subagent_text(oa_sess *os, oa_call *c, bool reasoning, const char *text, size_t n);
void oa_subagent_answered(oa_sess *os, oa_call *c, int result, long status);

/* engine.c: the context window of the session's model: --context-tokens when given, else
 * what GET /models listed for it, else 32768. */
unsigned oa_window(const oa_sess *os);
/* After the first exchange, the model's title for the session. */
void oa_title_propose(oa_sess *os);
void oa_title_answered(oa_sess *os, oa_call *c, int result, long status);

#endif
