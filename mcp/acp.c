/* SPDX-License-Identifier: Apache-2.0 */
/* MCP over ACP (unstable; SDK 2.4.0 schema: McpServerAcp, mcp/message): the server lives in the
 * ACP client that declared it, and its messages travel on the ACP connection itself.
 *
 * Each MCP request of ours becomes one `mcp/message` request to the client ({serverId,
 * requestId, method, params}); its answer carries the inner outcome ({"result": ...} or
 * {"error": {code, message}}), which goes back into the server's conn as the inner response.
 * The binding speaks MCP 2026-07-28 (stateless): every inner request carries the protocol
 * version and our client capabilities in params._meta, and there is no initialize (set.c
 * opens with server/discover instead). The client's `mcp/message` notifications name the
 * inner request they belong to (progress, mostly) and arrive through acp_mcp_set_acp_notify().
 *
 * A cancelled or timed-out inner request cancels its outer request ($/cancel_request). Our
 * inner notifications have no carrier in the schema (there is no agent->client mcp/message
 * notification) and are dropped. Whatever goes wrong with one outer request (an ACP error,
 * an answer that is not a carrier, one larger than MCP_ACP_MAX_ANSWER) becomes an inner error
 * for that request only; the server fails only when the ACP connection ends. */
#include <stdatomic.h>
#include <stdio.h>

#include "acp/version.h"
#include "mcp/internal.h"

#define MCP_ACP_PROTOCOL   "2026-07-28"
#define MCP_ACP_MAX_ANSWER ((size_t)16 << 20) /* bytes of one inner result */

typedef struct outer {
    struct acp_tp *t;
    acp_call *call;
    int64_t inner_id;
    char rid[24]; /* requestId: unique on the ACP connection (see next_rid) */
    struct outer *prev, *next;
} outer;

typedef struct acp_tp {
    mcp_server *s;
    acp_conn *peer;
    uv_timer_t flush; /* sends the conn's output outside the conn's own call stack */
    outer *calls;
    bool closing;
} acp_tp;

/* requestIds must be unique per (serverId, requestId) on the ACP connection, and a client
 * may declare one server in several sessions (several sets): one counter for the process. */
static atomic_uint_fast64_t next_rid;

static void unlink_outer(acp_tp *t, outer *o)
{
    if (o->prev)
        o->prev->next = o->next;
    else
        t->calls = o->next;
    if (o->next) o->next->prev = o->prev;
}

/* The inner response for request id: result (stolen) or an error. */
static void answer(mcp_server *s, int64_t id, json_t *result, json_t *error)
{
    json_t *m = json_pack("{ss sI}", "jsonrpc", "2.0", "id", (json_int_t)id);
    if (m && result)
        json_object_set_new(m, "result", result);
    else if (m)
        json_object_set_new(m, "error", error);
    else {
        json_decref(result);
        json_decref(error);
    }
    char *text = m ? json_dumps(m, JSON_COMPACT) : NULL;
    json_decref(m);
    if (text)
        mcp_server_recv(s, text, strlen(text));
    else
        mcp_server_fail(s, "out of memory");
    free(text);
}

static void answer_error(mcp_server *s, int64_t id, int code, const char *msg)
{
    answer(s, id, NULL, json_pack("{si ss}", "code", code, "message", msg));
}

static void on_outer(acp_conn *peer, acp_msg *m, void *user)
{
    outer *o = user;
    acp_tp *t = o->t;
    mcp_server *s = t->s;
    int64_t id = o->inner_id;
    unlink_outer(t, o);
    free(o);
    if (acp_msg_is_error(m)) {
        if (acp_msg_error_code(m) == ACP_RPC_CONN_CLOSED && acp_conn_closed(peer)) {
            mcp_server_fail(s, "the ACP connection to the client ended");
            return;
        }
        char *msg = NULL;
        if (asprintf(&msg, "the client answered mcp/message with error %d: %s",
                     acp_msg_error_code(m), acp_msg_error_message(m)) < 0)
            msg = NULL;
        answer_error(s, id, acp_msg_error_code(m), msg ? msg : acp_msg_error_message(m));
        free(msg);
        return;
    }
    if (acp_msg_result_text(m).n > MCP_ACP_MAX_ANSWER) {
        char msg[96];
        snprintf(msg, sizeof msg, "the client's mcp/message answer is larger than %zu bytes",
                 MCP_ACP_MAX_ANSWER);
        answer_error(s, id, ACP_RPC_INTERNAL_ERROR, msg);
        return;
    }
    /* MessageMcpResponse: result wins when both are there; an error must be an object with
     * an integer code and a string message. The result's text goes on as it came: a large
     * tool result is neither parsed nor written again here. */
    static const char *const keys[] = {"result", "error"};
    acp_span v[2];
    if (acp_json_members(acp_msg_result_text(m), keys, 2, v) > 0 && v[0].p) {
        acp_buf b = {0};
        if (acp_buf_printf(&b, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":", (long long)id) ||
            acp_buf_append(&b, v[0].p, v[0].n) || acp_buf_putc(&b, '}'))
            mcp_server_fail(s, "out of memory");
        else
            mcp_server_recv(s, b.data, b.len);
        acp_buf_free(&b);
        return;
    }
    json_t *err = v[1].p ? json_loadb(v[1].p, v[1].n, 0, NULL) : NULL;
    if (json_is_integer(json_object_get(err, "code")) &&
        json_is_string(json_object_get(err, "message"))) {
        answer(s, id, NULL, err);
        return;
    }
    json_decref(err);
    answer_error(s, id, ACP_RPC_INTERNAL_ERROR,
                 "the client's mcp/message answer has neither a result nor an MCP error");
}

/* Our inner request params, with the per-request metadata MCP 2026-07-28 requires (what the
 * caller put in _meta is kept). */
static json_t *with_meta(json_t *params)
{
    json_t *p = json_is_object(params) ? json_copy(params) : json_object();
    json_t *meta = json_object_get(p, "_meta");
    meta = json_is_object(meta) ? json_copy(meta) : json_object();
    if (!p || !meta) {
        json_decref(p);
        json_decref(meta);
        return NULL;
    }
    if (!json_object_get(meta, "io.modelcontextprotocol/protocolVersion"))
        json_object_set_new(meta, "io.modelcontextprotocol/protocolVersion",
                            json_string(MCP_ACP_PROTOCOL));
    if (!json_object_get(meta, "io.modelcontextprotocol/clientCapabilities"))
        json_object_set_new(meta, "io.modelcontextprotocol/clientCapabilities", json_object());
    if (!json_object_get(meta, "io.modelcontextprotocol/clientInfo"))
        json_object_set_new(meta, "io.modelcontextprotocol/clientInfo",
                            json_pack("{ss ss}", "name", "libacp", "version", ACP_VERSION_STRING));
    json_object_set_new(p, "_meta", meta);
    return p;
}

static void send_request(acp_tp *t, int64_t id, const char *method, json_t *params)
{
    mcp_server *s = t->s;
    outer *o = calloc(1, sizeof *o);
    json_t *p = with_meta(params);
    if (!o || !p) {
        free(o);
        json_decref(p);
        answer_error(s, id, ACP_RPC_INTERNAL_ERROR, "out of memory");
        return;
    }
    o->t = t;
    o->inner_id = id;
    snprintf(o->rid, sizeof o->rid, "%llu", (unsigned long long)++next_rid);
    json_t *outer_params = json_pack("{ss ss ss so}", "serverId", s->server_id, "requestId", o->rid,
                                     "method", method, "params", p);
    if (!outer_params ||
        acp_conn_call(t->peer, "mcp/message", outer_params, on_outer, o, &o->call)) {
        free(o);
        if (acp_conn_closed(t->peer))
            mcp_server_fail(s, "the ACP connection to the client ended");
        else
            answer_error(s, id, ACP_RPC_INTERNAL_ERROR, "cannot send mcp/message");
        return;
    }
    o->next = t->calls;
    if (o->next) o->next->prev = o;
    t->calls = o;
}

/* notifications/cancelled for one of our requests: the outer request is cancelled and
 * forgotten (set.c has already finished the inner one). */
static void cancel_request(acp_tp *t, const json_t *params)
{
    json_t *rid = json_object_get(params, "requestId");
    for (outer *o = t->calls; o; o = o->next) {
        if (json_is_integer(rid) && json_integer_value(rid) == o->inner_id) {
            unlink_outer(t, o);
            acp_conn_forget(t->peer, o->call);
            free(o);
            return;
        }
    }
}

static void send_one(mcp_server *s, const char *msg, size_t n, acp_span id)
{
    acp_tp *t = s->tp;
    json_t *m = json_loadb(msg, n, 0, NULL);
    const char *method = json_string_value(json_object_get(m, "method"));
    json_t *jid = json_object_get(m, "id");
    if (method && json_is_integer(jid))
        send_request(t, json_integer_value(jid), method, json_object_get(m, "params"));
    else if (method && !strcmp(method, "notifications/cancelled"))
        cancel_request(t, json_object_get(m, "params"));
    /* Other notifications (roots/list_changed) and answers to server requests have no
     * carrier in this binding: MCP 2026-07-28 has neither. */
    json_decref(m);
}

static void on_flush(uv_timer_t *tm)
{
    mcp_server *s = tm->data;
    if (s->tp && !((acp_tp *)s->tp)->closing) mcp_server_drain(s, send_one);
}

static void start(mcp_server *s)
{
    acp_tp *t = calloc(1, sizeof *t);
    if (!t) {
        mcp_server_fail(s, "out of memory");
        return;
    }
    t->s = s;
    t->peer = s->peer;
    uv_timer_init(s->loop, &t->flush);
    t->flush.data = s;
    s->tp = t;
    mcp_server_open(s);
}

static void on_output(mcp_server *s)
{
    acp_tp *t = s->tp;
    if (t && !t->closing) uv_timer_start(&t->flush, on_flush, 0, 0);
}

static void on_flush_closed(uv_handle_t *h)
{
    mcp_server *s = h->data;
    free(s->tp);
    s->tp = NULL;
    mcp_server_stopped(s);
}

static void stop(mcp_server *s)
{
    acp_tp *t = s->tp;
    if (!t) {
        mcp_server_stopped(s);
        return;
    }
    t->closing = true;
    /* What the client still works on for us is cancelled: nobody will read the answers. */
    while (t->calls) {
        outer *o = t->calls;
        unlink_outer(t, o);
        acp_conn_forget(t->peer, o->call);
        free(o);
    }
    uv_close((uv_handle_t *)&t->flush, on_flush_closed);
}

void mcp_acp_notify(mcp_server *s, const char *request_id, const char *method, const json_t *params)
{
    acp_tp *t = s->tp;
    if (!t || t->closing) return;
    outer *o = t->calls;
    while (o && strcmp(o->rid, request_id)) o = o->next;
    if (!o) return; /* for a request that ended: dropped, as the schema says */
    json_t *m = json_pack("{ss ss}", "jsonrpc", "2.0", "method", method);
    if (m && json_is_object(params)) json_object_set(m, "params", (json_t *)params);
    char *text = m ? json_dumps(m, JSON_COMPACT) : NULL;
    json_decref(m);
    if (text) mcp_server_recv(s, text, strlen(text));
    free(text);
}

const mcp_transport_ops mcp_acp_ops = {.start = start, .on_output = on_output, .stop = stop};
