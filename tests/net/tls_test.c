/* SPDX-License-Identifier: Apache-2.0 */
/* TLS on acp_sock over real TCP on 127.0.0.1, with certificates the test makes with the openssl
 * CLI: the client verifies the chain and the host (an IP address or a name) and agrees ALPN; a
 * wrong host, an untrusted certificate and a cleartext peer fail with ACP_EPROTO on on_open;
 * a megabyte goes both ways through records and partial writes unchanged; everything is
 * closed and freed (descriptors counted). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acp/error.h"
#include "acp/json.h"
#include "net/sock_server.h"

static char dir[256], cert[300], key[300], other_cert[300], other_key[300];

static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    while (readdir(d)) n++;
    closedir(d);
    return n;
}

static void make_cert(const char *c, const char *k, const char *san)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd,
             "openssl req -x509 -newkey rsa:2048 -nodes -keyout %s -out %s -days 1 "
             "-subj /CN=test -addext subjectAltName=%s >/dev/null 2>&1",
             k, c, san);
    assert_int_equal(system(cmd), 0);
}

static int setup(void **state)
{
    /* libuv's process-wide signal pipe opens with the first loop: before any count. */
    uv_loop_t first;
    uv_loop_init(&first);
    uv_loop_close(&first);
    snprintf(dir, sizeof dir, "/tmp/acp-tls-XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(cert, sizeof cert, "%s/cert.pem", dir);
    snprintf(key, sizeof key, "%s/key.pem", dir);
    snprintf(other_cert, sizeof other_cert, "%s/other.pem", dir);
    snprintf(other_key, sizeof other_key, "%s/other-key.pem", dir);
    make_cert(cert, key, "DNS:localhost,IP:127.0.0.1");
    make_cert(other_cert, other_key, "DNS:other.example");
    return 0;
}

static int teardown(void **state)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd);
}

/* --- a TLS echo server --------------------------------------------------------------------- */

typedef struct server {
    uv_loop_t *loop;
    uv_tcp_t tcp;
    acp_tls_ctx *ctx; /* NULL: cleartext */
    acp_sock_group g;
    acp_net_limits lim;
    int port;
    int opened, closed;
} server;

static void srv_open(acp_sock *s, int status, void *user)
{
    server *sv = user;
    if (status == 0) sv->opened++;
}

static void srv_read(acp_sock *s, const char *p, size_t n, void *user)
{
    acp_sock_write(s, p, n);
}

static void srv_close(acp_sock *s, const char *reason, void *user)
{
    ((server *)user)->closed++;
}

static void on_conn(uv_stream_t *st, int status)
{
    server *sv = st->data;
    acp_sock *s;
    assert_int_equal(acp_sock_accept(st, false, sv->ctx, &sv->lim, &sv->g, &s), 0);
    acp_sock_cbs cbs = {srv_open, srv_read, NULL, srv_close};
    acp_sock_bind(s, &cbs, sv);
}

static void server_start(server *sv, uv_loop_t *loop, const char *c, const char *k)
{
    memset(sv, 0, sizeof *sv);
    sv->loop = loop;
    sv->lim = acp_net_limits_resolve(NULL);
    if (c) {
        char *err = NULL;
        sv->ctx = acp_tls_ctx_server(c, k, true, &err);
        assert_null(err);
        assert_non_null(sv->ctx);
    }
    uv_tcp_init(loop, &sv->tcp);
    sv->tcp.data = sv;
    struct sockaddr_in a;
    uv_ip4_addr("127.0.0.1", 0, &a);
    assert_int_equal(uv_tcp_bind(&sv->tcp, (struct sockaddr *)&a, 0), 0);
    assert_int_equal(uv_listen((uv_stream_t *)&sv->tcp, 16, on_conn), 0);
    struct sockaddr_in b;
    int len = sizeof b;
    uv_tcp_getsockname(&sv->tcp, (struct sockaddr *)&b, &len);
    sv->port = ntohs(b.sin_port);
}

static void server_stop(server *sv)
{
    acp_sock_group_close(&sv->g);
    uv_close((uv_handle_t *)&sv->tcp, NULL);
    acp_tls_ctx_free(sv->ctx);
}

/* --- a client ------------------------------------------------------------------------------ */

typedef struct client {
    int status; /* on_open's, 1 until then */
    char alpn[16];
    acp_buf got;
    size_t want;
    const char *send;
    size_t send_len;
    bool closed;
} client;

static void cl_open(acp_sock *s, int status, void *user)
{
    client *c = user;
    c->status = status;
    if (status) return;
    const char *a = acp_sock_alpn(s);
    snprintf(c->alpn, sizeof c->alpn, "%s", a ? a : "-");
    if (c->send_len) assert_int_equal(acp_sock_write(s, c->send, c->send_len), 0);
}

static void cl_read(acp_sock *s, const char *p, size_t n, void *user)
{
    client *c = user;
    assert_int_equal(acp_buf_append(&c->got, p, n), 0);
    if (c->got.len >= c->want) acp_sock_close(s);
}

static void cl_close(acp_sock *s, const char *reason, void *user)
{
    ((client *)user)->closed = true;
}

static client run_client(uv_loop_t *loop, const char *host, int port, const char *ca,
                         const char *const *alpn, const char *send, size_t n)
{
    client c = {.status = 1, .send = send, .send_len = n, .want = n};
    acp_sock_connect_opts o = {
        .host = host, .port = (unsigned short)port, .tls = true, .ca_file = ca, .alpn = alpn};
    acp_sock_cbs cbs = {cl_open, cl_read, NULL, cl_close};
    acp_sock *s;
    assert_int_equal(acp_sock_connect(loop, &o, &cbs, &c, &s), 0);
    while (!c.closed) uv_run(loop, UV_RUN_ONCE);
    return c;
}

static void drain(uv_loop_t *loop)
{
    uv_run(loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(loop), 0);
}

static void test_verified_echo(void **state)
{
    int fds = count_fds();
    uv_loop_t loop;
    uv_loop_init(&loop);
    server sv;
    server_start(&sv, &loop, cert, key);
    static const char *const both[] = {"h2", "http/1.1", NULL};
    static const char *const h1[] = {"http/1.1", NULL};

    /* By address, both protocols offered: h2 is chosen. */
    client c = run_client(&loop, "127.0.0.1", sv.port, cert, both, "hello", 5);
    assert_int_equal(c.status, 0);
    assert_string_equal(c.alpn, "h2");
    assert_int_equal(c.got.len, 5);
    assert_memory_equal(c.got.data, "hello", 5);
    acp_buf_free(&c.got);

    /* By name, HTTP/1.1 only; then no ALPN at all. */
    c = run_client(&loop, "localhost", sv.port, cert, h1, "x", 1);
    assert_int_equal(c.status, 0);
    assert_string_equal(c.alpn, "http/1.1");
    acp_buf_free(&c.got);
    c = run_client(&loop, "localhost", sv.port, cert, NULL, "x", 1);
    assert_int_equal(c.status, 0);
    assert_string_equal(c.alpn, "-");
    acp_buf_free(&c.got);

    /* A megabyte through records, both ways. */
    size_t big = 1 << 20;
    char *buf = malloc(big);
    for (size_t i = 0; i < big; i++) buf[i] = (char)(i * 7 + (i >> 12));
    c = run_client(&loop, "127.0.0.1", sv.port, cert, NULL, buf, big);
    assert_int_equal(c.status, 0);
    assert_int_equal(c.got.len, big);
    assert_memory_equal(c.got.data, buf, big);
    acp_buf_free(&c.got);
    free(buf);

    server_stop(&sv);
    drain(&loop);
    assert_int_equal(sv.g.count, 0);
    assert_int_equal(sv.opened, 4);
    assert_int_equal(count_fds(), fds);
}

static void test_refused(void **state)
{
    int fds = count_fds();
    uv_loop_t loop;
    uv_loop_init(&loop);
    server sv, other, clear;
    server_start(&sv, &loop, cert, key);
    server_start(&other, &loop, other_cert, other_key);
    server_start(&clear, &loop, NULL, NULL);

    /* Trusted chain, wrong host: the certificate names other.example, not 127.0.0.1. */
    client c = run_client(&loop, "127.0.0.1", other.port, other_cert, NULL, "x", 1);
    assert_int_equal(c.status, ACP_EPROTO);
    assert_int_equal(c.got.len, 0);
    /* A name that is not in the certificate either. */
    c = run_client(&loop, "localhost", other.port, other_cert, NULL, "x", 1);
    assert_int_equal(c.status, ACP_EPROTO);
    /* Not trusted: the system's store does not know a self-signed certificate, nor does a
     * file with another one. */
    c = run_client(&loop, "127.0.0.1", sv.port, NULL, NULL, "x", 1);
    assert_int_equal(c.status, ACP_EPROTO);
    c = run_client(&loop, "127.0.0.1", sv.port, other_cert, NULL, "x", 1);
    assert_int_equal(c.status, ACP_EPROTO);
    /* A cleartext server does not speak TLS. */
    c = run_client(&loop, "127.0.0.1", clear.port, cert, NULL, "x", 1);
    assert_int_equal(c.status, ACP_EPROTO);
    /* Nobody listening. */
    uv_tcp_t probe;
    uv_tcp_init(&loop, &probe);
    int dead = clear.port;
    server_stop(&clear);
    uv_close((uv_handle_t *)&probe, NULL);
    uv_run(&loop, UV_RUN_NOWAIT);
    c = run_client(&loop, "127.0.0.1", dead, cert, NULL, "x", 1);
    assert_int_equal(c.status, ACP_EIO);
    /* The server that refused nothing saw no complete handshake from the refusals. */
    assert_int_equal(other.opened, 0);

    server_stop(&sv);
    server_stop(&other);
    drain(&loop);
    assert_int_equal(count_fds(), fds);
}

static void test_bad_files(void **state)
{
    char *err = NULL;
    assert_null(acp_tls_ctx_server("/nonexistent.pem", key, true, &err));
    assert_non_null(strstr(err, "cannot load the TLS certificate '/nonexistent.pem'"));
    free(err);
    assert_null(acp_tls_ctx_server(cert, other_key, true, &err));
    bool said = strstr(err, "cannot load the TLS key") || strstr(err, "does not match");
    free(err);
    assert_true(said);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_verified_echo),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_bad_files),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
