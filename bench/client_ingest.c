/* SPDX-License-Identifier: Apache-2.0 */
/* client_ingest: updates per second the libacp client library consumes (issues 5 and 10).
 *
 *   client_ingest [-s SESSIONS] N BYTES AGENT_CMD...
 *
 * Everything goes through the asynchronous API on the program's own libuv loop, the way an
 * editor embeds the client: acp_client_start(), then SESSIONS (default 1) session/new calls in
 * flight at once, then, once every session exists, SESSIONS prompts "/stream N BYTES" started
 * together on the one connection. A counting on_update callback is all the application does.
 * The rate is every agent_message_chunk of every session over the time from the first
 * prompt_start to the last prompt's callback; each session must get exactly N. Prints one line
 * of key=value figures. Not part of libacp. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uv.h>

#include "acp/client.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

typedef struct run run;

typedef struct sess {
    run *r;
    acp_client_session *s;
    long chunks;
} sess;

struct run {
    uv_loop_t *loop;
    acp_client *c;
    long n, k; /* chunks per session, sessions */
    const char *bytes;
    sess *ss;
    long created, finished, chunks;
    size_t data; /* update text bytes seen: the callback looks at what it was given */
    const char *stop;
    int failed;
    double t0, t1;
};

static void fail(run *r, const char *what, const acp_client_reply *rep)
{
    fprintf(stderr, "client_ingest: %s: %s\n", what, rep->errmsg);
    r->failed = 1;
    uv_stop(r->loop);
}

static void on_update(acp_client *c, acp_client_session *s, const acp_update *u, void *user)
{
    run *r = user;
    if (u->kind != ACP_UPDATE_AGENT_MESSAGE_CHUNK) return;
    r->chunks++;
    r->data += u->update.n;
    sess *x = s ? acp_client_session_user(s) : NULL;
    if (x) x->chunks++;
}

static void on_prompt(acp_client *c, const acp_client_reply *rep, void *user)
{
    sess *x = user;
    run *r = x->r;
    if (rep->status) {
        fail(r, "session/prompt", rep);
        return;
    }
    r->stop = rep->stop;
    if (++r->finished == r->k) {
        r->t1 = now_s();
        uv_stop(r->loop);
    }
}

static void prompt_all(run *r)
{
    char text[64];
    snprintf(text, sizeof text, "/stream %ld %s", r->n, r->bytes);
    json_t *blocks = json_pack("[{s:s, s:s}]", "type", "text", "text", text);
    r->t0 = now_s();
    for (long i = 0; i < r->k; i++) {
        if (acp_client_session_prompt_start(r->ss[i].s, blocks, on_prompt, &r->ss[i], NULL)) {
            fprintf(stderr, "client_ingest: prompt_start: %s\n", acp_error_last()->message);
            r->failed = 1;
            uv_stop(r->loop);
            break;
        }
    }
    json_decref(blocks); /* borrowed by prompt_start */
}

static void on_new(acp_client *c, const acp_client_reply *rep, void *user)
{
    sess *x = user;
    run *r = x->r;
    if (rep->status) {
        fail(r, "session/new", rep);
        return;
    }
    x->s = rep->session;
    acp_client_session_set_user(x->s, x);
    if (++r->created == r->k) prompt_all(r);
}

static void on_init(acp_client *c, const acp_client_reply *rep, void *user)
{
    run *r = user;
    if (rep->status) {
        fail(r, "initialize", rep);
        return;
    }
    acp_session_opts so = {.struct_size = sizeof(acp_session_opts), .cwd = "/tmp"};
    for (long i = 0; i < r->k; i++) {
        if (acp_client_session_new_start(c, &so, on_new, &r->ss[i], NULL)) {
            fprintf(stderr, "client_ingest: session/new: %s\n", acp_error_last()->message);
            r->failed = 1;
            uv_stop(r->loop);
            return;
        }
    }
}

int main(int argc, char **argv)
{
    long k = 1;
    int a = 1;
    if (argc > 2 && !strcmp(argv[1], "-s")) {
        k = atol(argv[2]);
        a = 3;
    }
    if (argc - a < 3 || k < 1) {
        fprintf(stderr, "usage: client_ingest [-s SESSIONS] N BYTES AGENT_CMD...\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    uv_loop_t loop;
    uv_loop_init(&loop);
    run r = {.loop = &loop, .n = atol(argv[a]), .k = k, .bytes = argv[a + 1]};
    r.ss = calloc((size_t)k, sizeof *r.ss);
    for (long i = 0; i < k; i++) r.ss[i].r = &r;
    acp_client_opts o = {.struct_size = sizeof(acp_client_opts),
                         .loop = &loop,
                         .argv = (const char *const *)argv + a + 2,
                         .on_update = on_update,
                         .user = &r};
    if (acp_client_start(&o, on_init, &r, &r.c) != 0) {
        fprintf(stderr, "client_ingest: %s\n", acp_error_last()->message);
        return 1;
    }
    uv_run(&loop, UV_RUN_DEFAULT); /* until the last prompt's callback (or a failure) stops it */
    int rc = r.failed || r.finished != k;
    for (long i = 0; !rc && i < k; i++) rc = r.ss[i].chunks != r.n;
    if (rc && !r.failed)
        fprintf(stderr, "client_ingest: %ld prompts of %ld finished, %ld chunks of %ld\n",
                r.finished, k, r.chunks, r.n * k);
    if (!rc) {
        double dt = r.t1 - r.t0;
        if (k == 1)
            printf("updates=%ld updates_per_s=%.0f stop=%s\n", r.chunks, (double)r.chunks / dt,
                   r.stop);
        else
            printf("sessions=%ld updates=%ld updates_per_s=%.0f prompt_s=%.3f stop=%s\n", k,
                   r.chunks, (double)r.chunks / dt, dt, r.stop);
    }
    acp_client_free(r.c);
    uv_run(&loop, UV_RUN_DEFAULT); /* the client's handles close on our loop */
    uv_loop_close(&loop);
    free(r.ss);
    return rc;
}
