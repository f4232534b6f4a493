/* SPDX-License-Identifier: Apache-2.0 */
/* elicitation/create and elicitation/complete: the agent asks the user for structured input
 * (a form) or sends them to a URL. Handed to on_elicit, answered now or later; a cancel of the
 * session's turn answers the session's pending ones `cancel`. */
#include <stdlib.h>
#include <string.h>

#include "client/internal.h"

struct acp_client_elicit {
    acp_pending p;
    char *url_id; /* URL mode: the elicitationId, awaited by elicitation/complete once accepted */
};

static void reply_action(acp_req *req, const char *action)
{
    acp_req_reply(req, json_pack("{s:s}", "action", action));
}

/* Withdrawn, cancelled with the turn, or its call ended: `cancel` each time. */
static void answer(acp_req *req, bool withdrawn)
{
    reply_action(req, "cancel");
}

bool acp_client_elicit_cancelled(const acp_client_elicit *e)
{
    return !e->p.req;
}

acp_client_op *acp_client_elicit_op(const acp_client_elicit *e)
{
    return e->p.op;
}

/* The call of ours a request-scoped elicitation names, or NULL. */
static acp_client_op *op_of(acp_client *c, json_t *request_id)
{
    for (acp_client_op *op = c->ops; json_is_integer(request_id) && op; op = op->next)
        if (acp_client_op_id(op) == json_integer_value(request_id)) return op;
    return NULL;
}

static bool enabled(acp_client *c, const char *mode)
{
    if (!c->opts.on_elicit || !mode) return false;
    return (!strcmp(mode, "form") && c->opts.elicitation_form) ||
           (!strcmp(mode, "url") && c->opts.elicitation_url);
}

static void on_create(acp_conn *conn, acp_req *req, void *user)
{
    acp_client *c = user;
    json_t *p = acp_req_params(req);
    const char *mode = json_string_value(json_object_get(p, "mode"));
    if (!json_is_string(json_object_get(p, "message"))) {
        acp_client_refuse(c, req, ACP_RPC_INVALID_PARAMS, "message (a string) is required");
        return;
    }
    if (!enabled(c, mode)) { /* a mode we did not advertise: the user never sees it */
        acp_client_refuse(c, req, ACP_RPC_INVALID_PARAMS,
                          "this client does not support elicitation mode '%s'", mode ? mode : "");
        return;
    }
    const char *url_id = json_string_value(json_object_get(p, "elicitationId"));
    if (!strcmp(mode, "url") && (!json_is_string(json_object_get(p, "url")) || !url_id)) {
        acp_client_refuse(c, req, ACP_RPC_INVALID_PARAMS,
                          "url and elicitationId (strings) are required");
        return;
    }
    acp_client_session *s = NULL;
    if (json_object_get(p, "sessionId") && !(s = acp_client_req_session(c, req))) return;
    acp_client_op *op = s ? NULL : op_of(c, json_object_get(p, "requestId"));
    if (!s && !op) { /* the scope must be ours: a session we have, or a call in flight */
        acp_client_refuse(c, req, ACP_RPC_INVALID_PARAMS,
                          "an elicitation needs a sessionId of ours or the requestId of a call "
                          "of ours in flight");
        return;
    }
    acp_client_elicit *e = calloc(1, sizeof *e);
    char *id = strcmp(mode, "url") ? NULL : strdup(url_id);
    if (!e || (!strcmp(mode, "url") && !id)) {
        free(e);
        free(id);
        acp_client_refuse(c, req, ACP_RPC_INTERNAL_ERROR, "out of memory");
        return;
    }
    acp_client_pending_hold(c, &e->p, s, req, op, answer);
    e->url_id = id;
    c->opts.on_elicit(c, s, e, p, c->opts.user);
}

/* An accepted URL elicitation is awaited by its elicitation/complete; only then, and only
 * once, does the application hear of that (the spec: ignore unknown and completed ids). */
static void await_complete(acp_client *c, const char *id)
{
    if (!c->url_open) c->url_open = json_object();
    json_object_set_new(c->url_open, id, json_true());
}

int acp_client_elicit_reply(acp_client_elicit *e, const char *action, json_t *content)
{
    acp_client *c = e->p.c; /* only used while the request is live: a detached e may outlive c */
    char *url_id = e->url_id;
    acp_req *req = acp_client_pending_release(&e->p);
    free(e);
    bool accept = req && action && !strcmp(action, "accept");
    if (accept && url_id) await_complete(c, url_id);
    free(url_id);
    int rc = 0;
    if (accept) {
        json_t *r = json_pack("{s:s}", "action", "accept");
        if (json_is_object(content)) json_object_set(r, "content", content);
        rc = acp_req_reply(req, r);
    } else if (req) {
        reply_action(req, action && !strcmp(action, "decline") ? "decline" : "cancel");
    }
    json_decref(content);
    return rc;
}

static void on_complete(acp_conn *conn, acp_msg *m, void *user)
{
    acp_client *c = user;
    json_t *p = acp_msg_params(m);
    const char *id = json_string_value(json_object_get(p, "elicitationId"));
    if (!id || !json_object_get(c->url_open, id)) {
        acp_client_log(c, "ignored an elicitation/complete for %s",
                       id ? "an unknown, declined or "
                            "already completed elicitationId"
                          : "no elicitationId string");
        return;
    }
    json_object_del(c->url_open, id);
    if (c->opts.on_elicit_complete) c->opts.on_elicit_complete(c, id, p, c->opts.user);
}

void acp_client_elicit_register(acp_client *c)
{
    acp_conn_on(c->conn, "elicitation/create", on_create, NULL, c);
    acp_conn_on(c->conn, "elicitation/complete", NULL, on_complete, c);
}
