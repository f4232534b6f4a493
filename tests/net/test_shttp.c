/* SPDX-License-Identifier: Apache-2.0 */
/* The Streamable HTTP profile, sans-I/O: fake exchanges in, responses and link events out.
 * The statuses and texts are the official SDK's (server.js), which its client relies on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "acp/error.h"
#include "fake_http.h"
#include "net/shttp.h"
#include "rpc/scan.h"

#define INIT                                                                                       \
    "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1}}"
#define JSON "content-type", "application/json"
#define SSE  "accept", "text/event-stream"

/* The link's owner, standing in for an acp_agent: answers initialize, records the rest. */
typedef struct peer {
    acp_link *link;
    acp_buf got; /* inbound messages, one per line */
    int nmsg, drains;
    const char *closed; /* NULL, or closed_buf: on_close's reason lives only for the call */
    char closed_buf[128];
    struct owner *o;
} peer;

typedef struct owner {
    peer peers[128];
    int n;
    bool refuse; /* close the link in on_link */
    bool silent; /* do not answer initialize */
    bool wrong;  /* answer initialize with something else first */
} owner;

/* As agent/serve.c does after each loop turn's messages. */
static int send_flush(acp_link *l, const char *msg, size_t len)
{
    int rc = acp_link_send(l, msg, len);
    acp_link_flush(l);
    return rc;
}

static void on_message(acp_link *l, const char *msg, size_t len, void *user)
{
    peer *p = user;
    acp_buf_append(&p->got, msg, len);
    acp_buf_putc(&p->got, '\n');
    acp_buf_cstr(&p->got);
    p->nmsg++;
    acp_envelope env;
    acp_scan_envelope(msg, len, &env);
    if (env.method.p && acp_json_str_eq(env.method, "initialize") && !p->o->silent) {
        if (p->o->wrong) {
            const char *n = "{\"jsonrpc\":\"2.0\",\"method\":\"x\"}";
            assert_int_not_equal(send_flush(l, n, strlen(n)), 0);
            return;
        }
        char out[256];
        int k = snprintf(out, sizeof out,
                         "{\"jsonrpc\":\"2.0\",\"id\":%.*s,\"result\":{\"protocolVersion\":1}}",
                         (int)env.id.n, env.id.p);
        assert_int_equal(send_flush(l, out, (size_t)k), 0);
    }
}

static void on_drain(acp_link *l, void *user)
{
    ((peer *)user)->drains++;
}

static void on_close(acp_link *l, const char *reason, void *user)
{
    peer *p = user;
    snprintf(p->closed_buf, sizeof p->closed_buf, "%s", reason);
    p->closed = p->closed_buf;
    p->link = NULL;
}

static void on_link(acp_link *l, void *user)
{
    owner *o = user;
    peer *p = &o->peers[o->n++];
    p->link = l;
    p->o = o;
    static const acp_link_cbs cbs = {on_message, on_drain, on_close, NULL};
    acp_link_bind(l, &cbs, p);
    if (o->refuse) acp_link_close(l);
}

typedef struct fx {
    uv_loop_t loop;
    owner o;
    acp_shttp *h;
    fake_req *reqs[256]; /* freed at teardown */
    int nreq;
} fx;

static fx *fx_new(const acp_net_limits *lim)
{
    fx *f = calloc(1, sizeof *f);
    uv_loop_init(&f->loop);
    f->h = acp_shttp_new(&f->loop, lim, on_link, &f->o);
    assert_non_null(f->h);
    return f;
}

static void fx_free(fx *f)
{
    acp_shttp_free(f->h);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&f->loop), 0);
    for (int i = 0; i < f->nreq; i++) fake_free(f->reqs[i]);
    for (int i = 0; i < f->o.n; i++) {
        assert_non_null(f->o.peers[i].closed); /* every link ended */
        acp_buf_free(&f->o.peers[i].got);
    }
    free(f);
}

static fake_req *keep(fx *f, fake_req *r)
{
    f->reqs[f->nreq++] = r;
    return r;
}

/* Runs one request and returns it (the fixture frees it). */
#define REQ(f, ...) handle(f, keep(f, fake_new(__VA_ARGS__, NULL)))
static fake_req *handle(fx *f, fake_req *r)
{
    acp_shttp_handle(f->h, &r->base);
    return r;
}

static const char *body(fake_req *r)
{
    return r->body.data ? r->body.data : "";
}

/* A connection through initialize; its id is returned (owned by the request). */
static const char *open_conn(fx *f)
{
    fake_req *r = REQ(f, "POST", INIT, JSON);
    assert_int_equal(r->status, 200);
    assert_true(r->ended);
    const char *id = fake_res_header(r, "Acp-Connection-Id");
    assert_non_null(id);
    return id;
}

static void test_initialize(void **state)
{
    fx *f = fx_new(NULL);
    fake_req *r = REQ(f, "POST", INIT, "content-type", "Application/JSON; charset=utf-8");
    assert_int_equal(r->status, 200);
    assert_string_equal(fake_res_header(r, "content-type"), "application/json");
    assert_string_equal(body(r),
                        "{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"protocolVersion\":1}}");
    const char *id = fake_res_header(r, "acp-connection-id");
    assert_int_equal(strlen(id), 36);
    assert_int_equal(id[14], '4'); /* a random (v4) UUID */
    assert_int_equal(f->o.n, 1);
    assert_string_equal(f->o.peers[0].got.data, INIT "\n");
    /* Two connections never share an id. */
    const char *id2 = open_conn(f);
    assert_string_not_equal(id, id2);
    assert_int_equal(acp_shttp_connections(f->h), 2);
    fx_free(f);
}

static void test_initialize_refused(void **state)
{
    fx *f = fx_new(NULL);
    f->o.refuse = true;
    fake_req *r = REQ(f, "POST", INIT, JSON);
    assert_int_equal(r->status, 500);
    assert_non_null(strstr(body(r), "\"id\":0"));
    assert_non_null(strstr(body(r), "-32603"));
    assert_null(fake_res_header(r, "acp-connection-id"));
    uv_run(&f->loop, UV_RUN_NOWAIT);
    assert_string_equal(f->o.peers[0].closed, "closed");

    /* Something else first instead of the answer: the SDK's "Expected initialize response". */
    f->o.refuse = false;
    f->o.wrong = true;
    r = REQ(f, "POST", INIT, JSON);
    assert_int_equal(r->status, 500);
    uv_run(&f->loop, UV_RUN_NOWAIT);
    assert_non_null(f->o.peers[1].closed);

    /* The client gives up before the answer: the connection goes. */
    f->o.wrong = false;
    f->o.silent = true;
    r = REQ(f, "POST", INIT, JSON);
    assert_int_equal(r->status, 0);
    fake_abort(r);
    uv_run(&f->loop, UV_RUN_NOWAIT);
    assert_string_equal(f->o.peers[2].closed, "initialize aborted");
    assert_int_equal(acp_shttp_connections(f->h), 0);
    fx_free(f);
}

static void test_bad_requests(void **state)
{
    fx *f = fx_new(NULL);
    const char *id = open_conn(f);
    const char *note = "{\"jsonrpc\":\"2.0\",\"method\":\"_x\"}";
    struct {
        int status;
        const char *text;
        fake_req *r;
    } cases[] = {
        {415, "Unsupported Media Type", REQ(f, "POST", note, "content-type", "text/plain")},
        {415, "Unsupported Media Type", REQ(f, "POST", note, "x", "y")},
        {400, "Invalid JSON", REQ(f, "POST", "{\"jsonrpc\":", JSON)},
        {400, "Invalid JSON", REQ(f, "POST", "", JSON)},
        {400, "Invalid JSON-RPC message", REQ(f, "POST", "42", JSON)},
        {400, "Invalid JSON-RPC message", REQ(f, "POST", "{\"id\":1,\"id\":2}", JSON)},
        {400, "Missing Acp-Connection-Id", REQ(f, "POST", note, JSON)},
        {404, "Unknown Acp-Connection-Id", REQ(f, "POST", note, JSON, "acp-connection-id", "nope")},
        {400, "Initialize not allowed on existing connection",
         REQ(f, "POST", INIT, JSON, "acp-connection-id", id)},
        {400, "Initialize request must include an ID",
         REQ(f, "POST", "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"initialize\"}", JSON)},
        {405, "Method Not Allowed", REQ(f, "PUT", note, JSON)},
        {406, "Not Acceptable", REQ(f, "GET", NULL, "acp-connection-id", id)},
        {406, "Not Acceptable", REQ(f, "GET", NULL, "accept", "application/json")},
        {400, "Missing Acp-Connection-Id", REQ(f, "GET", NULL, SSE)},
        {404, "Unknown Acp-Connection-Id", REQ(f, "GET", NULL, SSE, "acp-connection-id", "x")},
        {400, "Missing Acp-Connection-Id", REQ(f, "DELETE", NULL)},
        {404, "Unknown Acp-Connection-Id", REQ(f, "DELETE", NULL, "acp-connection-id", "x")},
        {400, "Missing Acp-Session-Id",
         REQ(f, "POST", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"session/prompt\"}", JSON,
             "acp-connection-id", id)},
        {400, "Missing Acp-Session-Id",
         REQ(f, "POST",
             "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"_x\",\"params\":{\"sessionId\":\"s\"}}",
             JSON, "acp-connection-id", id)},
        /* An empty Acp-Session-Id is none, as the SDK's server reads it. */
        {400, "Missing Acp-Session-Id",
         REQ(f, "POST", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"session/prompt\"}", JSON,
             "acp-connection-id", id, "acp-session-id", "")},
        {400, "Mismatched Acp-Session-Id",
         REQ(f, "POST",
             "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"session/"
             "prompt\",\"params\":{\"sessionId\":\"a\"}}",
             JSON, "acp-connection-id", id, "acp-session-id", "b")},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        fake_req *r = cases[i].r;
        if (r->status != cases[i].status || strcmp(body(r), cases[i].text) != 0)
            fail_msg("case %zu: %d %s", i, r->status, body(r));
        assert_true(r->ended);
    }
    assert_string_equal(fake_res_header(cases[10].r, "allow"), "GET, POST, DELETE");
    /* None of them reached the owner: only initialize did. */
    assert_int_equal(f->o.peers[0].nmsg, 1);

    /* A batch: one JSON-RPC error for the array, as the SDK answers. */
    fake_req *b = REQ(f, "POST", "[" INIT "]", JSON);
    assert_int_equal(b->status, 400);
    assert_string_equal(fake_res_header(b, "content-type"), "application/json");
    assert_string_equal(body(b), "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,"
                                 "\"message\":\"JSON-RPC batches are not supported\"}}");
    assert_int_equal(f->o.n, 1);
    fx_free(f);
}

static void test_streams(void **state)
{
    fx *f = fx_new(NULL);
    const char *id = open_conn(f);
    peer *p = &f->o.peers[0];

    /* session/new is connection-scoped: 202, and its answer waits for the connection stream. */
    const char *nw = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"session/new\",\"params\":{}}";
    fake_req *r = REQ(f, "POST", nw, JSON, "acp-connection-id", id);
    assert_int_equal(r->status, 202);
    assert_int_equal(r->body.len, 0);
    assert_non_null(strstr(p->got.data, nw));
    const char *ans = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"sessionId\":\"s1\"}}";
    assert_int_equal(send_flush(p->link, ans, strlen(ans)), 0);
    assert_int_equal(acp_link_queued(p->link), strlen(ans) + 8);

    fake_req *cs = REQ(f, "GET", NULL, "accept", "text/event-stream, */*", "acp-connection-id", id);
    assert_int_equal(cs->status, 200);
    assert_false(cs->ended);
    assert_string_equal(fake_res_header(cs, "content-type"), "text/event-stream");
    assert_string_equal(fake_res_header(cs, "cache-control"), "no-cache");
    assert_int_equal(cs->body_len, ACP_HTTP_STREAMING);
    acp_buf_cstr(&cs->body);
    assert_string_equal(
        cs->body.data,
        "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"sessionId\":\"s1\"}}\n\n");
    /* A second receiver for the same stream. */
    fake_req *dup = REQ(f, "GET", NULL, SSE, "acp-connection-id", id);
    assert_int_equal(dup->status, 409);
    assert_string_equal(body(dup), "Outbound stream already has an active receiver");

    /* The session stream, opened before anything is sent on it (as the SDK's client does). */
    fake_req *ss = REQ(f, "GET", NULL, SSE, "acp-connection-id", id, "acp-session-id", "s1");
    assert_int_equal(ss->status, 200);
    const char *pr = "{\"jsonrpc\":\"2.0\",\"id\":\"p\",\"method\":\"session/prompt\",\"params\":"
                     "{\"sessionId\":\"s1\",\"prompt\":[]}}";
    r = REQ(f, "POST", pr, JSON, "acp-connection-id", id, "acp-session-id", "s1");
    assert_int_equal(r->status, 202);
    const char *up = "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":"
                     "\"s1\",\"update\":{\"a\":\"x\\ny\"}}}";
    const char *pretty = "{\"jsonrpc\":\"2.0\",\n\"method\":\"_n\"}";
    const char *done =
        "{\"jsonrpc\":\"2.0\",\"id\":\"p\",\"result\":{\"stopReason\":\"end_turn\"}}";
    assert_int_equal(acp_link_send(p->link, up, strlen(up)), 0);
    assert_int_equal(acp_link_send(p->link, pretty, strlen(pretty)), 0);
    assert_int_equal(acp_link_send(p->link, done, strlen(done)), 0);
    /* A loop turn's events reach each stream's receiver in one write, at the owner's flush. */
    assert_int_equal(ss->body.len, 0);
    int ss_writes = ss->writes;
    acp_link_flush(p->link);
    assert_int_equal(ss->writes, ss_writes + 1);
    acp_buf_cstr(&ss->body);
    acp_buf_cstr(&cs->body);
    char want[512];
    snprintf(want, sizeof want, "data: %s\n\ndata: %s\n\n", up, done);
    assert_string_equal(ss->body.data, want);
    /* A line break in the JSON text would split the SSE field: it is whitespace, so a space. */
    assert_non_null(strstr(cs->body.data, "data: {\"jsonrpc\":\"2.0\", \"method\":\"_n\"}\n\n"));
    assert_null(strstr(cs->body.data, "session/update"));

    /* session/load's answer follows its replay on the session stream while a client reads it
     * (the SDK puts it on the connection stream, where it could overtake the replay). */
    const char *ld = "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"session/"
                     "load\",\"params\":{\"sessionId\":\"s1\"}}";
    r = REQ(f, "POST", ld, JSON, "acp-connection-id", id, "acp-session-id", "s1");
    assert_int_equal(r->status, 202);
    const char *la = "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}";
    send_flush(p->link, up, strlen(up));
    send_flush(p->link, la, strlen(la));
    snprintf(want, sizeof want, "data: %s\n\ndata: %s\n\n", up, la);
    assert_non_null(strstr(body(ss), want));
    assert_null(strstr(body(cs), la));
    /* The agent asks the client something in the session: the answer must name the session. */
    const char *ask = "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"session/request_permission\","
                      "\"params\":{\"sessionId\":\"s1\"}}";
    send_flush(p->link, ask, strlen(ask));
    acp_buf_cstr(&ss->body);
    assert_non_null(strstr(ss->body.data, ask));
    const char *reply = "{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{}}";
    r = REQ(f, "POST", reply, JSON, "acp-connection-id", id);
    assert_int_equal(r->status, 400);
    assert_string_equal(body(r), "Missing Acp-Session-Id");
    send_flush(p->link, ask, strlen(ask));
    r = REQ(f, "POST", reply, JSON, "acp-connection-id", id, "acp-session-id", "s2");
    assert_string_equal(body(r), "Mismatched Acp-Session-Id");
    send_flush(p->link, ask, strlen(ask));
    int before = p->nmsg;
    r = REQ(f, "POST", reply, JSON, "acp-connection-id", id, "acp-session-id", "s1");
    assert_int_equal(r->status, 202);
    assert_int_equal(p->nmsg, before + 1);

    /* The session stream's client leaves; updates wait for the next one, in order. */
    fake_abort(ss);
    /* With nobody reading the session stream, a load's answer takes the connection stream. */
    r = REQ(f, "POST", ld, JSON, "acp-connection-id", id, "acp-session-id", "s1");
    send_flush(p->link, la, strlen(la));
    assert_non_null(strstr(body(cs), la));
    fake_read(cs);
    const char *up2 =
        "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":\"s1\"}}";
    send_flush(p->link, up, strlen(up));
    send_flush(p->link, up2, strlen(up2));
    assert_int_equal(acp_link_queued(p->link), strlen(up) + strlen(up2) + 16);
    fake_req *ss2 = REQ(f, "GET", NULL, SSE, "acp-connection-id", id, "acp-session-id", "s1");
    snprintf(want, sizeof want, "data: %s\n\ndata: %s\n\n", up, up2);
    assert_string_equal(body(ss2), want);

    /* DELETE: 202, the streams end, the owner hears "deleted", the id is gone. */
    r = REQ(f, "DELETE", NULL, "acp-connection-id", id);
    assert_int_equal(r->status, 202);
    assert_true(cs->ended);
    assert_true(ss2->ended);
    assert_int_equal(send_flush(p->link, up, strlen(up)), ACP_EIO);
    assert_null(p->closed); /* from the loop, not inside the request */
    uv_run(&f->loop, UV_RUN_NOWAIT);
    assert_string_equal(p->closed, "deleted");
    r = REQ(f, "POST", nw, JSON, "acp-connection-id", id);
    assert_int_equal(r->status, 404);
    r = REQ(f, "DELETE", NULL, "acp-connection-id", id);
    assert_int_equal(r->status, 404);
    fx_free(f);
}

/* A session stream opened on another connection, for a session of the first, sees nothing of
 * the first's output; a made-up connection id gets 404. */
static void test_isolation(void **state)
{
    fx *f = fx_new(NULL);
    const char *a = open_conn(f);
    const char *b = open_conn(f);
    peer *pa = &f->o.peers[0];
    fake_req *sa = REQ(f, "GET", NULL, SSE, "acp-connection-id", a, "acp-session-id", "s1");
    fake_req *sb = REQ(f, "GET", NULL, SSE, "acp-connection-id", b, "acp-session-id", "s1");
    fake_req *cb = REQ(f, "GET", NULL, SSE, "acp-connection-id", b);
    assert_int_equal(sb->status, 200);
    const char *up =
        "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":\"s1\"}}";
    send_flush(pa->link, up, strlen(up));
    assert_non_null(strstr(body(sa), "session/update"));
    assert_int_equal(sb->body.len, 0);
    assert_int_equal(cb->body.len, 0);
    fake_req *x = REQ(f, "GET", NULL, SSE, "acp-connection-id",
                      "00000000-0000-4000-8000-000000000000", "acp-session-id", "s1");
    assert_int_equal(x->status, 404);
    /* B's requests for the session reach B's owner only. */
    const char *pr = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"session/"
                     "prompt\",\"params\":{\"sessionId\":\"s1\"}}";
    REQ(f, "POST", pr, JSON, "acp-connection-id", b, "acp-session-id", "s1");
    assert_int_equal(pa->nmsg, 1);
    assert_int_equal(f->o.peers[1].nmsg, 2);
    fx_free(f);
}

/* Output at the high-water mark holds requests (not notifications) until the client reads. */
static void test_backpressure(void **state)
{
    acp_net_limits lim = {.high_water = 1000};
    fx *f = fx_new(&lim);
    const char *id = open_conn(f);
    peer *p = &f->o.peers[0];
    assert_int_equal(acp_link_high_water(p->link), 1000);
    char big[700];
    snprintf(big, sizeof big,
             "{\"jsonrpc\":\"2.0\",\"method\":\"_x\",\"params\":{\"p\":\"%0600d\"}}", 0);
    send_flush(p->link, big, strlen(big));
    send_flush(p->link, big, strlen(big)); /* accepted past the mark: never dropped */
    assert_true(acp_link_queued(p->link) >= 1000);

    const char *rq = "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"_r\"}";
    const char *rq2 = "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"_r\"}";
    const char *nt =
        "{\"jsonrpc\":\"2.0\",\"method\":\"session/cancel\",\"params\":{\"sessionId\":\"s\"}}";
    fake_req *held = REQ(f, "POST", rq, JSON, "acp-connection-id", id);
    fake_req *held2 = REQ(f, "POST", rq2, JSON, "acp-connection-id", id);
    fake_req *gone = REQ(f, "POST", rq, JSON, "acp-connection-id", id);
    assert_int_equal(held->status, 0);
    assert_int_equal(held2->status, 0);
    fake_abort(gone);
    fake_req *n = REQ(f, "POST", nt, JSON, "acp-connection-id", id, "acp-session-id", "s");
    assert_int_equal(n->status, 202);
    assert_int_equal(p->nmsg, 2); /* initialize and the cancel */

    /* The stream opens: the frames move to the wire, still queued until the client reads. */
    fake_req *cs = REQ(f, "GET", NULL, SSE, "acp-connection-id", id);
    assert_int_equal(cs->queued, 2 * (strlen(big) + 8));
    assert_int_equal(held->status, 0);
    assert_int_equal(p->drains, 0);
    fake_read(cs);
    assert_int_equal(held->status, 202);
    assert_int_equal(held2->status, 202);
    assert_int_equal(p->drains, 1);
    assert_int_equal(p->nmsg, 4);
    assert_non_null(
        strstr(p->got.data, "\"id\":5,\"method\":\"_r\"}\n{\"jsonrpc\":\"2.0\",\"id\":6"));
    assert_int_equal(acp_link_queued(p->link), 0);
    fx_free(f);
}

static void test_idle_and_limits(void **state)
{
    acp_net_limits lim = {.idle_timeout_ms = 1};
    fx *f = fx_new(&lim);
    open_conn(f);
    uv_run(&f->loop, UV_RUN_DEFAULT); /* returns once the timer closed the connection */
    assert_string_equal(f->o.peers[0].closed, "idle timeout");
    assert_int_equal(acp_shttp_connections(f->h), 0);

    /* An agent that keeps sending to sessions nobody receives: closed at the SDK's bound. */
    const char *id = open_conn(f);
    peer *p = &f->o.peers[1];
    fake_req *cs = REQ(f, "GET", NULL, SSE, "acp-connection-id", id); /* not idle */
    int rc = 0, i;
    for (i = 0; i <= SHTTP_MAX_BUFFERED_SESSIONS && rc == 0; i++) {
        char m[128];
        int k = snprintf(m, sizeof m,
                         "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\","
                         "\"params\":{\"sessionId\":\"s%d\"}}",
                         i);
        rc = send_flush(p->link, m, (size_t)k);
    }
    assert_int_equal(rc, ACP_EIO);
    assert_int_equal(i, SHTTP_MAX_BUFFERED_SESSIONS + 1);
    assert_true(cs->ended);
    uv_run(&f->loop, UV_RUN_NOWAIT);
    assert_non_null(p->closed);

    /* Over-long ids are refused like the SDK's maxIdLength. */
    id = open_conn(f);
    char *longid = malloc(SHTTP_MAX_ID_LENGTH + 2);
    memset(longid, 'x', SHTTP_MAX_ID_LENGTH + 1);
    longid[SHTTP_MAX_ID_LENGTH + 1] = 0;
    fake_req *g = REQ(f, "GET", NULL, SSE, "acp-connection-id", id, "acp-session-id", longid);
    assert_int_equal(g->status, 400);
    free(longid);
    fx_free(f);
}

/* ACP connections are bounded in all (max_connections) and per socket (SHTTP_MAX_PER_SOCKET):
 * a keep-alive socket POSTing initialize in a loop made one each, without end (issue 21). */
static fake_req *init_on(fx *f, uint64_t origin)
{
    fake_req *r = keep(f, fake_new("POST", INIT, JSON, NULL));
    r->base.origin = origin;
    return handle(f, r);
}

static void test_connection_bounds(void **state)
{
    fx *f = fx_new(&(acp_net_limits){.max_connections = 3});
    for (int i = 0; i < 3; i++) assert_int_equal(init_on(f, 0)->status, 200);
    fake_req *r = init_on(f, 0);
    assert_int_equal(r->status, 503);
    assert_string_equal(fake_res_header(r, "retry-after"), "1");
    assert_int_equal(acp_shttp_connections(f->h), 3);
    assert_int_equal(f->o.n, 3); /* the refused one never reached the owner */
    fx_free(f);

    f = fx_new(NULL);
    for (int i = 0; i < SHTTP_MAX_PER_SOCKET; i++) assert_int_equal(init_on(f, 7)->status, 200);
    assert_int_equal(init_on(f, 7)->status, 503);
    const char *other = fake_res_header(init_on(f, 8), "acp-connection-id"); /* another socket */
    assert_non_null(other);
    /* A connection that ends makes room on its socket. */
    const char *first = fake_res_header(f->reqs[0], "acp-connection-id");
    assert_int_equal(REQ(f, "DELETE", NULL, "acp-connection-id", first)->status, 202);
    assert_int_equal(init_on(f, 7)->status, 200);
    fx_free(f);
}

/* Ids that are neither string, number nor null are refused before anything is stored: the
 * agent could only answer them with id null, so their route would never be freed (issue 21). */
static void test_nonscalar_ids(void **state)
{
    fx *f = fx_new(NULL);
    const char *id = open_conn(f);
    static const char *const ids[] = {"{\"a\":[1,2]}", "[1]", "true", "false"};
    for (size_t i = 0; i < sizeof ids / sizeof *ids; i++) {
        char m[256];
        snprintf(m, sizeof m, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"method\":\"_x\"}", ids[i]);
        fake_req *r = REQ(f, "POST", m, JSON, "acp-connection-id", id);
        assert_int_equal(r->status, 400);
        assert_non_null(strstr(body(r), "\"id\":null,\"error\":{\"code\":-32600"));
        snprintf(m, sizeof m, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"method\":\"initialize\"}", ids[i]);
        assert_int_equal(REQ(f, "POST", m, JSON)->status, 400);
    }
    /* A number longer than any id we keep is refused like a long string. */
    char big[1100 + 64];
    int k = snprintf(big, sizeof big, "{\"jsonrpc\":\"2.0\",\"method\":\"_x\",\"id\":");
    memset(big + k, '7', 1100);
    strcpy(big + k + 1100, "}");
    assert_int_equal(REQ(f, "POST", big, JSON, "acp-connection-id", id)->status, 400);
    assert_int_equal(f->o.n, 1);             /* no connection was made */
    assert_int_equal(f->o.peers[0].nmsg, 1); /* only initialize reached the owner */
    fx_free(f);
}

/* Many connections: each request finds its own (the registry grows past its first table), and
 * deleting some leaves the others reachable. */
static void test_many(void **state)
{
    fx *f = fx_new(NULL);
    enum { N = 100 }; /* past the table's first 64 buckets: it grows */
    const char *ids[N];
    for (int i = 0; i < N; i++) ids[i] = open_conn(f);
    assert_int_equal(acp_shttp_connections(f->h), N);
    for (int i = 0; i < N; i += 2) REQ(f, "DELETE", NULL, "acp-connection-id", ids[i]);
    uv_run(&f->loop, UV_RUN_NOWAIT);
    assert_int_equal(acp_shttp_connections(f->h), N / 2);
    fake_req *gone = REQ(f, "DELETE", NULL, "acp-connection-id", ids[0]);
    fake_req *here = REQ(f, "DELETE", NULL, "acp-connection-id", ids[N - 1]);
    assert_int_equal(gone->status, 404);
    assert_int_equal(here->status, 202);
    fx_free(f);
}

/* Freeing the profile ends what is open: streams end, held requests are answered, links end. */
static void test_free_open(void **state)
{
    acp_net_limits lim = {.high_water = 10};
    fx *f = fx_new(&lim);
    const char *id = open_conn(f);
    peer *p = &f->o.peers[0];
    fake_req *cs = REQ(f, "GET", NULL, SSE, "acp-connection-id", id);
    const char *m = "{\"jsonrpc\":\"2.0\",\"method\":\"_x\"}";
    send_flush(p->link, m, strlen(m));
    fake_req *held = REQ(f, "POST", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"_r\"}", JSON,
                         "acp-connection-id", id);
    assert_int_equal(held->status, 0);
    f->o.silent = true;
    fake_req *init = REQ(f, "POST", INIT, JSON);
    acp_shttp_free(f->h);
    f->h = NULL;
    assert_true(cs->ended);
    assert_int_equal(held->status, 404);
    assert_int_equal(init->status, 500);
    assert_string_equal(p->closed, "server shutdown");
    assert_string_equal(f->o.peers[1].closed, "server shutdown");
    fx_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_initialize),
        cmocka_unit_test(test_initialize_refused),
        cmocka_unit_test(test_bad_requests),
        cmocka_unit_test(test_streams),
        cmocka_unit_test(test_isolation),
        cmocka_unit_test(test_backpressure),
        cmocka_unit_test(test_idle_and_limits),
        cmocka_unit_test(test_free_open),
        cmocka_unit_test(test_many),
        cmocka_unit_test(test_nonscalar_ids),
        cmocka_unit_test(test_connection_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
