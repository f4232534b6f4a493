/* SPDX-License-Identifier: Apache-2.0 */
/* The client's session/fork (unstable) against an agent written with the official TypeScript
 * SDK 2.4.0 (ts-agent-fork.mjs, its unstable session/fork): the fork is a new handle whose id
 * the agent chose, the conversation it inherited shows in its replies, the source's does not
 * get the fork's turns; sent with the client's cwd, roots and MCP servers as session/new sends
 * them; an unknown source is the agent's -32002. Against the same agent advertising no fork:
 * ACP_ENOTSUP naming the capability, and the agent's record proves nothing was sent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include <cmocka.h>

#include "common.h"

typedef recording fixture;

static int setup(void **state)
{
    if (*state)
        setenv("ACP_NO_FORK", "1", 1);
    else
        unsetenv("ACP_NO_FORK");
    *state = recording_open("fork", "ts-agent-fork.mjs");
    assert_non_null(*state);
    return 0;
}

static int teardown(void **state)
{
    recording_free(*state);
    return 0;
}

/* The reply text of one prompt. */
static char *reply(fixture *f, acp_client_session *s, const char *text)
{
    f->k.text.len = 0;
    const char *stop = NULL;
    assert_int_equal(acp_client_session_prompt(s, text, &stop), 0);
    assert_string_equal(stop, "end_turn");
    char *out = calloc(1, f->k.text.len + 1);
    if (f->k.text.len) memcpy(out, f->k.text.data, f->k.text.len);
    return out;
}

static void assert_reply(fixture *f, acp_client_session *s, const char *text, const char *want)
{
    char *got = reply(f, s, text);
    assert_string_equal(got, want);
    free(got);
}

static void test_fork(void **state)
{
    fixture *f = *state;
    acp_client *c = f->c;
    assert_true(acp_client_supports(c, ACP_CAP_FORK));
    acp_session_opts o = {.struct_size = sizeof(acp_session_opts), .cwd = "/tmp"};
    acp_client_session *src = NULL, *fk = NULL;
    assert_int_equal(acp_client_session_new(c, &o, &src), 0);
    assert_reply(f, src, "a", "[a]");
    assert_reply(f, src, "b", "[a,b]");
    acp_session_opts at = {.struct_size = sizeof(acp_session_opts), .cwd = "/"};
    assert_int_equal(acp_client_session_fork(c, acp_client_session_id(src), &at, &fk), 0);
    assert_non_null(fk);
    assert_string_not_equal(acp_client_session_id(fk), acp_client_session_id(src));
    assert_reply(f, fk, "c", "[a,b,c]");
    assert_reply(f, src, "d", "[a,b,d]");
    assert_reply(f, fk, "e", "[a,b,c,e]");

    /* Asynchronously: the handle comes with the answer. */
    acp_client_session *fk2 = NULL;
    assert_int_equal(acp_client_session_fork(c, acp_client_session_id(fk), NULL, &fk2), 0);
    assert_reply(f, fk2, "f", "[a,b,c,e,f]");

    /* The agent's own -32002 for an unknown source; no handle. */
    acp_client_session *none = NULL;
    assert_int_equal(acp_client_session_fork(c, "ts-sess-404", &o, &none), ACP_EPROTO);
    assert_int_equal(acp_client_errcode(c), ACP_RPC_NOT_FOUND);
    assert_null(none);
    assert_int_equal(acp_client_session_fork(c, "", &o, &none), ACP_EINVAL);

    char *rec = recording_text(f);
    /* The fork's params: the source's id, the fork's cwd, mcpServers as session/new's. */
    assert_non_null(strstr(rec,
                           "{\"method\":\"session/fork\",\"params\":{\"sessionId\":\"ts-sess-1\","
                           "\"cwd\":\"/\",\"mcpServers\":[]}}"));
    free(rec);
}

static void test_not_advertised(void **state)
{
    fixture *f = *state;
    acp_client *c = f->c;
    assert_false(acp_client_supports(c, ACP_CAP_FORK));
    acp_session_opts o = {.struct_size = sizeof(acp_session_opts), .cwd = "/tmp"};
    acp_client_session *src = NULL, *fk = NULL;
    assert_int_equal(acp_client_session_new(c, &o, &src), 0);
    assert_int_equal(acp_client_session_fork(c, acp_client_session_id(src), &o, &fk), ACP_ENOTSUP);
    assert_non_null(strstr(acp_error_last()->message, "sessionCapabilities.fork"));
    assert_null(fk);
    char *rec = recording_text(f);
    assert_null(strstr(rec, "session/fork"));
    free(rec);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_fork, setup, teardown),
        cmocka_unit_test_prestate_setup_teardown(test_not_advertised, setup, teardown, "no"),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
