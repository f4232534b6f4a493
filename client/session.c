/* Sessions from the client's side: new, load, resume, prompt, cancel, close, list, delete,
 * each checked against the agent's capabilities before anything is sent, and the routing of
 * session/update notifications to the application. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/internal.h"

/* A session/prompt in flight. */
struct prompt_op {
    acp_client_session *s;
    acp_call *call;
    acp_client_prompt_cb cb;
    void *user;
};

acp_client_session *acp_client_find(acp_client *c, acp_span id)
{
    for (acp_client_session *s = c->sessions; s; s = s->next)
        if (acp_json_str_eq(id, s->id)) return s;
    return NULL;
}

acp_client_session *acp_client_find_id(acp_client *c, const char *id)
{
    for (acp_client_session *s = c->sessions; s; s = s->next)
        if (strcmp(s->id, id) == 0) return s;
    return NULL;
}

const char *acp_client_session_id(const acp_client_session *s)
{
    return s->id;
}

json_t *acp_client_session_result(const acp_client_session *s)
{
    return s->result;
}

acp_client *acp_client_session_client(const acp_client_session *s)
{
    return s->c;
}

void acp_client_session_set_user(acp_client_session *s, void *user)
{
    s->user = user;
}

void *acp_client_session_user(const acp_client_session *s)
{
    return s->user;
}

void acp_client_session_free(acp_client_session *s)
{
    if (!s) return;
    acp_client *c = s->c;
    for (acp_client_session **pp = &c->sessions; *pp; pp = &(*pp)->next) {
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    }
    acp_client_perms_cancel(s, true);
    if (s->prompt) { /* its answer is of no use to anyone now; its waiter is told */
        struct prompt_op *op = s->prompt;
        s->prompt = NULL;
        acp_conn_forget(c->conn, op->call);
        op->cb(s,
               acp_client_seterr(c, ACP_ECANCELLED,
                                 "the session handle was freed during "
                                 "its prompt"),
               "unknown", op->user);
        free(op);
    }
    acp_roots_free(s->roots);
    json_decref(s->result);
    free(s->id);
    free(s);
}

/* The routing hot path: find sessionId and the update kind in the raw text, no tree. */
static void on_update(acp_conn *conn, acp_msg *m, void *user)
{
    acp_client *c = user;
    acp_update u = {.params = acp_msg_params_text(m)};
    if (acp_json_kind(u.params) != 'o') return;
    if (!acp_json_member(u.params, "sessionId", &u.session_id) ||
        acp_json_kind(u.session_id) != 's')
        return; /* a notification cannot be answered; a malformed one is dropped */
    if (!acp_json_member(u.params, "update", &u.update) || acp_json_kind(u.update) != 'o') return;
    if (acp_json_member(u.update, "sessionUpdate", &u.kind_text))
        u.kind = acp_update_kind_of(u.kind_text);
    acp_client_session *s = acp_client_find(c, u.session_id);
    u.replay = s && s->loading;
    if (c->opts.on_update) c->opts.on_update(c, s, &u, c->opts.user);
}

static int need(acp_client *c, acp_agent_cap cap, const char *name)
{
    if (acp_client_supports(c, cap)) return 0;
    return acp_client_seterr(c, ACP_ENOTSUP, "agent does not advertise %s", name);
}

/* Builds cwd / additionalDirectories / mcpServers for new, load and resume, refusing what
 * the agent did not advertise, and the root set that will bound the session's fs requests. */
static int setup_params(acp_client *c, const char *id, const acp_session_opts *o, json_t **params,
                        acp_roots **roots)
{
    static const acp_session_opts none = {0};
    if (!o) o = &none;
    char here[PATH_MAX];
    const char *cwd = o->cwd;
    if (!cwd) {
        if (!getcwd(here, sizeof here))
            return acp_client_seterr(c, ACP_EIO, "cannot read the working directory; pass a cwd");
        cwd = here;
    }
    size_t ndirs = 0;
    while (o->add_dirs && o->add_dirs[ndirs]) ndirs++;
    if (ndirs) {
        int rc = need(c, ACP_CAP_ADDITIONAL_DIRS, "sessionCapabilities.additionalDirectories");
        if (rc) return rc;
    }
    if (o->mcp_servers && !json_is_array(o->mcp_servers))
        return acp_client_seterr(c, ACP_EINVAL, "mcpServers must be a JSON array");
    size_t i;
    json_t *srv;
    json_array_foreach(o->mcp_servers, i, srv)
    {
        const char *type = json_string_value(json_object_get(srv, "type"));
        const char *name = json_string_value(json_object_get(srv, "name"));
        if (!type) continue;
        acp_agent_cap cap = strcmp(type, "http") == 0  ? ACP_CAP_MCP_HTTP
                            : strcmp(type, "sse") == 0 ? ACP_CAP_MCP_SSE
                                                       : (acp_agent_cap)-1;
        if ((int)cap < 0)
            return acp_client_seterr(c, ACP_EINVAL, "MCP server '%s' has unknown type '%s'",
                                     name ? name : "?", type);
        if (!acp_client_supports(c, cap))
            return acp_client_seterr(c, ACP_ENOTSUP,
                                     "agent does not advertise mcpCapabilities.%s (MCP server "
                                     "'%s' uses %s)",
                                     type, name ? name : "?",
                                     cap == ACP_CAP_MCP_HTTP ? "HTTP" : "SSE");
    }
    char *msg = NULL;
    int rc = acp_roots_new(cwd, (const char *const *)o->add_dirs, ndirs, roots, &msg);
    if (rc) {
        acp_client_seterr(c, rc, "%s", msg ? msg : acp_strerror(rc));
        free(msg);
        return rc;
    }
    json_t *p = json_object();
    if (id) json_object_set_new(p, "sessionId", json_string(id));
    json_object_set_new(p, "cwd", json_string(cwd));
    json_object_set_new(p, "mcpServers",
                        o->mcp_servers ? json_deep_copy(o->mcp_servers) : json_array());
    if (ndirs) {
        json_t *a = json_array();
        for (size_t k = 0; k < ndirs; k++) json_array_append_new(a, json_string(o->add_dirs[k]));
        json_object_set_new(p, "additionalDirectories", a);
    }
    *params = p;
    return 0;
}

static acp_client_session *session_add(acp_client *c, const char *id, acp_roots *roots)
{
    acp_client_session *s = calloc(1, sizeof *s);
    if (!s || !(s->id = strdup(id))) {
        free(s);
        return NULL;
    }
    s->c = c;
    s->roots = roots;
    s->next = c->sessions;
    c->sessions = s;
    return s;
}

/* new (id NULL), load or resume. */
static int setup(acp_client *c, const char *method, const char *id, const acp_session_opts *o,
                 acp_client_session **out)
{
    *out = NULL;
    json_t *params = NULL;
    acp_roots *roots = NULL;
    int rc = setup_params(c, id, o, &params, &roots);
    if (rc) return rc;
    /* The handle exists before the call so that replayed updates already route to it. */
    acp_client_session *s = NULL;
    if (id) {
        if (acp_client_find_id(c, id)) {
            json_decref(params);
            acp_roots_free(roots);
            return acp_client_seterr(c, ACP_EBUSY, "session %s is already open here", id);
        }
        if (!(s = session_add(c, id, roots))) {
            json_decref(params);
            acp_roots_free(roots);
            return ACP_ENOMEM;
        }
        s->loading = strcmp(method, "session/load") == 0;
    }
    json_t *result = NULL;
    rc = acp_client_call(c, method, params, &result);
    if (s) s->loading = false;
    if (rc) {
        if (s)
            acp_client_session_free(s);
        else
            acp_roots_free(roots);
        return rc;
    }
    if (!id) {
        const char *sid = json_string_value(json_object_get(result, "sessionId"));
        if (!sid) {
            json_decref(result);
            acp_roots_free(roots);
            return acp_client_seterr(c, ACP_EPROTO,
                                     "the agent's session/new answer has no "
                                     "sessionId string");
        }
        if (!(s = session_add(c, sid, roots))) {
            json_decref(result);
            acp_roots_free(roots);
            return ACP_ENOMEM;
        }
    }
    s->result = result; /* null for a load answered with the page's `null`: accepted */
    *out = s;
    return 0;
}

int acp_client_session_new(acp_client *c, const acp_session_opts *o, acp_client_session **out)
{
    return setup(c, "session/new", NULL, o, out);
}

int acp_client_session_load(acp_client *c, const char *id, const acp_session_opts *o,
                            acp_client_session **out)
{
    *out = NULL;
    int rc = need(c, ACP_CAP_LOAD_SESSION, "loadSession");
    return rc ? rc : setup(c, "session/load", id, o, out);
}

int acp_client_session_resume(acp_client *c, const char *id, const acp_session_opts *o,
                              acp_client_session **out)
{
    *out = NULL;
    int rc = need(c, ACP_CAP_RESUME, "sessionCapabilities.resume");
    return rc ? rc : setup(c, "session/resume", id, o, out);
}

static const char *const stops[] = {"end_turn", "max_tokens", "max_turn_requests", "refusal",
                                    "cancelled"};

static void on_prompt_answer(acp_conn *conn, acp_msg *m, void *user)
{
    struct prompt_op *op = user;
    acp_client_session *s = op->s;
    s->prompt = NULL;
    json_t *result;
    int rc = acp_client_answer(s->c, "session/prompt", m, &result);
    const char *stop = "unknown";
    const char *r = json_string_value(json_object_get(result, "stopReason"));
    for (size_t k = 0; r && k < sizeof stops / sizeof stops[0]; k++)
        if (strcmp(r, stops[k]) == 0) stop = stops[k];
    json_decref(result);
    acp_client_prompt_cb cb = op->cb;
    void *cb_user = op->user;
    free(op);
    cb(s, rc, stop, cb_user);
}

int acp_client_session_prompt_start(acp_client_session *s, json_t *blocks, acp_client_prompt_cb cb,
                                    void *user)
{
    acp_client *c = s->c;
    if (s->prompt)
        return acp_client_seterr(c, ACP_EBUSY, "a prompt is already running on session %s", s->id);
    if (c->gone) return acp_client_seterr(c, ACP_ECLOSED, "the agent has exited; start it again");
    size_t i;
    json_t *b;
    json_array_foreach(blocks, i, b)
    {
        const char *t = json_string_value(json_object_get(b, "type"));
        int rc = 0;
        if (t && strcmp(t, "image") == 0)
            rc = need(c, ACP_CAP_PROMPT_IMAGE, "promptCapabilities.image");
        else if (t && strcmp(t, "audio") == 0)
            rc = need(c, ACP_CAP_PROMPT_AUDIO, "promptCapabilities.audio");
        else if (t && strcmp(t, "resource") == 0)
            rc = need(c, ACP_CAP_PROMPT_RESOURCE, "promptCapabilities.embeddedContext");
        if (rc) return rc;
    }
    json_t *params = json_pack("{s:s, s:O}", "sessionId", s->id, "prompt", blocks);
    struct prompt_op *op = calloc(1, sizeof *op);
    if (!params || !op) {
        json_decref(params);
        free(op);
        return ACP_ENOMEM;
    }
    *op = (struct prompt_op){.s = s, .cb = cb, .user = user};
    int rc = acp_conn_call(c->conn, "session/prompt", params, on_prompt_answer, op, &op->call);
    if (rc) {
        free(op);
        return acp_client_seterr(c, rc, "cannot send session/prompt: %s", acp_strerror(rc));
    }
    s->prompt = op;
    return 0;
}

typedef struct sync_prompt {
    bool done;
    int status;
    const char *stop;
} sync_prompt;

static void sync_done(acp_client_session *s, int status, const char *stop, void *user)
{
    sync_prompt *sp = user;
    *sp = (sync_prompt){.done = true, .status = status, .stop = stop};
}

int acp_client_session_prompt_blocks(acp_client_session *s, json_t *blocks, const char **stop)
{
    if (stop) *stop = "unknown";
    sync_prompt sp = {0};
    int rc = acp_client_session_prompt_start(s, blocks, sync_done, &sp);
    while (!rc && !sp.done) rc = acp_client_run_once(s->c);
    if (rc) return rc;
    if (stop) *stop = sp.stop;
    return sp.status;
}

int acp_client_session_prompt(acp_client_session *s, const char *text, const char **stop)
{
    json_t *blocks = json_pack("[{s:s, s:s}]", "type", "text", "text", text);
    if (!blocks) return ACP_EINVAL; /* text not UTF-8 */
    int rc = acp_client_session_prompt_blocks(s, blocks, stop);
    json_decref(blocks);
    return rc;
}

int acp_client_session_cancel(acp_client_session *s)
{
    if (!s->prompt) return 0;
    json_t *p = json_pack("{s:s}", "sessionId", s->id);
    int rc = acp_conn_notify(s->c->conn, "session/cancel", p);
    if (s->c->tr)
        acp_transport_flush(
            s->c->tr); /* now, not at the end of the loop turn: the user is waiting */
    /* After session/cancel, pending permission requests MUST be answered `cancelled`. */
    acp_client_perms_cancel(s, false);
    return rc;
}

int acp_client_session_set_mode(acp_client_session *s, const char *mode_id)
{
    if (!json_is_object(json_object_get(s->result, "modes")))
        return acp_client_seterr(s->c, ACP_ENOTSUP, "agent returned no modes for session %s",
                                 s->id);
    return acp_client_call(s->c, "session/set_mode",
                           json_pack("{s:s, s:s}", "sessionId", s->id, "modeId", mode_id), NULL);
}

int acp_client_session_set_config(acp_client_session *s, const char *config_id, const char *value)
{
    if (!json_is_array(json_object_get(s->result, "configOptions")))
        return acp_client_seterr(s->c, ACP_ENOTSUP,
                                 "agent returned no configOptions for session %s", s->id);
    json_t *result = NULL;
    int rc = acp_client_call(
        s->c, "session/set_config_option",
        json_pack("{s:s, s:s, s:s}", "sessionId", s->id, "configId", config_id, "value", value),
        &result);
    if (rc == 0 && json_is_object(s->result) &&
        json_is_array(json_object_get(result, "configOptions")))
        json_object_set(s->result, "configOptions", json_object_get(result, "configOptions"));
    json_decref(result);
    return rc;
}

int acp_client_close_id(acp_client *c, const char *id)
{
    int rc = need(c, ACP_CAP_CLOSE, "sessionCapabilities.close");
    return rc ? rc : acp_client_call(c, "session/close", json_pack("{s:s}", "sessionId", id), NULL);
}

int acp_client_session_close(acp_client_session *s)
{
    int rc = acp_client_close_id(s->c, s->id);
    if (rc != ACP_ENOTSUP) acp_client_session_free(s);
    return rc;
}

int acp_client_list(acp_client *c, const char *cwd, const char *cursor, json_t **result)
{
    *result = NULL;
    int rc = need(c, ACP_CAP_LIST, "sessionCapabilities.list");
    if (rc) return rc;
    json_t *p = json_object();
    if (cwd) json_object_set_new(p, "cwd", json_string(cwd));
    if (cursor) json_object_set_new(p, "cursor", json_string(cursor));
    rc = acp_client_call(c, "session/list", p, result);
    if (rc == 0 && !json_is_array(json_object_get(*result, "sessions"))) {
        json_decref(*result);
        *result = NULL;
        return acp_client_seterr(c, ACP_EPROTO,
                                 "the agent's session/list answer has no "
                                 "sessions array");
    }
    return rc;
}

int acp_client_delete(acp_client *c, const char *id)
{
    int rc = need(c, ACP_CAP_DELETE, "sessionCapabilities.delete");
    if (rc) return rc;
    rc = acp_client_call(c, "session/delete", json_pack("{s:s}", "sessionId", id), NULL);
    if (rc == 0) acp_client_session_free(acp_client_find_id(c, id));
    return rc;
}

void acp_client_session_register(acp_client *c)
{
    acp_conn_on(c->conn, "session/update", NULL, on_update, c);
}

acp_client_session *acp_client_req_session(acp_client *c, acp_req *req)
{
    acp_span sid = {0};
    acp_span params = acp_req_params_text(req);
    if (acp_json_kind(params) != 'o' || !acp_json_member(params, "sessionId", &sid) ||
        acp_json_kind(sid) != 's') {
        acp_req_error(req, ACP_RPC_INVALID_PARAMS, NULL, "sessionId (a string) is required");
        return NULL;
    }
    acp_client_session *s = acp_client_find(c, sid);
    if (!s)
        acp_req_error(req, ACP_RPC_NOT_FOUND, NULL,
                      "unknown session %.*s: this client has no such session open",
                      (int)(sid.n < 200 ? sid.n : 200), sid.p);
    return s;
}
