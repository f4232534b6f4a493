/* SPDX-License-Identifier: Apache-2.0 */
/* Internal to the WebSocket profile: the link both roles share (net/ws.c) and what the two
 * handshakes (net/ws_accept.c, net/ws_connect.c) need of it. Not for the rest of libacp. */
#ifndef ACP_NET_WS_INT_H
#define ACP_NET_WS_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>
#include <wslay/wslay.h>

#include "net/ws.h"

/* RFC 6455 section 1.3: appended to the client's key before hashing. */
#define WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

typedef struct acp_ws acp_ws;

struct acp_ws {
    acp_link link; /* first: an acp_ws is its link */
    uv_loop_t *loop;
    acp_sock *sock; /* NULL once the socket's on_close came */
    wslay_event_context_ptr ctx;
    acp_net_limits lim;
    uv_timer_t timer; /* pings while open; the handshake and close deadlines otherwise */
    /* Frames wait in `out` for the end of the loop turn and go to the socket in one write:
     * the agent sends a turn's updates as a burst of messages, and one write per message
     * cost a system call each. The check handle writes after the loop's poll; the idle
     * handle, active only while something waits, keeps that poll from blocking first. */
    uv_check_t check;
    uv_idle_t idle;
    int handles; /* open uv handles; freed when the last one closed */
    char *out;
    size_t out_len, out_cap;
    bool server;
    bool open;      /* the handshake is done: frames flow */
    bool in_recv;   /* inside wslay_event_recv: sends wait for it to return */
    const char *in; /* the bytes wslay_event_recv is reading */
    size_t in_len;
    bool closing;      /* we queued a close frame */
    bool sock_closing; /* acp_sock_close/abort called */
    bool aborted;
    bool lingering; /* wslay closed on a bad frame: draining the peer until it closes */
    bool over;      /* queued reached the high water; reading paused until the drain */
    bool awaiting_pong;
    bool told_binary;   /* a binary message was logged: once per connection is enough */
    unsigned missed;    /* pings in a row without a pong */
    unsigned stalled;   /* ping ticks over the high water without the peer reading */
    size_t stall_mark;  /* what was queued at the last such tick */
    unsigned peer_code; /* close code received, 0 before */
    /* The incoming frame heads, followed as the bytes go by (ws.c, frames_ok). */
    uint8_t fhead[14];
    size_t fhn;         /* bytes of the current head seen */
    uint64_t fskip;     /* payload bytes of the current frame still to pass */
    const char *reason; /* the first cause of the end, static */
    char conn_id[64];   /* Acp-Connection-Id */
    /* Client handshake (ws_connect.c). */
    void (*on_open)(acp_link *l, int status, const char *detail, void *user);
    void *open_user;
    acp_cookie_jar *jar;
    char *request; /* the upgrade request, written once the socket is up */
    size_t request_len;
    char accept[32]; /* the Sec-WebSocket-Accept we expect */
    char *head;      /* the response head read so far */
    size_t head_len;
};

/* The socket callbacks of a link (user: the acp_ws). */
extern const acp_sock_cbs ws_sock_cbs;

/* A link in the given role, with its wslay context and timer; no socket yet. NULL without
 * memory. Freed by the profile after the socket's on_close (ws_sock_closed). */
acp_ws *ws_new(uv_loop_t *loop, bool server, const acp_net_limits *lim);
/* Frees a link that never got a socket (a failed start): closes its timer. */
void ws_discard(acp_ws *w);
/* Takes the socket over: our callbacks from now on. */
void ws_attach(acp_ws *w, acp_sock *s);
/* The handshake is done: frames flow, pings start, then `p` (bytes already read past the
 * handshake) is handled as frames. */
void ws_start(acp_ws *w, const char *p, size_t n);
/* Drops the connection at once; `reason` (static) becomes the link's end reason. */
void ws_fail(acp_ws *w, const char *reason);
/* The header timer: fires ws_fail(w, reason) after ms unless ws_start() comes first. */
void ws_deadline(acp_ws *w, unsigned ms);
/* The client's handshake reader (ws_connect.c): bytes that arrive before the link is open. */
void ws_client_read(acp_ws *w, const char *p, size_t n);
/* The client's socket came up (or failed): send the request (ws_connect.c). */
void ws_client_sock_open(acp_ws *w, int status);
/* Tells the client's owner how the handshake ended, once (ws_connect.c). */
void ws_client_report(acp_ws *w, int status, const char *detail);

/* base64 of SHA-1(key + WS_GUID): the Sec-WebSocket-Accept for a key. out: 29 bytes. */
void ws_accept_key(const char *key, size_t len, char out[29]);
/* n random bytes (masks, keys, connection ids). 0 or ACP_EIO. */
int ws_random(void *buf, size_t n);
/* True when the comma-separated header value has the token (case-insensitive). */
bool ws_has_token(const char *value, const char *token);

#endif
