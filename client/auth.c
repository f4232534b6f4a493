/* SPDX-License-Identifier: Apache-2.0 */
/* authenticate and logout. A `terminal` method is never sent: the spec has the client run the
 * agent's own login program itself (AuthMethodTerminal). */
#include <string.h>

#include "client/internal.h"

int acp_client_authenticate_start(acp_client *c, const char *method_id, acp_client_cb cb,
                                  void *user, acp_client_op **op)
{
    if (op) *op = NULL;
    if (!method_id || !*method_id) return acp_error_set(ACP_EINVAL, "an auth method id is needed");
    size_t i;
    json_t *m;
    json_array_foreach(acp_client_auth_methods(c), i, m)
    {
        const char *id = json_string_value(json_object_get(m, "id"));
        const char *type = json_string_value(json_object_get(m, "type"));
        if (id && !strcmp(id, method_id) && type && !strcmp(type, "terminal"))
            return acp_error_set(ACP_EINVAL,
                                 "auth method '%s' is a terminal method: run the agent's "
                                 "login program instead of calling authenticate",
                                 method_id);
    }
    return acp_client_op_start(c, "authenticate", json_pack("{s:s}", "methodId", method_id), NULL,
                               cb, user, op);
}

int acp_client_authenticate(acp_client *c, const char *method_id)
{
    acp_client_sync w = {0};
    return acp_client_sync_wait(
        c, acp_client_authenticate_start(c, method_id, acp_client_sync_cb, &w, NULL), &w, NULL);
}

int acp_client_logout_start(acp_client *c, acp_client_cb cb, void *user, acp_client_op **op)
{
    if (op) *op = NULL;
    int rc = acp_client_need(c, ACP_CAP_LOGOUT, "auth.logout");
    return rc ? rc : acp_client_op_start(c, "logout", json_object(), NULL, cb, user, op);
}

int acp_client_logout(acp_client *c)
{
    acp_client_sync w = {0};
    return acp_client_sync_wait(c, acp_client_logout_start(c, acp_client_sync_cb, &w, NULL), &w,
                                NULL);
}
