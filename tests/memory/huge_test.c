/* SPDX-License-Identifier: Apache-2.0 */
/* Memory after huge messages (issue 13, item 6), inside the library: once a huge message is
 * done, the live heap is back near where it was before it. Each test sends small messages
 * first (what stays is the footprint), then one of HUGE bytes, then small ones again, and
 * compares the bytes allocated and not freed. Before the fix the connection's line buffer kept
 * the largest line's capacity (an acp_conn per ACP client and per MCP server), and so did a
 * long-lived SSE stream's event buffer and a running turn's buffers. mcp_test.c does the same
 * with a stdio MCP server's huge line.
 *
 * Live bytes, not RSS, so the test means the same under ASan: the sanitizer's allocator counts
 * what is allocated (its quarantine and shadow are not); without it, glibc's in-use bytes,
 * mapped blocks included. The margins are far below the HUGE a kept buffer would show. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "acp/rpc.h"
#include "acp/sse.h"
#include "tests/agent/harness.h"
#include "tests/memory/live.h"

/* Over ACP_BUF_KEEP, the coalescing bound, and (twice, as a turn holds it) the 8 MiB a
 * streaming turn's hold keeps. */
#define HUGE  (10u << 20)
#define PIECE (64u << 10) /* what a transport reads at a time */

/* --- acp_conn: the line buffer ------------------------------------------------------------ */

static void count_note(acp_conn *c, acp_msg *m, void *user)
{
    ++*(int *)user;
}

/* One notification line of about n bytes, fed in transport-sized pieces. */
static void feed_line(acp_conn *c, size_t n)
{
    static const char head[] = "{\"jsonrpc\":\"2.0\",\"method\":\"note\",\"params\":{\"t\":\"";
    static const char tail[] = "\"}}\n";
    char *line = malloc(n + sizeof head + sizeof tail);
    size_t len = 0;
    memcpy(line, head, sizeof head - 1), len += sizeof head - 1;
    memset(line + len, 'x', n), len += n;
    memcpy(line + len, tail, sizeof tail - 1), len += sizeof tail - 1;
    for (size_t at = 0; at < len; at += PIECE)
        assert_int_equal(acp_conn_recv(c, line + at, len - at < PIECE ? len - at : PIECE), 0);
    free(line);
}

static void conn_line(void **state)
{
    int notes = 0;
    acp_conn *c =
        acp_conn_new(&(acp_conn_opts){.struct_size = sizeof(acp_conn_opts), .user = &notes});
    assert_non_null(c);
    assert_int_equal(acp_conn_on(c, "note", NULL, count_note, &notes), 0);
    feed_line(c, 100);
    size_t before = live();
    feed_line(c, HUGE);
    assert_int_equal(notes, 2);
    assert_back(before, 64u << 10, "after a huge line");
    for (int i = 0; i < 3; i++) feed_line(c, 100);
    assert_int_equal(notes, 5);
    assert_back(before, 64u << 10, "after small lines");
    acp_conn_free(c);
}

/* --- the SSE parser of a long-lived stream ---------------------------------------------------- */

static int count_event(void *user, const char *event, const char *data, size_t n)
{
    ++*(int *)user;
    return 0;
}

static void feed_event(acp_sse *p, size_t n)
{
    char *ev = malloc(n + 16);
    size_t len = (size_t)sprintf(ev, "data: ");
    memset(ev + len, 'x', n), len += n;
    len += (size_t)sprintf(ev + len, "\n\n");
    for (size_t at = 0; at < len; at += PIECE)
        assert_int_equal(acp_sse_feed(p, ev + at, len - at < PIECE ? len - at : PIECE), 0);
    free(ev);
}

static void sse_event(void **state)
{
    int events = 0;
    acp_sse p;
    acp_sse_init(&p, count_event, &events);
    p.max = 64u << 20;
    feed_event(&p, 100);
    size_t before = live();
    feed_event(&p, HUGE);
    assert_int_equal(events, 2);
    assert_back(before, 64u << 10, "after a huge event");
    feed_event(&p, 100);
    assert_int_equal(events, 3);
    acp_sse_free(&p);
}

/* --- the agent runtime: huge updates, in a turn that ends and in one that goes on --------- */

struct eng_state {
    int turns;
    acp_turn *held; /* a turn that goes on after its huge updates */
};

/* The text comes back as one agent message (under a messageId: the coalescing path) and as a
 * completed tool call's content (an update built whole). */
static void echo(acp_turn *t, const char *text, size_t n)
{
    char mid[48];
    acp_agent_new_id("msg_", mid);
    assert_int_equal(acp_turn_text(t, NULL, mid, text, n), 0);
    acp_tool_call *tc = NULL;
    assert_int_equal(
        acp_tool_call_begin(
            t, &(acp_tool_info){.struct_size = sizeof(acp_tool_info), .title = "echo"}, &tc),
        0);
    assert_int_equal(acp_tool_call_complete(
                         tc, &(acp_tool_info){.struct_size = sizeof(acp_tool_info), .text = text}),
                     0);
}

/* "hold": HUGE bytes of the engine's own, and the turn goes on; else the prompt echoed. */
static void engine_prompt(acp_turn *t, const json_t *prompt, void *user)
{
    h *x = user;
    x->e->turns++;
    const json_t *b = json_object_get(json_array_get(prompt, 0), "text");
    if (!strcmp(json_string_value(b), "hold")) {
        char *text = malloc(HUGE + 1);
        memset(text, 'h', HUGE);
        text[HUGE] = 0;
        echo(t, text, HUGE);
        free(text);
        x->e->held = t;
        return;
    }
    echo(t, json_string_value(b), json_string_length(b));
    acp_turn_end(t, "end_turn");
}

static void prompt_of(h *x, int id, const char *sid, size_t n)
{
    char *text = malloc(n + 1);
    memset(text, 'p', n);
    text[n] = 0;
    send_prompt(x, id, sid, text);
    free(text);
    json_decref(take_response(x, id));
}

static h *agent_session(char *sid, size_t n)
{
    h *x = h_new("memory", sizeof(eng_state));
    x->eng = (acp_engine){.struct_size = sizeof(acp_engine),
                          .name = "memory-engine",
                          .version = "1",
                          .prompt = engine_prompt,
                          .user = x};
    agent_start(x);
    json_decref(request(x, 1, "initialize", "{\"protocolVersion\":1}"));
    char *params = NULL;
    assert_true(asprintf(&params, "{\"cwd\":\"%s\",\"mcpServers\":[]}", x->real) > 0);
    json_t *r = request(x, 2, "session/new", params);
    free(params);
    snprintf(sid, n, "%s", jstr(result_of(r), "sessionId"));
    json_decref(r);
    for (int i = 0; i < 3; i++) prompt_of(x, 10 + i, sid, 100);
    return x;
}

/* SQLite's page cache (2 MB by default) fills with the huge rows' pages: allowed for. */
#define AGENT_MARGIN (4u << 20)

static void agent_prompt(void **state)
{
    char sid[128];
    h *x = agent_session(sid, sizeof sid);
    size_t before = live();
    prompt_of(x, 20, sid, HUGE);
    assert_back(before, AGENT_MARGIN, "after a huge prompt");
    for (int i = 0; i < 3; i++) prompt_of(x, 30 + i, sid, 100);
    assert_int_equal(x->e->turns, 7);
    assert_back(before, AGENT_MARGIN, "after small prompts");
    h_free(x);
}

/* A turn goes on after huge updates (an agent that dumped a file and keeps working): the
 * session's hold and pending-history buffers must not keep the huge capacity for the rest
 * of the turn. */
static void agent_long_turn(void **state)
{
    char sid[128];
    h *x = agent_session(sid, sizeof sid);
    size_t before = live();
    send_prompt(x, 20, sid, "hold");
    for (int i = 0; i < 1000 && !count_updates(x->msgs, "tool_call_update"); i++) turn(x);
    assert_non_null(x->e->held);
    assert_int_equal(count_updates(x->msgs, "tool_call_update"), 1);
    assert_int_equal(find_response(x, 20), -1);
    json_array_clear(x->msgs);
    turn(x); /* what the turn still holds is committed and released */
    assert_back(before, AGENT_MARGIN, "in a turn after huge updates");
    acp_turn_end(x->e->held, "end_turn");
    json_decref(take_response(x, 20));
    assert_back(before, AGENT_MARGIN, "after the turn");
    h_free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(conn_line),
        cmocka_unit_test(sse_event),
        cmocka_unit_test(agent_prompt),
        cmocka_unit_test(agent_long_turn),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
