/* SPDX-License-Identifier: Apache-2.0 */
/* The process-wide wire trace (acp_conn_trace_all, include/acp/rpc.h) for messages that pass
 * through libacp without an acp_conn of their own: acp_server_listen_command's relay hands
 * them over here, with c NULL. Internal. */
#ifndef ACP_RPC_TRACE_H
#define ACP_RPC_TRACE_H

#include <stdbool.h>
#include <stddef.h>

/* out: on its way to the client we serve; else read from it. No-op while tracing is off. */
void rpc_trace(bool out, const char *msg, size_t len);

#endif
