/* SPDX-License-Identifier: Apache-2.0 */
/* TLS without I/O (internal to net/): OpenSSL over a pair of memory BIOs. Ciphertext from the
 * socket goes in with acp_tls_recv(), plaintext comes out into a buffer; plaintext goes in
 * with acp_tls_send() and the ciphertext to write is taken with acp_tls_take(). net/sock.c is
 * the only user; it owns the I/O, this file owns the state machine. */
#ifndef ACP_NET_TLS_H
#define ACP_NET_TLS_H

#include <stdbool.h>
#include <stddef.h>

#include "acp/json.h"

typedef struct ssl_ctx_st acp_tls_ctx; /* an OpenSSL SSL_CTX */
typedef struct acp_tls acp_tls;

/* A server context from a PEM certificate chain and key, offering ALPN h2 and http/1.1 (h2
 * only when want_h2). NULL on failure with a malloc'd sentence in *err (the caller frees it).
 * Free with acp_tls_ctx_free(). */
acp_tls_ctx *acp_tls_ctx_server(const char *cert_file, const char *key_file, bool want_h2,
                                char **err);
/* A client context that verifies the peer against ca_file (NULL: the system's trust store). */
acp_tls_ctx *acp_tls_ctx_client(const char *ca_file, char **err);
void acp_tls_ctx_free(acp_tls_ctx *ctx);

/* One connection. host (client only): sent as SNI and verified against the certificate (a
 * DNS name or an IP address). alpn (client only): NULL-terminated list to offer. The context
 * is reference-counted by OpenSSL: it may be freed before the connection. NULL on ENOMEM. */
acp_tls *acp_tls_new(acp_tls_ctx *ctx, bool server, const char *host, const char *const *alpn);
void acp_tls_free(acp_tls *t);

/* Ciphertext from the peer: advances the handshake and appends decrypted bytes to *plain.
 * 0, or ACP_EPROTO (handshake or record failure: acp_tls_error() says why; close the socket
 * after writing what acp_tls_take() still has, an alert) or ACP_ENOMEM. */
int acp_tls_recv(acp_tls *t, const void *p, size_t n, acp_buf *plain);
/* Client: starts the handshake (the ClientHello becomes available to acp_tls_take()). */
int acp_tls_start(acp_tls *t);
/* Plaintext to encrypt; only once acp_tls_ready(). 0, ACP_EPROTO or ACP_ENOMEM. */
int acp_tls_send(acp_tls *t, const void *p, size_t n);
/* Queues a close_notify alert. */
void acp_tls_shutdown(acp_tls *t);
/* The ciphertext produced so far (malloc'd, the caller frees it) or NULL when none. */
char *acp_tls_take(acp_tls *t, size_t *len);
bool acp_tls_ready(const acp_tls *t);
const char *acp_tls_alpn(const acp_tls *t); /* "h2", "http/1.1" or NULL */
const char *acp_tls_error(const acp_tls *t);

#endif
