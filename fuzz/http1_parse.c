/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target over the HTTP/1.1 request parser (net/http1_parse.c), the first code to see
 * a network client's bytes. Any bytes, in any pieces, must never crash or leak; the pieces
 * must not change what it reports (each input is parsed whole and in pieces, and both runs
 * must give the same requests and the same error); and every request must keep what the
 * parser promises: a token method, a target without spaces or controls, lower-case field
 * names, values without CR, LF or NUL, a head and body within their bounds, and an error only
 * with a status the wire can answer.
 *
 * Input: byte 0 picks the bounds and the piece size, the rest is the stream. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/http1.h"

typedef struct trace {
    uint64_t hash;
    size_t requests;
    int status;
} trace;

static void mix(trace *t, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) t->hash = (t->hash ^ b[i]) * 0x100000001b3ull;
}

static void mixs(trace *t, const char *s)
{
    mix(t, s, strlen(s) + 1);
}

static void check(const acp_http1_parser *p)
{
    if (!p->method || !*p->method || !p->target || !*p->target) abort();
    for (const char *c = p->method; *c; c++)
        if (*c <= ' ' || *c >= 0x7f || strchr("\"(),/:;<=>?@[\\]{}", *c)) abort();
    for (const char *c = p->target; *c; c++)
        if ((unsigned char)*c <= ' ' || (unsigned char)*c >= 0x7f) abort();
    for (size_t i = 0; i < p->nfields; i++) {
        const char *n = p->fields[i].name, *v = p->fields[i].value;
        if (!*n) abort();
        for (; *n; n++)
            if ((*n >= 'A' && *n <= 'Z') || *n <= ' ' || *n == ':') abort();
        if (strpbrk(v, "\r\n")) abort();
    }
    if (p->head.len > p->max_head || p->body.len > p->max_body) abort();
}

static void parse(const uint8_t *data, size_t n, size_t max_head, size_t max_body, size_t piece,
                  trace *t)
{
    acp_http1_parser p;
    acp_http1_parser_init(&p, max_head, max_body);
    memset(t, 0, sizeof *t);
    t->hash = 0xcbf29ce484222325ull;
    size_t off = 0;
    while (off < n && !t->status) {
        size_t k = piece && piece < n - off ? piece : n - off;
        /* Each piece in its own allocation: a read past it is ASan's to see. */
        char *buf = malloc(k);
        memcpy(buf, data + off, k);
        size_t at = 0;
        for (;;) {
            size_t used;
            int ev = acp_http1_parse(&p, buf + at, k - at, &used);
            if (used > k - at) abort();
            at += used;
            if (ev == ACP_HTTP1_MORE) {
                if (at != k) abort(); /* MORE means everything was consumed */
                break;
            }
            if (ev == ACP_HTTP1_ERROR) {
                static const int ok[] = {400, 408, 413, 417, 431, 500, 501, 505};
                bool known = false;
                for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) known |= p.status == ok[i];
                if (!known || !p.error) abort();
                t->status = p.status;
                break;
            }
            check(&p);
            if (ev == ACP_HTTP1_HEAD) continue;
            mixs(t, p.method);
            mixs(t, p.target);
            for (size_t i = 0; i < p.nfields; i++) {
                mixs(t, p.fields[i].name);
                mixs(t, p.fields[i].value);
            }
            mix(t, &p.body.len, sizeof p.body.len);
            if (p.body.len) mix(t, p.body.data, p.body.len);
            t->requests++;
            acp_http1_parser_reset(&p);
        }
        free(buf);
        off += k;
    }
    acp_http1_parser_free(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    uint8_t sel = data[0];
    size_t max_head = (sel & 3) == 0 ? 64 : (sel & 3) == 1 ? 256 : 65536;
    size_t max_body = (sel >> 2 & 3) == 0 ? 16 : (sel >> 2 & 3) == 1 ? 1024 : 1 << 20;
    size_t piece = 1 + (sel >> 4); /* 1..16 bytes */
    trace whole, pieces;
    parse(data + 1, size - 1, max_head, max_body, 0, &whole);
    parse(data + 1, size - 1, max_head, max_body, piece, &pieces);
    /* A refusal may come sooner in pieces only in what it saw, not in what it says. */
    if (whole.hash != pieces.hash || whole.requests != pieces.requests ||
        whole.status != pieces.status)
        abort();
    return 0;
}
