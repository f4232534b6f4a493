/* SPDX-License-Identifier: Apache-2.0 */
/* Subagent sessions (unstable) in-process through harness.h: an engine that makes children
 * (acp_session_subagent_new), streams into them and reports their state; the gates (the
 * client's capability, the agent's switch), the order on the wire, the store rows, the
 * restrictions on a child, cancel, close and delete with the parent, and the replay of a
 * parent's load after a restart. */
#include "harness.h"

struct eng_state {
    acp_session *child; /* the last child made */
    int make_rc;        /* what acp_session_subagent_new returned */
    int cancels;        /* engine.subagent_cancel calls */
    int frees;          /* engine.session_free calls for children */
};

static void engine_prompt(acp_turn *t, const json_t *prompt, void *user)
{
    h *x = user;
    acp_session *s = acp_turn_session(t);
    const char *text = json_string_value(json_object_get(json_array_get(prompt, 0), "text"));
    if (!strcmp(text, "spawn")) {
        json_t *patch = J("{'title':'helper','capabilities':{'cancel':{}},"
                          "'state':{'state':'running'}}");
        x->e->make_rc = acp_session_subagent_new(s, patch, &x->e->child);
        json_decref(patch);
        if (!x->e->make_rc) {
            json_t *u = J("{'sessionUpdate':'agent_message_chunk','content':{'type':'text',"
                          "'text':'child says hi'}}");
            assert_int_equal(acp_session_update(x->e->child, u), 0);
            json_decref(u);
            patch = J("{'state':{'state':'idle','stopReason':'end_turn'}}");
            assert_int_equal(acp_session_subagent_update(x->e->child, patch), 0);
            json_decref(patch);
            assert_ptr_equal(acp_session_parent(x->e->child), s);
        }
    } else if (!strcmp(text, "many")) { /* more children than a session/list page holds */
        for (int i = 0; i < 60; i++) {
            acp_session *c = NULL;
            assert_int_equal(acp_session_subagent_new(s, NULL, &c), 0);
        }
    } else if (!strcmp(text, "nocancel")) {
        json_t *patch = J("{'capabilities':null}");
        assert_int_equal(acp_session_subagent_update(x->e->child, patch), 0);
        json_decref(patch);
    }
    json_t *u = J("{'sessionUpdate':'agent_message_chunk','content':{'type':'text','text':'ok'}}");
    acp_turn_update(t, u);
    json_decref(u);
    acp_turn_end(t, "end_turn");
}

static void engine_cancel(acp_turn *t, void *user)
{
    acp_turn_end(t, "cancelled");
}

static void subagent_cancel(acp_session *child, void *user)
{
    h *x = user;
    assert_ptr_equal(child, x->e->child);
    x->e->cancels++;
}

static void session_free(acp_session *s, void *user)
{
    h *x = user;
    if (acp_session_parent(s) || s == x->e->child) x->e->frees++;
}

static bool fail_create; /* the store refuses new rows */

static int failing_create(acp_store *st, const acp_store_session *s, const char *holder,
                          unsigned ttl_ms)
{
    if (fail_create) return acp_error_set(ACP_ESTORE, "disk I/O error (injected)");
    return real_ops->create(st, s, holder, ttl_ms);
}

static int setup(void **state)
{
    h *x = h_new("subagent", sizeof(eng_state));
    fail_create = false;
    x->ops.create = failing_create;
    x->eng = (acp_engine){.struct_size = sizeof(acp_engine),
                          .name = "test-engine",
                          .version = "1",
                          .prompt = engine_prompt,
                          .cancel = engine_cancel,
                          .session_free = session_free,
                          .subagent_cancel = subagent_cancel,
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

static void init(h *x, bool subagents)
{
    json_decref(request(x, 1000, "initialize",
                        subagents ? "{\"protocolVersion\":1,\"clientCapabilities\":"
                                    "{\"subagents\":{}}}"
                                  : "{\"protocolVersion\":1}"));
}

static void new_session(h *x, char *id)
{
    char p[400];
    snprintf(p, sizeof p, "{\"cwd\":\"%s\",\"mcpServers\":[]}", x->dir);
    json_t *r = request(x, 1001, "session/new", p);
    snprintf(id, 80, "%s", jstr(result_of(r), "sessionId"));
    json_decref(r);
}

static json_t *prompt(h *x, int id, const char *sid, const char *text)
{
    char p[1024];
    snprintf(p, sizeof p, "{\"sessionId\":\"%s\",\"prompt\":[{\"type\":\"text\",\"text\":\"%s\"}]}",
             sid, text);
    return request(x, id, "session/prompt", p);
}

/* "<sessionId>:<sessionUpdate>" for each update of msgs, the parent's id written P and the
 * child's C, joined by spaces; the response as "R". */
static char *order(const json_t *msgs, const char *parent, const char *child)
{
    char *out = calloc(1, 4096);
    size_t i;
    json_t *m;
    json_array_foreach(msgs, i, m)
    {
        size_t l = strlen(out);
        if (!method_of(m)) {
            snprintf(out + l, 4096 - l, "%sR", l ? " " : "");
            continue;
        }
        json_t *p = params_of(m);
        const char *sid = jstr(p, "sessionId");
        const char *kind = jstr(json_object_get(p, "update"), "sessionUpdate");
        if (!strcmp(kind, "available_commands_update") || !strcmp(kind, "session_info_update"))
            continue;
        snprintf(out + l, 4096 - l, "%s%s:%s", l ? " " : "",
                 !strcmp(sid, parent)           ? "P"
                 : child && !strcmp(sid, child) ? "C"
                                                : sid,
                 kind);
    }
    return out;
}

static void test_gates(void **state)
{
    h *x = *state;
    init(x, false);
    char id[80];
    new_session(x, id);
    json_decref(prompt(x, 2, id, "spawn"));
    assert_int_equal(x->e->make_rc, ACP_ENOTSUP);
    assert_null(x->e->child);
    assert_int_equal(stored(x, id), 2); /* the prompt and "ok": nothing announced */
    /* switched off: the same with a client that takes them */
    agent_stop(x);
    x->opts.unstable_off = ACP_UNSTABLE_SUBAGENTS;
    agent_start(x);
    init(x, true);
    new_session(x, id);
    json_decref(prompt(x, 3, id, "spawn"));
    assert_int_equal(x->e->make_rc, ACP_ENOTSUP);
    assert_errmsg(x, "switched off");
}

static void test_announce_order_store(void **state)
{
    h *x = *state;
    init(x, true);
    char id[80];
    new_session(x, id);
    json_t *r = prompt(x, 2, id, "spawn");
    assert_int_equal(x->e->make_rc, 0);
    const char *cid = acp_session_id(x->e->child);
    char *got = order(r, id, cid);
    assert_string_equal(got, "P:subagent_update C:agent_message_chunk P:subagent_update "
                             "P:agent_message_chunk R");
    free(got);
    json_t *ann = update_at(r, 0);
    assert_json(ann, J("{'sessionUpdate':'subagent_update','sessionId':'%s','title':'helper',"
                       "'capabilities':{'cancel':{}},'state':{'state':'running'}}",
                       cid));
    json_decref(r);
    /* the store: the child's row names its parent, each history holds its own updates */
    acp_store_session row = ACP_STORE_SESSION_INIT;
    assert_int_equal(acp_store_get(x->st, cid, &row), 0);
    assert_string_equal(row.parent, id);
    assert_string_equal(row.cwd, x->dir);
    acp_store_session_clear(&row);
    assert_int_equal(stored(x, cid), 1);
    assert_int_equal(stored(x, id), 4); /* prompt, announcement, idle, "ok" */
    /* the runtime's own kind: an engine cannot send it */
    json_t *u = J("{'sessionUpdate':'subagent_update','sessionId':'x'}");
    assert_int_equal(acp_session_update(x->e->child, u), ACP_EINVAL);
    json_decref(u);
    /* patches the schema refuses */
    const char *bad[] = {"{'sessionId':'x'}",
                         "{'title':3}",
                         "{'state':{'no':1}}",
                         "{'cwd':'rel'}",
                         "{'additionalDirectories':['/a','b']}",
                         "[]"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        json_t *p = J("%s", bad[i]);
        assert_int_equal(acp_session_subagent_update(x->e->child, p), ACP_EINVAL);
        json_decref(p);
    }
    /* a top-level session is no child */
    acp_session *child = x->e->child;
    assert_null(acp_session_parent(acp_session_parent(child)));
    u = J("{'title':'x'}");
    assert_int_equal(acp_session_subagent_update(acp_session_parent(child), u), ACP_EINVAL);
    json_decref(u);
}

static void test_restricted_cancel_close(void **state)
{
    h *x = *state;
    init(x, true);
    char id[80], p[600];
    new_session(x, id);
    json_decref(prompt(x, 2, id, "spawn"));
    char cid[80];
    snprintf(cid, sizeof cid, "%s", acp_session_id(x->e->child));
    json_t *r = prompt(x, 3, cid, "hi");
    assert_int_equal(error_code(r), ACP_RPC_INVALID_PARAMS);
    assert_string_equal(
        jstr(json_object_get(json_object_get(last(r), "error"), "data"), "parentSessionId"), id);
    json_decref(r);
    snprintf(p, sizeof p, "{\"sessionId\":\"%s\"}", cid);
    r = request(x, 4, "session/close", p);
    assert_int_equal(error_code(r), ACP_RPC_INVALID_PARAMS);
    json_decref(r);
    r = request(x, 5, "session/delete", p);
    assert_int_equal(error_code(r), ACP_RPC_INVALID_PARAMS);
    json_decref(r);
    snprintf(p, sizeof p, "{\"sessionId\":\"%s\",\"cwd\":\"%s\",\"mcpServers\":[]}", cid, x->dir);
    r = request(x, 6, "session/load", p);
    assert_int_equal(error_code(r), ACP_RPC_INVALID_PARAMS);
    json_decref(r);
    /* not listed */
    r = request(x, 7, "session/list", "{}");
    assert_int_equal(json_array_size(json_object_get(result_of(r), "sessions")), 1);
    json_decref(r);
    /* cancel: granted, heard; withdrawn (capabilities null), ignored */
    send_line(
        x, "{\"jsonrpc\":\"2.0\",\"method\":\"session/cancel\",\"params\":{\"sessionId\":\"%s\"}}",
        cid);
    turn(x);
    assert_int_equal(x->e->cancels, 1);
    json_decref(prompt(x, 8, id, "nocancel"));
    send_line(
        x, "{\"jsonrpc\":\"2.0\",\"method\":\"session/cancel\",\"params\":{\"sessionId\":\"%s\"}}",
        cid);
    turn(x);
    assert_int_equal(x->e->cancels, 1);
    /* closing the parent closes the child: the engine frees it, nothing of it stays open */
    assert_int_equal(acp_agent_session_count(x->a), 2);
    snprintf(p, sizeof p, "{\"sessionId\":\"%s\"}", id);
    json_decref(request(x, 9, "session/close", p));
    assert_int_equal(acp_agent_session_count(x->a), 0);
    assert_int_equal(x->e->frees, 1);
    /* the child is stored still, with its parent */
    assert_int_equal(stored(x, cid), 1);
}

static void test_load_replay_delete(void **state)
{
    h *x = *state;
    init(x, true);
    char id[80], cid[80], p[600];
    new_session(x, id);
    json_decref(prompt(x, 2, id, "spawn"));
    snprintf(cid, sizeof cid, "%s", acp_session_id(x->e->child));
    /* a restarted agent: the load replays the child right after its announcement */
    agent_stop(x);
    agent_start(x);
    init(x, true);
    snprintf(p, sizeof p, "{\"sessionId\":\"%s\",\"cwd\":\"%s\",\"mcpServers\":[]}", id, x->dir);
    json_t *r = request(x, 3, "session/load", p);
    char *got = order(r, id, cid);
    assert_string_equal(got, "P:user_message_chunk P:subagent_update C:agent_message_chunk "
                             "P:subagent_update P:agent_message_chunk R");
    free(got);
    json_decref(r);
    /* a client without subagents sees the parent's own history only */
    agent_stop(x);
    agent_start(x);
    init(x, false);
    r = request(x, 4, "session/load", p);
    got = order(r, id, cid);
    assert_string_equal(got, "P:user_message_chunk P:agent_message_chunk R");
    free(got);
    json_decref(r);
    /* deleting the parent deletes the child */
    snprintf(p, sizeof p, "{\"sessionId\":\"%s\"}", id);
    json_decref(request(x, 5, "session/delete", p));
    acp_store_session row = ACP_STORE_SESSION_INIT;
    assert_int_equal(acp_store_get(x->st, cid, &row), ACP_ENOTFOUND);
    assert_int_equal(acp_store_get(x->st, id, &row), ACP_ENOTFOUND);
}

static int collect_id(void *user, const acp_store_session *ss)
{
    assert_string_equal(ss->parent ? "child" : "top", "child");
    return json_array_append_new(user, json_string(ss->id));
}

/* A store that cannot create the child: nothing announced, the engine told; a list whose first
 * page holds only children still shows the parent (and says nothing follows). */
static void test_store_failure_and_list(void **state)
{
    h *x = *state;
    init(x, true);
    char id[80];
    new_session(x, id);
    fail_create = true;
    json_t *r = prompt(x, 2, id, "spawn");
    fail_create = false;
    assert_int_equal(x->e->make_rc, ACP_ESTORE);
    assert_int_equal(count_updates(r, "subagent_update"), 0);
    json_decref(r);
    assert_int_equal(acp_agent_session_count(x->a), 1);
    json_decref(prompt(x, 3, id, "many"));
    assert_int_equal(acp_agent_session_count(x->a), 61);
    /* the children newer than their parent: the first page of the store's list is children only */
    json_t *kids = json_array();
    assert_int_equal(acp_store_children(x->st, id, collect_id, kids), 0);
    assert_int_equal(json_array_size(kids), 60);
    size_t i;
    json_t *k;
    json_array_foreach(kids, i, k)
    {
        assert_int_equal(acp_store_set_info(x->st, json_string_value(k), 0, false, NULL,
                                            "2099-01-01T00:00:00.000Z"),
                         0);
    }
    json_decref(kids);
    r = request(x, 4, "session/list", "{}");
    json_t *res = result_of(r);
    assert_int_equal(json_array_size(json_object_get(res, "sessions")), 1);
    assert_string_equal(jstr(json_array_get(json_object_get(res, "sessions"), 0), "sessionId"), id);
    assert_null(json_object_get(res, "nextCursor"));
    json_decref(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_gates, setup, teardown),
        cmocka_unit_test_setup_teardown(test_announce_order_store, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restricted_cancel_close, setup, teardown),
        cmocka_unit_test_setup_teardown(test_load_replay_delete, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_failure_and_list, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
