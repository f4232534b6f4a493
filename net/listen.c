/* SPDX-License-Identifier: Apache-2.0 */
/* The listener and the router (net/listen.h). */
#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "acp/error.h"
#include "acp/num.h"
#include "net/h2.h"
#include "net/http1.h"
#include "net/listen.h"
#include "net/ndjson.h"
#include "net/shttp.h"
#include "net/sock_server.h"
#include "net/wire.h"
#include "net/ws.h"

/* Connections past max_connections are still read far enough to be answered 503 (a reset
 * would look like a network fault), up to this many at once; beyond, they are dropped. */
#define MAX_REFUSING 64
#define BACKLOG      511

static const char h2_preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
#define H2_PREFACE_LEN (sizeof h2_preface - 1)

/* One listening socket: the address bound, or one of systemd's (several with activation). */
typedef struct endpoint {
    union {
        uv_handle_t h;
        uv_stream_t s;
        uv_tcp_t tcp;
        uv_pipe_t pipe;
    } srv;
    acp_listener *L;
    bool is_unix, inited;
} endpoint;

struct acp_listener {
    uv_loop_t *loop;
    endpoint *eps;
    size_t neps;
    unsigned bound; /* endpoints whose handle is not closed yet */
    bool stopped, closing;
    char *unix_path; /* ours to remove */
    int port;
    acp_tls_ctx *tls;
    bool has_token;
    unsigned char token_hash[SHA256_DIGEST_LENGTH];
    char **origins; /* copies of the allowed Origin values */
    size_t norigins;
    acp_net_limits lim;
    acp_sock_group socks;    /* admitted */
    acp_sock_group refusing; /* over the limit, being answered 503 */
    acp_h2_group h2s;        /* HTTP/2 connections, for GOAWAY at shutdown */
    acp_shttp *shttp;
    void (*on_link)(acp_link *l, void *user);
    void (*on_log)(const char *line, void *user);
    void *user;
    void (*done)(void *user);
    void *done_user;
};

/* A socket until its first bytes say which wire it speaks. */
typedef struct sniff {
    acp_listener *L;
    acp_sock *s;
    bool refusing, is_unix;
    uv_timer_t timer; /* the head timeout covers the TLS handshake and the sniff */
    size_t n;
    char buf[H2_PREFACE_LEN];
} sniff;

static void lg(acp_listener *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void lg(acp_listener *L, const char *fmt, ...)
{
    if (!L->on_log) return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    L->on_log(line, L->user);
}

/* --- the router ------------------------------------------------------------------------------ */

static void refuse(acp_http_req *r, int status, const char *text)
{
    acp_http_field f[2];
    size_t n = 0;
    if (status == 401) f[n++] = (acp_http_field){"WWW-Authenticate", "Bearer realm=\"acp\""};
    if (status == 503) f[n++] = (acp_http_field){"Retry-After", "1"};
    char body[256];
    int len = snprintf(body, sizeof body, "%s\n", text);
    acp_http_res_send(r, status, "text/plain", body, (size_t)len, f, n);
}

/* Bearer-token check in constant time: both sides are hashed first, so neither the length nor
 * the position of the first difference shows in the timing. */
static bool token_ok(acp_listener *L, const char *auth)
{
    if (!auth || strncasecmp(auth, "Bearer ", 7)) return false;
    const char *t = auth + 7;
    while (*t == ' ') t++;
    unsigned char h[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)t, strlen(t), h);
    return CRYPTO_memcmp(h, L->token_hash, sizeof h) == 0;
}

/* Browsers send no CORS preflight for a WebSocket upgrade, so without this any page the user
 * visits could drive a loopback agent. Clients outside a browser (the official SDK in Node,
 * curl, ours) send no Origin and are not affected. */
static bool origin_ok(const acp_listener *L, const char *origin)
{
    if (!origin) return true;
    for (size_t i = 0; i < L->norigins; i++)
        if (!strcmp(L->origins[i], "*") || !strcmp(L->origins[i], origin)) return true;
    return false;
}

static bool path_is_acp(const char *path)
{
    size_t n = strcspn(path, "?#");
    return n == 4 && !memcmp(path, "/acp", 4);
}

static bool on_head(acp_http_req *r, void *user)
{
    acp_listener *L = user;
    if (L->stopped) {
        refuse(r, 503, "the server is shutting down");
        return false;
    }
    /* Checked before the token too: see docs/remote.md ("Browsers and Origin"). */
    if (!origin_ok(L, acp_http_req_header(r, "origin"))) {
        lg(L, "refused a request from a web page: its Origin is not allowed (--allow-origin)");
        refuse(r, 403, "this Origin is not allowed (the agent's --allow-origin)");
        return false;
    }
    if (L->has_token && !token_ok(L, acp_http_req_header(r, "authorization"))) {
        lg(L, "refused a request: %s bearer token",
           acp_http_req_header(r, "authorization") ? "wrong" : "no");
        refuse(r, 401, "a valid bearer token is required (Authorization: Bearer <token>)");
        return false;
    }
    if (!path_is_acp(acp_http_req_path(r))) {
        refuse(r, 404, "not found: the ACP endpoint is /acp");
        return false;
    }
    return true;
}

static bool on_head_refusing(acp_http_req *r, void *user)
{
    refuse(r, 503, "too many connections");
    return false;
}

static bool on_request(acp_http_req *r, acp_sock *s, const char *leftover, size_t n, void *user)
{
    acp_listener *L = user;
    if (s && acp_http_req_wants_websocket(r))
        return acp_ws_accept(s, r, leftover, n, &L->lim, L->on_link, L->user) == 0;
    acp_shttp_handle(L->shttp, r);
    return false;
}

static bool on_request_refusing(acp_http_req *r, acp_sock *s, const char *l, size_t n, void *u)
{
    refuse(r, 503, "too many connections");
    return false;
}

static const acp_wire_cbs router = {on_head, on_request};
static const acp_wire_cbs refusing_router = {on_head_refusing, on_request_refusing};

/* --- sniffing --------------------------------------------------------------------------------- */

static void sniff_free(uv_handle_t *h)
{
    free(h->data);
}

static void sniff_end(sniff *sn)
{
    uv_close((uv_handle_t *)&sn->timer, sniff_free);
}

static void sniff_timeout(uv_timer_t *t)
{
    sniff *sn = t->data;
    acp_sock_abort(sn->s); /* sniff_closed follows */
}

/* Hands the socket to its wire, with the bytes read so far. */
static void handover(sniff *sn, bool h2, const char *data, size_t n)
{
    acp_listener *L = sn->L;
    acp_sock *s = sn->s;
    const acp_wire_cbs *cbs = sn->refusing ? &refusing_router : &router;
    uv_timer_stop(&sn->timer);
    sniff_end(sn);
    if (h2)
        acp_h2_serve(s, data, n, &L->lim, cbs, L, &L->h2s);
    else
        acp_http1_serve(s, data, n, &L->lim, cbs, L);
}

static void sniff_read(acp_sock *s, const char *p, size_t n, void *user)
{
    sniff *sn = user;
    const char *alpn = acp_sock_alpn(s);
    if (alpn) {
        handover(sn, !strcmp(alpn, "h2"), p, n);
        return;
    }
    /* On a Unix socket, a peer whose first byte opens a JSON object speaks ACP as on a pipe
     * (no HTTP method starts with '{'). The socket file's permissions guard it, as they guard
     * a pipe; a listener that wants a bearer token gets one over HTTP only. */
    if (sn->is_unix && sn->n == 0 && n && p[0] == '{') {
        acp_listener *L = sn->L;
        if (sn->refusing || L->has_token) {
            lg(L, "%s",
               L->has_token ? "an NDJSON peer refused: this listener wants a bearer token (connect "
                              "over HTTP or WebSocket)"
                            : "connection refused: too many connections");
            acp_sock_abort(s); /* sniff_closed follows */
            return;
        }
        uv_timer_stop(&sn->timer);
        sniff_end(sn);
        acp_ndjson_serve(s, p, n, &L->lim, L->on_link, L->user);
        return;
    }
    /* Cleartext: HTTP/2 with prior knowledge starts with the client preface; one byte off it
     * is HTTP/1.1 (which has no method "PRI"). */
    size_t k = 0;
    while (k < n && sn->n < H2_PREFACE_LEN && p[k] == h2_preface[sn->n]) sn->buf[sn->n++] = p[k++];
    bool h2 = sn->n == H2_PREFACE_LEN;
    if (!h2 && k == n) return; /* still a prefix of the preface: wait for more */
    size_t total = sn->n + (n - k);
    char *all = malloc(total ? total : 1);
    if (!all) {
        acp_sock_abort(s);
        return;
    }
    memcpy(all, sn->buf, sn->n);
    memcpy(all + sn->n, p + k, n - k);
    handover(sn, h2, all, total);
    free(all);
}

static void sniff_closed(acp_sock *s, const char *reason, void *user)
{
    sniff *sn = user;
    /* A peer that connects and leaves (a load balancer's TCP check) is not news. */
    if (strcmp(reason, "peer closed"))
        lg(sn->L, "connection closed before its first request: %s", reason);
    uv_timer_stop(&sn->timer);
    sniff_end(sn);
}

static void on_connection(uv_stream_t *server, int status)
{
    endpoint *ep = server->data;
    acp_listener *L = ep->L;
    if (status < 0 || L->stopped) return;
    bool over = L->socks.count >= L->lim.max_connections;
    acp_sock *s;
    if (over && L->refusing.count >= MAX_REFUSING) {
        /* Take it off the backlog and drop it. */
        if (acp_sock_accept(server, ep->is_unix, NULL, &L->lim, &L->refusing, &s) == 0)
            acp_sock_abort(s);
        return;
    }
    if (acp_sock_accept(server, ep->is_unix, L->tls, &L->lim, over ? &L->refusing : &L->socks, &s))
        return;
    if (over) lg(L, "connection refused: %u connections open", L->socks.count);
    sniff *sn = calloc(1, sizeof *sn);
    if (!sn) {
        acp_sock_abort(s);
        return;
    }
    sn->L = L;
    sn->s = s;
    sn->refusing = over;
    sn->is_unix = ep->is_unix;
    uv_timer_init(L->loop, &sn->timer);
    sn->timer.data = sn;
    uv_timer_start(&sn->timer, sniff_timeout, L->lim.header_timeout_ms, 0);
    acp_sock_cbs cbs = {.on_read = sniff_read, .on_close = sniff_closed};
    acp_sock_bind(s, &cbs, sn);
}

/* --- binding ------------------------------------------------------------------------------- */

static char *sentence(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *sentence(const char *fmt, ...)
{
    char *s = NULL;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&s, fmt, ap) < 0) s = NULL;
    va_end(ap);
    return s;
}

/* A socket file left by a server that died is removed; one a live server answers on is not. */
static void remove_stale(const char *path)
{
    struct stat st;
    if (lstat(path, &st) || !S_ISSOCK(st.st_mode)) return;
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof a.sun_path) return;
    strcpy(a.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return;
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0 && errno == ECONNREFUSED) unlink(path);
    close(fd);
}

static void ep_init(acp_listener *L, endpoint *ep, bool is_unix)
{
    ep->L = L;
    ep->is_unix = is_unix;
    if (is_unix)
        uv_pipe_init(L->loop, &ep->srv.pipe, 0);
    else
        uv_tcp_init(L->loop, &ep->srv.tcp);
    ep->srv.h.data = ep;
    ep->inited = true;
    L->bound++;
}

static void ep_port(acp_listener *L, endpoint *ep)
{
    struct sockaddr_storage ss;
    int len = sizeof ss;
    if (!L->port && uv_tcp_getsockname(&ep->srv.tcp, (struct sockaddr *)&ss, &len) == 0)
        L->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                 : ((struct sockaddr_in *)&ss)->sin_port);
}

static int bind_unix(acp_listener *L, endpoint *ep, const char *path, char **err)
{
    if (!*path) {
        *err = sentence("--listen unix: needs a path");
        return ACP_EINVAL;
    }
    ep_init(L, ep, true);
    remove_stale(path);
    int rc = uv_pipe_bind(&ep->srv.pipe, path);
    if (rc) {
        *err = sentence("cannot listen on unix:%s: %s", path, uv_strerror(rc));
        return ACP_EIO;
    }
    L->unix_path = strdup(path);
    return L->unix_path ? 0 : ACP_ENOMEM;
}

static int bind_tcp(acp_listener *L, endpoint *ep, const char *where, char **err)
{
    const char *colon = strrchr(where, ':');
    if (!colon || colon == where || !colon[1]) {
        *err = sentence("cannot listen on '%s': expected HOST:PORT or unix:/path", where);
        return ACP_EINVAL;
    }
    char host[256];
    size_t hl = (size_t)(colon - where);
    if (where[0] == '[' && hl >= 2 && where[hl - 1] == ']') {
        where++;
        hl -= 2;
    }
    uint64_t port;
    if (acp_parse_u64(colon + 1, 0, 65535, &port)) {
        *err = sentence("cannot listen on '%s': the port: %s", where, acp_error_last()->message);
        return ACP_EINVAL;
    }
    if (hl >= sizeof host) {
        *err = sentence("cannot listen on '%s': the host name is too long", where);
        return ACP_EINVAL;
    }
    memcpy(host, where, hl);
    host[hl] = '\0';
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV},
                    *ai = NULL;
    char ps[8];
    snprintf(ps, sizeof ps, "%u", (unsigned)port);
    int g = getaddrinfo(host, ps, &hints, &ai);
    if (g || !ai) {
        *err = sentence("cannot listen on '%s': %s", host, gai_strerror(g));
        return ACP_EINVAL;
    }
    ep_init(L, ep, false);
    int rc = uv_tcp_bind(&ep->srv.tcp, ai->ai_addr, 0);
    freeaddrinfo(ai);
    if (rc) {
        *err = sentence("cannot listen on %s:%u: %s", host, (unsigned)port, uv_strerror(rc));
        return ACP_EIO;
    }
    ep_port(L, ep);
    return 0;
}

/* A socket handed over already listening (systemd socket activation, net/sdlisten.h): a TCP or
 * Unix stream socket in the listening state. Its file (for a Unix one) is systemd's, not ours
 * to remove. */
static int open_fd(acp_listener *L, endpoint *ep, int fd, const char *name, char **err)
{
    int domain = 0, type = 0, acc = 0;
    socklen_t n1 = sizeof domain, n2 = sizeof type, n3 = sizeof acc;
    if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &n1) ||
        getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &n2) ||
        getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &n3)) {
        *err = sentence("socket %d (%s) from systemd: %s", fd, name, strerror(errno));
        return ACP_EINVAL;
    }
    if (type != SOCK_STREAM || !acc ||
        (domain != AF_UNIX && domain != AF_INET && domain != AF_INET6)) {
        *err = sentence("socket %d (%s) from systemd is not a listening TCP or Unix stream "
                        "socket (ListenStream= with Accept=no)",
                        fd, name);
        return ACP_EINVAL;
    }
    ep_init(L, ep, domain == AF_UNIX);
    int rc = domain == AF_UNIX ? uv_pipe_open(&ep->srv.pipe, fd) : uv_tcp_open(&ep->srv.tcp, fd);
    if (rc) {
        *err = sentence("socket %d (%s) from systemd: %s", fd, name, uv_strerror(rc));
        return ACP_EIO;
    }
    if (domain != AF_UNIX) ep_port(L, ep);
    return 0;
}

static void group_empty(acp_sock_group *g);

static void listener_free(acp_listener *L)
{
    if (L->shttp) acp_shttp_free(L->shttp);
    acp_tls_ctx_free(L->tls);
    free(L->unix_path);
    OPENSSL_cleanse(L->token_hash, sizeof L->token_hash);
    for (size_t i = 0; i < L->norigins; i++) free(L->origins[i]);
    free(L->origins);
    void (*done)(void *) = L->done;
    void *du = L->done_user;
    free(L);
    if (done) done(du);
}

static void maybe_freed(acp_listener *L)
{
    if (!L->closing || L->bound || L->socks.count || L->refusing.count) return;
    free(L->eps);
    listener_free(L);
}

static void group_empty(acp_sock_group *g)
{
    maybe_freed(g->user);
}

static void srv_closed(uv_handle_t *h)
{
    acp_listener *L = ((endpoint *)h->data)->L;
    L->bound--;
    maybe_freed(L);
}

static void close_eps(acp_listener *L)
{
    for (size_t i = 0; i < L->neps; i++)
        if (L->eps[i].inited && !uv_is_closing(&L->eps[i].srv.h))
            uv_close(&L->eps[i].srv.h, srv_closed);
}

int acp_listener_open(uv_loop_t *loop, const acp_listener_opts *o, acp_listener **out, char **err)
{
    *out = NULL;
    *err = NULL;
    if ((!o->where && !o->nfds) || !o->on_link) return ACP_EINVAL;
    if (!!o->tls_cert != !!o->tls_key) {
        *err = sentence("TLS needs both a certificate and a key");
        return ACP_EINVAL;
    }
    acp_listener *L = calloc(1, sizeof *L);
    if (!L) return ACP_ENOMEM;
    L->loop = loop;
    L->lim = acp_net_limits_resolve(&o->limits);
    L->on_link = o->on_link;
    L->on_log = o->on_log;
    L->user = o->user;
    L->socks.on_empty = L->refusing.on_empty = group_empty;
    L->socks.user = L->refusing.user = L;
    L->neps = o->nfds ? o->nfds : 1;
    if (!(L->eps = calloc(L->neps, sizeof *L->eps))) {
        free(L);
        return ACP_ENOMEM;
    }
    if (o->token) {
        L->has_token = true;
        SHA256((const unsigned char *)o->token, strlen(o->token), L->token_hash);
    }
    int rc = 0;
    if (o->norigins && !(L->origins = calloc(o->norigins, sizeof *L->origins))) rc = ACP_ENOMEM;
    for (size_t i = 0; !rc && i < o->norigins; i++, L->norigins++)
        if (!(L->origins[i] = strdup(o->origins[i]))) rc = ACP_ENOMEM;
    if (!rc && o->tls_cert && !(L->tls = acp_tls_ctx_server(o->tls_cert, o->tls_key, true, err)))
        rc = ACP_EINVAL;
    if (!rc && !(L->shttp = acp_shttp_new(loop, &L->lim, o->on_link, o->user))) rc = ACP_ENOMEM;
    for (size_t i = 0; !rc && i < o->nfds; i++)
        rc = open_fd(L, &L->eps[i], o->fds[i], o->fd_names ? o->fd_names[i] : "unnamed", err);
    if (!rc && !o->nfds)
        rc = !strncmp(o->where, "unix:", 5) ? bind_unix(L, L->eps, o->where + 5, err)
                                            : bind_tcp(L, L->eps, o->where, err);
    for (size_t i = 0; !rc && i < L->neps; i++) {
        int lr = uv_listen(&L->eps[i].srv.s, BACKLOG, on_connection);
        if (lr) {
            *err = o->nfds ? sentence("cannot listen on socket %d from systemd: %s", o->fds[i],
                                      uv_strerror(lr))
                           : sentence("cannot listen on %s: %s", o->where, uv_strerror(lr));
            rc = ACP_EIO;
        }
    }
    if (rc) {
        for (size_t i = 0; i < o->nfds; i++) /* ours since the call: those never opened too */
            if (!L->eps[i].inited) close(o->fds[i]);
        free(L->unix_path); /* not ours to remove: the bind failed or never listened */
        L->unix_path = NULL;
        if (L->bound) {
            L->closing = true;
            close_eps(L);
        } else {
            free(L->eps);
            listener_free(L);
        }
        return rc;
    }
    *out = L;
    return 0;
}

int acp_listener_port(const acp_listener *L)
{
    return L->port;
}

void acp_listener_stop(acp_listener *L)
{
    if (L->stopped) return;
    L->stopped = true;
    acp_h2_group_shutdown(&L->h2s);
    close_eps(L);
    if (L->unix_path) unlink(L->unix_path);
}

void acp_listener_close(acp_listener *L, void (*done)(void *user), void *user)
{
    L->done = done;
    L->done_user = user;
    acp_listener_stop(L);
    L->closing = true;
    acp_sock_group_close(&L->socks);
    acp_sock_group_close(&L->refusing);
    maybe_freed(L);
}

int acp_listener_reload(acp_listener *L, const char *token, const char *tls_cert,
                        const char *tls_key, char **err)
{
    *err = NULL;
    acp_tls_ctx *tls = NULL;
    if (tls_cert || tls_key) {
        if (!tls_cert || !tls_key) {
            *err = sentence("TLS needs both a certificate and a key");
            return ACP_EINVAL;
        }
        if (!L->tls) {
            *err = sentence("this listener speaks cleartext: TLS is set when it starts");
            return ACP_EINVAL;
        }
        /* Loaded whole before anything changes: a bad file leaves the old ones serving. */
        if (!(tls = acp_tls_ctx_server(tls_cert, tls_key, true, err))) return ACP_EINVAL;
    }
    if (token) {
        L->has_token = true;
        SHA256((const unsigned char *)token, strlen(token), L->token_hash);
    }
    if (tls) {
        /* Each accepted connection's TLS holds its own reference to the context it was made
         * with (SSL_new): those go on with the old certificate, new ones get this. */
        acp_tls_ctx_free(L->tls);
        L->tls = tls;
    }
    return 0;
}
