/* SPDX-License-Identifier: Apache-2.0 */
/* rpc_throughput: messages per second through acp_conn (issue 2's benchmark). The same
 * workloads run on the TypeScript SDK in bench/rpc_throughput.mjs; bench/run.sh prints both.
 *
 *   rpc_throughput inproc N [tree]  one process, one connection: N 200-byte `_bench/ping`
 *                                   notifications fed in 64 KiB pieces; the handler re-emits
 *                                   each as session/update (its params text as is, or with
 *                                   `tree`, parsed by jansson and serialised again); the
 *                                   output is taken after every piece
 *   rpc_throughput emit N           CPU time per session/update written with the streaming
 *                                   writer (output taken every 1024 messages and dropped)
 *   rpc_throughput writer N         emits N session/update on stdout through the rt transport,
 *                                   respecting its back-pressure
 *   rpc_throughput reader [tree]    counts session/update arriving on stdin (rt transport);
 *                                   the rate runs from the first message to EOF; with `tree`
 *                                   the handler also parses each one's params with jansson
 * Each prints one line of key=value figures. Not part of libacp. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "acp/rpc.h"
#include "acp/rt.h"

#define SID "0123456789abcdef0123456789abcdef"

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The 200-byte line (newline included), the same text as rpc_throughput.mjs builds. */
static size_t ping_line(char *buf, size_t cap, const char *method)
{
    int head = snprintf(buf, cap,
                        "{\"jsonrpc\":\"2.0\",\"method\":\"%s\",\"params\":{\"sessionId\":\"" SID
                        "\",\"update\":{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{"
                        "\"type\":\"text\",\"text\":\"",
                        method);
    int fill = 200 - head - 5 - 1;
    memset(buf + head, 'x', (size_t)fill);
    memcpy(buf + head + fill, "\"}}}}\n", 6);
    return (size_t)(head + fill + 6);
}

static void fail(const char *what)
{
    fprintf(stderr, "rpc_throughput: %s\n", what);
    exit(1);
}

/* --- inproc ------------------------------------------------------------------------- */

static void ping_raw(acp_conn *c, acp_msg *m, void *user)
{
    acp_span p = acp_msg_params_text(m);
    if (acp_conn_notify_raw(c, "session/update", p.p, p.n) != 0) fail("notify_raw failed");
}

static void ping_tree(acp_conn *c, acp_msg *m, void *user)
{
    json_t *p = acp_msg_params(m);
    if (!p || acp_conn_notify(c, "session/update", json_incref(p)) != 0) fail("notify failed");
}

static int inproc(long n, int tree)
{
    char line[256];
    size_t ll = ping_line(line, sizeof line, "_bench/ping");
    size_t total = ll * (size_t)n;
    char *in = malloc(total);
    if (!in) fail("out of memory");
    for (long i = 0; i < n; i++) memcpy(in + (size_t)i * ll, line, ll);
    acp_conn *c = acp_conn_new(NULL);
    if (!c || acp_conn_on(c, "_bench/ping", NULL, tree ? ping_tree : ping_raw, NULL) != 0)
        fail("acp_conn_new failed");
    size_t out_lines = 0, out_bytes = 0;
    double t0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    for (size_t off = 0; off < total; off += 65536) {
        size_t len = total - off < 65536 ? total - off : 65536;
        if (acp_conn_recv(c, in + off, len) != 0) fail("recv failed");
        size_t olen;
        char *out = acp_conn_out_take(c, &olen);
        if (out) {
            for (char *p = out; (p = memchr(p, '\n', (size_t)(out + olen - p))); p++) out_lines++;
            out_bytes += olen;
            free(out);
        }
    }
    double dt = clock_s(CLOCK_MONOTONIC) - t0, dc = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
    if (out_lines != (size_t)n) fail("lost messages");
    printf("msgs=%ld msgs_per_s=%.0f cpu_us_per_msg=%.3f out_bytes=%zu\n", n, (double)n / dt,
           dc / (double)n * 1e6, out_bytes);
    acp_conn_free(c);
    free(in);
    return 0;
}

/* --- emit --------------------------------------------------------------------------- */

static char g_text[32];

static int emit_one(acp_conn *c)
{
    acp_jw *w = acp_conn_notify_begin(c, "session/update");
    if (!w) return -1;
    acp_jw_obj(w);
    acp_jw_kstr(w, "sessionId", SID);
    acp_jw_key(w, "update");
    acp_jw_obj(w);
    acp_jw_kstr(w, "sessionUpdate", "agent_message_chunk");
    acp_jw_key(w, "content");
    acp_jw_obj(w);
    acp_jw_kstr(w, "type", "text");
    acp_jw_kstr(w, "text", g_text);
    acp_jw_obj_end(w);
    acp_jw_obj_end(w);
    acp_jw_obj_end(w);
    return acp_conn_notify_end(c);
}

static int emit(long n)
{
    acp_conn *c = acp_conn_new(NULL);
    if (!c) fail("acp_conn_new failed");
    size_t bytes = 0;
    double t0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    for (long i = 0; i < n; i++) {
        if (emit_one(c) != 0) fail("emit failed");
        if ((i & 1023) == 1023 || i == n - 1) {
            size_t len;
            free(acp_conn_out_take(c, &len));
            bytes += len;
        }
    }
    double dt = clock_s(CLOCK_MONOTONIC) - t0, dc = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
    printf("msgs=%ld msgs_per_s=%.0f cpu_us_per_msg=%.3f bytes_per_msg=%.1f\n", n, (double)n / dt,
           dc / (double)n * 1e6, (double)bytes / (double)n);
    acp_conn_free(c);
    return 0;
}

/* --- writer / reader over a pipe ---------------------------------------------------- */

typedef struct {
    acp_conn *conn;
    acp_transport *t;
    long n, sent, got;
    int tree;
    double t0, c0;
    int done;
} pipe_state;

static void closed(void *user)
{
    ((pipe_state *)user)->done = 1;
}

static void pump(acp_transport *t, void *user)
{
    pipe_state *s = user;
    while (s->sent < s->n && acp_transport_writable(t)) {
        if (emit_one(s->conn) != 0) fail("emit failed");
        s->sent++;
    }
    if (s->sent == s->n && !s->done) {
        s->done = 2; /* closing: the transport writes what is queued first */
        acp_transport_close(t, closed, s);
    }
}

static void writer_eof(acp_transport *t, void *user)
{
    fail("writer: output closed early");
}

static int writer(long n)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    int idle[2];
    if (pipe(idle) != 0) /* an input that never ends, so the connection stays open */
        fail("pipe failed");
    pipe_state s = {.n = n};
    s.conn = acp_conn_new(NULL);
    acp_transport_opts o = {.struct_size = sizeof(acp_transport_opts),
                            .on_drain = pump,
                            .on_eof = writer_eof,
                            .user = &s};
    if (!s.conn || acp_transport_open(&loop, s.conn, idle[0], 1, &o, &s.t) != 0)
        fail("transport open failed");
    pump(s.t, &s);
    uv_run(&loop, UV_RUN_DEFAULT);
    acp_conn_free(s.conn);
    uv_loop_close(&loop);
    close(idle[0]);
    close(idle[1]);
    return s.sent == n ? 0 : 1;
}

static void on_update(acp_conn *c, acp_msg *m, void *user)
{
    pipe_state *s = user;
    if (s->tree && !acp_msg_params(m)) fail("params did not parse");
    if (s->got++ == 0) {
        s->t0 = clock_s(CLOCK_MONOTONIC);
        s->c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    }
}

static void reader_eof(acp_transport *t, void *user)
{
    pipe_state *s = user;
    double dt = clock_s(CLOCK_MONOTONIC) - s->t0, dc = clock_s(CLOCK_PROCESS_CPUTIME_ID) - s->c0;
    printf("msgs=%ld msgs_per_s=%.0f cpu_us_per_msg=%.3f\n", s->got, (double)s->got / dt,
           dc / (double)s->got * 1e6);
    acp_transport_close(t, closed, s);
}

static int reader(int tree)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    pipe_state s = {.tree = tree};
    s.conn = acp_conn_new(NULL);
    if (!s.conn || acp_conn_on(s.conn, "session/update", NULL, on_update, &s) != 0)
        fail("acp_conn_new failed");
    acp_transport_opts o = {
        .struct_size = sizeof(acp_transport_opts), .on_eof = reader_eof, .user = &s};
    if (acp_transport_open(&loop, s.conn, 0, 1, &o, &s.t) != 0) fail("transport open failed");
    uv_run(&loop, UV_RUN_DEFAULT);
    acp_conn_free(s.conn);
    uv_loop_close(&loop);
    return s.got > 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    char line[256];
    size_t ll = ping_line(line, sizeof line, "session/update");
    /* the text of the line above, for the writer-built messages: the same 200 bytes */
    const char *q = strstr(line, "\"text\":\"") + 8;
    memcpy(g_text, q, (size_t)(line + ll - 6 - q));
    long n = argc > 2 ? atol(argv[2]) : 1000000;
    if (argc > 1 && !strcmp(argv[1], "inproc"))
        return inproc(n, argc > 3 && !strcmp(argv[3], "tree"));
    if (argc > 1 && !strcmp(argv[1], "emit")) return emit(n);
    if (argc > 1 && !strcmp(argv[1], "writer")) return writer(n);
    if (argc > 1 && !strcmp(argv[1], "reader")) return reader(argc > 2 && !strcmp(argv[2], "tree"));
    fprintf(stderr, "usage: rpc_throughput inproc N [tree] | emit N | writer N | reader [tree]\n");
    return 2;
}
