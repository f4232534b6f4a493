/* SPDX-License-Identifier: Apache-2.0 */
/* Agent -> client requests: what every typed call is built on (sending behind the session's
 * held updates, checking answers, owners that take their calls with them), the raw calls and
 * the fs methods. */
#include <stdlib.h>
#include <string.h>

#include "agent/internal.h"

/* --- sending ------------------------------------------------------------------------------- */

bool call_hold(acp_session *s, size_t *before)
{
    if (s) s = session_holder(s);
    if (!s || !s->dirty) return false;
    *before = s->hold.len;
    acp_conn_redirect(s->a->conn, &s->hold);
    return true;
}

void call_unhold(acp_session *s, size_t before)
{
    s = session_holder(s); /* the one call_hold() chose: nothing changed in between */
    acp_conn_redirect(s->a->conn, NULL);
    s->a->held += s->hold.len - before;
}

int call_send(acp_agent *a, acp_session *s, acp_auth *au, const char *method, json_t *params,
              acp_response_cb cb, void *user, acp_call **out)
{
    size_t before;
    bool held = call_hold(s, &before);
    /* Streamed: the requestId of an authenticate request is its id's text, as received. */
    acp_jw *w = acp_conn_call_begin(a->conn, method, cb, user, out);
    int rc = acp_conn_closed(a->conn) && cb ? ACP_ECLOSED : ACP_ENOMEM;
    if (w) {
        acp_jw_obj(w);
        if (s) acp_jw_kstr(w, "sessionId", s->id);
        if (au) {
            acp_span id = acp_req_id(au->req);
            acp_jw_key(w, "requestId");
            acp_jw_raw(w, id.p, id.n);
        }
        const char *k;
        json_t *v;
        json_object_foreach(params, k, v)
        {
            if ((s && !strcmp(k, "sessionId")) || (au && !strcmp(k, "requestId"))) continue;
            acp_jw_key(w, k);
            acp_jw_json(w, v);
        }
        acp_jw_obj_end(w);
        rc = acp_conn_call_end(a->conn);
    }
    if (held) call_unhold(s, before);
    json_decref(params);
    return rc;
}

int call_status(acp_conn *c, acp_msg *m, const json_t **result, const char **error)
{
    *result = NULL;
    *error = NULL;
    if (acp_msg_is_error(m)) {
        *error = acp_msg_error_message(m);
        /* The code alone is no proof: a client may answer -32099 itself. Only the connection's
         * own answers after EOF say that it ended (and make a waiting turn cancelled). */
        return acp_msg_error_code(m) == ACP_RPC_CONN_CLOSED && acp_conn_closed(c) ? ACP_ECLOSED
                                                                                  : ACP_EPROTO;
    }
    if (!(*result = acp_msg_result(m))) {
        *error = "the client's result does not parse";
        return acp_error_code(ACP_EPROTO);
    }
    return 0;
}

static int call_gate(acp_agent *a, const char *method, const json_t *params)
{
    const char *need = NULL;
    if (!strcmp(method, "fs/read_text_file")) {
        need = "fs.readTextFile";
    } else if (!strcmp(method, "fs/write_text_file")) {
        need = "fs.writeTextFile";
    } else if (!strncmp(method, "terminal/", 9)) {
        need = "terminal";
    } else if (!strcmp(method, "elicitation/create")) {
        /* Modes of extensions (_x) have no capability of their own: the engine's call. */
        const char *mode = json_string_value(json_object_get(params, "mode"));
        if (!mode || !strcmp(mode, "form"))
            need = "elicitation.form";
        else if (!strcmp(mode, "url"))
            need = "elicitation.url";
    }
    if (!need || acp_agent_client_has(a, need)) return 0;
    return acp_error_set(ACP_ENOTSUP, "the client did not advertise %s, which %s needs", need,
                         method);
}

/* --- calls and their owners ---------------------------------------------------------------- */

static pcall **owner_list(pcall *p)
{
    return p->t ? &p->t->calls : p->au ? &p->au->calls : &p->s->calls;
}

static void pcall_unlink(pcall *p)
{
    for (pcall **q = owner_list(p); *q; q = &(*q)->next) {
        if (*q == p) {
            *q = p->next;
            return;
        }
    }
}

static void pcall_free(pcall *p)
{
    json_decref(p->data);
    free(p);
}

static void on_answer(acp_conn *c, acp_msg *m, void *user)
{
    pcall *p = user;
    pcall_unlink(p); /* first: the callback may end the owner */
    const json_t *result;
    const char *error;
    int st = call_status(c, m, &result, &error);
    /* The client went away (EOF) while the turn waited on it: that ends the turn as shutdown
     * does, cancelled, not as a failed call the engine would turn into end_turn. */
    acp_turn *t = p->t;
    if (st == ACP_ECLOSED && t && acp_conn_closed(c)) {
        turn_cancel(t);
        if (p->s->turn != t || t->decided) {
            pcall_free(p);
            return;
        }
    }
    p->answer(p, st, result, error);
    pcall_free(p);
}

int call_check(acp_agent *a, acp_turn *t, acp_session *s, acp_auth *au, const char *method,
               const json_t *params)
{
    if (t && t->decided)
        return acp_error_set(ACP_ECLOSED, "the turn's response is decided already");
    if (s && s->state != SESS_READY)
        return acp_error_set(ACP_ECLOSED, "session %s is not open", s->id);
    if (!s && !au->req)
        return acp_error_set(ACP_ECLOSED, "the authenticate request was answered already");
    if (params && !json_is_object(params))
        return acp_error_set(ACP_EINVAL, "the params of %s must be an object", method);
    return call_gate(a, method, params);
}

int pcall_start(const pcall *tmpl, const char *method, json_t *params)
{
    acp_turn *t = tmpl->t;
    acp_session *s = t ? t->s : tmpl->s;
    acp_agent *a = s ? s->a : tmpl->au->a;
    pcall *p = NULL;
    int rc = call_check(a, t, s, tmpl->au, method, params);
    if (!rc && !(p = malloc(sizeof *p))) rc = ACP_ENOMEM;
    if (rc) {
        json_decref(params);
        json_decref(tmpl->data);
        return rc;
    }
    *p = *tmpl;
    p->a = a;
    p->s = s;
    p->au = s ? NULL : tmpl->au;
    p->next = NULL;
    rc = call_send(a, s, p->au, method, params, on_answer, p, &p->call);
    if (rc) {
        pcall_free(p);
        return rc;
    }
    pcall **q = owner_list(p);
    while (*q) q = &(*q)->next; /* in order: a cancel resolves them as they were made */
    *q = p;
    return 0;
}

void pcall_forget(pcall *p)
{
    pcall_unlink(p);
    size_t before;
    bool held = call_hold(p->s, &before);
    acp_conn_forget(p->a->conn, p->call);
    if (held) call_unhold(p->s, before);
    pcall_free(p);
}

void calls_turn_cancelled(acp_turn *t)
{
    acp_session *s = t->s;
    acp_conn *c = s->a->conn;
    size_t before;
    bool held = call_hold(s, &before);
    for (pcall *p = t->calls; p; p = p->next) {
        p->cancelling = true;
        acp_conn_cancel(c, p->call);
    }
    for (acp_terminal *term = t->terms; term; term = term->next)
        if (term->create) acp_conn_cancel(c, term->create);
    if (held) call_unhold(s, before);
    /* The client must answer a cancelled turn's permission requests `cancelled` (prompt-turn),
     * and a form or URL is moot too: the engine hears so now. Each callback may end the turn,
     * or ask again (that call waits for the client's answer). */
    while (s->turn == t) {
        pcall *p = t->calls;
        while (p && !(p->cancelled && p->cancelling)) p = p->next;
        if (!p) break;
        json_t *r = json_loads(p->cancelled, 0, NULL);
        pcall_unlink(p);
        acp_conn_forget(c, p->call); /* asked to cancel already: nothing more is written */
        p->answer(p, r ? 0 : ACP_ENOMEM, r, r ? NULL : "out of memory");
        json_decref(r);
        pcall_free(p);
    }
}

void calls_turn_ended(acp_turn *t)
{
    while (t->calls) pcall_forget(t->calls);
    if (t->decided) return; /* the store failed: nothing more of the turn can be stored */
    tools_turn_ended(t);
    while (t->terms) acp_terminal_release(t->terms);
}

void calls_turn_free(acp_turn *t)
{
    while (t->calls) pcall_forget(t->calls);
    while (t->terms) acp_terminal_release(t->terms);
    tools_free(t);
}

void calls_session_closed(acp_session *s)
{
    while (s->calls) pcall_forget(s->calls);
    while (s->terms) acp_terminal_release(s->terms);
}

void calls_auth_ended(acp_auth *au)
{
    while (au->calls) pcall_forget(au->calls);
}

void calls_agent_free(acp_agent *a)
{
    terminals_agent_free(a);
    json_decref(a->elicit_ids);
    a->elicit_ids = NULL;
}

/* --- any method ---------------------------------------------------------------------------- */

static void raw_answer(pcall *p, int status, const json_t *result, const char *error)
{
    if (p->t && p->cb.turn)
        p->cb.turn(p->t, status, result, error, p->user);
    else if (!p->t && p->cb.session)
        p->cb.session(p->s, status, result, error, p->user);
}

int acp_turn_call(acp_turn *t, const char *method, json_t *params, acp_turn_call_cb cb, void *user)
{
    return pcall_start(&(pcall){.t = t, .answer = raw_answer, .cb.turn = cb, .user = user}, method,
                       params);
}

int acp_session_call(acp_session *s, const char *method, json_t *params, acp_session_call_cb cb,
                     void *user)
{
    return pcall_start(&(pcall){.s = s, .answer = raw_answer, .cb.session = cb, .user = user},
                       method, params);
}

/* --- fs/read_text_file, fs/write_text_file ---------------------------------------------------- */

/* The path the client is sent: resolved inside the session's roots. */
static int fs_path(acp_session *s, const char *method, const char *path, char **real)
{
    int rc = call_gate(s->a, method, NULL);
    if (rc) return rc;
    if (!path || !*path) return acp_error_set(ACP_EINVAL, "%s needs a path", method);
    rc = acp_session_resolve_path(s, path, real);
    if (rc == ACP_EACCES)
        return acp_error_set(rc, "%s is outside the session's roots: %s is not sent", path, method);
    return rc ? acp_error_set(rc, "%s: %s", path, acp_strerror(rc)) : 0;
}

static void read_answer(pcall *p, int status, const json_t *result, const char *error)
{
    json_t *text = json_object_get(result, "content");
    if (!status && !json_is_string(text)) {
        status = ACP_EPROTO;
        error = "the client's fs/read_text_file answer has no string content";
    }
    if (p->cb.read)
        p->cb.read(p->s, status, status ? NULL : json_string_value(text),
                   status ? 0 : json_string_length(text), error, p->user);
}

static int read_file(acp_turn *t, acp_session *s, const char *path, unsigned line, unsigned limit,
                     acp_fs_read_cb cb, void *user)
{
    char *real;
    int rc = fs_path(s, "fs/read_text_file", path, &real);
    if (rc) return rc;
    json_t *params = json_pack("{ss}", "path", real);
    free(real);
    if (!params) return acp_error_set(ACP_EINVAL, "the path is not valid UTF-8");
    if (line) json_object_set_new(params, "line", json_integer(line));
    if (limit) json_object_set_new(params, "limit", json_integer(limit));
    return pcall_start(&(pcall){.t = t, .s = s, .answer = read_answer, .cb.read = cb, .user = user},
                       "fs/read_text_file", params);
}

int acp_turn_read_text_file(acp_turn *t, const char *path, unsigned line, unsigned limit,
                            acp_fs_read_cb cb, void *user)
{
    return read_file(t, t->s, path, line, limit, cb, user);
}

int acp_session_read_text_file(acp_session *s, const char *path, unsigned line, unsigned limit,
                               acp_fs_read_cb cb, void *user)
{
    return read_file(NULL, s, path, line, limit, cb, user);
}

static void write_answer(pcall *p, int status, const json_t *result, const char *error)
{
    /* The schema says {}, the page's example null: both are fine. */
    if (!status && !json_is_object(result) && !json_is_null(result)) {
        status = ACP_EPROTO;
        error = "the client's fs/write_text_file answer is not an object";
    }
    if (p->cb.done) p->cb.done(p->s, status, error, p->user);
}

static int write_file(acp_turn *t, acp_session *s, const char *path, const char *text, size_t n,
                      acp_done_cb cb, void *user)
{
    char *real;
    int rc = fs_path(s, "fs/write_text_file", path, &real);
    if (rc) return rc;
    json_t *params = json_pack("{ss s:s%}", "path", real, "content", text ? text : "", n);
    free(real);
    if (!params) return acp_error_set(ACP_EINVAL, "the path or the text is not valid UTF-8");
    return pcall_start(
        &(pcall){.t = t, .s = s, .answer = write_answer, .cb.done = cb, .user = user},
        "fs/write_text_file", params);
}

int acp_turn_write_text_file(acp_turn *t, const char *path, const char *text, size_t n,
                             acp_done_cb cb, void *user)
{
    return write_file(t, t->s, path, text, n, cb, user);
}

int acp_session_write_text_file(acp_session *s, const char *path, const char *text, size_t n,
                                acp_done_cb cb, void *user)
{
    return write_file(NULL, s, path, text, n, cb, user);
}
