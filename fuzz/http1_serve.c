/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target over the HTTP/1.1 server wire (net/http1.c) with the router of net/listen.c
 * behind it: what a network client's bytes reach on a cleartext HTTP/1.1 connection. The parser
 * alone is fuzz/http1_parse.c and the WebSocket frames alone fuzz/ws_frames.c (its upgrade
 * request made up); here the same bytes go through the wire's pipelining (requests stored while
 * one is answered, pause past a bound), "100 Continue", chunked and Content-Length responses,
 * refusals and lingering, the WebSocket upgrade's checks (net/ws_accept.c) with the bytes after
 * the head handed to the new link, and the Streamable HTTP profile (net/shttp.c).
 *
 * No socket: the acp_sock calls are wrapped at link time by a fake whose writes are kept (the
 * first must start a response) and whose reads are the input, in pieces; a loop turn runs after
 * each piece and the queue drains, so back-pressure runs too. The owner answers every request
 * of an HTTP link, and for a request naming a session sends an update and a request of its own
 * on it (as fuzz/h2_request.c); a WebSocket link's messages are echoed.
 *
 * Input: byte 0 picks the piece size (bits 0-2: 1 byte to 16 KiB) and max_message (bits 3-4:
 * 64 bytes to 4 KiB); the rest is the client's bytes. Checked: no crash, no leak, no libuv
 * handle left open; every message an HTTP link delivers is one JSON object, every WebSocket one
 * valid UTF-8 within max_message; every link ends, and none delivers after its end (ASan: its
 * state is freed then); what the wire writes starts with an HTTP/1.1 status line. Seeds:
 * fuzz/http1_serve_seeds.py. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "acp/error.h"
#include "net/http1.h"
#include "net/shttp.h"
#include "net/ws.h"
#include "rpc/scan.h"

static struct fake {
    acp_sock_cbs cbs;
    void *user;
    uv_loop_t *loop;
    size_t queued, written;
    char first[9]; /* the first bytes written */
    bool paused, closing, want_drain;
} S;
static bool trace;     /* ACP_FUZZ_TRACE: what is written and delivered goes to stderr (seeds) */
static char fake_sock; /* its address is the socket; never dereferenced */
#define FAKE ((acp_sock *)&fake_sock)

void __wrap_acp_sock_bind(acp_sock *s, const acp_sock_cbs *cbs, void *user)
{
    S.cbs = *cbs;
    S.user = user;
}

int __wrap_acp_sock_write(acp_sock *s, const void *p, size_t n)
{
    if (S.closing) return ACP_EIO;
    for (size_t i = 0; i < n && S.written < sizeof S.first; i++)
        S.first[S.written++] = ((const char *)p)[i];
    S.queued += n;
    if (trace) fprintf(stderr, "wrote: %.*s\n", (int)n, (const char *)p);
    return 0;
}

size_t __wrap_acp_sock_queued(const acp_sock *s)
{
    return S.queued;
}

size_t __wrap_acp_sock_high_water(const acp_sock *s)
{
    return 1024;
}

void __wrap_acp_sock_want_drain(acp_sock *s)
{
    S.want_drain = true;
}

void __wrap_acp_sock_pause(acp_sock *s, bool paused)
{
    S.paused = paused;
}

void __wrap_acp_sock_idle_hold(acp_sock *s, bool hold)
{
}

void __wrap_acp_sock_close(acp_sock *s)
{
    S.closing = true;
}

void __wrap_acp_sock_abort(acp_sock *s)
{
    S.closing = true;
}

uint64_t __wrap_acp_sock_id(const acp_sock *s)
{
    return 1;
}

uv_loop_t *__wrap_acp_sock_loop(const acp_sock *s)
{
    return S.loop;
}

/* Connection ids (and WebSocket masks) from zeros, so inputs can name the connection they made:
 * 00000000-0000-4000-8000-000000000000 is the first (and every) one. */
int __wrap_uv_random(uv_loop_t *loop, uv_random_t *req, void *buf, size_t n, unsigned flags,
                     uv_random_cb cb)
{
    memset(buf, 0, n);
    return 0;
}

/* --- the owner: every link it is given, until each ends ------------------------------------- */

static struct owner {
    size_t max;
    int open; /* links given and not yet ended */
} O;

/* Freed in on_close: a callback after it is a use-after-free ASan reports. */
typedef struct link_state {
    unsigned magic; /* LINK_MAGIC: every callback reads it */
    bool ws;
} link_state;
#define LINK_MAGIC 0x4c494e4bu

/* Structure only (lead bytes and continuations), as fuzz/ws_frames.c: weaker than wslay's DFA. */
static bool utf8_ok(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned c = s[i], k;
        if (c < 0x80)
            k = 0;
        else if ((c & 0xe0) == 0xc0 && c >= 0xc2)
            k = 1;
        else if ((c & 0xf0) == 0xe0)
            k = 2;
        else if ((c & 0xf8) == 0xf0 && c <= 0xf4)
            k = 3;
        else
            return false;
        if (n - i <= k) return false;
        for (unsigned j = 1; j <= k; j++)
            if ((s[i + j] & 0xc0) != 0x80) return false;
        i += k + 1;
    }
    return true;
}

static void answer(acp_link *l, const char *msg, size_t len)
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

static void owner_msg(acp_link *l, const char *msg, size_t len, void *user)
{
    link_state *ls = user;
    if (ls->magic != LINK_MAGIC) abort();
    if (trace) fprintf(stderr, "%s link got: %.*s\n", ls->ws ? "ws" : "http", (int)len, msg);
    if (!ls->ws) {
        answer(l, msg, len);
        return;
    }
    if (len > O.max || !utf8_ok((const unsigned char *)msg, len)) abort();
    acp_link_send(l, msg, len);
}

static void owner_drain(acp_link *l, void *user)
{
    link_state *ls = user;
    if (ls->magic != LINK_MAGIC) abort();
}

static void owner_close(acp_link *l, const char *reason, void *user)
{
    link_state *ls = user;
    if (ls->magic != LINK_MAGIC || !reason) abort();
    if (trace) fprintf(stderr, "%s link ended: %s\n", ls->ws ? "ws" : "http", reason);
    O.open--;
    free(ls);
}

static void give(acp_link *l, bool ws)
{
    static const acp_link_cbs cbs = {
        .on_message = owner_msg, .on_drain = owner_drain, .on_close = owner_close};
    link_state *ls = calloc(1, sizeof *ls);
    if (!ls) abort();
    ls->magic = LINK_MAGIC;
    ls->ws = ws;
    O.open++;
    acp_link_bind(l, &cbs, ls);
}

static void on_http_link(acp_link *l, void *user)
{
    give(l, false);
}

static void on_ws_link(acp_link *l, void *user)
{
    give(l, true);
}

/* --- the router: net/listen.c's, without the bearer token ---------------------------------- */

static acp_shttp *shttp;
static acp_net_limits lim;

static bool on_head(acp_http_req *r, void *user)
{
    const char *path = acp_http_req_path(r);
    size_t n = strcspn(path, "?#");
    if (n == 4 && !memcmp(path, "/acp", 4)) return true;
    acp_http_res_send(r, 404, "text/plain", "not found\n", 10, NULL, 0);
    return false;
}

static bool on_request(acp_http_req *r, acp_sock *s, const char *leftover, size_t n, void *user)
{
    if (s && acp_http_req_wants_websocket(r))
        return acp_ws_accept(s, r, leftover, n, &lim, on_ws_link, NULL) == 0;
    acp_shttp_handle(shttp, r);
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    uint8_t flags = data[0];
    data++, size--;
    uv_loop_t loop;
    uv_loop_init(&loop);
    memset(&S, 0, sizeof S);
    memset(&O, 0, sizeof O);
    S.loop = &loop;
    trace = getenv("ACP_FUZZ_TRACE") != NULL;
    O.max = (size_t)64 << (2 * ((flags >> 3) & 3)); /* 64 B, 256 B, 1 KiB, 4 KiB */
    lim = acp_net_limits_resolve(&(acp_net_limits){.max_message = O.max, .high_water = 1024});
    shttp = acp_shttp_new(&loop, &lim, on_http_link, NULL);
    if (!shttp) abort();
    static const acp_wire_cbs wire = {on_head, on_request};

    /* The listener has sniffed no bytes yet: the wire gets them all from its reads. */
    if (acp_http1_serve(FAKE, NULL, 0, &lim, &wire, NULL) != 0) abort();
    size_t piece = (size_t)1 << ((flags & 7) * 2); /* 1 byte to 16 KiB */
    for (size_t i = 0; i < size && !S.closing;) {
        if (!S.paused) { /* a paused socket reads nothing */
            size_t k = size - i < piece ? size - i : piece;
            S.cbs.on_read(FAKE, (const char *)data + i, k, S.user);
            i += k;
        }
        /* The end of the loop turn: what was queued is written. */
        uv_run(&loop, UV_RUN_NOWAIT);
        /* The peer read everything: the drain the socket reports. */
        bool was_full = S.queued >= 1024 || S.want_drain;
        S.queued = 0;
        S.want_drain = false;
        if (was_full && !S.closing) S.cbs.on_drain(FAKE, S.user);
        if (S.paused && !was_full) break; /* nothing will unpause it: the client waits */
    }
    if (S.written && memcmp(S.first, "HTTP/1.1 ", S.written < 9 ? S.written : 9) != 0) abort();
    /* The socket ends, then the profile goes (the listener frees it once no socket is left). */
    S.closing = true;
    S.cbs.on_close(FAKE, "fuzz input ended", S.user);
    acp_shttp_free(shttp);
    uv_run(&loop, UV_RUN_DEFAULT);
    if (O.open) abort(); /* a link never ended */
    if (uv_loop_close(&loop)) abort();
    return 0;
}
