/* SPDX-License-Identifier: Apache-2.0 */
/* The Streamable HTTP profile of remote ACP (the RFD's "Streamable HTTP", as the official
 * TypeScript SDK 2.4.0's AcpServer serves it), on the HTTP exchanges of net/http.h, so the same
 * code serves HTTP/1.1 and HTTP/2.
 *
 *   POST   one JSON-RPC message. `initialize` without Acp-Connection-Id makes a connection: a
 *          new acp_link goes to on_link, the message to its owner, and the owner's answer comes
 *          back as the 200 body with the new Acp-Connection-Id. Everything else needs that id
 *          (400 without, 404 unknown) and gets 202 once the message is handed to the owner.
 *   GET    (Accept: text/event-stream) an SSE stream of the connection's outbound messages, or,
 *          with Acp-Session-Id, of one session's. One receiver per stream (409 for a second).
 *   DELETE ends the connection (202); its link ends with reason "deleted".
 *
 * Outbound messages go to the stream they belong to (a session's when params.sessionId names
 * one, or the session of the request a response answers; the connection's otherwise) and wait
 * there while no receiver is attached. What waits counts in acp_link_queued(), so an owner that
 * honours the high-water mark stops producing for a client that does not read; a connection
 * whose output stays at the mark without progress for SHTTP_OUTPUT_STALL_MS is closed, as the
 * SDK does. A request POSTed while the output is at the mark is held until it drains.
 * Status codes and texts follow the SDK (net/shttp.c says where we differ).
 *
 * Everything runs on the loop's thread. */
#ifndef ACP_NET_SHTTP_H
#define ACP_NET_SHTTP_H

#include <uv.h>

#include "net/http.h"
#include "net/limits.h"
#include "net/link.h"

typedef struct acp_shttp acp_shttp;

/* The SDK's ConnectionLimits defaults. */
#define SHTTP_OUTPUT_STALL_MS       60000 /* maxOutputStallMs */
#define SHTTP_MAX_BUFFERED_SESSIONS 1024  /* maxBufferedSessionStreams */
#define SHTTP_MAX_ID_LENGTH         1024  /* maxIdLength (session and request ids) */
#define SHTTP_KEEPALIVE_MS          15000 /* an SSE comment on each open stream */
/* Ours, not the SDK's: connections one socket may have open at once (the profile's
 * connections all together are bounded by max_connections). A keep-alive socket POSTing
 * initialize in a loop made one each, 20,000 in 2 s (issue 21). */
#define SHTTP_MAX_PER_SOCKET 32

/* A profile instance for one server. lim is copied (zeros take their defaults); on_link gets
 * each new connection's link, which the callee binds (acp_link_bind) before returning, and owns
 * until its on_close. NULL on ENOMEM. Free with acp_shttp_free(). */
acp_shttp *acp_shttp_new(uv_loop_t *loop, const acp_net_limits *lim,
                         void (*on_link)(acp_link *l, void *user), void *user);

/* Serves one request to the endpoint (the router has checked the path and the credentials, and
 * sent WebSocket upgrades elsewhere). The exchange stays the wire's: the profile answers it now,
 * or later (initialize, a held request, an SSE stream), or hears of its abort. */
void acp_shttp_handle(acp_shttp *h, acp_http_req *r);

/* Number of live connections (for tests and the operator's logs). */
size_t acp_shttp_connections(const acp_shttp *h);

/* Ends every connection (open streams end, held requests get 503, each link's on_close is
 * called now) and frees the profile; its timers close on the loop, so run the loop once more
 * before closing it. NULL is a no-op. */
void acp_shttp_free(acp_shttp *h);

#endif
