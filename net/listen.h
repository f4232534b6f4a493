/* SPDX-License-Identifier: Apache-2.0 */
/* The listener (internal to net/): one endpoint, "HOST:PORT" or "unix:/path", with optional TLS,
 * serving both remote ACP profiles on it. Each accepted socket is sniffed (ALPN h2 or the
 * HTTP/2 client preface: net/h2.c; anything else: HTTP/1.1, net/http1.c) and every request
 * goes through the router: the Origin check (403), bearer-token auth (401 before any body
 * byte is read), the connection limit (503), path /acp (404), then `Upgrade: websocket` to
 * acp_ws_accept() and everything else to acp_shttp_handle(). New ACP connections come out as links.
 * Everything runs on one uv loop, from one thread. */
#ifndef ACP_NET_LISTEN_H
#define ACP_NET_LISTEN_H

#include <uv.h>

#include "net/limits.h"
#include "net/link.h"

typedef struct acp_listener acp_listener;

typedef struct acp_listener_opts {
    const char *where; /* "HOST:PORT" ("[::1]:PORT"; port 0: any) or "unix:/path" */
    /* Or sockets already bound and listening (systemd's, net/sdlisten.h): nfds > 0 serves
     * these instead of `where` (TCP or Unix stream; the listener owns them from now on, and
     * closes them). fd_names (may be NULL) names them in messages. */
    const int *fds;
    const char *const *fd_names;
    size_t nfds;
    const char *tls_cert, *tls_key; /* PEM files, both or neither */
    const char *token;              /* the bearer token requests must carry; NULL: none. Copied;
                                     * it never reaches a log */
    /* Origin values a request may carry (exact match; "*": any); a request with an Origin
     * not among them gets 403. Requests without Origin are not checked. Copied. */
    const char *const *origins;
    size_t norigins;
    acp_net_limits limits; /* zeros: defaults */
    /* A new ACP connection: bind the link (acp_link_bind) before returning. */
    void (*on_link)(acp_link *l, void *user);
    void (*on_log)(const char *line, void *user); /* NULL: silent */
    void *user;
} acp_listener_opts;

/* Binds and starts accepting. *out is owned by the caller (acp_listener_close()). 0, or
 * ACP_EINVAL (a malformed address, unreadable TLS files) / ACP_EIO (cannot bind) with a
 * malloc'd sentence in *err (the caller frees it), or ACP_ENOMEM. */
int acp_listener_open(uv_loop_t *loop, const acp_listener_opts *o, acp_listener **out, char **err);
/* Replaces the bearer token (NULL: kept) and the TLS certificate and key (both NULL: kept; a
 * cleartext listener cannot get TLS) for the connections accepted from now on: those open go
 * on as they are. All or nothing: a file that cannot be loaded changes nothing (ACP_EINVAL, the
 * malloc'd sentence in *err). */
int acp_listener_reload(acp_listener *L, const char *token, const char *tls_cert,
                        const char *tls_key, char **err);
/* The TCP port bound (useful with port 0; with several sockets, the first TCP one's), 0 for a
 * Unix socket. */
int acp_listener_port(const acp_listener *l);
/* Stops accepting: the endpoint is closed (a Unix socket's file removed). Connections go on;
 * requests on them are answered 503. Idempotent. */
void acp_listener_stop(acp_listener *l);
/* Stops, closes every connection (what is queued is written first, within the close timeout),
 * then frees the listener; done (may be NULL) runs from the loop after that. Call once. */
void acp_listener_close(acp_listener *l, void (*done)(void *user), void *user);

#endif
