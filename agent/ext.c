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
        return agent_fail(a, ACP_EINVAL, "extension method names start with '_': '%s'",
                          method ? method : "(null)");
    ext_handler *x = calloc(1, sizeof *x);
    if (!x) return ACP_ENOMEM;
    *x = (ext_handler){a, on_request, on_notify, user, a->exts};
    /* A method nobody answers stays unknown: -32601 for requests, ignored notifications. */
    if (acp_conn_on(a->conn, method, on_request ? on_ext_request : NULL,
                    on_notify ? on_ext_notify : NULL, x)) {
        free(x);
        return ACP_ENOMEM;
    }
    a->exts = x; /* kept until the agent goes: a replaced registration may still be running */
    return 0;
}

/* Updates held for the store go out first: committing early is always allowed, and an
 * extension message must not overtake what was sent before it. */
static int ext_ready(acp_agent *a, const char *method, json_t *params)
{
    if (!method || method[0] != '_') {
        json_decref(params);
        return agent_fail(a, ACP_EINVAL, "extension method names start with '_': '%s'",
                          method ? method : "(null)");
    }
    if (a->dirty) acp_agent_flush(a);
    return 0;
}

int acp_agent_ext_call(acp_agent *a, const char *method, json_t *params, acp_response_cb cb,
                       void *user, acp_call **out)
{
    int rc = ext_ready(a, method, params);
    return rc ? rc : acp_conn_call(a->conn, method, params, cb, user, out);
}

int acp_agent_ext_notify(acp_agent *a, const char *method, json_t *params)
{
    int rc = ext_ready(a, method, params);
    return rc ? rc : acp_conn_notify(a->conn, method, params);
}

void ext_free_all(acp_agent *a)
{
    while (a->exts) {
        ext_handler *x = a->exts;
        a->exts = x->next;
        free(x);
    }
}
