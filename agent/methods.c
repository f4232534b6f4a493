/* SPDX-License-Identifier: Apache-2.0 */
/* The ACP methods an agent serves: initialize and the session lifecycle. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/internal.h"

/* --- initialize ------------------------------------------------------------------------------ */

static void write_marker(acp_jw *w, const char *key)
{
    acp_jw_key(w, key);
    acp_jw_obj(w);
    acp_jw_obj_end(w);
}

static void write_meta(acp_jw *w, const json_t *meta)
{
    if (!json_is_object(meta)) return;
    acp_jw_key(w, "_meta");
    acp_jw_json(w, meta);
}

static void h_initialize(acp_conn *c, acp_req *req, void *user)
{
    acp_agent *a = user;
    /* Before anything changes: a refused initialize leaves the connection as it was. */
    if (!params_valid(req, &params_initialize)) return;
    json_t *params = acp_req_params(req);
    json_t *caps = json_object_get(params, "clientCapabilities");
    json_decref(a->client_caps);
    json_decref(a->init_params);
    a->client_caps = json_is_object(caps) ? json_incref(caps) : json_object();
    a->init_params = json_incref(params);
    a->initialized = true;
    unsigned off = a->eng.disable;

    acp_jw *w = acp_req_reply_begin(req);
    if (!w) return;
    acp_jw_obj(w);
    /* v1 is the only version we speak: the spec says answer our latest when we cannot match. */
    acp_jw_kint(w, "protocolVersion", 1);
    acp_jw_key(w, "agentCapabilities");
    acp_jw_obj(w);
    acp_jw_kbool(w, "loadSession", !(off & ACP_DISABLE_LOAD));
    acp_jw_key(w, "promptCapabilities");
    acp_jw_obj(w);
    acp_jw_kbool(w, "image", a->eng.image);
    acp_jw_kbool(w, "audio", a->eng.audio);
    acp_jw_kbool(w, "embeddedContext", a->eng.embedded_context);
    acp_jw_obj_end(w);
    acp_jw_key(w, "mcpCapabilities");
    acp_jw_obj(w);
    acp_jw_kbool(w, "http", a->opts.mcp_http);
    acp_jw_kbool(w, "sse", a->opts.mcp_sse);
    if (agent_offers(a, ACP_UNSTABLE_MCP_ACP)) acp_jw_kbool(w, "acp", true);
    acp_jw_obj_end(w);
    acp_jw_key(w, "sessionCapabilities");
    acp_jw_obj(w);
    static const struct {
        const char *name;
        unsigned bit;
    } sc[] = {{"list", ACP_DISABLE_LIST},
              {"delete", ACP_DISABLE_DELETE},
              {"resume", ACP_DISABLE_RESUME},
              {"close", ACP_DISABLE_CLOSE},
              {"additionalDirectories", ACP_DISABLE_ADD_DIRS}};
    for (size_t i = 0; i < sizeof sc / sizeof *sc; i++)
        if (!(off & sc[i].bit)) write_marker(w, sc[i].name);
    sessmeta_write_caps(a, w); /* the unstable title, archive, status, systemPrompt */
    if (fork_offered(a)) write_marker(w, "fork");
    acp_jw_obj_end(w);
    if (a->eng.logout || auth_status_offered(a)) {
        acp_jw_key(w, "auth");
        acp_jw_obj(w);
        if (a->eng.logout) write_marker(w, "logout");
        if (auth_status_offered(a)) write_marker(w, "status");
        acp_jw_obj_end(w);
    }
    if (providers_offered(a)) write_marker(w, "providers");
    write_meta(w, a->eng.caps_meta);
    acp_jw_obj_end(w);
    acp_jw_key(w, "authMethods");
    auth_write_methods(a, w);
    acp_jw_key(w, "agentInfo");
    acp_jw_obj(w);
    acp_jw_kstr(w, "name", a->eng.name ? a->eng.name : "libacp-agent");
    if (a->eng.title) acp_jw_kstr(w, "title", a->eng.title);
    acp_jw_kstr(w, "version", a->eng.version ? a->eng.version : "0");
    acp_jw_obj_end(w);
    write_meta(w, a->eng.meta);
    acp_jw_obj_end(w);
    acp_req_reply_end(req);
}

/* --- helpers ------------------------------------------------------------------------------- */

const char *session_id_param(acp_req *req)
{
    json_t *id = json_object_get(acp_req_params(req), "sessionId");
    if (json_is_string(id)) return json_string_value(id);
    /* Only for a handler whose table lacks it: every table that names it requires a string. */
    acp_req_error(req, ACP_RPC_INVALID_PARAMS, json_pack("{ss}", "path", "params.sessionId"),
                  "params.sessionId must be a string");
    return NULL;
}

/* --- new / load / resume ------------------------------------------------------------------- */

static void mcp_settled(void *user)
{
    acp_session *s = user;
    s->mcp_settled = true;
    session_opened_step(s);
}

/* After a load's replay: the session's title and last activity, which are not history (the
 * client would otherwise never learn them). Best effort: the load itself succeeded. */
static void send_info(acp_session *s)
{
    acp_buf b = {0};
    acp_jw w;
    acp_jw_init(&w, &b);
    acp_jw_obj(&w);
    acp_jw_kstr(&w, "sessionUpdate", "session_info_update");
    if (s->title) acp_jw_kstr(&w, "title", s->title);
    acp_jw_kstr(&w, "updatedAt", s->updated_at);
    acp_jw_obj_end(&w);
    if (!acp_jw_status(&w)) session_send(s, b.data, b.len);
    acp_buf_free(&b);
}

void session_opened_step(acp_session *s)
{
    acp_agent *a = s->a;
    if (!s->open_req || !s->mcp_settled || (s->want_replay && !s->replay_done)) return;
    acp_req *req = s->open_req;
    s->open_req = NULL;
    if (a->eng.session_setup || s->fork_src) {
        s->open_params = acp_req_params(req);
        if (s->fork_src)
            fork_setup(s);
        else
            a->eng.session_setup(s, a->eng.user);
        s->open_params = NULL;
    }
    /* Taken over while it replayed or waited for its MCP servers (it was idle: lease.c)? Then
     * the load is answered -32002 lease_lost below, not as if the session were open here. */
    if (!s->is_new) lease_still_ours(s);
    /* A load tells the title after its replay (a resume restores context silently). */
    if (s->want_replay && s->updated_at[0] && !s->gone) send_info(s);
    /* Deleted elsewhere while it opened (the engine's setup could not store its state): the
     * flush closes it; the engine still gets session_ready, then session_free. */
    acp_jw *w = s->gone ? NULL : acp_req_reply_begin(req);
    if (s->gone) session_reply_gone(s, req);
    if (w) {
        acp_jw_obj(w);
        if (s->is_new) acp_jw_kstr(w, "sessionId", s->id);
        cfg_write_result(s, w);
        write_meta(w, s->meta);
        acp_jw_obj_end(w);
        acp_req_reply_end(req);
    }
    free(s->title);
    s->title = NULL;
    s->state = SESS_READY;
    s->ready_called = true;
    if (a->eng.session_ready) a->eng.session_ready(s, a->eng.user);
}

void open_wait(acp_session *s)
{
    unsigned ms = s->a->opts.mcp_connect_timeout_ms ? s->a->opts.mcp_connect_timeout_ms : 10000;
    acp_mcp_set_wait(s->mcp, ms, mcp_settled, s);
}

acp_session *session_open_fresh(acp_agent *a, acp_req *req, char id[48], char **sp,
                                acp_store_session *row)
{
    *sp = NULL;
    if (!agent_system_prompt(a, req, acp_req_params(req), sp)) return NULL;
    acp_session *s = NULL;
    if (acp_agent_new_id("sess_", id))
        acp_req_error(req, ACP_RPC_INTERNAL_ERROR, NULL, "%s", acp_error_last()->message);
    else
        s = session_open(a, req, id, false);
    if (!s) {
        free(*sp);
        *sp = NULL;
        return NULL;
    }
    *row = (acp_store_session){.struct_size = sizeof(acp_store_session),
                               .id = id,
                               .cwd = (char *)acp_session_cwd(s),
                               .add_dirs = s->add_dirs,
                               .system_prompt = *sp};
    acp_store_now(row->created_at);
    memcpy(row->updated_at, row->created_at, sizeof row->updated_at);
    return s;
}

static void h_new(acp_conn *c, acp_req *req, void *user)
{
    acp_agent *a = user;
    if (!agent_accept(a, req, &params_new, true)) return;
    char id[48], *sp;
    acp_store_session row;
    acp_session *s = session_open_fresh(a, req, id, &sp, &row);
    if (!s) return;
    if (session_set_system_prompt(s, sp)) { /* sp is s's now */
        session_free(s);
        acp_req_error(req, ACP_RPC_INTERNAL_ERROR, NULL, "out of memory");
        return;
    }
    /* Created with this agent's lease on it: one write. */
    int rc = acp_store_create_leased(a->store, &row, a->holder, a->lease_ttl_ms, &s->fence);
    if (rc) {
        if (rc == ACP_ESTORE)
            agent_reply_store_error(a, req);
        else
            acp_req_error(req, ACP_RPC_INTERNAL_ERROR, NULL, "cannot create the session: %s",
                          acp_strerror(rc));
        session_free(s);
        return;
    }
    lease_renewing(a);
    s->is_new = true;
    s->open_req = req;
    session_activate(s);
    open_wait(s);
}

static void h_load_or_resume(acp_agent *a, acp_req *req, bool load)
{
    if (!agent_accept(a, req, load ? &params_load : &params_resume, true)) return;
    const char *id = session_id_param(req);
    char *sp = NULL;
    if (!id || !agent_system_prompt(a, req, acp_req_params(req), &sp)) return;
    /* Loading a session that is open here starts it afresh: the old one is closed (its
     * running prompt answers cancelled) so that one id never has two live states. */
    acp_session *old = session_find(a, id);
    acp_session *s = session_open(a, req, id, true);
    if (!s) {
        free(sp);
        /* Failed; if because it is not stored any more (-32002), the one open here was
         * deleted elsewhere: it goes too. */
        if (old && agent_stored(a, old->id) == ACP_ENOTFOUND) session_gone(old, false);
        return;
    }
    if (old) {
        old->keep_lease = true; /* the new incarnation holds it now, under the same epoch */
        s->keep_lease = false;
        session_close(old);
        /* What the old incarnation still holds goes out now, before any replay or response
         * of the new one (committing early is always allowed). */
        acp_agent_flush(a);
    }
    /* The request's roots are now the session's: list reports them. A system prompt given
     * replaces the stored one (omitted: the stored one stays, as the schema allows). */
    int rc = acp_store_set_roots(a->store, id, s->fence, acp_session_cwd(s), s->add_dirs);
    if (!rc && sp) rc = acp_store_set_system_prompt(a->store, id, s->fence, sp);
    if (!rc && sp) {
        rc = session_set_system_prompt(s, sp); /* sp is s's now */
        sp = NULL;
    }
    free(sp);
    if (rc == ACP_ENOMEM) {
        acp_req_error(req, ACP_RPC_INTERNAL_ERROR, NULL, "out of memory");
        session_free(s);
        return;
    }
    if (rc) {
        if (rc == ACP_ENOTFOUND || rc == ACP_ESTALE) /* it was ours a moment ago */
            agent_reply_gone(req, id, rc == ACP_ESTALE);
        else
            agent_reply_store_error(a, req);
        if (rc == ACP_ENOTFOUND || rc == ACP_ESTALE) s->fence = 0; /* nothing to give up */
        session_free(s);
        return;
    }
    s->open_req = req;
    session_activate(s);
    if (load) {
        s->want_replay = true;
        replay_start(s);
    }
    open_wait(s);
}

static void h_load(acp_conn *c, acp_req *req, void *user)
{
    h_load_or_resume(user, req, true);
}

static void h_resume(acp_conn *c, acp_req *req, void *user)
{
    h_load_or_resume(user, req, false);
}

/* --- close / delete / list ---------------------------------------------------------------- */

static void h_close(acp_conn *c, acp_req *req, void *user)
{
    acp_agent *a = user;
    if (!agent_accept(a, req, &params_close, false)) return;
    const char *id = session_id_param(req);
    if (!id) return;
    acp_session *s = session_find(a, id);
    if (!s) {
        agent_reply_unknown(a, req, id, true); /* told once: closed for the client now */
        return;
    }
    if (!subagent_unrestricted(s, req)) return;
    /* Taken over meanwhile: the client hears so (the flush closes it here). */
    if (!lease_check(s, req)) return;
    /* The cancelled turn's last updates and response go first: reply after them. */
    session_reply(session_close(s) ? s : NULL, req, NULL);
}

static void h_delete(acp_conn *c, acp_req *req, void *user)
{
    acp_agent *a = user;
    if (!agent_accept(a, req, &params_delete, true)) return;
    const char *id = session_id_param(req);
    if (!id) return;
    acp_session *s = session_find(a, id);
    if (s && !subagent_unrestricted(s, req)) return;
    /* A stored child (not open here) is its parent's to delete too. */
    acp_store_session row = ACP_STORE_SESSION_INIT;
    if (!s && agent_offers(a, ACP_UNSTABLE_SUBAGENTS) && !acp_store_get(a->store, id, &row) &&
        !subagent_row_unrestricted(req, id, row.parent)) {
        acp_store_session_clear(&row);
        return;
    }
    acp_store_session_clear(&row);
    /* The cancelled turn's last updates and response go first, committed before the delete:
     * after it their commit would find the session gone, as if deleted elsewhere. */
    if (s && session_close(s)) acp_agent_flush(a);
    lease_forget_lost(a, id);
    int rc = acp_store_delete(a->store, id);
    if (rc) {
        agent_reply_store_error(a, req);
        return;
    }
    acp_req_reply(req, NULL);
}

typedef struct list_page {
    acp_buf items;
    bool archived; /* SessionInfo.archived on every session (archive offered) */
} list_page;

static void list_one(acp_jw *w, const acp_store_session *ss, bool archived)
{
    acp_jw_obj(w);
    acp_jw_kstr(w, "sessionId", ss->id);
    acp_jw_kstr(w, "cwd", ss->cwd);
    acp_jw_key(w, "additionalDirectories");
    /* Our own stored text: a JSON array we wrote. */
    if (ss->add_dirs && *ss->add_dirs)
        acp_jw_raw(w, ss->add_dirs, strlen(ss->add_dirs));
    else {
        acp_jw_arr(w);
        acp_jw_arr_end(w);
    }
    if (ss->title) acp_jw_kstr(w, "title", ss->title);
    acp_jw_kstr(w, "updatedAt", ss->updated_at);
    if (archived) acp_jw_kbool(w, "archived", ss->archived);
    acp_jw_obj_end(w);
}

/* Appends one SessionInfo to the array text being built in user (a list_page). */
static int list_collect(void *user, const acp_store_session *ss)
{
    list_page *p = user;
    acp_buf *b = &p->items;
    if (ss->parent) return 0; /* a subagent session comes with its parent */
    if (b->len > 1 && acp_buf_putc(b, ',')) return acp_error_code(ACP_ENOMEM);
    acp_jw w;
    acp_jw_init(&w, b);
    list_one(&w, ss, p->archived);
    return acp_jw_status(&w);
}

static void h_list(acp_conn *c, acp_req *req, void *user)
{
    acp_agent *a = user;
    if (!agent_accept(a, req, &params_list, true)) return;
    json_t *p = acp_req_params(req);
    json_t *cwd = json_object_get(p, "cwd"), *cursor = json_object_get(p, "cursor");
    if (json_is_string(cwd) && json_string_value(cwd)[0] != '/') {
        acp_req_error(req, ACP_RPC_INVALID_PARAMS, json_pack("{ss}", "path", "params.cwd"),
                      "cwd must be an absolute path: '%s'", json_string_value(cwd));
        return;
    }
    int filter = sessmeta_list_filter(a, req); /* the unstable `archived` */
    if (filter < 0) return;
    /* The page is collected first: a store error must become an error response, and a
     * streamed reply cannot be taken back. */
    list_page page = {.archived = sessmeta_archive_on(a)};
    acp_buf items = {0};
    char *next = NULL;
    int rc = acp_buf_putc(&page.items, '[');
    if (!rc)
        rc = acp_store_list_archived(a->store, json_is_string(cwd) ? json_string_value(cwd) : NULL,
                                     filter,
                                     json_is_string(cursor) ? json_string_value(cursor) : NULL,
                                     AGENT_LIST_PAGE, list_collect, &page, &next);
    /* A page of subagent sessions only (left out) is not shown empty: the next one is read. */
    while (!rc && next && page.items.len == 1) {
        char *at = next;
        next = NULL;
        rc = acp_store_list_archived(a->store, json_is_string(cwd) ? json_string_value(cwd) : NULL,
                                     filter, at, AGENT_LIST_PAGE, list_collect, &page, &next);
        free(at);
    }
    items = page.items;
    if (rc) {
        acp_buf_free(&items);
        free(next);
        if (rc == ACP_EINVAL)
            acp_req_error(req, ACP_RPC_INVALID_PARAMS, NULL, "invalid cursor: %s",
                          json_string_value(cursor));
        else if (rc == ACP_ESTORE)
            agent_reply_store_error(a, req);
        else
            acp_req_error(req, ACP_RPC_INTERNAL_ERROR, NULL, "%s", acp_strerror(rc));
        return;
    }
    acp_jw *w = acp_req_reply_begin(req);
    if (w) {
        acp_jw_obj(w);
        acp_jw_key(w, "sessions");
        /* Written by our own writer: valid JSON, spliced as it is. */
        if (acp_buf_putc(&items, ']'))
            acp_jw_null(w);
        else
            acp_jw_raw(w, items.data, items.len);
        if (next) acp_jw_kstr(w, "nextCursor", next);
        acp_jw_obj_end(w);
        acp_req_reply_end(req);
    }
    acp_buf_free(&items);
    free(next);
}

/* --- prompt / cancel ------------------------------------------------------------------------ */

/* What the engine can take: the schema made every block one of its five kinds. */
static bool prompt_supported(acp_agent *a, acp_req *req, const json_t *prompt)
{
    for (size_t i = 0; i < json_array_size(prompt); i++) {
        const char *type = json_string_value(json_object_get(json_array_get(prompt, i), "type"));
        const char *cap = !strcmp(type, "image")   ? (a->eng.image ? NULL : "image")
                          : !strcmp(type, "audio") ? (a->eng.audio ? NULL : "audio")
                          : !strcmp(type, "resource")
                              ? (a->eng.embedded_context ? NULL : "embeddedContext")
                              : NULL;
        if (!cap) continue;
        char path[64];
        snprintf(path, sizeof path, "params.prompt[%zu].type", i);
        acp_req_error(req, ACP_RPC_INVALID_PARAMS, json_pack("{ss}", "path", path),
                      "prompt[%zu]: content type '%s' is not supported "
                      "(promptCapabilities.%s is false)",
                      i, type, cap);
        return false;
    }
    return true;
}

static void h_prompt(acp_conn *c, acp_req *req, void *user)
{
    acp_agent *a = user;
    if (!agent_accept(a, req, &params_prompt, true)) return;
    const char *id = session_id_param(req);
    if (!id) return;
    json_t *prompt = json_object_get(acp_req_params(req), "prompt");
    if (!prompt_supported(a, req, prompt)) return;
    acp_session *s = session_target(a, req, id);
    if (!s) return;
    if (s->turn) {
        acp_req_error(req, ACP_RPC_INVALID_REQUEST, NULL,
                      "a prompt is already running in session %s", id);
        return;
    }
    /* Busy before the engine hears of it: no take-over while the turn runs. This is also the
     * check that the session is still this agent's (lease.c). A store error leaves the mark
     * to the renewal timer: the turn runs, fenced as ever. */
    lease_mark(s, true);
    if (s->gone) {
        session_reply_gone(s, req);
        return;
    }
    turn_start(s, req, prompt);
}

static void n_cancel(acp_conn *c, acp_msg *m, void *user)
{
    acp_agent *a = user;
    if (!a->initialized) return;
    /* A notification has no answer: a malformed one is dropped, and said so in the log. */
    json_t *p = acp_msg_params(m);
    verr e;
    if (!p) {
        agent_log(a, "session/cancel dropped: its params cannot be read (a NUL character, a "
                     "member given twice or a number out of range)");
        return;
    }
    if (!params_check(p, &params_cancel, &e)) {
        agent_log(a, "session/cancel dropped: %s", e.msg);
        return;
    }
    const char *id = json_string_value(json_object_get(p, "sessionId"));
    acp_session *s = session_find(a, id);
    if (s && s->turn) turn_cancel(s->turn);
    if (s && s->parent) subagent_cancel(s);
}

void methods_register(acp_agent *a)
{
    acp_conn *c = a->conn;
    unsigned off = a->eng.disable;
    acp_conn_on(c, "initialize", h_initialize, NULL, a);
    acp_conn_on(c, "session/new", h_new, NULL, a);
    /* A switched-off capability is not advertised and its method stays unknown (-32601). */
    if (!(off & ACP_DISABLE_LOAD)) acp_conn_on(c, "session/load", h_load, NULL, a);
    if (!(off & ACP_DISABLE_RESUME)) acp_conn_on(c, "session/resume", h_resume, NULL, a);
    if (!(off & ACP_DISABLE_CLOSE)) acp_conn_on(c, "session/close", h_close, NULL, a);
    if (!(off & ACP_DISABLE_DELETE)) acp_conn_on(c, "session/delete", h_delete, NULL, a);
    if (!(off & ACP_DISABLE_LIST)) acp_conn_on(c, "session/list", h_list, NULL, a);
    acp_conn_on(c, "session/prompt", h_prompt, NULL, a);
    acp_conn_on(c, "session/cancel", NULL, n_cancel, a);
    cfg_register(a);
    auth_register(a);
    sessmeta_register(a);
    mcp_acp_register(a);
    providers_register(a);
    fork_register(a);
}
