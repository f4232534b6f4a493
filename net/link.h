/* SPDX-License-Identifier: Apache-2.0 */
/* A link: one ACP connection's JSON-RPC messages, whole, over a network profile (WebSocket or
 * Streamable HTTP). It is the seam between net/ and the two sides of ACP: the server hands each
 * new ACP connection to its owner as a link (an acp_agent is bound to it), and a client connects
 * one by URL (client/link.c feeds its acp_conn from it). Neither side knows the profile.
 *
 * Messages are single JSON texts without framing or a trailing newline; the profile frames them
 * (a WebSocket text message, a POST body, an SSE event). Everything runs on one uv loop, from
 * one thread. A callback may call any function here, acp_link_close() included. */
#ifndef ACP_NET_LINK_H
#define ACP_NET_LINK_H

#include <stdbool.h>
#include <stddef.h>

typedef struct acp_link acp_link;

typedef struct acp_link_cbs {
    /* One inbound message, borrowed for the duration of the call. */
    void (*on_message)(acp_link *l, const char *msg, size_t len, void *user);
    /* acp_link_queued() fell below half the high-water mark after it had reached it. */
    void (*on_drain)(acp_link *l, void *user);
    /* The link ended: the peer closed or vanished, an idle timeout, a protocol error, the
     * connection was deleted (Streamable HTTP DELETE), or acp_link_close() finished. `reason` is
     * a sentence for logs, valid during the call only (a profile may build it in a buffer):
     * copy it to keep it. Called once; no callback follows and the link is freed right after
     * it returns, so drop every pointer to it here. */
    void (*on_close)(acp_link *l, const char *reason, void *user);
    /* Something the peer did that the link tolerated but an operator should hear of (e.g. a
     * binary WebSocket message, ignored). `line` is valid during the call. NULL: not told. */
    void (*on_log)(acp_link *l, const char *line, void *user);
} acp_link_cbs;

/* Sets who receives the link's events (cbs copied, user borrowed). The owner of a new link
 * calls it from the callback that hands the link over; profiles deliver nothing before. */
void acp_link_bind(acp_link *l, const acp_link_cbs *cbs, void *user);

/* Queues one outbound message (copied). 0, ACP_EIO (the link is closing or closed: the
 * message is dropped) or ACP_ENOMEM. Never blocks and never drops a message it accepted:
 * back-pressure is the caller's job, by acp_link_queued() and on_drain. */
int acp_link_send(acp_link *l, const char *msg, size_t len);

/* The owner has sent what this loop turn produced: a profile that gathers a turn's messages
 * into one write (Streamable HTTP: one write per SSE stream, not one per event) writes them now.
 * Owners call it after each run of acp_link_send(); messages sent without it still go out, at the
 * next acp_link_flush() or when the link ends. */
void acp_link_flush(acp_link *l);

/* Bytes accepted by acp_link_send() and not yet handed to the kernel. */
size_t acp_link_queued(const acp_link *l);

/* The level at which the owner should stop producing (on_drain follows below half). */
size_t acp_link_high_water(const acp_link *l);

/* Writes what is queued (bounded by the profile's close timeout), then ends the link; on_close
 * follows from the loop. Idempotent. */
void acp_link_close(acp_link *l);

/* --- For profiles (implementations) only -------------------------------------------------- */

typedef struct acp_link_ops {
    int (*send)(acp_link *l, const char *msg, size_t len);
    size_t (*queued)(const acp_link *l);
    void (*close)(acp_link *l);
    void (*flush)(acp_link *l); /* NULL: the profile writes at once (or batches by itself) */
} acp_link_ops;

/* Embedded first in each profile's link struct. */
struct acp_link {
    const acp_link_ops *ops;
    acp_link_cbs cbs;
    void *user;
    size_t high_water; /* set by the profile; 0 means 4 MiB */
    bool bound;
    bool refused; /* the server refused our credentials (HTTP 401 or 403): set before the end */
};

/* Profile side: hand a message to the owner, report a drain, report the end (exactly once;
 * the profile frees the link after acp_link_ended returns), and tell the owner's log. */
void acp_link_deliver(acp_link *l, const char *msg, size_t len);
void acp_link_drained(acp_link *l);
void acp_link_ended(acp_link *l, const char *reason);
void acp_link_log(acp_link *l, const char *line);

#endif
