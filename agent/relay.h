/* SPDX-License-Identifier: Apache-2.0 */
/* A relay: one network ACP connection (a link) served by its own process of a stdio agent
 * program, messages passed through both ways (acp serve; acp_server_listen_command). Why a
 * process per connection: a stdio agent has one client; two connections multiplexed on it
 * would share its JSON-RPC id space and its sessions, and the second initialize would meet an
 * agent already initialized, so it is not sound in general. */
#ifndef ACP_AGENT_RELAY_H
#define ACP_AGENT_RELAY_H

#include <uv.h>

#include "agent/serve.h"
#include "net/link.h"

typedef struct relay relay;

typedef struct relay_opts {
    char *const *argv;          /* the agent's command line (argv[0] searched in PATH) */
    const agent_bounds *bounds; /* borrowed: roots and stdio MCP policy, applied to the client's
                                 * session/new, load, resume and fork */
    unsigned stall_ms;          /* output the client has not taken for this long closes; 0 never */
    unsigned grace_ms;          /* EOF, then this long before SIGTERM, as long again to SIGKILL */
    void (*on_log)(const char *line, void *user); /* NULL: silent */
    /* The relay is over: the link closed, the process tree ended. r is freed after it. */
    void (*on_done)(relay *r, void *user);
    void *user;
} relay_opts;

/* Starts the agent's process and binds l to it (l is the relay's from here, also on failure,
 * when it is closed). 0, or the spawn's error (said in acp_error_last()) / ACP_ENOMEM. */
int relay_start(uv_loop_t *loop, acp_link *l, const relay_opts *o, relay **out);
/* Orderly end: EOF to the agent, its output relayed until it exits (SIGTERM after grace_ms,
 * SIGKILL after as long again), then the link closed; on_done follows. Idempotent. */
void relay_shutdown(relay *r);
/* At once: the link closed, the process tree killed; on_done is not called; the memory is
 * released from libuv callbacks. */
void relay_free(relay *r);

#endif
