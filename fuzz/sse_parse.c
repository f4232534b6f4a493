/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target over the SSE parser (mcp/sse.c), the first code to see an HTTP MCP
 * server's response body. Any bytes, in any pieces, must never crash or leak; and since the
 * parser is incremental, where the pieces split must not change what it reports: each input is
 * parsed once whole and once in pieces, and both runs must give the same events, the same
 * Last-Event-ID and the same retry. Every event must also keep the format's own guarantees
 * (data NUL-terminated at n and free of CR, the event name free of CR and LF).
 *
 * Input: byte 0 picks the limit (max) and the piece sizes, the rest is the stream. A data
 * value of "stop" makes the callback stop the feed, so that path is exercised too. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "acp/error.h"
#include "acp/sse.h"

typedef struct trace {
    uint64_t hash; /* FNV-1a over every event's type and data */
    size_t events;
} trace;

static void mix(trace *t, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) t->hash = (t->hash ^ b[i]) * 0x100000001b3ull;
}

static int on_event(void *user, const char *event, const char *data, size_t n)
{
    trace *t = user;
    size_t el = strlen(event);
    if (data[n] != '\0' || memchr(data, '\r', n) || strpbrk(event, "\r\n")) abort();
    mix(t, event, el + 1);
    mix(t, &n, sizeof n);
    mix(t, data, n);
    t->events++;
    return n == 4 && !memcmp(data, "stop", 4) ? 1 : 0;
}

typedef struct run {
    trace t;
    int rc;
    char *last_id;
    long retry_ms;
} run;

/* Feeds body in pieces (piece 0: all at once); a restart between two halves when asked. */
static void parse(const uint8_t *body, size_t n, size_t max, unsigned piece, bool restart, run *r)
{
    acp_sse p;
    acp_sse_init(&p, on_event, &r->t);
    p.max = max;
    r->t.hash = 0xcbf29ce484222325ull;
    size_t half = n / 2;
    unsigned step = piece;
    for (size_t i = 0; i < n && r->rc == 0;) {
        size_t k = piece ? step : n - i;
        if (restart && i < half && i + k > half) k = half - i;
        if (k > n - i) k = n - i;
        r->rc = acp_sse_feed(&p, (const char *)body + i, k);
        i += k;
        if (restart && i == half) acp_sse_restart(&p);
        step = step % 7 + 1; /* pieces of 1..7 bytes in a fixed pattern */
    }
    if (p.last_id && (strchr(p.last_id, '\r') || strchr(p.last_id, '\n'))) abort();
    if (p.retry_ms < -1 || p.retry_ms > ACP_SSE_RETRY_MAX_MS) abort(); /* the bound holds */
    r->last_id = p.last_id ? strdup(p.last_id) : NULL;
    r->retry_ms = p.retry_ms;
    acp_sse_free(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) return 0;
    static const size_t maxes[4] = {0, 8, 64, 1024};
    size_t max = maxes[data[0] & 3];
    bool restart = data[0] & 4;
    unsigned piece = (data[0] >> 3) % 7 + 1;
    run whole = {0}, split = {0};
    parse(data + 1, size - 1, max, 0, restart, &whole);
    parse(data + 1, size - 1, max, piece, restart, &split);
    /* A too-long line is caught at a different point when it arrives in pieces (the buffered
     * part is measured): compare only when neither run hit the limit. */
    if (whole.rc != ACP_ETOOBIG && split.rc != ACP_ETOOBIG) {
        if (whole.rc != split.rc || whole.t.events != split.t.events ||
            whole.t.hash != split.t.hash || whole.retry_ms != split.retry_ms ||
            !whole.last_id != !split.last_id ||
            (whole.last_id && strcmp(whole.last_id, split.last_id)))
            abort();
    }
    free(whole.last_id);
    free(split.last_id);
    return 0;
}
