/* SPDX-License-Identifier: Apache-2.0 */
/* The bounds every network profile enforces, set once per server (or client) and borrowed by
 * each connection. A zero field means the default named beside it. */
#ifndef ACP_NET_LIMITS_H
#define ACP_NET_LIMITS_H

#include <stddef.h>

typedef struct acp_net_limits {
    size_t max_message;         /* one JSON-RPC message (POST body, WebSocket message): 64 MiB,
                                 * as on stdio; larger gets 413 / close code 1009 */
    size_t high_water;          /* per-connection output queued before the agent stops
                                 * producing: 4 MiB */
    unsigned max_connections;   /* sockets open at once; more are refused (503): 1024 */
    unsigned idle_timeout_ms;   /* a socket, or a Streamable HTTP connection with no stream
                                 * and no request, idle this long is closed: 300000 */
    unsigned ping_interval_ms;  /* WebSocket ping; a peer that misses two pongs is closed: 30000 */
    unsigned close_timeout_ms;  /* how long a close waits for a peer that stopped reading: 5000 */
    unsigned header_timeout_ms; /* a request head must arrive within this: 10000 */
} acp_net_limits;

/* A request body must keep coming: each header timeout period must bring at least this many of
 * its bytes (or its end), else the request gets 408 (an HTTP/2 stream is reset). A body that
 * trickles in (or never comes after its head) would otherwise hold its slot, and its memory,
 * for ever (issue 21). */
#define ACP_NET_BODY_MIN_PACE 1024

/* The limits with every zero replaced by its default. */
acp_net_limits acp_net_limits_resolve(const acp_net_limits *l);

#endif
