/* SPDX-License-Identifier: Apache-2.0 */
/* acp_agent: the connection, the once-per-loop-turn commit, back-pressure and shutdown. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "agent/internal.h"

void agent_log(acp_agent *a, const char *fmt, ...)
{
    if (!a->opts.on_log) return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    a->opts.on_log(line, a->opts.user);
}

size_t agent_index_of(const void *arr, size_t n, size_t size, const char *id)
{
    for (size_t i = 0; id && i < n; i++) {
        /* A pointer to a struct is a pointer to its first member (C17 6.7.2.1). */
        const char *const *at = (const char *const *)((const char *)arr + i * size);
        if (!strcmp(*at, id)) return i;
    }
    return n;
}

int acp_agent_new_id(const char *prefix, char *buf)
{
    unsigned char r[16];
    /* getrandom(2), or /dev/urandom where it is missing (old kernel, seccomp). */
    int e = uv_random(NULL, NULL, r, sizeof r, 0, NULL);
    if (e) { /* ids must never be guessable: none rather than a weak one */
        buf[0] = '\0';
        return acp_error_set(ACP_EIO, "no random bytes for a %sid: %s", prefix, uv_strerror(e));
    }
    size_t p = strlen(prefix);
    memcpy(buf, prefix, p);
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < sizeof r; i++) {
        buf[p + 2 * i] = hex[r[i] >> 4];
        buf[p + 2 * i + 1] = hex[r[i] & 15];
    }
    buf[p + 32] = '\0';
    return 0;
}

/* Held output counts: within one loop turn everything a session produces is held, so without
 * it a producer would see room until the turn ends, however much it wrote. */
bool agent_writable(const acp_agent *a)
{
    if (a->held >= AGENT_HIGH_WATER) return false;
    if (a->out)
        return a->out->writable(a->out_ctx) &&
               a->out->queued(a->out_ctx) + a->held < AGENT_HIGH_WATER;
    return acp_conn_out_len(a->conn) + a->held < AGENT_HIGH_WATER;
}

static void pump_cb(uv_idle_t *h)
{
    acp_agent *a = h->data;
    if (a->dirty) acp_agent_flush(a); /* held output produced after this turn's flush */
    if (!a->waiters && !a->replays) {
        uv_idle_stop(&a->pump);
        a->pump_on = false;
        return;
    }
    if (!agent_writable(a)) {
        /* When the transport itself is full its on_drain restarts us; held bytes alone leave
         * with this turn's flush, so then we just look again next turn. Without a transport
         * the embedder drains. */
        if (a->out && !a->out->writable(a->out_ctx)) {
            uv_idle_stop(&a->pump);
            a->pump_on = false;
        }
        return;
    }
    replay_run(a);
    turn_writable_run(a);
}

void agent_pump_start(acp_agent *a)
{
    if (a->pump_on || a->freeing) return;
    a->pump_on = true;
    uv_idle_start(&a->pump, pump_cb);
}

static void flusher_cb(uv_prepare_t *h)
{
    acp_agent *a = h->data;
    acp_agent_flush(a);
    if (a->out) a->out->flush(a->out_ctx);
}

void agent_mark_dirty(acp_agent *a, acp_session *s)
{
    if (s->dirty) return;
    s->dirty = true;
    s->dnext = a->dirty;
    a->dirty = s;
    if (!a->flusher_on && !a->freeing) {
        a->flusher_on = true;
        uv_prepare_start(&a->flusher, flusher_cb);
    }
}

int acp_agent_flush(acp_agent *a)
{
    if (!a->dirty) {
        if (a->flusher_on) {
            uv_prepare_stop(&a->flusher);
            a->flusher_on = false;
        }
        return 0;
    }
    /* Merged text chunks join this commit: the client is about to see them. */
    for (acp_session *s = a->dirty; s; s = s->dnext) {
        s->pend_failed = history_settle(s) != 0;
        if (s->pend_failed) {
            s->pend.len = 0;
            agent_log(a, "session %s: out of memory storing its text", s->id);
        }
    }
    int rc = acp_store_pending(a->store) ? acp_store_commit(a->store, NULL) : 0;
    int failed = rc; /* what every session's release hears: 0 when only some were lost */
    if (rc == ACP_ENOTFOUND || rc == ACP_ESTALE) {
        /* The rest of the batch is stored; these sessions were deleted elsewhere, or their
         * lease was taken by another holder. The fence tells this agent's session from another
         * agent's sharing the store (whose own flush hears of it the same way). */
        const char *id;
        int64_t fence;
        int why;
        for (size_t i = 0; (id = acp_store_gone(a->store, i, &fence, &why)); i++)
            for (acp_session *s = a->dirty; s; s = s->dnext)
                if (s->fence == fence && !strcmp(s->id, id))
                    session_gone(s, why == ACP_ESTALE); /* dirty already: only marked */
        failed = 0;
    }
    char *err = failed ? strdup(acp_error_last()->message) : NULL;
    if (failed) agent_log(a, "store commit failed: %s", err ? err : "");
    acp_session *list = a->dirty;
    a->dirty = NULL;
    /* Sessions are released in the order they became dirty (the list is LIFO). */
    acp_session *rev = NULL;
    while (list) {
        acp_session *n = list->dnext;
        list->dnext = rev;
        rev = list;
        list = n;
    }
    while (rev) {
        acp_session *n = rev->dnext;
        int src = failed ? failed : rev->pend_failed ? ACP_ENOMEM : 0;
        session_release(rev, src, err ? err : "out of memory");
        rev = n;
    }
    free(err);
    /* Output held while we were releasing (an engine reacting to a failure) must not wait
     * for the next event: the idle pump keeps the loop from blocking until it is out. */
    if (a->dirty) agent_pump_start(a);
    agent_maybe_done(a);
    return rc;
}

/* Backends that know the store is down already say so (PostgreSQL does); say it once. */
const char *agent_store_sentence(const char *errmsg, char *buf, size_t n)
{
    static const char prefix[] = "session store unavailable: ";
    if (!strncmp(errmsg, prefix, sizeof prefix - 1)) return errmsg;
    snprintf(buf, n, "%s%s", prefix, errmsg);
    return buf;
}

void agent_store_error(acp_req *req, const char *errmsg)
{
    char msg[1024];
    acp_req_error(req, ACP_RPC_INTERNAL_ERROR, NULL, "%s",
                  agent_store_sentence(errmsg, msg, sizeof msg));
}

void agent_reply_store_error(acp_agent *a, acp_req *req)
{
    agent_store_error(req, acp_error_last()->message);
}

int agent_stored(acp_agent *a, const char *id)
{
    acp_store_session row = ACP_STORE_SESSION_INIT;
    int rc = acp_store_get(a->store, id, &row);
    acp_store_session_clear(&row);
    return rc;
}

void agent_reply_not_found(acp_req *req, const char *id)
{
    acp_req_error(req, ACP_RPC_NOT_FOUND, json_pack("{ss}", "sessionId", id),
                  "session not found: %s", id);
}

void agent_reply_gone(acp_req *req, const char *id, bool fenced)
{
    if (fenced)
        acp_req_error(req, ACP_RPC_NOT_FOUND,
                      json_pack("{ssss}", "sessionId", id, "reason", "lease_lost"),
                      "session %s was taken over by another agent (another host, process or "
                      "connection: a session/load or resume there while it was idle here, or "
                      "after this one's lease lapsed); it is closed here and nothing more of it "
                      "is stored or sent from here",
                      id);
    else
        acp_req_error(req, ACP_RPC_NOT_FOUND, json_pack("{ss}", "sessionId", id),
                      "session %s was deleted elsewhere (by another process or connection); it "
                      "is closed here and nothing more of it was stored",
                      id);
}

/* The spec only says clients MUST initialize first; refusing with -32600 and this message is
 * what the official SDK agent does (REQUIREMENTS.md §1.3), so clients see one behaviour. */
bool agent_check_init(acp_agent *a, acp_req *req)
{
    if (a->initialized) return true;
    acp_req_error(req, ACP_RPC_INVALID_REQUEST, NULL,
                  "ACP connection must be initialized before '%s'", acp_req_method(req));
    return false;
}

bool agent_accept(acp_agent *a, acp_req *req, const vfield *params, bool auth)
{
    return agent_check_init(a, req) && params_valid(req, params) &&
           (!auth || agent_check_auth(a, req));
}

static void conn_log(acp_conn *c, const char *message, void *user)
{
    agent_log(user, "rpc: %s", message);
}

static void conn_output(acp_conn *c, void *user)
{
    acp_agent *a = user;
    if (a->out && a->out->soon) a->out->soon(a->out_ctx);
}

static void on_unknown(acp_conn *c, acp_req *req, void *user)
{
    acp_agent *a = user;
    if (!agent_check_init(a, req)) return;
    acp_req_error(req, ACP_RPC_METHOD_NOT_FOUND, NULL, "Method not found: %s", acp_req_method(req));
}

/* After acp_agent_free(): the memory goes once the loop closed our handles and every MCP set
 * finished shutting down (their done callbacks still point at us). */
void agent_maybe_free(acp_agent *a)
{
    if (!a->freeing || a->handles_open || a->closing_mcp || a->out) return;
    calls_agent_free(a);
    auth_free_all(a);
    providers_free(a);
    ext_free_all(a);
    acp_conn_free(a->conn);
    json_decref(a->client_caps);
    json_decref(a->init_params);
    json_decref(a->elicit_ids);
    json_decref(a->lost);
    acp_buf_free(&a->scratch);
    acp_buf_free(&a->line);
    free(a);
}

static void handle_closed(uv_handle_t *h)
{
    acp_agent *a = h->data;
    a->handles_open--;
    agent_maybe_free(a);
}

#define LEASE_TTL_DEFAULT 15000u
#define LEASE_TTL_MAX     (24u * 3600 * 1000)

int acp_agent_new(uv_loop_t *loop, acp_store *store, const acp_engine *engine,
                  const acp_agent_opts *opts, acp_agent **out)
{
    acp_engine eng;
    acp_agent_opts o;
    if (!engine) return acp_error_set(ACP_EINVAL, "acp_agent_new: the engine is NULL");
    int rc = acp_struct_read(&eng, sizeof eng, ACP_ENGINE_SIZE_1_0, engine, "acp_engine");
    if (!rc) rc = acp_struct_read(&o, sizeof o, ACP_AGENT_OPTS_SIZE_1_0, opts, "acp_agent_opts");
    if (rc) return rc;
    acp_agent *a = calloc(1, sizeof *a);
    if (!a) return acp_error_code(ACP_ENOMEM);
    a->loop = loop;
    a->store = store;
    a->eng = eng;
    a->opts = o;
    a->client_caps = json_object();
    a->init_params = json_object();
    a->lease_ttl_ms = a->opts.lease_ttl_ms ? a->opts.lease_ttl_ms : LEASE_TTL_DEFAULT;
    if (lease_make_holder(a) ||
        (a->lease_ttl_ms > LEASE_TTL_MAX &&
         acp_error_set(ACP_EINVAL, "lease_ttl_ms over a day: %u", a->lease_ttl_ms)) ||
        cfg_check_engine(a) || auth_check_engine(a) || providers_check_engine(a)) {
        agent_log(a, "invalid engine: %s", acp_error_last()->message);
        json_decref(a->client_caps);
        json_decref(a->init_params);
        free(a);
        return ACP_EINVAL; /* the sentence is set above */
    }
    acp_conn_opts co = {.struct_size = sizeof(acp_conn_opts),
                        .on_request = on_unknown,
                        .on_log = conn_log,
                        .on_output = conn_output,
                        .user = a};
    a->conn = acp_conn_new(&co);
    if (!a->conn || !a->client_caps || !a->init_params) {
        acp_conn_free(a->conn);
        json_decref(a->client_caps);
        json_decref(a->init_params);
        free(a);
        return acp_error_code(ACP_ENOMEM);
    }
    uv_idle_init(loop, &a->pump);
    uv_prepare_init(loop, &a->flusher);
    uv_timer_init(loop, &a->renewer);
    a->pump.data = a->flusher.data = a->renewer.data = a;
    a->handles_open = 3;
    methods_register(a);
    *out = a;
    return 0;
}

uv_loop_t *acp_agent_loop(const acp_agent *a)
{
    return a->loop;
}

acp_store *acp_agent_store(const acp_agent *a)
{
    return a->store;
}

acp_conn *acp_agent_conn(acp_agent *a)
{
    return a->conn;
}

const json_t *acp_agent_init_params(const acp_agent *a)
{
    return a->init_params;
}

const json_t *acp_agent_client_caps(const acp_agent *a)
{
    return a->client_caps;
}

bool acp_agent_client_has(const acp_agent *a, const char *path)
{
    const char *whole = path;
    const json_t *v = a->client_caps;
    char part[64];
    while (v && *path) {
        size_t n = strcspn(path, ".");
        if (n >= sizeof part) return false;
        memcpy(part, path, n);
        part[n] = '\0';
        v = json_is_object(v) ? json_object_get(v, part) : NULL;
        path += n + (path[n] == '.');
    }
    /* Boolean capabilities must be true; marker capabilities ({} means supported) objects: a
     * value of the wrong type is a malformed optional field, read as its default (unsupported),
     * as the schema's default-on-error decoding (and the official SDK) reads it. */
    static const char *const booleans[] = {"fs.readTextFile", "fs.writeTextFile", "terminal",
                                           "auth.terminal"};
    for (size_t i = 0; i < sizeof booleans / sizeof *booleans; i++)
        if (!strcmp(whole, booleans[i])) return json_is_true(v);
    return json_is_object(v);
}

size_t acp_agent_session_count(const acp_agent *a)
{
    return a->nsessions;
}

/* --- shutdown ------------------------------------------------------------------------------ */

void agent_out_attach(acp_agent *a, const agent_out *out, void *ctx)
{
    a->out = out;
    a->out_ctx = ctx;
}

void agent_out_drained(acp_agent *a)
{
    if (a->waiters || a->replays) agent_pump_start(a);
}

void agent_out_closed(acp_agent *a)
{
    a->out = NULL; /* it borrowed our conn until now */
    a->out_ctx = NULL;
    if (a->freeing) {
        agent_maybe_free(a);
        return;
    }
    if (!a->done_called) {
        a->done_called = true;
        if (a->opts.on_done) a->opts.on_done(a, a->opts.user);
    }
}

void agent_maybe_done(acp_agent *a)
{
    if (!a->shutting_down || a->done_called || a->out_closing) return;
    if (a->closing_mcp || a->dirty || a->sessions) return;
    /* No session left to renew: an active renewal timer would keep the loop (and the program)
     * alive for up to a third of the lease TTL after everything else is done. */
    uv_timer_stop(&a->renewer);
    if (a->out) {
        a->out_closing = true;
        a->out->close(a->out_ctx);
        return;
    }
    a->done_called = true;
    if (a->opts.on_done) a->opts.on_done(a, a->opts.user);
}

void acp_agent_shutdown(acp_agent *a)
{
    if (a->shutting_down) return;
    a->shutting_down = true;
    /* A session still opening is answered first, its replay completed, its MCP servers not
     * waited for: at EOF the client may have closed only its side and still be reading
     * (`printf ... | acp-agent`). The session is stored, so "opened" is the truth. */
    for (acp_session *s = a->sessions; s; s = s->next) {
        if (!s->open_req) continue;
        s->mcp_settled = true;
        replay_finish(s);
        session_opened_step(s);
    }
    auth_shutdown(a);
    while (a->sessions) session_close(a->sessions);
    acp_agent_flush(a);
    agent_maybe_done(a);
}

void acp_agent_free(acp_agent *a)
{
    if (!a) return;
    a->freeing = true;
    a->shutting_down = true;
    a->done_called = true; /* no on_done from here */
    auth_shutdown(a);
    while (a->sessions) session_close(a->sessions);
    acp_agent_flush(a);
    /* Sessions still holding output were released by the flush; free any left. */
    while (a->dirty) {
        acp_session *s = a->dirty;
        a->dirty = s->dnext;
        s->dirty = false;
        session_release(s, 0, "");
    }
    if (a->out && !a->out_closing) {
        a->out_closing = true;
        a->out->close(a->out_ctx);
    }
    uv_close((uv_handle_t *)&a->pump, handle_closed);
    uv_close((uv_handle_t *)&a->flusher, handle_closed);
    uv_close((uv_handle_t *)&a->renewer, handle_closed);
}

/* --- stdio transport ------------------------------------------------------------------------ */

typedef struct stdio_out {
    acp_agent *a;
    acp_transport *t;
} stdio_out;

static int tr_before_flush(acp_transport *t, void *user)
{
    acp_agent_flush(user);
    return 0;
}

static void tr_drain(acp_transport *t, void *user)
{
    agent_out_drained(user);
}

static void tr_eof(acp_transport *t, void *user)
{
    acp_agent_shutdown(user);
}

static bool tr_writable(void *ctx)
{
    return acp_transport_writable(((stdio_out *)ctx)->t);
}

static size_t tr_queued(void *ctx)
{
    return acp_transport_queued(((stdio_out *)ctx)->t);
}

static void tr_flush(void *ctx)
{
    acp_transport_flush(((stdio_out *)ctx)->t);
}

static void tr_closed(void *ctx)
{
    acp_agent *a = ((stdio_out *)ctx)->a;
    free(ctx);
    agent_out_closed(a);
}

static void tr_close(void *ctx)
{
    acp_transport_close(((stdio_out *)ctx)->t, tr_closed, ctx);
}

/* The transport flushes from its own prepare handle every loop turn: no `soon` needed. */
static const agent_out stdio_ops = {tr_writable, tr_queued, tr_flush, NULL, tr_close};

int acp_agent_serve_stdio(acp_agent *a, int in_fd, int out_fd)
{
    stdio_out *so = malloc(sizeof *so);
    if (!so) return acp_error_code(ACP_ENOMEM);
    acp_transport_opts o = {.struct_size = sizeof(acp_transport_opts),
                            .high_water = AGENT_HIGH_WATER,
                            .before_flush = tr_before_flush,
                            .on_drain = tr_drain,
                            .on_eof = tr_eof,
                            .user = a};
    so->a = a;
    int rc = acp_transport_open(a->loop, a->conn, in_fd, out_fd, &o, &so->t);
    if (rc) {
        free(so);
        return rc;
    }
    agent_out_attach(a, &stdio_ops, so);
    return 0;
}
