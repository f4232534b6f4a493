/* The HTTP/2 wire of the server (RFC 9113, on nghttp2): one server session per socket, each
 * stream an HTTP exchange of net/http.h handed whole to the router. Serves h2 over TLS (ALPN
 * "h2") and cleartext h2c with prior knowledge (the client's first bytes are the connection
 * preface, which the listener sniffs and passes on as `leftover`).
 *
 *   - request bodies are bounded by lim->max_message: larger gets 413 and the stream is reset;
 *     request heads by H2_MAX_HEAD (the stream is reset);
 *   - a stream the client resets, or a connection that ends, aborts its exchange (on_abort);
 *   - response bodies go out as the client's flow-control window and the socket allow; what
 *     waits is acp_http_res_queued(), and on_drain reports when it has fallen below half;
 *   - acp_h2_shutdown() sends GOAWAY: streams already begun finish, then the socket closes.
 * Everything runs on the loop's thread. */
#ifndef ACP_NET_H2_H
#define ACP_NET_H2_H

#include <stddef.h>

#include "net/http.h"
#include "net/limits.h"
#include "net/sock.h"

typedef struct acp_h2 acp_h2;

#define H2_MAX_HEAD (64 * 1024) /* a request's header fields, decoded */
#define H2_MAX_STREAMS                                                                             \
    256 /* SETTINGS_MAX_CONCURRENT_STREAMS: one SSE stream per                                     \
         * session a client follows, plus its POSTs */

typedef struct acp_h2_cbs {
    /* A whole request (head and body): the router answers it through net/http.h. */
    void (*on_request)(acp_http_req *r, void *user);
    /* The connection ended (its socket closed); h is freed right after. NULL: not needed. */
    void (*on_close)(acp_h2 *h, const char *reason, void *user);
} acp_h2_cbs;

/* Takes the socket over (acp_sock_bind) and serves HTTP/2 on it; leftover[0..n) are bytes
 * already read from it (the preface the listener sniffed). lim is copied, cbs copied, user
 * borrowed. The connection owns itself: it ends when the socket closes. *out (may be NULL)
 * lets the caller shut it down until on_close. 0, ACP_ENOMEM (the socket is closed) or ACP_EIO
 * (the leftover bytes are not HTTP/2; the socket is closed). */
int acp_h2_accept(acp_sock *s, const char *leftover, size_t n, const acp_net_limits *lim,
                  const acp_h2_cbs *cbs, void *user, acp_h2 **out);

/* Orderly shutdown: GOAWAY now; the socket closes once the streams already begun have ended.
 * Idempotent. */
void acp_h2_shutdown(acp_h2 *h);

#endif
