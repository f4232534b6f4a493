/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target over the whole agent runtime in process: any bytes from a client, in any
 * pieces, must never crash or leak the agent, leave a handle open, or make it write a line that
 * is not valid JSON. A fresh agent on a private loop with an in-memory SQLite store per input,
 * so every input replays the same way.
 *
 * The engine below uses the whole engine surface of agent.h: modes, config options (a grouped
 * select, a boolean, a category "mode" option) with vetoes, authentication (an agent method and
 * a terminal one; authenticate requests accepted, refused, held, or signed in through a request
 * scoped elicitation), an extension method, _meta, and every typed agent->client call (tool
 * calls, permissions, fs, terminals, elicitations, session calls). The fuzzer's bytes are the
 * client, so they also answer those calls: the code that checks a client's answers sees
 * untrusted input here. Besides the output check, the engine checks what the runtime promises
 * it: a turn's callbacks run only while the turn runs, a session's only while it is open, a
 * permission answer is one of the options offered, an accepted form fits its schema, and every
 * terminal the engine saw created is released on the wire by the end.
 *
 * A first byte below 0x20 is not input: its bits pick the engine variant (V_* below), so every
 * input still replays the same way. Otherwise the engine has no auth requirement and every
 * lifecycle capability.
 *
 * Side-effect free: the engine touches no file (fs and terminal calls go to the client, which is
 * the fuzzer; paths are only resolved, read-only, against the session's roots), HTTP/SSE MCP
 * servers are not enabled (rejected as invalid params), and rt's fork + exec is wrapped at link
 * time (-Wl,--wrap=rt_spawn) so a stdio MCP server with any command fails before fork(): the
 * fuzzer can reach every MCP validation and failure path without starting a process. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp/agent.h"
#include "fuzz/agent_harness.h"

/* No process can start (rt_spawn fails as exec would) and the agent's ids come from a counter
 * reset per input (sess_00000000000000000000000000000000 first), so the corpus can prompt new
 * sessions too: fuzz/agent_harness.h. */

/* --- what the engine describes --------------------------------------------------------------- */

/* The variant byte (a first byte below 0x20). */
enum {
    V_AUTH = 1,      /* auth_required */
    V_DISABLE_A = 2, /* no load, list, additionalDirectories */
    V_DISABLE_B = 4, /* no resume, close, delete */
    V_EOF = 8,       /* the client closes our input before the shutdown */
    V_NO_HOOKS = 16  /* no logout, no vetoes, no session_setup */
};

static const acp_mode modes[] = {
    {"ask", "Ask", "Asks before every change"},
    {"code", "Code", NULL},
    {"plan", "Plan", "Read-only planning"},
};

static const acp_config_value mode_values[] = {
    {.value = "ask", .name = "Ask"},
    {.value = "code", .name = "Code"},
    {.value = "plan", .name = "Plan", .description = "Read-only"},
};

static const acp_config_value model_values[] = {
    {"small", "Small", "Fast", "local", "Local models"},
    {"large", "Large", NULL, "local", "Local models"},
    {"cloud-1", "Cloud One", NULL, "cloud", "Cloud models"},
    {"cloud-big", "Cloud Big", "Costly", "cloud", "Cloud models"},
};

static const acp_config_value effort_values[] = {
    {.value = "low", .name = "Low"},
    {.value = "high", .name = "High"},
};

static const acp_config_option options[] = {
    {.id = "mode",
     .name = "Mode",
     .category = "mode",
     .values = mode_values,
     .nvalues = 3,
     .default_value = "code"},
    {.id = "model",
     .name = "Model",
     .description = "Which model answers",
     .category = "model",
     .values = model_values,
     .nvalues = 4,
     .default_value = "large"},
    {.id = "yolo", .name = "Yolo", .category = "_fuzz", .boolean = true},
    {.id = "effort",
     .name = "Effort",
     .category = "thought_level",
     .values = effort_values,
     .nvalues = 2},
};

/* What the engine replaces them with (prompt "opts", setup 'r'): a new model list, a mode
 * option without "plan", a new boolean that starts on; yolo and effort go. */
static const acp_config_value model2_values[] = {
    {.value = "large", .name = "Large v2"},
    {.value = "huge", .name = "Huge"},
};
static const acp_config_option options2[] = {
    {.id = "model",
     .name = "Model",
     .category = "model",
     .values = model2_values,
     .nvalues = 2,
     .default_value = "huge"},
    {.id = "mode", .name = "Mode", .category = "mode", .values = mode_values, .nvalues = 2},
    {.id = "extra", .name = "Extra", .boolean = true, .default_bool = true},
};
/* Malformed: a value twice (ACP_EINVAL). */
static const acp_config_value dup_values[] = {
    {.value = "a", .name = "A"},
    {.value = "a", .name = "A again"},
};
static const acp_config_option bad_options[] = {
    {.id = "dup", .name = "Dup", .values = dup_values, .nvalues = 2},
};

static const char *const tui_args[] = {"--login", NULL};
static const char *const tui_env[] = {"FUZZ_LOGIN=1", NULL};
static const acp_auth_method auth_methods[] = {
    {.id = "login", .name = "Log in", .description = "Signs in (the agent asks how)"},
    {.id = "tui", .name = "Terminal login", .terminal = true, .args = tui_args, .env = tui_env},
};

/* --- the engine's state ---------------------------------------------------------------------- */

#define NSLOTS 8
#define NAUTHS 4
#define NLIVE  64

/* What a turn that waits on the client keeps. */
typedef struct slot {
    acp_turn *t;
    acp_session *s;
    acp_tool_call *tc;
    acp_terminal *term;
    int again;          /* permission re-asks left once cancelled */
    bool end_on_cancel; /* cancel ends it at once; else its callbacks end it */
    bool keep_term;     /* the terminal is left for the runtime to release */
    bool race;          /* output, wait and kill at once; the first answer releases it */
    bool form;          /* its elicitation is a form (a URL one's answer is not checked) */
} slot;

typedef struct fz {
    acp_agent *a;
    unsigned variant;
    acp_turn *held;           /* a "wait" turn, ended by cancel */
    acp_turn *stubborn;       /* a "stubborn" turn: ignores cancel, the runtime force-ends it */
    acp_turn *stream;         /* a "stream N" turn, one chunk per writable callback */
    int left;                 /* chunks the stream still owes */
    bool done;                /* on_done ran */
    fuzz_store_faults faults; /* "storefail", "opfail": what the store's next calls fail */
    slot slots[NSLOTS];
    acp_auth *auths[NAUTHS]; /* authenticate requests held */
    acp_session *live[NLIVE];
    bool live_overflow; /* too many sessions to track: the liveness check is off */
    char elic_id[48];   /* the last URL elicitation's id, for "complete" */
    int logouts;
    json_t *form;     /* the form the engine asks with */
    json_t *created;  /* terminal ids the engine saw created: id -> count */
    json_t *released; /* terminal/release seen on the wire: id -> count */
    json_t *tools;    /* tool calls begun: id -> session id */
    bool unsure; /* raw updates were sent: history is not checked (nor after a failed commit) */
    bool eof;    /* the client closed our input */
    json_t *meta, *caps_meta;
} fz;

/* The input being run (one at a time). */
static fz *cur;

/* The status a call's callback gets: ACP_ECLOSED says the connection ended (agent.h), and
 * nothing the client sends can make it so while it has not. */
static void check_status(int st)
{
    if (st && st != ACP_EPROTO && st != ACP_ENOMEM && (st != ACP_ECLOSED || !cur->eof)) abort();
}

static void count(json_t *set, const char *id)
{
    json_t *n = json_object_get(set, id);
    json_object_set_new(set, id, json_integer(json_integer_value(n) + 1));
}

/* --- sessions and turns the engine knows ------------------------------------------------------ */

static void live_add(fz *z, acp_session *s)
{
    for (int i = 0; i < NLIVE; i++)
        if (!z->live[i]) {
            z->live[i] = s;
            return;
        }
    z->live_overflow = true;
}

static void live_del(fz *z, acp_session *s)
{
    for (int i = 0; i < NLIVE; i++)
        if (z->live[i] == s) z->live[i] = NULL;
}

/* A session's callback for a session that is closed: the runtime broke its promise. */
static void check_live(fz *z, acp_session *s)
{
    if (z->live_overflow) return;
    for (int i = 0; i < NLIVE; i++)
        if (z->live[i] == s) return;
    abort();
}

/* A slot for turn t; NULL when every slot is taken, and then t is ended. */
static slot *slot_new(fz *z, acp_turn *t)
{
    for (int i = 0; i < NSLOTS; i++)
        if (!z->slots[i].t) {
            z->slots[i] = (slot){.t = t, .s = acp_turn_session(t)};
            return &z->slots[i];
        }
    acp_turn_end(t, "end_turn");
    return NULL;
}

static slot *slot_of(fz *z, acp_turn *t)
{
    for (int i = 0; i < NSLOTS; i++)
        if (z->slots[i].t == t) return &z->slots[i];
    return NULL;
}

/* A turn's callback: the turn must still run, in the session the callback names. */
static void check_turn(slot *sl, acp_session *s)
{
    if (!sl->t || (s && (s != sl->s || acp_session_turn(s) != sl->t))) abort();
}

static void finish(slot *sl, const char *reason)
{
    acp_turn *t = sl->t;
    *sl = (slot){0};
    acp_turn_end(t, reason);
}

static void say(acp_turn *t, const char *kind, const char *text, size_t n)
{
    if (text) acp_turn_text(t, kind, NULL, text, n);
}

static void say_str(acp_turn *t, const char *text)
{
    if (text) say(t, NULL, text, strlen(text));
}

/* What went wrong, as a thought: the last error of the agent. */
static void say_err(acp_turn *t, int rc)
{
    if (rc) say_str(t, acp_error_last()->message);
}

/* The call that sl's turn waits for could not be made (rc): the turn says why and ends. */
static void call_failed(slot *sl, int rc)
{
    say_err(sl->t, rc);
    finish(sl, "end_turn");
}

/* A message outside any turn (what a session's callbacks report). */
static void say_session(acp_session *s, const char *text, size_t n)
{
    json_t *u = json_pack("{ss s{ss ss%}}", "sessionUpdate", "agent_message_chunk", "content",
                          "type", "text", "text", text ? text : "", text ? n : 0);
    if (u) acp_session_update(s, u);
    json_decref(u);
}

/* acp_tool_call_begin, the id remembered with its session for the history check at the end. */
static int tool_begin(acp_turn *t, const acp_tool_info *info, acp_tool_call **out)
{
    int rc = acp_tool_call_begin(t, info, out);
    if (!rc)
        json_object_set_new(cur->tools, acp_tool_call_id(*out),
                            json_string(acp_session_id(acp_turn_session(t))));
    return rc;
}

/* --- authentication --------------------------------------------------------------------------- */

static void auth_drop(fz *z, acp_auth *au)
{
    for (int i = 0; i < NAUTHS; i++)
        if (z->auths[i] == au) z->auths[i] = NULL;
}

static void auth_answer(fz *z, acp_auth *au, const char *how)
{
    auth_drop(z, au);
    if (!strcmp(how, "accept"))
        acp_auth_accept(au);
    else
        acp_auth_refuse(au, !strcmp(how, "refuse") ? 0 : -32603, "refused by the fuzz engine");
}

/* The oldest held authenticate request, answered with how ("accept", "refuse", ...). */
static bool auth_answer_held(fz *z, const char *how)
{
    for (int i = 0; i < NAUTHS; i++)
        if (z->auths[i]) {
            auth_answer(z, z->auths[i], how);
            return true;
        }
    return false;
}

static void auth_elicited(acp_session *s, int st, const char *action, const json_t *content,
                          const char *error, void *user)
{
    check_status(st);
    acp_auth *au = user;
    fz *z = cur;
    if (s || acp_auth_cancelled(au)) abort(); /* request-scoped, forgotten with the request */
    auth_answer(z, au, !st && !strcmp(action, "accept") ? "accept" : "refuse");
    if (!st && z->elic_id[0]) acp_agent_elicit_complete(z->a, z->elic_id);
}

/* The request's _meta.fuzz says what to do: accept (also when absent), refuse, hold, url (a
 * URL elicitation, then accept on its accept), form (the same with a form). */
static void engine_authenticate(acp_auth *au, const char *method_id, void *user)
{
    fz *z = user;
    if (strcmp(method_id, "login")) abort(); /* the terminal method never reaches us */
    const json_t *p = acp_auth_params(au);
    const char *how = json_string_value(json_object_get(json_object_get(p, "_meta"), "fuzz"));
    if (!how) how = "accept";
    bool url = !strcmp(how, "url"), form = !strcmp(how, "form");
    if (!url && !form && strcmp(how, "hold")) {
        auth_answer(z, au, how);
        return;
    }
    int i = 0;
    while (i < NAUTHS && z->auths[i]) i++;
    if (i == NAUTHS) {
        acp_auth_refuse(au, 0, "too many sign-ins at once");
        return;
    }
    z->auths[i] = au;
    if (url || form) {
        char id[48];
        acp_elicit e = {.struct_size = sizeof(acp_elicit),
                        .message = "Sign in",
                        .url = url ? "https://fuzz.invalid/login" : NULL,
                        .form = form ? z->form : NULL};
        int rc = acp_auth_elicit(au, &e, id, auth_elicited, au);
        if (!rc && url) memcpy(z->elic_id, id, sizeof id);
        if (rc) auth_answer(z, au, "refuse");
    }
}

static int engine_logout(acp_agent *a, char **message, void *user)
{
    fz *z = user;
    if (++z->logouts % 3) return 0;
    *message = strdup("cannot log out now");
    return -32000;
}

/* The mode and the category "mode" option move together: where the option offers the current
 * mode (every option list of this engine offers ask and code), it shows it. */
static void check_sync(const acp_session *s)
{
    const char *mode = acp_session_mode(s), *opt = acp_session_config(s, "mode");
    if (opt && (!strcmp(mode, "ask") || !strcmp(mode, "code")) && strcmp(mode, opt)) abort();
}

/* --- vetoes and session setup ---------------------------------------------------------------- */

/* "plan" needs yolo on; "ask" is refused while the model is cloud-big. */
static int engine_set_mode(acp_session *s, const char *mode_id, char **message, void *user)
{
    check_sync(s);
    bool yolo = false;
    acp_session_config_bool(s, "yolo", &yolo);
    if (!strcmp(mode_id, "plan") && !yolo) {
        *message = strdup("plan mode needs yolo");
        return -32000;
    }
    const char *model = acp_session_config(s, "model");
    if (!strcmp(mode_id, "ask") && model && !strcmp(model, "cloud-big"))
        return ACP_RPC_INVALID_PARAMS;
    /* An engine that changes state inside its hook: asking means no yolo; coding brings the
     * whole option list back (after a replacement without effort). */
    if (!strcmp(mode_id, "ask") && yolo) acp_session_set_config_bool(s, "yolo", false);
    if (!strcmp(mode_id, "code") && !acp_session_config(s, "effort"))
        acp_session_set_config_options(s, options, 4);
    return 0;
}

/* cloud-big is refused in ask mode; yolo cannot be switched off in plan mode. */
static int engine_set_config(acp_session *s, const char *config_id, const char *value, bool on,
                             char **message, void *user)
{
    check_sync(s);
    const char *mode = acp_session_mode(s);
    if (value && !strcmp(config_id, "model") && !strcmp(value, "cloud-big") && mode &&
        !strcmp(mode, "ask"))
        return ACP_RPC_INVALID_PARAMS;
    if (!value && !strcmp(config_id, "yolo") && !on && mode && !strcmp(mode, "plan")) {
        *message = strdup("stay yolo while planning");
        return -32001;
    }
    /* An engine that reacts inside its hook: more effort needs another option list. */
    if (value && !strcmp(config_id, "effort") && !strcmp(value, "high"))
        acp_session_set_config_options(s, options2, 3);
    return 0;
}

/* The opening request's _meta.fuzzSetup: one letter per change made before the answer. */
static void engine_session_setup(acp_session *s, void *user)
{
    const json_t *p = acp_session_open_params(s);
    const char *todo = json_string_value(json_object_get(json_object_get(p, "_meta"), "fuzzSetup"));
    for (; todo && *todo; todo++) {
        switch (*todo) {
        case 'r':
            acp_session_set_config_options(s, options2, 3);
            break;
        case 'e':
            acp_session_set_config_options(s, NULL, 0);
            break;
        case 'o':
            acp_session_set_config_options(s, options, 4);
            break;
        case 'x':
            acp_session_set_config_options(s, bad_options, 1);
            break;
        case 'p':
            acp_session_set_mode(s, "plan");
            break;
        case 'a':
            acp_session_set_mode(s, "ask");
            break;
        case 'q':
            acp_session_set_mode(s, "nope");
            break;
        case 'c':
            acp_session_set_config(s, "model", "small");
            break;
        case 'C':
            acp_session_set_config(s, "mode", "plan");
            break;
        case 'y':
            acp_session_set_config_bool(s, "yolo", true);
            break;
        case 'Y':
            acp_session_set_config_bool(s, "extra", false);
            break;
        case 'm': {
            json_t *m = json_pack("{ss}", "fuzz", "setup");
            acp_session_set_meta(s, m);
            json_decref(m);
            break;
        }
        case 'n':
            acp_session_set_meta(s, NULL);
            break;
        case 'z':
            acp_session_set_meta(s, json_object_get(p, "cwd"));
            break; /* not an object */
        case 's':  /* not open yet: refused, nothing sent */
            if (acp_session_call(s, "_fuzz/early", NULL, NULL, NULL) != ACP_ECLOSED) abort();
            break;
        }
    }
    check_sync(s);
}

static void engine_session_ready(acp_session *s, void *user)
{
    check_sync(s);
    live_add(user, s);
}

/* --- extension methods ------------------------------------------------------------------------ */

static void ext_answered(acp_conn *c, acp_msg *m, void *user)
{
    (void)acp_msg_result(m);
}

/* _fuzz/echo answers its params; with "auth" it answers the held authenticate request first,
 * with "complete" it completes a URL elicitation ("last": the last one made), with "call" it
 * calls the client's _fuzz/ping, with "fail" it answers an error. */
static void ext_echo(acp_conn *c, acp_req *req, void *user)
{
    fz *z = user;
    json_t *p = acp_req_params(req);
    const char *how = json_string_value(json_object_get(p, "auth"));
    if (how) auth_answer_held(z, how);
    const char *done = json_string_value(json_object_get(p, "complete"));
    if (done) acp_agent_elicit_complete(z->a, !strcmp(done, "last") ? z->elic_id : done);
    if (json_is_true(json_object_get(p, "call")))
        acp_agent_ext_call(z->a, "_fuzz/ping", json_pack("{si}", "n", 1), ext_answered, z, NULL);
    if (json_is_true(json_object_get(p, "fail"))) {
        acp_req_error(req, -32000, NULL, "the fuzz extension refused");
        return;
    }
    acp_req_reply(req, json_incref(p));
}

static void ext_note(acp_conn *c, acp_msg *m, void *user)
{
    fz *z = user;
    json_t *p = acp_msg_params(m);
    acp_agent_ext_notify(z->a, "_fuzz/noted", p ? json_incref(p) : NULL);
}

/* --- tool calls and permissions -----------------------------------------------------------------
 */

static const acp_perm_option perm_opts[] = {
    {"ok", "Allow", "allow_once"},
    {"always", "Always allow", "allow_always"},
    {"no", "Reject", "reject_once"},
};

static void perm_done(acp_turn *t, int st, const char *option, const char *kind, const char *error,
                      void *user)
{
    check_status(st);
    slot *sl = user;
    check_turn(sl, acp_turn_session(t));
    if (sl->t != t) abort();
    if (!st && option) { /* one of ours, with its kind */
        size_t i = 0;
        while (i < 3 && strcmp(option, perm_opts[i].id)) i++;
        if (i == 3 || strcmp(kind, perm_opts[i].kind)) abort();
    }
    if (st) {
        say_str(t, error);
        acp_tool_call_fail(sl->tc, error);
        finish(sl, "end_turn");
        return;
    }
    if (!option && sl->again-- > 0) { /* cancelled: a stubborn engine asks once more */
        if (!acp_turn_request_permission(t, sl->tc, perm_opts, 3, perm_done, sl)) return;
    }
    if (option && !strncmp(kind, "allow", 5))
        acp_tool_call_complete(
            sl->tc, &(acp_tool_info){.struct_size = sizeof(acp_tool_info), .text = "done"});
    else
        acp_tool_call_fail(sl->tc, option ? "rejected" : NULL);
    finish(sl, option ? "end_turn" : "cancelled");
}

/* "tool", "tool open" (left to the runtime to fail), "tool bad" (refused descriptions). */
static void cmd_tool(acp_turn *t, const char *arg)
{
    json_t *content = json_pack("[{ss s{ss ss}}]", "type", "content", "content", "type", "text",
                                "text", "before");
    json_t *locations = json_pack("[{ss si}]", "path", "/fuzz/a.txt", "line", 3);
    json_t *raw = json_pack("{ss}", "path", "a.txt");
    json_t *meta = json_pack("{sb}", "fuzz", 1);
    acp_tool_call *tc = NULL;
    if (!strcmp(arg, "bad")) {
        json_t *bad = json_pack("[{ss}]", "type", "diff");
        say_err(t, acp_tool_call_begin(t,
                                       &(acp_tool_info){.struct_size = sizeof(acp_tool_info),
                                                        .title = "x",
                                                        .kind = "nope"},
                                       NULL));
        say_err(t, acp_tool_call_begin(t,
                                       &(acp_tool_info){.struct_size = sizeof(acp_tool_info),
                                                        .title = "x",
                                                        .content = bad},
                                       NULL));
        say_err(t, acp_tool_call_begin(t,
                                       &(acp_tool_info){.struct_size = sizeof(acp_tool_info),
                                                        .title = "x",
                                                        .path = "rel"},
                                       NULL));
        say_err(t, acp_tool_call_begin(
                       t, &(acp_tool_info){.struct_size = sizeof(acp_tool_info), .kind = "read"},
                       NULL));
        json_decref(bad);
    } else {
        int rc = tool_begin(t,
                            &(acp_tool_info){.struct_size = sizeof(acp_tool_info),
                                             .title = "Read a.txt",
                                             .kind = "read",
                                             .content = content,
                                             .locations = locations,
                                             .raw_input = raw,
                                             .meta = meta,
                                             .path = "/fuzz/b.txt"},
                            &tc);
        say_err(t, rc);
        if (!rc && strcmp(arg, "open")) {
            acp_tool_call_update(tc, &(acp_tool_info){.struct_size = sizeof(acp_tool_info),
                                                      .status = "in_progress",
                                                      .text = "half"});
            acp_tool_call_complete(
                tc, &(acp_tool_info){.struct_size = sizeof(acp_tool_info), .raw_output = raw});
            say_err(t, acp_tool_call_update(tc, NULL)); /* after completed: refused */
        }
    }
    json_decref(content);
    json_decref(locations);
    json_decref(raw);
    json_decref(meta);
    acp_turn_end(t, "end_turn");
}

/* "ask": a tool call and its permission request; "ask2" asks again once cancelled; "ask!"
 * ends the turn at once on cancel. */
static void cmd_ask(fz *z, acp_turn *t, const char *arg)
{
    slot *sl = slot_new(z, t);
    if (!sl) return;
    sl->again = !strcmp(arg, "2");
    sl->end_on_cancel = !strcmp(arg, "!");
    int rc =
        tool_begin(t,
                   &(acp_tool_info){
                       .struct_size = sizeof(acp_tool_info), .title = "Edit a.txt", .kind = "edit"},
                   &sl->tc);
    if (!rc) rc = acp_turn_request_permission(t, sl->tc, perm_opts, 3, perm_done, sl);
    if (rc) call_failed(sl, rc);
}

/* --- fs --------------------------------------------------------------------------------------- */

static void turn_read_done(acp_session *s, int st, const char *text, size_t n, const char *error,
                           void *user)
{
    check_status(st);
    slot *sl = user;
    check_turn(sl, s);
    if (!st && !text) abort();
    if (st)
        say(sl->t, "agent_thought_chunk", error, strlen(error));
    else
        say(sl->t, NULL, text, n);
    finish(sl, "end_turn");
}

static void turn_write_done(acp_session *s, int st, const char *error, void *user)
{
    check_status(st);
    slot *sl = user;
    check_turn(sl, s);
    if (st) say_str(sl->t, error);
    finish(sl, "end_turn");
}

static void session_read_done(acp_session *s, int st, const char *text, size_t n, const char *error,
                              void *user)
{
    check_status(st);
    check_live(user, s);
    if (!st && !text) abort();
    say_session(s, st ? error : text, st ? strlen(error) : n);
}

static void session_write_done(acp_session *s, int st, const char *error, void *user)
{
    check_status(st);
    check_live(user, s);
    if (st) say_session(s, error, strlen(error));
}

/* "tread [PATH]", "twrite [PATH]" (the turn's), "sread [PATH]", "swrite [PATH]" (the session's:
 * the turn ends at once). PATH defaults to a.txt, relative to the cwd. */
static void cmd_fs(fz *z, acp_turn *t, const char *cmd, const char *path)
{
    acp_session *s = acp_turn_session(t);
    if (!*path) path = "a.txt";
    int rc;
    if (cmd[0] == 's') {
        rc = cmd[1] == 'r'
                 ? acp_session_read_text_file(s, path, 0, 0, session_read_done, z)
                 : acp_session_write_text_file(s, path, "new\n", 4, session_write_done, z);
        say_err(t, rc);
        acp_turn_end(t, "end_turn");
        return;
    }
    slot *sl = slot_new(z, t);
    if (!sl) return;
    rc = cmd[1] == 'r' ? acp_turn_read_text_file(t, path, 2, 10, turn_read_done, sl)
                       : acp_turn_write_text_file(t, path, "x\0y", 3, turn_write_done, sl);
    if (rc) call_failed(sl, rc);
}

/* --- terminals ---------------------------------------------------------------------------------
 */

/* A turn's terminal: create, output, wait_for_exit, kill, release, one step per answer. A
 * failed step (or a cancelled turn) releases it and ends the turn. */
static void term_step_end(slot *sl, const char *reason)
{
    if (sl->term && !sl->keep_term) acp_terminal_release(sl->term);
    sl->term = NULL;
    finish(sl, reason);
}

/* A terminal's callback: the handle must not have been released (agent.h: no callback of it
 * runs after). */
static void check_term(slot *sl, acp_terminal *term)
{
    check_turn(sl, acp_terminal_session(term));
    if (sl->term != term) abort();
}

/* What a callback of a turn's terminal checks first; a failure is said as a thought. */
static void term_answered(slot *sl, acp_terminal *term, int st, const char *error)
{
    check_status(st);
    check_term(sl, term);
    if (st) say(sl->t, "agent_thought_chunk", error, strlen(error));
}

static void call_done(acp_turn *t, int status, const json_t *result, const char *error, void *user);

/* "term race": whichever of output, wait_for_exit and kill is answered first releases the
 * terminal (the other two are forgotten with it) and the turn waits for one more call. */
static void race_won(slot *sl, acp_terminal *term, int st, const char *error)
{
    term_answered(sl, term, st, error);
    acp_terminal_release(term);
    sl->term = NULL;
    acp_tool_call_complete(sl->tc, NULL);
    sl->end_on_cancel = true;
    if (acp_turn_cancelled(sl->t) || acp_turn_call(sl->t, "_fuzz/after", NULL, call_done, cur))
        finish(sl, "end_turn");
}

static void race_output(acp_terminal *term, int st, const char *out, size_t n, bool truncated,
                        const acp_terminal_exit *e, const char *error, void *user)
{
    race_won(user, term, st, error);
}

static void race_exit(acp_terminal *term, int st, const acp_terminal_exit *e, const char *error,
                      void *user)
{
    race_won(user, term, st, error);
}

static void race_kill(acp_terminal *term, int st, const char *error, void *user)
{
    race_won(user, term, st, error);
}

static void term_killed(acp_terminal *term, int st, const char *error, void *user)
{
    slot *sl = user;
    term_answered(sl, term, st, error);
    acp_tool_call_complete(sl->tc, NULL);
    term_step_end(sl, "end_turn");
}

static void term_exited(acp_terminal *term, int st, const acp_terminal_exit *e, const char *error,
                        void *user)
{
    slot *sl = user;
    term_answered(sl, term, st, error);
    if (st || acp_turn_cancelled(sl->t) || acp_terminal_kill(term, term_killed, sl))
        term_step_end(sl, "end_turn");
}

static void term_output(acp_terminal *term, int st, const char *out, size_t n, bool truncated,
                        const acp_terminal_exit *e, const char *error, void *user)
{
    slot *sl = user;
    term_answered(sl, term, st, error);
    if (!st && !out) abort();
    if (!st) say(sl->t, NULL, out, n);
    if (st || acp_turn_cancelled(sl->t) || acp_terminal_wait_for_exit(term, term_exited, sl))
        term_step_end(sl, "end_turn");
}

static void term_created(acp_terminal *term, int st, const char *error, void *user)
{
    check_status(st);
    slot *sl = user;
    check_term(sl, term);
    if (st) {
        if (!error || acp_terminal_id(term)) abort();
        acp_terminal_release(term); /* a failed create's handle: a no-op */
        sl->term = NULL;
        say_str(sl->t, error);
        finish(sl, "end_turn");
        return;
    }
    if (!acp_terminal_id(term)) abort();
    count(cur->created, acp_terminal_id(term));
    tool_begin(sl->t,
               &(acp_tool_info){.struct_size = sizeof(acp_tool_info),
                                .title = "Run ls",
                                .kind = "execute",
                                .terminal = term},
               &sl->tc);
    if (sl->keep_term) { /* left for the runtime to release with the turn */
        finish(sl, "end_turn");
        return;
    }
    if (sl->race) {
        if (acp_terminal_output(term, race_output, sl) ||
            acp_terminal_wait_for_exit(term, race_exit, sl) ||
            acp_terminal_kill(term, race_kill, sl))
            term_step_end(sl, "end_turn");
        return;
    }
    if (acp_turn_cancelled(sl->t) || acp_terminal_output(term, term_output, sl))
        term_step_end(sl, "end_turn");
}

static void sterm_exited(acp_terminal *term, int st, const acp_terminal_exit *e, const char *error,
                         void *user)
{
    check_status(st);
    check_live(user, acp_terminal_session(term));
    if (st) say_session(acp_terminal_session(term), error, strlen(error));
    acp_terminal_release(term);
}

static void sterm_output(acp_terminal *term, int st, const char *out, size_t n, bool truncated,
                         const acp_terminal_exit *e, const char *error, void *user)
{
    check_status(st);
    acp_session *s = acp_terminal_session(term);
    check_live(user, s);
    say_session(s, st ? error : out, st ? strlen(error) : n);
    if (st || acp_terminal_wait_for_exit(term, sterm_exited, user)) acp_terminal_release(term);
}

static void sterm_created(acp_terminal *term, int st, const char *error, void *user)
{
    check_status(st);
    check_live(user, acp_terminal_session(term));
    if (st) return;
    count(cur->created, acp_terminal_id(term));
    if (acp_terminal_output(term, sterm_output, user)) acp_terminal_release(term);
}

/* "term" (the whole chain), "term keep" (created, then left to the runtime), "term leave" (the
 * turn ends before the client answers the create), "term drop" (released before the answer),
 * "term bad" (refused options), "sterm" (the session's: released after its exit, or at close). */
static void cmd_term(fz *z, acp_turn *t, const char *cmd, const char *arg)
{
    static const char *const args[] = {"-l", "/fuzz", NULL};
    static const char *const env[] = {"LANG=C", "EMPTY=", NULL};
    static const char *const bad_env[] = {"=x", NULL};
    acp_terminal_opts o = {.struct_size = sizeof(acp_terminal_opts),
                           .command = "ls",
                           .args = args,
                           .env = env,
                           .cwd = "/fuzz",
                           .output_byte_limit = 4096};
    acp_terminal *term = NULL;
    if (!strcmp(cmd, "sterm")) {
        say_err(t, acp_session_terminal_create(acp_turn_session(t), &o, sterm_created, z, &term));
        acp_turn_end(t, "end_turn");
        return;
    }
    if (!strcmp(arg, "bad")) {
        say_err(
            t, acp_turn_terminal_create(
                   t, &(acp_terminal_opts){.struct_size = sizeof(acp_terminal_opts), .command = ""},
                   NULL, NULL, &term));
        o.env = bad_env;
        say_err(t, acp_turn_terminal_create(t, &o, NULL, NULL, &term));
        o.env = env;
        o.cwd = "/etc";
        say_err(t, acp_turn_terminal_create(t, &o, NULL, NULL, &term));
        o.cwd = "fuzz";
        say_err(t, acp_turn_terminal_create(t, &o, NULL, NULL, &term));
        acp_turn_end(t, "end_turn");
        return;
    }
    slot *sl = slot_new(z, t);
    if (!sl) return;
    sl->keep_term = !strcmp(arg, "keep");
    sl->race = !strcmp(arg, "race");
    int rc = acp_turn_terminal_create(t, &o, term_created, sl, &sl->term);
    if (rc) {
        call_failed(sl, rc);
    } else if (!strcmp(arg, "leave")) {
        sl->term = NULL;
        finish(sl, "end_turn"); /* the runtime releases it once the client answers */
    } else if (!strcmp(arg, "drop")) {
        acp_terminal_release(sl->term);
        sl->term = NULL;
        finish(sl, "end_turn");
    }
}

/* --- elicitation -------------------------------------------------------------------------------
 */

/* What the form asks: an accepted answer must fit it, whatever the client sent. */
static json_t *make_form(void)
{
    return json_pack("{ss s{s{ss} s{ss} s{ss s[ss]} s{ss} s{ss s{s[ss]}} s{ss}} s[s]}", "type",
                     "object", "properties", "name", "type", "string", "count", "type", "integer",
                     "color", "type", "string", "enum", "red", "green", "agree", "type", "boolean",
                     "tags", "type", "array", "items", "enum", "a", "b", "ratio", "type", "number",
                     "required", "name");
}

static bool tags_ok(const json_t *v)
{
    size_t i;
    json_t *tag;
    json_array_foreach(v, i, tag)
    {
        const char *s = json_string_value(tag);
        if (!s || (strcmp(s, "a") && strcmp(s, "b"))) return false;
    }
    return json_is_array(v);
}

static void check_form_answer(const char *action, const json_t *content)
{
    if (!content) return;
    if (strcmp(action, "accept") || !json_is_string(json_object_get(content, "name"))) abort();
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)content, k, v)
    {
        bool ok = !strcmp(k, "name")    ? json_is_string(v)
                  : !strcmp(k, "count") ? json_is_integer(v) || json_is_real(v)
                  : !strcmp(k, "color")
                      ? json_is_string(v) && (!strcmp(json_string_value(v), "red") ||
                                              !strcmp(json_string_value(v), "green"))
                  : !strcmp(k, "agree") ? json_is_boolean(v)
                  : !strcmp(k, "tags")  ? tags_ok(v)
                  : !strcmp(k, "ratio") ? json_is_number(v)
                                        : false;
        if (!ok) abort();
    }
}

static void turn_elicited(acp_session *s, int st, const char *action, const json_t *content,
                          const char *error, void *user)
{
    check_status(st);
    slot *sl = user;
    check_turn(sl, s);
    if (st) {
        say_str(sl->t, error);
    } else {
        if (!action) abort();
        say_str(sl->t, action);
        if (sl->form) check_form_answer(action, content);
        char *txt = content ? json_dumps(content, JSON_COMPACT) : NULL;
        say_str(sl->t, txt);
        free(txt);
        /* A URL elicitation's interaction is over once the client accepted it. */
        if (!strcmp(action, "accept") && cur->elic_id[0])
            acp_agent_elicit_complete(cur->a, cur->elic_id);
    }
    acp_tool_call_complete(sl->tc, NULL);
    finish(sl, acp_turn_cancelled(sl->t) ? "cancelled" : "end_turn");
}

static void session_elicited(acp_session *s, int st, const char *action, const json_t *content,
                             const char *error, void *user)
{
    check_status(st);
    check_live(user, s);
    say_session(s, st ? error : action, strlen(st ? error : action));
}

static void session_form_elicited(acp_session *s, int st, const char *action, const json_t *content,
                                  const char *error, void *user)
{
    if (!st) check_form_answer(action, content);
    session_elicited(s, st, action, content, error, user);
}

/* "form", "url" (the turn's, about a tool call; "form!" / "url!" end at once on cancel), "sform",
 * "surl" (the session's: the turn ends at once), "complete" (the last URL elicitation's
 * elicitation/complete, also twice: the second is refused). */
static void cmd_elicit(fz *z, acp_turn *t, const char *cmd, const char *arg)
{
    acp_session *s = acp_turn_session(t);
    bool url = !strcmp(cmd, "url") || !strcmp(cmd, "surl");
    acp_elicit e = {.struct_size = sizeof(acp_elicit),
                    .message = "Fill this in",
                    .form = url ? NULL : z->form,
                    .url = url ? "https://fuzz.invalid/form" : NULL};
    char id[48];
    if (cmd[0] == 's') {
        int rc = acp_session_elicit(s, &e, id, url ? session_elicited : session_form_elicited, z);
        if (!rc && url) memcpy(z->elic_id, id, sizeof id);
        say_err(t, rc);
        acp_turn_end(t, "end_turn");
        return;
    }
    slot *sl = slot_new(z, t);
    if (!sl) return;
    sl->end_on_cancel = !strcmp(arg, "!");
    sl->form = !url;
    int rc = tool_begin(t,
                        &(acp_tool_info){.struct_size = sizeof(acp_tool_info),
                                         .title = "Ask the user",
                                         .kind = "other"},
                        &sl->tc);
    e.tool_call = sl->tc;
    if (!rc) rc = acp_turn_elicit(t, &e, id, turn_elicited, sl);
    if (!rc && url) memcpy(z->elic_id, id, sizeof id);
    if (rc) call_failed(sl, rc);
}

/* --- raw calls ----------------------------------------------------------------------------------
 */

static void call_done(acp_turn *t, int status, const json_t *result, const char *error, void *user)
{
    check_status(status);
    fz *z = user;
    slot *sl = slot_of(z, t);
    if (!sl) abort();
    check_turn(sl, acp_turn_session(t));
    if (status == 0) {
        const char *c = json_string_value(json_object_get(result, "content"));
        if (c) acp_turn_text(t, NULL, NULL, c, strlen(c));
    } else if (error) {
        acp_turn_text(t, "agent_thought_chunk", NULL, error, strlen(error));
    }
    finish(sl, "end_turn");
}

static void session_call_done(acp_session *s, int status, const json_t *result, const char *error,
                              void *user)
{
    check_status(status);
    check_live(user, s);
    char *txt = result ? json_dumps(result, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    const char *said = status ? error : txt;
    if (said) say_session(s, said, strlen(said));
    free(txt);
}

/* "read", "write", "perm", "tcall METHOD" (the turn's, raw), "scall METHOD" (the session's). */
static void cmd_call(fz *z, acp_turn *t, const char *text)
{
    if (!strncmp(text, "scall", 5)) {
        const char *m = text[5] == ' ' ? text + 6 : "_fuzz/ping";
        say_err(t, acp_session_call(acp_turn_session(t), m, json_pack("{si}", "n", 1),
                                    session_call_done, z));
        acp_turn_end(t, "end_turn");
        return;
    }
    slot *sl = slot_new(z, t);
    if (!sl) return;
    sl->end_on_cancel = true;
    json_t *p;
    const char *m;
    if (!strncmp(text, "tcall", 5)) {
        m = text[5] == ' ' ? text + 6 : "_fuzz/ping";
        p = json_object();
    } else if (!strcmp(text, "read")) {
        m = "fs/read_text_file";
        p = json_pack("{ss}", "path", "/fuzz/a.txt");
    } else if (!strcmp(text, "write")) {
        m = "fs/write_text_file";
        p = json_pack("{ss ss}", "path", "/fuzz/a.txt", "content", "x");
    } else {
        m = "session/request_permission";
        p = json_pack("{s{ss} s[{ss ss ss}]}", "toolCall", "toolCallId", "tc_1", "options",
                      "optionId", "ok", "name", "Allow", "kind", "allow_once");
    }
    int rc = acp_turn_call(t, m, p, call_done, z);
    if (rc) call_failed(sl, rc);
}

/* --- updates and the engine's own changes ----------------------------------------------------- */

/* notice, compaction (a fallback message when the client takes none), usage, commands. */
static void cmd_update(acp_turn *t, const char *cmd)
{
    json_t *u = NULL;
    if (!strcmp(cmd, "notice")) {
        u = json_pack("{ss ss ss}", "sessionUpdate", "notice", "severity", "warning", "title",
                      "careful");
    } else if (!strcmp(cmd, "compact")) {
        u = json_pack("{ss ss ss}", "sessionUpdate", "compaction_update", "compactionId", "cmp_1",
                      "status", "in_progress");
        int rc = acp_turn_update(t, u);
        json_decref(u);
        if (rc == ACP_ENOTSUP) {
            say_str(t, "context compacted");
            acp_turn_end(t, "end_turn");
            return;
        }
        u = json_pack("{ss ss s{ss ss}}", "sessionUpdate", "compaction_summary_chunk",
                      "compactionId", "cmp_1", "content", "type", "text", "text", "summary");
        acp_turn_update(t, u);
        json_decref(u);
        u = json_pack("{ss ss ss}", "sessionUpdate", "compaction_update", "compactionId", "cmp_1",
                      "status", "completed");
    } else if (!strcmp(cmd, "usage")) {
        u = json_pack("{ss si si}", "sessionUpdate", "usage_update", "used", 10, "size", 1000);
    } else if (!strcmp(cmd, "cmds")) {
        u = json_pack("{ss s[{ss ss}]}", "sessionUpdate", "available_commands_update",
                      "availableCommands", "name", "ask", "description", "asks");
    } else { /* the runtime's own kinds: refused */
        u = json_pack("{ss ss}", "sessionUpdate", "current_mode_update", "currentModeId", "ask");
    }
    int rc = acp_turn_update(t, u);
    json_decref(u);
    if (rc == ACP_ENOTSUP) say_str(t, "notice: careful");
    say_err(t, rc);
    acp_turn_end(t, "end_turn");
}

/* "mode ID", "set ID VALUE", "setb ID 0|1", "opts" (replaced), "opts0" (none), "optsbad",
 * "opts4" (the engine's again), "meta" (outside setup). */
static void cmd_config(acp_turn *t, const char *text)
{
    acp_session *s = acp_turn_session(t);
    char id[64] = "", value[64] = "";
    int rc = 0;
    if (!strncmp(text, "mode ", 5)) {
        rc = acp_session_set_mode(s, text + 5);
    } else if (!strncmp(text, "setb ", 5) && sscanf(text + 5, "%63s %63s", id, value) == 2) {
        rc = acp_session_set_config_bool(s, id, value[0] == '1');
    } else if (!strncmp(text, "set ", 4) && sscanf(text + 4, "%63s %63s", id, value) == 2) {
        rc = acp_session_set_config(s, id, value);
    } else if (!strcmp(text, "opts")) {
        rc = acp_session_set_config_options(s, options2, 3);
    } else if (!strcmp(text, "opts0")) {
        rc = acp_session_set_config_options(s, NULL, 0);
    } else if (!strcmp(text, "opts4")) {
        rc = acp_session_set_config_options(s, options, 4);
    } else if (!strcmp(text, "optsbad")) {
        rc = acp_session_set_config_options(s, bad_options, 1);
    } else if (!strcmp(text, "meta")) {
        json_t *m = json_pack("{ss}", "late", "yes");
        rc = acp_session_set_meta(s, m);
        json_decref(m);
    }
    say_err(t, rc);
    check_sync(s);
    say_str(t, acp_session_mode(s));
    say_str(t, acp_session_config(s, "model"));
    acp_turn_end(t, "end_turn");
}

/* --- the prompt: its first text picks what the turn does ---------------------------------- */

static const char *first_text(const json_t *prompt)
{
    const char *s = json_string_value(json_object_get(json_array_get(prompt, 0), "text"));
    return s ? s : "";
}

static void stream_more(acp_turn *t, void *user)
{
    fz *z = user;
    if (z->left-- > 0 && !acp_turn_cancelled(t)) {
        if (acp_turn_writable(t)) acp_turn_text(t, NULL, NULL, "chunk", 5);
        acp_turn_on_writable(t, stream_more, z);
        return;
    }
    z->stream = NULL;
    acp_turn_end(t, "end_turn");
}

/* The word before the first space into cmd (at most 15 bytes); returns what follows it. */
static const char *split(const char *text, char cmd[16])
{
    size_t n = strcspn(text, " ");
    snprintf(cmd, 16, "%.*s", (int)(n < 15 ? n : 15), text);
    return text[n] ? text + n + 1 : text + n;
}

/* What the turn does, from text ("storefail X" runs X with the next commit failing). */
static void run(fz *z, acp_turn *t, const json_t *prompt, const char *text)
{
    acp_session *s = acp_turn_session(t);
    char cmd[16];
    const char *arg = split(text, cmd);
    if (!strcmp(text, "wait")) {
        acp_turn_text(t, NULL, NULL, "waiting", 7);
        z->held = t;
        return;
    }
    if (!strcmp(text, "stubborn")) {
        acp_turn_text(t, NULL, NULL, "not stopping", 12);
        z->stubborn = t;
        return;
    }
    if (!strcmp(text, "storefail")) {
        z->faults.commit = true;
        acp_turn_text(t, NULL, NULL, "lost", 4);
        return; /* the runtime answers the turn when the commit fails */
    }
    if (!strcmp(cmd, "storefail")) { /* with what the turn does in flight */
        z->faults.commit = true;
        run(z, t, prompt, arg);
        return;
    }
    if (!strcmp(cmd, "opfail")) { /* "opfail LETTERS [CMD]" */
        char ops[16];
        const char *rest = split(arg, ops);
        snprintf(z->faults.ops, sizeof z->faults.ops, "%s", ops);
        run(z, t, prompt, rest);
        return;
    }
    int n;
    if (sscanf(text, "stream %d", &n) == 1 && !z->stream) {
        z->stream = t;
        z->left = n < 0 ? 0 : n > 50 ? 50 : n;
        acp_turn_on_writable(t, stream_more, z);
        return;
    }
    if (!strcmp(text, "fail")) {
        acp_turn_fail(t, ACP_RPC_INTERNAL_ERROR, "engine failed: %s", text);
        return;
    }
    if (!strcmp(cmd, "stop")) { /* any stop reason, valid or not */
        acp_turn_end(t, arg);
        return;
    }
    if (!strcmp(cmd, "raw")) { /* an update as untrusted JSON text */
        z->unsure = true;
        acp_turn_update_raw(t, arg, strlen(arg), false);
        acp_session_update_raw(s, arg, strlen(arg), false);
        acp_turn_end(t, "end_turn");
        return;
    }
    if (!strcmp(cmd, "title")) {
        json_t *u = json_pack("{ss ss}", "sessionUpdate", "session_info_update", "title", arg);
        if (u) acp_session_update(s, u);
        json_decref(u);
        acp_turn_end(t, "end_turn");
        return;
    }
    if (!strcmp(text, "read") || !strcmp(text, "write") || !strcmp(text, "perm") ||
        !strcmp(cmd, "tcall") || !strcmp(cmd, "scall")) {
        cmd_call(z, t, text); /* the corpus knows our outgoing ids count from 0 */
        return;
    }
    if (!strcmp(cmd, "tool")) {
        cmd_tool(t, arg);
        return;
    }
    if (!strncmp(cmd, "ask", 3)) {
        cmd_ask(z, t, cmd + 3);
        return;
    }
    if (!strcmp(cmd, "tread") || !strcmp(cmd, "twrite") || !strcmp(cmd, "sread") ||
        !strcmp(cmd, "swrite")) {
        cmd_fs(z, t, cmd, arg);
        return;
    }
    if (!strcmp(cmd, "term") || !strcmp(cmd, "sterm")) {
        cmd_term(z, t, cmd, arg);
        return;
    }
    if (!strncmp(cmd, "form", 4) || !strncmp(cmd, "url", 3)) {
        const char *bang = cmd[0] == 'f' ? cmd + 4 : cmd + 3;
        char base[8];
        snprintf(base, sizeof base, "%s", cmd[0] == 'f' ? "form" : "url");
        cmd_elicit(z, t, base, bang);
        return;
    }
    if (!strcmp(cmd, "sform") || !strcmp(cmd, "surl")) {
        cmd_elicit(z, t, cmd, "");
        return;
    }
    if (!strcmp(cmd, "complete")) {
        say_err(t, acp_agent_elicit_complete(z->a, *arg ? arg : z->elic_id));
        acp_turn_end(t, "end_turn");
        return;
    }
    if (!strcmp(cmd, "notice") || !strcmp(cmd, "compact") || !strcmp(cmd, "usage") ||
        !strcmp(cmd, "cmds") || !strcmp(cmd, "modeupdate")) {
        cmd_update(t, cmd);
        return;
    }
    if (!strcmp(cmd, "mode") || !strcmp(cmd, "set") || !strcmp(cmd, "setb") ||
        !strncmp(cmd, "opts", 4) || !strcmp(cmd, "meta")) {
        cmd_config(t, text);
        return;
    }
    if (!strcmp(cmd, "auth")) { /* answers a held authenticate request */
        if (!auth_answer_held(z, *arg ? arg : "accept")) say_str(t, "no sign-in is waiting");
        acp_turn_end(t, "end_turn");
        return;
    }
    if (!strcmp(cmd, "ext")) {
        say_err(t, acp_agent_ext_notify(z->a, "_fuzz/hello", json_pack("{ss}", "from", "turn")));
        say_err(t, acp_agent_ext_call(z->a, "_fuzz/ping", NULL, ext_answered, z, NULL));
        say_err(t, acp_agent_ext_notify(z->a, "session/update", NULL)); /* not an extension */
        acp_turn_end(t, "end_turn");
        return;
    }
    /* Echo every block back, with a tool call and a plan, so history has every kind. */
    char mid[48];
    acp_agent_new_id("msg_", mid);
    size_t i;
    json_t *b;
    json_array_foreach(prompt, i, b)
    {
        const char *bt = json_string_value(json_object_get(b, "text"));
        if (bt) acp_turn_text(t, NULL, mid, bt, strlen(bt));
    }
    json_t *u = json_pack("{ss ss ss ss}", "sessionUpdate", "tool_call", "toolCallId", "tc_1",
                          "title", "echo", "status", "completed");
    if (u) acp_turn_update(t, u);
    json_decref(u);
    u = json_pack("{ss s[{ss ss ss}]}", "sessionUpdate", "plan", "entries", "content", text,
                  "priority", "low", "status", "pending");
    if (u) acp_turn_update(t, u);
    json_decref(u);
    acp_turn_end(t, "end_turn");
}

static void engine_prompt(acp_turn *t, const json_t *prompt, void *user)
{
    check_sync(acp_turn_session(t));
    run(user, t, prompt, first_text(prompt));
}

static void engine_cancel(acp_turn *t, void *user)
{
    fz *z = user;
    if (z->stubborn == t) { /* never ends it: close, delete or shutdown force-end it */
        z->stubborn = NULL;
        return;
    }
    slot *sl = slot_of(z, t);
    if (sl) {
        /* Else its callbacks end it: a permission or an elicitation resolves cancelled at
         * once, other calls when the client answers their $/cancel_request. Not after a store
         * failure: its calls are forgotten, no callback comes (an update of a turn whose
         * response is decided is refused ACP_ECLOSED before anything is looked at). */
        if (sl->end_on_cancel || acp_turn_update(t, NULL) == ACP_ECLOSED)
            term_step_end(sl, "cancelled");
        return;
    }
    if (z->held == t) z->held = NULL;
    if (z->stream == t) z->stream = NULL;
    acp_turn_end(t, "cancelled");
}

static void engine_session_free(acp_session *s, void *user)
{
    fz *z = user;
    if (z->held && acp_turn_session(z->held) == s) z->held = NULL;
    if (z->stubborn && acp_turn_session(z->stubborn) == s) z->stubborn = NULL;
    if (z->stream && acp_turn_session(z->stream) == s) z->stream = NULL;
    for (int i = 0; i < NSLOTS; i++) /* force-ended: no turn of s runs any more */
        if (z->slots[i].s == s) z->slots[i] = (slot){0};
    live_del(z, s);
}

static void on_log(const char *line, void *user)
{
    if (getenv("ACP_FUZZ_TRACE")) fprintf(stderr, "log: %s\n", line);
}

static void on_done(acp_agent *a, void *user)
{
    ((fz *)user)->done = true;
}

/* The last status a session's history gives tool call id. */
typedef struct last_status {
    const char *id;
    char status[16];
} last_status;

static int history_line(void *user, int64_t seq, const char *json, size_t n)
{
    last_status *ls = user;
    json_t *u = json_loadb(json, n, 0, NULL);
    const char *id = json_string_value(json_object_get(u, "toolCallId"));
    const char *st = json_string_value(json_object_get(u, "status"));
    if (id && st && !strcmp(id, ls->id)) snprintf(ls->status, sizeof ls->status, "%s", st);
    json_decref(u);
    return 0;
}

/* No stored history keeps a tool call of ours that never finishes (agent.h: one still open
 * when its turn ends is reported failed), unless a commit failed (what it held is lost) or raw
 * updates could have patched it. */
static void check_tools(fz *z, acp_store *st)
{
    if (z->unsure || z->faults.commits_failed) return;
    const char *id;
    json_t *sid;
    json_object_foreach(z->tools, id, sid)
    {
        last_status ls = {.id = id};
        int64_t last;
        bool done;
        int rc =
            acp_store_replay(st, json_string_value(sid), 0, 0, history_line, &ls, &last, &done);
        if (rc == ACP_ENOTFOUND) continue; /* deleted */
        if (rc || (strcmp(ls.status, "completed") && strcmp(ls.status, "failed"))) abort();
    }
}

/* --- driving it ---------------------------------------------------------------------------- */

/* A terminal/release on the wire: counted by terminalId. */
static void seen_line(const char *line, size_t n, void *user)
{
    fz *z = user;
    static const char rel[] = "\"method\":\"terminal/release\"";
    if (!memmem(line, n, rel, sizeof rel - 1)) return;
    json_t *m = json_loadb(line, n, 0, NULL);
    const char *id = json_string_value(json_object_get(json_object_get(m, "params"), "terminalId"));
    if (!id) abort();
    count(z->released, id);
    json_decref(m);
}

/* Every output line must be one valid JSON value. */
static void drain(fz *z)
{
    fuzz_agent_drain(z->a, seen_line, z);
}

static void turn(uv_loop_t *loop, fz *z)
{
    uv_run(loop, UV_RUN_NOWAIT);
    drain(z);
}

/* A stored session "s1" with some history, so load, resume, list, delete and prompts have
 * something to work on without knowing the random ids session/new makes. */
static acp_store *store_with_session(void)
{
    acp_store *st;
    if (acp_store_open(":memory:", &st)) abort();
    acp_store_session s = {.struct_size = sizeof(acp_store_session),
                           .id = "s1",
                           .cwd = "/fuzz",
                           .add_dirs = "[\"/fuzz2\"]"};
    acp_store_now(s.created_at);
    memcpy(s.updated_at, s.created_at, sizeof s.updated_at);
    static const char *const h[] = {
        "{\"sessionUpdate\":\"user_message_chunk\",\"content\":{\"type\":\"text\",\"text\":\"hi\"}"
        "}",
        "{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{\"type\":\"text\",\"text\":\"hi\"}"
        "}",
        "{\"sessionUpdate\":\"tool_call\",\"toolCallId\":\"tc_0\",\"title\":\"t\"}"};
    if (acp_store_create(st, &s)) abort();
    for (int i = 0; i < 3; i++)
        if (acp_store_append(st, "s1", 0, h[i], strlen(h[i]))) abort();
    if (acp_store_commit(st, NULL)) abort();
    return st;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uv_loop_t loop;
    if (uv_loop_init(&loop)) abort();
    acp_store *st = store_with_session();
    fz z = {0};
    fuzz_store_wrap(st, &z.faults);
    cur = &z;
    fuzz_ids_reset();
    /* The first byte picks the piece size, so lines split at odd offsets are explored too. */
    size_t piece = size ? (size_t)data[0] % 61 + 1 : 1;
    if (size && data[0] < 0x20) { /* the variant byte: not input */
        z.variant = data[0];
        data++;
        size--;
    }
    bool hooks = !(z.variant & V_NO_HOOKS);
    z.form = make_form();
    z.created = json_object();
    z.released = json_object();
    z.tools = json_object();
    z.meta = json_pack("{s{si}}", "fuzz", "v", 1);
    z.caps_meta = json_pack("{s{}}", "_fuzz/echo");
    if (!z.form || !z.created || !z.released || !z.tools || !z.meta || !z.caps_meta) abort();
    acp_engine e = {.struct_size = sizeof(acp_engine),
                    .name = "fuzz",
                    .title = "Fuzz",
                    .version = "1",
                    .image = true,
                    .embedded_context = true,
                    .disable = (z.variant & V_DISABLE_A
                                    ? ACP_DISABLE_LOAD | ACP_DISABLE_LIST | ACP_DISABLE_ADD_DIRS
                                    : 0) |
                               (z.variant & V_DISABLE_B
                                    ? ACP_DISABLE_RESUME | ACP_DISABLE_CLOSE | ACP_DISABLE_DELETE
                                    : 0),
                    .meta = z.meta,
                    .caps_meta = z.caps_meta,
                    .modes = modes,
                    .nmodes = 3,
                    .default_mode = "code",
                    .config_options = options,
                    .nconfig_options = 4,
                    .set_mode = hooks ? engine_set_mode : NULL,
                    .set_config = hooks ? engine_set_config : NULL,
                    .auth_methods = auth_methods,
                    .nauth_methods = 2,
                    .auth_required = z.variant & V_AUTH,
                    .authenticate = engine_authenticate,
                    .logout = hooks ? engine_logout : NULL,
                    .session_setup = hooks ? engine_session_setup : NULL,
                    .session_ready = engine_session_ready,
                    .prompt = engine_prompt,
                    .cancel = engine_cancel,
                    .session_free = engine_session_free,
                    .user = &z};
    /* The MCP connect wait is a timer that never fires under NOWAIT; spawns fail at once. */
    acp_agent_opts o = {.struct_size = sizeof(acp_agent_opts),
                        .on_log = on_log,
                        .on_done = on_done,
                        .user = &z,
                        .mcp_connect_timeout_ms = 60000};
    if (acp_agent_new(&loop, st, &e, &o, &z.a)) abort();
    acp_agent *a = z.a;
    if (acp_agent_on_ext(a, "_fuzz/echo", ext_echo, NULL, &z) ||
        acp_agent_on_ext(a, "_fuzz/note", NULL, ext_note, &z) ||
        acp_agent_on_ext(a, "session/x", ext_echo, NULL, &z) != ACP_EINVAL)
        abort();

    for (size_t i = 0; i < size; i += piece) {
        acp_conn_recv(acp_agent_conn(a), (const char *)data + i,
                      size - i < piece ? size - i : piece);
        turn(&loop, &z);
    }
    for (int i = 0; i < 4; i++) turn(&loop, &z);
    if (z.variant & V_EOF) { /* as the stdio transport does on EOF: then the shutdown */
        z.eof = true;
        acp_conn_eof(acp_agent_conn(a));
        for (int i = 0; i < 4; i++) turn(&loop, &z);
    }

    acp_agent_shutdown(a);
    for (int i = 0; i < 1000 && !z.done; i++) {
        uv_run(&loop, UV_RUN_ONCE);
        drain(&z);
    }
    if (!z.done) abort(); /* shutdown must finish */
    drain(&z);
    acp_agent_free(a);
    uv_run(&loop, UV_RUN_DEFAULT);
    fuzz_store_unwrap(st);
    check_tools(&z, st);
    acp_store_close(st);
    if (uv_loop_close(&loop)) abort(); /* a handle left open */

    /* Every terminal the engine saw created was released (terminals.mdx: the agent MUST). */
    const char *id;
    json_t *nc;
    json_object_foreach(z.created, id, nc)
    {
        if (json_integer_value(json_object_get(z.released, id)) < json_integer_value(nc)) abort();
    }
    json_decref(z.form);
    json_decref(z.created);
    json_decref(z.released);
    json_decref(z.tools);
    json_decref(z.meta);
    json_decref(z.caps_meta);
    return 0;
}
