/* SPDX-License-Identifier: Apache-2.0 */
/* session/fork (unstable) in-process, on a real SQLite store: the fork's history is the
 * source's; prompting the fork never changes the source; a delete of either leaves the other
 * whole (a load of the fork replays the whole inherited conversation); the engine's
 * session_fork hook gets the source's state when it is open here, else NULL; an engine without
 * the hook rebuilds through session_setup; modes follow the source; -32002 for an unknown
 * source, -32602 for bad params; not advertised and -32601 when switched off. */
#include "harness.h"

/* The engine's per-session state: how many prompts it answered in the session, copied into
 * a fork by its hook. */
typedef struct esess {
    int prompts;
} esess;

struct eng_state {
    int next_id;
    int setups, forks, frees;
    bool fork_had_source; /* the last session_fork got the source open here */
    char fork_source_id[80];
    int fork_copied; /* the prompts count it copied */
    acp_turn *held;  /* a turn left running by the prompt "hold" */
};

static const acp_mode modes[] = {{"a", "A", NULL}, {"b", "B", NULL}};

static void engine_prompt(acp_turn *t, const json_t *prompt, void *user)
{
    esess *es = acp_session_data(acp_turn_session(t));
    if (es) es->prompts++;
    const char *text = json_string_value(json_object_get(json_array_get(prompt, 0), "text"));
    char mid[48];
    acp_agent_new_id("msg_", mid);
    acp_turn_text(t, NULL, mid, text, strlen(text));
    h *x = user;
    if (!strcmp(text, "hold") && x) {
        x->e->held = t; /* ended by the test */
        return;
    }
    acp_turn_end(t, "end_turn");
}

static void engine_cancel(acp_turn *t, void *user)
{
    h *x = user;
    if (x->e->held == t) x->e->held = NULL;
    acp_turn_end(t, "cancelled");
}

static void engine_setup(acp_session *s, void *user)
{
    h *x = user;
    x->e->setups++;
    acp_session_set_data(s, calloc(1, sizeof(esess)));
}

static void engine_fork(acp_session *f, acp_session *source, const char *source_id, void *user)
{
    h *x = user;
    x->e->forks++;
    x->e->fork_had_source = source != NULL;
    snprintf(x->e->fork_source_id, sizeof x->e->fork_source_id, "%s", source_id);
    esess *es = calloc(1, sizeof *es);
    const esess *from = source ? acp_session_data(source) : NULL;
    if (es && from) *es = *from; /* a copy: the two never share it */
    x->e->fork_copied = es ? es->prompts : -1;
    acp_session_set_data(f, es);
}

static void engine_free(acp_session *s, void *user)
{
    h *x = user;
    x->e->frees++;
    free(acp_session_data(s));
    acp_session_set_data(s, NULL);
}

static h *agent(bool hook, unsigned off)
{
    h *x = h_new("fork", sizeof(eng_state));
    x->eng = (acp_engine){.struct_size = sizeof(acp_engine),
                          .name = "fork-engine",
                          .version = "1",
                          .modes = modes,
                          .nmodes = 2,
                          .prompt = engine_prompt,
                          .session_setup = engine_setup,
                          .session_free = engine_free,
                          .cancel = engine_cancel,
                          .session_fork = hook ? engine_fork : NULL,
                          .user = x};
    x->opts.unstable_off = off;
    agent_start(x);
    json_decref(request(x, 1000, "initialize", "{\"protocolVersion\":1}"));
    return x;
}

static int next_id(h *x)
{
    return ++x->e->next_id;
}

static json_t *call(h *x, const char *method, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static json_t *call(h *x, const char *method, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *p = vquote(fmt, ap);
    va_end(ap);
    json_t *r = request(x, next_id(x), method, p);
    free(p);
    return r;
}

static void new_session(h *x, char *id)
{
    json_t *r = call(x, "session/new", "{'cwd':'%s','mcpServers':[]}", x->dir);
    assert_non_null(jstr(result_of(r), "sessionId"));
    snprintf(id, 80, "%s", jstr(result_of(r), "sessionId"));
    json_decref(r);
}

static void fork_session(h *x, const char *src, char *id)
{
    json_t *r = call(x, "session/fork", "{'sessionId':'%s','cwd':'%s'}", src, x->dir);
    const char *got = jstr(result_of(r), "sessionId");
    if (!got) fail_msg("session/fork failed: %s", error_message(r));
    assert_string_not_equal(got, src);
    snprintf(id, 80, "%s", got);
    json_decref(r);
}

static void prompt(h *x, const char *sid, const char *text)
{
    json_t *r = call(x, "session/prompt",
                     "{'sessionId':'%s','prompt':[{'type':'text','text':'%s'}]}", sid, text);
    assert_string_equal(stop_reason(last(r)), "end_turn");
    json_decref(r);
}

/* The texts of a session's stored history, in order, joined by '|' (user and agent chunks). */
static char *texts(h *x, const char *id)
{
    json_t *hist = history(x, id);
    size_t i;
    json_t *u;
    char *out = calloc(1, 4096);
    json_array_foreach(hist, i, u)
    {
        const char *t = jstr(json_object_get(u, "content"), "text");
        if (!t) continue;
        if (*out) strcat(out, "|");
        strncat(out, t, 4000 - strlen(out));
    }
    json_decref(hist);
    return out;
}

static void assert_texts(h *x, const char *id, const char *want)
{
    char *got = texts(x, id);
    assert_string_equal(got, want);
    free(got);
}

/* The texts a session/load of id replays. */
static char *loaded(h *x, const char *id)
{
    json_t *r =
        call(x, "session/load", "{'sessionId':'%s','cwd':'%s','mcpServers':[]}", id, x->dir);
    assert_non_null(result_of(r));
    json_t *ups = updates_of(r);
    char *out = calloc(1, 4096);
    size_t i;
    json_t *u;
    json_array_foreach(ups, i, u)
    {
        const char *t = jstr(json_object_get(u, "content"), "text");
        if (!t) continue;
        if (*out) strcat(out, "|");
        strncat(out, t, 4000 - strlen(out));
    }
    json_decref(ups);
    json_decref(r);
    return out;
}

static void t_advertised(void **state)
{
    h *x = agent(true, 0);
    json_t *r = request(x, next_id(x), "initialize", "{\"protocolVersion\":1}");
    json_t *sc =
        json_object_get(json_object_get(result_of(r), "agentCapabilities"), "sessionCapabilities");
    assert_json(json_object_get(sc, "fork"), json_object());
    json_decref(r);
    h_free(x);

    x = agent(true, ACP_UNSTABLE_FORK);
    r = request(x, next_id(x), "initialize", "{\"protocolVersion\":1}");
    sc = json_object_get(json_object_get(result_of(r), "agentCapabilities"), "sessionCapabilities");
    assert_null(json_object_get(sc, "fork"));
    json_decref(r);
    char sid[80];
    new_session(x, sid);
    r = call(x, "session/fork", "{'sessionId':'%s','cwd':'%s'}", sid, x->dir);
    assert_int_equal(error_code(r), ACP_RPC_METHOD_NOT_FOUND);
    json_decref(r);
    h_free(x);

    /* An engine that cannot load (rebuild from the store) forks only with a hook of its own. */
    x = h_new("fork", sizeof(eng_state));
    x->eng = (acp_engine){.struct_size = sizeof(acp_engine),
                          .name = "noload",
                          .prompt = engine_prompt,
                          .disable = ACP_DISABLE_LOAD,
                          .user = x};
    agent_start(x);
    r = request(x, next_id(x), "initialize", "{\"protocolVersion\":1}");
    sc = json_object_get(json_object_get(result_of(r), "agentCapabilities"), "sessionCapabilities");
    assert_null(json_object_get(sc, "fork"));
    json_decref(r);
    h_free(x);
}

/* Fork, then prompt the fork: the source's history and engine state stay as they were. */
static void t_fork_then_prompt(void **state)
{
    h *x = agent(true, 0);
    char src[80], f[80];
    new_session(x, src);
    prompt(x, src, "one");
    prompt(x, src, "two");
    json_decref(call(x, "session/set_mode", "{'sessionId':'%s','modeId':'b'}", src));
    int before = stored(x, src);
    fork_session(x, src, f);
    assert_int_equal(x->e->forks, 1);
    assert_true(x->e->fork_had_source);
    assert_string_equal(x->e->fork_source_id, src);
    assert_int_equal(x->e->fork_copied, 2);
    assert_int_equal(stored(x, f), before);
    assert_texts(x, f, "one|one|two|two");
    prompt(x, f, "three");
    assert_texts(x, f, "one|one|two|two|three|three");
    assert_texts(x, src, "one|one|two|two");
    assert_int_equal(stored(x, src), before);
    prompt(x, src, "four");
    assert_texts(x, f, "one|one|two|two|three|three");
    assert_texts(x, src, "one|one|two|two|four|four");
    /* The two engine states are apart: 3 prompts in each. */
    h_free(x);
}

/* The fork's result has the source's mode; the fork's own change stays its own. */
static void t_fork_modes(void **state)
{
    h *x = agent(true, 0);
    char src[80], f[80];
    new_session(x, src);
    json_decref(call(x, "session/set_mode", "{'sessionId':'%s','modeId':'b'}", src));
    json_t *r = call(x, "session/fork", "{'sessionId':'%s','cwd':'%s'}", src, x->dir);
    json_t *m = json_object_get(result_of(r), "modes");
    assert_string_equal(jstr(m, "currentModeId"), "b");
    snprintf(f, sizeof f, "%s", jstr(result_of(r), "sessionId"));
    json_decref(r);
    json_decref(call(x, "session/set_mode", "{'sessionId':'%s','modeId':'a'}", f));
    /* A fresh agent restores each from the store. */
    agent_stop(x);
    agent_start(x);
    json_decref(request(x, next_id(x), "initialize", "{\"protocolVersion\":1}"));
    r = call(x, "session/resume", "{'sessionId':'%s','cwd':'%s'}", src, x->dir);
    assert_string_equal(jstr(json_object_get(result_of(r), "modes"), "currentModeId"), "b");
    json_decref(r);
    r = call(x, "session/resume", "{'sessionId':'%s','cwd':'%s'}", f, x->dir);
    assert_string_equal(jstr(json_object_get(result_of(r), "modes"), "currentModeId"), "a");
    json_decref(r);
    h_free(x);
}

/* Deleting the source leaves the fork whole: a load replays the whole inherited
 * conversation. Deleting a fork leaves its source whole. */
static void t_fork_delete(void **state)
{
    h *x = agent(true, 0);
    char src[80], f[80], g[80];
    new_session(x, src);
    prompt(x, src, "one");
    fork_session(x, src, f);
    prompt(x, f, "two");
    fork_session(x, src, g);
    json_decref(call(x, "session/delete", "{'sessionId':'%s'}", src));
    acp_store_session gone = ACP_STORE_SESSION_INIT;
    assert_int_equal(acp_store_get(x->st, src, &gone), ACP_ENOTFOUND);
    char *got = loaded(x, f);
    assert_string_equal(got, "one|one|two|two");
    free(got);
    json_decref(call(x, "session/delete", "{'sessionId':'%s'}", f));
    got = loaded(x, g);
    assert_string_equal(got, "one|one");
    free(got);

    char s2[80], f2[80];
    new_session(x, s2);
    prompt(x, s2, "x");
    fork_session(x, s2, f2);
    prompt(x, f2, "y");
    json_decref(call(x, "session/delete", "{'sessionId':'%s'}", f2));
    got = loaded(x, s2);
    assert_string_equal(got, "x|x");
    free(got);
    h_free(x);
}

/* A source that is only stored (not open here): the hook gets NULL and rebuilds itself; an
 * engine without the hook is set up as for a load. */
static void t_fork_stored_source(void **state)
{
    h *x = agent(true, 0);
    char src[80], f[80];
    new_session(x, src);
    prompt(x, src, "one");
    agent_stop(x);
    agent_start(x);
    json_decref(request(x, next_id(x), "initialize", "{\"protocolVersion\":1}"));
    fork_session(x, src, f);
    assert_int_equal(x->e->forks, 1);
    assert_false(x->e->fork_had_source);
    assert_string_equal(x->e->fork_source_id, src);
    prompt(x, f, "two");
    assert_texts(x, f, "one|one|two|two");
    assert_texts(x, src, "one|one");
    h_free(x);

    x = agent(false, 0);
    new_session(x, src);
    prompt(x, src, "one");
    int setups = x->e->setups;
    fork_session(x, src, f);
    assert_int_equal(x->e->setups, setups + 1);
    assert_int_equal(x->e->forks, 0);
    prompt(x, f, "two");
    assert_texts(x, src, "one|one");
    assert_texts(x, f, "one|one|two|two");
    h_free(x);
}

/* A fork while the source's turn runs: what the client has seen of it (committed first) is in
 * the fork; the turn goes on in the source only. */
static void t_fork_running_turn(void **state)
{
    h *x = agent(true, 0);
    char src[80], f[80];
    new_session(x, src);
    prompt(x, src, "one");
    int id = next_id(x);
    send_line(x,
              "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"session/prompt\",\"params\":"
              "{\"sessionId\":\"%s\",\"prompt\":[{\"type\":\"text\",\"text\":\"hold\"}]}}",
              id, src);
    while (!x->e->held) turn(x);
    fork_session(x, src, f);
    assert_texts(x, f, "one|one|hold|hold");
    acp_turn_text(x->e->held, NULL, NULL, "more", 4);
    acp_turn_end(x->e->held, "end_turn");
    x->e->held = NULL;
    json_decref(take_response(x, id));
    assert_texts(x, src, "one|one|hold|hold|more");
    assert_texts(x, f, "one|one|hold|hold");
    prompt(x, f, "two");
    assert_texts(x, f, "one|one|hold|hold|two|two");
    h_free(x);
}

static void assert_error(json_t *r, int code, const char *path)
{
    assert_int_equal(error_code(r), code);
    if (path) {
        json_t *data = json_object_get(json_object_get(last(r), "error"), "data");
        assert_string_equal(jstr(data, "path"), path);
    }
    json_decref(r);
}

static void t_fork_errors(void **state)
{
    h *x = agent(true, 0);
    char src[80];
    new_session(x, src);
    json_t *r = call(x, "session/fork", "{'sessionId':'sess_nope','cwd':'%s'}", x->dir);
    assert_int_equal(error_code(r), ACP_RPC_NOT_FOUND);
    json_t *data = json_object_get(json_object_get(last(r), "error"), "data");
    assert_string_equal(jstr(data, "sessionId"), "sess_nope");
    json_decref(r);
    assert_error(call(x, "session/fork", "{'sessionId':'%s'}", src), ACP_RPC_INVALID_PARAMS,
                 "params.cwd");
    assert_error(call(x, "session/fork", "{'sessionId':7,'cwd':'%s'}", x->dir),
                 ACP_RPC_INVALID_PARAMS, "params.sessionId");
    assert_error(call(x, "session/fork", "{'sessionId':'%s','cwd':'rel'}", src),
                 ACP_RPC_INVALID_PARAMS, NULL);
    assert_error(
        call(x, "session/fork", "{'sessionId':'%s','cwd':'%s','mcpServers':{}}", src, x->dir),
        ACP_RPC_INVALID_PARAMS, "params.mcpServers");
    assert_error(call(x, "session/fork",
                      "{'sessionId':'%s','cwd':'%s','additionalDirectories':"
                      "['rel']}",
                      src, x->dir),
                 ACP_RPC_INVALID_PARAMS, NULL);
    assert_error(call(x, "session/fork", "[]"), ACP_RPC_INVALID_PARAMS, NULL);
    /* None of them made a session: only the source is listed. */
    r = call(x, "session/list", "{}");
    assert_int_equal(json_array_size(json_object_get(result_of(r), "sessions")), 1);
    json_decref(r);
    /* null mcpServers and additionalDirectories are [] (x-deserialize-default-on-null). */
    r = call(x, "session/fork",
             "{'sessionId':'%s','cwd':'%s','mcpServers':null,'additionalDirectories':null}", src,
             x->dir);
    assert_non_null(jstr(result_of(r), "sessionId"));
    json_decref(r);
    h_free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(t_advertised),         cmocka_unit_test(t_fork_then_prompt),
        cmocka_unit_test(t_fork_modes),         cmocka_unit_test(t_fork_delete),
        cmocka_unit_test(t_fork_stored_source), cmocka_unit_test(t_fork_errors),
        cmocka_unit_test(t_fork_running_turn),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
