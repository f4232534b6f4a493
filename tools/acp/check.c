/* SPDX-License-Identifier: Apache-2.0 */
/* acp check: what the specification asks of an agent, checked against a running one (stdio,
 * unix: or a URL), each check tied to its sentence in the spec with its level (MUST, SHOULD,
 * MAY) and a result (pass, fail, skip with why). The agent is started as often as the checks
 * need: a SIGKILL and a fresh process are part of them (persistence, delete after a restart).
 *
 * Everything goes out raw (acp_client_send_raw) and comes back through the client's tap
 * (acp_client_opts.on_message), so the check sees the messages exactly as the agent wrote
 * them: ids, order, shapes. Every message received is validated against schema.json.
 *
 * It never harms the user: the agent runs in a fresh temporary directory, every session is
 * made there, and the sessions it made are deleted at the end where the agent can. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "acp/version.h"
#include "tools/acp/app.h"
#include "tools/check/report.h"
#include "tools/check/schema.h"

#define SETTLE_MS  300 /* quiet time after an answer in which a late update would show */
#define PAGE_PROBE 55  /* sessions made to see paging (acp-agent pages by 50) */

typedef struct msg {
    char *raw;
    size_t n;
    json_t *j; /* NULL: not JSON */
} msg;

typedef struct ctx ctx;

typedef struct peer {
    ctx *x;
    acp_client *c;
    msg *v;
    size_t n, cap;
} peer;

struct ctx {
    app *a;
    chk_report *r;
    chk_schema *schema;
    uv_loop_t loop;
    uv_timer_t timer;
    bool fired;
    char tmp[PATH_MAX];
    char **argv; /* the agent command, argv[0] made absolute (we chdir) */
    bool prompt, remote, stdio;
    bool http; /* Streamable HTTP: malformed bodies are refused with HTTP 400 */
    unsigned timeout_ms;
    unsigned next_id;
    json_t *methods;  /* our request ids (their JSON text) -> method, for the schema */
    json_t *made;     /* session ids we made: deleted at the end */
    json_t *caps;     /* the first initialize result's agentCapabilities */
    json_t *commands; /* available command names seen */
    /* across the run */
    unsigned nmsgs, nonjson, badschema;
    unsigned signed_in;
    bool auth_wall; /* session/new wants a sign-in this run cannot give */
    char *first_nonjson, *first_bad, *first_bad_msg;
};

/* --- spec sentences -------------------------------------------------------------------- */

static const chk_spec
    S_INIT_SAME = {"initialization (v1)",
                   "If the Agent supports the requested version, it MUST respond with the same "
                   "version."},
    S_INIT_LATEST = {"initialization (v1)",
                     "Otherwise, the Agent MUST respond with the latest version it supports."},
    S_INIT_INFO = {"initialization (v1)",
                   "Both Clients and Agents SHOULD provide information about their "
                   "implementation in the clientInfo and agentInfo fields respectively."},
    S_STDOUT = {"transports (v1)", "The agent MUST NOT write anything to its stdout that is not "
                                   "a valid ACP message."},
    S_SCHEMA = {"schema/schema.json (README: the authority on wire shapes)",
                "schema.json is the authority for stable wire shapes"},
    S_CAPS = {"initialization (v1)",
              "Clients and Agents MUST treat all capabilities omitted in the initialize request "
              "as UNSUPPORTED."},
    S_NOT_FOUND = {"extensibility (v1)", "If the receiving end doesn't recognize the custom "
                                         "method name, it should respond with the standard "
                                         "\"Method not found\" error"},
    S_NEW_UNIQUE = {"session-setup (seed 000)",
                    "The Agent MUST respond with a unique Session ID that identifies this "
                    "conversation"},
    S_ABS = {"session-setup (seed 000)", "The cwd (current working directory) parameter ... MUST "
                                         "be an absolute path"},
    S_ADD_ABS = {"session-setup (seed 000)", "each additionalDirectories entry MUST be an "
                                             "absolute path"},
    S_MCP_REQ = {"schema/schema.json",
                 "NewSessionRequest: \"required\": [\"cwd\", \"mcpServers\"]"},
    S_ADD_DIRS = {"session-setup (seed 000)",
                  "Agents that advertise sessionCapabilities.additionalDirectories allow Clients "
                  "to include additionalDirectories on supported session lifecycle requests"},
    S_META = {"extensibility (v1)", "Implementations MUST NOT add any custom fields at the root "
                                    "of a type that's part of the specification."},
    S_LOAD_REPLAY = {"session-setup (seed 000)",
                     "The Agent MUST replay the entire conversation to the Client in the form of "
                     "session/update notifications (like session/prompt)."},
    S_LOAD_ANSWER = {"session-setup (seed 000)",
                     "When all the conversation entries have been streamed to the Client, the "
                     "Agent MUST respond to the original session/load request."},
    S_LOAD_MSGID = {"session-setup (seed 000)",
                    "If the Agent provides message IDs during replay, each messageId is an "
                    "opaque, unique identifier for the replayed message."},
    S_RESUME = {"session-setup (seed 000)",
                "Unlike session/load, the Agent MUST NOT replay the conversation history via "
                "session/update notifications before responding."},
    S_CLOSE = {"session-setup (seed 000)",
               "The Agent MUST cancel any ongoing work for that session as if session/cancel had "
               "been called, then free the resources associated with the session."},
    S_CLOSE_GONE = {"session-setup (seed 000)",
                    "Agents MAY return an error if the session does not exist or is not "
                    "currently active."},
    S_LIST_CWD = {"session-list (v1)",
                  "Filter sessions by working directory. Must be an absolute path. Only sessions "
                  "with a matching cwd are returned."},
    S_LIST_EMPTY = {"session-list (v1)",
                    "When no sessions match the criteria, the Agent MUST return an empty "
                    "sessions array."},
    S_LIST_PAGE = {"session-list (v1)", "session/list uses cursor-based pagination. The request "
                                        "includes an optional cursor, and the response includes "
                                        "nextCursor when more results are available."},
    S_LIST_CURSOR = {"session-list (v1)", "Agents SHOULD return an error if the cursor is invalid"},
    S_DEL_GONE = {"session-delete (seed 003)",
                  "Deleted sessions no longer appear in future session/list results."},
    S_DEL_IDEM = {"session-delete (seed 003)",
                  "Deleting an already-deleted session, or a session that never existed, SHOULD "
                  "succeed silently."},
    S_ROOTS = {"session-setup (seed 000)",
               "omitting the field or providing an empty array does not restore stored roots "
               "implicitly"},
    S_PERSIST = {"session-setup (seed 000)",
                 "This feature enables persistence across restarts and sharing sessions between "
                 "different Client instances."},
    S_PROMPT_END = {"prompt-turn (v1)",
                    "If there are no pending tool calls, the turn ends and the Agent MUST respond "
                    "to the original session/prompt request with a StopReason"},
    S_PROMPT_AFTER = {"prompt-turn (v1)",
                      "The Agent MAY send session/update notifications with content or tool call "
                      "updates after receiving the session/cancel notification, but it MUST "
                      "ensure that it does so before responding to the session/prompt request."},
    S_CANCEL = {"prompt-turn (v1)", "After all ongoing operations have been successfully aborted "
                                    "and pending updates have been sent, the Agent MUST respond "
                                    "to the original session/prompt request with the cancelled "
                                    "stop reason."},
    S_PARSE = {"overview (v1), after JSON-RPC 2.0 section 5.1",
               "All methods follow standard JSON-RPC 2.0 error handling (-32700 Parse error: "
               "Invalid JSON was received by the server)"},
    S_INVALID = {"overview (v1), after JSON-RPC 2.0 section 5.1",
                 "All methods follow standard JSON-RPC 2.0 error handling (-32600 Invalid "
                 "Request: The JSON sent is not a valid Request object)"},
    S_UNKNOWN = {"overview (v1), after JSON-RPC 2.0 section 5.1",
                 "All methods follow standard JSON-RPC 2.0 error handling (-32601 Method not "
                 "found)"},
    S_NORESP = {"extensibility (v1); overview (v1)",
                "Unlike with custom requests, implementations SHOULD ignore unrecognized "
                "notifications. ... Notifications never receive responses (success or error)"},
    S_ID = {"schema/schema.json RequestId",
            "The Server MUST reply with the same value in the Response object if included."},
    S_BATCH = {"overview (v1), after JSON-RPC 2.0 section 6",
               "All methods follow standard JSON-RPC 2.0 error handling (a batch is answered, or "
               "refused with -32600)"},
    S_UTF8 = {"transports (v1)", "JSON-RPC messages MUST be UTF-8 encoded."},
    S_ALIVE = {"overview (v1)", "All methods follow standard JSON-RPC 2.0 error handling"};

/* n bytes (not a C string: a line has no NUL of its own) as a C string */
static char *dupn(const char *p, size_t n)
{
    char *o = malloc(n + 1);
    memcpy(o, p, n);
    o[n] = 0;
    return o;
}

static const char *sv(const json_t *j)
{
    const char *s = json_string_value(j);
    return s ? s : "";
}

/* --- the peer: one agent process or connection, everything it sends kept ------------------ */

static void on_timer(uv_timer_t *t)
{
    ((ctx *)t->data)->fired = true;
}

static char *dump(const json_t *v)
{
    return json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
}

static void on_message(acp_client *c, const char *raw, size_t n, void *user)
{
    peer *p = user;
    ctx *x = p->x;
    if (p->n == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 64;
        p->v = realloc(p->v, p->cap * sizeof *p->v);
    }
    msg *m = &p->v[p->n++];
    m->raw = dupn(raw, n);
    m->n = n;
    json_error_t e;
    m->j = json_loadb(raw, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
    /* an integer beyond int64 is still JSON (an id mangled by a double, say): the schema
     * then says what is wrong with it */
    if (!m->j)
        m->j = json_loadb(raw, n, JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL, &e);
    x->nmsgs++;
    if (!json_is_object(m->j) && !json_is_array(m->j)) {
        if (!x->nonjson++) x->first_nonjson = dupn(raw, n > 300 ? 300 : n);
        return;
    }
    if (!x->schema || json_is_array(m->j)) return;
    const char *method = NULL;
    json_t *id = json_object_get(m->j, "id");
    if (id && !json_object_get(m->j, "method")) {
        char *k = dump(id);
        method = json_string_value(json_object_get(x->methods, k ? k : ""));
        free(k);
        /* the client's own initialize */
        if (!method && json_object_get(json_object_get(m->j, "result"), "protocolVersion"))
            method = "initialize";
    }
    char *bad = chk_schema_message(x->schema, m->j, method);
    if (bad) {
        if (!x->badschema++) {
            x->first_bad = bad;
            x->first_bad_msg = dupn(raw, n);
        } else {
            free(bad);
        }
    }
    const char *meth = json_string_value(json_object_get(m->j, "method"));
    json_t *u = json_object_get(json_object_get(m->j, "params"), "update");
    if (meth && !strcmp(meth, "session/update") &&
        !strcmp(sv(json_object_get(u, "sessionUpdate")), "available_commands_update")) {
        size_t i;
        json_t *cmd;
        json_array_foreach(json_object_get(u, "availableCommands"), i, cmd)
        {
            const char *name = json_string_value(json_object_get(cmd, "name"));
            if (name) json_object_set_new(x->commands, name, json_true());
        }
    }
}

static void on_stderr(acp_client *c, const char *buf, size_t n, void *user)
{
    peer *p = user;
    if (p->x->a->agent_log_fd >= 0 && write(p->x->a->agent_log_fd, buf, n) < 0) return;
}

/* Runs the loop until pred is true or ms passed (0: no deadline). */
static bool run_until(peer *p, bool (*pred)(peer *p, const void *arg), const void *arg, unsigned ms)
{
    ctx *x = p->x;
    x->fired = false;
    if (ms) uv_timer_start(&x->timer, on_timer, ms, 0);
    bool ok;
    while (!(ok = pred(p, arg)) && !x->fired && !acp_client_agent_gone(p->c))
        uv_run(&x->loop, UV_RUN_ONCE);
    if (!ok) ok = pred(p, arg);
    uv_timer_stop(&x->timer);
    return ok;
}

static bool never(peer *p, const void *arg)
{
    return false;
}

static void settle(peer *p, unsigned ms)
{
    run_until(p, never, NULL, ms);
}

typedef struct started {
    bool done;
    int status;
    char why[512];
} started;

static void on_started(acp_client *c, const acp_client_reply *r, void *user)
{
    started *s = user;
    s->done = true;
    s->status = r->status;
    snprintf(s->why, sizeof s->why, "%s", r->errmsg ? r->errmsg : "");
}

static bool start_done(peer *p, const void *arg)
{
    return ((const started *)arg)->done;
}

static void peer_close(peer *p, bool kill_it);

/* A fresh agent (or connection), initialized. 0, or the reason in why. */
static int peer_open(ctx *x, peer *p, char *why, size_t n)
{
    memset(p, 0, sizeof *p);
    p->x = x;
    app *a = x->a;
    acp_client_opts o = ACP_CLIENT_OPTS_INIT;
    o.transport = x->remote ? ACP_CLIENT_URL : x->stdio ? ACP_CLIENT_SPAWN : ACP_CLIENT_UNIX;
    o.loop = &x->loop;
    o.argv = (const char *const *)x->argv;
    o.path = !x->remote && !x->stdio ? a->agent + 5 : NULL;
    o.url = x->remote ? a->agent : NULL;
    o.token = a->token;
    o.ca_file = a->ca_file;
    o.http2 = a->http2;
    o.client_name = "acp-check";
    o.client_title = "acp check (libacp conformance)";
    o.init_timeout_ms = x->timeout_ms;
    o.on_message = on_message;
    o.on_stderr = x->stdio ? on_stderr : NULL;
    o.user = p;
    started s = {0};
    if (acp_client_start(&o, on_started, &s, &p->c)) {
        snprintf(why, n, "%s", acp_error_last()->message);
        return -1;
    }
    run_until(p, start_done, &s, 0);
    if (s.status) {
        snprintf(why, n, "%s", s.why);
        peer_close(p, true);
        return -1;
    }
    /* Signed in as acp signs in (--auth METHOD, or a method whose variables are set): the
     * session layer is behind the sign-in on agents that need one. */
    const char *method = a->auth;
    size_t i;
    json_t *m;
    json_array_foreach(acp_client_auth_methods(p->c), i, m)
    {
        char vars[256];
        if (!method && x->stdio && auth_env_ready(m, vars, sizeof vars))
            method = json_string_value(json_object_get(m, "id"));
    }
    if (method && acp_client_authenticate(p->c, method)) {
        snprintf(why, n, "cannot sign in with '%s': %s", method, acp_error_last()->message);
        peer_close(p, true);
        return -1;
    }
    if (method && !x->signed_in++)
        fprintf(stderr, "acp check: signing in with '%s' on every connection\n", method);
    return 0;
}

static void peer_close(peer *p, bool kill_it)
{
    if (!p->c) return;
    if (kill_it && acp_client_agent_pid(p->c) > 0) kill(-acp_client_agent_pid(p->c), SIGKILL);
    acp_client_free(p->c);
    p->c = NULL;
    uv_run(&p->x->loop, UV_RUN_NOWAIT);
    for (size_t i = 0; i < p->n; i++) {
        free(p->v[i].raw);
        json_decref(p->v[i].j);
    }
    free(p->v);
    p->v = NULL;
    p->n = p->cap = 0;
}

/* --- requests --------------------------------------------------------------------------- */

typedef struct want {
    const json_t *id;
    size_t from;
    size_t at; /* out: the index of the answer */
} want;

static bool answered(peer *p, const void *arg)
{
    want *w = (want *)arg;
    for (size_t i = w->from; i < p->n; i++) {
        json_t *j = p->v[i].j;
        if (json_is_object(j) && !json_object_get(j, "method") &&
            (!w->id || json_equal(json_object_get(j, "id"), w->id))) {
            w->at = i;
            return true;
        }
    }
    return false;
}

/* A call: its text goes in sent (malloc'd, may be NULL), the answer (borrowed from the peer)
 * is returned, NULL when none came in time. *at: the answer's index. */
typedef struct call {
    char *sent;
    json_t *resp; /* borrowed */
    size_t from, at;
} call;

static void call_free(call *c)
{
    free(c->sent);
    memset(c, 0, sizeof *c);
}

static json_t *result_of(const call *c)
{
    return json_object_get(c->resp, "result");
}

static json_t *error_of(const call *c)
{
    return json_object_get(c->resp, "error");
}

static int code_of(const call *c)
{
    return (int)json_integer_value(json_object_get(error_of(c), "code"));
}

static const char *recv_text(const peer *p, const call *c)
{
    return c->resp ? p->v[c->at].raw : "(no answer)";
}

/* Sends method with params (stolen) under a fresh string id; waits for its answer. */
static bool rcall(peer *p, call *c, const char *method, json_t *params)
{
    ctx *x = p->x;
    char id[32];
    snprintf(id, sizeof id, "chk-%u", ++x->next_id);
    json_t *m = json_pack("{s:s, s:s, s:s}", "jsonrpc", "2.0", "id", id, "method", method);
    if (params) json_object_set_new(m, "params", params);
    json_t *jid = json_string(id);
    char *k = dump(jid);
    json_object_set_new(x->methods, k, json_string(method));
    free(k);
    memset(c, 0, sizeof *c);
    c->sent = dump(m);
    json_decref(m);
    c->from = p->n;
    want w = {.id = jid, .from = p->n};
    bool ok = !acp_client_send_raw(p->c, c->sent, strlen(c->sent)) &&
              run_until(p, answered, &w, x->timeout_ms);
    json_decref(jid);
    if (ok) {
        c->resp = p->v[w.at].j;
        c->at = w.at;
    }
    return ok && result_of(c);
}

/* Raw text; waits for the answer carrying id (NULL: for any response after it). */
static bool rsend(peer *p, call *c, const char *text, const json_t *id, unsigned ms)
{
    memset(c, 0, sizeof *c);
    c->sent = strdup(text);
    c->from = p->n;
    want w = {.id = id, .from = p->n};
    if (acp_client_send_raw(p->c, text, strlen(text))) return false;
    bool ok = run_until(p, answered, &w, ms);
    if (ok) {
        c->resp = p->v[w.at].j;
        c->at = w.at;
    }
    return ok;
}

static void notify(peer *p, const char *method, json_t *params)
{
    json_t *m = json_pack("{s:s, s:s, s:o}", "jsonrpc", "2.0", "method", method, "params", params);
    char *t = dump(m);
    acp_client_send_raw(p->c, t, strlen(t));
    free(t);
    json_decref(m);
}

static json_t *sess_params(ctx *x, const char *cwd)
{
    return json_pack("{s:s, s:[]}", "cwd", cwd ? cwd : x->tmp, "mcpServers");
}

/* session/new in cwd: the id (malloc'd) or NULL. */
static char *new_session(peer *p, const char *cwd, call *c)
{
    call own = {0};
    if (!c) c = &own;
    char *id = NULL;
    if (rcall(p, c, "session/new", sess_params(p->x, cwd))) {
        const char *s = json_string_value(json_object_get(result_of(c), "sessionId"));
        if (s) {
            id = strdup(s);
            json_array_append_new(p->x->made, json_string(s));
        }
    }
    if (c == &own) call_free(c);
    return id;
}

static bool has_cap(ctx *x, const char *path)
{
    /* "sessionCapabilities.list": present and not null/false */
    char buf[128];
    snprintf(buf, sizeof buf, "%s", path);
    json_t *v = x->caps;
    for (char *save = NULL, *k = strtok_r(buf, ".", &save); k && v; k = strtok_r(NULL, ".", &save))
        v = json_object_get(v, k);
    return v && !json_is_null(v) && !json_is_false(v);
}

/* session/update notifications for sid among messages [from, to). */
static size_t updates_for(const peer *p, const char *sid, size_t from, size_t to, bool history_only)
{
    size_t k = 0;
    for (size_t i = from; i < to && i < p->n; i++) {
        json_t *j = p->v[i].j;
        const char *m = json_string_value(json_object_get(j, "method"));
        json_t *pa = json_object_get(j, "params");
        if (!m || strcmp(m, "session/update") || strcmp(sv(json_object_get(pa, "sessionId")), sid))
            continue;
        const char *kind =
            json_string_value(json_object_get(json_object_get(pa, "update"), "sessionUpdate"));
        static const char *const history[] = {"user_message_chunk",  "agent_message_chunk",
                                              "agent_thought_chunk", "tool_call",
                                              "tool_call_update",    "plan"};
        bool h = false;
        for (size_t q = 0; kind && q < 6; q++) h = h || !strcmp(kind, history[q]);
        if (!history_only || h) k++;
    }
    return k;
}

static bool list_has(const json_t *sessions, const char *sid)
{
    size_t i;
    json_t *s;
    json_array_foreach(sessions, i, s)
    {
        if (!strcmp(sv(json_object_get(s, "sessionId")), sid)) return true;
    }
    return false;
}

/* Every page of session/list for cwd; NULL on an error (c keeps the failing call). */
static json_t *list_all(peer *p, const char *cwd, call *c, bool *overlap, unsigned *pages)
{
    json_t *all = json_array();
    char *cursor = NULL;
    *overlap = false;
    *pages = 0;
    for (int guard = 0; guard < 1000; guard++) {
        json_t *params = cwd ? json_pack("{s:s}", "cwd", cwd) : json_object();
        if (cursor) json_object_set_new(params, "cursor", json_string(cursor));
        free(cursor);
        cursor = NULL;
        call_free(c);
        if (!rcall(p, c, "session/list", params)) {
            json_decref(all);
            return NULL;
        }
        ++*pages;
        size_t i;
        json_t *s;
        json_array_foreach(json_object_get(result_of(c), "sessions"), i, s)
        {
            const char *sid = json_string_value(json_object_get(s, "sessionId"));
            if (sid && list_has(all, sid)) *overlap = true;
            json_array_append(all, s);
        }
        const char *next = json_string_value(json_object_get(result_of(c), "nextCursor"));
        if (!next) break;
        cursor = strdup(next);
    }
    free(cursor);
    return all;
}

#define ADD(x, id, lv, res, spec, sent, recv, ...)                                                 \
    chk_add((x)->r, id, lv, res, &(spec), sent, recv, __VA_ARGS__)

static bool want_(ctx *x, const char *id)
{
    return chk_wanted(x->r, id);
}

/* --- initialize and capabilities ------------------------------------------------------------ */

static void g_init(ctx *x, peer *p)
{
    json_t *init = acp_client_init_result(p->c);
    ADD(x, "init.version.same", CHK_MUST, CHK_PASS, S_INIT_SAME, NULL, NULL,
        "asked for version %d, answered %lld", ACP_PROTOCOL_VERSION,
        (long long)json_integer_value(json_object_get(init, "protocolVersion")));
    json_t *info = json_object_get(init, "agentInfo");
    bool named = json_is_string(json_object_get(info, "name")) &&
                 json_is_string(json_object_get(info, "version"));
    char *it = dump(init);
    ADD(x, "init.agent_info", CHK_SHOULD, named ? CHK_PASS : CHK_FAIL, S_INIT_INFO, NULL,
        named ? NULL : it, "%s %s",
        named ? json_string_value(json_object_get(info, "name")) : "agentInfo.name/version",
        named ? json_string_value(json_object_get(info, "version")) : "missing");
    free(it);
    if (want_(x, "init.version.latest")) {
        call c = {0};
        bool ok = rcall(p, &c, "initialize",
                        json_pack("{s:i, s:{}}", "protocolVersion", 65535, "clientCapabilities"));
        json_t *v = json_object_get(result_of(&c), "protocolVersion");
        if (!ok)
            ADD(x, "init.version.latest", CHK_MUST, CHK_SKIP, S_INIT_LATEST, c.sent,
                recv_text(p, &c),
                "a second initialize (version 65535) on the connection was refused: untestable "
                "here");
        else
            ADD(x, "init.version.latest", CHK_MUST,
                json_is_integer(v) && json_integer_value(v) >= 1 && json_integer_value(v) < 65535
                    ? CHK_PASS
                    : CHK_FAIL,
                S_INIT_LATEST, c.sent, recv_text(p, &c), "asked for version 65535, answered %s",
                json_is_integer(v) ? "a version it supports" : "no integer protocolVersion");
        call_free(&c);
    }
    /* What is not advertised is refused. */
    static const struct {
        const char *cap, *method, *id;
    } gated[] = {{"loadSession", "session/load", "caps.unadvertised.load"},
                 {"sessionCapabilities.resume", "session/resume", "caps.unadvertised.resume"},
                 {"sessionCapabilities.close", "session/close", "caps.unadvertised.close"},
                 {"sessionCapabilities.list", "session/list", "caps.unadvertised.list"},
                 {"sessionCapabilities.delete", "session/delete", "caps.unadvertised.delete"}};
    for (size_t i = 0; i < sizeof gated / sizeof gated[0]; i++) {
        if (!want_(x, gated[i].id)) continue;
        if (has_cap(x, gated[i].cap)) {
            ADD(x, gated[i].id, CHK_SHOULD, CHK_SKIP, S_CAPS, NULL, NULL,
                "%s is advertised (its checks below)", gated[i].cap);
            continue;
        }
        call c = {0};
        json_t *params = json_pack("{s:s, s:s, s:[]}", "sessionId", "sess_chk_none", "cwd", x->tmp,
                                   "mcpServers");
        bool ok = rcall(p, &c, gated[i].method, params);
        ADD(x, gated[i].id, CHK_SHOULD, !ok && c.resp ? CHK_PASS : CHK_FAIL, S_CAPS, c.sent,
            recv_text(p, &c), "%s not advertised: %s is %s", gated[i].cap, gated[i].method,
            ok       ? "served anyway"
            : c.resp ? "refused"
                     : "not answered");
        call_free(&c);
    }
}

/* --- JSON-RPC hygiene ------------------------------------------------------------------------- */

static bool still_alive(peer *p, const char *id)
{
    call c = {0};
    rcall(p, &c, "_acp-check/ping", json_object());
    bool ok = c.resp != NULL;
    if (!ok)
        ADD(p->x, id, CHK_MUST, CHK_FAIL, S_ALIVE, c.sent, "(no answer)",
            "the agent stopped answering after this check's message");
    call_free(&c);
    return ok;
}

/* Over Streamable HTTP a body that is not one JSON-RPC message never reaches JSON-RPC: the
 * transport answers HTTP 400 (as the SDK's does), which ends the client's connection. */
static bool http_skip(ctx *x, const char *id, chk_level lv, const chk_spec *spec)
{
    if (!x->http) return false;
    chk_add(x->r, id, lv, CHK_SKIP, spec, NULL, NULL,
            "Streamable HTTP refuses a malformed body with HTTP 400 before JSON-RPC: not sent");
    return true;
}

static void expect_error(peer *p, const char *id, chk_level lv, const chk_spec *spec,
                         const char *text, const json_t *idv, int code, const char *what,
                         bool malformed)
{
    ctx *x = p->x;
    if (!want_(x, id) || (malformed && http_skip(x, id, lv, spec))) return;
    call c = {0};
    bool got = rsend(p, &c, text, idv, x->timeout_ms);
    int have = got ? code_of(&c) : 0;
    bool ok = got && error_of(&c) && (!code || have == code);
    chk_add(x->r, id, lv, ok ? CHK_PASS : CHK_FAIL, spec, c.sent, recv_text(p, &c), "%s: %s", what,
            !got            ? "no answer"
            : !error_of(&c) ? "answered with a result"
            : ok            ? "refused with the right code"
                            : "refused with another code");
    call_free(&c);
    if (ok) still_alive(p, id);
}

static void g_rpc(ctx *x, peer *p)
{
    json_t *jnull = json_null();
    expect_error(p, "rpc.parse_error", CHK_MUST, &S_PARSE, "{\"jsonrpc\":\"2.0\",\"id\":1,", jnull,
                 -32700, "a line that is not JSON: -32700 with id null", true);
    json_t *ir = json_string("chk-ir");
    expect_error(p, "rpc.invalid_request", CHK_MUST, &S_INVALID,
                 "{\"jsonrpc\":\"2.0\",\"id\":\"chk-ir\",\"method\":5}", ir, -32600,
                 "\"method\" not a string: -32600", true);
    json_decref(ir);
    json_t *um = json_string("chk-um");
    expect_error(p, "rpc.unknown_method", CHK_MUST, &S_UNKNOWN,
                 "{\"jsonrpc\":\"2.0\",\"id\":\"chk-um\",\"method\":\"acp-check/no_such_method\"}",
                 um, -32601, "an unknown method: -32601", false);
    json_decref(um);
    json_t *ue = json_string("chk-ue");
    expect_error(p, "rpc.unknown_extension", CHK_SHOULD, &S_NOT_FOUND,
                 "{\"jsonrpc\":\"2.0\",\"id\":\"chk-ue\",\"method\":\"_acp-check/"
                 "no_such_method\",\"params\":{}}",
                 ue, -32601, "an unknown extension method: -32601", false);
    json_decref(ue);

    if (want_(x, "rpc.unknown_notification")) {
        size_t from = p->n;
        const char *t = "{\"jsonrpc\":\"2.0\",\"method\":\"_acp-check/note\",\"params\":{}}\n"
                        "{\"jsonrpc\":\"2.0\",\"method\":\"acp-check/note\",\"params\":{}}\n";
        acp_client_send_raw(p->c, t, strlen(t));
        settle(p, SETTLE_MS);
        size_t answers = 0;
        const char *seen = NULL;
        for (size_t i = from; i < p->n; i++)
            if (json_is_object(p->v[i].j) && !json_object_get(p->v[i].j, "method")) {
                answers++;
                seen = p->v[i].raw;
            }
        ADD(x, "rpc.unknown_notification", CHK_SHOULD, answers ? CHK_FAIL : CHK_PASS, S_NORESP, t,
            seen, "two unknown notifications (one an extension's): %zu answer(s)", answers);
        still_alive(p, "rpc.unknown_notification");
    }

    if (want_(x, "rpc.id.*")) {
        /* every kind and size of id, echoed exactly (strings by value: escapes may differ) */
        char *longid = malloc(8192 + 1);
        memset(longid, 'i', 8192);
        longid[8192] = 0;
        static const char *const ids[] = {"0",
                                          "-1",
                                          "7",
                                          "9007199254740993",
                                          "9223372036854775807",
                                          "-9223372036854775808",
                                          "\"\"",
                                          "\"chk\"",
                                          "\"7\"",
                                          "\"\\u00efd-\\u2603-\\ud83d\\ude00\"",
                                          "\"a\\\"b\\\\c\\/d\\n\"",
                                          "null",
                                          NULL /* the long string */};
        for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
            acp_buf text = {0}, idtext = {0};
            if (ids[i])
                acp_buf_printf(&idtext, "%s", ids[i]);
            else
                acp_buf_printf(&idtext, "\"%s\"", longid);
            acp_buf_cstr(&idtext);
            acp_buf_printf(&text,
                           "{\"jsonrpc\":\"2.0\",\"id\":%s,\"method\":\"acp-check/echo_id\"}",
                           idtext.data);
            acp_buf_cstr(&text);
            json_t *idv = json_loads(idtext.data, JSON_DECODE_ANY, NULL);
            call c = {0};
            /* the first answer after it, whatever its id: a mangled id shows */
            bool got = rsend(p, &c, text.data, NULL, x->timeout_ms) &&
                       json_equal(json_object_get(c.resp, "id"), idv);
            char cid[64];
            snprintf(cid, sizeof cid, "rpc.id.%s.%zu",
                     !ids[i]                ? "string_8k"
                     : json_is_null(idv)    ? "null"
                     : json_is_integer(idv) ? "integer"
                                            : "string",
                     i);
            /* integers: same type and value; a string "7" for 7 would not match json_equal */
            char what[120];
            snprintf(what, sizeof what, "id %.60s%s echoed", idtext.data,
                     idtext.len > 60 ? "..." : "");
            ADD(x, cid, CHK_MUST, got ? CHK_PASS : CHK_FAIL, S_ID, c.sent,
                c.resp ? recv_text(p, &c) : "(no answer)", "%s%s", what,
                got ? " exactly" : " wrongly or not at all");
            call_free(&c);
            json_decref(idv);
            acp_buf_free(&text);
            acp_buf_free(&idtext);
        }
        free(longid);
    }

    if (want_(x, "rpc.batch") && !http_skip(x, "rpc.batch", CHK_SHOULD, &S_BATCH)) {
        size_t from = p->n;
        const char *t = "[{\"jsonrpc\":\"2.0\",\"id\":\"chk-b1\",\"method\":\"acp-check/b1\"},"
                        "{\"jsonrpc\":\"2.0\",\"id\":\"chk-b2\",\"method\":\"acp-check/b2\"}]";
        acp_client_send_raw(p->c, t, strlen(t));
        settle(p, SETTLE_MS * 2);
        const char *seen = NULL;
        bool answered_ = false;
        for (size_t i = from; i < p->n; i++) {
            json_t *j = p->v[i].j;
            if (json_is_array(j) || (json_is_object(j) && !json_object_get(j, "method"))) {
                answered_ = true;
                seen = p->v[i].raw;
            }
        }
        ADD(x, "rpc.batch", CHK_SHOULD, answered_ ? CHK_PASS : CHK_FAIL, S_BATCH, t, seen,
            "a batch of two requests: %s",
            answered_ ? "answered (responses or -32600)" : "no answer");
        still_alive(p, "rpc.batch");
    }

    if (want_(x, "rpc.invalid_utf8") && !http_skip(x, "rpc.invalid_utf8", CHK_SHOULD, &S_UTF8)) {
        if (x->remote && !strncasecmp(x->a->agent, "ws", 2)) {
            ADD(x, "rpc.invalid_utf8", CHK_SHOULD, CHK_SKIP, S_UTF8, NULL, NULL,
                "a WebSocket text message must be UTF-8 (RFC 6455): not sent");
        } else {
            size_t from = p->n;
            const char *t =
                "{\"jsonrpc\":\"2.0\",\"id\":\"chk-u8\",\"method\":\"_acp-check/\xff\xfe\"}";
            acp_client_send_raw(p->c, t, strlen(t));
            settle(p, SETTLE_MS * 2);
            const char *seen = NULL;
            for (size_t i = from; i < p->n; i++)
                if (json_is_object(p->v[i].j) && json_object_get(p->v[i].j, "error"))
                    seen = p->v[i].raw;
            ADD(x, "rpc.invalid_utf8", CHK_SHOULD, seen ? CHK_PASS : CHK_FAIL, S_UTF8, t, seen,
                "a message with invalid UTF-8: %s", seen ? "refused with an error" : "no error");
            still_alive(p, "rpc.invalid_utf8");
        }
    }

    if (want_(x, "rpc.deep_nesting") && !http_skip(x, "rpc.deep_nesting", CHK_SHOULD, &S_ALIVE)) {
        acp_buf b = {0};
        acp_buf_printf(&b, "{\"jsonrpc\":\"2.0\",\"id\":\"chk-deep\",\"method\":\"_acp-check/"
                           "deep\",\"params\":{\"x\":");
        for (int i = 0; i < 100000; i++) acp_buf_append(&b, "[", 1);
        for (int i = 0; i < 100000; i++) acp_buf_append(&b, "]", 1);
        acp_buf_printf(&b, "}}");
        acp_buf_cstr(&b);
        size_t from = p->n;
        acp_client_send_raw(p->c, b.data, b.len);
        settle(p, SETTLE_MS * 2);
        const char *seen = NULL;
        for (size_t i = from; i < p->n; i++)
            if (json_is_object(p->v[i].j) && !json_object_get(p->v[i].j, "method"))
                seen = p->v[i].raw;
        bool alive = !acp_client_agent_gone(p->c);
        ADD(x, "rpc.deep_nesting", CHK_SHOULD, seen && alive ? CHK_PASS : CHK_FAIL, S_ALIVE,
            "{... 100000 nested arrays in params ...}", seen, "a message nested 100000 deep: %s",
            !alive ? "the agent died"
            : seen ? "answered"
                   : "no answer");
        acp_buf_free(&b);
        if (alive) still_alive(p, "rpc.deep_nesting");
    }
}

/* --- sessions ------------------------------------------------------------------------------- */

static void g_new(ctx *x, peer *p)
{
    {
        call c = {0};
        rcall(p, &c, "session/new", sess_params(x, NULL));
        if (result_of(&c) && json_is_string(json_object_get(result_of(&c), "sessionId")))
            json_array_append_new(x->made,
                                  json_incref(json_object_get(result_of(&c), "sessionId")));
        if (code_of(&c) == -32000) {
            x->auth_wall = true;
            ADD(x, "session.auth", CHK_MUST, CHK_SKIP, S_NEW_UNIQUE, c.sent, recv_text(p, &c),
                "session/new wants a sign-in (-32000): the session layer is out of reach; sign "
                "in first (acp auth METHOD) or pass --auth METHOD");
        }
        call_free(&c);
        if (x->auth_wall) return;
    }
    if (want_(x, "session.new.unique")) {
        call c1 = {0}, c2 = {0};
        char *a = new_session(p, NULL, &c1), *b = new_session(p, NULL, &c2);
        ADD(x, "session.new.unique", CHK_MUST, a && b && strcmp(a, b) ? CHK_PASS : CHK_FAIL,
            S_NEW_UNIQUE, c2.sent, recv_text(p, &c2), "two session/new: %s",
            !a || !b       ? "not both answered with a sessionId"
            : strcmp(a, b) ? "two ids"
                           : "the same id");
        call_free(&c1);
        call_free(&c2);
        free(a);
        free(b);
    }
    if (want_(x, "session.new.relative_cwd")) {
        call c = {0};
        bool ok = rcall(p, &c, "session/new",
                        json_pack("{s:s, s:[]}", "cwd", "relative/dir", "mcpServers"));
        if (ok)
            json_array_append_new(x->made,
                                  json_incref(json_object_get(result_of(&c), "sessionId")));
        ADD(x, "session.new.relative_cwd", CHK_SHOULD, !ok && c.resp ? CHK_PASS : CHK_FAIL, S_ABS,
            c.sent, recv_text(p, &c), "a relative cwd is %s", ok ? "accepted" : "refused");
        call_free(&c);
    }
    if (want_(x, "session.new.mcp_required")) {
        call c = {0};
        bool ok = rcall(p, &c, "session/new", json_pack("{s:s}", "cwd", x->tmp));
        if (ok)
            json_array_append_new(x->made,
                                  json_incref(json_object_get(result_of(&c), "sessionId")));
        ADD(x, "session.new.mcp_required", CHK_SHOULD, !ok && c.resp ? CHK_PASS : CHK_FAIL,
            S_MCP_REQ, c.sent, recv_text(p, &c), "session/new without mcpServers is %s",
            ok ? "accepted" : "refused");
        call_free(&c);
    }
    if (want_(x, "session.new.meta")) {
        call c = {0};
        json_t *params = sess_params(x, NULL);
        json_object_set_new(params, "_meta", json_pack("{s:b}", "acp-check", 1));
        bool ok = rcall(p, &c, "session/new", params);
        if (ok)
            json_array_append_new(x->made,
                                  json_incref(json_object_get(result_of(&c), "sessionId")));
        ADD(x, "session.new.meta", CHK_MUST, ok ? CHK_PASS : CHK_FAIL, S_META, c.sent,
            recv_text(p, &c), "_meta in session/new params is %s", ok ? "accepted" : "refused");
        call_free(&c);
    }
    if (want_(x, "session.new.unknown_field")) {
        call c = {0};
        json_t *params = sess_params(x, NULL);
        json_object_set_new(params, "acpCheckUnknown", json_integer(1));
        bool ok = rcall(p, &c, "session/new", params);
        if (ok)
            json_array_append_new(x->made,
                                  json_incref(json_object_get(result_of(&c), "sessionId")));
        ADD(x, "session.new.unknown_field", CHK_MAY, c.resp ? CHK_PASS : CHK_FAIL, S_META, c.sent,
            recv_text(p, &c), "an unknown field in session/new params: %s",
            ok       ? "ignored"
            : c.resp ? "refused (-32602 is allowed)"
                     : "no answer");
        call_free(&c);
    }
    if (want_(x, "session.new.additional_dirs*")) {
        if (!has_cap(x, "sessionCapabilities.additionalDirectories")) {
            ADD(x, "session.new.additional_dirs", CHK_MUST, CHK_SKIP, S_ADD_DIRS, NULL, NULL,
                "sessionCapabilities.additionalDirectories is not advertised");
        } else {
            char extra[PATH_MAX + 16];
            snprintf(extra, sizeof extra, "%s/extra", x->tmp);
            mkdir(extra, 0700);
            call c = {0};
            json_t *params = sess_params(x, NULL);
            json_object_set_new(params, "additionalDirectories", json_pack("[s]", extra));
            bool ok = rcall(p, &c, "session/new", params);
            if (ok)
                json_array_append_new(x->made,
                                      json_incref(json_object_get(result_of(&c), "sessionId")));
            ADD(x, "session.new.additional_dirs", CHK_MUST, ok ? CHK_PASS : CHK_FAIL, S_ADD_DIRS,
                c.sent, recv_text(p, &c), "session/new with an additional directory is %s",
                ok ? "accepted" : "refused");
            call_free(&c);
            params = sess_params(x, NULL);
            json_object_set_new(params, "additionalDirectories", json_pack("[s]", "rel/dir"));
            ok = rcall(p, &c, "session/new", params);
            ADD(x, "session.new.additional_dirs_relative", CHK_SHOULD,
                !ok && c.resp ? CHK_PASS : CHK_FAIL, S_ADD_ABS, c.sent, recv_text(p, &c),
                "a relative additional directory is %s", ok ? "accepted" : "refused");
            call_free(&c);
        }
    }
}

/* A prompt turn on sid: the stop reason (static) or NULL; updates counted after the answer. */
static const char *turn(peer *p, const char *sid, const char *text, call *c)
{
    rcall(p, c, "session/prompt",
          json_pack("{s:s, s:[{s:s, s:s}]}", "sessionId", sid, "prompt", "type", "text", "text",
                    text));
    return json_string_value(json_object_get(result_of(c), "stopReason"));
}

static void g_prompt(ctx *x, peer *p)
{
    if (!want_(x, "prompt.*")) return;
    if (!x->prompt) {
        ADD(x, "prompt.turn", CHK_MUST, CHK_SKIP, S_PROMPT_END, NULL, NULL,
            "--no-prompt: turns cost model tokens");
        return;
    }
    char *sid = new_session(p, NULL, NULL);
    if (!sid) {
        ADD(x, "prompt.turn", CHK_MUST, CHK_FAIL, S_PROMPT_END, NULL, NULL,
            "session/new failed: no session to prompt");
        return;
    }
    call c = {0};
    const char *stop = turn(p, sid, "Reply with the single word: pong", &c);
    size_t before = updates_for(p, sid, c.from, c.resp ? c.at : p->n, false);
    ADD(x, "prompt.turn", CHK_MUST, stop ? CHK_PASS : CHK_FAIL, S_PROMPT_END, c.sent,
        recv_text(p, &c), "a plain text prompt: %s (%zu updates before the answer)",
        stop ? stop : "no stopReason", before);
    size_t at = c.resp ? c.at + 1 : p->n;
    settle(p, SETTLE_MS);
    size_t after = updates_for(p, sid, at, p->n, false);
    ADD(x, "prompt.no_update_after_answer", CHK_MUST, after ? CHK_FAIL : CHK_PASS, S_PROMPT_AFTER,
        c.sent, after ? p->v[at].raw : NULL,
        "%zu session/update(s) for the session after the answer", after);
    call_free(&c);

    /* cancel: a turn that lasts (the agent's /sleep command when it offers one) */
    bool sleeps = json_object_get(x->commands, "sleep") != NULL;
    const char *text = sleeps ? "/sleep 30000" : "Count from 1 to 300, one number per line.";
    json_t *params = json_pack("{s:s, s:[{s:s, s:s}]}", "sessionId", sid, "prompt", "type", "text",
                               "text", text);
    char id[32];
    snprintf(id, sizeof id, "chk-%u", ++x->next_id);
    json_t *jid = json_string(id);
    char *k = dump(jid);
    json_object_set_new(x->methods, k, json_string("session/prompt"));
    free(k);
    json_t *m = json_pack("{s:s, s:O, s:s, s:o}", "jsonrpc", "2.0", "id", jid, "method",
                          "session/prompt", "params", params);
    char *t = dump(m);
    json_decref(m);
    acp_client_send_raw(p->c, t, strlen(t));
    settle(p, 100);
    notify(p, "session/cancel", json_pack("{s:s}", "sessionId", sid));
    want w = {.id = jid, .from = 0};
    bool got = run_until(p, answered, &w, x->timeout_ms);
    const char *st = got ? json_string_value(json_object_get(
                               json_object_get(p->v[w.at].j, "result"), "stopReason"))
                         : NULL;
    if (got && st && strcmp(st, "cancelled") && !sleeps)
        ADD(x, "prompt.cancel", CHK_MUST, CHK_SKIP, S_CANCEL, t, p->v[w.at].raw,
            "the turn ended (%s) before the cancel could matter", st);
    else
        ADD(x, "prompt.cancel", CHK_MUST, st && !strcmp(st, "cancelled") ? CHK_PASS : CHK_FAIL,
            S_CANCEL, t, got ? p->v[w.at].raw : "(no answer)",
            "session/prompt then session/cancel: %s",
            st    ? st
            : got ? "an error"
                  : "no answer");
    free(t);
    json_decref(jid);
    free(sid);
}

/* --- list and delete ------------------------------------------------------------------------ */

static void g_list(ctx *x, peer *p)
{
    if (!want_(x, "list.*")) return;
    if (!has_cap(x, "sessionCapabilities.list")) {
        ADD(x, "list.cwd_filter", CHK_MUST, CHK_SKIP, S_LIST_CWD, NULL, NULL,
            "sessionCapabilities.list is not advertised");
        return;
    }
    char a[PATH_MAX + 8], ab[PATH_MAX + 8], empty[PATH_MAX + 8], pg[PATH_MAX + 8];
    snprintf(a, sizeof a, "%s/a", x->tmp);
    snprintf(ab, sizeof ab, "%s/ab", x->tmp);
    snprintf(empty, sizeof empty, "%s/empty", x->tmp);
    snprintf(pg, sizeof pg, "%s/pages", x->tmp);
    mkdir(a, 0700);
    mkdir(ab, 0700);
    mkdir(empty, 0700);
    mkdir(pg, 0700);
    char *sa = new_session(p, a, NULL), *sab = new_session(p, ab, NULL);
    call c = {0};
    bool overlap;
    unsigned pages;
    json_t *got = list_all(p, a, &c, &overlap, &pages);
    bool exact = got != NULL;
    size_t i;
    json_t *s;
    json_array_foreach(got, i, s) exact = exact && !strcmp(sv(json_object_get(s, "cwd")), a);
    bool listed = got && sa && list_has(got, sa);
    ADD(x, "list.cwd_filter", CHK_MUST, exact ? CHK_PASS : CHK_FAIL, S_LIST_CWD, c.sent,
        recv_text(p, &c), "list of %s: %s%s", a,
        !got    ? "refused"
        : exact ? "only sessions of that cwd"
                : "sessions of other directories too",
        got && !listed ? " (the session made there is not listed: no conversation yet?)" : "");
    json_decref(got);
    call_free(&c);

    got = list_all(p, empty, &c, &overlap, &pages);
    ADD(x, "list.empty", CHK_MUST, got && json_array_size(got) == 0 ? CHK_PASS : CHK_FAIL,
        S_LIST_EMPTY, c.sent, recv_text(p, &c), "list of a directory with no sessions: %s",
        !got                   ? "refused"
        : json_array_size(got) ? "not empty"
                               : "an empty array");
    json_decref(got);
    call_free(&c);

    if (want_(x, "list.paging")) {
        json_t *mine = json_array();
        /* Sessions until the listing has a second page (at most PAGE_PROBE), each closed at
         * once where the agent can: a real agent may run a process per open session. */
        bool can_close = has_cap(x, "sessionCapabilities.close");
        for (int k = 0; k < PAGE_PROBE; k++) {
            char *id = new_session(p, pg, NULL);
            if (!id) break;
            json_array_append_new(mine, json_string(id));
            if (can_close) {
                call cc = {0};
                rcall(p, &cc, "session/close", json_pack("{s:s}", "sessionId", id));
                call_free(&cc);
            }
            free(id);
            if (k % 10 == 9) {
                call lc = {0};
                bool more = rcall(p, &lc, "session/list", json_pack("{s:s}", "cwd", pg)) &&
                            json_object_get(result_of(&lc), "nextCursor");
                call_free(&lc);
                if (more) break;
            }
        }
        got = list_all(p, pg, &c, &overlap, &pages);
        size_t missing = 0;
        json_array_foreach(mine, i, s) missing += got && !list_has(got, json_string_value(s));
        if (got && json_array_size(got) == 0)
            ADD(x, "list.paging", CHK_MUST, CHK_SKIP, S_LIST_PAGE, c.sent, recv_text(p, &c),
                "the agent lists none of the %zu sessions just made (no conversation yet?)",
                json_array_size(mine));
        else
            ADD(x, "list.paging", CHK_MUST, got && !overlap && !missing ? CHK_PASS : CHK_FAIL,
                S_LIST_PAGE, c.sent, recv_text(p, &c),
                "%zu sessions made, listed over %u page(s): %s%s", json_array_size(mine), pages,
                !got      ? "a page was refused"
                : overlap ? "pages overlap"
                : missing ? "some are missing (a gap)"
                          : "no overlap, no gap",
                pages < 2 ? " (one page: paging not exercised)" : "");
        json_decref(got);
        json_decref(mine);
        call_free(&c);
    }
    if (want_(x, "list.cursor_invalid")) {
        bool ok = rcall(p, &c, "session/list",
                        json_pack("{s:s, s:s}", "cwd", x->tmp, "cursor", "acp-check-not-a-cursor"));
        ADD(x, "list.cursor_invalid", CHK_SHOULD, !ok && c.resp ? CHK_PASS : CHK_FAIL,
            S_LIST_CURSOR, c.sent, recv_text(p, &c), "a cursor the agent never gave is %s",
            ok ? "accepted" : "refused");
        call_free(&c);
    }
    free(sa);
    free(sab);
}

static bool delete_ok(peer *p, const char *sid, call *c)
{
    return rcall(p, c, "session/delete", json_pack("{s:s}", "sessionId", sid));
}

/* --- close ---------------------------------------------------------------------------------- */

static void g_close(ctx *x, peer *p)
{
    if (!want_(x, "close.*")) return;
    if (!has_cap(x, "sessionCapabilities.close")) {
        ADD(x, "close.cancels", CHK_MUST, CHK_SKIP, S_CLOSE, NULL, NULL,
            "sessionCapabilities.close is not advertised");
        return;
    }
    char *sid = new_session(p, NULL, NULL);
    if (!sid) return;
    bool sleeps = json_object_get(x->commands, "sleep") != NULL;
    call c = {0};
    if (!x->prompt) {
        ADD(x, "close.cancels", CHK_MUST, CHK_SKIP, S_CLOSE, NULL, NULL,
            "--no-prompt: no turn to cancel");
    } else {
        const char *text = sleeps ? "/sleep 30000" : "Count from 1 to 300, one number per line.";
        char id[32];
        snprintf(id, sizeof id, "chk-%u", ++x->next_id);
        json_t *jid = json_string(id);
        json_t *m = json_pack("{s:s, s:O, s:s, s:{s:s, s:[{s:s, s:s}]}}", "jsonrpc", "2.0", "id",
                              jid, "method", "session/prompt", "params", "sessionId", sid, "prompt",
                              "type", "text", "text", text);
        char *t = dump(m);
        json_decref(m);
        acp_client_send_raw(p->c, t, strlen(t));
        settle(p, 100);
        bool closed = rcall(p, &c, "session/close", json_pack("{s:s}", "sessionId", sid));
        want w = {.id = jid, .from = 0};
        bool got = run_until(p, answered, &w, x->timeout_ms);
        const char *st = got ? json_string_value(json_object_get(
                                   json_object_get(p->v[w.at].j, "result"), "stopReason"))
                             : NULL;
        ADD(x, "close.cancels", CHK_MUST,
            closed && got && (!st || !strcmp(st, "cancelled") || !sleeps) ? CHK_PASS : CHK_FAIL,
            S_CLOSE, t, got ? p->v[w.at].raw : "(the prompt was never answered)",
            "session/close during a turn: close %s, the prompt %s%s",
            closed ? "answered" : "refused", got ? "answered " : "not answered",
            st    ? st
            : got ? "(an error)"
                  : "");
        call_free(&c);
        free(t);
        json_decref(jid);
        char *sid2 = new_session(p, NULL, NULL);
        free(sid);
        sid = sid2;
        if (!sid) return;
    }
    bool ok = rcall(p, &c, "session/close", json_pack("{s:s}", "sessionId", sid));
    ADD(x, "close.idle", CHK_MUST, ok ? CHK_PASS : CHK_FAIL, S_CLOSE, c.sent, recv_text(p, &c),
        "session/close of an idle session: %s", ok ? "answered {}" : "refused");
    call_free(&c);
    turn(p, sid, "hello", &c);
    ADD(x, "close.frees", CHK_MAY,
        error_of(&c) ? CHK_PASS
        : c.resp     ? CHK_SKIP
                     : CHK_FAIL,
        S_CLOSE_GONE, c.sent, recv_text(p, &c), "a prompt to the closed session is %s",
        error_of(&c) ? "refused"
        : c.resp     ? "served (the session was not freed)"
                     : "not answered");
    call_free(&c);
    free(sid);
}

/* Whether the agent's /read of file in sid shows the file's text ("root-check"). */
static bool read_serves(peer *p, const char *sid, const char *file, call *c)
{
    char cmd[PATH_MAX + 64];
    snprintf(cmd, sizeof cmd, "/read %s", file);
    size_t from = p->n;
    turn(p, sid, cmd, c);
    for (size_t i = from; i < p->n; i++)
        if (json_is_object(p->v[i].j) && json_object_get(p->v[i].j, "method") &&
            strstr(p->v[i].raw, "root-check"))
            return true;
    return false;
}

/* --- persistence, load, resume, delete across a restart ----------------------------------- */

static void g_persist(ctx *x, peer *p, peer *q)
{
    if (!want_(x, "load.*") && !want_(x, "resume.*") && !want_(x, "delete.*") &&
        !want_(x, "persist.*") && !want_(x, "roots.*"))
        return;
    bool can_list = has_cap(x, "sessionCapabilities.list"),
         can_del = has_cap(x, "sessionCapabilities.delete"), can_load = has_cap(x, "loadSession"),
         can_resume = has_cap(x, "sessionCapabilities.resume");
    char hist[PATH_MAX + 8];
    snprintf(hist, sizeof hist, "%s/history", x->tmp);
    mkdir(hist, 0700);
    char *keep = new_session(p, hist, NULL), *gone = new_session(p, hist, NULL);
    if (!keep || !gone) {
        free(keep);
        free(gone);
        return;
    }
    const char *said = "acp check: remember the word heliotrope";
    call c = {0};
    bool prompted = false;
    if (x->prompt) {
        prompted = turn(p, keep, said, &c) != NULL;
        call_free(&c);
    }
    /* delete: gone from the list, idempotent */
    if (can_del) {
        bool ok = delete_ok(p, gone, &c);
        call lc = {0};
        bool overlap;
        unsigned pages;
        json_t *l = can_list ? list_all(p, hist, &lc, &overlap, &pages) : NULL;
        if (!can_list)
            ADD(x, "delete.gone", CHK_MUST, CHK_SKIP, S_DEL_GONE, NULL, NULL,
                "sessionCapabilities.list is not advertised");
        else
            ADD(x, "delete.gone", CHK_MUST, ok && l && !list_has(l, gone) ? CHK_PASS : CHK_FAIL,
                S_DEL_GONE, c.sent, recv_text(p, &lc), "deleted %s: %s", gone,
                !ok                 ? "delete refused"
                : !l                ? "list refused"
                : list_has(l, gone) ? "still listed"
                                    : "no longer listed");
        json_decref(l);
        call_free(&lc);
        call_free(&c);
        ok = delete_ok(p, gone, &c);
        ADD(x, "delete.idempotent", CHK_SHOULD, ok ? CHK_PASS : CHK_FAIL, S_DEL_IDEM, c.sent,
            recv_text(p, &c), "deleting it again: %s", ok ? "succeeds" : "refused");
        call_free(&c);
        ok = delete_ok(p, "sess_acp_check_never_existed", &c);
        ADD(x, "delete.never_existed", CHK_SHOULD, ok ? CHK_PASS : CHK_FAIL, S_DEL_IDEM, c.sent,
            recv_text(p, &c), "deleting a session that never existed: %s",
            ok ? "succeeds" : "refused");
        call_free(&c);
    } else {
        ADD(x, "delete.gone", CHK_MUST, CHK_SKIP, S_DEL_GONE, NULL, NULL,
            "sessionCapabilities.delete is not advertised");
    }

    /* the kill: SIGKILL (stdio), or a new connection (remote, unix:) */
    peer_close(p, true);
    char why[512];
    if (peer_open(x, q, why, sizeof why)) {
        ADD(x, "persist.restart", CHK_MUST, CHK_FAIL, S_PERSIST, NULL, why,
            "the agent does not start again after a SIGKILL");
        free(keep);
        free(gone);
        return;
    }
    const char *how = x->stdio ? "after a SIGKILL and a fresh agent" : "on a new connection";
    bool listed = false; /* the session without a turn is still known after the restart */
    if (can_list) {
        call lc = {0};
        bool overlap;
        unsigned pages;
        json_t *l = list_all(q, hist, &lc, &overlap, &pages);
        listed = l && list_has(l, keep);
        if (prompted || listed)
            ADD(x, "persist.listed", CHK_MUST, l && list_has(l, keep) ? CHK_PASS : CHK_FAIL,
                S_PERSIST, lc.sent, recv_text(q, &lc), "%s: the session %s listed", how,
                l && list_has(l, keep) ? "is" : "is not");
        if (can_del)
            ADD(x, "delete.after_restart", CHK_MUST, l && !list_has(l, gone) ? CHK_PASS : CHK_FAIL,
                S_DEL_GONE, lc.sent, recv_text(q, &lc), "%s: the deleted session %s", how,
                !l                  ? "(list refused)"
                : list_has(l, gone) ? "is back"
                                    : "stays deleted");
        json_decref(l);
        call_free(&lc);
        if (can_del) {
            bool ok = delete_ok(q, gone, &c);
            ADD(x, "delete.idempotent_after_restart", CHK_SHOULD, ok ? CHK_PASS : CHK_FAIL,
                S_DEL_IDEM, c.sent, recv_text(q, &c), "%s: deleting it again %s", how,
                ok ? "succeeds" : "is refused");
            call_free(&c);
        }
    }
    if (!can_load) {
        ADD(x, "load.replay_before_answer", CHK_MUST, CHK_SKIP, S_LOAD_ANSWER, NULL, NULL,
            "loadSession is not advertised");
    } else {
        bool ok =
            rcall(q, &c, "session/load",
                  json_pack("{s:s, s:s, s:[]}", "sessionId", keep, "cwd", hist, "mcpServers"));
        size_t end = c.resp ? c.at : q->n;
        size_t replayed = updates_for(q, keep, c.from, end, true);
        /* the user's words among the replayed user_message_chunks; message ids unique */
        bool words = false, dup = false;
        json_t *mids = json_object();
        for (size_t i = c.from; i < end; i++) {
            json_t *pa = json_object_get(q->v[i].j, "params");
            if (strcmp(sv(json_object_get(q->v[i].j, "method")), "session/update") ||
                strcmp(sv(json_object_get(pa, "sessionId")), keep))
                continue;
            json_t *u = json_object_get(pa, "update");
            const char *kind = sv(json_object_get(u, "sessionUpdate"));
            const char *txt =
                json_string_value(json_object_get(json_object_get(u, "content"), "text"));
            if (!strcmp(kind, "user_message_chunk") && txt && strstr(txt, "heliotrope"))
                words = true;
            /* chunks of one message share its id: unique per message, so per kind and id */
            const char *mid = json_string_value(json_object_get(u, "messageId"));
            if (mid) {
                char key[512];
                snprintf(key, sizeof key, "%s", mid);
                const char *k0 = json_string_value(json_object_get(mids, key));
                if (k0 && strcmp(k0, kind)) dup = true;
                json_object_set_new(mids, key, json_string(kind));
            }
        }
        json_decref(mids);
        size_t at = c.resp ? c.at + 1 : q->n;
        settle(q, SETTLE_MS);
        size_t late = updates_for(q, keep, at, q->n, true);
        if (!prompted && !ok && !listed)
            ADD(x, "load.replay_before_answer", CHK_MUST, CHK_SKIP, S_LOAD_ANSWER, c.sent,
                recv_text(q, &c),
                "%s: the agent keeps no session without a turn (not listed, load refused): "
                "nothing to load under --no-prompt",
                how);
        else if (!prompted)
            ADD(x, "load.replay_before_answer", CHK_MUST, ok && !late ? CHK_PASS : CHK_FAIL,
                S_LOAD_ANSWER, c.sent, late ? q->v[at].raw : recv_text(q, &c),
                "%s: load of a session without a turn (--no-prompt): %s, %zu update(s) after "
                "the answer",
                how, ok ? "answered" : "refused", late);
        else {
            ADD(x, "load.replay", CHK_MUST, ok && words ? CHK_PASS : CHK_FAIL, S_LOAD_REPLAY,
                c.sent, recv_text(q, &c),
                "%s: %zu history update(s) replayed; the user's prompt %s", how, replayed,
                words ? "is among them" : "is not");
            ADD(x, "load.replay_before_answer", CHK_MUST, ok && !late ? CHK_PASS : CHK_FAIL,
                S_LOAD_ANSWER, c.sent, late ? q->v[at].raw : recv_text(q, &c),
                "%zu history update(s) before the answer, %zu after it", replayed, late);
            ADD(x, "load.message_ids", CHK_MUST, dup ? CHK_FAIL : CHK_PASS, S_LOAD_MSGID, c.sent,
                NULL, "replayed messageIds %s", dup ? "are reused across messages" : "are unique");
        }
        call_free(&c);
    }
    if (!can_resume) {
        ADD(x, "resume.no_replay", CHK_MUST, CHK_SKIP, S_RESUME, NULL, NULL,
            "sessionCapabilities.resume is not advertised");
    } else {
        /* a third connection: the session is not active there */
        peer_close(q, true);
        if (peer_open(x, q, why, sizeof why)) {
            free(keep);
            free(gone);
            return;
        }
        bool ok =
            rcall(q, &c, "session/resume",
                  json_pack("{s:s, s:s, s:[]}", "sessionId", keep, "cwd", hist, "mcpServers"));
        size_t n = updates_for(q, keep, c.from, c.resp ? c.at : q->n, true);
        if (!prompted && !ok && !listed)
            ADD(x, "resume.no_replay", CHK_MUST, CHK_SKIP, S_RESUME, c.sent, recv_text(q, &c),
                "the agent keeps no session without a turn (not listed, resume refused): "
                "nothing to resume under --no-prompt");
        else
            ADD(x, "resume.no_replay", CHK_MUST, ok && !n ? CHK_PASS : CHK_FAIL, S_RESUME, c.sent,
                recv_text(q, &c), "resume: %s, %zu history update(s) before the answer%s",
                ok ? "answered" : "refused", n,
                prompted ? "" : " (no turn to replay: --no-prompt)");
        call_free(&c);
    }
    /* roots: stored roots never come back by themselves (observable through the agent's /read
     * command, where it has one) */
    if (want_(x, "roots.*")) {
        if (!has_cap(x, "sessionCapabilities.additionalDirectories") || !can_load || !x->prompt ||
            !json_object_get(x->commands, "read")) {
            ADD(x, "roots.not_restored.load", CHK_MUST, CHK_SKIP, S_ROOTS, NULL, NULL,
                "needs additionalDirectories, loadSession, prompts and a /read command to see "
                "which roots are active");
        } else {
            char extra[PATH_MAX + 16], file[PATH_MAX + 32];
            snprintf(extra, sizeof extra, "%s/roots", x->tmp);
            mkdir(extra, 0700);
            snprintf(file, sizeof file, "%s/secret.txt", extra);
            FILE *f = fopen(file, "w");
            if (f) {
                fputs("root-check\n", f);
                fclose(f);
            }
            json_t *params = sess_params(x, hist);
            json_object_set_new(params, "additionalDirectories", json_pack("[s]", extra));
            char *sid = NULL;
            if (rcall(q, &c, "session/new", params)) {
                sid = strdup(json_string_value(json_object_get(result_of(&c), "sessionId")));
                json_array_append_new(x->made, json_string(sid));
            }
            call_free(&c);
            /* the control: with the root active the read is served */
            bool active = sid && read_serves(q, sid, file, &c);
            ADD(x, "roots.active", CHK_MUST, active ? CHK_PASS : CHK_FAIL, S_ADD_DIRS, c.sent,
                recv_text(q, &c), "a read in an additional directory of the session: %s",
                active ? "served" : "refused");
            call_free(&c);
            static const char *const verbs[] = {"session/load", "session/resume"};
            for (int v = 0; v < 2 && sid && active; v++) {
                const char *id = v ? "roots.not_restored.resume" : "roots.not_restored.load";
                if (v && !can_resume) {
                    ADD(x, id, CHK_MUST, CHK_SKIP, S_ROOTS, NULL, NULL,
                        "sessionCapabilities.resume is not advertised");
                    continue;
                }
                peer_close(q, true);
                if (peer_open(x, q, why, sizeof why)) break;
                bool opened = rcall(
                    q, &c, verbs[v],
                    json_pack("{s:s, s:s, s:[]}", "sessionId", sid, "cwd", hist, "mcpServers"));
                call_free(&c);
                bool leaked = opened && read_serves(q, sid, file, &c);
                ADD(x, id, CHK_MUST,
                    !opened  ? CHK_SKIP
                    : leaked ? CHK_FAIL
                             : CHK_PASS,
                    S_ROOTS, c.sent, recv_text(q, &c),
                    "%s without additionalDirectories, then a read in the stored root: %s",
                    verbs[v],
                    !opened  ? "(the session did not open)"
                    : leaked ? "served (the root came back)"
                             : "refused");
                call_free(&c);
            }
            free(sid);
        }
    }
    free(keep);
    free(gone);
}

/* --- the run -----------------------------------------------------------------------------------
 */

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    return remove(path) < 0 ? 0 : 0;
}

static void cleanup(ctx *x)
{
    /* the sessions we made: deleted where the agent can */
    if (json_array_size(x->made) && has_cap(x, "sessionCapabilities.delete")) {
        peer p;
        char why[256];
        if (!peer_open(x, &p, why, sizeof why)) {
            size_t i;
            json_t *s;
            json_array_foreach(x->made, i, s)
            {
                call c = {0};
                if (json_is_string(s)) delete_ok(&p, json_string_value(s), &c);
                call_free(&c);
            }
            peer_close(&p, false);
        }
    }
}

/* The agent command as argv, argv[0] absolute when it is a relative path (we chdir). */
static char **agent_argv(app *a)
{
    char *line = app_agent_command(a), **argv = NULL;
    if (acp_client_split_command(line, &argv)) {
        free(line);
        return NULL;
    }
    free(line);
    if (strchr(argv[0], '/') && argv[0][0] != '/') {
        char *abs = realpath(argv[0], NULL);
        if (abs) {
            free(argv[0]);
            argv[0] = abs;
        }
    }
    return argv;
}

int cmd_check(app *a)
{
    ctx x = {.a = a,
             .prompt = !a->no_prompt,
             .methods = json_object(),
             .made = json_array(),
             .commands = json_object()};
    x.remote = app_remote(a);
    x.stdio = app_spawns(a);
    x.http = x.remote && !strncasecmp(a->agent, "http", 4);
    x.timeout_ms = a->timeout_ms ? a->timeout_ms : 30000;
    if (a->agent_log) {
        a->agent_log_fd = open(a->agent_log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
        if (a->agent_log_fd < 0) {
            app_note(a, "--agent-log: cannot open '%s': %s", a->agent_log, strerror(errno));
            return EXIT_USAGE;
        }
    } else {
        a->agent_log_fd = -1;
    }
    if (x.stdio && !(x.argv = agent_argv(a))) {
        app_note(a, "--agent: the command line is empty or has an unclosed quote");
        return EXIT_USAGE;
    }
    const char *base = getenv("TMPDIR");
    snprintf(x.tmp, sizeof x.tmp, "%s/acp-check-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(x.tmp)) {
        app_note(a, "cannot make a temporary directory: %s", strerror(errno));
        return EXIT_AGENT;
    }
    char *real = realpath(x.tmp, NULL);
    if (real) {
        snprintf(x.tmp, sizeof x.tmp, "%s", real);
        free(real);
    }
    char here[PATH_MAX];
    if (!getcwd(here, sizeof here)) here[0] = 0;
    if (chdir(x.tmp)) {
        app_note(a, "cannot enter %s: %s", x.tmp, strerror(errno));
        return EXIT_AGENT;
    }
    /* said on stderr so that --json's stdout stays one object per line */
    fprintf(stderr,
            "acp check: working in the temporary directory %s (the agent runs there, every "
            "session is made there; removed at the end, the sessions made deleted where the "
            "agent can)\n",
            x.tmp);
    const char *why_schema = NULL;
    x.schema = chk_schema_load(true, &why_schema);
    x.r = chk_report_new(stdout, a->json, a->only);
    uv_loop_init(&x.loop);
    uv_timer_init(&x.loop, &x.timer);
    x.timer.data = &x;

    peer p, q;
    char why[1024];
    int rc;
    if (peer_open(&x, &p, why, sizeof why)) {
        ADD(&x, "init.connect", CHK_MUST, CHK_FAIL, S_INIT_SAME, NULL, why,
            "cannot start and initialize the agent");
        peer_close(&p, true);
    } else {
        x.caps = json_incref(json_object_get(acp_client_init_result(p.c), "agentCapabilities"));
        settle(&p, SETTLE_MS); /* available_commands_update and the like */
        g_init(&x, &p);
        g_rpc(&x, &p);
        /* the hygiene checks may have killed the agent (they say so): a fresh one for the rest */
        if (acp_client_agent_gone(p.c)) {
            fprintf(stderr,
                    "acp check: the agent died during the JSON-RPC checks; starting it again\n");
            peer_close(&p, true);
            if (peer_open(&x, &p, why, sizeof why))
                ADD(&x, "init.restart", CHK_MUST, CHK_FAIL, S_PERSIST, NULL, why,
                    "the agent does not start again after the JSON-RPC checks");
        }
        if (p.c) g_new(&x, &p);
        memset(&q, 0, sizeof q);
        if (p.c && !x.auth_wall) {
            g_prompt(&x, &p);
            g_list(&x, &p);
            g_close(&x, &p);
            g_persist(&x, &p, &q);
        }
        peer_close(&p, true);
        peer_close(&q, true);
        cleanup(&x);
    }
    if (x.stdio)
        ADD(&x, "transport.stdout_only_jsonrpc", CHK_MUST, x.nonjson ? CHK_FAIL : CHK_PASS,
            S_STDOUT, NULL, x.first_nonjson, "%u of %u lines on stdout were not JSON-RPC",
            x.nonjson, x.nmsgs);
    if (!x.schema)
        ADD(&x, "schema.messages", CHK_MUST, CHK_SKIP, S_SCHEMA, NULL, NULL, "%s", why_schema);
    else
        ADD(&x, "schema.messages", CHK_MUST, x.badschema ? CHK_FAIL : CHK_PASS, S_SCHEMA, NULL,
            x.first_bad_msg, "%u of %u messages received break schema.json%s%s", x.badschema,
            x.nmsgs, x.badschema ? "; the first: " : "", x.first_bad ? x.first_bad : "");
    rc = chk_report_end(x.r, "acp check");
    uv_close((uv_handle_t *)&x.timer, NULL);
    uv_run(&x.loop, UV_RUN_DEFAULT);
    uv_loop_close(&x.loop);
    if (here[0] && chdir(here)) here[0] = 0;
    nftw(x.tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    chk_schema_free(x.schema);
    json_decref(x.methods);
    json_decref(x.made);
    json_decref(x.caps);
    json_decref(x.commands);
    free(x.first_nonjson);
    free(x.first_bad);
    free(x.first_bad_msg);
    if (x.argv) acp_client_argv_free(x.argv);
    if (a->agent_log_fd >= 0) close(a->agent_log_fd);
    a->agent_log_fd = -1;
    return rc;
}
