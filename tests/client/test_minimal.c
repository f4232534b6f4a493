/* SPDX-License-Identifier: Apache-2.0 */
/* The client against an agent written with the official TypeScript SDK that advertises no
 * optional capability: every gated call fails locally with ACP_ENOTSUP naming the capability,
 * and the agent's record of what it received proves nothing forbidden was sent. Also: ids as
 * opaque strings, unknown update kinds and fields passed raw, a 32 MiB update. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include <cmocka.h>

#include "common.h"

typedef recording fixture;

static int setup(void **state)
{
    /* The prestate, when given, is the agentCapabilities the agent answers. */
    if (*state)
        setenv("ACP_AGENT_CAPS", *state, 1);
    else
        unsetenv("ACP_AGENT_CAPS");
    *state = recording_open("minimal", "ts-agent-minimal.mjs");
    assert_non_null(*state);
    return 0;
}

static int teardown(void **state)
{
    recording_free(*state);
    return 0;
}

static void expect_enotsup(acp_client *c, int rc, const char *cap)
{
    assert_int_equal(rc, ACP_ENOTSUP);
    if (!strstr(acp_error_last()->message, cap))
        fail_msg("message '%s' lacks '%s'", acp_error_last()->message, cap);
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p++) n++;
    return n;
}

static void test_refusals(void **state)
{
    fixture *f = *state;
    acp_client *c = f->c;
    for (int cap = ACP_CAP_LOAD_SESSION; cap <= ACP_CAP_PROMPT_RESOURCE; cap++)
        assert_false(acp_client_supports(c, (acp_agent_cap)cap));
    if (getenv("ACP_AGENT_CAPS")) { /* the agent's answer really spelled them false and null */
        json_t *ac = json_object_get(acp_client_init_result(c), "agentCapabilities");
        assert_true(json_is_false(json_object_get(ac, "loadSession")));
        json_t *sc = json_object_get(ac, "sessionCapabilities");
        assert_true(json_is_null(json_object_get(sc, "delete")));
        assert_true(json_is_null(json_object_get(sc, "additionalDirectories")));
        assert_true(json_is_false(json_object_get(json_object_get(ac, "mcpCapabilities"), "http")));
    }

    const char *dirs[] = {"/tmp", NULL};
    acp_session_opts with_dirs = {
        .struct_size = sizeof(acp_session_opts), .cwd = "/tmp", .add_dirs = dirs};
    acp_client_session *s = NULL;
    expect_enotsup(c, acp_client_session_new(c, &with_dirs, &s),
                   "sessionCapabilities.additionalDirectories");
    assert_null(s);
    json_t *http = json_pack("[{s:s, s:s, s:s, s:[]}]", "type", "http", "name", "h", "url",
                             "http://127.0.0.1:9/mcp", "headers");
    json_t *sse = json_pack("[{s:s, s:s, s:s, s:[]}]", "type", "sse", "name", "e", "url",
                            "http://127.0.0.1:9/sse", "headers");
    acp_session_opts with_http = {
        .struct_size = sizeof(acp_session_opts), .cwd = "/tmp", .mcp_servers = http};
    acp_session_opts with_sse = {
        .struct_size = sizeof(acp_session_opts), .cwd = "/tmp", .mcp_servers = sse};
    expect_enotsup(c, acp_client_session_new(c, &with_http, &s), "mcpCapabilities.http");
    expect_enotsup(c, acp_client_session_new(c, &with_sse, &s), "mcpCapabilities.sse");
    json_decref(http);
    json_decref(sse);

    acp_session_opts plain = {.struct_size = sizeof(acp_session_opts), .cwd = "/tmp"};
    assert_int_equal(acp_client_session_new(c, &plain, &s), 0);
    assert_string_equal(acp_client_session_id(s), "1000"); /* a string, though numeric */

    acp_client_session *s2 = NULL;
    expect_enotsup(c, acp_client_session_load(c, "1000x", &plain, &s2), "loadSession");
    expect_enotsup(c, acp_client_session_resume(c, "1000x", &plain, &s2),
                   "sessionCapabilities.resume");
    assert_null(s2);
    expect_enotsup(c, acp_client_session_close(s), "sessionCapabilities.close");
    expect_enotsup(c, acp_client_close_id(c, "1000"), "sessionCapabilities.close");
    json_t *list = NULL;
    expect_enotsup(c, acp_client_list(c, NULL, NULL, &list), "sessionCapabilities.list");
    assert_null(list);
    expect_enotsup(c, acp_client_delete(c, "1000"), "sessionCapabilities.delete");
    expect_enotsup(c, acp_client_session_set_mode(s, "fast"), "modes");
    expect_enotsup(c, acp_client_session_set_config(s, "model", "x"), "configOptions");
    json_t *image =
        json_pack("[{s:s, s:s, s:s}]", "type", "image", "data", "AAAA", "mimeType", "image/png");
    const char *stop = NULL;
    expect_enotsup(c, acp_client_session_prompt_blocks(s, image, &stop),
                   "promptCapabilities.image");
    json_decref(image);
    json_t *audio =
        json_pack("[{s:s, s:s, s:s}]", "type", "audio", "data", "AAAA", "mimeType", "audio/wav");
    expect_enotsup(c, acp_client_session_prompt_blocks(s, audio, &stop),
                   "promptCapabilities.audio");
    json_decref(audio);
    json_t *resource = json_pack("[{s:s, s:{s:s, s:s}}]", "type", "resource", "resource", "uri",
                                 "file:///tmp/x", "text", "x");
    expect_enotsup(c, acp_client_session_prompt_blocks(s, resource, &stop),
                   "promptCapabilities.embeddedContext");
    json_decref(resource);

    /* The handle survived the refused close, and still prompts. */
    assert_int_equal(acp_client_session_prompt(s, "hello", &stop), 0);
    assert_string_equal(stop, "end_turn");
    acp_buf_cstr(&f->k.text);
    assert_string_equal(f->k.text.data, "hello");

    char *rec = recording_text(f);
    assert_int_equal(count(rec, "\"method\":\"initialize\""), 1);
    assert_int_equal(count(rec, "\"method\":\"session/new\""), 1);
    assert_int_equal(count(rec, "\"method\":\"session/prompt\""), 1);
    assert_int_equal(count(rec, "\"method\":"), 3);
    assert_null(strstr(rec, "additionalDirectories"));
    assert_null(strstr(rec, "\"http\""));
    assert_null(strstr(rec, "\"sse\""));
    /* Our clientInfo and the capabilities we did not enable. */
    assert_non_null(strstr(rec, "\"readTextFile\":false"));
    assert_non_null(strstr(rec, "\"terminal\":false"));
    free(rec);
}

/* o[k] as a string, "(missing)" when it is not one (assert_string_equal needs a string). */
static const char *field(json_t *o, const char *k)
{
    const char *v = json_string_value(json_object_get(o, k));
    return v ? v : "(missing)";
}

/* One recorded message's params, by method (the first such line; caller owns). */
static json_t *recorded(const char *rec, const char *method)
{
    for (const char *line = rec; *line;) {
        const char *nl = strchr(line, '\n');
        size_t n = nl ? (size_t)(nl - line) : strlen(line);
        json_t *m = json_loadb(line, n, 0, NULL);
        if (m && strcmp(field(m, "method"), method) == 0) {
            json_t *p = json_incref(json_object_get(m, "params"));
            json_decref(m);
            return p;
        }
        json_decref(m);
        line += n + (nl != NULL);
    }
    fail_msg("no %s was sent", method);
    return NULL;
}

/* With loadSession, resume and close advertised, load and resume carry the session ID, the
 * working directory and the MCP servers, as the pages require, and close the session ID. (The
 * agent answers them method-not-found; only what was sent matters here.) */
static void test_required_params(void **state)
{
    fixture *f = *state;
    acp_client *c = f->c;
    json_t *mcp =
        json_pack("[{s:s, s:s, s:[], s:[]}]", "name", "fs", "command", "/bin/true", "args", "env");
    acp_session_opts so = {
        .struct_size = sizeof(acp_session_opts), .cwd = "/tmp", .mcp_servers = mcp};
    acp_client_session *s = NULL;
    assert_int_equal(acp_client_session_load(c, "s-load", &so, &s), ACP_EPROTO);
    assert_int_equal(acp_client_errcode(c), -32601);
    acp_session_opts no_mcp = {.struct_size = sizeof(acp_session_opts), .cwd = "/tmp"};
    assert_int_equal(acp_client_session_resume(c, "s-resume", &no_mcp, &s), ACP_EPROTO);
    assert_int_equal(acp_client_close_id(c, "s-close"), ACP_EPROTO);
    json_decref(mcp);

    char *rec = recording_text(f);
    json_t *load = recorded(rec, "session/load"), *resume = recorded(rec, "session/resume"),
           *close = recorded(rec, "session/close");
    assert_string_equal(field(load, "sessionId"), "s-load");
    assert_string_equal(field(load, "cwd"), "/tmp");
    json_t *srv = json_array_get(json_object_get(load, "mcpServers"), 0);
    assert_string_equal(field(srv, "command"), "/bin/true");
    assert_string_equal(field(resume, "sessionId"), "s-resume");
    assert_string_equal(field(resume, "cwd"), "/tmp");
    assert_true(json_is_array(json_object_get(resume, "mcpServers"))); /* [] when none */
    assert_string_equal(field(close, "sessionId"), "s-close");
    json_decref(load);
    json_decref(resume);
    json_decref(close);
    free(rec);
}

static void test_raw_updates(void **state)
{
    fixture *f = *state;
    acp_client_session *s;
    acp_session_opts plain = {.struct_size = sizeof(acp_session_opts), .cwd = "/tmp"};
    assert_int_equal(acp_client_session_new(f->c, &plain, &s), 0);
    const char *stop;
    assert_int_equal(acp_client_session_prompt(s, "future", &stop), 0);
    assert_int_equal(f->k.other, 1);
    assert_string_equal(f->k.last_kind, "\"future_kind\"");

    /* A 32 MiB update arrives whole. */
    char big[32];
    snprintf(big, sizeof big, "big %d", 32 << 20);
    assert_int_equal(acp_client_session_prompt(s, big, &stop), 0);
    assert_true(f->k.biggest > (size_t)(32 << 20));
    assert_int_equal(f->k.text.len, (size_t)(32 << 20));
    assert_int_equal(f->k.updates, 2);
    assert_int_equal(f->k.replayed, 0);
}

static void test_agent_gone(void **state)
{
    /* An agent that does not exist: a sentence, no crash, no leak. */
    acp_client_opts o = {.struct_size = sizeof(acp_client_opts),
                         .command = "/nonexistent/agent --flag"};
    acp_client *c = NULL;
    assert_int_not_equal(acp_client_open(&o, &c), 0);
    assert_null(c);
    assert_non_null(strstr(acp_error_last()->message, "/nonexistent/agent"));
    /* An agent that exits at once. */
    acp_client_opts o2 = {.struct_size = sizeof(acp_client_opts), .command = "/bin/true"};
    assert_int_equal(acp_client_open(&o2, &c), ACP_ECLOSED);
    assert_non_null(strstr(acp_error_last()->message, "exited"));
    /* Not an ACP agent: one that swallows input and never answers runs into the deadline. */
    acp_client_opts o4 = {.struct_size = sizeof(acp_client_opts),
                          .command = "sh -c 'while read x; do :; done'",
                          .init_timeout_ms = 200};
    assert_int_equal(acp_client_open(&o4, &c), ACP_ETIMEDOUT);
    assert_non_null(strstr(acp_error_last()->message, "did not answer initialize"));
    /* `cat` echoes our own request back, and then our error answer to it: an error, not a hang. */
    acp_client_opts o5 = {.struct_size = sizeof(acp_client_opts), .command = "cat"};
    assert_int_equal(acp_client_open(&o5, &c), ACP_EPROTO);
    /* Unclosed quote. */
    acp_client_opts o3 = {.struct_size = sizeof(acp_client_opts), .command = "node 'x"};
    assert_int_equal(acp_client_open(&o3, &c), ACP_EINVAL);
}

static void on_perm_first(acp_client *c, acp_client_session *s, acp_client_perm *p, json_t *params,
                          void *user)
{
    const char *id = json_string_value(
        json_object_get(json_array_get(json_object_get(params, "options"), 0), "optionId"));
    acp_client_perm_reply(p, id);
}

/* An agent that is neither ours nor the SDK's: string request ids with escapes, a session
 * id that needs escaping (spelled two ways), unknown result fields, split lines. */
static void test_raw_agent(void **state)
{
    seen k = {0};
    acp_client_opts o = {.struct_size = sizeof(acp_client_opts),
                         .argv = node_agent("raw-agent.mjs"),
                         .on_update = seen_update,
                         .on_permission = on_perm_first,
                         .user = &k};
    acp_client *c = NULL;
    assert_int_equal(acp_client_open(&o, &c), 0);
    acp_session_opts so = {.struct_size = sizeof(acp_session_opts), .cwd = "/tmp"};
    acp_client_session *s;
    assert_int_equal(acp_client_session_new(c, &so, &s), 0);
    assert_string_equal(acp_client_session_id(s), "s\"1\xc3\xa9");
    int mine = 0;
    acp_client_session_set_user(s, &mine);
    const char *stop;
    assert_int_equal(acp_client_session_prompt(s, "go", &stop), 0);
    assert_string_equal(stop, "end_turn");
    assert_int_equal(mine, 1); /* routed to the handle despite the other spelling */
    acp_buf_cstr(&k.text);
    json_t *reply = json_loads(k.text.data, 0, NULL);
    assert_non_null(reply);
    assert_string_equal(json_string_value(json_object_get(reply, "id")), "perm-\"1\"");
    assert_string_equal(
        json_string_value(json_object_get(
            json_object_get(json_object_get(reply, "result"), "outcome"), "optionId")),
        "o1");
    json_decref(reply);
    acp_buf_free(&k.text);
    acp_client_free(c);
}

int main(void)
{
    static const char null_caps[] =
        "{\"loadSession\":false,\"sessionCapabilities\":{\"resume\":null,\"close\":null,"
        "\"list\":null,\"delete\":null,\"additionalDirectories\":null},"
        "\"mcpCapabilities\":{\"http\":false,\"sse\":false},"
        "\"promptCapabilities\":{\"image\":false,\"audio\":false,\"embeddedContext\":false}}";
    static const char some_caps[] =
        "{\"loadSession\":true,\"sessionCapabilities\":{\"resume\":{},\"close\":{}}}";
    signal(SIGPIPE, SIG_IGN); /* an agent that exits early must not kill the test */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
        /* false and null advertise nothing either ("omitted or null": not supported). */
        cmocka_unit_test_prestate_setup_teardown(test_refusals, setup, teardown, (void *)null_caps),
        cmocka_unit_test_prestate_setup_teardown(test_required_params, setup, teardown,
                                                 (void *)some_caps),
        cmocka_unit_test_setup_teardown(test_raw_updates, setup, teardown),
        cmocka_unit_test(test_agent_gone),
        cmocka_unit_test(test_raw_agent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
