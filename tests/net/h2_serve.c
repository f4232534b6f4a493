/* A test server for the HTTP/2 wire and the Streamable HTTP profile before the listener exists:
 * on a Unix socket, or on 127.0.0.1 at a port the kernel picks (SOCKET "tcp"), h2c with prior
 * knowledge or HTTP/1.1 (told apart by the client's first bytes, as the listener will), /acp
 * routed to acp_shttp, and each ACP connection bridged to its own real acp-agent process over
 * stdio (what acp_agent_serve_* will do in process). Prints "ready PORT" when listening;
 * SIGTERM shuts down in order: stop accepting, end the connections, GOAWAY, wait for the
 * agents, exit 0.
 *
 *   h2_serve SOCKET|tcp AGENT STORE [MAX_MESSAGE] */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "acp/json.h"
#include "net/h2.h"
#include "net/shttp.h"
#include "net/sock_server.h"

static uv_loop_t *loop;
static union {
    uv_pipe_t pipe;
    uv_tcp_t tcp;
} server;
static bool is_unix;
static uv_signal_t sigterm;
static acp_shttp *shttp;
static acp_net_limits lim;
static acp_h2_group h2s;
static acp_sock_group socks;
static const char *agent_path, *store_path;

/* --- One acp-agent per ACP connection --------------------------------------------------- */

typedef struct bridge {
    acp_link *link;
    uv_process_t proc;
    uv_pipe_t in, out;
    acp_buf line;
    int handles;
    bool reading;
} bridge;

static void bridge_closed(uv_handle_t *h)
{
    bridge *b = h->data;
    if (--b->handles == 0) {
        acp_buf_free(&b->line);
        free(b);
    }
}

static void on_written(uv_write_t *w, int status)
{
    free(w);
}

static void to_agent(acp_link *l, const char *msg, size_t len, void *user)
{
    bridge *b = user;
    if (uv_is_closing((uv_handle_t *)&b->in)) return;
    uv_write_t *w = malloc(sizeof *w + len + 1);
    char *data = (char *)(w + 1);
    memcpy(data, msg, len);
    data[len] = '\n';
    uv_buf_t buf = uv_buf_init(data, (unsigned)len + 1);
    if (uv_write(w, (uv_stream_t *)&b->in, &buf, 1, on_written) != 0) free(w);
}

static void on_alloc(uv_handle_t *h, size_t want, uv_buf_t *buf)
{
    static char mem[65536];
    *buf = uv_buf_init(mem, sizeof mem);
}

static void from_agent(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
    bridge *b = st->data;
    if (n < 0) {
        uv_read_stop(st);
        b->reading = false;
        return;
    }
    acp_buf_append(&b->line, buf->base, (size_t)n);
    size_t start = 0;
    for (size_t i = 0; i < b->line.len; i++) {
        if (b->line.data[i] != '\n') continue;
        if (b->link) acp_link_send(b->link, b->line.data + start, i - start);
        start = i + 1;
    }
    memmove(b->line.data, b->line.data + start, b->line.len - start);
    b->line.len -= start;
    /* The client is not reading: stop reading the agent, which then blocks on its stdout. */
    if (b->link && acp_link_queued(b->link) >= acp_link_high_water(b->link)) {
        uv_read_stop(st);
        b->reading = false;
    }
}

static void on_link_drain(acp_link *l, void *user)
{
    bridge *b = user;
    if (!b->reading && !uv_is_closing((uv_handle_t *)&b->out)) {
        b->reading = true;
        uv_read_start((uv_stream_t *)&b->out, on_alloc, from_agent);
    }
}

static void on_link_close(acp_link *l, const char *reason, void *user)
{
    bridge *b = user;
    b->link = NULL;
    uv_close((uv_handle_t *)&b->in, bridge_closed); /* EOF: the agent shuts down */
}

static void on_agent_exit(uv_process_t *p, int64_t status, int sig)
{
    bridge *b = p->data;
    if (status != 0 || sig)
        fprintf(stderr, "h2_serve: agent exited %d signal %d\n", (int)status, sig);
    if (b->link) acp_link_close(b->link);
    uv_close((uv_handle_t *)&b->proc, bridge_closed);
    uv_close((uv_handle_t *)&b->out, bridge_closed);
}

static void on_link(acp_link *l, void *user)
{
    static const acp_link_cbs cbs = {to_agent, on_link_drain, on_link_close};
    bridge *b = calloc(1, sizeof *b);
    b->link = l;
    uv_pipe_init(loop, &b->in, 0);
    uv_pipe_init(loop, &b->out, 0);
    b->in.data = b->out.data = b->proc.data = b;
    uv_stdio_container_t io[3] = {
        {.flags = UV_CREATE_PIPE | UV_READABLE_PIPE, .data.stream = (uv_stream_t *)&b->in},
        {.flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE, .data.stream = (uv_stream_t *)&b->out},
        {.flags = UV_INHERIT_FD, .data.fd = 2},
    };
    char *args[] = {(char *)agent_path, "--store", (char *)store_path, NULL};
    uv_process_options_t o = {
        .exit_cb = on_agent_exit, .file = agent_path, .args = args, .stdio = io, .stdio_count = 3};
    acp_link_bind(l, &cbs, b);
    if (uv_spawn(loop, &b->proc, &o) != 0) {
        fprintf(stderr, "h2_serve: cannot spawn %s\n", agent_path);
        b->handles = 2;
        b->link = NULL;
        uv_close((uv_handle_t *)&b->in, bridge_closed);
        uv_close((uv_handle_t *)&b->out, bridge_closed);
        acp_link_bind(l, &(acp_link_cbs){0}, NULL);
        acp_link_close(l);
        return;
    }
    b->handles = 3;
    b->reading = true;
    uv_read_start((uv_stream_t *)&b->out, on_alloc, from_agent);
}

/* --- The server ----------------------------------------------------------------------------- */

static bool route(acp_http_req *r, acp_sock *s, const char *leftover, size_t n, void *user)
{
    const char *p = acp_http_req_path(r);
    size_t len = strcspn(p, "?");
    if (!shttp)
        acp_http_res_send(r, 503, "text/plain", "Shutting down", 13, NULL, 0);
    else if (len == 4 && memcmp(p, "/acp", 4) == 0)
        acp_shttp_handle(shttp, r);
    else
        acp_http_res_send(r, 404, "text/plain", "Not Found", 9, NULL, 0);
    return false;
}

static const acp_wire_cbs wire = {NULL, route};

/* The first bytes say which wire: HTTP/2's connection preface, or HTTP/1.1. */
static void on_first_read(acp_sock *s, const char *p, size_t n, void *user)
{
    static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    size_t k = n < sizeof preface - 1 ? n : sizeof preface - 1;
    if (memcmp(p, preface, k) == 0)
        acp_h2_serve(s, p, n, &lim, &wire, NULL, &h2s);
    else
        acp_http1_serve(s, p, n, &lim, &wire, NULL);
}

static void on_connection(uv_stream_t *srv, int status)
{
    acp_sock *s;
    if (status < 0 || acp_sock_accept(srv, is_unix, NULL, &lim, &socks, &s) != 0) return;
    static const acp_sock_cbs first = {NULL, on_first_read, NULL, NULL};
    acp_sock_bind(s, &first, NULL);
}

static void on_sigterm(uv_signal_t *s, int sig)
{
    uv_close((uv_handle_t *)&sigterm, NULL);
    uv_close((uv_handle_t *)&server, NULL);
    acp_shttp_free(shttp);
    shttp = NULL;
    acp_h2_group_shutdown(&h2s);
    acp_sock_group_close(&socks); /* after the GOAWAYs, which are written first */
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: h2_serve SOCKET AGENT STORE [MAX_MESSAGE]\n");
        return 2;
    }
    agent_path = argv[2];
    store_path = argv[3];
    if (argc > 4) lim.max_message = strtoull(argv[4], NULL, 10);
    lim = acp_net_limits_resolve(&lim);
    loop = uv_default_loop();
    signal(SIGPIPE, SIG_IGN);
    shttp = acp_shttp_new(loop, &lim, on_link, NULL);
    int port = 0, rc;
    is_unix = strcmp(argv[1], "tcp") != 0;
    if (is_unix) {
        uv_pipe_init(loop, &server.pipe, 0);
        rc = uv_pipe_bind(&server.pipe, argv[1]);
    } else {
        struct sockaddr_in a;
        uv_ip4_addr("127.0.0.1", 0, &a);
        uv_tcp_init(loop, &server.tcp);
        rc = uv_tcp_bind(&server.tcp, (const struct sockaddr *)&a, 0);
        struct sockaddr_in got;
        int len = sizeof got;
        if (rc == 0) rc = uv_tcp_getsockname(&server.tcp, (struct sockaddr *)&got, &len);
        port = ntohs(got.sin_port);
    }
    if (rc != 0 || uv_listen((uv_stream_t *)&server, 64, on_connection) != 0) {
        fprintf(stderr, "h2_serve: cannot listen on %s\n", argv[1]);
        return 1;
    }
    uv_signal_init(loop, &sigterm);
    uv_signal_start(&sigterm, on_sigterm, SIGTERM);
    printf("ready %d\n", port);
    fflush(stdout);
    uv_run(loop, UV_RUN_DEFAULT);
    return uv_loop_close(loop) == 0 ? 0 : 3;
}
