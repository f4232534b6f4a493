/* SPDX-License-Identifier: Apache-2.0 */
/* MCP tool calls per second (issue 23): the same echo tool reached over MCP over ACP
 * (mcp/message on the ACP connection) and over stdio, libacp's side; bench/mcp_acp.mjs is the
 * TypeScript SDKs' side of the same workloads.
 *
 *   mcp_acp acp N              one process: libacp's MCP set (the agent's side, type "acp")
 *                              and libacp's client serving the tool (acp_client_mcp_add_tool),
 *                              their ACP connections joined in memory; N sequential calls
 *   mcp_acp stdio N CMD ARGS   libacp's MCP set calling the tool of a stdio server (CMD must be
 *                              an absolute path); N sequential calls
 *   mcp_acp server             that stdio server: NDJSON MCP with one tool, echo
 * Each client mode prints one line: calls=N calls_per_s=X us_per_call=Y. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "acp/client.h"
#include "acp/mcp.h"
#include "acp/rpc.h"

typedef struct bench {
    uv_loop_t *loop;
    acp_mcp_set *set;
    acp_conn *agent; /* acp mode: the agent's side of the ACP connection */
    acp_client *c;   /* acp mode: the client's side */
    uv_idle_t pump;  /* acp mode: moves bytes between the two */
    int n, done;
    uint64_t t0;
    bool ready, failed;
} bench;

static void on_done(acp_mcp_call *c, int status, const json_t *result, const char *error,
                    void *user);

static void call_next(bench *b)
{
    acp_mcp_call_cbs cbs = ACP_MCP_CALL_CBS_INIT;
    cbs.on_done = on_done;
    if (acp_mcp_call_tool(b->set, "b", "echo", json_pack("{ss}", "message", "x"), &cbs, b, NULL)) {
        fprintf(stderr, "mcp_acp: %s\n", acp_error_last()->message);
        b->failed = true;
    }
}

static void on_done(acp_mcp_call *c, int status, const json_t *result, const char *error,
                    void *user)
{
    bench *b = user;
    if (status) {
        fprintf(stderr, "mcp_acp: call failed: %s\n", error);
        b->failed = true;
        return;
    }
    if (++b->done < b->n) call_next(b);
}

static void on_ready(void *user)
{
    bench *b = user;
    const char *why = NULL;
    if (acp_mcp_server_status(b->set, 0, &why) != ACP_MCP_READY) {
        fprintf(stderr, "mcp_acp: server not ready: %s\n", why ? why : "?");
        b->failed = true;
        return;
    }
    b->t0 = uv_hrtime();
    call_next(b);
}

/* --- acp mode: both ends of the ACP connection in this process ------------------------------ */

static void pump(uv_idle_t *h)
{
    bench *b = h->data;
    size_t n;
    char *out = acp_conn_out_take(b->agent, &n);
    if (out) acp_client_feed(b->c, out, n);
    free(out);
    out = acp_client_take(b->c, &n);
    if (out) acp_conn_recv(b->agent, out, n);
    free(out);
}

static void h_initialize(acp_conn *conn, acp_req *req, void *user)
{
    acp_req_reply(req, json_pack("{si s{s{sb}}}", "protocolVersion", 1, "agentCapabilities",
                                 "mcpCapabilities", "acp", 1));
}

static void n_mcp_message(acp_conn *conn, acp_msg *m, void *user)
{
    bench *b = user;
    if (b->set) acp_mcp_set_acp_notify(b->set, acp_msg_params(m));
}

static void tool_echo(acp_client_mcp *m, acp_client_mcp_req *r, json_t *args, void *user)
{
    acp_client_mcp_reply(r, json_pack("{s[{ss sO}]}", "content", "type", "text", "text",
                                      json_object_get(args, "message")));
}

static void started(acp_client *c, const acp_client_reply *r, void *user)
{
    bench *b = user;
    acp_client_mcp *m;
    if (r->status || acp_client_mcp_register(c, "b", "bench-1", NULL, NULL, &m) ||
        acp_client_mcp_add_tool(m, "echo", "echoes", NULL, tool_echo, NULL)) {
        fprintf(stderr, "mcp_acp: %s\n", r->status ? r->errmsg : acp_error_last()->message);
        b->failed = true;
        return;
    }
    json_t *servers = json_pack("[o]", acp_client_mcp_declaration(m));
    acp_mcp_opts o = ACP_MCP_OPTS_INIT;
    o.acp_peer = b->agent;
    if (acp_mcp_set_new(b->loop, servers, &o, NULL, 0, &b->set)) {
        fprintf(stderr, "mcp_acp: %s\n", acp_error_last()->message);
        b->failed = true;
    } else {
        acp_mcp_set_wait(b->set, 10000, on_ready, b);
    }
    json_decref(servers);
}

static int run_acp(bench *b)
{
    acp_conn_opts co = ACP_CONN_OPTS_INIT;
    b->agent = acp_conn_new(&co);
    acp_conn_on(b->agent, "initialize", h_initialize, NULL, b);
    acp_conn_on(b->agent, "mcp/message", NULL, n_mcp_message, b);
    acp_client_opts o = ACP_CLIENT_OPTS_INIT;
    o.transport = ACP_CLIENT_MANUAL;
    if (acp_client_start(&o, started, b, &b->c)) {
        fprintf(stderr, "mcp_acp: %s\n", acp_error_last()->message);
        return 1;
    }
    uv_idle_init(b->loop, &b->pump);
    b->pump.data = b;
    uv_idle_start(&b->pump, pump);
    while (!b->failed && b->done < b->n) uv_run(b->loop, UV_RUN_ONCE);
    return 0;
}

/* --- the stdio server ----------------------------------------------------------------------- */

static int serve(void)
{
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, stdin) > 0) {
        json_t *m = json_loads(line, 0, NULL), *id = json_object_get(m, "id"), *res = NULL;
        const char *method = json_string_value(json_object_get(m, "method"));
        json_t *params = json_object_get(m, "params");
        if (!id || !method) {
            json_decref(m);
            continue;
        }
        if (!strcmp(method, "initialize")) {
            json_t *v = json_object_get(params, "protocolVersion");
            res = json_pack("{sO s{s{}} s{ss ss}}", "protocolVersion", v ? v : json_string("x"),
                            "capabilities", "tools", "serverInfo", "name", "bench", "version", "1");
        } else if (!strcmp(method, "tools/list")) {
            res = json_pack("{s[{ss s{ss}}]}", "tools", "name", "echo", "inputSchema", "type",
                            "object");
        } else if (!strcmp(method, "tools/call")) {
            json_t *msg = json_object_get(json_object_get(params, "arguments"), "message");
            res = json_pack("{s[{ss sO}]}", "content", "type", "text", "text",
                            msg ? msg : json_string(""));
        }
        json_t *out = res ? json_pack("{ss sO so}", "jsonrpc", "2.0", "id", id, "result", res)
                          : json_pack("{ss sO s{si ss}}", "jsonrpc", "2.0", "id", id, "error",
                                      "code", -32601, "message", "no such method");
        char *text = json_dumps(out, JSON_COMPACT);
        fputs(text, stdout);
        fputc('\n', stdout);
        fflush(stdout);
        free(text);
        json_decref(out);
        json_decref(m);
    }
    free(line);
    return 0;
}

static void closed(void *user)
{
    *(bool *)user = true;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "server")) return serve();
    if (argc < 3 || (strcmp(argv[1], "acp") && (strcmp(argv[1], "stdio") || argc < 4))) {
        fprintf(stderr, "usage: mcp_acp acp N | stdio N CMD ARGS... | server\n");
        return 2;
    }
    uv_loop_t loop;
    uv_loop_init(&loop);
    bench b = {.loop = &loop, .n = atoi(argv[2])};
    if (!strcmp(argv[1], "acp")) {
        if (run_acp(&b)) return 1;
    } else {
        json_t *args = json_array();
        for (int i = 4; i < argc; i++) json_array_append_new(args, json_string(argv[i]));
        json_t *servers =
            json_pack("[{ss ss so s[]}]", "name", "b", "command", argv[3], "args", args, "env");
        if (acp_mcp_set_new(&loop, servers, NULL, NULL, 0, &b.set)) {
            fprintf(stderr, "mcp_acp: %s\n", acp_error_last()->message);
            return 1;
        }
        json_decref(servers);
        acp_mcp_set_wait(b.set, 10000, on_ready, &b);
        while (!b.failed && b.done < b.n) uv_run(&loop, UV_RUN_ONCE);
    }
    double dt = (double)(uv_hrtime() - b.t0) / 1e9;
    if (!b.failed)
        printf("calls=%d calls_per_s=%.0f us_per_call=%.1f\n", b.n, b.n / dt, dt * 1e6 / b.n);
    bool done = false;
    if (b.set) acp_mcp_set_close(b.set, closed, &done);
    while (b.set && !done) uv_run(&loop, UV_RUN_ONCE);
    if (b.c) {
        uv_idle_stop(&b.pump);
        uv_close((uv_handle_t *)&b.pump, NULL);
        acp_client_free(b.c);
        acp_conn_free(b.agent);
    }
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    return b.failed;
}
