/* SPDX-License-Identifier: Apache-2.0 */
/* Extension methods from the agent ('_vendor/...'), handed to the application; anything else
 * unknown keeps the JSON-RPC defaults (-32601 for a request, ignored for a notification). */
#include "client/internal.h"

void acp_client_ext_request(acp_conn *conn, acp_req *req, void *user)
{
    acp_client *c = user;
    if (acp_req_method(req)[0] == '_' && c->opts.on_ext_request)
        c->opts.on_ext_request(c, req, c->opts.user);
    else
        acp_client_refuse(c, req, ACP_RPC_METHOD_NOT_FOUND, "method not found: %s",
                          acp_req_method(req));
}

void acp_client_ext_notify(acp_conn *conn, acp_msg *m, void *user)
{
    acp_client *c = user;
    const char *method = acp_msg_method(m);
    json_t *params = acp_msg_params(m);
    if (method[0] == '_' && c->opts.on_ext_notify && params)
        c->opts.on_ext_notify(c, method, params, c->opts.user);
}
