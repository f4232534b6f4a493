/* SPDX-License-Identifier: Apache-2.0 */
/* A JSON-RPC peer on rpc/ + rt/ over stdio, driven by interop.test.mjs.
 *
 * It serves:
 *   _echo {...}            -> the params back
 *   _hang                  -> no answer until cancelled, then -32800
 *   _start_pings {count}   -> sends count _ping {i} requests to the caller at once, checks
 *                             each answer is {i}, then answers {ok, bad}
 *   _call_and_cancel       -> sends _slow to the caller, cancels it at once, answers with
 *                             the error code the caller came back with
 *   _call_pending          -> sends _never to the caller and answers {sent:true}; the call
 *                             stays pending until EOF resolves it
 * and the notification _quit, which closes the transport (the caller then has requests
 * pending with nobody to answer them). At EOF it writes "eof closed_calls=N" to stderr.
 * stdout carries only JSON-RPC. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "acp/rt.h"

typedef struct {
    uv_loop_t loop;
    acp_conn *conn;
    acp_transport *t;
    acp_req *pings_req; /* the _start_pings request waiting for its answers */
    int pings_left, pings_ok, pings_bad;
    acp_req *cancel_req; /* the _call_and_cancel request waiting for _slow's answer */
    int closed_calls;
    bool closing;
} peer;

static void close_transport(peer *p)
{
    if (p->closing) return;
    p->closing = true;
    acp_transport_close(p->t, NULL, NULL);
}

static void on_echo(acp_conn *c, acp_req *r, void *u)
{
    acp_req_reply(r, json_incref(acp_req_params(r)));
}

static void hang_cancelled(acp_req *r, void *u)
{
    acp_req_error(r, ACP_RPC_CANCELLED, NULL, "cancelled as asked");
}

static void on_hang(acp_conn *c, acp_req *r, void *u)
{
    acp_req_on_cancel(r, hang_cancelled, u);
}

static void on_ping_answer(acp_conn *c, acp_msg *m, void *u)
{
    peer *p = acp_conn_user(c);
    intptr_t i = (intptr_t)u;
    json_t *res = acp_msg_is_error(m) ? NULL : acp_msg_result(m);
    if (res && json_integer_value(json_object_get(res, "i")) == i)
        p->pings_ok++;
    else
        p->pings_bad++;
    if (--p->pings_left == 0 && p->pings_req) {
        acp_req_reply(p->pings_req, json_pack("{s:i,s:i}", "ok", p->pings_ok, "bad", p->pings_bad));
        p->pings_req = NULL;
    }
}

static void on_start_pings(acp_conn *c, acp_req *r, void *u)
{
    peer *p = u;
    int n = (int)json_integer_value(json_object_get(acp_req_params(r), "count"));
    if (n <= 0 || p->pings_req) {
        acp_req_error(r, ACP_RPC_INVALID_PARAMS, NULL, "count must be a positive integer");
        return;
    }
    p->pings_req = r;
    p->pings_left = n;
    p->pings_ok = p->pings_bad = 0;
    for (intptr_t i = 0; i < n; i++)
        acp_conn_call(c, "_ping", json_pack("{s:i}", "i", (json_int_t)i), on_ping_answer, (void *)i,
                      NULL);
}

static void on_slow_answer(acp_conn *c, acp_msg *m, void *u)
{
    peer *p = u;
    if (!p->cancel_req) return;
    int code = acp_msg_is_error(m) ? acp_msg_error_code(m) : 0;
    acp_req_reply(p->cancel_req, json_pack("{s:i}", "code", code));
    p->cancel_req = NULL;
}

static void on_call_and_cancel(acp_conn *c, acp_req *r, void *u)
{
    peer *p = u;
    acp_call *call;
    p->cancel_req = r;
    if (acp_conn_call(c, "_slow", NULL, on_slow_answer, p, &call) != 0) {
        acp_req_error(r, ACP_RPC_INTERNAL_ERROR, NULL, "could not call _slow");
        p->cancel_req = NULL;
        return;
    }
    acp_conn_cancel(c, call);
}

static void on_never_answer(acp_conn *c, acp_msg *m, void *u)
{
    peer *p = u;
    if (acp_msg_is_error(m) && acp_msg_error_code(m) == ACP_RPC_CONN_CLOSED) p->closed_calls++;
}

static void on_call_pending(acp_conn *c, acp_req *r, void *u)
{
    acp_conn_call(c, "_never", NULL, on_never_answer, u, NULL);
    acp_req_reply(r, json_pack("{s:b}", "sent", 1));
}

static void on_quit(acp_conn *c, acp_msg *m, void *u)
{
    close_transport(u);
}

static void on_eof(acp_transport *t, void *u)
{
    peer *p = u;
    fprintf(stderr, "eof closed_calls=%d\n", p->closed_calls);
    close_transport(p);
}

static void on_log(acp_conn *c, const char *msg, void *u)
{
    fprintf(stderr, "echo_peer: %s\n", msg);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    peer p = {0};
    if (uv_loop_init(&p.loop) != 0) return 1;
    acp_conn_opts co = {.struct_size = sizeof(acp_conn_opts), .on_log = on_log, .user = &p};
    p.conn = acp_conn_new(&co);
    if (!p.conn) return 1;
    acp_conn_on(p.conn, "_echo", on_echo, NULL, &p);
    acp_conn_on(p.conn, "_hang", on_hang, NULL, &p);
    acp_conn_on(p.conn, "_start_pings", on_start_pings, NULL, &p);
    acp_conn_on(p.conn, "_call_and_cancel", on_call_and_cancel, NULL, &p);
    acp_conn_on(p.conn, "_call_pending", on_call_pending, NULL, &p);
    acp_conn_on(p.conn, "_quit", NULL, on_quit, &p);
    acp_transport_opts to = {
        .struct_size = sizeof(acp_transport_opts), .on_eof = on_eof, .user = &p};
    if (acp_transport_open(&p.loop, p.conn, 0, 1, &to, &p.t) != 0) {
        fprintf(stderr, "echo_peer: cannot open stdio\n");
        return 1;
    }
    uv_run(&p.loop, UV_RUN_DEFAULT);
    acp_conn_free(p.conn);
    int rc = uv_loop_close(&p.loop) == 0 ? 0 : 2;
    return rc;
}
