/* SPDX-License-Identifier: Apache-2.0 */
/* session/load replay: stored update texts streamed into envelopes, a bounded step per loop
 * turn while the output has room, so a long history is I/O and never sits whole in memory. */
#include <stdlib.h>
#include <string.h>

#include "agent/internal.h"

/* A session whose replay waits while a child it announced is replayed. */
struct replay_frame {
    char *id, *id_json; /* owned; NULL: the loading session itself */
    int64_t seq;
};

/* add_line's answer for a row that announces a child not replayed yet: the step stops there. */
#define REPLAY_CHILD 1

/* Makes id / id_json (owned; NULL: the session itself) what the replay is on, from seq. */
static void replay_target(acp_session *s, char *id, char *id_json, int64_t seq)
{
    free(s->rid_own);
    free(s->rid_json_own);
    s->rid_own = id;
    s->rid_json_own = id_json;
    s->rid = id ? id : s->id;
    s->rid_json = id_json ? id_json : s->id_json;
    s->replay_seq = seq;
}

void replay_start(acp_session *s)
{
    acp_agent *a = s->a;
    s->replaying = true;
    replay_target(s, NULL, NULL, 0);
    s->rnext = a->replays;
    a->replays = s;
    agent_pump_start(a);
}

void replay_stop(acp_session *s)
{
    while (s->rdepth) {
        struct replay_frame *f = &s->rstack[--s->rdepth];
        free(f->id);
        free(f->id_json);
    }
    free(s->rstack);
    s->rstack = NULL;
    replay_target(s, NULL, NULL, 0);
    json_decref(s->rseen);
    s->rseen = NULL;
    free(s->rchild);
    s->rchild = NULL;
    if (!s->replaying) return;
    acp_agent *a = s->a;
    for (acp_session **p = &a->replays; *p; p = &(*p)->rnext) {
        if (*p == s) {
            *p = s->rnext;
            break;
        }
    }
    s->replaying = false;
    s->rnext = NULL;
}

/* What a step gathers by doubling its buffer before it is taken for a long history. */
#define REPLAY_SMALL (64u << 10)

struct step {
    acp_agent *a; /* NULL: the client takes every gated kind, no row needs looking at */
    acp_buf *b;
    const char *id;
    size_t idn;
    acp_session *kids; /* the client takes subagent updates: children are replayed */
};

/* The sessionUpdate of a stored update (JSON string text). Our writers put it first, so the
 * common case is read off the prefix; other text, and a kind written with escapes, is scanned. */
static acp_span stored_kind(const char *json, size_t n)
{
    static const char pre[] = "{\"sessionUpdate\":";
    size_t p = sizeof pre - 1;
    acp_span kind = {0};
    if (n > p + 1 && !memcmp(json, pre, p) && json[p] == '"') {
        const char *end = memchr(json + p + 1, '"', n - p - 1);
        if (end && !memchr(json + p, '\\', (size_t)(end - json) - p))
            return (acp_span){json + p, (size_t)(end - json) - p + 1};
    }
    acp_json_member((acp_span){json, n}, "sessionUpdate", &kind);
    return kind;
}

/* A child's history is replayed right after the first update that announced it (its
 * subagent_update on the parent), so the load shows the conversation in the order it was
 * lived: the announcement, what the child did, the parent's next steps. REPLAY_CHILD when the
 * row announces a child not replayed yet (s->rchild names it). */
static int announced(acp_session *s, const char *json, size_t n)
{
    acp_span kind = stored_kind(json, n), id;
    if (!acp_json_str_eq(kind, "subagent_update") ||
        !acp_json_member((acp_span){json, n}, "sessionId", &id) || acp_json_kind(id) != 's')
        return 0;
    char *child = acp_json_strdup(id);
    if (!child || (!s->rseen && !(s->rseen = json_object()))) {
        free(child);
        return acp_error_code(ACP_ENOMEM);
    }
    if (json_object_get(s->rseen, child) || json_object_set_new(s->rseen, child, json_true())) {
        free(child);
        return 0;
    }
    s->rchild = child;
    return REPLAY_CHILD;
}

static int add_line(void *user, int64_t seq, const char *json, size_t n)
{
    struct step *st = user;
    /* The history keeps compactions in their place; a client that never opted into them must
     * not get them (the spec's MUST NOT), also not on a load: the same gate as when sent. */
    const char *cap = st->a ? session_kind_needs(stored_kind(json, n)) : NULL;
    if (cap && !acp_agent_client_has(st->a, cap)) return 0;
    /* A history past REPLAY_SMALL fills the step: its buffer is sized for the step at once
     * (and the row that ends it), not doubled up to there. Each doubling copies what was
     * gathered when acp-agent keeps blocks under 8 MiB on the heap (memtrim.c), where a
     * realloc moves them: 4 MB copied per load. A short history never asks for this much. */
    if (st->b->len > REPLAY_SMALL && st->b->cap < 2 * AGENT_REPLAY_STEP)
        acp_buf_reserve(st->b, 2 * AGENT_REPLAY_STEP - st->b->len); /* failing: grown below */
    int rc = session_envelope(st->b, st->id, st->idn, json, n);
    return rc || !st->kids ? rc : announced(st->kids, json, n);
}

static void replay_step(acp_session *s)
{
    acp_agent *a = s->a;
    struct step st = {session_kinds_gated(a) ? a : NULL, &a->line, s->rid_json, strlen(s->rid_json),
                      subagent_replayed(a) ? s : NULL};
    a->line.len = 0;
    int64_t last = s->replay_seq;
    bool done = false;
    int rc = acp_store_replay(a->store, s->rid, s->replay_seq, AGENT_REPLAY_STEP, add_line, &st,
                              &last, &done);
    if (rc == REPLAY_CHILD) rc = 0;
    if (rc == ACP_ENOTFOUND && s->rdepth) { /* a child deleted meanwhile: the parent goes on */
        a->line.len = 0;
        rc = 0;
        done = true;
    }
    if (rc) {
        a->line.len = 0;
        replay_stop(s);
        acp_req *req = s->open_req;
        s->open_req = NULL;
        if (rc == ACP_ENOTFOUND) {
            /* It was there when the load began (its roots were recorded): deleted since, by
             * another process; what was replayed so far is answered by this error. */
            agent_reply_gone(req, s->id, s->fenced);
        } else if (rc == ACP_ESTORE) {
            agent_reply_store_error(a, req);
        } else {
            acp_req_error(req, ACP_RPC_INTERNAL_ERROR, NULL, "replay failed: %s", acp_strerror(rc));
        }
        session_close(s);
        return;
    }
    /* The session is opening: nothing of it can be held, so the bytes go straight out. */
    if (a->line.len) acp_conn_out_append(a->conn, a->line.data, a->line.len);
    a->line.len = 0;
    if (a->line.cap > 2 * AGENT_REPLAY_STEP) acp_buf_free(&a->line);
    s->replay_seq = last;
    if (s->rchild) { /* into the child announced, then back here */
        struct replay_frame *f = realloc(s->rstack, (s->rdepth + 1) * sizeof *f);
        acp_buf b = {0};
        if (f && !acp_json_escape(&b, s->rchild, strlen(s->rchild)) && acp_buf_cstr(&b)) {
            s->rstack = f;
            f[s->rdepth++] = (struct replay_frame){s->rid_own, s->rid_json_own, last};
            s->rid_own = s->rid_json_own = NULL;
            replay_target(s, s->rchild, b.data, 0);
            s->rchild = NULL;
            return;
        }
        if (f) s->rstack = f;
        acp_buf_free(&b); /* out of memory: the child is left out, the parent goes on */
        free(s->rchild);
        s->rchild = NULL;
    }
    if (done && s->rdepth) {
        struct replay_frame *f = &s->rstack[--s->rdepth];
        replay_target(s, f->id, f->id_json, f->seq);
        return;
    }
    if (done) {
        replay_stop(s);
        s->replay_done = true;
        session_opened_step(s);
    }
}

void replay_finish(acp_session *s)
{
    while (s->replaying) replay_step(s);
}

void replay_run(acp_agent *a)
{
    /* One step for each replaying session (the list may change under us: restart after
     * every step from a session still in it). */
    acp_session *todo[64];
    size_t n = 0;
    for (acp_session *s = a->replays; s && n < 64; s = s->rnext) todo[n++] = s;
    for (size_t i = 0; i < n; i++) {
        bool still = false;
        for (acp_session *s = a->replays; s; s = s->rnext) still |= s == todo[i];
        if (still && agent_writable(a)) replay_step(todo[i]);
    }
}
