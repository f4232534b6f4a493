/* SPDX-License-Identifier: Apache-2.0 */
/* The WebSocket profile of remote ACP (RFC 6455, framing by wslay): one text message carries
 * one JSON-RPC message, both ways, on one socket. The server side takes a socket over after
 * the HTTP/1.1 upgrade request (acp_ws_accept); the client side dials ws:// or wss://
 * (acp_ws_connect). Either way the ACP connection is an acp_link (net/link.h), and the rest of
 * libacp never sees a frame.
 *
 * What both sides enforce, from the acp_net_limits they are given:
 *   - a message over max_message closes with 1009; a binary message is ignored, as the RFD
 *     says (the first one per connection is told to the link's on_log); an unmasked client
 *     frame, a bad opcode or invalid UTF-8 closes with 1002 / 1007 (wslay); fragmented
 *     messages are reassembled before delivery;
 *   - a ping every ping_interval_ms; a peer that lets two go unanswered is dropped;
 *   - back-pressure: acp_link_queued() counts what the socket has not written; over the high
 *     water the link stops reading the peer (its requests would only add output), and
 *     acp_link_drained() follows the socket's drain. A peer that reads nothing for two ping
 *     intervals while over the high water is dropped;
 *   - acp_link_close() sends close 1000 and waits up to close_timeout_ms for the peer's close.
 *
 * Everything runs on the socket's uv loop, from one thread. */
#ifndef ACP_NET_WS_H
#define ACP_NET_WS_H

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

#include "net/cookie.h"
#include "net/http.h"
#include "net/limits.h"
#include "net/link.h"
#include "net/sock.h"

/* Server: answers a WebSocket upgrade request (a GET with `Upgrade: websocket` that the
 * router found on an HTTP/1.1 connection; authentication already checked).
 *
 * A request that is not a valid RFC 6455 upgrade is answered through the exchange (400, or
 * 426 with `Sec-WebSocket-Version: 13` for another version) and ACP_EPROTO is returned: the
 * socket and the exchange stay with the wire.
 *
 * Otherwise the 101 goes out on `s` with `Sec-WebSocket-Accept` and a fresh, unguessable
 * `Acp-Connection-Id` (as the official SDK's server sends), the socket is taken over
 * (acp_sock_bind: the wire must not touch it again, and frees the exchange without answering
 * it), `on_link` is called with the new link before this returns (the owner binds it there),
 * and then `leftover` (bytes the wire read past the request head, copied) is handled as the
 * first WebSocket bytes. Returns 0. `lim` is copied; `upgrade` is borrowed for the call. */
int acp_ws_accept(acp_sock *s, acp_http_req *upgrade, const char *leftover, size_t n,
                  const acp_net_limits *lim, void (*on_link)(acp_link *l, void *user), void *user);

typedef struct acp_ws_connect_opts {
    /* ws://HOST[:PORT][/PATH[?QUERY]] or wss://...; HOST may be [v6]. The path is sent as
     * given ("/" when absent). Borrowed for the call. */
    const char *url;
    /* Sent as `Authorization: Bearer TOKEN`; NULL: none. Never logged or stored. */
    const char *token;
    /* Borrowed; must outlive the link. Its cookies go out in the upgrade's `Cookie` header
     * and every `Set-Cookie` of the 101 lands in it, so a reconnect with the same jar keeps
     * the server's affinity cookie (the RFD's cookie rule). NULL: no cookies. */
    acp_cookie_jar *cookies;
    /* Extra request header fields (copied), e.g. a proxy's; NULL/0: none. */
    const acp_http_field *headers;
    size_t nheaders;
    /* wss:// trust anchors (PEM file); NULL: the system's. */
    const char *ca_file;
    /* Connect to this Unix-domain socket (an `acp-agent --listen unix:PATH`) instead of the
     * URL's host and port, which still give the Host header and the path. NULL: TCP. */
    const char *unix_path;
    /* Copied; NULL: the defaults. header_timeout_ms bounds connect + handshake. */
    const acp_net_limits *lim;
} acp_ws_connect_opts;

/* Client: starts connecting and returns the link at once in *out (0), or ACP_EINVAL (a URL
 * that is not ws:// or wss://, or a header field with CR/LF), ACP_ENOMEM. Bind the link
 * (acp_link_bind) right away; nothing is delivered before on_open.
 *
 * on_open(l, status, detail, user) follows once: status 0 when the 101 was verified, else
 * ACP_EIO (no connection, TLS failure), ACP_EACCES (HTTP 401/403), ACP_EPROTO (another
 * status, or a bad handshake answer), ACP_ETIMEDOUT (no answer within header_timeout_ms);
 * `detail` says what happened in words (e.g. "HTTP 401 Unauthorized"), borrowed for the
 * call. After a failure the link's on_close follows and the link is gone. Messages sent
 * before on_open wait for it. */
int acp_ws_connect(uv_loop_t *loop, const acp_ws_connect_opts *o,
                   void (*on_open)(acp_link *l, int status, const char *detail, void *user),
                   void *user, acp_link **out);

/* The `Acp-Connection-Id` of a WebSocket link (sent by us as server, received as client; ""
 * when the server sent none). Borrowed, valid as long as the link. */
const char *acp_ws_connection_id(const acp_link *l);

/* The close code the peer sent (0 when none was received yet). For tests and logs. */
unsigned acp_ws_close_code(const acp_link *l);

#endif
