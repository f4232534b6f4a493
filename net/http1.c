/* SPDX-License-Identifier: Apache-2.0 */
/* The HTTP/1.1 server wire (net/http1.h): the parser on a socket, one exchange at a time, and
 * the response writer of net/http.h (Content-Length or chunked bodies).
 *
 * Requests are answered in order. While one is being answered the wire reads on (so it sees
 * a client that goes away) but only stores what arrives, up to a bound past which it stops
 * reading: pipelined requests wait their turn without costing unbounded memory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp/error.h"
#include "net/http1.h"
#include "net/sock_server.h"

#define MAX_HEAD     (64u << 10)
#define PENDING_MAX  (64u << 10) /* bytes kept from a client while its request is answered */
#define MAX_HEAD_OUT 8192        /* a response head we write */

typedef struct h1conn h1conn;

typedef struct h1req {
    acp_http_req r;
    h1conn *c;
    size_t remaining; /* Content-Length bytes still to write */
    bool started, chunked, streaming, bodyless, close_after;
    bool unread; /* refused with its body (or more) still on the way */
} h1req;

struct h1conn {
    acp_sock *s;
    const acp_net_limits *lim;
    const acp_wire_cbs *cbs;
    void *user;
    acp_http1_parser p;
    acp_buf pending; /* read while an exchange was outstanding */
    acp_buf out;     /* one chunk's framing and data, written at once */
    h1req *cur;
    uv_timer_t head_timer;
    bool in_head;   /* on_head is running: anything it answers ends the connection */
    bool in_feed;   /* feed() is on the stack */
    bool detached;  /* the socket was handed to the router */
    bool ending;    /* the socket is closing: parse nothing more */
    bool lingering; /* answered a refusal; reading and dropping until the peer closes */
    bool head_timing;
    bool body_timing; /* head_timer paces the body (ACP_NET_BODY_MIN_PACE) */
    size_t body_mark; /* body bytes at the last pace check */
    bool dead;        /* the socket closed; waiting for the timer's close callback */
};

static void feed(h1conn *c, const char *data, size_t n);

/* --- refusing before an exchange exists ----------------------------------------------------- */

static void write_refusal(acp_sock *s, int status, const char *text, const acp_http_field *fields,
                          size_t nfields)
{
    acp_buf b = {0};
    acp_buf_printf(&b, "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\n", status,
                   acp_http_reason(status));
    for (size_t i = 0; i < nfields; i++)
        acp_buf_printf(&b, "%s: %s\r\n", fields[i].name, fields[i].value);
    acp_buf_printf(&b, "Content-Length: %zu\r\nConnection: close\r\n\r\n%s", strlen(text) + 1,
                   text);
    acp_buf_putc(&b, '\n');
    if (b.data) acp_sock_write(s, b.data, b.len);
    acp_buf_free(&b);
}

void acp_http1_refuse(acp_sock *s, int status, const char *text, const acp_http_field *fields,
                      size_t nfields)
{
    write_refusal(s, status, text, fields, nfields);
    acp_sock_close(s);
}

/* --- the exchange ---------------------------------------------------------------------------- */

static bool field_ok(const char *s)
{
    for (; *s; s++)
        if (*s == '\r' || *s == '\n') return false;
    return true;
}

static int res_start(acp_http_req *r, int status, const acp_http_field *f, size_t n,
                     size_t body_len)
{
    h1req *q = (h1req *)r;
    h1conn *c = q->c;
    if (!c || q->started) return ACP_EIO;
    if (status < 100 || status > 999) return ACP_EINVAL;
    q->started = true;
    if (c->in_head) q->close_after = q->unread = true;
    acp_buf b = {0};
    acp_buf_printf(&b, "HTTP/1.1 %d %s\r\n", status, acp_http_reason(status));
    for (size_t i = 0; i < n; i++) {
        if (!field_ok(f[i].name) || !field_ok(f[i].value)) {
            acp_buf_free(&b);
            return ACP_EINVAL;
        }
        acp_buf_printf(&b, "%s: %s\r\n", f[i].name, f[i].value);
    }
    if (status == 101) {
        q->bodyless = true;
    } else if (status < 200 || status == 204 || status == 304 || !strcmp(r->method, "HEAD")) {
        q->bodyless = true;
        if (status >= 200 && body_len != ACP_HTTP_STREAMING)
            acp_buf_printf(&b, "Content-Length: %zu\r\n", body_len);
    } else if (body_len == ACP_HTTP_STREAMING) {
        q->streaming = true;
        if (c->p.http10)
            q->close_after = true; /* an HTTP/1.0 client reads to the end of the connection */
        else
            acp_buf_printf(&b, "Transfer-Encoding: chunked\r\n");
        q->chunked = !c->p.http10;
    } else {
        acp_buf_printf(&b, "Content-Length: %zu\r\n", body_len);
        q->remaining = body_len;
    }
    if (!c->p.keep_alive) q->close_after = true;
    if (status != 101) {
        if (q->close_after)
            acp_buf_printf(&b, "Connection: close\r\n");
        else if (c->p.http10)
            acp_buf_printf(&b, "Connection: keep-alive\r\n");
    }
    acp_buf_printf(&b, "\r\n");
    int rc = b.data ? acp_sock_write(c->s, b.data, b.len) : ACP_ENOMEM;
    acp_buf_free(&b);
    return rc ? ACP_EIO : 0;
}

static int res_write(acp_http_req *r, const void *p, size_t n)
{
    h1req *q = (h1req *)r;
    h1conn *c = q->c;
    if (!c || !q->started) return ACP_EIO;
    if (n == 0) return 0;
    /* A HEAD's body is the one GET would send, not sent: the profile need not know. */
    if (q->bodyless) return strcmp(r->method, "HEAD") ? ACP_EINVAL : 0;
    if (!q->chunked) {
        if (!q->streaming) {
            if (n > q->remaining) return ACP_EINVAL;
            q->remaining -= n;
        }
        return acp_sock_write(c->s, p, n) ? ACP_EIO : 0;
    }
    c->out.len = 0;
    if (acp_buf_printf(&c->out, "%zx\r\n", n) || acp_buf_append(&c->out, p, n) ||
        acp_buf_append(&c->out, "\r\n", 2))
        return ACP_ENOMEM;
    int rc = acp_sock_write(c->s, c->out.data, c->out.len);
    c->out.len = 0;
    acp_buf_shrink(&c->out, 65536);
    return rc ? ACP_EIO : 0;
}

static void req_free(h1req *q)
{
    free(q);
}

/* The exchange is over: the next request may be parsed, or the connection ends. */
static void linger(h1conn *c);

static void exchange_done(h1conn *c, bool close_after)
{
    h1req *q = c->cur;
    bool unread = q->unread;
    c->cur = NULL;
    req_free(q);
    acp_sock_idle_hold(c->s, false);
    acp_http1_parser_reset(&c->p);
    if (close_after) {
        c->pending.len = 0;
        c->ending = true;
        if (unread)
            linger(c);
        else
            acp_sock_close(c->s);
        return;
    }
    acp_sock_pause(c->s, false);
    if (c->in_feed || !c->pending.len) return; /* feed() goes on with what it has */
    acp_buf more = c->pending;
    c->pending = (acp_buf){0};
    feed(c, more.data, more.len);
    acp_buf_free(&more);
}

static void res_end(acp_http_req *r)
{
    h1req *q = (h1req *)r;
    h1conn *c = q->c;
    if (!q->started) res_start(r, 500, NULL, 0, 0);
    if (q->chunked) acp_sock_write(c->s, "0\r\n\r\n", 5);
    /* A body shorter than announced leaves the client waiting for bytes that never come. */
    bool broken = !q->chunked && !q->bodyless && q->remaining;
    exchange_done(c, q->close_after || broken);
}

static size_t res_queued(const acp_http_req *r)
{
    const h1req *q = (const h1req *)r;
    return q->c ? acp_sock_queued(q->c->s) : 0;
}

static const acp_http_req_ops h1_ops = {res_start, res_write, res_end, res_queued};

/* --- the connection -------------------------------------------------------------------------- */

static void conn_free(uv_handle_t *h)
{
    h1conn *c = h->data;
    acp_http1_parser_free(&c->p);
    acp_buf_free(&c->pending);
    acp_buf_free(&c->out);
    free(c);
}

static void conn_end(h1conn *c)
{
    if (c->dead) return;
    c->dead = true;
    h1req *q = c->cur;
    c->cur = NULL;
    if (q) {
        /* net/http.h: a profile holding an exchange watches it and drops it here. */
        q->c = NULL;
        if (q->r.cbs.on_abort) q->r.cbs.on_abort(&q->r, q->r.user);
        req_free(q);
    }
    uv_close((uv_handle_t *)&c->head_timer, conn_free);
}

static void linger_done(uv_timer_t *t)
{
    h1conn *c = t->data;
    acp_sock_close(c->s);
}

/* After a refusal the client may still be sending (the body we did not read, the rest of an
 * oversized head). Closing now would meet that data with a reset, which can destroy the
 * answer before the client reads it; so the answer goes out, what arrives is dropped, and the
 * socket closes when the client closes or after the close timeout (nginx's lingering close). */
static void linger(h1conn *c)
{
    c->ending = c->lingering = true;
    c->body_timing = false;
    c->pending.len = 0;
    acp_sock_pause(c->s, false);
    acp_sock_idle_hold(c->s, true);
    uv_timer_start(&c->head_timer, linger_done, c->lim->close_timeout_ms, 0);
}

static void head_timeout(uv_timer_t *t)
{
    h1conn *c = t->data;
    if (c->cur || c->ending) return;
    c->ending = true;
    acp_http1_refuse(c->s, 408, "request head not received in time", NULL, 0);
}

static void body_tick(uv_timer_t *t)
{
    h1conn *c = t->data;
    if (c->p.body.len - c->body_mark >= ACP_NET_BODY_MIN_PACE) {
        c->body_mark = c->p.body.len;
        return;
    }
    write_refusal(c->s, 408, "request body not received in time", NULL, 0);
    linger(c);
}

/* While a head is on its way the head timeout governs, not the idle timeout (a trickle of
 * bytes would otherwise keep restarting it). */
static void start_head_timer(h1conn *c)
{
    if (c->head_timing) return;
    c->head_timing = true;
    acp_sock_idle_hold(c->s, true);
    uv_timer_start(&c->head_timer, head_timeout, c->lim->header_timeout_ms, 0);
}

static void stop_head_timer(h1conn *c)
{
    if (!c->head_timing) return;
    c->head_timing = false;
    uv_timer_stop(&c->head_timer);
    acp_sock_idle_hold(c->s, false);
}

/* Parses data; stops at an exchange that is still being answered and keeps the rest. */
static void feed(h1conn *c, const char *data, size_t n)
{
    c->in_feed = true;
    while (!c->dead && !c->detached && !c->ending) {
        if (c->cur && c->cur->r.body) { /* routed and not answered yet: keep the rest */
            if (n && acp_buf_append(&c->pending, data, n)) acp_sock_abort(c->s);
            if (c->pending.len > PENDING_MAX) acp_sock_pause(c->s, true);
            break;
        }
        size_t used = 0;
        int ev = acp_http1_parse(&c->p, data, n, &used);
        data += used;
        n -= used;
        if (ev == ACP_HTTP1_MORE) {
            if (!c->cur && c->p.head.len) start_head_timer(c);
            break;
        }
        if (ev == ACP_HTTP1_ERROR) {
            stop_head_timer(c);
            write_refusal(c->s, c->p.status, c->p.error, NULL, 0);
            linger(c);
            break;
        }
        if (ev == ACP_HTTP1_HEAD) {
            stop_head_timer(c);
            h1req *q = calloc(1, sizeof *q);
            if (!q) {
                acp_sock_abort(c->s);
                break;
            }
            q->c = c;
            q->r.ops = &h1_ops;
            q->r.method = c->p.method;
            q->r.path = c->p.target;
            q->r.headers = c->p.fields;
            q->r.nheaders = c->p.nfields;
            q->r.origin = acp_sock_id(c->s);
            c->cur = q;
            acp_sock_idle_hold(c->s, true);
            /* An answer from on_head leaves the body unread: the connection cannot go on
             * unless there is none. */
            c->in_head = c->p.chunked || c->p.need > 0;
            bool go = c->cbs->on_head ? c->cbs->on_head(&q->r, c->user) : true;
            c->in_head = false;
            if (!go) {
                if (c->cur == q && !c->dead) exchange_done(c, true); /* it did not answer */
                continue; /* the next request, unless the connection is ending */
            }
            if (c->p.expect_continue) acp_sock_write(c->s, "HTTP/1.1 100 Continue\r\n\r\n", 25);
            if (c->p.chunked || c->p.need > 0) {
                c->body_timing = true;
                c->body_mark = 0;
                uv_timer_start(&c->head_timer, body_tick, c->lim->header_timeout_ms,
                               c->lim->header_timeout_ms);
            }
            continue;
        }
        /* ACP_HTTP1_REQUEST */
        if (c->body_timing) {
            c->body_timing = false;
            uv_timer_stop(&c->head_timer);
        }
        h1req *q = c->cur;
        q->r.body = c->p.body.data ? c->p.body.data : "";
        q->r.body_len = c->p.body.len;
        bool taken = c->cbs->on_request(&q->r, c->s, data, n, c->user);
        if (taken) {
            /* The socket is the router's now (it bound it): forget it, and the request. */
            c->detached = true;
            c->cur = NULL;
            req_free(q);
            acp_sock_idle_hold(c->s, false);
            uv_close((uv_handle_t *)&c->head_timer, conn_free);
            return;
        }
    }
    c->in_feed = false;
}

static void on_read(acp_sock *s, const char *p, size_t n, void *user)
{
    h1conn *c = user;
    if (c->lingering) return;
    if (c->pending.len) { /* order: what waited goes first */
        if (acp_buf_append(&c->pending, p, n)) {
            acp_sock_abort(s);
            return;
        }
        if (c->cur) {
            if (c->pending.len > PENDING_MAX) acp_sock_pause(s, true);
            return;
        }
        acp_buf more = c->pending;
        c->pending = (acp_buf){0};
        feed(c, more.data, more.len);
        acp_buf_free(&more);
        return;
    }
    feed(c, p, n);
}

static void on_drain(acp_sock *s, void *user)
{
    h1conn *c = user;
    if (c->cur && c->cur->r.cbs.on_drain) c->cur->r.cbs.on_drain(&c->cur->r, c->cur->r.user);
}

static void on_close(acp_sock *s, const char *reason, void *user)
{
    conn_end(user);
}

int acp_http1_serve(acp_sock *s, const char *data, size_t n, const acp_net_limits *lim,
                    const acp_wire_cbs *cbs, void *user)
{
    h1conn *c = calloc(1, sizeof *c);
    if (!c) {
        acp_sock_abort(s);
        return ACP_ENOMEM;
    }
    c->s = s;
    c->lim = lim;
    c->cbs = cbs;
    c->user = user;
    acp_http1_parser_init(&c->p, MAX_HEAD, lim->max_message);
    uv_timer_init(acp_sock_loop(s), &c->head_timer);
    c->head_timer.data = c;
    c->ending = false;
    acp_sock_cbs sc = {.on_read = on_read, .on_drain = on_drain, .on_close = on_close};
    acp_sock_bind(s, &sc, c);
    start_head_timer(c);
    if (n) feed(c, data, n);
    return 0;
}
