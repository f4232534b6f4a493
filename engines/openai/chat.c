/* SPDX-License-Identifier: Apache-2.0 */
/* Requests to the model server: the body, the headers (the API key only here, in memory), the
 * SSE stream into openai_stream, an error body kept for its message, and 429/503 retried after
 * Retry-After or a doubling backoff. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp/num.h"
#include "engines/openai/internal.h"

static int on_text(void *user, bool reasoning, const char *text, size_t n)
{
    oa_call *c = user;
    c->streamed = true;
    if (c->kind == OA_CHAT) return oa_turn_text(c->os, reasoning, text, n);
    if (c->kind == OA_SUBAGENT) return oa_subagent_text(c->os, c, reasoning, text, n);
    /* A summary or a title: collected, not shown; their reasoning is dropped. */
    return reasoning ? 0 : acp_buf_append(&c->text, text, n);
}

static void answered(oa_call *c, int result, long status)
{
    if (c->kind == OA_TITLE)
        oa_title_answered(c->os, c, result, status);
    else if (c->kind == OA_SUBAGENT)
        oa_subagent_answered(c->os, c, result, status);
    else
        oa_turn_answered(c->os, c, result, status);
}

static void resume(acp_turn *t, void *user)
{
    oa_call *c = user;
    if (c->h) acp_http_pause(c->h, false);
}

static int on_data(acp_http *h, const char *p, size_t n, void *user)
{
    oa_call *c = user;
    long status = acp_http_status(h);
    int rc;
    if (status < 200 || status > 299) { /* an error's body: kept for its message */
        size_t room = OA_ERRBODY_MAX - c->text.len;
        rc = acp_buf_append(&c->text, p, n < room ? n : room);
    } else {
        rc = openai_stream_feed(&c->st, p, n);
    }
    /* A client that does not read: the model's stream waits (in TCP, at the server) until the
     * connection drains, instead of in our output queue (3.5 GB in 18 s, issue 21). */
    if (!rc && c->kind == OA_CHAT && c->os->t && !acp_turn_writable(c->os->t)) {
        acp_http_pause(h, true);
        acp_turn_on_writable(c->os->t, resume, c);
    }
    if (!rc) return 0;
    /* A malformed stream, no memory, or the turn could not take the text: this exchange is
     * over, and is answered here (an exchange aborted from on_data gets no on_done). */
    acp_http_abort(h);
    c->h = NULL;
    if (!c->st.error)
        c->st.error = strdup(rc == ACP_ETOOBIG ? "an event over 16 MiB" : acp_strerror(rc));
    answered(c, 0, status);
    return 0; /* aborted: curl stops */
}

static int start(oa_call *c);

static void on_retry(uv_timer_t *t)
{
    oa_call *c = t->data;
    if (start(c)) {
        if (!c->st.error) c->st.error = strdup("the request could not be sent again");
        answered(c, -1, 0);
    }
}

/* 429 (rate limited) and what a gateway or a loading server answers for a moment (502, 503,
 * 504) are retried, before anything streamed, after the server's Retry-After (seconds, or
 * retry-after-ms as OpenAI sends it), else 1, 2, 4, 8, 16 s. */
static bool retry(oa_call *c, acp_http *h, long status)
{
    bool transient = status == 429 || status == 502 || status == 503 || status == 504;
    if (!transient || c->retries >= OA_RETRIES || c->streamed) return false;
    uint64_t ms = 1000ull << c->retries;
    const char *v = acp_http_header(h, "retry-after-ms"), *s = acp_http_header(h, "Retry-After");
    uint64_t x;
    if (v && *v) {
        if (!acp_parse_u64(v, 0, UINT64_MAX, &x)) ms = x;
    } else if (s && *s) { /* an HTTP date is not honoured: the backoff stands */
        if (!acp_parse_u64(s, 0, UINT64_MAX, &x))
            ms = x > OA_RETRY_MAX_S ? OA_RETRY_MAX_S * 1000ull : x * 1000;
    }
    if (ms > OA_RETRY_MAX_S * 1000ull) ms = OA_RETRY_MAX_S * 1000ull;
    if (!c->timer) {
        if (!(c->timer = malloc(sizeof *c->timer))) return false;
        uv_timer_init(c->os->oa->loop, c->timer);
        c->timer->data = c;
    }
    c->retries++;
    uv_timer_start(c->timer, on_retry, ms, 0);
    return true;
}

static void on_done(acp_http *h, int result, long status, void *user)
{
    oa_call *c = user;
    c->h = NULL;
    if (!result && retry(c, h, status)) return;
    /* The message for a transport failure is read now: the handle is gone after this. */
    if (result && !c->st.error) {
        const char *e = acp_http_error(h);
        char line[512];
        snprintf(line, sizeof line, "%s", e ? e : "transfer failed");
        c->st.error = strdup(line);
    }
    answered(c, result, status);
}

static int start(oa_call *c)
{
    openai *oa = c->os->oa;
    openai_stream_free(&c->st);
    openai_stream_init(&c->st, on_text, c);
    c->text.len = 0;
    c->streamed = false;
    if (!oa->http && !(oa->http = acp_http_client_new(oa->loop))) return ACP_EIO;
    const char **headers = NULL;
    char url[2048];
    int rc = oa_route(oa, acp_session_agent(c->os->s), "/chat/completions", url, sizeof url,
                      "Accept: text/event-stream", &headers);
    if (rc) return rc;
    static const acp_http_cbs cbs = {
        .struct_size = sizeof(acp_http_cbs), .on_data = on_data, .on_done = on_done};
    c->h = acp_http_start(oa->http, "POST", url, headers, c->body.data, c->body.len, &cbs, c);
    oa_route_free(headers);
    return c->h ? 0 : ACP_ENOMEM;
}

/* The route is the connection's (providers/set) or the engine's own: a client's headers
 * replace everything the engine would send of its own, its key above all. */
int oa_route(openai *oa, acp_agent *a, const char *path, char *url, size_t n, const char *accept,
             const char ***out)
{
    const char *base = oa->o.base_url, *type = "openai";
    const char *const *client = NULL;
    int set = a ? acp_agent_provider(a, "openai", &type, &base, &client) : 0;
    if (set < 0) set = 0, base = oa->o.base_url, type = "openai";
    if (!type || !base) return ACP_EACCES; /* disabled by the client */
    size_t len = strlen(base);
    while (len && base[len - 1] == '/') len--;
    snprintf(url, n, "%.*s%s", (int)len, base, path);
    size_t nc = 0;
    while (client && client[nc]) nc++;
    const char **h = calloc(nc + 5, sizeof *h); /* 2, the client's or a key, NULL, owned */
    if (!h) return ACP_ENOMEM;
    size_t k = 0;
    h[k++] = "Content-Type: application/json";
    h[k++] = accept;
    if (set) {
        for (size_t i = 0; i < nc; i++) h[k++] = client[i]; /* borrowed */
    } else if (oa->o.api_key) {
        char *auth = NULL;
        if (asprintf(&auth, "Authorization: Bearer %s", oa->o.api_key) < 0) {
            free(h);
            return ACP_ENOMEM;
        }
        h[k++] = auth;
        h[k] = NULL;
        h[k + 1] = auth; /* the one we own, after the terminator: oa_route_free wipes it */
        *out = h;
        return 0;
    }
    *out = h;
    return 0;
}

void oa_route_free(const char **headers)
{
    if (!headers) return;
    size_t k = 0;
    while (headers[k]) k++;
    char *own = (char *)headers[k + 1];
    if (own) {
        explicit_bzero(own, strlen(own));
        free(own);
    }
    free(headers);
}

int oa_request(oa_sess *os, oa_call *c, enum oa_req kind, acp_buf *body)
{
    oa_call_stop(c);
    c->os = os;
    c->kind = kind;
    c->retries = 0;
    acp_buf_free(&c->body);
    c->body = *body;
    *body = (acp_buf){0};
    return start(c);
}

void oa_call_stop(oa_call *c)
{
    if (c->h) acp_http_abort(c->h);
    c->h = NULL;
    if (c->timer) uv_timer_stop(c->timer);
}

static void close_free(uv_handle_t *h)
{
    free(h);
}

void oa_call_free(oa_call *c)
{
    oa_call_stop(c);
    if (c->timer) uv_close((uv_handle_t *)c->timer, close_free);
    c->timer = NULL;
    openai_stream_free(&c->st);
    acp_buf_free(&c->text);
    acp_buf_free(&c->body);
}

int oa_body_begin(oa_sess *os, acp_buf *b, const char *system, bool history)
{
    openai *oa = os->oa;
    const char *model = acp_session_config(os->s, "model");
    acp_jw w;
    acp_jw_init(&w, b);
    acp_jw_obj(&w);
    acp_jw_kstr(&w, "model", model ? model : oa->o.model);
    acp_jw_kbool(&w, "stream", true);
    acp_jw_key(&w, "stream_options");
    acp_jw_obj(&w);
    acp_jw_kbool(&w, "include_usage", true);
    acp_jw_obj_end(&w);
    if (oa->o.max_tokens) acp_jw_kint(&w, "max_tokens", oa->o.max_tokens);
    if (acp_jw_status(&w)) return acp_jw_status(&w);
    if (acp_buf_append(b, ",\"messages\":[", strlen(",\"messages\":["))) return ACP_ENOMEM;
    int sys = openai_history_render_system(&os->h, system, b);
    if (sys < 0) return sys;
    if (!history) return sys;
    size_t at = b->len;
    if (sys && acp_buf_putc(b, ',')) return ACP_ENOMEM;
    size_t before = b->len;
    if (openai_history_render(&os->h, b)) return ACP_ENOMEM;
    if (b->len == before) b->len = at; /* no messages: no comma */
    return 0;
}

int oa_body_end(oa_sess *os, acp_buf *b, bool tools, const char *tool_choice)
{
    int rc = acp_buf_putc(b, ']');
    if (tools && os->tools.n) {
        rc |= acp_buf_append(b, ",\"tools\":", strlen(",\"tools\":"));
        rc |= acp_buf_append(b, os->tools.json.data, os->tools.json.len);
        if (tool_choice) rc |= acp_buf_printf(b, ",\"tool_choice\":\"%s\"", tool_choice);
    }
    rc |= acp_buf_putc(b, '}');
    return rc ? ACP_ENOMEM : 0;
}
