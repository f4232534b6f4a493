/* SPDX-License-Identifier: Apache-2.0 */
/* TLS over memory BIOs (net/tls.h). OpenSSL reads ciphertext from `in` and writes ciphertext to
 * `out`; both are memory BIOs we fill and drain, so no descriptor is ever touched here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "acp/error.h"
#include "net/tls.h"

struct acp_tls {
    SSL *ssl;
    BIO *in, *out; /* owned by ssl */
    bool ready;
    char alpn[16];
    char err[256];
};

/* The last OpenSSL error as a sentence (malloc'd), and the queue cleared: errors are per
 * thread, and a stale one would be blamed on the next connection. */
static char *strdup_reason(const char *what)
{
    unsigned long e = ERR_peek_last_error();
    char r[200] = "unknown error";
    if (e) ERR_error_string_n(e, r, sizeof r);
    ERR_clear_error();
    char *s = NULL;
    return asprintf(&s, "%s: %s", what, r) < 0 ? NULL : s;
}

/* The same into a connection's fixed buffer (a long reason is cut: it is for a log line). */
static void ssl_reason(char *buf, size_t n, const char *what)
{
    char *s = strdup_reason(what);
    if (snprintf(buf, n, "%s", s ? s : what) >= (int)n) buf[n - 1] = '\0';
    free(s);
}

/* Server ALPN: h2 when the client offers it and the server serves it, else http/1.1; a client
 * offering neither still gets a connection (no ALPN), as RFC 7301 lets a server decide. */
static int select_alpn(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                       const unsigned char *in, unsigned int inlen, void *arg)
{
    bool want_h2 = arg != NULL;
    static const char *const prefs[] = {"h2", "http/1.1"};
    for (size_t k = want_h2 ? 0 : 1; k < 2; k++) {
        size_t plen = strlen(prefs[k]);
        for (unsigned i = 0; i < inlen; i += 1u + in[i]) {
            if (in[i] == plen && i + 1 + plen <= inlen && !memcmp(in + i + 1, prefs[k], plen)) {
                *out = in + i + 1;
                *outlen = in[i];
                return SSL_TLSEXT_ERR_OK;
            }
        }
    }
    return SSL_TLSEXT_ERR_NOACK;
}

acp_tls_ctx *acp_tls_ctx_server(const char *cert_file, const char *key_file, bool want_h2,
                                char **err)
{
    *err = NULL;
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx) {
        *err = strdup_reason("cannot create a TLS context");
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    /* Memory BIOs move whatever SSL_write gives them: let a partial write of a big buffer
     * stand, as the writer loops anyway. */
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_RELEASE_BUFFERS);
    char what[512];
    if (SSL_CTX_use_certificate_chain_file(ctx, cert_file) != 1) {
        snprintf(what, sizeof what, "cannot load the TLS certificate '%s'", cert_file);
        *err = strdup_reason(what);
    } else if (SSL_CTX_use_PrivateKey_file(ctx, key_file, SSL_FILETYPE_PEM) != 1) {
        snprintf(what, sizeof what, "cannot load the TLS key '%s'", key_file);
        *err = strdup_reason(what);
    } else if (SSL_CTX_check_private_key(ctx) != 1) {
        *err = strdup_reason("the TLS key does not match the certificate");
    }
    if (*err) {
        SSL_CTX_free(ctx);
        return NULL;
    }
    SSL_CTX_set_alpn_select_cb(ctx, select_alpn, want_h2 ? (void *)1 : NULL);
    return ctx;
}

acp_tls_ctx *acp_tls_ctx_client(const char *ca_file, char **err)
{
    *err = NULL;
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx) {
        *err = strdup_reason("cannot create a TLS context");
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_RELEASE_BUFFERS);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    int ok = ca_file ? SSL_CTX_load_verify_locations(ctx, ca_file, NULL)
                     : SSL_CTX_set_default_verify_paths(ctx);
    if (ok != 1) {
        char what[512];
        snprintf(what, sizeof what, "cannot load trust anchors from '%s'",
                 ca_file ? ca_file : "the system store");
        *err = strdup_reason(what);
        SSL_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

void acp_tls_ctx_free(acp_tls_ctx *ctx)
{
    SSL_CTX_free(ctx);
}

static int set_peer_name(SSL *ssl, const char *host)
{
    /* An address is matched against the certificate's IP entries and never sent as SNI
     * (RFC 6066 3); a name is both. */
    X509_VERIFY_PARAM *vp = SSL_get0_param(ssl);
    if (X509_VERIFY_PARAM_set1_ip_asc(vp, host) == 1) return 0;
    ERR_clear_error();
    X509_VERIFY_PARAM_set_hostflags(vp, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    if (X509_VERIFY_PARAM_set1_host(vp, host, 0) != 1) return ACP_EINVAL;
    return SSL_set_tlsext_host_name(ssl, host) == 1 ? 0 : ACP_EINVAL;
}

static int set_alpn(SSL *ssl, const char *const *alpn)
{
    unsigned char wire[256];
    size_t n = 0;
    for (; *alpn; alpn++) {
        size_t l = strlen(*alpn);
        if (l == 0 || l > 255 || n + 1 + l > sizeof wire) return ACP_EINVAL;
        wire[n++] = (unsigned char)l;
        memcpy(wire + n, *alpn, l);
        n += l;
    }
    /* SSL_set_alpn_protos returns 0 on success, unlike the rest of OpenSSL. */
    return n && SSL_set_alpn_protos(ssl, wire, (unsigned)n) ? ACP_EINVAL : 0;
}

acp_tls *acp_tls_new(acp_tls_ctx *ctx, bool server, const char *host, const char *const *alpn)
{
    acp_tls *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->ssl = SSL_new(ctx);
    t->in = BIO_new(BIO_s_mem());
    t->out = BIO_new(BIO_s_mem());
    if (!t->ssl || !t->in || !t->out) goto fail;
    /* An empty memory BIO means "no bytes yet", not end of file. */
    BIO_set_mem_eof_return(t->in, -1);
    BIO_set_mem_eof_return(t->out, -1);
    SSL_set_bio(t->ssl, t->in, t->out);
    if (server) {
        SSL_set_accept_state(t->ssl);
    } else {
        SSL_set_connect_state(t->ssl);
        if (host && set_peer_name(t->ssl, host)) goto fail_ssl;
        if (alpn && set_alpn(t->ssl, alpn)) goto fail_ssl;
    }
    return t;
fail:
    BIO_free(t->in);
    BIO_free(t->out);
fail_ssl:
    SSL_free(t->ssl);
    ERR_clear_error();
    free(t);
    return NULL;
}

void acp_tls_free(acp_tls *t)
{
    if (!t) return;
    SSL_free(t->ssl);
    free(t);
}

/* SSL_ERROR_WANT_* with memory BIOs only means "feed me more". */
static int check(acp_tls *t, int r, const char *what)
{
    int e = SSL_get_error(t->ssl, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        ERR_clear_error();
        return 0;
    }
    if (e == SSL_ERROR_ZERO_RETURN) { /* close_notify: the reader sees the socket's EOF */
        ERR_clear_error();
        return 0;
    }
    long v = SSL_get_verify_result(t->ssl);
    if (v != X509_V_OK) {
        snprintf(t->err, sizeof t->err, "%s: certificate verification failed: %s", what,
                 X509_verify_cert_error_string(v));
        ERR_clear_error();
    } else {
        ssl_reason(t->err, sizeof t->err, what);
    }
    return ACP_EPROTO;
}

static int handshake(acp_tls *t)
{
    int r = SSL_do_handshake(t->ssl);
    if (r != 1) return check(t, r, "TLS handshake failed");
    t->ready = true;
    const unsigned char *p;
    unsigned n;
    SSL_get0_alpn_selected(t->ssl, &p, &n);
    if (n && n < sizeof t->alpn) {
        memcpy(t->alpn, p, n);
        t->alpn[n] = '\0';
    }
    return 0;
}

int acp_tls_start(acp_tls *t)
{
    return handshake(t);
}

int acp_tls_recv(acp_tls *t, const void *p, size_t n, acp_buf *plain)
{
    if (n && BIO_write(t->in, p, (int)n) != (int)n) return ACP_ENOMEM;
    if (!t->ready) {
        int rc = handshake(t);
        if (rc || !t->ready) return rc;
    }
    for (;;) {
        if (acp_buf_reserve(plain, 16384)) return ACP_ENOMEM;
        size_t got = 0;
        int r = SSL_read_ex(t->ssl, plain->data + plain->len, plain->cap - plain->len, &got);
        if (r != 1) return check(t, 0, "TLS record failed");
        plain->len += got;
    }
}

int acp_tls_send(acp_tls *t, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        size_t w = 0;
        if (SSL_write_ex(t->ssl, c, n, &w) != 1) {
            int rc = check(t, 0, "TLS write failed");
            return rc ? rc : ACP_EPROTO; /* a memory BIO never asks to wait */
        }
        c += w;
        n -= w;
    }
    return 0;
}

void acp_tls_shutdown(acp_tls *t)
{
    if (t->ready) SSL_shutdown(t->ssl);
    ERR_clear_error();
}

char *acp_tls_take(acp_tls *t, size_t *len)
{
    size_t n = BIO_ctrl_pending(t->out);
    *len = 0;
    if (!n) return NULL;
    char *buf = malloc(n);
    if (!buf) return NULL;
    int r = BIO_read(t->out, buf, (int)n);
    if (r <= 0) {
        free(buf);
        return NULL;
    }
    *len = (size_t)r;
    return buf;
}

bool acp_tls_ready(const acp_tls *t)
{
    return t->ready;
}

const char *acp_tls_alpn(const acp_tls *t)
{
    return t->alpn[0] ? t->alpn : NULL;
}

const char *acp_tls_error(const acp_tls *t)
{
    return t->err[0] ? t->err : "TLS failed";
}
