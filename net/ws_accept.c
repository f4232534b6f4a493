/* SPDX-License-Identifier: Apache-2.0 */
/* The server's side of the WebSocket handshake (RFC 6455 section 4.2): validate the upgrade
 * request, answer 101, and hand the socket to a new link. */
#include <stdio.h>
#include <string.h>

#include "acp/error.h"
#include "net/ws_int.h"

static int refuse(acp_http_req *r, int status, const char *why)
{
    static const acp_http_field version = {"Sec-WebSocket-Version", "13"};
    acp_http_res_send(r, status, "text/plain", why, strlen(why), status == 426 ? &version : NULL,
                      status == 426 ? 1 : 0);
    return ACP_EPROTO;
}

/* A client key is 16 random bytes in base64: 22 characters and "==" (what the ws package's
 * server checks too). */
static bool valid_key(const char *k)
{
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    if (!k || strlen(k) != 24 || strcmp(k + 22, "==") != 0) return false;
    for (int i = 0; i < 22; i++)
        if (!strchr(b64, k[i])) return false;
    return true;
}

/* A version 4 UUID, as the official SDK's crypto.randomUUID() connection ids: 122 random
 * bits, so an id cannot be guessed to reach another client's connection. */
static int new_connection_id(char out[37])
{
    unsigned char b[16];
    if (ws_random(b, sizeof b)) return ACP_EIO;
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
             b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
    return 0;
}

int acp_ws_accept(acp_sock *s, acp_http_req *upgrade, const char *leftover, size_t n,
                  const acp_net_limits *lim, void (*on_link)(acp_link *l, void *user), void *user)
{
    const char *key = acp_http_req_header(upgrade, "sec-websocket-key");
    const char *version = acp_http_req_header(upgrade, "sec-websocket-version");
    /* An HTTP/2 stream has no socket of its own to take over (RFC 8441 is not spoken). */
    if (!s || acp_http_req_is_h2(upgrade))
        return refuse(upgrade, 400, "a WebSocket upgrade needs HTTP/1.1\n");
    if (strcmp(acp_http_req_method(upgrade), "GET") != 0)
        return refuse(upgrade, 400, "a WebSocket upgrade is a GET\n");
    if (!ws_has_token(acp_http_req_header(upgrade, "upgrade"), "websocket") ||
        !ws_has_token(acp_http_req_header(upgrade, "connection"), "upgrade"))
        return refuse(upgrade, 400, "missing Upgrade: websocket / Connection: Upgrade\n");
    if (!version || strcmp(version, "13") != 0)
        return refuse(upgrade, 426, "unsupported Sec-WebSocket-Version (13 is)\n");
    if (!valid_key(key)) return refuse(upgrade, 400, "missing or malformed Sec-WebSocket-Key\n");

    char id[37];
    if (new_connection_id(id)) return refuse(upgrade, 500, "no randomness for a connection id\n");
    acp_ws *w = ws_new(acp_sock_loop(s), true, lim);
    if (!w) return refuse(upgrade, 503, "out of memory\n");
    memcpy(w->conn_id, id, sizeof id);

    char accept[29], head[256];
    ws_accept_key(key, strlen(key), accept);
    int len = snprintf(head, sizeof head,
                       "HTTP/1.1 101 Switching Protocols\r\n"
                       "Upgrade: websocket\r\n"
                       "Connection: Upgrade\r\n"
                       "Sec-WebSocket-Accept: %s\r\n"
                       "Acp-Connection-Id: %s\r\n\r\n",
                       accept, id);
    ws_attach(w, s);
    /* From here the socket is the link's: a failure ends the link, not the exchange. */
    if (acp_sock_write(s, head, (size_t)len) != 0) {
        ws_fail(w, "write failed");
        return 0;
    }
    w->open = true;
    on_link(&w->link, user);
    ws_start(w, leftover, n);
    return 0;
}
