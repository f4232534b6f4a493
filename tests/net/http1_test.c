/* SPDX-License-Identifier: Apache-2.0 */
/* The HTTP/1.1 request parser: pipelined requests split at every byte give the same requests
 * as whole, and every refusal RFC 9112 asks for gets its status: 400, 413, 417, 431, 501, 505. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/http1.h"

/* What the parser made of one request, flattened for comparison. */
typedef struct got {
    char text[4096];
    int heads, requests, error;
} got;

static void record(acp_http1_parser *p, got *g)
{
    char *t = g->text + strlen(g->text);
    size_t room = sizeof g->text - (size_t)(t - g->text);
    int n = snprintf(t, room, "[%s %s ka=%d up=%d ex=%d", p->method, p->target, p->keep_alive,
                     p->upgrade, p->expect_continue);
    for (size_t i = 0; i < p->nfields; i++)
        n += snprintf(t + n, room - (size_t)n, " %s=%s", p->fields[i].name, p->fields[i].value);
    n += snprintf(t + n, room - (size_t)n, " body=%.*s]", (int)p->body.len,
                  p->body.data ? p->body.data : "");
}

/* Feeds the input in pieces of the given sizes (cycled), collecting every event. */
static got run(const char *in, size_t len, const size_t *pieces, size_t npieces, size_t max_head,
               size_t max_body)
{
    got g = {0};
    acp_http1_parser p;
    acp_http1_parser_init(&p, max_head, max_body);
    size_t off = 0, k = 0;
    while (off < len && !g.error) {
        size_t n = pieces[k++ % npieces];
        if (n > len - off) n = len - off;
        /* The piece lives in its own allocation so ASan sees any read past it. */
        char *piece = malloc(n ? n : 1);
        memcpy(piece, in + off, n);
        size_t at = 0;
        for (;;) {
            size_t used;
            int ev = acp_http1_parse(&p, piece + at, n - at, &used);
            at += used;
            if (ev == ACP_HTTP1_MORE) break;
            if (ev == ACP_HTTP1_ERROR) {
                g.error = p.status;
                break;
            }
            if (ev == ACP_HTTP1_HEAD) {
                g.heads++;
                continue;
            }
            g.requests++;
            record(&p, &g);
            acp_http1_parser_reset(&p);
        }
        free(piece);
        off += n;
    }
    acp_http1_parser_free(&p);
    return g;
}

static got whole(const char *in)
{
    size_t all = strlen(in);
    return run(in, all, &all, 1, 65536, 1 << 20);
}

static const char pipelined[] =
    "GET /acp HTTP/1.1\r\nHost: a\r\nAccept: text/event-stream\r\n\r\n"
    "POST /acp HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 7\r\n"
    "Cookie: a=1\r\nCookie: b=2\r\nX-Two: 1\r\nx-two: 2\r\n\r\n{\"a\":1}"
    "POST /acp HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n"
    "3;ext=1\r\n{\"b\r\n4\r\n\":2}\r\n0\r\nTrailer: x\r\n\r\n"
    "\r\nGET / HTTP/1.0\r\n\r\n"
    "GET /up HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, Upgrade\r\nUpgrade: websocket\r\n"
    "\r\n"
    "DELETE /acp HTTP/1.1\nHost: a\nConnection: close\n\n";

static void test_pipelined_whole(void **state)
{
    got g = whole(pipelined);
    assert_int_equal(g.error, 0);
    assert_int_equal(g.requests, 6);
    assert_int_equal(g.heads, 6);
    assert_string_equal(
        g.text,
        "[GET /acp ka=1 up=0 ex=0 host=a accept=text/event-stream body=]"
        "[POST /acp ka=1 up=0 ex=0 host=a content-type=application/json content-length=7 "
        "cookie=a=1; b=2 x-two=1, 2 body={\"a\":1}]"
        "[POST /acp ka=1 up=0 ex=1 host=a transfer-encoding=chunked expect=100-continue "
        "body={\"b\":2}]"
        "[GET / ka=0 up=0 ex=0 body=]"
        "[GET /up ka=1 up=1 ex=0 host=a connection=keep-alive, Upgrade upgrade=websocket body=]"
        "[DELETE /acp ka=0 up=0 ex=0 host=a connection=close body=]");
}

/* Every split into two pieces, and byte by byte: the same requests. */
static void test_pipelined_splits(void **state)
{
    got ref = whole(pipelined);
    size_t len = strlen(pipelined);
    size_t one = 1;
    got g = run(pipelined, len, &one, 1, 65536, 1 << 20);
    assert_string_equal(g.text, ref.text);
    assert_int_equal(g.heads, ref.heads);
    for (size_t cut = 1; cut < len; cut++) {
        size_t pieces[2] = {cut, len};
        g = run(pipelined, len, pieces, 2, 65536, 1 << 20);
        assert_int_equal(g.error, 0);
        assert_string_equal(g.text, ref.text);
    }
}

static int status_of(const char *in)
{
    return whole(in).error;
}

static void test_refusals(void **state)
{
    assert_int_equal(status_of("GARBAGE\r\n\r\n"), 400);
    assert_int_equal(status_of("GET  /acp HTTP/1.1\r\nHost: a\r\n\r\n"), 400);
    assert_int_equal(status_of("GET /acp HTTP/1.1 x\r\nHost: a\r\n\r\n"), 400);
    assert_int_equal(status_of("G(T /acp HTTP/1.1\r\nHost: a\r\n\r\n"), 400);
    assert_int_equal(status_of("GET /a\x01 HTTP/1.1\r\nHost: a\r\n\r\n"), 400);
    assert_int_equal(status_of("GET /acp HTTQ/1.1\r\nHost: a\r\n\r\n"), 400);
    assert_int_equal(status_of("GET /acp HTTP/2.0\r\nHost: a\r\n\r\n"), 505);
    assert_int_equal(status_of("GET /acp HTTP/1.1\r\n\r\n"), 400); /* no Host */
    assert_int_equal(status_of("GET /acp HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"), 400);
    assert_int_equal(status_of("GET /acp HTTP/1.1\r\nHost: a\r\nX : y\r\n\r\n"), 400);
    assert_int_equal(status_of("GET /acp HTTP/1.1\r\nHost: a\r\nX: y\r\n z\r\n\r\n"), 400);
    assert_int_equal(status_of("GET /acp HTTP/1.1\r\nHost: a\r\nX: a\rb\r\n\r\n"), 400);
    assert_int_equal(status_of("GET /acp HTTP/1.1\r\nHost: a\r\nX: a\x01\r\n\r\n"), 400);
    /* A NUL byte anywhere in the head, not a value cut short at it (issue 21). */
    static const char nul[] =
        "GET /acp HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer T\0junk\r\n\r\n";
    size_t nn = sizeof nul - 1;
    assert_int_equal(run(nul, nn, &nn, 1, 65536, 1 << 20).error, 400);
    assert_int_equal(status_of("GET /acp HTTP/1.1\r\nHost: a\r\nnocolon\r\n\r\n"), 400);
    assert_int_equal(
        status_of("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"),
        400);
    assert_int_equal(status_of("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n"), 400);
    assert_int_equal(
        status_of("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999999\r\n\r\n"),
        400);
    assert_int_equal(status_of("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n"
                               "Transfer-Encoding: chunked\r\n\r\n"),
                     400);
    assert_int_equal(status_of("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n"),
                     501);
    assert_int_equal(status_of("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
                               "zz\r\n"),
                     400);
    assert_int_equal(status_of("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
                               "2\r\nabc\r\n0\r\n\r\n"),
                     400);
    assert_int_equal(status_of("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
                               "fffffffffffffffff\r\n"),
                     400);
    assert_int_equal(status_of("POST / HTTP/1.1\r\nHost: a\r\nExpect: magic\r\n"
                               "Content-Length: 1\r\n\r\nx"),
                     417);
    assert_int_equal(status_of("\r\n\r\n"), 400);
}

static void test_limits(void **state)
{
    /* The head's bound: exactly at it passes, one byte over is 431 (also when the bytes come
     * one at a time, so nothing grows past the bound first). */
    const char *start = "GET / HTTP/1.1\r\nHost: a\r\nX: ";
    size_t max = 200;
    char buf[512];
    size_t fill = max - strlen(start) - 4;
    snprintf(
        buf, sizeof buf, "%s%.*s\r\n\r\n", start, (int)fill,
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    assert_int_equal(strlen(buf), max);
    size_t one = 1, all = strlen(buf);
    assert_int_equal(run(buf, all, &all, 1, max, 100).requests, 1);
    assert_int_equal(run(buf, all, &all, 1, max - 1, 100).error, 431);
    assert_int_equal(run(buf, all, &one, 1, max - 1, 100).error, 431);
    /* Too many fields. */
    char many[8192] = "GET / HTTP/1.1\r\nHost: a\r\n";
    for (int i = 0; i < 300; i++) strcat(many, "A: b\r\n");
    strcat(many, "\r\n");
    all = strlen(many);
    assert_int_equal(run(many, all, &all, 1, 65536, 100).error, 431);

    /* The body's bound: Content-Length over it is refused from the head, before any body
     * byte; a chunked body when it crosses it. */
    const char *cl = "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\n\r\n";
    all = strlen(cl);
    got g = run(cl, all, &all, 1, 65536, 10);
    assert_int_equal(g.error, 413);
    assert_int_equal(g.heads, 0);
    const char *ch = "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
                     "5\r\n12345\r\n5\r\n12345\r\n1\r\nx\r\n0\r\n\r\n";
    all = strlen(ch);
    assert_int_equal(run(ch, all, &all, 1, 65536, 10).error, 413);
    assert_int_equal(run(ch, all, &one, 1, 65536, 10).error, 413);
    assert_int_equal(run(ch, all, &all, 1, 65536, 11).requests, 1);
}

static void test_keep_alive(void **state)
{
    assert_non_null(strstr(whole("GET / HTTP/1.1\r\nHost: a\r\n\r\n").text, "ka=1"));
    assert_non_null(
        strstr(whole("GET / HTTP/1.1\r\nHost: a\r\nConnection: Close\r\n\r\n").text, "ka=0"));
    assert_non_null(strstr(whole("GET / HTTP/1.0\r\n\r\n").text, "ka=0"));
    assert_non_null(strstr(whole("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").text, "ka=1"));
    /* Upgrade needs both the Connection token and the Upgrade field. */
    assert_non_null(
        strstr(whole("GET / HTTP/1.1\r\nHost: a\r\nConnection: upgrade\r\n\r\n").text, "up=0"));
    /* Expect without a body asks for nothing. */
    assert_non_null(
        strstr(whole("GET / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n\r\n").text, "ex=0"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pipelined_whole), cmocka_unit_test(test_pipelined_splits),
        cmocka_unit_test(test_refusals),        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_keep_alive),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
