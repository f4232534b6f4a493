/* SPDX-License-Identifier: Apache-2.0 */
/* The HTTP/2 wire: nghttp2's server session fed from an acp_sock, each request stream an
 * acp_http_req. nghttp2 is sans-I/O like rpc/: bytes in with mem_recv, frames out with
 * mem_send, which we write to the socket while it is under its high-water mark. */
#include "net/h2.h"

#include <nghttp2/nghttp2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "acp/error.h"
#include "acp/json.h"
#include "acp/num.h"
#include "net/sock_server.h"

typedef struct h2_stream {
    acp_http_req req; /* first: the exchange */
    acp_h2 *h;
    struct h2_stream *prev, *next;
    int32_t id;
    char *method, *path, *authority;
    acp_http_field *fields; /* names and values malloc'd */
    size_t nfields, cap;
    size_t head_bytes;
    acp_buf body;
    acp_buf out; /* response body bytes nghttp2 has not taken yet, from off */
    size_t off;
    size_t mark; /* on_drain is owed when the queue falls to half of this (0: none owed) */
    bool head_done, refused, delivered, started, ended, aborted, drain_due;
} h2_stream;

struct acp_h2 {
    acp_h2 *prev, *next; /* in the group */
    acp_h2_group *g;
    acp_sock *s;
    nghttp2_session *ng;
    const acp_net_limits *lim;
    const acp_wire_cbs *cbs;
    void *user;
    h2_stream *streams;
    int depth; /* inside nghttp2: frames go out after it returns */
    bool closing, goaway;
};

static const acp_http_req_ops req_ops;

/* n bytes as a C string. Not strndup: the bytes need not be NUL-terminated, and strndup may
 * read past n looking for one (ASan's strict_string_checks says so). */
static char *memdup0(const void *p, size_t n)
{
    char *s = malloc(n + 1);
    if (s) {
        memcpy(s, p, n);
        s[n] = 0;
    }
    return s;
}

/* --- Output ------------------------------------------------------------------------------- */

static size_t out_queued(const h2_stream *st)
{
    return st->out.len - st->off;
}

/* on_drain for the streams whose queue halved from its mark. A callback may end streams
 * (nghttp2 frees them), so the walk restarts after each. */
static void report_drains(acp_h2 *h)
{
    for (;;) {
        h2_stream *st = h->streams;
        while (st && !st->drain_due) st = st->next;
        if (!st) return;
        st->drain_due = false;
        if (!st->aborted && !st->ended && st->req.cbs.on_drain)
            st->req.cbs.on_drain(&st->req, st->req.user);
    }
}

static void flush(acp_h2 *h)
{
    if (h->depth || h->closing) return;
    h->depth++;
    while (acp_sock_queued(h->s) < acp_sock_high_water(h->s)) {
        const uint8_t *p;
        ssize_t n = nghttp2_session_mem_send(h->ng, &p);
        if (n <= 0 || acp_sock_write(h->s, p, (size_t)n) != 0) break;
    }
    h->depth--;
    if (!nghttp2_session_want_read(h->ng) && !nghttp2_session_want_write(h->ng)) {
        h->closing = true; /* GOAWAY done, or a protocol error: nothing more to say */
        acp_sock_close(h->s);
        return;
    }
    report_drains(h);
}

static ssize_t read_body(nghttp2_session *ng, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
                         nghttp2_data_source *src, void *user)
{
    h2_stream *st = src->ptr;
    size_t avail = out_queued(st);
    if (avail == 0) {
        if (!st->ended) return NGHTTP2_ERR_DEFERRED;
        *flags |= NGHTTP2_DATA_FLAG_EOF;
        return 0;
    }
    size_t k = avail < len ? avail : len;
    memcpy(buf, st->out.data + st->off, k);
    st->off += k;
    if (st->off == st->out.len) {
        st->off = st->out.len = 0;
        acp_buf_shrink(&st->out, ACP_BUF_KEEP); /* one huge event does not stay */
    } else if (st->off > ((size_t)1 << 20) && st->off > st->out.len / 2) {
        memmove(st->out.data, st->out.data + st->off, st->out.len - st->off);
        st->out.len -= st->off;
        st->off = 0;
    }
    if (st->ended && out_queued(st) == 0) *flags |= NGHTTP2_DATA_FLAG_EOF;
    /* on_drain each time the queue halves, down to empty, not once: the profile resumes at
     * its own threshold (half its high-water mark, summed over a connection's streams), which
     * a single report at half the peak misses whenever the peak overshot the mark. Such a
     * stream then waited for the next keep-alive comment to report again (issue 11). */
    if (st->mark && out_queued(st) <= st->mark / 2) {
        st->mark = out_queued(st);
        st->drain_due = true;
    }
    return (ssize_t)k;
}

/* Header fields HTTP/2 forbids (RFC 9113 8.2.2): HTTP/1.1's connection management. */
static bool connection_specific(const char *name)
{
    static const char *const names[] = {"connection", "keep-alive", "proxy-connection",
                                        "transfer-encoding", "upgrade"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strcasecmp(name, names[i]) == 0) return true;
    return false;
}

static int res_start(acp_http_req *r, int status, const acp_http_field *f, size_t n,
                     size_t body_len)
{
    h2_stream *st = (h2_stream *)r;
    if (st->aborted || st->h->closing) return ACP_EIO;
    if (st->started) return ACP_EINVAL;
    st->started = true;
    nghttp2_nv *nv = calloc(n + 2, sizeof *nv);
    char **names = calloc(n + 1, sizeof *names);
    if (!nv || !names) {
        free(nv), free(names);
        return ACP_ENOMEM;
    }
    char sbuf[8], lbuf[24];
    snprintf(sbuf, sizeof sbuf, "%03d", status);
    size_t k = 0;
    nv[k++] = (nghttp2_nv){(uint8_t *)":status", (uint8_t *)sbuf, 7, strlen(sbuf), 0};
    for (size_t i = 0; i < n; i++) {
        if (connection_specific(f[i].name)) continue;
        /* HTTP/2 field names are lower case; ours are given as written. */
        char *lc = names[i] = strdup(f[i].name);
        if (!lc) continue;
        for (char *p = lc; *p; p++)
            if (*p >= 'A' && *p <= 'Z') *p += 'a' - 'A';
        nv[k++] =
            (nghttp2_nv){(uint8_t *)lc, (uint8_t *)f[i].value, strlen(lc), strlen(f[i].value), 0};
    }
    if (body_len != ACP_HTTP_STREAMING) {
        snprintf(lbuf, sizeof lbuf, "%zu", body_len);
        nv[k++] = (nghttp2_nv){(uint8_t *)"content-length", (uint8_t *)lbuf, 14, strlen(lbuf), 0};
    }
    nghttp2_data_provider dp = {.source.ptr = st, .read_callback = read_body};
    if (body_len == 0) st->ended = true;
    int rv = nghttp2_submit_response(st->h->ng, st->id, nv, k, body_len == 0 ? NULL : &dp);
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    free(nv);
    if (rv != 0) return ACP_EIO;
    flush(st->h);
    return 0;
}

static int res_write(acp_http_req *r, const void *p, size_t n)
{
    h2_stream *st = (h2_stream *)r;
    if (st->aborted || st->h->closing || !st->started || st->ended) return ACP_EIO;
    if (acp_buf_append(&st->out, p, n)) return ACP_ENOMEM;
    if (out_queued(st) > st->mark) st->mark = out_queued(st);
    nghttp2_session_resume_data(st->h->ng, st->id);
    flush(st->h);
    return 0;
}

static void res_end(acp_http_req *r)
{
    h2_stream *st = (h2_stream *)r;
    if (st->ended) return;
    st->ended = true;
    if (st->aborted || st->h->closing) return;
    nghttp2_session_resume_data(st->h->ng, st->id);
    flush(st->h);
}

static size_t res_queued(const acp_http_req *r)
{
    return out_queued((const h2_stream *)r);
}

static const acp_http_req_ops req_ops = {res_start, res_write, res_end, res_queued};

/* --- Streams ------------------------------------------------------------------------------ */

static void stream_free(acp_h2 *h, h2_stream *st)
{
    acp_sock_idle_hold(h->s, false);
    if (st->prev)
        st->prev->next = st->next;
    else
        h->streams = st->next;
    if (st->next) st->next->prev = st->prev;
    for (size_t i = 0; i < st->nfields; i++) {
        free((char *)st->fields[i].name);
        free((char *)st->fields[i].value);
    }
    free(st->fields);
    free(st->method);
    free(st->path);
    free(st->authority);
    acp_buf_free(&st->body);
    acp_buf_free(&st->out);
    free(st);
}

/* The client went away from a request the router has: it hears it, then the stream goes. */
static void stream_abort(acp_h2 *h, h2_stream *st)
{
    st->aborted = true;
    if (st->delivered && !st->ended && st->req.cbs.on_abort)
        st->req.cbs.on_abort(&st->req, st->req.user);
    stream_free(h, st);
}

static int add_field(h2_stream *st, const uint8_t *name, size_t nlen, const uint8_t *value,
                     size_t vlen)
{
    /* A repeated field joins the first, as RFC 9113 8.2.3 (cookies) and RFC 9110 5.3 allow. */
    for (size_t i = 0; i < st->nfields; i++) {
        if (strlen(st->fields[i].name) != nlen || memcmp(st->fields[i].name, name, nlen) != 0)
            continue;
        const char *sep = nlen == 6 && memcmp(name, "cookie", 6) == 0 ? "; " : ", ";
        size_t old = strlen(st->fields[i].value);
        char *v = realloc((char *)st->fields[i].value, old + 2 + vlen + 1);
        if (!v) return -1;
        memcpy(v + old, sep, 2);
        memcpy(v + old + 2, value, vlen);
        v[old + 2 + vlen] = 0;
        st->fields[i].value = v;
        return 0;
    }
    if (st->nfields == st->cap) {
        size_t cap = st->cap ? st->cap * 2 : 8;
        acp_http_field *f = realloc(st->fields, cap * sizeof *f);
        if (!f) return -1;
        st->fields = f;
        st->cap = cap;
    }
    char *n = memdup0((const char *)name, nlen), *v = memdup0((const char *)value, vlen);
    if (!n || !v) {
        free(n), free(v);
        return -1;
    }
    st->fields[st->nfields++] = (acp_http_field){n, v};
    return 0;
}

static void reply_now(h2_stream *st, int status, const char *text)
{
    acp_http_res_send(&st->req, status, "text/plain", text, strlen(text), NULL, 0);
}

/* The head is complete: the request side of the exchange is filled (no more fields come; a
 * trailer section is not read). */
static void head_done(h2_stream *st)
{
    st->head_done = true;
    if (st->authority && !acp_http_req_header(&st->req, "host"))
        add_field(st, (const uint8_t *)"host", 4, (const uint8_t *)st->authority,
                  strlen(st->authority));
    st->req.method = st->method ? st->method : "";
    st->req.path = st->path ? st->path : "";
    st->req.headers = st->fields;
    st->req.nheaders = st->nfields;
    st->req.body = "";
}

static void deliver(acp_h2 *h, h2_stream *st)
{
    st->delivered = true;
    st->req.body = acp_buf_cstr(&st->body) ? st->body.data : "";
    st->req.body_len = st->body.len;
    h->cbs->on_request(&st->req, NULL, NULL, 0, h->user);
}

/* --- nghttp2 callbacks -------------------------------------------------------------------- */

static int on_begin_headers(nghttp2_session *ng, const nghttp2_frame *fr, void *user)
{
    acp_h2 *h = user;
    if (fr->hd.type != NGHTTP2_HEADERS || fr->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    h2_stream *st = calloc(1, sizeof *st);
    if (!st) return NGHTTP2_ERR_CALLBACK_FAILURE;
    st->h = h;
    st->id = fr->hd.stream_id;
    st->req.ops = &req_ops;
    st->req.h2 = true;
    st->next = h->streams;
    if (h->streams) h->streams->prev = st;
    h->streams = st;
    acp_sock_idle_hold(h->s, true); /* an open stream is not idleness */
    nghttp2_session_set_stream_user_data(ng, st->id, st);
    return 0;
}

static int on_header(nghttp2_session *ng, const nghttp2_frame *fr, const uint8_t *name, size_t nlen,
                     const uint8_t *value, size_t vlen, uint8_t flags, void *user)
{
    h2_stream *st = nghttp2_session_get_stream_user_data(ng, fr->hd.stream_id);
    if (!st || st->head_done) return 0; /* trailers are not read */
    st->head_bytes += nlen + vlen + 32; /* RFC 9113's accounting for header list size */
    if (st->head_bytes > H2_MAX_HEAD) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    char **pseudo = NULL;
    if (nlen == 7 && memcmp(name, ":method", 7) == 0) pseudo = &st->method;
    if (nlen == 5 && memcmp(name, ":path", 5) == 0) pseudo = &st->path;
    if (nlen == 10 && memcmp(name, ":authority", 10) == 0) pseudo = &st->authority;
    if (pseudo) {
        free(*pseudo);
        *pseudo = memdup0((const char *)value, vlen);
        return *pseudo ? 0 : NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }
    if (nlen && name[0] == ':') return 0; /* :scheme, :protocol */
    return add_field(st, name, nlen, value, vlen) ? NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE : 0;
}

/* Bodies past max_message get 413 at once; the rest of the body is read and dropped (nghttp2
 * resets the stream once the response is out, RFC 9113 8.1). */
static void refuse_large(h2_stream *st)
{
    st->refused = true;
    acp_buf_free(&st->body);
    reply_now(st, 413, "Payload Too Large");
}

static int on_data(nghttp2_session *ng, uint8_t flags, int32_t id, const uint8_t *data, size_t len,
                   void *user)
{
    acp_h2 *h = user;
    h2_stream *st = nghttp2_session_get_stream_user_data(ng, id);
    if (!st || st->refused || st->delivered) return 0;
    if (st->body.len + len > h->lim->max_message) {
        refuse_large(st);
        return 0;
    }
    return acp_buf_append(&st->body, data, len) ? NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE : 0;
}

static int on_frame(nghttp2_session *ng, const nghttp2_frame *fr, void *user)
{
    acp_h2 *h = user;
    if (fr->hd.type != NGHTTP2_HEADERS && fr->hd.type != NGHTTP2_DATA) return 0;
    h2_stream *st = nghttp2_session_get_stream_user_data(ng, fr->hd.stream_id);
    if (!st || st->refused || st->delivered) return 0;
    if (fr->hd.type == NGHTTP2_HEADERS && !st->head_done) {
        head_done(st);
        /* The router may answer from the head alone (401, first: a client without credentials
         * learns nothing else): the body is then never read. */
        if (h->cbs->on_head && !h->cbs->on_head(&st->req, h->user)) {
            st->refused = true;
            return 0;
        }
        /* nghttp2 checks the field's syntax already (its HTTP messaging is on); read it the
         * checked way all the same, so a value it let through can never wrap into a small one. */
        const char *cl = acp_http_req_header(&st->req, "content-length");
        uint64_t len = 0;
        if (cl && acp_parse_u64(cl, 0, UINT64_MAX, &len)) {
            st->refused = true;
            acp_buf_free(&st->body);
            reply_now(st, 400, "malformed Content-Length");
            return 0;
        }
        if (cl && len > h->lim->max_message) {
            refuse_large(st);
            return 0;
        }
    }
    if (fr->hd.flags & NGHTTP2_FLAG_END_STREAM) deliver(h, st);
    return 0;
}

static int on_stream_close(nghttp2_session *ng, int32_t id, uint32_t code, void *user)
{
    h2_stream *st = nghttp2_session_get_stream_user_data(ng, id);
    if (st) stream_abort(user, st);
    return 0;
}

/* --- The socket --------------------------------------------------------------------------- */

static void on_sock_read(acp_sock *s, const char *p, size_t n, void *user)
{
    acp_h2 *h = user;
    if (h->closing) return;
    h->depth++;
    ssize_t rv = nghttp2_session_mem_recv(h->ng, (const uint8_t *)p, n);
    h->depth--;
    if (rv < 0) {
        /* Bad bytes: nghttp2 has queued its GOAWAY; it goes out, then the socket closes. */
        nghttp2_session_terminate_session(h->ng, NGHTTP2_PROTOCOL_ERROR);
    }
    flush(h);
}

static void on_sock_drain(acp_sock *s, void *user)
{
    flush(user);
}

static void on_sock_close(acp_sock *s, const char *reason, void *user)
{
    acp_h2 *h = user;
    h->closing = true;
    while (h->streams) stream_abort(h, h->streams);
    nghttp2_session_del(h->ng);
    if (h->g) {
        if (h->prev)
            h->prev->next = h->next;
        else
            h->g->head = h->next;
        if (h->next) h->next->prev = h->prev;
        h->g->count--;
    }
    free(h);
}

int acp_h2_serve(acp_sock *s, const char *data, size_t n, const acp_net_limits *lim,
                 const acp_wire_cbs *cbs, void *user, acp_h2_group *g)
{
    acp_h2 *h = calloc(1, sizeof *h);
    nghttp2_session_callbacks *cb = NULL;
    if (!h || nghttp2_session_callbacks_new(&cb) != 0) {
        free(h);
        acp_sock_abort(s);
        return ACP_ENOMEM;
    }
    nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
    int rv = nghttp2_session_server_new(&h->ng, cb, h);
    nghttp2_session_callbacks_del(cb);
    if (rv != 0) {
        free(h);
        acp_sock_abort(s);
        return ACP_ENOMEM;
    }
    h->s = s;
    h->lim = lim;
    h->cbs = cbs;
    h->user = user;
    if ((h->g = g)) {
        h->next = g->head;
        if (g->head) g->head->prev = h;
        g->head = h;
        g->count++;
    }
    nghttp2_settings_entry iv[] = {
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, H2_MAX_STREAMS},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, H2_MAX_HEAD},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20}, /* fewer round trips for a big POST */
    };
    nghttp2_submit_settings(h->ng, NGHTTP2_FLAG_NONE, iv, sizeof iv / sizeof *iv);
    static const acp_sock_cbs scb = {NULL, on_sock_read, on_sock_drain, on_sock_close};
    acp_sock_bind(s, &scb, h);
    if (n)
        on_sock_read(s, data, n, h);
    else
        flush(h);
    return 0;
}

void acp_h2_group_shutdown(acp_h2_group *g)
{
    for (acp_h2 *h = g->head, *next; h; h = next) {
        next = h->next; /* a socket may close inside flush; its on_close comes from the loop */
        if (h->goaway || h->closing) continue;
        h->goaway = true;
        nghttp2_submit_goaway(h->ng, NGHTTP2_FLAG_NONE,
                              nghttp2_session_get_last_proc_stream_id(h->ng), NGHTTP2_NO_ERROR,
                              NULL, 0);
        flush(h);
    }
}
