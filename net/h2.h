/* SPDX-License-Identifier: Apache-2.0 */
/* The HTTP/2 wire of the server (RFC 9113, on nghttp2): one server session per socket, each
 * stream an HTTP exchange of net/http.h handed whole to the router. Serves h2 over TLS (ALPN
 * "h2") and cleartext h2c with prior knowledge (the client's first bytes are the connection
 * preface, which the listener sniffs and passes on as `leftover`).
 *
 *   - request bodies are bounded by lim->max_message: larger gets 413 and the stream is reset;
 *     request heads by H2_MAX_HEAD (the stream is reset);
 *   - a stream the client resets, or a connection that ends, aborts its exchange (on_abort);
 *   - response bodies go out as the client's flow-control window and the socket allow; what
 *     waits is acp_http_res_queued(), and on_drain reports each time it has halved, down to
 *     empty (so a profile that resumes at its own mark always hears it);
 *   - acp_h2_group_shutdown() sends GOAWAY: streams already begun finish, then the socket
 *     closes.
 * Everything runs on the loop's thread. */
#ifndef ACP_NET_H2_H
#define ACP_NET_H2_H

#include <stddef.h>

#include "net/http1.h"
#include "net/limits.h"
#include "net/sock.h"

typedef struct acp_h2 acp_h2;

#define H2_MAX_HEAD (64 * 1024) /* a request's header fields, decoded */
#define H2_MAX_STREAMS                                                                             \
    256 /* SETTINGS_MAX_CONCURRENT_STREAMS: one SSE stream per                                     \
         * session a client follows, plus its POSTs */

/* The HTTP/2 connections of one listener, so it can shut them all down (zero-initialised by
 * the listener; each connection unlinks itself as it ends). */
typedef struct acp_h2_group {
    acp_h2 *head;
    unsigned count;
} acp_h2_group;

/* Takes the socket over (acp_sock_bind) and serves HTTP/2 on it; data[0..n) are bytes already
 * read from it (the preface the listener sniffed), borrowed. lim and cbs are borrowed for the
 * connection's life, as acp_http1_serve's (net/http1.h): cbs->on_head (may be NULL) sees each
 * request's head before any body byte is read, cbs->on_request gets the whole request with a
 * NULL socket (HTTP/2 has no upgrade to hand a socket over for). The connection joins g (may
 * be NULL) and owns itself: it ends with the socket, which it holds off idling while a stream
 * is open. 0, or ACP_ENOMEM (s is then aborted). */
int acp_h2_serve(acp_sock *s, const char *data, size_t n, const acp_net_limits *lim,
                 const acp_wire_cbs *cbs, void *user, acp_h2_group *g);

/* Orderly shutdown of every connection of g: GOAWAY now; each socket closes once the streams
 * it had begun have ended (the profile ends its SSE streams when it is freed). */
void acp_h2_group_shutdown(acp_h2_group *g);

#endif
