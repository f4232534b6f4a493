/* SPDX-License-Identifier: Apache-2.0 */
/* Agent -> client calls (call.c, tool.c, terminal.c, elicit.c) driven in-process through
 * harness.h: bytes into the agent's acp_conn, the loop turned by hand, acp_agent_flush() where
 * the transport would call it, the output parsed back and answered as a client would. The
 * engine only holds each turn: the tests make their calls on it directly. A real SQLite store in
 * a temporary directory. */
#include <unistd.h>

#include "harness.h"

#define FULL_CAPS                                                                                  \
    "{\"fs\":{\"readTextFile\":true,\"writeTextFile\":true},\"terminal\":true,"                    \
    "\"elicitation\":{\"form\":{},\"url\":{}}}"

/* --- a store whose commits can be made to fail -------------------------------------------- */

static bool fail_commits;

static int failing_commit(acp_store *st, const char *now)
{
    if (fail_commits) return acp_error_set(ACP_ESTORE, "disk I/O error (injected)");
    return real_ops->commit(st, now);
}

/* --- the engine: it only holds each turn ------------------------------------------------------ */

struct eng_state {
    acp_turn *t;        /* the running turn: the engine holds it */
    acp_session *ts;    /* its session */
    acp_session *s;     /* the session made ready last */
    int cancels;        /* the engine's cancel hook ran */
    bool end_on_cancel; /* ...and ends the turn */
    int logs;
    acp_auth *au;
};

static void engine_prompt(acp_turn *t, const json_t *prompt, void *user)
{
    h *x = user;
    x->e->t = t;
    x->e->ts = acp_turn_session(t);
}

static void engine_cancel(acp_turn *t, void *user)
{
    h *x = user;
    x->e->cancels++;
    if (!x->e->end_on_cancel) return;
    if (x->e->t == t) x->e->t = NULL;
    acp_turn_end(t, "cancelled");
}

static void engine_ready(acp_session *s, void *user)
{
    h *x = user;
    x->e->s = s;
}

static void engine_session_free(acp_session *s, void *user)
{
    h *x = user;
    if (x->e->s == s) x->e->s = NULL;
    if (x->e->ts == s) x->e->t = NULL; /* force-ended: no turn runs any more */
}

static void count_log(const char *line, void *user)
{
    h *x = user;
    x->e->logs++;
}

static int setup(void **state)
{
    h *x = h_new("calls", sizeof(eng_state));
    x->ops.commit = failing_commit;
    fail_commits = false;
    x->eng = (acp_engine){.struct_size = sizeof(acp_engine),
                          .name = "calls-engine",
                          .version = "1",
                          .prompt = engine_prompt,
                          .cancel = engine_cancel,
                          .session_ready = engine_ready,
                          .session_free = engine_session_free,
                          .user = x};
    x->opts =
        (acp_agent_opts){.struct_size = sizeof(acp_agent_opts), .on_log = count_log, .user = x};
    agent_start(x);
    *state = x;
    return 0;
}

static int teardown(void **state)
{
    h_free(*state);
    return 0;
}

/* --- talking to the agent as a client ------------------------------------------------------- */

/* Removes the first message with this method from x->msgs and returns it (a new reference),
 * turning the loop first. Fails the test when there is none. */
static json_t *take(h *x, const char *method)
{
    turn(x);
    int at = find_method(x->msgs, method, 0);
    assert_true(at >= 0);
    json_t *m = json_incref(json_array_get(x->msgs, (size_t)at));
    json_array_remove(x->msgs, (size_t)at);
    return m;
}

/* Answers the agent's request req (the result as JSON text) and consumes req. */
static void answer(h *x, json_t *req, const char *result)
{
    send_line(x, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":%s}", (long long)id_of(req), result);
    json_decref(req);
    turn(x);
}

static void answer_error(h *x, json_t *req, int code, const char *message)
{
    send_line(x, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"error\":{\"code\":%d,\"message\":\"%s\"}}",
              (long long)id_of(req), code, message);
    json_decref(req);
    turn(x);
}

/* Nothing more was written. */
static void quiet(h *x)
{
    size_t n = json_array_size(x->msgs);
    turn(x);
    assert_int_equal(json_array_size(x->msgs), n);
}

/* initialize with these clientCapabilities (JSON text). */
static void init(h *x, const char *caps)
{
    char p[512];
    snprintf(p, sizeof p, "{\"protocolVersion\":1,\"clientCapabilities\":%s}", caps);
    json_decref(request(x, 1000, "initialize", p));
}

/* A session in x->dir (x->e->s); its id into id (80 bytes). */
static void new_session(h *x, char *id)
{
    char p[400];
    snprintf(p, sizeof p, "{\"cwd\":\"%s\",\"mcpServers\":[]}", x->dir);
    json_t *r = request(x, 1001, "session/new", p);
    assert_int_equal(json_array_size(r), 1); /* nothing before the answer */
    snprintf(id, 80, "%s", jstr(result_of(r), "sessionId"));
    json_decref(r);
    turn(x);
    assert_non_null(x->e->s);
    json_array_clear(x->msgs);
}

/* Starts a prompt (request id) the engine holds in x->e->t. */
static void hold_turn(h *x, int id, const char *sid)
{
    x->e->t = NULL;
    send_prompt(x, id, sid, "hold");
    turn(x);
    assert_non_null(x->e->t);
}

/* initialize with caps, a session (its id into sid, 80 bytes) and a prompt (request 5) the
 * engine holds; returns its turn. */
static acp_turn *open_turn(h *x, const char *caps, char *sid)
{
    init(x, caps);
    new_session(x, sid);
    hold_turn(x, 5, sid);
    return x->e->t;
}

/* Ends the held turn; returns the index of the prompt's response (request id) in x->msgs. */
static int end_turn(h *x, int id)
{
    acp_turn_end(x->e->t, "end_turn");
    x->e->t = NULL;
    return wait_response(x, id);
}

/* session/cancel of sid. */
static void cancel_session(h *x, const char *sid)
{
    send_line(
        x, "{\"jsonrpc\":\"2.0\",\"method\":\"session/cancel\",\"params\":{\"sessionId\":\"%s\"}}",
        sid);
}

/* session/close (request id) of sid; what came up to its response goes into x->msgs. */
static void close_session(h *x, int id, const char *sid)
{
    char p[120];
    snprintf(p, sizeof p, "{\"sessionId\":\"%s\"}", sid);
    json_t *r = request(x, id, "session/close", p);
    json_array_extend(x->msgs, r);
    json_decref(r);
}

/* --- what callbacks got -------------------------------------------------------------------- */

typedef struct got {
    int calls, status;
    char error[512], text[256], option[64], kind[64], action[64], signal[32];
    size_t n;
    bool null_option, truncated, exited;
    long code;
    json_t *json; /* a result or the elicitation content (a copy), NULL when none */
    acp_session *s;
    acp_turn *t;
    acp_terminal *term;
    bool end_turn;  /* the callback ends its turn (then x->e->t must be forgotten by the test) */
    bool release;   /* the callback releases its terminal */
    bool ask_again; /* the permission callback asks again, about tc */
    acp_tool_call *tc;
} got;

static void got_base(got *g, int status, const char *error)
{
    g->calls++;
    g->status = status;
    snprintf(g->error, sizeof g->error, "%s", error ? error : "");
}

static void got_json(got *g, const json_t *v)
{
    json_decref(g->json);
    g->json = v ? json_deep_copy(v) : NULL;
}

static void got_clear(got *g)
{
    json_decref(g->json);
    memset(g, 0, sizeof *g);
}

#define COPY(dst, src) snprintf(dst, sizeof dst, "%s", (src) ? (src) : "")

static void on_read(acp_session *s, int st, const char *text, size_t n, const char *err, void *u)
{
    got *g = u;
    got_base(g, st, err);
    g->s = s;
    g->n = n;
    if (text) memcpy(g->text, text, n < sizeof g->text ? n : sizeof g->text);
}

static void on_done(acp_session *s, int st, const char *err, void *u)
{
    got *g = u;
    got_base(g, st, err);
    g->s = s;
}

static void on_perm(acp_turn *t, int st, const char *opt, const char *kind, const char *err,
                    void *u)
{
    got *g = u;
    got_base(g, st, err);
    g->t = t;
    g->null_option = !opt;
    COPY(g->option, opt);
    COPY(g->kind, kind);
    if (g->ask_again) { /* a stubborn engine: cancelled, it asks again */
        g->ask_again = false;
        acp_perm_option o = {"allow", "Allow", "allow_once"};
        assert_int_equal(acp_turn_request_permission(t, g->tc, &o, 1, on_perm, g), 0);
    }
    if (g->end_turn) acp_turn_end(t, "cancelled");
}

static void on_elicit(acp_session *s, int st, const char *action, const json_t *content,
                      const char *err, void *u)
{
    got *g = u;
    got_base(g, st, err);
    g->s = s;
    COPY(g->action, action);
    got_json(g, content);
    if (g->end_turn) acp_turn_end(acp_session_turn(s), "cancelled");
}

static void on_term(acp_terminal *term, int st, const char *err, void *u)
{
    got *g = u;
    got_base(g, st, err);
    g->term = term;
    if (g->release) acp_terminal_release(term);
}

static void on_output(acp_terminal *term, int st, const char *out, size_t n, bool truncated,
                      const acp_terminal_exit *e, const char *err, void *u)
{
    got *g = u;
    got_base(g, st, err);
    g->term = term;
    g->n = n;
    if (out) memcpy(g->text, out, n < sizeof g->text ? n : sizeof g->text);
    g->truncated = truncated;
    g->exited = e->exited;
    g->code = e->exit_code;
    COPY(g->signal, e->signal);
}

static void on_exit_(acp_terminal *term, int st, const acp_terminal_exit *e, const char *err,
                     void *u)
{
    got *g = u;
    got_base(g, st, err);
    g->term = term;
    g->exited = e->exited;
    g->code = e->exit_code;
    COPY(g->signal, e->signal);
}

static void on_turn_call(acp_turn *t, int st, const json_t *result, const char *err, void *u)
{
    got *g = u;
    got_base(g, st, err);
    g->t = t;
    got_json(g, result);
}

static void on_session_call(acp_session *s, int st, const json_t *result, const char *err, void *u)
{
    got *g = u;
    got_base(g, st, err);
    g->s = s;
    got_json(g, result);
}

/* --- capability gates --------------------------------------------------------------------- */

/* Without the capability nothing is sent (file-system.mdx, terminals.mdx: MUST NOT attempt;
 * elicitation.mdx: MUST NOT request a mode the client has not advertised), and the message
 * names the capability. */
static void test_gates(void **state)
{
    h *x = *state;
    char sid[80];
    acp_turn *t = open_turn(x,
                            "{\"fs\":{\"readTextFile\":false},\"terminal\":false,"
                            "\"elicitation\":{\"form\":null,\"url\":null}}",
                            sid);
    acp_session *s = x->e->s;
    got g = {0};
    assert_int_equal(acp_turn_read_text_file(t, "a.txt", 0, 0, on_read, &g), ACP_ENOTSUP);
    assert_errmsg(x, "fs.readTextFile");
    assert_int_equal(acp_session_read_text_file(s, "a.txt", 0, 0, on_read, &g), ACP_ENOTSUP);
    assert_int_equal(acp_turn_write_text_file(t, "a.txt", "x", 1, on_done, &g), ACP_ENOTSUP);
    assert_errmsg(x, "fs.writeTextFile");
    assert_int_equal(acp_session_write_text_file(s, "a.txt", "x", 1, on_done, &g), ACP_ENOTSUP);
    acp_terminal *term = (acp_terminal *)&g;
    acp_terminal_opts o = {.struct_size = sizeof(acp_terminal_opts), .command = "ls"};
    assert_int_equal(acp_turn_terminal_create(t, &o, on_term, &g, &term), ACP_ENOTSUP);
    assert_null(term);
    assert_errmsg(x, "terminal");
    assert_int_equal(acp_session_terminal_create(s, &o, on_term, &g, &term), ACP_ENOTSUP);
    json_t *form = json_pack("{ss s{}}", "type", "object", "properties");
    char eid[48];
    assert_int_equal(
        acp_turn_elicit(
            t, &(acp_elicit){.struct_size = sizeof(acp_elicit), .message = "m", .form = form}, eid,
            on_elicit, &g),
        ACP_ENOTSUP);
    assert_errmsg(x, "elicitation.form");
    assert_int_equal(
        acp_session_elicit(
            s,
            &(acp_elicit){.struct_size = sizeof(acp_elicit), .message = "m", .url = "https://e.x/"},
            eid, on_elicit, &g),
        ACP_ENOTSUP);
    assert_errmsg(x, "elicitation.url");
    /* the raw calls are gated the same way */
    assert_int_equal(
        acp_turn_call(t, "terminal/output", json_pack("{ss}", "terminalId", "t"), on_turn_call, &g),
        ACP_ENOTSUP);
    assert_int_equal(acp_session_call(s, "fs/read_text_file", json_pack("{ss}", "path", "/a"),
                                      on_session_call, &g),
                     ACP_ENOTSUP);
    assert_int_equal(acp_turn_call(t, "elicitation/create",
                                   json_pack("{ss ss ss ss}", "message", "m", "mode", "url", "url",
                                             "https://e.x/", "elicitationId", "e1"),
                                   on_turn_call, &g),
                     ACP_ENOTSUP);
    assert_errmsg(x, "elicitation.url");
    quiet(x);
    assert_int_equal(g.calls, 0);

    /* A second initialize replaces the capabilities: form mode only. */
    init(x, "{\"elicitation\":{\"form\":{}}}");
    assert_int_equal(
        acp_turn_elicit(
            t,
            &(acp_elicit){.struct_size = sizeof(acp_elicit), .message = "m", .url = "https://e.x/"},
            eid, on_elicit, &g),
        ACP_ENOTSUP);
    assert_int_equal(
        acp_turn_elicit(
            t, &(acp_elicit){.struct_size = sizeof(acp_elicit), .message = "m", .form = form}, eid,
            on_elicit, &g),
        0);
    json_decref(take(x, "elicitation/create"));
    json_decref(form);
    end_turn(x, 5);
}

/* --- fs ------------------------------------------------------------------------------------- */

static void test_fs(void **state)
{
    h *x = *state;
    char sid[80], want[PATH_MAX + 16];
    acp_turn *t = open_turn(x, FULL_CAPS, sid);
    got g = {0};
    /* relative to cwd, resolved: the client gets the absolute path */
    assert_int_equal(acp_turn_read_text_file(t, "a.txt", 3, 10, on_read, &g), 0);
    json_t *req = take(x, "fs/read_text_file");
    snprintf(want, sizeof want, "%s/a.txt", x->real);
    assert_string_equal(jstr(params_of(req), "path"), want);
    assert_string_equal(jstr(params_of(req), "sessionId"), sid);
    assert_int_equal(json_integer_value(json_object_get(params_of(req), "line")), 3);
    assert_int_equal(json_integer_value(json_object_get(params_of(req), "limit")), 10);
    answer(x, req, "{\"content\":\"h\\u00e9llo\\nworld\"}");
    assert_int_equal(g.calls, 1);
    assert_int_equal(g.status, 0);
    assert_ptr_equal(g.s, x->e->s);
    assert_int_equal(g.n, 12);
    assert_memory_equal(g.text, "h\xc3\xa9llo\nworld", 12);
    /* no line or limit: not sent */
    assert_int_equal(acp_turn_read_text_file(t, want, 0, 0, on_read, &g), 0);
    req = take(x, "fs/read_text_file");
    assert_null(json_object_get(params_of(req), "line"));
    assert_null(json_object_get(params_of(req), "limit"));
    answer(x, req, "{\"content\":\"\"}");
    assert_int_equal(g.calls, 2);
    assert_int_equal(g.n, 0);

    /* outside the roots, also through a symlink: refused, nothing sent */
    char link[PATH_MAX + 16];
    snprintf(link, sizeof link, "%s/escape", x->dir);
    assert_int_equal(symlink("/etc", link), 0);
    const char *outside[] = {"/etc/passwd", "../x.txt", "escape/passwd"};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(acp_turn_read_text_file(t, outside[i], 0, 0, on_read, &g), ACP_EACCES);
        assert_errmsg(x, "outside the session's roots");
        assert_int_equal(acp_turn_write_text_file(t, outside[i], "x", 1, on_done, &g), ACP_EACCES);
        assert_int_equal(acp_session_write_text_file(x->e->s, outside[i], "x", 1, on_done, &g),
                         ACP_EACCES);
    }
    assert_int_equal(acp_turn_read_text_file(t, NULL, 0, 0, on_read, &g), ACP_EINVAL);
    quiet(x);
    assert_int_equal(g.calls, 2);

    /* write: the text as content; {} and null both mean done */
    got w = {0};
    assert_int_equal(acp_turn_write_text_file(t, "b.txt", "new\ntext", 8, on_done, &w), 0);
    req = take(x, "fs/write_text_file");
    snprintf(want, sizeof want, "%s/b.txt", x->real);
    assert_json(params_of(req),
                json_pack("{ss ss ss}", "sessionId", sid, "path", want, "content", "new\ntext"));
    answer(x, req, "null");
    assert_int_equal(w.calls, 1);
    assert_int_equal(w.status, 0);
    assert_int_equal(acp_session_write_text_file(x->e->s, "b.txt", "", 0, on_done, &w), 0);
    answer(x, take(x, "fs/write_text_file"), "{}");
    assert_int_equal(w.calls, 2);
    assert_int_equal(w.status, 0);
    end_turn(x, 5);
}

/* --- malformed answers ---------------------------------------------------------------------- */

/* Makes a call with `start`, answers it with result (JSON text; NULL: a JSON-RPC error) and
 * checks that only that call failed with ACP_EPROTO and a sentence containing why. */
#define EXPECT_EPROTO(x, g, start, method, result, why)                                            \
    do {                                                                                           \
        int calls_ = (g)->calls;                                                                   \
        assert_int_equal((start), 0);                                                              \
        json_t *req_ = take(x, method);                                                            \
        if (result)                                                                                \
            answer(x, req_, result);                                                               \
        else                                                                                       \
            answer_error(x, req_, -32002, "the client says no");                                   \
        assert_int_equal((g)->calls, calls_ + 1);                                                  \
        assert_int_equal((g)->status, ACP_EPROTO);                                                 \
        if (!strstr((g)->error, why)) fail_msg("error \"%s\" lacks \"%s\"", (g)->error, why);      \
    } while (0)

static const char *nothing = NULL;

static void test_malformed_answers(void **state)
{
    h *x = *state;
    char sid[80];
    acp_turn *t = open_turn(x, FULL_CAPS, sid);
    got g = {0};
    EXPECT_EPROTO(x, &g, acp_turn_read_text_file(t, "a.txt", 0, 0, on_read, &g),
                  "fs/read_text_file", "{\"content\":5}",
                  "the client's fs/read_text_file answer has no string content");
    EXPECT_EPROTO(x, &g, acp_turn_read_text_file(t, "a.txt", 0, 0, on_read, &g),
                  "fs/read_text_file", nothing, "the client says no");
    EXPECT_EPROTO(x, &g, acp_turn_read_text_file(t, "a.txt", 0, 0, on_read, &g),
                  "fs/read_text_file", "{\"content\":\"a\",\"content\":\"b\"}", "does not parse");
    EXPECT_EPROTO(x, &g, acp_turn_write_text_file(t, "a.txt", "x", 1, on_done, &g),
                  "fs/write_text_file", "5", "fs/write_text_file answer is not an object");

    acp_tool_call *tc;
    assert_int_equal(
        acp_tool_call_begin(
            t, &(acp_tool_info){.struct_size = sizeof(acp_tool_info), .title = "Edit"}, &tc),
        0);
    acp_perm_option opts[] = {{"allow", "Allow", "allow_once"}, {"no", "No", "reject_once"}};
    EXPECT_EPROTO(x, &g, acp_turn_request_permission(t, tc, opts, 2, on_perm, &g),
                  "session/request_permission",
                  "{\"outcome\":{\"outcome\":\"selected\",\"optionId\":\"always\"}}",
                  "neither cancelled nor one of the options offered");
    EXPECT_EPROTO(x, &g, acp_turn_request_permission(t, tc, opts, 2, on_perm, &g),
                  "session/request_permission", "{\"outcome\":\"cancelled\"}", "neither cancelled");
    EXPECT_EPROTO(x, &g, acp_turn_request_permission(t, tc, opts, 2, on_perm, &g),
                  "session/request_permission", "{\"outcome\":{\"outcome\":\"selected\"}}",
                  "neither cancelled");

    acp_terminal *term;
    acp_terminal_opts o = {.struct_size = sizeof(acp_terminal_opts), .command = "ls"};
    EXPECT_EPROTO(x, &g, acp_turn_terminal_create(t, &o, on_term, &g, &term), "terminal/create",
                  "{\"terminalId\":7}", "the client's terminal/create answer has no string");
    assert_ptr_equal(g.term, term); /* and freed right after the callback (ASan) */
    assert_int_equal(acp_turn_terminal_create(t, &o, on_term, &g, &term), 0);
    answer(x, take(x, "terminal/create"), "{\"terminalId\":\"term_1\"}");
    assert_int_equal(g.status, 0);
    EXPECT_EPROTO(x, &g, acp_terminal_output(term, on_output, &g), "terminal/output",
                  "{\"output\":\"x\"}", "terminal/output answer needs");
    EXPECT_EPROTO(x, &g, acp_terminal_output(term, on_output, &g), "terminal/output",
                  "{\"output\":\"x\",\"truncated\":false,\"exitStatus\":{\"exitCode\":-1}}",
                  "terminal/output answer needs");
    assert_false(g.exited);
    EXPECT_EPROTO(x, &g, acp_terminal_output(term, on_output, &g), "terminal/output",
                  "{\"output\":\"x\",\"truncated\":false,\"exitStatus\":7}",
                  "terminal/output answer needs");
    EXPECT_EPROTO(x, &g, acp_terminal_wait_for_exit(term, on_exit_, &g), "terminal/wait_for_exit",
                  "{\"exitCode\":\"0\"}", "terminal/wait_for_exit answer needs");
    EXPECT_EPROTO(x, &g, acp_terminal_wait_for_exit(term, on_exit_, &g), "terminal/wait_for_exit",
                  "{\"exitCode\":4294967296}", "exitCode");
    EXPECT_EPROTO(x, &g, acp_terminal_wait_for_exit(term, on_exit_, &g), "terminal/wait_for_exit",
                  "{\"signal\":9}", "signal");
    EXPECT_EPROTO(x, &g, acp_terminal_kill(term, on_term, &g), "terminal/kill", "\"x\"",
                  "terminal/kill answer is not an object");

    json_t *form = json_pack("{s{s{ss}}}", "properties", "a", "type", "string");
    acp_elicit e = {.struct_size = sizeof(acp_elicit), .message = "m", .form = form};
    EXPECT_EPROTO(x, &g, acp_turn_elicit(t, &e, NULL, on_elicit, &g), "elicitation/create",
                  "{\"content\":{}}", "has no string action");
    EXPECT_EPROTO(x, &g, acp_turn_elicit(t, &e, NULL, on_elicit, &g), "elicitation/create",
                  "{\"action\":\"accept\",\"content\":[1]}", "content");
    json_decref(form);
    EXPECT_EPROTO(x, &g, acp_turn_call(t, "_x/y", NULL, on_turn_call, &g), "_x/y", nothing,
                  "the client says no");

    /* The connection goes on: every method still works. */
    int calls = g.calls;
    assert_int_equal(acp_turn_read_text_file(t, "a.txt", 0, 0, on_read, &g), 0);
    answer(x, take(x, "fs/read_text_file"), "{\"content\":\"fine\"}");
    assert_int_equal(g.calls, calls + 1);
    assert_int_equal(g.status, 0);
    assert_string_equal(g.text, "fine");
    assert_int_equal(acp_terminal_wait_for_exit(term, on_exit_, &g), 0);
    answer(x, take(x, "terminal/wait_for_exit"), "{\"exitCode\":3}");
    assert_int_equal(g.status, 0);
    assert_true(g.exited);
    assert_int_equal(g.code, 3);
    acp_terminal_release(term);
    json_decref(take(x, "terminal/release"));
    assert_int_equal(acp_tool_call_complete(tc, NULL), 0);
    end_turn(x, 5);
    got_clear(&g);
}

/* --- owners --------------------------------------------------------------------------------- */

/* A turn's call is forgotten when the turn ends: $/cancel_request goes out before the
 * response, and a late answer reaches nobody (and is not even logged as unknown). */
static void test_late_answer(void **state)
{
    h *x = *state;
    char sid[80];
    open_turn(x, FULL_CAPS, sid);
    got g = {0};
    assert_int_equal(acp_turn_read_text_file(x->e->t, "a.txt", 0, 0, on_read, &g), 0);
    json_t *req = take(x, "fs/read_text_file");
    int at = end_turn(x, 5);
    int cancel = find_cancel(x->msgs, id_of(req));
    assert_true(cancel >= 0 && cancel < at);
    json_array_clear(x->msgs);
    int logs = x->e->logs;
    answer(x, req, "{\"content\":\"late\"}");
    assert_int_equal(g.calls, 0);
    assert_int_equal(x->e->logs, logs);
    quiet(x);
    /* the next turn's calls work */
    hold_turn(x, 6, sid);
    assert_int_equal(acp_turn_read_text_file(x->e->t, "a.txt", 0, 0, on_read, &g), 0);
    answer(x, take(x, "fs/read_text_file"), "{\"content\":\"now\"}");
    assert_int_equal(g.calls, 1);
    assert_string_equal(g.text, "now");
    end_turn(x, 6);
}

/* Session calls outside a turn: sessionId added (the engine's own replaced), the result handed
 * over; a call made during a turn but owned by the session outlives the turn; the session's
 * calls are forgotten when it closes. */
static void test_session_calls(void **state)
{
    h *x = *state;
    init(x, FULL_CAPS);
    char sid[80];
    new_session(x, sid);
    acp_session *s = x->e->s;
    got g = {0};
    assert_int_equal(acp_session_call(s, "_x/ping", json_pack("{si ss}", "n", 1, "sessionId", "x"),
                                      on_session_call, &g),
                     0);
    json_t *req = take(x, "_x/ping");
    assert_json(params_of(req), json_pack("{ss si}", "sessionId", sid, "n", 1));
    answer(x, req, "{\"pong\":true}");
    assert_int_equal(g.calls, 1);
    assert_ptr_equal(g.s, s);
    assert_json(g.json, J("{\"pong\":true}"));
    assert_int_equal(acp_session_call(s, "_x/ping", json_pack("[]"), on_session_call, &g),
                     ACP_EINVAL);
    assert_int_equal(acp_session_call(s, "_x/ping", NULL, on_session_call, &g), 0);
    answer(x, take(x, "_x/ping"), "{}");
    assert_int_equal(g.calls, 2);

    /* owned by the session, made in a turn: answered after the turn ended */
    hold_turn(x, 5, sid);
    got r = {0};
    assert_int_equal(acp_session_read_text_file(s, "a.txt", 0, 0, on_read, &r), 0);
    req = take(x, "fs/read_text_file");
    int at = end_turn(x, 5);
    assert_true(at >= 0);
    assert_int_equal(find_cancel(x->msgs, id_of(req)), -1);
    answer(x, req, "{\"content\":\"still\"}");
    assert_int_equal(r.calls, 1);
    assert_string_equal(r.text, "still");

    /* closing the session forgets its calls before close is answered */
    assert_int_equal(acp_session_read_text_file(s, "a.txt", 0, 0, on_read, &r), 0);
    req = take(x, "fs/read_text_file");
    close_session(x, 7, sid);
    int cancel = find_cancel(x->msgs, id_of(req));
    assert_true(cancel >= 0 && cancel < find_response(x, 7));
    answer(x, req, "{\"content\":\"too late\"}");
    assert_int_equal(r.calls, 1);
    got_clear(&g);
}

/* Requests wait behind the session's uncommitted updates (they never overtake what explains
 * them); a failed commit drops those updates but not the requests held with them. */
static void test_hold_order(void **state)
{
    h *x = *state;
    char sid[80];
    open_turn(x, FULL_CAPS, sid);
    got g = {0};
    assert_int_equal(acp_turn_text(x->e->t, NULL, NULL, "looking", 7), 0);
    assert_int_equal(acp_turn_read_text_file(x->e->t, "a.txt", 0, 0, on_read, &g), 0);
    assert_int_equal(acp_conn_out_len(acp_agent_conn(x->a)), 0); /* both held */
    turn(x);
    int chunk = find_method(x->msgs, "session/update", 0),
        req = find_method(x->msgs, "fs/read_text_file", 0);
    assert_true(chunk >= 0 && chunk < req);
    json_t *r = take(x, "fs/read_text_file");
    answer(x, r, "{\"content\":\"\"}");
    end_turn(x, 5);
    json_array_clear(x->msgs);

    /* outside a turn: the commit fails, the update is dropped, the request goes out */
    fail_commits = true;
    json_t *u = json_pack("{ss s{ss ss}}", "sessionUpdate", "agent_message_chunk", "content",
                          "type", "text", "text", "lost");
    assert_int_equal(acp_session_update(x->e->s, u), 0);
    json_decref(u);
    assert_int_equal(acp_session_read_text_file(x->e->s, "a.txt", 0, 0, on_read, &g), 0);
    turn(x);
    fail_commits = false;
    assert_int_equal(find_method(x->msgs, "session/update", 0), -1);
    answer(x, take(x, "fs/read_text_file"), "{\"content\":\"kept\"}");
    assert_int_equal(g.calls, 2);
    assert_string_equal(g.text, "kept");
}

/* acp_turn_meta: the prompt's _meta for the whole turn. */
static void test_turn_meta(void **state)
{
    h *x = *state;
    init(x, FULL_CAPS);
    char sid[80];
    new_session(x, sid);
    send_line(x,
              "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"session/prompt\",\"params\":"
              "{\"sessionId\":\"%s\",\"prompt\":[{\"type\":\"text\",\"text\":\"m\"}],"
              "\"_meta\":{\"traceparent\":\"00-ab-cd-01\"}}}",
              sid);
    turn(x);
    assert_non_null(x->e->t);
    assert_json(acp_turn_meta(x->e->t), J("{\"traceparent\":\"00-ab-cd-01\"}"));
    end_turn(x, 5);
    hold_turn(x, 6, sid);
    assert_null(acp_turn_meta(x->e->t));
    end_turn(x, 6);
}

/* --- permission ----------------------------------------------------------------------------- */

static void test_permission(void **state)
{
    h *x = *state;
    char sid[80];
    acp_turn *t = open_turn(x, "{}", sid); /* a baseline method: no capability needed */
    acp_tool_call *tc;
    assert_int_equal(acp_tool_call_begin(t,
                                         &(acp_tool_info){.struct_size = sizeof(acp_tool_info),
                                                          .title = "Write a.txt",
                                                          .kind = "edit"},
                                         &tc),
                     0);
    /* the request describes the call as last reported */
    assert_int_equal(acp_tool_call_update(tc, &(acp_tool_info){.struct_size = sizeof(acp_tool_info),
                                                               .title = "Write b.txt"}),
                     0);
    acp_perm_option opts[] = {{"allow", "Allow", "allow_once"},
                              {"always", "Always", "allow_always"},
                              {"reject", "Reject", "reject_once"}};
    got g = {0};
    assert_int_equal(acp_turn_request_permission(t, tc, opts, 3, on_perm, &g), 0);
    json_t *req = take(x, "session/request_permission");
    assert_json(params_of(req),
                json_pack("{ss s{ss ss ss} s[{ss ss ss} {ss ss ss} {ss ss ss}]}", "sessionId", sid,
                          "toolCall", "toolCallId", acp_tool_call_id(tc), "title", "Write b.txt",
                          "kind", "edit", "options", "optionId", "allow", "name", "Allow", "kind",
                          "allow_once", "optionId", "always", "name", "Always", "kind",
                          "allow_always", "optionId", "reject", "name", "Reject", "kind",
                          "reject_once"));
    answer(x, req, "{\"outcome\":{\"outcome\":\"selected\",\"optionId\":\"always\"}}");
    assert_int_equal(g.calls, 1);
    assert_int_equal(g.status, 0);
    assert_ptr_equal(g.t, t);
    assert_string_equal(g.option, "always");
    assert_string_equal(g.kind, "allow_always");
    /* the client's own cancelled outcome */
    assert_int_equal(acp_turn_request_permission(t, tc, opts, 1, on_perm, &g), 0);
    answer(x, take(x, "session/request_permission"), "{\"outcome\":{\"outcome\":\"cancelled\"}}");
    assert_int_equal(g.calls, 2);
    assert_int_equal(g.status, 0);
    assert_true(g.null_option);
    /* refused: no tool call, no options, a bad kind */
    assert_int_equal(acp_turn_request_permission(t, NULL, opts, 3, on_perm, &g), ACP_EINVAL);
    assert_int_equal(acp_turn_request_permission(t, tc, opts, 0, on_perm, &g), ACP_EINVAL);
    acp_perm_option bad[] = {{"x", "X", "allow_sometimes"}};
    assert_int_equal(acp_turn_request_permission(t, tc, bad, 1, on_perm, &g), ACP_EINVAL);
    assert_errmsg(x, "allow_once");
    quiet(x);
    assert_int_equal(acp_tool_call_complete(tc, NULL), 0);
    end_turn(x, 5);
}

/* session/cancel: the engine hears first; then the turn's calls get $/cancel_request and the
 * permission and elicitation it waits for resolve as cancelled at once, without waiting for
 * the client (a permission asked again from the callback waits: no endless loop); when the
 * engine ends the turn the answer is cancelled, and the client's late answers are ignored. */
static void test_cancel_resolves_at_once(void **state)
{
    h *x = *state;
    char sid[80];
    acp_turn *t = open_turn(x, FULL_CAPS, sid);
    acp_tool_call *tc;
    assert_int_equal(
        acp_tool_call_begin(
            t, &(acp_tool_info){.struct_size = sizeof(acp_tool_info), .title = "Run"}, &tc),
        0);
    acp_perm_option opts[] = {{"allow", "Allow", "allow_once"}};
    got p = {.ask_again = true, .tc = tc}, e = {0}, r = {0};
    assert_int_equal(acp_turn_request_permission(t, tc, opts, 1, on_perm, &p), 0);
    json_t *form = json_pack("{s{}}", "properties");
    assert_int_equal(
        acp_turn_elicit(
            t, &(acp_elicit){.struct_size = sizeof(acp_elicit), .message = "?", .form = form}, NULL,
            on_elicit, &e),
        0);
    json_decref(form);
    assert_int_equal(acp_turn_read_text_file(t, "a.txt", 0, 0, on_read, &r), 0);
    json_t *preq = take(x, "session/request_permission"), *ereq = take(x, "elicitation/create");
    json_t *rreq = take(x, "fs/read_text_file");
    json_array_clear(x->msgs);
    cancel_session(x, sid);
    turn(x);
    assert_int_equal(find_response(x, 5), -1); /* the engine has not ended the turn yet */
    assert_int_equal(x->e->cancels, 1);
    assert_int_equal(p.calls, 1); /* its second request waited for the client: forgotten */
    assert_int_equal(p.status, 0);
    assert_true(p.null_option);
    assert_int_equal(e.calls, 1);
    assert_int_equal(e.status, 0);
    assert_string_equal(e.action, "cancel");
    assert_null(e.json);
    assert_int_equal(r.calls, 0); /* a read is not answered for the client: forgotten */
    int at = end_turn(x, 5);
    /* the permission asked again was still open: forgotten with the turn, before its end */
    int again = find_method(x->msgs, "session/request_permission", 0);
    assert_true(again >= 0);
    int again_cancel = find_cancel(x->msgs, id_of(json_array_get(x->msgs, (size_t)again)));
    assert_true(again_cancel > again && again_cancel < at);
    json_t *reqs[] = {preq, ereq, rreq};
    for (size_t i = 0; i < 3; i++) {
        int c = find_cancel(x->msgs, id_of(reqs[i]));
        assert_true(c >= 0 && c < at);
    }
    assert_string_equal(stop_reason(json_array_get(x->msgs, (size_t)at)), "cancelled");
    /* the open tool call was reported failed before the response */
    int upd = find_method(x->msgs, "session/update", 0);
    assert_true(upd >= 0 && upd < at);
    assert_string_equal(jstr(update_at(x->msgs, (size_t)upd), "status"), "failed");
    /* the client answers as the spec says it must: nobody listens any more */
    answer(x, preq, "{\"outcome\":{\"outcome\":\"cancelled\"}}");
    answer(x, ereq, "{\"action\":\"cancel\"}");
    answer_error(x, rreq, -32800, "cancelled");
    assert_int_equal(p.calls + e.calls + r.calls, 2);
}

/* --- tool calls ----------------------------------------------------------------------------- */

static void test_tool_calls(void **state)
{
    h *x = *state;
    char sid[80], p[400], path[PATH_MAX + 16];
    acp_turn *t = open_turn(x, "{}", sid);
    snprintf(path, sizeof path, "%s/a.txt", x->real);
    json_t *input = json_pack("{ss}", "path", "a.txt");
    acp_tool_call *tc;
    assert_int_equal(acp_tool_call_begin(t,
                                         &(acp_tool_info){.struct_size = sizeof(acp_tool_info),
                                                          .title = "Read a.txt",
                                                          .name = "read_file",
                                                          .kind = "read",
                                                          .path = path,
                                                          .raw_input = input},
                                         &tc),
                     0);
    json_decref(input);
    const char *id = acp_tool_call_id(tc);
    assert_int_equal(strncmp(id, "call_", 5), 0);
    turn(x);
    assert_json(update_at(x->msgs, 0),
                json_pack("{ss ss ss ss ss ss s[{ss}] s{ss}}", "sessionUpdate", "tool_call",
                          "toolCallId", id, "title", "Read a.txt", "name", "read_file", "kind",
                          "read", "status", "pending", "locations", "path", path, "rawInput",
                          "path", "a.txt"));
    assert_int_equal(acp_tool_call_update(tc, &(acp_tool_info){.struct_size = sizeof(acp_tool_info),
                                                               .status = "in_progress",
                                                               .text = "reading"}),
                     0);
    turn(x);
    assert_json(update_at(x->msgs, 1),
                json_pack("{ss ss ss s[{ss s{ss ss}}]}", "sessionUpdate", "tool_call_update",
                          "toolCallId", id, "status", "in_progress", "content", "type", "content",
                          "content", "type", "text", "text", "reading"));
    json_t *content =
        json_pack("[{ss ss s:n ss}]", "type", "diff", "path", path, "oldText", "newText", "new");
    json_t *output = json_pack("{si}", "bytes", 3);
    json_t *meta = json_pack("{ss}", "x.dev/why", "test");
    assert_int_equal(
        acp_tool_call_complete(tc, &(acp_tool_info){.struct_size = sizeof(acp_tool_info),
                                                    .content = content,
                                                    .raw_output = output,
                                                    .text = "done",
                                                    .meta = meta}),
        0);
    json_decref(content);
    json_decref(output);
    json_decref(meta);
    turn(x);
    assert_json(update_at(x->msgs, 2),
                json_pack("{ss ss ss s[{ss ss s:n ss} {ss s{ss ss}}] s{si} s{ss}}", "sessionUpdate",
                          "tool_call_update", "toolCallId", id, "status", "completed", "content",
                          "type", "diff", "path", path, "oldText", "newText", "new", "type",
                          "content", "content", "type", "text", "text", "done", "rawOutput",
                          "bytes", 3, "_meta", "x.dev/why", "test"));
    /* finished: no more updates */
    assert_int_equal(acp_tool_call_update(tc, &(acp_tool_info){.struct_size = sizeof(acp_tool_info),
                                                               .text = "more"}),
                     ACP_EINVAL);
    assert_errmsg(x, "completed or failed already");
    assert_int_equal(acp_tool_call_fail(tc, "late"), ACP_EINVAL);

    /* begun in progress, then failed with a message */
    acp_tool_call *tc2;
    assert_int_equal(acp_tool_call_begin(t,
                                         &(acp_tool_info){.struct_size = sizeof(acp_tool_info),
                                                          .title = "Run",
                                                          .kind = "execute",
                                                          .status = "in_progress"},
                                         &tc2),
                     0);
    assert_int_equal(acp_tool_call_fail(tc2, "boom"), 0);
    turn(x);
    assert_json(update_at(x->msgs, 4),
                json_pack("{ss ss ss s[{ss s{ss ss}}]}", "sessionUpdate", "tool_call_update",
                          "toolCallId", acp_tool_call_id(tc2), "status", "failed", "content",
                          "type", "content", "content", "type", "text", "text", "boom"));
    assert_int_equal(acp_tool_call_update(tc2, NULL), ACP_EINVAL);

    /* what the schema would not take is refused, and nothing is sent */
    json_array_clear(x->msgs);
    acp_tool_call *no = NULL;
    const struct {
        acp_tool_info in;
        const char *why;
    } bad[] = {
        {{.kind = "read"}, "title"},
        {{.title = "T", .kind = "bake"}, "unknown tool kind"},
        {{.title = "T", .status = "cancelled"}, "unknown tool call status"},
        {{.title = "T", .path = "rel/a.txt"}, "absolute"},
        {{.title = "T", .text = "\xff"}, "UTF-8"},
        {{.title = "\xc3"}, "UTF-8"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        acp_tool_info in = bad[i].in;
        in.struct_size = sizeof in;
        assert_int_equal(acp_tool_call_begin(t, &in, &no), ACP_EINVAL);
        assert_null(no);
        assert_errmsg(x, bad[i].why);
    }
    const char *bad_content[] = {
        "{}",
        "[{\"type\":\"image\"}]",
        "[{\"type\":\"content\",\"content\":\"text\"}]",
        "[{\"type\":\"diff\",\"path\":\"rel\",\"newText\":\"x\"}]",
        "[{\"type\":\"diff\",\"path\":\"/a\"}]",
        "[{\"type\":\"terminal\"}]",
        "[7]",
    };
    for (size_t i = 0; i < sizeof bad_content / sizeof *bad_content; i++) {
        json_t *c = json_loads(bad_content[i], 0, NULL);
        assert_int_equal(
            acp_tool_call_begin(
                t,
                &(acp_tool_info){.struct_size = sizeof(acp_tool_info), .title = "T", .content = c},
                &no),
            ACP_EINVAL);
        json_decref(c);
    }
    json_t *locs = json_pack("[{ss}]", "path", "rel");
    assert_int_equal(
        acp_tool_call_begin(
            t,
            &(acp_tool_info){.struct_size = sizeof(acp_tool_info), .title = "T", .locations = locs},
            &no),
        ACP_EINVAL);
    assert_errmsg(x, "locations[0]");
    json_decref(locs);
    json_t *m = json_string("meta");
    assert_int_equal(
        acp_tool_call_begin(
            t, &(acp_tool_info){.struct_size = sizeof(acp_tool_info), .title = "T", .meta = m},
            &no),
        ACP_EINVAL);
    json_decref(m);
    quiet(x);

    /* stored as sent, and session/load replays exactly that */
    acp_tool_call *tc3;
    assert_int_equal(
        acp_tool_call_begin(
            t, &(acp_tool_info){.struct_size = sizeof(acp_tool_info), .title = "Last"}, &tc3),
        0);
    assert_int_equal(acp_tool_call_complete(tc3, NULL), 0);
    end_turn(x, 5);
    json_t *st = history(x, sid);
    assert_int_equal(json_array_size(st), 1 + 7);
    assert_string_equal(jstr(json_array_get(st, 1), "sessionUpdate"), "tool_call");
    json_array_clear(x->msgs);
    snprintf(p, sizeof p, "{\"sessionId\":\"%s\",\"cwd\":\"%s\",\"mcpServers\":[]}", sid, x->dir);
    json_t *r = request(x, 6, "session/load", p);
    json_t *rep = updates_of(r);
    json_array_remove(rep, json_array_size(rep) - 1); /* the session info after the replay */
    assert_true(json_equal(rep, st));
    json_decref(rep);
    json_decref(r);
    json_decref(st);
}

/* A tool call still open when the turn ends is reported failed before the response (and
 * stored so); not after a store failure decided the turn, since nothing more can be stored. */
static void test_tool_call_auto_failed(void **state)
{
    h *x = *state;
    char sid[80];
    open_turn(x, "{}", sid);
    acp_tool_call *open, *done;
    assert_int_equal(
        acp_tool_call_begin(x->e->t,
                            &(acp_tool_info){.struct_size = sizeof(acp_tool_info), .title = "Open"},
                            &open),
        0);
    assert_int_equal(
        acp_tool_call_begin(x->e->t,
                            &(acp_tool_info){.struct_size = sizeof(acp_tool_info), .title = "Done"},
                            &done),
        0);
    assert_int_equal(acp_tool_call_complete(done, NULL), 0);
    char open_id[48];
    snprintf(open_id, sizeof open_id, "%s", acp_tool_call_id(open));
    int at = end_turn(x, 5);
    /* tool_call, tool_call, update (Done completed), update (Open failed), response */
    assert_int_equal(at, 4);
    json_t *u = update_at(x->msgs, 3);
    assert_string_equal(jstr(u, "toolCallId"), open_id);
    assert_string_equal(jstr(u, "status"), "failed");
    assert_int_equal(json_object_size(u), 3);
    json_t *st = history(x, sid);
    assert_true(json_equal(json_array_get(st, json_array_size(st) - 1), u));
    json_decref(st);
    json_array_clear(x->msgs);

    /* the store fails while a tool call is open: the prompt is answered with the store error
     * and the engine told to stop; when it ends the turn, no update follows */
    hold_turn(x, 6, sid);
    acp_turn *t = x->e->t;
    assert_int_equal(
        acp_tool_call_begin(
            t, &(acp_tool_info){.struct_size = sizeof(acp_tool_info), .title = "Lost"}, &open),
        0);
    fail_commits = true;
    at = wait_response(x, 6);
    fail_commits = false;
    assert_int_equal(json_integer_value(json_object_get(
                         json_object_get(json_array_get(x->msgs, (size_t)at), "error"), "code")),
                     ACP_RPC_INTERNAL_ERROR);
    assert_int_equal(x->e->cancels, 1);
    got g = {0};
    /* decided: no more updates or calls for this turn */
    assert_int_equal(acp_tool_call_update(
                         open, &(acp_tool_info){.struct_size = sizeof(acp_tool_info), .text = "x"}),
                     ACP_ECLOSED);
    assert_int_equal(acp_turn_read_text_file(t, "a.txt", 0, 0, on_read, &g), ACP_ENOTSUP);
    assert_int_equal(acp_turn_call(t, "_x/y", NULL, on_turn_call, &g), ACP_ECLOSED);
    json_array_clear(x->msgs);
    acp_turn_end(t, "end_turn");
    x->e->t = NULL;
    quiet(x);
    st = history(x, sid); /* the second turn's user message is the last stored */
    assert_string_equal(jstr(json_array_get(st, json_array_size(st) - 1), "sessionUpdate"),
                        "user_message_chunk");
    json_decref(st);
}

/* --- terminals ------------------------------------------------------------------------------ */

/* Creates a terminal of the held turn (or of session s when t is NULL) and answers its create
 * with id. */
static acp_terminal *terminal(h *x, acp_turn *t, acp_session *s, const char *id, got *g)
{
    acp_terminal *term;
    acp_terminal_opts o = {.struct_size = sizeof(acp_terminal_opts),
                           .command = "sleep",
                           .args = (const char *[]){"100", NULL}};
    assert_int_equal(t ? acp_turn_terminal_create(t, &o, on_term, g, &term)
                       : acp_session_terminal_create(s, &o, on_term, g, &term),
                     0);
    char result[80];
    snprintf(result, sizeof result, "{\"terminalId\":\"%s\"}", id);
    answer(x, take(x, "terminal/create"), result);
    assert_int_equal(g->status, 0);
    assert_string_equal(acp_terminal_id(term), id);
    return term;
}

/* Where the terminal/release of terminal id is in x->msgs, or -1. */
static int find_release(h *x, const char *id)
{
    for (int i = 0; (i = find_method(x->msgs, "terminal/release", i)) >= 0; i++)
        if (!strcmp(jstr(params_of(json_array_get(x->msgs, (size_t)i)), "terminalId"), id))
            return i;
    return -1;
}

static void test_terminal(void **state)
{
    h *x = *state;
    char sid[80];
    acp_turn *t = open_turn(x, FULL_CAPS, sid);
    got g = {0};
    acp_terminal *term;
    acp_terminal_opts o = {.struct_size = sizeof(acp_terminal_opts),
                           .command = "make",
                           .args = (const char *[]){"-j", "4", NULL},
                           .env = (const char *[]){"CC=clang", "EMPTY=", "A=b=c", NULL},
                           .cwd = x->dir,
                           .output_byte_limit = 1000};
    assert_int_equal(acp_turn_terminal_create(t, &o, on_term, &g, &term), 0);
    assert_null(acp_terminal_id(term));
    assert_ptr_equal(acp_terminal_session(term), x->e->s);
    /* nothing can be asked of it before its id is known */
    assert_int_equal(acp_terminal_output(term, on_output, &g), ACP_EINVAL);
    assert_errmsg(x, "not answered yet");
    assert_int_equal(acp_terminal_wait_for_exit(term, on_exit_, &g), ACP_EINVAL);
    assert_int_equal(acp_terminal_kill(term, on_term, &g), ACP_EINVAL);
    acp_tool_call *tc;
    assert_int_equal(
        acp_tool_call_begin(
            t,
            &(acp_tool_info){.struct_size = sizeof(acp_tool_info), .title = "T", .terminal = term},
            &tc),
        ACP_EINVAL);
    json_t *req = take(x, "terminal/create");
    assert_json(params_of(req),
                json_pack("{ss ss s[ss] s[{ss ss} {ss ss} {ss ss}] ss si}", "sessionId", sid,
                          "command", "make", "args", "-j", "4", "env", "name", "CC", "value",
                          "clang", "name", "EMPTY", "value", "", "name", "A", "value", "b=c", "cwd",
                          x->real, "outputByteLimit", 1000));
    answer(x, req, "{\"terminalId\":\"term_1\"}");
    assert_int_equal(g.calls, 1);
    assert_int_equal(g.status, 0);
    assert_ptr_equal(g.term, term);
    assert_string_equal(acp_terminal_id(term), "term_1");

    /* shown in a tool call */
    assert_int_equal(acp_tool_call_begin(t,
                                         &(acp_tool_info){.struct_size = sizeof(acp_tool_info),
                                                          .title = "make",
                                                          .kind = "execute",
                                                          .terminal = term},
                                         &tc),
                     0);
    turn(x);
    assert_json(json_object_get(update_at(x->msgs, 0), "content"),
                J("[{\"type\":\"terminal\",\"terminalId\":\"term_1\"}]"));
    json_array_clear(x->msgs);

    /* output: running, then exited */
    assert_int_equal(acp_terminal_output(term, on_output, &g), 0);
    req = take(x, "terminal/output");
    assert_json(params_of(req), json_pack("{ss ss}", "sessionId", sid, "terminalId", "term_1"));
    answer(x, req, "{\"output\":\"building\",\"truncated\":false}");
    assert_int_equal(g.status, 0);
    assert_string_equal(g.text, "building");
    assert_false(g.exited);
    assert_int_equal(acp_terminal_output(term, on_output, &g), 0);
    answer(x, take(x, "terminal/output"),
           "{\"output\":\"done\",\"truncated\":true,\"exitStatus\":{\"exitCode\":0,"
           "\"signal\":null}}");
    assert_int_equal(g.status, 0);
    assert_true(g.truncated);
    assert_true(g.exited);
    assert_int_equal(g.code, 0);
    assert_string_equal(g.signal, "");
    /* wait_for_exit: a signal and no code */
    assert_int_equal(acp_terminal_wait_for_exit(term, on_exit_, &g), 0);
    answer(x, take(x, "terminal/wait_for_exit"), "{\"exitCode\":null,\"signal\":\"SIGKILL\"}");
    assert_int_equal(g.status, 0);
    assert_true(g.exited);
    assert_int_equal(g.code, -1);
    assert_string_equal(g.signal, "SIGKILL");
    /* kill keeps the terminal; release lets it go */
    int calls = g.calls;
    assert_int_equal(acp_terminal_kill(term, on_term, &g), 0);
    answer(x, take(x, "terminal/kill"), "{}");
    assert_int_equal(g.calls, calls + 1);
    assert_int_equal(g.status, 0);
    assert_int_equal(
        acp_tool_call_complete(
            tc, &(acp_tool_info){.struct_size = sizeof(acp_tool_info), .terminal = term}),
        0);
    acp_terminal_release(term);
    turn(x);
    int upd = find_method(x->msgs, "session/update", 0), rel = find_release(x, "term_1");
    assert_true(upd >= 0 && upd < rel); /* shown before it is released (terminals.mdx) */
    assert_json(params_of(json_array_get(x->msgs, (size_t)rel)),
                json_pack("{ss ss}", "sessionId", sid, "terminalId", "term_1"));
    json_array_clear(x->msgs);

    /* refused before anything is sent */
    acp_terminal *no = (acp_terminal *)&g;
    const struct {
        acp_terminal_opts o;
        int rc;
        const char *why;
    } bad[] = {
        {{.command = NULL}, ACP_EINVAL, "needs a command"},
        {{.command = "ls", .env = (const char *[]){"NOEQUALS", NULL}}, ACP_EINVAL, "NAME=value"},
        {{.command = "ls", .env = (const char *[]){"=x", NULL}}, ACP_EINVAL, "NAME=value"},
        {{.command = "ls", .cwd = "rel"}, ACP_EINVAL, "absolute"},
        {{.command = "ls", .cwd = "/etc"}, ACP_EACCES, "outside the session's roots"},
        {{.command = "ls", .args = (const char *[]){"\xff", NULL}}, ACP_EINVAL, "UTF-8"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        acp_terminal_opts bo = bad[i].o;
        bo.struct_size = sizeof bo;
        assert_int_equal(acp_turn_terminal_create(t, &bo, on_term, &g, &no), bad[i].rc);
        assert_null(no);
        assert_errmsg(x, bad[i].why);
    }
    quiet(x);
    end_turn(x, 5);
}

/* A terminal of the turn is released when the turn ends, before the response; its pending
 * calls are forgotten ($/cancel_request) and their late answers reach nobody. */
static void test_terminal_released_on_turn_end(void **state)
{
    h *x = *state;
    char sid[80];
    open_turn(x, FULL_CAPS, sid);
    got g = {0};
    acp_terminal *term = terminal(x, x->e->t, NULL, "term_e", &g);
    assert_int_equal(acp_terminal_wait_for_exit(term, on_exit_, &g), 0);
    json_t *wait = take(x, "terminal/wait_for_exit");
    int calls = g.calls;
    int at = end_turn(x, 5);
    int rel = find_release(x, "term_e"), cancel = find_cancel(x->msgs, id_of(wait));
    assert_true(rel >= 0 && rel < at);
    assert_true(cancel >= 0 && cancel < rel);
    answer(x, wait, "{\"exitCode\":0}");
    assert_int_equal(g.calls, calls);
}

/* session/cancel: the engine ends the turn in its cancel hook; the terminal is released
 * before the cancelled response. */
static void test_terminal_released_on_cancel(void **state)
{
    h *x = *state;
    char sid[80];
    open_turn(x, FULL_CAPS, sid);
    got g = {0};
    terminal(x, x->e->t, NULL, "term_c", &g);
    x->e->end_on_cancel = true;
    cancel_session(x, sid);
    int at = wait_response(x, 5);
    assert_string_equal(stop_reason(json_array_get(x->msgs, (size_t)at)), "cancelled");
    int rel = find_release(x, "term_c");
    assert_true(rel >= 0 && rel < at);
}

/* session/close releases the session's terminals and the running turn's, before close is
 * answered. */
static void test_terminal_released_on_close(void **state)
{
    h *x = *state;
    init(x, FULL_CAPS);
    char sid[80];
    new_session(x, sid);
    got g = {0};
    terminal(x, NULL, x->e->s, "term_s", &g);
    hold_turn(x, 5, sid);
    terminal(x, x->e->t, NULL, "term_t", &g);
    close_session(x, 6, sid);
    int at = find_response(x, 6), prompt = find_response(x, 5);
    assert_true(prompt >= 0 && prompt < at);
    assert_string_equal(stop_reason(json_array_get(x->msgs, (size_t)prompt)), "cancelled");
    int rs = find_release(x, "term_s"), rt = find_release(x, "term_t");
    assert_true(rs >= 0 && rs < at);
    assert_true(rt >= 0 && rt < prompt);
    assert_int_equal(acp_agent_session_count(x->a), 0);
}

/* Shutdown releases every terminal; after EOF on our input the releases are still written
 * (a half-closed client reads on). */
static void test_terminal_released_on_shutdown(void **state)
{
    h *x = *state;
    for (int eof = 0; eof < 2; eof++) {
        if (eof) {
            agent_stop(x);
            agent_start(x);
        }
        init(x, FULL_CAPS);
        char sid[80];
        new_session(x, sid);
        got g = {0};
        terminal(x, NULL, x->e->s, "term_s", &g);
        hold_turn(x, 5, sid);
        acp_terminal *tt = terminal(x, x->e->t, NULL, "term_t", &g);
        assert_int_equal(acp_terminal_output(tt, on_output, &g), 0);
        json_decref(take(x, "terminal/output"));
        int calls = g.calls;
        if (eof) acp_conn_eof(acp_agent_conn(x->a));
        /* at EOF the pending output call fails ECLOSED: the connection ended */
        if (eof) assert_int_equal(g.calls, calls + 1);
        if (eof) assert_int_equal(g.status, ACP_ECLOSED);
        acp_agent_shutdown(x->a);
        turn(x);
        assert_true(find_release(x, "term_s") >= 0);
        assert_true(find_release(x, "term_t") >= 0);
        assert_true(find_response(x, 5) >= 0);
        assert_int_equal(acp_agent_session_count(x->a), 0);
    }
}

/* A terminal released (here: its turn ended) before the client answered terminal/create is
 * released once the id arrives, even after its session closed; one whose create fails needs
 * nothing; and one still waiting when the agent is freed does not leak. */
static void test_terminal_orphans(void **state)
{
    h *x = *state;
    char sid[80], sid2[80];
    open_turn(x, FULL_CAPS, sid);
    acp_terminal_opts o = {.struct_size = sizeof(acp_terminal_opts), .command = "ls"};
    acp_terminal *t1, *t2, *t3;
    got g = {0};
    assert_int_equal(acp_turn_terminal_create(x->e->t, &o, on_term, &g, &t1), 0);
    assert_int_equal(acp_turn_terminal_create(x->e->t, &o, on_term, &g, &t2), 0);
    assert_int_equal(acp_turn_terminal_create(x->e->t, &o, on_term, &g, &t3), 0);
    json_t *c1 = take(x, "terminal/create"), *c2 = take(x, "terminal/create");
    json_t *c3 = take(x, "terminal/create");
    end_turn(x, 5);
    assert_int_equal(find_method(x->msgs, "terminal/release", 0), -1);
    json_array_clear(x->msgs);
    answer(x, c1, "{\"terminalId\":\"orphan_1\"}");
    json_t *rel = take(x, "terminal/release");
    assert_json(params_of(rel), json_pack("{ss ss}", "sessionId", sid, "terminalId", "orphan_1"));
    json_decref(rel);
    answer_error(x, c2, -32603, "could not spawn");
    quiet(x);
    /* the session closes; the answer comes afterwards */
    close_session(x, 6, sid);
    json_array_clear(x->msgs);
    answer(x, c3, "{\"terminalId\":\"orphan_3\"}");
    rel = take(x, "terminal/release");
    assert_json(params_of(rel), json_pack("{ss ss}", "sessionId", sid, "terminalId", "orphan_3"));
    json_decref(rel);
    assert_int_equal(g.calls, 0); /* released: no callback of theirs runs */
    /* one still waiting at the end: freed with the agent (LeakSanitizer) */
    new_session(x, sid2);
    hold_turn(x, 7, sid2);
    assert_int_equal(acp_turn_terminal_create(x->e->t, &o, on_term, &g, &t1), 0);
    end_turn(x, 7);
}

/* --- elicitation ---------------------------------------------------------------------------- */

static const char form_text[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"name\":{\"type\":\"string\"},"
    "\"color\":{\"type\":\"string\",\"enum\":[\"red\",\"green\"]},"
    "\"size\":{\"type\":\"string\",\"oneOf\":[{\"const\":\"s\",\"title\":\"S\"},"
    "{\"const\":\"m\",\"title\":\"M\"}]},"
    "\"age\":{\"type\":\"integer\"},\"ratio\":{\"type\":\"number\"},\"ok\":{\"type\":\"boolean\"},"
    "\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\",\"enum\":[\"a\",\"b\"]}},"
    "\"picks\":{\"type\":\"array\",\"items\":{\"anyOf\":[{\"const\":\"x\",\"title\":\"X\"}]}},"
    "\"free\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
    "\"ext\":{\"type\":\"_color_picker\"}},"
    "\"required\":[\"name\"]}";

/* Asks the form in the held turn and answers with result; returns what the callback got. */
static void ask(h *x, const json_t *form, const char *result, got *g)
{
    got_clear(g);
    assert_int_equal(
        acp_turn_elicit(
            x->e->t,
            &(acp_elicit){.struct_size = sizeof(acp_elicit), .message = "Tell me", .form = form},
            NULL, on_elicit, g),
        0);
    answer(x, take(x, "elicitation/create"), result);
    assert_int_equal(g->calls, 1);
}

static void test_elicit_form(void **state)
{
    h *x = *state;
    char sid[80], eid[48] = "untouched";
    open_turn(x, FULL_CAPS, sid);
    json_t *form = json_loads(form_text, 0, NULL);
    assert_non_null(form);
    acp_tool_call *tc;
    assert_int_equal(
        acp_tool_call_begin(
            x->e->t, &(acp_tool_info){.struct_size = sizeof(acp_tool_info), .title = "Ask"}, &tc),
        0);
    got g = {0};
    assert_int_equal(acp_turn_elicit(x->e->t,
                                     &(acp_elicit){.struct_size = sizeof(acp_elicit),
                                                   .message = "Tell me",
                                                   .form = form,
                                                   .tool_call = tc},
                                     eid, on_elicit, &g),
                     0);
    assert_string_equal(eid, ""); /* only URL elicitations have an id */
    json_t *req = take(x, "elicitation/create");
    assert_json(params_of(req),
                json_pack("{ss ss ss ss sO}", "sessionId", sid, "toolCallId", acp_tool_call_id(tc),
                          "message", "Tell me", "mode", "form", "requestedSchema", form));
    const char full[] = "{\"name\":\"n\",\"color\":\"red\",\"size\":\"m\",\"age\":3,\"ratio\":0.5,"
                        "\"ok\":true,\"tags\":[\"a\",\"b\"],\"picks\":[\"x\"],\"free\":[\"any\"],"
                        "\"ext\":{\"r\":1}}";
    char result[512];
    snprintf(result, sizeof result, "{\"action\":\"accept\",\"content\":%s}", full);
    answer(x, req, result);
    assert_int_equal(g.status, 0);
    assert_string_equal(g.action, "accept");
    assert_ptr_equal(g.s, x->e->s);
    assert_json(g.json, J("%s", full));
    /* a number for a number may be an integer; null content is no content */
    ask(x, form, "{\"action\":\"accept\",\"content\":{\"name\":\"n\",\"ratio\":2}}", &g);
    assert_int_equal(g.status, 0);
    ask(x, form, "{\"action\":\"decline\",\"content\":null}", &g);
    assert_int_equal(g.status, 0);
    assert_string_equal(g.action, "decline");
    assert_null(g.json);
    /* what else a decline or cancel carries is ignored: content belongs to an accept */
    ask(x, form, "{\"action\":\"cancel\",\"content\":{\"name\":7},\"_meta\":{}}", &g);
    assert_int_equal(g.status, 0);
    assert_string_equal(g.action, "cancel");
    assert_null(g.json);
    /* an integer written as a real without a fraction is an integer */
    ask(x, form, "{\"action\":\"accept\",\"content\":{\"name\":\"n\",\"age\":2.0}}", &g);
    assert_int_equal(g.status, 0);
    ask(x, form, "{\"action\":\"_later\"}", &g); /* an extension's action is passed on */
    assert_int_equal(g.status, 0);
    assert_string_equal(g.action, "_later");

    /* content that does not answer the form: that call fails, with the field named */
    const char *bad[][2] = {
        {"{\"name\":5}", "malformed field name"},
        {"{\"name\":\"n\",\"color\":\"blue\"}", "malformed field color"},
        {"{\"name\":\"n\",\"size\":\"xl\"}", "malformed field size"},
        {"{\"name\":\"n\",\"age\":1.5}", "malformed field age"},
        {"{\"name\":\"n\",\"ratio\":\"1\"}", "malformed field ratio"},
        {"{\"name\":\"n\",\"ok\":\"yes\"}", "malformed field ok"},
        {"{\"name\":\"n\",\"tags\":[\"c\"]}", "malformed field tags"},
        {"{\"name\":\"n\",\"tags\":\"a\"}", "malformed field tags"},
        {"{\"name\":\"n\",\"picks\":[\"y\"]}", "malformed field picks"},
        {"{\"name\":\"n\",\"free\":[1]}", "malformed field free"},
        {"{\"name\":\"n\",\"extra\":1}", "unrequested field extra"},
        {"{\"color\":\"red\"}", "misses the required field name"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(result, sizeof result, "{\"action\":\"accept\",\"content\":%s}", bad[i][0]);
        ask(x, form, result, &g);
        assert_int_equal(g.status, ACP_EPROTO);
        if (!strstr(g.error, bad[i][1])) fail_msg("%s: \"%s\"", bad[i][0], g.error);
        assert_null(g.json);
    }
    ask(x, form, "{\"action\":\"accept\"}", &g); /* accepted, but name is required */
    assert_int_equal(g.status, ACP_EPROTO);

    /* the answer is checked against the form as sent, whatever the engine does to it later */
    assert_int_equal(
        acp_turn_elicit(
            x->e->t, &(acp_elicit){.struct_size = sizeof(acp_elicit), .message = "m", .form = form},
            NULL, on_elicit, &g),
        0);
    json_object_del(form, "required");
    answer(x, take(x, "elicitation/create"), "{\"action\":\"accept\",\"content\":{}}");
    assert_int_equal(g.status, ACP_EPROTO);

    /* refused: no message, not exactly one mode, a form that is not an object */
    json_t *str = json_string("form");
    const acp_elicit refused[] = {
        {.form = form},
        {.message = "m"},
        {.message = "m", .form = form, .url = "https://e.x/"},
        {.message = "m", .form = str},
    };
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++)
        assert_int_equal(acp_turn_elicit(x->e->t, &refused[i], NULL, on_elicit, &g), ACP_EINVAL);
    json_decref(str);
    quiet(x);

    /* a session's elicitation, outside the turn */
    assert_int_equal(acp_tool_call_complete(tc, NULL), 0);
    end_turn(x, 5);
    got_clear(&g);
    assert_int_equal(
        acp_session_elicit(
            x->e->s, &(acp_elicit){.struct_size = sizeof(acp_elicit), .message = "m", .form = form},
            NULL, on_elicit, &g),
        0);
    answer(x, take(x, "elicitation/create"), "{\"action\":\"cancel\"}");
    assert_int_equal(g.status, 0);
    assert_string_equal(g.action, "cancel");
    json_decref(form);
    got_clear(&g);
}

static void test_elicit_url(void **state)
{
    h *x = *state;
    char sid[80], id1[48], id2[48];
    open_turn(x, FULL_CAPS, sid);
    got g = {0};
    assert_int_equal(acp_turn_elicit(x->e->t,
                                     &(acp_elicit){.struct_size = sizeof(acp_elicit),
                                                   .message = "Sign in",
                                                   .url = "https://example.com/login?x=1"},
                                     id1, on_elicit, &g),
                     0);
    assert_int_equal(strncmp(id1, "elic_", 5), 0);
    assert_int_equal(strlen(id1), 5 + 32);
    json_t *req = take(x, "elicitation/create");
    assert_json(params_of(req),
                json_pack("{ss ss ss ss ss}", "sessionId", sid, "message", "Sign in", "mode", "url",
                          "url", "https://example.com/login?x=1", "elicitationId", id1));
    answer(x, req, "{\"action\":\"accept\"}");
    assert_int_equal(g.status, 0);
    assert_string_equal(g.action, "accept");
    assert_null(g.json);
    assert_int_equal(
        acp_session_elicit(
            x->e->s,
            &(acp_elicit){.struct_size = sizeof(acp_elicit), .message = "b", .url = "https://b/"},
            id2, on_elicit, &g),
        0);
    assert_string_not_equal(id1, id2);
    json_decref(take(x, "elicitation/create"));

    /* complete: after what the session sent before it */
    assert_int_equal(acp_turn_text(x->e->t, NULL, NULL, "opened the page", 15), 0);
    assert_int_equal(acp_agent_elicit_complete(x->a, id1), 0);
    turn(x);
    int upd = find_method(x->msgs, "session/update", 0),
        done = find_method(x->msgs, "elicitation/complete", 0);
    assert_true(upd >= 0 && upd < done);
    assert_json(params_of(json_array_get(x->msgs, (size_t)done)),
                json_pack("{ss}", "elicitationId", id1));
    /* once only; unknown ids are not found */
    assert_int_equal(acp_agent_elicit_complete(x->a, id1), ACP_ENOTFOUND);
    assert_int_equal(acp_agent_elicit_complete(x->a, "elic_nope"), ACP_ENOTFOUND);
    assert_int_equal(acp_agent_elicit_complete(x->a, NULL), ACP_ENOTFOUND);
    json_array_clear(x->msgs);
    quiet(x);
    assert_int_equal(acp_agent_elicit_complete(x->a, id2), 0);
    json_decref(take(x, "elicitation/complete"));
    end_turn(x, 5);
}

/* --- an authenticate request's elicitation ---------------------------------------------------- */

/* The engine's authenticate hook: it holds the request. */
static void engine_authenticate(acp_auth *au, const char *method_id, void *user)
{
    h *x = user;
    x->e->au = au;
}

/* Request-scoped: requestId is the authenticate request's id exactly as the client wrote it
 * (here a string with an escape and a number in exponent form), no sessionId; cb gets s NULL;
 * an answered or cancelled request takes what is pending with it. */
static void test_auth_elicit(void **state)
{
    h *x = *state;
    static const acp_auth_method login[] = {{.id = "login", .name = "Log in"}};
    agent_stop(x);
    x->eng.auth_methods = login;
    x->eng.nauth_methods = 1;
    x->eng.authenticate = engine_authenticate;
    agent_start(x);
    init(x, FULL_CAPS);
    /* jansson would rewrite both (as "a\u00e9 1" and 1.0): the raw text must pass */
    const char *ids[] = {"\"a\\u00e9 1\"", "1.0e0"};
    for (size_t i = 0; i < 2; i++) {
        x->e->au = NULL;
        send_line(x,
                  "{\"jsonrpc\":\"2.0\",\"id\":%s,\"method\":\"authenticate\","
                  "\"params\":{\"methodId\":\"login\"}}",
                  ids[i]);
        acp_auth *au = x->e->au;
        assert_non_null(au);
        assert_string_equal(acp_auth_method_id(au), "login");
        got g = {0};
        char eid[48];
        assert_int_equal(acp_auth_elicit(au,
                                         &(acp_elicit){.struct_size = sizeof(acp_elicit),
                                                       .message = "Sign in",
                                                       .url = "https://s/"},
                                         eid, on_elicit, &g),
                         0);
        /* the raw line: the id's text as received */
        acp_agent_flush(x->a);
        size_t n;
        char *out = acp_conn_out_take(acp_agent_conn(x->a), &n);
        char want[128];
        snprintf(want, sizeof want, "\"requestId\":%s,", ids[i]);
        assert_non_null(memmem(out, n, want, strlen(want)));
        assert_null(memmem(out, n, "sessionId", 9));
        json_t *req = json_loadb(out, n - 1, 0, NULL);
        free(out);
        assert_non_null(req);
        answer(x, req, "{\"action\":\"accept\"}");
        assert_int_equal(g.calls, 1);
        assert_int_equal(g.status, 0);
        assert_null(g.s);
        assert_int_equal(acp_agent_elicit_complete(x->a, eid), 0);
        json_decref(take(x, "elicitation/complete"));
        /* a tool call belongs to a session */
        acp_tool_call *tc = (acp_tool_call *)&g;
        assert_int_equal(acp_auth_elicit(au,
                                         &(acp_elicit){.struct_size = sizeof(acp_elicit),
                                                       .message = "m",
                                                       .url = "https://s/",
                                                       .tool_call = tc},
                                         eid, on_elicit, &g),
                         ACP_EINVAL);
        /* the request ends (here: the client cancels it): what is pending is forgotten */
        json_t *form = json_pack("{s{}}", "properties");
        assert_int_equal(
            acp_auth_elicit(
                au, &(acp_elicit){.struct_size = sizeof(acp_elicit), .message = "m", .form = form},
                NULL, on_elicit, &g),
            0);
        json_decref(form);
        req = take(x, "elicitation/create");
        send_line(x,
                  "{\"jsonrpc\":\"2.0\",\"method\":\"$/cancel_request\",\"params\":{"
                  "\"requestId\":%s}}",
                  ids[i]);
        assert_true(acp_auth_cancelled(au));
        turn(x);
        int cancel = find_cancel(x->msgs, id_of(req));
        assert_true(cancel >= 0 && cancel < (int)json_array_size(x->msgs) - 1); /* then -32800 */
        assert_int_equal(error_code(x->msgs), ACP_RPC_CANCELLED);
        assert_int_equal(acp_auth_elicit(au,
                                         &(acp_elicit){.struct_size = sizeof(acp_elicit),
                                                       .message = "m",
                                                       .url = "https://s/"},
                                         eid, on_elicit, &g),
                         ACP_ECLOSED);
        answer(x, req, "{\"action\":\"decline\"}");
        assert_int_equal(g.calls, 1);
        acp_auth_refuse(au, 0, "too late"); /* only frees the handle: it was answered */
        assert_false(acp_agent_authenticated(x->a));
        json_array_clear(x->msgs);
    }
}

/* The client answers a call with error -32099, the code the connection gives calls it resolves
 * itself after EOF. The callbacks got ACP_ECLOSED ("the connection ended") on a connection that
 * had not: untrusted input passing for a local fact. Expected: ACP_EPROTO with the client's
 * message, as for any error it sends; the turn goes on. The agent_recv fuzz target checks it
 * for every callback. */
static void test_fixed_client_error_passes_for_closed(void **state)
{
    h *x = *state;
    char sid[80];
    acp_turn *t = open_turn(x, FULL_CAPS, sid);
    got g = {0};
    assert_int_equal(acp_turn_read_text_file(t, "a.txt", 0, 0, on_read, &g), 0);
    answer_error(x, take(x, "fs/read_text_file"), ACP_RPC_CONN_CLOSED, "connection closed");
    assert_int_equal(g.calls, 1);
    assert_int_equal(g.status, ACP_EPROTO);
    assert_string_equal(g.error, "connection closed");
    assert_false(acp_turn_cancelled(t));

    acp_terminal *term = NULL;
    acp_terminal_opts o = {.struct_size = sizeof(acp_terminal_opts), .command = "ls"};
    assert_int_equal(acp_turn_terminal_create(t, &o, on_term, &g, &term), 0);
    answer_error(x, take(x, "terminal/create"), ACP_RPC_CONN_CLOSED, "gone");
    assert_int_equal(g.calls, 2);
    assert_int_equal(g.status, ACP_EPROTO);
    assert_false(acp_turn_cancelled(t));
    end_turn(x, 5);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_gates),
        T(test_fs),
        T(test_malformed_answers),
        T(test_late_answer),
        T(test_session_calls),
        T(test_hold_order),
        T(test_turn_meta),
        T(test_permission),
        T(test_cancel_resolves_at_once),
        T(test_tool_calls),
        T(test_tool_call_auto_failed),
        T(test_terminal),
        T(test_terminal_released_on_turn_end),
        T(test_terminal_released_on_cancel),
        T(test_terminal_released_on_close),
        T(test_terminal_released_on_shutdown),
        T(test_terminal_orphans),
        T(test_elicit_form),
        T(test_elicit_url),
        T(test_auth_elicit),
        T(test_fixed_client_error_passes_for_closed),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
