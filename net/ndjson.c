/* SPDX-License-Identifier: Apache-2.0 */
/* The NDJSON profile of a link: ACP's stdio framing (one JSON text per line) on an accepted
 * Unix-domain socket, so `acp --agent unix:PATH` and any client that speaks ACP on a socket as
 * on a pipe reach `acp-agent --listen unix:PATH` (the listener tells such a peer by its first
 * byte, '{'). The socket's file permissions are its access control, as for a pipe. */
#include <stdlib.h>
#include <string.h>

#include "acp/error.h"
#include "acp/json.h"
#include "net/ndjson.h"
#include "net/sock_server.h"

typedef struct nd {
    acp_link link; /* first: an nd is its link */
    acp_sock *s;
    acp_buf in;   /* a line not yet ended */
    size_t max;   /* the longest line accepted (lim->max_message) */
    bool closing; /* no more delivered or sent */
    const char *reason;
} nd;

static int nd_send(acp_link *l, const char *msg, size_t len)
{
    nd *t = (nd *)l;
    if (t->closing || acp_sock_write(t->s, msg, len) || acp_sock_write(t->s, "\n", 1))
        return ACP_EIO;
    if (acp_sock_queued(t->s) >= acp_sock_high_water(t->s)) acp_sock_want_drain(t->s);
    return 0;
}

static size_t nd_queued(const acp_link *l)
{
    return acp_sock_queued(((const nd *)l)->s);
}

static void nd_close(acp_link *l)
{
    nd *t = (nd *)l;
    if (t->closing) return;
    t->closing = true;
    acp_sock_close(t->s);
}

static const acp_link_ops ops = {.send = nd_send, .queued = nd_queued, .close = nd_close};

static void fail(nd *t, const char *reason)
{
    t->reason = reason;
    t->closing = true;
    acp_sock_abort(t->s);
}

static void on_read(acp_sock *s, const char *p, size_t n, void *user)
{
    nd *t = user;
    while (n && !t->closing) {
        const char *nl = memchr(p, '\n', n);
        size_t k = nl ? (size_t)(nl - p) : n;
        if (t->in.len + k > t->max) {
            fail(t, "a line longer than the message limit");
            return;
        }
        if (acp_buf_append(&t->in, p, k)) {
            fail(t, "out of memory");
            return;
        }
        if (!nl) return;
        p += k + 1;
        n -= k + 1;
        size_t len = t->in.len;
        if (len && t->in.data[len - 1] == '\r') len--;
        t->in.len = 0;
        if (len) acp_link_deliver(&t->link, t->in.data, len);
    }
}

static void on_drain(acp_sock *s, void *user)
{
    acp_link_drained(&((nd *)user)->link);
}

static void on_close(acp_sock *s, const char *reason, void *user)
{
    nd *t = user;
    acp_sock_idle_hold(s, false);
    acp_link_ended(&t->link, t->reason ? t->reason : reason);
    acp_buf_free(&t->in);
    free(t);
}

int acp_ndjson_serve(acp_sock *s, const char *data, size_t n, const acp_net_limits *lim,
                     void (*on_link)(acp_link *l, void *user), void *user)
{
    nd *t = calloc(1, sizeof *t);
    if (!t) {
        static const acp_sock_cbs none = {0};
        acp_sock_bind(s, &none, NULL);
        acp_sock_abort(s);
        return ACP_ENOMEM;
    }
    t->link.ops = &ops;
    t->link.high_water = acp_sock_high_water(s);
    t->s = s;
    t->max = lim->max_message;
    /* Like a pipe, the connection lasts as long as the peer keeps it: no request frames it. */
    acp_sock_idle_hold(s, true);
    static const acp_sock_cbs cbs = {
        .on_read = on_read, .on_drain = on_drain, .on_close = on_close};
    acp_sock_bind(s, &cbs, t);
    on_link(&t->link, user);
    on_read(s, data, n, t);
    return 0;
}
