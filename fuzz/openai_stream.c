/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target over the openai engine's stream assembly (engines/openai/stream.c), the
 * first code to see a model server's chat completion body. Any bytes must never crash or leak,
 * and where the pieces split must not change what it assembles: each input is fed once whole
 * and once in pieces of 1 to 7 bytes, and both runs must give the same text, reasoning, tool
 * calls (ids, names, arguments), finish reason, usage, [DONE] and error. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "acp/error.h"
#include "engines/openai/stream.h"

typedef struct run {
    acp_buf text, thought;
    int rc;
    openai_stream st;
} run;

static int on_text(void *user, bool reasoning, const char *text, size_t n)
{
    run *r = user;
    if (!n) abort(); /* empty deltas are not passed on */
    return acp_buf_append(reasoning ? &r->thought : &r->text, text, n);
}

static void parse(const uint8_t *body, size_t n, unsigned piece, run *r)
{
    openai_stream_init(&r->st, on_text, r);
    unsigned step = piece;
    for (size_t i = 0; i < n && r->rc == 0;) {
        size_t k = piece ? step : n - i;
        if (k > n - i) k = n - i;
        r->rc = openai_stream_feed(&r->st, (const char *)body + i, k);
        i += k;
        step = step % 7 + 1;
    }
}

static bool same_buf(const acp_buf *a, const acp_buf *b)
{
    return a->len == b->len && (!a->len || !memcmp(a->data, b->data, a->len));
}

static bool same_str(const char *a, const char *b)
{
    return !a == !b && (!a || !strcmp(a, b));
}

static void done(run *r)
{
    openai_stream_free(&r->st);
    acp_buf_free(&r->text);
    acp_buf_free(&r->thought);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) return 0;
    unsigned piece = data[0] % 7 + 1;
    run whole = {0}, split = {0};
    parse(data + 1, size - 1, 0, &whole);
    parse(data + 1, size - 1, piece, &split);
    const openai_stream *a = &whole.st, *b = &split.st;
    if (whole.rc != ACP_ETOOBIG && split.rc != ACP_ETOOBIG) {
        if (whole.rc != split.rc || !same_buf(&whole.text, &split.text) ||
            !same_buf(&whole.thought, &split.thought) || a->ncalls != b->ncalls ||
            strcmp(a->finish, b->finish) || a->done != b->done || a->has_usage != b->has_usage ||
            a->total_tokens != b->total_tokens || !same_str(a->error, b->error))
            abort();
        for (size_t i = 0; i < a->ncalls; i++)
            if (!same_str(a->calls[i].id, b->calls[i].id) ||
                !same_str(a->calls[i].name, b->calls[i].name) ||
                !same_buf(&a->calls[i].args, &b->calls[i].args))
                abort();
    }
    done(&whole);
    done(&split);
    return 0;
}
