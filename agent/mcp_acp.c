/* SPDX-License-Identifier: Apache-2.0 */
/* MCP over ACP, the agent's side of the connection (unstable: ACP_UNSTABLE_MCP_ACP). The MCP
 * work is mcp/acp.c's: here the client's `mcp/message` notifications find the session whose
 * MCP set declared the serverId they name. */
#include "agent/internal.h"

static void n_mcp_message(acp_conn *c, acp_msg *m, void *user)
{
    acp_agent *a = user;
    if (!a->initialized) return;
    json_t *p = acp_msg_params(m);
    if (!p) {
        agent_log(a, "mcp/message dropped: its params cannot be read");
        return;
    }
    int rc = ACP_ENOTFOUND;
    for (acp_session *s = a->sessions; s && rc == ACP_ENOTFOUND; s = s->next)
        if (s->mcp) rc = acp_mcp_set_acp_notify(s->mcp, p);
    /* A notification has no answer: the log says why it went nowhere. */
    if (rc == ACP_ENOTFOUND)
        agent_log(a, "mcp/message dropped: no session declared an MCP server with that serverId");
    else if (rc)
        agent_log(a, "mcp/message dropped: %s", acp_error_last()->message);
}

void mcp_acp_register(acp_agent *a)
{
    if (agent_offers(a, ACP_UNSTABLE_MCP_ACP))
        acp_conn_on(a->conn, "mcp/message", NULL, n_mcp_message, a);
}
