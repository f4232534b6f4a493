/* SPDX-License-Identifier: Apache-2.0 */
/* The deprecated HTTP+SSE transport (MCP 2024-11-05): a GET opens an event stream whose first
 * `endpoint` event names the URL to POST our messages to; everything the server says arrives
 * as `message` events on that one stream. The stream ending ends the server. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <curl/curl.h>

#include "acp/http.h"
#include "mcp/internal.h"
#include "acp/sse.h"

typedef struct sse_tp sse_tp;

typedef struct post_req {
    sse_tp *t;
    acp_http *h;
    char *req_id; /* a request's id text, to fail it if the POST fails */
    struct post_req *prev, *next;
} post_req;

struct sse_tp {
    mcp_server *s;
    acp_http_client *curl;
    acp_http *get;
    acp_sse parser;
    bool started;
    char *endpoint;
    post_req *posts;
    const char **post_headers; /* the same for every POST: made once, at start */
    uv_timer_t flush;
    bool stopping;
};

/* --- the event stream ----------------------------------------------------------------- */

static bool same_origin(CURLU *a, CURLU *b)
{
    static const CURLUPart parts[] = {CURLUPART_SCHEME, CURLUPART_HOST, CURLUPART_PORT};
    for (size_t i = 0; i < 3; i++) {
        char *x = NULL, *y = NULL;
        curl_url_get(a, parts[i], &x, CURLU_DEFAULT_PORT);
        curl_url_get(b, parts[i], &y, CURLU_DEFAULT_PORT);
        bool eq = x && y && !strcasecmp(x, y);
        curl_free(x);
        curl_free(y);
        if (!eq) return false;
    }
    return true;
}

/* The endpoint event: a URL, usually relative to the stream's. It must stay on the stream's
 * origin, so a server cannot send our messages (and the client's headers) elsewhere. */
static void got_endpoint(sse_tp *t, const char *data)
{
    mcp_server *s = t->s;
    CURLU *base = curl_url(), *u = curl_url();
    char *out = NULL;
    bool ok = base && u && !curl_url_set(base, CURLUPART_URL, s->url, 0) &&
              !curl_url_set(u, CURLUPART_URL, s->url, 0) &&
              !curl_url_set(u, CURLUPART_URL, data, 0) && same_origin(base, u) &&
              !curl_url_get(u, CURLUPART_URL, &out, 0);
    curl_url_cleanup(base);
    curl_url_cleanup(u);
    if (!ok) {
        curl_free(out);
        mcp_server_fail(s, "the endpoint event names no URL on the server's origin");
        return;
    }
    free(t->endpoint);
    t->endpoint = strdup(out);
    curl_free(out);
    if (!t->endpoint) {
        mcp_server_fail(s, "out of memory");
        return;
    }
    mcp_server_open(s);
}

static int on_event(void *user, const char *event, const char *data, size_t n)
{
    sse_tp *t = user;
    if (!strcmp(event, "endpoint")) {
        if (!t->endpoint) got_endpoint(t, data);
    } else if (!strcmp(event, "message") && n) {
        mcp_server_recv(t->s, data, n);
    }
    return t->stopping ? 1 : 0;
}

static int on_get_data(acp_http *h, const char *p, size_t n, void *user)
{
    sse_tp *t = user;
    if (!t->started) {
        t->started = true;
        const char *ct = acp_http_content_type(h);
        long st = acp_http_status(h);
        if (st != 200 || !ct || strncasecmp(ct, "text/event-stream", 17)) {
            t->get = NULL;
            mcp_server_fail(t->s, "GET the SSE URL answered HTTP %ld, not an event stream", st);
            return 1;
        }
    }
    return acp_sse_feed(&t->parser, p, n) || t->stopping ? 1 : 0;
}

static void on_get_done(acp_http *h, int result, long status, void *user)
{
    sse_tp *t = user;
    t->get = NULL;
    const char *err = acp_http_error(h);
    if (result)
        mcp_server_fail(t->s, "the event stream failed: %s", err ? err : "network error");
    else if (!t->started || status != 200)
        mcp_server_fail(t->s, "GET the SSE URL answered HTTP %ld, not an event stream", status);
    else
        mcp_server_fail(t->s, "the server closed the event stream");
}

/* --- posting -------------------------------------------------------------------------- */

static void post_free(post_req *p)
{
    sse_tp *t = p->t;
    if (p->prev)
        p->prev->next = p->next;
    else
        t->posts = p->next;
    if (p->next) p->next->prev = p->prev;
    if (p->h) acp_http_abort(p->h);
    free(p->req_id);
    free(p);
}

static void on_post_done(acp_http *h, int result, long status, void *user)
{
    post_req *p = user;
    sse_tp *t = p->t;
    bool bad = result || status < 200 || status >= 300;
    char msg[256];
    const char *err = acp_http_error(h);
    if (result)
        snprintf(msg, sizeof msg, "POST failed: %s", err ? err : "network error");
    else
        snprintf(msg, sizeof msg, "POST answered HTTP %ld", status);
    /* Freed first: failing the request may stop the transport, which frees every post. */
    char *id = p->req_id;
    p->req_id = NULL;
    p->h = NULL;
    post_free(p);
    if (bad && id)
        mcp_server_request_failed(t->s, (acp_span){id, strlen(id)}, msg);
    else if (bad)
        mcp_server_log(t->s, "the server refused a notification or response (%s)", msg);
    free(id);
}

static const acp_http_cbs post_cbs = {.struct_size = sizeof(acp_http_cbs), .on_done = on_post_done};

/* first, then the client's headers (borrowed: the server's configuration outlives us). */
static const char **headers(const mcp_server *s, const char *first)
{
    size_t n = 0;
    while (s->headers && s->headers[n]) n++;
    const char **h = calloc(n + 2, sizeof *h);
    if (!h) return NULL;
    h[0] = first;
    for (size_t i = 0; i < n; i++) h[i + 1] = s->headers[i];
    return h;
}

static void post(mcp_server *s, const char *msg, size_t n, acp_span id)
{
    sse_tp *t = s->tp;
    post_req *p = calloc(1, sizeof *p);
    if (!p) return;
    p->t = t;
    if (id.n) p->req_id = mcp_memdup(id.p, id.n);
    p->next = t->posts;
    if (p->next) p->next->prev = p;
    t->posts = p;
    p->h = acp_http_start(t->curl, "POST", t->endpoint, t->post_headers, msg, n, &post_cbs, p);
    if (!p->h) {
        char *rid = p->req_id;
        p->req_id = NULL;
        post_free(p);
        if (rid)
            mcp_server_request_failed(s, (acp_span){rid, strlen(rid)},
                                      "cannot start an HTTP request");
        free(rid);
    }
}

static void on_flush(uv_timer_t *tm)
{
    sse_tp *t = tm->data;
    mcp_server_drain(t->s, post);
}

static void on_output(mcp_server *s)
{
    sse_tp *t = s->tp;
    if (t && !t->stopping) uv_timer_start(&t->flush, on_flush, 0, 0);
}

static void start(mcp_server *s)
{
    sse_tp *t = calloc(1, sizeof *t);
    if (!t) {
        mcp_server_fail(s, "out of memory");
        return;
    }
    s->tp = t;
    t->s = s;
    uv_timer_init(s->loop, &t->flush);
    t->flush.data = t;
    acp_sse_init(&t->parser, on_event, t);
    t->parser.max = (size_t)64 << 20; /* one message per event: the connection's bound */
    t->post_headers = headers(s, "Content-Type: application/json");
    const char **h = headers(s, "Accept: text/event-stream");
    static const acp_http_cbs get_cbs = {
        .struct_size = sizeof(acp_http_cbs), .on_data = on_get_data, .on_done = on_get_done};
    if (h && t->post_headers && (t->curl = mcp_server_curl(s)))
        t->get = acp_http_start(t->curl, "GET", s->url, h, NULL, 0, &get_cbs, t);
    free(h);
    if (!t->get) mcp_server_fail(s, "cannot start the event stream request");
}

static void on_flush_closed(uv_handle_t *h)
{
    sse_tp *t = h->data;
    mcp_server *s = t->s;
    acp_sse_free(&t->parser);
    free(t->endpoint);
    free(t->post_headers);
    free(t);
    s->tp = NULL;
    mcp_server_stopped(s);
}

static void stop(mcp_server *s)
{
    sse_tp *t = s->tp;
    if (!t) {
        mcp_server_stopped(s);
        return;
    }
    t->stopping = true;
    if (t->get) acp_http_abort(t->get);
    t->get = NULL;
    while (t->posts) post_free(t->posts);
    uv_close((uv_handle_t *)&t->flush, on_flush_closed);
}

const mcp_transport_ops mcp_sse_ops = {.start = start, .on_output = on_output, .stop = stop};
