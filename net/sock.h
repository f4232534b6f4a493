/* SPDX-License-Identifier: Apache-2.0 */
/* A byte stream to one network peer: a TCP or Unix-domain socket on the uv loop, with TLS
 * (OpenSSL, net/tls.c) in between when asked. The server's wires (HTTP/1.1, HTTP/2, WebSocket
 * after an upgrade) and the client's WebSocket profile read and write through it and never see
 * whether TLS is on. Server sockets come from the listener (net/listen.c); clients connect with
 * acp_sock_connect(). Everything runs on one uv loop, from one thread; a callback may call any
 * function here, acp_sock_close() included. */
#ifndef ACP_NET_SOCK_H
#define ACP_NET_SOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

typedef struct acp_sock acp_sock;

typedef struct acp_sock_cbs {
    /* The connection is up (client: TCP connected and, with TLS, handshake done and the
     * certificate verified; server: TLS handshake done). status 0, or an ACP_E* error after
     * which on_close follows. NULL: not interested. */
    void (*on_open)(acp_sock *s, int status, void *user);
    /* Plaintext bytes from the peer, borrowed for the call. */
    void (*on_read)(acp_sock *s, const char *p, size_t n, void *user);
    /* acp_sock_queued() fell below half the high-water mark after reaching it. */
    void (*on_drain)(acp_sock *s, void *user);
    /* The stream ended (peer closed, error, TLS failure, acp_sock_close() done). Called once;
     * the socket is freed right after it returns. reason: a static string for logs. */
    void (*on_close)(acp_sock *s, const char *reason, void *user);
} acp_sock_cbs;

/* Who receives events (cbs copied, user borrowed). A wire taking over a socket from another
 * (HTTP/1.1 handing a socket to WebSocket after the upgrade) calls it again. */
void acp_sock_bind(acp_sock *s, const acp_sock_cbs *cbs, void *user);
/* Queues bytes (copied; encrypted first with TLS). 0 or ACP_EIO (closing or closed). */
int acp_sock_write(acp_sock *s, const void *p, size_t n);
/* Bytes accepted and not yet written to the kernel. */
size_t acp_sock_queued(const acp_sock *s);
size_t acp_sock_high_water(const acp_sock *s);
/* Asks for on_drain once acp_sock_queued() falls below half the high-water mark, even if it
 * never reached the mark: a wire that batches its output per loop turn may have told its
 * owner to wait while the batch was still its own, and the socket must then say when the
 * batch has gone out. Call it only while the queue is at half the mark or above. */
void acp_sock_want_drain(acp_sock *s);
/* Stop (true) or resume (false) reading: back-pressure on a peer that sends faster than we
 * can answer. */
void acp_sock_pause(acp_sock *s, bool paused);
/* The loop the socket runs on (a wire taking it over starts its own timers there). */
uv_loop_t *acp_sock_loop(const acp_sock *s);
/* The ALPN protocol agreed in the TLS handshake ("h2", "http/1.1"), or NULL (no TLS / none). */
const char *acp_sock_alpn(const acp_sock *s);
/* Writes what is queued (up to a bounded time), then closes; on_close follows. Idempotent. */
void acp_sock_close(acp_sock *s);
/* Closes at once, dropping what is queued (a peer that does not read, a protocol error). */
void acp_sock_abort(acp_sock *s);

typedef struct acp_sock_connect_opts {
    const char *host; /* name or address; NULL when unix_path is set */
    unsigned short port;
    const char *unix_path;   /* a Unix-domain socket instead of TCP */
    bool tls;                /* TLS with certificate and host name verification */
    const char *ca_file;     /* trust anchors for tls; NULL: the system's */
    const char *const *alpn; /* NULL-terminated protocol list offered with tls, or NULL */
} acp_sock_connect_opts;

/* Client: starts connecting (name resolution on the loop's thread pool). *out is owned by
 * the caller until on_close; on_open reports the outcome. 0, ACP_EINVAL, ACP_ENOMEM. */
int acp_sock_connect(uv_loop_t *loop, const acp_sock_connect_opts *o, const acp_sock_cbs *cbs,
                     void *user, acp_sock **out);

#endif
