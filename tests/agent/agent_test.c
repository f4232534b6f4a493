/* SPDX-License-Identifier: Apache-2.0 */
/* The agent runtime driven in-process through harness.h: bytes into its acp_conn, the loop
 * turned by hand, acp_agent_flush() where the transport would call it, output parsed back. A real
 * SQLite store in a temporary directory; a test engine whose behaviour the prompt text selects. */
#include <fcntl.h>
#include <unistd.h>

#include "harness.h"

/* --- a store whose commits can be made to fail -------------------------------------------- */

static bool fail_commits; /* test-only switch read by failing_commit */

static int failing_commit(acp_store *st, const char *now)
{
    if (fail_commits) return acp_error_set(ACP_ESTORE, "disk I/O error (injected)");
    return real_ops->commit(st, now);
}

static bool fail_all; /* every create and list fails too */

static int failing_create(acp_store *st, const acp_store_session *s, const char *holder,
                          unsigned ttl_ms)
{
    if (fail_all) return acp_error_set(ACP_ESTORE, "database is locked (injected)");
    return real_ops->create(st, s, holder, ttl_ms);
}

static int failing_list(acp_store *st, const char *cwd, int archived, const char *cursor,
                        unsigned limit, acp_store_list_cb cb, void *user, char **next_cursor)
{
    if (fail_all) return acp_error_set(ACP_ESTORE, "database is locked (injected)");
    return real_ops->list(st, cwd, archived, cursor, limit, cb, user, next_cursor);
}

/* --- the engine, whose behaviour the prompt text selects ------------------------------------ */

struct eng_state {
    acp_turn *held;
    const json_t *held_prompt; /* the held turn's prompt: the engine may read it until it ends */
    bool cancel_fails;
    int cancels;
    int call_rc, call_status; /* acp_turn_call's return; status given to its callback */
    bool call_done;
    int flood_left; /* 64 KiB chunks the "flood" turn still has to send */
};

#define FLOOD_CHUNK (64 * 1024)

static void flood_more(acp_turn *t, void *user)
{
    h *x = user;
    static char chunk[FLOOD_CHUNK];
    memset(chunk, 'f', sizeof chunk);
    /* Produce only while the output has room, then wait to be called back. */
    while (x->e->flood_left > 0 && acp_turn_writable(t)) {
        assert_int_equal(acp_turn_text(t, NULL, "m", chunk, sizeof chunk), 0);
        x->e->flood_left--;
    }
    if (x->e->flood_left)
        acp_turn_on_writable(t, flood_more, x);
    else
        acp_turn_end(t, "end_turn");
}

static void call_cb(acp_turn *t, int status, const json_t *result, const char *error, void *user)
{
    h *x = user;
    x->e->call_done = true;
    x->e->call_status = status;
}

static void engine_prompt(acp_turn *t, const json_t *prompt, void *user)
{
    h *x = user;
    x->e->held_prompt = prompt;
    const char *text = json_string_value(json_object_get(json_array_get(prompt, 0), "text"));
    int n, m;
    if (text && sscanf(text, "emit %d", &n) == 1) {
        char mid[48], c[32];
        acp_agent_new_id("msg_", mid);
        for (int i = 0; i < n; i++) {
            snprintf(c, sizeof c, "c%d", i);
            assert_int_equal(acp_turn_text(t, NULL, mid, c, strlen(c)), 0);
        }
        acp_turn_end(t, "end_turn");
    } else if (text && sscanf(text, "stream %d %d", &n, &m) == 2) {
        /* n chunks of m bytes under one messageId, all in this loop turn */
        char mid[48], *c = malloc((size_t)m);
        acp_agent_new_id("msg_", mid);
        for (int i = 0; i < n; i++) {
            memset(c, 'a' + i % 26, (size_t)m);
            assert_int_equal(acp_turn_text(t, NULL, mid, c, (size_t)m), 0);
        }
        free(c);
        acp_turn_end(t, "end_turn");
    } else if (text && !strcmp(text, "mix")) {
        /* What may and may not be merged in the store, in one loop turn. */
        assert_int_equal(acp_turn_text(t, NULL, "msg_A", "a1", 2), 0);
        const char a2[] = "\"a2\u00e9\n"; /* escaped in JSON: merged as escaped text */
        assert_int_equal(acp_turn_text(t, NULL, "msg_A", a2, sizeof a2 - 1), 0);
        json_t *u = json_pack("{ss ss ss}", "sessionUpdate", "tool_call", "toolCallId", "call_1",
                              "title", "between");
        assert_int_equal(acp_turn_update(t, u), 0);
        json_decref(u);
        assert_int_equal(acp_turn_text(t, NULL, "msg_A", "a3", 2), 0);
        assert_int_equal(acp_turn_text(t, NULL, "msg_A", "a4", 2), 0);
        assert_int_equal(acp_turn_text(t, NULL, "msg_B", "b1", 2), 0);
        assert_int_equal(acp_turn_text(t, "agent_thought_chunk", "msg_B", "t1", 2), 0);
        assert_int_equal(acp_turn_text(t, "agent_thought_chunk", "msg_B", "t2", 2), 0);
        assert_int_equal(acp_turn_text(t, NULL, "msg_B", "b2", 2), 0);
        assert_int_equal(acp_turn_text(t, NULL, NULL, "n1", 2), 0);
        assert_int_equal(acp_turn_text(t, NULL, NULL, "n2", 2), 0);
        assert_int_equal(acp_turn_text(t, NULL, "msg_A", "a5", 2), 0);
        /* a live-only update does not end the message in the store */
        u = json_pack("{ss s[]}", "sessionUpdate", "available_commands_update",
                      "availableCommands");
        assert_int_equal(acp_turn_update(t, u), 0);
        json_decref(u);
        assert_int_equal(acp_turn_text(t, NULL, "msg_A", "a6", 2), 0);
        /* the general path is stored as it came, after the merged text */
        const char raw[] = "{\"sessionUpdate\":\"agent_message_chunk\",\"messageId\":\"msg_A\","
                           "\"content\":{\"type\":\"text\",\"text\":\"a7\"}}";
        assert_int_equal(acp_turn_update_raw(t, raw, sizeof raw - 1, false), 0);
        assert_int_equal(acp_turn_text(t, NULL, "msg_A", "a8", 2), 0);
        acp_turn_end(t, "end_turn");
    } else if (text && !strcmp(text, "wait")) {
        acp_turn_text(t, NULL, NULL, "waiting", 7);
        x->e->held = t;
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
    } else if (text && !strncmp(text, "open ", 5)) {
        /* Answers "opened", "refused" (outside the roots) or the reason it could not open. */
        int fd = -1;
        int rc = acp_session_open_path(acp_turn_session(t), text + 5, O_RDONLY, 0, &fd);
        char say[1024];
        snprintf(say, sizeof say, "%s",
                 rc == 0            ? "opened"
                 : rc == ACP_EACCES ? "refused"
                                    : acp_error_last()->message);
        acp_turn_text(t, NULL, NULL, say, strlen(say));
        if (fd >= 0) close(fd);
        acp_turn_end(t, "end_turn");
    } else if (text && !strncmp(text, "title ", 6)) {
        /* A live-only update and a metadata update: neither is history. */
        json_t *u = json_pack("{ss s[]}", "sessionUpdate", "available_commands_update",
                              "availableCommands");
        assert_int_equal(acp_turn_update(t, u), 0);
        json_decref(u);
        u = json_pack("{ss ss ss}", "sessionUpdate", "notice", "severity", "info", "title", "n");
        assert_int_equal(acp_turn_update(t, u), 0); /* live-only: SHOULD NOT be replayed */
        json_decref(u);
        u = json_pack("{ss ss}", "sessionUpdate", "session_info_update", "title", text + 6);
        assert_int_equal(acp_turn_update(t, u), 0);
        json_decref(u);
        assert_int_equal(acp_turn_update_raw(t, "{\"sessionUpdate\":", 17, false), ACP_EINVAL);
        acp_turn_end(t, "end_turn");
    } else if (text && sscanf(text, "flood %d", &n) == 1) {
        x->e->flood_left = n;
        acp_turn_on_writable(t, flood_more, x);
    } else if (text && !strcmp(text, "call")) {
        /* fs/read_text_file was not advertised by the client: refused before anything is sent */
        assert_int_equal(
            acp_turn_call(t, "fs/read_text_file", json_pack("{ss}", "path", "/x"), call_cb, x),
            ACP_ENOTSUP);
        x->e->call_rc = acp_turn_call(
            t, "session/request_permission",
            json_pack("{s{ss} s[]}", "toolCall", "toolCallId", "t1", "options"), call_cb, x);
        x->e->held = t;
    } else if (text && !strcmp(text, "fail")) {
        acp_turn_fail(t, ACP_RPC_INTERNAL_ERROR, "engine broke");
    } else {
        acp_turn_end(t, "end_turn");
    }
}

static void engine_cancel(acp_turn *t, void *user)
{
    h *x = user;
    x->e->cancels++;
    /* Still valid here, also after a store failure answered the request (ASan checks). */
    if (x->e->held == t)
        assert_non_null(
            json_string_value(json_object_get(json_array_get(x->e->held_prompt, 0), "text")));
    if (x->e->held == t) x->e->held = NULL;
    if (x->e->cancel_fails)
        acp_turn_fail(t, ACP_RPC_INTERNAL_ERROR, "exception while cancelling");
    else
        acp_turn_end(t, "cancelled");
}

static int setup(void **state)
{
    h *x = h_new("agent", sizeof(eng_state));
    x->ops.commit = failing_commit;
    x->ops.create = failing_create;
    x->ops.list = failing_list;
    fail_all = false;
    fail_commits = false;
    x->eng = (acp_engine){.struct_size = sizeof(acp_engine),
                          .name = "test-engine",
                          .version = "1",
                          .prompt = engine_prompt,
                          .cancel = engine_cancel,
                          .user = x};
    agent_start(x);
    *state = x;
    return 0;
}

static int teardown(void **state)
{
    h_free(*state);
    return 0;
}

/* --- requests ------------------------------------------------------------------------------- */

static void init(h *x)
{
    json_t *r = request(x, 1000, "initialize", "{\"protocolVersion\":1}");
    json_decref(r);
}

/* session/prompt with one text block, as request() (text needing no JSON escaping). */
static json_t *prompt(h *x, int id, const char *sid, const char *text)
{
    char p[1024];
    snprintf(p, sizeof p, "{\"sessionId\":\"%s\",\"prompt\":[{\"type\":\"text\",\"text\":\"%s\"}]}",
             sid, text);
    return request(x, id, "session/prompt", p);
}

/* How many sessions a session/list answer (last of msgs) holds. */
static size_t listed(json_t *msgs)
{
    return json_array_size(json_object_get(result_of(msgs), "sessions"));
}

/* Creates a session in x->dir; the id is written to id (80 bytes). */
static void new_session(h *x, char *id)
{
    char p[400];
    snprintf(p, sizeof p, "{\"cwd\":\"%s\",\"mcpServers\":[]}", x->dir);
    json_t *r = request(x, 1001, "session/new", p);
    const char *sid = jstr(result_of(r), "sessionId");
    assert_non_null(sid);
    snprintf(id, 80, "%s", sid);
    json_decref(r);
}

/* Conversation updates as "kind|messageId|text" lines (other kinds as "kind"), with consecutive
 * text chunks of one message (same kind, same non-null messageId) joined: the form in which a
 * live turn and its replay must agree. */
static char *normal_form(json_t *updates)
{
    static const char *const conv[] = {"user_message_chunk",  "agent_message_chunk",
                                       "agent_thought_chunk", "tool_call",
                                       "tool_call_update",    "plan"};
    acp_buf b = {0};
    const char *prev_kind = NULL, *prev_mid = NULL;
    for (size_t i = 0; i < json_array_size(updates); i++) {
        json_t *u = json_array_get(updates, i);
        const char *kind = json_string_value(json_object_get(u, "sessionUpdate"));
        bool keep = false;
        for (size_t k = 0; k < sizeof conv / sizeof *conv; k++) keep |= !strcmp(kind, conv[k]);
        if (!keep) continue;
        const char *mid = json_string_value(json_object_get(u, "messageId"));
        const char *txt = json_string_value(json_object_get(json_object_get(u, "content"), "text"));
        if (txt && mid && prev_mid && !strcmp(kind, prev_kind) && !strcmp(mid, prev_mid)) {
            b.len--; /* the newline */
        } else {
            acp_buf_printf(&b, "%s|%s|", kind, mid ? mid : "-");
        }
        if (txt) acp_buf_printf(&b, "%s", txt);
        acp_buf_putc(&b, '\n');
        prev_kind = kind;
        prev_mid = txt ? mid : NULL;
    }
    acp_buf_cstr(&b);
    return b.data;
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

    r = prompt(x, 6, "sess_nope", "hi");
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
    char id[80];
    new_session(x, id);
    send_prompt(x, 5, id, "emit 3");
    /* The engine ran inside recv: its updates and the response exist but are held. */
    assert_int_equal(acp_conn_out_len(acp_agent_conn(x->a)), 0);
    assert_int_equal(stored(x, id), 0);
    acp_agent_flush(x->a);
    assert_int_equal(stored(x, id), 2); /* the user message + the 3 chunks as one */
    collect(x);
    assert_int_equal(count_updates(x->msgs, "agent_message_chunk"), 3);
    assert_int_equal(find_response(x, 5), 3); /* after the three updates */
}

/* A failed commit: nothing held leaks, the prompt is answered with the store error. */
static void test_commit_failure(void **state)
{
    h *x = *state;
    init(x);
    char id[80];
    new_session(x, id);
    fail_commits = true;
    json_t *r = prompt(x, 5, id, "emit 5");
    assert_int_equal(count_updates(r, NULL), 0);
    assert_int_equal(error_code(r), ACP_RPC_INTERNAL_ERROR);
    assert_string_equal(error_message(r), "session store unavailable: disk I/O error (injected)");
    json_decref(r);
    assert_int_equal(stored(x, id), 0);

    /* A turn still running when its commit fails is answered at once and told to stop. */
    r = prompt(x, 6, id, "wait");
    assert_int_equal(error_code(r), ACP_RPC_INTERNAL_ERROR);
    assert_int_equal(count_updates(r, NULL), 0);
    json_decref(r);
    assert_null(x->e->held);
    assert_int_equal(x->e->cancels, 1);

    fail_commits = false;
    r = prompt(x, 7, id, "emit 2");
    assert_int_equal(count_updates(r, "agent_message_chunk"), 2);
    assert_string_equal(stop_reason(last(r)), "end_turn");
    json_decref(r);
    /* Nothing of the failed turns' merged text waited for this commit: only this turn is kept. */
    json_t *st = history(x, id);
    assert_int_equal(json_array_size(st), 2);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_array_get(st, 1), "content"), "text")),
                        "c0c1");
    json_decref(st);
}

/* load replays the whole history, in order, before its response; resume replays nothing. */
static void test_replay_order(void **state)
{
    h *x = *state;
    init(x);
    char id[80], p[400];
    new_session(x, id);
    for (int i = 0; i < 3; i++) {
        char text[16];
        snprintf(text, sizeof text, "emit %d", 2 + i);
        json_decref(prompt(x, 10 + i, id, text));
    }
    /* A fresh agent on the same store, like a restarted process. */
    agent_stop(x);
    agent_start(x);
    init(x);
    snprintf(p, sizeof p, "{\"sessionId\":\"%s\",\"cwd\":\"%s\",\"mcpServers\":[]}", id, x->dir);
    json_t *r = request(x, 20, "session/load", p);
    assert_true(json_is_object(json_object_get(last(r), "result")));
    /* user, c0 c1, user, c0 c1 c2, user, c0..c3: each message's chunks coalesced */
    const char *want[] = {"emit 2", "c0c1", "emit 3", "c0c1c2", "emit 4", "c0c1c2c3"};
    size_t n = sizeof want / sizeof *want;
    /* then the session's title and last activity (not history), then the response */
    assert_int_equal(json_array_size(r), n + 2);
    json_t *info = update_at(r, n);
    assert_string_equal(json_string_value(json_object_get(info, "sessionUpdate")),
                        "session_info_update");
    assert_int_equal(strlen(json_string_value(json_object_get(info, "updatedAt"))), 24);
    for (size_t i = 0; i < n; i++) {
        json_t *u = update_at(r, i);
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
    send_prompt(x, 5, id, "wait");
    turn(x);
    assert_non_null(x->e->held);
    /* A second prompt on the same session while one runs: refused. */
    json_t *r = prompt(x, 6, id, "emit 1");
    assert_int_equal(error_code(r), ACP_RPC_INVALID_REQUEST);
    json_decref(r);
    /* session/cancel: the engine fails while cancelling, the answer is still `cancelled`. */
    x->e->cancel_fails = true;
    send_line(
        x, "{\"jsonrpc\":\"2.0\",\"method\":\"session/cancel\",\"params\":{\"sessionId\":\"%s\"}}",
        id);
    for (int i = 0; i < 10 && find_response(x, 5) < 0; i++) turn(x);
    int at = find_response(x, 5);
    assert_true(at >= 0);
    assert_string_equal(stop_reason(json_array_get(x->msgs, at)), "cancelled");
    x->e->cancel_fails = false;

    /* close during a running turn: the prompt answers cancelled before close answers. */
    send_prompt(x, 7, id, "wait");
    turn(x);
    snprintf(p, sizeof p, "{\"sessionId\":\"%s\"}", id);
    r = request(x, 8, "session/close", p);
    at = find_in(r, 7);
    assert_true(at >= 0 && at < (int)json_array_size(r) - 1);
    assert_string_equal(stop_reason(json_array_get(r, at)), "cancelled");
    json_decref(r);
    assert_int_equal(acp_agent_session_count(x->a), 0);
    /* Closed, not deleted: still listed; prompts now get -32002. */
    r = request(x, 9, "session/list", "{}");
    assert_int_equal(listed(r), 1);
    json_decref(r);
    r = prompt(x, 10, id, "x");
    assert_int_equal(error_code(r), ACP_RPC_NOT_FOUND);
    json_decref(r);
    /* delete: gone from the list and from disk. */
    snprintf(p, sizeof p, "{\"sessionId\":\"%s\"}", id);
    json_decref(request(x, 11, "session/delete", p));
    r = request(x, 12, "session/list", "{}");
    assert_int_equal(listed(r), 0);
    json_decref(r);
    acp_store_session s = ACP_STORE_SESSION_INIT;
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
    assert_int_equal(listed(r), 0);
    json_decref(r);
}

/* session_info_update is recorded for session/list; live-only kinds (available commands, a
 * notice: "SHOULD NOT be replayed") are not history. */
static void test_info_not_history(void **state)
{
    h *x = *state;
    json_decref(
        request(x, 1, "initialize",
                "{\"protocolVersion\":1,\"clientCapabilities\":{\"session\":{\"notices\":{}}}}"));
    char id[80];
    new_session(x, id);
    json_t *r = prompt(x, 2, id, "title Mon projet \u00e9t\u00e9");
    assert_int_equal(count_updates(r, "session_info_update"), 1);
    assert_int_equal(count_updates(r, "available_commands_update"), 1);
    assert_int_equal(count_updates(r, "notice"), 1);
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
    json_t *r = prompt(x, id, sid, text);
    buf[0] = '\0';
    for (size_t i = 0; i < json_array_size(r); i++) {
        json_t *u = update_at(r, i);
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
    char id[80], want[PATH_MAX + 16], link[600];
    new_session(x, id);
    snprintf(want, sizeof want, "%s/new.txt", x->real);
    assert_string_equal(prompt_reply(x, 2, id, "resolve new.txt"), want);
    assert_string_equal(prompt_reply(x, 3, id, "resolve ../escape.txt"), "refused");
    assert_string_equal(prompt_reply(x, 4, id, "resolve /etc/passwd"), "refused");
    snprintf(link, sizeof link, "%s/out", x->dir);
    assert_int_equal(symlink("/etc", link), 0);
    assert_string_equal(prompt_reply(x, 5, id, "resolve out/passwd"), "refused");
    /* Opening goes through the same check; what it cannot open it says why. */
    snprintf(want, sizeof want, "%s/here.txt", x->dir);
    FILE *f = fopen(want, "w");
    assert_non_null(f);
    fclose(f);
    assert_string_equal(prompt_reply(x, 6, id, "open here.txt"), "opened");
    assert_string_equal(prompt_reply(x, 7, id, "open out/passwd"), "refused");
    assert_string_equal(prompt_reply(x, 8, id, "open /etc/passwd"), "refused");
    assert_non_null(strstr(prompt_reply(x, 9, id, "open missing.txt"), "missing.txt"));
}

/* Shutdown (EOF in acp-agent): the running turn answers cancelled, sessions close, on_done. */
static void test_shutdown(void **state)
{
    h *x = *state;
    init(x);
    char id[80];
    new_session(x, id);
    send_prompt(x, 5, id, "wait");
    turn(x);
    assert_non_null(x->e->held);
    acp_agent_shutdown(x->a);
    turn(x);
    int at = find_response(x, 5);
    assert_true(at >= 0);
    assert_string_equal(stop_reason(json_array_get(x->msgs, at)), "cancelled");
    assert_int_equal(acp_agent_session_count(x->a), 0);
    assert_null(x->e->held);
    assert_int_equal(stored(x, id), 2); /* user message + "waiting": committed on the way out */
}

/* A producer that respects acp_turn_writable() never lets unsent output grow much past the
 * high-water mark, however much it has to send; draining lets it finish. */
static void test_backpressure(void **state)
{
    h *x = *state;
    init(x);
    char id[80];
    new_session(x, id);
    send_prompt(x, 5, id, "flood 640"); /* 40 MiB to send */
    acp_conn *c = acp_agent_conn(x->a);
    for (int i = 0; i < 50; i++) {
        uv_run(&x->loop, UV_RUN_NOWAIT);
        acp_agent_flush(x->a);
    }
    size_t queued = acp_conn_out_len(c);
    assert_true(queued >= (4u << 20));                         /* it filled the output... */
    assert_true(queued < (4u << 20) + 2 * FLOOD_CHUNK + 4096); /* ...and stopped there */
    assert_true(x->e->flood_left > 0);
    /* Drain like a reader would; the response ends the output. */
    size_t total = 0;
    bool answered = false;
    for (int i = 0; i < 10000 && !answered; i++) {
        uv_run(&x->loop, UV_RUN_NOWAIT);
        acp_agent_flush(x->a);
        size_t n;
        char *out = acp_conn_out_take(c, &n);
        total += n;
        /* The output is not NUL-terminated: look only at its last bytes. */
        size_t tail = n < 60 ? n : 60;
        answered = out && n > 40 && memmem(out + n - tail, tail, "\"id\":5,", 7);
        free(out);
    }
    assert_true(answered);
    assert_int_equal(x->e->flood_left, 0);
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
    assert_int_equal(listed(r), 0);
    json_decref(r);
}

/* Cancelling a turn sends $/cancel_request for its outstanding client requests. */
static void test_cancel_cancels_calls(void **state)
{
    h *x = *state;
    init(x);
    char id[80];
    new_session(x, id);
    send_prompt(x, 5, id, "call");
    turn(x);
    assert_int_equal(x->e->call_rc, 0);
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
    assert_true(find_cancel(x->msgs, call_id) >= 0);
    int at = find_response(x, 5);
    assert_true(at >= 0);
    assert_string_equal(stop_reason(json_array_get(x->msgs, at)), "cancelled");
    /* The turn ended, so the late answer reaches nobody. */
    send_line(
        x,
        "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"error\":{\"code\":-32800,\"message\":\"cancelled\"}}",
        (long long)call_id);
    turn(x);
    assert_false(x->e->call_done);
}

/* session/close cancels "as if session/cancel had been called" (000 session-setup): the engine
 * is told, the turn's client requests get $/cancel_request, and the prompt answers cancelled,
 * all before close answers. */
static void test_close_cancels_calls(void **state)
{
    h *x = *state;
    init(x);
    char id[80], p[120];
    new_session(x, id);
    send_prompt(x, 5, id, "call");
    turn(x);
    assert_int_equal(x->e->call_rc, 0);
    json_int_t call_id = json_integer_value(json_object_get(last(x->msgs), "id"));
    snprintf(p, sizeof p, "{\"sessionId\":\"%s\"}", id);
    json_t *r = request(x, 6, "session/close", p);
    assert_true(json_is_object(json_object_get(last(r), "result")));
    int cancel = find_cancel(r, call_id), at = find_in(r, 5);
    assert_true(cancel >= 0);
    assert_true(at >= 0 && at < (int)json_array_size(r) - 1);
    assert_string_equal(stop_reason(json_array_get(r, at)), "cancelled");
    json_decref(r);
    assert_int_equal(x->e->cancels, 1);
    assert_int_equal(acp_agent_session_count(x->a), 0);
}

/* A history longer than one replay step goes out over several loop turns, in order, and the
 * response comes last. Loading a session that is open here restarts it. */
static void test_replay_big(void **state)
{
    h *x = *state;
    init(x);
    char id[80], p[800];
    new_session(x, id);
    json_decref(prompt(x, 2, id, "big 12"));
    snprintf(p, sizeof p,
             "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"session/load\",\"params\":"
             "{\"sessionId\":\"%s\",\"cwd\":\"%s\",\"mcpServers\":[]}}",
             id, x->dir);
    send_line(x, "%s", p);
    int turns = 0;
    for (; turns < 100 && find_response(x, 3) < 0; turns++) turn(x);
    assert_true(turns > 2);
    int at = find_response(x, 3);
    assert_int_equal(at, 14); /* the user message, 12 chunks and the session info before it */
    for (int i = 1; i <= 12; i++) {
        json_t *u = update_at(x->msgs, i);
        const char *txt = json_string_value(json_object_get(json_object_get(u, "content"), "text"));
        assert_int_equal(strlen(txt), 512 * 1024);
        assert_int_equal(txt[0], 'a' + (i - 1) % 26);
    }
    assert_int_equal(acp_agent_session_count(x->a), 1);
}

/* Consecutive text chunks of one message are stored as one update; nothing else is merged,
 * and the replay tells the same conversation as the live turn, in order. */
static void test_coalesce(void **state)
{
    h *x = *state;
    init(x);
    char id[80], p[400];
    new_session(x, id);
    json_t *r = prompt(x, 2, id, "mix");
    /* live: one notification per chunk, as sent */
    assert_int_equal(count_updates(r, "agent_message_chunk"), 12);
    assert_int_equal(count_updates(r, "agent_thought_chunk"), 2);
    json_t *live = updates_of(r);
    json_decref(r);

    json_t *st = history(x, id);
    char *got = normal_form(st), *want_live = normal_form(live);
    /* the stored rows themselves: merged only within one kind and messageId, never across
     * another history update or a chunk without messageId */
    const char *rows[][3] = {
        {"user_message_chunk", NULL, "mix"},
        {"agent_message_chunk", "msg_A", "a1\"a2\u00e9\n"},
        {"tool_call", NULL, NULL},
        {"agent_message_chunk", "msg_A", "a3a4"},
        {"agent_message_chunk", "msg_B", "b1"},
        {"agent_thought_chunk", "msg_B", "t1t2"},
        {"agent_message_chunk", "msg_B", "b2"},
        {"agent_message_chunk", NULL, "n1"},
        {"agent_message_chunk", NULL, "n2"},
        {"agent_message_chunk", "msg_A", "a5a6"},
        {"agent_message_chunk", "msg_A", "a7"},
        {"agent_message_chunk", "msg_A", "a8"},
    };
    size_t nrows = sizeof rows / sizeof *rows;
    assert_int_equal(json_array_size(st), nrows);
    for (size_t i = 0; i < nrows; i++) {
        json_t *u = json_array_get(st, i);
        assert_string_equal(json_string_value(json_object_get(u, "sessionUpdate")), rows[i][0]);
        const char *mid = json_string_value(json_object_get(u, "messageId"));
        const char *txt = json_string_value(json_object_get(json_object_get(u, "content"), "text"));
        if (rows[i][1]) assert_string_equal(mid, rows[i][1]);
        if (rows[i][2] && i > 0) assert_string_equal(txt, rows[i][2]);
        if (i > 0 && rows[i][2]) /* exactly the fast path's shape: nothing lost or added */
            assert_int_equal(json_object_size(u), mid ? 3 : 2);
    }
    /* the live turn's conversation, the user message first */
    assert_string_equal(strchr(got, '\n') + 1, want_live);
    /* session/load replays exactly what is stored */
    snprintf(p, sizeof p, "{\"sessionId\":\"%s\",\"cwd\":\"%s\",\"mcpServers\":[]}", id, x->dir);
    r = request(x, 3, "session/load", p);
    json_t *rep = updates_of(r);
    json_array_remove(rep, json_array_size(rep) - 1); /* the session info after the replay */
    assert_true(json_equal(rep, st));
    json_decref(rep);
    json_decref(r);
    free(got);
    free(want_live);
    json_decref(st);
    json_decref(live);
}

/* A long stream is stored as few updates, none with more than AGENT_COALESCE_MAX bytes of text,
 * whose texts join to what the client received; two sessions streaming in one loop turn keep
 * their own messages. */
static void test_coalesce_stream(void **state)
{
    h *x = *state;
    init(x);
    char a[80], b[80], p[400];
    new_session(x, a);
    new_session(x, b);
    /* both prompts arrive in one read: their chunks share a loop turn and a commit */
    snprintf(
        p, sizeof p,
        "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"session/prompt\",\"params\":"
        "{\"sessionId\":\"%s\",\"prompt\":[{\"type\":\"text\",\"text\":\"stream 12000 200\"}]}}",
        a);
    char q[400];
    snprintf(q, sizeof q,
             "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"session/prompt\",\"params\":"
             "{\"sessionId\":\"%s\",\"prompt\":[{\"type\":\"text\",\"text\":\"emit 30\"}]}}",
             b);
    send_line(x, "%s\n%s", p, q);
    for (int i = 0; i < 100 && (find_response(x, 5) < 0 || find_response(x, 6) < 0); i++) turn(x);
    assert_true(find_response(x, 5) >= 0 && find_response(x, 6) >= 0);

    for (int k = 0; k < 2; k++) {
        const char *sid = k ? b : a;
        json_t *live = json_array();
        for (size_t i = 0; i < json_array_size(x->msgs); i++) {
            json_t *m = json_array_get(x->msgs, i);
            const char *s =
                json_string_value(json_object_get(json_object_get(m, "params"), "sessionId"));
            json_t *u = json_object_get(json_object_get(m, "params"), "update");
            if (s && !strcmp(s, sid) && u) json_array_append(live, u);
        }
        assert_int_equal(count_updates(x->msgs, NULL), 12000 + 30);
        json_t *st = history(x, sid);
        /* fewer stored updates than chunks sent */
        size_t nlive = json_array_size(live), nst = json_array_size(st);
        assert_int_equal(nlive, k ? 30 : 12000);
        assert_true(nst < (k ? 3u : 10u)); /* the user message and a few merged updates */
        assert_true(nst >= (k ? 2u : 4u)); /* 2.4 MB of text cannot fit in one */
        const char *mid = json_string_value(json_object_get(json_array_get(live, 0), "messageId"));
        acp_buf want = {0}, have = {0};
        for (size_t i = 0; i < nlive; i++)
            acp_buf_printf(&want, "%s",
                           json_string_value(json_object_get(
                               json_object_get(json_array_get(live, i), "content"), "text")));
        for (size_t i = 1; i < nst; i++) {
            json_t *u = json_array_get(st, i);
            assert_string_equal(json_string_value(json_object_get(u, "messageId")), mid);
            const char *txt =
                json_string_value(json_object_get(json_object_get(u, "content"), "text"));
            assert_true(strlen(txt) <= (1u << 20));
            acp_buf_printf(&have, "%s", txt);
        }
        assert_int_equal(have.len, want.len);
        assert_memory_equal(have.data, want.data, want.len);
        acp_buf_free(&want);
        acp_buf_free(&have);
        json_decref(st);
        json_decref(live);
    }
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
        cmocka_unit_test_setup_teardown(test_close_cancels_calls, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_down, setup, teardown),
        cmocka_unit_test_setup_teardown(test_backpressure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_info_not_history, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resolve_path, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shutdown, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replay_big, setup, teardown),
        cmocka_unit_test_setup_teardown(test_coalesce, setup, teardown),
        cmocka_unit_test_setup_teardown(test_coalesce_stream, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
