/* SPDX-License-Identifier: Apache-2.0 */
/* acp_sock: a TCP or Unix-domain stream on libuv, with TLS from net/tls.c in between when
 * asked (net/sock.h, net/sock_server.h).
 *
 * Writes go straight to the kernel when nothing is queued (uv_try_write), so the common small
 * answer costs no copy; the rest is copied into a uv_write. Read buffers are allocated per
 * read and freed after it: an idle connection holds no read buffer (10,000 idle WebSockets
 * must not pin 64 KiB each). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp/error.h"
#include "net/sock_server.h"

#define READ_CHUNK         (64u << 10)
#define DEFAULT_HIGH_WATER (4u << 20)
#define DEFAULT_CLOSE_MS   5000u

struct wreq {
    uv_write_t req;
    acp_sock *s;
    char *buf;
    size_t len;
};

struct acp_sock {
    uv_loop_t *loop;
    union {
        uv_handle_t h;
        uv_stream_t s;
        uv_tcp_t tcp;
        uv_pipe_t pipe;
    } u;
    uv_timer_t timer; /* idle timeout, then the close timeout */
    acp_sock_cbs cbs;
    void *user;
    acp_tls *tls;
    acp_buf plain; /* decrypted input of one read */
    acp_buf early; /* plaintext written before the TLS handshake finished */
    size_t high_water, inflight;
    unsigned idle_ms, close_ms, idle_holds;
    bool is_unix, bound, connected, reading, paused, full, opened, closing, closed, eof;
    const char *reason;
    int handles; /* close callbacks still to come */
    int reqs;    /* getaddrinfo / connect requests still to complete */
    acp_sock_group *g;
    acp_sock *gnext, *gprev;
    uint64_t id;
    /* client side */
    uv_getaddrinfo_t gai;
    uv_connect_t creq;
    struct addrinfo *ai, *ai_next; /* resolved addresses, and the next one to try */
    acp_tls_ctx *ctx;              /* ours (client only) */
    char *host;
};

static void sock_close(acp_sock *s, const char *reason, bool graceful);

/* --- teardown ------------------------------------------------------------------------------ */

static void maybe_free(acp_sock *s)
{
    if (!s->closed || s->handles > 0 || s->reqs > 0) return;
    /* on_close first, while the socket still counts in its group: the callback may close the
     * group's owner (acp serve closes its listener when its last connection ends), which must
     * not free the group under us. The group learns it is empty after. */
    if (s->cbs.on_close) s->cbs.on_close(s, s->reason ? s->reason : "closed", s->user);
    if (s->g) {
        if (s->gprev)
            s->gprev->gnext = s->gnext;
        else
            s->g->head = s->gnext;
        if (s->gnext) s->gnext->gprev = s->gprev;
        s->g->count--;
    }
    acp_sock_group *g = s->g;
    acp_tls_free(s->tls);
    acp_tls_ctx_free(s->ctx);
    acp_buf_free(&s->plain);
    acp_buf_free(&s->early);
    if (s->ai) uv_freeaddrinfo(s->ai);
    free(s->host);
    free(s);
    if (g && !g->count && g->on_empty) g->on_empty(g);
}

static void handle_closed(uv_handle_t *h)
{
    acp_sock *s = h->data;
    s->handles--;
    maybe_free(s);
}

/* Closing the stream cancels writes still in flight (their callbacks come first). */
static void close_handles(acp_sock *s)
{
    if (s->closed) return;
    s->closed = true;
    if (!uv_is_closing(&s->u.h)) uv_close(&s->u.h, handle_closed);
    uv_close((uv_handle_t *)&s->timer, handle_closed);
}

/* --- output -------------------------------------------------------------------------------- */

static void check_drain(acp_sock *s)
{
    if (!s->full || s->closing || acp_sock_queued(s) >= s->high_water / 2) return;
    s->full = false;
    if (s->cbs.on_drain) s->cbs.on_drain(s, s->user);
}

static void on_written(uv_write_t *req, int status)
{
    struct wreq *w = (struct wreq *)req;
    acp_sock *s = w->s;
    s->inflight -= w->len;
    free(w->buf);
    free(w);
    if (s->closed) return;
    if (status < 0) {
        sock_close(s, "write failed", false);
    } else if (s->closing) {
        if (s->inflight == 0) close_handles(s);
    } else {
        check_drain(s);
    }
}

/* Sends buf (malloc'd; ownership taken) after what is already in flight. */
static int raw_write(acp_sock *s, char *buf, size_t len)
{
    size_t off = 0;
    if (s->inflight == 0) {
        uv_buf_t b = {.base = buf, .len = len};
        int n = uv_try_write(&s->u.s, &b, 1);
        if (n > 0)
            off = (size_t)n;
        else if (n < 0 && n != UV_EAGAIN) {
            free(buf);
            sock_close(s, "write failed", false);
            return ACP_EIO;
        }
    }
    if (off == len) {
        free(buf);
        return 0;
    }
    struct wreq *w = malloc(sizeof *w);
    if (!w) {
        free(buf);
        return ACP_ENOMEM;
    }
    if (off) memmove(buf, buf + off, len - off);
    w->s = s;
    w->buf = buf;
    w->len = len - off;
    uv_buf_t b = {.base = buf, .len = w->len};
    if (uv_write(&w->req, &s->u.s, &b, 1, on_written) != 0) {
        free(buf);
        free(w);
        sock_close(s, "write failed", false);
        return ACP_EIO;
    }
    s->inflight += w->len;
    return 0;
}

/* Writes whatever ciphertext TLS produced. */
static int flush_tls(acp_sock *s)
{
    size_t n;
    char *c = acp_tls_take(s->tls, &n);
    return c ? raw_write(s, c, n) : 0;
}

int acp_sock_write(acp_sock *s, const void *p, size_t n)
{
    if (s->closing || s->closed) return ACP_EIO;
    if (n == 0) return 0;
    int rc;
    if (s->tls && !acp_tls_ready(s->tls)) {
        rc = acp_buf_append(&s->early, p, n);
    } else if (s->tls) {
        rc = acp_tls_send(s->tls, p, n);
        if (!rc) rc = flush_tls(s);
    } else {
        char *copy = malloc(n);
        if (!copy) return ACP_ENOMEM;
        memcpy(copy, p, n);
        rc = raw_write(s, copy, n);
    }
    if (rc == ACP_EPROTO) sock_close(s, "TLS write failed", false);
    if (!rc && acp_sock_queued(s) >= s->high_water) s->full = true;
    return rc ? (rc == ACP_ENOMEM ? rc : ACP_EIO) : 0;
}

size_t acp_sock_queued(const acp_sock *s)
{
    return s->inflight + s->early.len;
}

size_t acp_sock_high_water(const acp_sock *s)
{
    return s->high_water;
}

/* --- input --------------------------------------------------------------------------------- */

static void idle_fired(uv_timer_t *t)
{
    sock_close(t->data, "idle timeout", true);
}

static void idle_restart(acp_sock *s)
{
    if (s->idle_ms && !s->idle_holds && !s->closing)
        uv_timer_start(&s->timer, idle_fired, s->idle_ms, 0);
}

uint64_t acp_sock_id(const acp_sock *s)
{
    return s->id;
}

void acp_sock_idle_hold(acp_sock *s, bool hold)
{
    if (s->closing) return;
    if (hold) {
        if (s->idle_holds++ == 0) uv_timer_stop(&s->timer);
    } else if (s->idle_holds > 0 && --s->idle_holds == 0) {
        idle_restart(s);
    }
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    buf->base = malloc(READ_CHUNK);
    buf->len = buf->base ? READ_CHUNK : 0;
}

static void opened(acp_sock *s)
{
    if (s->opened) return;
    s->opened = true;
    if (s->cbs.on_open) s->cbs.on_open(s, 0, s->user);
}

/* Ciphertext in: the handshake advances (its end releases what was written early), plaintext
 * goes to the owner. */
static void tls_input(acp_sock *s, const char *p, size_t n)
{
    bool was_ready = acp_tls_ready(s->tls);
    int rc = acp_tls_recv(s->tls, p, n, &s->plain);
    flush_tls(s); /* handshake messages, or the alert that explains a failure */
    if (rc) {
        if (!s->opened && s->cbs.on_open) {
            s->opened = true;
            s->cbs.on_open(s, rc, s->user);
        }
        sock_close(s, rc == ACP_EPROTO ? "TLS failed" : "out of memory", false);
        return;
    }
    if (!was_ready && acp_tls_ready(s->tls) && !s->closing) {
        if (s->early.len) {
            size_t len;
            char *e = acp_buf_take(&s->early, &len);
            if (acp_tls_send(s->tls, e, len) == 0) flush_tls(s);
            free(e);
        }
        opened(s);
    }
    if (s->plain.len && !s->closing && s->cbs.on_read) {
        /* The owner may write, pause or close from here; the buffer is ours throughout. */
        s->cbs.on_read(s, s->plain.data, s->plain.len, s->user);
    }
    s->plain.len = 0;
    acp_buf_shrink(&s->plain, READ_CHUNK);
}

static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
    acp_sock *s = st->data;
    if (n > 0 && !s->closing) {
        idle_restart(s);
        if (s->tls)
            tls_input(s, buf->base, (size_t)n);
        else if (s->cbs.on_read)
            s->cbs.on_read(s, buf->base, (size_t)n, s->user);
    } else if (n < 0) {
        s->eof = true;
        sock_close(s, n == UV_EOF ? "peer closed" : "read failed", n == UV_EOF);
    }
    free(buf->base);
}

static void update_reading(acp_sock *s)
{
    bool want = s->bound && s->connected && !s->paused && !s->closing && !s->eof;
    if (want == s->reading) return;
    s->reading = want;
    if (want) {
        if (uv_read_start(&s->u.s, on_alloc, on_read) != 0) {
            s->reading = false;
            sock_close(s, "read failed", false);
        }
    } else {
        uv_read_stop(&s->u.s);
    }
}

void acp_sock_pause(acp_sock *s, bool paused)
{
    s->paused = paused;
    update_reading(s);
}

void acp_sock_bind(acp_sock *s, const acp_sock_cbs *cbs, void *user)
{
    s->cbs = *cbs;
    s->user = user;
    s->bound = true;
    update_reading(s);
}

const char *acp_sock_alpn(const acp_sock *s)
{
    return s->tls ? acp_tls_alpn(s->tls) : NULL;
}

/* --- closing ------------------------------------------------------------------------------- */

static void close_timeout(uv_timer_t *t)
{
    close_handles(t->data);
}

static void sock_close(acp_sock *s, const char *reason, bool graceful)
{
    if (s->closed) return;
    if (!s->reason) s->reason = reason;
    bool was_closing = s->closing;
    s->closing = true;
    update_reading(s);
    if (!graceful || !s->connected || s->reqs > 0) {
        close_handles(s);
        return;
    }
    if (was_closing) return;
    if (s->tls && acp_tls_ready(s->tls)) {
        acp_tls_shutdown(s->tls);
        flush_tls(s);
        if (s->closed) return;
    }
    if (s->inflight == 0) {
        close_handles(s);
        return;
    }
    uv_timer_start(&s->timer, close_timeout, s->close_ms, 0);
}

void acp_sock_close(acp_sock *s)
{
    sock_close(s, "closed", true);
}

void acp_sock_abort(acp_sock *s)
{
    sock_close(s, "aborted", false);
}

void acp_sock_group_close(acp_sock_group *g)
{
    for (acp_sock *s = g->head, *next; s; s = next) {
        next = s->gnext;
        acp_sock_close(s);
    }
}

/* --- creating ------------------------------------------------------------------------------ */

static acp_sock *sock_new(uv_loop_t *loop, bool is_unix, size_t high_water, unsigned close_ms)
{
    acp_sock *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->loop = loop;
    s->is_unix = is_unix;
    s->high_water = high_water ? high_water : DEFAULT_HIGH_WATER;
    s->close_ms = close_ms ? close_ms : DEFAULT_CLOSE_MS;
    if (is_unix)
        uv_pipe_init(loop, &s->u.pipe, 0);
    else
        uv_tcp_init(loop, &s->u.tcp);
    uv_timer_init(loop, &s->timer);
    s->u.h.data = s->timer.data = s;
    s->handles = 2;
    return s;
}

int acp_sock_accept(uv_stream_t *server, bool is_unix, acp_tls_ctx *tls, const acp_net_limits *lim,
                    acp_sock_group *g, acp_sock **out)
{
    *out = NULL;
    acp_sock *s = sock_new(server->loop, is_unix, lim->high_water, lim->close_timeout_ms);
    if (!s) return ACP_ENOMEM;
    if (tls && !(s->tls = acp_tls_new(tls, true, NULL, NULL))) {
        s->closed = true; /* nothing to tell anyone: free once the handles are closed */
        uv_close(&s->u.h, handle_closed);
        uv_close((uv_handle_t *)&s->timer, handle_closed);
        return ACP_ENOMEM;
    }
    if (uv_accept(server, &s->u.s) != 0) {
        s->closed = true;
        uv_close(&s->u.h, handle_closed);
        uv_close((uv_handle_t *)&s->timer, handle_closed);
        return ACP_EIO;
    }
    if (!is_unix) {
        uv_tcp_nodelay(&s->u.tcp, 1);
        /* A peer that vanished without a FIN (a dropped link, a dead NAT entry) under a quiet
         * SSE stream is found by the kernel's probes, not only by our next write. */
        uv_tcp_keepalive(&s->u.tcp, 1, 60);
    }
    s->connected = true;
    s->opened = !tls; /* with TLS, on_open reports the handshake */
    s->idle_ms = lim->idle_timeout_ms;
    idle_restart(s);
    s->g = g;
    s->id = ++g->last_id;
    s->gnext = g->head;
    if (g->head) g->head->gprev = s;
    g->head = s;
    g->count++;
    *out = s;
    return 0;
}

/* --- connecting (client) ------------------------------------------------------------------- */

static void connect_failed(acp_sock *s, int status, const char *reason)
{
    if (!s->opened) {
        s->opened = true;
        if (s->cbs.on_open) s->cbs.on_open(s, status, s->user);
    }
    sock_close(s, reason, false);
}

static void try_connect(acp_sock *s);

/* The failed attempt's handle is closed; the next address gets a fresh one in its place. */
static void retry_closed(uv_handle_t *h)
{
    acp_sock *s = h->data;
    if (s->closing) { /* closed meanwhile: this was the handle's last close */
        s->handles--;
        maybe_free(s);
        return;
    }
    uv_tcp_init(s->loop, &s->u.tcp);
    s->u.h.data = s;
    try_connect(s);
}

static void on_connected(uv_connect_t *req, int status)
{
    acp_sock *s = req->data;
    s->reqs--;
    if (s->closing) {
        maybe_free(s);
        return;
    }
    if (status < 0 && s->ai_next) {
        /* "localhost" may be ::1 first for a server on 127.0.0.1: try the next address. A
         * socket that failed to connect cannot be reused, so the handle is closed first. */
        uv_close(&s->u.h, retry_closed);
        return;
    }
    if (status < 0) {
        connect_failed(s, ACP_EIO, "cannot connect");
        return;
    }
    s->connected = true;
    if (!s->is_unix) uv_tcp_nodelay(&s->u.tcp, 1);
    update_reading(s);
    if (!s->tls) {
        opened(s);
        return;
    }
    int rc = acp_tls_start(s->tls);
    flush_tls(s);
    if (rc) connect_failed(s, ACP_EPROTO, "TLS failed");
}

/* Tries the next resolved address, in the resolver's order (RFC 6724). */
static void try_connect(acp_sock *s)
{
    while (s->ai_next) {
        struct addrinfo *a = s->ai_next;
        s->ai_next = a->ai_next;
        s->creq.data = s;
        if (uv_tcp_connect(&s->creq, &s->u.tcp, a->ai_addr, on_connected) == 0) {
            s->reqs++;
            return;
        }
    }
    connect_failed(s, ACP_EIO, "cannot connect");
}

static void on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *ai)
{
    acp_sock *s = req->data;
    s->reqs--;
    if (s->closing) {
        if (ai) uv_freeaddrinfo(ai);
        maybe_free(s);
        return;
    }
    if (status < 0 || !ai) {
        if (ai) uv_freeaddrinfo(ai);
        connect_failed(s, ACP_ENOTFOUND, "cannot resolve the host name");
        return;
    }
    s->ai = s->ai_next = ai;
    try_connect(s);
}

int acp_sock_connect(uv_loop_t *loop, const acp_sock_connect_opts *o, const acp_sock_cbs *cbs,
                     void *user, acp_sock **out)
{
    *out = NULL;
    if (!o->unix_path && (!o->host || !*o->host || !o->port)) return ACP_EINVAL;
    acp_sock *s = sock_new(loop, o->unix_path != NULL, 0, 0);
    if (!s) return ACP_ENOMEM;
    s->cbs = *cbs;
    s->user = user;
    s->bound = true;
    s->creq.data = s->gai.data = s;
    int rc = 0;
    if (o->tls) {
        char *err = NULL;
        s->ctx = acp_tls_ctx_client(o->ca_file, &err);
        free(err); /* the handshake's failure will say it again, with on_open's status */
        const char *name = o->unix_path ? "localhost" : o->host;
        if (!s->ctx || !(s->tls = acp_tls_new(s->ctx, false, name, o->alpn))) rc = ACP_EINVAL;
    }
    if (!rc && o->unix_path) {
        uv_pipe_connect(&s->creq, &s->u.pipe, o->unix_path, on_connected);
        s->reqs++;
    } else if (!rc) {
        char port[8];
        snprintf(port, sizeof port, "%u", o->port);
        struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
        /* Bracketed IPv6 literals come from URLs; getaddrinfo wants them bare. */
        const char *h = o->host;
        size_t hl = strlen(h);
        if (hl > 2 && h[0] == '[' && h[hl - 1] == ']') {
            s->host = strndup(h + 1, hl - 2);
            h = s->host;
        }
        if (!h || uv_getaddrinfo(loop, &s->gai, on_resolved, h, port, &hints) != 0)
            rc = h ? ACP_EINVAL : ACP_ENOMEM;
        else
            s->reqs++;
    }
    if (rc) {
        s->closing = s->closed = true;
        s->cbs = (acp_sock_cbs){0};
        uv_close(&s->u.h, handle_closed);
        uv_close((uv_handle_t *)&s->timer, handle_closed);
        return rc;
    }
    *out = s;
    return 0;
}

void acp_sock_want_drain(acp_sock *s)
{
    if (!s->closing) s->full = true;
}

uv_loop_t *acp_sock_loop(const acp_sock *s)
{
    return s->loop;
}
