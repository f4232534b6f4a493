/* SPDX-License-Identifier: Apache-2.0 */
/* acp-bench-remote: the benchmark client for remote ACP (issue 11). One fast client for every
 * server, so that acp-agent --listen and the official SDK's AcpServer are compared with nothing
 * else changing: libacp's own network links (net/ws.h's acp_ws_connect for ws://, net/
 * shttp_client.h's acp_shttp_connect for http://) on one libuv loop, and the scanner of
 * jscan.h instead of a JSON tree per message, as bench/driver.c does over stdio.
 *
 *   acp-bench-remote MODE [-n N] [-b BYTES] [-c CONNS] [-p DEPTH] [-r PROMPTS] [--pid PID]
 *                    [--h2c] URL...
 *
 * Connections go to the URLs in turn (connection i to URL i mod count); each sends
 * `initialize` first. $ACP_TOKEN, when set, goes out as the bearer token. Modes (each prints
 * one line of key=value figures on stdout):
 *   stream  -c connections (1), each opens a session, then all prompt "/stream N BYTES" at once;
 *           every agent_message_chunk is counted (all N of each must arrive) and the rate is
 *           all updates over the time from the prompts sent to the last answer.
 *   new     -n session/new requests over -c connections, -p in flight on each (8): sessions/s
 *           from the first request to the last answer.
 *   conns   -c WebSocket connections opened (200 handshakes in flight) and initialized, then
 *           left idle; the VmRSS of --pid (the server) before and after; then -r prompts, one
 *           after another, on the first connection: the round trip's p50 and p99.
 * Not part of libacp. */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <uv.h>

#include "jscan.h"
#include "net/link.h"
#include "net/shttp_client.h"
#include "net/ws.h"

typedef struct conn conn;

static struct {
    uv_loop_t *loop;
    const char *mode;
    char **urls;
    int nurls;
    long n, bytes, conns, depth, prompts;
    int pid;
    bool h2c;
    const char *token;
    conn *c;
    long opened, initialized, ready, done, open_links;
    long sent, answered; /* new: session/new requests over all connections */
    long updates;
    double t0, t1;
    long rss_before, rss_after;
    double *lat;
    uv_timer_t timer;
    int rc;
} g = {.n = 1000, .bytes = 200, .conns = 1, .depth = 8, .prompts = 1000};

struct conn {
    acp_link *l;
    long i;
    int next_id;
    char sid[128];
    long updates;
    long inflight; /* new: requests sent and not answered */
    double ts;     /* conns: when the prompt went out */
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void fail(const char *fmt, const char *a, const char *b)
{
    fputs("acp-bench-remote: ", stderr);
    fprintf(stderr, fmt, a, b);
    fputc('\n', stderr);
    g.rc = 1;
    uv_stop(g.loop);
}

static void call(conn *c, const char *method, const char *params)
{
    char msg[1024];
    int n =
        snprintf(msg, sizeof msg, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"%s\",\"params\":%s}",
                 c->next_id++, method, params);
    if (acp_link_send(c->l, msg, (size_t)n)) fail("cannot send %s%s", method, "");
}

static void new_session(conn *c)
{
    call(c, "session/new", "{\"cwd\":\"/tmp\",\"mcpServers\":[]}");
}

static void prompt(conn *c, const char *text)
{
    char params[512];
    snprintf(params, sizeof params,
             "{\"sessionId\":\"%s\",\"prompt\":[{\"type\":\"text\",\"text\":\"%s\"}]}", c->sid,
             text);
    call(c, "session/prompt", params);
}

static void connect_next(void);

static void all_close(void)
{
    for (long i = 0; i < g.conns; i++)
        if (g.c[i].l) acp_link_close(g.c[i].l);
}

static long vmrss_kb(int pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    long kb = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &kb) == 1) break;
    fclose(f);
    return kb;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static void start_prompts(void)
{
    char text[64];
    snprintf(text, sizeof text, "/stream %ld %ld", g.n, g.bytes);
    g.t0 = now_s();
    for (long i = 0; i < g.conns; i++) prompt(&g.c[i], text);
}

/* conns: every connection is idle; the server's RSS settles, then the round trips. */
static void on_settled(uv_timer_t *t)
{
    g.rss_after = vmrss_kb(g.pid);
    new_session(&g.c[0]);
}

static void send_new(conn *c)
{
    while (c->inflight < g.depth && g.sent < g.n) {
        new_session(c);
        c->inflight++;
        g.sent++;
    }
}

/* The answer to the request in flight on c (its result or error in `line`). */
static void on_answer(conn *c, span line)
{
    span v;
    if (member(line, "error", &v)) {
        char *s = strndup(line.p, line.n);
        fail("agent error: %s%s", s, "");
        free(s);
        return;
    }
    if (!member(line, "result", &v)) return;
    bool stream = !strcmp(g.mode, "stream"), conns = !strcmp(g.mode, "conns");
    span sid;
    if (member(v, "protocolVersion", &sid)) { /* initialize */
        g.initialized++;
        if (stream) {
            new_session(c);
        } else if (conns) {
            if (g.initialized == g.conns) {
                uv_timer_start(&g.timer, on_settled, 500, 0); /* RSS is not a timing figure */
            } else {
                connect_next();
            }
        } else { /* new */
            if (g.initialized == g.conns) {
                g.t0 = now_s();
                for (long i = 0; i < g.conns; i++) send_new(&g.c[i]);
            }
        }
        return;
    }
    if (member(v, "sessionId", &sid) && sid.n > 2 && sid.n - 2 < sizeof c->sid) {
        if (!strcmp(g.mode, "new")) {
            c->inflight--;
            if (++g.answered == g.n) {
                g.t1 = now_s();
                all_close();
            } else {
                send_new(c);
            }
            return;
        }
        memcpy(c->sid, sid.p + 1, sid.n - 2);
        c->sid[sid.n - 2] = 0;
        if (conns) {
            c->ts = now_s();
            prompt(c, "ping");
        } else if (++g.ready == g.conns) {
            start_prompts();
        }
        return;
    }
    if (member(v, "stopReason", &sid)) {
        if (conns) {
            g.lat[g.done++] = now_s() - c->ts;
            if (g.done == g.prompts) {
                all_close();
            } else {
                c->ts = now_s();
                prompt(c, "ping");
            }
            return;
        }
        if (c->updates != g.n) {
            char a[64], b[64];
            snprintf(a, sizeof a, "%ld", c->updates);
            snprintf(b, sizeof b, "%ld", g.n);
            fail("stream: a connection got %s updates of %s", a, b);
            return;
        }
        if (++g.done == g.conns) {
            g.t1 = now_s();
            all_close();
        }
    }
}

static void on_message(acp_link *l, const char *msg, size_t len, void *user)
{
    conn *c = user;
    span line = {msg, len}, v;
    if (member(line, "method", &v)) {
        if (span_eq(v, "\"session/update\"") && memmem(msg, len, "\"agent_message_chunk\"", 21))
            c->updates++;
        /* a request from the agent gets no answer: none of these workloads asks for one */
        return;
    }
    on_answer(c, line);
}

static void on_close(acp_link *l, const char *reason, void *user)
{
    conn *c = user;
    c->l = NULL;
    g.open_links--;
    bool finished = !strcmp(g.mode, "new")     ? g.answered == g.n
                    : !strcmp(g.mode, "conns") ? g.done == g.prompts
                                               : g.done == g.conns;
    if (!finished) fail("a connection ended early: %s%s", reason ? reason : "", "");
}

static void on_ws_open(acp_link *l, int status, const char *detail, void *user)
{
    if (status) fail("cannot open a WebSocket: %s%s", detail ? detail : "", "");
}

static void connect_one(conn *c)
{
    const char *url = g.urls[c->i % g.nurls];
    static const acp_link_cbs cbs = {.on_message = on_message, .on_close = on_close};
    int rc;
    char *msg = NULL;
    if (!strncasecmp(url, "ws://", 5) || !strncasecmp(url, "wss://", 6)) {
        acp_net_limits lim = {.header_timeout_ms = 60000};
        acp_ws_connect_opts wo = {.url = url, .token = g.token, .lim = &lim};
        rc = acp_ws_connect(g.loop, &wo, on_ws_open, c, &c->l);
    } else {
        acp_shttp_client_opts so = {.url = url, .token = g.token, .http2 = g.h2c};
        rc = acp_shttp_connect(g.loop, &so, &c->l, &msg);
    }
    if (rc) {
        fail("cannot connect to %s: %s", url, msg ? msg : "bad URL");
        free(msg);
        return;
    }
    acp_link_bind(c->l, &cbs, c);
    g.open_links++;
    call(c, "initialize",
         "{\"protocolVersion\":1,\"clientCapabilities\":{},"
         "\"clientInfo\":{\"name\":\"acp-bench-remote\",\"version\":\"0\"}}");
}

/* conns opens connections 200 handshakes at a time (a burst of 10,000 SYNs overflows the
 * listen backlog); the other modes open theirs all at once. */
static void connect_next(void)
{
    if (g.opened < g.conns) connect_one(&g.c[g.opened++]);
}

static void usage(void)
{
    fputs("usage: acp-bench-remote stream|new|conns [-n N] [-b BYTES] [-c CONNS] [-p DEPTH] "
          "[-r PROMPTS] [--pid PID] [--h2c] URL...\n",
          stderr);
    exit(2);
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    if (argc < 3) usage();
    g.mode = argv[1];
    if (strcmp(g.mode, "stream") && strcmp(g.mode, "new") && strcmp(g.mode, "conns")) usage();
    int i = 2;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (!strcmp(argv[i], "--h2c")) {
            g.h2c = true;
            continue;
        }
        if (i + 1 >= argc) usage();
        long v = atol(argv[i + 1]);
        if (!strcmp(argv[i], "-n"))
            g.n = v;
        else if (!strcmp(argv[i], "-b"))
            g.bytes = v;
        else if (!strcmp(argv[i], "-c"))
            g.conns = v;
        else if (!strcmp(argv[i], "-p"))
            g.depth = v;
        else if (!strcmp(argv[i], "-r"))
            g.prompts = v;
        else if (!strcmp(argv[i], "--pid"))
            g.pid = (int)v;
        else
            usage();
        i++;
    }
    if (i >= argc || g.conns < 1 || g.n < 1 || g.depth < 1 || g.prompts < 1) usage();
    bool conns = !strcmp(g.mode, "conns");
    if (conns && !g.pid) usage();
    g.urls = argv + i;
    g.nurls = argc - i;
    g.token = getenv("ACP_TOKEN");
    g.loop = uv_default_loop();
    uv_timer_init(g.loop, &g.timer);
    g.c = calloc((size_t)g.conns, sizeof *g.c);
    g.lat = conns ? calloc((size_t)g.prompts, sizeof *g.lat) : NULL;
    if (!g.c || (conns && !g.lat)) return 1;
    for (long k = 0; k < g.conns; k++) {
        g.c[k].i = k;
        g.c[k].next_id = 1;
    }
    if (conns) {
        g.rss_before = vmrss_kb(g.pid);
        for (int k = 0; k < 200; k++) connect_next();
    } else {
        for (g.opened = 0; g.opened < g.conns; g.opened++) connect_one(&g.c[g.opened]);
    }
    uv_run(g.loop, UV_RUN_DEFAULT);
    if (g.rc) return g.rc; /* links may still be open: exit reclaims them */
    if (!strcmp(g.mode, "stream")) {
        long total = 0;
        for (long k = 0; k < g.conns; k++) total += g.c[k].updates;
        double dt = g.t1 - g.t0;
        printf("conns=%ld updates=%ld stream_s=%.3f updates_per_s=%.0f\n", g.conns, total, dt,
               (double)total / dt);
    } else if (!strcmp(g.mode, "new")) {
        double dt = g.t1 - g.t0;
        printf("sessions=%ld conns=%ld depth=%ld new_s=%.3f sessions_per_s=%.0f\n", g.n, g.conns,
               g.depth, dt, (double)g.n / dt);
    } else {
        qsort(g.lat, (size_t)g.prompts, sizeof *g.lat, cmp_double);
        long p99 = (long)(0.99 * (double)g.prompts);
        if (p99 >= g.prompts) p99 = g.prompts - 1;
        printf("conns=%ld rss_before_kb=%ld rss_after_kb=%ld kb_per_conn=%.2f prompts=%ld "
               "p50_ms=%.3f p99_ms=%.3f\n",
               g.conns, g.rss_before, g.rss_after,
               (double)(g.rss_after - g.rss_before) / (double)g.conns, g.prompts,
               g.lat[g.prompts / 2] * 1e3, g.lat[p99] * 1e3);
    }
    uv_timer_stop(&g.timer);
    uv_close((uv_handle_t *)&g.timer, NULL);
    uv_run(g.loop, UV_RUN_DEFAULT);
    uv_loop_close(g.loop);
    free(g.c);
    free(g.lat);
    return 0;
}
