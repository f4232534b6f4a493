/* SPDX-License-Identifier: Apache-2.0 */
/* A prompt's loop: request, stream the answer out, run the tool calls it asked for, request
 * again with their results, until an answer without tool calls or max_turns rounds. A
 * compaction summary is asked for first when the context nears the window. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engines/openai/internal.h"

static const char default_system[] =
    "You are a coding assistant working in the user's editor on the project in %s. Use the "
    "tools you are given to read files, change them and run commands when that helps; say "
    "briefly what you did. Answer in the user's language.";

static const char summary_system[] =
    "You summarise conversations between a user and a coding assistant so that the assistant "
    "can continue the work from the summary alone.";
static const char summary_ask[] =
    "{\"role\":\"user\",\"content\":\"Summarise the conversation so far: the user's goals, what "
    "was done and decided, the files and commands involved, and what is still open. Answer "
    "with the summary only.\"}";

static int compaction_update(oa_sess *os, const char *status, const char *summary, size_t n,
                             const char *error);

/* The system message's text for this session (malloc'd): the engine's own (--system-prompt,
 * else the default), with the client's system prompt (the unstable systemPrompt) after it in
 * append mode, or in its place in override mode. */
static char *system_text(oa_sess *os)
{
    char *s = NULL;
    bool override = false;
    const char *client = acp_session_system_prompt(os->s, &override);
    if (client && override) return strdup(client);
    int n = os->oa->o.system_prompt ? ((s = strdup(os->oa->o.system_prompt)) ? 0 : -1)
                                    : asprintf(&s, default_system, acp_session_cwd(os->s));
    if (n < 0) return NULL;
    if (!client) return s;
    char *both = NULL;
    n = asprintf(&both, "%s\n\n%s", s, client);
    free(s);
    return n < 0 ? NULL : both;
}

void oa_turn_say(oa_sess *os, const char *fmt, ...)
{
    char *text = NULL, mid[48];
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&text, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    acp_agent_new_id("msg_", mid);
    /* What the user was told is history: the model sees it on the next turn, after a load too. */
    if (os->t && !acp_turn_text(os->t, NULL, mid, text, (size_t)n))
        openai_history_assistant_text(&os->h, text, (size_t)n);
    free(text);
}

int oa_turn_text(oa_sess *os, bool reasoning, const char *text, size_t n)
{
    if (!os->t) return ACP_ECLOSED;
    int rc = acp_turn_text(os->t, reasoning ? "agent_thought_chunk" : NULL,
                           reasoning ? os->tid : os->mid, text, n);
    if (rc || reasoning) return rc;
    return openai_history_assistant_text(&os->h, text, n);
}

void oa_turn_stop(oa_sess *os)
{
    /* A compaction cut short by a cancel ends failed: the history keeps no entity in progress
     * for good. */
    if (os->t && os->compacting) compaction_update(os, "failed", NULL, 0, "cancelled");
    os->compacting = false;
    os->t = NULL;
    oa_call_stop(&os->chat);
    oa_exec_clear(os);
    /* What the answer held (up to 64 MiB of text and arguments, the request kept for a retry)
     * goes with the turn, not at the next one: an idle session holds only its history. */
    openai_stream_free(&os->chat.st);
    acp_buf_free(&os->chat.text);
    acp_buf_free(&os->chat.body);
}

void oa_turn_end(oa_sess *os, const char *reason)
{
    acp_turn *t = os->t;
    oa_turn_stop(os);
    if (!t) return;
    acp_turn_end(t, reason);
    if (!strcmp(reason, "end_turn")) oa_title_propose(os);
}

static void usage_update(oa_sess *os, uint64_t used)
{
    char u[160];
    int n = snprintf(u, sizeof u, "{\"sessionUpdate\":\"usage_update\",\"used\":%llu,\"size\":%u}",
                     (unsigned long long)used, oa_window(os));
    acp_turn_update_raw(os->t, u, (size_t)n, true);
}

/* Tokens the next request would carry: the server's count after the last answer, or about
 * 4 bytes a token of what we hold when that is older than what was added since. */
static uint64_t context_estimate(oa_sess *os)
{
    uint64_t est = (openai_history_bytes(&os->h) + os->tools.json.len) / 4;
    return est > os->used ? est : os->used;
}

/* The tools the model is offered now: the client's file and terminal methods (as advertised,
 * and no writes or commands in mode ask) and the session's ready MCP tools. */
static int offer_tools(oa_sess *os)
{
    acp_session *s = os->s;
    acp_agent *a = acp_session_agent(s);
    bool code = !acp_session_mode(s) || strcmp(acp_session_mode(s), "ask");
    openai_tools_free(&os->tools);
    int rc = 0;
    if (acp_agent_client_has(a, "fs.readTextFile"))
        rc |= openai_tools_add_builtin(&os->tools, OPENAI_TOOL_READ);
    if (code && acp_agent_client_has(a, "fs.writeTextFile"))
        rc |= openai_tools_add_builtin(&os->tools, OPENAI_TOOL_WRITE);
    if (code && acp_agent_client_has(a, "terminal"))
        rc |= openai_tools_add_builtin(&os->tools, OPENAI_TOOL_RUN);
    if (acp_agent_client_has(a, "subagents")) /* (unstable) */
        rc |= openai_tools_add_builtin(&os->tools, OPENAI_TOOL_SUBAGENT);
    rc |= openai_tools_add_set(&os->tools, acp_session_mcp(s));
    rc |= openai_tools_json(&os->tools, acp_session_mcp(s));
    return rc ? ACP_ENOMEM : 0;
}

void oa_turn_round(oa_sess *os)
{
    int rc = offer_tools(os);
    char *system = system_text(os);
    acp_buf body = {0};
    if (!rc && !system) rc = ACP_ENOMEM;
    if (!rc) rc = oa_body_begin(os, &body, system, true);
    if (!rc) rc = oa_body_end(os, &body, true, NULL);
    free(system);
    acp_agent_new_id("msg_", os->mid);
    acp_agent_new_id("thk_", os->tid);
    if (!rc) rc = oa_request(os, &os->chat, OA_CHAT, &body);
    if (rc) {
        acp_buf_free(&body);
        oa_turn_say(os, "Could not send the request to the model server (%s).",
                    rc == ACP_EIO      ? "libcurl is not available"
                    : rc == ACP_EACCES ? "the client disabled the provider 'openai'"
                                       : "out of memory");
        oa_turn_end(os, "end_turn");
    }
}

/* Asks for a summary of everything before the current prompt when the context is over 3/4 of
 * the window; false when there is nothing to do. */
static bool compact(oa_sess *os)
{
    uint64_t window = oa_window(os);
    if (!os->h.ndone || context_estimate(os) * 4 < window * 3) return false;
    /* The tools go along unusable (tool_choice none): the history has calls to them, and a
     * strict server refuses tool calls of tools the request does not define. */
    if (offer_tools(os)) return false;
    acp_buf body = {0};
    int rc = oa_body_begin(os, &body, summary_system, false) < 0; /* writes the system message */
    if (!rc) rc = acp_buf_putc(&body, ',') || openai_history_render_done(&os->h, &body);
    if (!rc)
        rc = acp_buf_putc(&body, ',') || acp_buf_append(&body, summary_ask, strlen(summary_ask));
    if (!rc) rc = oa_body_end(os, &body, true, "none");
    if (rc || oa_request(os, &os->chat, OA_SUMMARY, &body)) {
        acp_buf_free(&body);
        return false;
    }
    /* Shown while the model summarises (a client without session.compaction gets nothing). */
    acp_agent_new_id("cmp_", os->cmp_id);
    compaction_update(os, "in_progress", NULL, 0, NULL);
    os->compacting = true;
    return true;
}

void oa_turn_prompt(oa_sess *os, acp_turn *t, const json_t *blocks)
{
    os->t = t;
    os->round = 0;
    char mid[32];
    snprintf(mid, sizeof mid, "live-%lu", ++os->turn_seq);
    size_t i;
    json_t *b;
    json_array_foreach(blocks, i, b)
    {
        char *text = json_dumps(b, JSON_COMPACT);
        int rc = text ? openai_history_user_block(&os->h, mid, (acp_span){text, strlen(text)})
                      : ACP_ENOMEM;
        free(text);
        if (rc) {
            oa_turn_stop(os);
            acp_turn_fail(t, ACP_RPC_INTERNAL_ERROR, "out of memory");
            return;
        }
    }
    if (!compact(os)) oa_turn_round(os);
}

/* One compaction update of os->cmp_id: its status, and its summary (a chunk) when given. */
static int compaction_update(oa_sess *os, const char *status, const char *summary, size_t n,
                             const char *error)
{
    acp_buf u = {0};
    acp_jw w;
    acp_jw_init(&w, &u);
    acp_jw_obj(&w);
    acp_jw_kstr(&w, "sessionUpdate", summary ? "compaction_summary_chunk" : "compaction_update");
    acp_jw_kstr(&w, "compactionId", os->cmp_id);
    if (summary) {
        acp_jw_key(&w, "content");
        acp_jw_obj(&w);
        acp_jw_kstr(&w, "type", "text");
        acp_jw_key(&w, "text");
        acp_jw_strn(&w, summary, n);
        acp_jw_obj_end(&w);
    } else {
        acp_jw_kstr(&w, "status", status);
        if (error) acp_jw_kstr(&w, "error", error);
    }
    acp_jw_obj_end(&w);
    int rc = acp_jw_status(&w);
    if (!rc) rc = acp_turn_update_raw(os->t, u.data, u.len, true);
    acp_buf_free(&u);
    return rc;
}

/* The summary arrived: recorded as a compaction (stored, replayed, and what a load rebuilds
 * the context from), then the prompt's request goes out. A failed summary is recorded failed
 * and is not fatal: the request goes out with the whole context. */
static void compacted(oa_sess *os, oa_call *c, int result, long status)
{
    os->compacting = false;
    if (!result && status / 100 == 2 && !c->st.error && c->text.len) {
        if (!compaction_update(os, NULL, c->text.data, c->text.len, NULL) &&
            !compaction_update(os, "completed", NULL, 0, NULL)) {
            openai_history_compacted(&os->h, c->text.data, c->text.len);
            os->used = 0;
            usage_update(os, context_estimate(os));
            /* A client without session.compaction saw nothing of it: a thought says so (not a
             * message, which would become part of the model's context). */
            if (!acp_agent_client_has(acp_session_agent(os->s), "session.compaction")) {
                static const char note[] = "Compacted the earlier conversation into a summary.";
                char tid[48];
                acp_agent_new_id("thk_", tid);
                acp_turn_text(os->t, "agent_thought_chunk", tid, note, sizeof note - 1);
            }
        }
    } else {
        char why[64];
        snprintf(why, sizeof why, "the model server did not summarise (HTTP %ld)", status);
        compaction_update(os, "failed", NULL, 0, c->st.error ? c->st.error : why);
    }
    oa_turn_round(os);
}

/* The message of an error response: error.message of a JSON body, else the body's start. */
static char *error_message(const acp_buf *b)
{
    json_t *j = b->len ? json_loadb(b->data, b->len, 0, NULL) : NULL;
    json_t *e = json_object_get(j, "error");
    const char *m =
        json_is_string(e) ? json_string_value(e) : json_string_value(json_object_get(e, "message"));
    if (!m) m = json_string_value(json_object_get(j, "message"));
    char *out = m ? strdup(m) : strndup(b->data ? b->data : "", b->len < 300 ? b->len : 300);
    json_decref(j);
    return out;
}

void oa_turn_answered(oa_sess *os, oa_call *c, int result, long status)
{
    if (!os->t) return;
    if (c->kind == OA_SUMMARY) {
        compacted(os, c, result, status);
        return;
    }
    const char *base = os->oa->o.base_url;
    const char *why = c->st.error ? c->st.error : "out of memory";
    if (result) {
        if (c->streamed)
            oa_turn_say(os, "\n\nThe model server's stream broke off: %s", why);
        else
            oa_turn_say(os, "Cannot reach the model server at %s: %s", base, why);
        oa_turn_end(os, "end_turn");
        return;
    }
    if (status / 100 != 2) {
        char *m = error_message(&c->text);
        oa_turn_say(os, "The model server answered HTTP %ld%s%s", status, m && *m ? ": " : "",
                    m ? m : "");
        free(m);
        oa_turn_end(os, "end_turn");
        return;
    }
    if (c->st.error) {
        oa_turn_say(os, "%sThe model server reported an error: %s", c->streamed ? "\n\n" : "",
                    c->st.error);
        oa_turn_end(os, "end_turn");
        return;
    }
    if (!c->st.done && !c->st.finish[0]) {
        oa_turn_say(os, "%sThe model server's stream ended before the answer was complete.",
                    c->streamed ? "\n\n" : "");
        oa_turn_end(os, "end_turn");
        return;
    }
    if (c->st.has_usage) {
        os->used = c->st.total_tokens;
        usage_update(os, os->used);
    }
    if (c->st.ncalls) {
        oa_exec_begin(os);
        return;
    }
    const char *f = c->st.finish;
    oa_turn_end(os, !strcmp(f, "length")           ? "max_tokens"
                    : !strcmp(f, "content_filter") ? "refusal"
                                                   : "end_turn");
}

/* Every tool call of the round ended: the next round, or the end when max_turns ran. */
void oa_turn_next_round(oa_sess *os)
{
    if (++os->round >= os->oa->o.max_turns) {
        oa_turn_say(os, "Stopped after %u tool rounds (--max-turns).", os->round);
        oa_turn_end(os, "max_turn_requests");
        return;
    }
    oa_turn_round(os);
}
