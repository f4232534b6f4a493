/* SPDX-License-Identifier: Apache-2.0 */
/* The WebSocket profile over real TCP on 127.0.0.1: our client against our server (messages
 * both ways, token and cookie sent, limits), our client against a scripted raw server (status
 * codes, a bad Sec-WebSocket-Accept, Set-Cookie kept, binary frames ignored), our server against a
 * scripted raw client (fragments, pings, unmasked frames, bad upgrades, a client that never
 * reads or never answers pings). The server side sits behind a tiny stand-in for the HTTP/1.1
 * wire: it reads one request head and calls acp_ws_accept() as the router would. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "acp/error.h"
#include "net/sock_server.h"
#include "net/ws_int.h"

/* --- the loop ------------------------------------------------------------------------------ */

static uv_loop_t loop;

/* Runs the loop until pred(ctx) holds. A guard against hangs (about 60 s), not a measure. */
static bool run_until(bool (*pred)(void *), void *ctx)
{
    for (int i = 0; i < 60000; i++) {
        if (pred(ctx)) return true;
        uv_run(&loop, UV_RUN_NOWAIT);
        if (pred(ctx)) return true;
        usleep(1000);
    }
    return false;
}

static void stop_loop(uv_timer_t *h)
{
    uv_stop(h->loop);
}

/* Runs the loop for ms without a pause between its turns: a ping's round trip takes several
 * turns, and a turn per millisecond (run_until's) on a loaded machine let 5 ms pings time out. */
static void run_for(uint64_t ms)
{
    uv_timer_t stop;
    uv_timer_init(&loop, &stop);
    uv_timer_start(&stop, stop_loop, ms, 0);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_close((uv_handle_t *)&stop, NULL);
    uv_run(&loop, UV_RUN_NOWAIT);
}

static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    while (readdir(d)) n++;
    closedir(d);
    return n;
}

/* --- received messages --------------------------------------------------------------------- */

typedef struct inbox {
    char *msg[16];
    size_t len[16];
    int n;
    int closed, drains;
    const char *reason; /* NULL, or reason_buf: on_close's reason lives only for the call */
    char reason_buf[128];
    int logs; /* lines told to on_log */
    unsigned code;
} inbox;

static void inbox_add(inbox *b, const char *m, size_t n)
{
    if (b->n < 16) {
        b->msg[b->n] = malloc(n + 1);
        memcpy(b->msg[b->n], m, n);
        b->msg[b->n][n] = '\0';
        b->len[b->n] = n;
    }
    b->n++;
}

static void inbox_free(inbox *b)
{
    for (int i = 0; i < b->n && i < 16; i++) free(b->msg[i]);
    memset(b, 0, sizeof *b);
}

/* --- the server: a listener, a stand-in request reader, acp_ws_accept ---------------------- */

typedef struct server {
    uv_tcp_t tcp;
    bool tcp_closed;
    int port;
    acp_sock_group group;
    acp_net_limits lim;
    const char *raw; /* non-NULL: answer with these bytes instead (printf: the accept key) */
    const char *raw_frames;
    size_t raw_frames_len;
    bool echo;
    int accepted, refused;
    char auth[128], cookie[128];
    acp_link *link;
    inbox in;
    /* raw mode: what the client sent after the head */
    char got[4096];
    size_t got_len;
} server;

static server srv;

typedef struct pending {
    acp_http_req r; /* first */
    acp_sock *s;
    char head[8192];
    size_t len;
    acp_http_field f[32];
} pending;

static int ex_start(acp_http_req *r, int status, const acp_http_field *f, size_t n, size_t len)
{
    pending *p = (pending *)r;
    char h[1024];
    int k = snprintf(h, sizeof h, "HTTP/1.1 %d X\r\n", status);
    for (size_t i = 0; i < n; i++)
        k += snprintf(h + k, sizeof h - (size_t)k, "%s: %s\r\n", f[i].name, f[i].value);
    k += snprintf(h + k, sizeof h - (size_t)k, "Content-Length: %zu\r\n\r\n", len);
    return acp_sock_write(p->s, h, (size_t)k);
}

static int ex_write(acp_http_req *r, const void *b, size_t n)
{
    return acp_sock_write(((pending *)r)->s, b, n);
}

static void ex_end(acp_http_req *r)
{
    acp_sock_close(((pending *)r)->s);
}

static size_t ex_queued(const acp_http_req *r)
{
    return acp_sock_queued(((pending *)r)->s);
}

static const acp_http_req_ops ex_ops = {ex_start, ex_write, ex_end, ex_queued};

static void srv_msg(acp_link *l, const char *m, size_t n, void *u)
{
    inbox_add(&srv.in, m, n);
    if (srv.echo) assert_int_equal(acp_link_send(l, m, n), 0);
}

static void srv_drain(acp_link *l, void *u)
{
    srv.in.drains++;
}

static void srv_close(acp_link *l, const char *reason, void *u)
{
    srv.in.closed++;
    snprintf(srv.in.reason_buf, sizeof srv.in.reason_buf, "%s", reason);
    srv.in.reason = srv.in.reason_buf;
    srv.in.code = acp_ws_close_code(l);
    srv.link = NULL;
}

static void srv_log(acp_link *l, const char *line, void *u)
{
    srv.in.logs++;
}

static void srv_on_link(acp_link *l, void *u)
{
    static const acp_link_cbs cbs = {srv_msg, srv_drain, srv_close, srv_log};
    srv.link = l;
    srv.accepted++;
    acp_link_bind(l, &cbs, NULL);
}

static void raw_read(acp_sock *s, const char *b, size_t n, void *u)
{
    if (n > sizeof srv.got - srv.got_len) n = sizeof srv.got - srv.got_len;
    memcpy(srv.got + srv.got_len, b, n);
    srv.got_len += n;
}

static void pending_closed(acp_sock *s, const char *reason, void *u)
{
    free(u);
}

/* Parses the head in place into the exchange, as the HTTP/1.1 wire would. */
static void parse_head(pending *p)
{
    char *save, *line = strtok_r(p->head, "\r\n", &save);
    p->r.method = strtok_r(line, " ", &line);
    p->r.path = strtok_r(NULL, " ", &line);
    while ((line = strtok_r(NULL, "\r\n", &save)) && p->r.nheaders < 32) {
        char *c = strchr(line, ':');
        if (!c) continue;
        *c = '\0';
        for (char *q = line; *q; q++) *q = (char)tolower((unsigned char)*q);
        char *v = c + 1;
        while (*v == ' ') v++;
        p->f[p->r.nheaders++] = (acp_http_field){line, v};
    }
    p->r.headers = p->f;
    p->r.ops = &ex_ops;
}

static void pending_read(acp_sock *s, const char *b, size_t n, void *u)
{
    pending *p = u;
    if (p->len + n > sizeof p->head - 1) n = sizeof p->head - 1 - p->len;
    memcpy(p->head + p->len, b, n);
    p->len += n;
    p->head[p->len] = '\0';
    char *end = strstr(p->head, "\r\n\r\n");
    if (!end) return;
    size_t hlen = (size_t)(end - p->head) + 4;
    char leftover[8192];
    size_t nleft = p->len - hlen;
    memcpy(leftover, p->head + hlen, nleft);
    *end = '\0';
    parse_head(p);
    const char *a = acp_http_req_header(&p->r, "authorization");
    const char *c = acp_http_req_header(&p->r, "cookie");
    snprintf(srv.auth, sizeof srv.auth, "%s", a ? a : "");
    snprintf(srv.cookie, sizeof srv.cookie, "%s", c ? c : "");
    if (srv.raw) {
        const char *key = acp_http_req_header(&p->r, "sec-websocket-key");
        char accept[29] = "";
        if (key) ws_accept_key(key, strlen(key), accept);
        char out[1024];
        int k = snprintf(out, sizeof out, srv.raw, accept);
        static const acp_sock_cbs raw = {NULL, raw_read, NULL, pending_closed};
        acp_sock_bind(s, &raw, p);
        acp_sock_write(s, out, (size_t)k);
        if (srv.raw_frames) acp_sock_write(s, srv.raw_frames, srv.raw_frames_len);
        return;
    }
    int rc = acp_ws_accept(s, &p->r, leftover, nleft, &srv.lim, srv_on_link, NULL);
    if (rc == 0)
        free(p);
    else
        srv.refused++;
}

static void on_conn(uv_stream_t *listener, int status)
{
    assert_int_equal(status, 0);
    acp_sock *s;
    assert_int_equal(acp_sock_accept(listener, false, NULL, &srv.lim, &srv.group, &s), 0);
    pending *p = calloc(1, sizeof *p);
    p->s = s;
    static const acp_sock_cbs cbs = {NULL, pending_read, NULL, pending_closed};
    acp_sock_bind(s, &cbs, p);
}

static int fds_before;

static int setup(void **state)
{
    fds_before = count_fds();
    uv_loop_init(&loop);
    memset(&srv, 0, sizeof srv);
    uv_tcp_init(&loop, &srv.tcp);
    struct sockaddr_in a;
    uv_ip4_addr("127.0.0.1", 0, &a);
    assert_int_equal(uv_tcp_bind(&srv.tcp, (struct sockaddr *)&a, 0), 0);
    assert_int_equal(uv_listen((uv_stream_t *)&srv.tcp, 16, on_conn), 0);
    struct sockaddr_in got;
    int len = sizeof got;
    uv_tcp_getsockname(&srv.tcp, (struct sockaddr *)&got, &len);
    srv.port = ntohs(got.sin_port);
    return 0;
}

static bool loop_idle(void *c)
{
    return !uv_loop_alive(&loop);
}

static int teardown(void **state)
{
    if (srv.link) acp_link_close(srv.link);
    acp_sock_group_close(&srv.group);
    if (!srv.tcp_closed) uv_close((uv_handle_t *)&srv.tcp, NULL);
    assert_true(run_until(loop_idle, NULL));
    assert_int_equal(uv_loop_close(&loop), 0);
    inbox_free(&srv.in);
    assert_int_equal(count_fds(), fds_before);
    return 0;
}

/* --- our client ---------------------------------------------------------------------------- */

typedef struct client {
    acp_link *l;
    int opened, status;
    char detail[128];
    inbox in;
} client;

static void cl_open(acp_link *l, int status, const char *detail, void *u)
{
    client *c = u;
    c->opened++;
    c->status = status;
    snprintf(c->detail, sizeof c->detail, "%s", detail);
}

static void cl_msg(acp_link *l, const char *m, size_t n, void *u)
{
    inbox_add(&((client *)u)->in, m, n);
}

static void cl_close(acp_link *l, const char *reason, void *u)
{
    client *c = u;
    c->in.closed++;
    snprintf(c->in.reason_buf, sizeof c->in.reason_buf, "%s", reason);
    c->in.reason = c->in.reason_buf;
    c->in.code = acp_ws_close_code(l);
    c->l = NULL;
}

static void cl_log(acp_link *l, const char *line, void *u)
{
    ((client *)u)->in.logs++;
}

static void client_connect(client *c, const char *token, acp_cookie_jar *jar,
                           const acp_net_limits *lim)
{
    char url[64];
    snprintf(url, sizeof url, "ws://127.0.0.1:%d/acp", srv.port);
    acp_ws_connect_opts o = {.url = url, .token = token, .cookies = jar, .lim = lim};
    assert_int_equal(acp_ws_connect(&loop, &o, cl_open, c, &c->l), 0);
    static const acp_link_cbs cbs = {cl_msg, NULL, cl_close, cl_log};
    acp_link_bind(c->l, &cbs, c);
}

static bool client_opened(void *c)
{
    return ((client *)c)->opened > 0;
}

static bool client_closed(void *c)
{
    return ((client *)c)->in.closed > 0;
}

static bool srv_has(void *n)
{
    return srv.in.n >= *(int *)n;
}

static bool client_has(void *c)
{
    return ((client *)c)->in.n >= 3;
}

static bool srv_closed(void *c)
{
    return srv.in.closed > 0;
}

/* --- raw peer helpers ---------------------------------------------------------------------- */

/* One frame; masked frames (a client's) with a fixed mask. */
static size_t frame(uint8_t *out, int op, bool fin, const void *p, size_t n, bool masked)
{
    size_t k = 0;
    out[k++] = (uint8_t)((fin ? 0x80 : 0) | op);
    uint8_t m = masked ? 0x80 : 0;
    if (n < 126) {
        out[k++] = (uint8_t)(m | n);
    } else {
        out[k++] = m | 126;
        out[k++] = (uint8_t)(n >> 8);
        out[k++] = (uint8_t)n;
    }
    static const uint8_t mask[4] = {0x12, 0x34, 0x56, 0x78};
    if (masked) memcpy(out + k, mask, 4), k += 4;
    for (size_t i = 0; i < n; i++)
        out[k + i] = (uint8_t)(((const uint8_t *)p)[i] ^ (masked ? mask[i % 4] : 0));
    return k + n;
}

static int raw_connect(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)srv.port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int small = 4096; /* a client that does not read fills up sooner */
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    fcntl(fd, F_SETFL, O_NONBLOCK);
    return fd;
}

static void raw_send(int fd, const void *p, size_t n)
{
    assert_int_equal(send(fd, p, n, MSG_NOSIGNAL), (ssize_t)n);
}

typedef struct rbuf {
    int fd;
    char b[1 << 16];
    size_t n;
    const char *want; /* wait for this substring (binary-safe) */
    size_t want_len;
    bool eof;
} rbuf;

static bool raw_has(void *c)
{
    rbuf *r = c;
    for (;;) {
        ssize_t k = recv(r->fd, r->b + r->n, sizeof r->b - r->n, 0);
        if (k > 0) {
            r->n += (size_t)k;
            continue;
        }
        if (k == 0) r->eof = true;
        break;
    }
    return (r->want && memmem(r->b, r->n, r->want, r->want_len)) || r->eof;
}

static void raw_expect(rbuf *r, const void *want, size_t n)
{
    r->want = want;
    r->want_len = n;
    assert_true(run_until(raw_has, r));
    assert_non_null(memmem(r->b, r->n, want, n));
}

static const char UPGRADE[] = "GET /acp HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
                              "Connection: keep-alive, Upgrade\r\n"
                              "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                              "Sec-WebSocket-Version: 13\r\n\r\n";

/* --- tests --------------------------------------------------------------------------------- */

/* Our client and server: messages both ways in order (an empty one and 1 MiB one among them),
 * the token and the jar's cookie on the upgrade, one connection id on both sides, pings
 * answered, and a clean close seen by both. */
static void test_echo(void **state)
{
    srv.echo = true;
    acp_cookie_jar *jar = acp_cookie_jar_new();
    acp_cookie_jar_store(jar, "a=1; Path=/");
    client c = {0};
    client_connect(&c, "s3cret", jar, NULL);
    /* Sent before the handshake ends: they wait for it. */
    size_t big = 1 << 20;
    char *m = malloc(big + 3);
    m[0] = '"';
    memset(m + 1, 'x', big);
    m[big + 1] = '"';
    m[big + 2] = '\0';
    assert_int_equal(acp_link_send(c.l, "{\"n\":1}", 7), 0);
    assert_int_equal(acp_link_send(c.l, "", 0), 0);
    assert_int_equal(acp_link_send(c.l, m, big + 2), 0);
    assert_true(run_until(client_has, &c));
    assert_int_equal(c.status, 0);
    assert_string_equal(c.detail, "connected");
    assert_string_equal(c.in.msg[0], "{\"n\":1}");
    assert_int_equal(c.in.len[1], 0);
    assert_int_equal(c.in.len[2], big + 2);
    assert_memory_equal(c.in.msg[2], m, big + 2);
    assert_string_equal(srv.auth, "Bearer s3cret");
    assert_string_equal(srv.cookie, "a=1");
    assert_int_equal(strlen(acp_ws_connection_id(c.l)), 36);
    assert_string_equal(acp_ws_connection_id(c.l), acp_ws_connection_id(srv.link));
    acp_link_close(c.l);
    assert_int_equal(acp_link_send(c.l, "x", 1), ACP_EIO);
    assert_true(run_until(client_closed, &c));
    assert_true(run_until(srv_closed, NULL));
    assert_string_equal(srv.in.reason, "peer closed");
    assert_int_equal(srv.in.code, 1000);
    assert_int_equal(c.in.code, 1000);
    free(m);
    inbox_free(&c.in);
    acp_cookie_jar_free(jar);
}

/* Both sides ping every 5 ms and answer each other's pings: many intervals go by on an
 * idle connection and nobody is dropped. */
static void test_keepalive(void **state)
{
    srv.lim.ping_interval_ms = 5;
    acp_net_limits cl = {.ping_interval_ms = 5};
    client c = {0};
    client_connect(&c, NULL, NULL, &cl);
    assert_true(run_until(client_opened, &c));
    run_for(200);
    assert_int_equal(c.in.closed + srv.in.closed, 0);
    assert_int_equal(acp_link_send(c.l, "{}", 2), 0);
    int one = 1;
    assert_true(run_until(srv_has, &one));
    acp_link_close(c.l);
    assert_true(run_until(client_closed, &c));
    inbox_free(&c.in);
}

/* A message over the server's max_message: closed with 1009, nothing delivered. */
static void test_too_big(void **state)
{
    srv.lim.max_message = 1000;
    client c = {0};
    client_connect(&c, NULL, NULL, NULL);
    char m[1001];
    memset(m, 'x', sizeof m);
    assert_int_equal(acp_link_send(c.l, m, 1000), 0);
    assert_int_equal(acp_link_send(c.l, m, 1001), 0);
    assert_true(run_until(client_closed, &c));
    assert_int_equal(c.in.code, 1009);
    assert_true(run_until(srv_closed, NULL));
    assert_string_equal(srv.in.reason, "message too big");
    assert_int_equal(srv.in.n, 1);
    assert_string_equal(srv.auth, "");
    inbox_free(&c.in);
}

static void test_refused(void **state)
{
    srv.raw = "HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n";
    client c = {0};
    client_connect(&c, "wrong", NULL, NULL);
    assert_int_equal(acp_link_send(c.l, "{}", 2), 0);
    assert_true(run_until(client_closed, &c));
    assert_int_equal(c.opened, 1);
    assert_int_equal(c.status, ACP_EACCES);
    assert_string_equal(c.detail, "HTTP 401 Unauthorized");
    assert_int_equal(srv.got_len, 0); /* the queued message never went out */
}

/* A 101 with Set-Cookie: the jar keeps both, and the frame in the same write arrives. */
static void test_cookies(void **state)
{
    static uint8_t hi[16];
    srv.raw = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
              "Sec-WebSocket-Accept: %s\r\nSet-Cookie: sid=abc; Path=/; HttpOnly\r\n"
              "Set-Cookie: lb=x\r\nAcp-Connection-Id: conn-1\r\n\r\n";
    srv.raw_frames = (const char *)hi;
    srv.raw_frames_len = frame(hi, 1, true, "hi", 2, false);
    acp_cookie_jar *jar = acp_cookie_jar_new();
    acp_cookie_jar_store(jar, "sid=old");
    client c = {0};
    client_connect(&c, NULL, jar, NULL);
    assert_true(run_until(client_opened, &c));
    assert_int_equal(c.status, 0);
    assert_string_equal(srv.cookie, "sid=old");
    char *h = acp_cookie_jar_header(jar);
    assert_string_equal(h, "sid=abc; lb=x");
    free(h);
    assert_string_equal(acp_ws_connection_id(c.l), "conn-1");
    while (c.in.n < 1) uv_run(&loop, UV_RUN_ONCE);
    assert_string_equal(c.in.msg[0], "hi");
    acp_link_close(c.l);
    acp_sock_group_close(&srv.group); /* the scripted server answers no close frame */
    assert_true(run_until(client_closed, &c));
    inbox_free(&c.in);
    acp_cookie_jar_free(jar);
}

static void test_bad_accept(void **state)
{
    srv.raw = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
              "Sec-WebSocket-Accept: AAAA%s\r\n\r\n";
    client c = {0};
    client_connect(&c, NULL, NULL, NULL);
    assert_true(run_until(client_closed, &c));
    assert_int_equal(c.status, ACP_EPROTO);
    assert_int_equal(c.in.n, 0);
}

/* Binary messages are ignored, as the RFD says ("Binary frames are ignored"), and told to the
 * owner's log once per connection: our client skips two and receives the text after them,
 * and the connection stays open (no close frame goes out). */
static void test_binary(void **state)
{
    static uint8_t f[32];
    srv.raw = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
              "Sec-WebSocket-Accept: %s\r\n\r\n";
    size_t k = frame(f, 2, true, "\x01\x02", 2, false);
    k += frame(f + k, 2, true, "\xff", 1, false);
    k += frame(f + k, 1, true, "hi", 2, false);
    srv.raw_frames = (const char *)f;
    srv.raw_frames_len = k;
    client c = {0};
    client_connect(&c, NULL, NULL, NULL);
    assert_true(run_until(client_opened, &c));
    while (c.in.n < 1) uv_run(&loop, UV_RUN_ONCE);
    assert_string_equal(c.in.msg[0], "hi");
    assert_int_equal(c.in.n, 1);
    assert_int_equal(c.in.logs, 1);
    assert_int_equal(c.in.closed, 0);
    assert_int_equal(srv.got_len, 0); /* no close frame */
    acp_link_close(c.l);
    acp_sock_group_close(&srv.group); /* the raw server does not answer the close */
    assert_true(run_until(client_closed, &c));
    inbox_free(&c.in);
}

/* Our server, likewise: masked binary frames from a raw client are ignored (one log line),
 * the text after them is delivered, and the server answers with no close. */
static void test_binary_server(void **state)
{
    int fd = raw_connect();
    raw_send(fd, UPGRADE, sizeof UPGRADE - 1);
    rbuf r = {.fd = fd};
    raw_expect(&r, "\r\n\r\n", 4);
    assert_non_null(strstr(r.b, "HTTP/1.1 101 "));
    uint8_t f[64];
    size_t k = frame(f, 2, true, "\x00\x01\x02", 3, true);
    k += frame(f + k, 2, true, "", 0, true);
    k += frame(f + k, 1, true, "{}", 2, true);
    raw_send(fd, f, k);
    int one = 1;
    assert_true(run_until(srv_has, &one));
    assert_string_equal(srv.in.msg[0], "{}");
    assert_int_equal(srv.in.logs, 1);
    assert_int_equal(srv.in.closed, 0);
    close(fd);
    assert_true(run_until(srv_closed, NULL));
    assert_int_equal(srv.in.n, 1);
}

/* Our server against raw frames: a fragmented message reassembled, a ping answered, an
 * unmasked frame closes with 1002. */
static void test_raw_client(void **state)
{
    int fd = raw_connect();
    raw_send(fd, UPGRADE, sizeof UPGRADE - 1);
    rbuf r = {.fd = fd};
    raw_expect(&r, "\r\n\r\n", 4);
    assert_non_null(strstr(r.b, "HTTP/1.1 101 "));
    /* RFC 6455's own example key and answer. */
    assert_non_null(strstr(r.b, "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"));
    assert_non_null(strstr(r.b, "Acp-Connection-Id: "));
    uint8_t f[64];
    size_t k = frame(f, 1, false, "hel", 3, true);
    k += frame(f + k, 9, true, "p", 1, true); /* a ping between the fragments */
    k += frame(f + k, 0, true, "lo", 2, true);
    raw_send(fd, f, k);
    int one = 1;
    assert_true(run_until(srv_has, &one));
    assert_string_equal(srv.in.msg[0], "hello");
    raw_expect(&r, "\x8a\x01p", 3); /* the pong */
    k = frame(f, 1, true, "{}", 2, false);
    raw_send(fd, f, k);
    raw_expect(&r, "\x88\x02\x03\xea", 4); /* close 1002 */
    /* The server reads on (discarding) until we close: then it ends too. */
    uint8_t more[16];
    raw_send(fd, more, frame(more, 1, true, "ignored", 7, true));
    close(fd);
    assert_true(run_until(srv_closed, NULL));
    assert_string_equal(srv.in.reason, "protocol error");
    assert_int_equal(srv.in.n, 1);
}

static void test_bad_upgrade(void **state)
{
    static const char *const bad[] = {
        "GET /acp HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Version: 13\r\n\r\n",
        "GET /acp HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Key: short==\r\nSec-WebSocket-Version: 13\r\n\r\n",
        "GET /acp HTTP/1.1\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
        "GET /acp HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 8\r\n\r\n",
    };
    for (int i = 0; i < 4; i++) {
        int fd = raw_connect();
        raw_send(fd, bad[i], strlen(bad[i]));
        rbuf r = {.fd = fd};
        raw_expect(&r, "\r\n\r\n", 4);
        assert_non_null(strstr(r.b, i == 3 ? "HTTP/1.1 426 " : "HTTP/1.1 400 "));
        if (i == 3) assert_non_null(strstr(r.b, "Sec-WebSocket-Version: 13\r\n"));
        close(fd);
    }
    assert_int_equal(srv.refused, 4);
    assert_int_equal(srv.accepted, 0);
}

/* Fills the server's link past its high water toward a raw client that does not read. */
static void fill(int fd)
{
    static char m[16 << 10];
    memset(m, 'y', sizeof m);
    for (int i = 0; i < 4096 && acp_link_queued(srv.link) < acp_link_high_water(srv.link); i++) {
        assert_int_equal(acp_link_send(srv.link, m, sizeof m), 0);
        /* Unsolicited pongs (RFC 6455 5.5.3) while we still read: the stall, not a missed
         * pong, must be what ends the connection however slowly this runs. */
        uint8_t pong[8];
        raw_send(fd, pong, frame(pong, 10, true, "", 0, true));
        uv_run(&loop, UV_RUN_NOWAIT);
    }
    assert_true(acp_link_queued(srv.link) >= acp_link_high_water(srv.link));
}

static bool srv_drained(void *r)
{
    raw_has(r);
    ((rbuf *)r)->n = 0; /* keep reading */
    return srv.in.drains > 0;
}

/* Back-pressure: over the high water the link says so; the client reading makes it drain. */
static void test_drain(void **state)
{
    srv.lim.high_water = 64 << 10;
    int fd = raw_connect();
    raw_send(fd, UPGRADE, sizeof UPGRADE - 1);
    while (!srv.link) uv_run(&loop, UV_RUN_ONCE);
    assert_int_equal(acp_link_high_water(srv.link), 64 << 10);
    fill(fd);
    assert_int_equal(srv.in.drains, 0);
    rbuf r = {.fd = fd};
    assert_true(run_until(srv_drained, &r));
    assert_true(acp_link_queued(srv.link) < acp_link_high_water(srv.link) / 2);
    close(fd);
    assert_true(run_until(srv_closed, NULL));
}

static bool client_has8(void *c)
{
    return ((client *)c)->in.n >= 8 && srv.in.drains > 0;
}

/* One loop turn's burst over the high water, to a client that reads at once: the frames are
 * still the link's own when it goes over, and the socket, which takes them all, never fills.
 * The link must still report its drain once they are out, or its owner waits for good. */
static void test_batch_drain(void **state)
{
    srv.lim.high_water = 64 << 10;
    client c = {0};
    client_connect(&c, NULL, NULL, NULL);
    assert_true(run_until(client_opened, &c));
    while (!srv.link) uv_run(&loop, UV_RUN_ONCE);
    static char m[16 << 10];
    memset(m, 'z', sizeof m);
    for (int i = 0; i < 8; i++) assert_int_equal(acp_link_send(srv.link, m, sizeof m), 0);
    assert_true(acp_link_queued(srv.link) >= acp_link_high_water(srv.link));
    assert_true(run_until(client_has8, &c));
    assert_int_equal(c.in.len[7], sizeof m);
    acp_link_close(c.l);
    assert_true(run_until(client_closed, &c));
    inbox_free(&c.in);
}

/* A client that never reads while we are over the high water is dropped after two pings. */
static void test_stalled(void **state)
{
    srv.lim.high_water = 64 << 10;
    srv.lim.ping_interval_ms = 20;
    int fd = raw_connect();
    raw_send(fd, UPGRADE, sizeof UPGRADE - 1);
    while (!srv.link) uv_run(&loop, UV_RUN_ONCE);
    fill(fd);
    assert_true(run_until(srv_closed, NULL));
    assert_string_equal(srv.in.reason, "peer stopped reading");
    close(fd);
}

static bool raw_eof(void *r)
{
    raw_has(r);
    ((rbuf *)r)->n = 0;
    return ((rbuf *)r)->eof;
}

/* A client that reads but never answers pings is dropped. */
static void test_ping_timeout(void **state)
{
    srv.lim.ping_interval_ms = 10;
    int fd = raw_connect();
    raw_send(fd, UPGRADE, sizeof UPGRADE - 1);
    rbuf r = {.fd = fd};
    assert_true(run_until(raw_eof, &r));
    assert_true(run_until(srv_closed, NULL));
    assert_string_equal(srv.in.reason, "ping timeout");
    close(fd);
}

static void test_bad_urls(void **state)
{
    static const char *const urls[] = {
        "http://127.0.0.1/acp", "ws://", "ws://:80/", "ws://h:0/", "ws://h:65536/", "ws://u:p@h/",
        "ws://[::1/", "ws://h:8x/",
        /* Ports are read with acp_parse_u64: sign, junk, overflow, nothing. */
        "ws://h:80x/", "ws://h:-1/", "ws://h:99999/", "ws://h:+80/", "ws://h:/", "ws://[::1]:1e3/",
        "ws://h:99999999999999999999/"};
    client c = {0};
    for (size_t i = 0; i < sizeof urls / sizeof *urls; i++) {
        acp_ws_connect_opts o = {.url = urls[i]};
        assert_int_equal(acp_ws_connect(&loop, &o, cl_open, &c, &c.l), ACP_EINVAL);
    }
    acp_ws_connect_opts o = {.url = "ws://127.0.0.1:1/", .token = "a\r\nX-Injected: 1"};
    assert_int_equal(acp_ws_connect(&loop, &o, cl_open, &c, &c.l), ACP_EINVAL);
}

/* Nothing listens there: on_open says so, then on_close. */
static void test_no_server(void **state)
{
    client c = {0};
    uv_close((uv_handle_t *)&srv.tcp, NULL);
    srv.tcp_closed = true;
    client_connect(&c, NULL, NULL, NULL);
    assert_true(run_until(client_closed, &c));
    assert_int_equal(c.status, ACP_EIO);
}

static void test_cookie_jar(void **state)
{
    acp_cookie_jar *j = acp_cookie_jar_new();
    assert_null(acp_cookie_jar_header(j));
    acp_cookie_jar_store(j, " a = 1 ; Path=/");
    acp_cookie_jar_store(j, "novalue");
    acp_cookie_jar_store(j, "=x");
    acp_cookie_jar_store(j, "b=2");
    acp_cookie_jar_store(j, "a=3");
    acp_cookie_jar_store(j, "c=\x01");
    char *h = acp_cookie_jar_header(j);
    assert_string_equal(h, "a=3; b=2");
    free(h);
    for (int i = 0; i < 100; i++) {
        char c[16];
        snprintf(c, sizeof c, "k%d=v", i);
        acp_cookie_jar_store(j, c);
    }
    h = acp_cookie_jar_header(j);
    assert_null(strstr(h, "k62=v")); /* bounded at 64 */
    free(h);
    acp_cookie_jar_clear(j);
    assert_null(acp_cookie_jar_header(j));
    acp_cookie_jar_free(j);
}

int main(void)
{
    /* libuv's process-wide signal pipe and OpenSSL's first digest open what stays open for
     * good: before the descriptor counts start. */
    uv_loop_init(&loop);
    uv_loop_close(&loop);
    signal(SIGPIPE, SIG_IGN); /* as the programs do: a write to a closed peer is EPIPE */
    char a[29];
    ws_accept_key("k", 1, a);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_echo, setup, teardown),
        cmocka_unit_test_setup_teardown(test_keepalive, setup, teardown),
        cmocka_unit_test_setup_teardown(test_too_big, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cookies, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_accept, setup, teardown),
        cmocka_unit_test_setup_teardown(test_binary, setup, teardown),
        cmocka_unit_test_setup_teardown(test_binary_server, setup, teardown),
        cmocka_unit_test_setup_teardown(test_raw_client, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_upgrade, setup, teardown),
        cmocka_unit_test_setup_teardown(test_drain, setup, teardown),
        cmocka_unit_test_setup_teardown(test_batch_drain, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stalled, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ping_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_urls, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_server, setup, teardown),
        cmocka_unit_test(test_cookie_jar),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
