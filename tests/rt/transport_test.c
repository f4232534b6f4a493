/* SPDX-License-Identifier: Apache-2.0 */
/* acp_transport over real descriptors: pipes between two connections, one socket for both
 * directions, regular files and /dev/null, a child's pipes (cat echoes our own requests back
 * to us), EOF and EPIPE, before_flush batching and refusal, and back-pressure against a peer
 * that stops reading. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <poll.h>
#include <termios.h>
#include <unistd.h>

#include "acp/rt.h"

static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    assert_non_null(d);
    int n = 0;
    while (readdir(d)) n++;
    closedir(d);
    return n;
}

static void echo_handler(acp_conn *c, acp_req *r, void *u)
{
    json_t *p = acp_req_params(r);
    assert_int_equal(acp_req_reply(r, json_incref(p)), 0);
}

/* --- two connections over two pipes ------------------------------------------------- */

typedef struct {
    uv_loop_t *loop;
    acp_conn *a, *b;
    acp_transport *ta, *tb;
    int answered, expected, eofs, closed;
    int64_t next; /* answers must come back in the order of their "n" */
    bool in_order;
} pair;

static void on_closed(void *u)
{
    ((pair *)u)->closed++;
}

static void on_answer(acp_conn *c, acp_msg *m, void *u)
{
    pair *p = u;
    assert_false(acp_msg_is_error(m));
    json_t *n = json_object_get(acp_msg_result(m), "n");
    if (json_integer_value(n) != p->next) p->in_order = false;
    p->next++;
    if (++p->answered == p->expected) {
        acp_transport_close(p->ta, on_closed, p);
        /* b sees EOF on its input now: a's write end closes. */
    }
}

static void on_eof_b(acp_transport *t, void *u)
{
    pair *p = u;
    p->eofs++;
    acp_transport_close(t, on_closed, p);
}

static void test_pipes_both_ways(void **state)
{
    int fds0 = count_fds();
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    int ab[2], ba[2];
    assert_int_equal(pipe2(ab, O_CLOEXEC), 0);
    assert_int_equal(pipe2(ba, O_CLOEXEC), 0);
    pair p = {.loop = &loop, .expected = 500, .in_order = true};
    p.a = acp_conn_new(NULL);
    p.b = acp_conn_new(NULL);
    acp_conn_on(p.b, "_echo", echo_handler, NULL, NULL);
    acp_transport_opts ob = {
        .struct_size = sizeof(acp_transport_opts), .on_eof = on_eof_b, .user = &p};
    assert_int_equal(acp_transport_open(&loop, p.a, ba[0], ab[1], NULL, &p.ta), 0);
    assert_int_equal(acp_transport_open(&loop, p.b, ab[0], ba[1], &ob, &p.tb), 0);
    /* Our descriptors stay blocking: the transports made their own (a shared stdout/stderr
     * pipe must not turn non-blocking under the program's feet). */
    for (int i = 0; i < 2; i++) {
        assert_int_equal(fcntl(ab[i], F_GETFL) & O_NONBLOCK, 0);
        assert_int_equal(fcntl(ba[i], F_GETFL) & O_NONBLOCK, 0);
    }
    /* The transports work on their own descriptors: ours can go now, and b's input only
     * ends when a's transport closes its own. */
    for (int i = 0; i < 2; i++) close(ab[i]), close(ba[i]);
    for (int i = 0; i < p.expected; i++)
        assert_int_equal(
            acp_conn_call(p.a, "_echo", json_pack("{s:i}", "n", i), on_answer, &p, NULL), 0);
    assert_true(acp_transport_queued(p.ta) > 0);
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(p.answered, p.expected);
    assert_true(p.in_order);
    assert_int_equal(p.eofs, 1);
    assert_int_equal(p.closed, 2);
    assert_int_equal(uv_loop_close(&loop), 0);
    acp_conn_free(p.a);
    acp_conn_free(p.b);
    assert_int_equal(count_fds(), fds0);
}

/* --- one socket, same fd for input and output ---------------------------------------- */

static void test_same_socket(void **state)
{
    int fds0 = count_fds();
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    pair p = {.loop = &loop, .expected = 50, .in_order = true};
    p.a = acp_conn_new(NULL);
    p.b = acp_conn_new(NULL);
    acp_conn_on(p.b, "_echo", echo_handler, NULL, NULL);
    acp_transport_opts ob = {
        .struct_size = sizeof(acp_transport_opts), .on_eof = on_eof_b, .user = &p};
    /* a: one fd both ways; b: two fds for one socket, as inetd hands over stdin/stdout. */
    int sv1b = fcntl(sv[1], F_DUPFD_CLOEXEC, 3);
    assert_int_equal(acp_transport_open(&loop, p.a, sv[0], sv[0], NULL, &p.ta), 0);
    assert_int_equal(acp_transport_open(&loop, p.b, sv[1], sv1b, &ob, &p.tb), 0);
    close(sv[0]);
    close(sv[1]);
    close(sv1b);
    for (int i = 0; i < p.expected; i++)
        acp_conn_call(p.a, "_echo", json_pack("{s:i}", "n", i), on_answer, &p, NULL);
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(p.answered, p.expected);
    assert_true(p.in_order);
    assert_int_equal(p.eofs, 1);
    assert_int_equal(uv_loop_close(&loop), 0);
    acp_conn_free(p.a);
    acp_conn_free(p.b);
    assert_int_equal(count_fds(), fds0);
}

typedef struct {
    int eofs;
    bool closed;
} simple;

static void simple_closed(void *u)
{
    ((simple *)u)->closed = true;
}

static void simple_eof(acp_transport *t, void *u)
{
    ((simple *)u)->eofs++;
    acp_transport_close(t, simple_closed, u);
}

/* --- TCP on loopback (libuv sees UV_TCP, not a pipe) --------------------------------- */

static void test_tcp(void **state)
{
    int fds0 = count_fds();
    int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof sa;
    assert_int_equal(bind(ls, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(ls, 1), 0);
    assert_int_equal(getsockname(ls, (struct sockaddr *)&sa, &sl), 0);
    int cs = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_int_equal(connect(cs, (struct sockaddr *)&sa, sizeof sa), 0);
    int as = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
    assert_true(as >= 0);
    close(ls);
    assert_int_equal(uv_guess_handle(as), UV_TCP);

    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    pair p = {.loop = &loop, .expected = 50, .in_order = true};
    p.a = acp_conn_new(NULL);
    p.b = acp_conn_new(NULL);
    acp_conn_on(p.b, "_echo", echo_handler, NULL, NULL);
    acp_transport_opts ob = {
        .struct_size = sizeof(acp_transport_opts), .on_eof = on_eof_b, .user = &p};
    assert_int_equal(acp_transport_open(&loop, p.a, cs, cs, NULL, &p.ta), 0);
    assert_int_equal(acp_transport_open(&loop, p.b, as, as, &ob, &p.tb), 0);
    close(cs);
    close(as);
    for (int i = 0; i < p.expected; i++)
        acp_conn_call(p.a, "_echo", json_pack("{s:i}", "n", i), on_answer, &p, NULL);
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(p.answered, p.expected);
    assert_true(p.in_order);
    assert_int_equal(p.eofs, 1);
    assert_int_equal(uv_loop_close(&loop), 0);
    acp_conn_free(p.a);
    acp_conn_free(p.b);
    assert_int_equal(count_fds(), fds0);
}

/* --- a terminal: the transport on a pty's slave, we play the terminal ---------------- */

static void test_tty(void **state)
{
    int fds0 = count_fds();
    int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    assert_true(m >= 0);
    assert_int_equal(grantpt(m), 0);
    assert_int_equal(unlockpt(m), 0);
    int sl = open(ptsname(m), O_RDWR | O_NOCTTY | O_CLOEXEC);
    assert_true(sl >= 0);
    struct termios tio;
    assert_int_equal(tcgetattr(sl, &tio), 0);
    cfmakeraw(&tio); /* no echo, no CR/LF translation: bytes as they are */
    assert_int_equal(tcsetattr(sl, TCSANOW, &tio), 0);
    assert_int_equal(uv_guess_handle(sl), UV_TTY);

    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    acp_conn *c = acp_conn_new(NULL);
    acp_conn_on(c, "_echo", echo_handler, NULL, NULL);
    acp_transport *t;
    assert_int_equal(acp_transport_open(&loop, c, sl, sl, NULL, &t), 0);
    const char *req = "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"_echo\",\"params\":{\"t\":1}}\n";
    assert_int_equal(write(m, req, strlen(req)), (ssize_t)strlen(req));
    char got[256] = {0};
    size_t n = 0;
    /* Turn the loop without blocking and wait on the master side, until a line is back. */
    alarm(30);
    while (!memchr(got, '\n', n)) {
        uv_run(&loop, UV_RUN_NOWAIT);
        struct pollfd pf = {.fd = m, .events = POLLIN};
        if (poll(&pf, 1, 10) == 1) {
            ssize_t r = read(m, got + n, sizeof got - 1 - n);
            if (r > 0) n += (size_t)r;
        }
    }
    alarm(0);
    assert_string_equal(got, "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{\"t\":1}}\n");
    simple s = {0};
    acp_transport_close(t, simple_closed, &s);
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    assert_true(s.closed);
    assert_int_equal(uv_loop_close(&loop), 0);
    acp_conn_free(c);
    close(sl);
    close(m);
    assert_int_equal(count_fds(), fds0);
}

/* --- regular files and /dev/null ---------------------------------------------------- */

static void test_files(void **state)
{
    int fds0 = count_fds();
    char in_path[] = "/tmp/acp-tin-XXXXXX", out_path[] = "/tmp/acp-tout-XXXXXX";
    int in = mkstemp(in_path), out = mkstemp(out_path);
    assert_true(in >= 0 && out >= 0);
    const char *reqs = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"_echo\",\"params\":{\"x\":1}}\n"
                       "{\"jsonrpc\":\"2.0\",\"id\":\"two\",\"method\":\"_echo\"}\r\n"
                       "\n"
                       "{\"jsonrpc\":\"2.0\",\"id\":9007199254740993,\"method\":\"nope\"}";
    assert_int_equal(write(in, reqs, strlen(reqs)), (ssize_t)strlen(reqs));
    lseek(in, 0, SEEK_SET);

    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    acp_conn *c = acp_conn_new(NULL);
    acp_conn_on(c, "_echo", echo_handler, NULL, NULL);
    simple s = {0};
    acp_transport_opts o = {
        .struct_size = sizeof(acp_transport_opts), .on_eof = simple_eof, .user = &s};
    acp_transport *t;
    assert_int_equal(acp_transport_open(&loop, c, in, out, &o, &t), 0);
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(uv_loop_close(&loop), 0);
    assert_int_equal(s.eofs, 1);
    assert_true(s.closed);
    acp_conn_free(c);

    char got[1024] = {0};
    assert_true(pread(out, got, sizeof got - 1, 0) > 0);
    assert_non_null(strstr(got, "\"id\":1,\"result\":{\"x\":1}"));
    assert_non_null(strstr(got, "\"id\":\"two\",\"result\":{}"));
    assert_non_null(strstr(got, "\"id\":9007199254740993,\"error\":{\"code\":-32601"));
    /* Three lines, nothing else (nothing in rt writes anything of its own). */
    int lines = 0;
    for (char *q = got; *q; q++) lines += *q == '\n';
    assert_int_equal(lines, 3);
    close(in);
    close(out);
    unlink(in_path);
    unlink(out_path);

    /* /dev/null: immediate EOF. */
    int dn = open("/dev/null", O_RDWR | O_CLOEXEC);
    assert_int_equal(uv_loop_init(&loop), 0);
    c = acp_conn_new(NULL);
    s = (simple){0};
    assert_int_equal(acp_transport_open(&loop, c, dn, dn, &o, &t), 0);
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(uv_loop_close(&loop), 0);
    assert_int_equal(s.eofs, 1);
    acp_conn_free(c);
    close(dn);
    assert_int_equal(count_fds(), fds0);
}

/* --- EOF with calls pending, EPIPE --------------------------------------------------- */

typedef struct {
    int eofs, closed_errors;
    bool closed;
    int peer_read; /* the far end of our output pipe */
} dead;

static void dead_answer(acp_conn *c, acp_msg *m, void *u)
{
    dead *d = u;
    if (acp_msg_is_error(m) && acp_msg_error_code(m) == ACP_RPC_CONN_CLOSED) d->closed_errors++;
}

static void dead_closed(void *u)
{
    ((dead *)u)->closed = true;
}

static void dead_eof(acp_transport *t, void *u)
{
    ((dead *)u)->eofs++;
    acp_transport_close(t, dead_closed, u);
}

static void test_eof_and_epipe(void **state)
{
    int fds0 = count_fds();
    for (int mode = 0; mode < 2; mode++) {
        /* mode 0: the peer closes its output (our input); mode 1: it closes its input (our
         * output), so our write fails with EPIPE, which counts as EOF. */
        uv_loop_t loop;
        assert_int_equal(uv_loop_init(&loop), 0);
        int in[2], out[2];
        assert_int_equal(pipe2(in, O_CLOEXEC), 0);
        assert_int_equal(pipe2(out, O_CLOEXEC), 0);
        acp_conn *c = acp_conn_new(NULL);
        dead d = {0};
        acp_transport_opts o = {
            .struct_size = sizeof(acp_transport_opts), .on_eof = dead_eof, .user = &d};
        acp_transport *t;
        assert_int_equal(acp_transport_open(&loop, c, in[0], out[1], &o, &t), 0);
        close(in[0]);
        close(out[1]);
        for (int i = 0; i < 3; i++) acp_conn_call(c, "_slow", NULL, dead_answer, &d, NULL);
        if (mode == 0) {
            close(in[1]);
        } else {
            close(out[0]);
        }
        assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
        assert_int_equal(uv_loop_close(&loop), 0);
        assert_int_equal(d.eofs, 1);
        assert_true(d.closed);
        assert_int_equal(d.closed_errors, 3);
        assert_int_equal(acp_conn_pending_calls(c), 0);
        acp_conn_free(c);
        if (mode == 0)
            close(out[0]);
        else
            close(in[1]);
    }
    assert_int_equal(count_fds(), fds0);
}

/* --- before_flush: one flush per turn, and refusal ------------------------------------ */

typedef struct {
    int calls, refuse;
    size_t seen_at_first; /* bytes queued when before_flush first ran */
    uv_loop_t *loop;
    int rd;
    acp_transport *t;
    bool closed;
} bf;

static int before_flush(acp_transport *t, void *u)
{
    bf *b = u;
    if (b->calls++ == 0) b->seen_at_first = acp_transport_queued(t);
    if (b->refuse > 0) {
        b->refuse--;
        return -1;
    }
    return 0;
}

static void bf_closed(void *u)
{
    ((bf *)u)->closed = true;
}

static void test_before_flush(void **state)
{
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    int pp[2];
    assert_int_equal(pipe2(pp, O_CLOEXEC), 0);
    int dn = open("/dev/null", O_RDONLY | O_CLOEXEC);
    acp_conn *c = acp_conn_new(NULL);
    bf b = {.refuse = 2, .loop = &loop};
    acp_transport_opts o = {
        .struct_size = sizeof(acp_transport_opts), .before_flush = before_flush, .user = &b};
    acp_transport *t;
    /* Input that never ends: a pipe whose write end we hold. */
    int never[2];
    assert_int_equal(pipe2(never, O_CLOEXEC), 0);
    assert_int_equal(acp_transport_open(&loop, c, never[0], pp[1], &o, &t), 0);
    close(pp[1]);
    close(dn);
    for (int i = 0; i < 10; i++) acp_conn_notify_raw(c, "_n", "{}", 2);
    size_t ten = acp_conn_out_len(c);
    /* Turn by turn until the output is out: refused twice (kept queued), then written. */
    while (acp_transport_queued(t) > 0) uv_run(&loop, UV_RUN_ONCE);
    assert_int_equal(b.calls, 3);
    assert_int_equal(b.seen_at_first, ten);
    char buf[4096];
    ssize_t n = read(pp[0], buf, sizeof buf);
    assert_int_equal(n, (ssize_t)ten);
    /* Nothing queued: before_flush is not called on an idle turn. */
    acp_transport_flush(t);
    assert_int_equal(b.calls, 3);
    acp_transport_close(t, bf_closed, &b);
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    assert_true(b.closed);
    assert_int_equal(uv_loop_close(&loop), 0);
    acp_conn_free(c);
    close(pp[0]);
    close(never[0]);
    close(never[1]);
}

/* --- close against a peer that never reads ------------------------------------------ */

static void test_close_timeout(void **state)
{
    int fds0 = count_fds();
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    int pp[2], never[2];
    assert_int_equal(pipe2(pp, O_CLOEXEC), 0);
    assert_int_equal(pipe2(never, O_CLOEXEC), 0);
    acp_conn *c = acp_conn_new(NULL);
    acp_transport_opts o = {.struct_size = sizeof(acp_transport_opts), .close_timeout_ms = 20};
    acp_transport *t;
    assert_int_equal(acp_transport_open(&loop, c, never[0], pp[1], &o, &t), 0);
    /* Far more than a pipe holds, and nobody reads pp[0]. */
    static char big[1 << 20];
    memset(big, 'x', sizeof big - 3);
    memcpy(big, "\"", 1);
    memcpy(big + sizeof big - 3, "\"", 2);
    assert_int_equal(acp_conn_notify_raw(c, "_big", big, sizeof big - 2), 0);
    uv_run(&loop, UV_RUN_NOWAIT); /* the write starts and stalls */
    assert_true(acp_transport_queued(t) > 0);
    simple s = {0};
    acp_transport_close(t, simple_closed, &s);
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    assert_true(s.closed);
    assert_int_equal(uv_loop_close(&loop), 0);
    acp_conn_free(c);
    close(pp[1]);
    close(pp[0]);
    close(never[0]);
    close(never[1]);
    assert_int_equal(count_fds(), fds0);
}

/* --- back-pressure ------------------------------------------------------------------ */

#define HW    (256u << 10)
#define CHUNK (16u << 10)
#define TOTAL (8u << 20)

typedef struct {
    uv_loop_t *loop;
    acp_conn *c;
    acp_transport *t;
    uv_pipe_t reader;
    bool reading;
    size_t produced, received, max_queued, chunk_len;
    int drains, blocked;
    char *params;
    char rbuf[65536];
    bool closed;
} bp;

static void bp_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    bp *b = h->data;
    *buf = uv_buf_init(b->rbuf, sizeof b->rbuf);
}

static void bp_closed(void *u)
{
    ((bp *)u)->closed = true;
}

static void bp_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    bp *b = s->data;
    if (n > 0) b->received += (size_t)n;
    if (b->received == b->produced && b->produced >= TOTAL) {
        uv_read_stop(s);
        uv_close((uv_handle_t *)s, NULL);
        acp_transport_close(b->t, bp_closed, b);
    }
}

/* A producer that respects writable(): produces until told no, then waits for on_drain. */
static void produce(bp *b)
{
    while (b->produced < TOTAL) {
        if (!acp_transport_writable(b->t)) {
            b->blocked++;
            /* The peer starts reading only once we are blocked: before that, nothing has
             * been read at all. */
            if (!b->reading) {
                assert_int_equal(b->received, 0);
                b->reading = true;
                uv_read_start((uv_stream_t *)&b->reader, bp_alloc, bp_read);
            }
            return;
        }
        size_t before = acp_conn_out_len(b->c);
        assert_int_equal(acp_conn_notify_raw(b->c, "_chunk", b->params, strlen(b->params)), 0);
        b->chunk_len = acp_conn_out_len(b->c) - before;
        b->produced += b->chunk_len;
        size_t q = acp_transport_queued(b->t);
        if (q > b->max_queued) b->max_queued = q;
    }
}

static void bp_drain(acp_transport *t, void *u)
{
    bp *b = u;
    b->drains++;
    produce(b);
}

static void test_backpressure(void **state)
{
    int fds0 = count_fds();
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    int pp[2], never[2];
    assert_int_equal(pipe2(pp, O_CLOEXEC), 0);
    assert_int_equal(pipe2(never, O_CLOEXEC), 0);
    bp b = {.loop = &loop};
    b.params = malloc(CHUNK + 16);
    strcpy(b.params, "{\"d\":\"");
    memset(b.params + 6, 'x', CHUNK);
    strcpy(b.params + 6 + CHUNK, "\"}");
    b.c = acp_conn_new(NULL);
    acp_transport_opts o = {.struct_size = sizeof(acp_transport_opts),
                            .high_water = HW,
                            .on_drain = bp_drain,
                            .user = &b};
    assert_int_equal(acp_transport_open(&loop, b.c, never[0], pp[1], &o, &b.t), 0);
    close(pp[1]);
    uv_pipe_init(&loop, &b.reader, 0);
    b.reader.data = &b;
    assert_int_equal(uv_pipe_open(&b.reader, pp[0]), 0);
    produce(&b);
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(uv_loop_close(&loop), 0);
    assert_true(b.closed);
    assert_int_equal(b.received, b.produced);
    assert_true(b.produced >= TOTAL);
    assert_true(b.drains >= 1);
    assert_int_equal(b.blocked, b.drains);
    /* Memory stays bounded: never more than high_water plus the one chunk that crossed it. */
    assert_true(b.max_queued <= HW + b.chunk_len);
    fprintf(stderr, "backpressure: %zu bytes, blocked %d times, max queued %zu (high water %u)\n",
            b.produced, b.blocked, b.max_queued, HW);
    acp_conn_free(b.c);
    free(b.params);
    close(never[0]);
    close(never[1]);
    assert_int_equal(count_fds(), fds0);
}

/* --- a child's pipes ---------------------------------------------------------------- */

typedef struct {
    acp_proc *p;
    acp_transport *t;
    int answered;
    bool proc_done, t_closed;
    int64_t status;
    int exits;
} cat;

static void cat_stopped(void *u)
{
    ((cat *)u)->proc_done = true;
}

static void cat_closed(void *u)
{
    cat *k = u;
    k->t_closed = true;
    acp_proc_stop(k->p, 60000, cat_stopped, k); /* cat leaves at stdin EOF, long before */
}

static void cat_answer(acp_conn *c, acp_msg *m, void *u)
{
    cat *k = u;
    assert_false(acp_msg_is_error(m));
    assert_string_equal(json_string_value(json_object_get(acp_msg_result(m), "via")), "cat");
    if (++k->answered == 20) acp_transport_close(k->t, cat_closed, k);
}

static void cat_exit(acp_proc *p, int64_t status, int sig, void *u)
{
    cat *k = u;
    k->exits++;
    k->status = status;
}

static void test_proc_transport(void **state)
{
    int fds0 = count_fds();
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    cat k = {0};
    char *argv[] = {"/bin/cat", NULL};
    acp_proc_opts po = {.struct_size = sizeof(acp_proc_opts),
                        .file = argv[0],
                        .argv = argv,
                        .pipe_stdin = true,
                        .pipe_stdout = true,
                        .on_exit = cat_exit,
                        .user = &k};
    assert_int_equal(acp_proc_spawn(&loop, &po, &k.p), 0);
    acp_conn *c = acp_conn_new(NULL);
    /* cat sends our requests back: we answer them, and cat brings the answers home. */
    acp_conn_on(c, "_echo", echo_handler, NULL, NULL);
    assert_int_equal(acp_transport_open_proc(&loop, c, k.p, NULL, &k.t), 0);
    acp_transport *again;
    assert_int_equal(acp_transport_open_proc(&loop, c, k.p, NULL, &again), ACP_EINVAL);
    for (int i = 0; i < 20; i++)
        acp_conn_call(c, "_echo", json_pack("{s:s}", "via", "cat"), cat_answer, &k, NULL);
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(uv_loop_close(&loop), 0);
    assert_int_equal(k.answered, 20);
    assert_true(k.t_closed && k.proc_done);
    assert_int_equal(k.exits, 1);
    assert_int_equal(k.status, 0);
    acp_conn_free(c);
    assert_int_equal(count_fds(), fds0);
}

/* libuv opens a process-wide signal pipe on the first spawn; take fd baselines after it. */
static void warm_up(void)
{
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    char *argv[] = {"/bin/true", NULL};
    acp_proc_opts o = {.struct_size = sizeof(acp_proc_opts), .file = argv[0], .argv = argv};
    acp_proc *p;
    assert_int_equal(acp_proc_spawn(&loop, &o, &p), 0);
    acp_proc_stop(p, 5000, NULL, NULL);
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    warm_up();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pipes_both_ways),
        cmocka_unit_test(test_same_socket),
        cmocka_unit_test(test_tcp),
        cmocka_unit_test(test_tty),
        cmocka_unit_test(test_files),
        cmocka_unit_test(test_eof_and_epipe),
        cmocka_unit_test(test_before_flush),
        cmocka_unit_test(test_backpressure),
        cmocka_unit_test(test_proc_transport),
        cmocka_unit_test(test_close_timeout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
