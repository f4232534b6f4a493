/* SPDX-License-Identifier: Apache-2.0 */
/* Every call of the client and every handler it offers, against an agent written with the
 * official TypeScript SDK (ts-agent-calls.mjs) that logs what it received as the SDK parsed it:
 * initialize with every capability, clientInfo and _meta; authenticate and logout (and their
 * local refusals); the session calls in their asynchronous forms; modes and config options,
 * kept current from the agent's own updates; error.data in the message; elicitation (form,
 * url, complete, request-scoped, refused modes, cancelled by a session cancel); on_ask for
 * writes and commands (allowed, denied, answered later, refused before asking); extension
 * methods and notifications both ways; $/cancel_request by op_cancel and by a deadline. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "acp/version.h"
#include "common.h"

/* How the test's handlers answer. */
enum { ASK_ALLOW, ASK_DENY, ASK_HOLD };

typedef struct fixture {
    char root[64], outside[64];
    acp_client *c;
    acp_client_session *s;
    acp_buf text;  /* agent_message_chunk texts of the current prompt */
    int updates;   /* session/update notifications */
    int replayed;  /* ...flagged replay */
    int mode_ups;  /* current_mode_update */
    int conf_ups;  /* config_option_update */
    json_t *notes; /* extension notifications: [{method, params}] */
    /* on_elicit */
    int elicits;
    acp_client_session *elicit_s;
    json_t *elicit_params;
    acp_client_elicit *held_e;
    int64_t elicit_op;      /* acp_client_op_id of a request-scoped one's call, else -1 */
    int withdrawn;          /* on_withdrawn calls */
    bool free_in_withdrawn; /* on_withdrawn replies to (frees) held_e */
    int completes;
    char complete_id[64];
    /* on_ask */
    int ask_mode, asks;
    char ask_method[64];
    json_t *ask_params;
    acp_client_ask *held_a;
    /* on_ext_request */
    acp_req *held_req;
    /* on_log */
    int logs;
    char last_log[1024];
} fixture;

/* --- handlers ------------------------------------------------------------------------------ */

static void on_update(acp_client *c, acp_client_session *s, const acp_update *u, void *user)
{
    fixture *f = user;
    f->updates++;
    f->replayed += u->replay;
    f->mode_ups += u->kind == ACP_UPDATE_CURRENT_MODE;
    f->conf_ups += u->kind == ACP_UPDATE_CONFIG_OPTION;
    if (u->kind != ACP_UPDATE_AGENT_MESSAGE_CHUNK) return;
    json_t *j = json_loadb(u->update.p, u->update.n, 0, NULL);
    json_t *t = json_object_get(json_object_get(j, "content"), "text");
    if (json_is_string(t)) acp_buf_append(&f->text, json_string_value(t), json_string_length(t));
    json_decref(j);
}

/* The elicitation's message says what to answer: "accept", "decline", "cancel", "hold" (keep
 * it for the test to answer), or "Your API key?" (authenticate's: accept with the key). */
static void on_elicit(acp_client *c, acp_client_session *s, acp_client_elicit *e, json_t *params,
                      void *user)
{
    fixture *f = user;
    f->elicits++;
    f->elicit_s = s;
    json_decref(f->elicit_params);
    f->elicit_params = json_deep_copy(params);
    f->elicit_op = acp_client_elicit_op(e) ? acp_client_op_id(acp_client_elicit_op(e)) : -1;
    assert_false(acp_client_elicit_cancelled(e));
    const char *msg = json_string_value(json_object_get(params, "message"));
    const char *mode = json_string_value(json_object_get(params, "mode"));
    if (!strcmp(msg, "hold"))
        f->held_e = e;
    else if (!strcmp(msg, "accept") && !strcmp(mode, "form"))
        acp_client_elicit_reply(e, "accept", json_pack("{s:s, s:i}", "name", "Ada", "age", 36));
    else if (!strcmp(msg, "Your API key?"))
        acp_client_elicit_reply(e, "accept", json_pack("{s:s}", "key", "sekrit"));
    else
        acp_client_elicit_reply(e, msg, NULL);
}

static void on_withdrawn(acp_client *c, acp_client_session *s, const void *handle, void *user)
{
    fixture *f = user;
    f->withdrawn++;
    if (handle != f->held_e) return;
    assert_true(acp_client_elicit_cancelled(f->held_e));
    if (f->free_in_withdrawn) { /* the dialog closes and frees its handle right here */
        acp_client_elicit_reply(f->held_e, "cancel", NULL);
        f->held_e = NULL;
    }
}

static void on_elicit_complete(acp_client *c, const char *id, json_t *params, void *user)
{
    fixture *f = user;
    f->completes++;
    snprintf(f->complete_id, sizeof f->complete_id, "%s", id);
}

static void on_ask(acp_client *c, acp_client_session *s, acp_client_ask *a, const char *method,
                   json_t *params, void *user)
{
    fixture *f = user;
    assert_ptr_equal(s, f->s);
    f->asks++;
    snprintf(f->ask_method, sizeof f->ask_method, "%s", method);
    json_decref(f->ask_params);
    f->ask_params = json_deep_copy(params);
    if (f->ask_mode == ASK_HOLD)
        f->held_a = a;
    else
        acp_client_ask_reply(a, f->ask_mode == ASK_ALLOW);
}

static void on_ext_request(acp_client *c, acp_req *req, void *user)
{
    fixture *f = user;
    const char *m = acp_req_method(req);
    if (!strcmp(m, "_vendor/ask"))
        acp_req_reply(req, json_pack("{s:O}", "got", acp_req_params(req)));
    else if (!strcmp(m, "_vendor/fail"))
        acp_req_error(req, -32042, json_pack("{s:s}", "why", "testing"), "nope: %s", "refused");
    else /* _vendor/later: the test answers it */
        f->held_req = req;
}

static void on_ext_notify(acp_client *c, const char *method, json_t *params, void *user)
{
    fixture *f = user;
    json_array_append_new(f->notes, json_pack("{s:s, s:O}", "method", method, "params", params));
}

static void on_log(acp_client *c, const char *message, void *user)
{
    fixture *f = user;
    f->logs++;
    snprintf(f->last_log, sizeof f->last_log, "%s", message);
}

/* --- the fixture ---------------------------------------------------------------------------- */

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    strcpy(f->root, "/tmp/acp-calls-root-XXXXXX");
    strcpy(f->outside, "/tmp/acp-calls-out-XXXXXX");
    assert_non_null(mkdtemp(f->root));
    assert_non_null(mkdtemp(f->outside));
    f->notes = json_array();
    unsetenv("ACP_CALLS_BARE");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    acp_client_free(f->c);
    acp_buf_free(&f->text);
    json_decref(f->notes);
    json_decref(f->elicit_params);
    json_decref(f->ask_params);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", f->root, f->outside);
    assert_int_equal(system(cmd), 0);
    free(f);
    return 0;
}

/* Options with every handler of the fixture and nothing advertised. */
static acp_client_opts base_opts(fixture *f)
{
    return (acp_client_opts){.struct_size = sizeof(acp_client_opts),
                             .argv = node_agent("ts-agent-calls.mjs"),
                             .on_update = on_update,
                             .on_ext_request = on_ext_request,
                             .on_ext_notify = on_ext_notify,
                             .on_log = on_log,
                             .user = f};
}

static void open_client(fixture *f, const acp_client_opts *o)
{
    int rc = acp_client_open(o, &f->c);
    if (rc) fail_msg("open: %s", acp_error_last()->message);
}

static void open_session(fixture *f)
{
    acp_session_opts so = {.struct_size = sizeof(acp_session_opts), .cwd = f->root};
    assert_int_equal(acp_client_session_new(f->c, &so, &f->s), 0);
}

/* The end of an asynchronous call, copied out of the reply. */
typedef struct done {
    bool done;
    int status, code;
    json_t *result, *data;
    acp_client_session *session;
    const char *stop;
    char errmsg[1024];
    int updates; /* f->updates when the callback ran */
    fixture *f;
} done;

static void on_done(acp_client *c, const acp_client_reply *r, void *user)
{
    done *d = user;
    assert_false(d->done); /* exactly once */
    d->done = true;
    d->status = r->status;
    d->code = r->code;
    d->result = json_incref(r->result);
    d->data = json_incref(r->data);
    d->session = r->session;
    d->stop = r->stop;
    snprintf(d->errmsg, sizeof d->errmsg, "%s", r->errmsg);
    assert_true(r->status ? r->errmsg[0] != 0 : r->errmsg[0] == 0);
    if (d->f) d->updates = d->f->updates;
}

static void done_clear(done *d)
{
    json_decref(d->result);
    json_decref(d->data);
    *d = (done){.f = d->f};
}

static void spin(fixture *f, const bool *flag)
{
    while (!*flag) assert_int_equal(acp_client_run_once(f->c), 0);
}

/* Waits for the call of d, which must succeed, and clears d for the next one. */
static void finish_ok(fixture *f, done *d)
{
    spin(f, &d->done);
    if (d->status) fail_msg("%s", d->errmsg);
    done_clear(d);
}

static void spin_count(fixture *f, const int *n, int want)
{
    while (*n < want) assert_int_equal(acp_client_run_once(f->c), 0);
}

/* The agent's log of what it received (caller owns). */
static json_t *agent_log(fixture *f)
{
    json_t *r = NULL;
    assert_int_equal(acp_client_call(f->c, "_test/log", NULL, &r), 0);
    json_t *log = json_incref(json_object_get(r, "log"));
    json_decref(r);
    assert_true(json_is_array(log));
    return log;
}

/* The params of the last logged message of method (borrowed from log), or NULL. */
static json_t *last_of(json_t *log, const char *method)
{
    json_t *hit = NULL;
    size_t i;
    json_t *e;
    json_array_foreach(log, i, e)
    {
        if (!strcmp(json_string_value(json_object_get(e, "method")), method))
            hit = json_object_get(e, "params");
    }
    return hit;
}

static int count_of(json_t *log, const char *method)
{
    int n = 0;
    size_t i;
    json_t *e;
    json_array_foreach(log, i, e) n +=
        !strcmp(json_string_value(json_object_get(e, "method")), method);
    return n;
}

/* a deep-equals the JSON text b; says both on failure. */
static void assert_json(json_t *a, const char *b)
{
    json_error_t err;
    json_t *want = json_loads(b, JSON_DECODE_ANY, &err);
    if (!want) fail_msg("bad expected JSON '%s': %s", b, err.text);
    if (!json_equal(a, want)) {
        char *got = json_dumps(a, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
        fail_msg("got %s\nwant %s", got ? got : "NULL", b);
    }
    json_decref(want);
}

static void assert_has(const char *hay, const char *needle)
{
    if (!strstr(hay, needle)) fail_msg("'%s' lacks '%s'", hay, needle);
}

/* --- prompts of actions ----------------------------------------------------------------------- */

static void prompt_begin(fixture *f, const char *actions, done *d)
{
    f->text.len = 0;
    json_t *blocks = json_pack("[{s:s, s:s}]", "type", "text", "text", actions);
    assert_int_equal(acp_client_session_prompt_start(f->s, blocks, on_done, d, NULL), 0);
    json_decref(blocks);
}

/* Waits for the prompt of d and returns the agent's array of outcomes (caller owns). */
static json_t *prompt_end(fixture *f, done *d, const char *stop)
{
    spin(f, &d->done);
    if (d->status) fail_msg("prompt: %s", d->errmsg);
    assert_string_equal(d->stop, stop);
    done_clear(d);
    json_t *out = json_loadb(f->text.data, f->text.len, 0, NULL);
    assert_non_null(out);
    return out;
}

static json_t *prompt(fixture *f, const char *actions, const char *stop)
{
    done d = {.f = f};
    prompt_begin(f, actions, &d);
    return prompt_end(f, &d, stop);
}

static json_t *ok_result(json_t *out, size_t i)
{
    json_t *o = json_array_get(out, i);
    if (!json_is_true(json_object_get(o, "ok")))
        fail_msg("action %zu failed: %s", i, json_string_value(json_object_get(o, "message")));
    return json_object_get(o, "result");
}

/* Action i failed with code; returns its message. */
static const char *failed(json_t *out, size_t i, int code)
{
    json_t *o = json_array_get(out, i);
    if (json_is_true(json_object_get(o, "ok"))) fail_msg("action %zu succeeded", i);
    assert_int_equal(json_integer_value(json_object_get(o, "code")), code);
    return json_string_value(json_object_get(o, "message"));
}

static bool exists(const char *dir, const char *name)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return access(p, F_OK) == 0;
}

static void assert_file(const char *dir, const char *name, const char *text)
{
    char p[256], buf[256] = {0};
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *fp = fopen(p, "r");
    if (!fp) fail_msg("%s was not written", p);
    size_t n = fread(buf, 1, sizeof buf - 1, fp);
    fclose(fp);
    buf[n] = 0;
    assert_string_equal(buf, text);
}

/* --- initialize -------------------------------------------------------------------------- */

/* Every capability, clientInfo and both _meta objects arrive exactly as set. */
static void test_initialize_everything(void **state)
{
    fixture *f = *state;
    json_t *cmeta = json_pack("{s:{s:i}}", "vendor.example/x", "level", 2);
    json_t *imeta = json_pack("{s:s, s:[i]}", "traceparent", "00-abc-01", "list", 1);
    acp_client_opts o = base_opts(f);
    o.client_name = "editor";
    o.client_title = "The Editor";
    o.client_version = "3.1.4";
    o.fs_read = o.fs_write = o.terminal = true;
    o.notices = o.compaction = o.config_boolean = true;
    o.elicitation_form = o.elicitation_url = true;
    o.on_elicit = on_elicit;
    o.auth_terminal = true;
    o.capabilities_meta = cmeta;
    o.init_meta = imeta;
    open_client(f, &o);
    json_decref(cmeta); /* borrowed: copied at initialize */
    json_decref(imeta);

    json_t *log = agent_log(f);
    json_t *p = last_of(log, "initialize");
    assert_int_equal(json_integer_value(json_object_get(p, "protocolVersion")), 1);
    assert_json(json_object_get(p, "clientInfo"),
                "{\"name\":\"editor\",\"title\":\"The Editor\",\"version\":\"3.1.4\"}");
    assert_json(json_object_get(p, "clientCapabilities"),
                "{\"fs\":{\"readTextFile\":true,\"writeTextFile\":true},\"terminal\":true,"
                "\"session\":{\"notices\":{},\"compaction\":{},\"configOptions\":{\"boolean\":{}}},"
                "\"elicitation\":{\"form\":{},\"url\":{}},\"auth\":{\"terminal\":true},"
                "\"_meta\":{\"vendor.example/x\":{\"level\":2}}}");
    assert_json(json_object_get(p, "_meta"), "{\"traceparent\":\"00-abc-01\",\"list\":[1]}");
    json_decref(log);

    /* What the agent answered. */
    json_t *init = acp_client_init_result(f->c);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(init, "agentInfo"), "name")),
        "ts-agent-calls");
    acp_agent_cap on[] = {ACP_CAP_LOAD_SESSION, ACP_CAP_RESUME, ACP_CAP_CLOSE,
                          ACP_CAP_LIST,         ACP_CAP_DELETE, ACP_CAP_LOGOUT};
    for (size_t i = 0; i < sizeof on / sizeof on[0]; i++)
        assert_true(acp_client_supports(f->c, on[i]));
    assert_false(acp_client_supports(f->c, ACP_CAP_ADDITIONAL_DIRS));
    assert_false(acp_client_supports(f->c, ACP_CAP_MCP_HTTP));
    assert_false(acp_client_supports(f->c, ACP_CAP_PROMPT_IMAGE));
}

/* Nothing enabled: the defaults, and no optional capability objects at all. Elicitation modes
 * without on_elicit are not advertised (nobody would answer). */
static void test_initialize_defaults(void **state)
{
    fixture *f = *state;
    acp_client_opts o = base_opts(f);
    o.elicitation_form = o.elicitation_url = true; /* but no on_elicit */
    open_client(f, &o);
    json_t *log = agent_log(f);
    json_t *p = last_of(log, "initialize");
    assert_json(json_object_get(p, "clientInfo"),
                "{\"name\":\"libacp\",\"version\":\"" ACP_VERSION_STRING "\"}");
    /* (auth.terminal false is the SDK's schema default: we sent no auth object) */
    assert_json(json_object_get(p, "clientCapabilities"),
                "{\"fs\":{\"readTextFile\":false,\"writeTextFile\":false},\"terminal\":false,"
                "\"auth\":{\"terminal\":false}}");
    assert_null(json_object_get(p, "_meta"));
    json_decref(log);
}

/* --- authenticate and logout ---------------------------------------------------------------- */

static void test_auth(void **state)
{
    fixture *f = *state;
    acp_client_opts o = base_opts(f);
    open_client(f, &o);
    acp_client *c = f->c;

    json_t *m = acp_client_auth_methods(c);
    assert_int_equal(json_array_size(m), 4);
    assert_string_equal(json_string_value(json_object_get(json_array_get(m, 0), "id")), "key");
    assert_string_equal(json_string_value(json_object_get(json_array_get(m, 3), "type")),
                        "terminal");

    acp_error_clear();
    assert_int_equal(acp_client_authenticate(c, "key"), 0);
    assert_string_equal(acp_error_last()->message, ""); /* a success says nothing */

    /* Refused: the code, the agent's message and error.data's details, sync and async. */
    assert_int_equal(acp_client_authenticate(c, "refuse"), ACP_EPROTO);
    assert_int_equal(acp_client_errcode(c), -32000);
    assert_has(acp_error_last()->message, "agent error -32000 on authenticate");
    assert_has(acp_error_last()->message, "(the key was refused)");
    done d = {0};
    acp_client_op *op = NULL;
    assert_int_equal(acp_client_authenticate_start(c, "refuse", on_done, &d, &op), 0);
    assert_non_null(op);
    spin(f, &d.done);
    assert_int_equal(d.status, ACP_EPROTO);
    assert_int_equal(d.code, -32000);
    assert_json(d.data, "{\"details\":\"the key was refused\"}");
    assert_null(d.result);
    done_clear(&d);

    /* A terminal method is the client's to run: refused here, never sent. */
    assert_int_equal(acp_client_authenticate_start(c, "tui", on_done, &d, &op), ACP_EINVAL);
    assert_null(op);
    assert_has(acp_error_last()->message, "terminal");
    assert_int_equal(acp_client_authenticate(c, ""), ACP_EINVAL);
    assert_int_equal(acp_client_authenticate(c, NULL), ACP_EINVAL);

    assert_int_equal(acp_client_logout_start(c, on_done, &d, NULL), 0);
    finish_ok(f, &d);

    json_t *log = agent_log(f);
    assert_int_equal(count_of(log, "authenticate"), 3); /* key, refuse, refuse: no tui */
    assert_json(last_of(log, "authenticate"), "{\"methodId\":\"refuse\"}");
    assert_int_equal(count_of(log, "logout"), 1);
    assert_json(last_of(log, "logout"), "{}");
    json_decref(log);
}

/* An agent without auth.logout, auth methods, modes or config options. */
static void test_bare_agent(void **state)
{
    fixture *f = *state;
    setenv("ACP_CALLS_BARE", "1", 1);
    acp_client_opts o = base_opts(f);
    o.on_ext_request = NULL; /* `_` requests of the agent's: -32601 */
    o.config_boolean = true;
    open_client(f, &o);
    acp_client *c = f->c;
    assert_int_equal(json_array_size(acp_client_auth_methods(c)), 0);
    assert_true(json_is_array(acp_client_auth_methods(c)));
    assert_int_equal(acp_client_logout(c), ACP_ENOTSUP);
    assert_has(acp_error_last()->message, "auth.logout");
    acp_client_op *op = (acp_client_op *)1;
    assert_int_equal(acp_client_logout_start(c, on_done, NULL, &op), ACP_ENOTSUP);
    assert_null(op);
    open_session(f);
    assert_null(acp_client_session_modes(f->s));
    assert_null(acp_client_session_mode(f->s));
    assert_null(acp_client_session_config_options(f->s));
    assert_int_equal(acp_client_session_set_mode(f->s, "code"), ACP_ENOTSUP);
    assert_int_equal(acp_client_session_set_config_bool(f->s, "fast", true), ACP_ENOTSUP);

    json_t *out = prompt(f, "[{\"method\":\"_vendor/ask\",\"bare\":true}]", "end_turn");
    failed(out, 0, -32601);
    json_decref(out);
    assert_has(f->last_log, "_vendor/ask");

    json_t *log = agent_log(f);
    assert_int_equal(count_of(log, "logout"), 0);
    assert_int_equal(count_of(log, "session/set_mode"), 0);
    assert_int_equal(count_of(log, "session/set_config_option"), 0);
    json_decref(log);
}

/* --- sessions ---------------------------------------------------------------------------- */

static void new_async(fixture *f, const acp_session_opts *so, done *d)
{
    acp_client_op *op = NULL;
    assert_int_equal(acp_client_session_new_start(f->c, so, on_done, d, &op), 0);
    assert_non_null(op);
}

static acp_client_session *got_session(fixture *f, done *d)
{
    spin(f, &d->done);
    if (d->status) fail_msg("%s", d->errmsg);
    assert_non_null(d->session);
    acp_client_session *s = d->session;
    done_clear(d);
    return s;
}

static void test_sessions(void **state)
{
    fixture *f = *state;
    acp_client_opts o = base_opts(f);
    open_client(f, &o);
    acp_client *c = f->c;

    /* Three news in flight at once; _meta goes with the first. */
    json_t *meta = json_pack("{s:s}", "origin", "test");
    acp_session_opts so = {.struct_size = sizeof(acp_session_opts), .cwd = f->root, .meta = meta};
    acp_session_opts other = {.struct_size = sizeof(acp_session_opts), .cwd = f->outside};
    done d0 = {.f = f}, d1 = {.f = f}, d2 = {.f = f};
    new_async(f, &so, &d0);
    new_async(f, &other, &d1);
    new_async(f, &other, &d2);
    json_decref(meta);
    acp_client_session *s0 = got_session(f, &d0);
    acp_client_session *s1 = got_session(f, &d1);
    acp_client_session *s2 = got_session(f, &d2);
    char id0[32], id1[32], id2[32];
    snprintf(id0, sizeof id0, "%s", acp_client_session_id(s0));
    snprintf(id1, sizeof id1, "%s", acp_client_session_id(s1));
    snprintf(id2, sizeof id2, "%s", acp_client_session_id(s2));
    assert_string_equal(id0, "s0");
    assert_ptr_equal(acp_client_session_client(s0), c);
    assert_string_equal(acp_client_session_mode(s0), "ask");
    assert_int_equal(json_array_size(acp_client_session_config_options(s0)), 2);
    assert_string_equal(
        json_string_value(json_object_get(acp_client_session_result(s0), "sessionId")), "s0");
    json_t *log = agent_log(f);
    json_t *p = last_of(log, "session/new");
    assert_string_equal(json_string_value(json_object_get(p, "cwd")), f->outside);
    p = json_array_get(log, 1); /* the first session/new, right after initialize */
    assert_json(json_object_get(json_object_get(p, "params"), "_meta"), "{\"origin\":\"test\"}");
    assert_string_equal(json_string_value(json_object_get(json_object_get(p, "params"), "cwd")),
                        f->root);
    json_decref(log);

    /* session/list: filtered by cwd, two per page. */
    done d = {.f = f};
    assert_int_equal(acp_client_list_start(c, f->outside, NULL, on_done, &d, NULL), 0);
    spin(f, &d.done);
    assert_int_equal(d.status, 0);
    assert_int_equal(json_array_size(json_object_get(d.result, "sessions")), 2);
    assert_null(json_object_get(d.result, "nextCursor"));
    done_clear(&d);
    assert_int_equal(acp_client_list_start(c, NULL, NULL, on_done, &d, NULL), 0);
    spin(f, &d.done);
    assert_string_equal(json_string_value(json_object_get(d.result, "nextCursor")), "2");
    done_clear(&d);
    assert_int_equal(acp_client_list_start(c, NULL, "2", on_done, &d, NULL), 0);
    spin(f, &d.done);
    assert_int_equal(json_array_size(json_object_get(d.result, "sessions")), 1);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(d.result, "sessions"), 0), "sessionId")),
                        id2);
    done_clear(&d);

    /* close: the handle goes before the callback runs. */
    assert_int_equal(acp_client_session_close_start(s1, on_done, &d, NULL), 0);
    spin(f, &d.done);
    assert_int_equal(d.status, 0);
    assert_null(d.session);
    done_clear(&d);

    /* load: the replay reaches on_update, flagged, before the callback. */
    int before = f->updates;
    assert_int_equal(acp_client_session_load_start(c, id1, &other, on_done, &d, NULL), 0);
    acp_client_session *again = NULL;
    assert_int_equal(acp_client_session_load(c, id1, &other, &again), ACP_EBUSY); /* open */
    s1 = got_session(f, &d);
    assert_int_equal(f->replayed, 1);
    assert_int_equal(f->updates, before + 1);
    assert_string_equal(acp_client_session_id(s1), id1);
    assert_string_equal(acp_client_session_mode(s1), "ask");

    /* A refused load leaves no handle: the same id can be tried again. */
    for (int i = 0; i < 2; i++) {
        assert_int_equal(acp_client_session_load_start(c, "nope", &other, on_done, &d, NULL), 0);
        spin(f, &d.done);
        assert_int_equal(d.status, ACP_EPROTO);
        assert_int_equal(d.code, -32002);
        assert_null(d.session);
        done_clear(&d);
    }

    /* resume, after forgetting the handle locally (nothing sent). */
    acp_client_session_free(s2);
    assert_int_equal(acp_client_session_resume_start(c, id2, &other, on_done, &d, NULL), 0);
    s2 = got_session(f, &d);
    assert_string_equal(acp_client_session_id(s2), id2);
    assert_int_equal(json_array_size(acp_client_session_config_options(s2)), 2);

    /* close by id, for a session without a handle here; delete frees the handle. */
    assert_int_equal(acp_client_close_id_start(c, id2, on_done, &d, NULL), 0);
    finish_ok(f, &d);
    assert_int_equal(acp_client_delete_start(c, id0, on_done, &d, NULL), 0);
    finish_ok(f, &d);
    /* s0 is gone: loading its id is not "already open", the agent refuses it (deleted). */
    assert_int_equal(acp_client_session_load(c, id0, &so, &again), ACP_EPROTO);
    assert_int_equal(acp_client_errcode(c), -32002);
    assert_int_equal(acp_client_delete(c, "nope"), ACP_EPROTO);

    /* Empty ids are refused here. */
    assert_int_equal(acp_client_session_load_start(c, "", &so, on_done, &d, NULL), ACP_EINVAL);
    assert_int_equal(acp_client_session_resume_start(c, "", &so, on_done, &d, NULL), ACP_EINVAL);
    assert_int_equal(acp_client_delete_start(c, "", on_done, &d, NULL), ACP_EINVAL);
    assert_int_equal(acp_client_close_id_start(c, "", on_done, &d, NULL), ACP_EINVAL);
    /* Boolean values need the capability: nothing is sent without it. */
    assert_int_equal(acp_client_session_set_config_bool(s1, "fast", true), ACP_EINVAL);
    assert_false(d.done);

    log = agent_log(f);
    assert_json(last_of(log, "session/close"), "{\"sessionId\":\"s2\"}");
    assert_int_equal(count_of(log, "session/close"), 2);
    assert_json(last_of(log, "session/delete"), "{\"sessionId\":\"nope\"}");
    assert_int_equal(count_of(log, "session/load"), 4); /* id1, nope, nope, id0 */
    assert_int_equal(count_of(log, "session/resume"), 1);
    assert_int_equal(count_of(log, "session/set_config_option"), 0);
    assert_string_equal(json_string_value(json_object_get(last_of(log, "session/resume"), "cwd")),
                        f->outside);
    assert_json(json_object_get(last_of(log, "session/list"), "cursor"), "\"2\"");
    json_decref(log);
}

/* --- modes and config options ------------------------------------------------------------ */

static const char *config_value(acp_client_session *s, const char *id, char *buf)
{
    size_t i;
    json_t *o;
    json_array_foreach(acp_client_session_config_options(s), i, o)
    {
        if (strcmp(json_string_value(json_object_get(o, "id")), id)) continue;
        json_t *v = json_object_get(o, "currentValue");
        strcpy(buf, json_is_string(v) ? json_string_value(v) : json_is_true(v) ? "true" : "false");
        return buf;
    }
    return "(missing)";
}

static void test_modes_config(void **state)
{
    fixture *f = *state;
    acp_client_opts o = base_opts(f);
    o.config_boolean = true;
    open_client(f, &o);
    open_session(f);
    acp_client_session *s = f->s;
    char v[32];
    assert_json(acp_client_session_modes(s),
                "{\"currentModeId\":\"ask\",\"availableModes\":[{\"id\":\"ask\",\"name\":\"Ask\"},"
                "{\"id\":\"code\",\"name\":\"Code\"}]}");

    done d = {.f = f};
    acp_client_op *op = NULL;
    assert_int_equal(acp_client_session_set_mode_start(s, "code", on_done, &d, &op), 0);
    assert_non_null(op);
    assert_string_equal(acp_client_session_mode(s), "ask"); /* not before the answer */
    spin(f, &d.done);
    assert_int_equal(d.status, 0);
    assert_ptr_equal(d.session, s);
    done_clear(&d);
    assert_string_equal(acp_client_session_mode(s), "code");
    assert_int_equal(acp_client_session_set_mode(s, "nope"), ACP_EPROTO);
    assert_has(acp_error_last()->message, "(no such mode)");
    assert_string_equal(acp_client_session_mode(s), "code");

    assert_int_equal(acp_client_session_set_config_start(s, "model", "b", on_done, &d, NULL), 0);
    finish_ok(f, &d);
    assert_string_equal(config_value(s, "model", v), "b");
    assert_int_equal(acp_client_session_set_config_bool_start(s, "fast", true, on_done, &d, NULL),
                     0);
    finish_ok(f, &d);
    assert_string_equal(config_value(s, "fast", v), "true");
    assert_int_equal(acp_client_session_set_config(s, "model", "zzz"), ACP_EPROTO);
    assert_string_equal(config_value(s, "model", v), "b");
    json_t *log = agent_log(f);
    assert_json(last_of(log, "session/set_mode"), "{\"sessionId\":\"s0\",\"modeId\":\"nope\"}");
    json_t *bool_set = NULL;
    size_t i;
    json_t *e;
    json_array_foreach(log, i, e)
    {
        json_t *p = json_object_get(e, "params");
        if (!strcmp(json_string_value(json_object_get(e, "method")), "session/set_config_option") &&
            !strcmp(json_string_value(json_object_get(p, "configId")), "fast"))
            bool_set = p;
    }
    assert_json(bool_set,
                "{\"sessionId\":\"s0\",\"configId\":\"fast\",\"type\":\"boolean\",\"value\":true}");
    json_decref(log);

    /* The agent changes mode and config on its own, outside a turn... */
    assert_int_equal(acp_client_notify(f->c, "_x/poke",
                                       json_pack("{s:s, s:s, s:b}", "sessionId", "s0", "modeId",
                                                 "ask", "fast", 0)),
                     0);
    spin_count(f, &f->conf_ups, 1);
    assert_int_equal(f->mode_ups, 1);
    assert_string_equal(acp_client_session_mode(s), "ask");
    assert_string_equal(config_value(s, "fast", v), "false");
    assert_string_equal(config_value(s, "model", v), "b");
    /* ...and during one. */
    json_t *out = prompt(f,
                         "[{\"update\":{\"sessionUpdate\":\"current_mode_update\","
                         "\"currentModeId\":\"code\"}},{\"update\":{\"sessionUpdate\":"
                         "\"config_option_update\",\"configOptions\":[{\"id\":\"model\",\"name\":"
                         "\"Model\",\"type\":\"select\",\"currentValue\":\"a\",\"options\":[{"
                         "\"value\":\"a\",\"name\":\"A\"}]}]}}]",
                         "end_turn");
    json_decref(out);
    assert_string_equal(acp_client_session_mode(s), "code");
    assert_int_equal(json_array_size(acp_client_session_config_options(s)), 1);
    assert_string_equal(config_value(s, "model", v), "a");
    assert_int_equal(f->mode_ups, 2);
    assert_int_equal(f->conf_ups, 2);
}

/* --- error.data ------------------------------------------------------------------------- */

static const char *err_with(fixture *f, int code, const char *data)
{
    json_t *p = json_pack("{s:i, s:s}", "code", code, "message", "Boom");
    if (data) json_object_set_new(p, "data", json_loads(data, JSON_DECODE_ANY, NULL));
    assert_int_equal(acp_client_call(f->c, "_x/err", p, NULL), ACP_EPROTO);
    assert_int_equal(acp_client_errcode(f->c), code);
    return acp_error_last()->message;
}

static void test_error_data(void **state)
{
    fixture *f = *state;
    acp_client_opts o = base_opts(f);
    open_client(f, &o);
    assert_string_equal(err_with(f, -32603, "{\"details\":\"Claude Code exited with code 1\"}"),
                        "agent error -32603 on _x/err: Boom (Claude Code exited with code 1)");
    assert_string_equal(err_with(f, -32000, "{\"message\":\"Connection error.\"}"),
                        "agent error -32000 on _x/err: Boom (Connection error.)");
    /* details wins over message */
    assert_string_equal(err_with(f, -32000, "{\"message\":\"m\",\"details\":\"d\"}"),
                        "agent error -32000 on _x/err: Boom (d)");
    assert_string_equal(err_with(f, -32000, "\"just a string\""),
                        "agent error -32000 on _x/err: Boom (just a string)");
    assert_string_equal(err_with(f, -32000, "{\"retry\":[1,2],\"details\":7}"),
                        "agent error -32000 on _x/err: Boom ({\"retry\":[1,2],\"details\":7})");
    assert_string_equal(err_with(f, 42, NULL), "agent error 42 on _x/err: Boom");
    /* The code our connection uses for its own end, sent by the agent: still the agent's. */
    assert_string_equal(err_with(f, -32099, NULL), "agent error -32099 on _x/err: Boom");
    /* Long data is cut, and says so. */
    char big[1200];
    memset(big, 'x', sizeof big);
    memcpy(big, "{\"k\":\"", 6);
    strcpy(big + sizeof big - 3, "\"}");
    const char *m = err_with(f, -32000, big);
    assert_true(strlen(m) < 400);
    size_t n = strlen(m);
    assert_string_equal(m + n - 4, "...)");
    /* A long details string too, cut between characters (the message stays UTF-8). */
    char det[1024] = "{\"details\":\"";
    for (int i = 0; i < 300; i++) strcat(det, "\u00e9");
    strcat(det, "\"}");
    m = err_with(f, -32000, det);
    n = strlen(m);
    assert_string_equal(m + n - 4, "...)");
    assert_true(n < 400);
    json_t *utf8 = json_string(m);
    assert_non_null(utf8);
    json_decref(utf8);

    /* The async reply carries code and data as the agent sent them. */
    done d = {.f = f};
    assert_int_equal(acp_client_call_start(f->c, "_x/err",
                                           json_pack("{s:i, s:s, s:{s:b}}", "code", -32001,
                                                     "message", "M", "data", "flag", 1),
                                           on_done, &d, NULL),
                     0);
    spin(f, &d.done);
    assert_int_equal(d.status, ACP_EPROTO);
    assert_int_equal(d.code, -32001);
    assert_json(d.data, "{\"flag\":true}");
    done_clear(&d);
}

/* --- elicitation ------------------------------------------------------------------------ */

#define FORM(msg)                                                                                  \
    "{\"method\":\"elicitation/create\",\"params\":{\"mode\":\"form\",\"message\":\"" msg          \
    "\",\"requestedSchema\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":"              \
    "\"string\"},\"age\":{\"type\":\"integer\"}}}}}"

static void open_elicit(fixture *f, bool form, bool url)
{
    acp_client_opts o = base_opts(f);
    o.elicitation_form = form;
    o.elicitation_url = url;
    o.on_elicit = on_elicit;
    o.on_elicit_complete = on_elicit_complete;
    o.on_withdrawn = on_withdrawn;
    open_client(f, &o);
    open_session(f);
}

static void test_elicitation(void **state)
{
    fixture *f = *state;
    open_elicit(f, true, true);
    json_t *out = prompt(
        f,
        "[" FORM("accept") "," FORM("decline") "," FORM(
            "cancel") ","
                      "{\"method\":\"elicitation/"
                      "create\",\"params\":{\"mode\":\"url\",\"message\":\"decline\","
                      "\"elicitationId\":\"e0\",\"url\":\"https://example.com/no\"}},"
                      "{\"method\":\"elicitation/"
                      "create\",\"params\":{\"mode\":\"url\",\"message\":\"accept\","
                      "\"elicitationId\":\"e1\",\"url\":\"https://example.com/login\"}},"
                      "{\"notify\":\"elicitation/complete\",\"params\":{\"elicitationId\":\"e1\"}},"
                      "{\"notify\":\"elicitation/complete\",\"params\":{\"elicitationId\":\"e1\"}},"
                      "{\"notify\":\"elicitation/complete\",\"params\":{\"elicitationId\":\"e0\"}},"
                      "{\"notify\":\"elicitation/"
                      "complete\",\"params\":{\"elicitationId\":\"zz\"}}]",
        "end_turn");
    assert_json(ok_result(out, 0),
                "{\"action\":\"accept\",\"content\":{\"name\":\"Ada\",\"age\":36}}");
    assert_json(ok_result(out, 1), "{\"action\":\"decline\"}");
    assert_json(ok_result(out, 2), "{\"action\":\"cancel\"}");
    assert_json(ok_result(out, 3), "{\"action\":\"decline\"}");
    /* url mode: accepted, without content */
    assert_json(ok_result(out, 4), "{\"action\":\"accept\"}");
    json_decref(out);
    assert_int_equal(f->elicits, 5);
    assert_ptr_equal(f->elicit_s, f->s);
    assert_string_equal(json_string_value(json_object_get(f->elicit_params, "url")),
                        "https://example.com/login");
    assert_string_equal(json_string_value(json_object_get(f->elicit_params, "sessionId")), "s0");
    /* Only the accepted one's first completion: unknown, declined and repeated ids are
     * ignored (and logged), as the spec requires. */
    assert_int_equal(f->completes, 1);
    assert_string_equal(f->complete_id, "e1");
    assert_int_equal(f->logs, 3);
    assert_has(f->last_log, "ignored an elicitation/complete");

    /* Request-scoped, during authenticate: no session. */
    assert_int_equal(acp_client_authenticate(f->c, "elicit"), 0);
    assert_int_equal(f->elicits, 6);
    assert_null(f->elicit_s);
    assert_true(json_is_integer(json_object_get(f->elicit_params, "requestId")));
    /* ...tied to that call of ours (ids: initialize 0, then one per call). */
    assert_int_equal(f->elicit_op,
                     json_integer_value(json_object_get(f->elicit_params, "requestId")));

    /* Answered later, from outside any callback. */
    done d = {.f = f};
    prompt_begin(f, "[" FORM("hold") "]", &d);
    spin_count(f, &f->elicits, 7);
    assert_non_null(f->held_e);
    assert_false(d.done);
    assert_int_equal(acp_client_elicit_reply(f->held_e, "accept", json_pack("{s:s}", "name", "Bo")),
                     0);
    f->held_e = NULL;
    out = prompt_end(f, &d, "end_turn");
    assert_json(ok_result(out, 0), "{\"action\":\"accept\",\"content\":{\"name\":\"Bo\"}}");
    json_decref(out);

    /* A session cancel answers the pending elicitation `cancel`. */
    prompt_begin(f, "[" FORM("hold") "]", &d);
    spin_count(f, &f->elicits, 8);
    int w = f->withdrawn;
    assert_int_equal(acp_client_session_cancel(f->s), 0);
    assert_int_equal(f->withdrawn, w + 1); /* the dialog can close now */
    out = prompt_end(f, &d, "cancelled");
    assert_json(ok_result(out, 0), "{\"action\":\"cancel\"}");
    json_decref(out);
    /* The handle is still the application's: replying only frees it (content too). */
    assert_int_equal(acp_client_elicit_reply(f->held_e, "accept", json_pack("{s:s}", "name", "x")),
                     0);
    f->held_e = NULL;

    /* Withdrawn by the agent ($/cancel_request) while held: answered `cancel` at once. */
    prompt_begin(f,
                 "[{\"withdrawMs\":100,\"method\":\"elicitation/create\",\"params\":{\"mode\":"
                 "\"form\",\"message\":\"hold\",\"requestedSchema\":{\"type\":\"object\"}}}]",
                 &d);
    out = prompt_end(f, &d, "end_turn");
    assert_int_equal(f->elicits, 9);
    assert_int_equal(f->withdrawn, w + 2);
    assert_json(ok_result(out, 0), "{\"action\":\"cancel\"}");
    json_decref(out);
    assert_int_equal(acp_client_elicit_reply(f->held_e, "accept", json_pack("{s:s}", "name", "x")),
                     0);
    f->held_e = NULL;

    /* Bad requests never reach on_elicit. */
    int logs = f->logs;
    out = prompt(f,
                 "[{\"method\":\"elicitation/create\",\"bare\":true,\"params\":{\"mode\":\"form\","
                 "\"message\":\"accept\",\"requestedSchema\":{\"type\":\"object\"}}},"
                 "{\"method\":\"elicitation/create\",\"bare\":true,\"params\":{\"mode\":\"form\","
                 "\"sessionId\":\"nope\",\"message\":\"accept\",\"requestedSchema\":{\"type\":"
                 "\"object\"}}},"
                 "{\"method\":\"elicitation/create\",\"params\":{\"mode\":\"_vendor\","
                 "\"message\":\"accept\"}},"
                 "{\"method\":\"elicitation/create\",\"bare\":true,\"params\":{\"mode\":\"form\","
                 "\"requestId\":999,\"message\":\"accept\",\"requestedSchema\":{\"type\":"
                 "\"object\"}}}]",
                 "end_turn");
    failed(out, 0, -32602); /* neither sessionId nor requestId */
    failed(out, 1, -32002); /* unknown session */
    failed(out, 2, -32602); /* a mode we do not know */
    failed(out, 3, -32602); /* a requestId that is no call of ours in flight */
    json_decref(out);
    assert_int_equal(f->elicits, 9);
    assert_int_equal(f->logs, logs + 4);
    assert_has(f->last_log, "elicitation/create");

    /* A handle freed from inside on_withdrawn, while a cancel walks the pending requests. */
    done d2 = {.f = f};
    prompt_begin(f, "[" FORM("hold") "]", &d2);
    spin_count(f, &f->elicits, 10);
    f->free_in_withdrawn = true;
    assert_int_equal(acp_client_session_cancel(f->s), 0);
    assert_null(f->held_e);
    out = prompt_end(f, &d2, "cancelled");
    assert_json(ok_result(out, 0), "{\"action\":\"cancel\"}");
    json_decref(out);
    f->free_in_withdrawn = false;
}

/* Only form mode advertised: a url elicitation is refused without asking anybody. */
static void test_elicitation_mode_refused(void **state)
{
    fixture *f = *state;
    open_elicit(f, true, false);
    json_t *log = agent_log(f);
    assert_json(json_object_get(json_object_get(last_of(log, "initialize"), "clientCapabilities"),
                                "elicitation"),
                "{\"form\":{}}");
    json_decref(log);
    json_t *out = prompt(f,
                         "[{\"method\":\"elicitation/create\",\"params\":{\"mode\":\"url\","
                         "\"message\":\"accept\",\"elicitationId\":\"e9\",\"url\":"
                         "\"https://example.com/\"}}," FORM("decline") "]",
                         "end_turn");
    assert_has(failed(out, 0, -32602), "url");
    assert_json(ok_result(out, 1), "{\"action\":\"decline\"}");
    json_decref(out);
    assert_int_equal(f->elicits, 1);
    assert_has(f->last_log, "elicitation mode 'url'");
}

/* --- on_ask ------------------------------------------------------------------------------- */

/* One fs/write_text_file of dir/name with the content name, withdrawn by the agent after
 * withdraw_ms when not 0. */
static const char *write_action(char *buf, size_t n, const char *dir, const char *name,
                                int withdraw_ms)
{
    snprintf(buf, n,
             "[{\"withdrawMs\":%d,\"method\":\"fs/write_text_file\",\"params\":{\"path\":"
             "\"%s/%s\",\"content\":\"%s\"}}]",
             withdraw_ms, dir, name, name);
    return buf;
}

/* terminal/create for `sh -c 'echo hi; touch ROOT/name'`, then wait_for_exit, output and
 * release of that terminal. */
static const char *term_action(char *buf, size_t n, const char *root, const char *name)
{
    snprintf(buf, n,
             "[{\"method\":\"terminal/create\",\"params\":{\"command\":\"/bin/sh\",\"args\":["
             "\"-c\",\"echo hi; touch %s/%s\"]}},"
             "{\"method\":\"terminal/wait_for_exit\",\"params\":{\"terminalId\":\"$T\"}},"
             "{\"method\":\"terminal/output\",\"params\":{\"terminalId\":\"$T\"}},"
             "{\"method\":\"terminal/release\",\"params\":{\"terminalId\":\"$T\"}}]",
             root, name);
    return buf;
}

/* Starts a prompt of actions whose first one on_ask holds, and waits for it to be held. */
static void begin_held(fixture *f, const char *actions, done *d)
{
    int asks = f->asks;
    f->ask_mode = ASK_HOLD;
    f->held_a = NULL;
    prompt_begin(f, actions, d);
    spin_count(f, &f->asks, asks + 1);
    assert_non_null(f->held_a);
}

static void test_ask(void **state)
{
    fixture *f = *state;
    acp_client_opts o = base_opts(f);
    o.fs_write = o.terminal = true;
    o.on_ask = on_ask;
    open_client(f, &o);
    open_session(f);
    char a[4096];

    /* Allowed: written. Denied: not written, the agent told. */
    json_t *out = prompt(f, write_action(a, sizeof a, f->root, "yes", 0), "end_turn");
    ok_result(out, 0);
    json_decref(out);
    assert_file(f->root, "yes", "yes");
    assert_int_equal(f->asks, 1);
    assert_string_equal(f->ask_method, "fs/write_text_file");
    assert_string_equal(json_string_value(json_object_get(f->ask_params, "content")), "yes");
    f->ask_mode = ASK_DENY;
    out = prompt(f, write_action(a, sizeof a, f->root, "no", 0), "end_turn");
    assert_has(failed(out, 0, -32603), "denied");
    json_decref(out);
    assert_false(exists(f->root, "no"));
    assert_int_equal(f->asks, 2);

    /* Answered later: nothing is written until then. */
    done d = {.f = f};
    begin_held(f, write_action(a, sizeof a, f->root, "later", 0), &d);
    for (int i = 0; i < 3; i++) { /* give it time to go wrong */
        acp_client_notify(f->c, "_x/ping", NULL);
        json_decref(agent_log(f));
    }
    assert_false(exists(f->root, "later"));
    assert_false(d.done);
    assert_int_equal(acp_client_ask_reply(f->held_a, true), 0);
    out = prompt_end(f, &d, "end_turn");
    ok_result(out, 0);
    json_decref(out);
    assert_file(f->root, "later", "later");

    /* Held, then the turn is cancelled: refused, and allowing it afterwards writes nothing. */
    begin_held(f, write_action(a, sizeof a, f->root, "cancelled", 0), &d);
    acp_client_session_cancel(f->s);
    out = prompt_end(f, &d, "cancelled");
    assert_has(failed(out, 0, -32603), "cancelled");
    json_decref(out);
    assert_int_equal(acp_client_ask_reply(f->held_a, true), 0); /* only frees */
    assert_false(exists(f->root, "cancelled"));

    /* Withdrawn by the agent while held: -32800 at once, and allowing it later writes nothing. */
    begin_held(f, write_action(a, sizeof a, f->root, "withdrawn", 100), &d);
    out = prompt_end(f, &d, "end_turn");
    failed(out, 0, -32800);
    json_decref(out);
    assert_int_equal(acp_client_ask_reply(f->held_a, true), 0); /* only frees */
    assert_false(exists(f->root, "withdrawn"));

    /* Outside the roots, or relative: refused before asking, and logged. */
    f->ask_mode = ASK_ALLOW;
    int logs = f->logs, asks = f->asks;
    out = prompt(f, write_action(a, sizeof a, f->outside, "x", 0), "end_turn");
    failed(out, 0, -32602);
    json_decref(out);
    out = prompt(f, write_action(a, sizeof a, ".", "x", 0), "end_turn");
    failed(out, 0, -32602);
    json_decref(out);
    assert_int_equal(f->asks, asks);
    assert_false(exists(f->outside, "x"));
    assert_int_equal(f->logs, logs + 2);
    assert_has(f->last_log, "refused the agent's fs/write_text_file");

    /* terminal/create, likewise: allowed, denied, answered later. */
    out = prompt(f, term_action(a, sizeof a, f->root, "ran1"), "end_turn");
    assert_string_equal(json_string_value(json_object_get(ok_result(out, 2), "output")), "hi\n");
    json_decref(out);
    assert_int_equal(f->asks, asks + 1);
    assert_string_equal(f->ask_method, "terminal/create");
    assert_string_equal(json_string_value(json_object_get(f->ask_params, "command")), "/bin/sh");
    assert_true(exists(f->root, "ran1"));
    f->ask_mode = ASK_DENY;
    out = prompt(f, term_action(a, sizeof a, f->root, "ran2"), "end_turn");
    assert_has(failed(out, 0, -32603), "denied");
    json_decref(out);
    assert_int_equal(f->asks, asks + 2);
    begin_held(f, term_action(a, sizeof a, f->root, "ran3"), &d);
    assert_false(exists(f->root, "ran3"));
    assert_int_equal(acp_client_ask_reply(f->held_a, true), 0);
    out = prompt_end(f, &d, "end_turn");
    assert_int_equal(json_integer_value(json_object_get(ok_result(out, 1), "exitCode")), 0);
    json_decref(out);
    assert_true(exists(f->root, "ran3"));
    assert_false(exists(f->root, "ran2"));
}

/* --- extension methods ------------------------------------------------------------------- */

static json_t *note(fixture *f, const char *method)
{
    size_t i;
    json_t *e;
    json_array_foreach(f->notes, i, e)
    {
        if (!strcmp(json_string_value(json_object_get(e, "method")), method))
            return json_object_get(e, "params");
    }
    return NULL;
}

static void test_ext(void **state)
{
    fixture *f = *state;
    acp_client_opts o = base_opts(f);
    open_client(f, &o);
    open_session(f);
    acp_client *c = f->c;

    /* Ours to the agent. */
    json_t *r = NULL;
    assert_int_equal(acp_client_call(c, "_x/echo", json_pack("{s:i}", "a", 1), &r), 0);
    assert_json(r, "{\"echo\":{\"a\":1}}");
    json_decref(r);
    assert_int_equal(acp_client_call(c, "_x/echo", NULL, &r), 0); /* NULL sends {} */
    assert_json(r, "{\"echo\":{}}");
    json_decref(r);
    done d = {.f = f};
    acp_client_op *op = NULL;
    assert_int_equal(
        acp_client_call_start(c, "_x/echo", json_pack("{s:s}", "b", "x"), on_done, &d, &op), 0);
    assert_non_null(op);
    spin(f, &d.done);
    assert_int_equal(d.status, 0);
    assert_json(d.result, "{\"echo\":{\"b\":\"x\"}}");
    assert_null(d.session);
    done_clear(&d);
    assert_int_equal(acp_client_call(c, "_x/unknown", NULL, NULL), ACP_EPROTO);
    assert_int_equal(acp_client_errcode(c), -32601);
    assert_int_equal(acp_client_call(c, "", NULL, NULL), ACP_EINVAL);
    assert_int_equal(acp_client_call(c, NULL, json_object(), NULL), ACP_EINVAL);
    assert_int_equal(acp_client_notify(c, NULL, json_object()), ACP_EINVAL);
    assert_int_equal(acp_client_notify(c, "", NULL), ACP_EINVAL);
    assert_int_equal(acp_client_notify(c, "_x/note", json_pack("{s:i}", "n", 2)), 0);
    json_t *log = agent_log(f);
    assert_json(last_of(log, "_x/note"), "{\"n\":2}");
    json_decref(log);

    /* The agent's to us: answered now (result, error), later; notifications; and -32601 for
     * an unknown method that is not an extension's. */
    int logs = f->logs;
    prompt_begin(f,
                 "[{\"method\":\"_vendor/ask\",\"bare\":true,\"params\":{\"q\":1}},"
                 "{\"method\":\"_vendor/fail\",\"bare\":true},"
                 "{\"notify\":\"_vendor/note\",\"params\":{\"n\":1}},"
                 "{\"notify\":\"vendor/not_ext\",\"params\":{\"n\":2}},"
                 "{\"method\":\"foo/bar\",\"bare\":true},"
                 "{\"method\":\"_vendor/later\"}]",
                 &d);
    while (!f->held_req) assert_int_equal(acp_client_run_once(c), 0);
    assert_string_equal(
        json_string_value(json_object_get(acp_req_params(f->held_req), "sessionId")), "s0");
    assert_int_equal(acp_req_reply(f->held_req, json_pack("{s:s}", "answer", "late")), 0);
    f->held_req = NULL;
    json_t *out = prompt_end(f, &d, "end_turn");
    assert_json(ok_result(out, 0), "{\"got\":{\"q\":1}}");
    assert_string_equal(failed(out, 1, -32042), "nope: refused");
    assert_json(json_object_get(json_array_get(out, 1), "data"), "{\"why\":\"testing\"}");
    assert_has(failed(out, 4, -32601), "foo/bar");
    assert_json(ok_result(out, 5), "{\"answer\":\"late\"}");
    json_decref(out);
    assert_json(note(f, "_vendor/note"), "{\"n\":1}");
    assert_null(note(f, "vendor/not_ext"));
    assert_int_equal(json_array_size(f->notes), 1);
    assert_int_equal(f->logs, logs + 1);
    assert_has(f->last_log, "foo/bar");
}

/* --- $/cancel_request ------------------------------------------------------------------ */

static void test_cancel_request(void **state)
{
    fixture *f = *state;
    acp_client_opts o = base_opts(f);
    open_client(f, &o);
    acp_client *c = f->c;

    /* op_cancel: the agent sees the cancel and answers -32800. */
    done d = {.f = f};
    acp_client_op *op = NULL;
    assert_int_equal(acp_client_call_start(c, "_x/slow", NULL, on_done, &d, &op), 0);
    json_decref(agent_log(f)); /* the agent is inside _x/slow now */
    assert_false(d.done);
    assert_int_equal(acp_client_op_cancel(op), 0);
    spin(f, &d.done);
    assert_int_equal(d.status, ACP_EPROTO);
    assert_int_equal(d.code, -32800);
    assert_has(d.errmsg, "-32800");
    done_clear(&d);
    json_t *cs = note(f, "_test/cancel_seen");
    assert_non_null(cs); /* sent before its answer */
    assert_string_equal(json_string_value(json_object_get(cs, "method")), "_x/slow");

    /* op_timeout: never answered; ends ETIMEDOUT and the agent still hears $/cancel_request. */
    uint64_t t0 = uv_hrtime();
    assert_int_equal(acp_client_call_start(c, "_x/hang", NULL, on_done, &d, &op), 0);
    acp_client_op_timeout(op, 300);
    spin(f, &d.done);
    uint64_t ms = (uv_hrtime() - t0) / 1000000;
    assert_true(ms >= 290 && ms < 5000);
    assert_int_equal(d.status, ACP_ETIMEDOUT);
    assert_int_equal(d.code, 0);
    assert_has(d.errmsg, "_x/hang");
    done_clear(&d);
    while (json_array_size(f->notes) < 2) assert_int_equal(acp_client_run_once(c), 0);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_array_get(f->notes, 1), "params"), "method")),
                        "_x/hang");
    /* The connection is fine afterwards. */
    json_t *r = NULL;
    assert_int_equal(acp_client_call(c, "_x/echo", NULL, &r), 0);
    json_decref(r);
}

/* call_timeout_ms is every call's deadline; op_timeout(op, 0) lifts it for one call. */
static void test_call_timeout(void **state)
{
    fixture *f = *state;
    acp_client_opts o = base_opts(f);
    o.call_timeout_ms = 300;
    open_client(f, &o); /* initialize is not bound by it */
    assert_int_equal(acp_client_call(f->c, "_x/hang", NULL, NULL), ACP_ETIMEDOUT);
    assert_has(acp_error_last()->message, "did not answer _x/hang in time");

    done d = {.f = f};
    acp_client_op *op = NULL;
    assert_int_equal(acp_client_call_start(f->c, "_x/slow", NULL, on_done, &d, &op), 0);
    acp_client_op_timeout(op, 0);
    /* Well past the default deadline, still pending. */
    uv_sleep(500);
    json_decref(agent_log(f));
    assert_false(d.done);
    assert_int_equal(acp_client_op_cancel(op), 0);
    spin(f, &d.done);
    assert_int_equal(d.code, -32800);
    done_clear(&d);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    alarm(300); /* a hang fails the test instead of holding CI */
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_initialize_everything),
        T(test_initialize_defaults),
        T(test_auth),
        T(test_bare_agent),
        T(test_sessions),
        T(test_modes_config),
        T(test_error_data),
        T(test_elicitation),
        T(test_elicitation_mode_refused),
        T(test_ask),
        T(test_ext),
        T(test_cancel_request),
        T(test_call_timeout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
