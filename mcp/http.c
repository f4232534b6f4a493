/* SPDX-License-Identifier: Apache-2.0 */
/* MCP Streamable HTTP (revision 2025-11-25, compatible with 2025-06-18 and 2025-03-26).
 *
 * Each message we send is one POST. A request's POST answers with one JSON message or with an
 * event stream carrying the response (and whatever the server sends meanwhile). After the
 * handshake a GET opens the stream for messages the server starts itself. A stream that ends
 * before the response it owes is resumed with a GET carrying Last-Event-ID, after the
 * server's `retry` delay, when the server gave its events ids; without ids the request fails.
 * The server's Mcp-Session-Id goes on every later request, and the MCP session is DELETEd at
 * the end. */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "acp/http.h"
#include "mcp/internal.h"
#include "acp/sse.h"

#define DEFAULT_RETRY_MS 1000
#define MAX_RESUMES      5 /* resumptions of one stream in a row without a new event */
#define MAX_JSON_BODY    (64u << 20)

typedef struct http_tp http_tp;

typedef struct stream {
    http_tp *t;
    acp_http *h;
    bool get;      /* a GET (standalone or resuming); else the POST of one message */
    char *req_id;  /* JSON id text of the request whose answer this stream owes, or NULL */
    bool answered; /* that answer arrived */
    bool sse, started, got_event;
    int resumes;
    acp_buf json; /* an application/json answer */
    acp_sse parser;
    uv_timer_t timer; /* the reconnection delay */
    int holds;        /* callbacks of ours running on it: see stream_free() */
    bool freed;
    struct stream *prev, *next;
} stream;

struct http_tp {
    mcp_server *s;
    acp_http_client *curl;
    char *session_id;
    stream *streams;
    uv_timer_t flush; /* sends the conn's output, outside the conn's own call stack */
    uv_timer_t grace; /* bounds the DELETE at stop */
    acp_http *del;
    bool stopping;
    int handles;
};

static void start_get(http_tp *t, stream *st);
static void ended(stream *st, acp_http *h, int result, long status);

/* --- bookkeeping ---------------------------------------------------------------------- */

static void maybe_finish(http_tp *t)
{
    if (!t->stopping || t->handles > 0 || t->del) return;
    mcp_server *s = t->s;
    free(t->session_id);
    free(t);
    s->tp = NULL;
    mcp_server_stopped(s);
}

static void on_closed(uv_handle_t *h)
{
    http_tp *t = h->data;
    if (h->type == UV_TIMER && h != (uv_handle_t *)&t->flush && h != (uv_handle_t *)&t->grace) {
        stream *st = (stream *)((char *)h - offsetof(stream, timer));
        free(st);
    }
    t->handles--;
    maybe_finish(t);
}

static stream *stream_new(http_tp *t, bool get, const char *req_id, size_t idn)
{
    stream *st = calloc(1, sizeof *st);
    if (!st) return NULL;
    if (req_id && !(st->req_id = mcp_memdup(req_id, idn))) {
        free(st);
        return NULL;
    }
    st->t = t;
    st->get = get;
    uv_timer_init(t->s->loop, &st->timer);
    st->timer.data = t;
    t->handles++;
    st->next = t->streams;
    if (st->next) st->next->prev = st;
    t->streams = st;
    return st;
}

static void stream_finalize(stream *st)
{
    free(st->req_id);
    acp_buf_free(&st->json);
    acp_sse_free(&st->parser);
    uv_close((uv_handle_t *)&st->timer, on_closed);
}

/* Ends the stream. Anything we call may end up here for any stream (a message fails the
 * server, which stops the transport), so a stream whose callback is running (held) is only
 * unlinked now and finalized when the hold ends. */
static void stream_free(stream *st)
{
    if (st->freed) return;
    st->freed = true;
    http_tp *t = st->t;
    if (st->prev)
        st->prev->next = st->next;
    else
        t->streams = st->next;
    if (st->next) st->next->prev = st->prev;
    if (st->h) acp_http_abort(st->h);
    st->h = NULL;
    uv_timer_stop(&st->timer);
    if (!st->holds) stream_finalize(st);
}

static void hold(stream *st)
{
    st->holds++;
}

/* True when the stream is gone (finalized now or ending): the caller must not use it. */
static bool unhold(stream *st)
{
    bool gone = st->freed;
    if (--st->holds == 0 && gone) stream_finalize(st);
    return gone;
}

/* One header line into *slot; false (and *slot NULL) on ENOMEM. */
static bool put(char **slot, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool put(char **slot, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(slot, fmt, ap) < 0) *slot = NULL; /* asprintf leaves it undefined then */
    va_end(ap);
    return *slot != NULL;
}

/* Request headers for every exchange: ours, then the client's (which may not override the
 * protocol headers: those come first and servers take the first). */
static char **headers(http_tp *t, const char *accept, const char *last_id)
{
    mcp_server *s = t->s;
    size_t nuser = 0;
    while (s->headers && s->headers[nuser]) nuser++;
    char **h = calloc(nuser + 6, sizeof *h);
    if (!h) return NULL;
    size_t k = 0;
    bool ok = put(&h[k++], "%s", accept);
    if (ok && !strncmp(accept, "Accept: application/json", 24))
        ok = put(&h[k++], "Content-Type: application/json");
    if (ok && t->session_id) ok = put(&h[k++], "Mcp-Session-Id: %s", t->session_id);
    if (ok && s->protocol) ok = put(&h[k++], "MCP-Protocol-Version: %s", s->protocol);
    if (ok && last_id) ok = put(&h[k++], "Last-Event-ID: %s", last_id);
    for (size_t i = 0; i < nuser && ok; i++) ok = put(&h[k++], "%s", s->headers[i]);
    if (!ok) { /* the lines so far, then the NULL of the one that failed */
        mcp_strv_free(h);
        return NULL;
    }
    return h;
}

/* --- incoming messages ---------------------------------------------------------------- */

/* One JSON-RPC message from the server, on any stream. */
static void deliver(stream *st, const char *msg, size_t n)
{
    if (n == 0) return; /* a priming event: only its id matters */
    if (acp_json_validate(msg, n, 128)) {
        mcp_server_log(st->t->s, "ignored a message that is not JSON");
        return;
    }
    acp_span v = {msg, n}, id;
    if (st->req_id && !acp_json_member(v, "method", &(acp_span){0}) &&
        acp_json_member(v, "id", &id) && id.n == strlen(st->req_id) &&
        !memcmp(id.p, st->req_id, id.n))
        st->answered = true;
    mcp_server_recv(st->t->s, msg, n);
}

static int on_event(void *user, const char *event, const char *data, size_t n)
{
    stream *st = user;
    st->got_event = true;
    st->resumes = 0;
    if (!strcmp(event, "message")) deliver(st, data, n);
    return st->freed ? 1 : 0;
}

/* The first bytes or the end of a response: its headers are complete. */
static void response_started(stream *st)
{
    if (st->started) return;
    st->started = true;
    http_tp *t = st->t;
    const char *sid = acp_http_header(st->h, "Mcp-Session-Id");
    if (sid && !t->session_id) t->session_id = strdup(sid);
    const char *ct = acp_http_content_type(st->h);
    st->sse = acp_http_status(st->h) == 200 && ct && !strncasecmp(ct, "text/event-stream", 17);
    if (st->sse && !st->parser.on_event) {
        acp_sse_init(&st->parser, on_event, st);
        st->parser.max = MAX_JSON_BODY; /* an event holds one message: the same bound */
    }
    if (st->sse) acp_sse_restart(&st->parser);
}

static int on_data(acp_http *h, const char *p, size_t n, void *user)
{
    stream *st = user;
    if (st->freed) return 1;
    response_started(st);
    if (!st->sse) return st->json.len + n > MAX_JSON_BODY || acp_buf_append(&st->json, p, n);
    hold(st);
    int rc = acp_sse_feed(&st->parser, p, n);
    return unhold(st) || rc ? 1 : 0;
}

/* A whole application/json answer: one message, or (2025-03-26) a batch of them. */
static void deliver_json(stream *st)
{
    const char *p = st->json.data;
    size_t n = st->json.len;
    while (n && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) p++, n--;
    if (n && *p == '[') {
        json_t *arr = json_loadb(p, n, 0, NULL);
        size_t i;
        json_t *m;
        json_array_foreach(arr, i, m)
        {
            char *text = json_dumps(m, JSON_COMPACT);
            if (text) deliver(st, text, strlen(text));
            free(text);
        }
        json_decref(arr);
        return;
    }
    deliver(st, p, n);
}

static void on_resume_timer(uv_timer_t *tm)
{
    http_tp *t = tm->data;
    stream *st = (stream *)((char *)tm - offsetof(stream, timer));
    if (!t->stopping) start_get(t, st);
}

static void schedule_resume(stream *st)
{
    long ms = st->parser.retry_ms >= 0 ? st->parser.retry_ms : DEFAULT_RETRY_MS;
    st->got_event = false;
    st->resumes++;
    uv_timer_start(&st->timer, on_resume_timer, (uint64_t)ms, 0);
}

static void fail_request(stream *st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail_request(stream *st, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    acp_span id = {st->req_id, strlen(st->req_id)};
    mcp_server_request_failed(st->t->s, id, msg);
}

/* Every path ends the stream, or schedules its resumption as the only thing it does. */
static void ended(stream *st, acp_http *h, int result, long status)
{
    http_tp *t = st->t;
    mcp_server *s = t->s;
    response_started(st);
    st->h = NULL;
    /* A request we gave up on (cancelled, timed out) is owed nothing any more. */
    if (st->req_id && !st->answered &&
        !mcp_server_awaits(s, (acp_span){st->req_id, strlen(st->req_id)}))
        st->answered = true;
    bool resumable = st->parser.last_id && st->req_id && !st->answered;
    if (result != 0) {
        const char *err = acp_http_error(h);
        if (resumable && st->resumes < MAX_RESUMES) {
            schedule_resume(st);
            return;
        }
        if (st->req_id && !st->answered)
            fail_request(st, "HTTP exchange failed: %s", err ? err : "network error");
        else if (!st->req_id && !st->get)
            mcp_server_log(s, "sending a notification failed: %s", err ? err : "network error");
        else if (st->get && !st->req_id && st->sse && st->resumes < MAX_RESUMES) {
            schedule_resume(st); /* the standalone stream broke: reopen it */
            return;
        }
        stream_free(st);
        return;
    }
    if (status == 404 && t->session_id) {
        /* The MCP session is gone (the server restarted, or expired it): every stream
         * belongs to it, and a new one starts with a new initialize. */
        free(t->session_id);
        t->session_id = NULL;
        while (t->streams) stream_free(t->streams);
        mcp_server_reinit(s, "the server ended the MCP session (HTTP 404)");
        return;
    }
    if (st->sse) {
        /* The stream ended. What it owed may follow on a resumed stream. */
        if (st->req_id && !st->answered) {
            if (st->parser.last_id && st->resumes < MAX_RESUMES) {
                schedule_resume(st);
                return;
            }
            fail_request(st, "the server closed the event stream without answering");
        } else if (st->get && !st->req_id && !t->stopping) {
            if (st->got_event || st->resumes < MAX_RESUMES) {
                schedule_resume(st);
                return;
            }
        }
        stream_free(st);
        return;
    }
    if (st->get) {
        /* No stream here (405: the server offers none). A resumption that cannot happen
         * loses the answer. */
        if (st->req_id && !st->answered)
            fail_request(st, "cannot resume the event stream: HTTP %ld", status);
        stream_free(st);
        return;
    }
    if (st->json.len) deliver_json(st);
    if (st->freed) return;
    if (st->req_id && !st->answered) {
        if (status >= 200 && status < 300)
            fail_request(st, "the server's answer (HTTP %ld) held no response", status);
        else
            fail_request(st, "the server answered HTTP %ld", status);
    } else if (!st->req_id && (status < 200 || status >= 300)) {
        mcp_server_log(s, "the server refused a notification or response: HTTP %ld", status);
    }
    stream_free(st);
}

static void on_done(acp_http *h, int result, long status, void *user)
{
    stream *st = user;
    if (st->freed) return;
    hold(st);
    ended(st, h, result, status);
    unhold(st);
}

static const acp_http_cbs stream_cbs = {
    .struct_size = sizeof(acp_http_cbs), .on_data = on_data, .on_done = on_done};

/* --- outgoing ------------------------------------------------------------------------- */

static void start_get(http_tp *t, stream *st)
{
    char **h = headers(t, "Accept: text/event-stream", st->parser.last_id);
    st->started = false;
    st->sse = false;
    st->h = h ? acp_http_start(t->curl, "GET", t->s->url, (const char *const *)h, NULL, 0,
                               &stream_cbs, st)
              : NULL;
    mcp_strv_free(h);
    if (!st->h) {
        hold(st);
        if (st->req_id) fail_request(st, "cannot open a GET stream");
        stream_free(st);
        unhold(st);
    }
}

static void post(mcp_server *s, const char *line, size_t n, acp_span id)
{
    http_tp *t = s->tp;
    stream *st = stream_new(t, false, id.n ? id.p : NULL, id.n);
    char **h = st ? headers(t, "Accept: application/json, text/event-stream", NULL) : NULL;
    if (st && h)
        st->h = acp_http_start(t->curl, "POST", t->s->url, (const char *const *)h, line, n,
                               &stream_cbs, st);
    mcp_strv_free(h);
    if (st && !st->h) {
        hold(st);
        if (st->req_id) fail_request(st, "cannot start an HTTP request");
        stream_free(st);
        unhold(st);
    } else if (!st) {
        mcp_server_fail(t->s, "out of memory");
    }
}

static void on_flush(uv_timer_t *tm)
{
    http_tp *t = tm->data;
    mcp_server_drain(t->s, post);
}

static void on_output(mcp_server *s)
{
    http_tp *t = s->tp;
    if (t && !t->stopping) uv_timer_start(&t->flush, on_flush, 0, 0);
}

static void on_initialized(mcp_server *s)
{
    http_tp *t = s->tp;
    stream *st = stream_new(t, true, NULL, 0);
    if (st) start_get(t, st);
}

static void start(mcp_server *s)
{
    http_tp *t = calloc(1, sizeof *t);
    if (!t) {
        mcp_server_fail(s, "out of memory");
        return;
    }
    s->tp = t;
    t->s = s;
    uv_timer_init(s->loop, &t->flush);
    uv_timer_init(s->loop, &t->grace);
    t->flush.data = t->grace.data = t;
    t->handles = 2;
    if ((t->curl = mcp_server_curl(s))) mcp_server_open(s); /* else it failed the server */
}

/* --- teardown ------------------------------------------------------------------------- */

static void end_delete(http_tp *t)
{
    if (t->del) acp_http_abort(t->del);
    t->del = NULL;
    uv_close((uv_handle_t *)&t->grace, on_closed);
}

static void on_delete_done(acp_http *h, int result, long status, void *user)
{
    http_tp *t = user;
    t->del = NULL;
    end_delete(t);
}

static void on_grace(uv_timer_t *tm)
{
    end_delete(tm->data);
}

static void stop(mcp_server *s)
{
    http_tp *t = s->tp;
    if (!t) {
        mcp_server_stopped(s);
        return;
    }
    t->stopping = true;
    while (t->streams) stream_free(t->streams);
    uv_close((uv_handle_t *)&t->flush, on_closed);
    static const acp_http_cbs del_cbs = {.struct_size = sizeof(acp_http_cbs),
                                         .on_done = on_delete_done};
    char **h = t->session_id && t->curl ? headers(t, "Accept: application/json", NULL) : NULL;
    if (h)
        t->del =
            acp_http_start(t->curl, "DELETE", s->url, (const char *const *)h, NULL, 0, &del_cbs, t);
    mcp_strv_free(h);
    if (t->del)
        uv_timer_start(&t->grace, on_grace, mcp_server_grace_ms(s), 0);
    else
        end_delete(t);
}

const mcp_transport_ops mcp_http_ops = {
    .start = start, .on_output = on_output, .on_initialized = on_initialized, .stop = stop};
