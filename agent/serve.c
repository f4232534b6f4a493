/* SPDX-License-Identifier: Apache-2.0 */
/* acp_agent_serve_link: the agent's output seam (agent_out) over a network link. The
 * connection still speaks NDJSON inside; a link carries whole messages, so lines are split
 * on the way out and terminated on the way in. */
#include <stdlib.h>
#include <string.h>

#include "agent/internal.h"
#include "agent/serve.h"

typedef struct link_out {
    acp_agent *a;
    acp_link *l;       /* NULL once the link ended */
    uv_prepare_t prep; /* sends what the connection produced, once per loop turn */
    uv_timer_t stall;
    unsigned stall_ms;
    size_t stall_mark; /* what was queued when the stall timer started */
    bool close_asked, finishing;
    int handles;
    acp_buf in; /* one inbound message, newline-terminated */
} link_out;

/* Everything the connection has, as one link message per line. Called with the batch
 * committed (acp_agent_flush first), as acp_transport's before_flush does for stdio. */
static void send_out(link_out *o)
{
    acp_conn *c = acp_agent_conn(o->a);
    uv_prepare_stop(&o->prep);
    if (!acp_conn_out_len(c)) return;
    size_t n;
    char *buf = acp_conn_out_take(c, &n);
    for (size_t at = 0; o->l && buf && at < n;) {
        const char *nl = memchr(buf + at, '\n', n - at);
        size_t len = nl ? (size_t)(nl - (buf + at)) : n - at;
        if (len && acp_link_send(o->l, buf + at, len) == ACP_ENOMEM) {
            agent_log(o->a, "out of memory sending to the client: closing its connection");
            acp_link_close(o->l);
            break;
        }
        at += len + 1;
    }
    if (o->l) acp_link_flush(o->l);
    free(buf);
}

static void on_prepare(uv_prepare_t *h)
{
    link_out *o = h->data;
    acp_agent_flush(o->a);
    send_out(o);
}

static void handle_closed(uv_handle_t *h)
{
    link_out *o = h->data;
    if (--o->handles) return;
    acp_agent *a = o->a;
    acp_buf_free(&o->in);
    free(o);
    agent_out_closed(a);
}

/* The link is gone and the agent asked to close: release our handles, then tell the agent. */
static void maybe_finish(link_out *o)
{
    if (o->l || !o->close_asked || o->finishing) return;
    o->finishing = true;
    uv_close((uv_handle_t *)&o->prep, handle_closed);
    uv_close((uv_handle_t *)&o->stall, handle_closed);
}

static size_t out_queued(void *ctx);

/* Full for stall_ms: a peer that took some of it in the meantime is slow, not stalled. */
static void stalled(uv_timer_t *t)
{
    link_out *o = t->data;
    if (!o->l) return;
    size_t q = out_queued(o);
    if (q < o->stall_mark) {
        o->stall_mark = q;
        uv_timer_start(&o->stall, stalled, o->stall_ms, 0);
        return;
    }
    agent_log(o->a, "the client has not read its output for %u ms: closing its connection",
              o->stall_ms);
    acp_link_close(o->l);
}

/* --- agent_out ---------------------------------------------------------------------------- */

static size_t out_queued(void *ctx)
{
    link_out *o = ctx;
    return o->l ? acp_link_queued(o->l) + acp_conn_out_len(acp_agent_conn(o->a)) : 0;
}

static bool out_writable(void *ctx)
{
    link_out *o = ctx;
    if (!o->l) return true; /* output is discarded: nothing accumulates */
    if (out_queued(o) < acp_link_high_water(o->l)) return true;
    if (o->stall_ms && !uv_is_active((uv_handle_t *)&o->stall)) {
        o->stall_mark = out_queued(o);
        uv_timer_start(&o->stall, stalled, o->stall_ms, 0);
    }
    return false;
}

static void out_flush(void *ctx)
{
    send_out(ctx);
}

static void out_soon(void *ctx)
{
    link_out *o = ctx;
    if (!o->finishing) uv_prepare_start(&o->prep, on_prepare);
}

static void out_close(void *ctx)
{
    link_out *o = ctx;
    o->close_asked = true;
    if (o->l) {
        send_out(o);
        acp_link_close(o->l); /* link_closed follows from the loop */
        return;
    }
    maybe_finish(o);
}

static const agent_out link_ops = {out_writable, out_queued, out_flush, out_soon, out_close};

/* --- the link's events -------------------------------------------------------------------- */

static void link_message(acp_link *l, const char *msg, size_t len, void *user)
{
    link_out *o = user;
    /* Raw CR and LF can only be whitespace in valid JSON (inside strings they must be
     * escaped), so they become spaces: the connection's framing stays one line per message. */
    o->in.len = 0;
    if (acp_buf_append(&o->in, msg, len) || acp_buf_putc(&o->in, '\n')) {
        agent_log(o->a, "out of memory reading a client message: closing its connection");
        acp_link_close(l);
        return;
    }
    for (char *p = o->in.data, *e = p + len; (p = memchr(p, '\n', (size_t)(e - p))); p++) *p = ' ';
    for (char *p = o->in.data, *e = p + len; (p = memchr(p, '\r', (size_t)(e - p))); p++) *p = ' ';
    if (acp_conn_recv(acp_agent_conn(o->a), o->in.data, o->in.len) == ACP_ENOMEM) acp_link_close(l);
    o->in.len = 0;
    acp_buf_shrink(&o->in, ACP_BUF_KEEP);
}

static void link_drained(acp_link *l, void *user)
{
    link_out *o = user;
    uv_timer_stop(&o->stall);
    agent_out_drained(o->a);
}

static void link_closed(acp_link *l, const char *reason, void *user)
{
    link_out *o = user;
    o->l = NULL;
    uv_timer_stop(&o->stall);
    if (!o->close_asked) {
        /* The peer went away: like EOF on stdio, every turn is cancelled and committed. */
        agent_log(o->a, "client connection ended: %s", reason);
        acp_conn_eof(acp_agent_conn(o->a));
        acp_agent_shutdown(o->a);
    }
    maybe_finish(o);
}

static void link_logged(acp_link *l, const char *line, void *user)
{
    link_out *o = user;
    agent_log(o->a, "client connection: %s", line);
}

int acp_agent_serve_link(acp_agent *a, acp_link *l, unsigned stall_ms)
{
    link_out *o = calloc(1, sizeof *o);
    if (!o) {
        acp_link_close(l);
        return acp_error_code(ACP_ENOMEM);
    }
    o->a = a;
    o->l = l;
    o->stall_ms = stall_ms;
    uv_prepare_init(acp_agent_loop(a), &o->prep);
    uv_timer_init(acp_agent_loop(a), &o->stall);
    o->prep.data = o->stall.data = o;
    o->handles = 2;
    agent_out_attach(a, &link_ops, o);
    acp_link_cbs cbs = {link_message, link_drained, link_closed, link_logged};
    acp_link_bind(l, &cbs, o);
    return 0;
}
