/* The agent runtime driven in-process: bytes into its acp_conn, the loop turned by hand,
 * acp_agent_flush() where the transport would call it, output parsed back. A real SQLite store
 * in a temporary directory; a test engine whose behaviour the prompt text selects. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "acp/agent.h"
#include "store/store_impl.h"
#include "tests/store/tmpdir.h"

/* --- a store whose commits can be made to fail -------------------------------------------- */

static bool fail_commits; /* test-only switch read by failing_commit */
static acp_store_ops wrapped_ops;
static const acp_store_ops *real_ops;

static int failing_commit(acp_store *st, const char *now)
{
    if (fail_commits) return acp_store_fail(st, ACP_ESTORE, "disk I/O error (injected)");
    return real_ops->commit(st, now);
}

static bool fail_all; /* every create and list fails too */

static int failing_create(acp_store *st, const acp_store_session *s)
{
    if (fail_all) return acp_store_fail(st, ACP_ESTORE, "database is locked (injected)");
    return real_ops->create(st, s);
}

static int failing_list(acp_store *st, const char *cwd, const char *cursor, unsigned limit,
                        acp_store_list_cb cb, void *user, char **next_cursor)
{
    if (fail_all) return acp_store_fail(st, ACP_ESTORE, "database is locked (injected)");
    return real_ops->list(st, cwd, cursor, limit, cb, user, next_cursor);
}

/* --- harness ---------------------------------------------------------------------------------- */

typedef struct h {
    uv_loop_t loop;
    char dir[256], db[300];
    acp_store *st;
    acp_agent *a;
    json_t *msgs; /* every message received and not yet consumed, in order */
    acp_turn *held;
    bool cancel_fails;
    int cancels;
    int call_rc, call_status; /* acp_turn_call's return; status given to its callback */
    bool call_done;
    int flood_left; /* 64 KiB chunks the "flood" turn still has to send */
} h;

#define FLOOD_CHUNK (64 * 1024)

static void flood_more(acp_turn *t, void *user)
{
    h *x = user;
    static char chunk[FLOOD_CHUNK];
    memset(chunk, 'f', sizeof chunk);
    /* Produce only while the output has room, then wait to be called back. */
    while (x->flood_left > 0 && acp_turn_writable(t)) {
        assert_int_equal(acp_turn_text(t, NULL, "m", chunk, sizeof chunk), 0);
        x->flood_left--;
    }
    if (x->flood_left)
        acp_turn_on_writable(t, flood_more, x);
    else
        acp_turn_end(t, "end_turn");
}

static void call_cb(acp_turn *t, int status, const json_t *result, const char *error, void *user)
{
    h *x = user;
    x->call_done = true;
    x->call_status = status;
}

static void engine_prompt(acp_turn *t, const json_t *prompt, void *user)
{
    h *x = user;
    const char *text = json_string_value(json_object_get(json_array_get(prompt, 0), "text"));
    int n;
    if (text && sscanf(text, "emit %d", &n) == 1) {
        char mid[48], c[32];
        acp_agent_new_id("msg_", mid);
        for (int i = 0; i < n; i++) {
            snprintf(c, sizeof c, "c%d", i);
            assert_int_equal(acp_turn_text(t, NULL, mid, c, strlen(c)), 0);
        }
        acp_turn_end(t, "end_turn");
    } else if (text && !strcmp(text, "wait")) {
        acp_turn_text(t, NULL, NULL, "waiting", 7);
        x->held = t;
    } else if (text && sscanf(text, "big %d", &n) == 1) {
        /* n updates of 512 KiB each: history longer than one replay step */
        size_t len = 512 * 1024;
        char *big = malloc(len);
        for (int i = 0; i < n; i++) {
            memset(big, 'a' + i % 26, len);
            assert_int_equal(acp_turn_text(t, NULL, NULL, big, len), 0);
        }
        free(big);
        acp_turn_end(t, "end_turn");
    } else if (text && !strncmp(text, "resolve ", 8)) {
        /* Answers with the resolved path, or "refused". */
        char *out = NULL;
        int rc = acp_session_resolve_path(acp_turn_session(t), text + 8, &out);
        const char *say = rc == 0 ? out : rc == ACP_EACCES ? "refused" : "error";
        acp_turn_text(t, NULL, NULL, say, strlen(say));
        free(out);
        acp_turn_end(t, "end_turn");
    } else if (text && !strncmp(text, "title ", 6)) {
        /* A live-only update and a metadata update: neither is history. */
        json_t *u = json_pack("{ss s[]}", "sessionUpdate", "available_commands_update",
                              "availableCommands");
        assert_int_equal(acp_turn_update(t, u), 0);
        json_decref(u);
        u = json_pack("{ss ss}", "sessionUpdate", "session_info_update", "title", text + 6);
        assert_int_equal(acp_turn_update(t, u), 0);
        json_decref(u);
        assert_int_equal(acp_turn_update_raw(t, "{\"sessionUpdate\":", 17, false), ACP_EINVAL);
        acp_turn_end(t, "end_turn");
    } else if (text && sscanf(text, "flood %d", &n) == 1) {
        x->flood_left = n;
        acp_turn_on_writable(t, flood_more, x);
    } else if (text && !strcmp(text, "call")) {
        /* fs/read_text_file was not advertised by the client: refused before anything is sent */
        assert_int_equal(
            acp_turn_call(t, "fs/read_text_file", json_pack("{ss}", "path", "/x"), call_cb, x),
            ACP_ENOTSUP);
        x->call_rc = acp_turn_call(
            t, "session/request_permission",
            json_pack("{s{ss} s[]}", "toolCall", "toolCallId", "t1", "options"), call_cb, x);
        x->held = t;
    } else if (text && !strcmp(text, "fail")) {
        acp_turn_fail(t, ACP_RPC_INTERNAL_ERROR, "engine broke");
    } else {
        acp_turn_end(t, "end_turn");
    }
}

static void engine_cancel(acp_turn *t, void *user)
{
    h *x = user;
    x->cancels++;
    if (x->held == t) x->held = NULL;
    if (x->cancel_fails)
        acp_turn_fail(t, ACP_RPC_INTERNAL_ERROR, "exception while cancelling");
    else
        acp_turn_end(t, "cancelled");
}

static void agent_start(h *x)
{
    acp_engine e = {.name = "test-engine",
                    .version = "1",
                    .prompt = engine_prompt,
                    .cancel = engine_cancel,
                    .user = x};
    assert_int_equal(acp_agent_new(&x->loop, x->st, &e, NULL, &x->a), 0);
}

static void agent_stop(h *x)
{
    acp_agent_free(x->a);
    x->a = NULL;
    uv_run(&x->loop, UV_RUN_DEFAULT);
}

static int setup(void **state)
{
    h *x = calloc(1, sizeof *x);
    assert_int_equal(tmpdir_make(x->dir, sizeof x->dir, "agent"), 0);
    snprintf(x->db, sizeof x->db, "%s/s.db", x->dir);
    uv_loop_init(&x->loop);
    char *err = NULL;
    assert_int_equal(acp_store_open(x->db, &x->st, &err), 0);
    real_ops = x->st->ops;
    wrapped_ops = *real_ops;
    wrapped_ops.commit = failing_commit;
    wrapped_ops.create = failing_create;
    wrapped_ops.list = failing_list;
    fail_all = false;
    x->st->ops = &wrapped_ops;
    fail_commits = false;
    x->msgs = json_array();
    agent_start(x);
    *state = x;
    return 0;
}

static int teardown(void **state)
{
    h *x = *state;
    if (x->a) agent_stop(x);
    x->st->ops = real_ops;
    acp_store_close(x->st);
    assert_int_equal(uv_loop_close(&x->loop), 0);
    json_decref(x->msgs);
    tmpdir_remove(x->dir);
    free(x);
    return 0;
}

/* Moves the connection's output into x->msgs, one parsed message per line. */
static void collect(h *x)
{
    size_t n;
    char *out = acp_conn_out_take(acp_agent_conn(x->a), &n);
    for (char *p = out, *e; p && p < out + n; p = e + 1) {
        e = memchr(p, '\n', (size_t)(out + n - p));
        assert_non_null(e);
        json_error_t err;
        json_t *m = json_loadb(p, (size_t)(e - p), 0, &err);
        assert_non_null(m);
        json_array_append_new(x->msgs, m);
    }
    free(out);
}

/* One loop turn as the transport would run it: callbacks, then commit-and-release. */
static void turn(h *x)
{
    uv_run(&x->loop, UV_RUN_NOWAIT);
    acp_agent_flush(x->a);
    collect(x);
}

static void send_line(h *x, const char *fmt, ...)
{
    char *line, *full;
    va_list ap;
    va_start(ap, fmt);
    assert_true(vasprintf(&line, fmt, ap) > 0);
    va_end(ap);
    assert_true(asprintf(&full, "%s\n", line) > 0);
    acp_conn_recv(acp_agent_conn(x->a), full, strlen(full));
    free(full);
    free(line);
}

static int find_in(json_t *msgs, json_int_t id)
{
    for (size_t i = 0; i < json_array_size(msgs); i++) {
        json_t *m = json_array_get(msgs, i);
        if (!json_object_get(m, "method") && json_integer_value(json_object_get(m, "id")) == id)
            return (int)i;
    }
    return -1;
}

static int find_response(h *x, json_int_t id)
{
    return find_in(x->msgs, id);
}

/* Sends a request (params as JSON text) and turns the loop until its response arrived.
 * Returns every message up to and including the response (caller decrefs); they are removed
 * from x->msgs. */
static json_t *request(h *x, int id, const char *method, const char *params)
{
    send_line(x, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"%s\",\"params\":%s}", id, method,
              params);
    int at = -1;
    for (int i = 0; i < 1000 && (at = find_response(x, id)) < 0; i++) turn(x);
    assert_true(at >= 0);
    json_t *got = json_array();
    for (int i = 0; i <= at; i++)
        json_array_append(got, json_array_get(x->msgs, 0)), json_array_remove(x->msgs, 0);
    return got;
}

static json_t *last(json_t *msgs)
{
    return json_array_get(msgs, json_array_size(msgs) - 1);
}

static int error_code(json_t *msgs)
{
    return (int)json_integer_value(json_object_get(json_object_get(last(msgs), "error"), "code"));
}

static const char *error_message(json_t *msgs)
{
    return json_string_value(json_object_get(json_object_get(last(msgs), "error"), "message"));
}

static void init(h *x)
{
    json_t *r = request(x, 1000, "initialize", "{\"protocolVersion\":1}");
    json_decref(r);
}

/* Creates a session in x->dir; the id is written to id (80 bytes). */
static void new_session(h *x, char *id)
{
    char p[400];
    snprintf(p, sizeof p, "{\"cwd\":\"%s\",\"mcpServers\":[]}", x->dir);
    json_t *r = request(x, 1001, "session/new", p);
    const char *sid =
        json_string_value(json_object_get(json_object_get(last(r), "result"), "sessionId"));
    assert_non_null(sid);
    snprintf(id, 80, "%s", sid);
    json_decref(r);
}

static size_t count_updates(json_t *msgs, const char *kind)
{
    size_t n = 0;
    for (size_t i = 0; i < json_array_size(msgs); i++) {
        json_t *u = json_object_get(json_object_get(json_array_get(msgs, i), "params"), "update");
        const char *k = json_string_value(json_object_get(u, "sessionUpdate"));
        if (k && (!kind || !strcmp(k, kind))) n++;
    }
    return n;
}

static int count_stored(void *user, int64_t seq, const char *json, size_t n)
{
    (*(int *)user)++;
    return 0;
}

static int stored(h *x, const char *id)
{
    int n = 0;
    int64_t last_seq;
    bool done;
    assert_int_equal(acp_store_replay(x->st, id, 0, 0, count_stored, &n, &last_seq, &done), 0);
    return n;
}

/* --- tests ----------------------------------------------------------------------------------- */

static void test_initialize(void **state)
{
    h *x = *state;
    json_t *r = request(x, 1, "session/new", "{\"cwd\":\"/\",\"mcpServers\":[]}");
    assert_int_equal(error_code(r), ACP_RPC_INVALID_REQUEST);
    json_decref(r);
    r = request(x, 2, "initialize",
                "{\"protocolVersion\":7,\"clientCapabilities\":{\"fs\":{\"readTextFile\":true}}}");
    json_t *res = json_object_get(last(r), "result");
    assert_int_equal(json_integer_value(json_object_get(res, "protocolVersion")), 1);
    json_t *caps = json_object_get(res, "agentCapabilities");
    assert_true(json_is_true(json_object_get(caps, "loadSession")));
    json_t *sc = json_object_get(caps, "sessionCapabilities");
    for (const char *const *k = (const char *const[]){"list", "delete", "resume", "close",
                                                      "additionalDirectories", NULL};
         *k; k++)
        assert_true(json_is_object(json_object_get(sc, *k)));
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(res, "agentInfo"), "name")),
        "test-engine");
    json_decref(r);
    assert_true(acp_agent_client_has(x->a, "fs.readTextFile"));
    assert_false(acp_agent_client_has(x->a, "fs.writeTextFile"));
}

static void test_validation(void **state)
{
    h *x = *state;
    init(x);
    json_t *r = request(x, 1, "session/new", "{\"cwd\":\"src\",\"mcpServers\":[]}");
    assert_int_equal(error_code(r), ACP_RPC_INVALID_PARAMS);
    assert_string_equal(error_message(r), "cwd must be an absolute path: 'src'");
    json_decref(r);
    r = request(x, 2, "session/new", "{\"cwd\":\"/tmp\"}");
    assert_int_equal(error_code(r), ACP_RPC_INVALID_PARAMS);
    json_decref(r);
    r = request(x, 3, "session/new",
                "{\"cwd\":\"/tmp\",\"mcpServers\":[],\"additionalDirectories\":[\"/a\",\"rel\"]}");
    assert_int_equal(error_code(r), ACP_RPC_INVALID_PARAMS);
    assert_non_null(strstr(error_message(r), "additionalDirectories[1]"));
    json_decref(r);
    r = request(x, 4, "session/new",
                "{\"cwd\":\"/tmp\",\"mcpServers\":[],\"additionalDirectories\":[\"\"]}");
    assert_int_equal(error_code(r), ACP_RPC_INVALID_PARAMS);
    assert_non_null(strstr(error_message(r), "additionalDirectories[0]"));
    json_decref(r);
    r = request(x, 5, "session/new",
                "{\"cwd\":\"/tmp\",\"mcpServers\":[],\"additionalDirectories\":[7]}");
    assert_int_equal(error_code(r), ACP_RPC_INVALID_PARAMS);
    json_decref(r);

    r = request(x, 6, "session/prompt",
                "{\"sessionId\":\"sess_nope\",\"prompt\":[{\"type\":\"text\",\"text\":\"hi\"}]}");
    assert_int_equal(error_code(r), ACP_RPC_NOT_FOUND);
    assert_string_equal(
        json_string_value(json_object_get(
            json_object_get(json_object_get(last(r), "error"), "data"), "sessionId")),
        "sess_nope");
    json_decref(r);
    r = request(x, 7, "session/load",
                "{\"sessionId\":\"sess_nope\",\"cwd\":\"/tmp\",\"mcpServers\":[]}");
    assert_int_equal(error_code(r), ACP_RPC_NOT_FOUND);
    json_decref(r);

    char id[80], p[300];
    new_session(x, id);
    assert_int_equal(strncmp(id, "sess_", 5), 0);
    assert_int_equal(strlen(id), 5 + 32);
    /* The engine declared no image support: the block is refused, nothing is stored. */
    snprintf(p, sizeof p,
             "{\"sessionId\":\"%s\",\"prompt\":[{\"type\":\"image\",\"data\":\"AA==\","
             "\"mimeType\":\"image/png\"}]}",
             id);
    r = request(x, 8, "session/prompt", p);
    assert_int_equal(error_code(r), ACP_RPC_INVALID_PARAMS);
    assert_non_null(strstr(error_message(r), "prompt[0]"));
    json_decref(r);
    assert_int_equal(stored(x, id), 0);
    /* Deleting what never existed succeeds. */
    r = request(x, 9, "session/delete", "{\"sessionId\":\"sess_never\"}");
    assert_true(json_is_object(json_object_get(last(r), "result")));
    json_decref(r);
}

/* Updates reach the output only after acp_agent_flush() committed them. */
static void test_hold_until_commit(void **state)
{
    h *x = *state;
    init(x);
    char id[80], p[300];
    new_session(x, id);
    snprintf(p, sizeof p,
             "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"session/prompt\",\"params\":"
             "{\"sessionId\":\"%s\",\"prompt\":[{\"type\":\"text\",\"text\":\"emit 3\"}]}}",
             id);
    send_line(x, "%s", p);
    /* The engine ran inside recv: its updates and the response exist but are held. */
    assert_int_equal(acp_conn_out_len(acp_agent_conn(x->a)), 0);
    assert_int_equal(stored(x, id), 0);
    acp_agent_flush(x->a);
    assert_int_equal(stored(x, id), 4); /* the user message + 3 chunks */
    collect(x);
    assert_int_equal(count_updates(x->msgs, "agent_message_chunk"), 3);
    assert_int_equal(find_response(x, 5), 3); /* after the three updates */
}

/* A failed commit: nothing held leaks, the prompt is answered with the store error. */
static void test_commit_failure(void **state)
{
    h *x = *state;
    init(x);
    char id[80], p[300];
    new_session(x, id);
    fail_commits = true;
    snprintf(p, sizeof p,
             "{\"sessionId\":\"%s\",\"prompt\":[{\"type\":\"text\",\"text\":\"emit 5\"}]}", id);
    json_t *r = request(x, 5, "session/prompt", p);
    assert_int_equal(count_updates(r, NULL), 0);
    assert_int_equal(error_code(r), ACP_RPC_INTERNAL_ERROR);
    assert_string_equal(error_message(r), "session store unavailable: disk I/O error (injected)");
    json_decref(r);
    assert_int_equal(stored(x, id), 0);

    /* A turn still running when its commit fails is answered at once and told to stop. */
    snprintf(p, sizeof p,
             "{\"sessionId\":\"%s\",\"prompt\":[{\"type\":\"text\",\"text\":\"wait\"}]}", id);
    r = request(x, 6, "session/prompt", p);
    assert_int_equal(error_code(r), ACP_RPC_INTERNAL_ERROR);
    assert_int_equal(count_updates(r, NULL), 0);
    json_decref(r);
    assert_null(x->held);
    assert_int_equal(x->cancels, 1);

    fail_commits = false;
    snprintf(p, sizeof p,
             "{\"sessionId\":\"%s\",\"prompt\":[{\"type\":\"text\",\"text\":\"emit 2\"}]}", id);
    r = request(x, 7, "session/prompt", p);
    assert_int_equal(count_updates(r, "agent_message_chunk"), 2);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(last(r), "result"), "stopReason")),
        "end_turn");
    json_decref(r);
}

/* load replays the whole history, in order, before its response; resume replays nothing. */
static void test_replay_order(void **state)
{
    h *x = *state;
    init(x);
    char id[80], p[400];
    new_session(x, id);
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p,
                 "{\"sessionId\":\"%s\",\"prompt\":[{\"type\":\"text\",\"text\":\"emit %d\"}]}", id,
                 2 + i);
        json_decref(request(x, 10 + i, "session/prompt", p));
    }
    /* A fresh agent on the same store, like a restarted process. */
    agent_stop(x);
    agent_start(x);
    init(x);
    snprintf(p, sizeof p, "{\"sessionId\":\"%s\",\"cwd\":\"%s\",\"mcpServers\":[]}", id, x->dir);
    json_t *r = request(x, 20, "session/load", p);
    assert_true(json_is_object(json_object_get(last(r), "result")));
    /* user, c0 c1, user, c0 c1 c2, user, c0..c3 */
    const char *want[] = {"emit 2", "c0",     "c1", "emit 3", "c0", "c1",
                          "c2",     "emit 4", "c0", "c1",     "c2", "c3"};
    size_t n = sizeof want / sizeof *want;
    assert_int_equal(json_array_size(r), n + 1);
    for (size_t i = 0; i < n; i++) {
        json_t *u = json_object_get(json_object_get(json_array_get(r, i), "params"), "update");
        const char *txt = json_string_value(json_object_get(json_object_get(u, "content"), "text"));
        assert_string_equal(txt, want[i]);
        const char *kind = json_string_value(json_object_get(u, "sessionUpdate"));
        assert_string_equal(kind, want[i][0] == 'e' ? "user_message_chunk" : "agent_message_chunk");
        assert_non_null(json_string_value(json_object_get(u, "messageId")));
    }
    json_decref(r);
    r = request(x, 21, "session/resume", p);
    assert_int_equal(json_array_size(r), 1);
    json_decref(r);
}

static void test_busy_cancel_close(void **state)
{
    h *x = *state;
    init(x);
    char id[80], p[300];
    new_session(x, id);
    snprintf(p, sizeof p,
             "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"session/prompt\",\"params\":"
             "{\"sessionId\":\"%s\",\"prompt\":[{\"type\":\"text\",\"text\":\"wait\"}]}}",
             id);
    send_line(x, "%s", p);
    turn(x);
    assert_non_null(x->held);
    /* A second prompt on the same session while one runs: refused. */
    snprintf(p, sizeof p,
             "{\"sessionId\":\"%s\",\"prompt\":[{\"type\":\"text\",\"text\":\"emit 1\"}]}", id);
    json_t *r = request(x, 6, "session/prompt", p);
    assert_int_equal(error_code(r), ACP_RPC_INVALID_REQUEST);
    json_decref(r);
    /* session/cancel: the engine fails while cancelling, the answer is still `cancelled`. */
    x->cancel_fails = true;
    send_line(
        x, "{\"jsonrpc\":\"2.0\",\"method\":\"session/cancel\",\"params\":{\"sessionId\":\"%s\"}}",
        id);
    for (int i = 0; i < 10 && find_response(x, 5) < 0; i++) turn(x);
    int at = find_response(x, 5);
    assert_true(at >= 0);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_array_get(x->msgs, at), "result"), "stopReason")),
                        "cancelled");
    x->cancel_fails = false;

    /* close during a running turn: the prompt answers cancelled before close answers. */
    snprintf(p, sizeof p,
             "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"session/prompt\",\"params\":"
             "{\"sessionId\":\"%s\",\"prompt\":[{\"type\":\"text\",\"text\":\"wait\"}]}}",
             id);
    send_line(x, "%s", p);
    turn(x);
    snprintf(p, sizeof p, "{\"sessionId\":\"%s\"}", id);
    r = request(x, 8, "session/close", p);
    at = find_in(r, 7);
    assert_true(at >= 0 && at < (int)json_array_size(r) - 1);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_array_get(r, at), "result"), "stopReason")),
                        "cancelled");
    json_decref(r);
    assert_int_equal(acp_agent_session_count(x->a), 0);
    /* Closed, not deleted: still listed; prompts now get -32002. */
    r = request(x, 9, "session/list", "{}");
    assert_int_equal(
        json_array_size(json_object_get(json_object_get(last(r), "result"), "sessions")), 1);
    json_decref(r);
    snprintf(p, sizeof p, "{\"sessionId\":\"%s\",\"prompt\":[{\"type\":\"text\",\"text\":\"x\"}]}",
             id);
    r = request(x, 10, "session/prompt", p);
    assert_int_equal(error_code(r), ACP_RPC_NOT_FOUND);
    json_decref(r);
    /* delete: gone from the list and from disk. */
    snprintf(p, sizeof p, "{\"sessionId\":\"%s\"}", id);
    json_decref(request(x, 11, "session/delete", p));
    r = request(x, 12, "session/list", "{}");
    assert_int_equal(
        json_array_size(json_object_get(json_object_get(last(r), "result"), "sessions")), 0);
    json_decref(r);
    acp_store_session s = {0};
    assert_int_equal(acp_store_get(x->st, id, &s), ACP_ENOTFOUND);
}

static void test_list_pages(void **state)
{
    h *x = *state;
    init(x);
    char id[80];
    for (int i = 0; i < 55; i++) new_session(x, id);
    json_t *r = request(x, 1, "session/list", "{}");
    json_t *res = json_object_get(last(r), "result");
    assert_int_equal(json_array_size(json_object_get(res, "sessions")), 50);
    const char *cur = json_string_value(json_object_get(res, "nextCursor"));
    assert_non_null(cur);
    char p[512];
    snprintf(p, sizeof p, "{\"cursor\":\"%s\"}", cur);
    json_t *r2 = request(x, 2, "session/list", p);
    res = json_object_get(last(r2), "result");
    assert_int_equal(json_array_size(json_object_get(res, "sessions")), 5);
    assert_null(json_object_get(res, "nextCursor"));
    json_decref(r2);
    json_decref(r);
    r = request(x, 3, "session/list", "{\"cursor\":\"garbage!\"}");
    assert_int_equal(error_code(r), ACP_RPC_INVALID_PARAMS);
    json_decref(r);
    r = request(x, 4, "session/list", "{\"cwd\":\"relative\"}");
    assert_int_equal(error_code(r), ACP_RPC_INVALID_PARAMS);
    json_decref(r);
    r = request(x, 5, "session/list", "{\"cwd\":\"/nowhere\"}");
    assert_int_equal(
        json_array_size(json_object_get(json_object_get(last(r), "result"), "sessions")), 0);
    json_decref(r);
}

/* session_info_update is recorded for session/list; live-only kinds are not history. */
static void test_info_not_history(void **state)
{
    h *x = *state;
    init(x);
    char id[80], p[300];
    new_session(x, id);
    snprintf(p, sizeof p,
             "{\"sessionId\":\"%s\",\"prompt\":[{\"type\":\"text\",\"text\":\"title Mon projet "
             "\u00e9t\u00e9\"}]}",
             id);
    json_t *r = request(x, 2, "session/prompt", p);
    assert_int_equal(count_updates(r, "session_info_update"), 1);
    assert_int_equal(count_updates(r, "available_commands_update"), 1);
    json_decref(r);
    assert_int_equal(stored(x, id), 1); /* only the user message */
    r = request(x, 3, "session/list", "{}");
    json_t *info =
        json_array_get(json_object_get(json_object_get(last(r), "result"), "sessions"), 0);
    assert_string_equal(json_string_value(json_object_get(info, "title")),
                        "Mon projet \u00e9t\u00e9");
    assert_string_equal(json_string_value(json_object_get(info, "sessionId")), id);
    assert_string_equal(json_string_value(json_object_get(info, "cwd")), x->dir);
    assert_true(json_is_array(json_object_get(info, "additionalDirectories")));
    assert_int_equal(strlen(json_string_value(json_object_get(info, "updatedAt"))), 24);
    json_decref(r);
}

static const char *prompt_reply(h *x, int id, const char *sid, const char *text)
{
    static char buf[1024];
    char p[1024];
    snprintf(p, sizeof p, "{\"sessionId\":\"%s\",\"prompt\":[{\"type\":\"text\",\"text\":\"%s\"}]}",
             sid, text);
    json_t *r = request(x, id, "session/prompt", p);
    buf[0] = '\0';
    for (size_t i = 0; i < json_array_size(r); i++) {
        json_t *u = json_object_get(json_object_get(json_array_get(r, i), "params"), "update");
        const char *t = json_string_value(json_object_get(json_object_get(u, "content"), "text"));
        if (t) snprintf(buf, sizeof buf, "%s", t);
    }
    json_decref(r);
    return buf;
}

/* The root set: relative paths against cwd, symlinks followed, anything outside refused. */
static void test_resolve_path(void **state)
{
    h *x = *state;
    init(x);
    char id[80], want[600], link[600];
    new_session(x, id);
    char *real = realpath(x->dir, NULL); /* TMPDIR may itself be a symlink */
    snprintf(want, sizeof want, "%s/new.txt", real);
    free(real);
    assert_string_equal(prompt_reply(x, 2, id, "resolve new.txt"), want);
    assert_string_equal(prompt_reply(x, 3, id, "resolve ../escape.txt"), "refused");
    assert_string_equal(prompt_reply(x, 4, id, "resolve /etc/passwd"), "refused");
    snprintf(link, sizeof link, "%s/out", x->dir);
    assert_int_equal(symlink("/etc", link), 0);
    assert_string_equal(prompt_reply(x, 5, id, "resolve out/passwd"), "refused");
}

/* Shutdown (EOF in acp-agent): the running turn answers cancelled, sessions close, on_done. */
static void test_shutdown(void **state)
{
    h *x = *state;
    init(x);
    char id[80], p[300];
    new_session(x, id);
    snprintf(p, sizeof p,
             "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"session/prompt\",\"params\":"
             "{\"sessionId\":\"%s\",\"prompt\":[{\"type\":\"text\",\"text\":\"wait\"}]}}",
             id);
    send_line(x, "%s", p);
    turn(x);
    assert_non_null(x->held);
    acp_agent_shutdown(x->a);
    turn(x);
    int at = find_response(x, 5);
    assert_true(at >= 0);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_array_get(x->msgs, at), "result"), "stopReason")),
                        "cancelled");
    assert_int_equal(acp_agent_session_count(x->a), 0);
    assert_null(x->held);
    assert_int_equal(stored(x, id), 2); /* user message + "waiting": committed on the way out */
}

/* A producer that respects acp_turn_writable() never lets unsent output grow much past the
 * high-water mark, however much it has to send; draining lets it finish. */
static void test_backpressure(void **state)
{
    h *x = *state;
    init(x);
    char id[80], p[300];
    new_session(x, id);
    snprintf(p, sizeof p,
             "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"session/prompt\",\"params\":"
             "{\"sessionId\":\"%s\",\"prompt\":[{\"type\":\"text\",\"text\":\"flood 640\"}]}}",
             id);
    send_line(x, "%s", p); /* 40 MiB to send */
    acp_conn *c = acp_agent_conn(x->a);
    for (int i = 0; i < 50; i++) {
        uv_run(&x->loop, UV_RUN_NOWAIT);
        acp_agent_flush(x->a);
    }
    size_t queued = acp_conn_out_len(c);
    assert_true(queued >= (4u << 20));                         /* it filled the output... */
    assert_true(queued < (4u << 20) + 2 * FLOOD_CHUNK + 4096); /* ...and stopped there */
    assert_true(x->flood_left > 0);
    /* Drain like a reader would; the response ends the output. */
    size_t total = 0;
    bool answered = false;
    for (int i = 0; i < 10000 && !answered; i++) {
        uv_run(&x->loop, UV_RUN_NOWAIT);
        acp_agent_flush(x->a);
        size_t n;
        char *out = acp_conn_out_take(c, &n);
        total += n;
        answered = out && n > 40 && strstr(out + n - 60 > out ? out + n - 60 : out, "\"id\":5,");
        free(out);
    }
    assert_true(answered);
    assert_int_equal(x->flood_left, 0);
    assert_true(total >= 640u * FLOOD_CHUNK);
}

/* Store failures on requests are -32603 naming the store, and nothing half-exists. */
static void test_store_down(void **state)
{
    h *x = *state;
    init(x);
    fail_all = true;
    json_t *r = request(x, 1, "session/new", "{\"cwd\":\"/tmp\",\"mcpServers\":[]}");
    assert_int_equal(error_code(r), ACP_RPC_INTERNAL_ERROR);
    assert_string_equal(error_message(r),
                        "session store unavailable: database is locked (injected)");
    json_decref(r);
    assert_int_equal(acp_agent_session_count(x->a), 0);
    r = request(x, 2, "session/list", "{}");
    assert_int_equal(error_code(r), ACP_RPC_INTERNAL_ERROR);
    assert_string_equal(error_message(r),
                        "session store unavailable: database is locked (injected)");
    json_decref(r);
    fail_all = false;
    r = request(x, 3, "session/list", "{}");
    assert_int_equal(
        json_array_size(json_object_get(json_object_get(last(r), "result"), "sessions")), 0);
    json_decref(r);
}

/* Cancelling a turn sends $/cancel_request for its outstanding client requests. */
static void test_cancel_cancels_calls(void **state)
{
    h *x = *state;
    init(x);
    char id[80], p[300];
    new_session(x, id);
    snprintf(p, sizeof p,
             "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"session/prompt\",\"params\":"
             "{\"sessionId\":\"%s\",\"prompt\":[{\"type\":\"text\",\"text\":\"call\"}]}}",
             id);
    send_line(x, "%s", p);
    turn(x);
    assert_int_equal(x->call_rc, 0);
    json_t *req = json_array_get(x->msgs, json_array_size(x->msgs) - 1);
    assert_string_equal(json_string_value(json_object_get(req, "method")),
                        "session/request_permission");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(req, "params"), "sessionId")), id);
    json_int_t call_id = json_integer_value(json_object_get(req, "id"));
    send_line(
        x, "{\"jsonrpc\":\"2.0\",\"method\":\"session/cancel\",\"params\":{\"sessionId\":\"%s\"}}",
        id);
    for (int i = 0; i < 10 && find_response(x, 5) < 0; i++) turn(x);
    bool cancel_sent = false;
    for (size_t i = 0; i < json_array_size(x->msgs); i++) {
        json_t *m = json_array_get(x->msgs, i);
        if (json_is_string(json_object_get(m, "method")) &&
            !strcmp(json_string_value(json_object_get(m, "method")), "$/cancel_request") &&
            json_integer_value(json_object_get(json_object_get(m, "params"), "requestId")) ==
                call_id)
            cancel_sent = true;
    }
    assert_true(cancel_sent);
    int at = find_response(x, 5);
    assert_true(at >= 0);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_array_get(x->msgs, at), "result"), "stopReason")),
                        "cancelled");
    /* The turn ended, so the late answer reaches nobody. */
    send_line(
        x,
        "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"error\":{\"code\":-32800,\"message\":\"cancelled\"}}",
        (long long)call_id);
    turn(x);
    assert_false(x->call_done);
}

/* A history longer than one replay step goes out over several loop turns, in order, and the
 * response comes last. Loading a session that is open here restarts it. */
static void test_replay_big(void **state)
{
    h *x = *state;
    init(x);
    char id[80], p[800];
    new_session(x, id);
    snprintf(p, sizeof p,
             "{\"sessionId\":\"%s\",\"prompt\":[{\"type\":\"text\",\"text\":\"big 12\"}]}", id);
    json_decref(request(x, 2, "session/prompt", p));
    snprintf(p, sizeof p,
             "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"session/load\",\"params\":"
             "{\"sessionId\":\"%s\",\"cwd\":\"%s\",\"mcpServers\":[]}}",
             id, x->dir);
    send_line(x, "%s", p);
    int turns = 0;
    for (; turns < 100 && find_response(x, 3) < 0; turns++) turn(x);
    assert_true(turns > 2);
    int at = find_response(x, 3);
    assert_int_equal(at, 13); /* the user message and 12 chunks before it */
    for (int i = 1; i <= 12; i++) {
        json_t *u =
            json_object_get(json_object_get(json_array_get(x->msgs, i), "params"), "update");
        const char *txt = json_string_value(json_object_get(json_object_get(u, "content"), "text"));
        assert_int_equal(strlen(txt), 512 * 1024);
        assert_int_equal(txt[0], 'a' + (i - 1) % 26);
    }
    assert_int_equal(acp_agent_session_count(x->a), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_initialize, setup, teardown),
        cmocka_unit_test_setup_teardown(test_validation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hold_until_commit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_commit_failure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replay_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_busy_cancel_close, setup, teardown),
        cmocka_unit_test_setup_teardown(test_list_pages, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_cancels_calls, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_down, setup, teardown),
        cmocka_unit_test_setup_teardown(test_backpressure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_info_not_history, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resolve_path, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shutdown, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replay_big, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
