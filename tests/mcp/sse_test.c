/* SPDX-License-Identifier: Apache-2.0 */
/* The SSE parser: every way the standard lets a stream be cut and spelled. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "acp/error.h"
#include "acp/sse.h"

typedef struct seen {
    char out[4096];
    int n;
} seen;

static int on_event(void *user, const char *event, const char *data, size_t n)
{
    seen *s = user;
    assert_int_equal(strlen(data), n);
    size_t len = strlen(s->out);
    snprintf(s->out + len, sizeof s->out - len, "[%s|%s]", event, data);
    s->n++;
    return 0;
}

/* Feeds text in every split into two pieces, and byte by byte: the result never changes. */
static void check(const char *text, const char *want, const char *want_id, long want_retry)
{
    size_t n = strlen(text);
    for (size_t cut = 0; cut <= n + 1; cut++) {
        seen s = {0};
        acp_sse p;
        acp_sse_init(&p, on_event, &s);
        if (cut <= n) {
            assert_int_equal(acp_sse_feed(&p, text, cut), 0);
            assert_int_equal(acp_sse_feed(&p, text + cut, n - cut), 0);
        } else {
            for (size_t i = 0; i < n; i++) assert_int_equal(acp_sse_feed(&p, text + i, 1), 0);
        }
        if (strcmp(s.out, want)) fail_msg("cut %zu: got %s want %s", cut, s.out, want);
        if (want_id)
            assert_string_equal(p.last_id, want_id);
        else
            assert_null(p.last_id);
        assert_int_equal(p.retry_ms, want_retry);
        acp_sse_free(&p);
    }
}

static void basics(void **state)
{
    check("data: hello\n\n", "[message|hello]", NULL, -1);
    check("event: endpoint\ndata: /msg?s=1\n\n", "[endpoint|/msg?s=1]", NULL, -1);
    check("data: a\ndata: b\n\n", "[message|a\nb]", NULL, -1);
    check("data:nospace\r\n\r\n", "[message|nospace]", NULL, -1);
    check("data: cr\r\rdata: x\r\n\r\n", "[message|cr][message|x]", NULL, -1);
    check(": comment\ndata: x\n\n", "[message|x]", NULL, -1);
    check("id: 7\nretry: 500\ndata: \n\n", "[message|]", "7", 500);
    check("id: 1\n\nid: 2\ndata: y\n\n", "[message|y]", "2", -1);
    check("retry: 5x\ndata: z\n\n", "[message|z]", NULL, -1);
    /* a delay past ACP_SSE_RETRY_MAX_MS is cut to it, also one beyond 64 bits; a sign is not
     * a digit (ignored) */
    check("retry: 60001\ndata: z\n\n", "[message|z]", NULL, ACP_SSE_RETRY_MAX_MS);
    check("retry: 99999999999999999999999\ndata: z\n\n", "[message|z]", NULL, ACP_SSE_RETRY_MAX_MS);
    check("retry: 60000\ndata: z\n\n", "[message|z]", NULL, 60000);
    check("retry: -1\ndata: z\n\n", "[message|z]", NULL, -1);
    check("retry: +5\ndata: z\n\n", "[message|z]", NULL, -1);
    check("retry: \ndata: z\n\n", "[message|z]", NULL, -1);
    check("data: no end yet", "", NULL, -1);
    check("\xEF\xBB\xBF"
          "data: bom\n\n",
          "[message|bom]", NULL, -1);
    check("data\n\n", "[message|]", NULL, -1);
    check("event: a\n\ndata: b\n\n", "[message|b]", NULL, -1); /* no data: type reset */
    check("data:  two spaces\n\n", "[message| two spaces]", NULL, -1);
    check("unknown: x\ndata: d\n\n", "[message|d]", NULL, -1);
}

static void restart_keeps_id(void **state)
{
    seen s = {0};
    acp_sse p;
    acp_sse_init(&p, on_event, &s);
    assert_int_equal(acp_sse_feed(&p, "id: e1\nretry: 300\ndata: \n\ndata: partial", 38), 0);
    acp_sse_restart(&p);
    assert_int_equal(acp_sse_feed(&p, "data: fresh\n\n", 13), 0);
    assert_string_equal(s.out, "[message|][message|fresh]");
    assert_string_equal(p.last_id, "e1");
    assert_int_equal(p.retry_ms, 300);
    acp_sse_free(&p);
}

static void limits(void **state)
{
    seen s = {0};
    acp_sse p;
    acp_sse_init(&p, on_event, &s);
    p.max = 16;
    assert_int_equal(acp_sse_feed(&p, "data: 0123456789abcdef", 22), ACP_ETOOBIG);
    acp_sse_free(&p);
    acp_sse_init(&p, on_event, &s);
    p.max = 16;
    assert_int_equal(acp_sse_feed(&p, "data: 0123456789\ndata: 0123456789\n", 34), ACP_ETOOBIG);
    acp_sse_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(basics), cmocka_unit_test(restart_keeps_id),
                                       cmocka_unit_test(limits)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
