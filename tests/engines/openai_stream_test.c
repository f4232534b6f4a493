/* SPDX-License-Identifier: Apache-2.0 */
/* openai_stream: a streamed chat completion put together from SSE bytes, whatever the pieces. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "acp/error.h"
#include "engines/openai/stream.h"

typedef struct seen {
    acp_buf text, thought;
} seen;

static int on_text(void *user, bool reasoning, const char *text, size_t n)
{
    seen *s = user;
    return acp_buf_append(reasoning ? &s->thought : &s->text, text, n);
}

/* OpenAI's shapes: role chunk, content deltas, two tool calls whose id and name come first and
 * whose arguments come in fragments (one with an escaped quote), the finish chunk, then usage in
 * a chunk with choices: [] (CRLF line ends on purpose). */
static const char openai_body[] =
    "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":"
    "{\"role\":\"assistant\",\"content\":\"\",\"refusal\":null},\"finish_reason\":null}],"
    "\"usage\":null}\r\n\r\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo \\u00e9\\n\"}}]}\n\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_a\","
    "\"type\":\"function\",\"function\":{\"name\":\"everything__echo\",\"arguments\":\"\"}}]}}]}"
    "\n\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":"
    "{\"arguments\":\"{\\\"message\\\":\"}}]}}]}\n\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"call_b\","
    "\"function\":{\"name\":\"sum\",\"arguments\":\"{\\\"a\\\":2\"}}]}}]}\n\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":"
    "{\"arguments\":\"\\\"say \\\\\\\"hi\\\\\\\"\\\"}\"}}]}}]}\n\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"function\":"
    "{\"arguments\":\",\\\"b\\\":3}\"}}]}}]}\n\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n"
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":17,\"completion_tokens\":5,"
    "\"total_tokens\":22}}\n\n"
    "data: [DONE]\n\n";

static void check_openai(const openai_stream *st, const seen *s)
{
    assert_int_equal(s->text.len, strlen("Hello \xc3\xa9\n"));
    assert_memory_equal(s->text.data, "Hello \xc3\xa9\n", s->text.len);
    assert_int_equal(s->thought.len, 0);
    assert_int_equal(st->ncalls, 2);
    assert_string_equal(st->calls[0].id, "call_a");
    assert_string_equal(st->calls[0].name, "everything__echo");
    assert_int_equal(st->calls[0].args.len, strlen("{\"message\":\"say \\\"hi\\\"\"}"));
    assert_memory_equal(st->calls[0].args.data, "{\"message\":\"say \\\"hi\\\"\"}",
                        st->calls[0].args.len);
    assert_string_equal(st->calls[1].id, "call_b");
    assert_string_equal(st->calls[1].name, "sum");
    assert_memory_equal(st->calls[1].args.data, "{\"a\":2,\"b\":3}", st->calls[1].args.len);
    assert_string_equal(st->finish, "tool_calls");
    assert_true(st->has_usage);
    assert_int_equal(st->prompt_tokens, 17);
    assert_int_equal(st->completion_tokens, 5);
    assert_int_equal(st->total_tokens, 22);
    assert_true(st->done);
    assert_null(st->error);
}

/* Every cut into two pieces, and one byte at a time: the same completion. */
static void assembles_across_every_split(void **state)
{
    size_t n = strlen(openai_body);
    for (size_t cut = 0; cut <= n + 1; cut++) {
        seen s = {0};
        openai_stream st;
        openai_stream_init(&st, on_text, &s);
        if (cut <= n) {
            assert_int_equal(openai_stream_feed(&st, openai_body, cut), 0);
            assert_int_equal(openai_stream_feed(&st, openai_body + cut, n - cut), 0);
        } else {
            for (size_t i = 0; i < n; i++)
                assert_int_equal(openai_stream_feed(&st, openai_body + i, 1), 0);
        }
        check_openai(&st, &s);
        openai_stream_free(&st);
        acp_buf_free(&s.text);
        acp_buf_free(&s.thought);
    }
}

/* llama-server: reasoning_content, content null in the role chunk, a whole tool call in one
 * delta; Ollama: `reasoning`, and tool calls without an index (each its own call). */
static void reasoning_and_indexless_calls(void **state)
{
    static const char body[] =
        "data: {\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\":{\"role\":\"assistant\","
        "\"content\":null}}],\"object\":\"chat.completion.chunk\"}\n\n"
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"Let me \"}}]}\n\n"
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning\":\"think.\"}}]}\n\n"
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"}}]}\n\n"
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"id\":\"x1\",\"function\":"
        "{\"name\":\"f\",\"arguments\":{\"k\":1}}},{\"id\":\"x2\",\"function\":{\"name\":\"g\","
        "\"arguments\":\"{}\"}}]}}]}\n\n"
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],"
        "\"timings\":{\"predicted_n\":3}}\n\n";
    seen s = {0};
    openai_stream st;
    openai_stream_init(&st, on_text, &s);
    assert_int_equal(openai_stream_feed(&st, body, strlen(body)), 0);
    assert_memory_equal(s.thought.data, "Let me think.", s.thought.len);
    assert_memory_equal(s.text.data, "ok", s.text.len);
    assert_int_equal(st.ncalls, 2);
    assert_string_equal(st.calls[0].name, "f");
    assert_memory_equal(st.calls[0].args.data, "{\"k\":1}", st.calls[0].args.len);
    assert_string_equal(st.calls[1].id, "x2");
    assert_string_equal(st.finish, "stop");
    assert_false(st.done); /* no [DONE]: the caller decides whether finish_reason is enough */
    assert_false(st.has_usage);
    openai_stream_free(&st);
    acp_buf_free(&s.text);
    acp_buf_free(&s.thought);
}

static int refuse(void *user, bool reasoning, const char *text, size_t n)
{
    return 42;
}

static void errors_are_reported(void **state)
{
    openai_stream st;
    openai_stream_init(&st, NULL, NULL);
    const char *err =
        "data: {\"error\":{\"message\":\"context length exceeded\",\"code\":400}}\n\n";
    assert_int_equal(openai_stream_feed(&st, err, strlen(err)), 0);
    assert_string_equal(st.error, "context length exceeded");
    openai_stream_free(&st);

    openai_stream_init(&st, NULL, NULL);
    const char *bad = "data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}\n\n";
    assert_int_equal(openai_stream_feed(&st, bad, strlen(bad)), ACP_EPROTO);
    assert_non_null(st.error);
    openai_stream_free(&st);

    /* A text the engine cannot take (a NUL inside), or a callback's refusal, stops the feed. */
    seen s = {0};
    openai_stream_init(&st, on_text, &s);
    const char *nul = "data: {\"choices\":[{\"delta\":{\"content\":\"a\\u0000b\"}}]}\n\n";
    assert_int_equal(openai_stream_feed(&st, nul, strlen(nul)), ACP_EPROTO);
    openai_stream_free(&st);
    openai_stream_init(&st, refuse, NULL);
    const char *ok = "data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n";
    assert_int_equal(openai_stream_feed(&st, ok, strlen(ok)), 42);
    openai_stream_free(&st);
}

static int take(void *user, bool reasoning, const char *text, size_t n)
{
    *(size_t *)user += n;
    return 0;
}

/* Endless arguments, endless text, endless calls: each stops at its bound (issue 21), with the
 * memory held never more than the bound. */
static void answers_are_bounded(void **state)
{
    enum { PIECE = 1 << 20 };
    char *ev = malloc(PIECE + 256);
    assert_non_null(ev);
    openai_stream st;
    openai_stream_init(&st, NULL, NULL);
    int rc = 0, n = 0;
    for (; !rc && n < 100; n++) {
        int k = snprintf(ev, 256,
                         "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,"
                         "\"function\":{\"arguments\":\"");
        memset(ev + k, 'a', PIECE);
        k += PIECE;
        k += sprintf(ev + k, "\"}}]}}]}\n\n");
        rc = openai_stream_feed(&st, ev, (size_t)k);
    }
    assert_int_equal(rc, ACP_EPROTO);
    assert_int_equal(n, OPENAI_CALL_ARGS_MAX / PIECE + 1);
    assert_string_equal(st.error, "a tool call's arguments are over 16 MiB");
    assert_true(st.calls[0].args.len <= OPENAI_CALL_ARGS_MAX);
    openai_stream_free(&st);

    size_t got = 0;
    openai_stream_init(&st, take, &got);
    for (rc = 0, n = 0; !rc && n < 100; n++) {
        int k = snprintf(ev, 256, "data: {\"choices\":[{\"delta\":{\"content\":\"");
        memset(ev + k, 'b', PIECE);
        k += PIECE;
        k += sprintf(ev + k, "\"}}]}\n\n");
        rc = openai_stream_feed(&st, ev, (size_t)k);
    }
    assert_int_equal(rc, ACP_EPROTO);
    assert_int_equal(got, OPENAI_ANSWER_MAX);
    openai_stream_free(&st);

    openai_stream_init(&st, NULL, NULL);
    for (rc = 0, n = 0; !rc && n < 1000; n++) {
        int k = snprintf(ev, 256,
                         "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":%d,"
                         "\"function\":{\"name\":\"f\"}}]}}]}\n\n",
                         n);
        rc = openai_stream_feed(&st, ev, (size_t)k);
    }
    assert_int_equal(rc, ACP_EPROTO);
    assert_int_equal(st.ncalls, OPENAI_CALLS_MAX);
    openai_stream_free(&st);
    free(ev);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(assembles_across_every_split),
        cmocka_unit_test(reasoning_and_indexless_calls),
        cmocka_unit_test(errors_are_reported),
        cmocka_unit_test(answers_are_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
