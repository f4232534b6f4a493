/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target over the HTTP/2 request mapping (net/h2.c: frames -> exchanges, header
 * fields, bodies, 413, resets, GOAWAY) and, behind it, the Streamable HTTP profile (net/shttp.c:
 * POST/GET/DELETE, the connection registry, routing), which a network client reaches with
 * whatever frames it likes. The socket is a fake (the acp_sock_* calls h2.c makes are wrapped
 * at link time); the link owner stands in for an agent: it answers initialize, answers every
 * request, and for a request naming a session sends an update and a request of its own on it.
 *
 * Connection ids are made from zeros (uv_random is wrapped too) so an input can use the one
 * it made. Input: byte 0 picks where the frames are split into two reads; the rest are the client's
 * frames, after the connection preface and an empty SETTINGS the harness sends first. Checked:
 * no crash, no leak, every message the owner receives is one JSON object, and the teardown
 * (GOAWAY, the profile freed, the socket closed) leaves nothing behind. Seeds:
 * fuzz/h2_request_seeds.py. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp/error.h"
#include "net/h2.h"
#include "net/shttp.h"
#include "rpc/scan.h"

struct acp_sock {
    acp_sock_cbs cbs;
    void *user;
    bool closed;
    uv_loop_t *loop;
};

uint64_t __wrap_acp_sock_id(const acp_sock *s)
{
    return 1;
}

uv_loop_t *__wrap_acp_sock_loop(const acp_sock *s)
{
    return s->loop;
}

void __wrap_acp_sock_bind(acp_sock *s, const acp_sock_cbs *cbs, void *user)
{
    s->cbs = *cbs;
    s->user = user;
}

int __wrap_acp_sock_write(acp_sock *s, const void *p, size_t n)
{
    return s->closed ? ACP_EIO : 0;
}

size_t __wrap_acp_sock_queued(const acp_sock *s)
{
    return 0;
}

size_t __wrap_acp_sock_high_water(const acp_sock *s)
{
    return (size_t)1 << 20;
}

void __wrap_acp_sock_close(acp_sock *s)
{
    s->closed = true;
}

void __wrap_acp_sock_abort(acp_sock *s)
{
    s->closed = true;
}

void __wrap_acp_sock_idle_hold(acp_sock *s, bool hold)
{
}

/* Connection ids from zeros, so inputs can name the connection they made:
 * 00000000-0000-4000-8000-000000000000 is the first (and every) one. */
int __wrap_uv_random(uv_loop_t *loop, uv_random_t *req, void *buf, size_t n, unsigned flags,
                     uv_random_cb cb)
{
    memset(buf, 0, n);
    return 0;
}

static acp_shttp *shttp;

static void owner_msg(acp_link *l, const char *msg, size_t len, void *user)
{
    acp_envelope env;
    acp_scan_envelope(msg, len, &env);
    if (env.kind != ACP_ENV_OBJECT) abort(); /* the profile lets only objects through */
    if (!env.method.p || !env.id.p || env.id.n > 64) return;
    char out[512];
    acp_span v;
    if (env.params.p && acp_json_kind(env.params) == 'o' &&
        acp_json_member(env.params, "sessionId", &v) && acp_json_kind(v) == 's' && v.n < 100) {
        int k = snprintf(out, sizeof out,
                         "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":"
                         "{\"sessionId\":%.*s,\"update\":{}}}",
                         (int)v.n, v.p);
        acp_link_send(l, out, (size_t)k);
        k = snprintf(out, sizeof out,
                     "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"session/request_permission\","
                     "\"params\":{\"sessionId\":%.*s}}",
                     (int)v.n, v.p);
        acp_link_send(l, out, (size_t)k);
    }
    int k = snprintf(out, sizeof out,
                     "{\"jsonrpc\":\"2.0\",\"id\":%.*s,\"result\":{\"sessionId\":\"s1\"}}",
                     (int)env.id.n, env.id.p);
    acp_link_send(l, out, (size_t)k);
    acp_link_flush(l); /* the end of the owner's turn, as agent/serve.c */
}

static void owner_close(acp_link *l, const char *reason, void *user)
{
}

static void on_link(acp_link *l, void *user)
{
    static const acp_link_cbs cbs = {owner_msg, NULL, owner_close, NULL};
    acp_link_bind(l, &cbs, NULL);
}

static bool route(acp_http_req *r, acp_sock *s, const char *leftover, size_t n, void *user)
{
    if (strcmp(acp_http_req_path(r), "/acp") == 0)
        acp_shttp_handle(shttp, r);
    else
        acp_http_res_send(r, 404, "text/plain", "Not Found", 9, NULL, 0);
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char start[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
                                "\x00\x00\x00\x04\x00\x00\x00\x00\x00";
    if (size < 1) return 0;
    uv_loop_t loop;
    uv_loop_init(&loop);
    acp_net_limits lim = acp_net_limits_resolve(&(acp_net_limits){.max_message = 4096});
    shttp = acp_shttp_new(&loop, &lim, on_link, NULL);
    static const acp_wire_cbs wire = {NULL, route};
    acp_h2_group g = {0};
    acp_sock s = {.loop = &loop};
    acp_h2_serve(&s, start, sizeof start - 1, &lim, &wire, NULL, &g);
    const char *p = (const char *)data + 1;
    size_t n = size - 1, cut = n * data[0] / 255;
    if (!s.closed && cut) s.cbs.on_read(&s, p, cut, s.user);
    if (!s.closed && n - cut) s.cbs.on_read(&s, p + cut, n - cut, s.user);
    acp_shttp_free(shttp);
    acp_h2_group_shutdown(&g);
    s.cbs.on_close(&s, "end", s.user); /* what the socket says once it has closed */
    if (g.count) abort();
    uv_run(&loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&loop) != 0) abort();
    return 0;
}
