/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target over the WebSocket profile (net/ws*.c): whatever bytes a peer sends after
 * the upgrade, as our server (masked client frames) or as our client (the 101 head, then
 * unmasked server frames). Never a crash, a leak or a handle left open; every message
 * delivered is text within max_message and valid UTF-8 (what wslay promises and the agent
 * relies on); nothing is delivered after the link's end, which is reported exactly once;
 * binary messages are ignored, and told to on_log at most once.
 *
 * No socket: the acp_sock calls are wrapped at link time (-Wl,--wrap=...) by a fake whose
 * writes are counted and whose reads are the input, in pieces. A loop turn runs after each
 * piece (the link writes its turn's frames then), and the queue drains, so back-pressure
 * (pause, drain) runs too; the socket's close is reported after the input.
 *
 * Input: byte 0 picks the role (bit 0: client), the piece size (bits 1-3), whether each
 * message is echoed back from on_message (bit 4), whether the owner closes midway (bit 5),
 * and max_message (bits 6-7: 16 bytes to 64 KiB). The rest is the peer's bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "acp/error.h"
#include "net/ws.h"

static struct fake {
    acp_sock_cbs cbs;
    void *user;
    uv_loop_t *loop;
    size_t queued;
    bool paused, closing, want_drain;
} S;
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
    S.queued += n;
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

void __wrap_acp_sock_close(acp_sock *s)
{
    S.closing = true;
}

void __wrap_acp_sock_abort(acp_sock *s)
{
    S.closing = true;
}

uv_loop_t *__wrap_acp_sock_loop(const acp_sock *s)
{
    return S.loop;
}

int __wrap_acp_sock_connect(uv_loop_t *loop, const acp_sock_connect_opts *o,
                            const acp_sock_cbs *cbs, void *user, acp_sock **out)
{
    S.cbs = *cbs;
    S.user = user;
    *out = FAKE;
    return 0;
}

static struct owner {
    acp_link *l;
    size_t max;
    bool echo, ended;
    int opens, logs;
} O;

/* Structure only (lead bytes and continuations): a weaker check than wslay's DFA, so any
 * message it rejects is one wslay should not have passed. */
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

static void on_message(acp_link *l, const char *m, size_t n, void *u)
{
    if (O.ended || n > O.max || !utf8_ok((const unsigned char *)m, n)) abort();
    if (O.echo) acp_link_send(l, m, n);
}

static void on_drain(acp_link *l, void *u)
{
    if (O.ended) abort();
}

static void on_close(acp_link *l, const char *reason, void *u)
{
    if (O.ended || !reason) abort();
    O.ended = true;
}

/* Binary messages are ignored and told once per connection, however many come. */
static void on_log(acp_link *l, const char *line, void *u)
{
    if (O.ended || !line || ++O.logs > 1) abort();
}

static const acp_link_cbs cbs = {on_message, on_drain, on_close, on_log};

static void on_link(acp_link *l, void *u)
{
    O.l = l;
    acp_link_bind(l, &cbs, NULL);
}

static void on_open(acp_link *l, int status, const char *detail, void *u)
{
    if (O.opens++ || !detail) abort();
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
    O.echo = flags & 0x10;
    O.max = (size_t)16 << (4 * (flags >> 6)); /* 16, 256, 4 KiB, 64 KiB */
    acp_net_limits lim = {.max_message = O.max, .high_water = 1024};
    acp_cookie_jar *jar = acp_cookie_jar_new();

    if (flags & 1) {
        acp_ws_connect_opts o = {
            .url = "ws://example.test/acp", .token = "t", .cookies = jar, .lim = &lim};
        if (acp_ws_connect(&loop, &o, on_open, NULL, &O.l)) abort();
        acp_link_bind(O.l, &cbs, NULL);
        S.cbs.on_open(FAKE, 0, S.user);
    } else {
        acp_http_field f[] = {{"upgrade", "websocket"},
                              {"connection", "Upgrade"},
                              {"sec-websocket-version", "13"},
                              {"sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="}};
        acp_http_req r = {.method = "GET", .path = "/acp", .headers = f, .nheaders = 4};
        if (acp_ws_accept(FAKE, &r, NULL, 0, &lim, on_link, NULL) != 0 || !O.l) abort();
    }

    size_t piece = (size_t)1 << (((flags >> 1) & 7) * 2); /* 1 byte to 16 KiB */
    for (size_t i = 0; i < size && !S.closing && !O.ended; i += piece) {
        size_t k = size - i < piece ? size - i : piece;
        S.cbs.on_read(FAKE, (const char *)data + i, k, S.user);
        if ((flags & 0x20) && i == 0 && !O.ended) acp_link_close(O.l);
        /* The end of the loop turn: the link writes what it framed. */
        uv_run(&loop, UV_RUN_NOWAIT);
        /* The peer read everything: the drain the socket reports. */
        bool was_full = S.queued >= 1024 || S.want_drain;
        S.queued = 0;
        S.want_drain = false;
        if (was_full && !S.closing) S.cbs.on_drain(FAKE, S.user);
    }
    if (!O.ended && !S.closing) acp_link_close(O.l);
    /* The socket ends (from the loop, as the real one does). */
    S.closing = true;
    S.cbs.on_close(FAKE, "fuzz input ended", S.user);
    if (!O.ended) abort();
    uv_run(&loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&loop)) abort();
    acp_cookie_jar_free(jar);
    return 0;
}
