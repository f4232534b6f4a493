/* SPDX-License-Identifier: Apache-2.0 */
/* openai_history: the model's messages derived from a stored history, and the same from a live
 * turn. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "engines/openai/history.h"

/* Feeds stored updates (one JSON text each). */
static void feed_all(openai_history *h, const char *const *updates, size_t n)
{
    for (size_t i = 0; i < n; i++)
        assert_int_equal(openai_history_feed(h, updates[i], strlen(updates[i])), 0);
}

/* The rendered messages must be exactly `want` (JSON text of an array). */
static void assert_messages(const openai_history *h, const char *want)
{
    acp_buf b = {0};
    acp_buf_putc(&b, '[');
    assert_int_equal(openai_history_render(h, &b), 0);
    acp_buf_putc(&b, ']');
    json_error_t e;
    json_t *got = json_loadb(b.data, b.len, 0, &e);
    if (!got) fail_msg("rendered messages are not JSON (%s): %.*s", e.text, (int)b.len, b.data);
    json_t *exp = json_loads(want, 0, &e);
    assert_non_null(exp);
    if (!json_equal(got, exp)) {
        char *g = json_dumps(got, JSON_COMPACT);
        fail_msg("messages differ:\n got: %s\nwant: %s", g, want);
    }
    json_decref(got);
    json_decref(exp);
    acp_buf_free(&b);
}

static const char *const stored[] = {
    "{\"sessionUpdate\":\"user_message_chunk\",\"messageId\":\"m1\",\"content\":{\"type\":\"text\","
    "\"text\":\"Read \\\"a.txt\\\"\"}}",
    "{\"sessionUpdate\":\"user_message_chunk\",\"messageId\":\"m1\",\"content\":{\"type\":"
    "\"resource_link\",\"uri\":\"file:///p/a.txt\",\"name\":\"a.txt\"}}",
    "{\"sessionUpdate\":\"agent_thought_chunk\",\"messageId\":\"t1\",\"content\":{\"type\":"
    "\"text\","
    "\"text\":\"hmm\"}}",
    "{\"sessionUpdate\":\"agent_message_chunk\",\"messageId\":\"a1\",\"content\":{\"type\":"
    "\"text\","
    "\"text\":\"Let me \"}}",
    "{\"sessionUpdate\":\"agent_message_chunk\",\"messageId\":\"a1\",\"content\":{\"type\":"
    "\"text\","
    "\"text\":\"look.\"}}",
    "{\"sessionUpdate\":\"tool_call\",\"toolCallId\":\"call_1\",\"title\":\"Read a.txt\",\"name\":"
    "\"read_text_file\",\"kind\":\"read\",\"status\":\"pending\",\"rawInput\":{\"path\":\"a.txt\"},"
    "\"_meta\":{\"openai\":{\"toolCallId\":\"m_call_x\"}}}",
    "{\"sessionUpdate\":\"tool_call\",\"toolCallId\":\"call_2\",\"title\":\"x\",\"name\":"
    "\"everything__echo\",\"status\":\"pending\",\"rawInput\":\"{bad\"}",
    "{\"sessionUpdate\":\"tool_call_update\",\"toolCallId\":\"call_1\",\"status\":\"in_progress\"}",
    "{\"sessionUpdate\":\"tool_call_update\",\"toolCallId\":\"call_1\",\"status\":\"completed\","
    "\"content\":[{\"type\":\"content\",\"content\":{\"type\":\"text\",\"text\":\"line 1\\nline "
    "2\"}},"
    "{\"type\":\"diff\",\"path\":\"/p/a.txt\",\"newText\":\"x\"}]}",
    "{\"sessionUpdate\":\"tool_call_update\",\"toolCallId\":\"call_2\",\"status\":\"failed\","
    "\"content\":[{\"type\":\"content\",\"content\":{\"type\":\"text\",\"text\":\"bad JSON\"}}]}",
    "{\"sessionUpdate\":\"agent_message_chunk\",\"messageId\":\"a2\",\"content\":{\"type\":"
    "\"text\","
    "\"text\":\"It says line 1.\"}}",
    /* another engine's tool call (no name): not the model's, left out */
    "{\"sessionUpdate\":\"tool_call\",\"toolCallId\":\"call_9\",\"title\":\"echo\",\"status\":"
    "\"completed\"}",
    "{\"sessionUpdate\":\"plan\",\"entries\":[]}",
    "not json at all",
    "{\"sessionUpdate\":\"user_message_chunk\",\"messageId\":\"m2\",\"content\":{\"type\":\"text\","
    "\"text\":\"thanks\"}}",
    "{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{\"type\":\"text\",\"text\":\"You're "
    "welcome.\"}}",
};

static const char want_all[] =
    "[{\"role\":\"user\",\"content\":\"Read \\\"a.txt\\\"\\n[resource a.txt file:///p/a.txt]\"},"
    "{\"role\":\"assistant\",\"content\":\"Let me look.\",\"tool_calls\":["
    "{\"id\":\"m_call_x\",\"type\":\"function\",\"function\":{\"name\":\"read_text_file\","
    "\"arguments\":\"{\\\"path\\\":\\\"a.txt\\\"}\"}},"
    "{\"id\":\"call_2\",\"type\":\"function\",\"function\":{\"name\":\"everything__echo\","
    "\"arguments\":\"{bad\"}}]},"
    "{\"role\":\"tool\",\"tool_call_id\":\"m_call_x\",\"content\":\"line 1\\nline 2\"},"
    "{\"role\":\"tool\",\"tool_call_id\":\"call_2\",\"content\":\"Error: bad JSON\"},"
    "{\"role\":\"assistant\",\"content\":\"It says line 1.\"},"
    "{\"role\":\"user\",\"content\":\"thanks\"},"
    "{\"role\":\"assistant\",\"content\":\"You're welcome.\"}]";

static void rebuilds_from_stored_history(void **state)
{
    openai_history h = {0};
    feed_all(&h, stored, sizeof stored / sizeof *stored);
    assert_messages(&h, want_all);
    assert_true(openai_history_started(&h));
    openai_history_free(&h);
}

/* What a live turn records through the API renders the same as its stored updates. */
static void live_turn_matches_its_stored_form(void **state)
{
    openai_history h = {0};
    const char *b1 = "{\"type\":\"text\",\"text\":\"Read \\\"a.txt\\\"\"}";
    const char *b2 = "{\"type\":\"resource_link\",\"uri\":\"file:///p/a.txt\",\"name\":\"a.txt\"}";
    openai_history_user_block(&h, "live-1", (acp_span){b1, strlen(b1)});
    openai_history_user_block(&h, "live-1", (acp_span){b2, strlen(b2)});
    openai_history_assistant_text(&h, "Let me ", 7);
    openai_history_assistant_text(&h, "look.", 5);
    const char *in1 = "{\"path\":\"a.txt\"}", *in2 = "\"{bad\"";
    openai_history_call(&h, "call_1", "m_call_x", "read_text_file", (acp_span){in1, strlen(in1)});
    openai_history_call(&h, "call_2", NULL, "everything__echo", (acp_span){in2, strlen(in2)});
    const char *c1 =
        "[{\"type\":\"content\",\"content\":{\"type\":\"text\",\"text\":\"line 1\\nline 2\"}}]";
    const char *c2 =
        "[{\"type\":\"content\",\"content\":{\"type\":\"text\",\"text\":\"bad JSON\"}}]";
    openai_history_result(&h, "call_1", false, (acp_span){c1, strlen(c1)});
    openai_history_result(&h, "call_2", true, (acp_span){c2, strlen(c2)});
    openai_history_assistant_text(&h, "It says line 1.", 15);
    const char *b3 = "{\"type\":\"text\",\"text\":\"thanks\"}";
    openai_history_user_block(&h, "live-2", (acp_span){b3, strlen(b3)});
    openai_history_assistant_text(&h, "You're welcome.", 15);
    assert_messages(&h, want_all);
    openai_history_free(&h);
}

/* A call whose result never came (the turn was cancelled) still gets its tool message. */
static void unanswered_call_gets_a_result(void **state)
{
    openai_history h = {0};
    const char *const u[] = {
        "{\"sessionUpdate\":\"user_message_chunk\",\"content\":{\"type\":\"text\",\"text\":\"go\"}"
        "}",
        "{\"sessionUpdate\":\"tool_call\",\"toolCallId\":\"c\",\"title\":\"t\",\"name\":\"f\"}",
    };
    feed_all(&h, u, 2);
    assert_messages(&h,
                    "[{\"role\":\"user\",\"content\":\"go\"},{\"role\":\"assistant\",\"content\":"
                    "null,\"tool_calls\":[{\"id\":\"c\",\"type\":\"function\",\"function\":{"
                    "\"name\":\"f\",\"arguments\":\"{}\"}}]},{\"role\":\"tool\",\"tool_call_id\":"
                    "\"c\",\"content\":\"(no result)\"}]");
    openai_history_free(&h);
}

/* A completed compaction stands for everything before it; the prompt that triggered it stays. */
static void compaction_replaces_older_turns(void **state)
{
    openai_history h = {0};
    const char *const u[] = {
        stored[0],
        stored[3],
        "{\"sessionUpdate\":\"user_message_chunk\",\"messageId\":\"m2\",\"content\":{\"type\":"
        "\"text\",\"text\":\"next\"}}",
        "{\"sessionUpdate\":\"compaction_update\",\"compactionId\":\"k1\",\"status\":\"in_"
        "progress\"}",
        "{\"sessionUpdate\":\"compaction_summary_chunk\",\"compactionId\":\"k1\",\"content\":{"
        "\"type\":\"text\",\"text\":\"They read \\\"a.txt\\\".\"}}",
        "{\"sessionUpdate\":\"compaction_update\",\"compactionId\":\"k1\",\"status\":"
        "\"completed\"}",
        "{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{\"type\":\"text\",\"text\":\"ok\"}"
        "}",
    };
    feed_all(&h, u, sizeof u / sizeof *u);
    assert_messages(&h, "[{\"role\":\"user\",\"content\":\"They read \\\"a.txt\\\".\"},"
                        "{\"role\":\"user\",\"content\":\"next\"},"
                        "{\"role\":\"assistant\",\"content\":\"ok\"}]");
    acp_buf sys = {0};
    assert_int_equal(openai_history_render_system(&h, "Be brief.", &sys), 1);
    json_t *s = json_loadb(sys.data, sys.len, 0, NULL);
    assert_non_null(strstr(json_string_value(json_object_get(s, "content")), "Be brief.\n\n"));
    json_decref(s);
    acp_buf_free(&sys);
    /* The live form gives the same. */
    openai_history live = {0};
    feed_all(&live, u, 3);
    const char *sum = "They read \"a.txt\".";
    openai_history_compacted(&live, sum, strlen(sum));
    openai_history_assistant_text(&live, "ok", 2);
    assert_messages(&live, "[{\"role\":\"user\",\"content\":\"They read \\\"a.txt\\\".\"},"
                           "{\"role\":\"user\",\"content\":\"next\"},"
                           "{\"role\":\"assistant\",\"content\":\"ok\"}]");
    openai_history_free(&live);
    openai_history_free(&h);
}

/* A long tool result reaches the model cut at result_max, at any byte, as valid JSON text that
 * is a prefix of the whole, followed by how much was left out. */
static void long_results_are_cut_validly(void **state)
{
    const char *call = "{\"sessionUpdate\":\"tool_call\",\"toolCallId\":\"c\",\"title\":\"t\","
                       "\"name\":\"f\"}";
    json_t *item =
        json_pack("[{ss s{ss ss}}]", "type", "content", "content", "type", "text", "text",
                  "\xc3\xa9\"\n\\\x01\xe2\x82\xac-\xc3\xa9\"\n\\\x01\xe2\x82\xac-");
    char *content = json_dumps(item, JSON_COMPACT);
    const char *whole = "\xc3\xa9\"\n\\\x01\xe2\x82\xac-\xc3\xa9\"\n\\\x01\xe2\x82\xac-";
    for (size_t max = 1; max < 40; max++) {
        openai_history h = {.result_max = max};
        openai_history_feed(&h, call, strlen(call));
        assert_int_equal(
            openai_history_result(&h, "c", false, (acp_span){content, strlen(content)}), 0);
        acp_buf b = {0};
        acp_buf_putc(&b, '[');
        openai_history_render(&h, &b);
        acp_buf_putc(&b, ']');
        json_t *msgs = json_loadb(b.data, b.len, 0, NULL);
        if (!msgs) fail_msg("max %zu: not JSON: %.*s", max, (int)b.len, b.data);
        const char *text = json_string_value(json_object_get(json_array_get(msgs, 1), "content"));
        const char *mark = strstr(text, "\n[... ");
        if (mark) {
            assert_memory_equal(text, whole, (size_t)(mark - text));
            assert_non_null(strstr(mark, " more bytes not shown]"));
        } else {
            assert_string_equal(text, whole);
        }
        json_decref(msgs);
        acp_buf_free(&b);
        openai_history_free(&h);
    }
    free(content);
    json_decref(item);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rebuilds_from_stored_history),
        cmocka_unit_test(live_turn_matches_its_stored_form),
        cmocka_unit_test(unanswered_call_gets_a_result),
        cmocka_unit_test(compaction_replaces_older_turns),
        cmocka_unit_test(long_results_are_cut_validly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
