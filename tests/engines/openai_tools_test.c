/* SPDX-License-Identifier: Apache-2.0 */
/* openai_tools: names the chat completions API accepts, each mapping back to one tool. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "engines/openai/tools.h"

static void name_ok(const char *name)
{
    size_t n = strlen(name);
    assert_true(n >= 1 && n <= 64);
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        assert_true((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-');
    }
}

static const openai_tool *mcp(const openai_tools *ts, const char *server, const char *tool)
{
    for (size_t i = 0; i < ts->n; i++)
        if (ts->v[i].kind == OPENAI_TOOL_MCP && !strcmp(ts->v[i].server, server) &&
            !strcmp(ts->v[i].tool, tool))
            return &ts->v[i];
    return NULL;
}

static void names_are_valid_unique_and_map_back(void **state)
{
    char long_a[120], long_b[120];
    memset(long_a, 'x', 100);
    long_a[100] = '\0';
    memcpy(long_b, long_a, 101);
    long_b[99] = 'y'; /* the same first 55 bytes and more: only the hash tells them apart */
    const char *pairs[][2] = {
        {"everything", "echo"},
        {"everything", "get-sum"},
        {"my.server", "read file"},
        {"my_server", "read_file"},
        {"my server", "read.file"},
        {"srv", long_a},
        {"srv", long_b},
        {"\xc3\xa9t\xc3\xa9", "t"},
        {"a", ""},
    };
    size_t np = sizeof pairs / sizeof *pairs;
    openai_tools ts = {0};
    assert_int_equal(openai_tools_add_builtin(&ts, OPENAI_TOOL_READ), 0);
    assert_int_equal(openai_tools_add_builtin(&ts, OPENAI_TOOL_WRITE), 0);
    assert_int_equal(openai_tools_add_builtin(&ts, OPENAI_TOOL_RUN), 0);
    for (size_t i = 0; i < np; i++)
        assert_int_equal(openai_tools_add_mcp(&ts, pairs[i][0], pairs[i][1]), 0);
    assert_int_equal(ts.n, 3 + np);
    for (size_t i = 0; i < ts.n; i++) {
        name_ok(ts.v[i].name);
        for (size_t j = 0; j < i; j++) assert_string_not_equal(ts.v[i].name, ts.v[j].name);
        assert_ptr_equal(openai_tools_find(&ts, ts.v[i].name), &ts.v[i]); /* maps back */
    }
    /* Plain names read as SERVER__TOOL; the first of colliding ones keeps it. */
    assert_string_equal(mcp(&ts, "everything", "get-sum")->name, "everything__get-sum");
    assert_string_equal(mcp(&ts, "my.server", "read file")->name, "my_server__read_file");
    const char *second = mcp(&ts, "my_server", "read_file")->name; /* collides: hash suffix */
    assert_int_equal(strlen(second), strlen("my_server__read_file") + 9);
    assert_memory_equal(second, "my_server__read_file_", 21);
    assert_int_equal(strlen(mcp(&ts, "srv", long_a)->name), 64);
    assert_string_equal(openai_tools_find(&ts, "read_text_file")->name, "read_text_file");
    assert_null(openai_tools_find(&ts, "everything.echo"));

    /* The same tools get the same names (a model's earlier calls keep meaning the same). */
    openai_tools again = {0};
    openai_tools_add_builtin(&again, OPENAI_TOOL_READ);
    openai_tools_add_builtin(&again, OPENAI_TOOL_WRITE);
    openai_tools_add_builtin(&again, OPENAI_TOOL_RUN);
    for (size_t i = 0; i < np; i++) openai_tools_add_mcp(&again, pairs[i][0], pairs[i][1]);
    for (size_t i = 0; i < ts.n; i++) assert_string_equal(ts.v[i].name, again.v[i].name);
    openai_tools_free(&again);
    openai_tools_free(&ts);
}

static void tools_json_offers_the_builtins(void **state)
{
    openai_tools ts = {0};
    openai_tools_add_builtin(&ts, OPENAI_TOOL_READ);
    openai_tools_add_builtin(&ts, OPENAI_TOOL_RUN);
    assert_int_equal(openai_tools_json(&ts, NULL), 0);
    json_t *j = json_loadb(ts.json.data, ts.json.len, 0, NULL);
    assert_true(json_is_array(j));
    assert_int_equal(json_array_size(j), 2);
    json_t *f = json_object_get(json_array_get(j, 1), "function");
    assert_string_equal(json_string_value(json_object_get(f, "name")), "run_command");
    assert_true(json_is_object(json_object_get(json_object_get(f, "parameters"), "properties")));
    json_decref(j);
    openai_tools_free(&ts);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(names_are_valid_unique_and_map_back),
        cmocka_unit_test(tools_json_offers_the_builtins),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
