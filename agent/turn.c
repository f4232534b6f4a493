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

/* Forgets the turn's outstanding client calls: their callbacks never run. */
static void turn_forget_calls(acp_turn *t)
{
    acp_conn *c = t->s->a->conn;
    while (t->calls) {
        pcall *p = t->calls;
        t->calls = p->next;
        acp_conn_forget(c, p->call);
        free(p);
    }
}

static void turn_free(acp_turn *t)
{
    turn_unwait(t);
    turn_forget_calls(t);
    if (t->s->turn == t) t->s->turn = NULL;
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
    t->prompt = prompt;
    s->turn = t;
    acp_req_on_cancel(req, on_req_cancel, t);

    /* The user's message becomes history now, under a message id of ours. */
    char mid[48];
    acp_agent_new_id("msg_", mid);
    for (size_t i = 0; i < json_array_size(prompt); i++) {
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
        if (acp_jw_status(&w) || history_append(s, b->data, b->len)) {
            b->len = 0;
            s->turn = NULL;
            free(t);
            acp_req_error(req, ACP_RPC_INTERNAL_ERROR, NULL, "out of memory");
            return;
        }
    }
    a->scratch.len = 0;
    if (a->scratch.cap > 1024 * 1024) acp_buf_free(&a->scratch);
    a->eng.prompt(t, prompt, a->eng.user);
}

void turn_cancel(acp_turn *t)
{
    if (t->cancelled) return;
    t->cancelled = true;
    acp_agent *a = t->s->a;
    for (pcall *p = t->calls; p; p = p->next) acp_conn_cancel(a->conn, p->call);
    if (!t->decided && a->eng.cancel) a->eng.cancel(t, a->eng.user);
}

/* Fixes the response (now, or after the session's held output is released). */
static void turn_decide(acp_turn *t, json_t *result, int code, const char *message)
{
    acp_session *s = t->s;
    t->decided = true;
    acp_req *req = t->req;
    t->req = NULL;
    if (!req) {
        json_decref(result);
        return;
    }
    acp_req_on_cancel(req, NULL, NULL);
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
    /* The prompt must be answered; the engine learns through cancel and ends the turn. */
    turn_decide(t, NULL, ACP_RPC_INTERNAL_ERROR, agent_store_sentence(errmsg, buf, sizeof buf));
    turn_forget_calls(t);
    acp_agent *a = t->s->a;
    if (!t->cancelled) {
        t->cancelled = true;
        if (a->eng.cancel) a->eng.cancel(t, a->eng.user);
    }
}

int acp_turn_end(acp_turn *t, const char *stop_reason)
{
    static const char *const ok[] = {"end_turn", "max_tokens", "max_turn_requests", "refusal",
                                     "cancelled"};
    int rc = ACP_EINVAL;
    for (size_t i = 0; stop_reason && i < sizeof ok / sizeof *ok; i++)
        if (!strcmp(stop_reason, ok[i])) rc = 0;
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
    if (t->decided) return ACP_ECLOSED;
    return acp_session_update(t->s, update);
}

int acp_turn_update_raw(acp_turn *t, const char *json, size_t n, bool trusted)
{
    if (t->decided) return ACP_ECLOSED;
    return acp_session_update_raw(t->s, json, n, trusted);
}

int acp_turn_text(acp_turn *t, const char *kind, const char *message_id, const char *text, size_t n)
{
    if (t->decided) return ACP_ECLOSED;
    acp_agent *a = t->s->a;
    acp_buf *b = &a->scratch;
    b->len = 0;
    acp_jw w;
    acp_jw_init(&w, b);
    acp_jw_obj(&w);
    acp_jw_kstr(&w, "sessionUpdate", kind ? kind : "agent_message_chunk");
    if (message_id) acp_jw_kstr(&w, "messageId", message_id);
    acp_jw_key(&w, "content");
    acp_jw_obj(&w);
    acp_jw_kstr(&w, "type", "text");
    acp_jw_key(&w, "text");
    size_t body = b->len + 1; /* after the opening quote */
    acp_jw_strn(&w, text, n);
    size_t end = b->len - 1; /* at the closing quote */
    acp_jw_obj_end(&w);
    acp_jw_obj_end(&w);
    int rc = acp_jw_status(&w);
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

/* --- client calls ---------------------------------------------------------------------------- */

static void call_done(acp_conn *c, acp_msg *m, void *user)
{
    pcall *p = user;
    acp_turn *t = p->t;
    for (pcall **q = &t->calls; *q; q = &(*q)->next) {
        if (*q == p) {
            *q = p->next;
            break;
        }
    }
    acp_turn_call_cb cb = p->cb;
    void *u = p->user;
    free(p);
    if (acp_msg_is_error(m)) {
        int st = acp_msg_error_code(m) == ACP_RPC_CONN_CLOSED ? ACP_ECLOSED : ACP_EPROTO;
        cb(t, st, NULL, acp_msg_error_message(m), u);
    } else {
        json_t *r = acp_msg_result(m);
        cb(t, r ? 0 : ACP_EPROTO, r, r ? NULL : "the client's result does not parse", u);
    }
}

int acp_turn_call(acp_turn *t, const char *method, json_t *params, acp_turn_call_cb cb, void *user)
{
    acp_session *s = t->s;
    acp_agent *a = s->a;
    const char *need = NULL;
    if (!strcmp(method, "fs/read_text_file"))
        need = "fs.readTextFile";
    else if (!strcmp(method, "fs/write_text_file"))
        need = "fs.writeTextFile";
    else if (!strncmp(method, "terminal/", 9))
        need = "terminal";
    int rc = 0;
    if (t->decided)
        rc = ACP_ECLOSED;
    else if (need && !acp_agent_client_has(a, need))
        rc = ACP_ENOTSUP;
    else if (params && !json_is_object(params))
        rc = ACP_EINVAL;
    else if (!params && !(params = json_object()))
        rc = ACP_ENOMEM;
    if (rc) {
        json_decref(params);
        return rc;
    }
    json_object_set_new(params, "sessionId", json_string(s->id));
    pcall *p = calloc(1, sizeof *p);
    if (!p) {
        json_decref(params);
        return ACP_ENOMEM;
    }
    p->t = t;
    p->cb = cb;
    p->user = user;
    /* Held with the session's updates when some are uncommitted: requests must not overtake
     * the updates that explain them. */
    size_t before = s->hold.len;
    if (s->dirty) acp_conn_redirect(a->conn, &s->hold);
    rc = acp_conn_call(a->conn, method, params, call_done, p, &p->call);
    acp_conn_redirect(a->conn, NULL);
    a->held += s->hold.len - before;
    if (rc) {
        free(p);
        return rc;
    }
    p->next = t->calls;
    t->calls = p;
    return 0;
}
