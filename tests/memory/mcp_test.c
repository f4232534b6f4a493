/* SPDX-License-Identifier: Apache-2.0 */
/* Memory after huge messages (issue 13, item 6): a stdio MCP server answers a tool call with
 * one line of HUGE bytes (tests/memory/big-mcp.mjs); once the call is done, the live heap is
 * back near where it was. The server's acp_conn kept the line's capacity (32 MiB) before. */
#include "tests/mcp/harness.h"
#include "tests/memory/live.h"

#define HUGE (16u << 20) /* over ACP_BUF_KEEP */

static size_t call_big(uv_loop_t *loop, acp_mcp_set *s, size_t bytes)
{
    char args[64];
    snprintf(args, sizeof args, "{\"bytes\":%zu}", bytes);
    h_call c;
    const char *text = h_call_sync(loop, s, "big", "big", args, &c);
    assert_int_equal(c.status, 0);
    size_t n = text ? strlen(text) : 0;
    h_call_clear(&c);
    return n;
}

static void mcp_line(void **state)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    char *json = h_fmt("[{\"name\":\"big\",\"command\":\"%s\",\"args\":[\"%s\"],\"env\":[]}]",
                       NODE_BIN, SRC_DIR "/tests/memory/big-mcp.mjs");
    h_log log = {0}; /* the set's log: collected, not checked here */
    acp_mcp_opts o = {.struct_size = sizeof(acp_mcp_opts), .on_log = h_on_log, .user = &log};
    acp_mcp_set *s = h_open(&loop, json, &o, NULL, 0);
    free(json);
    h_wait(&loop, s);
    assert_int_equal(acp_mcp_server_status(s, 0, NULL), ACP_MCP_READY);
    assert_int_equal(call_big(&loop, s, 10), 10);
    size_t before = live();
    assert_int_equal(call_big(&loop, s, HUGE), HUGE);
    assert_back(before, 256u << 10, "after a huge MCP line");
    assert_int_equal(call_big(&loop, s, 10), 10);
    assert_back(before, 256u << 10, "after a small MCP line");
    h_close(&loop, s);
    h_loop_end(&loop);
    free(log.text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(mcp_line)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
