/* SPDX-License-Identifier: Apache-2.0 */
/* The HTTP/1.1 wire (net/http1.c) on a real socket, with a router of the test's own: pipelined
 * requests answered in order (one of them later than the next arrives), 100 Continue before a
 * body and only once the head was accepted, a refusal from on_head that leaves a body unread
 * closing the connection, keep-alive vs Connection: close vs HTTP/1.0, a chunked streaming
 * response and a HEAD, a parse error answered and closed, and a request whose client went away
 * aborted for the profile (on_abort). Descriptors counted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp/json.h"
#include "net/http1.h"
#include "net/sock_server.h"

static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    while (readdir(d)) n++;
    closedir(d);
    return n;
}

typedef struct world {
    uv_loop_t loop;
    uv_tcp_t srv;
    acp_sock_group g;
    acp_net_limits lim;
    int port;
    /* the router */
    int heads;
    acp_http_req *held; /* a request answered later */
    bool aborted;
    /* the client */
    uv_tcp_t cli;
    uv_connect_t creq;
    acp_buf got;
    bool cli_closed;
    int read_err; /* what ended the client's reading: UV_EOF, or a reset */
    uv_shutdown_t sreq;
} world;

static void answer(acp_http_req *r)
{
    size_t n;
    const char *body = acp_http_req_body(r, &n);
    char text[256];
    int len = snprintf(text, sizeof text, "%s %s [%.*s]", acp_http_req_method(r),
                       acp_http_req_path(r), (int)n, body);
    acp_http_res_send(r, 200, "text/plain", text, (size_t)len, NULL, 0);
}

static void held_abort(acp_http_req *r, void *user)
{
    world *w = user;
    w->aborted = true;
    w->held = NULL;
}

static bool on_head(acp_http_req *r, void *user)
{
    world *w = user;
    w->heads++;
    if (!strcmp(acp_http_req_path(r), "/refuse")) {
        acp_http_res_send(r, 401, "text/plain", "no\n", 3, NULL, 0);
        return false;
    }
    return true;
}

static bool on_request(acp_http_req *r, acp_sock *s, const char *l, size_t n, void *user)
{
    world *w = user;
    const char *path = acp_http_req_path(r);
    if (!strcmp(path, "/later")) {
        w->held = r;
        acp_http_req_cbs cbs = {.on_abort = held_abort};
        acp_http_req_watch(r, &cbs, w);
    } else if (!strcmp(path, "/stream")) {
        acp_http_field f = {"Content-Type", "text/event-stream"};
        assert_int_equal(acp_http_res_start(r, 200, &f, 1, ACP_HTTP_STREAMING), 0);
        assert_int_equal(acp_http_res_write(r, "data: a\n\n", 9), 0);
        assert_int_equal(acp_http_res_write(r, "data: bc\n\n", 10), 0);
        acp_http_res_end(r);
    } else {
        answer(r);
    }
    return false;
}

static const acp_wire_cbs router = {on_head, on_request};

static void on_conn(uv_stream_t *st, int status)
{
    world *w = st->data;
    acp_sock *s;
    assert_int_equal(acp_sock_accept(st, false, NULL, &w->lim, &w->g, &s), 0);
    assert_int_equal(acp_http1_serve(s, NULL, 0, &w->lim, &router, w), 0);
}

static void cli_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
    static char buf[65536];
    *b = uv_buf_init(buf, sizeof buf);
}

static void cli_read(uv_stream_t *st, ssize_t n, const uv_buf_t *b)
{
    world *w = st->data;
    if (n > 0) acp_buf_append(&w->got, b->base, (size_t)n);
    if (n < 0) {
        w->read_err = (int)n;
        w->cli_closed = true;
        uv_read_stop(st);
    }
}

static void connected(uv_connect_t *req, int status)
{
    assert_int_equal(status, 0);
    uv_read_start(req->handle, cli_alloc, cli_read);
}

static void start(world *w)
{
    memset(w, 0, sizeof *w);
    uv_loop_init(&w->loop);
    w->lim = acp_net_limits_resolve(&(acp_net_limits){.max_message = 1000});
    w->read_err = 0;
    uv_tcp_init(&w->loop, &w->srv);
    w->srv.data = w;
    struct sockaddr_in a;
    uv_ip4_addr("127.0.0.1", 0, &a);
    assert_int_equal(uv_tcp_bind(&w->srv, (struct sockaddr *)&a, 0), 0);
    assert_int_equal(uv_listen((uv_stream_t *)&w->srv, 8, on_conn), 0);
    int len = sizeof a;
    uv_tcp_getsockname(&w->srv, (struct sockaddr *)&a, &len);
    uv_tcp_init(&w->loop, &w->cli);
    w->cli.data = w;
    assert_int_equal(uv_tcp_connect(&w->creq, &w->cli, (struct sockaddr *)&a, connected), 0);
}

static void cli_write_done(uv_write_t *req, int status)
{
    free(req);
}

static void send_text(world *w, const char *text)
{
    uv_write_t *req = malloc(sizeof *req);
    uv_buf_t b = uv_buf_init((char *)text, (unsigned)strlen(text));
    assert_int_equal(uv_write(req, (uv_stream_t *)&w->cli, &b, 1, cli_write_done), 0);
}

/* Runs the loop until the client has received `want` (or the connection closed). */
static const char *until(world *w, const char *want)
{
    for (int i = 0; i < 100000; i++) {
        if (w->got.len && acp_buf_cstr(&w->got) && strstr(w->got.data, want)) break;
        if (w->cli_closed) break;
        uv_run(&w->loop, UV_RUN_ONCE);
    }
    return acp_buf_cstr(&w->got);
}

static void until_closed(world *w)
{
    while (!w->cli_closed) uv_run(&w->loop, UV_RUN_ONCE);
}

/* The client says it is done sending; a lingering server then closes: a clean EOF, no reset. */
static void client_done(world *w)
{
    assert_int_equal(uv_shutdown(&w->sreq, (uv_stream_t *)&w->cli, NULL), 0);
    until_closed(w);
    assert_int_equal(w->read_err, UV_EOF);
}

static void finish(world *w)
{
    acp_sock_group_close(&w->g);
    uv_close((uv_handle_t *)&w->srv, NULL);
    if (!uv_is_closing((uv_handle_t *)&w->cli)) uv_close((uv_handle_t *)&w->cli, NULL);
    uv_run(&w->loop, UV_RUN_DEFAULT);
    assert_int_equal(w->g.count, 0);
    assert_int_equal(uv_loop_close(&w->loop), 0);
    acp_buf_free(&w->got);
}

static int occurrences(const char *s, const char *what)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, what)); p += strlen(what)) n++;
    return n;
}

static void test_pipelined_in_order(void **state)
{
    int fds = count_fds();
    world w;
    start(&w);
    /* The first is answered only after the second and third have arrived. */
    send_text(&w, "POST /later HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc"
                  "GET /two HTTP/1.1\r\nHost: a\r\n\r\n"
                  "POST /three HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
                  "2\r\nxy\r\n0\r\n\r\n");
    while (!w.held) uv_run(&w.loop, UV_RUN_ONCE);
    for (int i = 0; i < 20; i++) uv_run(&w.loop, UV_RUN_NOWAIT);
    assert_int_equal(w.got.len, 0); /* nothing overtakes the held answer */
    answer(w.held);
    w.held = NULL;
    const char *got = until(&w, "POST /three [xy]");
    const char *one = strstr(got, "POST /later [abc]"), *two = strstr(got, "GET /two []"),
               *three = strstr(got, "POST /three [xy]");
    assert_non_null(one);
    assert_non_null(two);
    assert_non_null(three);
    assert_true(one < two && two < three);
    assert_int_equal(occurrences(got, "HTTP/1.1 200 OK\r\n"), 3);
    assert_null(strstr(got, "Connection: close"));
    assert_false(w.cli_closed); /* keep-alive */
    finish(&w);
    assert_int_equal(count_fds(), fds);
}

static void test_continue_and_refusal(void **state)
{
    world w;
    start(&w);
    /* 100 Continue comes after the head was accepted, before the body was sent. */
    send_text(&w,
              "POST /x HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n");
    const char *got = until(&w, "\r\n\r\n");
    assert_string_equal(got, "HTTP/1.1 100 Continue\r\n\r\n");
    send_text(&w, "hi");
    got = until(&w, "POST /x [hi]");
    assert_non_null(strstr(got, "POST /x [hi]"));
    /* Refused at the head with a body announced: no 100, the 401, and the connection ends. */
    w.got.len = 0;
    send_text(&w, "POST /refuse HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n"
                  "Content-Length: 500\r\n\r\n");
    got = until(&w, "\r\n\r\nno\n");
    /* The body comes anyway (a client that does not wait for 100): dropped, no reset. */
    static char body[500];
    memset(body, 'b', sizeof body - 1);
    send_text(&w, body);
    client_done(&w);
    got = acp_buf_cstr(&w.got);
    assert_null(strstr(got, "100 Continue"));
    assert_non_null(strstr(got, "HTTP/1.1 401 Unauthorized\r\n"));
    assert_non_null(strstr(got, "Connection: close\r\n"));
    finish(&w);
}

static void test_refusal_without_body_keeps_alive(void **state)
{
    world w;
    start(&w);
    send_text(&w, "GET /refuse HTTP/1.1\r\nHost: a\r\n\r\nGET /after HTTP/1.1\r\nHost: a\r\n\r\n");
    const char *got = until(&w, "GET /after []");
    assert_non_null(strstr(got, "401"));
    assert_non_null(strstr(got, "GET /after []"));
    assert_false(w.cli_closed);
    finish(&w);
}

static void test_close_and_http10(void **state)
{
    world w;
    start(&w);
    send_text(&w, "GET /a HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
                  "GET /never HTTP/1.1\r\nHost: a\r\n\r\n");
    until_closed(&w);
    const char *got = acp_buf_cstr(&w.got);
    assert_non_null(strstr(got, "GET /a []"));
    assert_non_null(strstr(got, "Connection: close\r\n"));
    assert_null(strstr(got, "/never"));
    finish(&w);

    start(&w);
    send_text(&w, "GET /b HTTP/1.0\r\n\r\n");
    until_closed(&w);
    assert_non_null(strstr(acp_buf_cstr(&w.got), "GET /b []"));
    finish(&w);

    start(&w);
    send_text(&w, "GET /c HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    got = until(&w, "GET /c []");
    assert_non_null(strstr(got, "Connection: keep-alive\r\n"));
    assert_false(w.cli_closed);
    finish(&w);
}

static void test_streaming_and_head(void **state)
{
    world w;
    start(&w);
    send_text(&w, "GET /stream HTTP/1.1\r\nHost: a\r\n\r\nHEAD /h HTTP/1.1\r\nHost: a\r\n\r\n"
                  "GET /z HTTP/1.1\r\nHost: a\r\n\r\n");
    const char *got = until(&w, "GET /z []");
    assert_non_null(strstr(got, "Transfer-Encoding: chunked\r\n\r\n9\r\ndata: a\n\n\r\n"
                                "a\r\ndata: bc\n\n\r\n0\r\n\r\n"));
    /* HEAD: the length of what GET would send, and no body: the next answer follows at once. */
    const char *head =
        strstr(got, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 10"
                    "\r\n\r\nHTTP/1.1 200");
    assert_non_null(head);
    finish(&w);
}

static void test_errors_and_abort(void **state)
{
    world w;
    start(&w);
    send_text(&w, "GET /x HTTP/1.1\r\nHost: a\r\nBad Field: y\r\n\r\n");
    until(&w, "field\n");
    client_done(&w);
    assert_non_null(strstr(acp_buf_cstr(&w.got), "HTTP/1.1 400 Bad Request\r\n"));
    finish(&w);

    /* 413 from the head's numbers; the client sends its body anyway, 64 KiB after the answer:
     * read and dropped (closing at once would reset the connection under the answer). */
    start(&w);
    send_text(&w, "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 65536\r\n\r\n");
    until(&w, "too large\n");
    static char more[65537];
    memset(more, 'm', sizeof more - 1);
    send_text(&w, more);
    client_done(&w);
    assert_non_null(strstr(acp_buf_cstr(&w.got), "HTTP/1.1 413 "));
    assert_int_equal(w.heads, 0); /* refused from the head's numbers, before the router */
    finish(&w);

    /* The client goes while its request is held: the profile hears on_abort. */
    start(&w);
    send_text(&w, "GET /later HTTP/1.1\r\nHost: a\r\n\r\n");
    while (!w.held) uv_run(&w.loop, UV_RUN_ONCE);
    uv_close((uv_handle_t *)&w.cli, NULL);
    while (!w.aborted) uv_run(&w.loop, UV_RUN_ONCE);
    assert_null(w.held);
    finish(&w);
}

int main(void)
{
    uv_loop_t first; /* libuv's process-wide signal pipe opens with the first loop */
    uv_loop_init(&first);
    uv_loop_close(&first);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pipelined_in_order),
        cmocka_unit_test(test_continue_and_refusal),
        cmocka_unit_test(test_refusal_without_body_keeps_alive),
        cmocka_unit_test(test_close_and_http10),
        cmocka_unit_test(test_streaming_and_head),
        cmocka_unit_test(test_errors_and_abort),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
