/* SPDX-License-Identifier: Apache-2.0 */
/* The store fault-injection harness through the agent (issue 13, Tests): a fixed script of
 * client requests (new sessions, prompts that stream over one or several loop turns, a title,
 * modes and config options from either side, two sessions in one commit, close and load,
 * list, delete) runs once for every place a store fault can meet it: the Nth call of each
 * store operation, at each of its database steps in turn (store/inject.h), until the script
 * runs through without meeting the fault. Each run checks what the client was told against
 * what a fresh agent on a fresh store handle loads afterwards:
 *   (a) a prompt answered with an error stored nothing of its own unless the client saw it
 *       (its updates went out, or an earlier loop turn of it was committed); a prompt
 *       answered with a stop reason is stored whole; a set_mode / set_config_option answered
 *       with an error changed nothing;
 *   (b) every history update the client saw is in the history, in order, once, and nothing
 *       the client did not see is (SQLite: exactly; PostgreSQL: except the one write whose
 *       answer was lost after the server committed it, which may be there or not);
 *   (c) the agent keeps serving: the script goes on after the fault, and ends with a prompt
 *       that must succeed.
 * The same file runs on PostgreSQL (tests/pg, FAULT_PG) with server errors and lost
 * connections. */
#include <pthread.h>
#include <sqlite3.h>
#include <time.h>

#include "harness.h"
#include "store/inject.h"
#ifdef FAULT_PG
#include "pg_env.h"
#endif

/* --- the engine: what a prompt's text asks for --------------------------------------------- */

struct eng_state {
    int next_id;
    int slow_left; /* "slow N": chunks still to send, one per loop turn */
    char slow_mid[48];
};

static const acp_mode modes[] = {{"ask", "Ask", NULL}, {"code", "Code", NULL}};
static const acp_config_value models[] = {{.value = "small", .name = "Small"},
                                          {.value = "large", .name = "Large"}};
static const acp_config_option options[] = {
    {.id = "model", .name = "Model", .category = "model", .values = models, .nvalues = 2}};

/* A failure the engine met (a title or a mode the store refused, an append out of memory)
 * fails the turn in the engine's words, "engine: ...", so that the client's view tells it from
 * the runtime's own "session store unavailable" (a commit of the turn failed). */
static void engine_failed(acp_turn *t, int rc)
{
    acp_turn_fail(t, ACP_RPC_INTERNAL_ERROR, "engine: %s",
                  rc == ACP_ESTORE ? acp_error_last()->message : acp_strerror(rc));
}

static int say(acp_turn *t, const char *mid, int i)
{
    char c[16];
    snprintf(c, sizeof c, "c%d", i);
    return acp_turn_text(t, NULL, mid, c, strlen(c));
}

static void slow_more(acp_turn *t, void *user)
{
    h *x = user;
    int rc = say(t, x->e->slow_mid, x->e->slow_left);
    if (rc) {
        x->e->slow_left = 0;
        engine_failed(t, rc);
    } else if (--x->e->slow_left == 0) {
        acp_turn_end(t, "end_turn");
    } else {
        acp_turn_on_writable(t, slow_more, x);
    }
}

static void engine_prompt(acp_turn *t, const json_t *prompt, void *user)
{
    h *x = user;
    const char *text = json_string_value(json_object_get(json_array_get(prompt, 0), "text"));
    char mid[48], arg[32];
    acp_agent_new_id("msg_", mid);
    int n = 0, rc = 0;
    if (sscanf(text, "emit %d", &n) == 1) {
        for (int i = 0; i < n && !rc; i++) rc = say(t, mid, i);
        if (!rc) {
            /* a history update that is not text: stored as sent */
            json_t *u = json_pack("{ss ss ss ss}", "sessionUpdate", "tool_call", "toolCallId", mid,
                                  "title", "look", "status", "completed");
            rc = acp_turn_update(t, u);
            json_decref(u);
        }
    } else if (sscanf(text, "slow %d", &n) == 1) {
        rc = say(t, mid, 0);
        if (!rc && n > 1) {
            memcpy(x->e->slow_mid, mid, sizeof mid);
            x->e->slow_left = n - 1;
            acp_turn_on_writable(t, slow_more, x);
            return;
        }
    } else if (sscanf(text, "title %31s", arg) == 1) {
        json_t *u = json_pack("{ss ss}", "sessionUpdate", "session_info_update", "title", arg);
        rc = acp_turn_update(t, u);
        json_decref(u);
    } else if (sscanf(text, "mode %31s", arg) == 1) {
        rc = acp_session_set_mode(acp_turn_session(t), arg);
        if (!rc) rc = say(t, mid, 0);
    }
    if (rc)
        engine_failed(t, rc);
    else
        acp_turn_end(t, "end_turn");
}

static void engine_cancel(acp_turn *t, void *user)
{
    h *x = user;
    x->e->slow_left = 0;
    acp_turn_on_writable(t, NULL, NULL);
    acp_turn_end(t, "cancelled");
}

/* --- what the client was told: the model each run is checked against ----------------------- */

typedef struct model {
    char id[80];
    json_t *expect;    /* the history it must have: user messages and every update shown */
    json_t *doubt;     /* PostgreSQL: a prompt's text whose commit answer was lost, or NULL */
    char mode[32];     /* acknowledged: "code" / "ask" */
    char model[32];    /* acknowledged: "small" / "large" */
    char title[32];    /* acknowledged, "" for none */
    bool state_doubt;  /* a set_mode/set_config_option answered unavailable: either value */
    bool title_doubt;  /* a title whose set_info answer was lost: either */
    char mode_alt[32]; /* the value a doubtful change would have made */
    char model_alt[32];
    char title_alt[32];
    bool open, gone;   /* open here; deleted (acknowledged) */
    bool delete_doubt; /* a delete answered unavailable: it may have happened */
} model;

enum { NSESS = 3 };

typedef struct run {
    h *x;
    model s[NSESS];
    const acp_store_fault *fault;
    bool doubtful;  /* the fault can leave a write done and reported failed (LOSE_AFTER) */
    int errors;     /* responses that were errors (the fault was told) */
    unsigned fired; /* steps that met the fault */
} run;

static int next_id(h *x)
{
    return ++x->e->next_id;
}

static bool is_history(const char *kind)
{
    static const char *const hist[] = {"user_message_chunk",  "agent_message_chunk",
                                       "agent_thought_chunk", "tool_call",
                                       "tool_call_update",    "plan"};
    for (size_t i = 0; kind && i < sizeof hist / sizeof *hist; i++)
        if (!strcmp(kind, hist[i])) return true;
    return false;
}

static model *model_of(run *r, const char *sid)
{
    for (int i = 0; sid && i < NSESS; i++)
        if (!strcmp(r->s[i].id, sid)) return &r->s[i];
    return NULL;
}

static bool store_unavailable(const json_t *m)
{
    const char *msg = jstr(json_object_get(m, "error"), "message");
    return msg && !strncmp(msg, "session store unavailable", 25);
}

/* Consecutive text chunks of one message as one update (as the agent stores them); the user
 * message's agent-made messageId dropped (the client never learns it). A new array. */
static json_t *normalize(const json_t *list)
{
    json_t *out = json_array();
    for (size_t i = 0; i < json_array_size(list); i++) {
        json_t *u = json_deep_copy(json_array_get(list, i));
        const char *kind = jstr(u, "sessionUpdate");
        if (!strcmp(kind, "user_message_chunk")) json_object_del(u, "messageId");
        json_t *prev = json_array_get(out, json_array_size(out) - 1);
        bool text = !strcmp(kind, "agent_message_chunk") || !strcmp(kind, "agent_thought_chunk");
        if (text && prev && jstr(u, "messageId") && !strcmp(jstr(prev, "sessionUpdate"), kind) &&
            jstr(prev, "messageId") && !strcmp(jstr(prev, "messageId"), jstr(u, "messageId"))) {
            json_t *pc = json_object_get(prev, "content");
            char *joined;
            assert_true(asprintf(&joined, "%s%s", jstr(pc, "text"),
                                 jstr(json_object_get(u, "content"), "text")) > 0);
            json_object_set_new(pc, "text", json_string(joined));
            free(joined);
            json_decref(u);
            continue;
        }
        json_array_append_new(out, u);
    }
    return out;
}

/* --- the client's side of the script ---------------------------------------------------------- */

static void release_lock(void);

/* Sends a request and takes everything up to its answer. */
static json_t *ask(run *r, const char *method, const char *params)
{
    json_t *msgs = request(r->x, next_id(r->x), method, params);
    release_lock();
    if (json_object_get(last(msgs), "error")) r->errors++;
    return msgs;
}

static void open_params(run *r, char *p, size_t n, const char *sid)
{
    int k = sid ? snprintf(p, n, "{\"sessionId\":\"%s\",\"cwd\":\"%s\",\"mcpServers\":[]}", sid,
                           r->x->dir)
                : snprintf(p, n, "{\"cwd\":\"%s\",\"mcpServers\":[]}", r->x->dir);
    assert_true(k > 0 && (size_t)k < n);
}

/* session/new, once more if the store failed it: the script needs the session. */
static void new_session(run *r, model *m)
{
    char p[600];
    open_params(r, p, sizeof p, NULL);
    for (int tries = 0; tries < 2 && !m->open; tries++) {
        json_t *msgs = ask(r, "session/new", p);
        const char *sid = jstr(result_of(msgs), "sessionId");
        if (sid) {
            snprintf(m->id, sizeof m->id, "%s", sid);
            m->expect = json_array();
            strcpy(m->mode, "code");
            strcpy(m->model, "small");
            m->open = true;
        } else {
            assert_true(store_unavailable(last(msgs)));
        }
        json_decref(msgs);
    }
    assert_true(m->open);
}

/* The updates and answers in msgs, into the model: each prompt's shown history (after its
 * user message when that was stored), titles and engine-side modes the client saw. */
typedef struct pending {
    int id;
    model *m;
    char text[64];
    json_t *seen;
} pending;

static void account(run *r, json_t *msgs, pending *p, size_t np)
{
    for (size_t i = 0; i < json_array_size(msgs); i++) {
        json_t *msg = json_array_get(msgs, i);
        json_t *u = update_at(msgs, i);
        if (u) {
            model *m = model_of(r, jstr(params_of(msg), "sessionId"));
            assert_non_null(m);
            const char *kind = jstr(u, "sessionUpdate");
            if (!strcmp(kind, "session_info_update") && jstr(u, "title"))
                snprintf(m->title, sizeof m->title, "%s", jstr(u, "title"));
            if (!strcmp(kind, "current_mode_update"))
                snprintf(m->mode, sizeof m->mode, "%s", jstr(u, "currentModeId"));
            if (!is_history(kind)) continue;
            assert_string_not_equal(kind, "user_message_chunk"); /* never echoed live */
            size_t k = 0;
            while (k < np && p[k].m != m) k++;
            assert_true(k < np); /* no history outside a prompt in this script */
            json_array_append(p[k].seen, u);
            continue;
        }
        if (method_of(msg)) continue;
        for (size_t k = 0; k < np; k++) {
            if (id_of(msg) != p[k].id) continue;
            bool ok = stop_reason(msg) != NULL;
            if (ok) assert_string_equal(stop_reason(msg), "end_turn");
            const char *err = jstr(json_object_get(msg, "error"), "message");
            if (!ok) {
                r->errors++;
                /* a store failure is said as one; the engine's own failures are its words */
                assert_true(store_unavailable(msg) || !strncmp(err, "engine:", 7) ||
                            !strcmp(err, "out of memory"));
            }
            /* The user message went into the prompt's first commit, with its first update; it
             * is stored when the client saw that update or the turn ended well, and when the
             * commit went through but the turn failed all the same: the engine failed it, or
             * the runtime could not add the turn's text to the batch ("out of memory": the
             * text is not stored, and was not shown). A commit that failed stored none of it. */
            bool stored = ok || json_array_size(p[k].seen) || !strncmp(err, "engine:", 7) ||
                          (store_unavailable(msg) && strstr(err, "out of memory"));
            if (stored) {
                json_array_append_new(p[k].m->expect, json_pack("{ss s{ss ss}}", "sessionUpdate",
                                                                "user_message_chunk", "content",
                                                                "type", "text", "text", p[k].text));
                json_array_extend(p[k].m->expect, p[k].seen);
            }
            /* a commit of the turn whose answer was lost may have gone through */
            if (!ok && r->doubtful && store_unavailable(msg)) {
                assert_null(p[k].m->doubt);
                p[k].m->doubt = json_string(p[k].text);
            }
            /* the engine's own write (a title, a mode) whose answer was lost may be stored */
            char arg[32];
            if (!ok && r->doubtful && sscanf(p[k].text, "title %31s", arg) == 1) {
                p[k].m->title_doubt = true;
                snprintf(p[k].m->title_alt, sizeof p[k].m->title_alt, "%s", arg);
            }
            if (!ok && r->doubtful && sscanf(p[k].text, "mode %31s", arg) == 1) {
                p[k].m->state_doubt = true;
                snprintf(p[k].m->mode_alt, sizeof p[k].m->mode_alt, "%s", arg);
            }
        }
    }
}

/* Prompts several sessions at once (their turns share commits), each with its text. */
static void prompt_n(run *r, model **ms, const char **texts, size_t n)
{
    pending p[NSESS];
    for (size_t k = 0; k < n; k++) {
        p[k] = (pending){.id = next_id(r->x), .m = ms[k], .seen = json_array()};
        snprintf(p[k].text, sizeof p[k].text, "%s #%d", texts[k], p[k].id);
        send_prompt(r->x, p[k].id, ms[k]->id, p[k].text);
    }
    for (size_t k = 0; k < n; k++) wait_response(r->x, p[k].id);
    json_t *msgs = json_deep_copy(r->x->msgs);
    json_array_clear(r->x->msgs);
    release_lock();
    account(r, msgs, p, n);
    for (size_t k = 0; k < n; k++) json_decref(p[k].seen);
    json_decref(msgs);
}

static void prompt(run *r, model *m, const char *text)
{
    prompt_n(r, &m, &text, 1);
}

/* A change the client asks for: acknowledged, it is the session's; refused by the store, it
 * changed nothing (or, with the answer lost after the server stored it, may have). */
static void set_value(run *r, model *m, const char *method, const char *member, const char *value,
                      char *field, char *alt)
{
    char p[300];
    if (!strcmp(method, "session/set_mode"))
        snprintf(p, sizeof p, "{\"sessionId\":\"%s\",\"modeId\":\"%s\"}", m->id, value);
    else
        snprintf(p, sizeof p, "{\"sessionId\":\"%s\",\"configId\":\"%s\",\"value\":\"%s\"}", m->id,
                 member, value);
    json_t *msgs = ask(r, method, p);
    if (json_object_get(last(msgs), "result")) {
        strcpy(field, value);
    } else {
        assert_true(store_unavailable(last(msgs)));
        if (r->doubtful) m->state_doubt = true, strcpy(alt, value);
    }
    assert_int_equal(count_updates(msgs, NULL), 0); /* a client's own change is not echoed */
    json_decref(msgs);
}

/* The block of history a prompt's user message starts (its index, and one past its end), or
 * false when that message is not in list. */
static bool block_of(const json_t *list, const char *text, size_t *b0, size_t *b1)
{
    size_t n = json_array_size(list), at = 0;
    while (at < n &&
           !(!strcmp(jstr(json_array_get(list, at), "sessionUpdate"), "user_message_chunk") &&
             !strcmp(jstr(json_object_get(json_array_get(list, at), "content"), "text"), text)))
        at++;
    if (at == n) return false;
    *b0 = at++;
    while (at < n && strcmp(jstr(json_array_get(list, at), "sessionUpdate"), "user_message_chunk"))
        at++;
    *b1 = at;
    return true;
}

/* A prompt whose last commit's answer was lost (PostgreSQL, LOSE_AFTER): that commit may have
 * gone through, so the prompt's stored block is what the client saw of it, or that and more
 * (its user message too, if the client saw nothing; a longer last text; further updates). It
 * is checked so, and taken out of both lists: the rest must be equal. */
static void drop_doubt(json_t *got, json_t *want, const char *text)
{
    size_t g0, g1, w0, w1;
    bool in_got = block_of(got, text, &g0, &g1), in_want = block_of(want, text, &w0, &w1);
    if (in_want) {
        assert_true(in_got && g1 - g0 >= w1 - w0);
        for (size_t i = 0; i < w1 - w0; i++) {
            json_t *g = json_array_get(got, g0 + i), *w = json_array_get(want, w0 + i);
            if (json_equal(g, w)) continue;
            const char *gt = jstr(json_object_get(g, "content"), "text");
            const char *wt = jstr(json_object_get(w, "content"), "text");
            assert_true(i == w1 - w0 - 1 && gt && wt && !strncmp(gt, wt, strlen(wt)));
        }
        while (w1-- > w0) json_array_remove(want, w0);
    }
    if (in_got)
        while (g1-- > g0) json_array_remove(got, g0);
}

/* Loads m (into x's agent) and checks the replay and the state against the model. When
 * `tries` allows, a load the store failed is tried again. */
static bool load_and_check(run *r, model *m, int tries)
{
    char p[600];
    open_params(r, p, sizeof p, m->id);
    for (int i = 0; i < tries; i++) {
        json_t *msgs = ask(r, "session/load", p);
        json_t *res = result_of(msgs);
        if (!res) {
            if (m->gone || (m->delete_doubt && error_code(msgs) == ACP_RPC_NOT_FOUND)) {
                assert_int_equal(error_code(msgs), ACP_RPC_NOT_FOUND);
                json_decref(msgs);
                return false;
            }
            assert_true(store_unavailable(last(msgs)));
            json_decref(msgs);
            continue;
        }
        assert_false(m->gone);
        json_t *hist = json_array();
        const char *title = NULL;
        for (size_t k = 0; k < json_array_size(msgs); k++) {
            json_t *u = update_at(msgs, k);
            if (u && is_history(jstr(u, "sessionUpdate"))) json_array_append(hist, u);
            if (u && !strcmp(jstr(u, "sessionUpdate"), "session_info_update"))
                title = jstr(u, "title");
        }
        json_t *got = normalize(hist), *want = normalize(m->expect);
        if (m->doubt) drop_doubt(got, want, json_string_value(m->doubt));
        assert_json(got, json_incref(want));
        json_decref(got);
        json_decref(want);
        json_decref(hist);
        const char *mode = jstr(json_object_get(res, "modes"), "currentModeId");
        const char *val =
            jstr(json_array_get(json_object_get(res, "configOptions"), 0), "currentValue");
        if (!(m->state_doubt && (!strcmp(mode, m->mode_alt) || !strcmp(val, m->model_alt)))) {
            assert_string_equal(mode, m->mode);
            assert_string_equal(val, m->model);
        }
        if (!(m->title_doubt && title && !strcmp(title, m->title_alt))) {
            if (m->title[0])
                assert_string_equal(title ? title : "(none)", m->title);
            else
                assert_null(title);
        }
        json_decref(msgs);
        m->open = true;
        return true;
    }
    fail_msg("session %s could not be loaded", m->id);
    return false;
}

static void close_session(run *r, model *m)
{
    char p[200];
    assert_true(snprintf(p, sizeof p, "{\"sessionId\":\"%s\"}", m->id) < (int)sizeof p);
    json_t *msgs = ask(r, "session/close", p);
    assert_non_null(result_of(msgs));
    json_decref(msgs);
    m->open = false;
}

static void delete_session(run *r, model *m)
{
    char p[200];
    assert_true(snprintf(p, sizeof p, "{\"sessionId\":\"%s\"}", m->id) < (int)sizeof p);
    json_t *msgs = ask(r, "session/delete", p);
    if (result_of(msgs)) {
        m->gone = true;
    } else {
        assert_true(store_unavailable(last(msgs)));
        if (r->doubtful) m->delete_doubt = true;
    }
    m->open = false;
    json_decref(msgs);
}

static void list_sessions(run *r)
{
    json_t *msgs = ask(r, "session/list", "{}");
    json_t *res = result_of(msgs);
    if (res)
        assert_true(json_array_size(json_object_get(res, "sessions")) >= 2);
    else
        assert_true(store_unavailable(last(msgs)));
    json_decref(msgs);
}

/* --- the harness: a run per fault ------------------------------------------------------------ */

#ifdef FAULT_PG
static char *pg_db; /* this program's database (FAULT_PG) */
#endif

static h *fixture(void)
{
    h *x = h_new("fault", sizeof(eng_state));
#ifdef FAULT_PG
    /* The same harness on PostgreSQL: h_new's SQLite store is swapped for this program's
     * database (sessions have ids of their own: runs share it). */
    store_close(x);
    snprintf(x->db, sizeof x->db, "%s", pg_db);
    store_open(x);
    x->ops = *real_ops;
#endif
    x->eng = (acp_engine){.struct_size = sizeof(acp_engine),
                          .name = "fault-engine",
                          .version = "1",
                          .modes = modes,
                          .nmodes = 2,
                          .default_mode = "code",
                          .config_options = options,
                          .nconfig_options = 1,
                          .prompt = engine_prompt,
                          .cancel = engine_cancel,
                          .user = x};
    agent_start(x);
    json_decref(request(x, next_id(x), "initialize", "{\"protocolVersion\":1}"));
    return x;
}

/* The script. Returns after its last step; the fault may have met it anywhere. */
static void script(run *r)
{
    model *a = &r->s[0], *b = &r->s[1], *c = &r->s[2];
    new_session(r, a);
    new_session(r, b);
    prompt(r, a, "emit 2");
    prompt(r, b, "emit 1");
    set_value(r, a, "session/set_mode", NULL, "ask", a->mode, a->mode_alt);
    prompt(r, a, "title T1");
    prompt(r, a, "slow 3");
    set_value(r, b, "session/set_config_option", "model", "large", b->model, b->model_alt);
    model *both[] = {a, b};
    const char *texts[] = {"emit 1", "emit 2"};
    prompt_n(r, both, texts, 2);
    prompt(r, a, "mode code");
    close_session(r, b);
    load_and_check(r, b, 2);
    prompt(r, b, "emit 1");
    list_sessions(r);
    new_session(r, c);
    prompt(r, c, "emit 1");
    delete_session(r, c);
    /* (c): whatever happened above, the agent still serves */
    r->fired = acp_store_inject_fired(r->x->st);
    r->fault = NULL;
    assert_int_equal(acp_store_inject(r->x->st, NULL), 0);
    prompt(r, a, "emit 1");
}

/* A fresh agent on a fresh store handle loads every session: (a) and (b). */
static void verify(run *r)
{
    h *x = r->x;
    agent_stop(x);
    store_close(x);
    store_open(x);
    agent_start(x);
    x->e->next_id = 0;
    json_decref(request(x, next_id(x), "initialize", "{\"protocolVersion\":1}"));
    for (int i = 0; i < NSESS; i++) load_and_check(r, &r->s[i], 1);
}

static void run_free(run *r)
{
    for (int i = 0; i < NSESS; i++) {
        json_decref(r->s[i].expect);
        json_decref(r->s[i].doubt);
    }
    h_free(r->x);
}

/* Walks every (nth call, step) of the operations `ops` the SQLite way: step 1, 2, ... of
 * call 1 until a run goes through without meeting the fault, then call 2, ... until a call
 * has no step 1 (the script makes fewer calls). `make` fills in the fault of each run.
 * max_nth / max_step (0: no limit) keep slow faults (stalls) to a few places. */
typedef void (*fault_maker)(acp_store_fault *f, unsigned i, run *r);

static unsigned walk_some(unsigned ops, fault_maker make, bool doubtful, unsigned max_nth,
                          unsigned max_step)
{
    unsigned runs = 0, told = 0;
    for (unsigned nth = 1; !max_nth || nth <= max_nth; nth++) {
        unsigned step = 1;
        for (; !max_step || step <= max_step; step++) {
            acp_store_fault f = {.ops = ops, .nth = nth, .step = step};
            run r = {.x = fixture(), .fault = &f, .doubtful = doubtful};
            make(&f, runs, &r);
            assert_int_equal(acp_store_inject(r.x->st, &f), 0);
            script(&r);
            runs++;
            told += r.errors > 0;
            unsigned fired = r.fired;
            verify(&r);
            run_free(&r);
            if (!fired) break;
        }
        if (step == 1) break;
    }
    print_message("%u runs, %u of them answered an error\n", runs, told);
    assert_true(runs > 1);
    return runs;
}

static unsigned walk(unsigned ops, fault_maker make, bool doubtful)
{
    return walk_some(ops, make, doubtful, 0, 0);
}

/* --- a lock held by another connection (SQLite), for the real busy paths ------------------------
 */

static sqlite3 *locker;  /* the other connection, holding the write lock while set */
static pthread_t holder; /* a thread holding it for HOLD_MS, then letting go */
static bool holding;
enum { HOLD_MS = 120 };

static void release_lock(void)
{
    if (holding) {
        pthread_join(holder, NULL);
        holding = false;
    }
    if (locker) {
        sqlite3_exec(locker, "COMMIT", NULL, NULL, NULL);
        sqlite3_close(locker);
        locker = NULL;
    }
}

#ifndef FAULT_PG
static sqlite3 *lock_db(const char *db)
{
    sqlite3 *l;
    assert_int_equal(sqlite3_open(db, &l), SQLITE_OK);
    assert_int_equal(sqlite3_exec(l, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
    return l;
}

/* At the step: another connection takes the write lock and keeps it until the request was
 * answered; with the busy timeout short, the step meets SQLite's own SQLITE_BUSY. */
static void take_lock(acp_store *st, void *user)
{
    h *x = user;
    if (!locker) locker = lock_db(x->db);
}

struct hold {
    const char *db;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool locked;
};

static void *hold_lock(void *arg)
{
    struct hold *hd = arg;
    sqlite3 *l = lock_db(hd->db);
    pthread_mutex_lock(&hd->mu);
    hd->locked = true;
    pthread_cond_signal(&hd->cv);
    pthread_mutex_unlock(&hd->mu);
    struct timespec ts = {0, HOLD_MS * 1000000L};
    nanosleep(&ts, NULL);
    sqlite3_exec(l, "COMMIT", NULL, NULL, NULL);
    sqlite3_close(l);
    return NULL;
}

/* At the step: another connection holds the write lock for HOLD_MS; the step waits for it
 * in SQLite's busy handler (the store's own timeout) and goes on. */
static void hold_briefly(acp_store *st, void *user)
{
    static struct hold hd = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
    h *x = user;
    if (holding) return;
    hd.db = x->db;
    hd.locked = false;
    assert_int_equal(pthread_create(&holder, NULL, hold_lock, &hd), 0);
    holding = true;
    pthread_mutex_lock(&hd.mu);
    while (!hd.locked) pthread_cond_wait(&hd.cv, &hd.mu);
    pthread_mutex_unlock(&hd.mu);
}
#endif

/* --- the faults --------------------------------------------------------------------------------
 */

#ifndef FAULT_PG
static const int codes[] = {SQLITE_BUSY, SQLITE_FULL, SQLITE_IOERR};

static void sqlite_error(acp_store_fault *f, unsigned i, run *r)
{
    f->kind = ACP_FAULT_ERROR;
    f->code = codes[i % 3];
}

static void stall(acp_store_fault *f, unsigned i, run *r)
{
    f->kind = ACP_FAULT_STALL;
    f->ms = 15;
}

static void busy_lock(acp_store_fault *f, unsigned i, run *r)
{
    f->kind = ACP_FAULT_CALL;
    f->call = take_lock;
    f->user = r->x;
    assert_int_equal(acp_store_inject_busy_timeout(r->x->st, 20), 0);
}

static void busy_wait(acp_store_fault *f, unsigned i, run *r)
{
    f->kind = ACP_FAULT_CALL;
    f->call = hold_briefly;
    f->user = r->x;
}

#define WALK(op) walk(op, sqlite_error, false)
static void t_commit(void **state)
{
    WALK(ACP_FAULT_COMMIT);
}
static void t_append(void **state)
{
    WALK(ACP_FAULT_APPEND);
}
static void t_set_state(void **state)
{
    WALK(ACP_FAULT_SET_STATE);
}
static void t_set_info(void **state)
{
    WALK(ACP_FAULT_SET_INFO);
}
static void t_create(void **state)
{
    WALK(ACP_FAULT_CREATE);
}
static void t_get(void **state)
{
    WALK(ACP_FAULT_GET);
}
static void t_set_roots(void **state)
{
    WALK(ACP_FAULT_SET_ROOTS);
}
static void t_replay(void **state)
{
    WALK(ACP_FAULT_REPLAY);
}
static void t_list(void **state)
{
    WALK(ACP_FAULT_LIST);
}
static void t_delete(void **state)
{
    WALK(ACP_FAULT_DELETE);
}

/* Every write stalls at its first step: slower answers, nothing lost, nothing refused. */
static void t_stall(void **state)
{
    walk_some(ACP_FAULT_WRITES, stall, false, 0, 1);
}

/* Every write meets a real SQLITE_BUSY: another connection holds the write lock past the
 * (shortened) busy timeout. */
static void t_busy(void **state)
{
    walk_some(ACP_FAULT_WRITES, busy_lock, false, 0, 1);
}

/* The first writes wait out a lock another connection holds for HOLD_MS (the real busy
 * handler, the store's own timeout): nothing refused, nothing lost. */
static void t_busy_wait(void **state)
{
    walk_some(ACP_FAULT_COMMIT | ACP_FAULT_SET_STATE, busy_wait, false, 3, 1);
}

/* A prompt of two blocks whose second block cannot be added to the batch (out of memory) is
 * answered with an error and stores nothing: its first block must not stay behind, or the
 * client's retry would store it twice. */
static void t_prompt_blocks(void **state)
{
    run r = {.x = fixture()};
    h *x = r.x;
    new_session(&r, &r.s[0]);
    acp_store_fault f = {.ops = ACP_FAULT_APPEND, .nth = 2};
    assert_int_equal(acp_store_inject(x->st, &f), 0);
    char p[400];
    snprintf(p, sizeof p,
             "{\"sessionId\":\"%s\",\"prompt\":[{\"type\":\"text\",\"text\":\"emit 1\"},"
             "{\"type\":\"text\",\"text\":\"two\"}]}",
             r.s[0].id);
    json_t *msgs = request(x, next_id(x), "session/prompt", p);
    assert_int_equal(acp_store_inject_fired(x->st), 1);
    assert_int_equal(error_code(msgs), ACP_RPC_INTERNAL_ERROR);
    assert_int_equal(count_updates(msgs, NULL), 0);
    json_decref(msgs);
    turn(x);
    assert_int_equal(stored(x, r.s[0].id), 0);
    /* the retry stores the prompt once, whole */
    assert_int_equal(acp_store_inject(x->st, NULL), 0);
    msgs = request(x, next_id(x), "session/prompt", p);
    assert_string_equal(stop_reason(last(msgs)), "end_turn");
    json_decref(msgs);
    json_t *hist = history(x, r.s[0].id);
    assert_int_equal(json_array_size(hist), 4); /* two blocks, a text, a tool call */
    assert_string_equal(jstr(json_object_get(json_array_get(hist, 1), "content"), "text"), "two");
    json_decref(hist);
    run_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(t_prompt_blocks), cmocka_unit_test(t_commit),
        cmocka_unit_test(t_append),        cmocka_unit_test(t_set_state),
        cmocka_unit_test(t_set_info),      cmocka_unit_test(t_create),
        cmocka_unit_test(t_get),           cmocka_unit_test(t_set_roots),
        cmocka_unit_test(t_replay),        cmocka_unit_test(t_list),
        cmocka_unit_test(t_delete),        cmocka_unit_test(t_stall),
        cmocka_unit_test(t_busy),          cmocka_unit_test(t_busy_wait),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#endif

#ifdef FAULT_PG
static void pg_lose(acp_store_fault *f, unsigned i, run *r)
{
    f->kind = ACP_FAULT_LOSE;
}

static void pg_lose_after(acp_store_fault *f, unsigned i, run *r)
{
    f->kind = ACP_FAULT_LOSE_AFTER;
}

/* The connection lost before a commit's or a state's statement (every statement of every
 * write, and the reconnection after it, is pg_store_fault's). */
static void t_lose(void **state)
{
    walk(ACP_FAULT_COMMIT | ACP_FAULT_SET_STATE, pg_lose, false);
}

static void t_lose_reads(void **state)
{
    walk(ACP_FAULT_GET | ACP_FAULT_REPLAY | ACP_FAULT_LIST, pg_lose, false);
}

/* The answer lost after the server ran the statement: the one write in doubt may be stored
 * though the client was told it failed; nothing else may differ. */
static void t_lose_after(void **state)
{
    walk(ACP_FAULT_WRITES, pg_lose_after, true);
}

int main(void)
{
    char *base = pg_env_conninfo("pg");
    if (!base) return PG_ENV_SKIP;
    char name[64];
    if (!(pg_db = pg_env_new_db_nosync(base, name))) return 1;
    assert_true(strlen(pg_db) < sizeof((h *)0)->db);
    /* (server errors through the agent take the paths SQLite's errors take; the backend's own
     * handling of them is pg_store_fault's) */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(t_lose),
        cmocka_unit_test(t_lose_reads),
        cmocka_unit_test(t_lose_after),
    };
    int failed = cmocka_run_group_tests_name("pg_agent_fault", tests, NULL, NULL);
    pg_env_drop_db(base, name);
    free(pg_db);
    free(base);
    return failed ? 1 : 0;
}
#endif
