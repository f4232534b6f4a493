/* SPDX-License-Identifier: Apache-2.0 */
/* The server side of net/sock.h (internal to net/): sockets the listener accepts, counted and
 * listed per listener so it can refuse the connection over the limit and close them all at
 * shutdown, and an idle timer the wires can hold off while an exchange is outstanding. */
#ifndef ACP_NET_SOCK_SERVER_H
#define ACP_NET_SOCK_SERVER_H

#include <stdint.h>

#include "net/limits.h"
#include "net/sock.h"
#include "net/tls.h"

/* The listener's sockets (zero-initialised by the listener; each socket unlinks itself as it
 * is freed). */
typedef struct acp_sock_group {
    acp_sock *head;
    unsigned count;
    uint64_t last_id; /* the last acp_sock_id given */
    /* Called when the last member was freed (NULL: nobody asks). */
    void (*on_empty)(struct acp_sock_group *g);
    void *user;
} acp_sock_group;

/* Accepts one pending connection from server (a listening uv_tcp_t or uv_pipe_t). tls (NULL:
 * cleartext) is borrowed for the call. lim is borrowed for the socket's life: its high_water,
 * idle_timeout_ms and close_timeout_ms apply. The socket joins g (borrowed: it must outlive
 * every member). Reading starts once the owner binds (acp_sock_bind); with TLS, on_open
 * follows the handshake and on_read the plaintext. *out is owned by the socket itself (freed
 * after on_close). 0, ACP_EIO (nothing to accept) or ACP_ENOMEM. */
int acp_sock_accept(uv_stream_t *server, bool is_unix, acp_tls_ctx *tls, const acp_net_limits *lim,
                    acp_sock_group *g, acp_sock **out);

/* Holds (true) or restarts (false) the idle timer: a wire holds it while a request is being
 * answered (a long-lived SSE stream included), so only a connection with nothing outstanding
 * times out. Holds nest. */
void acp_sock_idle_hold(acp_sock *s, bool hold);
/* The socket's number in its group, from 1, never reused: what outlives the socket (a
 * Streamable HTTP connection made on it) can name it without a pointer. */
uint64_t acp_sock_id(const acp_sock *s);

/* Every socket of g closed (acp_sock_close(): what is queued is written first, bounded by the
 * close timeout). */
void acp_sock_group_close(acp_sock_group *g);

#endif
