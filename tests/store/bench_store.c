/* SPDX-License-Identifier: Apache-2.0 */
/* Store-level numbers behind the agent benchmarks (not a test; run by hand, Release build):
 *   build/tests/bench_store [WHERE]     (default: a new SQLite file in a temp dir)
 * replay of 20,000 updates / 25 MB, /stream-like 200,000 appends committed 200 at a time,
 * single-update commits, and the first session/list page with 100,000 sessions. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "acp/store.h"
#include "tmpdir.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int count_bytes(void *user, int64_t seq, const char *json, size_t n)
{
    (void)seq;
    (void)json;
    *(size_t *)user += n;
    return 0;
}

static int count_rows(void *user, const acp_store_session *s)
{
    (void)s;
    ++*(int *)user;
    return 0;
}

static int session(acp_store *st, const char *id, const char *cwd, const char *t)
{
    acp_store_session s = {.struct_size = sizeof(acp_store_session),
                           .id = (char *)id,
                           .cwd = (char *)cwd,
                           .add_dirs = "[]"};
    if (t) {
        memcpy(s.created_at, t, ACP_STORE_TIME_LEN + 1);
    } else {
        acp_store_now(s.created_at);
    }
    memcpy(s.updated_at, s.created_at, ACP_STORE_TIME_LEN + 1);
    return acp_store_create(st, &s);
}

int main(int argc, char **argv)
{
    char dir[PATH_MAX] = "", where[PATH_MAX + 32];
    if (argc > 1) {
        snprintf(where, sizeof where, "%s", argv[1]);
    } else {
        if (tmpdir_make(dir, sizeof dir, "bench")) return perror("mkdtemp"), 1;
        snprintf(where, sizeof where, "%s/sessions.db", dir);
    }
    acp_store *st;
    if (acp_store_open(where, &st)) return fprintf(stderr, "%s\n", acp_error_last()->message), 1;
    printf("backend %s\n", acp_store_backend(st));
    char u[2048], id[64];

    session(st, "big", "/w", NULL);
    int n = snprintf(u, sizeof u,
                     "{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{\"type\":\"text\","
                     "\"text\":\"%01180d\"}}",
                     0);
    double t0 = now();
    for (int i = 0; i < 20000; i++) {
        acp_store_append(st, "big", 0, u, (size_t)n);
        if (i % 100 == 99 && acp_store_commit(st, NULL)) return 1;
    }
    printf("append 20000 x %d B, commit per 100: %.0f updates/s\n", n, 20000 / (now() - t0));
    for (int rep = 0; rep < 3; rep++) {
        size_t total = 0;
        int64_t last = 0;
        bool done = false;
        t0 = now();
        while (!done)
            if (acp_store_replay(st, "big", last, 2u << 20, count_bytes, &total, &last, &done))
                return 1;
        double dt = now() - t0;
        printf("replay %zu B in 2 MB calls: %.2f ms = %.0f MB/s\n", total, dt * 1e3,
               (double)total / dt / 1e6);
    }

    session(st, "stream", "/w", NULL);
    n = snprintf(u, sizeof u,
                 "{\"sessionUpdate\":\"agent_message_chunk\",\"messageId\":\"m\",\"content\":{"
                 "\"type\":\"text\",\"text\":\"%0200d\"}}",
                 0);
    t0 = now();
    for (int i = 0; i < 200000; i++) {
        acp_store_append(st, "stream", 0, u, (size_t)n);
        if (i % 200 == 199 && acp_store_commit(st, NULL)) return 1;
    }
    printf("append 200000 x %d B, commit per 200: %.0f updates/s\n", n, 200000 / (now() - t0));
    t0 = now();
    for (int i = 0; i < 2000; i++) {
        acp_store_append(st, "stream", 0, u, (size_t)n);
        if (acp_store_commit(st, NULL)) return 1;
    }
    printf("one-update commits: %.0f commits/s\n", 2000 / (now() - t0));

    t0 = now();
    for (int i = 0; i < 100000; i++) {
        char t[ACP_STORE_TIME_LEN + 1];
        snprintf(id, sizeof id, "sess-%08d", i);
        snprintf(t, sizeof t, "2026-%02d-%02dT%02d:%02d:%02d.%03dZ", 1 + i % 12, 1 + i % 28, i % 24,
                 i % 60, i / 60 % 60, i % 1000);
        if (session(st, id, i % 10 ? "/w" : "/other", t)) return 1;
    }
    printf("create 100000 sessions: %.1f s\n", now() - t0);
    acp_store_close(st);
    t0 = now();
    if (acp_store_open(where, &st)) return 1;
    printf("open the store: %.3f ms\n", (now() - t0) * 1e3);
    for (int rep = 0; rep < 3; rep++) {
        int rows = 0, rows2 = 0;
        char *next = NULL, *next2 = NULL;
        t0 = now();
        acp_store_list(st, NULL, NULL, 50, count_rows, &rows, &next);
        double a = now() - t0;
        t0 = now();
        acp_store_list(st, "/other", next, 50, count_rows, &rows2, &next2);
        double b = now() - t0;
        printf("list: first page (%d of 100002) %.3f ms; cwd-filtered page after a cursor (%d) "
               "%.3f ms\n",
               rows, a * 1e3, rows2, b * 1e3);
        free(next);
        free(next2);
    }
    t0 = now();
    acp_store_delete(st, "big");
    printf("delete the 25 MB session: %.1f ms\n", (now() - t0) * 1e3);
    acp_store_close(st);
    if (dir[0]) tmpdir_remove(dir);
    return 0;
}
