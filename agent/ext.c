/* SPDX-License-Identifier: Apache-2.0 */
/* Extension methods ('_' names, extensibility.mdx) in both directions. */
#include <stdlib.h>

#include "agent/internal.h"

static void on_ext_request(acp_conn *c, acp_req *req, void *user)
{
    ext_handler *x = user;
    if (!agent_check_init(x->a, req)) return;
    x->on_request(c, req, x->user);
}

static void on_ext_notify(acp_conn *c, acp_msg *m, void *user)
{
    ext_handler *x = user;
    if (x->a->initialized) x->on_notify(c, m, x->user);
}

int acp_agent_on_ext(acp_agent *a, const char *method, acp_request_cb on_request,
                     acp_notify_cb on_notify, void *user)
{
    if (!method || method[0] != '_')
        return acp_error_set(ACP_EINVAL, "extension method names start with '_': '%s'",
                             method ? method : "(null)");
    ext_handler *x = calloc(1, sizeof *x);
    if (!x) return acp_error_code(ACP_ENOMEM);
    *x = (ext_handler){a, on_request, on_notify, user, a->exts};
    /* A method nobody answers stays unknown: -32601 for requests, ignored notifications. */
    if (acp_conn_on(a->conn, method, on_request ? on_ext_request : NULL,
                    on_notify ? on_ext_notify : NULL, x)) {
        free(x);
        return acp_error_code(ACP_ENOMEM);
    }
    a->exts = x; /* kept until the agent goes: a replaced registration may still be running */
    return 0;
}

static int ext_name(acp_agent *a, const char *method, json_t *params)
{
    if (method && method[0] == '_') return 0;
    json_decref(params);
    return acp_error_set(ACP_EINVAL, "extension method names start with '_': '%s'",
                         method ? method : "(null)");
}

/* Updates held for the store go out first: the message waits behind them in the hold of the
 * session that became dirty last, which a flush releases after every other (and keeps when its
 * commit fails, as it keeps our requests). Never by flushing here: a commit that fails would
 * call the engine's cancel from inside this call, which the engine may make from its prompt
 * handler, and the engine would go on with a turn freed under it. */
int acp_agent_ext_call(acp_agent *a, const char *method, json_t *params, acp_response_cb cb,
                       void *user, acp_call **out)
{
    int rc = ext_name(a, method, params);
    if (rc) return rc;
    size_t before;
    bool held = call_hold(a->dirty, &before);
    rc = acp_conn_call(a->conn, method, params, cb, user, out);
    if (held) call_unhold(a->dirty, before);
    return rc;
}

int acp_agent_ext_notify(acp_agent *a, const char *method, json_t *params)
{
    int rc = ext_name(a, method, params);
    if (rc) return rc;
    size_t before;
    bool held = call_hold(a->dirty, &before);
    rc = acp_conn_notify(a->conn, method, params);
    if (held) call_unhold(a->dirty, before);
    return rc;
}

void ext_free_all(acp_agent *a)
{
    while (a->exts) {
        ext_handler *x = a->exts;
        a->exts = x->next;
        free(x);
    }
}
