/* The client connection: spawning the agent, initialize, capabilities, and the synchronous
 * call primitive every typed call is built on. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp/version.h"
#include "client/internal.h"

int acp_client_seterr(acp_client *c, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, sizeof c->err, fmt, ap);
    va_end(ap);
    return status;
}

const char *acp_client_errmsg(const acp_client *c)
{
    return c->err;
}

int acp_client_errcode(const acp_client *c)
{
    return c->errcode;
}

bool acp_client_agent_gone(const acp_client *c)
{
    return c->gone;
}

uv_loop_t *acp_client_loop(acp_client *c)
{
    return &c->loop;
}

json_t *acp_client_init_result(const acp_client *c)
{
    return c->init;
}

bool acp_client_supports(const acp_client *c, acp_agent_cap cap)
{
    return c->caps & (1u << cap);
}

/* --- the call primitive ---------------------------------------------------------------- */

typedef struct wait {
    acp_client *c;
    const char *method;
    acp_call *call;
    bool done;
    bool timed_out;
    unsigned timeout_ms;
    int status;
    json_t *result;
} wait;

int acp_client_answer(acp_client *c, const char *method, acp_msg *m, json_t **result)
{
    *result = NULL;
    if (acp_msg_is_error(m)) {
        int code = acp_msg_error_code(m);
        if (code == ACP_RPC_CONN_CLOSED)
            return acp_client_seterr(c, ACP_ECLOSED,
                                     "the agent exited before answering %s; see its messages "
                                     "above",
                                     method);
        c->errcode = code;
        return acp_client_seterr(c, ACP_EPROTO, "agent error %d on %s: %s", code, method,
                                 acp_msg_error_message(m));
    }
    if (!(*result = acp_msg_result(m)))
        return acp_client_seterr(c, ACP_EPROTO,
                                 "the agent's answer to %s is not valid JSON-RPC (a result we "
                                 "cannot parse)",
                                 method);
    json_incref(*result);
    return 0;
}

static void on_answer(acp_conn *conn, acp_msg *m, void *user)
{
    wait *w = user;
    w->done = true;
    if (w->timed_out)
        w->status =
            acp_client_seterr(w->c, ACP_ETIMEDOUT, "the agent did not answer %s within %u s",
                              w->method, w->timeout_ms / 1000);
    else
        w->status = acp_client_answer(w->c, w->method, m, &w->result);
}

static void on_timeout(uv_timer_t *t)
{
    wait *w = t->data;
    w->timed_out = true;
    acp_conn_abandon(w->c->conn, w->call, ACP_RPC_CONN_CLOSED, "timed out");
}

int acp_client_run_once(acp_client *c)
{
    if (uv_run(&c->loop, UV_RUN_ONCE) == 0)
        return acp_client_seterr(c, ACP_ECLOSED, "nothing left to wait for: the agent is gone");
    return 0;
}

/* acp_client_call() with a deadline (0: none). */
static int call_within(acp_client *c, const char *method, json_t *params, json_t **result,
                       unsigned timeout_ms)
{
    if (result) *result = NULL;
    c->errcode = 0;
    c->err[0] = 0;
    if (c->gone) {
        json_decref(params);
        return acp_client_seterr(c, ACP_ECLOSED, "the agent has exited; start it again");
    }
    if (!params) /* json_pack failed: a string argument was not UTF-8 */
        return acp_client_seterr(c, ACP_EINVAL, "cannot send %s: an argument is not valid UTF-8",
                                 method);
    wait w = {.c = c, .method = method, .timeout_ms = timeout_ms};
    int rc = acp_conn_call(c->conn, method, params, on_answer, &w, &w.call);
    if (rc) return acp_client_seterr(c, rc, "cannot send %s: %s", method, acp_strerror(rc));
    if (timeout_ms) {
        c->timer.data = &w;
        uv_timer_start(&c->timer, on_timeout, timeout_ms, 0);
    }
    while (!w.done) {
        if (uv_run(&c->loop, UV_RUN_ONCE) == 0 && !w.done) {
            /* Nothing left that could answer (cannot happen while the transport is open). */
            return acp_client_seterr(c, ACP_ECLOSED, "the agent connection is gone");
        }
    }
    uv_timer_stop(&c->timer);
    if (w.status) return w.status;
    if (result)
        *result = w.result;
    else
        json_decref(w.result);
    return 0;
}

int acp_client_call(acp_client *c, const char *method, json_t *params, json_t **result)
{
    return call_within(c, method, params, result, 0);
}

/* --- open / free ------------------------------------------------------------------------ */

static void on_eof(acp_transport *t, void *user)
{
    acp_client *c = user;
    c->gone = true;
}

static bool obj_has(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_object(v); /* `{}` advertises; omitted or null does not */
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
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (t[i].on) c->caps |= 1u << t[i].cap;
}

static int initialize(acp_client *c)
{
    json_t *params =
        json_pack("{s:i, s:{s:{s:b, s:b}, s:b}, s:{s:s, s:s}}", "protocolVersion",
                  ACP_PROTOCOL_VERSION, "clientCapabilities", "fs", "readTextFile", c->opts.fs_read,
                  "writeTextFile", c->opts.fs_write, "terminal", c->opts.terminal, "clientInfo",
                  "name", "libacp", "version", ACP_VERSION_STRING);
    if (!params) return ACP_ENOMEM;
    unsigned ms = c->opts.init_timeout_ms ? c->opts.init_timeout_ms : 30000;
    int rc = call_within(c, "initialize", params, &c->init, ms);
    if (rc == ACP_ETIMEDOUT)
        return acp_client_seterr(c, rc,
                                 "the agent did not answer initialize within %u s; is it "
                                 "an ACP agent speaking on stdout? check --agent",
                                 (ms + 999) / 1000);
    if (rc == ACP_ECLOSED)
        return acp_client_seterr(c, rc,
                                 "the agent exited during initialize; check the agent "
                                 "command (see its messages above)");
    if (rc) return rc;
    json_t *v = json_object_get(c->init, "protocolVersion");
    if (!json_is_integer(v) || json_integer_value(v) != ACP_PROTOCOL_VERSION)
        return acp_client_seterr(c, ACP_EPROTO,
                                 "the agent speaks ACP protocol version %s; "
                                 "libacp speaks version %d",
                                 json_is_integer(v) ? "other than 1" : "(missing)",
                                 ACP_PROTOCOL_VERSION);
    parse_caps(c);
    return 0;
}

int acp_client_open(const acp_client_opts *opts, acp_client **out, char **errmsg)
{
    *out = NULL;
    if (errmsg) *errmsg = NULL;
    acp_client *c = calloc(1, sizeof *c);
    if (!c) return ACP_ENOMEM;
    c->opts = *opts;
    if (uv_loop_init(&c->loop)) {
        free(c);
        return ACP_ENOMEM;
    }
    uv_timer_init(&c->loop, &c->timer);
    int rc;
    char **split = NULL, *spawn_err = NULL;
    const char *const *argv = opts->argv;
    if (!argv) {
        rc = opts->command ? acp_client_split_command(opts->command, &split) : ACP_EINVAL;
        if (rc) {
            acp_client_seterr(c, rc,
                              "the agent command line is empty or has an unclosed "
                              "quote: '%s'",
                              opts->command ? opts->command : "");
            goto fail;
        }
        argv = (const char *const *)split;
    }
    acp_conn_opts co = {.max_message = opts->max_message ? opts->max_message : 128u << 20};
    c->conn = acp_conn_new(&co);
    if (!c->conn) {
        rc = ACP_ENOMEM;
        goto fail;
    }
    acp_proc_opts po = {.file = argv[0],
                        .argv = (char *const *)argv,
                        .env = (char *const *)opts->env,
                        .pipe_stdin = true,
                        .pipe_stdout = true,
                        .inherit_stderr = true};
    rc = acp_proc_spawn(&c->loop, &po, &c->proc, &spawn_err);
    if (rc) {
        acp_client_seterr(c, rc, "%s; check --agent", spawn_err ? spawn_err : "cannot spawn");
        goto fail;
    }
    acp_transport_opts to = {.on_eof = on_eof, .user = c};
    rc = acp_transport_open_proc(&c->loop, c->conn, c->proc, &to, &c->tr);
    if (rc) {
        acp_client_seterr(c, rc, "cannot connect to the agent's pipes: %s", acp_strerror(rc));
        goto fail;
    }
    acp_client_session_register(c);
    acp_client_perm_register(c);
    if (opts->fs_read || opts->fs_write) acp_client_fs_register(c);
    if (opts->terminal) acp_client_terminal_register(c);
    rc = initialize(c);
    if (rc) goto fail;
    acp_client_argv_free(split);
    free(spawn_err);
    *out = c;
    return 0;
fail:
    if (errmsg) *errmsg = strdup(c->err[0] ? c->err : acp_strerror(rc));
    acp_client_argv_free(split);
    free(spawn_err);
    acp_client_free(c);
    return rc;
}

static void count_down(void *user)
{
    (*(int *)user)--;
}

void acp_client_free(acp_client *c)
{
    if (!c) return;
    while (c->sessions) acp_client_session_free(c->sessions);
    acp_client_terminals_free(c);
    if (c->timer.loop) uv_close((uv_handle_t *)&c->timer, NULL); /* NULL: never initialised */
    int pending = 0;
    if (c->tr) {
        pending++;
        acp_transport_close(c->tr, count_down, &pending);
    }
    if (c->proc) {
        pending++;
        acp_proc_stop(c->proc, 2000, count_down, &pending);
    }
    while (pending > 0 && uv_run(&c->loop, UV_RUN_ONCE)) {}
    uv_run(&c->loop, UV_RUN_DEFAULT); /* let every closing handle finish */
    acp_conn_free(c->conn);
    json_decref(c->init);
    uv_loop_close(&c->loop);
    free(c);
}
