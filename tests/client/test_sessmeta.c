/* SPDX-License-Identifier: Apache-2.0 */
/* The client library's calls for the unstable session metadata (issue 22 items 2-5) against
 * an agent written with the official TypeScript SDK 2.4.0 that implements them
 * (ts-agent-sessmeta.mjs): set_title, archive/unarchive (a local handle of an archived session
 * is freed), status, list with the archive filter, and systemPrompt in acp_session_opts (append
 * and override). Against the same agent advertising none of it, every call fails locally with
 * ACP_ENOTSUP naming the capability and the agent's record shows nothing was sent. Bad input:
 * empty ids, a malformed system prompt, an unknown mode, the agent's -32602 and -32002. */
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
    setenv("ACP_SESSMETA_BARE", *state ? "1" : "0", 1);
    *state = recording_open("sessmeta", "ts-agent-sessmeta.mjs");
    assert_non_null(*state);
    return 0;
}

static int teardown(void **state)
{
    recording_free(*state);
    return 0;
}

static void expect_code(acp_client *c, int rc, int status, const char *part)
{
    assert_int_equal(rc, status);
    if (part && !strstr(acp_error_last()->message, part))
        fail_msg("message '%s' lacks '%s'", acp_error_last()->message, part);
}

static json_t *text_prompt(const char *mode, const char *text)
{
    return json_pack("{s:s, s:[{s:s, s:s}]}", "mode", mode, "content", "type", "text", "text",
                     text);
}

/* The agent's answer to a prompt: what it holds for the session. */
static const char *said(fixture *f, acp_client_session *s)
{
    f->k.text.len = 0;
    const char *stop = NULL;
    assert_int_equal(acp_client_session_prompt(s, "what", &stop), 0);
    acp_buf_cstr(&f->k.text);
    return f->k.text.data;
}

static size_t listed(acp_client *c, const char *archived)
{
    json_t *r = NULL;
    assert_int_equal(acp_client_list_archived(c, NULL, archived, NULL, &r), 0);
    size_t n = json_array_size(json_object_get(r, "sessions"));
    json_decref(r);
    return n;
}

static void test_calls(void **state)
{
    fixture *f = *state;
    acp_client *c = f->c;
    assert_true(acp_client_supports(c, ACP_CAP_TITLE));
    assert_true(acp_client_supports(c, ACP_CAP_ARCHIVE));
    assert_true(acp_client_supports(c, ACP_CAP_STATUS));
    assert_true(acp_client_supports(c, ACP_CAP_SYSTEM_PROMPT));
    assert_true(acp_client_supports(c, ACP_CAP_SYSTEM_PROMPT_OVERRIDE));

    /* systemPrompt on session/new, append and override */
    json_t *sp = text_prompt("append", "Be brief.");
    acp_session_opts o = {
        .struct_size = sizeof(acp_session_opts), .cwd = "/tmp", .system_prompt = sp};
    acp_client_session *s = NULL, *s2 = NULL;
    assert_int_equal(acp_client_session_new(c, &o, &s), 0);
    assert_non_null(strstr(said(f, s), "\"mode\":\"append\""));
    assert_non_null(strstr(f->k.text.data, "Be brief."));
    json_decref(sp);
    o.system_prompt = sp = text_prompt("override", "Pirate.");
    assert_int_equal(acp_client_session_new(c, &o, &s2), 0);
    assert_non_null(strstr(said(f, s2), "\"mode\":\"override\""));
    json_decref(sp);
    /* refused here: a mode ACP does not define, a malformed object */
    o.system_prompt = sp = text_prompt("_mine", "x");
    acp_client_session *none = NULL;
    expect_code(c, acp_client_session_new(c, &o, &none), ACP_ENOTSUP, "_mine");
    json_decref(sp);
    o.system_prompt = sp = json_string("Be brief.");
    expect_code(c, acp_client_session_new(c, &o, &none), ACP_EINVAL, "system prompt");
    json_decref(sp);
    assert_null(none);

    /* set_title: the stored (normalised) title comes back */
    const char *id = acp_client_session_id(s);
    json_t *r = NULL;
    assert_int_equal(acp_client_set_title(c, id, "  Fix   the parser ", &r), 0);
    assert_string_equal(json_string_value(json_object_get(r, "title")), "Fix the parser");
    json_decref(r);
    assert_non_null(strstr(said(f, s), "title=Fix the parser"));
    r = NULL;
    expect_code(c, acp_client_set_title(c, id, "   ", &r), ACP_EPROTO, "-32602");
    assert_int_equal(acp_client_errcode(c), -32602);
    expect_code(c, acp_client_set_title(c, "nope", "x", &r), ACP_EPROTO, "-32002");
    expect_code(c, acp_client_set_title(c, "", "x", &r), ACP_EINVAL, "empty");
    expect_code(c, acp_client_set_title(c, id, NULL, &r), ACP_EINVAL, "title");
    assert_null(r);

    /* status */
    assert_int_equal(acp_client_status(c, id, &r), 0);
    assert_string_equal(json_string_value(json_object_get(r, "status")), "open");
    json_decref(r);
    expect_code(c, acp_client_status(c, "nope", &r), ACP_EPROTO, "-32002");

    /* archive: the list filter, and the handle of s freed (the agent closed it) */
    char sid[64];
    snprintf(sid, sizeof sid, "%s", id);
    assert_int_equal(listed(c, NULL), 2);
    assert_int_equal(acp_client_archive(c, sid, true), 0); /* s is gone from here on */
    assert_int_equal(acp_client_archive(c, sid, true), 0);
    assert_int_equal(listed(c, NULL), 1);
    assert_int_equal(listed(c, "exclude"), 1);
    assert_int_equal(listed(c, "only"), 1);
    assert_int_equal(listed(c, "include"), 2);
    assert_int_equal(acp_client_status(c, sid, &r), 0);
    assert_string_equal(json_string_value(json_object_get(r, "status")), "saved");
    json_decref(r);
    json_t *page = NULL;
    assert_int_equal(acp_client_list_archived(c, NULL, "only", NULL, &page), 0);
    json_t *info = json_array_get(json_object_get(page, "sessions"), 0);
    assert_string_equal(json_string_value(json_object_get(info, "sessionId")), sid);
    assert_true(json_is_true(json_object_get(info, "archived")));
    json_decref(page);
    expect_code(c, acp_client_list_archived(c, NULL, "all", NULL, &page), ACP_EPROTO, "-32602");
    assert_int_equal(acp_client_archive(c, sid, false), 0);
    assert_int_equal(listed(c, NULL), 2);
    expect_code(c, acp_client_archive(c, "nope", true), ACP_EPROTO, "-32002");
    expect_code(c, acp_client_archive(c, "", false), ACP_EINVAL, "empty");
    acp_client_session_free(s2);
    /* everything sent was valid against schema.unstable.json (the agent checks strictly) */
    char *rec = recording_text(f);
    if (strstr(rec, "\"violation\"")) fail_msg("the client broke the schema: %s", rec);
    assert_non_null(strstr(rec, "session/set_title"));
    free(rec);
}

static void test_not_advertised(void **state)
{
    fixture *f = *state;
    acp_client *c = f->c;
    for (int cap = ACP_CAP_TITLE; cap <= ACP_CAP_SYSTEM_PROMPT_OVERRIDE; cap++)
        assert_false(acp_client_supports(c, (acp_agent_cap)cap));
    json_t *r = NULL;
    expect_code(c, acp_client_set_title(c, "x", "t", &r), ACP_ENOTSUP, "sessionCapabilities.title");
    expect_code(c, acp_client_archive(c, "x", true), ACP_ENOTSUP, "sessionCapabilities.archive");
    expect_code(c, acp_client_archive(c, "x", false), ACP_ENOTSUP, "sessionCapabilities.archive");
    expect_code(c, acp_client_status(c, "x", &r), ACP_ENOTSUP, "sessionCapabilities.status");
    expect_code(c, acp_client_list_archived(c, NULL, "only", NULL, &r), ACP_ENOTSUP,
                "sessionCapabilities.archive");
    assert_null(r);
    json_t *sp = text_prompt("append", "x");
    acp_session_opts o = {
        .struct_size = sizeof(acp_session_opts), .cwd = "/tmp", .system_prompt = sp};
    acp_client_session *s = NULL;
    expect_code(c, acp_client_session_new(c, &o, &s), ACP_ENOTSUP,
                "sessionCapabilities.systemPrompt");
    json_decref(sp);
    assert_int_equal(listed(c, NULL), 0); /* plain list works, without the member */
    char *rec = recording_text(f);
    static const char *const never[] = {"session/set_title", "session/archive", "session/unarchive",
                                        "session/status",    "session/new",     "\"archived\""};
    for (size_t i = 0; i < sizeof never / sizeof *never; i++)
        if (strstr(rec, never[i])) fail_msg("%s was sent: %s", never[i], rec);
    free(rec);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_prestate_setup_teardown(test_calls, setup, teardown, NULL),
        cmocka_unit_test_prestate_setup_teardown(test_not_advertised, setup, teardown, "bare"),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
