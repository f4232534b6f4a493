/* SPDX-License-Identifier: Apache-2.0 */
/* The Streamable HTTP profile: the connection registry, POST/GET/DELETE, and the outbound
 * router that puts each message on its stream. The SDK's server.js, connection.js and
 * protocol.js are the reference; where this differs it says so. */
#include "net/shttp.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "acp/error.h"
#include "acp/json.h"
#include "rpc/scan.h"

/* One outbound message, framed as an SSE event, waiting for its stream's receiver. */
typedef struct frame {
    struct frame *next;
    size_t len;
    char data[];
} frame;

typedef struct shttp_conn shttp_conn;

/* A stream of outbound messages: the connection's, or one session's. */
typedef struct stream {
    struct stream *next; /* in the connection's list of session streams */
    shttp_conn *c;
    char *session; /* NULL for the connection stream */
    frame *head, *tail;
    size_t buffered;  /* bytes of frames waiting */
    acp_http_req *rx; /* the GET that receives it, or NULL */
    acp_buf batch;    /* frames for rx sent this loop turn, written whole by link_flush */
} stream;

/* Where the answer to a request goes: the request's id (its JSON text, so 1 and "1" differ, as
 * in the SDK's messageIdKey) and the session stream it belongs to (NULL: the connection's). */
typedef struct route {
    struct route *next;
    char *key;
    char *session;
    bool if_received; /* the session's stream only if a client is reading it (session/load) */
} route;

/* A POST held while the connection's output is at its high-water mark. */
typedef struct held {
    struct held *next;
    shttp_conn *c;
    acp_http_req *r;
} held;

enum conn_state { C_INIT, C_OPEN, C_CLOSING };

struct shttp_conn {
    acp_link link; /* first: the link is the connection */
    acp_shttp *h;
    shttp_conn *prev, *next;
    shttp_conn *hnext; /* in its registry bucket */
    char id[37];
    uint64_t origin; /* the socket initialize came on (acp_http_req.origin) */
    enum conn_state state;
    acp_http_req *init; /* the initialize POST waiting for the owner's answer */
    char *init_id;      /* its id's JSON text */
    stream cs;          /* the connection stream */
    stream *sessions;
    unsigned unreceived_sessions; /* session streams holding frames with no receiver */
    route *pending;               /* our answers: client request id -> stream */
    route *client_routes;         /* client answers: our request id -> session it needs */
    route *children; /* subagent sessions: child id (JSON text) -> the stream their parent's take */
    held *held_head, *held_tail;
    bool full;  /* queued reached the high-water mark; on_drain owed below half */
    bool ended; /* acp_link_ended was called */
    const char *reason;
    uv_timer_t idle;  /* idle timeout, then the deferred end */
    uv_timer_t stall; /* output stuck at the mark */
    int handles;      /* timers not yet closed */
};

struct acp_shttp {
    uv_loop_t *loop;
    acp_net_limits lim;
    void (*on_link)(acp_link *l, void *user);
    void *user;
    shttp_conn *conns; /* every connection until it is freed, closing ones included */
    size_t live;       /* connections not closing */
    /* The same connections by id, so a request finds its own among thousands at once:
     * chained buckets, doubled when there are more connections than buckets. */
    shttp_conn **buckets;
    size_t nbuckets, nconns;
    unsigned receivers;
    uv_timer_t keepalive;
};

static const acp_link_ops link_ops;

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

/* --- Small answers ------------------------------------------------------------------------ */

static void reply(acp_http_req *r, int status, const char *ctype, const char *body)
{
    acp_http_res_send(r, status, body ? ctype : NULL, body, body ? strlen(body) : 0, NULL, 0);
}

static void text(acp_http_req *r, int status, const char *body)
{
    reply(r, status, "text/plain", body);
}

static void noop_req(acp_http_req *r, void *user)
{
    (void)r, (void)user;
}

/* Stop hearing about an exchange we are about to end or leave to the wire. */
static void unwatch(acp_http_req *r)
{
    static const acp_http_req_cbs none = {noop_req, noop_req};
    acp_http_req_watch(r, &none, NULL);
}

/* --- Routes ------------------------------------------------------------------------------- */

static int route_add(route **list, acp_span key, const char *session)
{
    route *rt = calloc(1, sizeof *rt);
    if (!rt) return ACP_ENOMEM;
    rt->key = memdup0(key.p, key.n);
    rt->session = session ? strdup(session) : NULL;
    if (!rt->key || (session && !rt->session)) {
        free(rt->key), free(rt->session), free(rt);
        return ACP_ENOMEM;
    }
    rt->next = *list;
    *list = rt;
    return 0;
}

/* Unlinks the route for key and returns it (the caller frees it), or NULL. */
static route *route_take(route **list, acp_span key)
{
    for (route **p = list; *p; p = &(*p)->next) {
        route *rt = *p;
        if (strlen(rt->key) == key.n && memcmp(rt->key, key.p, key.n) == 0) {
            *p = rt->next;
            return rt;
        }
    }
    return NULL;
}

static void route_free(route *rt)
{
    if (!rt) return;
    free(rt->key);
    free(rt->session);
    free(rt);
}

static void routes_free(route **list)
{
    while (*list) {
        route *rt = *list;
        *list = rt->next;
        route_free(rt);
    }
}

/* --- Streams ------------------------------------------------------------------------------ */

static void stream_drop_frames(stream *s)
{
    while (s->head) {
        frame *f = s->head;
        s->head = f->next;
        free(f);
    }
    s->tail = NULL;
    s->buffered = 0;
    acp_buf_free(&s->batch);
}

/* One write for the loop turn's frames, not one per event: over HTTP/1.1 every write is a
 * system call (200,000 of them for /stream 200000 before). */
static void stream_flush(stream *s)
{
    if (!s->batch.len) return;
    if (s->rx)
        acp_http_res_write(s->rx, s->batch.data,
                           s->batch.len); /* ACP_EIO: on_abort is on its way */
    s->batch.len = 0;
    acp_buf_shrink(&s->batch, 65536);
}

static size_t conn_queued(const shttp_conn *c)
{
    if (c->state == C_CLOSING) return 0;
    size_t q = c->cs.buffered + c->cs.batch.len + (c->cs.rx ? acp_http_res_queued(c->cs.rx) : 0);
    for (const stream *s = c->sessions; s; s = s->next)
        q += s->buffered + s->batch.len + (s->rx ? acp_http_res_queued(s->rx) : 0);
    return q;
}

static stream *session_find(shttp_conn *c, const char *sid)
{
    for (stream *s = c->sessions; s; s = s->next)
        if (strcmp(s->session, sid) == 0) return s;
    return NULL;
}

static stream *session_new(shttp_conn *c, const char *sid)
{
    stream *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->session = strdup(sid);
    if (!s->session) {
        free(s);
        return NULL;
    }
    s->c = c;
    s->next = c->sessions;
    c->sessions = s;
    return s;
}

static void session_free(shttp_conn *c, stream *s)
{
    for (stream **p = &c->sessions; *p; p = &(*p)->next)
        if (*p == s) {
            *p = s->next;
            break;
        }
    stream_drop_frames(s);
    free(s->session);
    free(s);
}

/* Copies msg framed as one SSE event. JSON may hold line breaks only as whitespace between
 * tokens, and a line break would end the SSE field, so they become spaces. */
static frame *frame_new(const char *msg, size_t len)
{
    frame *f = malloc(sizeof *f + len + 8);
    if (!f) return NULL;
    f->next = NULL;
    memcpy(f->data, "data: ", 6);
    memcpy(f->data + 6, msg, len);
    if (memchr(msg, '\n', len) || memchr(msg, '\r', len))
        for (char *p = f->data + 6; p < f->data + 6 + len; p++)
            if (*p == '\n' || *p == '\r') *p = ' ';
    memcpy(f->data + 6 + len, "\n\n", 2);
    f->len = len + 8;
    return f;
}

static void conn_close(shttp_conn *c, const char *reason);
static void registry_remove(acp_shttp *h, shttp_conn *c);
static void arm_idle(shttp_conn *c);
static void check_drain(shttp_conn *c);

/* Puts a frame on a stream: straight to its receiver, or into the wait queue. */
static void stream_push(stream *s, frame *f)
{
    if (s->rx) {
        if (acp_buf_append(&s->batch, f->data, f->len)) {
            stream_flush(s);
            acp_http_res_write(s->rx, f->data, f->len);
        }
        free(f);
        return;
    }
    if (!s->head && s->session) s->c->unreceived_sessions++;
    if (s->tail)
        s->tail->next = f;
    else
        s->head = f;
    s->tail = f;
    s->buffered += f->len;
}

/* --- The connection's end ----------------------------------------------------------------- */

static void on_timer_closed(uv_handle_t *t)
{
    shttp_conn *c = t->data;
    if (--c->handles == 0) free(c);
}

static void conn_end(shttp_conn *c)
{
    if (c->ended) return;
    c->ended = true;
    acp_link_ended(&c->link, c->reason);
}

/* Runs on the loop after conn_close: on_close, then the connection's memory. */
static void on_deferred_end(uv_timer_t *t)
{
    shttp_conn *c = t->data;
    acp_shttp *h = c->h;
    conn_end(c);
    registry_remove(h, c);
    if (c->prev)
        c->prev->next = c->next;
    else
        h->conns = c->next;
    if (c->next) c->next->prev = c->prev;
    uv_close((uv_handle_t *)&c->idle, on_timer_closed);
    uv_close((uv_handle_t *)&c->stall, on_timer_closed);
}

static void receiver_detach(stream *s)
{
    if (!s->rx) return;
    acp_shttp *h = s->c->h;
    s->batch.len = 0; /* its receiver is gone, as a write to it would have been */
    s->rx = NULL;
    if (--h->receivers == 0) uv_timer_stop(&h->keepalive);
}

/* Everything stops now; the owner hears on_close from the loop. Answers whatever is still
 * waiting as the SDK does for a connection that shut down (404), and ends the open streams after
 * what the wire still holds for them. Frames no receiver took are dropped. */
static void conn_close(shttp_conn *c, const char *reason)
{
    if (c->state == C_CLOSING) return;
    c->state = C_CLOSING;
    c->reason = reason;
    c->h->live--;
    if (c->init) {
        acp_http_req *r = c->init;
        c->init = NULL;
        unwatch(r);
        acp_buf b = {0};
        acp_jw w;
        acp_jw_init(&w, &b);
        acp_jw_obj(&w);
        acp_jw_kstr(&w, "jsonrpc", "2.0");
        acp_jw_key(&w, "id");
        acp_jw_raw(&w, c->init_id, strlen(c->init_id));
        acp_jw_key(&w, "error");
        acp_jw_obj(&w);
        acp_jw_kint(&w, "code", -32603);
        acp_jw_kstr(&w, "message", "Initialize failed");
        acp_jw_kstr(&w, "data", reason);
        acp_jw_obj_end(&w);
        acp_jw_obj_end(&w);
        if (acp_jw_status(&w) == 0)
            acp_http_res_send(r, 500, "application/json", b.data, b.len, NULL, 0);
        else
            text(r, 500, "Initialize failed");
        acp_buf_free(&b);
    }
    while (c->held_head) {
        held *hd = c->held_head;
        c->held_head = hd->next;
        unwatch(hd->r);
        text(hd->r, 404, "Unknown Acp-Connection-Id");
        free(hd);
    }
    c->held_tail = NULL;
    /* The session streams end first: a client (the SDK's) takes the end of the connection
     * stream for the end of everything and drops what comes after on the others. Over HTTP/2
     * the ends go out in this order; over HTTP/1.1 each stream has its own TCP connection. */
    while (c->sessions) {
        stream *s = c->sessions;
        stream_flush(s);
        if (s->rx) {
            acp_http_req *r = s->rx;
            receiver_detach(s);
            unwatch(r);
            acp_http_res_end(r);
        }
        session_free(c, s);
    }
    stream_flush(&c->cs);
    if (c->cs.rx) {
        acp_http_req *r = c->cs.rx;
        receiver_detach(&c->cs);
        unwatch(r);
        acp_http_res_end(r);
    }
    stream_drop_frames(&c->cs);
    c->unreceived_sessions = 0;
    routes_free(&c->pending);
    routes_free(&c->client_routes);
    routes_free(&c->children);
    free(c->init_id);
    c->init_id = NULL;
    uv_timer_stop(&c->stall);
    uv_timer_start(&c->idle, on_deferred_end, 0, 0);
}

/* --- Timers ------------------------------------------------------------------------------- */

static void on_idle(uv_timer_t *t)
{
    conn_close(t->data, "idle timeout");
}

static void on_stall(uv_timer_t *t)
{
    conn_close(t->data, "output stalled");
}

static unsigned receivers_of(const shttp_conn *c)
{
    unsigned n = c->cs.rx != NULL;
    for (const stream *s = c->sessions; s; s = s->next) n += s->rx != NULL;
    return n;
}

/* A connection with no open stream and no request in flight counts down its idle timeout. */
static void arm_idle(shttp_conn *c)
{
    if (c->state != C_OPEN) return;
    if (receivers_of(c) || c->held_head)
        uv_timer_stop(&c->idle);
    else
        uv_timer_start(&c->idle, on_idle, c->h->lim.idle_timeout_ms, 0);
}

static void on_keepalive(uv_timer_t *t)
{
    acp_shttp *h = t->data;
    /* Only to a stream with nothing on its way: a comment behind real output proves nothing. */
    for (shttp_conn *c = h->conns; c; c = c->next) {
        if (c->state != C_OPEN) continue;
        if (c->cs.rx && acp_http_res_queued(c->cs.rx) == 0)
            acp_http_res_write(c->cs.rx, ":\n\n", 3);
        for (stream *s = c->sessions; s; s = s->next)
            if (s->rx && acp_http_res_queued(s->rx) == 0) acp_http_res_write(s->rx, ":\n\n", 3);
    }
}

/* --- Inbound ------------------------------------------------------------------------------ */

static bool span_is(acp_span v, const char *s)
{
    return v.p && acp_json_kind(v) == 's' && acp_json_str_eq(v, s);
}

/* The SDK's methodRequiresSessionHeader. */
static bool session_scoped(acp_span method)
{
    static const char *const names[] = {
        "session/cancel",   "session/close",     "session/delete", "session/fork",
        "session/load",     "session/prompt",    "session/resume", "session/set_config_option",
        "session/set_mode", "session/set_model",
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (span_is(method, names[i])) return true;
    return false;
}

/* params.sessionId when it is a string (malloc'd), else NULL. */
static char *params_session(acp_span obj)
{
    acp_span v;
    if (!obj.p || acp_json_kind(obj) != 'o' || !acp_json_member(obj, "sessionId", &v)) return NULL;
    return acp_json_kind(v) == 's' ? acp_json_strdup(v) : NULL;
}

/* Acp-Session-Id, with an empty one taken as none, as the SDK's server does. */
static const char *session_header(const acp_http_req *r)
{
    const char *v = acp_http_req_header(r, "acp-session-id");
    return v && *v ? v : NULL;
}

static bool is_json_type(const char *ct)
{
    if (!ct) return false;
    while (*ct == ' ' || *ct == '\t') ct++;
    size_t n = strcspn(ct, ";");
    while (n && (ct[n - 1] == ' ' || ct[n - 1] == '\t')) n--;
    return n == 16 && strncasecmp(ct, "application/json", 16) == 0;
}

static size_t id_hash(const char *id)
{
    size_t x = 1469598103934665603u; /* FNV-1a: the ids are random, any spread will do */
    for (; *id; id++) x = (x ^ (unsigned char)*id) * 1099511628211u;
    return x;
}

static shttp_conn *conn_find(acp_shttp *h, const char *id)
{
    if (!id || !h->nbuckets) return NULL;
    for (shttp_conn *c = h->buckets[id_hash(id) & (h->nbuckets - 1)]; c; c = c->hnext)
        if (c->state == C_OPEN && strcmp(c->id, id) == 0) return c;
    return NULL;
}

/* Adds c by its id. When the table cannot grow the chains just get longer. */
static void registry_add(acp_shttp *h, shttp_conn *c)
{
    if (h->nconns + 1 > h->nbuckets) {
        size_t n = h->nbuckets ? h->nbuckets * 2 : 64;
        shttp_conn **b = calloc(n, sizeof *b);
        if (b) {
            for (size_t i = 0; i < h->nbuckets; i++)
                for (shttp_conn *x = h->buckets[i], *next; x; x = next) {
                    next = x->hnext;
                    size_t k = id_hash(x->id) & (n - 1);
                    x->hnext = b[k];
                    b[k] = x;
                }
            free(h->buckets);
            h->buckets = b;
            h->nbuckets = n;
        }
    }
    if (!h->nbuckets) return; /* no table at all: the connection cannot be found, only used */
    size_t k = id_hash(c->id) & (h->nbuckets - 1);
    c->hnext = h->buckets[k];
    h->buckets[k] = c;
    h->nconns++;
}

static void registry_remove(acp_shttp *h, shttp_conn *c)
{
    if (!h->nbuckets) return;
    for (shttp_conn **p = &h->buckets[id_hash(c->id) & (h->nbuckets - 1)]; *p; p = &(*p)->hnext)
        if (*p == c) {
            *p = c->hnext;
            h->nconns--;
            return;
        }
}

/* Hands a validated POST's message to the owner and answers 202. The route of a request's
 * answer is recorded first: a session request's answer goes on its session's stream.
 *
 * session/load differs from the SDK, whose pendingResponseRoute sends its answer on the
 * connection stream while the replay goes on the session's: two streams (two TCP connections
 * over HTTP/1.1) whose order the client cannot know, so its SDK client saw the load answered
 * before the replay arrived. Here the answer follows the replay on the session stream when a
 * client reads that stream (the SDK's client always opens it before it POSTs session/load),
 * and goes on the connection stream otherwise, so a client that reads only that one still
 * gets it. */
static void forward(shttp_conn *c, acp_http_req *r)
{
    size_t n;
    const char *body = acp_http_req_body(r, &n);
    acp_envelope env;
    acp_scan_envelope(body, n, &env);
    if (env.method.p && env.id.p && acp_json_kind(env.method) == 's') {
        const char *hdr = session_header(r);
        char *psid = hdr ? NULL : params_session(env.params);
        const char *sid = hdr ? hdr : psid;
        route_free(route_take(&c->pending, env.id)); /* a reused id: the newest wins */
        int rc = route_add(&c->pending, env.id, sid);
        if (!rc && sid && span_is(env.method, "session/load")) c->pending->if_received = true;
        free(psid);
        if (rc) {
            text(r, 500, "Out of memory");
            return;
        }
    }
    acp_link_deliver(&c->link, body, n);
    text(r, 202, NULL);
}

static void release_held(shttp_conn *c);

static void on_held_abort(acp_http_req *r, void *user)
{
    held *hd = user;
    shttp_conn *c = hd->c;
    held *prev = NULL;
    for (held *p = c->held_head; p; prev = p, p = p->next)
        if (p == hd) {
            if (prev)
                prev->next = hd->next;
            else
                c->held_head = hd->next;
            if (c->held_tail == hd) c->held_tail = prev;
            break;
        }
    free(hd);
    arm_idle(c);
}

/* Requests wait while the output is at the mark (the SDK's waitForOutboundCapacity), so a
 * client that does not read cannot make the agent produce more. They keep their order. */
static void release_held(shttp_conn *c)
{
    while (c->held_head && c->state == C_OPEN && conn_queued(c) < acp_link_high_water(&c->link)) {
        held *hd = c->held_head;
        c->held_head = hd->next;
        if (!c->held_head) c->held_tail = NULL;
        acp_http_req *r = hd->r;
        free(hd);
        unwatch(r);
        forward(c, r);
    }
    arm_idle(c);
}

static void hold(shttp_conn *c, acp_http_req *r)
{
    held *hd = calloc(1, sizeof *hd);
    if (!hd) {
        text(r, 500, "Out of memory");
        return;
    }
    hd->c = c;
    hd->r = r;
    if (c->held_tail)
        c->held_tail->next = hd;
    else
        c->held_head = hd;
    c->held_tail = hd;
    static const acp_http_req_cbs cbs = {noop_req, on_held_abort};
    acp_http_req_watch(r, &cbs, hd);
    arm_idle(c);
}

static void on_init_abort(acp_http_req *r, void *user)
{
    shttp_conn *c = user;
    (void)r;
    c->init = NULL; /* the client gave up: the connection it asked for is dropped */
    conn_close(c, "initialize aborted");
}

/* 0, or non-zero with no entropy: then no id rather than a guessable one. */
static int new_id(char out[37])
{
    unsigned char b[16];
    if (uv_random(NULL, NULL, b, sizeof b, 0, NULL) != 0) return -1;
    b[6] = (b[6] & 0x0f) | 0x40; /* a version 4 UUID, like the SDK's randomUUID() */
    b[8] = (b[8] & 0x3f) | 0x80;
    static const char hex[] = "0123456789abcdef";
    char *o = out;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) *o++ = '-';
        *o++ = hex[b[i] >> 4];
        *o++ = hex[b[i] & 15];
    }
    *o = 0;
    return 0;
}

static void initialize(acp_shttp *h, acp_http_req *r, const acp_envelope *env)
{
    if (acp_json_kind(env->id) == 'z') {
        text(r, 400, "Initialize request must include an ID");
        return;
    }
    size_t here = 0;
    for (shttp_conn *x = h->conns; x && r->origin; x = x->next)
        here += x->state != C_CLOSING && x->origin == r->origin;
    if (h->live >= h->lim.max_connections || here >= SHTTP_MAX_PER_SOCKET) {
        static const acp_http_field retry = {"Retry-After", "1"};
        static const char why[] = "too many ACP connections";
        acp_http_res_send(r, 503, "text/plain", why, sizeof why - 1, &retry, 1);
        return;
    }
    shttp_conn *c = calloc(1, sizeof *c);
    if (!c || !(c->init_id = memdup0(env->id.p, env->id.n))) {
        free(c);
        text(r, 500, "Out of memory");
        return;
    }
    if (new_id(c->id)) {
        free(c->init_id);
        free(c);
        text(r, 500, "No random bytes for a session id");
        return;
    }
    c->link.ops = &link_ops;
    c->link.high_water = h->lim.high_water;
    c->h = h;
    c->origin = r->origin;
    c->cs.c = c;
    uv_timer_init(h->loop, &c->idle);
    uv_timer_init(h->loop, &c->stall);
    c->idle.data = c->stall.data = c;
    c->handles = 2;
    c->next = h->conns;
    if (h->conns) h->conns->prev = c;
    h->conns = c;
    h->live++;
    registry_add(h, c);
    c->init = r;
    static const acp_http_req_cbs cbs = {noop_req, on_init_abort};
    acp_http_req_watch(r, &cbs, c);

    h->on_link(&c->link, h->user);
    if (c->state != C_INIT) return; /* the owner refused it: conn_close answered */
    size_t n;
    const char *body = acp_http_req_body(r, &n);
    acp_link_deliver(&c->link, body, n);
}

/* The connection a request names, or NULL once it was answered as the SDK answers: 400
 * without Acp-Connection-Id, 404 for one that is unknown. */
static shttp_conn *conn_named(acp_shttp *h, acp_http_req *r, const char *cid)
{
    shttp_conn *c = cid ? conn_find(h, cid) : NULL;
    if (!c)
        text(r, cid ? 404 : 400, cid ? "Unknown Acp-Connection-Id" : "Missing Acp-Connection-Id");
    return c;
}

/* The request's Acp-Session-Id (NULL when absent) in *sid; false once a too long one was
 * answered 400. */
static bool session_header_ok(acp_http_req *r, const char **sid)
{
    *sid = session_header(r);
    if (*sid && strlen(*sid) > SHTTP_MAX_ID_LENGTH) {
        text(r, 400, "Session ID exceeds maxIdLength (1024)");
        return false;
    }
    return true;
}

static void on_post(acp_shttp *h, acp_http_req *r)
{
    if (!is_json_type(acp_http_req_header(r, "content-type"))) {
        text(r, 415, "Unsupported Media Type");
        return;
    }
    size_t n;
    const char *body = acp_http_req_body(r, &n);
    acp_envelope env;
    acp_scan_envelope(body ? body : "", body ? n : 0, &env);
    if (env.kind == ACP_ENV_INVALID) {
        text(r, 400, "Invalid JSON");
        return;
    }
    if (env.kind == ACP_ENV_ARRAY) {
        /* ACP has no batches: one -32600 for the whole array, nothing in it processed. */
        reply(r, 400, "application/json",
              "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":"
              "\"JSON-RPC batches are not supported\"}}");
        return;
    }
    /* We differ from the SDK on duplicates: its JSON.parse keeps the last, our agent's parser
     * refuses the message, and a route taken from one copy must not differ from what the agent
     * reads in the other. */
    if (env.kind != ACP_ENV_OBJECT || env.duplicate) {
        text(r, 400, "Invalid JSON-RPC message");
        return;
    }
    /* JSON-RPC ids are strings, numbers or null. Any other id could never be echoed back (the
     * agent answers it with id null), so the route stored for its answer would stay for the
     * connection's life: refused before anything is stored (issue 21). */
    char idk = env.id.p ? acp_json_kind(env.id) : 'z';
    if ((idk != 's' && idk != 'n' && idk != 'z') || env.id.n > SHTTP_MAX_ID_LENGTH + 2) {
        reply(r, 400, "application/json",
              "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":"
              "\"Invalid Request: the id must be a string, a number or null, of at most 1024 "
              "characters\"}}");
        return;
    }
    const char *cid = acp_http_req_header(r, "acp-connection-id");
    if (span_is(env.jsonrpc, "2.0") && env.id.p && span_is(env.method, "initialize")) {
        if (cid)
            text(r, 400, "Initialize not allowed on existing connection");
        else
            initialize(h, r, &env);
        return;
    }
    shttp_conn *c = conn_named(h, r, cid);
    if (!c) return;
    const char *hdr;
    if (!session_header_ok(r, &hdr)) return;
    if (!env.method.p) {
        /* A response to one of our requests: it must name the session the request came on. */
        route *rt = env.id.p ? route_take(&c->client_routes, env.id) : NULL;
        if (rt && rt->session && (!hdr || strcmp(hdr, rt->session) != 0)) {
            text(r, 400, hdr ? "Mismatched Acp-Session-Id" : "Missing Acp-Session-Id");
            route_free(rt);
            return;
        }
        route_free(rt);
        acp_link_deliver(&c->link, body, n);
        text(r, 202, NULL);
        arm_idle(c);
        return;
    }
    char *psid = params_session(env.params);
    int status = 0;
    const char *why = NULL;
    if ((session_scoped(env.method) || psid) && !hdr)
        status = 400, why = "Missing Acp-Session-Id";
    else if (hdr && psid && strcmp(hdr, psid) != 0)
        status = 400, why = "Mismatched Acp-Session-Id";
    else if (psid && strlen(psid) > SHTTP_MAX_ID_LENGTH)
        status = 400, why = "Session ID exceeds maxIdLength (1024)";
    free(psid);
    if (status) {
        text(r, status, why);
        return;
    }
    /* Notifications (a cancel) never wait; requests wait for room, behind earlier ones. */
    if (env.id.p && (c->held_head || conn_queued(c) >= acp_link_high_water(&c->link))) {
        hold(c, r);
        return;
    }
    forward(c, r);
    arm_idle(c);
}

static void on_rx_abort(acp_http_req *r, void *user)
{
    stream *s = user;
    shttp_conn *c = s->c;
    (void)r;
    receiver_detach(s);
    if (s->session && !s->head) session_free(c, s);
    check_drain(c);
    arm_idle(c);
}

static void on_rx_drain(acp_http_req *r, void *user)
{
    stream *s = user;
    shttp_conn *c = s->c;
    (void)r;
    if (c->full) uv_timer_again(&c->stall); /* progress: the client reads */
    check_drain(c);
}

static void on_get(acp_shttp *h, acp_http_req *r)
{
    const char *accept = acp_http_req_header(r, "accept");
    if (!accept || !strcasestr(accept, "text/event-stream")) {
        text(r, 406, "Not Acceptable");
        return;
    }
    const char *cid = acp_http_req_header(r, "acp-connection-id");
    shttp_conn *c = conn_named(h, r, cid);
    if (!c) return;
    const char *sid;
    if (!session_header_ok(r, &sid)) return;
    /* A session stream may open before the connection knows the session: the SDK's client
     * opens it before it POSTs session/load. It only ever carries this connection's output. */
    stream *s = sid ? session_find(c, sid) : &c->cs;
    if (s && s->rx) {
        text(r, 409, "Outbound stream already has an active receiver");
        return;
    }
    if (!s && !(s = session_new(c, sid))) {
        text(r, 500, "Out of memory");
        return;
    }
    static const acp_http_field fields[] = {
        {"Content-Type", "text/event-stream"},
        {"Cache-Control", "no-cache"},
    };
    if (acp_http_res_start(r, 200, fields, 2, ACP_HTTP_STREAMING) != 0) {
        if (s->session && !s->head) session_free(c, s);
        return;
    }
    s->rx = r;
    if (h->receivers++ == 0)
        uv_timer_start(&h->keepalive, on_keepalive, SHTTP_KEEPALIVE_MS, SHTTP_KEEPALIVE_MS);
    static const acp_http_req_cbs cbs = {on_rx_drain, on_rx_abort};
    acp_http_req_watch(r, &cbs, s);
    if (s->head && s->session) c->unreceived_sessions--;
    /* What waited goes out now; the frames move from our queue to the wire's. */
    while (s->head && s->rx) {
        frame *f = s->head;
        s->head = f->next;
        s->buffered -= f->len;
        acp_http_res_write(r, f->data, f->len);
        free(f);
    }
    if (!s->head) s->tail = NULL;
    arm_idle(c);
}

static void on_delete(acp_shttp *h, acp_http_req *r)
{
    const char *cid = acp_http_req_header(r, "acp-connection-id");
    shttp_conn *c = conn_named(h, r, cid);
    if (!c) return;
    conn_close(c, "deleted");
    text(r, 202, NULL);
}

void acp_shttp_handle(acp_shttp *h, acp_http_req *r)
{
    const char *m = acp_http_req_method(r);
    if (strcmp(m, "POST") == 0)
        on_post(h, r);
    else if (strcmp(m, "GET") == 0)
        on_get(h, r);
    else if (strcmp(m, "DELETE") == 0)
        on_delete(h, r);
    else {
        /* RFC 9110 wants Allow with a 405; the SDK sends none. */
        static const acp_http_field allow = {"Allow", "GET, POST, DELETE"};
        acp_http_res_send(r, 405, "text/plain", "Method Not Allowed", 18, &allow, 1);
    }
}

/* --- Outbound: the link ------------------------------------------------------------------- */

static void check_drain(shttp_conn *c)
{
    if (c->state != C_OPEN) return;
    size_t q = conn_queued(c), hw = acp_link_high_water(&c->link);
    if (c->full && q < hw / 2) {
        c->full = false;
        uv_timer_stop(&c->stall);
        release_held(c);
        if (c->state == C_OPEN) acp_link_drained(&c->link);
    } else if (q < hw) {
        release_held(c);
    }
}

/* The owner's answer to initialize is the POST's 200 body. Anything else first is the SDK's
 * "Expected initialize response from agent": the connection fails. */
static int send_init(shttp_conn *c, const char *msg, size_t len, const acp_envelope *env)
{
    bool answer = env->kind == ACP_ENV_OBJECT && !env->method.p && env->id.p &&
                  env->id.n == strlen(c->init_id) && memcmp(env->id.p, c->init_id, env->id.n) == 0;
    if (!answer) {
        conn_close(c, "expected the initialize response first");
        return ACP_EIO;
    }
    acp_http_req *r = c->init;
    c->init = NULL;
    c->state = C_OPEN;
    unwatch(r);
    acp_http_field id = {"Acp-Connection-Id", c->id};
    acp_http_res_send(r, 200, "application/json", msg, len, &id, 1);
    arm_idle(c);
    return 0;
}

/* (unstable) A subagent session's messages take its parent's stream: a client learns of a
 * child from its parent's subagent_update and opens no stream for it (the schema: "child events
 * are delivered automatically on the same connection"), and one stream keeps the announcement
 * ahead of the child's traffic. sid is the message's session (taken); the stream's is returned. */
static char *parent_stream(shttp_conn *c, acp_span params, char *sid)
{
    acp_span v, u, kind, child;
    if (!sid || !acp_json_member(params, "sessionId", &v)) return sid;
    route *rt = route_take(&c->children, v);
    if (rt) {
        char *p = rt->session ? strdup(rt->session) : NULL;
        rt->next = c->children; /* kept, at the front: a child streams in runs */
        c->children = rt;
        if (p) {
            free(sid);
            sid = p;
        }
    }
    if (acp_json_member(params, "update", &u) && acp_json_member(u, "sessionUpdate", &kind) &&
        acp_json_str_eq(kind, "subagent_update") && acp_json_member(u, "sessionId", &child) &&
        acp_json_kind(child) == 's' && !(child.n == v.n && !memcmp(child.p, v.p, v.n))) {
        route_free(route_take(&c->children, child));
        route_add(&c->children, child, sid); /* out of memory: the child's own stream */
    }
    return sid;
}

static int link_send(acp_link *l, const char *msg, size_t len)
{
    shttp_conn *c = (shttp_conn *)l;
    if (c->state == C_CLOSING) return ACP_EIO;
    acp_envelope env;
    acp_scan_envelope(msg, len, &env);
    if (c->state == C_INIT) return send_init(c, msg, len, &env);
    if (env.kind != ACP_ENV_OBJECT) return ACP_EINVAL; /* the owner's bug; not for the wire */

    stream *s = &c->cs;
    char *sid = NULL;
    if (!env.method.p) {
        /* An answer goes where its request asked (the connection stream when unknown). */
        route *rt = env.id.p ? route_take(&c->pending, env.id) : NULL;
        if (rt && rt->session && rt->if_received) {
            stream *ss = session_find(c, rt->session);
            if (!ss || !ss->rx) {
                free(rt->session);
                rt->session = NULL;
            }
        }
        if (rt && rt->session) sid = strdup(rt->session);
        route_free(rt);
    } else {
        sid = parent_stream(c, env.params, params_session(env.params));
        if (env.id.p && route_add(&c->client_routes, env.id, sid)) {
            free(sid);
            return ACP_ENOMEM;
        }
    }
    if (sid) {
        if (strlen(sid) > SHTTP_MAX_ID_LENGTH) {
            free(sid);
            conn_close(c, "session id exceeds maxIdLength");
            return ACP_EIO;
        }
        s = session_find(c, sid);
        if (!s && c->unreceived_sessions >= SHTTP_MAX_BUFFERED_SESSIONS) {
            free(sid);
            conn_close(c, "too many session streams without a receiver");
            return ACP_EIO;
        }
        if (!s) s = session_new(c, sid);
        free(sid);
        if (!s) return ACP_ENOMEM;
    }
    frame *f = frame_new(msg, len);
    if (!f) return ACP_ENOMEM;
    stream_push(s, f);
    if (!c->full && conn_queued(c) >= acp_link_high_water(l)) {
        c->full = true;
        uv_timer_start(&c->stall, on_stall, SHTTP_OUTPUT_STALL_MS, SHTTP_OUTPUT_STALL_MS);
    }
    return 0;
}

static size_t link_queued(const acp_link *l)
{
    return conn_queued((const shttp_conn *)l);
}

static void link_close(acp_link *l)
{
    conn_close((shttp_conn *)l, "closed");
}

static void link_flush(acp_link *l)
{
    shttp_conn *c = (shttp_conn *)l;
    stream_flush(&c->cs);
    for (stream *s = c->sessions; s; s = s->next) stream_flush(s);
}

static const acp_link_ops link_ops = {
    .send = link_send, .queued = link_queued, .close = link_close, .flush = link_flush};

/* --- The profile -------------------------------------------------------------------------- */

acp_shttp *acp_shttp_new(uv_loop_t *loop, const acp_net_limits *lim,
                         void (*on_link)(acp_link *l, void *user), void *user)
{
    acp_shttp *h = calloc(1, sizeof *h);
    if (!h) return NULL;
    h->loop = loop;
    h->lim = acp_net_limits_resolve(lim);
    h->on_link = on_link;
    h->user = user;
    uv_timer_init(loop, &h->keepalive);
    h->keepalive.data = h;
    return h;
}

size_t acp_shttp_connections(const acp_shttp *h)
{
    return h->live;
}

static void on_profile_closed(uv_handle_t *t)
{
    acp_shttp *h = t->data;
    free(h->buckets);
    free(h);
}

void acp_shttp_free(acp_shttp *h)
{
    if (!h) return;
    for (shttp_conn *c = h->conns; c; c = c->next) conn_close(c, "server shutdown");
    while (h->conns) {
        shttp_conn *c = h->conns;
        uv_timer_stop(&c->idle);
        on_deferred_end(&c->idle); /* unlinks c */
    }
    uv_close((uv_handle_t *)&h->keepalive, on_profile_closed);
}
