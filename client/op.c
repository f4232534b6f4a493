/* SPDX-License-Identifier: Apache-2.0 */
/* Calls in flight: every typed call is an op that ends in the application's callback, with a
 * deadline when it has one; the synchronous calls are those ops plus a loop run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/internal.h"

static uint64_t now_ms(void)
{
    return uv_hrtime() / 1000000;
}

static void op_free(acp_client_op *op)
{
    acp_roots_free(op->roots);
    free(op->id);
    free(op->method);
    free(op);
}

static void unlink_op(acp_client_op *op)
{
    for (acp_client_op **pp = &op->c->ops; *pp; pp = &(*pp)->next) {
        if (*pp == op) {
            *pp = op->next;
            return;
        }
    }
}

/* error.data, said briefly: agents put the real reason there ("Claude Code process exited
 * with code 1") behind a bare "Internal error". */
static void data_text(json_t *data, char *out, size_t n)
{
    out[0] = 0;
    if (!data || json_is_null(data)) return;
    if ((json_is_object(data) && !json_object_size(data)) ||
        (json_is_array(data) && !json_array_size(data)))
        return; /* `{}` says nothing: not worth "({})" after the message */
    const char *s = json_string_value(data);
    if (!s) s = json_string_value(json_object_get(data, "details"));
    if (!s) s = json_string_value(json_object_get(data, "message"));
    /* Only the methods (qwen-code's -32000): initialize gave them, applications name them. */
    if (!s && json_is_object(data) && json_object_size(data) == 1 &&
        json_object_get(data, "authMethods"))
        return;
    char *dump = s ? NULL : json_dumps(data, JSON_COMPACT | JSON_ENCODE_ANY);
    if (dump) s = dump;
    size_t len = s ? strlen(s) : 0;
    if (len >= n) { /* cut at a character boundary, and say so: the "..." must fit */
        size_t cut = n - 4;
        while (cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80) cut--;
        snprintf(out, n, "%.*s...", (int)cut, s);
    } else if (s) {
        memcpy(out, s, len + 1);
    }
    free(dump);
}

/* The reply carries its own copy of the sentence: the callback may make calls that fail and
 * set the last error again while it still reads r->errmsg. */
static const char *reply_errmsg(acp_client *c)
{
    snprintf(c->err, sizeof c->err, "%s", acp_error_last()->message);
    return c->err;
}

static void on_answer(acp_conn *conn, acp_msg *m, void *user)
{
    acp_client_op *op = user;
    acp_client *c = op->c;
    /* An answer is no call of the application's: its failure goes to the callback only. */
    acp_error_saved app_err;
    acp_error_save(&app_err);
    unlink_op(op);
    acp_client_reply r = {.session = op->s, .stop = "unknown"};
    c->errcode = 0;
    if (op->timed_out) {
        r.status = acp_error_set(ACP_ETIMEDOUT,
                                 "the agent did not answer %s in time; it was asked to "
                                 "cancel it",
                                 op->method);
    } else if (acp_msg_is_error(m) && acp_msg_error_code(m) == ACP_RPC_CONN_CLOSED &&
               acp_conn_closed(conn)) { /* the code alone is no proof: an agent may send it */
        r.status = c->net_err[0] ? acp_error_set(ACP_ECLOSED,
                                                 "the connection to the agent ended before "
                                                 "it answered %s: %s",
                                                 op->method, c->net_err)
                                 : acp_error_set(ACP_ECLOSED,
                                                 "the agent exited before answering %s; see "
                                                 "its messages above",
                                                 op->method);
    } else if (acp_msg_is_error(m)) {
        r.code = c->errcode = acp_msg_error_code(m);
        r.data = acp_msg_error_data(m);
        char why[300];
        data_text(r.data, why, sizeof why);
        r.status =
            acp_error_set(ACP_EPROTO, "agent error %d on %s: %s%s%s%s", r.code, op->method,
                          acp_msg_error_message(m), why[0] ? " (" : "", why, why[0] ? ")" : "");
    } else if (!(r.result = acp_msg_result(m))) {
        r.status = acp_error_set(ACP_EPROTO,
                                 "the agent's answer to %s is not valid JSON-RPC (a result "
                                 "we cannot parse)",
                                 op->method);
    }
    if (op->finish) op->finish(op, &r);
    acp_client_pending_op_ended(c, op);
    r.errmsg = r.status ? reply_errmsg(c) : "";
    acp_error_restore(&app_err);
    if (op->cb) op->cb(c, &r, op->user);
    op_free(op);
    acp_client_deadlines(c);
}

int acp_client_op_start(acp_client *c, const char *method, json_t *params, acp_op_finish finish,
                        acp_client_cb cb, void *user, acp_client_op **out)
{
    if (out) *out = NULL;
    c->errcode = 0;
    if (c->gone) {
        json_decref(params);
        return acp_error_set(ACP_ECLOSED, "%s",
                             acp_client_gone_why(c, "the agent has exited; start it again"));
    }
    if (cb == acp_client_sync_cb && !c->loop) { /* nothing would ever run the loop for it */
        json_decref(params);
        return acp_error_set(ACP_EINVAL,
                             "synchronous calls need a loop; in ACP_CLIENT_MANUAL use the "
                             "_start forms");
    }
    if (!params) /* json_pack failed: a string argument was not UTF-8 */
        return acp_error_set(ACP_EINVAL, "cannot send %s: an argument is not valid UTF-8", method);
    acp_client_op *op = calloc(1, sizeof *op);
    if (!op) {
        json_decref(params);
        return acp_error_set(ACP_ENOMEM, "out of memory");
    }
    *op = (acp_client_op){.c = c, .cb = cb, .user = user, .finish = finish};
    int rc = (op->method = strdup(method)) ? 0 : ACP_ENOMEM;
    if (rc)
        json_decref(params);
    else
        rc = acp_conn_call(c->conn, method, params, on_answer, op, &op->call);
    if (rc) {
        free(op->method);
        free(op);
        return acp_error_set(rc, "cannot send %s: %s", method, acp_strerror(rc));
    }
    op->next = c->ops;
    c->ops = op;
    if (c->opts.call_timeout_ms && strcmp(method, "initialize") != 0)
        acp_client_op_timeout(op, c->opts.call_timeout_ms);
    if (out) *out = op;
    return 0;
}

int acp_client_op_cancel(acp_client_op *op)
{
    if (op->s && op->s->prompt == op) return acp_client_session_cancel(op->s);
    return acp_conn_cancel(op->c->conn, op->call);
}

void acp_client_op_timeout(acp_client_op *op, unsigned ms)
{
    op->deadline = ms ? now_ms() + ms : 0;
    acp_client_deadlines(op->c);
}

int64_t acp_client_op_id(const acp_client_op *op)
{
    return acp_call_id(op->call);
}

int acp_client_next_timeout(const acp_client *c)
{
    uint64_t first = 0;
    for (acp_client_op *op = c->ops; op; op = op->next)
        if (op->deadline && (!first || op->deadline < first)) first = op->deadline;
    if (!first) return -1;
    uint64_t now = now_ms();
    return first <= now ? 0 : first - now > INT32_MAX ? INT32_MAX : (int)(first - now);
}

void acp_client_tick(acp_client *c)
{
    uint64_t now = now_ms();
    for (acp_client_op *op = c->ops; op;) {
        if (op->deadline && op->deadline <= now) {
            op->timed_out = true;
            /* A prompt's turn ends the protocol's way too: an agent may ignore '$/' methods,
             * and the turn's pending permission requests are owed `cancelled`. */
            if (op->s && op->s->prompt == op) acp_client_session_cancel(op->s);
            /* Runs on_answer now, which unlinks op: start over from the head. */
            acp_conn_abandon(c->conn, op->call, ACP_RPC_CONN_CLOSED, "timed out");
            op = c->ops;
        } else {
            op = op->next;
        }
    }
}

static void on_timer(uv_timer_t *t)
{
    acp_client *c = t->data;
    acp_client_tick(c);
    acp_client_deadlines(c);
}

void acp_client_deadlines(acp_client *c)
{
    if (!c->loop || !c->timer.loop) return; /* manual mode: the application asks */
    int ms = acp_client_next_timeout(c);
    if (ms < 0)
        uv_timer_stop(&c->timer);
    else
        uv_timer_start(&c->timer, on_timer, (uint64_t)ms, 0);
}

void acp_client_ops_cancel(acp_client *c, acp_client_session *s)
{
    for (acp_client_op *op = c->ops; op;) {
        if (s && op->s != s) {
            op = op->next;
            continue;
        }
        unlink_op(op);
        acp_conn_forget(c->conn, op->call);
        if (op->s && op->s->prompt == op) op->s->prompt = NULL;
        acp_client_reply r = {
            .status = acp_error_set(ACP_ECANCELLED,
                                    "%s was abandoned: its session handle or the client was "
                                    "freed",
                                    op->method),
            .session = op->s,
            .stop = "unknown",
        };
        r.errmsg = reply_errmsg(c);
        acp_client_pending_op_ended(c, op);
        if (op->cb) op->cb(c, &r, op->user);
        op_free(op);
        op = c->ops;
    }
    acp_client_deadlines(c);
}

/* --- synchronous calls ----------------------------------------------------------------- */

void acp_client_sync_cb(acp_client *c, const acp_client_reply *r, void *user)
{
    acp_client_sync *w = user;
    w->done = true;
    w->status = r->status;
    w->result = json_incref(r->result);
    w->session = r->session;
    w->stop = r->stop;
    snprintf(w->err, sizeof w->err, "%s", r->errmsg);
}

/* A synchronous call that gives up waiting: its op, already on the wire, must not outlive w
 * (the caller's frame). It ends as an answer would (its finish undoes what the call set up),
 * without the callback. */
static void sync_drop(acp_client *c, acp_client_sync *w)
{
    for (acp_client_op *op = c->ops; op; op = op->next) {
        if (op->cb != acp_client_sync_cb || op->user != w) continue;
        unlink_op(op);
        acp_conn_forget(c->conn, op->call);
        acp_client_reply r = {.status = ACP_ECANCELLED, .session = op->s, .stop = "unknown"};
        if (op->finish) op->finish(op, &r);
        acp_client_pending_op_ended(c, op);
        op_free(op);
        break;
    }
    acp_client_deadlines(c);
}

int acp_client_sync_wait(acp_client *c, int rc, acp_client_sync *w, json_t **result)
{
    if (result) *result = NULL;
    if (rc) return rc;
    while (!w->done) {
        if (uv_run(c->loop, UV_RUN_ONCE) == 0 && !w->done) {
            sync_drop(c, w);
            return acp_error_set(ACP_ECLOSED, "the agent connection is gone");
        }
    }
    if (w->status == 0 && result)
        *result = w->result;
    else
        json_decref(w->result);
    w->result = NULL;
    /* Other callbacks of the loop may have failed since: the call's own sentence. */
    return w->status ? acp_error_set(w->status, "%s", w->err) : 0;
}

int acp_client_run_once(acp_client *c)
{
    if (!c->loop || uv_run(c->loop, UV_RUN_ONCE) == 0)
        return acp_error_set(ACP_ECLOSED, "nothing left to wait for: the agent is gone");
    return 0;
}

/* --- any method ------------------------------------------------------------------------- */

int acp_client_call_start(acp_client *c, const char *method, json_t *params, acp_client_cb cb,
                          void *user, acp_client_op **op)
{
    if (!method || !*method) {
        json_decref(params);
        return acp_error_set(ACP_EINVAL, "a method name is required");
    }
    return acp_client_op_start(c, method, params ? params : json_object(), NULL, cb, user, op);
}

int acp_client_call(acp_client *c, const char *method, json_t *params, json_t **result)
{
    acp_client_sync w = {0};
    return acp_client_sync_wait(
        c, acp_client_call_start(c, method, params, acp_client_sync_cb, &w, NULL), &w, result);
}

int acp_client_notify(acp_client *c, const char *method, json_t *params)
{
    if (!method || !*method) {
        json_decref(params);
        return acp_error_set(ACP_EINVAL, "a method name is required");
    }
    if (c->gone) {
        json_decref(params);
        return acp_error_set(ACP_ECLOSED, "%s",
                             acp_client_gone_why(c, "the agent has exited; start it again"));
    }
    int rc = acp_conn_notify(c->conn, method, params);
    return rc ? acp_error_set(rc, "cannot send %s: %s", method, acp_strerror(rc)) : 0;
}
