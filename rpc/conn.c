/* SPDX-License-Identifier: Apache-2.0 */
/* acp_conn: framing, routing, ids, errors and cancellation of a JSON-RPC 2.0 peer, sans I/O. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp/rpc.h"
#include "rpc/lasterr.h"
#include "rpc/scan.h"

/* The 1.0 size of the options (when it changes: rpc/lasterr.h). */
#define ACP_CONN_OPTS_SIZE_1_0 ACP_STRUCT_SIZE_AT(acp_conn_opts, user)

#define DEFAULT_MAX_MESSAGE (64u << 20)
/* How much of an oversized line is kept to find its id (ids come early in practice). */
#define OVERSIZE_PREFIX 4096

struct handler {
    char *method;
    acp_request_cb on_request;
    acp_notify_cb on_notify;
    void *user;
};

struct acp_req {
    acp_conn *conn;
    char *method;
    char *id;     /* verbatim JSON text, NUL-terminated */
    char *id_key; /* normalised form, for matching cancellations */
    json_t *params;
    char *params_text;
    size_t params_len;
    bool cancelled;
    void (*on_cancel)(acp_req *r, void *user);
    void *cancel_user;
    void *user;
    acp_req *prev, *next;
};

struct acp_call {
    acp_conn *conn;
    int64_t id;
    acp_response_cb cb;
    void *user;
    bool forgotten;
    bool cancel_sent; /* the peer is asked once, however many ways the caller gives up */
};

struct acp_msg {
    const char *method;
    acp_span params, result, error;
    json_t *params_json, *result_json;
    bool params_tried, result_tried;
    int code;
    const char *message;
    json_t *error_json; /* owns message and data */
};

enum stream_kind { STREAM_NONE, STREAM_REPLY, STREAM_CALL, STREAM_NOTIFY };

struct acp_conn {
    acp_conn_opts opts;
    struct handler *handlers;
    size_t nhandlers;

    acp_buf in; /* the partial line carried over between recv calls */
    bool discarding;
    size_t discarded;
    acp_buf prefix; /* start of the oversized line being discarded */

    acp_buf out;
    acp_buf *target; /* where messages are written: &out, or a redirect */
    bool closed;

    acp_req *reqs; /* unanswered incoming requests */
    size_t nreqs;

    /* Outgoing calls by id: open addressing, linear probing, backward-shift deletion. */
    acp_call **calls;
    size_t calls_cap, ncalls;
    int64_t next_id;

    enum stream_kind stream;
    size_t stream_start;
    acp_req *stream_req;
    acp_call *stream_call;
    acp_jw jw;
};

static const char cancel_default[] = "$/cancel_request";

/* --- diagnostics ------------------------------------------------------------------------ */

static void logf_(acp_conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(acp_conn *c, const char *fmt, ...)
{
    if (!c->opts.on_log) return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    c->opts.on_log(c, msg, c->opts.user);
}

/* --- the call table ---------------------------------------------------------------------- */

static size_t slot_of(const acp_conn *c, int64_t id)
{
    uint64_t h = (uint64_t)id * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 32) & (c->calls_cap - 1);
}

static int calls_put(acp_conn *c, acp_call *call)
{
    if ((c->ncalls + 1) * 2 > c->calls_cap) {
        size_t cap = c->calls_cap ? c->calls_cap * 2 : 64;
        acp_call **old = c->calls;
        size_t oldcap = c->calls_cap;
        c->calls = calloc(cap, sizeof *c->calls);
        if (!c->calls) {
            c->calls = old;
            return acp_error_set(ACP_ENOMEM, "out of memory tracking a call");
        }
        c->calls_cap = cap;
        for (size_t i = 0; i < oldcap; i++) {
            if (!old[i]) continue;
            size_t s = slot_of(c, old[i]->id);
            while (c->calls[s]) s = (s + 1) & (cap - 1);
            c->calls[s] = old[i];
        }
        free(old);
    }
    size_t s = slot_of(c, call->id);
    while (c->calls[s]) s = (s + 1) & (c->calls_cap - 1);
    c->calls[s] = call;
    c->ncalls++;
    return 0;
}

static size_t calls_find(const acp_conn *c, int64_t id)
{
    if (!c->calls_cap) return SIZE_MAX;
    for (size_t s = slot_of(c, id); c->calls[s]; s = (s + 1) & (c->calls_cap - 1))
        if (c->calls[s]->id == id) return s;
    return SIZE_MAX;
}

static void calls_remove_at(acp_conn *c, size_t s)
{
    size_t mask = c->calls_cap - 1;
    c->calls[s] = NULL;
    c->ncalls--;
    /* Backward-shift: move later entries of the probe run into the hole when that is nearer
     * their home slot, so lookups never stop early at it. */
    for (size_t j = (s + 1) & mask; c->calls[j]; j = (j + 1) & mask) {
        size_t home = slot_of(c, c->calls[j]->id);
        if (((j - home) & mask) >= ((j - s) & mask)) {
            c->calls[s] = c->calls[j];
            c->calls[j] = NULL;
            s = j;
        }
    }
}

static void calls_remove(acp_conn *c, acp_call *call)
{
    size_t s = calls_find(c, call->id);
    if (s != SIZE_MAX) calls_remove_at(c, s);
}

/* --- lifecycle --------------------------------------------------------------------------- */

acp_conn *acp_conn_new(const acp_conn_opts *opts)
{
    acp_conn_opts o;
    if (acp_struct_read(&o, sizeof o, ACP_CONN_OPTS_SIZE_1_0, opts, "acp_conn_opts")) return NULL;
    acp_conn *c = calloc(1, sizeof *c);
    if (!c) {
        acp_error_set(ACP_ENOMEM, "out of memory making a connection");
        return NULL;
    }
    c->opts = o;
    if (!c->opts.max_message) c->opts.max_message = DEFAULT_MAX_MESSAGE;
    if (!c->opts.cancel_method) c->opts.cancel_method = cancel_default;
    c->target = &c->out;
    return c;
}

static void req_free(acp_req *r)
{
    acp_conn *c = r->conn;
    if (r->prev)
        r->prev->next = r->next;
    else
        c->reqs = r->next;
    if (r->next) r->next->prev = r->prev;
    c->nreqs--;
    free(r->method);
    free(r->id);
    free(r->id_key);
    json_decref(r->params);
    free(r->params_text);
    free(r);
}

void acp_conn_free(acp_conn *c)
{
    if (!c) return;
    while (c->reqs) req_free(c->reqs);
    for (size_t i = 0; i < c->calls_cap; i++) free(c->calls[i]);
    free(c->calls);
    for (size_t i = 0; i < c->nhandlers; i++) free(c->handlers[i].method);
    free(c->handlers);
    acp_buf_free(&c->in);
    acp_buf_free(&c->prefix);
    acp_buf_free(&c->out);
    free(c);
}

void *acp_conn_user(const acp_conn *c)
{
    return c->opts.user;
}

int acp_conn_on(acp_conn *c, const char *method, acp_request_cb on_request, acp_notify_cb on_notify,
                void *user)
{
    for (size_t i = 0; i < c->nhandlers; i++) {
        struct handler *h = &c->handlers[i];
        if (strcmp(h->method, method) == 0) {
            h->on_request = on_request;
            h->on_notify = on_notify;
            h->user = user;
            return 0;
        }
    }
    struct handler *hs = realloc(c->handlers, (c->nhandlers + 1) * sizeof *hs);
    if (!hs) return acp_error_set(ACP_ENOMEM, "out of memory registering %s", method);
    c->handlers = hs;
    char *m = strdup(method);
    if (!m) return acp_error_set(ACP_ENOMEM, "out of memory registering %s", method);
    hs[c->nhandlers++] = (struct handler){m, on_request, on_notify, user};
    return 0;
}

static const struct handler *find_handler(const acp_conn *c, const char *method)
{
    for (size_t i = 0; i < c->nhandlers; i++)
        if (strcmp(c->handlers[i].method, method) == 0) return &c->handlers[i];
    return NULL;
}

bool acp_conn_closed(const acp_conn *c)
{
    return c->closed;
}

size_t acp_conn_pending_requests(const acp_conn *c)
{
    return c->nreqs;
}

size_t acp_conn_pending_calls(const acp_conn *c)
{
    return c->ncalls;
}

/* --- output ------------------------------------------------------------------------------ */

size_t acp_conn_out_len(const acp_conn *c)
{
    return c->out.len;
}

/* acp_conn_trace_all: a debugging switch for the whole process (include/acp/rpc.h). */
static acp_wire_trace_fn trace_fn;
static void *trace_user;

void acp_conn_trace_all(acp_wire_trace_fn fn, void *user)
{
    trace_fn = fn;
    trace_user = user;
}

char *acp_conn_out_take(acp_conn *c, size_t *len)
{
    if (!c->out.len) {
        *len = 0;
        return NULL;
    }
    char *buf = acp_buf_take(&c->out, len);
    for (size_t at = 0; trace_fn && at < *len;) {
        const char *nl = memchr(buf + at, '\n', *len - at);
        size_t n = nl ? (size_t)(nl - (buf + at)) : *len - at;
        if (n) trace_fn(c, true, buf + at, n, trace_user);
        at += n + 1;
    }
    return buf;
}

void acp_conn_redirect(acp_conn *c, acp_buf *dst)
{
    c->target = dst ? dst : &c->out;
}

/* Tells the embedder that output appeared, when the normal buffer went from empty to not. */
static void output_appeared(acp_conn *c, size_t before)
{
    if (c->target == &c->out && before == 0 && c->out.len && c->opts.on_output)
        c->opts.on_output(c, c->opts.user);
}

int acp_conn_out_append(acp_conn *c, const char *bytes, size_t n)
{
    size_t before = c->out.len;
    if (acp_buf_append(&c->out, bytes, n)) return ACP_ENOMEM;
    if (before == 0 && n && c->opts.on_output) c->opts.on_output(c, c->opts.user);
    return 0;
}

/* Messages are written straight into the target, and one that fails is cut off again, so
 * the output only ever holds whole messages. This one began at `start`, and writing its prefix
 * (which ends with a key) returned prc: it gets its value and suffix, or it is removed. */
static int emit(acp_conn *c, size_t start, int prc, const json_t *value, const char *raw,
                size_t rawlen, const char *suffix)
{
    acp_buf *b = c->target;
    acp_jw w;
    acp_jw_init(&w, b);
    w.status = prc;
    w.after_key = true;
    if (raw)
        acp_jw_raw(&w, raw, rawlen);
    else
        acp_jw_json(&w, value);
    int rc = acp_jw_status(&w);
    if (!rc && acp_buf_append(b, suffix, strlen(suffix))) rc = ACP_ENOMEM;
    if (rc) {
        b->len = start;
        return rc;
    }
    output_appeared(c, start);
    return 0;
}

/* Prefix of a response: {"jsonrpc":"2.0","id":<id>,"<member>": */
static int response_prefix(acp_buf *p, const char *id, size_t idlen, const char *member)
{
    int rc = acp_buf_append(p, "{\"jsonrpc\":\"2.0\",\"id\":", 22);
    rc = rc ? rc : acp_buf_append(p, id, idlen);
    rc = rc ? rc : acp_buf_printf(p, ",\"%s\":", member);
    return rc;
}

static int send_error_id(acp_conn *c, const char *id, size_t idlen, int code, json_t *data,
                         const char *message)
{
    json_t *err = json_object();
    if (!err) {
        json_decref(data);
        return acp_error_set(ACP_ENOMEM, "out of memory answering an error");
    }
    json_object_set_new(err, "code", json_integer(code));
    /* The message may come from peer input: never let invalid UTF-8 break the response. */
    json_t *msg = json_string(message);
    json_object_set_new(err, "message", msg ? msg : json_string("(message was not valid UTF-8)"));
    if (data) json_object_set_new(err, "data", data);
    size_t start = c->target->len;
    int rc = emit(c, start, response_prefix(c->target, id, idlen, "error"), err, NULL, 0, "}\n");
    json_decref(err);
    return rc;
}

/* A line the connection itself refuses (not JSON-RPC, too long, a bad envelope): the peer is
 * answered, and on_log hears it too, since no handler ever will. */
static int refuse_line(acp_conn *c, const char *id, size_t idlen, int code, const char *message)
{
    logf_(c, "refused a message from the peer: %s", message);
    return send_error_id(c, id, idlen, code, NULL, message);
}

static int send_error_null(acp_conn *c, int code, const char *message)
{
    return refuse_line(c, "null", 4, code, message);
}

/* --- incoming requests ------------------------------------------------------------------- */

const char *acp_req_method(const acp_req *r)
{
    return r->method;
}

acp_span acp_req_id(const acp_req *r)
{
    return (acp_span){r->id, strlen(r->id)};
}

json_t *acp_req_params(const acp_req *r)
{
    return r->params;
}

acp_span acp_req_params_text(const acp_req *r)
{
    return (acp_span){r->params_text, r->params_len};
}

acp_conn *acp_req_conn(const acp_req *r)
{
    return r->conn;
}

bool acp_req_cancelled(const acp_req *r)
{
    return r->cancelled;
}

void acp_req_on_cancel(acp_req *r, void (*on_cancel)(acp_req *r, void *user), void *user)
{
    r->on_cancel = on_cancel;
    r->cancel_user = user;
}

void acp_req_set_user(acp_req *r, void *user)
{
    r->user = user;
}

void *acp_req_user(const acp_req *r)
{
    return r->user;
}

static int reply(acp_req *r, const json_t *result, const char *raw, size_t rawlen)
{
    acp_conn *c = r->conn;
    size_t start = c->target->len;
    int prc = response_prefix(c->target, r->id, strlen(r->id), "result");
    int rc = emit(c, start, prc, result, raw, rawlen, "}\n");
    req_free(r);
    return rc;
}

int acp_req_reply(acp_req *r, json_t *result)
{
    if (!result) return reply(r, NULL, "{}", 2);
    int rc = reply(r, result, NULL, 0);
    json_decref(result);
    return rc;
}

int acp_req_reply_raw(acp_req *r, const char *json, size_t n)
{
    return reply(r, NULL, json, n);
}

int acp_req_error(acp_req *r, int code, json_t *data, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int rc = send_error_id(r->conn, r->id, strlen(r->id), code, data, msg);
    req_free(r);
    return rc;
}

/* --- streamed messages ------------------------------------------------------------------- */

/* The message began at start, and its prefix is in the target already. */
static acp_jw *stream_begin(acp_conn *c, enum stream_kind kind, size_t start)
{
    c->stream = kind;
    c->stream_start = start;
    acp_jw_init(&c->jw, c->target);
    c->jw.after_key = true;
    return &c->jw;
}

static int stream_end(acp_conn *c, enum stream_kind kind)
{
    if (c->stream != kind) return acp_error_set(ACP_EINVAL, "no such message is being streamed");
    c->stream = STREAM_NONE;
    acp_buf *b = c->target;
    /* Exactly one complete value must have been written. */
    int rc = acp_jw_status(&c->jw);
    if (!rc && (c->jw.depth != 0 || c->jw.after_key))
        rc = acp_error_set(ACP_EINVAL, "the streamed value is not complete");
    if (!rc && acp_buf_append(b, "}\n", 2)) rc = ACP_ENOMEM;
    if (rc) {
        b->len = c->stream_start;
        return rc;
    }
    output_appeared(c, c->stream_start); /* a no-op when redirected */
    return 0;
}

acp_jw *acp_req_reply_begin(acp_req *r)
{
    acp_conn *c = r->conn;
    if (c->stream != STREAM_NONE) return NULL;
    size_t start = c->target->len;
    if (response_prefix(c->target, r->id, strlen(r->id), "result")) {
        c->target->len = start;
        return NULL;
    }
    c->stream_req = r;
    return stream_begin(c, STREAM_REPLY, start);
}

int acp_req_reply_end(acp_req *r)
{
    acp_conn *c = r->conn;
    if (c->stream_req != r) {
        /* reply_begin failed (another message was being streamed): the request is still
         * answered and freed, as every answer promises, unless that would cut into the
         * other message. */
        if (c->stream == STREAM_NONE)
            acp_req_error(r, ACP_RPC_INTERNAL_ERROR, NULL, "internal error: no reply was streamed");
        else
            req_free(r);
        return acp_error_set(ACP_EINVAL, "no reply was streamed");
    }
    c->stream_req = NULL;
    int rc = stream_end(c, STREAM_REPLY);
    req_free(r);
    return rc;
}

/* --- outgoing calls and notifications ---------------------------------------------------- */

static acp_call *call_new(acp_conn *c, acp_response_cb cb, void *user)
{
    acp_call *call = calloc(1, sizeof *call);
    if (!call) return NULL;
    /* Without cb the answer is swallowed like a forgotten call's, silently. */
    *call = (acp_call){.conn = c, .id = c->next_id++, .cb = cb, .user = user, .forgotten = !cb};
    if (calls_put(c, call)) {
        free(call);
        return NULL;
    }
    return call;
}

static void call_drop(acp_conn *c, acp_call *call)
{
    calls_remove(c, call);
    free(call);
}

/* emit() for a request or notification whose prefix ends with ,"params": and params (stolen)
 * as its value. NULL params omits the member. */
static int emit_params(acp_conn *c, size_t start, int prc, json_t *params)
{
    if (!prc && !params) c->target->len -= 10;
    int rc = emit(c, start, prc, params, params ? NULL : "", 0, "}\n");
    json_decref(params);
    return rc;
}

static int call_prefix(acp_buf *p, const char *method, int64_t id)
{
    int rc = acp_buf_printf(p, "{\"jsonrpc\":\"2.0\",\"id\":%" PRId64 ",\"method\":", id);
    rc = rc ? rc : acp_json_escape(p, method, strlen(method));
    return rc ? rc : acp_buf_append(p, ",\"params\":", 10);
}

/* After a call's request was written (rc 0) or not: a failed one is dropped, and so is one
 * without cb after EOF (no answer can come: only its id was needed). */
static int call_sent(acp_conn *c, acp_call *call, int rc)
{
    if (rc || (!call->cb && c->closed)) call_drop(c, call);
    return rc;
}

int acp_conn_call(acp_conn *c, const char *method, json_t *params, acp_response_cb cb, void *user,
                  acp_call **out)
{
    /* Nobody waits for an answer to a call without cb, so it can go out after EOF too. */
    if (c->closed && cb) {
        json_decref(params);
        return acp_error_set(ACP_ECLOSED, "cannot call %s: the peer closed the connection", method);
    }
    acp_call *call = call_new(c, cb, user);
    if (!call) {
        json_decref(params);
        return acp_error_set(ACP_ENOMEM, "out of memory calling %s", method);
    }
    size_t start = c->target->len;
    int rc =
        call_sent(c, call, emit_params(c, start, call_prefix(c->target, method, call->id), params));
    if (!rc && out) *out = cb ? call : NULL;
    return rc;
}

acp_jw *acp_conn_call_begin(acp_conn *c, const char *method, acp_response_cb cb, void *user,
                            acp_call **out)
{
    if ((c->closed && cb) || c->stream != STREAM_NONE) return NULL;
    acp_call *call = call_new(c, cb, user);
    if (!call) return NULL;
    size_t start = c->target->len;
    if (call_prefix(c->target, method, call->id)) {
        c->target->len = start;
        call_drop(c, call);
        return NULL;
    }
    c->stream_call = call;
    if (out) *out = cb ? call : NULL;
    return stream_begin(c, STREAM_CALL, start);
}

int acp_conn_call_end(acp_conn *c)
{
    acp_call *call = c->stream_call;
    c->stream_call = NULL;
    int rc = stream_end(c, STREAM_CALL);
    return call ? call_sent(c, call, rc) : rc;
}

int64_t acp_call_id(const acp_call *call)
{
    return call->id;
}

static int notify_prefix(acp_buf *p, const char *method)
{
    int rc = acp_buf_append(p, "{\"jsonrpc\":\"2.0\",\"method\":", 26);
    rc = rc ? rc : acp_json_escape(p, method, strlen(method));
    return rc ? rc : acp_buf_append(p, ",\"params\":", 10);
}

int acp_conn_notify(acp_conn *c, const char *method, json_t *params)
{
    size_t start = c->target->len;
    return emit_params(c, start, notify_prefix(c->target, method), params);
}

int acp_conn_notify_raw(acp_conn *c, const char *method, const char *params, size_t n)
{
    size_t start = c->target->len;
    return emit(c, start, notify_prefix(c->target, method), NULL, params, n, "}\n");
}

acp_jw *acp_conn_notify_begin(acp_conn *c, const char *method)
{
    if (c->stream != STREAM_NONE) return NULL;
    size_t start = c->target->len;
    int prc = notify_prefix(c->target, method);
    acp_jw *w = stream_begin(c, STREAM_NOTIFY, start);
    w->status = prc; /* stream_end() undoes a failed prefix */
    return w;
}

int acp_conn_notify_end(acp_conn *c)
{
    return stream_end(c, STREAM_NOTIFY);
}

static void send_cancel(acp_conn *c, acp_call *call)
{
    if (call->cancel_sent || c->closed) return;
    call->cancel_sent = true;
    char params[48];
    int n = snprintf(params, sizeof params, "{\"requestId\":%" PRId64 "}", call->id);
    acp_conn_notify_raw(c, c->opts.cancel_method, params, (size_t)n);
}

int acp_conn_cancel(acp_conn *c, acp_call *call)
{
    if (c->closed)
        return acp_error_set(ACP_ECLOSED, "cannot cancel: the peer closed the connection");
    send_cancel(c, call);
    return 0;
}

void acp_conn_forget(acp_conn *c, acp_call *call)
{
    call->forgotten = true;
    send_cancel(c, call);
}

static void resolve_local(acp_conn *c, acp_call *call, int code, const char *message)
{
    calls_remove(c, call);
    if (!call->forgotten) {
        acp_msg m = {0};
        m.code = code;
        m.message = message;
        m.error = (acp_span){"{}", 2};
        call->cb(c, &m, call->user);
    }
    free(call);
}

void acp_conn_abandon(acp_conn *c, acp_call *call, int code, const char *message)
{
    send_cancel(c, call);
    resolve_local(c, call, code, message);
}

/* --- message views ----------------------------------------------------------------------- */

static json_t *parse_span(acp_span s)
{
    return json_loadb(s.p, s.n, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, NULL);
}

const char *acp_msg_method(const acp_msg *m)
{
    return m->method;
}

json_t *acp_msg_params(acp_msg *m)
{
    if (!m->params_tried) {
        m->params_tried = true;
        m->params_json = (m->params.n && acp_json_kind(m->params) != 'z') ? parse_span(m->params)
                                                                          : json_object();
    }
    return m->params_json;
}

acp_span acp_msg_params_text(const acp_msg *m)
{
    return m->params;
}

bool acp_msg_is_error(const acp_msg *m)
{
    return m->error.n != 0;
}

json_t *acp_msg_result(acp_msg *m)
{
    if (m->error.n) return NULL;
    if (!m->result_tried) {
        m->result_tried = true;
        m->result_json = parse_span(m->result);
    }
    return m->result_json;
}

acp_span acp_msg_result_text(const acp_msg *m)
{
    return m->result;
}

int acp_msg_error_code(const acp_msg *m)
{
    return m->code;
}

const char *acp_msg_error_message(const acp_msg *m)
{
    return m->message ? m->message : "";
}

json_t *acp_msg_error_data(acp_msg *m)
{
    return m->error_json ? json_object_get(m->error_json, "data") : NULL;
}

static void msg_clear(acp_msg *m)
{
    json_decref(m->params_json);
    json_decref(m->result_json);
    json_decref(m->error_json);
}

/* --- routing ----------------------------------------------------------------------------- */

/* A NUL-terminated copy of text that is not NUL-terminated itself (strndup would be fine by
 * POSIX, but sanitizers with strict string checks read past n). */
static char *dup_span(acp_span s)
{
    char *p = malloc(s.n + 1);
    if (!p) return NULL;
    memcpy(p, s.p, s.n);
    p[s.n] = '\0';
    return p;
}

/* The id's normalised key: strings by their decoded value, numbers and null by their text. */
static char *id_key(acp_span id)
{
    if (acp_json_kind(id) == 's') {
        char *s = acp_json_key_dup(id);
        if (!s) return NULL;
        size_t n = strlen(s);
        char *k = malloc(n + 2);
        if (k) {
            k[0] = 's';
            memcpy(k + 1, s, n + 1);
        }
        free(s);
        return k;
    }
    char *k = malloc(id.n + 2);
    if (!k) return NULL;
    k[0] = 'n';
    memcpy(k + 1, id.p, id.n);
    k[id.n + 1] = '\0';
    return k;
}

static void handle_cancel(acp_conn *c, acp_span params)
{
    acp_span target;
    if (acp_json_kind(params) != 'o' || !acp_json_member(params, "requestId", &target)) return;
    char *key = id_key(target);
    if (!key) return;
    for (acp_req *r = c->reqs; r; r = r->next) {
        if (r->cancelled || strcmp(r->id_key, key) != 0) continue;
        r->cancelled = true;
        if (r->on_cancel) r->on_cancel(r, r->cancel_user);
        break; /* on_cancel may have answered (freed) r: stop here */
    }
    free(key);
}

/* Params the scanner found valid that jansson still refused: answered in our own words (a
 * library's message means nothing to the peer), naming the member by its path, also in
 * error.data.path. What jansson refuses beyond RFC 8259 is what a C string or an int64 cannot
 * hold, and names given twice. */
static void refuse_params(acp_req *r, const json_error_t *err)
{
    char path[256];
    size_t at = err->position > 0 ? (size_t)err->position : 0;
    acp_scan_path_at(r->params_text, r->params_len, at, "params", path, sizeof path);
    const char *what;
    switch (json_error_code(err)) {
    case json_error_null_character:
        what = "must not contain a NUL character (\\u0000)";
        break;
    case json_error_null_byte_in_key:
        what = "is a member name with a NUL character (\\u0000), which is not accepted";
        break;
    case json_error_duplicate_key:
        what = "is given twice: member names must be unique";
        break;
    case json_error_numeric_overflow:
        what = "is a number out of range (an integer must fit in 64 bits, a real in a double)";
        break;
    case json_error_invalid_syntax: /* the scanner passes lone surrogates; jansson does not */
        what = "holds an unpaired UTF-16 surrogate escape (\\uD800-\\uDFFF)";
        break;
    default:
        what = "cannot be read";
    }
    acp_req_error(r, ACP_RPC_INVALID_PARAMS, json_pack("{ss}", "path", path), "%s %s", path, what);
}

static void handle_request(acp_conn *c, const char *method, acp_span id, acp_span params)
{
    const struct handler *h = find_handler(c, method);
    acp_request_cb cb = h && h->on_request ? h->on_request : c->opts.on_request;
    void *user = h && h->on_request ? h->user : c->opts.user;
    if (!cb) {
        json_t *data = json_pack("{s:s}", "method", method);
        send_error_id(c, id.p, id.n, ACP_RPC_METHOD_NOT_FOUND, data, "Method not found");
        return;
    }
    acp_req *r = calloc(1, sizeof *r);
    if (!r) return;
    r->conn = c;
    r->method = strdup(method);
    r->id = dup_span(id);
    r->id_key = id_key(id);
    bool nomem = !r->method || !r->id || !r->id_key;
    if (!nomem && params.n && acp_json_kind(params) != 'z') {
        nomem = !(r->params_text = dup_span(params));
        r->params_len = params.n;
    }
    r->next = c->reqs;
    if (c->reqs) c->reqs->prev = r;
    c->reqs = r;
    c->nreqs++;
    if (nomem) {
        acp_req_error(r, ACP_RPC_INTERNAL_ERROR, NULL, "out of memory");
        return;
    }
    if (r->params_text) {
        json_error_t err;
        r->params = json_loadb(r->params_text, r->params_len, JSON_REJECT_DUPLICATES, &err);
        if (!r->params) {
            refuse_params(r, &err);
            return;
        }
    } else {
        r->params = json_object();
    }
    cb(c, r, user);
}

static void handle_notification(acp_conn *c, const char *method, acp_span params)
{
    if (strcmp(method, c->opts.cancel_method) == 0) {
        handle_cancel(c, params);
        return;
    }
    const struct handler *h = find_handler(c, method);
    acp_notify_cb cb = h && h->on_notify ? h->on_notify : c->opts.on_notify;
    void *user = h && h->on_notify ? h->user : c->opts.user;
    if (!cb) return; /* unknown notifications are ignored */
    acp_msg m = {0};
    m.method = method;
    m.params = params;
    cb(c, &m, user);
    msg_clear(&m);
}

static bool parse_int_id(acp_span id, int64_t *out)
{
    if (acp_json_kind(id) != 'n' || id.n > 19) return false;
    uint64_t v = 0; /* 19 digits fit; the peer may send any of them */
    for (size_t i = 0; i < id.n; i++) {
        if (id.p[i] < '0' || id.p[i] > '9') return false;
        v = v * 10 + (uint64_t)(id.p[i] - '0');
    }
    if (v > INT64_MAX) return false;
    *out = (int64_t)v;
    return true;
}

static void handle_response(acp_conn *c, const acp_envelope *env)
{
    int64_t id;
    size_t slot;
    if (!parse_int_id(env->id, &id) || (slot = calls_find(c, id)) == SIZE_MAX) {
        logf_(c, "response to an unknown request id %.*s ignored",
              (int)(env->id.n > 40 ? 40 : env->id.n), env->id.p);
        return;
    }
    acp_call *call = c->calls[slot];
    calls_remove_at(c, slot);
    acp_msg m = {0};
    m.result = env->result;
    if (env->error.p) {
        m.error = env->error;
        m.error_json = parse_span(env->error);
        json_t *code = json_object_get(m.error_json, "code");
        json_t *msg = json_object_get(m.error_json, "message");
        if (json_is_integer(code) && json_is_string(msg)) {
            m.code = (int)json_integer_value(code);
            m.message = json_string_value(msg);
        } else {
            m.code = ACP_RPC_INTERNAL_ERROR;
            m.message = "the peer sent a malformed error object";
        }
    }
    if (!call->forgotten) call->cb(c, &m, call->user);
    msg_clear(&m);
    free(call);
}

static void handle_line(acp_conn *c, const char *line, size_t n)
{
    acp_envelope env;
    acp_scan_envelope(line, n, &env);
    switch (env.kind) {
    case ACP_ENV_INVALID:
        send_error_null(c, ACP_RPC_PARSE_ERROR, "Parse error: the line is not valid JSON");
        return;
    case ACP_ENV_ARRAY:
        send_error_null(c, ACP_RPC_INVALID_REQUEST, "JSON-RPC batches are not supported by ACP");
        return;
    case ACP_ENV_SCALAR:
        send_error_null(c, ACP_RPC_INVALID_REQUEST,
                        "Invalid request: a message must be a JSON object");
        return;
    case ACP_ENV_OBJECT:
        break;
    }
    char idk = acp_json_kind(env.id);
    bool id_ok = env.id.p && (idk == 's' || idk == 'n' || idk == 'z');
    /* Echo the id when it is usable, null otherwise (JSON-RPC 2.0 §5). */
    acp_span reply_id = id_ok && !env.duplicate ? env.id : (acp_span){"null", 4};
    const char *problem = NULL;
    if (env.duplicate)
        problem = "Invalid request: a member appears twice";
    else if (!acp_json_str_eq(env.jsonrpc, "2.0"))
        problem = "Invalid request: \"jsonrpc\" must be \"2.0\"";
    else if (env.id.p && !id_ok)
        problem = "Invalid request: \"id\" must be a string, a number or null";
    if (problem) {
        /* A broken response is not answered: there is nobody to tell. */
        if (!env.method.p && (env.result.p || env.error.p)) {
            logf_(c, "%s (in a response)", problem);
            return;
        }
        refuse_line(c, reply_id.p, reply_id.n, ACP_RPC_INVALID_REQUEST, problem);
        return;
    }
    if (!env.method.p) {
        if (env.id.p && env.result.p && env.error.p) {
            logf_(c, "a response with both \"result\" and \"error\" ignored");
        } else if (env.id.p && (env.result.p || env.error.p)) {
            handle_response(c, &env);
        } else if (env.id.p) {
            refuse_line(c, reply_id.p, reply_id.n, ACP_RPC_INVALID_REQUEST,
                        "Invalid request: no \"method\", and not a response");
        } else {
            send_error_null(c, ACP_RPC_INVALID_REQUEST,
                            "Invalid request: no \"method\", and not a response");
        }
        return;
    }
    char small[128], *method = small;
    if (acp_json_kind(env.method) != 's') {
        if (env.id.p)
            refuse_line(c, reply_id.p, reply_id.n, ACP_RPC_INVALID_REQUEST,
                        "Invalid request: \"method\" must be a string");
        else
            logf_(c, "a notification whose \"method\" is not a string ignored");
        return;
    }
    if (env.method.n < sizeof small && !memchr(env.method.p, '\\', env.method.n)) {
        memcpy(small, env.method.p + 1, env.method.n - 2);
        small[env.method.n - 2] = '\0';
    } else if (!(method = acp_json_strdup(env.method))) {
        if (env.id.p)
            refuse_line(c, reply_id.p, reply_id.n, ACP_RPC_INVALID_REQUEST,
                        "Invalid request: \"method\" is not a valid name");
        return;
    }
    char pk = acp_json_kind(env.params);
    if (env.params.p && pk != 'o' && pk != 'a' && pk != 'z') {
        if (env.id.p)
            refuse_line(c, reply_id.p, reply_id.n, ACP_RPC_INVALID_PARAMS,
                        "Invalid params: \"params\" must be an object");
        else
            logf_(c, "a %s notification whose params are not an object or array ignored", method);
    } else if (env.id.p) {
        handle_request(c, method, env.id, env.params);
    } else {
        handle_notification(c, method, env.params);
    }
    if (method != small) free(method);
}

/* A line that is complete (without its LF). Strips a CR and skips blank lines. */
static void process_line(acp_conn *c, const char *line, size_t n)
{
    if (n && line[n - 1] == '\r') n--;
    size_t i = 0;
    while (i < n && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) i++;
    if (i == n) return;
    if (c->opts.on_message) c->opts.on_message(c, line, n, c->opts.user);
    if (trace_fn) trace_fn(c, false, line, n, trace_user);
    if (n > c->opts.max_message) {
        acp_buf_free(&c->prefix);
        acp_buf_append(&c->prefix, line, n < OVERSIZE_PREFIX ? n : OVERSIZE_PREFIX);
        c->discarded = n;
        c->discarding = true;
        return; /* finished by end_discard() */
    }
    handle_line(c, line, n);
}

/* The oversized line ended: answer it (with its id, when the prefix shows one). */
static void end_discard(acp_conn *c)
{
    acp_span id;
    bool has_method;
    char msg[160];
    snprintf(msg, sizeof msg,
             "Invalid request: message of %zu bytes exceeds the limit of %zu bytes", c->discarded,
             c->opts.max_message);
    c->discarding = false;
    if (acp_scan_prefix_id(c->prefix.data, c->prefix.len, &id, &has_method)) {
        char k = acp_json_kind(id);
        int64_t nid;
        size_t slot;
        if (!has_method && parse_int_id(id, &nid) && (slot = calls_find(c, nid)) != SIZE_MAX) {
            /* The peer's answer to our call was too big: fail that call, not the peer. */
            resolve_local(c, c->calls[slot], ACP_RPC_INTERNAL_ERROR, msg);
        } else if (has_method && (k == 's' || k == 'n' || k == 'z')) {
            refuse_line(c, id.p, id.n, ACP_RPC_INVALID_REQUEST, msg);
        } else if (has_method || k == 0) {
            send_error_null(c, ACP_RPC_INVALID_REQUEST, msg);
        } else {
            logf_(c, "%s", msg);
        }
    } else {
        send_error_null(c, ACP_RPC_INVALID_REQUEST, msg);
    }
    acp_buf_free(&c->prefix);
    c->discarded = 0;
}

int acp_conn_recv(acp_conn *c, const char *bytes, size_t len)
{
    if (c->closed) return acp_error_set(ACP_ECLOSED, "the peer closed the connection already");
    while (len) {
        const char *nl = memchr(bytes, '\n', len);
        size_t take = nl ? (size_t)(nl - bytes) : len;
        if (c->discarding) {
            c->discarded += take;
            if (c->prefix.len < OVERSIZE_PREFIX) {
                size_t room = OVERSIZE_PREFIX - c->prefix.len;
                acp_buf_append(&c->prefix, bytes, take < room ? take : room);
            }
            if (nl) end_discard(c);
        } else if (c->in.len == 0 && nl) {
            process_line(c, bytes, take); /* the common case: a whole line, no copy */
            if (c->discarding) end_discard(c);
        } else if (c->in.len + take > c->opts.max_message + 1) {
            /* Too long already: stop buffering, keep only the prefix. (+1 leaves room for
             * the CR of a CRLF line that is exactly at the limit.) */
            acp_buf_free(&c->prefix);
            acp_buf_append(&c->prefix, c->in.data,
                           c->in.len < OVERSIZE_PREFIX ? c->in.len : OVERSIZE_PREFIX);
            if (c->prefix.len < OVERSIZE_PREFIX) {
                size_t room = OVERSIZE_PREFIX - c->prefix.len;
                acp_buf_append(&c->prefix, bytes, take < room ? take : room);
            }
            c->discarded = c->in.len + take;
            c->discarding = true;
            acp_buf_free(&c->in);
            if (nl) end_discard(c);
        } else {
            if (acp_buf_append(&c->in, bytes, take)) return ACP_ENOMEM;
            if (nl) {
                /* The line is processed from a buffer the handler cannot disturb. */
                acp_buf line = c->in;
                c->in = (acp_buf){0};
                process_line(c, line.data, line.len);
                if (c->discarding) end_discard(c);
                if (!c->in.data) {
                    /* Reuse the allocation, but not one a huge line left behind. */
                    line.len = 0;
                    acp_buf_shrink(&line, ACP_BUF_KEEP);
                    c->in = line;
                } else {
                    acp_buf_free(&line);
                }
            }
        }
        if (!nl) break;
        take++;
        bytes += take;
        len -= take;
    }
    return 0;
}

void acp_conn_eof(acp_conn *c)
{
    if (c->closed) return;
    if (c->discarding) {
        end_discard(c);
    } else if (c->in.len) {
        acp_buf line = c->in;
        c->in = (acp_buf){0};
        process_line(c, line.data, line.len);
        if (c->discarding) end_discard(c);
        acp_buf_free(&line);
    }
    c->closed = true;
    acp_buf_free(&c->in);
    /* Resolve every pending call (callbacks cannot add new ones: closed). Each is taken out
     * of the table before its callback runs, and the table is walked afresh, so a callback may
     * abandon or forget other calls safely; a deletion can shift a later entry behind the
     * cursor, hence the outer loop. */
    while (c->ncalls)
        for (size_t i = 0; i < c->calls_cap;)
            if (c->calls[i])
                resolve_local(c, c->calls[i], ACP_RPC_CONN_CLOSED,
                              "connection closed: the peer went away before answering");
            else
                i++;
}
