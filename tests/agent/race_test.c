/* SPDX-License-Identifier: Apache-2.0 */
/* Two processes on one store (issue 13, item 1): the agent under test is A, driven in-process
 * through harness.h; B is a second handle on the same SQLite file, as another acp-agent would
 * hold one. B deletes a session A has open, then A writes for it: the prompt (or set_mode,
 * set_config_option, the engine's own change) is answered -32002 "deleted elsewhere", nothing of
 * it is shown as stored, nothing brings the session back, and A closes it through its ordinary
 * close (the engine hears cancel and session_free). Also: a delete during a load's replay, a
 * batch shared with a session that still exists, and many prompts while B keeps deleting. */
#include "harness.h"

/* --- the engine ------------------------------------------------------------------------------ */

struct eng_state {
    acp_turn *held; /* a "wait" turn, kept running */
    int cancels, frees, readies;
    int rc; /* what the engine's last store-backed call returned */
    int next_id;
};

static const acp_mode modes[] = {{"ask", "Ask", NULL}, {"code", "Code", NULL}};
static const acp_config_value models[] = {{.value = "small", .name = "Small"},
                                          {.value = "large", .name = "Large"}};
static const acp_config_option options[] = {
    {.id = "model", .name = "Model", .category = "model", .values = models, .nvalues = 2}};

static void emit(acp_turn *t, int n)
{
    char mid[48], c[16];
    acp_agent_new_id("msg_", mid);
    for (int i = 0; i < n; i++) {
        snprintf(c, sizeof c, "c%d", i);
        acp_turn_text(t, NULL, mid, c, strlen(c));
    }
}

static acp_store *other; /* B: another process's handle on A's store */

static void engine_prompt(acp_turn *t, const json_t *prompt, void *user)
{
    h *x = user;
    const char *text = json_string_value(json_object_get(json_array_get(prompt, 0), "text"));
    int n;
    /* "del:": B deletes the session once the turn runs (the prompt's own check of the lease
     * passed), so the engine's write below is what finds it gone. */
    if (text && !strncmp(text, "del:", 4)) {
        assert_int_equal(acp_store_delete(other, acp_session_id(acp_turn_session(t))), 0);
        text += 4;
    }
    if (text && sscanf(text, "emit %d", &n) == 1) {
        emit(t, n);
        acp_turn_end(t, "end_turn");
    } else if (text && !strcmp(text, "wait")) {
        x->e->held = t;
    } else if (text && !strncmp(text, "title ", 6)) {
        json_t *u = json_pack("{ss ss}", "sessionUpdate", "session_info_update", "title", text + 6);
        x->e->rc = acp_turn_update(t, u);
        json_decref(u);
        acp_turn_end(t, "end_turn");
    } else if (text && !strncmp(text, "mode ", 5)) {
        x->e->rc = acp_session_set_mode(acp_turn_session(t), text + 5);
        emit(t, 1);
        acp_turn_end(t, "end_turn");
    } else {
        acp_turn_end(t, "end_turn");
    }
}

static void engine_cancel(acp_turn *t, void *user)
{
    h *x = user;
    x->e->cancels++;
    if (x->e->held == t) x->e->held = NULL;
    acp_turn_end(t, "cancelled");
}

static void engine_ready(acp_session *s, void *user)
{
    h *x = user;
    x->e->readies++;
}

static void engine_free(acp_session *s, void *user)
{
    h *x = user;
    x->e->frees++;
}

/* --- fixture --------------------------------------------------------------------------------- */

static int setup(void **state)
{
    h *x = h_new("race", sizeof(eng_state));
    x->eng = (acp_engine){.struct_size = sizeof(acp_engine),
                          .name = "race-engine",
                          .version = "1",
                          .modes = modes,
                          .nmodes = 2,
                          .default_mode = "code",
                          .config_options = options,
                          .nconfig_options = 1,
                          .prompt = engine_prompt,
                          .cancel = engine_cancel,
                          .session_ready = engine_ready,
                          .session_free = engine_free,
                          .user = x};
    agent_start(x);
    assert_int_equal(acp_store_open(x->db, &other), 0);
    json_decref(request(x, 1000, "initialize", "{\"protocolVersion\":1}"));
    *state = x;
    return 0;
}

static int teardown(void **state)
{
    acp_store_close(other);
    other = NULL;
    h_free(*state);
    return 0;
}

static int next_id(h *x)
{
    return ++x->e->next_id;
}

static void new_session(h *x, char *id)
{
    char p[400];
    snprintf(p, sizeof p, "{\"cwd\":\"%s\",\"mcpServers\":[]}", x->dir);
    json_t *r = request(x, next_id(x), "session/new", p);
    assert_non_null(jstr(result_of(r), "sessionId"));
    snprintf(id, 80, "%s", jstr(result_of(r), "sessionId"));
    json_decref(r);
}

static json_t *prompt(h *x, const char *sid, const char *text)
{
    char p[512];
    snprintf(p, sizeof p, "{\"sessionId\":\"%s\",\"prompt\":[{\"type\":\"text\",\"text\":\"%s\"}]}",
             sid, text);
    return request(x, next_id(x), "session/prompt", p);
}

static json_t *sid_request(h *x, const char *method, const char *sid, const char *more)
{
    char p[512];
    snprintf(p, sizeof p, "{\"sessionId\":\"%s\"%s}", sid, more);
    return request(x, next_id(x), method, p);
}

/* B deletes the session. */
static void delete_elsewhere(const char *sid)
{
    assert_int_equal(acp_store_delete(other, sid), 0);
}

/* msgs ends with -32002 for sid, "deleted elsewhere" when gone (else "not found": no longer
 * open here). */
static void assert_gone(const json_t *msgs, const char *sid, bool gone)
{
    assert_int_equal(error_code(msgs), ACP_RPC_NOT_FOUND);
    json_t *err = json_object_get(last(msgs), "error");
    assert_string_equal(jstr(json_object_get(err, "data"), "sessionId"), sid);
    const char *want = gone ? "deleted elsewhere" : "session not found";
    if (!strstr(error_message(msgs), want))
        fail_msg("error \"%s\" lacks \"%s\"", error_message(msgs), want);
}

/* A no longer has sid open, and nothing brought it back into the store. */
static void assert_closed(h *x, const char *sid)
{
    json_t *r = prompt(x, sid, "emit 1");
    assert_gone(r, sid, false);
    assert_int_equal(count_updates(r, NULL), 0);
    json_decref(r);
    r = sid_request(x, "session/close", sid, "");
    assert_int_equal(error_code(r), ACP_RPC_NOT_FOUND);
    json_decref(r);
    acp_store_session row = ACP_STORE_SESSION_INIT;
    assert_int_equal(acp_store_get(other, sid, &row), ACP_ENOTFOUND);
    assert_int_equal(acp_store_get(x->st, sid, &row), ACP_ENOTFOUND);
}

/* The request (sent, not waited for) that found sid deleted elsewhere, answered: -32002 and
 * not one update (none was stored); A has closed sid after it. */
static void expect_gone(h *x, int id, const char *sid)
{
    json_t *r = take_response(x, id);
    assert_gone(r, sid, true);
    assert_int_equal(count_updates(r, NULL), 0);
    json_decref(r);
    assert_closed(x, sid);
}

/* A new session in which B deletes before A's client prompts text: -32002, then closed. */
static void prompt_deleted(h *x, char *id, const char *text)
{
    new_session(x, id);
    if (strncmp(text, "del:", 4)) delete_elsewhere(id); /* else the engine deletes it */
    int pid = next_id(x);
    send_prompt(x, pid, id, text);
    expect_gone(x, pid, id);
}

/* A new session with a "wait" turn running in it; returns the prompt's id. */
static int held_turn(h *x, char *id)
{
    new_session(x, id);
    int pid = next_id(x);
    send_prompt(x, pid, id, "wait");
    turn(x);
    assert_non_null(x->e->held);
    return pid;
}

/* The code of a response message. */
static int code_of(const json_t *m)
{
    return (int)json_integer_value(json_object_get(json_object_get(m, "error"), "code"));
}

/* --- tests ----------------------------------------------------------------------------------- */

/* The case: A opens S, B deletes S, A prompts S. Today's answer was end_turn with the
 * updates streamed and nothing stored; now -32002, no update shown, S closed on A. */
static void test_prompt_after_delete(void **state)
{
    h *x = *state;
    char id[80];
    new_session(x, id);
    json_t *r = prompt(x, id, "emit 2");
    assert_string_equal(stop_reason(last(r)), "end_turn");
    json_decref(r);
    assert_int_equal(stored(x, id), 2);

    delete_elsewhere(id);
    int pid = next_id(x);
    send_prompt(x, pid, id, "emit 3");
    expect_gone(x, pid, id);
    assert_int_equal(acp_agent_session_count(x->a), 0);
    assert_int_equal(x->e->frees, 1);
}

/* A turn that runs across the delete: its next commit fails, the prompt is answered -32002 at
 * once, the engine hears cancel, the session closes; what the engine sends afterwards is
 * refused and never shown. A turn that ends with nothing to commit is -32002 as well. */
static void test_running_turn(void **state)
{
    h *x = *state;
    char id[80];
    int pid = held_turn(x, id);
    assert_int_equal(stored(x, id), 1); /* the user message */
    delete_elsewhere(id);
    assert_int_equal(acp_turn_text(x->e->held, NULL, "m1", "after", 5), 0); /* the commit knows */
    expect_gone(x, pid, id);
    assert_null(x->e->held);
    assert_int_equal(x->e->cancels, 1);
    assert_int_equal(x->e->frees, 1);

    /* one that ends without a word after the delete: no commit, but not end_turn either */
    pid = held_turn(x, id);
    delete_elsewhere(id);
    acp_turn *t = x->e->held;
    x->e->held = NULL;
    assert_int_equal(acp_turn_end(t, "end_turn"), 0);
    expect_gone(x, pid, id);
    assert_int_equal(x->e->frees, 2);
}

/* The client's own changes after the delete: set_mode and set_config_option store the state
 * (acp_store_set_state): -32002, nothing announced, the session closed; a turn running in it
 * is answered -32002 too. */
static void test_set_mode_config(void **state)
{
    h *x = *state;
    char id[80];
    new_session(x, id);
    delete_elsewhere(id);
    int mid = next_id(x);
    send_line(x,
              "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"session/set_mode\",\"params\":"
              "{\"sessionId\":\"%s\",\"modeId\":\"ask\"}}",
              mid, id);
    expect_gone(x, mid, id);
    assert_int_equal(x->e->frees, 1);

    int pid = held_turn(x, id);
    delete_elsewhere(id);
    int cid = next_id(x);
    send_line(x,
              "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"session/set_config_option\",\"params\":"
              "{\"sessionId\":\"%s\",\"configId\":\"model\",\"value\":\"large\"}}",
              cid, id);
    wait_response(x, cid);
    int at = find_response(x, pid);
    assert_true(at >= 0 && at < find_response(x, cid)); /* the prompt first, -32002 as well */
    assert_int_equal(code_of(json_array_get(x->msgs, (size_t)at)), ACP_RPC_NOT_FOUND);
    expect_gone(x, cid, id);
    assert_null(x->e->held);
    assert_int_equal(x->e->frees, 2);
}

/* A title (session_info_update, stored with acp_store_set_info) after the delete: the engine
 * gets ACP_ENOTFOUND, the client neither the update nor end_turn. */
static void test_title(void **state)
{
    h *x = *state;
    char id[80];
    prompt_deleted(x, id, "del:title lost");
    assert_int_equal(x->e->rc, ACP_ENOTFOUND);
}

/* The engine changing the mode itself (acp_session_set_mode) after the delete: ACP_ENOTFOUND,
 * no current_mode_update, and its turn answered -32002. */
static void test_engine_mode(void **state)
{
    h *x = *state;
    char id[80];
    prompt_deleted(x, id, "del:mode ask");
    assert_int_equal(x->e->rc, ACP_ENOTFOUND);
}

/* One commit holds both sessions' turns; only the deleted one fails: the other's updates and
 * end_turn go out and are stored. */
static void test_other_session_kept(void **state)
{
    h *x = *state;
    char gone[80], kept[80];
    new_session(x, gone);
    new_session(x, kept);
    delete_elsewhere(gone);
    int p1 = next_id(x), p2 = next_id(x);
    send_prompt(x, p1, gone, "emit 2");
    send_prompt(x, p2, kept, "emit 2");
    wait_response(x, p1);
    wait_response(x, p2);
    json_t *r1 = json_array_get(x->msgs, (size_t)find_response(x, p1));
    json_t *r2 = json_array_get(x->msgs, (size_t)find_response(x, p2));
    assert_int_equal(code_of(r1), ACP_RPC_NOT_FOUND);
    assert_string_equal(stop_reason(r2), "end_turn");
    for (size_t i = 0; i < json_array_size(x->msgs); i++) {
        json_t *m = json_array_get(x->msgs, i);
        if (update_at(x->msgs, i)) assert_string_equal(jstr(params_of(m), "sessionId"), kept);
    }
    assert_int_equal(count_updates(x->msgs, "agent_message_chunk"), 2);
    json_array_clear(x->msgs);
    assert_int_equal(stored(x, kept), 2);
    assert_int_equal(acp_agent_session_count(x->a), 1);
    assert_closed(x, gone);
}

/* A load replaying a history longer than one step while B deletes the session: the load is
 * answered -32002 (what was replayed so far is not a session), and nothing stays open. */
static void test_delete_during_load(void **state)
{
    h *x = *state;
    char id[80];
    new_session(x, id);
    json_decref(sid_request(x, "session/close", id, ""));
    /* 3 MiB of history, more than one replay step (AGENT_REPLAY_STEP), written by B */
    size_t cap = 600 * 1024;
    char *u = malloc(cap);
    assert_non_null(u);
    for (int i = 0; i < 6; i++) {
        int n = snprintf(u, cap,
                         "{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{\"type\":"
                         "\"text\",\"text\":\"%0*d\"}}",
                         512 * 1024, i);
        assert_int_equal(acp_store_append(other, id, 0, u, (size_t)n), 0);
    }
    free(u);
    assert_int_equal(acp_store_commit(other, NULL), 0);

    char p[512];
    snprintf(p, sizeof p, "{\"sessionId\":\"%s\",\"cwd\":\"%s\",\"mcpServers\":[]}", id, x->dir);
    int lid = next_id(x);
    send_line(x, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"session/load\",\"params\":%s}", lid,
              p);
    for (int i = 0; i < 100 && count_updates(x->msgs, NULL) == 0; i++) turn(x);
    size_t first = count_updates(x->msgs, NULL);
    assert_true(first > 0 && first < 6);
    assert_true(find_response(x, lid) < 0);
    delete_elsewhere(id);
    json_t *r = take_response(x, lid);
    assert_gone(r, id, true);
    assert_true(count_updates(r, NULL) < 6);
    json_decref(r);
    assert_int_equal(acp_agent_session_count(x->a), 0);
    assert_closed(x, id);
}

/* Not a race: A's own client deletes a session whose turn's last output is still held. It is
 * committed first, so the prompt answers cancelled, not "deleted elsewhere". */
static void test_own_delete(void **state)
{
    h *x = *state;
    char id[80];
    int pid = held_turn(x, id);
    assert_int_equal(acp_turn_text(x->e->held, NULL, "m", "held", 4), 0);
    json_t *r = sid_request(x, "session/delete", id, "");
    assert_true(json_is_object(result_of(r)));
    int at = find_in(r, pid);
    assert_true(at >= 0);
    assert_string_equal(stop_reason(json_array_get(r, (size_t)at)), "cancelled");
    json_decref(r);
    assert_int_equal(x->e->frees, 1);
    acp_store_session row = ACP_STORE_SESSION_INIT;
    assert_int_equal(acp_store_get(other, id, &row), ACP_ENOTFOUND);
}

/* A load (or resume) of a session A has open, after B deleted it: -32002, and the open one
 * is closed too. */
static void test_load_open_deleted(void **state)
{
    h *x = *state;
    char id[80], p[512];
    new_session(x, id);
    delete_elsewhere(id);
    snprintf(p, sizeof p, "{\"sessionId\":\"%s\",\"cwd\":\"%s\",\"mcpServers\":[]}", id, x->dir);
    json_t *r = request(x, next_id(x), "session/resume", p);
    assert_int_equal(error_code(r), ACP_RPC_NOT_FOUND);
    json_decref(r);
    turn(x);
    assert_int_equal(x->e->frees, 1);
    assert_int_equal(acp_agent_session_count(x->a), 0);
    assert_closed(x, id);
}

/* The 60 prompts while B deletes six times, reduced: six sessions, ten prompts each, B
 * deletes each after a different number of them. Every prompt before the delete is end_turn
 * and stored, the first after it -32002 "deleted elsewhere", the rest -32002 (closed); a
 * session B leaves alone, prompted throughout, keeps all of its history. */
static void test_prompts_while_deleting(void **state)
{
    h *x = *state;
    char keep[80];
    new_session(x, keep);
    int kept = 0;
    for (int round = 0; round < 6; round++) {
        char id[80];
        new_session(x, id);
        int cut = 1 + round;
        for (int i = 0; i < 10; i++) {
            if (i == cut) delete_elsewhere(id);
            json_t *r = prompt(x, id, "emit 2");
            if (i < cut) {
                assert_string_equal(stop_reason(last(r)), "end_turn");
                assert_int_equal(stored(x, id), 2 * (i + 1));
            } else {
                assert_gone(r, id, i == cut);
                assert_int_equal(count_updates(r, NULL), 0);
            }
            json_decref(r);
            r = prompt(x, keep, "emit 1");
            assert_string_equal(stop_reason(last(r)), "end_turn");
            json_decref(r);
            kept++;
        }
        assert_closed(x, id);
    }
    assert_int_equal(stored(x, keep), 2 * kept);
    assert_int_equal(acp_agent_session_count(x->a), 1);
    assert_int_equal(x->e->frees, 6);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_prompt_after_delete), T(test_running_turn),
        T(test_set_mode_config),     T(test_title),
        T(test_engine_mode),         T(test_other_session_kept),
        T(test_delete_during_load),  T(test_load_open_deleted),
        T(test_own_delete),          T(test_prompts_while_deleting),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
