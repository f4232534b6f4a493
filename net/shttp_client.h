/* SPDX-License-Identifier: Apache-2.0 */
/* The client side of ACP's Streamable HTTP profile, on libcurl (mcp/curl_uv.c drives it on
 * the uv loop): one ACP connection to http:// or https://HOST[:PORT]/PATH as a link.
 *
 * What goes over the wire follows the official TypeScript SDK 2.4.0's client
 * (transports/http-stream.js), the peer servers are tested against:
 *   - the first message must be `initialize`: one POST answered 200 with the JSON response and
 *     the `Acp-Connection-Id` that goes on every later request;
 *   - then a GET opens the connection's event stream, and a GET per session (with
 *     `Acp-Session-Id`) that session's stream, opened when a response names the session or
 *     before the first message about it is posted;
 *   - every other message is one POST (202), one at a time and in order, with `Acp-Session-Id`
 *     when it is about a session (params.sessionId, or the answer to a request that came on a
 *     session's stream);
 *   - closing DELETEs the connection.
 * Cookies the server sets are sent back on every request of the connection (net/cookie.h: the
 * SDK's cookie store's rules). The bearer token goes in `Authorization` and
 * nowhere else: not in errors, not in logs.
 *
 * Failures are reported the SDK's way. A request whose POST is refused (an HTTP status other
 * than 401/403/404/410, or 409 for its session) is answered for the server with a JSON-RPC
 * error -32603 whose data is {status, body}; so is a request of a session whose stream ended
 * or was refused, until session/load or session/resume reattaches it. Anything that makes the
 * connection unusable ends the link with a sentence saying why: initialize refused or without
 * an Acp-Connection-Id, 401/403/404/410, a network error, the connection's stream ending, a
 * message over max_message.
 *
 * Order: the SDK's server answers session/load and session/resume on the connection's stream
 * while the replayed updates come on the session's stream, two exchanges (two TCP connections
 * in HTTP/1.1) whose bytes may arrive in either order, and it sends the answer while most of a
 * long replay still waits in its queue. Such an answer (and what follows it on the connection's
 * stream) is held back until the session's stream has brought nothing for 100 ms, 5 s at most,
 * so the replay reaches the owner first. The profile carries no marker to do better; libacp's
 * own server sends the answer after the replay on the session's stream, where nothing waits. */
#ifndef ACP_NET_SHTTP_CLIENT_H
#define ACP_NET_SHTTP_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

#include "net/cookie.h"
#include "net/link.h"

typedef struct acp_shttp_client_opts {
    const char *url;     /* http:// or https://, the endpoint itself (usually .../acp) */
    const char *token;   /* bearer token, or NULL */
    const char *ca_file; /* trust anchors for https (PEM); NULL: the system's */
    /* https:// always offers h2 by ALPN (HTTP/1.1 when the server declines). http2: also
     * over http://, with prior knowledge (h2c), for a server known to speak it; off, http://
     * is HTTP/1.1. */
    bool http2;
    size_t max_message;        /* the largest message (initialize answer, SSE event) accepted:
                                * 0 means 64 MiB */
    unsigned close_timeout_ms; /* how long a close may take for the queue and the DELETE:
                                * 0 means 5000 */
    acp_cookie_jar *cookies;   /* borrowed, must outlive the link: what the server sets lands
                                * here and goes back on every request, also of a later
                                * connection with the same jar; NULL: a jar of the link's own */
} acp_shttp_client_opts;

/* Starts a link to o->url (every string copied). Nothing is sent until the owner binds the
 * link and sends `initialize`. Returns 0 and *out (the link; its owner releases it with
 * acp_link_close() and keeps it until on_close), or ACP_EINVAL (not an http(s) URL), ACP_EIO
 * (libcurl is missing), ACP_ENOMEM; then *errmsg (when not NULL) is a malloc'd sentence. */
int acp_shttp_connect(uv_loop_t *loop, const acp_shttp_client_opts *o, acp_link **out,
                      char **errmsg);

#endif
