/* SPDX-License-Identifier: Apache-2.0 */
/* MCP servers of the application, served over the ACP connection (unstable: MCP over ACP, SDK
 * 2.4.0's mcp/message). The agent sends one `mcp/message` request per MCP request; we answer
 * with the MessageMcpResponse carrier ({"result": ...} or {"error": {code, message, data}}).
 * Failures of the binding itself are outer errors, with the SDK's codes: -33001 for a serverId
 * nobody registered, -32602 for a malformed envelope or a requestId already active. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp/version.h"
#include "client/internal.h"

#define MCP_UNAVAILABLE -33001 /* McpBindingErrorCode.serverUnavailable */

typedef struct tool {
    char *name;
    json_t *def; /* the Tool object tools/list gives */
    acp_client_mcp_tool_cb cb;
    void *user;
} tool;

struct acp_client_mcp {
    acp_client *c;
    acp_client_mcp *next;
    char *name, *id;
    acp_client_mcp_handler handler;
    void *user;
    tool *tools;
    size_t ntools;
    acp_client_mcp_req *reqs; /* requests the application has not answered */
};

struct acp_client_mcp_req {
    acp_client_mcp *m; /* NULL once the server is gone */
    acp_client_mcp_req *prev, *next;
    acp_req *req; /* NULL once answered (cancelled, or the server went away) */
    char *rid;
    void (*on_cancel)(acp_client_mcp_req *r, void *user);
    void *cancel_user;
};

static void detach(acp_client_mcp_req *r)
{
    acp_client_mcp *m = r->m;
    if (!m) return;
    if (r->prev)
        r->prev->next = r->next;
    else
        m->reqs = r->next;
    if (r->next) r->next->prev = r->prev;
    r->m = NULL;
}

static void req_free(acp_client_mcp_req *r)
{
    detach(r);
    free(r->rid);
    free(r);
}

/* Our answer to the outer request: the inner outcome, in its carrier. */
static int answer(acp_client_mcp_req *r, json_t *carrier)
{
    int rc = 0;
    if (r->req && carrier)
        rc = acp_req_reply(r->req, carrier);
    else if (r->req)
        rc = acp_req_error(r->req, ACP_RPC_INTERNAL_ERROR, NULL, "out of memory");
    else
        json_decref(carrier);
    r->req = NULL;
    req_free(r);
    return rc;
}

int acp_client_mcp_reply(acp_client_mcp_req *r, json_t *result)
{
    return answer(r, json_pack("{so}", "result", result ? result : json_object()));
}

int acp_client_mcp_error(acp_client_mcp_req *r, int code, const char *message, json_t *data)
{
    json_t *e = json_pack("{si ss}", "code", code, "message", message ? message : "error");
    if (e && data) json_object_set(e, "data", data);
    json_decref(data);
    return answer(r, e ? json_pack("{so}", "error", e) : NULL);
}

int acp_client_mcp_notify(acp_client_mcp_req *r, const char *method, json_t *params)
{
    if (!r->m || !r->req) {
        json_decref(params);
        return acp_error_set(ACP_ECLOSED, "the MCP request was answered or withdrawn");
    }
    json_t *p =
        json_pack("{ss ss ss}", "serverId", r->m->id, "requestId", r->rid, "method", method);
    if (p && params) json_object_set(p, "params", params);
    json_decref(params);
    if (!p) return acp_error_set(ACP_ENOMEM, "out of memory");
    return acp_client_notify(r->m->c, "mcp/message", p);
}

bool acp_client_mcp_req_cancelled(const acp_client_mcp_req *r)
{
    return !r->req;
}

void acp_client_mcp_req_on_cancel(acp_client_mcp_req *r, void (*cb)(acp_client_mcp_req *r, void *u),
                                  void *user)
{
    r->on_cancel = cb;
    r->cancel_user = user;
}

/* $/cancel_request from the agent: answered -32800 now, as the SDK's provider does; the
 * application still frees r with its reply. */
static void on_cancel(acp_req *req, void *user)
{
    acp_client_mcp_req *r = user;
    if (!r->req) return;
    acp_req_error(r->req, ACP_RPC_CANCELLED, NULL, "the MCP request was cancelled");
    r->req = NULL;
    if (r->on_cancel) r->on_cancel(r, r->cancel_user);
}

/* Without a handler of the application's: discovery, the tool list and the tools. */
static void serve_tools(acp_client_mcp *m, acp_client_mcp_req *r, const char *method,
                        json_t *params)
{
    if (!strcmp(method, "server/discover")) {
        acp_client_mcp_reply(r, json_pack("{s[s] s{s{}} s{ss ss}}", "supportedVersions",
                                          "2026-07-28", "capabilities", "tools", "serverInfo",
                                          "name", m->name, "version", ACP_VERSION_STRING));
    } else if (!strcmp(method, "tools/list")) {
        json_t *list = json_array();
        for (size_t i = 0; i < m->ntools; i++) json_array_append(list, m->tools[i].def);
        acp_client_mcp_reply(r, json_pack("{so}", "tools", list));
    } else if (!strcmp(method, "tools/call")) {
        const char *name = json_string_value(json_object_get(params, "name"));
        json_t *args = json_object_get(params, "arguments");
        for (size_t i = 0; name && i < m->ntools; i++) {
            if (strcmp(m->tools[i].name, name)) continue;
            json_t *a = json_is_object(args) ? json_incref(args) : json_object();
            m->tools[i].cb(m, r, a, m->tools[i].user);
            json_decref(a);
            return;
        }
        char msg[300];
        snprintf(msg, sizeof msg, "Unknown tool: %.200s", name ? name : "(no name)");
        acp_client_mcp_error(r, ACP_RPC_INVALID_PARAMS, msg, NULL);
    } else if (!strcmp(method, "ping")) {
        acp_client_mcp_reply(r, NULL);
    } else {
        char msg[300];
        snprintf(msg, sizeof msg, "Method not found: %.200s", method);
        acp_client_mcp_error(r, ACP_RPC_METHOD_NOT_FOUND, msg, NULL);
    }
}

static void h_mcp_message(acp_conn *conn, acp_req *req, void *user)
{
    acp_client *c = user;
    json_t *p = acp_req_params(req);
    const char *id = json_string_value(json_object_get(p, "serverId"));
    const char *rid = json_string_value(json_object_get(p, "requestId"));
    const char *method = json_string_value(json_object_get(p, "method"));
    json_t *params = json_object_get(p, "params");
    if (!id || !rid || !method || (params && !json_is_object(params) && !json_is_null(params))) {
        acp_client_refuse(c, req, ACP_RPC_INVALID_PARAMS,
                          "mcp/message needs string serverId, requestId and method, and params "
                          "an object");
        return;
    }
    acp_client_mcp *m = c->mcps;
    while (m && strcmp(m->id, id)) m = m->next;
    if (!m) {
        acp_client_log(c, "refused mcp/message: no MCP server '%.200s' is registered", id);
        acp_req_error(req, MCP_UNAVAILABLE, json_pack("{ss}", "serverId", id),
                      "MCP server registration unavailable");
        return;
    }
    for (acp_client_mcp_req *o = m->reqs; o; o = o->next) {
        if (!strcmp(o->rid, rid)) {
            acp_client_refuse(c, req, ACP_RPC_INVALID_PARAMS,
                              "duplicate active MCP request id '%.200s'", rid);
            return;
        }
    }
    acp_client_mcp_req *r = calloc(1, sizeof *r);
    if (!r || !(r->rid = strdup(rid))) {
        free(r);
        acp_req_error(req, ACP_RPC_INTERNAL_ERROR, NULL, "out of memory");
        return;
    }
    r->m = m;
    r->req = req;
    r->next = m->reqs;
    if (r->next) r->next->prev = r;
    m->reqs = r;
    acp_req_on_cancel(req, on_cancel, r);
    json_t *inner = json_is_object(params) ? params : NULL;
    if (m->handler)
        m->handler(m, r, method, inner, m->user);
    else
        serve_tools(m, r, method, inner);
}

void acp_client_mcp_register_method(acp_client *c)
{
    acp_conn_on(c->conn, "mcp/message", h_mcp_message, NULL, c);
}

int acp_client_mcp_register(acp_client *c, const char *name, const char *server_id,
                            acp_client_mcp_handler handler, void *user, acp_client_mcp **out)
{
    *out = NULL;
    if (!name || !*name) return acp_error_set(ACP_EINVAL, "an MCP server needs a name");
    char gen[96];
    if (!server_id || !*server_id) {
        snprintf(gen, sizeof gen, "%.60s-%u", name, ++c->next_mcp);
        server_id = gen;
    }
    for (acp_client_mcp *m = c->mcps; m; m = m->next)
        if (!strcmp(m->id, server_id))
            return acp_error_set(ACP_EINVAL,
                                 "MCP server id '%s' is already registered on this connection "
                                 "(serverIds are unique per connection)",
                                 server_id);
    acp_client_mcp *m = calloc(1, sizeof *m);
    if (!m || !(m->name = strdup(name)) || !(m->id = strdup(server_id))) {
        if (m) free(m->name);
        free(m);
        return acp_error_set(ACP_ENOMEM, "out of memory");
    }
    m->c = c;
    m->handler = handler;
    m->user = user;
    m->next = c->mcps;
    c->mcps = m;
    *out = m;
    return 0;
}

int acp_client_mcp_add_tool(acp_client_mcp *m, const char *name, const char *description,
                            const json_t *input_schema, acp_client_mcp_tool_cb cb, void *user)
{
    if (!name || !*name || !cb)
        return acp_error_set(ACP_EINVAL, "a tool needs a name and a callback");
    for (size_t i = 0; i < m->ntools; i++)
        if (!strcmp(m->tools[i].name, name))
            return acp_error_set(ACP_EINVAL, "tool '%s' is already defined", name);
    tool *t = realloc(m->tools, (m->ntools + 1) * sizeof *t);
    if (!t) return acp_error_set(ACP_ENOMEM, "out of memory");
    m->tools = t;
    t = &m->tools[m->ntools];
    t->name = strdup(name);
    json_t *schema =
        input_schema ? json_incref((json_t *)input_schema) : json_pack("{ss}", "type", "object");
    t->def = json_pack("{ss so}", "name", name, "inputSchema", schema);
    if (t->def && description) json_object_set_new(t->def, "description", json_string(description));
    if (!t->name || !t->def) {
        free(t->name);
        json_decref(t->def);
        return acp_error_set(ACP_ENOMEM, "out of memory");
    }
    t->cb = cb;
    t->user = user;
    m->ntools++;
    return 0;
}

json_t *acp_client_mcp_declaration(const acp_client_mcp *m)
{
    return json_pack("{ss ss ss}", "type", "acp", "name", m->name, "serverId", m->id);
}

const char *acp_client_mcp_server_id(const acp_client_mcp *m)
{
    return m->id;
}

void acp_client_mcp_unregister(acp_client_mcp *m)
{
    if (!m) return;
    acp_client *c = m->c;
    for (acp_client_mcp **p = &c->mcps; *p; p = &(*p)->next) {
        if (*p == m) {
            *p = m->next;
            break;
        }
    }
    /* Requests the application still holds: answered now; its reply then only frees them. */
    while (m->reqs) {
        acp_client_mcp_req *r = m->reqs;
        if (r->req)
            acp_req_error(r->req, MCP_UNAVAILABLE, NULL,
                          "MCP server registration was removed while the request ran");
        r->req = NULL;
        detach(r);
    }
    for (size_t i = 0; i < m->ntools; i++) {
        free(m->tools[i].name);
        json_decref(m->tools[i].def);
    }
    free(m->tools);
    free(m->name);
    free(m->id);
    free(m);
}

void acp_client_mcps_free(acp_client *c)
{
    while (c->mcps) acp_client_mcp_unregister(c->mcps);
}
