/* SPDX-License-Identifier: Apache-2.0 */
/* Sessions from the client's side: new, load, resume, prompt, cancel, close, list, delete,
 * each checked against the agent's capabilities before anything is sent, and the routing of
 * session/update notifications to the application. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/internal.h"

/* Once per session/update, so it must stay cheap with many sessions: an id without escapes
 * (every agent's, in practice) is its literal's own bytes, one length compare per session, and
 * the session of the previous update is tried first. */
acp_client_session *acp_client_find(acp_client *c, acp_span id)
{
    if (acp_json_kind(id) != 's') return NULL;
    if (memchr(id.p, '\\', id.n)) {
        for (acp_client_session *s = c->sessions; s; s = s->next)
            if (acp_json_str_eq(id, s->id)) return s;
        return NULL;
    }
    const char *p = id.p + 1;
    size_t n = id.n - 2;
    acp_client_session *f = c->found;
    if (f && f->idlen == n && memcmp(f->id, p, n) == 0) return f;
    for (acp_client_session *s = c->sessions; s; s = s->next)
        if (s->idlen == n && memcmp(s->id, p, n) == 0) return c->found = s;
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

json_t *acp_client_session_modes(const acp_client_session *s)
{
    return s->modes;
}

const char *acp_client_session_mode(const acp_client_session *s)
{
    return json_string_value(json_object_get(s->modes, "currentModeId"));
}

json_t *acp_client_session_config_options(const acp_client_session *s)
{
    return s->config;
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
    if (c->found == s) c->found = NULL;
    acp_client_subagent_unlink(s); /* its children go with it */
    acp_client_pending_cancel(c, s, true);
    acp_client_ops_cancel(c, s); /* their answers are of no use now; their callers are told */
    acp_roots_free(s->roots);
    json_decref(s->result);
    json_decref(s->modes);
    json_decref(s->config);
    json_decref(s->sub);
    free(s->id);
    free(s);
}

acp_client_session *acp_client_session_add(acp_client *c, const char *id, acp_roots *roots)
{
    acp_client_session *s = calloc(1, sizeof *s);
    if (!s || !(s->id = strdup(id))) {
        free(s);
        return NULL;
    }
    s->idlen = strlen(id);
    s->c = c;
    s->roots = roots;
    s->next = c->sessions;
    c->sessions = s;
    c->dropped[0] = 0; /* that id may be this one: if it goes again, say so again */
    return s;
}

void acp_client_session_adopt(acp_client_session *s, json_t *result)
{
    json_t *m = json_object_get(result, "modes");
    json_t *o = json_object_get(result, "configOptions");
    json_decref(s->result);
    json_decref(s->modes);
    json_decref(s->config);
    s->result = json_incref(result);
    s->modes = json_is_object(m) ? json_deep_copy(m) : NULL;
    s->config = json_is_array(o) ? json_incref(o) : NULL;
}

/* current_mode_update and config_option_update keep the session's state current. They are
 * rare, so parsing them here costs the hot path nothing. */
static void track(acp_client_session *s, const acp_update *u)
{
    json_t *up = json_loadb(u->update.p, u->update.n, JSON_REJECT_DUPLICATES, NULL);
    if (u->kind == ACP_UPDATE_CURRENT_MODE) {
        json_t *id = json_object_get(up, "currentModeId");
        if (json_is_string(id) && s->modes) json_object_set(s->modes, "currentModeId", id);
    } else {
        json_t *o = json_object_get(up, "configOptions");
        if (json_is_array(o)) {
            json_decref(s->config);
            s->config = json_incref(o);
        }
    }
    json_decref(up);
}

/* The routing hot path: find sessionId and the update kind in the raw text, no tree. */
static void on_update(acp_conn *conn, acp_msg *m, void *user)
{
    acp_client *c = user;
    acp_update u = {.params = acp_msg_params_text(m)};
    /* A notification cannot be answered: a malformed one is dropped, and said so. */
    if (acp_json_kind(u.params) != 'o' || !acp_json_member(u.params, "sessionId", &u.session_id) ||
        acp_json_kind(u.session_id) != 's' || !acp_json_member(u.params, "update", &u.update) ||
        acp_json_kind(u.update) != 'o' ||
        !acp_json_member(u.update, "sessionUpdate", &u.kind_text) ||
        acp_json_kind(u.kind_text) != 's') {
        acp_client_log(c, "dropped a session/update without a sessionId string and an update "
                          "object with a sessionUpdate string");
        return;
    }
    u.kind = acp_update_kind_of(u.kind_text);
    acp_client_session *s = acp_client_find(c, u.session_id);
    if (!s) {
        /* Not ours (never created, loaded or resumed here, or already freed): shown, it would
         * pass for the user's session; an agent that means one of ours names it. */
        size_t n = u.session_id.n < sizeof c->dropped ? u.session_id.n : sizeof c->dropped - 1;
        if (strlen(c->dropped) == n && !memcmp(c->dropped, u.session_id.p, n)) return;
        memcpy(c->dropped, u.session_id.p, n);
        c->dropped[n] = 0;
        acp_client_log(c,
                       "dropped a session/update for session %s, which this client does not "
                       "have open (and any that follow it for that session)",
                       c->dropped);
        return;
    }
    u.replay = s->loading;
    for (acp_client_session *p = s->parent; p; p = p->parent) u.replay |= p->loading;
    if (u.kind == ACP_UPDATE_CURRENT_MODE || u.kind == ACP_UPDATE_CONFIG_OPTION) track(s, &u);
    if (u.kind == ACP_UPDATE_SUBAGENT && c->opts.subagents) acp_client_subagent_track(s, &u);
    if (c->opts.on_update) c->opts.on_update(c, s, &u, c->opts.user);
}

/* Builds cwd / additionalDirectories / mcpServers for new, load and resume, refusing what
 * the agent did not advertise, and the root set that will bound the session's fs requests. */
static int setup_params(acp_client *c, const char *id, const acp_session_opts *opts,
                        json_t **params, acp_roots **roots)
{
    acp_session_opts copy;
    const acp_session_opts *o = &copy;
    int rc =
        acp_struct_read(&copy, sizeof copy, ACP_SESSION_OPTS_SIZE_1_0, opts, "acp_session_opts");
    if (rc) return rc;
    char here[PATH_MAX];
    const char *cwd = o->cwd;
    if (!cwd) {
        if (!getcwd(here, sizeof here))
            return acp_error_set(ACP_EIO, "cannot read the working directory; pass a cwd");
        cwd = here;
    }
    size_t ndirs = 0;
    while (o->add_dirs && o->add_dirs[ndirs]) ndirs++;
    if (o->system_prompt && (rc = acp_client_system_prompt_check(c, o->system_prompt))) return rc;
    if (ndirs && (rc = acp_client_need(c, ACP_CAP_ADDITIONAL_DIRS,
                                       "sessionCapabilities.additionalDirectories")))
        return rc;
    if (o->mcp_servers && !json_is_array(o->mcp_servers))
        return acp_error_set(ACP_EINVAL, "mcpServers must be a JSON array");
    size_t i;
    json_t *srv;
    json_array_foreach(o->mcp_servers, i, srv)
    {
        const char *type = json_string_value(json_object_get(srv, "type"));
        const char *name = json_string_value(json_object_get(srv, "name"));
        if (!type) continue;
        acp_agent_cap cap = strcmp(type, "http") == 0  ? ACP_CAP_MCP_HTTP
                            : strcmp(type, "sse") == 0 ? ACP_CAP_MCP_SSE
                            : strcmp(type, "acp") == 0 ? ACP_CAP_MCP_ACP
                                                       : (acp_agent_cap)-1;
        if ((int)cap < 0)
            return acp_error_set(ACP_EINVAL, "MCP server '%s' has unknown type '%s'",
                                 name ? name : "?", type);
        if (!acp_client_supports(c, cap))
            return acp_error_set(ACP_ENOTSUP,
                                 "agent does not advertise mcpCapabilities.%s (MCP server "
                                 "'%s' uses %s)",
                                 type, name ? name : "?",
                                 cap == ACP_CAP_MCP_HTTP  ? "HTTP"
                                 : cap == ACP_CAP_MCP_SSE ? "SSE"
                                                          : "MCP over ACP");
    }
    rc = acp_roots_new(cwd, (const char *const *)o->add_dirs, ndirs, roots);
    if (rc) return rc;
    json_t *p = json_object();
    if (id) json_object_set_new(p, "sessionId", json_string(id));
    json_object_set_new(p, "cwd", json_string(cwd));
    json_object_set_new(p, "mcpServers",
                        o->mcp_servers ? json_deep_copy(o->mcp_servers) : json_array());
    if (o->meta) json_object_set_new(p, "_meta", json_deep_copy(o->meta));
    if (o->system_prompt) json_object_set_new(p, "systemPrompt", json_deep_copy(o->system_prompt));
    if (ndirs) {
        json_t *a = json_array();
        for (size_t k = 0; k < ndirs; k++) json_array_append_new(a, json_string(o->add_dirs[k]));
        json_object_set_new(p, "additionalDirectories", a);
    }
    *params = p;
    return 0;
}

/* --- new, load, resume ------------------------------------------------------------------ */

static void setup_finish(acp_client_op *op, acp_client_reply *r)
{
    acp_client *c = op->c;
    acp_client_session *s = op->s;
    if (s) s->loading = false;
    if (r->status == 0 && !s) { /* session/new: the handle is born now */
        const char *sid = json_string_value(json_object_get(r->result, "sessionId"));
        if (!sid || !*sid)
            r->status = acp_error_set(ACP_EPROTO, "the agent's session/new answer has no sessionId "
                                                  "string");
        else if (!(s = acp_client_session_add(c, sid, op->roots)))
            r->status = acp_error_set(ACP_ENOMEM, "out of memory");
        else
            op->roots = NULL;
    }
    if (r->status) {
        op->s = NULL;
        r->session = NULL;
        acp_client_session_free(s); /* load/resume: the handle made for the replay */
        return;
    }
    acp_client_session_adopt(s, r->result); /* null for a load answered `null`: accepted */
    r->session = s;
    op->s = NULL; /* the caller's now */
}

/* new (id NULL), load or resume. */
static int setup(acp_client *c, const char *method, const char *id, const acp_session_opts *o,
                 acp_client_cb cb, void *user, acp_client_op **out)
{
    if (out) *out = NULL;
    if (id && !*id) return acp_error_set(ACP_EINVAL, "a session id cannot be empty");
    json_t *params = NULL;
    acp_roots *roots = NULL;
    int rc = setup_params(c, id, o, &params, &roots);
    if (rc) return rc;
    /* A load or resume's handle exists before the call, so that replayed updates route to it. */
    acp_client_session *s = NULL;
    if (id) {
        if (acp_client_find_id(c, id)) {
            json_decref(params);
            acp_roots_free(roots);
            return acp_error_set(ACP_EBUSY, "session %s is already open here", id);
        }
        if (!(s = acp_client_session_add(c, id, roots))) {
            json_decref(params);
            acp_roots_free(roots);
            return acp_error_set(ACP_ENOMEM, "out of memory");
        }
        roots = NULL;
    }
    acp_client_op *op;
    rc = acp_client_op_start(c, method, params, setup_finish, cb, user, &op);
    if (rc) {
        acp_client_session_free(s);
        acp_roots_free(roots);
        return rc;
    }
    op->s = s;
    op->roots = roots;
    if (s) s->loading = strcmp(method, "session/load") == 0;
    if (out) *out = op;
    return 0;
}

int acp_client_session_new_start(acp_client *c, const acp_session_opts *o, acp_client_cb cb,
                                 void *user, acp_client_op **op)
{
    return setup(c, "session/new", NULL, o, cb, user, op);
}

int acp_client_session_load_start(acp_client *c, const char *id, const acp_session_opts *o,
                                  acp_client_cb cb, void *user, acp_client_op **op)
{
    int rc = acp_client_need(c, ACP_CAP_LOAD_SESSION, "loadSession");
    return rc ? rc : setup(c, "session/load", id, o, cb, user, op);
}

int acp_client_session_resume_start(acp_client *c, const char *id, const acp_session_opts *o,
                                    acp_client_cb cb, void *user, acp_client_op **op)
{
    int rc = acp_client_need(c, ACP_CAP_RESUME, "sessionCapabilities.resume");
    return rc ? rc : setup(c, "session/resume", id, o, cb, user, op);
}

static int sync_session(acp_client *c, int rc, acp_client_sync *w, acp_client_session **out)
{
    rc = acp_client_sync_wait(c, rc, w, NULL);
    *out = rc ? NULL : w->session;
    return rc;
}

int acp_client_session_new(acp_client *c, const acp_session_opts *o, acp_client_session **out)
{
    acp_client_sync w = {0};
    return sync_session(c, acp_client_session_new_start(c, o, acp_client_sync_cb, &w, NULL), &w,
                        out);
}

int acp_client_session_load(acp_client *c, const char *id, const acp_session_opts *o,
                            acp_client_session **out)
{
    acp_client_sync w = {0};
    return sync_session(c, acp_client_session_load_start(c, id, o, acp_client_sync_cb, &w, NULL),
                        &w, out);
}

int acp_client_session_resume(acp_client *c, const char *id, const acp_session_opts *o,
                              acp_client_session **out)
{
    acp_client_sync w = {0};
    return sync_session(c, acp_client_session_resume_start(c, id, o, acp_client_sync_cb, &w, NULL),
                        &w, out);
}

/* --- prompt and cancel ------------------------------------------------------------------- */

static const char *const stops[] = {"end_turn", "max_tokens", "max_turn_requests", "refusal",
                                    "cancelled"};

static void prompt_finish(acp_client_op *op, acp_client_reply *r)
{
    if (op->s) op->s->prompt = NULL;
    const char *v = json_string_value(json_object_get(r->result, "stopReason"));
    for (size_t k = 0; v && k < sizeof stops / sizeof stops[0]; k++)
        if (strcmp(v, stops[k]) == 0) r->stop = stops[k];
    if (r->status == 0 && !strcmp(r->stop, "unknown"))
        r->status = acp_error_set(ACP_EPROTO, "the agent's session/prompt answer has no known "
                                              "stopReason");
}

int acp_client_session_prompt_start(acp_client_session *s, json_t *blocks, acp_client_cb cb,
                                    void *user, acp_client_op **out)
{
    acp_client *c = s->c;
    if (out) *out = NULL;
    int rc = acp_client_subagent_refuse(s, "prompted");
    if (rc) return rc;
    if (s->prompt)
        return acp_error_set(ACP_EBUSY, "a prompt is already running on session %s", s->id);
    if (!json_is_array(blocks))
        return acp_error_set(ACP_EINVAL, "a prompt is a JSON array of content blocks");
    size_t i;
    json_t *b;
    json_array_foreach(blocks, i, b)
    {
        const char *t = json_string_value(json_object_get(b, "type"));
        rc = 0;
        if (t && strcmp(t, "image") == 0)
            rc = acp_client_need(c, ACP_CAP_PROMPT_IMAGE, "promptCapabilities.image");
        else if (t && strcmp(t, "audio") == 0)
            rc = acp_client_need(c, ACP_CAP_PROMPT_AUDIO, "promptCapabilities.audio");
        else if (t && strcmp(t, "resource") == 0)
            rc = acp_client_need(c, ACP_CAP_PROMPT_RESOURCE, "promptCapabilities.embeddedContext");
        if (rc) return rc;
    }
    acp_client_op *op;
    rc = acp_client_op_start(c, "session/prompt",
                             json_pack("{s:s, s:O}", "sessionId", s->id, "prompt", blocks),
                             prompt_finish, cb, user, &op);
    if (rc) return rc;
    op->s = s;
    s->prompt = op;
    if (out) *out = op;
    return 0;
}

int acp_client_session_prompt_blocks(acp_client_session *s, json_t *blocks, const char **stop)
{
    acp_client_sync w = {0};
    int rc = acp_client_sync_wait(
        s->c, acp_client_session_prompt_start(s, blocks, acp_client_sync_cb, &w, NULL), &w, NULL);
    if (stop) *stop = w.stop ? w.stop : "unknown";
    return rc;
}

int acp_client_session_prompt(acp_client_session *s, const char *text, const char **stop)
{
    json_t *blocks = json_pack("[{s:s, s:s}]", "type", "text", "text", text);
    if (!blocks) {
        if (stop) *stop = "unknown";
        return acp_error_set(ACP_EINVAL, "the prompt is not valid UTF-8");
    }
    int rc = acp_client_session_prompt_blocks(s, blocks, stop);
    json_decref(blocks);
    return rc;
}

int acp_client_session_cancel(acp_client_session *s)
{
    if (s->parent && !acp_client_subagent_may_cancel(s))
        return acp_error_set(ACP_ENOTSUP, "subagent session %s does not grant cancel", s->id);
    if (!s->prompt && !s->parent) return 0;
    int rc = acp_conn_notify(s->c->conn, "session/cancel", json_pack("{s:s}", "sessionId", s->id));
    if (s->c->tr)
        acp_transport_flush(s->c->tr); /* now, not at the end of the turn: the user waits */
    acp_client_net_flush(s->c);
    /* After session/cancel, pending permission requests MUST be answered `cancelled`; the
     * asks and elicitations of the turn go the same way. */
    acp_client_pending_cancel(s->c, s, false);
    return rc;
}

/* --- modes and config options ------------------------------------------------------------ */

static void mode_finish(acp_client_op *op, acp_client_reply *r)
{
    if (r->status == 0 && op->s && op->s->modes && op->id)
        json_object_set_new(op->s->modes, "currentModeId", json_string(op->id));
}

int acp_client_session_set_mode_start(acp_client_session *s, const char *mode_id, acp_client_cb cb,
                                      void *user, acp_client_op **out)
{
    if (out) *out = NULL;
    int rc = acp_client_subagent_refuse(s, "switched to another mode");
    if (rc) return rc;
    if (!s->modes) return acp_error_set(ACP_ENOTSUP, "agent gave no modes for session %s", s->id);
    acp_client_op *op;
    rc = acp_client_op_start(s->c, "session/set_mode",
                             json_pack("{s:s, s:s}", "sessionId", s->id, "modeId", mode_id),
                             mode_finish, cb, user, &op);
    if (rc) return rc;
    op->s = s;
    op->id = strdup(mode_id);
    if (out) *out = op;
    return 0;
}

static void config_finish(acp_client_op *op, acp_client_reply *r)
{
    json_t *o = json_object_get(r->result, "configOptions");
    if (r->status == 0 && op->s && json_is_array(o)) {
        json_decref(op->s->config);
        op->s->config = json_incref(o);
    }
}

static int set_config(acp_client_session *s, json_t *params, acp_client_cb cb, void *user,
                      acp_client_op **out)
{
    if (out) *out = NULL;
    if (acp_client_subagent_refuse(s, "configured")) {
        json_decref(params);
        return ACP_EINVAL;
    }
    if (!s->config) {
        json_decref(params);
        return acp_error_set(ACP_ENOTSUP, "agent gave no configOptions for session %s", s->id);
    }
    acp_client_op *op;
    int rc = acp_client_op_start(s->c, "session/set_config_option", params, config_finish, cb, user,
                                 &op);
    if (rc) return rc;
    op->s = s;
    if (out) *out = op;
    return 0;
}

int acp_client_session_set_config_start(acp_client_session *s, const char *config_id,
                                        const char *value, acp_client_cb cb, void *user,
                                        acp_client_op **op)
{
    return set_config(
        s, json_pack("{s:s, s:s, s:s}", "sessionId", s->id, "configId", config_id, "value", value),
        cb, user, op);
}

int acp_client_session_set_config_bool_start(acp_client_session *s, const char *config_id,
                                             bool value, acp_client_cb cb, void *user,
                                             acp_client_op **op)
{
    if (!s->c->opts.config_boolean)
        return acp_error_set(ACP_EINVAL,
                             "boolean config values need acp_client_opts.config_boolean "
                             "(session.configOptions.boolean)");
    return set_config(s,
                      json_pack("{s:s, s:s, s:s, s:b}", "sessionId", s->id, "configId", config_id,
                                "type", "boolean", "value", value),
                      cb, user, op);
}

int acp_client_session_set_mode(acp_client_session *s, const char *mode_id)
{
    acp_client_sync w = {0};
    return acp_client_sync_wait(
        s->c, acp_client_session_set_mode_start(s, mode_id, acp_client_sync_cb, &w, NULL), &w,
        NULL);
}

int acp_client_session_set_config(acp_client_session *s, const char *config_id, const char *value)
{
    acp_client_sync w = {0};
    return acp_client_sync_wait(
        s->c,
        acp_client_session_set_config_start(s, config_id, value, acp_client_sync_cb, &w, NULL), &w,
        NULL);
}

int acp_client_session_set_config_bool(acp_client_session *s, const char *config_id, bool value)
{
    acp_client_sync w = {0};
    return acp_client_sync_wait(
        s->c,
        acp_client_session_set_config_bool_start(s, config_id, value, acp_client_sync_cb, &w, NULL),
        &w, NULL);
}

/* --- close, list, delete ----------------------------------------------------------------- */

int acp_client_close_id_start(acp_client *c, const char *id, acp_client_cb cb, void *user,
                              acp_client_op **op)
{
    if (op) *op = NULL;
    int rc = acp_client_need(c, ACP_CAP_CLOSE, "sessionCapabilities.close");
    if (!rc && (!id || !*id)) rc = acp_error_set(ACP_EINVAL, "a session id cannot be empty");
    return rc ? rc
              : acp_client_op_start(c, "session/close", json_pack("{s:s}", "sessionId", id), NULL,
                                    cb, user, op);
}

int acp_client_close_id(acp_client *c, const char *id)
{
    acp_client_sync w = {0};
    return acp_client_sync_wait(c, acp_client_close_id_start(c, id, acp_client_sync_cb, &w, NULL),
                                &w, NULL);
}

/* The handle goes whatever the answer: the application asked for it to end. */
static void close_finish(acp_client_op *op, acp_client_reply *r)
{
    acp_client_session *s = op->s;
    op->s = NULL;
    r->session = NULL;
    if (r->status) {
        acp_error_set(r->status, "cannot close session %s: %s", s ? s->id : "?",
                      acp_error_last()->message);
    }
    acp_client_session_free(s);
}

int acp_client_session_close_start(acp_client_session *s, acp_client_cb cb, void *user,
                                   acp_client_op **out)
{
    acp_client_op *op;
    int rc = acp_client_subagent_refuse(s, "closed");
    if (rc || (rc = acp_client_need(s->c, ACP_CAP_CLOSE, "sessionCapabilities.close"))) return rc;
    rc = acp_client_op_start(s->c, "session/close", json_pack("{s:s}", "sessionId", s->id),
                             close_finish, cb, user, &op);
    if (rc) return rc;
    op->s = s;
    if (out) *out = op;
    return 0;
}

int acp_client_session_close(acp_client_session *s)
{
    acp_client *c = s->c;
    acp_client_sync w = {0};
    return acp_client_sync_wait(c, acp_client_session_close_start(s, acp_client_sync_cb, &w, NULL),
                                &w, NULL);
}

static void list_finish(acp_client_op *op, acp_client_reply *r)
{
    if (r->status == 0 && !json_is_array(json_object_get(r->result, "sessions")))
        r->status =
            acp_error_set(ACP_EPROTO, "the agent's session/list answer has no sessions array");
}

int acp_client_list_start(acp_client *c, const char *cwd, const char *cursor, acp_client_cb cb,
                          void *user, acp_client_op **op)
{
    if (op) *op = NULL;
    int rc = acp_client_need(c, ACP_CAP_LIST, "sessionCapabilities.list");
    if (rc) return rc;
    json_t *p = json_object();
    if (cwd) json_object_set_new(p, "cwd", json_string(cwd));
    if (cursor) json_object_set_new(p, "cursor", json_string(cursor));
    return acp_client_op_start(c, "session/list", p, list_finish, cb, user, op);
}

int acp_client_list(acp_client *c, const char *cwd, const char *cursor, json_t **result)
{
    acp_client_sync w = {0};
    return acp_client_sync_wait(
        c, acp_client_list_start(c, cwd, cursor, acp_client_sync_cb, &w, NULL), &w, result);
}

static void delete_finish(acp_client_op *op, acp_client_reply *r)
{
    if (r->status == 0) acp_client_session_free(acp_client_find_id(op->c, op->id));
}

int acp_client_delete_start(acp_client *c, const char *id, acp_client_cb cb, void *user,
                            acp_client_op **out)
{
    if (out) *out = NULL;
    int rc = acp_client_need(c, ACP_CAP_DELETE, "sessionCapabilities.delete");
    if (!rc && (!id || !*id)) rc = acp_error_set(ACP_EINVAL, "a session id cannot be empty");
    if (rc) return rc;
    acp_client_op *op;
    rc = acp_client_op_start(c, "session/delete", json_pack("{s:s}", "sessionId", id),
                             delete_finish, cb, user, &op);
    if (rc) return rc;
    op->id = strdup(id);
    if (out) *out = op;
    return 0;
}

int acp_client_delete(acp_client *c, const char *id)
{
    acp_client_sync w = {0};
    return acp_client_sync_wait(c, acp_client_delete_start(c, id, acp_client_sync_cb, &w, NULL), &w,
                                NULL);
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
        acp_client_refuse(c, req, ACP_RPC_INVALID_PARAMS, "sessionId (a string) is required");
        return NULL;
    }
    acp_client_session *s = acp_client_find(c, sid);
    if (!s)
        acp_client_refuse(c, req, ACP_RPC_NOT_FOUND,
                          "unknown session %.*s: this client has no such session open",
                          (int)(sid.n < 200 ? sid.n : 200), sid.p);
    return s;
}
