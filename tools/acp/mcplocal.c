/* SPDX-License-Identifier: Apache-2.0 */
/* --mcp-local 'NAME=CMD ARGS' (unstable: MCP over ACP): an MCP server started here, on the
 * user's machine, and handed to the agent through the ACP connection itself. acp is the MCP
 * client of the stdio server (libacp's mcp/ set) and serves it to the agent as an "acp" MCP
 * server (the client library's mcp/message side), relaying each request: the agent speaks
 * MCP 2026-07-28 over ACP, the server whatever stdio revision it negotiated with us, so
 * server/discover is answered here and everything else is passed on as it came (progress
 * tokens mapped both ways, a cancel from the agent cancels the call). The server lives as
 * long as the session: it is stopped when acp closes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acp/mcp.h"
#include "acp/version.h"
#include "tools/acp/app.h"

typedef struct relay {
    app *a;
    char *name;
} relay;

typedef struct inflight {
    acp_client_mcp_req *r;
    acp_mcp_call *call;
    json_t *token; /* the agent's progressToken, or NULL */
} inflight;

static void on_log(const char *name, const char *line, void *user)
{
    app *a = user;
    /* What a server says while we stop it (EPIPE traces) is not news. */
    if (!a->quiet && !a->mcp_stopping) app_note(a, "mcp-local[%s]: %s", name, line);
}

static void on_progress(acp_mcp_call *c, double progress, double total, const char *message,
                        void *user)
{
    inflight *f = user;
    if (!f->token) return;
    json_t *p = json_pack("{sO sf}", "progressToken", f->token, "progress", progress);
    if (p && total >= 0) json_object_set_new(p, "total", json_real(total));
    if (p && message) json_object_set_new(p, "message", json_string(message));
    acp_client_mcp_notify(f->r, "notifications/progress", p);
}

static void on_done(acp_mcp_call *c, int status, const json_t *result, const char *error,
                    void *user)
{
    inflight *f = user;
    const json_t *e = status == ACP_EPROTO ? acp_mcp_call_rpc_error(c) : NULL;
    if (!status)
        acp_client_mcp_reply(f->r, json_incref((json_t *)result));
    else if (e)
        acp_client_mcp_error(f->r, (int)json_integer_value(json_object_get(e, "code")),
                             json_string_value(json_object_get(e, "message")),
                             json_incref(json_object_get(e, "data")));
    else
        acp_client_mcp_error(f->r, ACP_RPC_INTERNAL_ERROR, error, NULL);
    json_decref(f->token);
    free(f);
}

static void on_cancel(acp_client_mcp_req *r, void *user)
{
    inflight *f = user;
    acp_mcp_call_cancel(f->call); /* on_done runs now, and only frees r */
}

static void serve(acp_client_mcp *m, acp_client_mcp_req *r, const char *method, json_t *params,
                  void *user)
{
    relay *rl = user;
    app *a = rl->a;
    size_t i = 0;
    const char *why = NULL;
    enum acp_mcp_status st = acp_mcp_server_find(a->mcp_set, rl->name, &i)
                                 ? ACP_MCP_FAILED
                                 : acp_mcp_server_status(a->mcp_set, i, &why);
    if (st != ACP_MCP_READY) {
        char msg[600];
        snprintf(msg, sizeof msg, "the local MCP server '%s' is %s%s%.400s", rl->name,
                 acp_mcp_status_name(st), why ? ": " : "", why ? why : "");
        acp_client_mcp_error(r, ACP_RPC_INTERNAL_ERROR, msg, NULL);
        return;
    }
    if (!strcmp(method, "server/discover")) {
        const json_t *info = acp_mcp_server_info(a->mcp_set, i);
        acp_client_mcp_reply(r, json_pack("{s[s] s{s{}} sO}", "supportedVersions", "2026-07-28",
                                          "capabilities", "tools", "serverInfo", info));
        return;
    }
    /* The server speaks a revision with a handshake (done with us): the per-request metadata
     * of 2026-07-28 means nothing to it. */
    json_t *p = params ? json_deep_copy(params) : NULL;
    json_t *meta = json_object_get(p, "_meta");
    json_object_del(meta, "io.modelcontextprotocol/protocolVersion");
    json_object_del(meta, "io.modelcontextprotocol/clientCapabilities");
    json_object_del(meta, "io.modelcontextprotocol/clientInfo");
    inflight *f = calloc(1, sizeof *f);
    if (!f) {
        json_decref(p);
        acp_client_mcp_error(r, ACP_RPC_INTERNAL_ERROR, "out of memory", NULL);
        return;
    }
    f->r = r;
    f->token = json_incref(json_object_get(meta, "progressToken"));
    acp_mcp_call_cbs cbs = ACP_MCP_CALL_CBS_INIT;
    cbs.on_progress = on_progress;
    cbs.on_done = on_done;
    if (acp_mcp_request(a->mcp_set, rl->name, method, p, &cbs, f, &f->call)) {
        acp_client_mcp_error(r, ACP_RPC_INTERNAL_ERROR, acp_error_last()->message, NULL);
        json_decref(f->token);
        free(f);
        return;
    }
    acp_client_mcp_req_on_cancel(r, on_cancel, f);
}

static void settled(void *user)
{
    *(bool *)user = true;
}

int mcplocal_start(app *a)
{
    if (!json_array_size(a->mcp_local) || a->mcp_set) return 0;
    if (!acp_client_supports(a->c, ACP_CAP_MCP_ACP)) {
        app_note(a, "--mcp-local needs an agent that advertises mcpCapabilities.acp (MCP over "
                    "ACP, unstable); this one does not");
        return EXIT_REFUSED;
    }
    char here[4096];
    const char *root = a->cwd ? a->cwd : getcwd(here, sizeof here);
    acp_mcp_opts mo = ACP_MCP_OPTS_INIT;
    mo.on_log = on_log;
    mo.user = a;
    if (acp_mcp_set_new(&a->loop, a->mcp_local, &mo, root ? &root : NULL, root ? 1 : 0,
                        &a->mcp_set)) {
        app_note(a, "--mcp-local: %s", acp_error_last()->message);
        return EXIT_USAGE;
    }
    bool done = false;
    acp_mcp_set_wait(a->mcp_set, 30000, settled, &done);
    while (!done) uv_run(&a->loop, UV_RUN_ONCE);
    size_t n = acp_mcp_set_count(a->mcp_set);
    a->relays = calloc(n ? n : 1, sizeof(relay));
    if (!a->relays) return app_fail(a, NULL, ACP_ENOMEM);
    for (size_t i = 0; i < n; i++) {
        relay *rl = &((relay *)a->relays)[i];
        rl->a = a;
        rl->name = strdup(acp_mcp_server_name(a->mcp_set, i));
        const char *why = NULL;
        if (acp_mcp_server_status(a->mcp_set, i, &why) != ACP_MCP_READY)
            app_note(a, "--mcp-local %s: %s", rl->name, why ? why : "not ready");
        acp_client_mcp *m;
        if (!rl->name || acp_client_mcp_register(a->c, rl->name, NULL, serve, rl, &m))
            return app_fail(a, "--mcp-local", ACP_ENOMEM);
        json_array_append_new(a->mcp, acp_client_mcp_declaration(m));
    }
    a->nrelays = n;
    return 0;
}

static void closed(void *user)
{
    *(bool *)user = true;
}

void mcplocal_stop(app *a)
{
    if (a->mcp_set) {
        bool done = false;
        a->mcp_stopping = true;
        acp_mcp_set_close(a->mcp_set, closed, &done);
        while (!done) uv_run(&a->loop, UV_RUN_ONCE);
        a->mcp_set = NULL;
    }
    for (size_t i = 0; i < a->nrelays; i++) free(((relay *)a->relays)[i].name);
    free(a->relays);
    a->relays = NULL;
    a->nrelays = 0;
}
