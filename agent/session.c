/* SPDX-License-Identifier: Apache-2.0 */
/* acp_session: one active session: its roots, MCP servers, and held output. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/internal.h"
#include "agent/serve.h"

static const char env_prefix[] = "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":"
                                 "{\"sessionId\":";

acp_session *session_find(acp_agent *a, const char *id)
{
    for (acp_session *s = a->sessions; s; s = s->next)
        if (!strcmp(s->id, id)) return s;
    return NULL;
}

static void mcp_log(const char *name, const char *line, void *user)
{
    agent_log(user, "mcp[%s]: %s", name, line);
}

void agent_set_bounds(acp_agent *a, const agent_bounds *b)
{
    a->bounds = b;
}

/* A server's roots (agent_bounds): every directory of the session, symlinks resolved, lies
 * inside one of them, or req is answered -32602 naming the first that does not. */
static bool bounded(acp_agent *a, acp_req *req, const acp_roots *r)
{
    const acp_roots *allowed = a->bounds ? a->bounds->roots : NULL;
    for (size_t i = 0; allowed && i < acp_roots_count(r); i++) {
        char *real = NULL, path[64] = "params.cwd";
        int rc = acp_roots_resolve(allowed, acp_roots_at(r, i), &real);
        free(real);
        if (!rc) continue;
        if (i) snprintf(path, sizeof path, "params.additionalDirectories[%zu]", i - 1);
        if (rc == ACP_ENOMEM)
            acp_req_error(req, ACP_RPC_INTERNAL_ERROR, NULL, "out of memory");
        else
            acp_req_error(req, ACP_RPC_INVALID_PARAMS, json_pack("{ss}", "path", path),
                          "%s must lie inside a directory this server allows (symlinks "
                          "resolved): '%s'",
                          path + 7, acp_roots_at(r, i));
        return false;
    }
    return true;
}

/* Builds the root set from cwd and additionalDirectories (their types checked at the edge),
 * answering req with -32602 when a path is not absolute. The spec forbids dropping bad entries
 * silently. */
static acp_roots *roots_from(acp_agent *a, acp_req *req, const json_t *params)
{
    json_t *cwd = json_object_get(params, "cwd");
    json_t *dirs = json_object_get(params, "additionalDirectories");
    size_t nd = json_array_size(dirs);
    if (nd && (a->eng.disable & ACP_DISABLE_ADD_DIRS)) {
        acp_req_error(req, ACP_RPC_INVALID_PARAMS,
                      json_pack("{ss}", "path", "params.additionalDirectories"),
                      "additionalDirectories is not supported by this agent "
                      "(sessionCapabilities.additionalDirectories is not advertised)");
        return NULL;
    }
    const char **v = calloc(nd + 1, sizeof *v);
    if (!v) {
        acp_req_error(req, ACP_RPC_INTERNAL_ERROR, NULL, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < nd; i++) v[i] = json_string_value(json_array_get(dirs, i));
    acp_roots *r = NULL;
    int rc = acp_roots_new(json_string_value(cwd), v, nd, &r);
    free(v);
    if (rc) {
        acp_req_error(req, rc == ACP_EINVAL ? ACP_RPC_INVALID_PARAMS : ACP_RPC_INTERNAL_ERROR, NULL,
                      "%s", acp_error_last()->message);
        return NULL;
    }
    if (bounded(a, req, r)) return r;
    acp_roots_free(r);
    return NULL;
}

acp_session *session_open(acp_agent *a, acp_req *req, const char *id, bool must_exist)
{
    json_t *params = acp_req_params(req);
    acp_roots *roots = roots_from(a, req, params);
    if (!roots) return NULL;
    json_t *servers = json_object_get(params, "mcpServers");
    /* After validating the params, before starting any MCP server. The lease first: what is
     * read from the row after it is what no other holder can change any more. This agent
     * may hold it already (the session is open here and is being loaded afresh): that keeps
     * its epoch, so the old incarnation's last commit still goes through. */
    acp_store_session row = ACP_STORE_SESSION_INIT;
    int64_t fence = 0;
    /* The incarnation open here, if any, goes on using the lease when this open fails. */
    bool shared = session_find(a, id) != NULL;
    if (must_exist) {
        if (!lease_take(a, req, id, &fence)) {
            acp_roots_free(roots);
            return NULL;
        }
        int rc = acp_store_get(a->store, id, &row);
        /* A child is its parent's: a load of the parent replays it. */
        if (!rc && row.parent) {
            if (!shared) acp_store_lease_release(a->store, id, fence);
            subagent_row_unrestricted(req, id, row.parent);
            acp_store_session_clear(&row);
            acp_roots_free(roots);
            return NULL;
        }
        if (rc) {
            acp_roots_free(roots);
            if (rc != ACP_ENOTFOUND && !shared) acp_store_lease_release(a->store, id, fence);
            if (rc == ACP_ENOTFOUND)
                agent_reply_not_found(req, id); /* (req and id go with the answer) */
            else if (rc == ACP_ESTORE)
                agent_reply_store_error(a, req);
            else
                acp_req_error(req, ACP_RPC_INTERNAL_ERROR, NULL, "%s", acp_strerror(rc));
            return NULL;
        }
    }
    acp_session *s = calloc(1, sizeof *s);
    if (!s) goto nomem;
    s->a = a;
    s->roots = roots;
    s->fence = fence;
    s->keep_lease = shared;          /* a failure below frees s: its lease with it, unless shared */
    s->checked_at = uv_now(a->loop); /* the lease was taken just now (or is taken next) */
    s->id = strdup(id);
    acp_buf b = {0};
    if (!s->id) goto nomem;
    /* What the client learns about a loaded session besides its history. */
    memcpy(s->updated_at, row.updated_at, sizeof s->updated_at);
    s->title = row.title;
    row.title = NULL;
    /* The stored system prompt, until a load or resume that gives one replaces it. */
    if (session_set_system_prompt(s, row.system_prompt)) {
        row.system_prompt = NULL;
        goto nomem;
    }
    row.system_prompt = NULL;
    int crc = cfg_init(s, row.state);
    acp_store_session_clear(&row);
    if (crc) goto nomem;
    if (acp_json_escape(&b, s->id, strlen(s->id)) || !acp_buf_cstr(&b)) {
        acp_buf_free(&b);
        goto nomem;
    }
    s->id_json = b.data;
    json_t *dirs = json_array();
    for (size_t i = 1; dirs && i < acp_roots_count(roots); i++)
        json_array_append_new(dirs, json_string(acp_roots_at(roots, i)));
    s->add_dirs = dirs ? json_dumps(dirs, JSON_COMPACT) : NULL;
    json_decref(dirs);
    if (!s->add_dirs) goto nomem;

    size_t nr = acp_roots_count(roots);
    const char **rv = calloc(nr, sizeof *rv);
    if (!rv) goto nomem;
    for (size_t i = 0; i < nr; i++) rv[i] = acp_roots_at(roots, i);
    acp_mcp_opts mo = {.struct_size = sizeof(acp_mcp_opts),
                       .http = a->opts.mcp_http,
                       .sse = a->opts.mcp_sse,
                       .connect_timeout_ms = a->opts.mcp_connect_timeout_ms,
                       .on_log = mcp_log,
                       .user = a,
                       .no_stdio = a->bounds && a->bounds->no_stdio_mcp,
                       .acp_peer = agent_offers(a, ACP_UNSTABLE_MCP_ACP) ? a->conn : NULL};
    int rc = acp_mcp_set_new(a->loop, servers, &mo, rv, nr, &s->mcp);
    free(rv);
    if (rc) {
        acp_req_error(req, rc == ACP_EINVAL ? ACP_RPC_INVALID_PARAMS : ACP_RPC_INTERNAL_ERROR, NULL,
                      "%s", acp_error_last()->message);
        s->mcp = NULL;
        session_free(s);
        return NULL;
    }
    s->state = SESS_OPENING;
    return s;
nomem:
    acp_store_session_clear(&row);
    if (s) {
        session_free(s);
    } else {
        acp_roots_free(roots);
        if (fence && !shared) acp_store_lease_release(a->store, id, fence);
    }
    acp_req_error(req, ACP_RPC_INTERNAL_ERROR, NULL, "out of memory");
    return NULL;
}

void session_activate(acp_session *s)
{
    acp_agent *a = s->a;
    s->next = a->sessions;
    if (a->sessions) a->sessions->prev = s;
    a->sessions = s;
    a->nsessions++;
}

static void session_unlink(acp_session *s)
{
    acp_agent *a = s->a;
    if (s->prev)
        s->prev->next = s->next;
    else
        a->sessions = s->next;
    if (s->next) s->next->prev = s->prev;
    s->prev = s->next = NULL;
    a->nsessions--;
}

void session_free(acp_session *s)
{
    lease_give_up(s); /* after its last commit: a reconnecting client may load it at once */
    /* Only a session that never became active still has its set: nothing waits for it. */
    if (s->mcp) acp_mcp_set_close(s->mcp, NULL, NULL);
    for (size_t i = 0; i < s->ndefs; i++) {
        /* Only reached when the agent is being freed: the requests die with the conn. */
        json_decref(s->defs[i].result);
        free(s->defs[i].message);
    }
    free(s->defs);
    cfg_free(s);
    json_decref(s->meta);
    free(s->title);
    free(s->system_prompt);
    free(s->sp_text);
    acp_buf_free(&s->hold);
    acp_buf_free(&s->pend);
    acp_roots_free(s->roots);
    free(s->add_dirs);
    free(s->fork_src);
    free(s->id_json);
    free(s->id);
    replay_stop(s); /* what a replay into children still holds */
    free(s);
}

static void mcp_closed(void *user)
{
    acp_agent *a = user;
    a->closing_mcp--;
    if (a->freeing)
        agent_maybe_free(a);
    else
        agent_maybe_done(a);
}

bool session_close(acp_session *s)
{
    acp_agent *a = s->a;
    if (s->state == SESS_CLOSED) return s->dirty;
    subagent_close(s); /* its children first: they are its own */
    if (s->turn) {
        turn_cancel(s->turn);
        if (s->turn) turn_force_end(s->turn);
    }
    replay_stop(s);
    if (s->open_req) {
        acp_req_error(s->open_req, ACP_RPC_INTERNAL_ERROR, NULL,
                      "session %s was closed before it finished opening", s->id);
        s->open_req = NULL;
    }
    if (s->ready_called && a->eng.session_free) a->eng.session_free(s, a->eng.user);
    /* After the engine let go of them: what it did not release is released now. */
    calls_session_closed(s);
    session_unlink(s);
    s->state = SESS_CLOSED;
    if (s->mcp) {
        a->closing_mcp++;
        acp_mcp_set_close(s->mcp, mcp_closed, a);
        s->mcp = NULL;
    }
    if (s->dirty) return true;
    session_free(s);
    return false;
}

int session_defer(acp_session *s, acp_req *req, json_t *result, int code, const char *message,
                  bool prompt)
{
    if (s->ndefs == s->defs_cap) {
        size_t cap = s->defs_cap ? s->defs_cap * 2 : 4;
        deferred *d = realloc(s->defs, cap * sizeof *d);
        if (!d) return acp_error_code(ACP_ENOMEM);
        s->defs = d;
        s->defs_cap = cap;
    }
    s->defs[s->ndefs++] = (deferred){.req = req,
                                     .result = result,
                                     .code = code,
                                     .message = message ? strdup(message) : NULL,
                                     .prompt = prompt};
    return 0;
}

void session_gone(acp_session *s, bool fenced)
{
    if (s->gone) return;
    agent_log(s->a,
              fenced ? "session %s: another agent took its lease over (it was idle here, or "
                       "this one's lease had lapsed): closing it"
                     : "session %s was deleted from the store elsewhere: closing it",
              s->id);
    s->gone = true;
    s->fenced = fenced;
    if (fenced) lease_lost(s);
    agent_mark_dirty(s->a, s);
}

int session_gone_error(acp_session *s)
{
    return acp_error_set(ACP_ENOTFOUND,
                         s->fenced ? "session %s was taken over by another agent"
                                   : "session %s was deleted elsewhere",
                         s->id);
}

int session_write_failed(acp_session *s, int rc)
{
    if (rc != ACP_ENOTFOUND && rc != ACP_ESTALE) return rc;
    session_gone(s, rc == ACP_ESTALE);
    return session_gone_error(s);
}

void session_reply_gone(acp_session *s, acp_req *req)
{
    if (s->dirty && !session_defer(s, req, NULL, ACP_RPC_NOT_FOUND, NULL, false)) {
        s->defs[s->ndefs - 1].gone = true;
        return;
    }
    agent_reply_gone(req, s->id, s->fenced);
}

/* The end of a gone session, from its release, after its replies: an unanswered open is
 * answered -32002, then the ordinary close releases everything it holds (engine state, MCP
 * servers, terminals, client calls). */
static void session_end_gone(acp_session *s)
{
    if (s->open_req) {
        agent_reply_gone(s->open_req, s->id, s->fenced);
        s->open_req = NULL;
    }
    if (s->state != SESS_CLOSED)
        session_close(s);
    else if (!s->dirty)
        session_free(s);
}

void session_reply(acp_session *s, acp_req *req, json_t *result)
{
    if (s && s->dirty && !session_defer(s, req, result, 0, NULL, false)) return;
    acp_req_reply(req, result);
}

void session_reply_raw(acp_session *s, acp_req *req, const char *json, size_t n)
{
    if (s && s->dirty) {
        json_t *result = json_loadb(json, n, 0, NULL);
        if (result) {
            session_reply(s, req, result);
            return;
        }
        acp_req_error(req, ACP_RPC_INTERNAL_ERROR, NULL, "out of memory");
        return;
    }
    acp_req_reply_raw(req, json, n);
}

static bool kind_is_history(acp_span kind);

/* Where the update object starts in a line session_envelope() wrote for s. */
static size_t envelope_update_at(const acp_session *s)
{
    return sizeof env_prefix - 1 + strlen(s->id_json) + sizeof ",\"update\":" - 1;
}

/* A commit failed: the held history updates (what the batch should have stored) are dropped.
 * Everything else held with them is kept: our requests and notifications (a terminal/release,
 * a $/cancel_request the engine's calls depend on) and live updates whose state was stored on
 * its own (the runtime's current_mode_update: dropping it would leave the client believing a
 * mode the session no longer has). Every held line was written by this file: an update's
 * object sits at a known offset after the envelope's prefix. */
static void drop_held_history(acp_session *s)
{
    acp_buf *b = &s->hold;
    size_t keep = 0, at = envelope_update_at(s);
    for (size_t i = 0; i < b->len;) {
        const char *line = b->data + i, *nl = memchr(line, '\n', b->len - i);
        size_t n = nl ? (size_t)(nl - line) + 1 : b->len - i;
        acp_span kind;
        bool history = n > at && !memcmp(line, env_prefix, sizeof env_prefix - 1) &&
                       acp_json_member((acp_span){line + at, n - at - 3}, "sessionUpdate", &kind) &&
                       kind_is_history(kind);
        if (!history) {
            memmove(b->data + keep, line, n);
            keep += n;
        }
        i += n;
    }
    b->len = keep;
}

void session_release(acp_session *s, int commit_rc, const char *errmsg)
{
    acp_agent *a = s->a;
    s->dirty = false;
    a->held -= s->hold.len;
    /* A failed commit drops the updates it held, not our requests held behind them; so does
     * a gone session's (what was held of it is stored nowhere). */
    if (commit_rc || s->gone) drop_held_history(s);
    if (s->hold.len) acp_conn_out_append(a->conn, s->hold.data, s->hold.len);
    s->hold.len = 0;
    /* Keep idle sessions small: a big burst should not pin its buffer. A streaming turn keeps
     * what one loop turn holds (under AGENT_HIGH_WATER, doubled), or every loop turn would
     * fault a fresh megabyte in; one huge update is not kept for the rest of the turn. */
    acp_buf_shrink(&s->hold, s->turn ? 2 * AGENT_HIGH_WATER : 64 * 1024);
    /* A gone session's running turn is answered (-32002; the engine hears cancel) before the
     * replies held behind it, in the order the client asked: the set_mode that found the
     * session gone comes after the prompt it ends. */
    if (s->gone && s->turn && !s->turn->decided) turn_store_failed(s->turn, "");
    size_t n = s->ndefs;
    deferred *d = s->defs;
    /* A turn's answer held behind its last updates: those are committed now, so the lease is
     * marked idle before the answer goes out (lease.c). A prompt started since keeps it busy.
     * What the mark finds (deleted or taken over since the commit) changes nothing here: these
     * answers are stored and were shown; the next request or renewal finds it and says so. */
    bool marked = commit_rc || s->gone || s->turn || !s->fence;
    for (size_t i = 0; i < n && !marked; i++)
        if (d[i].prompt) {
            acp_store_lease_mark(a->store, s->id, s->fence, a->lease_ttl_ms, false);
            marked = true;
        }
    s->defs = NULL;
    s->ndefs = s->defs_cap = 0;
    for (size_t i = 0; i < n; i++) {
        if (d[i].gone || (s->gone && d[i].prompt)) {
            json_decref(d[i].result);
            agent_reply_gone(d[i].req, s->id, s->fenced);
        } else if (commit_rc && d[i].prompt) {
            json_decref(d[i].result);
            agent_store_error(d[i].req, errmsg);
        } else if (d[i].result || !d[i].code) {
            acp_req_reply(d[i].req, d[i].result);
        } else {
            acp_req_error(d[i].req, d[i].code, NULL, "%s", d[i].message ? d[i].message : "");
        }
        free(d[i].message);
    }
    free(d);
    if (s->gone) {
        session_end_gone(s);
        return;
    }
    if (commit_rc && s->turn && !s->turn->decided) turn_store_failed(s->turn, errmsg);
    if (s->state == SESS_CLOSED && !s->dirty) session_free(s);
}

int session_emit(acp_session *s, const char *json, size_t n, bool persist)
{
    int rc = persist ? history_append(s, json, n) : 0;
    if (rc) return rc;
    return session_send(s, json, n);
}

int session_envelope(acp_buf *b, const char *id_json, size_t idn, const char *json, size_t n)
{
    static const char mid[] = ",\"update\":";
    if (acp_buf_reserve(b, sizeof env_prefix + idn + sizeof mid + n + 3))
        return acp_error_code(ACP_ENOMEM);
    acp_buf_append(b, env_prefix, sizeof env_prefix - 1);
    acp_buf_append(b, id_json, idn);
    acp_buf_append(b, mid, sizeof mid - 1);
    acp_buf_append(b, json, n);
    acp_buf_append(b, "}}\n", 3);
    return 0;
}

acp_session *session_holder(acp_session *s)
{
    acp_session *h = s;
    for (acp_session *p = s->parent; p; p = p->parent)
        if (p->dirty) h = p;
    return h;
}

int session_send(acp_session *s, const char *json, size_t n)
{
    acp_agent *a = s->a;
    acp_session *h = session_holder(s);
    acp_buf *b = h->dirty ? &h->hold : &a->line;
    size_t before = b->len;
    if (session_envelope(b, s->id_json, strlen(s->id_json), json, n))
        return acp_error_code(ACP_ENOMEM);
    if (b == &a->line) {
        int rc = acp_conn_out_append(a->conn, b->data, b->len);
        b->len = 0;
        acp_buf_shrink(b, ACP_BUF_KEEP);
        return rc;
    }
    a->held += b->len - before;
    return 0;
}

enum kind { K_LIVE, K_HISTORY, K_INFO, K_STORED };

static bool kind_is_history(acp_span kind)
{
    static const char *const hist[] = {
        "user_message_chunk", "agent_message_chunk",      "agent_thought_chunk",
        "tool_call",          "tool_call_update",         "plan",
        "compaction_update",  "compaction_summary_chunk", "subagent_update"};
    for (size_t i = 0; i < sizeof hist / sizeof *hist; i++)
        if (acp_json_str_eq(kind, hist[i])) return true;
    return false;
}

/* The spec's MUST NOTs (Notice, CompactionUpdate, CompactionSummaryChunk). */
static const struct {
    const char *kind, *cap;
} gated[] = {{"notice", "session.notices"},
             {"compaction_update", "session.compaction"},
             {"compaction_summary_chunk", "session.compaction"},
             {"subagent_update", "subagents"}};

bool session_kinds_gated(const acp_agent *a)
{
    for (size_t i = 0; i < sizeof gated / sizeof *gated; i++)
        if (!acp_agent_client_has(a, gated[i].cap)) return true;
    return false;
}

const char *session_kind_needs(acp_span kind)
{
    /* Asked for every replayed row: a kind written plainly is one compare of its bytes; only
     * one written with escapes is decoded. */
    bool escaped = memchr(kind.p, '\\', kind.n) != NULL;
    for (size_t i = 0; i < sizeof gated / sizeof *gated; i++) {
        size_t n = strlen(gated[i].kind);
        if (escaped ? acp_json_str_eq(kind, gated[i].kind)
                    : kind.n == n + 2 && !memcmp(kind.p + 1, gated[i].kind, n))
            return gated[i].cap;
    }
    return NULL;
}

/* What becomes of an update kind: history (persisted, replayed), the session row's info, or
 * live only. An error (with its reason set) for what this client must not get or what the
 * runtime sends itself. A compaction this client must not get is still history (K_STORED): the
 * engine rebuilds its context from it after a load, and a client that opted in sees it then. */
static int kind_of(acp_session *s, acp_span kind, enum kind *k)
{
    const char *cap = session_kind_needs(kind);
    if (cap && !acp_agent_client_has(s->a, cap) && kind_is_history(kind)) {
        *k = K_STORED;
        return 0;
    }
    if (cap && !acp_agent_client_has(s->a, cap)) {
        char *name = acp_json_strdup(kind);
        int rc = acp_error_set(ACP_ENOTSUP, "the client did not advertise %s: no %s", cap,
                               name ? name : "such update");
        free(name);
        return rc;
    }
    if (acp_json_str_eq(kind, "subagent_update"))
        return acp_error_set(ACP_EINVAL, "the runtime sends subagent updates: use "
                                         "acp_session_subagent_new() / _update()");
    if (acp_json_str_eq(kind, "current_mode_update") ||
        acp_json_str_eq(kind, "config_option_update"))
        return acp_error_set(
            ACP_EINVAL, "the runtime sends mode and config updates: use acp_session_set_mode() "
                        "or acp_session_set_config*()");
    *k = kind_is_history(kind)                          ? K_HISTORY
         : acp_json_str_eq(kind, "session_info_update") ? K_INFO
                                                        : K_LIVE;
    return 0;
}

static int record_info(acp_session *s, const char *json, size_t n)
{
    json_t *u = json_loadb(json, n, 0, NULL);
    if (!u) return acp_error_code(ACP_EINVAL);
    json_t *title = json_object_get(u, "title");
    json_t *at = json_object_get(u, "updatedAt");
    int rc = 0;
    if (title || json_is_string(at)) {
        rc = acp_store_set_info(s->a->store, s->id, s->fence, title != NULL,
                                json_is_string(title) ? json_string_value(title) : NULL,
                                json_is_string(at) ? json_string_value(at) : NULL);
        /* A client-chosen updatedAt in another format is still sent, just not stored. */
        if (rc == ACP_EINVAL && json_is_string(at))
            rc = acp_store_set_info(s->a->store, s->id, s->fence, title != NULL,
                                    json_is_string(title) ? json_string_value(title) : NULL, NULL);
    }
    json_decref(u);
    /* Not sent when lost: the client must not see a title stored nowhere. */
    return session_write_failed(s, rc);
}

int acp_session_update_raw(acp_session *s, const char *json, size_t n, bool trusted)
{
    if (s->state == SESS_CLOSED) return acp_error_code(ACP_ECLOSED);
    if (s->gone) return session_gone_error(s);
    if (!trusted && acp_json_validate(json, n, 64)) return acp_error_code(ACP_EINVAL);
    acp_span obj = {json, n}, kind;
    if (acp_json_kind(obj) != 'o' || !acp_json_member(obj, "sessionUpdate", &kind) ||
        acp_json_kind(kind) != 's')
        return acp_error_code(ACP_EINVAL);
    enum kind k = K_LIVE;
    int rc = kind_of(s, kind, &k);
    if (rc) return rc;
    if (k == K_INFO && (rc = record_info(s, json, n))) return rc;
    if (k == K_STORED) return history_append(s, json, n);
    /* Stored nowhere, so no fence stops it: outside a turn (when a take-over may have
     * happened) the lease is checked first, once per loop turn (lease.c). */
    if (k == K_LIVE && !s->turn && s->checked_at != uv_now(s->a->loop) && s->fence) {
        lease_still_ours(s);
        if (s->gone) return session_gone_error(s);
    }
    return session_emit(s, json, n, k == K_HISTORY);
}

int acp_session_update(acp_session *s, const json_t *update)
{
    if (!json_is_object(update)) return acp_error_code(ACP_EINVAL);
    char *txt = json_dumps(update, JSON_COMPACT);
    if (!txt) return acp_error_code(ACP_ENOMEM);
    int rc = acp_session_update_raw(s, txt, strlen(txt), true);
    free(txt);
    return rc;
}

/* --- accessors --------------------------------------------------------------------------- */

acp_agent *acp_session_agent(const acp_session *s)
{
    return s->a;
}

const char *acp_session_id(const acp_session *s)
{
    return s->id;
}

const char *acp_session_cwd(const acp_session *s)
{
    return acp_roots_cwd(s->roots);
}

size_t acp_session_root_count(const acp_session *s)
{
    return acp_roots_count(s->roots);
}

const char *acp_session_root(const acp_session *s, size_t i)
{
    return acp_roots_at(s->roots, i);
}

int acp_session_set_meta(acp_session *s, const json_t *meta)
{
    if (meta && !json_is_object(meta)) return acp_error_set(ACP_EINVAL, "_meta must be an object");
    json_t *copy = meta ? json_deep_copy(meta) : NULL;
    if (meta && !copy) return acp_error_set(ACP_ENOMEM, "out of memory");
    json_decref(s->meta);
    s->meta = copy;
    return 0;
}

const json_t *acp_session_open_params(const acp_session *s)
{
    return s->open_params;
}

acp_mcp_set *acp_session_mcp(const acp_session *s)
{
    return s->mcp;
}

void acp_session_set_data(acp_session *s, void *data)
{
    s->data = data;
}

void *acp_session_data(const acp_session *s)
{
    return s->data;
}

acp_turn *acp_session_turn(const acp_session *s)
{
    return s->turn;
}

int acp_session_resolve_path(const acp_session *s, const char *path, char **out)
{
    int rc = acp_roots_resolve(s->roots, path, out);
    if (rc) agent_log(s->a, "session %s: %s", s->id, acp_error_last()->message);
    return rc;
}

int acp_session_open_path(const acp_session *s, const char *path, int flags, mode_t mode, int *fd)
{
    return acp_roots_open(s->roots, path, flags, mode, fd);
}

acp_session *session_target(acp_agent *a, acp_req *req, const char *id)
{
    acp_session *s = session_find(a, id);
    if (!s) {
        agent_reply_unknown(a, req, id, false);
        return NULL;
    }
    if (!subagent_unrestricted(s, req)) return NULL;
    if (s->state != SESS_READY) {
        acp_req_error(req, ACP_RPC_INVALID_REQUEST, NULL, "session %s is still opening", s->id);
        return NULL;
    }
    if (s->gone) { /* found deleted in this loop turn: the flush closes it */
        session_reply_gone(s, req);
        return NULL;
    }
    return s;
}
