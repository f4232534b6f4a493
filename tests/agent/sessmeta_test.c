/* SPDX-License-Identifier: Apache-2.0 */
/* The unstable session metadata (issue 22 items 2-5), in-process: session/set_title,
 * session/archive and unarchive with session/list's `archived` filter, session/status, and the
 * systemPrompt of new, load and resume: what is advertised (and what each acp_unstable switch
 * takes away), what is stored, what the engine sees, and the refusals (wrong types, unknown
 * session, empty title, bad filter, unsupported prompt modes and blocks). */
#include "harness.h"

struct eng_state {
    int next_id;
    acp_turn *held;
    char seen[256]; /* the system prompt session_setup saw ("-" none), "+" for override */
};

static void engine_setup(acp_session *s, void *user)
{
    h *x = user;
    bool override = false;
    const char *sp = acp_session_system_prompt(s, &override);
    snprintf(x->e->seen, sizeof x->e->seen, "%s%s", override ? "+" : "", sp ? sp : "-");
}

static void engine_prompt(acp_turn *t, const json_t *prompt, void *user)
{
    h *x = user;
    const char *text = json_string_value(json_object_get(json_array_get(prompt, 0), "text"));
    if (text && !strcmp(text, "hold")) {
        x->e->held = t;
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

static int setup(void **state)
{
    h *x = h_new("sessmeta", sizeof(eng_state));
    x->eng = (acp_engine){.struct_size = sizeof(acp_engine),
                          .name = "sessmeta-engine",
                          .version = "1",
                          .session_setup = engine_setup,
                          .prompt = engine_prompt,
                          .cancel = engine_cancel,
                          .user = x};
    *state = x;
    return 0;
}

static int teardown(void **state)
{
    h_free(*state);
    return 0;
}

static int next_id(h *x)
{
    return ++x->e->next_id;
}

static void start(h *x)
{
    agent_start(x);
    json_decref(request(x, next_id(x), "initialize", "{\"protocolVersion\":1}"));
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

/* session/new with extra members (",'k':v" or ""); the id into id, or the error response. */
static json_t *try_new(h *x, char *id, const char *extra)
{
    json_t *r = call(x, "session/new", "{'cwd':'%s','mcpServers':[]%s}", x->dir, extra);
    const char *sid = jstr(result_of(r), "sessionId");
    snprintf(id, 80, "%s", sid ? sid : "");
    return r;
}

static void new_session(h *x, char *id, const char *extra)
{
    json_t *r = try_new(x, id, extra);
    assert_true(*id);
    json_decref(r);
}

static void expect_error(json_t *r, int code, const char *part)
{
    assert_int_equal(error_code(r), code);
    if (part && !strstr(error_message(r), part))
        fail_msg("'%s' lacks '%s'", error_message(r), part);
    json_decref(r);
}

static void expect_not_found(json_t *r, const char *id)
{
    assert_int_equal(error_code(r), ACP_RPC_NOT_FOUND);
    json_t *data = json_object_get(json_object_get(last(r), "error"), "data");
    assert_string_equal(jstr(data, "sessionId"), id);
    json_decref(r);
}

static int count(void *user, const acp_store_session *s)
{
    (void)s;
    ++*(size_t *)user;
    return 0;
}

static size_t stored_sessions(h *x)
{
    size_t n = 0;
    char *next = NULL;
    assert_int_equal(acp_store_list(x->st, NULL, NULL, 1000, count, &n, &next), 0);
    assert_null(next);
    return n;
}

/* --- capabilities ---------------------------------------------------------------------------- */

static json_t *session_caps(h *x)
{
    json_t *r = request(x, next_id(x), "initialize", "{\"protocolVersion\":1}");
    json_t *c = json_incref(
        json_object_get(json_object_get(result_of(r), "agentCapabilities"), "sessionCapabilities"));
    json_decref(r);
    return c;
}

static void test_caps(void **state)
{
    h *x = *state;
    agent_start(x);
    json_t *c = session_caps(x);
    assert_json(json_object_get(c, "title"), J("{}"));
    assert_json(json_object_get(c, "archive"), J("{}"));
    assert_json(json_object_get(c, "status"), J("{}"));
    assert_json(json_object_get(c, "systemPrompt"), J("{}")); /* append only */
    json_decref(c);
    agent_stop(x);

    x->eng.system_prompt_override = true;
    agent_start(x);
    c = session_caps(x);
    assert_json(json_object_get(c, "systemPrompt"), J("{'mode':{'override':{}}}"));
    json_decref(c);
    agent_stop(x);

    /* each switch takes its capability and its methods away (-32601) */
    static const struct {
        unsigned bit;
        const char *cap, *method;
    } f[] = {{ACP_UNSTABLE_TITLE, "title", "session/set_title"},
             {ACP_UNSTABLE_ARCHIVE, "archive", "session/archive"},
             {ACP_UNSTABLE_ARCHIVE, "archive", "session/unarchive"},
             {ACP_UNSTABLE_STATUS, "status", "session/status"},
             {ACP_UNSTABLE_SYSTEM_PROMPT, "systemPrompt", NULL}};
    for (size_t i = 0; i < sizeof f / sizeof *f; i++) {
        x->opts.unstable_off = f[i].bit;
        agent_start(x);
        c = session_caps(x);
        assert_null(json_object_get(c, f[i].cap));
        assert_non_null(json_object_get(c, "list"));
        json_decref(c);
        if (f[i].method)
            expect_error(call(x, f[i].method, "{'sessionId':'s','title':'t'}"),
                         ACP_RPC_METHOD_NOT_FOUND, f[i].method);
        agent_stop(x);
    }
    /* archive needs list: without it, neither is advertised */
    x->opts.unstable_off = 0;
    x->eng.disable = ACP_DISABLE_LIST;
    agent_start(x);
    c = session_caps(x);
    assert_null(json_object_get(c, "archive"));
    assert_non_null(json_object_get(c, "title"));
    json_decref(c);
    expect_error(call(x, "session/archive", "{'sessionId':'s'}"), ACP_RPC_METHOD_NOT_FOUND, NULL);
}

/* --- set_title ----------------------------------------------------------------------------- */

static void assert_title(h *x, const char *id, const char *want)
{
    acp_store_session row = ACP_STORE_SESSION_INIT;
    assert_int_equal(acp_store_get(x->st, id, &row), 0);
    if (want)
        assert_string_equal(row.title, want);
    else
        assert_null(row.title);
    acp_store_session_clear(&row);
}

static void test_set_title(void **state)
{
    h *x = *state;
    start(x);
    char id[80];
    new_session(x, id, "");
    /* normalised, stored before the answer, told to the open session's client first */
    json_t *r =
        call(x, "session/set_title", "{'sessionId':'%s','title':'  Fix\\n the\\t\\tparser  '}", id);
    assert_json(result_of(r), J("{'title':'Fix the parser'}"));
    assert_int_equal(count_updates(r, "session_info_update"), 1);
    json_t *u = update_at(r, 0);
    assert_string_equal(jstr(u, "title"), "Fix the parser");
    json_decref(r);
    assert_title(x, id, "Fix the parser");

    /* a long title is cut on a character boundary */
    char big[1200] = "";
    for (int i = 0; i < 300; i++) strcat(big, "\xc3\xa9"); /* é: 2 bytes */
    r = call(x, "session/set_title", "{'sessionId':'%s','title':'%s'}", id, big);
    const char *t = jstr(result_of(r), "title");
    assert_non_null(t);
    assert_true(strlen(t) <= 256 && strlen(t) % 2 == 0);
    json_decref(r);

    /* a session not open here (closed, or stored by another process) is retitled as well */
    json_decref(call(x, "session/close", "{'sessionId':'%s'}", id));
    r = call(x, "session/set_title", "{'sessionId':'%s','title':'Closed one'}", id);
    assert_json(result_of(r), J("{'title':'Closed one'}"));
    assert_int_equal(count_updates(r, NULL), 0);
    json_decref(r);
    assert_title(x, id, "Closed one");

    /* refusals: the title is left as it was */
    expect_error(call(x, "session/set_title", "{'sessionId':'%s','title':' \\t\\n '}", id),
                 ACP_RPC_INVALID_PARAMS, "empty");
    expect_error(call(x, "session/set_title", "{'sessionId':'%s','title':''}", id),
                 ACP_RPC_INVALID_PARAMS, "empty");
    expect_error(call(x, "session/set_title", "{'sessionId':'%s','title':5}", id),
                 ACP_RPC_INVALID_PARAMS, "title");
    expect_error(call(x, "session/set_title", "{'sessionId':'%s','title':null}", id),
                 ACP_RPC_INVALID_PARAMS, "title");
    expect_error(call(x, "session/set_title", "{'sessionId':'%s'}", id), ACP_RPC_INVALID_PARAMS,
                 "title");
    expect_error(call(x, "session/set_title", "{'sessionId':7,'title':'x'}"),
                 ACP_RPC_INVALID_PARAMS, "sessionId");
    expect_not_found(call(x, "session/set_title", "{'sessionId':'nope','title':'x'}"), "nope");
    assert_title(x, id, "Closed one");
}

/* --- archive ------------------------------------------------------------------------------- */

/* The ids session/list gives with params (one page), and their archived flags, compared with
 * want (stolen). */
static void expect_list(h *x, json_t *want, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void expect_list(h *x, json_t *want, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *params = vquote(fmt, ap);
    va_end(ap);
    json_t *all = json_object();
    json_t *r = request(x, next_id(x), "session/list", params);
    free(params);
    json_t *ss = json_object_get(result_of(r), "sessions");
    assert_non_null(ss);
    size_t i;
    json_t *s;
    json_array_foreach(ss, i, s)
    {
        assert_true(json_is_boolean(json_object_get(s, "archived"))); /* on every one */
        json_object_set(all, jstr(s, "sessionId"), json_object_get(s, "archived"));
    }
    json_decref(r);
    assert_json(all, want);
    json_decref(all);
}

static void test_archive(void **state)
{
    h *x = *state;
    start(x);
    char a[80], b[80], c[80];
    new_session(x, a, "");
    new_session(x, b, "");
    new_session(x, c, "");
    json_decref(call(x, "session/close", "{'sessionId':'%s'}", b));

    /* b (closed) archived, twice: idempotent */
    json_t *r = call(x, "session/archive", "{'sessionId':'%s'}", b);
    assert_json(result_of(r), J("{}"));
    json_decref(r);
    json_decref(call(x, "session/archive", "{'sessionId':'%s'}", b));

    /* a is active with a turn running: archiving closes it first (its prompt answered
     * cancelled before the archive's answer), then it is archived */
    send_prompt(x, 900, a, "hold");
    turn(x);
    assert_non_null(x->e->held);
    int id = next_id(x);
    send_line(x,
              "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"session/archive\",\"params\":"
              "{\"sessionId\":\"%s\"}}",
              id, a);
    r = take_response(x, id);
    int p = find_in(r, 900);
    assert_true(p >= 0 && p < (int)json_array_size(r) - 1);
    assert_string_equal(stop_reason(json_array_get(r, (size_t)p)), "cancelled");
    assert_json(result_of(r), J("{}"));
    json_decref(r);
    assert_null(x->e->held);
    expect_not_found(
        call(x, "session/prompt", "{'sessionId':'%s','prompt':[{'type':'text','text':'hi'}]}", a),
        a);
    r = call(x, "session/status", "{'sessionId':'%s'}", a);
    assert_json(result_of(r), J("{'status':'saved'}"));
    json_decref(r);

    /* the filter: exclude (default, and null), include, only */
    expect_list(x, J("{'%s':false}", c), "{}");
    expect_list(x, J("{'%s':false}", c), "{'archived':null}");
    expect_list(x, J("{'%s':false}", c), "{'archived':'exclude'}");
    expect_list(x, J("{'%s':true,'%s':true,'%s':false}", a, b, c), "{'archived':'include'}");
    expect_list(x, J("{'%s':true,'%s':true}", a, b), "{'archived':'only','cwd':'%s'}", x->dir);
    expect_list(x, J("{}"), "{'archived':'only','cwd':'/elsewhere'}");

    /* unarchive, idempotent; it does not open the session */
    json_decref(call(x, "session/unarchive", "{'sessionId':'%s'}", b));
    r = call(x, "session/unarchive", "{'sessionId':'%s'}", b);
    assert_json(result_of(r), J("{}"));
    json_decref(r);
    r = call(x, "session/unarchive", "{'sessionId':'%s'}", c); /* never archived */
    assert_json(result_of(r), J("{}"));
    json_decref(r);
    expect_list(x, J("{'%s':false,'%s':false}", b, c), "{}");
    r = call(x, "session/status", "{'sessionId':'%s'}", b);
    assert_json(result_of(r), J("{'status':'saved'}"));
    json_decref(r);

    /* refusals */
    expect_error(call(x, "session/list", "{'archived':'all'}"), ACP_RPC_INVALID_PARAMS, "all");
    expect_error(call(x, "session/list", "{'archived':'_mine'}"), ACP_RPC_INVALID_PARAMS, NULL);
    expect_error(call(x, "session/list", "{'archived':true}"), ACP_RPC_INVALID_PARAMS, "string");
    expect_not_found(call(x, "session/archive", "{'sessionId':'nope'}"), "nope");
    expect_not_found(call(x, "session/unarchive", "{'sessionId':'nope'}"), "nope");
    expect_error(call(x, "session/archive", "{}"), ACP_RPC_INVALID_PARAMS, "sessionId");
    expect_error(call(x, "session/unarchive", "{'sessionId':[]}"), ACP_RPC_INVALID_PARAMS,
                 "sessionId");
    agent_stop(x);

    /* archive switched off: the member is ignored and SessionInfo has no archived */
    x->opts.unstable_off = ACP_UNSTABLE_ARCHIVE;
    start(x);
    r = call(x, "session/list", "{'archived':'bogus'}");
    json_t *ss = json_object_get(result_of(r), "sessions");
    assert_int_equal(json_array_size(ss), 3);
    assert_null(json_object_get(json_array_get(ss, 0), "archived"));
    json_decref(r);
}

/* Paging with a filter: 120 sessions (AGENT_LIST_PAGE is 50), every other one archived; each
 * filter's pages give each of its sessions once. */
static void test_archive_paging(void **state)
{
    h *x = *state;
    start(x);
    char ids[120][80];
    for (int i = 0; i < 120; i++) {
        new_session(x, ids[i], "");
        if (i % 2) json_decref(call(x, "session/archive", "{'sessionId':'%s'}", ids[i]));
    }
    static const char *const filters[] = {"exclude", "include", "only"};
    static const int want[] = {60, 120, 60};
    for (int f = 0; f < 3; f++) {
        json_t *seen = json_object();
        char *cursor = NULL;
        int pages = 0;
        do {
            json_t *r = cursor ? call(x, "session/list", "{'archived':'%s','cursor':'%s'}",
                                      filters[f], cursor)
                               : call(x, "session/list", "{'archived':'%s'}", filters[f]);
            free(cursor);
            cursor = NULL;
            json_t *res = result_of(r), *s;
            size_t i;
            json_array_foreach(json_object_get(res, "sessions"), i, s)
            {
                assert_null(json_object_get(seen, jstr(s, "sessionId")));
                json_object_set_new(seen, jstr(s, "sessionId"), json_true());
                bool arch = json_is_true(json_object_get(s, "archived"));
                if (f == 0) assert_false(arch);
                if (f == 2) assert_true(arch);
            }
            if (jstr(res, "nextCursor")) cursor = strdup(jstr(res, "nextCursor"));
            json_decref(r);
            pages++;
        } while (cursor);
        assert_int_equal(json_object_size(seen), want[f]);
        assert_int_equal(pages, (want[f] + 49) / 50);
        json_decref(seen);
    }
}

/* --- status -------------------------------------------------------------------------------- */

static void test_status(void **state)
{
    h *x = *state;
    start(x);
    char id[80];
    new_session(x, id, "");
    json_t *r = call(x, "session/status", "{'sessionId':'%s'}", id);
    assert_json(result_of(r), J("{'status':'open'}"));
    assert_int_equal(count_updates(r, NULL), 0);
    json_decref(r);
    json_decref(call(x, "session/close", "{'sessionId':'%s'}", id));
    r = call(x, "session/status", "{'sessionId':'%s'}", id);
    assert_json(result_of(r), J("{'status':'saved'}"));
    json_decref(r);
    /* no side effect: still not open, nothing leased */
    assert_int_equal(acp_agent_session_count(x->a), 0);
    expect_not_found(call(x, "session/status", "{'sessionId':'nope'}"), "nope");
    expect_error(call(x, "session/status", "{'sessionId':1}"), ACP_RPC_INVALID_PARAMS, "sessionId");
    expect_error(call(x, "session/status", "{}"), ACP_RPC_INVALID_PARAMS, "sessionId");
    /* a session deleted is unknown */
    json_decref(call(x, "session/delete", "{'sessionId':'%s'}", id));
    expect_not_found(call(x, "session/status", "{'sessionId':'%s'}", id), id);
}

/* --- systemPrompt -------------------------------------------------------------------------- */

#define SP(mode, text)                                                                             \
    ",'systemPrompt':{'mode':'" mode "','content':[{'type':'text','text':'" text "'}]}"

static void assert_stored_prompt(h *x, const char *id, const char *part)
{
    acp_store_session row = ACP_STORE_SESSION_INIT;
    assert_int_equal(acp_store_get(x->st, id, &row), 0);
    if (part) {
        assert_non_null(row.system_prompt);
        assert_non_null(strstr(row.system_prompt, part));
    } else
        assert_null(row.system_prompt);
    acp_store_session_clear(&row);
}

static void test_system_prompt(void **state)
{
    h *x = *state;
    start(x);
    char id[80], id2[80];
    json_t *r = try_new(x, id,
                        ",'systemPrompt':{'mode':'append','content':[{'type':'text','text':'Be "
                        "brief.'},{'type':'text','text':'Use French.'}]}");
    assert_true(*id);
    json_decref(r);
    assert_string_equal(x->e->seen, "Be brief.\n\nUse French.");
    assert_stored_prompt(x, id, "Be brief.");
    json_decref(call(x, "session/close", "{'sessionId':'%s'}", id));

    /* load without one: the stored one; resume with one: it replaces the stored one */
    x->e->seen[0] = 0;
    json_decref(
        call(x, "session/load", "{'sessionId':'%s','cwd':'%s','mcpServers':[]}", id, x->dir));
    assert_string_equal(x->e->seen, "Be brief.\n\nUse French.");
    json_decref(call(x, "session/close", "{'sessionId':'%s'}", id));
    json_decref(call(x, "session/resume",
                     "{'sessionId':'%s','cwd':'%s','mcpServers':[]" SP("append", "Short.") "}", id,
                     x->dir));
    assert_string_equal(x->e->seen, "Short.");
    assert_stored_prompt(x, id, "Short.");
    json_decref(call(x, "session/close", "{'sessionId':'%s'}", id));
    json_decref(call(x, "session/load",
                     "{'sessionId':'%s','cwd':'%s','mcpServers':[],'systemPrompt':null}", id,
                     x->dir));
    assert_string_equal(x->e->seen, "Short.");

    /* none: the engine sees none */
    new_session(x, id2, "");
    assert_string_equal(x->e->seen, "-");
    assert_stored_prompt(x, id2, NULL);

    /* refusals: no session is created, none loaded */
    size_t n = stored_sessions(x);
    expect_error(try_new(x, id2, SP("override", "x")), ACP_RPC_INVALID_PARAMS, "override");
    expect_error(try_new(x, id2, SP("_custom", "x")), ACP_RPC_INVALID_PARAMS, "_custom");
    expect_error(try_new(x, id2, ",'systemPrompt':{'mode':'append','content':[]}"),
                 ACP_RPC_INVALID_PARAMS, "empty");
    expect_error(try_new(x, id2,
                         ",'systemPrompt':{'mode':'append','content':[{'type':'image','data':'AA"
                         "','mimeType':'image/png'}]}"),
                 ACP_RPC_INVALID_PARAMS, "text");
    expect_error(try_new(x, id2, ",'systemPrompt':{'mode':'append','content':[{'type':'text'}]}"),
                 ACP_RPC_INVALID_PARAMS, "text");
    expect_error(try_new(x, id2, ",'systemPrompt':'Be brief'"), ACP_RPC_INVALID_PARAMS,
                 "systemPrompt");
    expect_error(try_new(x, id2, ",'systemPrompt':{'content':[{'type':'text','text':'x'}]}"),
                 ACP_RPC_INVALID_PARAMS, "mode");
    expect_error(try_new(x, id2, ",'systemPrompt':{'mode':'append','content':{}}"),
                 ACP_RPC_INVALID_PARAMS, "content");
    assert_int_equal(stored_sessions(x), n);
    json_decref(call(x, "session/close", "{'sessionId':'%s'}", id));
    expect_error(call(x, "session/load",
                      "{'sessionId':'%s','cwd':'%s','mcpServers':[]" SP("override", "x") "}", id,
                      x->dir),
                 ACP_RPC_INVALID_PARAMS, "override");
    assert_int_equal(acp_agent_session_count(x->a), 1); /* id2 only */
    assert_stored_prompt(x, id, "Short.");
    agent_stop(x);

    /* override, where the engine offers it */
    x->eng.system_prompt_override = true;
    start(x);
    new_session(x, id2, SP("override", "Pirate."));
    assert_string_equal(x->e->seen, "+Pirate.");
    agent_stop(x);

    /* switched off: the member is ignored (neither checked nor stored nor seen) */
    x->opts.unstable_off = ACP_UNSTABLE_SYSTEM_PROMPT;
    start(x);
    new_session(x, id2, ",'systemPrompt':'whatever'");
    assert_string_equal(x->e->seen, "-");
    assert_stored_prompt(x, id2, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_caps, setup, teardown),
        cmocka_unit_test_setup_teardown(test_set_title, setup, teardown),
        cmocka_unit_test_setup_teardown(test_archive, setup, teardown),
        cmocka_unit_test_setup_teardown(test_archive_paging, setup, teardown),
        cmocka_unit_test_setup_teardown(test_status, setup, teardown),
        cmocka_unit_test_setup_teardown(test_system_prompt, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
