/* SPDX-License-Identifier: Apache-2.0 */
/* The client's side of the WebSocket handshake (RFC 6455 section 4.1): parse the URL, dial,
 * send the upgrade request (bearer token, cookies), and verify the 101. */
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "acp/error.h"
#include "acp/num.h"
#include "net/ws_int.h"

/* A 101 head is small; a server that sends more before its blank line is not one. */
#define MAX_HEAD (16u << 10)

typedef struct url {
    bool tls;
    char host[256];     /* without brackets */
    char host_hdr[300]; /* as the Host header wants it */
    unsigned short port;
    const char *path; /* into the URL; "" means "/" */
} url;

static bool parse_url(const char *s, url *u)
{
    size_t skip;
    if (strncasecmp(s, "ws://", 5) == 0)
        u->tls = false, skip = 5;
    else if (strncasecmp(s, "wss://", 6) == 0)
        u->tls = true, skip = 6;
    else
        return false;
    const char *a = s + skip;
    size_t alen = strcspn(a, "/?#");
    if (!alen || memchr(a, '@', alen)) return false; /* credentials go in the token */
    u->path = a + alen;
    if (*u->path == '#') u->path = "";
    const char *h = a, *port = NULL;
    size_t hlen;
    if (*a == '[') {
        const char *end = memchr(a, ']', alen);
        if (!end) return false;
        h = a + 1;
        hlen = (size_t)(end - h);
        if (end + 1 < a + alen) {
            if (end[1] != ':') return false;
            port = end + 2;
        }
    } else {
        const char *c = memchr(a, ':', alen);
        hlen = c ? (size_t)(c - a) : alen;
        if (c) port = c + 1;
    }
    if (!hlen || hlen >= sizeof u->host) return false;
    memcpy(u->host, h, hlen);
    u->host[hlen] = '\0';
    uint64_t p = u->tls ? 443 : 80;
    if (port) {
        char ps[8];
        size_t plen = (size_t)(a + alen - port);
        if (plen >= sizeof ps) return false;
        memcpy(ps, port, plen);
        ps[plen] = '\0';
        if (acp_parse_u64(ps, 1, 65535, &p)) return false;
    }
    u->port = (unsigned short)p;
    snprintf(u->host_hdr, sizeof u->host_hdr, "%.*s", (int)alen, a);
    return true;
}

static bool clean(const char *v)
{
    return v && !strpbrk(v, "\r\n");
}

/* The request, with `extra` header lines already formatted; NULL without memory. */
static char *build_request(const url *u, const char *key, const acp_ws_connect_opts *o, size_t *len)
{
    char *cookie = o->cookies ? acp_cookie_jar_header(o->cookies) : NULL;
    char *buf = NULL;
    size_t cap = 0;
    FILE *f = open_memstream(&buf, &cap);
    if (!f) {
        free(cookie);
        return NULL;
    }
    const char *path = *u->path ? u->path : "/";
    fprintf(f,
            "GET %s%s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n",
            *path == '?' ? "/" : "", path, u->host_hdr, key);
    if (o->token) fprintf(f, "Authorization: Bearer %s\r\n", o->token);
    if (cookie) fprintf(f, "Cookie: %s\r\n", cookie);
    for (size_t i = 0; i < o->nheaders; i++)
        fprintf(f, "%s: %s\r\n", o->headers[i].name, o->headers[i].value);
    fputs("\r\n", f);
    free(cookie);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    *len = cap;
    return buf;
}

void ws_client_report(acp_ws *w, int status, const char *detail)
{
    void (*cb)(acp_link *, int, const char *, void *) = w->on_open;
    if (!cb) return;
    w->on_open = NULL;
    cb(&w->link, status, detail, w->open_user);
}

static void forget_request(acp_ws *w)
{
    /* It may carry the bearer token: not left behind in freed memory. */
    if (w->request) explicit_bzero(w->request, w->request_len);
    free(w->request);
    w->request = NULL;
}

void ws_client_sock_open(acp_ws *w, int status)
{
    if (status) {
        char d[128];
        snprintf(d, sizeof d, "could not connect: %s", acp_strerror(status));
        ws_client_report(w, ACP_EIO, d);
        forget_request(w);
        return; /* the socket's on_close follows */
    }
    int r = acp_sock_write(w->sock, w->request, w->request_len);
    forget_request(w);
    if (r) ws_fail(w, "write failed");
}

static void fail_handshake(acp_ws *w, int status, const char *detail)
{
    ws_client_report(w, status, detail);
    ws_fail(w, "WebSocket handshake failed");
}

/* The value of a header line "name: value" when it is `name`, else NULL. Trims the value. */
static const char *field(char *line, const char *name)
{
    size_t n = strlen(name);
    if (strncasecmp(line, name, n) != 0 || line[n] != ':') return NULL;
    char *v = line + n + 1;
    while (*v == ' ' || *v == '\t') v++;
    size_t k = strlen(v);
    while (k && (v[k - 1] == ' ' || v[k - 1] == '\t')) v[--k] = '\0';
    return v;
}

static void handle_head(acp_ws *w, char *head, const char *rest, size_t nrest)
{
    char *save = NULL, *line = strtok_r(head, "\r\n", &save);
    int status = 0;
    char reason[64] = "";
    if (!line || sscanf(line, "HTTP/1.%*1[01] %3d %63[^\r\n]", &status, reason) < 1) {
        fail_handshake(w, ACP_EPROTO, "the server's answer is not HTTP");
        return;
    }
    if (status != 101) {
        char d[128];
        snprintf(d, sizeof d, "HTTP %d %s", status, reason);
        w->link.refused = status == 401 || status == 403;
        fail_handshake(w, status == 401 || status == 403 ? ACP_EACCES : ACP_EPROTO, d);
        return;
    }
    bool upgrade = false, connection = false, accepted = false;
    while ((line = strtok_r(NULL, "\r\n", &save))) {
        const char *v;
        if ((v = field(line, "upgrade")))
            upgrade = ws_has_token(v, "websocket");
        else if ((v = field(line, "connection")))
            connection = ws_has_token(v, "upgrade");
        else if ((v = field(line, "sec-websocket-accept")))
            accepted = strcmp(v, w->accept) == 0;
        else if ((v = field(line, "acp-connection-id")))
            snprintf(w->conn_id, sizeof w->conn_id, "%s", v);
        else if ((v = field(line, "set-cookie")) && w->jar)
            acp_cookie_jar_store(w->jar, v);
    }
    if (!upgrade || !connection || !accepted) {
        fail_handshake(w, ACP_EPROTO, "the server's 101 is not a valid WebSocket upgrade");
        return;
    }
    w->open = true;
    ws_client_report(w, 0, "connected");
    ws_start(w, rest, nrest);
}

void ws_client_read(acp_ws *w, const char *p, size_t n)
{
    size_t old = w->head_len;
    size_t take = n < MAX_HEAD + 4 - old ? n : MAX_HEAD + 4 - old;
    char *h = realloc(w->head, old + take + 1);
    if (!h) {
        fail_handshake(w, ACP_ENOMEM, "out of memory");
        return;
    }
    w->head = h;
    memcpy(h + old, p, take);
    w->head_len += take;
    h[w->head_len] = '\0';
    /* The blank line may straddle reads: look from 3 bytes before the new ones. */
    char *end = strstr(h + (old > 3 ? old - 3 : 0), "\r\n\r\n");
    if (!end) {
        if (w->head_len >= MAX_HEAD)
            fail_handshake(w, ACP_EPROTO, "the server's answer head is too long");
        return;
    }
    size_t head_end = (size_t)(end - h) + 4;
    /* Frames may follow the head in the same read: what is past it, in the buffer and in p. */
    size_t past = w->head_len - head_end + (n - take);
    char *rest = malloc(past ? past : 1);
    if (!rest) {
        fail_handshake(w, ACP_ENOMEM, "out of memory");
        return;
    }
    memcpy(rest, h + head_end, w->head_len - head_end);
    memcpy(rest + (w->head_len - head_end), p + take, n - take);
    *end = '\0';
    w->head = NULL;
    w->head_len = 0;
    handle_head(w, h, rest, past);
    free(h);
    free(rest);
}

int acp_ws_connect(uv_loop_t *loop, const acp_ws_connect_opts *o,
                   void (*on_open)(acp_link *l, int status, const char *detail, void *user),
                   void *user, acp_link **out)
{
    url u;
    if (!o || !o->url || !parse_url(o->url, &u) || !on_open) return ACP_EINVAL;
    if (o->token && !clean(o->token)) return ACP_EINVAL;
    for (size_t i = 0; i < o->nheaders; i++)
        if (!clean(o->headers[i].name) || !clean(o->headers[i].value) ||
            strchr(o->headers[i].name, ':'))
            return ACP_EINVAL;

    unsigned char raw[16];
    char key[25];
    if (ws_random(raw, sizeof raw)) return ACP_EIO;
    EVP_EncodeBlock((unsigned char *)key, raw, sizeof raw);

    acp_ws *w = ws_new(loop, false, o->lim);
    if (!w) return ACP_ENOMEM;
    w->on_open = on_open;
    w->open_user = user;
    w->jar = o->cookies;
    ws_accept_key(key, strlen(key), w->accept);
    w->request = build_request(&u, key, o, &w->request_len);
    if (!w->request) {
        ws_discard(w);
        return ACP_ENOMEM;
    }
    static const char *const alpn[] = {"http/1.1", NULL};
    acp_sock_connect_opts so = {.host = o->unix_path ? NULL : u.host,
                                .port = u.port,
                                .unix_path = o->unix_path,
                                .tls = u.tls,
                                .ca_file = o->ca_file,
                                .alpn = u.tls ? alpn : NULL};
    acp_sock *s;
    int r = acp_sock_connect(loop, &so, &ws_sock_cbs, w, &s);
    if (r) {
        forget_request(w);
        ws_discard(w);
        return r;
    }
    ws_attach(w, s);
    ws_deadline(w, w->lim.header_timeout_ms);
    *out = &w->link;
    return 0;
}
