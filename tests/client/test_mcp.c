/* SPDX-License-Identifier: Apache-2.0 */
/* MCP over ACP, client side (unstable, issue 23): the application's MCP servers served through
 * mcp/message to an agent written with the official TypeScript SDK (ts-agent-mcp.mjs, its
 * McpOverAcpCaller): tools as callbacks (discover and tools/list answered by the library,
 * results, progress, an MCP error, a call the agent cancels), a raw handler, serverIds unique
 * per connection, an unknown serverId answered -33001, and the capability gate. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "common.h"

typedef struct fx {
    seen k;      /* first: seen_update() gets the fx as its seen */
    acp_buf raw; /* every update's text, for with_acp_agent */
    acp_client *c;
    acp_client_session *s;
    acp_client_mcp_req *held;
    int cancels;
} fx;

static void on_update_raw(acp_client *c, acp_client_session *s, const acp_update *u, void *user)
{
    fx *f = user;
    seen_update(c, s, u, &f->k);
    acp_buf_append(&f->raw, u->update.p, u->update.n);
}

static void on_cancel(acp_client_mcp_req *r, void *user)
{
    ((fx *)user)->cancels++;
}

static void t_add(acp_client_mcp *m, acp_client_mcp_req *r, json_t *args, void *user)
{
    char text[64];
    snprintf(text, sizeof text, "%lld",
             (long long)(json_integer_value(json_object_get(args, "a")) +
                         json_integer_value(json_object_get(args, "b"))));
    assert_int_equal(
        acp_client_mcp_reply(r, json_pack("{s[{ss ss}]}", "content", "type", "text", "text", text)),
        0);
}

static void t_slow(acp_client_mcp *m, acp_client_mcp_req *r, json_t *args, void *user)
{
    for (int i = 1; i <= 2; i++)
        assert_int_equal(acp_client_mcp_notify(r, "notifications/progress",
                                               json_pack("{si si si}", "progressToken", 7,
                                                         "progress", i, "total", 2)),
                         0);
    acp_client_mcp_reply(r, json_pack("{s[]}", "content"));
}

static void t_boom(acp_client_mcp *m, acp_client_mcp_req *r, json_t *args, void *user)
{
    acp_client_mcp_error(r, -32000, "the tool broke", json_pack("{sb}", "why", 1));
}

static void t_hold(acp_client_mcp *m, acp_client_mcp_req *r, json_t *args, void *user)
{
    fx *f = user;
    f->held = r;
    acp_client_mcp_req_on_cancel(r, on_cancel, f);
}

/* A raw server: every request answered with what it was. */
static void raw(acp_client_mcp *m, acp_client_mcp_req *r, const char *method, json_t *params,
                void *user)
{
    acp_client_mcp_reply(
        r, json_pack("{ss sO}", "echoed", method, "params", params ? params : json_null()));
}

static const char *prompt(fx *f, const char *text)
{
    f->k.text.len = 0;
    assert_int_equal(acp_client_session_prompt(f->s, text, NULL), 0);
    return acp_buf_cstr(&f->k.text);
}

static void mcp_over_acp(void **state)
{
    fx f = {0};
    acp_client_opts o = ACP_CLIENT_OPTS_INIT;
    o.argv = node_agent("ts-agent-mcp.mjs");
    o.on_update = seen_update;
    o.user = &f.k;
    assert_int_equal(acp_client_open(&o, &f.c), 0);
    assert_true(acp_client_supports(f.c, ACP_CAP_MCP_ACP));

    acp_client_mcp *calc, *rawm, *dup;
    assert_int_equal(acp_client_mcp_register(f.c, "calc", "calc-1", NULL, NULL, &calc), 0);
    assert_int_equal(acp_client_mcp_register(f.c, "again", "calc-1", NULL, NULL, &dup), ACP_EINVAL);
    assert_null(dup);
    assert_int_equal(acp_client_mcp_register(f.c, "raw", NULL, raw, NULL, &rawm), 0);
    assert_string_not_equal(acp_client_mcp_server_id(rawm), "calc-1");
    assert_int_equal(acp_client_mcp_add_tool(calc, "add", "adds a and b", NULL, t_add, &f), 0);
    assert_int_equal(acp_client_mcp_add_tool(calc, "add", NULL, NULL, t_add, &f), ACP_EINVAL);
    assert_int_equal(acp_client_mcp_add_tool(calc, "slow", NULL, NULL, t_slow, &f), 0);
    assert_int_equal(acp_client_mcp_add_tool(calc, "boom", NULL, NULL, t_boom, &f), 0);
    assert_int_equal(acp_client_mcp_add_tool(calc, "hold", NULL, NULL, t_hold, &f), 0);

    json_t *servers =
        json_pack("[oo]", acp_client_mcp_declaration(calc), acp_client_mcp_declaration(rawm));
    acp_session_opts so = ACP_SESSION_OPTS_INIT;
    so.mcp_servers = servers;
    assert_int_equal(acp_client_session_new(f.c, &so, &f.s), 0);
    json_decref(servers);

    const char *t = prompt(&f, "list");
    assert_non_null(strstr(t, "\"name\":\"add\""));
    assert_non_null(strstr(t, "\"name\":\"hold\""));
    assert_non_null(strstr(t, "\"supportedVersions\":[\"2026-07-28\"]"));
    assert_non_null(strstr(t, "\"echoed\":\"server/discover\""));
    /* the raw handler sees the inner _meta the SDK's caller adds */
    assert_non_null(strstr(t, "io.modelcontextprotocol/protocolVersion"));

    t = prompt(&f, "call add {\"a\":2,\"b\":3}");
    assert_non_null(strstr(t, "\"text\":\"5\""));
    t = prompt(&f, "call slow {}");
    assert_non_null(strstr(t, "\"progress\":2"));
    t = prompt(&f, "call boom {}");
    assert_non_null(strstr(t, "\"error\":{\"code\":-32000,\"message\":\"the tool broke\""));
    t = prompt(&f, "call nosuch {}");
    assert_non_null(strstr(t, "Unknown tool: nosuch"));
    t = prompt(&f, "ghost");
    assert_non_null(strstr(t, "\"code\":-33001"));
    t = prompt(&f, "cancel hold");
    assert_non_null(strstr(t, "\"outer\""));
    assert_int_equal(f.cancels, 1);
    assert_non_null(f.held);
    assert_true(acp_client_mcp_req_cancelled(f.held));
    assert_int_equal(acp_client_mcp_notify(f.held, "notifications/progress", NULL), ACP_ECLOSED);
    acp_client_mcp_reply(f.held, NULL); /* only frees it */

    acp_client_mcp_unregister(rawm);
    acp_client_free(f.c);
    acp_buf_free(&f.k.text);
}

/* An agent without mcpCapabilities.acp: a declaration is refused before anything is sent. */
static void gated(void **state)
{
    seen k = {0};
    acp_client_opts o = ACP_CLIENT_OPTS_INIT;
    o.argv = node_agent("ts-agent-minimal.mjs");
    o.on_update = seen_update;
    o.user = &k;
    acp_client *c;
    assert_int_equal(acp_client_open(&o, &c), 0);
    assert_false(acp_client_supports(c, ACP_CAP_MCP_ACP));
    acp_client_mcp *m;
    assert_int_equal(acp_client_mcp_register(c, "calc", NULL, NULL, NULL, &m), 0);
    json_t *servers = json_pack("[o]", acp_client_mcp_declaration(m));
    acp_session_opts so = ACP_SESSION_OPTS_INIT;
    so.mcp_servers = servers;
    acp_client_session *s;
    assert_int_equal(acp_client_session_new(c, &so, &s), ACP_ENOTSUP);
    assert_non_null(strstr(acp_error_last()->message, "mcpCapabilities.acp"));
    json_decref(servers);
    acp_client_free(c); /* frees the registration too */
    acp_buf_free(&k.text);
}

/* libacp on both sides: acp-agent's echo engine calls the application's tool through /call. */
static void with_acp_agent(void **state)
{
    fx f = {0};
    char dir[] = "/tmp/acp-client-mcp-XXXXXX", cmd[512];
    assert_non_null(mkdtemp(dir));
    snprintf(cmd, sizeof cmd, "'%s/acp-agent' --store '%s/s.db'", getenv("ACP_BUILD"), dir);
    acp_client_opts o = ACP_CLIENT_OPTS_INIT;
    o.command = cmd;
    o.on_update = on_update_raw;
    o.user = &f;
    assert_int_equal(acp_client_open(&o, &f.c), 0);
    assert_true(acp_client_supports(f.c, ACP_CAP_MCP_ACP));
    acp_client_mcp *calc;
    assert_int_equal(acp_client_mcp_register(f.c, "calc", NULL, NULL, NULL, &calc), 0);
    assert_int_equal(acp_client_mcp_add_tool(calc, "add", "adds a and b", NULL, t_add, &f), 0);
    assert_int_equal(acp_client_mcp_add_tool(calc, "boom", NULL, NULL, t_boom, &f), 0);
    json_t *servers = json_pack("[o]", acp_client_mcp_declaration(calc));
    acp_session_opts so = ACP_SESSION_OPTS_INIT;
    so.cwd = dir;
    so.mcp_servers = servers;
    assert_int_equal(acp_client_session_new(f.c, &so, &f.s), 0);
    json_decref(servers);
    const char *t = prompt(&f, "/mcp");
    assert_non_null(strstr(t, "calc: ready (2 tools"));
    f.raw.len = 0;
    prompt(&f, "/call calc add {\"a\":40,\"b\":2}");
    assert_non_null(strstr(acp_buf_cstr(&f.raw), "\"status\":\"completed\""));
    assert_non_null(strstr(acp_buf_cstr(&f.raw), "\"text\":\"42\""));
    f.raw.len = 0;
    prompt(&f, "/call calc boom {}");
    assert_non_null(strstr(acp_buf_cstr(&f.raw), "\"status\":\"failed\""));
    assert_non_null(strstr(acp_buf_cstr(&f.raw), "the tool broke"));
    acp_client_free(f.c);
    acp_buf_free(&f.k.text);
    acp_buf_free(&f.raw);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    test_process_init();
    const struct CMUnitTest tests[] = {cmocka_unit_test(mcp_over_acp), cmocka_unit_test(gated),
                                       cmocka_unit_test(with_acp_agent)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
