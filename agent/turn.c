/* SPDX-License-Identifier: Apache-2.0 */
/* acp_turn: one session/prompt, from the stored user message to its single response. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/internal.h"

static void turn_unwait(acp_turn *t)
{
    if (!t->waiting) return;
    acp_agent *a = t->s->a;
    /* In the waiters list, or in the batch turn_writable_run is working through. */
    for (acp_turn **head = &a->waiters; head; head = head == &a->waiters ? &a->running : NULL) {
        for (acp_turn **p = head; *p; p = &(*p)->wnext) {
            if (*p == t) {
                *p = t->wnext;
                t->waiting = false;
                t->wnext = NULL;
                return;
            }
        }
    }
}

static void turn_free(acp_turn *t)
{
    turn_unwait(t);
    calls_turn_free(t);
    localfs_turn_free(t);
    if (t->s->turn == t) t->s->turn = NULL;
    json_decref(t->meta);
    json_decref((json_t *)t->prompt);
    free(t);
}

static void on_req_cancel(acp_req *r, void *user)
{
    /* $/cancel_request for the prompt request: the same as session/cancel. */
    turn_cancel(user);
}

void turn_start(acp_session *s, acp_req *req, const json_t *prompt)
{
    acp_agent *a = s->a;
    acp_turn *t = calloc(1, sizeof *t);
    if (!t) {
        acp_req_error(req, ACP_RPC_INTERNAL_ERROR, NULL, "out of memory");
        return;
    }
    t->s = s;
    t->req = req;
    /* Our own reference: the engine may read the prompt until it ends the turn, and a store
     * failure answers (and frees) the request before that. */
    t->prompt = json_incref((json_t *)prompt);
    s->turn = t;
    acp_req_on_cancel(req, on_req_cancel, t);

    /* The user's message becomes history now, under a message id of ours: all its blocks or
     * none. A block that cannot be added takes back those before it, so a prompt answered
     * with an error leaves nothing of itself to be stored twice when the client sends it
     * again. (The session's merged text goes in first: it is not the prompt's to take back.) */
    char mid[48];
    bool no_id = acp_agent_new_id("msg_", mid) != 0;
    bool failed = no_id || history_settle(s) != 0;
    size_t mark = acp_store_pending(a->store);
    for (size_t i = 0; !failed && i < json_array_size(prompt); i++) {
        acp_buf *b = &a->scratch;
        b->len = 0;
        acp_jw w;
        acp_jw_init(&w, b);
        acp_jw_obj(&w);
        acp_jw_kstr(&w, "sessionUpdate", "user_message_chunk");
        acp_jw_kstr(&w, "messageId", mid);
        acp_jw_key(&w, "content");
        acp_jw_json(&w, json_array_get(prompt, i));
        acp_jw_obj_end(&w);
        failed = acp_jw_status(&w) || history_append(s, b->data, b->len);
    }
    if (failed) {
        acp_store_discard(a->store, mark);
        a->scratch.len = 0;
        s->turn = NULL;
        json_decref((json_t *)t->prompt);
        free(t);
        acp_req_error(req, ACP_RPC_INTERNAL_ERROR, NULL, "%s",
                      no_id ? acp_error_last()->message : "out of memory");
        return;
    }
    a->scratch.len = 0;
    if (a->scratch.cap > 1024 * 1024) acp_buf_free(&a->scratch);
    json_t *meta = json_object_get(acp_req_params(req), "_meta");
    t->meta = json_is_object(meta) ? json_incref(meta) : NULL;
    a->eng.prompt(t, prompt, a->eng.user);
}

void turn_cancel(acp_turn *t)
{
    if (t->cancelled) return;
    t->cancelled = true;
    acp_session *s = t->s;
    acp_agent *a = s->a;
    if (!t->decided && a->eng.cancel) a->eng.cancel(t, a->eng.user);
    /* The engine hears first; if it did not end the turn (which forgets its client calls),
     * they are cancelled now, and what it may wait for (a permission) resolves cancelled. */
    if (s->turn == t) calls_turn_cancelled(t);
}

/* Fixes the response (now, or after the session's held output is released). */
static void turn_decide(acp_turn *t, json_t *result, int code, const char *message)
{
    acp_session *s = t->s;
    /* Before the response: the turn's last updates (failed tool calls) and requests (terminal
     * releases) must precede it on the wire. */
    calls_turn_ended(t);
    t->decided = true;
    acp_req *req = t->req;
    t->req = NULL;
    if (!req) {
        json_decref(result);
        return;
    }
    acp_req_on_cancel(req, NULL, NULL);
    /* Idle before the answer goes out (lease.c); with output held, the release marks it after
     * the commit. A lease found taken makes s gone (and dirty): answered -32002 below. */
    if (!s->dirty && !s->gone) lease_mark(s, false);
    if (s->gone && !s->dirty) { /* (dirty: the release answers it so) */
        json_decref(result);
        agent_reply_gone(req, s->id, s->fenced);
        return;
    }
    if (s->dirty) {
        if (!session_defer(s, req, result, result ? 0 : code, message, true)) return;
        json_decref(result);
        acp_req_error(req, ACP_RPC_INTERNAL_ERROR, NULL, "out of memory");
        return;
    }
    if (result)
        acp_req_reply(req, result);
    else
        acp_req_error(req, code, NULL, "%s", message ? message : "");
}

static json_t *stop(const char *reason)
{
    return json_pack("{ss}", "stopReason", reason);
}

void turn_force_end(acp_turn *t)
{
    if (!t->decided) turn_decide(t, stop("cancelled"), 0, NULL);
    turn_free(t);
}

void turn_store_failed(acp_turn *t, const char *errmsg)
{
    char buf[1024];
    /* The prompt must be answered; the engine learns through cancel and ends the turn. Decided
     * first: nothing more of the turn can be stored (calls_turn_ended only forgets its calls;
     * its terminals are released when the engine ends the turn). */
    t->decided = true;
    turn_decide(t, NULL, ACP_RPC_INTERNAL_ERROR, agent_store_sentence(errmsg, buf, sizeof buf));
    acp_agent *a = t->s->a;
    if (!t->cancelled) {
        t->cancelled = true;
        if (a->eng.cancel) a->eng.cancel(t, a->eng.user);
    }
}

/* A turn ending with nothing left to commit (its last updates went out in an earlier loop
 * turn, or it had none) has no commit to find its session deleted by another process or taken
 * over by another holder: ask the store (a renewal of the lease says both), so that a stop
 * reason is never the answer for a session that is gone. */
static void check_stored(acp_session *s)
{
    if (s->dirty || s->gone) return;
    acp_agent *a = s->a;
    if (s->fence) return; /* turn_decide's idle mark of the lease says both */
    if (agent_stored(a, s->id) == ACP_ENOTFOUND) session_gone(s, false);
}

int acp_turn_end(acp_turn *t, const char *stop_reason)
{
    static const char *const ok[] = {"end_turn", "max_tokens", "max_turn_requests", "refusal",
                                     "cancelled"};
    int rc = ACP_EINVAL;
    for (size_t i = 0; stop_reason && i < sizeof ok / sizeof *ok; i++)
        if (!strcmp(stop_reason, ok[i])) rc = 0;
    if (!t->decided && !t->cancelled) check_stored(t->s);
    if (!t->decided) {
        if (t->cancelled)
            turn_decide(t, stop("cancelled"), 0, NULL);
        else if (rc)
            turn_decide(t, NULL, ACP_RPC_INTERNAL_ERROR, "the engine ended the turn badly");
        else
            turn_decide(t, stop(stop_reason), 0, NULL);
    }
    turn_free(t);
    return rc;
}

int acp_turn_fail(acp_turn *t, int code, const char *fmt, ...)
{
    if (!t->decided) {
        if (t->cancelled) {
            turn_decide(t, stop("cancelled"), 0, NULL);
        } else {
            char msg[1024];
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(msg, sizeof msg, fmt, ap);
            va_end(ap);
            turn_decide(t, NULL, code ? code : ACP_RPC_INTERNAL_ERROR, msg);
        }
    }
    turn_free(t);
    return 0;
}

acp_session *acp_turn_session(const acp_turn *t)
{
    return t->s;
}

bool acp_turn_cancelled(const acp_turn *t)
{
    return t->cancelled;
}

int acp_turn_update(acp_turn *t, const json_t *update)
{
    if (t->decided) return acp_error_code(ACP_ECLOSED);
    return acp_session_update(t->s, update);
}

int acp_turn_update_raw(acp_turn *t, const char *json, size_t n, bool trusted)
{
    if (t->decided) return acp_error_code(ACP_ECLOSED);
    return acp_session_update_raw(t->s, json, n, trusted);
}

int acp_turn_text(acp_turn *t, const char *kind, const char *message_id, const char *text, size_t n)
{
    if (t->decided) return acp_error_code(ACP_ECLOSED);
    acp_agent *a = t->s->a;
    acp_buf *b = &a->scratch;
    b->len = 0;
    /* Written as text, not through acp_jw: this is once per streamed token, and escaping the
     * same constant keys for every one was a fifth of the update's cost. */
    static const char open[] = "{\"sessionUpdate\":", mid[] = ",\"messageId\":",
                      content[] = ",\"content\":{\"type\":\"text\",\"text\":";
    if (!kind) kind = "agent_message_chunk";
    int rc = acp_buf_append(b, open, sizeof open - 1) ? ACP_ENOMEM : 0;
    if (!rc) rc = acp_json_escape(b, kind, strlen(kind));
    if (!rc && message_id) rc = acp_buf_append(b, mid, sizeof mid - 1) ? ACP_ENOMEM : 0;
    if (!rc && message_id) rc = acp_json_escape(b, message_id, strlen(message_id));
    if (!rc) rc = acp_buf_append(b, content, sizeof content - 1) ? ACP_ENOMEM : 0;
    size_t body = b->len + 1; /* after the opening quote */
    if (!rc) rc = acp_json_escape(b, text, n);
    size_t end = b->len - 1; /* at the closing quote */
    if (!rc) rc = acp_buf_append(b, "}}", 2) ? ACP_ENOMEM : 0;
    /* Merged only under a messageId: without one nothing says two chunks are one message. */
    if (!rc && message_id)
        rc = history_append_text(t->s, b->data, b->len, body, end);
    else if (!rc)
        rc = history_append(t->s, b->data, b->len);
    if (!rc) rc = session_send(t->s, b->data, b->len);
    b->len = 0;
    if (b->cap > 1024 * 1024) acp_buf_free(b);
    return rc;
}

const json_t *acp_turn_meta(const acp_turn *t)
{
    return t->meta;
}

bool acp_turn_writable(const acp_turn *t)
{
    return agent_writable(t->s->a);
}

void acp_turn_on_writable(acp_turn *t, void (*cb)(acp_turn *t, void *user), void *user)
{
    acp_agent *a = t->s->a;
    t->on_writable = cb;
    t->writable_user = user;
    if (!cb) {
        turn_unwait(t);
        return;
    }
    if (!t->waiting) {
        t->waiting = true;
        t->wnext = a->waiters;
        a->waiters = t;
    }
    agent_pump_start(a);
}

void turn_writable_run(acp_agent *a)
{
    /* Work through the current waiters; a callback may end any turn (unlinking it from
     * `running`) or register again (joining `waiters`, for the next loop turn). */
    a->running = a->waiters;
    a->waiters = NULL;
    while (a->running) {
        acp_turn *t = a->running;
        if (!agent_writable(a)) {
            /* Put the rest back for when the output drains. */
            acp_turn *last = a->running;
            while (last->wnext) last = last->wnext;
            last->wnext = a->waiters;
            a->waiters = a->running;
            a->running = NULL;
            break;
        }
        a->running = t->wnext;
        t->waiting = false;
        t->wnext = NULL;
        void (*cb)(acp_turn *, void *) = t->on_writable;
        t->on_writable = NULL;
        if (cb) cb(t, t->writable_user);
    }
}
