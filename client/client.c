/* SPDX-License-Identifier: Apache-2.0 */
/* The client connection: start (transport + initialize), capabilities, errors, the
 * application-driven mode's feed/take/eof, and teardown. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp/version.h"
#include "client/internal.h"

void acp_client_log(acp_client *c, const char *fmt, ...)
{
    if (!c->opts.on_log) return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    c->opts.on_log(c, msg, c->opts.user);
}

void acp_client_refuse(acp_client *c, acp_req *req, int code, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    acp_client_log(c, "refused the agent's %s: %s", acp_req_method(req), msg);
    acp_req_error(req, code, NULL, "%s", msg);
}

static void on_rpc_log(acp_conn *conn, const char *message, void *user)
{
    acp_client_log(user, "%s", message);
}

static void on_rpc_message(acp_conn *conn, const char *line, size_t n, void *user)
{
    acp_client *c = user;
    c->opts.on_message(c, line, n, c->opts.user);
}

int acp_client_send_raw(acp_client *c, const char *bytes, size_t n)
{
    if (c->gone || acp_conn_closed(c->conn))
        return acp_error_set(ACP_ECLOSED, "the agent's connection has ended");
    int rc = n ? acp_conn_out_append(c->conn, bytes, n) : 0;
    if (!rc && (!n || bytes[n - 1] != '\n')) rc = acp_conn_out_append(c->conn, "\n", 1);
    return rc ? acp_error_set(rc, "out of memory queueing a message for the agent") : 0;
}

int acp_client_errcode(const acp_client *c)
{
    return c->errcode;
}

bool acp_client_agent_gone(const acp_client *c)
{
    return c->gone;
}

int acp_client_agent_pid(const acp_client *c)
{
    return c->exited ? 0 : c->pid;
}

bool acp_client_agent_status(const acp_client *c, int64_t *code, int *sig)
{
    if (!c->exited) return false;
    if (code) *code = c->exit_code;
    if (sig) *sig = c->exit_sig;
    return true;
}

uv_loop_t *acp_client_loop(acp_client *c)
{
    return c->loop;
}

json_t *acp_client_init_result(const acp_client *c)
{
    return c->init;
}

bool acp_client_supports(const acp_client *c, acp_agent_cap cap)
{
    return c->caps & (1u << cap);
}

int acp_client_need(acp_client *c, acp_agent_cap cap, const char *name)
{
    if (acp_client_supports(c, cap)) return 0;
    return acp_error_set(ACP_ENOTSUP, "agent does not advertise %s", name);
}

json_t *acp_client_auth_methods(const acp_client *c)
{
    json_t *m = json_object_get(c->init, "authMethods");
    return json_is_array(m) ? m : c->no_methods;
}

static bool obj_has(json_t *o, const char *k)
{
    return json_is_object(json_object_get(o, k)); /* `{}` advertises; omitted or null does not */
}

static void parse_caps(acp_client *c)
{
    json_t *ac = json_object_get(c->init, "agentCapabilities");
    json_t *sc = json_object_get(ac, "sessionCapabilities");
    json_t *mc = json_object_get(ac, "mcpCapabilities");
    json_t *pc = json_object_get(ac, "promptCapabilities");
    struct {
        acp_agent_cap cap;
        bool on;
    } t[] = {
        {ACP_CAP_LOAD_SESSION, json_is_true(json_object_get(ac, "loadSession"))},
        {ACP_CAP_RESUME, obj_has(sc, "resume")},
        {ACP_CAP_CLOSE, obj_has(sc, "close")},
        {ACP_CAP_LIST, obj_has(sc, "list")},
        {ACP_CAP_DELETE, obj_has(sc, "delete")},
        {ACP_CAP_ADDITIONAL_DIRS, obj_has(sc, "additionalDirectories")},
        {ACP_CAP_MCP_HTTP, json_is_true(json_object_get(mc, "http"))},
        {ACP_CAP_MCP_SSE, json_is_true(json_object_get(mc, "sse"))},
        {ACP_CAP_PROMPT_IMAGE, json_is_true(json_object_get(pc, "image"))},
        {ACP_CAP_PROMPT_AUDIO, json_is_true(json_object_get(pc, "audio"))},
        {ACP_CAP_PROMPT_RESOURCE, json_is_true(json_object_get(pc, "embeddedContext"))},
        {ACP_CAP_LOGOUT, obj_has(json_object_get(ac, "auth"), "logout")},
        {ACP_CAP_TITLE, obj_has(sc, "title")},
        {ACP_CAP_ARCHIVE, obj_has(sc, "archive")},
        {ACP_CAP_STATUS, obj_has(sc, "status")},
        {ACP_CAP_SYSTEM_PROMPT, obj_has(sc, "systemPrompt")},
        {ACP_CAP_SYSTEM_PROMPT_OVERRIDE,
         obj_has(sc, "systemPrompt") &&
             obj_has(json_object_get(json_object_get(sc, "systemPrompt"), "mode"), "override")},
        {ACP_CAP_MCP_ACP, json_is_true(json_object_get(mc, "acp"))},
        {ACP_CAP_PROVIDERS, obj_has(ac, "providers")},
        {ACP_CAP_AUTH_STATUS, obj_has(json_object_get(ac, "auth"), "status")},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (t[i].on) c->caps |= 1u << t[i].cap;
}

/* `{}` when on: the spec's way to advertise an object capability. */
static void cap_obj(json_t *o, const char *k, bool on)
{
    if (on) json_object_set_new(o, k, json_object());
}

static json_t *init_params(acp_client *c)
{
    const acp_client_opts *o = &c->opts;
    json_t *caps = json_pack("{s:{s:b, s:b}, s:b}", "fs", "readTextFile", o->fs_read,
                             "writeTextFile", o->fs_write, "terminal", o->terminal);
    json_t *sess = json_object();
    cap_obj(sess, "notices", o->notices);
    cap_obj(sess, "compaction", o->compaction);
    if (o->config_boolean)
        json_object_set_new(sess, "configOptions", json_pack("{s:{}}", "boolean"));
    if (json_object_size(sess)) json_object_set(caps, "session", sess);
    json_decref(sess);
    if (o->auth_terminal) json_object_set_new(caps, "auth", json_pack("{s:b}", "terminal", 1));
    if (o->on_elicit && (o->elicitation_form || o->elicitation_url)) {
        json_t *e = json_object();
        cap_obj(e, "form", o->elicitation_form);
        cap_obj(e, "url", o->elicitation_url);
        json_object_set_new(caps, "elicitation", e);
    }
    cap_obj(caps, "subagents", o->subagents); /* (unstable) top-level, as the schema has it */
    if (o->capabilities_meta)
        json_object_set_new(caps, "_meta", json_deep_copy(o->capabilities_meta));
    json_t *info = json_pack("{s:s, s:s}", "name", o->client_name ? o->client_name : "libacp",
                             "version", o->client_version ? o->client_version : ACP_VERSION_STRING);
    if (info && o->client_title) json_object_set_new(info, "title", json_string(o->client_title));
    json_t *p = json_pack("{s:i, s:o, s:o}", "protocolVersion", ACP_PROTOCOL_VERSION,
                          "clientCapabilities", caps, "clientInfo", info);
    if (p && o->init_meta) json_object_set_new(p, "_meta", json_deep_copy(o->init_meta));
    return p;
}

static void init_finish(acp_client_op *op, acp_client_reply *r)
{
    acp_client *c = op->c;
    if (r->status == ACP_ETIMEDOUT) {
        r->status =
            acp_error_set(ACP_ETIMEDOUT,
                          "the agent did not answer initialize within %g s; is it "
                          "an ACP agent speaking on stdout? check the agent command",
                          (c->opts.init_timeout_ms ? c->opts.init_timeout_ms : 30000) / 1000.0);
        return;
    }
    if (r->status == ACP_ECLOSED) {
        if (c->net_refused) /* a refusal, not a failure: the caller's credentials are wrong */
            r->status = acp_error_set(ACP_EACCES, "%s", acp_client_gone_why(c, "HTTP 401"));
        else if (c->opts.transport == ACP_CLIENT_URL)
            acp_error_set(ACP_ECLOSED, "cannot initialize the agent at %s: %s", c->opts.url,
                          acp_client_gone_why(c, "the connection ended"));
        else
            acp_error_set(ACP_ECLOSED,
                          "the agent exited during initialize; check the agent command (see "
                          "its messages above)");
        return;
    }
    if (r->status) return;
    json_t *v = json_object_get(r->result, "protocolVersion");
    if (!json_is_object(r->result) || !json_is_integer(v) ||
        json_integer_value(v) != ACP_PROTOCOL_VERSION) {
        r->status =
            acp_error_set(ACP_EPROTO,
                          "the agent speaks ACP protocol version %s; libacp speaks "
                          "version %d",
                          json_is_integer(v) ? "other than 1" : "(missing)", ACP_PROTOCOL_VERSION);
        return;
    }
    c->init = json_incref(r->result);
    parse_caps(c);
}

int acp_client_start(const acp_client_opts *opts, acp_client_cb cb, void *user, acp_client **out)
{
    *out = NULL;
    unsigned mark = acp_error_mark();
    acp_client_opts o;
    int rc = acp_struct_read(&o, sizeof o, ACP_CLIENT_OPTS_SIZE_1_0, opts, "acp_client_opts");
    if (rc) return rc;
    acp_client *c = calloc(1, sizeof *c);
    if (!c) return acp_error_set(ACP_ENOMEM, "out of memory starting a client");
    c->opts = o;
    opts = &c->opts;
    /* Per client, not one static: two clients may live on two threads. */
    if (!(c->no_methods = json_array())) {
        free(c);
        return acp_error_set(ACP_ENOMEM, "out of memory starting a client");
    }
    if (opts->transport != ACP_CLIENT_MANUAL) {
        c->loop = opts->loop;
        if (!c->loop) {
            if (uv_loop_init(&c->own_loop)) {
                json_decref(c->no_methods);
                free(c);
                return acp_error_set(ACP_ENOMEM, "cannot make the client's libuv loop");
            }
            c->loop = &c->own_loop;
        }
        uv_timer_init(c->loop, &c->timer);
        c->timer.data = c;
    } else if (opts->terminal) {
        rc = acp_error_set(ACP_EINVAL,
                           "terminals need a libuv loop; ACP_CLIENT_MANUAL cannot serve them");
        goto fail;
    }
    acp_conn_opts co = {.struct_size = sizeof(acp_conn_opts),
                        .max_message = opts->max_message ? opts->max_message : 128u << 20,
                        .on_request = acp_client_ext_request,
                        .on_notify = acp_client_ext_notify,
                        .on_log = on_rpc_log,
                        .user = c,
                        .on_message = opts->on_message ? on_rpc_message : NULL};
    if (!(c->conn = acp_conn_new(&co))) {
        rc = ACP_ENOMEM;
        goto fail;
    }
    if (opts->transport != ACP_CLIENT_MANUAL && (rc = acp_client_link_open(c))) goto fail;
    acp_client_session_register(c);
    acp_client_perm_register(c);
    acp_client_elicit_register(c);
    acp_client_mcp_register_method(c);
    acp_client_providers_register(c);
    if (opts->fs_read || opts->fs_write) acp_client_fs_register(c);
    if (opts->terminal) acp_client_terminal_register(c);
    acp_client_op *op;
    rc = acp_client_op_start(c, "initialize", init_params(c), init_finish, cb, user, &op);
    if (rc) goto fail;
    acp_client_op_timeout(op, opts->init_timeout_ms ? opts->init_timeout_ms : 30000);
    *out = c;
    return 0;
fail:
    acp_error_since(mark, rc);
    /* Freeing may fail quietly in its own ways; the caller wants why the start failed. */
    char why[1024];
    snprintf(why, sizeof why, "%s", acp_error_last()->message);
    acp_client_free(c);
    return acp_error_set(rc, "%s", why);
}

int acp_client_open(const acp_client_opts *opts, acp_client **out)
{
    acp_client_sync w = {0};
    int rc = acp_client_start(opts, acp_client_sync_cb, &w, out);
    if (rc) return rc;
    rc = acp_client_sync_wait(*out, 0, &w, NULL);
    if (rc) {
        char why[1024]; /* what the agent or the link said, not the teardown */
        snprintf(why, sizeof why, "%s", acp_error_last()->message);
        acp_client_free(*out);
        *out = NULL;
        acp_error_set(rc, "%s", why);
    }
    return rc;
}

/* --- the application moves the bytes --------------------------------------------------- */

int acp_client_feed(acp_client *c, const char *bytes, size_t n)
{
    return acp_conn_recv(c->conn, bytes, n);
}

char *acp_client_take(acp_client *c, size_t *n)
{
    return acp_conn_out_take(c->conn, n);
}

void acp_client_eof(acp_client *c)
{
    if (c->gone) return;
    c->gone = true;
    acp_conn_eof(c->conn); /* every pending call ends with ACP_ECLOSED */
    if (!c->opts.on_closed) return;
    /* on_closed reads why in the last error (the pending calls' replies may have set theirs). */
    acp_error_set(ACP_ECLOSED, "the connection to the agent ended: %s",
                  acp_client_gone_why(c, "the agent closed its output"));
    c->opts.on_closed(c, c->opts.user);
}

/* --- teardown ---------------------------------------------------------------------------- */

static void release(acp_client *c)
{
    acp_conn_free(c->conn);
    json_decref(c->init);
    json_decref(c->no_methods);
    json_decref(c->url_open);
    if (c->loop == &c->own_loop) uv_loop_close(&c->own_loop);
    free(c);
}

static void closed_one(void *user)
{
    acp_client *c = user;
    if (--c->closing == 0 && c->loop != &c->own_loop) release(c);
}

static void timer_closed(uv_handle_t *h)
{
    closed_one(h->data);
}

void acp_client_free(acp_client *c)
{
    if (!c) return;
    c->opts.on_closed = NULL; /* teardown is not news to the application */
    c->opts.on_withdrawn = NULL;
    acp_client_ops_cancel(c, NULL);
    while (c->sessions) acp_client_session_free(c->sessions);
    acp_client_pending_cancel(c, NULL, true);
    acp_client_mcps_free(c);
    acp_client_terminals_free(c);
    acp_client_fs_orphan(c);
    if (!c->loop) {
        release(c);
        return;
    }
    c->closing = 1; /* ours, dropped below: nothing is released while we are still here */
    if (c->timer.loop) {
        c->closing++;
        uv_close((uv_handle_t *)&c->timer, timer_closed);
    }
    if (c->tr) {
        c->closing++;
        acp_transport_close(c->tr, closed_one, c);
    }
    if (c->net) {
        c->closing++;
        acp_client_net_close(c, closed_one, c);
    }
    if (c->proc) {
        c->closing++;
        acp_proc_stop(c->proc, 2000, closed_one, c);
    }
    if (c->loop != &c->own_loop) {
        closed_one(c);
        return;
    }
    c->closing--;
    while (c->closing > 0 && uv_run(c->loop, UV_RUN_ONCE)) {}
    uv_run(c->loop, UV_RUN_DEFAULT); /* let every closing handle finish */
    release(c);
}
