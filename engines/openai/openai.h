/* SPDX-License-Identifier: Apache-2.0 */
/* The `openai` engine: an acp_engine that talks to any OpenAI-compatible model server
 * (llama.cpp's llama-server, Ollama, vLLM, LM Studio, OpenAI, gateways) with POST
 * {base}/chat/completions, stream: true, and GET {base}/models. Built on the public headers
 * only (acp/agent.h, acp/http.h, acp/sse.h, acp/json.h, acp/mcp.h).
 *
 * A prompt is a loop of model requests: the model's text streams out as agent_message_chunk
 * (reasoning as agent_thought_chunk), its tool calls run as ACP tool calls (the session's MCP
 * tools, the client's fs and terminal methods when advertised; writes and commands ask permission
 * first), their results go back to the model, until it answers without tools or max_turns
 * rounds ran. The model's context is derived from the session's stored history (history.h):
 * session/load and session/resume continue where the session left off, on any host. */
#ifndef ACP_ENGINES_OPENAI_H
#define ACP_ENGINES_OPENAI_H

#include <stdbool.h>

#include "acp/agent.h"

typedef struct openai_opts {
    const char *base_url;      /* "http://127.0.0.1:11434/v1"; a trailing '/' is dropped */
    const char *model;         /* NULL: the first model GET /models lists */
    const char *api_key;       /* sent as "Authorization: Bearer"; NULL: none. Never logged */
    const char *system_prompt; /* the system message's text; NULL: a short default */
    unsigned max_tokens;       /* max_tokens of each request; 0: not sent */
    unsigned max_turns;        /* tool rounds per prompt; 0: 25 */
    unsigned context_tokens;   /* the context window; 0: as GET /models lists it, else 32768 */
    bool no_title;             /* do not ask the model for a session title */
} openai_opts;

typedef struct openai openai;

/* Copies the options (the API key too, wiped at openai_free). *out is the caller's:
 * openai_free() once the agent using it is freed. 0, ACP_EINVAL (a base URL that is not
 * http:// or https://) or ACP_ENOMEM. */
int openai_new(uv_loop_t *loop, const openai_opts *o, openai **out);
/* Fills *e with the engine (borrowing oa for the agent's lifetime). */
void openai_engine(openai *oa, acp_engine *e);
/* Asks the server for its models (GET /models): the sessions' `model` option lists them.
 * ready (may be NULL) runs once when the answer or the failure is in, from the loop (or from
 * inside this call when no request could start), unless openai_free() came first. A program
 * that runs its loop until then, briefly, has the list in the first session's result. */
void openai_start(openai *oa, void (*ready)(void *user), void *user);
/* Aborts what is in flight and frees; done (may be NULL) runs from the loop when the HTTP
 * client's handles are closed. Call after acp_agent_free(). */
void openai_free(openai *oa, void (*done)(void *user), void *user);

#endif
