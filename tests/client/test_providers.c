/* SPDX-License-Identifier: Apache-2.0 */
/* (unstable) Providers and auth/status through the client library. Against acp-agent: the
 * openai engine lists its endpoint as provider "openai" (no secret), providers/set moves it
 * and an Authorization header signs it in (auth/status_update reaches on_auth_status),
 * disable leaves it listed with no current route; the runtime's refusals (unknown id, an
 * apiType it does not speak, a header that would split a request); the echo engine's --auth
 * state; with the features switched off (--unstable-off) the calls fail ACP_ENOTSUP before
 * anything is sent. Against an SDK 2.4.0 agent: the same calls, schema-checked by it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "common.h"

typedef struct fixture {
    char dir[64];
    char cmd[768];
    json_t *statuses; /* every auth/status_update's params */
} fixture;

static void on_status(acp_client *c, json_t *params, void *user)
{
    fixture *f = user;
    json_array_append(f->statuses, params);
}

static acp_client *open_agent(fixture *f, const char *args)
{
    snprintf(f->cmd, sizeof f->cmd, "'%s/acp-agent' --store '%s/s.db' %s", getenv("ACP_BUILD"),
             f->dir, args);
    acp_client_opts o = ACP_CLIENT_OPTS_INIT;
    o.command = f->cmd;
    o.on_auth_status = on_status;
    o.user = f;
    acp_client *c = NULL;
    if (acp_client_open(&o, &c)) fail_msg("open: %s", acp_error_last()->message);
    return c;
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    strcpy(f->dir, "/tmp/acp-client-prov-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    f->statuses = json_array();
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    assert_int_equal(system(cmd), 0);
    json_decref(f->statuses);
    free(f);
    return 0;
}

static const char *str(json_t *o, const char *path)
{
    json_t *v = o;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *save = NULL, *k = strtok_r(buf, ".", &save); k; k = strtok_r(NULL, ".", &save))
        v = json_object_get(v, k);
    return json_string_value(v);
}

/* The one provider's entry of a providers/list. */
static json_t *listed(acp_client *c)
{
    json_t *res = NULL;
    assert_int_equal(acp_client_providers_list(c, &res), 0);
    json_t *p = json_array_get(json_object_get(res, "providers"), 0);
    assert_int_equal(json_array_size(json_object_get(res, "providers")), 1);
    json_incref(p);
    json_decref(res);
    return p;
}

/* Runs the loop until n status updates arrived (the notification follows the response). */
static void wait_statuses(acp_client *c, fixture *f, size_t n)
{
    while (json_array_size(f->statuses) < n) assert_int_equal(acp_client_run_once(c), 0);
}

static void test_openai_provider(void **state)
{
    fixture *f = *state;
    acp_client *c = open_agent(f, "--engine openai --base-url http://127.0.0.1:9/v1/");
    assert_true(acp_client_supports(c, ACP_CAP_PROVIDERS));
    assert_true(acp_client_supports(c, ACP_CAP_AUTH_STATUS));

    json_t *p = listed(c);
    assert_string_equal(str(p, "providerId"), "openai");
    assert_string_equal(json_string_value(json_array_get(json_object_get(p, "supported"), 0)),
                        "openai");
    assert_false(json_is_true(json_object_get(p, "required")));
    assert_string_equal(str(p, "current.apiType"), "openai");
    assert_string_equal(str(p, "current.baseUrl"), "http://127.0.0.1:9/v1");
    json_decref(p);

    json_t *st = NULL;
    assert_int_equal(acp_client_auth_status(c, &st), 0);
    assert_string_equal(str(st, "state"), "not_required"); /* loopback, no key */
    json_decref(st);

    /* A key handed over in a header: signed in, told by auth/status_update. */
    const char *secret = "Authorization: Bearer sk-prov-test-0d4e";
    const char *hdrs[] = {secret, "X-Gateway: team-a", NULL};
    assert_int_equal(acp_client_provider_set(c, "openai", NULL, "https://gw.example/v1", hdrs), 0);
    wait_statuses(c, f, 1);
    json_t *u = json_array_get(f->statuses, 0);
    assert_string_equal(str(u, "state"), "authenticated");
    p = listed(c);
    assert_string_equal(str(p, "current.baseUrl"), "https://gw.example/v1");
    char *dump = json_dumps(p, 0);
    assert_null(strstr(dump, "sk-prov-test")); /* never listed */
    assert_null(strstr(dump, "team-a"));
    free(dump);
    json_decref(p);

    /* Refused: an unknown provider, a protocol it does not speak, a header with a line break;
     * and nothing changed. */
    assert_int_equal(acp_client_provider_set(c, "main", NULL, "http://x/v1", NULL), ACP_EPROTO);
    assert_int_equal(acp_client_errcode(c), -32602);
    assert_int_equal(acp_client_provider_set(c, "openai", "anthropic", "http://x/v1", NULL),
                     ACP_EPROTO);
    assert_int_equal(acp_client_errcode(c), -32602);
    const char *bad[] = {"X-Evil: a\r\nHost: b", NULL};
    assert_int_equal(acp_client_provider_set(c, "openai", NULL, "http://x/v1", bad), ACP_EPROTO);
    assert_int_equal(acp_client_errcode(c), -32602);
    assert_null(strstr(acp_error_last()->message, "Host: b")); /* a value is never quoted */
    const char *noname[] = {": v", NULL};
    assert_int_equal(acp_client_provider_set(c, "openai", NULL, "http://x/v1", noname), ACP_EINVAL);
    p = listed(c);
    assert_string_equal(str(p, "current.baseUrl"), "https://gw.example/v1");
    json_decref(p);

    /* Disabled: still listed, current null; the key is gone, so the state is unknown. */
    assert_int_equal(acp_client_provider_disable(c, "openai"), 0);
    assert_int_equal(acp_client_provider_disable(c, "no-such"), 0); /* the RFD: idempotent */
    wait_statuses(c, f, 2);
    assert_string_equal(str(json_array_get(f->statuses, 1), "state"), "unknown");
    p = listed(c);
    assert_true(json_is_null(json_object_get(p, "current")));
    json_decref(p);

    /* Back to a loopback server without a key: not required; no update repeats a state. */
    assert_int_equal(acp_client_provider_set(c, "openai", "openai", "http://127.0.0.1:9/v1", NULL),
                     0);
    wait_statuses(c, f, 3);
    assert_string_equal(str(json_array_get(f->statuses, 2), "state"), "not_required");
    assert_int_equal(acp_client_provider_set(c, "openai", "openai", "http://127.0.0.1:8/v1", NULL),
                     0);
    assert_int_equal(acp_client_auth_status(c, &st), 0); /* a round trip after the set */
    json_decref(st);
    assert_int_equal(json_array_size(f->statuses), 3);
    acp_client_free(c);
}

static void test_echo_auth_status(void **state)
{
    fixture *f = *state;
    setenv("ACP_TEST_PROV_TOKEN", "yes", 1);
    acp_client *c = open_agent(f, "--auth env:ACP_TEST_PROV_TOKEN");
    assert_false(acp_client_supports(c, ACP_CAP_PROVIDERS)); /* echo lists no provider */
    json_t *res = NULL;
    assert_int_equal(acp_client_providers_list(c, &res), ACP_ENOTSUP);
    json_t *st = NULL;
    /* auth/status is never gated on the sign-in it reports. */
    assert_int_equal(acp_client_auth_status(c, &st), 0);
    assert_string_equal(str(st, "state"), "unauthenticated");
    json_decref(st);
    assert_int_equal(acp_client_authenticate(c, "echo-token"), 0);
    wait_statuses(c, f, 1);
    json_t *u = json_array_get(f->statuses, 0);
    assert_string_equal(str(u, "state"), "authenticated");
    assert_string_equal(str(json_array_get(json_object_get(u, "accounts"), 0), "label"),
                        "Echo token");
    assert_int_equal(acp_client_logout(c), 0);
    wait_statuses(c, f, 2);
    assert_string_equal(str(json_array_get(f->statuses, 1), "state"), "unauthenticated");
    acp_client_free(c);
    unsetenv("ACP_TEST_PROV_TOKEN");
}

static void test_switched_off(void **state)
{
    fixture *f = *state;
    acp_client *c = open_agent(f, "--engine openai --base-url http://127.0.0.1:9/v1 "
                                  "--unstable-off providers,auth-status");
    assert_false(acp_client_supports(c, ACP_CAP_PROVIDERS));
    assert_false(acp_client_supports(c, ACP_CAP_AUTH_STATUS));
    json_t *res = NULL;
    assert_int_equal(acp_client_providers_list(c, &res), ACP_ENOTSUP);
    assert_int_equal(acp_client_provider_set(c, "openai", NULL, "http://x/v1", NULL), ACP_ENOTSUP);
    assert_int_equal(acp_client_provider_disable(c, "openai"), ACP_ENOTSUP);
    assert_int_equal(acp_client_auth_status(c, &res), ACP_ENOTSUP);
    /* The agent answers them as unknown methods. */
    assert_int_equal(acp_client_call(c, "providers/list", NULL, &res), ACP_EPROTO);
    assert_int_equal(acp_client_errcode(c), -32601);
    assert_int_equal(acp_client_call(c, "auth/status", NULL, &res), ACP_EPROTO);
    assert_int_equal(acp_client_errcode(c), -32601);
    acp_client_free(c);
}

/* The other direction: libacp's client against an agent of the official SDK 2.4.0
 * (ts-agent-providers.mjs, which checks each request against schema.unstable.json and records
 * the verdict in $ACP_RECORD). */
static void test_sdk_agent(void **state)
{
    fixture *f = *state;
    char record[128];
    snprintf(record, sizeof record, "%s/record.jsonl", f->dir);
    setenv("ACP_RECORD", record, 1);
    acp_client_opts o = ACP_CLIENT_OPTS_INIT;
    o.argv = node_agent("ts-agent-providers.mjs");
    o.on_auth_status = on_status;
    o.user = f;
    acp_client *c = NULL;
    if (acp_client_open(&o, &c)) fail_msg("open: %s", acp_error_last()->message);
    assert_true(acp_client_supports(c, ACP_CAP_PROVIDERS));
    assert_true(acp_client_supports(c, ACP_CAP_AUTH_STATUS));
    json_t *res = NULL;
    assert_int_equal(acp_client_providers_list(c, &res), 0);
    json_t *main_p = json_array_get(json_object_get(res, "providers"), 0);
    assert_string_equal(str(main_p, "providerId"), "main");
    assert_true(json_is_true(json_object_get(main_p, "required")));
    json_decref(res);
    assert_int_equal(acp_client_auth_status(c, &res), 0);
    assert_string_equal(str(res, "state"), "unauthenticated");
    json_decref(res);
    const char *hdrs[] = {"Authorization: Bearer sk-sdk", NULL};
    assert_int_equal(acp_client_provider_set(c, "main", "bedrock", "https://br.example", hdrs), 0);
    wait_statuses(c, f, 1);
    assert_string_equal(str(json_array_get(f->statuses, 0), "state"), "authenticated");
    assert_int_equal(acp_client_provider_disable(c, "main"), ACP_EPROTO); /* required */
    assert_int_equal(acp_client_errcode(c), -32602);
    assert_int_equal(acp_client_provider_disable(c, "openai"), 0);
    acp_client_free(c);
    unsetenv("ACP_RECORD");

    /* Every request was the schema's (bad: null) and carried what was asked. */
    FILE *in = fopen(record, "r");
    assert_non_null(in);
    char line[4096];
    int sets = 0;
    while (fgets(line, sizeof line, in)) {
        json_t *e = json_loads(line, 0, NULL);
        assert_non_null(e);
        if (!json_is_null(json_object_get(e, "bad")))
            fail_msg("%s off the schema: %s", str(e, "method"), str(e, "bad"));
        if (!strcmp(str(e, "method"), "providers/set")) {
            sets++;
            json_t *p = json_object_get(e, "params");
            assert_string_equal(str(p, "apiType"), "bedrock");
            assert_string_equal(str(p, "baseUrl"), "https://br.example");
            assert_string_equal(str(p, "headers.Authorization"), "Bearer sk-sdk");
        }
        json_decref(e);
    }
    fclose(in);
    assert_int_equal(sets, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_openai_provider, setup, teardown),
        cmocka_unit_test_setup_teardown(test_echo_auth_status, setup, teardown),
        cmocka_unit_test_setup_teardown(test_switched_off, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sdk_agent, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
