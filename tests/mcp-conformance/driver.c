/* SPDX-License-Identifier: Apache-2.0 */
/* The MCP client under test for @modelcontextprotocol/conformance: it runs us as
 * `driver <server-url>` with MCP_CONFORMANCE_SCENARIO set, and judges what we send.
 *
 * We connect with libacp's MCP client (Streamable HTTP), then do what the scenario asks of a
 * client: nothing more for "initialize"; add_numbers(5, 3) for "tools_call"; for anything
 * else, call every tool the server lists with empty arguments. Exit status 0 when every step
 * succeeded. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp/mcp.h"

typedef struct ctx {
    uv_loop_t loop;
    bool done;
    int status;
} ctx;

static void set_done(void *user)
{
    ((ctx *)user)->done = true;
}

static void stop_when_done(uv_prepare_t *p)
{
    if (((ctx *)p->data)->done) uv_stop(p->loop);
}

static void run(ctx *c)
{
    uv_prepare_t p;
    uv_prepare_init(&c->loop, &p);
    p.data = c;
    uv_prepare_start(&p, stop_when_done);
    while (!c->done) uv_run(&c->loop, UV_RUN_DEFAULT);
    uv_close((uv_handle_t *)&p, NULL);
    uv_run(&c->loop, UV_RUN_NOWAIT);
}

static void on_done(acp_mcp_call *call, int status, const json_t *result, const char *error,
                    void *user)
{
    ctx *c = user;
    c->status = status;
    if (status) {
        fprintf(stderr, "driver: tool call failed: %s\n", error);
    } else {
        char *text = json_dumps(result, JSON_COMPACT);
        printf("result: %s\n", text ? text : "?");
        free(text);
        if (json_is_true(json_object_get(result, "isError"))) c->status = -1;
    }
    c->done = true;
}

static void on_progress(acp_mcp_call *call, double p, double total, const char *msg, void *u)
{
    printf("progress: %g/%g\n", p, total);
}

static int call(ctx *c, acp_mcp_set *s, const char *tool, json_t *args)
{
    static const acp_mcp_call_cbs cbs = {
        .struct_size = sizeof(acp_mcp_call_cbs), .on_progress = on_progress, .on_done = on_done};
    c->done = false;
    int rc = acp_mcp_call_tool(s, "server", tool, args, &cbs, c, NULL);
    if (rc) {
        fprintf(stderr, "driver: cannot call %s: %s\n", tool, acp_strerror(rc));
        return rc;
    }
    run(c);
    return c->status;
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2) {
        fprintf(stderr, "usage: %s SERVER_URL\n", argv[0]);
        return 2;
    }
    const char *scenario = getenv("MCP_CONFORMANCE_SCENARIO");
    if (!scenario) scenario = "";
    ctx c = {0};
    uv_loop_init(&c.loop);
    json_t *servers = json_pack("[{ss ss ss s[]}]", "type", "http", "name", "server", "url",
                                argv[argc - 1], "headers");
    acp_mcp_opts o = {.struct_size = sizeof(acp_mcp_opts),
                      .http = true,
                      .sse = true,
                      .connect_timeout_ms = 20000};
    acp_mcp_set *s = NULL;
    if (acp_mcp_set_new(&c.loop, servers, &o, NULL, 0, &s)) {
        fprintf(stderr, "driver: %s\n", acp_error_last()->message);
        return 1;
    }
    json_decref(servers);
    acp_mcp_set_wait(s, 30000, set_done, &c);
    run(&c);
    const char *why = NULL;
    int status = 0;
    if (acp_mcp_server_status(s, 0, &why) != ACP_MCP_READY) {
        fprintf(stderr, "driver: server not ready: %s\n", why ? why : "still connecting");
        status = 1;
    } else if (!strcmp(scenario, "initialize")) {
        printf("initialized: %s\n", acp_mcp_server_protocol(s, 0));
    } else if (!strcmp(scenario, "tools_call")) {
        status = call(&c, s, "add_numbers", json_pack("{sisi}", "a", 5, "b", 3)) ? 1 : 0;
    } else {
        for (size_t t = 0; t < acp_mcp_tool_count(s, 0) && status == 0; t++) {
            char *name = strdup(acp_mcp_tool_name(s, 0, t));
            printf("calling %s\n", name);
            status = call(&c, s, name, json_object()) ? 1 : 0;
            free(name);
        }
    }
    c.done = false;
    acp_mcp_set_close(s, set_done, &c);
    run(&c);
    uv_run(&c.loop, UV_RUN_DEFAULT);
    uv_loop_close(&c.loop);
    return status;
}
