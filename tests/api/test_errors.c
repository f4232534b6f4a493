/* SPDX-License-Identifier: Apache-2.0 */
/* The error convention (include/acp/error.h): a failing call of each layer returns its status
 * and sets this thread's last error to that status and a sentence naming the cause; a success
 * leaves the last error alone; acp_error_clear() empties it; every thread has its own. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <uv.h>

#include "acp/client.h"
#include "acp/error.h"
#include "acp/json.h"
#include "acp/mcp.h"
#include "acp/num.h"
#include "acp/rpc.h"
#include "acp/rt.h"
#include "acp/store.h"
#include "acp/update.h"

/* rc is status, and so is the last error, whose sentence contains every one of parts. */
static void failed_with(int rc, int status, const char *const *parts)
{
    const acp_error *e = acp_error_last();
    assert_int_equal(rc, status);
    assert_int_equal(e->status, status);
    assert_non_null(e->message);
    for (; *parts; parts++)
        if (!strstr(e->message, *parts)) fail_msg("'%s' does not say '%s'", e->message, *parts);
}
#define FAILED_WITH(rc, status, ...)                                                               \
    failed_with((rc), (status), (const char *const[]){__VA_ARGS__, NULL})

/* Runs a loop until the handles a failed call left closing are closed. */
static void drain(uv_loop_t *loop)
{
    uv_run(loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(loop), 0);
}

static void store_open_names_path_and_cause(void **state)
{
    acp_store *st = (acp_store *)1;
    /* /dev/null is a file: no directory can be made under it. */
    FAILED_WITH(acp_store_open("/dev/null/sessions.db", &st), ACP_ESTORE, "/dev/null/sessions.db",
                strerror(ENOTDIR));
    assert_null(st);
    FAILED_WITH(acp_store_open("", &st), ACP_ESTORE, "empty store location");
}

static void store_calls_say_why(void **state)
{
    acp_store *st;
    assert_int_equal(acp_store_open(":memory:", &st), 0);
    acp_store_session s = ACP_STORE_SESSION_INIT;
    FAILED_WITH(acp_store_get(st, "no-such-session", &s), ACP_ENOTFOUND, "no-such-session");
    FAILED_WITH(acp_store_set_state(st, "x", 0, "[1]"), ACP_EINVAL, "not a JSON object");
    acp_store_close(st);
}

static void proc_spawn_names_the_missing_command(void **state)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    char *argv[] = {"acp-test-no-such-command", NULL};
    acp_proc_opts o = ACP_PROC_OPTS_INIT;
    o.file = argv[0];
    o.argv = argv;
    acp_proc *p = (acp_proc *)1;
    FAILED_WITH(acp_proc_spawn(&loop, &o, &p), ACP_ENOTFOUND, "acp-test-no-such-command",
                "no such file");
    assert_null(p);
    FAILED_WITH(acp_proc_spawn(&loop, NULL, &p), ACP_EINVAL, "no command");
    drain(&loop);
}

static void mcp_set_names_the_bad_server(void **state)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    json_t *servers =
        json_loads("[{\"name\":\"a\",\"command\":\"/bin/true\",\"args\":[],\"env\":[]},"
                   "{\"name\":\"b\",\"type\":\"sse\",\"url\":\"http://127.0.0.1:1/\","
                   "\"headers\":[]}]",
                   0, NULL);
    assert_non_null(servers);
    acp_mcp_set *s = (acp_mcp_set *)1;
    FAILED_WITH(acp_mcp_set_new(&loop, servers, NULL, NULL, 0, &s), ACP_EINVAL, "mcpServers[1]",
                "\"sse\" is not supported");
    assert_null(s);
    json_decref(servers);
    drain(&loop);
}

static void client_open_names_the_agent_command(void **state)
{
    acp_client_opts o = ACP_CLIENT_OPTS_INIT;
    o.command = "/nonexistent/acp-agent --stdio";
    acp_client *c = (acp_client *)1;
    FAILED_WITH(acp_client_open(&o, &c), ACP_ENOTFOUND, "/nonexistent/acp-agent");
    assert_null(c);
    o.command = "acp-agent 'unclosed";
    FAILED_WITH(acp_client_open(&o, &c), ACP_EINVAL, "unclosed quote");
    assert_null(c);
}

/* on_closed reads why the connection ended in the last error, as the calls after it do. */
static void on_closed(acp_client *c, void *user)
{
    const acp_error *e = acp_error_last();
    *(bool *)user = e->status == ACP_ECLOSED && strstr(e->message, "the connection to the agent");
}

static void client_close_reason_is_the_last_error(void **state)
{
    bool told = false;
    acp_client_opts o = ACP_CLIENT_OPTS_INIT;
    o.transport = ACP_CLIENT_MANUAL;
    o.on_closed = on_closed;
    o.user = &told;
    acp_client *c;
    assert_int_equal(acp_client_start(&o, NULL, NULL, &c), 0);
    acp_error_clear();
    acp_client_eof(c);
    assert_true(told);
    acp_session_opts so = ACP_SESSION_OPTS_INIT;
    so.cwd = "/tmp";
    FAILED_WITH(acp_client_session_new_start(c, &so, NULL, NULL, NULL), ACP_ECLOSED, "exited");
    acp_client_free(c);
}

static void update_view_names_the_bad_member(void **state)
{
    static const char bad[] = "{\"sessionUpdate\":\"plan\",\"entries\":5}";
    acp_update u = {.update = {bad, sizeof bad - 1}};
    acp_update_view v = ACP_UPDATE_VIEW_INIT;
    FAILED_WITH(acp_update_view_parse(&u, &v), ACP_EPROTO, "entries");
    acp_update_view_free(&v);
    static const char junk[] = "{\"sessionUpdate\":";
    u.update = (acp_span){junk, sizeof junk - 1};
    FAILED_WITH(acp_update_view_parse(&u, &v), ACP_EPROTO, "not valid JSON");
}

static void json_writer_says_invalid_utf8(void **state)
{
    acp_buf b = {0};
    acp_jw w;
    acp_jw_init(&w, &b);
    acp_jw_obj(&w);
    acp_jw_kstr(&w, "text", "ok \xff");
    acp_jw_obj_end(&w);
    FAILED_WITH(acp_jw_status(&w), ACP_EINVAL, "UTF-8");
    b.len = 0;
    FAILED_WITH(acp_json_escape(&b, "ab\xc3", 3), ACP_EINVAL, "invalid UTF-8 at byte 2");
    FAILED_WITH(acp_json_validate("{\"a\":1,}", 8, 8), ACP_EINVAL, "not valid JSON");
    acp_buf_free(&b);
}

static void rpc_closed_connection_says_so(void **state)
{
    acp_conn *c = acp_conn_new(NULL);
    acp_conn_eof(c);
    FAILED_WITH(acp_conn_recv(c, "{}\n", 3), ACP_ECLOSED, "closed");
    FAILED_WITH(acp_conn_call(c, "ping", NULL, (acp_response_cb)1, NULL, NULL), ACP_ECLOSED,
                "cannot call ping");
    acp_conn_free(c);
}

static void num_parse_quotes_the_text(void **state)
{
    uint64_t v;
    FAILED_WITH(acp_parse_u64("10x", 0, 100, &v), ACP_EINVAL, "'10x' is not a whole number");
}

static void success_leaves_the_last_error(void **state)
{
    uint64_t v;
    assert_int_equal(acp_parse_u64("-1", 0, 9, &v), ACP_EINVAL);
    char before[256];
    snprintf(before, sizeof before, "%s", acp_error_last()->message);
    assert_int_equal(acp_parse_u64("5", 0, 9, &v), 0);
    assert_int_equal(acp_json_validate("{}", 2, 8), 0);
    acp_store *st;
    assert_int_equal(acp_store_open(":memory:", &st), 0);
    acp_store_close(st);
    assert_int_equal(acp_error_last()->status, ACP_EINVAL);
    assert_string_equal(acp_error_last()->message, before);
}

static void clear_empties_it(void **state)
{
    uint64_t v;
    assert_int_equal(acp_parse_u64("", 0, 9, &v), ACP_EINVAL);
    acp_error_clear();
    assert_int_equal(acp_error_last()->status, ACP_OK);
    assert_string_equal(acp_error_last()->message, "");
}

/* Two threads fail differently at the same time; each reads its own. */
static pthread_barrier_t both_failed;

static void *fail_in_thread(void *arg)
{
    const char *text = arg;
    /* A new thread starts with nothing. */
    int fresh = acp_error_last()->status == ACP_OK && !strcmp(acp_error_last()->message, "");
    uint64_t v;
    int rc = acp_parse_u64(text, 0, 9, &v);
    pthread_barrier_wait(&both_failed);
    char want[64];
    snprintf(want, sizeof want, "'%s' is not a whole number", text);
    return (void *)(intptr_t)(fresh && rc == ACP_EINVAL &&
                              !strcmp(acp_error_last()->message, want));
}

static void last_error_is_per_thread(void **state)
{
    acp_error_clear();
    pthread_barrier_init(&both_failed, NULL, 2);
    pthread_t a, b;
    assert_int_equal(pthread_create(&a, NULL, fail_in_thread, "first"), 0);
    assert_int_equal(pthread_create(&b, NULL, fail_in_thread, "second"), 0);
    void *ra, *rb;
    pthread_join(a, &ra);
    pthread_join(b, &rb);
    pthread_barrier_destroy(&both_failed);
    assert_true((intptr_t)ra);
    assert_true((intptr_t)rb);
    assert_int_equal(acp_error_last()->status, ACP_OK); /* this thread's is untouched */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(store_open_names_path_and_cause),
        cmocka_unit_test(store_calls_say_why),
        cmocka_unit_test(proc_spawn_names_the_missing_command),
        cmocka_unit_test(mcp_set_names_the_bad_server),
        cmocka_unit_test(client_open_names_the_agent_command),
        cmocka_unit_test(client_close_reason_is_the_last_error),
        cmocka_unit_test(update_view_names_the_bad_member),
        cmocka_unit_test(json_writer_says_invalid_utf8),
        cmocka_unit_test(rpc_closed_connection_says_so),
        cmocka_unit_test(num_parse_quotes_the_text),
        cmocka_unit_test(success_leaves_the_last_error),
        cmocka_unit_test(clear_empties_it),
        cmocka_unit_test(last_error_is_per_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
