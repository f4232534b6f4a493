/* SPDX-License-Identifier: Apache-2.0 */
/* Authentication: the authMethods the engine advertises, authenticate and logout, and the
 * connection's authenticated state that session methods are gated on. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/internal.h"

/* A terminal method is offered only to a client that can run it (the schema's MUST). */
static bool offered(const acp_agent *a, const acp_auth_method *m)
{
    return !m->terminal || acp_agent_client_has(a, "auth.terminal");
}

void auth_write_methods(acp_agent *a, acp_jw *w)
{
    acp_jw_arr(w);
    for (size_t i = 0; i < a->eng.nauth_methods; i++) {
        const acp_auth_method *m = &a->eng.auth_methods[i];
        if (!offered(a, m)) continue;
        acp_jw_obj(w);
        acp_jw_kstr(w, "id", m->id);
        acp_jw_kstr(w, "name", m->name);
        if (m->description) acp_jw_kstr(w, "description", m->description);
        if (m->terminal) {
            acp_jw_kstr(w, "type", "terminal");
            acp_jw_key(w, "args");
            acp_jw_arr(w);
            for (const char *const *p = m->args; p && *p; p++) acp_jw_str(w, *p);
            acp_jw_arr_end(w);
            acp_jw_key(w, "env");
            acp_jw_obj(w);
            for (const char *const *p = m->env; p && *p; p++) {
                const char *eq = strchr(*p, '=');
                if (!eq) continue;
                char name[256];
                snprintf(name, sizeof name, "%.*s", (int)(eq - *p), *p);
                acp_jw_kstr(w, name, eq + 1);
            }
            acp_jw_obj_end(w);
        }
        acp_jw_obj_end(w);
    }
    acp_jw_arr_end(w);
}

bool agent_check_auth(acp_agent *a, acp_req *req)
{
    if (!agent_check_init(a, req)) return false;
    if (!a->eng.auth_required || a->authenticated) return true;
    acp_req_error(req, ACP_RPC_AUTH_REQUIRED, NULL,
                  "authentication required before '%s': call authenticate with one of the "
                  "agent's authMethods",
                  acp_req_method(req));
    return false;
}

bool acp_agent_authenticated(const acp_agent *a)
{
    return a->authenticated;
}

void acp_agent_set_authenticated(acp_agent *a, bool yes)
{
    a->authenticated = yes;
}

/* --- authenticate ----------------------------------------------------------------------- */

static void auth_unlink(acp_auth *au)
{
    for (acp_auth **p = &au->a->auths; *p; p = &(*p)->next)
        if (*p == au) {
            *p = au->next;
            break;
        }
}

/* The request is answered (or dead): its elicitations go, the handle waits for the engine. */
static void auth_answered(acp_auth *au)
{
    au->req = NULL;
    calls_auth_ended(au);
}

static void auth_cancelled(acp_req *req, void *user)
{
    acp_auth *au = user;
    auth_answered(au); /* its elicitations are cancelled before it is answered */
    acp_req_error(req, ACP_RPC_CANCELLED, NULL, "authenticate was cancelled");
}

static void h_authenticate(acp_conn *c, acp_req *req, void *user)
{
    acp_agent *a = user;
    if (!agent_accept(a, req, &params_authenticate, false)) return;
    json_t *id = json_object_get(acp_req_params(req), "methodId");
    size_t i = AGENT_INDEX(a->eng.auth_methods, a->eng.nauth_methods, json_string_value(id));
    const acp_auth_method *m = i < a->eng.nauth_methods && offered(a, &a->eng.auth_methods[i])
                                   ? &a->eng.auth_methods[i]
                                   : NULL;
    if (!m || m->terminal || !a->eng.authenticate) {
        acp_req_error(req, ACP_RPC_INVALID_PARAMS, json_pack("{sO}", "methodId", id),
                      m ? "'%s' is a terminal method: the client runs the agent to sign in, it "
                          "never passes it to authenticate"
                        : "unknown authentication method '%s'",
                      json_string_value(id));
        return;
    }
    acp_auth *au = calloc(1, sizeof *au);
    if (!au) {
        acp_req_error(req, ACP_RPC_INTERNAL_ERROR, NULL, "out of memory");
        return;
    }
    au->a = a;
    au->req = req;
    au->method = m->id;
    au->next = a->auths;
    a->auths = au;
    acp_req_on_cancel(req, auth_cancelled, au);
    a->eng.authenticate(au, m->id, a->eng.user);
}

static void auth_done(acp_auth *au)
{
    auth_unlink(au);
    free(au);
}

void acp_auth_accept(acp_auth *au)
{
    acp_agent *a = au->a;
    bool answered = au->req != NULL;
    if (au->req) {
        a->authenticated = true;
        acp_req *req = au->req;
        auth_answered(au);
        acp_req_reply(req, NULL);
    }
    auth_done(au);
    if (answered) acp_agent_auth_changed(a);
}

void acp_auth_refuse(acp_auth *au, int code, const char *fmt, ...)
{
    if (au->req) {
        char msg[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        acp_req *req = au->req;
        auth_answered(au);
        acp_req_error(req, code ? code : ACP_RPC_AUTH_REQUIRED, NULL, "%s", msg);
    }
    auth_done(au);
}

acp_agent *acp_auth_agent(const acp_auth *au)
{
    return au->a;
}

const char *acp_auth_method_id(const acp_auth *au)
{
    return au->method;
}

const json_t *acp_auth_params(const acp_auth *au)
{
    return au->req ? acp_req_params(au->req) : NULL;
}

bool acp_auth_cancelled(const acp_auth *au)
{
    return !au->req;
}

void auth_shutdown(acp_agent *a)
{
    for (acp_auth *au = a->auths; au; au = au->next) {
        if (!au->req) continue;
        acp_req *req = au->req;
        acp_req_on_cancel(req, NULL, NULL);
        auth_answered(au);
        acp_req_error(req, ACP_RPC_CANCELLED, NULL, "the agent is shutting down");
    }
}

void auth_free_all(acp_agent *a)
{
    free(a->auth_told);
    a->auth_told = NULL;
    while (a->auths) {
        acp_auth *au = a->auths;
        a->auths = au->next;
        free(au);
    }
}

/* --- logout ----------------------------------------------------------------------------- */

static void h_logout(acp_conn *c, acp_req *req, void *user)
{
    acp_agent *a = user;
    if (!agent_accept(a, req, &params_logout, false)) return;
    if (!a->eng.logout) { /* not advertised: the client must not call it */
        acp_req_error(req, ACP_RPC_METHOD_NOT_FOUND, NULL, "Method not found: logout");
        return;
    }
    char *msg = NULL;
    int code = a->eng.logout(a, &msg, a->eng.user);
    if (code) {
        acp_req_error(req, code, NULL, "%s", msg ? msg : "logout failed");
    } else {
        a->authenticated = false;
        acp_req_reply(req, NULL);
        acp_agent_auth_changed(a);
    }
    free(msg);
}

/* --- auth/status, auth/status_update (unstable) ------------------------------------------- */

static const vfield status_fields[] = {{"_meta", V_OBJECT, VF_NULL | VF_LENIENT, NULL}};
static const vshape status_shape = {status_fields, 1};
static const vfield params_status = {"params", V_OBJECT, 0, &status_shape};

bool auth_status_offered(const acp_agent *a)
{
    return a->eng.auth_status && agent_offers(a, ACP_UNSTABLE_AUTH_STATUS);
}

/* The AuthStatusResponse (also the update's params) as JSON text; NULL without memory. */
static char *status_text(acp_agent *a)
{
    const char *account = NULL;
    const char *state = a->eng.auth_status(a, &account, a->eng.user);
    acp_buf b = {0};
    acp_jw w;
    acp_jw_init(&w, &b);
    acp_jw_obj(&w);
    acp_jw_kstr(&w, "state", state && *state ? state : "unknown");
    if (account) {
        acp_jw_key(&w, "accounts");
        acp_jw_arr(&w);
        acp_jw_obj(&w);
        acp_jw_kstr(&w, "label", account);
        acp_jw_kbool(&w, "active", true);
        acp_jw_obj_end(&w);
        acp_jw_arr_end(&w);
    }
    acp_jw_obj_end(&w);
    if (acp_jw_status(&w) || acp_buf_putc(&b, '\0')) {
        acp_buf_free(&b);
        return NULL;
    }
    return b.data;
}

static void h_status(acp_conn *c, acp_req *req, void *user)
{
    acp_agent *a = user;
    /* Never gated on authentication: it is how a client learns it must sign in. */
    if (!agent_accept(a, req, &params_status, false)) return;
    char *text = status_text(a);
    if (!text) {
        acp_req_error(req, ACP_RPC_INTERNAL_ERROR, NULL, "out of memory");
        return;
    }
    acp_jw *w = acp_req_reply_begin(req);
    if (w) {
        acp_jw_raw(w, text, strlen(text)); /* our own writer's */
        acp_req_reply_end(req);
    }
    free(a->auth_told); /* the client knows this state now */
    a->auth_told = text;
}

void acp_agent_auth_changed(acp_agent *a)
{
    if (!auth_status_offered(a) || !a->initialized) return;
    char *text = status_text(a);
    if (!text) return;
    if (a->auth_told && !strcmp(a->auth_told, text)) { /* the SHOULD: only a change */
        free(text);
        return;
    }
    if (acp_conn_notify_raw(a->conn, "auth/status_update", text, strlen(text))) {
        free(text);
        return;
    }
    free(a->auth_told);
    a->auth_told = text;
}

void auth_register(acp_agent *a)
{
    acp_conn_on(a->conn, "authenticate", h_authenticate, NULL, a);
    acp_conn_on(a->conn, "logout", h_logout, NULL, a);
    if (auth_status_offered(a)) acp_conn_on(a->conn, "auth/status", h_status, NULL, a);
}

int auth_check_engine(acp_agent *a)
{
    if (a->eng.nauth_methods && !a->eng.auth_methods)
        return acp_error_set(ACP_EINVAL, "auth methods missing");
    for (size_t i = 0; i < a->eng.nauth_methods; i++) {
        const acp_auth_method *m = &a->eng.auth_methods[i];
        if (!m->id || !*m->id || !m->name)
            return acp_error_set(ACP_EINVAL, "an auth method needs an id and a name");
        if (AGENT_INDEX(a->eng.auth_methods, i, m->id) < i)
            return acp_error_set(ACP_EINVAL, "auth method '%s' twice", m->id);
    }
    return 0;
}
