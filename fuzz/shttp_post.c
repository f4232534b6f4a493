/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target over the Streamable HTTP profile (net/shttp.c) by itself, through fake
 * exchanges (tests/net/fake_http.c): whole request sequences, with the agent's side sending
 * whatever the input says, so routing, buffering, held requests, stream readers coming and
 * going and DELETE are reached without the HTTP/2 framing fuzz/h2_request.c goes through.
 *
 * Input: records separated by NUL bytes (JSON text has none). A record is an op byte, a length
 * byte k, k bytes of Acp-Session-Id (none when k is 0) and the rest as the body. Ops (op % 8;
 * op / 8 % 4 names the socket a request came on, for the per-socket connection bound):
 * 0 POST with the newest connection's id, 1 POST without one, 2 GET its connection stream,
 * 3 GET a session stream, 4 DELETE, 5 the oldest open exchange's client goes away, 6 the
 * clients read everything, 7 the agent sends the body on the newest link. Connection ids come
 * from zeros (uv_random is wrapped), so records can name the connection they made. The agent
 * answers initialize. Checked: no crash, no leak; every link handed out ends exactly once; a
 * response, once started, is never started again (the fake aborts on that); every message
 * the agent receives is one JSON object whose id, if any, is a string, a number or null of at
 * most SHTTP_MAX_ID_LENGTH characters (issue 21: other ids were stored and never freed); no
 * more connections are open than max_connections. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tests/net/fake_http.h"
#include "acp/error.h"
#include "net/shttp.h"
#include "rpc/scan.h"

int __wrap_uv_random(uv_loop_t *loop, uv_random_t *req, void *buf, size_t n, unsigned flags,
                     uv_random_cb cb)
{
    memset(buf, 0, n);
    return 0;
}

#define MAX_REQS  64
#define MAX_LINKS MAX_REQS /* each link takes a request (its initialize) */

typedef struct state {
    fake_req *reqs[MAX_REQS];
    int nreq;
    acp_link *links[MAX_LINKS];
    bool ended[MAX_LINKS];
    int nlinks;
} state;

static state S;

static void on_msg(acp_link *l, const char *msg, size_t len, void *user)
{
    acp_envelope env;
    acp_scan_envelope(msg, len, &env);
    if (env.kind != ACP_ENV_OBJECT) abort();
    char idk = env.id.p ? acp_json_kind(env.id) : 'z';
    if ((idk != 's' && idk != 'n' && idk != 'z') || env.id.n > SHTTP_MAX_ID_LENGTH + 2) abort();
    if (env.method.p && acp_json_str_eq(env.method, "initialize") && env.id.p && env.id.n < 64) {
        char out[128];
        int k = snprintf(out, sizeof out, "{\"jsonrpc\":\"2.0\",\"id\":%.*s,\"result\":{}}",
                         (int)env.id.n, env.id.p);
        acp_link_send(l, out, (size_t)k);
    }
}

static void on_close(acp_link *l, const char *reason, void *user)
{
    intptr_t i = (intptr_t)user;
    if (S.ended[i]) abort(); /* on_close twice */
    S.ended[i] = true;
    S.links[i] = NULL;
}

static void on_link(acp_link *l, void *user)
{
    static const acp_link_cbs cbs = {on_msg, NULL, on_close, NULL};
    if (S.nlinks == MAX_LINKS) abort();
    S.links[S.nlinks] = l;
    acp_link_bind(l, &cbs, (void *)(intptr_t)S.nlinks);
    S.nlinks++;
}

/* n bytes as a C string (the input is not NUL-terminated: no strndup). */
static char *dup0(const char *p, size_t n)
{
    char *s = malloc(n + 1);
    memcpy(s, p, n);
    s[n] = 0;
    return s;
}

static void add(fake_req *r)
{
    if (S.nreq < MAX_REQS)
        S.reqs[S.nreq++] = r;
    else
        abort(); /* the loop below never makes more */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char cid[] = "00000000-0000-4000-8000-000000000000";
    memset(&S, 0, sizeof S);
    uv_loop_t loop;
    uv_loop_init(&loop);
    acp_net_limits lim = {.high_water = 512, .max_message = 4096, .max_connections = 40};
    acp_shttp *h = acp_shttp_new(&loop, &lim, on_link, NULL);
    const char *p = (const char *)data, *end = p + size;
    while (p < end && S.nreq < MAX_REQS) {
        const char *z = memchr(p, 0, (size_t)(end - p));
        const char *rec_end = z ? z : end;
        size_t n = (size_t)(rec_end - p);
        if (n >= 2) {
            unsigned op = (unsigned char)p[0] % 8, k = (unsigned char)p[1];
            if (k > n - 2) k = (unsigned)(n - 2);
            char *sid = k ? dup0(p + 2, k) : NULL;
            char *body = dup0(p + 2 + k, n - 2 - k); /* fake_new copies it */
            fake_req *r = NULL;
            switch (op) {
            case 0:
                r = sid ? fake_new("POST", body, "content-type", "application/json",
                                   "acp-connection-id", cid, "acp-session-id", sid, NULL)
                        : fake_new("POST", body, "content-type", "application/json",
                                   "acp-connection-id", cid, NULL);
                break;
            case 1:
                r = fake_new("POST", body, "content-type", "application/json", NULL);
                break;
            case 2:
                r = fake_new("GET", NULL, "accept", "text/event-stream", "acp-connection-id", cid,
                             NULL);
                break;
            case 3:
                r = fake_new("GET", NULL, "accept", "text/event-stream", "acp-connection-id", cid,
                             "acp-session-id", sid ? sid : "s", NULL);
                break;
            case 4:
                r = fake_new("DELETE", NULL, "acp-connection-id", cid, NULL);
                break;
            case 5:
                for (int i = 0; i < S.nreq; i++)
                    if (!S.reqs[i]->ended && !S.reqs[i]->aborted) {
                        fake_abort(S.reqs[i]);
                        break;
                    }
                break;
            case 6:
                for (int i = 0; i < S.nreq; i++)
                    if (S.reqs[i]->status && !S.reqs[i]->aborted) fake_read(S.reqs[i]);
                break;
            case 7:
                for (int i = S.nlinks - 1; i >= 0; i--)
                    if (S.links[i]) {
                        acp_link_send(S.links[i], body, strlen(body));
                        acp_link_flush(S.links[i]);
                        break;
                    }
                break;
            }
            if (r) {
                r->base.origin = (unsigned char)p[0] / 8 % 4;
                add(r);
                acp_shttp_handle(h, &r->base);
            }
            free(sid);
            free(body);
            uv_run(&loop, UV_RUN_NOWAIT); /* deferred ends */
            if (acp_shttp_connections(h) > lim.max_connections) abort();
        }
        p = z ? z + 1 : end;
    }
    acp_shttp_free(h);
    uv_run(&loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&loop) != 0) abort();
    for (int i = 0; i < S.nlinks; i++)
        if (!S.ended[i]) abort(); /* a link never ended */
    for (int i = 0; i < S.nreq; i++) fake_free(S.reqs[i]);
    return 0;
}
