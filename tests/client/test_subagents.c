/* SPDX-License-Identifier: Apache-2.0 */
/* Subagent sessions (unstable) from the client's side, against an agent written with the
 * official TypeScript SDK's unstable build (ts-agent-subagents.mjs): the capability
 * advertised only when asked for, a child handle per announcement owned by its parent's, its
 * metadata merged as the schema says, its updates routed to it (as replay during the parent's
 * load), what a child refuses, cancel only when granted, and an announcement that names a
 * session we have already ignored. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include <cmocka.h>

#include "common.h"

typedef struct fixture {
    char record[256];
    acp_client *c;
    acp_buf order; /* "P:kind" / "C:kind" (r when replay) per update, space-separated */
} fixture;

static void on_update(acp_client *c, acp_client_session *s, const acp_update *u, void *user)
{
    fixture *f = user;
    const char *who = acp_client_session_parent(s) ? "C" : "P";
    if (f->order.len) acp_buf_putc(&f->order, ' ');
    acp_buf_append(&f->order, who, 1);
    if (u->replay) acp_buf_putc(&f->order, 'r');
    acp_buf_putc(&f->order, ':');
    acp_buf_append(&f->order, acp_update_kind_name(u->kind), strlen(acp_update_kind_name(u->kind)));
    acp_buf_cstr(&f->order);
}

static void open_client(fixture *f, bool subagents)
{
    acp_client_opts o = {.struct_size = sizeof(acp_client_opts),
                         .argv = node_agent("ts-agent-subagents.mjs"),
                         .on_update = on_update,
                         .user = f,
                         .subagents = subagents};
    int rc = acp_client_open(&o, &f->c);
    if (rc) fprintf(stderr, "open: %s\n", acp_error_last()->message);
    assert_int_equal(rc, 0);
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    record_start(f->record, sizeof f->record, "subagents");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    acp_client_free(f->c);
    acp_buf_free(&f->order);
    unlink(f->record);
    free(f);
    return 0;
}

static acp_client_session *new_session(fixture *f)
{
    acp_client_session *s = NULL;
    acp_session_opts so = {.struct_size = sizeof so, .cwd = "/tmp"};
    assert_int_equal(acp_client_session_new(f->c, &so, &s), 0);
    return s;
}

static void test_children_tracked(void **state)
{
    fixture *f = *state;
    open_client(f, true);
    acp_client_session *s = new_session(f);
    const char *stop = NULL;
    assert_int_equal(acp_client_session_prompt(s, "spawn", &stop), 0);
    assert_string_equal(f->order.data,
                        "P:subagent_update C:user_message_chunk C:agent_message_chunk "
                        "P:subagent_update");
    assert_int_equal(acp_client_session_child_count(s), 1);
    acp_client_session *k = acp_client_session_child(s, 0);
    assert_non_null(k);
    assert_null(acp_client_session_child(s, 1));
    assert_ptr_equal(acp_client_session_parent(k), s);
    assert_null(acp_client_session_parent(s));
    assert_null(acp_client_session_subagent(s));
    json_t *sub = acp_client_session_subagent(k);
    assert_string_equal(json_string_value(json_object_get(sub, "title")), "kid");
    assert_null(json_object_get(sub, "description")); /* cleared by null */
    assert_string_equal(json_string_value(json_object_get(json_object_get(sub, "state"), "state")),
                        "idle");
    assert_string_equal(acp_client_session_id(k), "child-1");
    /* what a child refuses, locally */
    assert_int_equal(acp_client_session_prompt(k, "hi", &stop), ACP_EINVAL);
    assert_non_null(strstr(acp_error_last()->message, "subagent session"));
    assert_int_equal(acp_client_session_close(k), ACP_EINVAL);
    assert_int_equal(acp_client_session_set_mode(k, "x"), ACP_EINVAL);
    /* cancel: granted here */
    assert_int_equal(acp_client_session_cancel(k), 0);
    /* a second child, without cancel */
    assert_int_equal(acp_client_session_prompt(s, "spawn-nocancel", &stop), 0);
    assert_int_equal(acp_client_session_child_count(s), 2);
    acp_client_session *k2 = acp_client_session_child(s, 1);
    assert_int_equal(acp_client_session_cancel(k2), ACP_ENOTSUP);
    /* an announcement naming the parent itself makes no child */
    assert_int_equal(acp_client_session_prompt(s, "hijack", &stop), 0);
    assert_int_equal(acp_client_session_child_count(s), 2);
    assert_null(acp_client_session_parent(s));
    /* the children go with the parent's handle (ASan checks nothing is left) */
    acp_client_session_free(s);
    char *rec = record_read(f->record, &f->c);
    assert_non_null(strstr(rec, "\"subagents\":{}"));
    assert_non_null(
        strstr(rec, "{\"method\":\"session/cancel\",\"params\":{\"sessionId\":\"child-1\"}}"));
    assert_null(strstr(rec, "\"sessionId\":\"child-3\"}}")); /* no cancel for the other */
    free(rec);
}

static void test_load_replays_children(void **state)
{
    fixture *f = *state;
    open_client(f, true);
    acp_client_session *s = NULL;
    acp_session_opts so = {.struct_size = sizeof so, .cwd = "/tmp"};
    assert_int_equal(acp_client_session_load(f->c, "parent-old", &so, &s), 0);
    assert_string_equal(f->order.data, "Pr:subagent_update Cr:user_message_chunk "
                                       "Cr:agent_message_chunk Pr:subagent_update");
    assert_int_equal(acp_client_session_child_count(s), 1);
    acp_client_session_free(s);
}

static void test_not_advertised(void **state)
{
    fixture *f = *state;
    open_client(f, false);
    acp_client_session *s = new_session(f);
    const char *stop = NULL;
    assert_int_equal(acp_client_session_prompt(s, "spawn", &stop), 0);
    assert_int_equal(acp_client_session_child_count(s), 0);
    assert_null(f->order.data);
    acp_client_session_free(s);
    char *rec = record_read(f->record, &f->c);
    assert_null(strstr(rec, "subagents"));
    free(rec);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_children_tracked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_load_replays_children, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_advertised, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
