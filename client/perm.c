/* SPDX-License-Identifier: Apache-2.0 */
/* session/request_permission: handed to the application, which answers now or later; a
 * cancel of the turn answers every pending one with `cancelled`, as prompt-turn.mdx requires. */
#include <stdlib.h>
#include <string.h>

#include "client/internal.h"

static void reply_cancelled(acp_req *req)
{
    static const char cancelled[] = "{\"outcome\":{\"outcome\":\"cancelled\"}}";
    acp_req_reply_raw(req, cancelled, sizeof cancelled - 1);
}

/* No callback: refuse, with the agent's own reject option when it offers one. */
static void auto_reject(acp_req *req, json_t *params)
{
    size_t i;
    json_t *o;
    json_array_foreach(json_object_get(params, "options"), i, o)
    {
        const char *kind = json_string_value(json_object_get(o, "kind"));
        json_t *id = json_object_get(o, "optionId");
        if (kind && json_is_string(id) && strncmp(kind, "reject", 6) == 0) {
            acp_req_reply(
                req, json_pack("{s:{s:s, s:O}}", "outcome", "outcome", "selected", "optionId", id));
            return;
        }
    }
    reply_cancelled(req);
}

/* Withdrawn by the agent or cancelled with the turn: `cancelled` either way, as
 * prompt-turn.mdx requires. */
static void answer(acp_req *req, bool withdrawn)
{
    reply_cancelled(req);
}

static void on_request(acp_conn *conn, acp_req *req, void *user)
{
    acp_client *c = user;
    acp_client_session *s = acp_client_req_session(c, req);
    if (!s) return;
    json_t *params = acp_req_params(req);
    if (!json_is_array(json_object_get(params, "options"))) {
        acp_client_refuse(c, req, ACP_RPC_INVALID_PARAMS, "options (an array) is required");
        return;
    }
    if (!c->opts.on_permission) {
        auto_reject(req, params);
        return;
    }
    acp_client_perm *p = calloc(1, sizeof *p);
    if (!p) {
        acp_client_refuse(c, req, ACP_RPC_INTERNAL_ERROR, "out of memory");
        return;
    }
    acp_client_pending_hold(c, &p->p, s, req, NULL, answer);
    c->opts.on_permission(c, s, p, params, c->opts.user);
}

int acp_client_perm_reply(acp_client_perm *p, const char *option_id)
{
    acp_req *req = acp_client_pending_release(&p->p);
    free(p);
    if (!req) return 0;
    if (!option_id) {
        reply_cancelled(req);
        return 0;
    }
    return acp_req_reply(
        req, json_pack("{s:{s:s, s:s}}", "outcome", "outcome", "selected", "optionId", option_id));
}

bool acp_client_perm_cancelled(const acp_client_perm *p)
{
    return !p->p.req;
}

void acp_client_perm_register(acp_client *c)
{
    acp_conn_on(c->conn, "session/request_permission", on_request, NULL, c);
}
