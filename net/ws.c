/* SPDX-License-Identifier: Apache-2.0 */
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
static void after_write(acp_ws *w);

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

static void on_idle(uv_idle_t *h)
{
}

static void write_out(acp_ws *w)
{
    if (w->out_len && w->sock && !w->sock_closing && acp_sock_write(w->sock, w->out, w->out_len))
        ws_fail(w, "write failed");
    w->out_len = 0;
    /* A huge message's buffer is not kept for the connection's life. */
    if (w->out_cap > (1u << 20)) {
        free(w->out);
        w->out = NULL;
        w->out_cap = 0;
    }
}

static void on_check(uv_check_t *h)
{
    acp_ws *w = h->data;
    uv_idle_stop(&w->idle);
    uv_check_stop(&w->check);
    write_out(w);
    after_write(w);
}

/* Room for n more bytes in `out`, the turn's write scheduled; NULL without memory. */
static uint8_t *out_room(acp_ws *w, size_t n)
{
    if (n > w->out_cap - w->out_len) {
        size_t cap = w->out_cap ? w->out_cap : 4096;
        while (cap - w->out_len < n) cap = cap > SIZE_MAX / 2 ? SIZE_MAX : cap * 2;
        char *o = realloc(w->out, cap);
        if (!o) return NULL;
        w->out = o;
        w->out_cap = cap;
    }
    if (!uv_is_active((uv_handle_t *)&w->check)) {
        uv_idle_start(&w->idle, on_idle);
        uv_check_start(&w->check, on_check);
    }
    uint8_t *p = (uint8_t *)w->out + w->out_len;
    w->out_len += n;
    return p;
}

static ssize_t send_cb(wslay_event_context_ptr ctx, const uint8_t *data, size_t len, int flags,
                       void *user)
{
    acp_ws *w = user;
    uint8_t *p = w->sock && !w->sock_closing ? out_room(w, len) : NULL;
    if (!p) {
        wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
        return -1;
    }
    memcpy(p, data, len);
    return (ssize_t)len;
}

/* One text message as one frame, straight into `out` (wslay would hand us its header and
 * payload separately, after copying the payload into its own queue). A client masks. */
static int frame_text(acp_ws *w, const char *msg, size_t len)
{
    uint8_t h[14];
    size_t k = 0;
    uint8_t mask = w->server ? 0 : 0x80;
    h[k++] = 0x80 | WSLAY_TEXT_FRAME;
    if (len < 126) {
        h[k++] = (uint8_t)(mask | len);
    } else if (len <= 0xffff) {
        h[k++] = mask | 126;
        h[k++] = (uint8_t)(len >> 8);
        h[k++] = (uint8_t)len;
    } else {
        h[k++] = mask | 127;
        for (int i = 7; i >= 0; i--) h[k++] = (uint8_t)((uint64_t)len >> (8 * i));
    }
    uint8_t key[4] = {0};
    if (mask && ws_random(key, 4)) return ACP_EIO;
    if (mask) memcpy(h + k, key, 4), k += 4;
    uint8_t *p = out_room(w, k + len);
    if (!p) return ACP_ENOMEM;
    memcpy(p, h, k);
    if (!mask) {
        memcpy(p + k, msg, len);
    } else {
        for (size_t i = 0; i < len; i++) p[k + i] = (uint8_t)msg[i] ^ key[i & 3];
    }
    return 0;
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
        /* The RFD (docs/rfds/streamable-http-websocket-transport.mdx, "WebSocket"): "All
         * messages are WebSocket text frames containing JSON-RPC. Binary frames are ignored."
         * The official SDK ignores them too, with a warning; one line per connection keeps a
         * peer that sends many from flooding the log. */
        if (!w->told_binary && !w->closing) {
            w->told_binary = true;
            acp_link_log(&w->link, "ignored a binary WebSocket message (ACP messages are text "
                                   "frames); any more on this connection are ignored silently");
        }
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
    /* Close frames both ways: the socket's turn to end (after our close frame). */
    if (wslay_event_get_close_received(w->ctx)) {
        write_out(w);
        if (!w->sock || w->sock_closing) return;
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
    return (w->sock ? acp_sock_queued(w->sock) : 0) + w->out_len +
           wslay_event_get_queued_msg_length(w->ctx);
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

/* RFC 6455 framing errors that wslay 1.1.1 does not answer with the 1002 close 7.4.1 asks for
 * (it drops the connection, or answers a 1-byte close payload with an empty close): a control
 * frame fragmented or over 125 bytes, a close payload of one byte, a 64-bit length with its
 * top bit set, a length not in its shortest form. The heads are followed as the bytes go by;
 * returns how many of p[0..n) come before the first bad frame's head, n when there is none. */
static size_t frames_ok(acp_ws *w, const uint8_t *p, size_t n)
{
    size_t i = 0, start = 0;
    while (i < n) {
        if (w->fskip) {
            size_t k = w->fskip < n - i ? (size_t)w->fskip : n - i;
            w->fskip -= k;
            i += k;
            continue;
        }
        if (w->fhn == 0) start = i;
        w->fhead[w->fhn++] = p[i++];
        if (w->fhn < 2) continue;
        unsigned len7 = w->fhead[1] & 0x7f, op = w->fhead[0] & 0x0f;
        size_t need = 2 + (len7 == 126 ? 2 : len7 == 127 ? 8 : 0) + (w->fhead[1] & 0x80 ? 4 : 0);
        if (w->fhn < need) continue;
        uint64_t len = len7;
        if (len7 >= 126) {
            len = 0;
            for (size_t k = 2; k < (len7 == 126 ? 4u : 10u); k++) len = len << 8 | w->fhead[k];
        }
        bool fin = w->fhead[0] & 0x80;
        w->fhn = 0;
        if (((op & 8) && (!fin || len > 125 || (op == 8 && len == 1))) ||
            (len7 == 126 && len < 126) || (len7 == 127 && (len >> 63 || len <= 0xffff)))
            return start;
        w->fskip = len;
    }
    return n;
}

static void feed(acp_ws *w, const char *p, size_t n)
{
    if (w->lingering) return; /* wslay reads no more: discarded */
    size_t ok = frames_ok(w, (const uint8_t *)p, n);
    w->in = p;
    w->in_len = ok;
    w->in_recv = true;
    int r = ok ? wslay_event_recv(w->ctx) : 0;
    w->in_recv = false;
    w->in = NULL;
    w->in_len = 0;
    if (r == WSLAY_ERR_PROTO || (!r && ok < n && !w->lingering)) {
        /* A bad frame: 1002, and what follows it is never read. */
        wslay_event_shutdown_read(w->ctx);
        if (w->closing)
            flush(w); /* our close is on its way already */
        else
            close_with(w, WSLAY_CODE_PROTOCOL_ERROR, "protocol error");
        return;
    }
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

static void drained(acp_ws *w)
{
    w->over = false;
    if (!w->sock_closing) acp_sock_pause(w->sock, false);
    acp_link_drained(&w->link);
}

/* The link's drain, told by the socket: below half the high water. A queue that went over
 * the mark only while the turn's frames were still ours never filled the socket, which
 * then has to be asked to report its drain. */
static void after_write(acp_ws *w)
{
    if (!w->over || !w->sock || w->sock_closing) return;
    if (queued(w) < w->link.high_water / 2)
        drained(w);
    else
        acp_sock_want_drain(w->sock);
}

static void sock_drain(acp_sock *s, void *user)
{
    after_write(user);
}

static void handle_closed(uv_handle_t *h)
{
    acp_ws *w = h->data;
    if (--w->handles) return;
    wslay_event_context_free(w->ctx);
    free(w->request);
    free(w->head);
    free(w->out);
    free(w);
}

static void close_handles(acp_ws *w)
{
    uv_close((uv_handle_t *)&w->timer, handle_closed);
    uv_close((uv_handle_t *)&w->check, handle_closed);
    uv_close((uv_handle_t *)&w->idle, handle_closed);
}

static void sock_closed(acp_sock *s, const char *reason, void *user)
{
    acp_ws *w = user;
    w->sock = NULL;
    w->out_len = 0;
    set_reason(w, reason);
    if (!w->server) ws_client_report(w, ACP_EIO, w->reason);
    acp_link_ended(&w->link, w->reason);
    close_handles(w);
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
    if (!w->sock || w->sock_closing || w->closing || w->lingering ||
        wslay_event_get_close_received(w->ctx))
        return ACP_EIO;
    int r = 0;
    if (w->open) {
        r = frame_text(w, msg, len);
    } else {
        /* Before the handshake ends (client): wslay keeps it until ws_start. */
        struct wslay_event_msg m = {WSLAY_TEXT_FRAME, (const uint8_t *)msg, len};
        int e = wslay_event_queue_msg(w->ctx, &m);
        r = e == 0 ? 0 : e == WSLAY_ERR_NOMEM ? ACP_ENOMEM : ACP_EIO;
    }
    if (r) return r;
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

static const acp_link_ops link_ops = {
    .send = link_send, .queued = link_queued, .close = link_close};

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
    uv_check_init(loop, &w->check);
    uv_idle_init(loop, &w->idle);
    w->timer.data = w->check.data = w->idle.data = w;
    w->handles = 3;
    return w;
}

void ws_discard(acp_ws *w)
{
    close_handles(w);
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
