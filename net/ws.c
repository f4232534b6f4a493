/* The WebSocket link shared by both roles: wslay (sans-I/O) driven from acp_sock callbacks.
 *
 * Bytes from the socket are handed to wslay_event_recv through recv_cb; every frame wslay
 * produces goes straight into acp_sock_write, so wslay's own queue is empty between calls
 * and what the link holds is what the socket holds. Sends made while wslay_event_recv runs
 * (the owner answering from on_message) wait in wslay's queue until it returns: wslay is not
 * re-entered from its own callback.
 *
 * The end: whoever starts it, the close frames are exchanged (wslay answers a peer's close by
 * itself), and once wslay wants neither to read nor to write the socket is closed; the link's
 * on_close comes from the socket's, so it is reported once, from the loop. */
#include <arpa/inet.h>
#include <ctype.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <stdlib.h>
#include <string.h>

#include "acp/error.h"
#include "net/ws_int.h"

static void flush(acp_ws *w);

int ws_random(void *buf, size_t n)
{
    return uv_random(NULL, NULL, buf, n, 0, NULL) ? ACP_EIO : 0;
}

void ws_accept_key(const char *key, size_t len, char out[29])
{
    unsigned char md[SHA_DIGEST_LENGTH];
    EVP_MD_CTX *m = EVP_MD_CTX_new();
    unsigned int mdlen = 0;
    if (!m || !EVP_DigestInit_ex(m, EVP_sha1(), NULL) || !EVP_DigestUpdate(m, key, len) ||
        !EVP_DigestUpdate(m, WS_GUID, sizeof WS_GUID - 1) || !EVP_DigestFinal_ex(m, md, &mdlen))
        memset(md, 0, sizeof md);
    EVP_MD_CTX_free(m);
    EVP_EncodeBlock((unsigned char *)out, md, SHA_DIGEST_LENGTH);
}

bool ws_has_token(const char *value, const char *token)
{
    size_t tl = strlen(token);
    for (const char *p = value; p && *p;) {
        while (*p == ' ' || *p == '\t' || *p == ',') p++;
        size_t n = strcspn(p, ",");
        size_t m = n;
        while (m && (p[m - 1] == ' ' || p[m - 1] == '\t')) m--;
        if (m == tl && strncasecmp(p, token, tl) == 0) return true;
        p += n;
    }
    return false;
}

/* --- wslay callbacks ----------------------------------------------------------------------- */

static ssize_t recv_cb(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags, void *user)
{
    acp_ws *w = user;
    if (!w->in_len) {
        wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
        return -1;
    }
    size_t k = len < w->in_len ? len : w->in_len;
    memcpy(buf, w->in, k);
    w->in += k;
    w->in_len -= k;
    return (ssize_t)k;
}

static ssize_t send_cb(wslay_event_context_ptr ctx, const uint8_t *data, size_t len, int flags,
                       void *user)
{
    acp_ws *w = user;
    if (!w->sock || w->sock_closing || acp_sock_write(w->sock, data, len) != 0) {
        wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
        return -1;
    }
    return (ssize_t)len;
}

static int genmask_cb(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, void *user)
{
    return ws_random(buf, len) ? -1 : 0;
}

static void set_reason(acp_ws *w, const char *reason)
{
    if (!w->reason) w->reason = reason;
}

/* Starts the closing handshake with our code; the close timer bounds the wait for the
 * peer's answer. */
static void close_with(acp_ws *w, uint16_t code, const char *reason)
{
    if (w->closing || !w->sock) return;
    w->closing = true;
    set_reason(w, reason);
    /* The reason is for the peer's logs; a close frame's payload is at most 125 bytes. */
    size_t n = strlen(reason);
    wslay_event_queue_close(w->ctx, code, (const uint8_t *)reason, n > 123 ? 123 : n);
    ws_deadline(w, w->lim.close_timeout_ms);
    flush(w);
}

static const char *peer_reason(unsigned code)
{
    switch (code) {
    case 1000:
        return "peer closed";
    case 1001:
        return "peer going away";
    case 1002:
        return "peer saw a protocol error";
    case 1008:
        return "peer closed: policy violation";
    case 1009:
        return "peer closed: message too big";
    case 1011:
        return "peer closed: internal error";
    default:
        return "peer closed";
    }
}

static void on_msg(wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg *a,
                   void *user)
{
    acp_ws *w = user;
    switch (a->opcode) {
    case WSLAY_TEXT_FRAME:
        /* After our close, the RFC lets us discard data; the owner asked for the end. */
        if (!w->closing)
            acp_link_deliver(&w->link, a->msg ? (const char *)a->msg : "", a->msg_length);
        break;
    case WSLAY_BINARY_FRAME:
        close_with(w, WSLAY_CODE_UNSUPPORTED_DATA, "binary message (ACP is text)");
        break;
    case WSLAY_PONG:
        w->awaiting_pong = false;
        w->missed = 0;
        break;
    case WSLAY_CONNECTION_CLOSE:
        w->peer_code = a->status_code ? a->status_code : WSLAY_CODE_NO_STATUS_RCVD;
        set_reason(w, peer_reason(w->peer_code));
        break;
    default:
        break;
    }
}

/* Why wslay closed by itself (it queues the close on a bad frame and stops reading). */
static const char *sent_reason(unsigned code)
{
    switch (code) {
    case 1002:
        return "protocol error";
    case 1007:
        return "invalid UTF-8 in a text message";
    case 1009:
        return "message too big";
    default:
        return "closed";
    }
}

static void flush(acp_ws *w)
{
    if (!w->sock || w->sock_closing || w->in_recv || !w->open) return;
    if (wslay_event_send(w->ctx) != 0) {
        ws_fail(w, "write failed");
        return;
    }
    if (wslay_event_get_close_sent(w->ctx))
        set_reason(w, sent_reason(wslay_event_get_status_code_sent(w->ctx)));
    if (wslay_event_want_read(w->ctx) || wslay_event_want_write(w->ctx)) return;
    /* Close frames both ways: the socket's turn to end. */
    if (wslay_event_get_close_received(w->ctx)) {
        w->sock_closing = true;
        acp_sock_close(w->sock);
        return;
    }
    /* wslay closed on a bad frame and stopped reading. Closing the socket now, with the
     * peer's bytes unread, would make the kernel answer with a reset that can destroy our
     * close frame before the peer reads it (a client still uploading an oversized message
     * would see 1006, not 1009). So read on, discarding, until the peer closes its side or
     * the close timeout. */
    if (!w->lingering) {
        w->lingering = true;
        if (w->over) acp_sock_pause(w->sock, false);
        ws_deadline(w, w->lim.close_timeout_ms);
    }
}

static size_t queued(const acp_ws *w)
{
    return (w->sock ? acp_sock_queued(w->sock) : 0) + wslay_event_get_queued_msg_length(w->ctx);
}

/* Over the high water the peer is not keeping up with what we send: stop reading what it
 * sends, which would mostly ask for more output, until it has read half of it. */
static void check_high(acp_ws *w)
{
    if (w->over || w->lingering || !w->sock || queued(w) < w->link.high_water) return;
    w->over = true;
    w->stalled = 0;
    w->stall_mark = queued(w);
    acp_sock_pause(w->sock, true);
}

static void feed(acp_ws *w, const char *p, size_t n)
{
    if (w->lingering) return; /* wslay reads no more: discarded */
    w->in = p;
    w->in_len = n;
    w->in_recv = true;
    int r = wslay_event_recv(w->ctx);
    w->in_recv = false;
    w->in = NULL;
    w->in_len = 0;
    if (r) {
        ws_fail(w, r == WSLAY_ERR_NOMEM ? "out of memory" : "read failed");
        return;
    }
    flush(w);
    check_high(w);
}

/* --- socket callbacks ---------------------------------------------------------------------- */

static void sock_open(acp_sock *s, int status, void *user)
{
    acp_ws *w = user;
    if (!w->server) ws_client_sock_open(w, status);
}

static void sock_read(acp_sock *s, const char *p, size_t n, void *user)
{
    acp_ws *w = user;
    if (w->sock_closing) return;
    if (!w->open)
        ws_client_read(w, p, n);
    else
        feed(w, p, n);
}

static void sock_drain(acp_sock *s, void *user)
{
    acp_ws *w = user;
    if (!w->over || queued(w) >= w->link.high_water / 2) return;
    w->over = false;
    if (!w->sock_closing) acp_sock_pause(w->sock, false);
    acp_link_drained(&w->link);
}

static void timer_closed(uv_handle_t *h)
{
    acp_ws *w = h->data;
    wslay_event_context_free(w->ctx);
    free(w->request);
    free(w->head);
    free(w);
}

static void sock_closed(acp_sock *s, const char *reason, void *user)
{
    acp_ws *w = user;
    w->sock = NULL;
    set_reason(w, reason);
    uv_timer_stop(&w->timer);
    if (!w->server) ws_client_report(w, ACP_EIO, w->reason);
    acp_link_ended(&w->link, w->reason);
    uv_close((uv_handle_t *)&w->timer, timer_closed);
}

const acp_sock_cbs ws_sock_cbs = {sock_open, sock_read, sock_drain, sock_closed};

/* --- timer: pings while open, deadlines otherwise ------------------------------------------ */

static void on_timer(uv_timer_t *t)
{
    acp_ws *w = t->data;
    if (!w->sock || w->sock_closing) return;
    if (w->closing || w->lingering) {
        ws_fail(w, "close timed out");
        return;
    }
    if (!w->open) {
        ws_client_report(w, ACP_ETIMEDOUT, "no WebSocket handshake answer in time");
        ws_fail(w, "handshake timed out");
        return;
    }
    if (w->over) {
        /* Our pings could not get through either: judge the peer by what it reads. */
        size_t q = queued(w);
        if (q >= w->stall_mark && ++w->stalled >= 2) {
            ws_fail(w, "peer stopped reading");
            return;
        }
        if (q < w->stall_mark) w->stalled = 0;
        w->stall_mark = q;
        return;
    }
    if (w->awaiting_pong && ++w->missed >= 2) {
        ws_fail(w, "ping timeout");
        return;
    }
    struct wslay_event_msg ping = {WSLAY_PING, NULL, 0};
    if (wslay_event_queue_msg(w->ctx, &ping) == 0) w->awaiting_pong = true;
    flush(w);
}

void ws_deadline(acp_ws *w, unsigned ms)
{
    uv_timer_start(&w->timer, on_timer, ms, 0);
}

/* --- the link -------------------------------------------------------------------------------- */

static int link_send(acp_link *l, const char *msg, size_t len)
{
    acp_ws *w = (acp_ws *)l;
    if (!w->sock || w->sock_closing || w->closing) return ACP_EIO;
    struct wslay_event_msg m = {WSLAY_TEXT_FRAME, (const uint8_t *)msg, len};
    int r = wslay_event_queue_msg(w->ctx, &m);
    if (r) return r == WSLAY_ERR_NOMEM ? ACP_ENOMEM : ACP_EIO;
    flush(w);
    check_high(w);
    return 0;
}

static size_t link_queued(const acp_link *l)
{
    return queued((const acp_ws *)l);
}

static void link_close(acp_link *l)
{
    acp_ws *w = (acp_ws *)l;
    if (!w->open) {
        ws_client_report(w, ACP_ECANCELLED, "closed before the handshake ended");
        ws_fail(w, "closed");
        return;
    }
    close_with(w, WSLAY_CODE_NORMAL_CLOSURE, "closed");
}

static const acp_link_ops link_ops = {link_send, link_queued, link_close};

acp_ws *ws_new(uv_loop_t *loop, bool server, const acp_net_limits *lim)
{
    acp_ws *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->link.ops = &link_ops;
    w->loop = loop;
    w->server = server;
    w->lim = acp_net_limits_resolve(lim);
    w->link.high_water = w->lim.high_water;
    struct wslay_event_callbacks cbs = {recv_cb, send_cb, genmask_cb, NULL, NULL, NULL, on_msg};
    int r = server ? wslay_event_context_server_init(&w->ctx, &cbs, w)
                   : wslay_event_context_client_init(&w->ctx, &cbs, w);
    if (r) {
        free(w);
        return NULL;
    }
    wslay_event_config_set_max_recv_msg_length(w->ctx, w->lim.max_message);
    uv_timer_init(loop, &w->timer);
    w->timer.data = w;
    return w;
}

void ws_discard(acp_ws *w)
{
    uv_close((uv_handle_t *)&w->timer, timer_closed);
}

void ws_attach(acp_ws *w, acp_sock *s)
{
    w->sock = s;
    size_t hw = acp_sock_high_water(s);
    if (hw) w->link.high_water = hw;
    acp_sock_bind(s, &ws_sock_cbs, w);
}

void ws_start(acp_ws *w, const char *p, size_t n)
{
    w->open = true;
    /* (A close started from on_link or on_open keeps its deadline.) */
    if (!w->closing)
        uv_timer_start(&w->timer, on_timer, w->lim.ping_interval_ms, w->lim.ping_interval_ms);
    /* Sends made before the handshake ended (client) go first. */
    flush(w);
    if (n && w->sock && !w->sock_closing) feed(w, p, n);
}

void ws_fail(acp_ws *w, const char *reason)
{
    set_reason(w, reason);
    if (!w->sock || w->aborted) return;
    w->aborted = w->sock_closing = true;
    acp_sock_abort(w->sock);
}

const char *acp_ws_connection_id(const acp_link *l)
{
    return ((const acp_ws *)l)->conn_id;
}

unsigned acp_ws_close_code(const acp_link *l)
{
    return ((const acp_ws *)l)->peer_code;
}
