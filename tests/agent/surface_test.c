/* SPDX-License-Identifier: Apache-2.0 */
/* The agent runtime's protocol surface around the session lifecycle, driven in-process through
 * harness.h (bytes into acp_agent_conn(), the loop turned by hand, acp_agent_flush() where the
 * transport would call it, output parsed back, a real SQLite store in a temporary directory):
 * modes and config options (shapes, set_mode / set_config_option, vetoes, the boolean fallback,
 * the mode option kept in step, persistence, store failures, engine-initiated changes),
 * authentication (authMethods, authenticate, logout, the -32000 gate), extension methods both
 * ways, _meta, engine switches, capability gating of notices and compaction, compaction in a
 * load's replay and the session info sent after it.
 *
 * Expected JSON is written with single quotes (swapped for double quotes before parsing) and
 * compared whole with json_equal(): a missing or an extra member fails, as the schema's exact
 * shapes require.
 *
 * Tests named test_fixed_* each pin a runtime bug this suite found (the comment above each
 * says what went wrong). */
#include "harness.h"

/* --- what the test engine describes ------------------------------------------------------- */

static const acp_mode test_modes[] = {
    {"ask", "Ask", "Asks before every change"},
    {"code", "Code", NULL},
    {"plan", "Plan", "Read-only planning"},
};

static const acp_config_value mode_values[] = {
    {.value = "ask", .name = "Ask"},
    {.value = "code", .name = "Code"},
    {.value = "plan", .name = "Plan", .description = "Read-only planning"},
};

/* Grouped: two groups, the second with one value. */
static const acp_config_value model_values[] = {
    {"small", "Small", "Fast", "local", "Local models"},
    {"large", "Large", NULL, "local", "Local models"},
    {"cloud-1", "Cloud One", NULL, "cloud", "Cloud models"},
};

static const acp_config_value effort_values[] = {
    {.value = "low", .name = "Low"},
    {.value = "high", .name = "High", .description = "Thinks longer"},
};

/* In this order: the order is the agent's priority and must be kept. effort has no category
 * and no default (its first value). */
static const acp_config_option test_options[] = {
    {.id = "mode",
     .name = "Mode",
     .description = "Session mode",
     .category = "mode",
     .values = mode_values,
     .nvalues = 3,
     .default_value = "code"},
    {.id = "model",
     .name = "Model",
     .description = "Which model answers",
     .category = "model",
     .values = model_values,
     .nvalues = 3,
     .default_value = "large"},
    {.id = "verbose", .name = "Verbose", .category = "_test_flags", .boolean = true},
    {.id = "effort", .name = "Effort", .values = effort_values, .nvalues = 2},
};

/* What acp_session_set_config_options() replaces them with: a new model list (large kept,
 * huge new, the default), a mode option without "plan", a new option; verbose and effort go. */
static const acp_config_value model2_values[] = {
    {.value = "large", .name = "Large v2"},
    {.value = "huge", .name = "Huge"},
};
static const acp_config_value extra_values[] = {
    {.value = "x1", .name = "X one"},
    {.value = "x2", .name = "X two"},
};
static const acp_config_option replaced_options[] = {
    {.id = "model",
     .name = "Model",
     .category = "model",
     .values = model2_values,
     .nvalues = 2,
     .default_value = "huge"},
    {.id = "mode",
     .name = "Mode",
     .category = "mode",
     .values = mode_values,
     .nvalues = 2,
     .default_value = "ask"},
    {.id = "extra", .name = "Extra", .values = extra_values, .nvalues = 2},
};

static const char *const tui_args[] = {"--login", "--quiet", NULL};
static const char *const tui_env[] = {"ACP_LOGIN=1", "OPTS=a=b", NULL};
static const acp_auth_method test_auth[] = {
    {.id = "key", .name = "API key", .description = "Paste a key"},
    {.id = "tui",
     .name = "Terminal login",
     .description = "Runs the agent login",
     .terminal = true,
     .args = tui_args,
     .env = tui_env},
    {.id = "browser", .name = "Browser sign-in"},
    {.id = "tui2", .name = "Bare terminal", .terminal = true},
};

/* --- a store whose set_state can be made to fail ----------------------------------------- */

static bool fail_set_state;
static int set_state_calls;

static int failing_set_state(acp_store *st, const char *id, int64_t fence, const char *state)
{
    set_state_calls++;
    if (fail_set_state) return acp_error_set(ACP_ESTORE, "disk full (injected)");
    return real_ops->set_state(st, id, fence, state);
}

/* The next commit fails (once). */
static bool fail_commit;

static int failing_commit(acp_store *st, const char *now)
{
    if (!fail_commit) return real_ops->commit(st, now);
    fail_commit = false;
    return acp_error_set(ACP_ESTORE, "disk I/O error (injected)");
}

/* --- the engine's state ------------------------------------------------------------------- */

enum { AUTH_HOLD, AUTH_ACCEPT, AUTH_REFUSE };

struct eng_state {
    json_t *meta, *caps_meta; /* the engine's _meta values (borrowed by the agent) */
    int next_id;
    acp_session *sess; /* the session made ready last (NULL once freed) */
    acp_turn *held;
    int rc[8]; /* return codes the engine recorded (prompt commands) */
    /* session_setup / session_ready */
    bool setup_change, setup_replace, ready_change;
    int setup_rc[6], ready_rc;
    bool ready_saw_params, prompt_saw_params;
    /* vetoes */
    bool veto;
    int set_mode_calls, set_config_calls;
    char seen_id[64], seen_value[64], seen_before[64];
    bool seen_on;
    /* authentication */
    int auth_mode, auth_calls, logout_calls, logout_code;
    acp_auth *auth;
    char auth_method[64];
    json_t *auth_params;
    /* extension methods */
    int ext_requests, ext_notes, ext_answers, ext_error;
    json_t *ext_note, *ext_result;
    bool in_ext; /* the prompt handler is inside acp_agent_ext_notify() */
    /* the set_mode / set_config hook replaces the options (once) before accepting */
    bool mode_replace, config_replace;
    int cancels;
};

/* --- the engine ----------------------------------------------------------------------------- */

/* Sends an update written with single quotes through the untrusted raw path. */
static int turn_raw(acp_turn *t, const char *q)
{
    char *s = strdup(q);
    for (char *p = s; *p; p++)
        if (*p == '\'') *p = '"';
    int rc = acp_turn_update_raw(t, s, strlen(s), false);
    free(s);
    return rc;
}

static int session_raw(acp_session *s, const char *text)
{
    return acp_session_update_raw(s, text, strlen(text), false);
}

static const char *const compact_updates[] = {
    "{'sessionUpdate':'agent_message_chunk','messageId':'m_pre','content':{'type':'text',"
    "'text':'pre'}}",
    "{'sessionUpdate':'compaction_update','compactionId':'cmp_1','status':'in_progress'}",
    "{'sessionUpdate':'compaction_summary_chunk','compactionId':'cmp_1','content':{'type':"
    "'text','text':'summary'}}",
    "{'sessionUpdate':'compaction_update','compactionId':'cmp_1','status':'completed'}",
    "{'sessionUpdate':'agent_message_chunk','messageId':'m_post','content':{'type':'text',"
    "'text':'post'}}",
};

static void engine_prompt(acp_turn *t, const json_t *prompt, void *user)
{
    h *x = user;
    const char *text = jstr(json_array_get(prompt, 0), "text");
    x->e->prompt_saw_params |= acp_session_open_params(acp_turn_session(t)) != NULL;
    if (text && !strcmp(text, "compact")) {
        for (size_t i = 0; i < 5; i++) x->e->rc[i] = turn_raw(t, compact_updates[i]);
        acp_turn_end(t, "end_turn");
    } else if (text && !strncmp(text, "title ", 6)) {
        json_t *u = json_pack("{ss ss}", "sessionUpdate", "session_info_update", "title", text + 6);
        x->e->rc[0] = acp_turn_update(t, u);
        json_decref(u);
        acp_turn_end(t, "end_turn");
    } else if (text && !strcmp(text, "extnote")) {
        /* A history update is held for the store; the notification must not overtake it. */
        x->e->rc[0] = acp_turn_text(t, NULL, "m_x", "before", 6);
        x->e->in_ext = true;
        x->e->rc[1] = acp_agent_ext_notify(acp_session_agent(acp_turn_session(t)), "_test/progress",
                                           json_pack("{si}", "done", 50));
        x->e->in_ext = false;
        acp_turn_end(t, "end_turn");
    } else if (text && !strncmp(text, "setmode ", 8)) {
        /* a history chunk, then the engine's own mode change announced behind it */
        x->e->rc[0] = acp_turn_text(t, NULL, NULL, "switching", 9);
        x->e->rc[1] = acp_session_set_mode(acp_turn_session(t), text + 8);
        acp_turn_end(t, "end_turn");
    } else if (text && !strcmp(text, "wait")) {
        x->e->held = t;
    } else {
        acp_turn_text(t, NULL, NULL, "ok", 2);
        acp_turn_end(t, "end_turn");
    }
}

static void engine_cancel(acp_turn *t, void *user)
{
    h *x = user;
    assert_false(x->e->in_ext); /* never re-entrantly (agent.h) */
    x->e->cancels++;
    if (x->e->held == t) x->e->held = NULL;
    acp_turn_end(t, "cancelled");
}

static void engine_setup(acp_session *s, void *user)
{
    h *x = user;
    const json_t *p = acp_session_open_params(s);
    assert_non_null(p);
    if (x->e->setup_change) {
        x->e->setup_rc[0] = acp_session_set_mode(s, "plan");
        x->e->setup_rc[1] = acp_session_set_config(s, "model", "small");
        x->e->setup_rc[2] = acp_session_set_config_bool(s, "verbose", true);
    }
    if (x->e->setup_replace)
        x->e->setup_rc[3] = acp_session_set_config_options(s, replaced_options, 3);
    json_t *m = json_object_get(p, "_meta");
    if (m) {
        json_t *meta = json_pack("{sO ss}", "echo", m, "cwd", jstr(p, "cwd"));
        x->e->setup_rc[4] = acp_session_set_meta(s, meta);
        json_decref(meta);
        /* A malformed _meta is refused and leaves the good one in place. */
        json_t *bad = json_integer(7);
        x->e->setup_rc[5] = acp_session_set_meta(s, bad);
        json_decref(bad);
    }
}

static void engine_ready(acp_session *s, void *user)
{
    h *x = user;
    x->e->sess = s;
    x->e->ready_saw_params |= acp_session_open_params(s) != NULL;
    if (x->e->ready_change) x->e->ready_rc = acp_session_set_mode(s, "ask");
}

static void engine_free(acp_session *s, void *user)
{
    h *x = user;
    if (x->e->sess == s) x->e->sess = NULL;
}

static int engine_set_mode(acp_session *s, const char *mode_id, char **message, void *user)
{
    h *x = user;
    x->e->set_mode_calls++;
    snprintf(x->e->seen_id, sizeof x->e->seen_id, "%s", mode_id);
    snprintf(x->e->seen_before, sizeof x->e->seen_before, "%s", acp_session_mode(s));
    if (x->e->veto && !strcmp(mode_id, "plan")) {
        *message = strdup("plan mode needs a plan first");
        return -32042;
    }
    if (x->e->veto) *message = strdup("accepted: this sentence is freed by the runtime");
    if (x->e->mode_replace) {
        x->e->mode_replace = false;
        assert_int_equal(acp_session_set_config_options(s, test_options, 4), 0);
    }
    return 0;
}

static int engine_set_config(acp_session *s, const char *config_id, const char *value, bool on,
                             char **message, void *user)
{
    h *x = user;
    x->e->set_config_calls++;
    snprintf(x->e->seen_id, sizeof x->e->seen_id, "%s", config_id);
    snprintf(x->e->seen_value, sizeof x->e->seen_value, "%s", value ? value : "(null)");
    x->e->seen_on = on;
    const char *before = acp_session_config(s, config_id);
    bool b;
    if (!before && !acp_session_config_bool(s, config_id, &b)) before = b ? "(true)" : "(false)";
    snprintf(x->e->seen_before, sizeof x->e->seen_before, "%s", before ? before : "(none)");
    if (x->e->veto && value && !strcmp(value, "cloud-1")) return ACP_RPC_INVALID_PARAMS;
    if (x->e->veto && !strcmp(config_id, "verbose") && on) {
        *message = strdup("verbose output is locked");
        return ACP_RPC_INTERNAL_ERROR;
    }
    if (x->e->config_replace) {
        x->e->config_replace = false;
        assert_int_equal(acp_session_set_config_options(s, replaced_options, 3), 0);
        /* its arguments are still readable */
        snprintf(x->e->seen_value, sizeof x->e->seen_value, "%s", value ? value : "(null)");
    }
    return 0;
}

static void engine_authenticate(acp_auth *au, const char *method_id, void *user)
{
    h *x = user;
    x->e->auth_calls++;
    snprintf(x->e->auth_method, sizeof x->e->auth_method, "%s", method_id);
    assert_string_equal(acp_auth_method_id(au), method_id);
    assert_ptr_equal(acp_auth_agent(au), x->a);
    assert_false(acp_auth_cancelled(au));
    json_decref(x->e->auth_params);
    x->e->auth_params = json_deep_copy(acp_auth_params(au));
    if (x->e->auth_mode == AUTH_ACCEPT)
        acp_auth_accept(au);
    else if (x->e->auth_mode == AUTH_REFUSE)
        acp_auth_refuse(au, 0, "wrong key for %s", method_id);
    else
        x->e->auth = au;
}

static int engine_logout(acp_agent *a, char **message, void *user)
{
    h *x = user;
    x->e->logout_calls++;
    if (x->e->logout_code) {
        *message = strdup("still busy: try again");
        return x->e->logout_code;
    }
    *message = strdup("a sentence nobody reads (freed by the runtime)");
    return 0;
}

static void engine_defaults(h *x)
{
    x->eng = (acp_engine){.struct_size = sizeof(acp_engine),
                          .name = "surface-engine",
                          .title = "Surface",
                          .version = "2.0",
                          .meta = x->e->meta,
                          .caps_meta = x->e->caps_meta,
                          .modes = test_modes,
                          .nmodes = 3,
                          .default_mode = "code",
                          .config_options = test_options,
                          .nconfig_options = 4,
                          .set_mode = engine_set_mode,
                          .set_config = engine_set_config,
                          .auth_methods = test_auth,
                          .nauth_methods = 4,
                          .authenticate = engine_authenticate,
                          .logout = engine_logout,
                          .session_setup = engine_setup,
                          .session_ready = engine_ready,
                          .prompt = engine_prompt,
                          .cancel = engine_cancel,
                          .session_free = engine_free,
                          .user = x};
}

/* agent_stop(), and the engine's handles into that agent forgotten: no engine callback runs
 * once it is freed. */
static void stop(h *x)
{
    agent_stop(x);
    x->e->sess = NULL;
    x->e->held = NULL;
}

/* Replaces the agent with one running x->eng as the test has just set it (the same store). */
static void new_agent(h *x)
{
    stop(x);
    agent_start(x);
}

/* A restarted agent process: a fresh agent, a fresh store handle on the same SQLite file. */
static void restart(h *x)
{
    stop(x);
    store_close(x);
    store_open(x);
    agent_start(x);
}

static int setup(void **state)
{
    h *x = h_new("surface", sizeof(eng_state));
    fail_set_state = false;
    set_state_calls = 0;
    fail_commit = false;
    x->ops.set_state = failing_set_state;
    x->ops.commit = failing_commit;
    x->e->meta = J("{'test.dev/build':'abc','traceparent':'00-0af7651916cd43dd8448eb211c80319c-"
                   "b7ad6b7169203331-01'}");
    x->e->caps_meta = J("{'test.dev':{'methods':['_test/echo','_test/ping']}}");
    engine_defaults(x);
    agent_start(x);
    *state = x;
    return 0;
}

static int teardown(void **state)
{
    h *x = *state;
    if (x->a) agent_stop(x); /* before the _meta values it borrows go */
    json_decref(x->e->meta);
    json_decref(x->e->caps_meta);
    json_decref(x->e->auth_params);
    json_decref(x->e->ext_note);
    json_decref(x->e->ext_result);
    h_free(x);
    return 0;
}

/* --- requests ------------------------------------------------------------------------------ */

/* send_line() of a line written with single quotes. */
static void send_q(h *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void send_q(h *x, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *line = vquote(fmt, ap);
    va_end(ap);
    send_line(x, "%s", line);
    free(line);
}

/* Sends a request (params written with single quotes, printf-style) with the next id and
 * waits for its response, as take_response(). */
static json_t *call(h *x, const char *method, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static json_t *call(h *x, const char *method, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *p = vquote(fmt, ap);
    va_end(ap);
    json_t *r = request(x, ++x->e->next_id, method, p);
    free(p);
    return r;
}

/* Sends a request and does not wait: returns its id. */
static int send_request(h *x, const char *method, const char *params)
{
    int id = ++x->e->next_id;
    send_q(x, "{'jsonrpc':'2.0','id':%d,'method':'%s','params':%s}", id, method, params);
    return id;
}

static json_t *error_data(json_t *msgs)
{
    return json_object_get(json_object_get(last(msgs), "error"), "data");
}

/* Asserts that msgs ends with an error of `code` whose message contains every given word. */
static void expect_error(json_t *msgs, int code, const char *word1, const char *word2)
{
    if (error_code(msgs) != code) {
        char *d = json_dumps(last(msgs), JSON_COMPACT);
        fprintf(stderr, "expected error %d, got %s\n", code, d);
        free(d);
    }
    assert_int_equal(error_code(msgs), code);
    const char *m = error_message(msgs);
    assert_non_null(m);
    if (word1 && !strstr(m, word1)) fprintf(stderr, "'%s' not in '%s'\n", word1, m);
    if (word1) assert_non_null(strstr(m, word1));
    if (word2 && !strstr(m, word2)) fprintf(stderr, "'%s' not in '%s'\n", word2, m);
    if (word2) assert_non_null(strstr(m, word2));
}

/* Consumes msgs (decref) after checking it ends with that error. */
static void expect_error_d(json_t *msgs, int code, const char *word1, const char *word2)
{
    expect_error(msgs, code, word1, word2);
    json_decref(msgs);
}

/* Consumes msgs (decref) after checking it ends with exactly this result (stolen). */
static void expect_result_d(json_t *msgs, json_t *want)
{
    assert_json(result_of(msgs), want);
    json_decref(msgs);
}

/* Consumes msgs (decref) after checking they end with a prompt's response stopped for reason. */
static void expect_stop_d(json_t *msgs, const char *reason)
{
    assert_string_equal(stop_reason(last(msgs)), reason);
    json_decref(msgs);
}

/* The message (borrowed) that carries the first update of kind, or NULL. */
static json_t *msg_of(json_t *msgs, const char *kind)
{
    for (size_t i = 0; i < json_array_size(msgs); i++) {
        const char *k = jstr(update_at(msgs, i), "sessionUpdate");
        if (k && !strcmp(k, kind)) return json_array_get(msgs, i);
    }
    return NULL;
}

/* The first update of kind among msgs (borrowed), or NULL. */
static json_t *update_of(json_t *msgs, const char *kind)
{
    return json_object_get(params_of(msg_of(msgs, kind)), "update");
}

#define CAPS_NONE "{}"
#define CAPS_BOOL "{'session':{'configOptions':{'boolean':{}}}}"
#define CAPS_ALL                                                                                   \
    "{'session':{'configOptions':{'boolean':{}},'notices':{},'compaction':{}},'auth':{'terminal'"  \
    ":true}}"

/* initialize with these clientCapabilities; returns the messages (caller decrefs). */
static json_t *initialize(h *x, const char *caps)
{
    return call(x, "initialize",
                "{'protocolVersion':1,'clientCapabilities':%s,'clientInfo':{'name':'t','version':"
                "'1'}}",
                caps);
}

static void init(h *x, const char *caps)
{
    json_t *r = initialize(x, caps);
    assert_non_null(result_of(r));
    json_decref(r);
}

/* session/new in x->dir; the id goes to id (80 bytes). Returns the messages. */
static json_t *new_session_r(h *x, char *id)
{
    json_t *r = call(x, "session/new", "{'cwd':'%s','mcpServers':[]}", x->dir);
    const char *sid = jstr(result_of(r), "sessionId");
    assert_non_null(sid);
    snprintf(id, 80, "%s", sid);
    return r;
}

static void new_session(h *x, char *id)
{
    json_t *r = new_session_r(x, id);
    assert_int_equal(count_updates(r, NULL), 0);
    json_decref(r);
}

/* An agent on x->eng as the test has just set it, initialized with caps, and a session on it
 * (the messages); NULL when acp_agent_new() refused the description (ACP_EINVAL). */
static json_t *fresh_session(h *x, const char *caps, char *id)
{
    stop(x);
    int rc = acp_agent_new(&x->loop, x->st, &x->eng, NULL, &x->a);
    if (rc == ACP_EINVAL) return NULL;
    assert_int_equal(rc, 0);
    init(x, caps);
    return new_session_r(x, id);
}

static json_t *load(h *x, const char *id)
{
    return call(x, "session/load", "{'sessionId':'%s','cwd':'%s','mcpServers':[]}", id, x->dir);
}

/* session/resume: the messages up to its response. */
static json_t *resume(h *x, const char *id)
{
    return call(x, "session/resume", "{'sessionId':'%s','cwd':'%s'}", id, x->dir);
}

static json_t *set_mode(h *x, const char *id, const char *mode_json)
{
    return call(x, "session/set_mode", "{'sessionId':'%s','modeId':%s}", id, mode_json);
}

/* value_json is JSON text ('small' in single quotes, true, 7, ...); boolean adds
 * type: "boolean". */
static json_t *set_config(h *x, const char *id, const char *config, const char *value_json,
                          bool boolean)
{
    return call(x, "session/set_config_option", "{'sessionId':'%s','configId':'%s','value':%s%s}",
                id, config, value_json, boolean ? ",'type':'boolean'" : "");
}

static json_t *prompt(h *x, const char *id, const char *text)
{
    return call(x, "session/prompt", "{'sessionId':'%s','prompt':[{'type':'text','text':'%s'}]}",
                id, text);
}

/* --- expected shapes ---------------------------------------------------------------------- */

static json_t *want_modes(const char *current)
{
    return J("{'currentModeId':'%s','availableModes':[{'id':'ask','name':'Ask','description':"
             "'Asks before every change'},{'id':'code','name':'Code'},{'id':'plan','name':'Plan',"
             "'description':'Read-only planning'}]}",
             current);
}

/* The four test_options with these current values; bools: the client has
 * session.configOptions.boolean (else verbose is the select fallback). */
static json_t *want_options(const char *mode, const char *model, bool verbose, const char *effort,
                            bool bools)
{
    char vb[400];
    if (bools)
        snprintf(vb, sizeof vb,
                 "{'id':'verbose','name':'Verbose','category':'_test_flags','type':'boolean',"
                 "'currentValue':%s}",
                 verbose ? "true" : "false");
    else
        snprintf(vb, sizeof vb,
                 "{'id':'verbose','name':'Verbose','category':'_test_flags','type':'select',"
                 "'currentValue':'%s','options':[{'value':'true','name':'On'},{'value':'false',"
                 "'name':'Off'}]}",
                 verbose ? "true" : "false");
    return J("[{'id':'mode','name':'Mode','description':'Session mode','category':'mode','type':"
             "'select','currentValue':'%s','options':[{'value':'ask','name':'Ask'},{'value':'code',"
             "'name':'Code'},{'value':'plan','name':'Plan','description':'Read-only planning'}]},"
             "{'id':'model','name':'Model','description':'Which model answers','category':'model',"
             "'type':'select','currentValue':'%s','options':[{'group':'local','name':'Local "
             "models','options':[{'value':'small','name':'Small','description':'Fast'},{'value':"
             "'large','name':'Large'}]},{'group':'cloud','name':'Cloud models','options':[{'value':"
             "'cloud-1','name':'Cloud One'}]}]},"
             "%s,"
             "{'id':'effort','name':'Effort','type':'select','currentValue':'%s','options':[{"
             "'value':'low','name':'Low'},{'value':'high','name':'High','description':'Thinks "
             "longer'}]}]",
             mode, model, vb, effort);
}

/* A new (sid set) or load/resume (sid NULL) result of the test engine. */
static json_t *want_result(const char *sid, const char *mode, const char *model, bool verbose,
                           const char *effort, bool bools)
{
    json_t *r = json_pack("{so so}", "modes", want_modes(mode), "configOptions",
                          want_options(mode, model, verbose, effort, bools));
    if (sid) json_object_set_new(r, "sessionId", json_string(sid));
    return r;
}

static json_t *want_replaced(const char *model, const char *mode, const char *extra)
{
    return J("[{'id':'model','name':'Model','category':'model','type':'select','currentValue':"
             "'%s','options':[{'value':'large','name':'Large v2'},{'value':'huge','name':'Huge'}]},"
             "{'id':'mode','name':'Mode','category':'mode','type':'select','currentValue':'%s',"
             "'options':[{'value':'ask','name':'Ask'},{'value':'code','name':'Code'}]},"
             "{'id':'extra','name':'Extra','type':'select','currentValue':'%s','options':[{'value':"
             "'x1','name':'X one'},{'value':'x2','name':'X two'}]}]",
             model, mode, extra);
}

/* A set_config_option result with these options (stolen). */
static json_t *want_set(json_t *options)
{
    return json_pack("{so}", "configOptions", options);
}

/* The session's values through the engine's getters. */
static void assert_values(h *x, const char *mode, const char *model, bool verbose,
                          const char *effort)
{
    assert_non_null(x->e->sess);
    assert_string_equal(acp_session_mode(x->e->sess), mode);
    assert_string_equal(acp_session_config(x->e->sess, "mode"), mode);
    assert_string_equal(acp_session_config(x->e->sess, "model"), model);
    bool on = !verbose;
    assert_int_equal(acp_session_config_bool(x->e->sess, "verbose", &on), 0);
    assert_int_equal(on, verbose);
    assert_string_equal(acp_session_config(x->e->sess, "effort"), effort);
}

/* A session/update message's exact envelope, with update (stolen) for session sid. */
static void assert_update_msg(json_t *msg, const char *sid, json_t *update)
{
    json_t *want = json_pack("{ss ss s{ss so}}", "jsonrpc", "2.0", "method", "session/update",
                             "params", "sessionId", sid, "update", update);
    assert_json(msg, want);
}

/* --- initialize ------------------------------------------------------------------------------ */

/* The initialize result, exactly: capabilities, auth.logout (the hook is set), the engine's
 * _meta on the result and on agentCapabilities, authMethods with terminal methods only for a
 * client with auth.terminal (in declaration order, args and env as the schema's types), and a
 * second initialize replacing the client's capabilities. */
static void test_initialize_result(void **state)
{
    h *x = *state;
    x->opts.unstable_off = ACP_UNSTABLE_ALL; /* v1's surface (the unstable: sessmeta_test) */
    new_agent(x);
    static const char caps[] =
        "{'loadSession':true,'promptCapabilities':{'image':false,'audio':false,'embeddedContext':"
        "false},'mcpCapabilities':{'http':false,'sse':false},'sessionCapabilities':{'list':{},"
        "'delete':{},'resume':{},'close':{},'additionalDirectories':{}},'auth':{'logout':{}},"
        "'_meta':{'test.dev':{'methods':['_test/echo','_test/ping']}}}";
    static const char info[] = "{'name':'surface-engine','title':'Surface','version':'2.0'}";
    static const char meta[] =
        "{'test.dev/build':'abc','traceparent':'00-0af7651916cd43dd8448eb211c80319c-"
        "b7ad6b7169203331-01'}";
    static const char agent_methods[] =
        "{'id':'key','name':'API key','description':'Paste a key'},{'id':'browser','name':'Browser "
        "sign-in'}";
    static const char all_methods[] =
        "{'id':'key','name':'API key','description':'Paste a key'},{'id':'tui','name':'Terminal "
        "login','description':'Runs the agent login','type':'terminal','args':['--login','--"
        "quiet'],'env':{'ACP_LOGIN':'1','OPTS':'a=b'}},{'id':'browser','name':'Browser sign-in'},"
        "{'id':'tui2','name':'Bare terminal','type':'terminal','args':[],'env':{}}";

    json_t *r = initialize(x, CAPS_NONE);
    assert_int_equal(json_array_size(r), 1);
    assert_json(result_of(r), J("{'protocolVersion':1,'agentCapabilities':%s,'authMethods':[%s],"
                                "'agentInfo':%s,'_meta':%s}",
                                caps, agent_methods, info, meta));
    json_decref(r);

    /* auth.terminal false is no capability either */
    r = initialize(x, "{'auth':{'terminal':false}}");
    assert_json(json_object_get(result_of(r), "authMethods"), J("[%s]", agent_methods));
    json_decref(r);

    expect_result_d(initialize(x, CAPS_ALL),
                    J("{'protocolVersion':1,'agentCapabilities':%s,'authMethods':[%s],"
                      "'agentInfo':%s,'_meta':%s}",
                      caps, all_methods, info, meta));
    assert_true(acp_agent_client_has(x->a, "auth.terminal"));
    assert_true(acp_agent_client_has(x->a, "session.compaction"));

    /* A second initialize replaces the capabilities: the terminal methods are gone again. */
    r = initialize(x, CAPS_NONE);
    assert_json(json_object_get(result_of(r), "authMethods"), J("[%s]", agent_methods));
    json_decref(r);
    assert_false(acp_agent_client_has(x->a, "auth.terminal"));
    assert_false(acp_agent_client_has(x->a, "session.compaction"));
    assert_string_equal(jstr(json_object_get(acp_agent_init_params(x->a), "clientInfo"), "name"),
                        "t");
}

/* Without a logout hook, auth methods or _meta: no auth capability, authMethods [], no _meta,
 * and logout is an unknown method. */
static void test_initialize_minimal(void **state)
{
    h *x = *state;
    x->opts.unstable_off = ACP_UNSTABLE_ALL; /* v1's surface (the unstable: sessmeta_test) */
    x->eng.logout = NULL;
    x->eng.auth_methods = NULL;
    x->eng.nauth_methods = 0;
    x->eng.authenticate = NULL;
    x->eng.meta = NULL;
    x->eng.caps_meta = NULL;
    x->eng.title = NULL;
    new_agent(x);
    expect_result_d(
        initialize(x, CAPS_ALL),
        J("{'protocolVersion':1,'agentCapabilities':{'loadSession':true,"
          "'promptCapabilities':{'image':false,'audio':false,'embeddedContext':false},"
          "'mcpCapabilities':{'http':false,'sse':false},'sessionCapabilities':{'list':{},"
          "'delete':{},'resume':{},'close':{},'additionalDirectories':{}}},"
          "'authMethods':[],'agentInfo':{'name':'surface-engine','version':'2.0'}}"));
    expect_error_d(call(x, "logout", "{}"), ACP_RPC_METHOD_NOT_FOUND, "logout", NULL);
    expect_error_d(call(x, "authenticate", "{'methodId':'key'}"), ACP_RPC_INVALID_PARAMS, "key",
                   NULL);
    assert_int_equal(x->e->logout_calls, 0);
}

/* engine.disable: what is switched off is not advertised, its method is -32601, and
 * additionalDirectories is refused -32602 when not empty. */
static void test_disabled_capabilities(void **state)
{
    h *x = *state;
    x->opts.unstable_off = ACP_UNSTABLE_ALL; /* v1's surface (the unstable: sessmeta_test) */
    x->eng.disable = ACP_DISABLE_LOAD | ACP_DISABLE_RESUME | ACP_DISABLE_LIST | ACP_DISABLE_DELETE |
                     ACP_DISABLE_CLOSE | ACP_DISABLE_ADD_DIRS;
    new_agent(x);
    json_t *r = initialize(x, CAPS_NONE);
    json_t *caps = json_object_get(result_of(r), "agentCapabilities");
    assert_json(json_object_get(caps, "loadSession"), json_false());
    assert_json(json_object_get(caps, "sessionCapabilities"), J("{}"));
    json_decref(r);
    char id[80];
    new_session(x, id);
    expect_error_d(load(x, id), ACP_RPC_METHOD_NOT_FOUND, "session/load", NULL);
    expect_error_d(resume(x, id), ACP_RPC_METHOD_NOT_FOUND, "session/resume", NULL);
    expect_error_d(call(x, "session/list", "{}"), ACP_RPC_METHOD_NOT_FOUND, "session/list", NULL);
    expect_error_d(call(x, "session/delete", "{'sessionId':'%s'}", id), ACP_RPC_METHOD_NOT_FOUND,
                   "session/delete", NULL);
    expect_error_d(call(x, "session/close", "{'sessionId':'%s'}", id), ACP_RPC_METHOD_NOT_FOUND,
                   "session/close", NULL);
    expect_error_d(call(x, "session/new",
                        "{'cwd':'%s','mcpServers':[],'additionalDirectories':"
                        "['/tmp']}",
                        x->dir),
                   ACP_RPC_INVALID_PARAMS, "additionalDirectories", NULL);
    r = call(x, "session/new", "{'cwd':'%s','mcpServers':[],'additionalDirectories':[]}", x->dir);
    assert_non_null(jstr(result_of(r), "sessionId"));
    json_decref(r);
    /* the session is still there and works */
    expect_stop_d(prompt(x, id, "hi"), "end_turn");

    /* Only some switched off: the others stay advertised and served. */
    x->eng.disable = ACP_DISABLE_LIST | ACP_DISABLE_CLOSE;
    new_agent(x);
    r = initialize(x, CAPS_NONE);
    caps = json_object_get(result_of(r), "agentCapabilities");
    assert_json(json_object_get(caps, "loadSession"), json_true());
    assert_json(json_object_get(caps, "sessionCapabilities"),
                J("{'delete':{},'resume':{},'additionalDirectories':{}}"));
    json_decref(r);
    expect_error_d(call(x, "session/list", "{}"), ACP_RPC_METHOD_NOT_FOUND, NULL, NULL);
    expect_error_d(call(x, "session/close", "{'sessionId':'%s'}", id), ACP_RPC_METHOD_NOT_FOUND,
                   NULL, NULL);
    expect_result_d(load(x, id), want_result(NULL, "code", "large", false, "low", false));
}

/* --- modes and config options: shapes --------------------------------------------------------- */

/* session/new, load and resume results, exactly: sessionId (new only), modes
 * {currentModeId, availableModes}, configOptions in declaration order with groups, the
 * boolean option as boolean or as the "true"/"false" select; and the shapes of engines with
 * only modes, only options, or neither. */
static void test_setup_result_shapes(void **state)
{
    h *x = *state;
    init(x, CAPS_NONE);
    char id[80];
    json_t *r = new_session_r(x, id);
    assert_int_equal(json_array_size(r), 1);
    assert_json(result_of(r), want_result(id, "code", "large", false, "low", false));
    json_decref(r);
    assert_values(x, "code", "large", false, "low");
    /* the getters for what is not there, or not of that type */
    bool on;
    assert_null(acp_session_config(x->e->sess, "verbose"));
    assert_null(acp_session_config(x->e->sess, "nope"));
    assert_int_equal(acp_session_config_bool(x->e->sess, "model", &on), ACP_ENOTFOUND);
    assert_int_equal(acp_session_config_bool(x->e->sess, "nope", &on), ACP_ENOTFOUND);

    expect_result_d(load(x, id), want_result(NULL, "code", "large", false, "low", false));
    r = resume(x, id);
    assert_int_equal(json_array_size(r), 1); /* no replay */
    assert_json(result_of(r), want_result(NULL, "code", "large", false, "low", false));
    json_decref(r);

    /* a client with the boolean capability sees type boolean */
    init(x, CAPS_BOOL);
    r = new_session_r(x, id);
    assert_json(result_of(r), want_result(id, "code", "large", false, "low", true));
    json_decref(r);
    expect_result_d(resume(x, id), want_result(NULL, "code", "large", false, "low", true));

    /* modes only: no configOptions; set_config_option names the unknown option */
    x->eng.nconfig_options = 0;
    x->eng.config_options = NULL;
    r = fresh_session(x, CAPS_BOOL, id);
    assert_json(result_of(r), json_pack("{ss so}", "sessionId", id, "modes", want_modes("code")));
    json_decref(r);
    expect_error_d(set_config(x, id, "model", "'small'", false), ACP_RPC_INVALID_PARAMS, "model",
                   NULL);
    r = set_mode(x, id, "'plan'");
    assert_json(result_of(r), J("{}"));
    assert_int_equal(count_updates(r, NULL), 0); /* no mode option to follow */
    json_decref(r);

    /* options only: no modes; set_mode is refused; the mode option moves alone */
    engine_defaults(x);
    x->eng.nmodes = 0;
    x->eng.modes = NULL;
    x->eng.default_mode = NULL;
    r = fresh_session(x, CAPS_BOOL, id);
    assert_json(result_of(r), json_pack("{ss so}", "sessionId", id, "configOptions",
                                        want_options("code", "large", false, "low", true)));
    json_decref(r);
    assert_null(acp_session_mode(x->e->sess));
    expect_error_d(set_mode(x, id, "'plan'"), ACP_RPC_INVALID_PARAMS, "mode", NULL);
    r = set_config(x, id, "mode", "'plan'", false);
    assert_int_equal(count_updates(r, NULL), 0);
    assert_json(result_of(r), want_set(want_options("plan", "large", false, "low", true)));
    json_decref(r);

    /* neither: the result is the sessionId alone */
    x->eng.nconfig_options = 0;
    x->eng.config_options = NULL;
    r = fresh_session(x, CAPS_BOOL, id);
    assert_json(result_of(r), json_pack("{ss}", "sessionId", id));
    json_decref(r);
    expect_result_d(load(x, id), J("{}"));
}

/* --- session/set_mode and session/set_config_option
 * ----------------------------------------------- */

/* set_mode answers {} and the mode option follows with a config_option_update (the client
 * asked for the mode: no current_mode_update); the hook sees the old mode; a change to the
 * current mode sends nothing; a change during a running prompt is accepted; load returns it. */
static void test_set_mode(void **state)
{
    h *x = *state;
    init(x, CAPS_NONE);
    char id[80];
    new_session(x, id);
    json_t *r = set_mode(x, id, "'plan'");
    assert_int_equal(json_array_size(r), 2);
    assert_json(result_of(r), J("{}"));
    assert_int_equal(count_updates(r, "current_mode_update"), 0);
    assert_update_msg(json_array_get(r, 0), id,
                      json_pack("{ss so}", "sessionUpdate", "config_option_update", "configOptions",
                                want_options("plan", "large", false, "low", false)));
    json_decref(r);
    /* both vetoes were asked: the mode's, then the mode option's (which moves with it) */
    assert_int_equal(x->e->set_mode_calls, 1);
    assert_int_equal(x->e->set_config_calls, 1);
    assert_string_equal(x->e->seen_id, "mode");
    assert_string_equal(x->e->seen_value, "plan");
    assert_string_equal(x->e->seen_before, "code");
    assert_values(x, "plan", "large", false, "low");

    /* to the current mode: nothing moves, nothing is announced */
    r = set_mode(x, id, "'plan'");
    assert_int_equal(json_array_size(r), 1);
    assert_json(result_of(r), J("{}"));
    json_decref(r);

    /* while a prompt runs */
    int pid = ++x->e->next_id;
    send_prompt(x, pid, id, "wait");
    turn(x);
    assert_non_null(x->e->held);
    expect_result_d(set_mode(x, id, "'ask'"), J("{}"));
    assert_values(x, "ask", "large", false, "low");
    acp_turn_end(x->e->held, "end_turn");
    x->e->held = NULL;
    expect_stop_d(take_response(x, pid), "end_turn");

    r = load(x, id);
    assert_json(result_of(r), want_result(NULL, "ask", "large", false, "low", false));
    assert_int_equal(count_updates(r, "current_mode_update"), 0);
    assert_int_equal(count_updates(r, "config_option_update"), 0);
    json_decref(r);
    assert_values(x, "ask", "large", false, "low");
}

/* set_config_option answers the complete option list with current values; the mode option
 * moves the mode (announced with current_mode_update only: the answer carries the options);
 * other options send no update; the hook gets the id, the value and the old value. */
static void test_set_config_option(void **state)
{
    h *x = *state;
    init(x, CAPS_NONE);
    char id[80];
    new_session(x, id);
    json_t *r = set_config(x, id, "model", "'small'", false);
    assert_int_equal(json_array_size(r), 1);
    assert_json(result_of(r), want_set(want_options("code", "small", false, "low", false)));
    json_decref(r);
    assert_string_equal(x->e->seen_id, "model");
    assert_string_equal(x->e->seen_value, "small");
    assert_string_equal(x->e->seen_before, "large");

    r = set_config(x, id, "mode", "'plan'", false);
    assert_int_equal(json_array_size(r), 2);
    assert_int_equal(count_updates(r, "config_option_update"), 0);
    assert_update_msg(json_array_get(r, 0), id,
                      J("{'sessionUpdate':'current_mode_update','currentModeId':'plan'}"));
    assert_json(result_of(r), want_set(want_options("plan", "small", false, "low", false)));
    json_decref(r);
    /* the option's hook was asked, and the mode's too: neither veto can be gone round */
    assert_int_equal(x->e->set_mode_calls, 1);
    assert_string_equal(x->e->seen_id, "mode");

    r = set_config(x, id, "effort", "'high'", false);
    assert_int_equal(json_array_size(r), 1);
    json_decref(r);
    r = set_config(x, id, "model", "'cloud-1'", false); /* from the second group */
    assert_json(result_of(r), want_set(want_options("plan", "cloud-1", false, "high", false)));
    json_decref(r);
    assert_string_equal(x->e->seen_before, "small");
    assert_values(x, "plan", "cloud-1", false, "high");

    /* back through set_mode: the option follows */
    r = set_mode(x, id, "'code'");
    assert_json(json_object_get(update_of(r, "config_option_update"), "configOptions"),
                want_options("code", "cloud-1", false, "high", false));
    json_decref(r);
    assert_values(x, "code", "cloud-1", false, "high");

    expect_result_d(load(x, id), want_result(NULL, "code", "cloud-1", false, "high", false));
}

/* expect_error_d(), the messages kept at the end of all. */
static void bad(json_t *all, json_t *msgs, int code, const char *word1, const char *word2)
{
    expect_error(msgs, code, word1, word2);
    json_array_extend(all, msgs);
    json_decref(msgs);
}

/* Bad input: unknown ids, values of the wrong type or not among the options, missing members,
 * unknown sessions. Each is -32602 (-32002 for the session) naming what is wrong; nothing is
 * stored, announced or asked of the hooks, and the values stay (getters, a following load). */
static void test_bad_input(void **state)
{
    h *x = *state;
    init(x, CAPS_BOOL);
    char id[80];
    new_session(x, id);
    json_decref(set_config(x, id, "model", "'cloud-1'", false));
    json_decref(set_config(x, id, "verbose", "true", true));
    assert_values(x, "code", "cloud-1", true, "low");
    int writes = set_state_calls, mode_calls = x->e->set_mode_calls,
        config_calls = x->e->set_config_calls;
    /* every message of the bad requests; the last is the latest answer */
    json_t *all = json_array();
    bad(all, set_mode(x, id, "'nope'"), ACP_RPC_INVALID_PARAMS, "nope", NULL);
    assert_json(error_data(all), J("{'modeId':'nope'}"));
    bad(all, set_mode(x, id, "7"), ACP_RPC_INVALID_PARAMS, "modeId", NULL);
    bad(all, set_mode(x, id, "null"), ACP_RPC_INVALID_PARAMS, "modeId", NULL);
    bad(all, call(x, "session/set_mode", "{'sessionId':'%s'}", id), ACP_RPC_INVALID_PARAMS,
        "modeId", NULL);
    bad(all, call(x, "session/set_mode", "{'modeId':'plan'}"), ACP_RPC_INVALID_PARAMS, "sessionId",
        NULL);
    bad(all, set_mode(x, "sess_unknown", "'plan'"), ACP_RPC_NOT_FOUND, NULL, NULL);
    assert_string_equal(jstr(error_data(all), "sessionId"), "sess_unknown");

    bad(all, set_config(x, id, "nope", "'x'", false), ACP_RPC_INVALID_PARAMS, "nope", NULL);
    assert_json(error_data(all), J("{'configId':'nope'}"));
    bad(all, set_config(x, id, "model", "'medium'", false), ACP_RPC_INVALID_PARAMS, "model",
        "medium");
    assert_json(error_data(all), J("{'configId':'model','value':'medium'}"));
    bad(all, set_config(x, id, "model", "'Small'", false), ACP_RPC_INVALID_PARAMS, "Small", NULL);
    /* a group id is not a value */
    bad(all, set_config(x, id, "model", "'local'", false), ACP_RPC_INVALID_PARAMS, "local", NULL);
    /* a value of the wrong type is refused at the edge, which names the member by its path */
    bad(all, set_config(x, id, "model", "3", false), ACP_RPC_INVALID_PARAMS,
        "params.value must be a string", NULL);
    assert_json(error_data(all), J("{'path':'params.value'}"));
    bad(all, set_config(x, id, "model", "null", false), ACP_RPC_INVALID_PARAMS, "params.value",
        NULL);
    bad(all, set_config(x, id, "effort", "['low']", false), ACP_RPC_INVALID_PARAMS, "params.value",
        NULL);
    bad(all, set_config(x, id, "model", "true", true), ACP_RPC_INVALID_PARAMS, "model", NULL);
    bad(all, set_config(x, id, "mode", "'nope'", false), ACP_RPC_INVALID_PARAMS, "mode", "nope");
    /* this client advertised booleans: a string is the wrong type */
    bad(all, set_config(x, id, "verbose", "'false'", false), ACP_RPC_INVALID_PARAMS, "verbose",
        NULL);
    bad(all, set_config(x, id, "verbose", "1", true), ACP_RPC_INVALID_PARAMS,
        "params.value must be a boolean", NULL);
    /* {"type":"boolean","value":"false"} is the value id "false" (the schema's anyOf) */
    bad(all, set_config(x, id, "verbose", "'false'", true), ACP_RPC_INVALID_PARAMS, "verbose",
        NULL);
    bad(all,
        call(x, "session/set_config_option",
             "{'sessionId':'%s','configId':'verbose','type':'boolean'}", id),
        ACP_RPC_INVALID_PARAMS, "params.value is required", NULL);
    bad(all, call(x, "session/set_config_option", "{'sessionId':'%s','configId':'model'}", id),
        ACP_RPC_INVALID_PARAMS, "params.value is required", NULL);
    bad(all, call(x, "session/set_config_option", "{'sessionId':'%s','value':'small'}", id),
        ACP_RPC_INVALID_PARAMS, "configId", NULL);
    bad(all,
        call(x, "session/set_config_option", "{'sessionId':'%s','configId':7,'value':'small'}", id),
        ACP_RPC_INVALID_PARAMS, "configId", NULL);
    bad(all, set_config(x, "sess_unknown", "model", "'small'", false), ACP_RPC_NOT_FOUND, NULL,
        NULL);
    assert_string_equal(jstr(error_data(all), "sessionId"), "sess_unknown");

    assert_int_equal(count_updates(all, NULL), 0);
    json_decref(all);
    assert_int_equal(set_state_calls, writes);
    assert_int_equal(x->e->set_mode_calls, mode_calls);
    assert_int_equal(x->e->set_config_calls, config_calls);
    assert_values(x, "code", "cloud-1", true, "low");
    expect_result_d(load(x, id), want_result(NULL, "code", "cloud-1", true, "low", true));
    assert_values(x, "code", "cloud-1", true, "low");
}

/* The engine's vetoes: its code and sentence (or a generic sentence), the value unchanged and
 * nothing announced; a sentence given with an acceptance is freed (the leak checker watches). */
static void test_vetoes(void **state)
{
    h *x = *state;
    x->e->veto = true;
    init(x, CAPS_BOOL);
    char id[80];
    new_session(x, id);
    json_t *r = set_mode(x, id, "'plan'");
    assert_int_equal(json_array_size(r), 1);
    expect_error_d(r, -32042, "plan mode needs a plan first", NULL);
    assert_values(x, "code", "large", false, "low");
    /* the mode option cannot get round the mode's veto */
    r = set_config(x, id, "mode", "'plan'", false);
    assert_int_equal(json_array_size(r), 1);
    expect_error_d(r, -32042, "plan mode needs a plan first", NULL);
    assert_values(x, "code", "large", false, "low");

    r = set_config(x, id, "model", "'cloud-1'", false);
    assert_int_equal(json_array_size(r), 1);
    expect_error(r, ACP_RPC_INVALID_PARAMS, NULL, NULL);
    assert_true(strlen(error_message(r)) > 0);
    json_decref(r);
    assert_string_equal(x->e->seen_id, "model");
    assert_string_equal(x->e->seen_value, "cloud-1");

    r = set_config(x, id, "verbose", "true", true);
    expect_error_d(r, ACP_RPC_INTERNAL_ERROR, "verbose output is locked", NULL);
    assert_string_equal(x->e->seen_value, "(null)"); /* a boolean: value NULL, on holds it */
    assert_true(x->e->seen_on);
    assert_string_equal(x->e->seen_before, "(false)");
    assert_values(x, "code", "large", false, "low");

    /* accepted (with a sentence the runtime frees) */
    expect_result_d(set_mode(x, id, "'ask'"), J("{}"));
    r = set_config(x, id, "verbose", "false", true);
    assert_non_null(result_of(r));
    json_decref(r);
    assert_false(x->e->seen_on);
    assert_values(x, "ask", "large", false, "low");
    expect_result_d(load(x, id), want_result(NULL, "ask", "large", false, "low", true));
}

/* The boolean option: a select of "true"/"false" for a client without
 * session.configOptions.boolean (null counts as without), set with those strings and never
 * with type boolean; type boolean with a boolean for a client with it, and never a string. The
 * engine sees a boolean either way. */
static void test_boolean_fallback(void **state)
{
    h *x = *state;
    init(x, CAPS_NONE);
    char id[80];
    new_session(x, id);
    json_t *r = set_config(x, id, "verbose", "'true'", false);
    assert_int_equal(json_array_size(r), 1);
    assert_json(result_of(r), want_set(want_options("code", "large", true, "low", false)));
    json_decref(r);
    assert_string_equal(x->e->seen_value, "(null)");
    assert_true(x->e->seen_on);
    assert_values(x, "code", "large", true, "low");
    expect_result_d(set_config(x, id, "verbose", "'false'", false),
                    want_set(want_options("code", "large", false, "low", false)));
    assert_false(x->e->seen_on);
    expect_error_d(set_config(x, id, "verbose", "'yes'", false), ACP_RPC_INVALID_PARAMS, "verbose",
                   NULL);
    expect_error_d(set_config(x, id, "verbose", "'On'", false), ACP_RPC_INVALID_PARAMS, "verbose",
                   NULL);
    expect_error_d(set_config(x, id, "verbose", "true", true), ACP_RPC_INVALID_PARAMS, "verbose",
                   NULL);
    expect_error_d(set_config(x, id, "verbose", "true", false), ACP_RPC_INVALID_PARAMS,
                   "params.value must be a string", NULL);
    assert_values(x, "code", "large", false, "low");
    json_decref(set_config(x, id, "verbose", "'true'", false));

    /* boolean: null is no capability */
    init(x, "{'session':{'configOptions':{'boolean':null}}}");
    expect_result_d(load(x, id), want_result(NULL, "code", "large", true, "low", false));

    init(x, CAPS_BOOL);
    expect_result_d(load(x, id), want_result(NULL, "code", "large", true, "low", true));
    expect_result_d(set_config(x, id, "verbose", "false", true),
                    want_set(want_options("code", "large", false, "low", true)));
    assert_false(x->e->seen_on);
    expect_error_d(set_config(x, id, "verbose", "'true'", false), ACP_RPC_INVALID_PARAMS, "verbose",
                   NULL);
    assert_values(x, "code", "large", false, "low");
    expect_result_d(resume(x, id), want_result(NULL, "code", "large", false, "low", true));
}

/* The values survive an agent restart on the same SQLite file, per session, in both load and
 * resume results, shown to each client as it can take them; a stored value the engine no
 * longer offers falls back to the option's default. */
static void test_persist_restart(void **state)
{
    h *x = *state;
    init(x, CAPS_BOOL);
    char id[80], other[80];
    new_session(x, id);
    new_session(x, other);
    json_decref(set_mode(x, id, "'plan'"));
    json_decref(set_config(x, id, "model", "'cloud-1'", false));
    json_decref(set_config(x, id, "verbose", "true", true));
    json_decref(set_config(x, id, "effort", "'high'", false));
    json_decref(set_config(x, other, "effort", "'high'", false));

    restart(x);
    init(x, CAPS_BOOL);
    expect_result_d(load(x, id), want_result(NULL, "plan", "cloud-1", true, "high", true));
    assert_values(x, "plan", "cloud-1", true, "high");
    expect_result_d(resume(x, id), want_result(NULL, "plan", "cloud-1", true, "high", true));
    assert_values(x, "plan", "cloud-1", true, "high");
    expect_result_d(load(x, other), want_result(NULL, "code", "large", false, "high", true));

    restart(x);
    init(x, CAPS_NONE);
    expect_result_d(resume(x, id), want_result(NULL, "plan", "cloud-1", true, "high", false));

    /* an engine update dropped cloud-1, the model's last value (static: the agent borrows the
     * options until teardown) */
    static acp_config_option v2[4];
    memcpy(v2, test_options, sizeof v2);
    v2[1].nvalues = 2;
    x->eng.config_options = v2;
    new_agent(x);
    init(x, CAPS_BOOL);
    json_t *r = load(x, id);
    json_t *want = want_result(NULL, "plan", "large", true, "high", true);
    json_t *model = json_array_get(json_object_get(want, "configOptions"), 1);
    json_t *groups = json_object_get(model, "options");
    json_array_remove(groups, 1); /* the cloud group went with its only value */
    assert_json(result_of(r), want);
    json_decref(r);
    assert_string_equal(acp_session_config(x->e->sess, "model"), "large");
}

/* The store failing while a change is recorded: -32603 naming the store, nothing announced,
 * the values unchanged (getters, and a load once the store is back); engine-initiated
 * changes fail with ACP_ESTORE the same way; a session deleted behind the agent's back is
 * -32002. */
static void test_store_failure(void **state)
{
    h *x = *state;
    init(x, CAPS_BOOL);
    char id[80];
    new_session(x, id);
    json_decref(set_config(x, id, "model", "'cloud-1'", false));
    fail_set_state = true;
    static const char sentence[] = "session store unavailable: disk full (injected)";
    json_t *r = set_config(x, id, "model", "'small'", false);
    assert_int_equal(json_array_size(r), 1);
    expect_error(r, ACP_RPC_INTERNAL_ERROR, sentence, NULL);
    assert_string_equal(error_message(r), sentence);
    json_decref(r);
    r = set_config(x, id, "mode", "'plan'", false);
    assert_int_equal(json_array_size(r), 1); /* no current_mode_update */
    expect_error_d(r, ACP_RPC_INTERNAL_ERROR, sentence, NULL);
    r = set_mode(x, id, "'plan'");
    assert_int_equal(json_array_size(r), 1); /* no config_option_update */
    expect_error_d(r, ACP_RPC_INTERNAL_ERROR, sentence, NULL);
    r = set_config(x, id, "verbose", "true", true);
    assert_int_equal(json_array_size(r), 1);
    expect_error_d(r, ACP_RPC_INTERNAL_ERROR, sentence, NULL);
    assert_values(x, "code", "cloud-1", false, "low");

    assert_int_equal(acp_session_set_mode(x->e->sess, "ask"), ACP_ESTORE);
    assert_errmsg(x, "disk full");
    assert_int_equal(acp_session_set_config(x->e->sess, "mode", "ask"), ACP_ESTORE);
    assert_int_equal(acp_session_set_config(x->e->sess, "model", "small"), ACP_ESTORE);
    assert_int_equal(acp_session_set_config_bool(x->e->sess, "verbose", true), ACP_ESTORE);
    turn(x);
    assert_int_equal(json_array_size(x->msgs), 0);
    assert_values(x, "code", "cloud-1", false, "low");

    fail_set_state = false;
    expect_result_d(load(x, id), want_result(NULL, "code", "cloud-1", false, "low", true));

    /* deleted by another process */
    assert_int_equal(acp_store_delete(x->st, id), 0);
    r = set_mode(x, id, "'plan'");
    expect_error(r, ACP_RPC_NOT_FOUND, NULL, NULL);
    assert_string_equal(jstr(error_data(r), "sessionId"), id);
    json_decref(r);
}

/* --- engine-initiated changes ---------------------------------------------------------------- */

/* Changes in session_setup (before the session is answered) go into the result and are not
 * announced; they are stored (the next load returns them) also when made during a load. */
static void test_engine_changes_in_setup(void **state)
{
    h *x = *state;
    x->e->setup_change = true;
    init(x, CAPS_BOOL);
    char id[80];
    json_t *r = new_session_r(x, id);
    assert_int_equal(json_array_size(r), 1);
    assert_json(result_of(r), want_result(id, "plan", "small", true, "low", true));
    json_decref(r);
    for (int i = 0; i < 3; i++) assert_int_equal(x->e->setup_rc[i], 0);
    turn(x);
    assert_int_equal(count_updates(x->msgs, NULL), 0);

    x->e->setup_change = false;
    expect_result_d(load(x, id), want_result(NULL, "plan", "small", true, "low", true));

    /* the client moves away; a load whose setup moves back reports it only in the result */
    json_decref(set_mode(x, id, "'ask'"));
    json_decref(set_config(x, id, "model", "'large'", false));
    x->e->setup_change = true;
    r = load(x, id);
    assert_int_equal(count_updates(r, "current_mode_update"), 0);
    assert_int_equal(count_updates(r, "config_option_update"), 0);
    assert_json(result_of(r), want_result(NULL, "plan", "small", true, "low", true));
    json_decref(r);
    r = resume(x, id);
    assert_int_equal(json_array_size(r), 1);
    assert_json(result_of(r), want_result(NULL, "plan", "small", true, "low", true));
    json_decref(r);
    turn(x);
    assert_int_equal(count_updates(x->msgs, NULL), 0); /* a resume sends nothing after it either */
}

/* Changes once the session is open (from session_ready on: after the response) are stored and
 * announced: current_mode_update and/or config_option_update with the complete list, the
 * mode option and the mode moving together; invalid ones are ACP_EINVAL and send nothing. */
static void test_engine_changes_when_open(void **state)
{
    h *x = *state;
    x->e->ready_change = true;
    init(x, CAPS_NONE);
    char id[80];
    json_t *r = new_session_r(x, id);
    assert_json(result_of(r), want_result(id, "code", "large", false, "low", false));
    json_decref(r);
    assert_int_equal(x->e->ready_rc, 0);
    turn(x); /* the announcements follow the response */
    assert_int_equal(json_array_size(x->msgs), 2);
    assert_update_msg(msg_of(x->msgs, "current_mode_update"), id,
                      J("{'sessionUpdate':'current_mode_update','currentModeId':'ask'}"));
    assert_update_msg(msg_of(x->msgs, "config_option_update"), id,
                      json_pack("{ss so}", "sessionUpdate", "config_option_update", "configOptions",
                                want_options("ask", "large", false, "low", false)));
    json_array_clear(x->msgs);
    x->e->ready_change = false;
    acp_session *s = x->e->sess;

    assert_int_equal(acp_session_set_config(s, "model", "cloud-1"), 0);
    turn(x);
    assert_int_equal(json_array_size(x->msgs), 1);
    assert_update_msg(json_array_get(x->msgs, 0), id,
                      json_pack("{ss so}", "sessionUpdate", "config_option_update", "configOptions",
                                want_options("ask", "cloud-1", false, "low", false)));
    json_array_clear(x->msgs);

    assert_int_equal(acp_session_set_config(s, "mode", "plan"), 0);
    turn(x);
    assert_int_equal(json_array_size(x->msgs), 2);
    assert_json(json_object_get(update_of(x->msgs, "current_mode_update"), "currentModeId"),
                json_string("plan"));
    assert_json(json_object_get(update_of(x->msgs, "config_option_update"), "configOptions"),
                want_options("plan", "cloud-1", false, "low", false));
    json_array_clear(x->msgs);

    assert_int_equal(acp_session_set_config_bool(s, "verbose", true), 0);
    turn(x);
    assert_int_equal(json_array_size(x->msgs), 1);
    assert_json(json_object_get(update_of(x->msgs, "config_option_update"), "configOptions"),
                want_options("plan", "cloud-1", true, "low", false));
    json_array_clear(x->msgs);

    assert_int_equal(acp_session_set_mode(s, "code"), 0);
    turn(x);
    assert_int_equal(json_array_size(x->msgs), 2);
    assert_json(json_object_get(update_of(x->msgs, "current_mode_update"), "currentModeId"),
                json_string("code"));
    assert_json(json_object_get(update_of(x->msgs, "config_option_update"), "configOptions"),
                want_options("code", "cloud-1", true, "low", false));
    json_array_clear(x->msgs);

    /* invalid: refused, nothing sent */
    int writes = set_state_calls;
    assert_int_equal(acp_session_set_mode(s, "nope"), ACP_EINVAL);
    assert_errmsg(x, "nope");
    assert_int_equal(acp_session_set_mode(s, NULL), ACP_EINVAL);
    assert_int_equal(acp_session_set_config(s, "nope", "x"), ACP_EINVAL);
    assert_errmsg(x, "nope");
    assert_int_equal(acp_session_set_config(s, "model", "medium"), ACP_EINVAL);
    assert_errmsg(x, "medium");
    assert_int_equal(acp_session_set_config(s, "model", NULL), ACP_EINVAL);
    assert_int_equal(acp_session_set_config(s, "verbose", "true"), ACP_EINVAL);
    assert_int_equal(acp_session_set_config_bool(s, "model", true), ACP_EINVAL);
    assert_int_equal(acp_session_set_config_bool(s, "nope", true), ACP_EINVAL);
    turn(x);
    assert_int_equal(json_array_size(x->msgs), 0);
    assert_int_equal(set_state_calls, writes);
    assert_values(x, "code", "cloud-1", true, "low");

    expect_result_d(load(x, id), want_result(NULL, "code", "cloud-1", true, "low", false));
}

/* acp_session_set_config_options(): the new list is announced whole; values are kept where
 * the option still has them, else the new default; the mode follows a mode option that lost
 * its value; a malformed list is ACP_EINVAL and changes nothing; an engine that replaces the
 * list again in session_setup gets the stored values back in the load result. */
static void test_replace_options(void **state)
{
    h *x = *state;
    init(x, CAPS_BOOL);
    char id[80];
    new_session(x, id);
    json_decref(set_mode(x, id, "'plan'"));
    acp_session *s = x->e->sess;
    assert_int_equal(acp_session_set_config_options(s, replaced_options, 3), 0);
    turn(x);
    assert_int_equal(json_array_size(x->msgs), 2);
    assert_json(json_object_get(update_of(x->msgs, "current_mode_update"), "currentModeId"),
                json_string("ask"));
    assert_update_msg(msg_of(x->msgs, "config_option_update"), id,
                      json_pack("{ss so}", "sessionUpdate", "config_option_update", "configOptions",
                                want_replaced("large", "ask", "x1")));
    json_array_clear(x->msgs);
    assert_string_equal(acp_session_mode(s), "ask");
    assert_string_equal(acp_session_config(s, "model"), "large");
    assert_string_equal(acp_session_config(s, "extra"), "x1");
    assert_null(acp_session_config(s, "effort"));
    bool on;
    assert_int_equal(acp_session_config_bool(s, "verbose", &on), ACP_ENOTFOUND);

    /* stored: a load (the engine's static list again) has the mode that followed */
    expect_result_d(load(x, id), want_result(NULL, "ask", "large", false, "low", true));
    s = x->e->sess;
    assert_int_equal(acp_session_set_config_options(s, replaced_options, 3), 0);
    turn(x);
    assert_int_equal(json_array_size(x->msgs), 1); /* the mode stays: only the options */
    assert_json(json_object_get(update_of(x->msgs, "config_option_update"), "configOptions"),
                want_replaced("large", "ask", "x1"));
    json_array_clear(x->msgs);

    /* the client works with the new list */
    expect_result_d(set_config(x, id, "extra", "'x2'", false),
                    want_set(want_replaced("large", "ask", "x2")));
    expect_error_d(set_config(x, id, "effort", "'high'", false), ACP_RPC_INVALID_PARAMS, "effort",
                   NULL);

    /* malformed: refused, nothing changes */
    static const acp_config_option bad[] = {
        {.id = "m", .name = "M", .values = effort_values, .nvalues = 2, .default_value = "medium"}};
    assert_int_equal(acp_session_set_config_options(s, bad, 1), ACP_EINVAL);
    assert_errmsg(x, "medium");
    turn(x);
    assert_int_equal(json_array_size(x->msgs), 0);
    assert_string_equal(acp_session_config(s, "extra"), "x2");

    /* a load: the engine's static list with the stored values, or (replaced again in
     * session_setup) the replaced list with the stored values, extra included */
    expect_result_d(load(x, id), want_result(NULL, "ask", "large", false, "low", true));
    x->e->setup_replace = true;
    json_t *r = load(x, id);
    assert_int_equal(x->e->setup_rc[3], 0);
    assert_int_equal(count_updates(r, "config_option_update"), 0);
    assert_json(result_of(r), json_pack("{so so}", "modes", want_modes("ask"), "configOptions",
                                        want_replaced("large", "ask", "x2")));
    json_decref(r);
}

/* --- what the engine may not send, and what the client must have opted into ----------------- */

/* current_mode_update and config_option_update are the runtime's: ACP_EINVAL, nothing sent,
 * nothing changed. */
static void test_raw_mode_updates_refused(void **state)
{
    h *x = *state;
    init(x, CAPS_ALL);
    char id[80];
    new_session(x, id);
    json_t *u = J("{'sessionUpdate':'current_mode_update','currentModeId':'plan'}");
    assert_int_equal(acp_session_update(x->e->sess, u), ACP_EINVAL);
    assert_errmsg(x, "acp_session_set_mode");
    json_decref(u);
    u = J("{'sessionUpdate':'config_option_update','configOptions':[]}");
    assert_int_equal(acp_session_update(x->e->sess, u), ACP_EINVAL);
    json_decref(u);
    assert_int_equal(session_raw(x->e->sess, "{\"sessionUpdate\":\"current_mode_update\","
                                             "\"currentModeId\":\"ask\"}"),
                     ACP_EINVAL);
    assert_int_equal(session_raw(x->e->sess, "{\"configOptions\":[],\"sessionUpdate\":"
                                             "\"config_option_update\"}"),
                     ACP_EINVAL);
    turn(x);
    assert_int_equal(json_array_size(x->msgs), 0);
    assert_values(x, "code", "large", false, "low");
    json_t *r = load(x, id);
    assert_int_equal(count_updates(r, NULL), 1); /* only the session info */
    json_decref(r);
}

/* notice needs session.notices: ACP_ENOTSUP naming the capability, nothing sent or stored, also
 * inside a turn. compaction_update and compaction_summary_chunk go out only with
 * session.compaction but are stored either way (an engine rebuilds its context from them on
 * load). A notice is never stored. */
static void test_capability_gating(void **state)
{
    h *x = *state;
    init(x, CAPS_NONE);
    char id[80];
    new_session(x, id);
    json_t *notice = J("{'sessionUpdate':'notice','severity':'warning','title':'Rate limited'}");
    json_t *cu =
        J("{'sessionUpdate':'compaction_update','compactionId':'c0','status':'completed'}");
    json_t *cs = J("{'sessionUpdate':'compaction_summary_chunk','compactionId':'c0','content':{"
                   "'type':'text','text':'sum'}}");
    assert_int_equal(acp_session_update(x->e->sess, notice), ACP_ENOTSUP);
    assert_errmsg(x, "session.notices");
    assert_int_equal(acp_session_update(x->e->sess, cu), 0);
    assert_int_equal(acp_session_update(x->e->sess, cs), 0);
    turn(x);
    assert_int_equal(json_array_size(x->msgs), 0); /* nothing sent */
    assert_int_equal(stored(x, id), 2);            /* but the compaction is history */

    /* inside a turn: the chunks go, the compaction is only stored */
    json_t *r = prompt(x, id, "compact");
    for (int i = 0; i < 5; i++) assert_int_equal(x->e->rc[i], 0);
    assert_int_equal(count_updates(r, NULL), 2);
    assert_int_equal(count_updates(r, "agent_message_chunk"), 2);
    assert_string_equal(stop_reason(last(r)), "end_turn");
    json_decref(r);
    assert_int_equal(stored(x, id), 8); /* + the user message, two chunks, three compactions */

    /* notices only (compaction null is no capability) */
    init(x, "{'session':{'notices':{},'compaction':null}}");
    assert_int_equal(acp_session_update(x->e->sess, notice), 0);
    assert_int_equal(acp_session_update(x->e->sess, cu), 0);
    turn(x);
    assert_int_equal(json_array_size(x->msgs), 1);
    assert_update_msg(json_array_get(x->msgs, 0), id, json_incref(notice));
    json_array_clear(x->msgs);
    assert_int_equal(stored(x, id), 9); /* the compaction; a notice is live only */

    /* compaction only */
    init(x, "{'session':{'compaction':{}}}");
    assert_int_equal(acp_session_update(x->e->sess, notice), ACP_ENOTSUP);
    assert_errmsg(x, "session.notices");
    assert_int_equal(acp_session_update(x->e->sess, cu), 0);
    assert_int_equal(acp_session_update(x->e->sess, cs), 0);
    turn(x);
    assert_int_equal(json_array_size(x->msgs), 2);
    assert_update_msg(json_array_get(x->msgs, 0), id, json_incref(cu));
    assert_update_msg(json_array_get(x->msgs, 1), id, json_incref(cs));
    json_array_clear(x->msgs);
    assert_int_equal(stored(x, id), 11);
    json_decref(notice);
    json_decref(cu);
    json_decref(cs);
}

static bool is_compaction(const json_t *u)
{
    const char *k = jstr(u, "sessionUpdate");
    return k && !strncmp(k, "compaction_", 11);
}

/* Checks a load's messages: the replayed updates equal want (in order), then one
 * session_info_update, then the response, nothing else. */
static void assert_replay(json_t *r, const char *id, json_t *want)
{
    size_t n = json_array_size(want);
    assert_int_equal(json_array_size(r), n + 2);
    for (size_t i = 0; i < n; i++)
        assert_update_msg(json_array_get(r, i), id, json_incref(json_array_get(want, i)));
    assert_string_equal(jstr(update_at(r, n), "sessionUpdate"), "session_info_update");
    assert_non_null(result_of(r));
}

/* Compaction is history: stored in its timeline position between the messages, replayed there
 * to a client with session.compaction (also when its text does not start with sessionUpdate)
 * and left out of the replay to a client without it. */
static void test_compaction_replay(void **state)
{
    h *x = *state;
    init(x, CAPS_ALL);
    char id[80];
    new_session(x, id);
    json_t *r = prompt(x, id, "compact");
    for (int i = 0; i < 5; i++) assert_int_equal(x->e->rc[i], 0);
    assert_int_equal(count_updates(r, NULL), 5);
    assert_int_equal(count_updates(r, "compaction_update"), 2);
    json_decref(r);
    /* outside a turn, written by hand: the kind not first, spaces around the colon */
    assert_int_equal(session_raw(x->e->sess, "{\"compactionId\":\"cmp_2\",\"status\":\"failed\","
                                             "\"error\":\"out of context\",\"sessionUpdate\":"
                                             "\"compaction_update\"}"),
                     0);
    assert_int_equal(session_raw(x->e->sess, "{\"sessionUpdate\" : \"compaction_summary_chunk\","
                                             "\"compactionId\":\"cmp_2\",\"content\":{\"type\":"
                                             "\"text\",\"text\":\"s2\"}}"),
                     0);
    turn(x);
    assert_int_equal(count_updates(x->msgs, NULL), 2);
    json_array_clear(x->msgs);
    r = prompt(x, id, "plain");
    json_decref(r);

    json_t *h_all = history(x, id);
    assert_int_equal(json_array_size(h_all), 10);
    static const char *const kinds[] = {"user_message_chunk", "agent_message_chunk",
                                        "compaction_update",  "compaction_summary_chunk",
                                        "compaction_update",  "agent_message_chunk",
                                        "compaction_update",  "compaction_summary_chunk",
                                        "user_message_chunk", "agent_message_chunk"};
    for (size_t i = 0; i < 10; i++)
        assert_string_equal(jstr(json_array_get(h_all, i), "sessionUpdate"), kinds[i]);
    assert_string_equal(jstr(json_array_get(h_all, 1), "messageId"), "m_pre");
    assert_string_equal(jstr(json_array_get(h_all, 2), "status"), "in_progress");
    assert_string_equal(jstr(json_array_get(h_all, 4), "status"), "completed");
    assert_string_equal(jstr(json_array_get(h_all, 6), "compactionId"), "cmp_2");
    json_t *without = json_array();
    for (size_t i = 0; i < 10; i++)
        if (!is_compaction(json_array_get(h_all, i)))
            json_array_append(without, json_array_get(h_all, i));
    assert_int_equal(json_array_size(without), 5);

    /* capable: everything, in place */
    r = load(x, id);
    assert_replay(r, id, h_all);
    json_decref(r);

    /* another client without compaction */
    restart(x);
    init(x, "{'session':{'notices':{}}}");
    r = load(x, id);
    assert_replay(r, id, without);
    assert_int_equal(count_updates(r, "compaction_update"), 0);
    assert_int_equal(count_updates(r, "compaction_summary_chunk"), 0);
    json_decref(r);
    json_decref(without);
    json_decref(h_all);
}

/* After a load's replay, before the response: session_info_update with the stored updatedAt
 * and the title when there is one (exact members); a resume replays nothing and sends the
 * same info right after its response. */
static void test_info_after_replay(void **state)
{
    h *x = *state;
    init(x, CAPS_NONE);
    char id[80];
    new_session(x, id);
    json_t *r = load(x, id); /* empty history: only the info */
    acp_store_session row = ACP_STORE_SESSION_INIT;
    assert_int_equal(acp_store_get(x->st, id, &row), 0);
    assert_int_equal(json_array_size(r), 2);
    assert_update_msg(
        json_array_get(r, 0), id,
        json_pack("{ss ss}", "sessionUpdate", "session_info_update", "updatedAt", row.updated_at));
    acp_store_session_clear(&row);
    json_decref(r);

    json_decref(prompt(x, id, "hello"));
    json_decref(prompt(x, id, "title Hello there"));
    assert_int_equal(x->e->rc[0], 0);
    r = load(x, id);
    assert_int_equal(acp_store_get(x->st, id, &row), 0);
    assert_string_equal(row.title, "Hello there");
    size_t n = json_array_size(r);
    assert_int_equal(n, 5); /* hello, ok, "title ...", the info, the response */
    assert_int_equal(count_updates(r, "user_message_chunk"), 2);
    assert_update_msg(json_array_get(r, n - 2), id,
                      json_pack("{ss ss ss}", "sessionUpdate", "session_info_update", "title",
                                "Hello there", "updatedAt", row.updated_at));
    acp_store_session_clear(&row);
    assert_json(result_of(r), want_result(NULL, "code", "large", false, "low", false));
    json_decref(r);

    /* the info also reaches a client after an agent restart */
    restart(x);
    init(x, CAPS_NONE);
    r = load(x, id);
    assert_string_equal(jstr(update_of(r, "session_info_update"), "title"), "Hello there");
    json_decref(r);

    /* a resume restores silently: nothing before its response, nothing after it */
    r = call(x, "session/resume", "{'sessionId':'%s','cwd':'%s'}", id, x->dir);
    assert_int_equal(json_array_size(r), 1);
    assert_json(result_of(r), want_result(NULL, "code", "large", false, "low", false));
    json_decref(r);
    turn(x);
    assert_int_equal(json_array_size(x->msgs), 0);
}

/* --- authentication ----------------------------------------------------------------------- */

/* Every method the gate covers answers -32000 naming the method, and does nothing. */
static void expect_gated(h *x, const char *id)
{
    json_t *r;
    r = call(x, "session/new", "{'cwd':'%s','mcpServers':[]}", x->dir);
    expect_error_d(r, ACP_RPC_AUTH_REQUIRED, "session/new", NULL);
    expect_error_d(load(x, id), ACP_RPC_AUTH_REQUIRED, "session/load", NULL);
    expect_error_d(resume(x, id), ACP_RPC_AUTH_REQUIRED, "session/resume", NULL);
    expect_error_d(prompt(x, id, "hi"), ACP_RPC_AUTH_REQUIRED, "session/prompt", NULL);
    expect_error_d(call(x, "session/list", "{}"), ACP_RPC_AUTH_REQUIRED, "session/list", NULL);
    expect_error_d(call(x, "session/delete", "{'sessionId':'%s'}", id), ACP_RPC_AUTH_REQUIRED,
                   "session/delete", NULL);
    expect_error_d(set_mode(x, id, "'plan'"), ACP_RPC_AUTH_REQUIRED, "session/set_mode", NULL);
    expect_error_d(set_config(x, id, "model", "'small'", false), ACP_RPC_AUTH_REQUIRED,
                   "session/set_config_option", NULL);
    /* unknown sessions too: the gate comes first */
    expect_error_d(prompt(x, "sess_unknown", "hi"), ACP_RPC_AUTH_REQUIRED, NULL, NULL);
    expect_error_d(set_mode(x, "sess_unknown", "'plan'"), ACP_RPC_AUTH_REQUIRED, NULL, NULL);
    turn(x);
    assert_int_equal(count_updates(x->msgs, NULL), 0);
}

/* engine.auth_required: the gate before authenticate, unknown and terminal method ids -32602,
 * a pending authenticate that keeps the gate until accepted, then every gated method works;
 * the request's _meta reaches the engine. */
static void test_auth_gate(void **state)
{
    h *x = *state;
    x->eng.auth_required = true;
    new_agent(x);
    init(x, CAPS_NONE);
    assert_false(acp_agent_authenticated(x->a));
    /* a session to name, made while the engine says the connection is signed in */
    acp_agent_set_authenticated(x->a, true);
    assert_true(acp_agent_authenticated(x->a));
    char id[80];
    new_session(x, id);
    acp_agent_set_authenticated(x->a, false);
    int writes = set_state_calls;
    expect_gated(x, id);
    assert_int_equal(set_state_calls, writes);
    assert_values(x, "code", "large", false, "low");
    assert_int_equal(acp_agent_session_count(x->a), 1);
    acp_store_session row = ACP_STORE_SESSION_INIT;
    assert_int_equal(acp_store_get(x->st, id, &row), 0); /* delete did nothing */
    acp_store_session_clear(&row);
    assert_int_equal(stored(x, id), 0); /* prompt did nothing */

    /* bad method ids, never reaching the engine */
    json_t *r = call(x, "authenticate", "{'methodId':'nope'}");
    expect_error(r, ACP_RPC_INVALID_PARAMS, "nope", NULL);
    assert_json(error_data(r), J("{'methodId':'nope'}"));
    json_decref(r);
    /* a terminal method this client was not offered */
    expect_error_d(call(x, "authenticate", "{'methodId':'tui'}"), ACP_RPC_INVALID_PARAMS, "tui",
                   NULL);
    expect_error_d(call(x, "authenticate", "{}"), ACP_RPC_INVALID_PARAMS, "methodId", NULL);
    expect_error_d(call(x, "authenticate", "{'methodId':7}"), ACP_RPC_INVALID_PARAMS, "methodId",
                   NULL);
    /* a terminal method this client was offered: still never passed to authenticate */
    init(x, CAPS_ALL);
    expect_error_d(call(x, "authenticate", "{'methodId':'tui'}"), ACP_RPC_INVALID_PARAMS,
                   "terminal", NULL);
    expect_error_d(call(x, "authenticate", "{'methodId':'tui2'}"), ACP_RPC_INVALID_PARAMS, "tui2",
                   NULL);
    assert_int_equal(x->e->auth_calls, 0);
    assert_false(acp_agent_authenticated(x->a));

    /* held by the engine: no answer yet, the gate still closed */
    x->e->auth_mode = AUTH_HOLD;
    int aid = send_request(x, "authenticate", "{'methodId':'key','_meta':{'trace':'t1'}}");
    for (int i = 0; i < 5; i++) turn(x);
    assert_int_equal(find_in(x->msgs, aid), -1);
    assert_non_null(x->e->auth);
    assert_string_equal(x->e->auth_method, "key");
    assert_json(json_object_get(x->e->auth_params, "_meta"), J("{'trace':'t1'}"));
    expect_error_d(call(x, "session/new", "{'cwd':'%s','mcpServers':[]}", x->dir),
                   ACP_RPC_AUTH_REQUIRED, NULL, NULL);
    acp_auth_accept(x->e->auth);
    x->e->auth = NULL;
    r = take_response(x, aid);
    assert_int_equal(json_array_size(r), 1);
    assert_json(last(r), J("{'jsonrpc':'2.0','id':%d,'result':{}}", aid));
    json_decref(r);
    assert_true(acp_agent_authenticated(x->a));

    /* every gated method now works */
    expect_result_d(set_mode(x, id, "'plan'"), J("{}"));
    r = set_config(x, id, "model", "'small'", false);
    assert_non_null(result_of(r));
    json_decref(r);
    expect_stop_d(prompt(x, id, "hi"), "end_turn");
    r = call(x, "session/list", "{}");
    assert_int_equal(json_array_size(json_object_get(result_of(r), "sessions")), 1);
    json_decref(r);
    expect_result_d(load(x, id), want_result(NULL, "plan", "small", false, "low", true));
    expect_result_d(resume(x, id), want_result(NULL, "plan", "small", false, "low", true));
    char other[80];
    new_session(x, other);
    expect_result_d(call(x, "session/delete", "{'sessionId':'%s'}", id), J("{}"));
    r = call(x, "session/list", "{}");
    assert_int_equal(json_array_size(json_object_get(result_of(r), "sessions")), 1);
    json_decref(r);

    /* close is never gated: freeing resources needs no sign-in */
    acp_agent_set_authenticated(x->a, false);
    expect_result_d(call(x, "session/close", "{'sessionId':'%s'}", other), J("{}"));
    assert_int_equal(acp_agent_session_count(x->a), 0);
}

/* A refused authenticate (the default -32000 with the engine's sentence, or the engine's own
 * code) keeps the gate closed; a cancelled one is answered -32800 and accepting it afterwards
 * authenticates nothing; shutdown answers a pending one -32800. */
static void test_auth_refused_and_cancelled(void **state)
{
    h *x = *state;
    x->eng.auth_required = true;
    new_agent(x);
    init(x, CAPS_NONE);

    x->e->auth_mode = AUTH_REFUSE;
    json_t *r = call(x, "authenticate", "{'methodId':'key'}");
    expect_error_d(r, ACP_RPC_AUTH_REQUIRED, "wrong key for key", NULL);
    assert_false(acp_agent_authenticated(x->a));
    expect_error_d(call(x, "session/new", "{'cwd':'%s','mcpServers':[]}", x->dir),
                   ACP_RPC_AUTH_REQUIRED, NULL, NULL);

    x->e->auth_mode = AUTH_HOLD;
    int aid = send_request(x, "authenticate", "{'methodId':'browser'}");
    turn(x);
    assert_non_null(x->e->auth);
    acp_auth_refuse(x->e->auth, ACP_RPC_INTERNAL_ERROR, "sign-in service is down (%d)", 503);
    x->e->auth = NULL;
    r = take_response(x, aid);
    expect_error_d(r, ACP_RPC_INTERNAL_ERROR, "sign-in service is down (503)", NULL);
    expect_error_d(call(x, "session/list", "{}"), ACP_RPC_AUTH_REQUIRED, NULL, NULL);

    /* cancelled by the client */
    aid = send_request(x, "authenticate", "{'methodId':'key'}");
    turn(x);
    acp_auth *au = x->e->auth;
    assert_non_null(au);
    send_q(x, "{'jsonrpc':'2.0','method':'$/cancel_request','params':{'requestId':%d}}", aid);
    r = take_response(x, aid);
    expect_error_d(r, ACP_RPC_CANCELLED, NULL, NULL);
    assert_true(acp_auth_cancelled(au));
    assert_null(acp_auth_params(au));
    acp_auth_accept(au); /* only frees the handle */
    x->e->auth = NULL;
    turn(x);
    assert_int_equal(json_array_size(x->msgs), 0);
    assert_false(acp_agent_authenticated(x->a));
    expect_error_d(call(x, "session/new", "{'cwd':'%s','mcpServers':[]}", x->dir),
                   ACP_RPC_AUTH_REQUIRED, NULL, NULL);

    /* the engine's own way in */
    acp_agent_set_authenticated(x->a, true);
    char id[80];
    new_session(x, id);
    acp_agent_set_authenticated(x->a, false);

    /* pending at shutdown */
    aid = send_request(x, "authenticate", "{'methodId':'key'}");
    turn(x);
    au = x->e->auth;
    assert_non_null(au);
    acp_agent_shutdown(x->a);
    turn(x);
    int at = find_in(x->msgs, aid);
    assert_true(at >= 0);
    assert_int_equal(json_integer_value(json_object_get(
                         json_object_get(json_array_get(x->msgs, at), "error"), "code")),
                     ACP_RPC_CANCELLED);
    assert_true(acp_auth_cancelled(au));
    acp_auth_refuse(au, 0, "too late");
    x->e->auth = NULL;
    assert_false(acp_agent_authenticated(x->a));
}

/* logout: {} exactly, then new sessions (and the open one's prompts, and list) need
 * authentication again until the next authenticate; a refused logout changes nothing. */
static void test_logout(void **state)
{
    h *x = *state;
    x->eng.auth_required = true;
    new_agent(x);
    init(x, CAPS_NONE);
    x->e->auth_mode = AUTH_ACCEPT;
    expect_result_d(call(x, "authenticate", "{'methodId':'browser'}"), J("{}"));
    char id[80];
    new_session(x, id);

    x->e->logout_code = ACP_RPC_INTERNAL_ERROR;
    expect_error_d(call(x, "logout", "{}"), ACP_RPC_INTERNAL_ERROR, "still busy", NULL);
    assert_true(acp_agent_authenticated(x->a));
    expect_stop_d(prompt(x, id, "hi"), "end_turn");

    /* a turn started before the logout: still cancellable after it */
    int pid = ++x->e->next_id;
    send_prompt(x, pid, id, "wait");
    turn(x);
    assert_non_null(x->e->held);

    x->e->logout_code = 0;
    json_t *r = call(x, "logout", "{'_meta':{'why':'user'}}");
    assert_int_equal(json_array_size(r), 1);
    assert_json(result_of(r), J("{}"));
    json_decref(r);
    assert_int_equal(x->e->logout_calls, 2);
    assert_false(acp_agent_authenticated(x->a));
    expect_error_d(call(x, "session/new", "{'cwd':'%s','mcpServers':[]}", x->dir),
                   ACP_RPC_AUTH_REQUIRED, NULL, NULL);
    expect_error_d(prompt(x, id, "hi"), ACP_RPC_AUTH_REQUIRED, NULL, NULL);
    expect_error_d(call(x, "session/list", "{}"), ACP_RPC_AUTH_REQUIRED, NULL, NULL);
    expect_error_d(set_mode(x, id, "'plan'"), ACP_RPC_AUTH_REQUIRED, NULL, NULL);
    assert_int_equal(acp_agent_session_count(x->a), 1); /* it stays open */
    send_q(x, "{'jsonrpc':'2.0','method':'session/cancel','params':{'sessionId':'%s'}}", id);
    expect_stop_d(take_response(x, pid), "cancelled");
    assert_null(x->e->held);

    expect_result_d(call(x, "authenticate", "{'methodId':'key'}"), J("{}"));
    expect_stop_d(prompt(x, id, "hi"), "end_turn");
    new_session(x, id);
}

/* --- extension methods ---------------------------------------------------------------------- */

static void ext_echo(acp_conn *c, acp_req *req, void *user)
{
    h *x = user;
    x->e->ext_requests++;
    acp_req_reply(req, json_pack("{sO}", "echo", acp_req_params(req)));
}

static void ext_echo2(acp_conn *c, acp_req *req, void *user)
{
    h *x = user;
    x->e->ext_requests += 100;
    acp_req_error(req, -32050, NULL, "second handler");
}

static void ext_note(acp_conn *c, acp_msg *m, void *user)
{
    h *x = user;
    x->e->ext_notes++;
    json_decref(x->e->ext_note);
    x->e->ext_note = json_deep_copy(acp_msg_params(m));
}

static void ext_answer(acp_conn *c, acp_msg *m, void *user)
{
    h *x = user;
    x->e->ext_answers++;
    if (acp_msg_is_error(m)) {
        x->e->ext_error = acp_msg_error_code(m);
    } else {
        json_decref(x->e->ext_result);
        x->e->ext_result = json_deep_copy(acp_msg_result(m));
    }
}

/* Client -> agent: a registered '_' request is answered by its handler (before initialize:
 * -32600), an unregistered one is -32601, a registered notification reaches its handler
 * (not before initialize), an unknown one is ignored; names without '_' are ACP_EINVAL; a
 * later registration replaces the earlier. */
static void test_ext_incoming(void **state)
{
    h *x = *state;
    assert_int_equal(acp_agent_on_ext(x->a, "_test/echo", ext_echo, NULL, x), 0);
    assert_int_equal(acp_agent_on_ext(x->a, "_test/ping", NULL, ext_note, x), 0);
    assert_int_equal(acp_agent_on_ext(x->a, "test/echo", ext_echo, NULL, x), ACP_EINVAL);
    assert_errmsg(x, "test/echo");
    assert_int_equal(acp_agent_on_ext(x->a, "session/new", ext_echo, NULL, x), ACP_EINVAL);
    assert_int_equal(acp_agent_on_ext(x->a, NULL, ext_echo, NULL, x), ACP_EINVAL);
    assert_int_equal(acp_agent_on_ext(x->a, "", ext_echo, NULL, x), ACP_EINVAL);

    /* before initialize */
    expect_error_d(call(x, "_test/echo", "{}"), ACP_RPC_INVALID_REQUEST, NULL, NULL);
    send_q(x, "{'jsonrpc':'2.0','method':'_test/ping','params':{'n':0}}");
    turn(x);
    assert_int_equal(x->e->ext_requests, 0);
    assert_int_equal(x->e->ext_notes, 0);
    assert_int_equal(json_array_size(x->msgs), 0);

    init(x, CAPS_NONE);
    json_t *r = call(x, "_test/echo", "{'q':'why','_meta':{'k':1}}");
    assert_int_equal(json_array_size(r), 1);
    assert_json(result_of(r), J("{'echo':{'q':'why','_meta':{'k':1}}}"));
    json_decref(r);
    assert_int_equal(x->e->ext_requests, 1);

    expect_error_d(call(x, "_x", "{}"), ACP_RPC_METHOD_NOT_FOUND, "_x", NULL);
    expect_error_d(call(x, "_test/ping", "{}"), ACP_RPC_METHOD_NOT_FOUND, NULL, NULL);
    expect_error_d(call(x, "_test/nobody", "{}"), ACP_RPC_METHOD_NOT_FOUND, NULL, NULL);

    send_q(x, "{'jsonrpc':'2.0','method':'_test/ping','params':{'n':1}}");
    send_q(x, "{'jsonrpc':'2.0','method':'_test/unknown','params':{'n':2}}");
    send_q(x, "{'jsonrpc':'2.0','method':'_test/echo','params':{'n':3}}");
    turn(x);
    assert_int_equal(json_array_size(x->msgs), 0); /* notifications get no answer */
    assert_int_equal(x->e->ext_notes, 1);
    assert_json(x->e->ext_note, J("{'n':1}"));
    assert_int_equal(x->e->ext_requests, 1);

    /* replaced */
    assert_int_equal(acp_agent_on_ext(x->a, "_test/echo", ext_echo2, NULL, x), 0);
    expect_error_d(call(x, "_test/echo", "{}"), -32050, "second handler", NULL);
    assert_int_equal(x->e->ext_requests, 101);
}

/* Agent -> client: ext_call sends a request the client answers (result or error) to the
 * callback, ext_notify a notification, both with exact envelopes; names without '_' are
 * ACP_EINVAL and nothing is sent (params freed); a notification from a turn never overtakes
 * the history update sent before it. */
static void test_ext_outgoing(void **state)
{
    h *x = *state;
    init(x, CAPS_NONE);
    acp_call *cl = NULL;
    assert_int_equal(
        acp_agent_ext_call(x->a, "_client/ask", json_pack("{ss}", "q", "why"), ext_answer, x, &cl),
        0);
    assert_non_null(cl);
    turn(x);
    assert_int_equal(json_array_size(x->msgs), 1);
    json_t *m = json_array_get(x->msgs, 0);
    json_int_t cid = json_integer_value(json_object_get(m, "id"));
    assert_json(m, J("{'jsonrpc':'2.0','id':%lld,'method':'_client/ask','params':{'q':'why'}}",
                     (long long)cid));
    json_array_clear(x->msgs);
    send_q(x, "{'jsonrpc':'2.0','id':%lld,'result':{'a':42}}", (long long)cid);
    turn(x);
    assert_int_equal(x->e->ext_answers, 1);
    assert_json(x->e->ext_result, J("{'a':42}"));

    assert_int_equal(acp_agent_ext_call(x->a, "_client/ask", NULL, ext_answer, x, NULL), 0);
    turn(x);
    m = json_array_get(x->msgs, 0);
    cid = json_integer_value(json_object_get(m, "id"));
    assert_null(json_object_get(m, "params"));
    json_array_clear(x->msgs);
    send_q(x, "{'jsonrpc':'2.0','id':%lld,'error':{'code':-32601,'message':'no'}}", (long long)cid);
    turn(x);
    assert_int_equal(x->e->ext_answers, 2);
    assert_int_equal(x->e->ext_error, ACP_RPC_METHOD_NOT_FOUND);

    assert_int_equal(acp_agent_ext_notify(x->a, "_client/note", json_pack("{si}", "n", 1)), 0);
    assert_int_equal(acp_agent_ext_notify(x->a, "_client/bare", NULL), 0);
    turn(x);
    assert_int_equal(json_array_size(x->msgs), 2);
    assert_json(json_array_get(x->msgs, 0),
                J("{'jsonrpc':'2.0','method':'_client/note','params':{'n':1}}"));
    assert_json(json_array_get(x->msgs, 1), J("{'jsonrpc':'2.0','method':'_client/bare'}"));
    json_array_clear(x->msgs);

    /* names without '_' (the params are still taken) */
    assert_int_equal(
        acp_agent_ext_call(x->a, "client/ask", json_pack("{ss}", "q", "x"), ext_answer, x, NULL),
        ACP_EINVAL);
    assert_errmsg(x, "client/ask");
    assert_int_equal(acp_agent_ext_notify(x->a, "note", json_pack("{ss}", "q", "x")), ACP_EINVAL);
    assert_int_equal(acp_agent_ext_notify(x->a, NULL, json_object()), ACP_EINVAL);
    assert_int_equal(acp_agent_ext_call(x->a, "fs/read_text_file", NULL, ext_answer, x, NULL),
                     ACP_EINVAL);
    turn(x);
    assert_int_equal(json_array_size(x->msgs), 0);

    /* from a turn: after the chunk sent before it */
    char id[80];
    new_session(x, id);
    json_t *r = prompt(x, id, "extnote");
    assert_int_equal(x->e->rc[0], 0);
    assert_int_equal(x->e->rc[1], 0);
    assert_int_equal(json_array_size(r), 3);
    assert_string_equal(jstr(update_at(r, 0), "sessionUpdate"), "agent_message_chunk");
    assert_json(json_array_get(r, 1),
                J("{'jsonrpc':'2.0','method':'_test/progress','params':{'done':50}}"));
    assert_string_equal(stop_reason(last(r)), "end_turn");
    json_decref(r);
}

/* --- _meta ------------------------------------------------------------------------------------ */

/* The engine's _meta for new/load/resume results (set in session_setup from the request's
 * params, which are readable there only): exactly in the result, and only for the results it
 * was set for; a non-object _meta is refused and keeps the one set. */
static void test_meta_passthrough(void **state)
{
    h *x = *state;
    json_t *r = call(x, "initialize", "{'protocolVersion':1,'_meta':{'client.dev':true}}");
    assert_json(json_object_get(result_of(r), "_meta"),
                J("{'test.dev/build':'abc','traceparent':'00-0af7651916cd43dd8448eb211c80319c-"
                  "b7ad6b7169203331-01'}"));
    json_decref(r);
    assert_json(json_object_get(acp_agent_init_params(x->a), "_meta"), J("{'client.dev':true}"));

    r = call(x, "session/new",
             "{'cwd':'%s','mcpServers':[],'_meta':{'traceparent':'00-abc-01','x':[1,2]}}", x->dir);
    const char *sid = jstr(result_of(r), "sessionId");
    assert_non_null(sid);
    char id[80];
    snprintf(id, sizeof id, "%s", sid);
    json_t *want = want_result(id, "code", "large", false, "low", false);
    json_object_set_new(want, "_meta",
                        J("{'echo':{'traceparent':'00-abc-01','x':[1,2]},'cwd':'%s'}", x->dir));
    assert_json(result_of(r), want);
    json_decref(r);
    assert_int_equal(x->e->setup_rc[4], 0);
    assert_int_equal(x->e->setup_rc[5], ACP_EINVAL);
    assert_false(x->e->ready_saw_params);

    r = call(x, "session/load", "{'sessionId':'%s','cwd':'%s','mcpServers':[],'_meta':{'k':1}}", id,
             x->dir);
    want = want_result(NULL, "code", "large", false, "low", false);
    json_object_set_new(want, "_meta", J("{'echo':{'k':1},'cwd':'%s'}", x->dir));
    assert_json(result_of(r), want);
    json_decref(r);

    /* no _meta in the request: none in the result (nothing left over from the last open) */
    expect_result_d(resume(x, id), want_result(NULL, "code", "large", false, "low", false));
    r = prompt(x, id, "hi");
    json_decref(r);
    assert_false(x->e->prompt_saw_params);
    assert_false(x->e->ready_saw_params);
}

/* --- what acp_agent_new() refuses ---------------------------------------------------------- */

static void test_invalid_engine(void **state)
{
    h *x = *state;
    static const acp_mode dup_modes[] = {{"a", "A", NULL}, {"a", "A again", NULL}};
    static const acp_mode nameless_mode[] = {{"a", NULL, NULL}};
    static const acp_config_option bad_default[] = {
        {.id = "e", .name = "E", .values = effort_values, .nvalues = 2, .default_value = "medium"}};
    static const acp_config_value mixed[] = {
        {.value = "a", .name = "A", .group = "g", .group_name = "G"},
        {.value = "b", .name = "B"},
    };
    static const acp_config_option mixed_groups[] = {
        {.id = "m", .name = "M", .values = mixed, .nvalues = 2}};
    static const acp_config_value unnamed_group[] = {{.value = "a", .name = "A", .group = "g"}};
    static const acp_config_option unnamed_groups[] = {
        {.id = "m", .name = "M", .values = unnamed_group, .nvalues = 1}};
    static const acp_config_value twice[] = {{.value = "a", .name = "A"},
                                             {.value = "a", .name = "B"}};
    static const acp_config_option value_twice[] = {
        {.id = "m", .name = "M", .values = twice, .nvalues = 2}};
    static const acp_config_option no_values[] = {{.id = "m", .name = "M"}};
    static const acp_config_option dup_ids[] = {
        {.id = "m", .name = "M", .boolean = true},
        {.id = "m", .name = "M2", .boolean = true},
    };
    static const acp_config_option nameless_option[] = {{.id = "m", .boolean = true}};
    static const acp_auth_method dup_auth[] = {{.id = "k", .name = "K"}, {.id = "k", .name = "K2"}};
    static const acp_auth_method nameless_auth[] = {{.id = "k"}};
    acp_engine bad;
    acp_agent *b;
#define REFUSED(...)                                                                               \
    do {                                                                                           \
        bad = x->eng;                                                                              \
        __VA_ARGS__;                                                                               \
        b = NULL;                                                                                  \
        assert_int_equal(acp_agent_new(&x->loop, x->st, &bad, NULL, &b), ACP_EINVAL);              \
    } while (0)
    REFUSED(bad.default_mode = "nope");
    REFUSED(bad.modes = dup_modes; bad.nmodes = 2; bad.default_mode = NULL);
    REFUSED(bad.modes = nameless_mode; bad.nmodes = 1; bad.default_mode = NULL);
    REFUSED(bad.modes = NULL; bad.nmodes = 2);
    REFUSED(bad.config_options = bad_default; bad.nconfig_options = 1);
    REFUSED(bad.config_options = mixed_groups; bad.nconfig_options = 1);
    REFUSED(bad.config_options = unnamed_groups; bad.nconfig_options = 1);
    REFUSED(bad.config_options = value_twice; bad.nconfig_options = 1);
    REFUSED(bad.config_options = no_values; bad.nconfig_options = 1);
    REFUSED(bad.config_options = dup_ids; bad.nconfig_options = 2);
    REFUSED(bad.config_options = nameless_option; bad.nconfig_options = 1);
    REFUSED(bad.config_options = NULL; bad.nconfig_options = 1);
    REFUSED(bad.auth_methods = dup_auth; bad.nauth_methods = 2);
    REFUSED(bad.auth_methods = nameless_auth; bad.nauth_methods = 1);
#undef REFUSED
    (void)b;
    /* the agent made in setup still works */
    init(x, CAPS_NONE);
    char id[80];
    new_session(x, id);
}

/* --- runtime bugs, fixed
 * --------------------------------------------------------------------------- */

/* Was a bug (agent/replay.c, is_compaction): the fast path decides on a prefix compare of the raw
 * stored text. A stored compaction update whose kind is written with a JSON escape
 * ("compaction\u005fupdate", valid JSON naming the same kind, accepted by the runtime's gate,
 * which decodes escapes) matches the `{"sessionUpdate":"` prefix, fails the "compaction_"
 * compare, and is returned as "not compaction" without the decoding fallback: it is replayed
 * to a client without session.compaction, which the schema forbids. Expected: left out. */
static void test_fixed_compaction_escaped_kind_replayed(void **state)
{
    h *x = *state;
    init(x, CAPS_ALL);
    char id[80];
    new_session(x, id);
    assert_int_equal(session_raw(x->e->sess,
                                 "{\"sessionUpdate\":\"compaction\\u005fupdate\","
                                 "\"compactionId\":\"cmp_e\",\"status\":\"completed\"}"),
                     0);
    turn(x);
    json_array_clear(x->msgs);
    assert_int_equal(stored(x, id), 1);
    init(x, "{}"); /* a client without session.compaction */
    json_t *r = load(x, id);
    size_t leaked = count_updates(r, "compaction_update"), n = json_array_size(r);
    json_decref(r); /* before asserting: a failure must not leak */
    assert_int_equal(leaked, 0);
    assert_int_equal(n, 2); /* the session info and the response */
}

/* Was a bug (agent/config.c, cfg_init): a new session's mode comes from engine.default_mode and the
 * category "mode" option's value from its own default, with no sync between them, so an
 * engine whose mode option defaults differently (here: default_mode "plan", the option's
 * default its first value "ask") answers session/new with modes.currentModeId "plan" and the
 * mode option at "ask" - out of step, against the spec's "keep them in sync" and the header's
 * "kept in step with the session mode". Expected: the two agree (the mode winning), or
 * acp_agent_new() refuses the description (ACP_EINVAL). */
static void test_fixed_mode_option_default_out_of_sync(void **state)
{
    h *x = *state;
    static const acp_config_option mode_only[] = {
        {.id = "mode", .name = "Mode", .category = "mode", .values = mode_values, .nvalues = 3}};
    x->eng.default_mode = "plan";
    x->eng.config_options = mode_only;
    x->eng.nconfig_options = 1;
    char id[80];
    json_t *r = fresh_session(x, CAPS_NONE, id);
    if (!r) return; /* refusing the description is fine too */
    char mode[64], opt[64];
    snprintf(mode, sizeof mode, "%s",
             jstr(json_object_get(result_of(r), "modes"), "currentModeId"));
    snprintf(
        opt, sizeof opt, "%s",
        jstr(json_array_get(json_object_get(result_of(r), "configOptions"), 0), "currentValue"));
    json_decref(r); /* before asserting: a failure must not leak */
    assert_string_equal(mode, "plan");
    assert_string_equal(opt, mode);
    assert_string_equal(acp_session_config(x->e->sess, "mode"), acp_session_mode(x->e->sess));
}

/* Was a bug (agent/config.c, acp_session_set_config_options): when the store cannot record the new
 * options (save() fails) the call returns ACP_ESTORE but keeps the new options and values in
 * memory, unannounced: the engine's getters and the next set_config_option answer show a list
 * the client was never told about and the store does not hold. Every other change (commit())
 * is rolled back when the store fails. Expected: ACP_ESTORE and nothing changed. */
static void test_fixed_replace_options_store_failure_not_rolled_back(void **state)
{
    h *x = *state;
    init(x, CAPS_BOOL);
    char id[80];
    new_session(x, id);
    fail_set_state = true;
    assert_int_equal(acp_session_set_config_options(x->e->sess, replaced_options, 3), ACP_ESTORE);
    fail_set_state = false;
    turn(x);
    assert_int_equal(json_array_size(x->msgs), 0);
    assert_null(acp_session_config(x->e->sess, "extra"));
    assert_values(x, "code", "large", false, "low");
    expect_result_d(set_config(x, id, "effort", "'high'", false),
                    want_set(want_options("code", "large", false, "high", true)));
}

/* Was a bug (agent/config.c, settle_value via acp_session_set_config_options): the header promises
 * "Current values are kept where the option still has them, else the new default", but when
 * the current value is not in the new list the value stored when the session was opened is
 * tried before the default. A session loaded with model "cloud-1", then set to "small" by the
 * client, gets "cloud-1" back (a value the user moved away from) when the engine replaces the
 * model list with [large, cloud-1] (default large). Expected: "large". (The stored value is
 * right for an option that had no current value, as test_replace_options shows.) */
static void test_fixed_replace_options_resurrects_stale_value(void **state)
{
    h *x = *state;
    static const acp_config_value models3[] = {
        {.value = "large", .name = "Large"},
        {.value = "cloud-1", .name = "Cloud One"},
    };
    static const acp_config_option models_only[] = {{.id = "model",
                                                     .name = "Model",
                                                     .category = "model",
                                                     .values = models3,
                                                     .nvalues = 2,
                                                     .default_value = "large"}};
    init(x, CAPS_NONE);
    char id[80];
    new_session(x, id);
    json_decref(set_config(x, id, "model", "'cloud-1'", false));
    json_decref(load(x, id)); /* opened with model cloud-1 stored */
    json_decref(set_config(x, id, "model", "'small'", false));
    assert_string_equal(acp_session_config(x->e->sess, "model"), "small");
    assert_int_equal(acp_session_set_config_options(x->e->sess, models_only, 1), 0);
    assert_string_equal(acp_session_config(x->e->sess, "model"), "large");
}

/* Was a bug (agent/config.c, check_option / write_option): values of one group that are not
 * consecutive are written as two SessionConfigSelectGroup entries with the same group id
 * (the schema: "Unique identifier for this group"). Expected: acp_agent_new() refuses such a
 * description (ACP_EINVAL), or the groups written have unique ids. */
static void test_fixed_split_group_duplicate_ids(void **state)
{
    h *x = *state;
    static const acp_config_value split[] = {
        {"a", "A", NULL, "g1", "Group one"},
        {"b", "B", NULL, "g2", "Group two"},
        {"c", "C", NULL, "g1", "Group one"},
    };
    static const acp_config_option split_opts[] = {
        {.id = "m", .name = "M", .values = split, .nvalues = 3}};
    x->eng.config_options = split_opts;
    x->eng.nconfig_options = 1;
    char id[80];
    json_t *r = fresh_session(x, CAPS_NONE, id);
    if (!r) return;
    json_t *groups = json_object_get(
        json_array_get(json_object_get(result_of(r), "configOptions"), 0), "options");
    size_t dups = 0;
    for (size_t i = 0; i < json_array_size(groups); i++)
        for (size_t k = 0; k < i; k++)
            dups += !strcmp(jstr(json_array_get(groups, i), "group"),
                            jstr(json_array_get(groups, k), "group"));
    json_decref(r); /* before asserting: a failure must not leak */
    assert_int_equal(dups, 0);
}

/* The prompt handler sends an extension notification while its chunk waits for the store, and
 * that commit fails. acp_agent_ext_notify() flushed the store to keep the notification behind
 * the chunk, so the failure called engine.cancel from inside it: this engine ends the turn
 * there, and the handler went on with a freed turn (heap-use-after-free under ASan).
 * Expected: no engine callback inside the call; the notification still goes out after the
 * chunk's place (a failed commit drops the chunk, not our messages), and the prompt is answered
 * with the store error. */
static void test_fixed_ext_notify_store_failure_reenters(void **state)
{
    h *x = *state;
    init(x, CAPS_NONE);
    char id[80];
    new_session(x, id);
    fail_commit = true;
    json_t *r = prompt(x, id, "extnote");
    assert_int_equal(x->e->rc[1], 0);
    assert_int_equal(count_updates(r, "agent_message_chunk"), 0);
    assert_int_equal(find_method(r, "_test/progress", 0), 0);
    assert_int_equal(error_code(r), ACP_RPC_INTERNAL_ERROR);
    assert_non_null(strstr(error_message(r), "disk I/O error (injected)"));
    json_decref(r);
    /* The turn had ended in the handler: no cancel for it; the session goes on. */
    assert_int_equal(x->e->cancels, 0);
    r = prompt(x, id, "hi");
    assert_string_equal(stop_reason(last(r)), "end_turn");
    json_decref(r);
}

/* A veto hook that replaces the option list (acp_session_set_config_options(): a choice that
 * brings other options) while the runtime holds indexes into the old one. The change was
 * written through the stale index (a heap-buffer-overflow for an option past the new list's
 * end, another option changed otherwise), and after the set_mode hook replaced the list the
 * set_config hook was asked about whatever option had that index now. Expected: both hooks are
 * asked about what the client named (by strings that outlive the list); the change applies to
 * that option of the new list if it still takes the value, else -32602 and nothing changes. */
static void test_fixed_veto_replaces_options(void **state)
{
    h *x = *state;
    init(x, CAPS_BOOL);
    char id[80];
    new_session(x, id);
    /* effort is the fourth option; the new list has three, and no effort */
    x->e->config_replace = true;
    expect_error_d(set_config(x, id, "effort", "'high'", false), ACP_RPC_INVALID_PARAMS, "effort",
                   "replaced");
    assert_string_equal(x->e->seen_id, "effort");
    assert_string_equal(x->e->seen_value, "high");
    assert_null(acp_session_config(x->e->sess, "effort"));
    assert_string_equal(acp_session_config(x->e->sess, "model"), "large");
    assert_string_equal(acp_session_config(x->e->sess, "mode"), "code");

    /* the mode option (second in the list now) through the set_mode hook, which brings the
     * first list back (the mode option first, the model second) */
    x->e->mode_replace = true;
    json_t *r = set_config(x, id, "mode", "'ask'", false);
    assert_non_null(result_of(r));
    json_decref(r);
    assert_string_equal(x->e->seen_id, "mode");
    assert_string_equal(x->e->seen_value, "ask");
    assert_values(x, "ask", "large", false, "low");

    /* a value the new list still has applies to it */
    x->e->config_replace = true;
    r = set_config(x, id, "model", "'large'", false);
    assert_non_null(result_of(r));
    json_decref(r);
    assert_string_equal(acp_session_config(x->e->sess, "model"), "large");
    assert_string_equal(acp_session_config(x->e->sess, "mode"), "ask");
    assert_null(acp_session_config(x->e->sess, "effort"));
}

/* The engine changes the mode during a turn whose chunk waits for the store, and that commit
 * fails. The mode was stored (set_state) and kept, but the held current_mode_update and
 * config_option_update went with the failed commit's messages: the client went on believing
 * the old mode. Expected: only the history updates are dropped (the chunk); the runtime's live
 * updates go out, then the prompt's store error. */
static void test_fixed_failed_commit_drops_mode_update(void **state)
{
    h *x = *state;
    init(x, CAPS_NONE);
    char id[80];
    new_session(x, id);
    fail_commit = true;
    json_t *r = prompt(x, id, "setmode ask");
    assert_int_equal(x->e->rc[1], 0);
    assert_int_equal(count_updates(r, "agent_message_chunk"), 0);
    assert_int_equal(count_updates(r, "current_mode_update"), 1);
    assert_int_equal(count_updates(r, "config_option_update"), 1);
    assert_int_equal(error_code(r), ACP_RPC_INTERNAL_ERROR);
    json_t *u = update_at(r, (size_t)find_method(r, "session/update", 0));
    assert_json(u, J("{'sessionUpdate':'current_mode_update','currentModeId':'ask'}"));
    json_decref(r);
    assert_values(x, "ask", "large", false, "low");
    /* and the stored state agrees */
    expect_result_d(load(x, id), want_result(NULL, "ask", "large", false, "low", false));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_initialize_result, setup, teardown),
        cmocka_unit_test_setup_teardown(test_initialize_minimal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_disabled_capabilities, setup, teardown),
        cmocka_unit_test_setup_teardown(test_setup_result_shapes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_set_mode, setup, teardown),
        cmocka_unit_test_setup_teardown(test_set_config_option, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_input, setup, teardown),
        cmocka_unit_test_setup_teardown(test_vetoes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_boolean_fallback, setup, teardown),
        cmocka_unit_test_setup_teardown(test_persist_restart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_failure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_engine_changes_in_setup, setup, teardown),
        cmocka_unit_test_setup_teardown(test_engine_changes_when_open, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replace_options, setup, teardown),
        cmocka_unit_test_setup_teardown(test_raw_mode_updates_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_capability_gating, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compaction_replay, setup, teardown),
        cmocka_unit_test_setup_teardown(test_info_after_replay, setup, teardown),
        cmocka_unit_test_setup_teardown(test_auth_gate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_auth_refused_and_cancelled, setup, teardown),
        cmocka_unit_test_setup_teardown(test_logout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ext_incoming, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ext_outgoing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_meta_passthrough, setup, teardown),
        cmocka_unit_test_setup_teardown(test_invalid_engine, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fixed_compaction_escaped_kind_replayed, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_fixed_mode_option_default_out_of_sync, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_fixed_replace_options_store_failure_not_rolled_back,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_fixed_replace_options_resurrects_stale_value, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_fixed_split_group_duplicate_ids, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fixed_ext_notify_store_failure_reenters, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_fixed_veto_replaces_options, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fixed_failed_commit_drops_mode_update, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
