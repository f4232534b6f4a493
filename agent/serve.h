/* SPDX-License-Identifier: Apache-2.0 */
/* An agent served over a network link (internal: net/link.h is not a public header). */
#ifndef ACP_AGENT_SERVE_H
#define ACP_AGENT_SERVE_H

#include "acp/agent.h"
#include "acp/roots.h"
#include "net/link.h"

/* Binds l to a's connection: each message from the link is one JSON-RPC message in, each
 * message the agent sends leaves as one link message, committed first as on stdio. The link
 * ending (the peer went away, a timeout) starts acp_agent_shutdown(), as EOF does on stdio;
 * the agent's shutdown closes the link. stall_ms: output the peer has not taken for this long
 * (the link full the whole time) closes the link; 0: never. The link must not be bound yet
 * and is the agent's from here. 0 or ACP_ENOMEM (the link is then closed). */
int acp_agent_serve_link(acp_agent *a, acp_link *l, unsigned stall_ms);

/* What the sessions of a server's agents may reach (acp_server_opts: roots, stdio_mcp). */
typedef struct agent_bounds {
    acp_roots *roots; /* cwd and every additionalDirectories entry lie inside; NULL: anywhere */
    bool no_stdio_mcp;
    /* Whether any agent of the server has session id active (session/status's "open" is for
     * any connection); NULL: only the asking agent knows. */
    bool (*session_open)(const struct agent_bounds *b, const char *id);
    /* Closes session id wherever another agent of the server (not `self`) has it active, as
     * session/close would there, its output committed (session/archive); NULL: none to close. */
    void (*session_close)(const struct agent_bounds *b, acp_agent *self, const char *id);
} agent_bounds;
/* Bounds a's sessions from now on; b is borrowed and must outlive a (the server's own). */
void agent_set_bounds(acp_agent *a, const agent_bounds *b);

#endif
