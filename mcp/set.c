/* SPDX-License-Identifier: Apache-2.0 */
/* acp_mcp_set: validation of McpServer[], the MCP handshake, tools, calls, roots and teardown.
 * Transports only move messages; everything MCP means is decided here. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "acp/version.h"
#include "acp/http.h"
#include "mcp/internal.h"
#include "mcp/libcurl_lazy.h"
#include "rpc/lasterr.h"

/* The 1.0 sizes of the structs the application hands us (when they change: rpc/lasterr.h). */
#define ACP_MCP_OPTS_SIZE_1_0     ACP_STRUCT_SIZE_AT(acp_mcp_opts, no_stdio)
#define ACP_MCP_CALL_CBS_SIZE_1_0 ACP_STRUCT_SIZE_AT(acp_mcp_call_cbs, on_done)

#define DEFAULT_CONNECT_MS 10000
#define DEFAULT_REQUEST_MS 30000
#define DEFAULT_CALL_MS    600000
#define DEFAULT_GRACE_MS   2000
#define MAX_PAGES          1000  /* of one tools/list */
#define MAX_TOOLS          10000 /* of one server */

/* The revision we ask for first, then the older ones we accept when a server answers with
 * them (MCP lifecycle: the server replies with the version it supports). */
static const char *const protocols[] = {"2025-11-25", "2025-06-18", "2025-03-26"};

struct acp_mcp_set {
    uv_loop_t *loop;
    acp_mcp_opts opts;
    mcp_server *servers;
    size_t n;
    char **roots;
    size_t nroots;
    acp_http_client *curl;
    uv_timer_t wait_timer;
    void (*wait_cb)(void *user);
    void *wait_user;
    bool in_new, closing;
    size_t busy; /* handles closing and transports stopping; the set is freed at 0 */
    void (*done)(void *user);
    void *done_user;
};

/* Every request we have in flight, tools/call or internal. */
struct acp_mcp_call {
    mcp_server *srv;
    acp_call *call;
    acp_mcp_call *prev, *next;
    uv_timer_t timer;
    unsigned timeout_ms;
    const char *method;
    void (*on_result)(acp_mcp_call *c, acp_msg *m); /* internal requests */
    acp_mcp_call_cbs cbs;                           /* tools/call */
    void *user;
    int64_t token;
    int local;         /* ACP_ETIMEDOUT or ACP_ECANCELLED when we ended it ourselves */
    bool raw;          /* acp_mcp_request(): any result is the answer, not only an object */
    json_t *rpc_error; /* the server's error object, during on_done */
};

static void release(acp_mcp_set *s);
static void on_wait_timer(uv_timer_t *t);

const char *acp_mcp_status_name(enum acp_mcp_status st)
{
    switch (st) {
    case ACP_MCP_CONNECTING:
        return "connecting";
    case ACP_MCP_READY:
        return "ready";
    case ACP_MCP_FAILED:
        return "failed";
    case ACP_MCP_CLOSED:
        return "closed";
    }
    return "unknown";
}

static char *vfmt(const char *fmt, va_list ap)
{
    char *out = NULL;
    if (vasprintf(&out, fmt, ap) < 0) return NULL;
    return out;
}

static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *f, ...)
{
    va_list ap;
    va_start(ap, f);
    char *s = vfmt(f, ap);
    va_end(ap);
    return s;
}

/* --- logging and change reports ------------------------------------------------------- */

void mcp_server_log(mcp_server *s, const char *f, ...)
{
    va_list ap;
    va_start(ap, f);
    char *line = vfmt(f, ap);
    va_end(ap);
    if (!line) return;
    mcp_server_scrub(s, line); /* server text (errors, stderr) may echo a secret back */
    const acp_mcp_opts *o = &s->set->opts;
    if (o->on_log)
        o->on_log(s->name, line, o->user);
    else
        fprintf(stderr, "mcp[%s]: %s\n", s->name, line);
    free(line);
}

void mcp_server_scrub(const mcp_server *s, char *line)
{
    if (!s->secrets) return;
    for (char **v = s->secrets; *v; v++) {
        size_t n = strlen(*v);
        if (n < 3) continue; /* too short to scrub without mangling ordinary text */
        char *hit;
        while ((hit = strstr(line, *v))) {
            memcpy(hit, "***", 3);
            memmove(hit + 3, hit + n, strlen(hit + n) + 1);
        }
    }
}

unsigned mcp_server_grace_ms(const mcp_server *s)
{
    return s->set->opts.kill_grace_ms;
}

acp_http_client *mcp_server_curl(mcp_server *s)
{
    if (!s->set->curl) s->set->curl = acp_http_client_new(s->loop);
    /* Fails the server with the real reason (libcurl missing, usually); a caller's own
     * mcp_server_fail() after this is a no-op. */
    if (!s->set->curl)
        mcp_server_fail(s, "%s",
                        mcp_libcurl_error() ? mcp_libcurl_error() : "cannot set up libcurl");
    return s->set->curl;
}

static bool all_settled(const acp_mcp_set *s)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->servers[i].status == ACP_MCP_CONNECTING) return false;
    return true;
}

static void changed(mcp_server *srv)
{
    acp_mcp_set *s = srv->set;
    if (s->wait_cb && all_settled(s)) uv_timer_start(&s->wait_timer, on_wait_timer, 0, 0);
    if (!s->in_new && !s->closing && s->opts.on_change)
        s->opts.on_change(s, srv->index, s->opts.user);
}

static void set_reason(mcp_server *srv, char *reason)
{
    free(srv->reason);
    srv->reason = reason;
}

/* --- requests in flight --------------------------------------------------------------- */

static void on_timer_closed(uv_handle_t *h)
{
    acp_mcp_call *c = h->data;
    acp_mcp_set *s = c->srv->set;
    free(c);
    if (--s->busy == 0) release(s);
}

static void call_free(acp_mcp_call *c)
{
    mcp_server *srv = c->srv;
    if (c->prev)
        c->prev->next = c->next;
    else
        srv->rpcs = c->next;
    if (c->next) c->next->prev = c->prev;
    srv->set->busy++;
    uv_close((uv_handle_t *)&c->timer, on_timer_closed);
}

static void on_call_timeout(uv_timer_t *t)
{
    acp_mcp_call *c = t->data;
    c->local = ACP_ETIMEDOUT;
    acp_conn_abandon(c->srv->conn, c->call, ACP_RPC_CONN_CLOSED, "timed out");
}

static void on_response(acp_conn *conn, acp_msg *m, void *user)
{
    acp_mcp_call *c = user;
    uv_timer_stop(&c->timer);
    c->call = NULL;
    if (c->on_result) {
        c->on_result(c, m);
    } else {
        mcp_server *srv = c->srv;
        int st = 0;
        char *err = NULL;
        json_t *res = NULL;
        if (c->local == ACP_ETIMEDOUT) {
            st = ACP_ETIMEDOUT;
            err = fmt("MCP server '%s' did not answer tools/call within %u ms", srv->name,
                      c->timeout_ms);
        } else if (c->local == ACP_ECANCELLED) {
            st = ACP_ECANCELLED;
            err = strdup("the tool call was cancelled");
        } else if (c->local == ACP_ECLOSED) {
            st = ACP_ECLOSED;
            err = fmt("MCP server '%s': %s", srv->name, acp_msg_error_message(m));
        } else if (acp_msg_is_error(m) && acp_msg_error_code(m) == ACP_RPC_CONN_CLOSED) {
            st = ACP_ECLOSED;
            err = srv->status == ACP_MCP_CLOSED ? fmt("the MCP session is closing")
                  : srv->reason ? fmt("MCP server '%s' failed: %s", srv->name, srv->reason)
                                : fmt("MCP server '%s' went away", srv->name);
        } else if (acp_msg_is_error(m)) {
            st = ACP_EPROTO;
            err = fmt("MCP server '%s' answered error %d: %s", srv->name, acp_msg_error_code(m),
                      acp_msg_error_message(m));
            c->rpc_error = json_pack("{si ss}", "code", acp_msg_error_code(m), "message",
                                     acp_msg_error_message(m));
            json_t *data = acp_msg_error_data(m);
            if (c->rpc_error && data) json_object_set(c->rpc_error, "data", data);
        } else if (!(res = acp_msg_result(m)) || (!c->raw && !json_is_object(res))) {
            st = ACP_EPROTO;
            res = NULL;
            err = fmt("MCP server '%s' sent a %s result that is not %s", srv->name, c->method,
                      c->raw ? "JSON" : "an object");
        }
        if (err) mcp_server_scrub(srv, err);
        if (c->cbs.on_done)
            c->cbs.on_done(c, st, res, st ? (err ? err : "out of memory") : NULL, c->user);
        free(err);
        json_decref(c->rpc_error);
        c->rpc_error = NULL;
    }
    call_free(c);
}

/* Sends a request; timeout_ms 0 means none (the connect timer covers the handshake). label
 * names it in errors (static: the call keeps it). */
static acp_mcp_call *send_request_as(mcp_server *srv, const char *method, const char *label,
                                     json_t *params, unsigned timeout_ms,
                                     void (*on_result)(acp_mcp_call *, acp_msg *))
{
    acp_mcp_call *c = calloc(1, sizeof *c);
    if (!c) {
        json_decref(params);
        return NULL;
    }
    c->srv = srv;
    c->method = label;
    c->on_result = on_result;
    c->timeout_ms = timeout_ms;
    if (acp_conn_call(srv->conn, method, params, on_response, c, &c->call)) {
        free(c);
        return NULL;
    }
    uv_timer_init(srv->loop, &c->timer);
    c->timer.data = c;
    if (timeout_ms) uv_timer_start(&c->timer, on_call_timeout, timeout_ms, 0);
    c->next = srv->rpcs;
    if (c->next) c->next->prev = c;
    srv->rpcs = c;
    return c;
}

static acp_mcp_call *send_request(mcp_server *srv, const char *method, json_t *params,
                                  unsigned timeout_ms, void (*on_result)(acp_mcp_call *, acp_msg *))
{
    return send_request_as(srv, method, method, params, timeout_ms, on_result);
}

/* --- handshake ------------------------------------------------------------------------ */

static void become_ready(mcp_server *srv)
{
    uv_timer_stop(&srv->connect_timer);
    if (srv->status != ACP_MCP_CONNECTING) return;
    srv->status = ACP_MCP_READY;
    set_reason(srv, NULL);
    changed(srv);
}

static void list_tools(mcp_server *srv, const char *cursor);

/* The tools/list under way is abandoned: what it collected goes. */
static void drop_listing(mcp_server *srv)
{
    json_decref(srv->paging);
    srv->paging = NULL;
    srv->listing = false;
}

static void on_tools_list(acp_mcp_call *c, acp_msg *m)
{
    mcp_server *srv = c->srv;
    if (srv->status == ACP_MCP_FAILED || srv->status == ACP_MCP_CLOSED || srv->restarting) {
        drop_listing(srv);
        return;
    }
    json_t *res = acp_msg_is_error(m) ? NULL : acp_msg_result(m);
    json_t *tools = res ? json_object_get(res, "tools") : NULL;
    if (!json_is_array(tools)) {
        drop_listing(srv);
        if (c->local == ACP_ETIMEDOUT) {
            mcp_server_log(srv, "tools/list timed out; keeping the previous tool list");
        } else if (srv->status == ACP_MCP_CONNECTING) {
            if (acp_msg_is_error(m))
                mcp_server_fail(srv, "tools/list failed: %s", acp_msg_error_message(m));
            else
                mcp_server_fail(srv, "tools/list answered without a tools array");
        } else {
            mcp_server_log(srv, "tools/list failed; keeping the previous tool list");
        }
        return;
    }
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t)
    {
        if (json_is_object(t) && json_is_string(json_object_get(t, "name")))
            json_array_append(srv->paging, t);
    }
    const char *next = json_string_value(json_object_get(res, "nextCursor"));
    /* A server that pages forever gets what it listed so far. */
    if (next && *next && json_array_size(srv->paging) >= MAX_TOOLS)
        mcp_server_log(srv, "more than %d tools: the rest are ignored", MAX_TOOLS);
    else if (next && *next && ++srv->pages < MAX_PAGES) {
        list_tools(srv, next);
        return;
    } else if (next && *next) {
        mcp_server_log(srv, "tools/list still paging after %d pages: the rest are ignored",
                       MAX_PAGES);
    }
    json_decref(srv->tools);
    srv->tools = srv->paging;
    srv->paging = NULL;
    srv->listing = false;
    if (srv->relist) {
        srv->relist = false;
        list_tools(srv, NULL);
        if (srv->status == ACP_MCP_CONNECTING) return;
    }
    if (srv->status == ACP_MCP_CONNECTING)
        become_ready(srv);
    else
        changed(srv);
}

static void list_tools(mcp_server *srv, const char *cursor)
{
    if (!cursor) {
        if (srv->listing) {
            srv->relist = true; /* a change arrived mid-listing: list again once done */
            return;
        }
        srv->listing = true;
        srv->pages = 0;
        json_decref(srv->paging);
        srv->paging = json_array();
    }
    json_t *params = cursor ? json_pack("{ss}", "cursor", cursor) : NULL;
    unsigned to = srv->status == ACP_MCP_CONNECTING ? 0 : srv->set->opts.request_timeout_ms;
    if (!send_request(srv, "tools/list", params, to, on_tools_list)) {
        srv->listing = false;
        if (srv->status == ACP_MCP_CONNECTING) mcp_server_fail(srv, "cannot send tools/list");
    }
}

static void on_initialize(acp_mcp_call *c, acp_msg *m)
{
    mcp_server *srv = c->srv;
    if (srv->status != ACP_MCP_CONNECTING || srv->restarting) return;
    if (acp_msg_is_error(m)) {
        if (acp_msg_error_code(m) == ACP_RPC_CONN_CLOSED) return; /* the failure says why */
        mcp_server_fail(srv, "initialize failed: %s (%d)", acp_msg_error_message(m),
                        acp_msg_error_code(m));
        return;
    }
    json_t *res = acp_msg_result(m);
    const char *ver = json_string_value(json_object_get(res, "protocolVersion"));
    size_t i = 0;
    while (ver && i < sizeof protocols / sizeof *protocols && strcmp(ver, protocols[i])) i++;
    if (!ver || i == sizeof protocols / sizeof *protocols) {
        mcp_server_fail(srv, "the server speaks MCP revision '%.40s', not one we support",
                        ver ? ver : "(none)");
        return;
    }
    srv->protocol = strdup(ver);
    json_t *caps = json_object_get(res, "capabilities");
    srv->caps = json_is_object(caps) ? json_incref(caps) : json_object();
    json_t *info = json_object_get(res, "serverInfo");
    srv->info = json_is_object(info) ? json_incref(info) : json_object();
    if (acp_conn_notify(srv->conn, "notifications/initialized", NULL)) {
        mcp_server_fail(srv, "cannot send notifications/initialized");
        return;
    }
    srv->initialized = true;
    if (srv->ops->on_initialized) srv->ops->on_initialized(srv);
    if (srv->status != ACP_MCP_CONNECTING) return;
    /* Without the tools capability the server has no tools to list (and may not serve
     * tools/list at all). */
    if (json_object_get(srv->caps, "tools"))
        list_tools(srv, NULL);
    else
        become_ready(srv);
}

/* MCP 2026-07-28 (MCP over ACP) has no initialize: server/discover says what the server is.
 * A server without it (an error answer) is asked for its tools all the same. */
static void on_discover(acp_mcp_call *c, acp_msg *m)
{
    mcp_server *srv = c->srv;
    if (srv->status != ACP_MCP_CONNECTING) return;
    if (acp_msg_is_error(m) && acp_msg_error_code(m) == ACP_RPC_CONN_CLOSED) return;
    json_t *res = acp_msg_is_error(m) ? NULL : acp_msg_result(m);
    json_t *caps = json_object_get(res, "capabilities");
    json_t *info = json_object_get(res, "serverInfo");
    srv->protocol = strdup("2026-07-28");
    srv->caps = json_is_object(caps) ? json_incref(caps) : NULL;
    srv->info = json_is_object(info) ? json_incref(info) : json_object();
    srv->initialized = true;
    if (!srv->caps || json_object_get(srv->caps, "tools"))
        list_tools(srv, NULL);
    else
        become_ready(srv);
}

void mcp_server_open(mcp_server *srv)
{
    if (srv->status != ACP_MCP_CONNECTING) return;
    if (srv->kind == MCP_ACP) {
        if (!send_request(srv, "server/discover", NULL, 0, on_discover))
            mcp_server_fail(srv, "cannot send server/discover");
        return;
    }
    json_t *params = json_pack("{ss s{s{sb}} s{ss ss}}", "protocolVersion", protocols[0],
                               "capabilities", "roots", "listChanged", 1, "clientInfo", "name",
                               "libacp", "version", ACP_VERSION_STRING);
    if (!send_request(srv, "initialize", params, 0, on_initialize))
        mcp_server_fail(srv, "cannot send initialize");
}

static void on_connect_timeout(uv_timer_t *t)
{
    mcp_server *srv = t->data;
    unsigned ms = srv->set->opts.connect_timeout_ms;
    if (!srv->initialized)
        mcp_server_fail(srv, "no answer to %s within %u ms",
                        srv->kind == MCP_ACP ? "server/discover" : "initialize", ms);
    else
        mcp_server_fail(srv, "tools/list not answered within %u ms", ms);
}

/* --- the transport's reports ---------------------------------------------------------- */

void mcp_server_fail(mcp_server *srv, const char *f, ...)
{
    if (srv->status == ACP_MCP_FAILED || srv->status == ACP_MCP_CLOSED) return;
    va_list ap;
    va_start(ap, f);
    char *reason = vfmt(f, ap);
    va_end(ap);
    if (reason) mcp_server_scrub(srv, reason);
    set_reason(srv, reason ? reason : strdup("out of memory"));
    srv->status = ACP_MCP_FAILED;
    uv_timer_stop(&srv->connect_timer);
    mcp_server_log(srv, "failed: %s", srv->reason ? srv->reason : "out of memory");
    acp_conn_eof(srv->conn);
    if (!srv->stopping) {
        srv->stopping = true;
        srv->set->busy++;
        srv->ops->stop(srv);
    }
    changed(srv);
}

void mcp_server_amend(mcp_server *srv, const char *f, ...)
{
    if (srv->status != ACP_MCP_FAILED) return;
    va_list ap;
    va_start(ap, f);
    char *reason = vfmt(f, ap);
    va_end(ap);
    if (!reason) return;
    mcp_server_scrub(srv, reason);
    set_reason(srv, reason);
    mcp_server_log(srv, "%s", reason);
    changed(srv);
}

void mcp_server_recv(mcp_server *srv, const char *msg, size_t n)
{
    if (acp_conn_closed(srv->conn)) return;
    if (acp_conn_recv(srv->conn, msg, n) || acp_conn_recv(srv->conn, "\n", 1))
        mcp_server_fail(srv, "out of memory");
}

void mcp_server_drain(mcp_server *srv, void (*send)(mcp_server *, const char *, size_t, acp_span))
{
    size_t n;
    char *out = acp_conn_out_take(srv->conn, &n);
    for (size_t i = 0; out && i < n && !srv->stopping;) {
        char *nl = memchr(out + i, '\n', n - i);
        size_t len = nl ? (size_t)(nl - (out + i)) : n - i;
        acp_span v = {out + i, len}, id = {0};
        if (len && acp_json_member(v, "method", &(acp_span){0}) && acp_json_member(v, "id", &id))
            send(srv, v.p, len, id);
        else if (len)
            send(srv, v.p, len, (acp_span){0});
        i += len + 1;
    }
    free(out);
}

static bool id_is(const acp_mcp_call *c, acp_span id)
{
    char buf[32];
    if (!c->call) return false;
    int k = snprintf(buf, sizeof buf, "%lld", (long long)acp_call_id(c->call));
    return (size_t)k == id.n && memcmp(buf, id.p, id.n) == 0;
}

bool mcp_server_awaits(const mcp_server *srv, acp_span id)
{
    for (const acp_mcp_call *c = srv->rpcs; c; c = c->next)
        if (id_is(c, id)) return true;
    return false;
}

void mcp_server_request_failed(mcp_server *srv, acp_span id, const char *message)
{
    for (acp_mcp_call *c = srv->rpcs; c; c = c->next) {
        if (id_is(c, id)) {
            if (c->on_result && srv->status == ACP_MCP_CONNECTING) {
                mcp_server_fail(srv, "%s failed: %s", c->method, message);
                return;
            }
            c->local = ACP_ECLOSED;
            acp_conn_abandon(srv->conn, c->call, ACP_RPC_CONN_CLOSED, message);
            return;
        }
    }
}

void mcp_server_stopped(mcp_server *srv)
{
    acp_mcp_set *s = srv->set;
    srv->stopped = true;
    if (--s->busy == 0) release(s);
}

/* --- what the server may ask of us ---------------------------------------------------- */

static int append_uri(acp_buf *b, const char *path)
{
    static const char hex[] = "0123456789ABCDEF";
    if (acp_buf_append(b, "file://", 7)) return ACP_ENOMEM;
    for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
        unsigned char ch = *p;
        bool plain = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                     (ch >= '0' && ch <= '9') || strchr("/-._~", ch);
        if (plain ? acp_buf_putc(b, (char)ch)
                  : acp_buf_printf(b, "%%%c%c", hex[ch >> 4], hex[ch & 15]))
            return ACP_ENOMEM;
    }
    return 0;
}

static void on_roots_list(acp_conn *conn, acp_req *req, void *user)
{
    mcp_server *srv = user;
    acp_mcp_set *s = srv->set;
    json_t *roots = json_array();
    for (size_t i = 0; i < s->nroots; i++) {
        acp_buf uri = {0};
        const char *path = s->roots[i];
        const char *base = strrchr(path, '/');
        base = base && base[1] ? base + 1 : path;
        if (append_uri(&uri, path) == 0 && acp_buf_cstr(&uri))
            json_array_append_new(roots, json_pack("{ss ss}", "uri", uri.data, "name", base));
        acp_buf_free(&uri);
    }
    acp_req_reply(req, json_pack("{so}", "roots", roots));
}

static void on_ping(acp_conn *conn, acp_req *req, void *user)
{
    acp_req_reply(req, NULL);
}

static void on_list_changed(acp_conn *conn, acp_msg *m, void *user)
{
    mcp_server *srv = user;
    if (srv->status == ACP_MCP_READY || srv->listing) list_tools(srv, NULL);
}

static void on_progress(acp_conn *conn, acp_msg *m, void *user)
{
    mcp_server *srv = user;
    json_t *p = acp_msg_params(m);
    json_t *tok = json_object_get(p, "progressToken");
    if (!json_is_integer(tok)) return;
    for (acp_mcp_call *c = srv->rpcs; c; c = c->next) {
        if (c->on_result || c->token != json_integer_value(tok)) continue;
        /* Progress shows the server is alive: the timeout counts from the last sign. */
        if (c->timeout_ms) uv_timer_start(&c->timer, on_call_timeout, c->timeout_ms, 0);
        json_t *total = json_object_get(p, "total");
        if (c->cbs.on_progress)
            c->cbs.on_progress(c, json_number_value(json_object_get(p, "progress")),
                               json_is_number(total) ? json_number_value(total) : -1,
                               json_string_value(json_object_get(p, "message")), c->user);
        return;
    }
}

static void on_conn_log(acp_conn *conn, const char *message, void *user)
{
    mcp_server_log(user, "%s", message);
}

static void on_conn_output(acp_conn *conn, void *user)
{
    mcp_server *srv = user;
    if (srv->ops->on_output && !srv->stopping) srv->ops->on_output(srv);
}

/* The server's JSON-RPC connection, with what we serve registered. NULL on ENOMEM. */
static acp_conn *make_conn(mcp_server *srv)
{
    acp_conn_opts co = {.struct_size = sizeof(acp_conn_opts),
                        .cancel_method = "notifications/cancelled",
                        .on_output = on_conn_output,
                        .on_log = on_conn_log,
                        .user = srv};
    acp_conn *c = acp_conn_new(&co);
    if (c && (acp_conn_on(c, "roots/list", on_roots_list, NULL, srv) ||
              acp_conn_on(c, "ping", on_ping, NULL, srv) ||
              acp_conn_on(c, "notifications/tools/list_changed", NULL, on_list_changed, srv) ||
              acp_conn_on(c, "notifications/progress", NULL, on_progress, srv))) {
        acp_conn_free(c);
        c = NULL;
    }
    return c;
}

void mcp_server_reinit(mcp_server *srv, const char *why)
{
    if (srv->status != ACP_MCP_READY) {
        mcp_server_fail(srv, "%s", why);
        return;
    }
    mcp_server_log(srv, "%s: starting a new MCP session", why);
    srv->status = ACP_MCP_CONNECTING;
    set_reason(srv, strdup(why)); /* what calls in flight report */
    srv->restarting = true;
    acp_conn_eof(srv->conn);
    srv->restarting = false;
    acp_conn *fresh = make_conn(srv);
    if (!fresh) {
        mcp_server_fail(srv, "out of memory");
        return;
    }
    acp_conn_free(srv->conn);
    srv->conn = fresh;
    srv->initialized = false;
    drop_listing(srv);
    srv->relist = false;
    free(srv->protocol);
    srv->protocol = NULL;
    json_decref(srv->caps);
    srv->caps = NULL;
    json_decref(srv->info);
    srv->info = NULL;
    changed(srv);
    if (srv->status != ACP_MCP_CONNECTING) return; /* closed from the callback */
    uv_timer_start(&srv->connect_timer, on_connect_timeout, srv->set->opts.connect_timeout_ms, 0);
    mcp_server_open(srv);
}

/* --- building a set ------------------------------------------------------------------- */

static char *errf(size_t i, const char *f, ...) __attribute__((format(printf, 2, 3)));
static char *errf(size_t i, const char *f, ...)
{
    va_list ap;
    va_start(ap, f);
    char *tail = vfmt(f, ap);
    va_end(ap);
    char *out = tail ? fmt("mcpServers[%zu]: %s", i, tail) : NULL;
    free(tail);
    return out;
}

/* A [{name, value}] list (null or absent: empty). Checks only; returns NULL or the error. */
static char *check_pairs(size_t i, const json_t *srv, const char *key, bool header)
{
    json_t *a = json_object_get(srv, key);
    if (!a || json_is_null(a)) return NULL;
    if (!json_is_array(a)) return errf(i, "%s must be an array", key);
    size_t k;
    json_t *e;
    json_array_foreach(a, k, e)
    {
        const char *n = json_string_value(json_object_get(e, "name"));
        const char *v = json_string_value(json_object_get(e, "value"));
        if (!n || !v) return errf(i, "%s[%zu] needs string name and value", key, k);
        if (!*n || strlen(n) != json_string_length(json_object_get(e, "name")))
            return errf(i, "%s[%zu].name is empty or holds a NUL", key, k);
        if (strlen(v) != json_string_length(json_object_get(e, "value")))
            return errf(i, "%s[%zu].value holds a NUL", key, k); /* never echo a value */
        if (!header && strchr(n, '=')) return errf(i, "%s[%zu].name contains '='", key, k);
        if (header) {
            for (const char *p = n; *p; p++)
                if (*p <= ' ' || *p >= 127 || strchr("()<>@,;:\\\"/[]?={}", *p))
                    return errf(i, "%s[%zu].name is not an HTTP header name", key, k);
            if (strpbrk(v, "\r\n")) return errf(i, "%s[%zu].value contains a line break", key, k);
        }
    }
    return NULL;
}

static char *validate(const json_t *servers, const acp_mcp_opts *o)
{
    if (!servers || json_is_null(servers)) return NULL;
    if (!json_is_array(servers)) return strdup("mcpServers must be an array");
    size_t i;
    json_t *e;
    json_array_foreach(servers, i, e)
    {
        if (!json_is_object(e)) return errf(i, "must be an object");
        const char *name = json_string_value(json_object_get(e, "name"));
        if (!name || !*name) return errf(i, "name must be a non-empty string");
        for (size_t j = 0; j < i; j++)
            if (!strcmp(name,
                        json_string_value(json_object_get(json_array_get(servers, j), "name"))))
                return errf(i, "duplicate server name '%s'", name);
        json_t *type = json_object_get(e, "type");
        if (!type) {
            if (!json_is_string(json_object_get(e, "command")))
                return errf(i, "command must be a string");
            json_t *args = json_object_get(e, "args");
            if (args && !json_is_null(args)) {
                if (!json_is_array(args)) return errf(i, "args must be an array of strings");
                size_t k;
                json_t *a;
                json_array_foreach(args, k, a)
                {
                    if (!json_is_string(a) || strlen(json_string_value(a)) != json_string_length(a))
                        return errf(i, "args[%zu] must be a string without NUL", k);
                }
            }
            char *err = check_pairs(i, e, "env", false);
            if (err) return err;
            continue;
        }
        const char *t = json_string_value(type);
        if (t && !strcmp(t, "acp")) {
            if (!o->acp_peer) return errf(i, "type \"acp\" is not supported by this agent");
            json_t *id = json_object_get(e, "serverId");
            if (!json_is_string(id) || !json_string_length(id) ||
                strlen(json_string_value(id)) != json_string_length(id))
                return errf(i, "serverId must be a non-empty string without NUL");
            /* The schema: one id names one server on the connection. */
            for (size_t j = 0; j < i; j++) {
                const json_t *p = json_array_get(servers, j);
                const char *pt = json_string_value(json_object_get(p, "type"));
                if (pt && !strcmp(pt, "acp") &&
                    json_equal(json_object_get(p, "serverId"), (json_t *)id))
                    return errf(i, "duplicate serverId '%s'", json_string_value(id));
            }
            continue;
        }
        bool http = t && !strcmp(t, "http"), sse = t && !strcmp(t, "sse");
        if (!http && !sse)
            return errf(i, "type must be \"http\", \"sse\" or \"acp\" (or absent for stdio)");
        if ((http && !o->http) || (sse && !o->sse))
            return errf(i, "type \"%s\" is not supported by this agent", t);
        if (!json_is_string(json_object_get(e, "url"))) return errf(i, "url must be a string");
        char *err = check_pairs(i, e, "headers", true);
        if (err) return err;
    }
    return NULL;
}

static char **strv_new(size_t n)
{
    return calloc(n + 1, sizeof(char *));
}

static int configure_stdio(mcp_server *srv, const json_t *e)
{
    json_t *args = json_object_get(e, "args");
    json_t *env = json_object_get(e, "env");
    size_t nargs = json_is_array(args) ? json_array_size(args) : 0;
    size_t nenv = json_is_array(env) ? json_array_size(env) : 0;
    srv->command = strdup(json_string_value(json_object_get(e, "command")));
    srv->argv = strv_new(nargs + 1);
    srv->env = strv_new(nenv + 3);
    srv->secrets = strv_new(nenv);
    if (!srv->command || !srv->argv || !srv->env || !srv->secrets) return ACP_ENOMEM;
    if (!(srv->argv[0] = strdup(srv->command))) return ACP_ENOMEM;
    for (size_t k = 0; k < nargs; k++)
        if (!(srv->argv[k + 1] = strdup(json_string_value(json_array_get(args, k)))))
            return ACP_ENOMEM;
    /* A minimal base, so the server sees exactly what the client gave plus what any program
     * needs to run; the given entries replace base entries of the same name. */
    const char *base[3][2] = {{"PATH", "/usr/local/bin:/usr/bin:/bin"},
                              {"HOME", getenv("HOME")},
                              {"LANG", getenv("LANG")}};
    size_t ne = 0;
    for (size_t b = 0; b < 3; b++) {
        if (!base[b][1]) continue;
        bool given = false;
        for (size_t k = 0; k < nenv; k++)
            given |= !strcmp(base[b][0],
                             json_string_value(json_object_get(json_array_get(env, k), "name")));
        if (given) continue;
        if (!(srv->env[ne++] = fmt("%s=%s", base[b][0], base[b][1]))) return ACP_ENOMEM;
    }
    for (size_t k = 0; k < nenv; k++) {
        json_t *p = json_array_get(env, k);
        const char *v = json_string_value(json_object_get(p, "value"));
        if (!(srv->env[ne++] = fmt("%s=%s", json_string_value(json_object_get(p, "name")), v)))
            return ACP_ENOMEM;
        if (!(srv->secrets[k] = strdup(v))) return ACP_ENOMEM;
    }
    return 0;
}

static int configure_http(mcp_server *srv, const json_t *e)
{
    json_t *hs = json_object_get(e, "headers");
    size_t nh = json_is_array(hs) ? json_array_size(hs) : 0;
    srv->url = strdup(json_string_value(json_object_get(e, "url")));
    srv->headers = strv_new(nh);
    srv->secrets = strv_new(nh);
    if (!srv->url || !srv->headers || !srv->secrets) return ACP_ENOMEM;
    /* The transport owns the headers that carry the protocol itself; a client's copy (the
     * seed page's example sends Content-Type) would be a duplicate the server may refuse. */
    static const char *const owned[] = {"Accept",         "Content-Type",         "Content-Length",
                                        "Mcp-Session-Id", "MCP-Protocol-Version", "Last-Event-ID"};
    size_t kept = 0;
    for (size_t k = 0; k < nh; k++) {
        json_t *p = json_array_get(hs, k);
        const char *name = json_string_value(json_object_get(p, "name"));
        const char *v = json_string_value(json_object_get(p, "value"));
        bool skip = false;
        for (size_t o = 0; o < sizeof owned / sizeof *owned; o++)
            skip |= !strcasecmp(name, owned[o]);
        if (skip) {
            mcp_server_log(srv, "header %s not sent as given: the transport sets it", name);
            continue;
        }
        if (!(srv->headers[kept] = fmt("%s: %s", name, v))) return ACP_ENOMEM;
        if (!(srv->secrets[kept++] = strdup(v))) return ACP_ENOMEM;
    }
    return 0;
}

static int configure_acp(mcp_server *srv, const json_t *e, acp_conn *peer)
{
    srv->peer = peer;
    srv->server_id = strdup(json_string_value(json_object_get(e, "serverId")));
    return srv->server_id ? 0 : ACP_ENOMEM;
}

static int copy_roots(acp_mcp_set *s, const char *const *roots, size_t n)
{
    char **v = strv_new(n);
    if (!v) return ACP_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        if (!(v[i] = strdup(roots[i]))) {
            mcp_strv_free(v);
            return ACP_ENOMEM;
        }
    }
    mcp_strv_free(s->roots);
    s->roots = v;
    s->nroots = n;
    return 0;
}

static void start_server(mcp_server *srv)
{
    uv_timer_start(&srv->connect_timer, on_connect_timeout, srv->set->opts.connect_timeout_ms, 0);
    if (srv->kind == MCP_STDIO && srv->set->opts.no_stdio) {
        mcp_server_fail(srv, "stdio MCP servers are refused here: this agent runs no commands "
                             "for its network clients (its operator may allow them: acp-agent "
                             "--allow-stdio-mcp)");
        return;
    }
    if (srv->kind == MCP_STDIO && srv->command[0] != '/') {
        mcp_server_fail(srv, "command must be an absolute path: '%s'", srv->command);
        return;
    }
    if ((srv->kind == MCP_HTTP || srv->kind == MCP_SSE) && strncmp(srv->url, "http://", 7) &&
        strncmp(srv->url, "https://", 8)) {
        mcp_server_fail(srv, "url must start with http:// or https://");
        return;
    }
    srv->ops->start(srv);
}

int acp_mcp_set_new(uv_loop_t *loop, const json_t *servers, const acp_mcp_opts *opts,
                    const char *const *roots, size_t nroots, acp_mcp_set **out)
{
    *out = NULL;
    acp_mcp_opts o;
    int rc = acp_struct_read(&o, sizeof o, ACP_MCP_OPTS_SIZE_1_0, opts, "acp_mcp_opts");
    if (rc) return rc;
    if (!o.connect_timeout_ms) o.connect_timeout_ms = DEFAULT_CONNECT_MS;
    if (!o.request_timeout_ms) o.request_timeout_ms = DEFAULT_REQUEST_MS;
    if (!o.call_timeout_ms) o.call_timeout_ms = DEFAULT_CALL_MS;
    if (!o.kill_grace_ms) o.kill_grace_ms = DEFAULT_GRACE_MS;
    char *err = validate(servers, &o);
    if (err) {
        acp_error_set(ACP_EINVAL, "%s", err);
        free(err);
        return ACP_EINVAL;
    }
    acp_mcp_set *s = calloc(1, sizeof *s);
    size_t n = json_is_array(servers) ? json_array_size(servers) : 0;
    if (!s || !(s->servers = calloc(n ? n : 1, sizeof *s->servers)) ||
        copy_roots(s, roots, nroots)) {
        if (s) free(s->servers);
        free(s);
        return acp_error_set(ACP_ENOMEM, "out of memory making an MCP server set");
    }
    s->loop = loop;
    s->opts = o;
    s->n = n;
    uv_timer_init(loop, &s->wait_timer);
    s->wait_timer.data = s;
    rc = 0;
    size_t i;
    for (i = 0; i < n && rc == 0; i++) {
        json_t *e = json_array_get(servers, i);
        mcp_server *srv = &s->servers[i];
        srv->set = s;
        srv->index = i;
        srv->loop = loop;
        srv->name = strdup(json_string_value(json_object_get(e, "name")));
        const char *type = json_string_value(json_object_get(e, "type"));
        srv->kind = !type                   ? MCP_STDIO
                    : !strcmp(type, "http") ? MCP_HTTP
                    : !strcmp(type, "acp")  ? MCP_ACP
                                            : MCP_SSE;
        static const mcp_transport_ops *const ops[] = {&mcp_stdio_ops, &mcp_http_ops, &mcp_sse_ops,
                                                       &mcp_acp_ops};
        srv->ops = ops[srv->kind];
        srv->tools = json_array();
        srv->next_token = 1;
        uv_timer_init(loop, &srv->connect_timer);
        srv->connect_timer.data = srv;
        srv->conn = make_conn(srv);
        if (!srv->name || !srv->tools || !srv->conn) rc = ACP_ENOMEM;
        if (rc == 0)
            rc = srv->kind == MCP_STDIO ? configure_stdio(srv, e)
                 : srv->kind == MCP_ACP ? configure_acp(srv, e, o.acp_peer)
                                        : configure_http(srv, e);
        srv->stopped = true; /* until started: nothing to stop */
    }
    if (rc) {
        /* Nothing was started: the handles are plain timers, closed through the usual path
         * (servers past the failing one were never touched). */
        s->n = i;
        acp_mcp_set_close(s, NULL, NULL);
        return acp_error_set(rc, "mcpServers[%zu]: %s", i - 1, acp_strerror(rc));
    }
    s->in_new = true;
    for (i = 0; i < n; i++) {
        s->servers[i].stopped = false;
        start_server(&s->servers[i]);
    }
    s->in_new = false;
    *out = s;
    return 0;
}

/* --- waiting, roots, closing ---------------------------------------------------------- */

static void on_wait_timer(uv_timer_t *t)
{
    acp_mcp_set *s = t->data;
    void (*cb)(void *) = s->wait_cb;
    s->wait_cb = NULL;
    if (cb) cb(s->wait_user);
}

void acp_mcp_set_wait(acp_mcp_set *s, unsigned timeout_ms, void (*cb)(void *user), void *user)
{
    s->wait_cb = cb;
    s->wait_user = user;
    uv_timer_start(&s->wait_timer, on_wait_timer, all_settled(s) ? 0 : timeout_ms, 0);
}

int acp_mcp_set_roots(acp_mcp_set *s, const char *const *roots, size_t nroots)
{
    bool same = nroots == s->nroots;
    for (size_t i = 0; same && i < nroots; i++) same = !strcmp(roots[i], s->roots[i]);
    if (same) return 0;
    if (copy_roots(s, roots, nroots)) return acp_error_set(ACP_ENOMEM, "out of memory for roots");
    for (size_t i = 0; i < s->n; i++)
        if (s->servers[i].status == ACP_MCP_READY)
            acp_conn_notify(s->servers[i].conn, "notifications/roots/list_changed", NULL);
    return 0;
}

static void on_set_handle_closed(uv_handle_t *h)
{
    acp_mcp_set *s = h->data;
    if (--s->busy == 0) release(s);
}

static void on_curl_closed(void *user)
{
    acp_mcp_set *s = user;
    s->curl = NULL;
    if (--s->busy == 0) release(s);
}

static void free_server(mcp_server *srv)
{
    acp_conn_free(srv->conn);
    free(srv->name);
    free(srv->command);
    mcp_strv_free(srv->argv);
    mcp_strv_free(srv->env);
    mcp_strv_free(srv->secrets);
    free(srv->url);
    free(srv->server_id);
    mcp_strv_free(srv->headers);
    free(srv->reason);
    free(srv->protocol);
    json_decref(srv->info);
    json_decref(srv->caps);
    json_decref(srv->tools);
    json_decref(srv->paging);
}

/* busy reached 0 while closing. Transports are stopped before the curl driver closes: they
 * hand their easy handles back to it first. */
static void release(acp_mcp_set *s)
{
    if (!s->closing) return;
    if (s->curl) {
        s->busy++;
        acp_http_client_close(s->curl, on_curl_closed, s);
        return;
    }
    for (size_t i = 0; i < s->n; i++) free_server(&s->servers[i]);
    free(s->servers);
    mcp_strv_free(s->roots);
    void (*done)(void *) = s->done;
    void *user = s->done_user;
    free(s);
    if (done) done(user);
}

void acp_mcp_set_close(acp_mcp_set *s, void (*done)(void *user), void *user)
{
    if (s->closing) return;
    s->closing = true;
    s->done = done;
    s->done_user = user;
    s->busy++; /* held until every step below has been started */
    if (s->wait_cb) {
        void (*cb)(void *) = s->wait_cb;
        s->wait_cb = NULL;
        cb(s->wait_user);
    }
    for (size_t i = 0; i < s->n; i++) {
        mcp_server *srv = &s->servers[i];
        srv->status = ACP_MCP_CLOSED;
        /* Tool calls in flight are cancelled on the wire (a stdio server still reads what
         * was queued before its stdin closes), then everything else ends with the conn. */
        for (acp_mcp_call *c = srv->rpcs; c;) {
            if (c->on_result || !c->call) {
                c = c->next;
                continue;
            }
            c->local = ACP_ECLOSED;
            acp_conn_abandon(srv->conn, c->call, ACP_RPC_CONN_CLOSED, "the MCP session is closing");
            c = srv->rpcs; /* the list changed under us */
        }
        if (srv->conn) acp_conn_eof(srv->conn); /* calls in flight end with ACP_ECLOSED */
        if (!srv->stopping && !srv->stopped) {
            srv->stopping = true;
            s->busy++;
            srv->ops->stop(srv);
        }
        s->busy++;
        uv_close((uv_handle_t *)&srv->connect_timer, on_set_handle_closed);
        srv->connect_timer.data = s;
    }
    s->busy++;
    uv_close((uv_handle_t *)&s->wait_timer, on_set_handle_closed);
    if (--s->busy == 0) release(s); /* not reached: the handles above are still closing */
}

/* --- queries -------------------------------------------------------------------------- */

size_t acp_mcp_set_count(const acp_mcp_set *s)
{
    return s->n;
}

int acp_mcp_server_find(const acp_mcp_set *s, const char *name, size_t *index)
{
    for (size_t i = 0; i < s->n; i++) {
        if (!strcmp(s->servers[i].name, name)) {
            if (index) *index = i;
            return 0;
        }
    }
    return acp_error_set(ACP_ENOTFOUND, "no MCP server named '%s'", name);
}

const char *acp_mcp_server_name(const acp_mcp_set *s, size_t i)
{
    return i < s->n ? s->servers[i].name : NULL;
}

const char *acp_mcp_server_transport(const acp_mcp_set *s, size_t i)
{
    static const char *const names[] = {"stdio", "http", "sse", "acp"};
    return i < s->n ? names[s->servers[i].kind] : NULL;
}

enum acp_mcp_status acp_mcp_server_status(const acp_mcp_set *s, size_t i, const char **reason)
{
    if (reason) *reason = NULL;
    if (i >= s->n) return ACP_MCP_FAILED;
    if (reason && s->servers[i].status == ACP_MCP_FAILED) *reason = s->servers[i].reason;
    return s->servers[i].status;
}

const char *acp_mcp_server_protocol(const acp_mcp_set *s, size_t i)
{
    return i < s->n && s->servers[i].status == ACP_MCP_READY ? s->servers[i].protocol : NULL;
}

const json_t *acp_mcp_server_info(const acp_mcp_set *s, size_t i)
{
    return i < s->n && s->servers[i].status == ACP_MCP_READY ? s->servers[i].info : NULL;
}

static const json_t *tool(const acp_mcp_set *s, size_t i, size_t t)
{
    if (i >= s->n || s->servers[i].status != ACP_MCP_READY) return NULL;
    return json_array_get(s->servers[i].tools, t);
}

size_t acp_mcp_tool_count(const acp_mcp_set *s, size_t i)
{
    if (i >= s->n || s->servers[i].status != ACP_MCP_READY) return 0;
    return json_array_size(s->servers[i].tools);
}

const char *acp_mcp_tool_name(const acp_mcp_set *s, size_t i, size_t t)
{
    return json_string_value(json_object_get(tool(s, i, t), "name"));
}

const char *acp_mcp_tool_description(const acp_mcp_set *s, size_t i, size_t t)
{
    return json_string_value(json_object_get(tool(s, i, t), "description"));
}

const json_t *acp_mcp_tool_input_schema(const acp_mcp_set *s, size_t i, size_t t)
{
    return json_object_get(tool(s, i, t), "inputSchema");
}

const json_t *acp_mcp_tool_json(const acp_mcp_set *s, size_t i, size_t t)
{
    return tool(s, i, t);
}

int acp_mcp_tool_find(const acp_mcp_set *s, const char *qualified, size_t *server, size_t *tool_i)
{
    size_t best = s->n, blen = 0;
    for (size_t i = 0; i < s->n; i++) {
        size_t n = strlen(s->servers[i].name);
        if (n > blen && !strncmp(qualified, s->servers[i].name, n) && qualified[n] == '.') {
            best = i;
            blen = n;
        }
    }
    if (best == s->n) return acp_error_set(ACP_ENOTFOUND, "no MCP tool '%s'", qualified);
    for (size_t t = 0; t < acp_mcp_tool_count(s, best); t++) {
        if (!strcmp(acp_mcp_tool_name(s, best, t), qualified + blen + 1)) {
            if (server) *server = best;
            if (tool_i) *tool_i = t;
            return 0;
        }
    }
    return acp_error_set(ACP_ENOTFOUND, "no MCP tool '%s'", qualified);
}

/* --- calls ---------------------------------------------------------------------------- */

/* The ready server a call goes to, its callbacks read into *cb; NULL (said in *rc, and the
 * caller's JSON `owned` released) when the callbacks are bad or the server unknown or not
 * ready. */
static mcp_server *call_target(acp_mcp_set *s, const char *server, const acp_mcp_call_cbs *cbs,
                               acp_mcp_call_cbs *cb, json_t *owned, int *rc)
{
    size_t i = 0;
    *rc = acp_struct_read(cb, sizeof *cb, ACP_MCP_CALL_CBS_SIZE_1_0, cbs, "acp_mcp_call_cbs");
    if (!*rc && acp_mcp_server_find(s, server, &i)) *rc = ACP_ENOTFOUND; /* said */
    if (!*rc && s->servers[i].status != ACP_MCP_READY)
        *rc = acp_error_set(ACP_ECLOSED, "MCP server '%s' is %s, not ready", server,
                            acp_mcp_status_name(s->servers[i].status));
    if (*rc) json_decref(owned);
    return *rc ? NULL : &s->servers[i];
}

/* A call sent: its progress token, callbacks and handle. */
static int call_started(acp_mcp_call *c, int64_t token, const acp_mcp_call_cbs *cb, void *user,
                        acp_mcp_call **out)
{
    c->token = token;
    c->cbs = *cb;
    c->user = user;
    if (out) *out = c;
    return 0;
}

int acp_mcp_call_tool(acp_mcp_set *s, const char *server, const char *tool_name, json_t *args,
                      const acp_mcp_call_cbs *cbs, void *user, acp_mcp_call **out)
{
    acp_mcp_call_cbs cb;
    int rc;
    mcp_server *srv = call_target(s, server, cbs, &cb, args, &rc);
    if (!srv) return rc;
    int64_t token = srv->next_token++;
    json_t *params =
        json_pack("{ss so s{sI}}", "name", tool_name, "arguments", args ? args : json_object(),
                  "_meta", "progressToken", (json_int_t)token);
    if (!params)
        return acp_error_set(ACP_EINVAL,
                             "cannot call %s.%s: the tool name is not UTF-8 (or "
                             "memory ran out)",
                             server, tool_name);
    acp_mcp_call *c = send_request(srv, "tools/call", params, s->opts.call_timeout_ms, NULL);
    if (!c) return acp_error_set(ACP_ENOMEM, "out of memory calling %s.%s", server, tool_name);
    return call_started(c, token, &cb, user, out);
}

void acp_mcp_call_cancel(acp_mcp_call *c)
{
    if (!c->call) return;
    c->local = ACP_ECANCELLED;
    acp_conn_abandon(c->srv->conn, c->call, ACP_RPC_CANCELLED, "cancelled");
}

int acp_mcp_request(acp_mcp_set *s, const char *server, const char *method, json_t *params,
                    const acp_mcp_call_cbs *cbs, void *user, acp_mcp_call **out)
{
    acp_mcp_call_cbs cb;
    int rc;
    mcp_server *srv = call_target(s, server, cbs, &cb, params, &rc);
    if (!srv) return rc;
    bool call = !strcmp(method, "tools/call");
    /* A progress token of the caller's becomes one of ours (on_progress reports it). */
    json_t *meta = json_object_get(params, "_meta");
    int64_t token = 0;
    if (json_object_get(meta, "progressToken")) {
        token = srv->next_token++;
        json_object_set_new(meta, "progressToken", json_integer(token));
    }
    acp_mcp_call *c =
        send_request_as(srv, method, call ? "tools/call" : "request", params,
                        call ? s->opts.call_timeout_ms : s->opts.request_timeout_ms, NULL);
    if (!c) return acp_error_set(ACP_ENOMEM, "out of memory calling %s on %s", method, server);
    c->raw = true;
    return call_started(c, token, &cb, user, out);
}

const json_t *acp_mcp_call_rpc_error(const acp_mcp_call *c)
{
    return c->rpc_error;
}

int acp_mcp_set_acp_notify(acp_mcp_set *s, const json_t *params)
{
    const char *id = json_string_value(json_object_get(params, "serverId"));
    const char *rid = json_string_value(json_object_get(params, "requestId"));
    const char *method = json_string_value(json_object_get(params, "method"));
    if (!id || !rid || !method)
        return acp_error_set(ACP_EINVAL, "mcp/message needs string serverId, requestId and method");
    for (size_t i = 0; i < s->n; i++) {
        mcp_server *srv = &s->servers[i];
        if (srv->kind != MCP_ACP || strcmp(srv->server_id, id)) continue;
        mcp_acp_notify(srv, rid, method, json_object_get(params, "params"));
        return 0; /* serverIds are unique in a set (validate) */
    }
    return acp_error_set(ACP_ENOTFOUND, "no MCP server with serverId '%s'", id);
}
