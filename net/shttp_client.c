/* SPDX-License-Identifier: Apache-2.0 */
#include "net/shttp_client.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>

#include "acp/error.h"
#include "acp/json.h"
#include "acp/http.h"
#include "mcp/http_easy.h"
#include "net/cookie.h"
#include "mcp/libcurl_lazy.h"
#include "acp/sse.h"

#define DEFAULT_MAX    (64u << 20)
#define DEFAULT_CLOSE  5000
#define FAIL_DELETE_MS 2000 /* the DELETE after a failure: best effort, kept short */
#define MAX_ERROR_BODY 8192 /* error bodies are diagnostics, as in the SDK */
#define MAX_ID         1024 /* the longest connection or session id we put in a header */
#define JSON_DEPTH     128
#define MAX_STREAMS    1024 /* streams opened because an answer named a session */
/* A load's answer that overtook its replay waits until the session's stream has been quiet
 * this long, and never longer than HOLD_MAX_MS in all (see the header). */
#define HOLD_QUIET_MS 100
#define HOLD_MAX_MS   5000

typedef struct shc shc;

/* A message of the owner's waiting to be posted, or one of the server's held back. */
typedef struct msg {
    struct msg *next;
    size_t n;
    char text[];
} msg;

/* An event stream: the connection's (sid NULL) or a session's. */
typedef struct stream {
    shc *t;
    struct stream *next;
    char *sid;
    acp_http *h;
    acp_sse sse;
    bool checked; /* the response's status and type were looked at */
    bool open;    /* 200 text/event-stream: messages about the session may be posted */
    bool refused; /* 409: the session is failed until session/load or session/resume */
    char why[600];
    acp_buf err;
} stream;

/* A request id whose answer is owed for a session: ours (posted, the server answers on the
 * session's stream) or the server's (came on the session's stream, we answer with its id). */
typedef struct route {
    struct route *next;
    bool ours, reattach;
    char *sid;
    size_t idn;
    char id[];
} route;

/* What the POST in flight carries, read once from its message. */
typedef struct post_info {
    char *sid;
    char *id; /* the id's JSON text; NULL for a notification */
    bool request, init;
} post_info;

struct shc {
    acp_link link; /* first: the profile's link */
    uv_loop_t *loop;
    acp_http_client *curl;
    char *url, *auth, *ca_file, *conn_id;
    acp_cookie_jar *jar, *own_jar; /* own_jar: the one made here when the owner gave none */
    bool tls, h2c;
    size_t max;
    unsigned close_ms;
    msg *q, **q_tail;
    size_t queued;
    acp_http *post;
    post_info pi;
    acp_buf post_err;
    bool init_sent;
    stream *streams;
    size_t nstreams;
    route *routes;
    msg *held, **held_tail; /* the connection stream's messages from a reattach answer on */
    char *held_sid;
    uint64_t held_since;
    acp_http *del;
    uv_timer_t kick, deadline;
    uv_timer_t quiet; /* releases the held messages once the session's stream went quiet */
    int handles;
    bool full; /* queued reached the high-water mark: on_drain is owed */
    bool closing, failing, deleting, finishing, ended;
    char reason[600];
};

static void pump(shc *t);
static void fail(shc *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static stream *open_stream(shc *t, const char *sid);

/* --- small helpers -------------------------------------------------------------------- */

static char *dupn(const char *p, size_t n)
{
    char *s = malloc(n + 1);
    if (s) {
        memcpy(s, p, n);
        s[n] = 0;
    }
    return s;
}

/* A server's text said back to a person: printable ASCII, cut short. */
static void tame(char *dst, size_t cap, const char *src, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n && k + 4 < cap; i++) {
        unsigned char ch = (unsigned char)src[i];
        dst[k++] = ch >= 0x20 && ch < 0x7f ? (char)ch : ' ';
    }
    if (n && k + 4 >= cap) memcpy(dst + k, "...", 3), k += 3;
    dst[k] = 0;
}

/* Ids go into header lines: visible ASCII only, so a hostile id cannot add a header. */
static bool header_safe(const char *s)
{
    size_t n = strlen(s);
    if (!n || n > MAX_ID) return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f) return false;
    return true;
}

static char *str_member(acp_span obj, const char *key)
{
    acp_span v;
    if (!acp_json_member(obj, key, &v) || acp_json_kind(v) != 's') return NULL;
    return acp_json_strdup(v);
}

static stream *find_stream(shc *t, const char *sid)
{
    for (stream *st = t->streams; st; st = st->next)
        if (sid ? st->sid && !strcmp(st->sid, sid) : !st->sid) return st;
    return NULL;
}

static route *take_route(shc *t, const char *id, size_t n, bool ours)
{
    for (route **p = &t->routes; *p; p = &(*p)->next)
        if ((*p)->ours == ours && (*p)->idn == n && !memcmp((*p)->id, id, n)) {
            route *r = *p;
            *p = r->next;
            return r;
        }
    return NULL;
}

static void route_free(route *r)
{
    if (r) free(r->sid);
    free(r);
}

static void add_route(shc *t, const char *id, size_t n, const char *sid, bool ours, bool reattach)
{
    route *r = calloc(1, sizeof *r + n + 1);
    if (!r || !(r->sid = strdup(sid))) {
        free(r);
        return; /* the answer still comes; only a failure could not be reported for it */
    }
    memcpy(r->id, id, n);
    r->idn = n;
    r->ours = ours;
    r->reattach = reattach;
    r->next = t->routes;
    t->routes = r;
}

static void kick(shc *t);

/* --- to the owner --------------------------------------------------------------------- */

static void deliver(shc *t, const char *p, size_t n)
{
    if (!t->closing && !t->failing) acp_link_deliver(&t->link, p, n);
}

/* The SDK's answer for a request that cannot be carried: -32603 with {status, body}. */
static void answer_error(shc *t, const char *id, const char *message, long status, const char *body,
                         size_t bodyn)
{
    json_t *idv = json_loads(id, JSON_DECODE_ANY, NULL);
    json_t *err = json_pack("{s:i, s:s}", "code", -32603, "message", message);
    if (status && err) {
        json_t *b = json_stringn(body ? body : "", bodyn);
        if (!b) { /* not UTF-8: said in ASCII */
            char tmp[MAX_ERROR_BODY + 8];
            tame(tmp, sizeof tmp, body, bodyn);
            b = json_string(tmp);
        }
        json_object_set_new(err, "data", json_pack("{s:i, s:o}", "status", (int)status, "body", b));
    }
    json_t *m =
        idv && err ? json_pack("{s:s, s:O, s:O}", "jsonrpc", "2.0", "id", idv, "error", err) : NULL;
    char *text = m ? json_dumps(m, JSON_COMPACT) : NULL;
    if (text) deliver(t, text, strlen(text));
    free(text);
    json_decref(m);
    json_decref(err);
    json_decref(idv);
}

/* Our requests about sid that no answer can reach any more. */
static void fail_session_requests(shc *t, const char *sid, const char *why)
{
    for (route **p = &t->routes; *p;) {
        route *r = *p;
        if (r->ours && !strcmp(r->sid, sid)) {
            *p = r->next;
            answer_error(t, r->id, why, 0, NULL, 0);
            route_free(r);
        } else {
            p = &r->next;
        }
    }
}

/* --- the hold-back of reattach answers -------------------------------------------------- */

static void release_held(shc *t)
{
    uv_timer_stop(&t->quiet);
    free(t->held_sid);
    t->held_sid = NULL;
    while (t->held) {
        msg *m = t->held;
        t->held = m->next;
        deliver(t, m->text, m->n);
        free(m);
    }
    t->held_tail = &t->held;
}

static void on_quiet(uv_timer_t *tm)
{
    release_held(tm->data);
}

/* The held session's stream brought more: the replay is still coming. */
static void held_stream_read(shc *t, stream *st)
{
    if (t->held && t->held_sid && st->sid && !strcmp(st->sid, t->held_sid) &&
        uv_now(t->loop) - t->held_since < HOLD_MAX_MS)
        uv_timer_start(&t->quiet, on_quiet, HOLD_QUIET_MS, 0);
}

static void hold(shc *t, const char *sid, const char *p, size_t n)
{
    msg *m = malloc(sizeof *m + n);
    if (!m) {
        deliver(t, p, n);
        return;
    }
    memcpy(m->text, p, n);
    m->n = n;
    m->next = NULL;
    if (!t->held) {
        t->held_sid = sid ? strdup(sid) : NULL;
        t->held_since = uv_now(t->loop);
        uv_timer_start(&t->quiet, on_quiet, HOLD_QUIET_MS, 0);
    }
    *t->held_tail = m;
    t->held_tail = &m->next;
}

/* --- from the server ------------------------------------------------------------------ */

/* One message from stream st (st NULL: the initialize answer), as one line for the owner:
 * line breaks between tokens (several data: lines) become spaces, which valid JSON allows and
 * the owner's NDJSON needs; invalid text goes on as it is, for the owner to reject. */
static void from_server(shc *t, stream *st, const char *data, size_t n)
{
    char *p = dupn(data, n);
    if (!p) {
        fail(t, "out of memory");
        return;
    }
    for (size_t i = 0; i < n; i++)
        if (p[i] == '\n' || p[i] == '\r') p[i] = ' ';
    acp_span v = {p, n}, id, method, result;
    bool ok = !acp_json_validate(p, n, JSON_DEPTH) && acp_json_kind(v) == 'o';
    bool has_id = ok && acp_json_member(v, "id", &id);
    bool has_method = ok && acp_json_member(v, "method", &method);
    if (has_id && !has_method) {
        route *r = take_route(t, id.p, id.n, true);
        bool reattach = r && r->reattach;
        char *sid = NULL;
        if (acp_json_member(v, "result", &result) && acp_json_kind(result) == 'o' &&
            (sid = str_member(result, "sessionId")) && header_safe(sid) && !find_stream(t, sid) &&
            t->nstreams < MAX_STREAMS) /* a server cannot make us open streams without end */
            open_stream(t, sid);       /* its updates may follow at once */
        free(sid);
        if (st && !st->sid && (reattach || t->held)) {
            hold(t, t->held ? t->held_sid : r->sid, p, n);
            route_free(r);
            free(p);
            return;
        }
        route_free(r);
    } else if (has_id && st && st->sid) {
        add_route(t, id.p, id.n, st->sid, false, false); /* a request: our answer goes there */
    }
    if (st && !st->sid && t->held)
        hold(t, t->held_sid, p, n); /* the connection stream's order is kept */
    else
        deliver(t, p, n);
    free(p);
}

static int on_event(void *user, const char *event, const char *data, size_t n)
{
    stream *st = user;
    shc *t = st->t;
    if (n && !strcmp(event, "message")) from_server(t, st, data, n);
    return t->failing || t->deleting ? 1 : 0;
}

/* --- cookies ---------------------------------------------------------------------------- */

static void take_cookies(shc *t, acp_http *h)
{
    struct curl_header *hd;
    for (size_t i = 0;
         curl_easy_header(acp_http_easy(h), "Set-Cookie", i, CURLH_HEADER, -1, &hd) == CURLHE_OK;
         i++) {
        bool ok = true; /* a cookie goes back in a header line: visible ASCII and spaces */
        for (const char *q = hd->value; *q && ok; q++)
            ok = (unsigned char)*q >= 0x20 && (unsigned char)*q < 0x7f;
        if (ok) acp_cookie_jar_store(t->jar, hd->value);
        if (hd->amount <= i + 1) break;
    }
}

/* --- requests ------------------------------------------------------------------------- */

static acp_http *start(shc *t, const char *method, const char *accept, const char *sid,
                       const char *body, size_t n, const acp_http_cbs *cbs, void *user)
{
    char *lines[9] = {0};
    size_t k = 0;
    bool ok = true;
#define LINE(...) (ok = ok && asprintf(&lines[k++], __VA_ARGS__) >= 0)
    if (accept) LINE("Accept: %s", accept);
    if (body) LINE("Content-Type: application/json");
    if (t->conn_id) LINE("Acp-Connection-Id: %s", t->conn_id);
    if (sid) LINE("Acp-Session-Id: %s", sid);
    if (t->auth) LINE("%s", t->auth);
    char *cookies = acp_cookie_jar_header(t->jar);
    if (cookies) LINE("Cookie: %s", cookies);
    free(cookies);
    LINE("Expect:"); /* no 100-continue round trip before a large body */
#undef LINE
    acp_http *h = NULL;
    if (ok)
        h = acp_http_start(t->curl, method, t->url, (const char *const *)lines, body, n, cbs, user);
    for (size_t i = 0; i < k; i++) {
        if (lines[i]) explicit_bzero(lines[i], strlen(lines[i])); /* one holds the token */
        free(lines[i]);
    }
    if (!h) return NULL;
    CURL *e = acp_http_easy(h);
    /* Over TLS h2 is offered by ALPN and the server chooses; cleartext h2 needs prior
     * knowledge that the server speaks it, which only the owner has. */
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION,
                     t->h2c   ? (long)CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE
                     : t->tls ? (long)CURL_HTTP_VERSION_2TLS
                              : (long)CURL_HTTP_VERSION_1_1);
    /* libcurl 7.88 reads HTTP/2 from the socket 32 KiB at a time; with its default 16 KiB
     * buffer a busy stream paused nghttp2 in every other read, and the bytes behind the pause
     * waited for a wake-up that curl does not schedule (mcp/curl_uv.c's read_again). A buffer
     * over the read keeps a connection of one stream (h2c here) off that path. */
    if (t->h2c || t->tls) curl_easy_setopt(e, CURLOPT_BUFFERSIZE, 65536L);
    if (t->ca_file) curl_easy_setopt(e, CURLOPT_CAINFO, t->ca_file);
    /* libcurl 7.88 (Debian 12) fails every request after the first on a reused h2c
     * prior-knowledge connection (CURLE_HTTP2 before sending; the curl tool too, against
     * Node's http2 server as against ours): curl's bug, curl/curl#10634, fixed in 8.0 by
     * curl/curl#10643. Each exchange gets a connection of its own there. */
    if (t->h2c) {
        curl_easy_setopt(e, CURLOPT_FRESH_CONNECT, 1L);
        curl_easy_setopt(e, CURLOPT_FORBID_REUSE, 1L);
    }
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, NULL); /* an event stream is not buffered */
    return h;
}

static void stream_free(stream *st)
{
    if (st->h) acp_http_abort(st->h);
    acp_sse_free(&st->sse);
    acp_buf_free(&st->err);
    free(st->sid);
    free(st);
}

static void unlink_stream(shc *t, stream *st)
{
    for (stream **p = &t->streams; *p; p = &(*p)->next)
        if (*p == st) {
            *p = st->next;
            t->nstreams--;
            return;
        }
}

static void stream_checked(stream *st, acp_http *h)
{
    if (st->checked) return;
    st->checked = true;
    shc *t = st->t;
    take_cookies(t, h);
    const char *ct = acp_http_content_type(h);
    st->open = acp_http_status(h) == 200 && ct && !strncasecmp(ct, "text/event-stream", 17);
    if (st->open) kick(t); /* messages waiting for this stream may go */
}

static int stream_data(acp_http *h, const char *p, size_t n, void *user)
{
    stream *st = user;
    shc *t = st->t;
    stream_checked(st, h);
    held_stream_read(t, st);
    if (!st->open) /* an error's body, for the message */
        return st->err.len < MAX_ERROR_BODY
                   ? acp_buf_append(&st->err, p, n < MAX_ERROR_BODY ? n : MAX_ERROR_BODY)
                   : 0;
    int rc = acp_sse_feed(&st->sse, p, n);
    if (rc == ACP_ETOOBIG)
        fail(t, "the server sent a message over %zu bytes on %s event stream", t->max,
             st->sid ? "a session's" : "the connection's");
    else if (rc && !t->failing && !t->deleting)
        fail(t, "out of memory reading the server's events");
    return t->failing || t->deleting || rc ? 1 : 0;
}

/* What a failed exchange says: curl's own words, else its code. */
static const char *curl_why(acp_http *h, int result, char *buf, size_t cap)
{
    const char *err = acp_http_error(h);
    if (err && *err) return err;
    snprintf(buf, cap, "%s (curl error %d)",
             result == CURLE_HTTP2 || result == CURLE_HTTP2_STREAM ? "HTTP/2 framing error"
                                                                   : "network error",
             result);
    return buf;
}

static void stream_done(acp_http *h, int result, long status, void *user)
{
    stream *st = user;
    shc *t = st->t;
    stream_checked(st, h);
    st->h = NULL;
    char body[256];
    tame(body, sizeof body, st->err.data, st->err.len);
    char why[300];
    if (t->failing || t->deleting) return;
    if (result && st->open) {
        fail(t, "the connection to %s broke: %s", t->url, curl_why(h, result, why, sizeof why));
        return;
    }
    if (result) {
        fail(t, "cannot open an event stream at %s: %s", t->url,
             curl_why(h, result, why, sizeof why));
        return;
    }
    if (!st->open && status == 409 && st->sid) {
        /* The session has another receiver or must be reattached: only it fails. */
        snprintf(st->why, sizeof st->why,
                 "the server refused the session's event stream (HTTP 409%s%s)",
                 body[0] ? ": " : "", body);
        st->refused = true;
        acp_buf_free(&st->err);
        fail_session_requests(t, st->sid, st->why);
        kick(t);
        return;
    }
    if (!st->open) {
        fail(t, "the server refused the %s event stream: HTTP %ld%s%s",
             st->sid ? "session's" : "connection's", status, body[0] ? ": " : "", body);
        return;
    }
    if (!st->sid) {
        fail(t, "the server closed the connection's event stream");
        return;
    }
    /* A session's stream ended: what it owed cannot come; the next message reopens it. */
    unlink_stream(t, st);
    fail_session_requests(t, st->sid, "the session's event stream closed");
    if (t->held_sid && !strcmp(t->held_sid, st->sid)) release_held(t);
    stream_free(st);
    kick(t);
}

static const acp_http_cbs stream_cbs = {
    .struct_size = sizeof(acp_http_cbs), .on_data = stream_data, .on_done = stream_done};

/* The end of a response's head: a stream is known to be open before its first event (an SSE
 * response may send no byte for a long time), so the messages that wait for it may go. */
static size_t stream_header(char *p, size_t size, size_t n, void *user)
{
    stream *st = user;
    long status = st->h ? acp_http_status(st->h) : 0;
    if (st->h && n * size <= 2 && (p[0] == '\r' || p[0] == '\n') && status >= 200)
        stream_checked(st, st->h);
    return n * size;
}

static stream *open_stream(shc *t, const char *sid)
{
    stream *st = calloc(1, sizeof *st);
    if (!st || (sid && !(st->sid = strdup(sid)))) {
        free(st);
        fail(t, "out of memory");
        return NULL;
    }
    st->t = t;
    acp_sse_init(&st->sse, on_event, st);
    st->sse.max = t->max;
    st->next = t->streams;
    t->streams = st;
    t->nstreams++;
    if (!(st->h = start(t, "GET", "text/event-stream", sid, NULL, 0, &stream_cbs, st))) {
        fail(t, "cannot start an HTTP request");
        return NULL;
    }
    curl_easy_setopt(acp_http_easy(st->h), CURLOPT_HEADERFUNCTION, stream_header);
    curl_easy_setopt(acp_http_easy(st->h), CURLOPT_HEADERDATA, st);
    return st;
}

/* --- posting ---------------------------------------------------------------------------- */

static void post_info_free(post_info *pi)
{
    free(pi->sid);
    free(pi->id);
    *pi = (post_info){0};
}

static void pop(shc *t)
{
    msg *m = t->q;
    t->q = m->next;
    if (!t->q) t->q_tail = &t->q;
    t->queued -= m->n;
    free(m);
    if (t->full && t->queued < acp_link_high_water(&t->link) / 2) {
        t->full = false;
        acp_link_drained(&t->link);
    }
}

static int post_data(acp_http *h, const char *p, size_t n, void *user)
{
    shc *t = user;
    long status = acp_http_status(h);
    if (t->pi.init && status >= 200 && status < 300) {
        if (t->post_err.len + n > t->max) {
            fail(t, "the server's answer to initialize is over %zu bytes", t->max);
            return 1;
        }
        return acp_buf_append(&t->post_err, p, n) ? 1 : 0;
    }
    if (t->post_err.len < MAX_ERROR_BODY)
        acp_buf_append(&t->post_err, p, n < MAX_ERROR_BODY ? n : MAX_ERROR_BODY);
    return 0; /* a 202's body, if any, is read and dropped */
}

static void init_done(shc *t, acp_http *h, long status, const char *init_id)
{
    char body[256];
    tame(body, sizeof body, t->post_err.data, t->post_err.len);
    if (status == 401 || status == 403) {
        t->link.refused = true;
        fail(t,
             "the agent at %s refused our credentials: HTTP %ld%s%s (the bearer token is "
             "missing or wrong)",
             t->url, status, body[0] ? ": " : "", body);
        return;
    }
    if (status != 200) {
        fail(t, "the server refused initialize: HTTP %ld%s%s", status, body[0] ? ": " : "", body);
        return;
    }
    const char *cid = acp_http_header(h, "Acp-Connection-Id");
    if (!cid) {
        fail(t, "the server's answer to initialize has no Acp-Connection-Id");
        return;
    }
    if (!header_safe(cid)) {
        fail(t,
             "the server's Acp-Connection-Id is not a header-safe token of 1 to %d "
             "characters",
             MAX_ID);
        return;
    }
    acp_span v = {t->post_err.data, t->post_err.len}, id;
    if (!v.n || acp_json_validate(v.p, v.n, JSON_DEPTH) || acp_json_kind(v) != 'o' ||
        !acp_json_member(v, "id", &id) || id.n != strlen(init_id) || memcmp(id.p, init_id, id.n)) {
        fail(t, "the server's answer to initialize is not the JSON-RPC response to it");
        return;
    }
    if (!(t->conn_id = strdup(cid))) {
        fail(t, "out of memory");
        return;
    }
    pop(t);
    from_server(t, NULL, v.p, v.n);
    if (!t->failing && !t->closing) open_stream(t, NULL);
}

static void post_done(acp_http *h, int result, long status, void *user)
{
    shc *t = user;
    t->post = NULL;
    if (t->failing || t->deleting) return;
    take_cookies(t, h);
    post_info pi = t->pi;
    t->pi = (post_info){0};
    char why[300];
    char body[256];
    tame(body, sizeof body, t->post_err.data, t->post_err.len);
    if (result) {
        fail(t, "cannot reach the agent at %s: %s", t->url, curl_why(h, result, why, sizeof why));
    } else if (pi.init) {
        init_done(t, h, status, pi.id);
    } else if (status >= 200 && status < 300) {
        pop(t);
    } else if (status == 401 || status == 403) {
        t->link.refused = true;
        fail(t,
             "the agent at %s refused our credentials: HTTP %ld%s%s (the bearer token is "
             "missing or wrong)",
             t->url, status, body[0] ? ": " : "", body);
    } else if (status == 404 || status == 410) {
        fail(t, "the agent at %s no longer knows this connection: HTTP %ld%s%s", t->url, status,
             body[0] ? ": " : "", body);
    } else if (pi.request || (status == 409 && pi.sid)) {
        char msgtext[600];
        snprintf(msgtext, sizeof msgtext, "ACP POST failed: HTTP %ld%s%s", status,
                 body[0] ? ": " : "", body);
        route *r = pi.id ? take_route(t, pi.id, strlen(pi.id), true) : NULL;
        bool pending = !pi.sid || r; /* an answer or a stream end may have settled it */
        route_free(r);
        if (status == 409 && pi.sid) {
            stream *st = find_stream(t, pi.sid);
            if (!st) st = open_stream(t, pi.sid); /* only to carry the refusal */
            if (st) {
                if (st->h) acp_http_abort(st->h);
                st->h = NULL;
                st->open = false;
                st->refused = true;
                snprintf(st->why, sizeof st->why, "%s", msgtext);
                fail_session_requests(t, pi.sid, msgtext);
            }
        }
        if (pi.request && pending && !t->failing)
            answer_error(t, pi.id, msgtext, status, t->post_err.data, t->post_err.len);
        pop(t);
    } else {
        fail(t, "the agent at %s refused a message: HTTP %ld%s%s", t->url, status,
             body[0] ? ": " : "", body);
    }
    post_info_free(&pi);
    acp_buf_free(&t->post_err);
    kick(t);
}

static const acp_http_cbs post_cbs = {
    .struct_size = sizeof(acp_http_cbs), .on_data = post_data, .on_done = post_done};

static bool method_is(acp_span method, const char *name)
{
    return acp_json_kind(method) == 's' && acp_json_str_eq(method, name);
}

static void go_delete(shc *t);

/* Posts the next message when nothing else is in flight and what it needs is there. */
static void pump(shc *t)
{
    while (!t->post && t->q && !t->failing && !t->deleting) {
        msg *m = t->q;
        acp_span v = {m->text, m->n}, method = {0}, id = {0}, params;
        bool valid = !acp_json_validate(m->text, m->n, JSON_DEPTH) && acp_json_kind(v) == 'o';
        bool has_method = valid && acp_json_member(v, "method", &method);
        bool has_id = valid && acp_json_member(v, "id", &id);
        post_info pi = {.request = has_method && has_id};
        if (has_id && !(pi.id = dupn(id.p, id.n))) {
            fail(t, "out of memory");
            return;
        }
        if (!t->conn_id) {
            if (t->init_sent) return; /* the rest waits for the connection id */
            if (!pi.request || !method_is(method, "initialize")) {
                post_info_free(&pi);
                {
                    fail(t, "the first message on a Streamable HTTP connection must be "
                            "initialize");
                    return;
                }
            }
            pi.init = t->init_sent = true;
        } else if (has_method) {
            if (acp_json_member(v, "params", &params) && acp_json_kind(params) == 'o')
                pi.sid = str_member(params, "sessionId");
        } else if (has_id) {
            route *r = take_route(t, id.p, id.n, false);
            if (r) pi.sid = r->sid, r->sid = NULL;
            route_free(r);
        }
        if (pi.sid && !header_safe(pi.sid)) { /* posted without a session, for the server
                                               * to judge */
            free(pi.sid);
            pi.sid = NULL;
        }
        if (pi.sid) {
            bool reattach = has_method && (method_is(method, "session/load") ||
                                           method_is(method, "session/resume"));
            stream *st = find_stream(t, pi.sid);
            if (st && st->refused && reattach) {
                unlink_stream(t, st);
                stream_free(st);
                st = NULL;
            }
            if (st && st->refused) { /* failed until reattached: requests answered here */
                if (pi.request) answer_error(t, pi.id, st->why, 0, NULL, 0);
                post_info_free(&pi);
                pop(t);
                continue;
            }
            if (!st && !(st = open_stream(t, pi.sid))) {
                post_info_free(&pi);
                return;
            }
            if (!st->open) { /* posted once the stream is there to carry the answer */
                post_info_free(&pi);
                return;
            }
            if (pi.request) add_route(t, pi.id, strlen(pi.id), pi.sid, true, reattach);
        }
        t->pi = pi;
        acp_buf_free(&t->post_err);
        t->post =
            start(t, "POST", pi.init ? "application/json" : "application/json, text/event-stream",
                  pi.sid, m->text, m->n, &post_cbs, t);
        if (!t->post) {
            fail(t, "cannot start an HTTP request");
            return;
        }
    }
    if (t->closing && !t->post && !t->q && !t->deleting && !t->failing) go_delete(t);
}

/* --- the end ---------------------------------------------------------------------------- */

static void on_handle_closed(uv_handle_t *h)
{
    shc *t = h->data;
    if (--t->handles) return;
    acp_link_ended(&t->link, t->reason[0] ? t->reason : "closed");
    free(t->url);
    free(t->ca_file);
    free(t->conn_id);
    acp_cookie_jar_free(t->own_jar);
    if (t->auth) explicit_bzero(t->auth, strlen(t->auth));
    free(t->auth);
    free(t);
}

static void curl_closed(void *user)
{
    shc *t = user;
    uv_close((uv_handle_t *)&t->kick, on_handle_closed);
    uv_close((uv_handle_t *)&t->deadline, on_handle_closed);
    uv_close((uv_handle_t *)&t->quiet, on_handle_closed);
}

/* Runs from the loop, never from inside curl's callbacks. */
static void finish(shc *t)
{
    t->ended = true;
    uv_timer_stop(&t->deadline);
    release_held(t); /* nothing is delivered any more: freed */
    while (t->streams) {
        stream *st = t->streams;
        t->streams = st->next;
        stream_free(st);
    }
    if (t->post) acp_http_abort(t->post);
    if (t->del) acp_http_abort(t->del);
    t->post = t->del = NULL;
    while (t->q) {
        msg *m = t->q;
        t->q = m->next;
        free(m);
    }
    while (t->routes) {
        route *r = t->routes;
        t->routes = r->next;
        route_free(r);
    }
    post_info_free(&t->pi);
    acp_buf_free(&t->post_err);
    acp_http_client_close(t->curl, curl_closed, t);
}

static void on_kick(uv_timer_t *tm)
{
    shc *t = tm->data;
    if (t->ended) return;
    if (t->finishing)
        finish(t);
    else
        pump(t);
}

static void kick(shc *t)
{
    if (!t->ended) uv_timer_start(&t->kick, on_kick, 0, 0);
}

static void end_soon(shc *t)
{
    t->finishing = true;
    kick(t);
}

static void delete_done(acp_http *h, int result, long status, void *user)
{
    shc *t = user;
    t->del = NULL;
    end_soon(t);
}

static void on_deadline(uv_timer_t *tm)
{
    shc *t = tm->data;
    if (!t->deleting)
        go_delete(t); /* the queue did not drain in time */
    else
        end_soon(t); /* nor did the DELETE */
}

/* Ends the connection on the server: every stream and request stops, the DELETE goes. */
static void go_delete(shc *t)
{
    t->deleting = true;
    for (stream *st = t->streams; st; st = st->next) {
        if (st->h) acp_http_abort(st->h);
        st->h = NULL;
    }
    if (t->post) acp_http_abort(t->post);
    t->post = NULL;
    static const acp_http_cbs del_cbs = {.struct_size = sizeof(acp_http_cbs),
                                         .on_done = delete_done};
    if (t->conn_id) t->del = start(t, "DELETE", NULL, NULL, NULL, 0, &del_cbs, t);
    if (!t->del) {
        end_soon(t);
        return;
    }
    uv_timer_start(&t->deadline, on_deadline, t->failing ? FAIL_DELETE_MS : t->close_ms, 0);
}

static void fail(shc *t, const char *fmt, ...)
{
    if (t->failing || t->ended || t->deleting) return;
    t->failing = true;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->reason, sizeof t->reason, fmt, ap);
    va_end(ap);
    go_delete(t);
}

/* --- the link's ops ---------------------------------------------------------------------- */

static int link_send(acp_link *l, const char *p, size_t n)
{
    shc *t = (shc *)l;
    if (t->closing || t->failing || t->deleting || t->ended) return ACP_EIO;
    msg *m = malloc(sizeof *m + n);
    if (!m) return ACP_ENOMEM;
    memcpy(m->text, p, n);
    m->n = n;
    m->next = NULL;
    *t->q_tail = m;
    t->q_tail = &m->next;
    t->queued += n;
    if (t->queued >= acp_link_high_water(&t->link)) t->full = true;
    kick(t);
    return 0;
}

static size_t link_queued(const acp_link *l)
{
    return ((const shc *)l)->queued;
}

static void link_close(acp_link *l)
{
    shc *t = (shc *)l;
    if (t->closing || t->ended) return;
    t->closing = true;
    if (t->failing || t->deleting) return; /* already ending */
    uv_timer_start(&t->deadline, on_deadline, t->close_ms, 0);
    kick(t); /* what is queued goes first, then the DELETE */
}

static const acp_link_ops ops = {.send = link_send, .queued = link_queued, .close = link_close};

int acp_shttp_connect(uv_loop_t *loop, const acp_shttp_client_opts *o, acp_link **out,
                      char **errmsg)
{
    *out = NULL;
    if (errmsg) *errmsg = NULL;
    const char *url = o->url ? o->url : "";
    bool https = !strncasecmp(url, "https://", 8);
    if (!https && strncasecmp(url, "http://", 7)) {
        if (errmsg) *errmsg = strdup("a Streamable HTTP agent URL starts with http:// or https://");
        return ACP_EINVAL;
    }
    for (const char *p = url; *p; p++)
        if ((unsigned char)*p <= 0x20 || *p == 0x7f) {
            if (errmsg) *errmsg = strdup("the agent URL has a space or a control character");
            return ACP_EINVAL;
        }
    if (o->token)
        for (const char *p = o->token; *p; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7f) {
                if (errmsg) *errmsg = strdup("the token has a control character");
                return ACP_EINVAL;
            }
    shc *t = calloc(1, sizeof *t);
    if (!t) return ACP_ENOMEM;
    t->loop = loop;
    t->link.ops = &ops;
    t->q_tail = &t->q;
    t->held_tail = &t->held;
    t->tls = https;
    t->h2c = o->http2 && !https;
    t->max = o->max_message ? o->max_message : DEFAULT_MAX;
    t->close_ms = o->close_timeout_ms ? o->close_timeout_ms : DEFAULT_CLOSE;
    t->jar = o->cookies ? o->cookies : (t->own_jar = acp_cookie_jar_new());
    bool ok = t->jar && (t->url = strdup(url)) &&
              (!o->ca_file || (t->ca_file = strdup(o->ca_file))) &&
              (!o->token || asprintf(&t->auth, "Authorization: Bearer %s", o->token) >= 0);
    if (!ok) t->auth = NULL;
    if (ok && !(t->curl = acp_http_client_new(loop))) {
        const char *why = mcp_libcurl_error();
        if (errmsg) *errmsg = strdup(why ? why : "cannot set up libcurl");
        free(t->url);
        free(t->ca_file);
        free(t->auth);
        acp_cookie_jar_free(t->own_jar);
        free(t);
        return ACP_EIO;
    }
    if (!ok) {
        free(t->url);
        free(t->ca_file);
        acp_cookie_jar_free(t->own_jar);
        free(t);
        return ACP_ENOMEM;
    }
    uv_timer_init(loop, &t->kick);
    uv_timer_init(loop, &t->deadline);
    uv_timer_init(loop, &t->quiet);
    t->kick.data = t->deadline.data = t->quiet.data = t;
    t->handles = 3;
    *out = &t->link;
    return 0;
}
