/* SPDX-License-Identifier: Apache-2.0 */
/* The store contract suite (see contract.h). Knows nothing of any backend. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "acp/store.h"
#include "contract.h"

typedef store_fx fx;

static acp_store *open_where(const char *where)
{
    acp_store *st = NULL;
    int rc = acp_store_open(where, &st);
    if (rc) print_error("acp_store_open: %s\n", acp_error_last()->message);
    assert_int_equal(rc, 0);
    return st;
}

int store_fx_setup(void **state)
{
    const store_contract_env *env = *state;
    fx *f = calloc(1, sizeof *f);
    if (!f) return -1;
    f->env = env;
    f->where = env->fresh(env->user);
    if (!f->where) {
        free(f);
        return -1;
    }
    if (acp_store_open(f->where, &f->st)) {
        print_error("acp_store_open(%s): %s\n", f->where, acp_error_last()->message);
        free(f->where);
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

int store_fx_teardown(void **state)
{
    fx *f = *state;
    acp_store_close(f->st);
    free(f->where);
    free(f);
    return 0;
}

/* A timestamp for test step i: distinct, ordered, well-formed. */
static void stamp(char *buf, int i)
{
    snprintf(buf, ACP_STORE_TIME_LEN + 1, "2026-01-%02dT%02d:%02d:%02d.%03dZ",
             (1 + i / 86400 % 28) & 31, (i / 3600 % 24) & 31, (i / 60 % 60) & 63, (i % 60) & 63,
             (i % 1000 + 1000) % 1000);
}

static void mk(acp_store *st, const char *id, const char *cwd, const char *t)
{
    acp_store_session s = {.struct_size = sizeof(acp_store_session),
                           .id = (char *)id,
                           .cwd = (char *)cwd,
                           .add_dirs = (char *)"[]"};
    memcpy(s.created_at, t, ACP_STORE_TIME_LEN + 1);
    memcpy(s.updated_at, t, ACP_STORE_TIME_LEN + 1);
    assert_int_equal(acp_store_create(st, &s), 0);
}

/* Sessions s0 .. s<n-1> in /w, s<i> made at stamp(i), each with state (NULL: none). */
static void mk_n(acp_store *st, int n, const char *state)
{
    char t[ACP_STORE_TIME_LEN + 1], id[16];
    for (int i = 0; i < n; i++) {
        stamp(t, i);
        snprintf(id, sizeof id, "s%d", i);
        mk(st, id, "/w", t);
        if (state) assert_int_equal(acp_store_set_state(st, id, 0, state), 0);
    }
}

static void append(acp_store *st, const char *id, const char *json)
{
    assert_int_equal(acp_store_append(st, id, 0, json, strlen(json)), 0);
}

/* --- replay collection ----------------------------------------------------------------- */

typedef struct got {
    int n;
    int64_t seq[512];
    char *json[512];
    int stop_at; /* return 7 from the callback at this call (1-based); 0: never */
} got;

static int collect(void *user, int64_t seq, const char *json, size_t n)
{
    got *g = user;
    assert_true(g->n < 512);
    assert_int_equal(strlen(json), n); /* NUL-terminated, exact length */
    g->seq[g->n] = seq;
    g->json[g->n] = strndup(json, n);
    g->n++;
    return g->stop_at == g->n ? 7 : 0;
}

static void got_free(got *g)
{
    for (int i = 0; i < g->n; i++) free(g->json[i]);
    g->n = 0;
}

/* Replays the whole history of id into g (no byte cap); asserts it succeeded. */
static void replay_all(acp_store *st, const char *id, got *g)
{
    int64_t last = -1;
    bool done = false;
    assert_int_equal(acp_store_replay(st, id, 0, 0, collect, g, &last, &done), 0);
    assert_true(done);
    assert_int_equal(last, g->n ? g->seq[g->n - 1] : 0);
}

/* --- list collection ------------------------------------------------------------------- */

typedef struct page {
    int n;
    char *id[1024];
    char *cwd[1024];
    char *add_dirs[1024];
    char *title[1024];
    char updated[1024][ACP_STORE_TIME_LEN + 1];
    bool archived[1024];
} page;

static int on_row(void *user, const acp_store_session *s)
{
    page *p = user;
    assert_true(p->n < 1024);
    assert_non_null(s->id);
    assert_non_null(s->add_dirs);
    assert_null(s->state);         /* list never carries state */
    assert_null(s->system_prompt); /* nor the system prompt */
    p->archived[p->n] = s->archived;
    p->id[p->n] = strdup(s->id);
    p->cwd[p->n] = strdup(s->cwd);
    p->add_dirs[p->n] = strdup(s->add_dirs);
    p->title[p->n] = s->title ? strdup(s->title) : NULL;
    memcpy(p->updated[p->n], s->updated_at, ACP_STORE_TIME_LEN + 1);
    p->n++;
    return 0;
}

static void page_free(page *p)
{
    for (int i = 0; i < p->n; i++) {
        free(p->id[i]);
        free(p->cwd[i]);
        free(p->add_dirs[i]);
        free(p->title[i]);
    }
    p->n = 0;
}

/* base64url without padding (the documented cursor shape), to forge cursors. */
static void b64url(const char *raw, char *out)
{
    static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    size_t n = strlen(raw);
    const unsigned char *r = (const unsigned char *)raw;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)r[i] << 16 | (i + 1 < n ? (unsigned)r[i + 1] << 8 : 0) |
                     (i + 2 < n ? r[i + 2] : 0);
        *out++ = a[v >> 18 & 63];
        *out++ = a[v >> 12 & 63];
        if (i + 1 < n) *out++ = a[v >> 6 & 63];
        if (i + 2 < n) *out++ = a[v & 63];
    }
    *out = '\0';
}

static int fail_row(void *user, const acp_store_session *s)
{
    (void)user;
    (void)s;
    fail_msg("list called back for a malformed cursor");
    return 0;
}

/* --- tests ----------------------------------------------------------------------------- */

static void t_create_get(void **state)
{
    fx *f = *state;
    const char *be = acp_store_backend(f->st);
    assert_true(strcmp(be, "sqlite") == 0 || strcmp(be, "postgresql") == 0);
    acp_store_session s = {.struct_size = sizeof(acp_store_session),
                           .id = "s1",
                           .cwd = "/w",
                           .add_dirs = "[\"/x\",\"/y z\"]"};
    acp_store_now(s.created_at);
    assert_int_equal(strlen(s.created_at), ACP_STORE_TIME_LEN);
    assert_int_equal(s.created_at[ACP_STORE_TIME_LEN - 1], 'Z');
    memcpy(s.updated_at, "2030-05-06T07:08:09.010Z", ACP_STORE_TIME_LEN + 1);
    assert_int_equal(acp_store_create(f->st, &s), 0);

    acp_store_session out = ACP_STORE_SESSION_INIT;
    assert_int_equal(acp_store_get(f->st, "s1", &out), 0);
    assert_string_equal(out.id, "s1");
    assert_string_equal(out.cwd, "/w");
    assert_string_equal(out.add_dirs, "[\"/x\",\"/y z\"]");
    assert_null(out.title);
    assert_string_equal(out.created_at, s.created_at);
    assert_string_equal(out.updated_at, "2030-05-06T07:08:09.010Z");
    acp_store_session_clear(&out);
    assert_null(out.id);

    assert_int_equal(acp_store_get(f->st, "nope", &out), ACP_ENOTFOUND);
    assert_int_equal(acp_store_create(f->st, &s), ACP_EINVAL); /* the id exists */
    assert_string_not_equal(acp_error_last()->message, "");
    s.id = "";
    assert_int_equal(acp_store_create(f->st, &s), ACP_EINVAL);
    s.id = "s2";
    memcpy(s.updated_at, "yesterday", 10);
    assert_int_equal(acp_store_create(f->st, &s), ACP_EINVAL);
    assert_int_equal(acp_store_get(f->st, "s2", &out), ACP_ENOTFOUND);

    /* A title given at creation is kept. */
    acp_store_session t = {.struct_size = sizeof(acp_store_session),
                           .id = "s3",
                           .cwd = "/w",
                           .add_dirs = "[]",
                           .title = "hello ✓"};
    acp_store_now(t.created_at);
    acp_store_now(t.updated_at);
    assert_int_equal(acp_store_create(f->st, &t), 0);
    assert_int_equal(acp_store_get(f->st, "s3", &out), 0);
    assert_string_equal(out.title, "hello ✓");
    acp_store_session_clear(&out);
}

/* The longest id the header promises (ACP_STORE_ID_MAX bytes) is stored, listed, paged past
 * with a cursor and replayed on every backend; one byte more is ACP_EINVAL. */
static void t_longest_id(void **state)
{
    fx *f = *state;
    char a[ACP_STORE_ID_MAX + 2], b[ACP_STORE_ID_MAX + 1];
    memset(a, 'a', sizeof a - 1);
    a[sizeof a - 1] = '\0';
    memset(b, 'b', sizeof b - 1);
    b[sizeof b - 1] = '\0';
    acp_store_session s = {
        .struct_size = sizeof(acp_store_session), .id = a, .cwd = "/w", .add_dirs = "[]"};
    memcpy(s.created_at, "2026-01-01T00:00:00.000Z", ACP_STORE_TIME_LEN + 1);
    memcpy(s.updated_at, s.created_at, ACP_STORE_TIME_LEN + 1);
    assert_int_equal(acp_store_create(f->st, &s), ACP_EINVAL); /* one byte over */
    a[ACP_STORE_ID_MAX] = '\0';
    assert_int_equal(acp_store_create(f->st, &s), 0);
    mk(f->st, b, "/w", "2026-01-01T00:00:00.000Z");
    append(f->st, a, "{\"n\":1}");
    assert_int_equal(acp_store_commit(f->st, "2026-01-02T00:00:00.000Z"), 0);
    got g = {0};
    replay_all(f->st, a, &g);
    assert_int_equal(g.n, 1);
    got_free(&g);

    page p = {0};
    char *next = NULL;
    assert_int_equal(acp_store_list(f->st, NULL, NULL, 1, on_row, &p, &next), 0);
    assert_int_equal(p.n, 1);
    assert_string_equal(p.id[0], a); /* the commit made it the newest */
    assert_non_null(next);
    page_free(&p);
    char *cursor = next;
    assert_int_equal(acp_store_list(f->st, NULL, cursor, 1, on_row, &p, &next), 0);
    free(cursor);
    assert_int_equal(p.n, 1);
    assert_string_equal(p.id[0], b);
    assert_null(next);
    page_free(&p);
}

static void t_set_info(void **state)
{
    fx *f = *state;
    mk(f->st, "a", "/w", "2026-01-01T00:00:00.000Z");
    acp_store_session out = ACP_STORE_SESSION_INIT;
    assert_int_equal(acp_store_set_info(f->st, "a", 0, true, "Title one", NULL), 0);
    assert_int_equal(acp_store_get(f->st, "a", &out), 0);
    assert_string_equal(out.title, "Title one");
    assert_string_equal(out.updated_at, "2026-01-01T00:00:00.000Z"); /* NULL leaves it */
    acp_store_session_clear(&out);

    assert_int_equal(
        acp_store_set_info(f->st, "a", 0, false, "ignored", "2026-02-03T04:05:06.789Z"), 0);
    assert_int_equal(acp_store_get(f->st, "a", &out), 0);
    assert_string_equal(out.title, "Title one"); /* set_title=false leaves it */
    assert_string_equal(out.updated_at, "2026-02-03T04:05:06.789Z");
    acp_store_session_clear(&out);

    assert_int_equal(acp_store_set_info(f->st, "a", 0, true, NULL, NULL), 0);
    assert_int_equal(acp_store_get(f->st, "a", &out), 0);
    assert_null(out.title);
    acp_store_session_clear(&out);

    assert_int_equal(acp_store_set_info(f->st, "ghost", 0, true, "x", NULL), ACP_ENOTFOUND);
    assert_int_equal(acp_store_set_info(f->st, "a", 0, false, NULL, "2026-13-01T00:00:00.000Z"),
                     ACP_EINVAL);
}

static void t_set_roots(void **state)
{
    fx *f = *state;
    mk(f->st, "a", "/old", "2026-01-01T00:00:00.000Z");
    assert_int_equal(acp_store_set_roots(f->st, "a", 0, "/new", "[\"/extra\"]"), 0);
    acp_store_session out = ACP_STORE_SESSION_INIT;
    assert_int_equal(acp_store_get(f->st, "a", &out), 0);
    assert_string_equal(out.cwd, "/new");
    assert_string_equal(out.add_dirs, "[\"/extra\"]");
    acp_store_session_clear(&out);
    assert_int_equal(acp_store_set_roots(f->st, "ghost", 0, "/x", "[]"), ACP_ENOTFOUND);

    /* list reports the current roots, and the cwd filter follows them */
    page p = {0};
    char *next = (char *)"x";
    assert_int_equal(acp_store_list(f->st, "/new", NULL, 10, on_row, &p, &next), 0);
    assert_int_equal(p.n, 1);
    assert_string_equal(p.cwd[0], "/new");
    assert_string_equal(p.add_dirs[0], "[\"/extra\"]");
    assert_null(next);
    page_free(&p);
    assert_int_equal(acp_store_list(f->st, "/old", NULL, 10, on_row, &p, &next), 0);
    assert_int_equal(p.n, 0);
}

static void t_append_commit_replay(void **state)
{
    fx *f = *state;
    mk(f->st, "a", "/w", "2026-01-01T00:00:00.000Z");
    mk(f->st, "b", "/w", "2026-01-01T00:00:00.000Z");
    append(f->st, "a", "{\"n\":1}");
    append(f->st, "b", "{\"n\":\"b1\"}");
    append(f->st, "a", "{\"n\":2}");
    append(f->st, "a", "{\"n\":3,\"text\":\"caf\xc3\xa9 \\u0000 \\\"q\\\"\"}");
    assert_int_equal(acp_store_pending(f->st), 4);

    /* nothing is visible before commit, even to this handle */
    got g = {0};
    replay_all(f->st, "a", &g);
    assert_int_equal(g.n, 0);

    assert_int_equal(acp_store_commit(f->st, "2026-03-01T00:00:00.000Z"), 0);
    assert_int_equal(acp_store_pending(f->st), 0);
    replay_all(f->st, "a", &g);
    assert_int_equal(g.n, 3);
    for (int i = 0; i < 3; i++) assert_int_equal(g.seq[i], i + 1);
    assert_string_equal(g.json[0], "{\"n\":1}");
    assert_string_equal(g.json[1], "{\"n\":2}");
    assert_string_equal(g.json[2], "{\"n\":3,\"text\":\"caf\xc3\xa9 \\u0000 \\\"q\\\"\"}");
    got_free(&g);
    replay_all(f->st, "b", &g);
    assert_int_equal(g.n, 1);
    assert_int_equal(g.seq[0], 1);
    assert_string_equal(g.json[0], "{\"n\":\"b1\"}");
    got_free(&g);

    acp_store_session out = ACP_STORE_SESSION_INIT;
    assert_int_equal(acp_store_get(f->st, "a", &out), 0);
    assert_string_equal(out.updated_at, "2026-03-01T00:00:00.000Z");
    assert_string_equal(out.created_at, "2026-01-01T00:00:00.000Z");
    acp_store_session_clear(&out);

    /* the next commit continues each session's sequence; NULL now means the clock */
    append(f->st, "a", "{\"n\":4}");
    char before[ACP_STORE_TIME_LEN + 1];
    acp_store_now(before);
    assert_int_equal(acp_store_commit(f->st, NULL), 0);
    replay_all(f->st, "a", &g);
    assert_int_equal(g.n, 4);
    assert_int_equal(g.seq[3], 4);
    assert_string_equal(g.json[3], "{\"n\":4}");
    got_free(&g);
    assert_int_equal(acp_store_get(f->st, "a", &out), 0);
    assert_true(strcmp(out.updated_at, before) >= 0);
    acp_store_session_clear(&out);
    assert_int_equal(acp_store_get(f->st, "b", &out), 0);
    assert_string_equal(out.updated_at, "2026-03-01T00:00:00.000Z"); /* untouched */
    acp_store_session_clear(&out);

    /* a big update survives byte for byte */
    size_t big = 3 << 20;
    char *s = malloc(big + 1);
    assert_non_null(s);
    memset(s, 'x', big);
    s[0] = '"';
    s[big - 1] = '"';
    s[big] = '\0';
    append(f->st, "b", s);
    assert_int_equal(acp_store_commit(f->st, NULL), 0);
    replay_all(f->st, "b", &g);
    assert_int_equal(g.n, 2);
    assert_string_equal(g.json[1], s);
    got_free(&g);
    free(s);
    /* and the batch is usable after such a big one */
    append(f->st, "b", "{\"after\":\"big\"}");
    assert_int_equal(acp_store_commit(f->st, NULL), 0);
    replay_all(f->st, "b", &g);
    assert_int_equal(g.n, 3);
    assert_int_equal(g.seq[2], 3);
    assert_string_equal(g.json[2], "{\"after\":\"big\"}");
    got_free(&g);
}

/* One batch spread over many sessions, interleaved: each gets its own gapless sequence in
 * append order. The batch is left non-empty at the end: closing discards it (no leak). */
static void t_batch_many_sessions(void **state)
{
    fx *f = *state;
    enum { S = 60, R = 15 };
    char id[16], u[48];
    for (int k = 0; k < S; k++) {
        snprintf(id, sizeof id, "m%02d", k);
        mk(f->st, id, "/w", "2026-01-01T00:00:00.000Z");
    }
    for (int r = 0; r < R; r++)
        for (int k = 0; k < S; k++) {
            snprintf(id, sizeof id, "m%02d", (k * 7 + r) % S);
            snprintf(u, sizeof u, "{\"r\":%d,\"s\":\"%s\"}", r, id);
            append(f->st, id, u);
        }
    assert_int_equal(acp_store_pending(f->st), S * R);
    assert_int_equal(acp_store_commit(f->st, "2026-04-01T00:00:00.000Z"), 0);
    got g = {0};
    for (int k = 0; k < S; k++) {
        snprintf(id, sizeof id, "m%02d", k);
        replay_all(f->st, id, &g);
        assert_int_equal(g.n, R);
        for (int r = 0; r < R; r++) {
            snprintf(u, sizeof u, "{\"r\":%d,\"s\":\"%s\"}", r, id);
            assert_int_equal(g.seq[r], r + 1);
            assert_string_equal(g.json[r], u);
        }
        got_free(&g);
    }
    page p = {0};
    char *next = NULL;
    assert_int_equal(acp_store_list(f->st, NULL, NULL, S, on_row, &p, &next), 0);
    for (int k = 0; k < p.n; k++) assert_string_equal(p.updated[k], "2026-04-01T00:00:00.000Z");
    page_free(&p);
    append(f->st, "m00", "{\"never\":\"committed\"}");
}

static void t_replay_chunks(void **state)
{
    fx *f = *state;
    mk(f->st, "a", "/w", "2026-01-01T00:00:00.000Z");
    char u[101];
    for (int i = 1; i <= 10; i++) {
        snprintf(u, sizeof u, "{\"i\":\"%02d\",\"pad\":\"%0*d\"}", i, 100 - 19, 0);
        assert_int_equal(strlen(u), 100);
        append(f->st, "a", u);
    }
    assert_int_equal(acp_store_commit(f->st, NULL), 0);

    /* 250-byte cap: each call stops after the update that takes it past 250, i.e. 3 */
    got g = {0};
    int64_t after = 0, last = -1;
    bool done = false;
    int calls = 0;
    while (!done) {
        int before = g.n;
        assert_int_equal(acp_store_replay(f->st, "a", after, 250, collect, &g, &last, &done), 0);
        assert_int_equal(g.n - before, g.n <= 9 ? 3 : 1);
        assert_int_equal(last, g.seq[g.n - 1]);
        after = last;
        calls++;
    }
    assert_int_equal(calls, 4);
    assert_int_equal(g.n, 10);
    for (int i = 0; i < 10; i++) assert_int_equal(g.seq[i], i + 1);
    got_free(&g);

    /* a cap that lands exactly on the last update: done is known in the same call */
    assert_int_equal(acp_store_replay(f->st, "a", 7, 250, collect, &g, &last, &done), 0);
    assert_int_equal(g.n, 3);
    assert_int_equal(last, 10);
    assert_true(done);
    got_free(&g);

    /* nothing after the last seq */
    assert_int_equal(acp_store_replay(f->st, "a", 10, 0, collect, &g, &last, &done), 0);
    assert_int_equal(g.n, 0);
    assert_int_equal(last, 10);
    assert_true(done);

    /* after_seq in the middle, no cap */
    assert_int_equal(acp_store_replay(f->st, "a", 4, 0, collect, &g, &last, &done), 0);
    assert_int_equal(g.n, 6);
    assert_int_equal(g.seq[0], 5);
    assert_true(done);
    got_free(&g);

    /* the callback stops it: its value comes back */
    g.stop_at = 2;
    assert_int_equal(acp_store_replay(f->st, "a", 0, 0, collect, &g, &last, &done), 7);
    assert_int_equal(g.n, 2);
    assert_int_equal(last, 2);
    assert_false(done);
    got_free(&g);
    g.stop_at = 0;

    assert_int_equal(acp_store_replay(f->st, "ghost", 0, 0, collect, &g, &last, &done),
                     ACP_ENOTFOUND);
    /* a session with no history */
    mk(f->st, "empty", "/w", "2026-01-01T00:00:00.000Z");
    assert_int_equal(acp_store_replay(f->st, "empty", 0, 100, collect, &g, &last, &done), 0);
    assert_int_equal(g.n, 0);
    assert_int_equal(last, 0);
    assert_true(done);
}

static void t_empty_commit(void **state)
{
    fx *f = *state;
    mk(f->st, "a", "/w", "2026-01-01T00:00:00.000Z");
    assert_int_equal(acp_store_pending(f->st), 0);
    assert_int_equal(acp_store_commit(f->st, "2027-01-01T00:00:00.000Z"), 0);
    acp_store_session out = ACP_STORE_SESSION_INIT;
    assert_int_equal(acp_store_get(f->st, "a", &out), 0);
    assert_string_equal(out.updated_at, "2026-01-01T00:00:00.000Z");
    acp_store_session_clear(&out);

    /* a failed commit drops the batch and stores nothing of it */
    append(f->st, "a", "{}");
    assert_int_equal(acp_store_commit(f->st, "not a time"), ACP_EINVAL);
    assert_int_equal(acp_store_pending(f->st), 0);
    got g = {0};
    replay_all(f->st, "a", &g);
    assert_int_equal(g.n, 0);
}

/* Appends for a session that does not exist are not stored and the commit says so
 * (ACP_ENOTFOUND, acp_store_gone naming it), while the rest of the batch is stored: a process
 * must learn that what it streamed for a session deleted elsewhere was kept nowhere. */
static void t_append_deleted(void **state)
{
    fx *f = *state;
    mk(f->st, "a", "/w", "2026-01-01T00:00:00.000Z");
    mk(f->st, "b", "/w", "2026-01-01T00:00:00.000Z");
    append(f->st, "a", "{\"a\":1}");
    append(f->st, "ghost", "{\"g\":1}");
    append(f->st, "b", "{\"b\":1}");
    append(f->st, "a", "{\"a\":2}");
    assert_int_equal(acp_store_commit(f->st, NULL), ACP_ENOTFOUND);
    assert_non_null(strstr(acp_error_last()->message, "ghost"));
    assert_string_equal(acp_store_gone(f->st, 0, NULL, NULL), "ghost");
    assert_null(acp_store_gone(f->st, 1, NULL, NULL));
    assert_int_equal(acp_store_pending(f->st), 0);
    got g = {0};
    replay_all(f->st, "a", &g);
    assert_int_equal(g.n, 2);
    got_free(&g);
    replay_all(f->st, "b", &g);
    assert_int_equal(g.n, 1);
    got_free(&g);
    int64_t last;
    bool done;
    assert_int_equal(acp_store_replay(f->st, "ghost", 0, 0, collect, &g, &last, &done),
                     ACP_ENOTFOUND);
    acp_store_session out = ACP_STORE_SESSION_INIT;
    assert_int_equal(acp_store_get(f->st, "ghost", &out), ACP_ENOTFOUND);

    /* deleted by another handle (another process) between append and commit: the commit
     * neither stores its updates nor brings it back */
    acp_store *other = open_where(f->where);
    append(f->st, "a", "{\"a\":3}");
    append(f->st, "b", "{\"b\":2}");
    assert_int_equal(acp_store_delete(other, "a"), 0);
    assert_int_equal(acp_store_commit(f->st, NULL), ACP_ENOTFOUND);
    assert_string_equal(acp_store_gone(f->st, 0, NULL, NULL), "a");
    assert_null(acp_store_gone(f->st, 1, NULL, NULL));
    assert_int_equal(acp_store_get(f->st, "a", &out), ACP_ENOTFOUND);
    assert_int_equal(acp_store_replay(f->st, "a", 0, 0, collect, &g, &last, &done), ACP_ENOTFOUND);
    replay_all(other, "b", &g);
    assert_int_equal(g.n, 2);
    assert_string_equal(g.json[1], "{\"b\":2}");
    got_free(&g);

    /* several gone at once: named in order of first append; the next commit forgets them */
    append(f->st, "x", "{}");
    append(f->st, "b", "{\"b\":3}");
    append(f->st, "y", "{}");
    append(f->st, "x", "{}");
    assert_int_equal(acp_store_commit(f->st, NULL), ACP_ENOTFOUND);
    assert_string_equal(acp_store_gone(f->st, 0, NULL, NULL), "x");
    assert_string_equal(acp_store_gone(f->st, 1, NULL, NULL), "y");
    assert_null(acp_store_gone(f->st, 2, NULL, NULL));
    replay_all(other, "b", &g);
    assert_int_equal(g.n, 3);
    got_free(&g);
    append(f->st, "b", "{\"b\":4}");
    assert_int_equal(acp_store_commit(f->st, NULL), 0);
    assert_null(acp_store_gone(f->st, 0, NULL, NULL));

    /* every other write for a session deleted elsewhere fails the same way */
    assert_int_equal(acp_store_delete(other, "b"), 0);
    assert_int_equal(acp_store_set_info(f->st, "b", 0, true, "t", NULL), ACP_ENOTFOUND);
    assert_int_equal(acp_store_set_roots(f->st, "b", 0, "/x", "[]"), ACP_ENOTFOUND);
    assert_int_equal(acp_store_set_state(f->st, "b", 0, "{}"), ACP_ENOTFOUND);
    append(f->st, "b", "{\"b\":5}");
    assert_int_equal(acp_store_commit(f->st, NULL), ACP_ENOTFOUND);
    assert_int_equal(acp_store_get(other, "b", &out), ACP_ENOTFOUND);
    acp_store_close(other);
}

/* A replay the agent runs in steps (a capped call per loop turn) while another process deletes
 * the session: the next step is ACP_ENOTFOUND, never an empty `done` that would end the load
 * as if the history were whole. */
static void t_replay_deleted(void **state)
{
    fx *f = *state;
    mk(f->st, "a", "/w", "2026-01-01T00:00:00.000Z");
    for (int i = 0; i < 30; i++) append(f->st, "a", "{\"pad\":\"0123456789\"}");
    assert_int_equal(acp_store_commit(f->st, NULL), 0);
    acp_store *other = open_where(f->where);
    got g = {0};
    int64_t last = 0;
    bool done = false;
    assert_int_equal(acp_store_replay(f->st, "a", 0, 100, collect, &g, &last, &done), 0);
    assert_false(done);
    assert_int_equal(acp_store_delete(other, "a"), 0);
    assert_int_equal(acp_store_replay(f->st, "a", last, 100, collect, &g, &last, &done),
                     ACP_ENOTFOUND);
    assert_false(done);
    got_free(&g);
    acp_store_close(other);
}

static void t_list_order(void **state)
{
    fx *f = *state;
    mk(f->st, "m", "/w", "2026-01-02T00:00:00.000Z");
    mk(f->st, "z", "/w", "2026-01-01T00:00:00.000Z");
    mk(f->st, "a", "/w", "2026-01-03T00:00:00.000Z");
    mk(f->st, "b", "/w", "2026-01-02T00:00:00.000Z"); /* ties with m: id descending */
    mk(f->st, "c", "/w", "2026-01-02T00:00:00.000Z");
    page p = {0};
    char *next = NULL;
    assert_int_equal(acp_store_list(f->st, NULL, NULL, 50, on_row, &p, &next), 0);
    assert_null(next);
    const char *want[] = {"a", "m", "c", "b", "z"};
    assert_int_equal(p.n, 5);
    for (int i = 0; i < 5; i++) assert_string_equal(p.id[i], want[i]);
    page_free(&p);

    /* a commit moves its session to the top */
    append(f->st, "z", "{}");
    assert_int_equal(acp_store_commit(f->st, "2026-02-01T00:00:00.000Z"), 0);
    /* and so does a set_info with a new updated_at */
    assert_int_equal(acp_store_set_info(f->st, "b", 0, true, "B", "2026-02-02T00:00:00.000Z"), 0);
    assert_int_equal(acp_store_list(f->st, NULL, NULL, 2, on_row, &p, &next), 0);
    assert_int_equal(p.n, 2);
    assert_string_equal(p.id[0], "b");
    assert_string_equal(p.title[0], "B");
    assert_string_equal(p.updated[0], "2026-02-02T00:00:00.000Z");
    assert_string_equal(p.id[1], "z");
    assert_non_null(next);
    page_free(&p);
    free(next);
}

static void t_list_cwd(void **state)
{
    fx *f = *state;
    mk(f->st, "1", "/a", "2026-01-01T00:00:01.000Z");
    mk(f->st, "2", "/a/", "2026-01-01T00:00:02.000Z");
    mk(f->st, "3", "/ab", "2026-01-01T00:00:03.000Z");
    mk(f->st, "4", "/a", "2026-01-01T00:00:04.000Z");
    mk(f->st, "5", "/A", "2026-01-01T00:00:05.000Z");
    mk(f->st, "6", "/a%", "2026-01-01T00:00:06.000Z");
    page p = {0};
    char *next = NULL;
    assert_int_equal(acp_store_list(f->st, "/a", NULL, 50, on_row, &p, &next), 0);
    assert_int_equal(p.n, 2);
    assert_string_equal(p.id[0], "4");
    assert_string_equal(p.id[1], "1");
    for (int i = 0; i < p.n; i++) assert_string_equal(p.cwd[i], "/a");
    page_free(&p);

    /* paging inside a filter */
    assert_int_equal(acp_store_list(f->st, "/a", NULL, 1, on_row, &p, &next), 0);
    assert_int_equal(p.n, 1);
    assert_non_null(next);
    char *c2 = NULL;
    assert_int_equal(acp_store_list(f->st, "/a", next, 1, on_row, &p, &c2), 0);
    assert_int_equal(p.n, 2);
    assert_string_equal(p.id[1], "1");
    assert_null(c2);
    free(next);
    page_free(&p);

    assert_int_equal(acp_store_list(f->st, "/nowhere", NULL, 50, on_row, &p, &next), 0);
    assert_int_equal(p.n, 0);
    assert_null(next);
}

static void t_last_page(void **state)
{
    fx *f = *state;
    mk_n(f->st, 6, NULL);
    page p = {0};
    char *next = (char *)"x";
    /* exactly a full page: no cursor for an empty page after it */
    assert_int_equal(acp_store_list(f->st, NULL, NULL, 6, on_row, &p, &next), 0);
    assert_int_equal(p.n, 6);
    assert_null(next);
    page_free(&p);
    assert_int_equal(acp_store_list(f->st, NULL, NULL, 5, on_row, &p, &next), 0);
    assert_int_equal(p.n, 5);
    assert_non_null(next);
    char *n2 = (char *)"x";
    assert_int_equal(acp_store_list(f->st, NULL, next, 5, on_row, &p, &n2), 0);
    assert_int_equal(p.n, 6);
    assert_string_equal(p.id[5], "s0");
    assert_null(n2);
    page_free(&p);

    /* a cursor past everything (its sessions deleted since) gives an empty last page */
    for (int i = 0; i < 6; i++) {
        char id[16];
        snprintf(id, sizeof id, "s%d", i);
        assert_int_equal(acp_store_delete(f->st, id), 0);
    }
    n2 = (char *)"x";
    assert_int_equal(acp_store_list(f->st, NULL, next, 5, on_row, &p, &n2), 0);
    assert_int_equal(p.n, 0);
    assert_null(n2);
    free(next);
}

/* Hundreds of sessions paged while others are created (above and below the cursor) and
 * deleted (seen and unseen): every session present throughout is seen exactly once. */
static void t_pagination_churn(void **state)
{
    fx *f = *state;
    enum { N = 300, LIMIT = 7 };
    char t[ACP_STORE_TIME_LEN + 1], id[32];
    /* times with many ties so the id tie-break is exercised across page boundaries */
    for (int i = 0; i < N; i++) {
        stamp(t, 1000 + i / 3);
        snprintf(id, sizeof id, "s%03d", i);
        mk(f->st, id, "/w", t);
    }
    static char seen[N]; /* how often each original session was listed */
    static char gone[N]; /* deleted during the walk */
    memset(seen, 0, sizeof seen);
    memset(gone, 0, sizeof gone);
    page p = {0};
    char *cursor = NULL;
    int pages = 0, extra = 0;
    do {
        char *next = NULL;
        int before = p.n;
        assert_int_equal(acp_store_list(f->st, NULL, cursor, LIMIT, on_row, &p, &next), 0);
        free(cursor);
        cursor = next;
        assert_true(p.n - before <= LIMIT);
        if (cursor) assert_int_equal(p.n - before, LIMIT);
        for (int i = before; i < p.n; i++) {
            int k;
            if (sscanf(p.id[i], "s%d", &k) == 1 && p.id[i][0] == 's') {
                assert_false(gone[k]);
                seen[k]++;
            } else {
                extra++;
            }
            /* one strictly descending (updated_at, id) sequence across all pages */
            if (i > 0) {
                int c = strcmp(p.updated[i - 1], p.updated[i]);
                assert_true(c > 0 || (c == 0 && strcmp(p.id[i - 1], p.id[i]) > 0));
            }
        }
        pages++;
        /* churn: a new newest session (above every cursor: never listed in this walk), an
         * old one (below: listed later), delete one unseen and one seen session */
        stamp(t, 5000 + pages);
        snprintf(id, sizeof id, "new%03d", pages);
        mk(f->st, id, "/w", t);
        stamp(t, 10 + pages);
        snprintf(id, sizeof id, "old%03d", pages);
        mk(f->st, id, "/w", t);
        int victim = pages * 2; /* unseen: low times are listed last */
        if (victim < N && !seen[victim] && !gone[victim]) {
            snprintf(id, sizeof id, "s%03d", victim);
            assert_int_equal(acp_store_delete(f->st, id), 0);
            gone[victim] = 1;
        }
        int listed = N - pages; /* seen already: deleting it must not disturb the walk */
        if (listed >= 0 && seen[listed] == 1) {
            snprintf(id, sizeof id, "s%03d", listed);
            assert_int_equal(acp_store_delete(f->st, id), 0);
        }
        assert_true(pages < 200);
    } while (cursor);
    for (int k = 0; k < N; k++) {
        if (gone[k])
            assert_int_equal(seen[k], 0);
        else
            assert_int_equal(seen[k], 1);
    }
    /* "new" sessions (above the cursor) never appear; "old" ones made before the walk got
     * down to their time do (the strict order check above rules out repeats) */
    for (int i = 0; i < p.n; i++) assert_true(strncmp(p.id[i], "new", 3) != 0);
    assert_true(extra >= pages - 10);
    assert_true(extra > 20);
    page_free(&p);
}

static void t_bad_cursors(void **state)
{
    fx *f = *state;
    mk_n(f->st, 4, NULL);
    page p = {0};
    char *good = NULL;
    assert_int_equal(acp_store_list(f->st, NULL, NULL, 2, on_row, &p, &good), 0);
    assert_non_null(good);
    page_free(&p);

    char truncated[256], quarter[256];
    snprintf(truncated, sizeof truncated, "%s", good);
    truncated[strlen(truncated) - 3] = '\0';
    /* cut at a 4-character boundary: still valid base64 of a shorter id */
    snprintf(quarter, sizeof quarter, "%s", good);
    quarter[(strlen(quarter) - 1) / 4 * 4] = '\0';
    char longer[300];
    snprintf(longer, sizeof longer, "%sAAAA", good);
    char badlen[64], nolen[64], hello[64], v2[64], noid[64], badtime[64], control[64], padded[70],
        stdalpha[70];
    b64url("hello", hello);
    b64url("v2|2026-01-01T00:00:02.002Z|2|s2", v2);
    b64url("v1|2026-01-01T00:00:02.002Z|0|", noid);
    b64url("v1|yesterday, at noon ||2|s2", badtime);
    b64url("v1|2026-01-01T00:00:02.002Z|2|s2", control); /* what the store itself would make */
    snprintf(padded, sizeof padded, "%s==", control);
    b64url("v1|2026-01-01T00:00:02.002Z|3|s>?", stdalpha);
    b64url("v1|2026-01-01T00:00:02.002Z|3|s2", badlen);
    b64url("v1|2026-01-01T00:00:02.002Z|s2", nolen);
    for (char *c = stdalpha; *c; c++) *c = *c == '-' ? '+' : *c == '_' ? '/' : *c;
    assert_true(strpbrk(stdalpha, "+/") != NULL);
    const char *bad[] = {
        "",        "garbage!!", "not a cursor at all",
        truncated, quarter,     hello,
        v2,        noid,        badtime,
        padded,    stdalpha,    badlen,
        nolen,     longer,
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *next = (char *)"x";
        int rc = acp_store_list(f->st, NULL, bad[i], 2, fail_row, &p, &next);
        if (rc != ACP_EINVAL) print_error("cursor %zu (%s) accepted\n", i, bad[i]);
        assert_int_equal(rc, ACP_EINVAL);
        assert_null(next);
        assert_string_not_equal(acp_error_last()->message, "");
    }
    /* the control: the same shape, well formed, is accepted, and is the store's own cursor */
    char *next = NULL;
    assert_string_equal(good, control);
    assert_int_equal(acp_store_list(f->st, NULL, control, 2, on_row, &p, &next), 0);
    assert_int_equal(p.n, 2);
    assert_string_equal(p.id[0], "s1");
    assert_null(next);
    page_free(&p);
    free(good);
}

static void t_delete(void **state)
{
    fx *f = *state;
    mk(f->st, "a", "/w", "2026-01-01T00:00:00.000Z");
    mk(f->st, "b", "/w", "2026-01-01T00:00:00.000Z");
    append(f->st, "a", "{\"secret\":1}");
    append(f->st, "b", "{\"kept\":1}");
    assert_int_equal(acp_store_commit(f->st, NULL), 0);
    assert_int_equal(acp_store_delete(f->st, "a"), 0);
    acp_store_session out = ACP_STORE_SESSION_INIT;
    assert_int_equal(acp_store_get(f->st, "a", &out), ACP_ENOTFOUND);
    got g = {0};
    int64_t last;
    bool done;
    assert_int_equal(acp_store_replay(f->st, "a", 0, 0, collect, &g, &last, &done), ACP_ENOTFOUND);
    page p = {0};
    char *next = NULL;
    assert_int_equal(acp_store_list(f->st, NULL, NULL, 50, on_row, &p, &next), 0);
    assert_int_equal(p.n, 1);
    assert_string_equal(p.id[0], "b");
    page_free(&p);
    assert_int_equal(acp_store_delete(f->st, "a"), 0);     /* again */
    assert_int_equal(acp_store_delete(f->st, "never"), 0); /* never existed */
    replay_all(f->st, "b", &g);
    assert_int_equal(g.n, 1);
    got_free(&g);

    /* the id can be used again, with a fresh, empty history */
    mk(f->st, "a", "/w2", "2026-01-05T00:00:00.000Z");
    replay_all(f->st, "a", &g);
    assert_int_equal(g.n, 0);
    append(f->st, "a", "{\"again\":1}");
    assert_int_equal(acp_store_commit(f->st, NULL), 0);
    replay_all(f->st, "a", &g);
    assert_int_equal(g.n, 1);
    assert_int_equal(g.seq[0], 1);
    assert_string_equal(g.json[0], "{\"again\":1}");
    got_free(&g);
}

/* Two handles on one store (as two processes would be): each sees the other's commits, a
 * cursor from one works on the other, and interleaved commits keep one gapless order. */
static void t_two_handles(void **state)
{
    fx *f = *state;
    acp_store *o = open_where(f->where);
    char t[ACP_STORE_TIME_LEN + 1], id[16];
    for (int i = 0; i < 5; i++) {
        stamp(t, i);
        snprintf(id, sizeof id, "s%d", i);
        mk(i % 2 ? o : f->st, id, "/w", t);
    }
    page p = {0};
    char *next = NULL, *n2 = NULL;
    assert_int_equal(acp_store_list(f->st, NULL, NULL, 3, on_row, &p, &next), 0);
    assert_int_equal(acp_store_list(o, NULL, next, 3, on_row, &p, &n2), 0);
    assert_int_equal(p.n, 5);
    assert_string_equal(p.id[3], "s1");
    assert_null(n2);
    free(next);
    page_free(&p);

    char u[32];
    for (int i = 0; i < 20; i++) {
        acp_store *w = i % 3 ? o : f->st;
        snprintf(u, sizeof u, "{\"i\":%d}", 2 * i);
        append(w, "s0", u);
        snprintf(u, sizeof u, "{\"i\":%d}", 2 * i + 1);
        append(w, "s0", u);
        assert_int_equal(acp_store_commit(w, NULL), 0);
    }
    got g = {0};
    replay_all(o, "s0", &g);
    assert_int_equal(g.n, 40);
    for (int i = 0; i < 40; i++) {
        assert_int_equal(g.seq[i], i + 1);
        snprintf(u, sizeof u, "{\"i\":%d}", i);
        assert_string_equal(g.json[i], u);
    }
    got_free(&g);
    acp_store_close(o);
}

static void t_errmsg(void **state)
{
    fx *f = *state;
    acp_store_session out = ACP_STORE_SESSION_INIT;
    assert_int_equal(acp_store_get(f->st, "ghost", &out), ACP_ENOTFOUND);
    assert_int_equal(acp_error_last()->status, ACP_ENOTFOUND);
    assert_non_null(strstr(acp_error_last()->message, "ghost"));
    char said[256];
    snprintf(said, sizeof said, "%s", acp_error_last()->message);
    mk(f->st, "a", "/w", "2026-01-01T00:00:00.000Z");
    assert_int_equal(acp_store_get(f->st, "a", &out), 0);
    assert_string_equal(acp_error_last()->message, said); /* a success leaves it */
    acp_store_session_clear(&out);
    acp_store *st = f->st;
    assert_int_equal(acp_store_open("", &st), ACP_ESTORE);
    assert_null(st);
    assert_int_equal(acp_error_last()->status, ACP_ESTORE);
    assert_non_null(strstr(acp_error_last()->message, "empty store location"));
}

/* --- session state --------------------------------------------------------------------- */

/* Asserts that session id's state is exactly want (NULL: none). */
static void assert_state(acp_store *st, const char *id, const char *want)
{
    acp_store_session out = ACP_STORE_SESSION_INIT;
    assert_int_equal(acp_store_get(st, id, &out), 0);
    if (want) {
        assert_non_null(out.state);
        assert_int_equal(strlen(out.state), strlen(want));
        assert_memory_equal(out.state, want, strlen(want));
    } else {
        assert_null(out.state);
    }
    acp_store_session_clear(&out);
}

/* An object of exactly n bytes: {"p":"zzz...z"}. Caller frees. */
static char *object_of(size_t n)
{
    char *j = malloc(n + 1);
    assert_non_null(j);
    memset(j, 'z', n);
    memcpy(j, "{\"p\":\"", 6);
    memcpy(j + n - 2, "\"}", 2);
    j[n] = '\0';
    return j;
}

/* Set, overwrite and clear; the text comes back byte for byte, whitespace, escapes and raw
 * UTF-8 included; the rest of the session is left alone. */
static void t_state_set_get(void **state)
{
    fx *f = *state;
    acp_store_session s = {.struct_size = sizeof(acp_store_session),
                           .id = "a",
                           .cwd = "/w",
                           .add_dirs = "[\"/x\"]",
                           .title = "T"};
    memcpy(s.created_at, "2026-01-01T00:00:00.000Z", ACP_STORE_TIME_LEN + 1);
    memcpy(s.updated_at, s.created_at, ACP_STORE_TIME_LEN + 1);
    assert_int_equal(acp_store_create(f->st, &s), 0);
    mk(f->st, "b", "/w", "2026-01-01T00:00:00.000Z");
    assert_state(f->st, "a", NULL); /* none recorded yet */

    const char *one = "{\"mode\":\"code\",\"config\":{\"model\":\"m1\"}}";
    acp_error_clear();
    assert_int_equal(acp_store_set_state(f->st, "a", 0, one), 0);
    assert_string_equal(acp_error_last()->message, ""); /* a success says nothing */
    assert_state(f->st, "a", one);
    assert_state(f->st, "b", NULL); /* only the session named */
    acp_store_session out = ACP_STORE_SESSION_INIT;
    assert_int_equal(acp_store_get(f->st, "a", &out), 0);
    assert_string_equal(out.cwd, "/w");
    assert_string_equal(out.add_dirs, "[\"/x\"]");
    assert_string_equal(out.title, "T");
    acp_store_session_clear(&out);
    assert_null(out.state);

    const char *odd = " \n{\"t\" : \"a\\\\b\\n\\u00e9 é 😀 \\\"q\\\"\",\n\t\"n\":1.50e+3 } ";
    assert_int_equal(acp_store_set_state(f->st, "a", 0, odd), 0); /* overwrite */
    assert_state(f->st, "a", odd);
    assert_int_equal(acp_store_set_state(f->st, "a", 0, "{}"), 0);
    assert_state(f->st, "a", "{}");
    assert_int_equal(acp_store_set_state(f->st, "a", 0, NULL), 0); /* clears */
    assert_state(f->st, "a", NULL);
    assert_int_equal(acp_store_set_state(f->st, "a", 0, NULL), 0); /* clearing again is fine */
    assert_state(f->st, "a", NULL);

    /* the largest state the header allows, 1 MiB, is kept whole */
    char *big = object_of((size_t)1 << 20);
    assert_int_equal(acp_store_set_state(f->st, "b", 0, big), 0);
    assert_state(f->st, "b", big);
    free(big);
}

/* A session that is not there, never was or was deleted (by this handle or another, as
 * another process would), is ACP_ENOTFOUND, and set_state does not bring it back. */
static void t_state_missing(void **state)
{
    fx *f = *state;
    assert_int_equal(acp_store_set_state(f->st, "ghost", 0, "{\"m\":1}"), ACP_ENOTFOUND);
    assert_string_not_equal(acp_error_last()->message, "");
    assert_int_equal(acp_store_set_state(f->st, "ghost", 0, NULL), ACP_ENOTFOUND);
    acp_store_session out = ACP_STORE_SESSION_INIT;
    assert_int_equal(acp_store_get(f->st, "ghost", &out), ACP_ENOTFOUND);

    mk(f->st, "a", "/w", "2026-01-01T00:00:00.000Z");
    mk(f->st, "b", "/w", "2026-01-01T00:00:00.000Z");
    assert_int_equal(acp_store_set_state(f->st, "a", 0, "{\"m\":1}"), 0);
    assert_int_equal(acp_store_delete(f->st, "a"), 0);
    assert_int_equal(acp_store_set_state(f->st, "a", 0, "{\"m\":2}"), ACP_ENOTFOUND);
    assert_int_equal(acp_store_get(f->st, "a", &out), ACP_ENOTFOUND);

    acp_store *other = open_where(f->where);
    assert_int_equal(acp_store_delete(other, "b"), 0);
    assert_int_equal(acp_store_set_state(f->st, "b", 0, "{\"m\":3}"), ACP_ENOTFOUND);
    acp_store_close(other);
    assert_int_equal(acp_store_get(f->st, "b", &out), ACP_ENOTFOUND);

    page p = {0};
    char *next = NULL;
    assert_int_equal(acp_store_list(f->st, NULL, NULL, 50, on_row, &p, &next), 0);
    assert_int_equal(p.n, 0);
    assert_null(next);
}

/* Anything but a JSON object of at most 1 MiB is ACP_EINVAL, with a message, and the state
 * stored before is still there afterwards. */
static void t_state_invalid(void **state)
{
    fx *f = *state;
    mk(f->st, "a", "/w", "2026-01-01T00:00:00.000Z");
    const char *kept = "{\"mode\":\"ask\"}";
    assert_int_equal(acp_store_set_state(f->st, "a", 0, kept), 0);
    char *over = object_of(((size_t)1 << 20) + 1);
    const char *bad[] = {
        "",
        "   ",
        "not json",
        "{\"mode\":}",
        "{\"mode\":\"ask\"",
        "{\"mode\":\"ask\"} {}", /* two values */
        "{\"mode\":\"ask\"}x",
        "[]",
        "[{\"mode\":\"ask\"}]",
        "\"{}\"",
        "42",
        "null",
        "true",
        "{\"s\":\"\xff\"}", /* not UTF-8 */
        "{'mode':'ask'}",
        over,
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = acp_store_set_state(f->st, "a", 0, bad[i]);
        if (rc != ACP_EINVAL) print_error("state %zu (%.40s) accepted\n", i, bad[i]);
        assert_int_equal(rc, ACP_EINVAL);
        assert_string_not_equal(acp_error_last()->message, "");
        assert_state(f->st, "a", kept);
    }
    free(over);
    /* a bad id is refused before anything else */
    assert_int_equal(acp_store_set_state(f->st, NULL, 0, "{}"), ACP_EINVAL);
    /* an invalid text for a session that does not exist: the text is what is wrong */
    assert_int_equal(acp_store_set_state(f->st, "ghost", 0, "[]"), ACP_EINVAL);
    assert_state(f->st, "a", kept);
}

/* State is durable: it survives closing the store, and another handle (process) sees it. */
static void t_state_reopen(void **state)
{
    fx *f = *state;
    mk(f->st, "a", "/w", "2026-01-01T00:00:00.000Z");
    mk(f->st, "b", "/w", "2026-01-01T00:00:00.000Z");
    assert_int_equal(acp_store_set_state(f->st, "a", 0, "{\"mode\":\"code\"}"), 0);
    acp_store *other = open_where(f->where);
    assert_state(other, "a", "{\"mode\":\"code\"}");
    assert_int_equal(acp_store_set_state(other, "b", 0, "{\"mode\":\"plan\"}"), 0);
    acp_store_close(other);
    acp_store_close(f->st);
    f->st = NULL; /* teardown's, should the open fail */
    f->st = open_where(f->where);
    assert_state(f->st, "a", "{\"mode\":\"code\"}");
    assert_state(f->st, "b", "{\"mode\":\"plan\"}");
    /* and so does clearing it */
    assert_int_equal(acp_store_set_state(f->st, "a", 0, NULL), 0);
    acp_store_close(f->st);
    f->st = NULL;
    f->st = open_where(f->where);
    assert_state(f->st, "a", NULL);
    assert_state(f->st, "b", "{\"mode\":\"plan\"}");
}

/* Listing leaves state out (on_row asserts it is NULL) on every kind of page: all sessions
 * or one cwd, first page or after a cursor. */
static void t_state_not_listed(void **state)
{
    fx *f = *state;
    mk_n(f->st, 4, "{\"mode\":\"code\"}");
    for (int k = 0; k < 2; k++) {
        const char *cwd = k ? "/w" : NULL;
        page p = {0};
        char *next = NULL, *end = NULL;
        assert_int_equal(acp_store_list(f->st, cwd, NULL, 2, on_row, &p, &next), 0);
        assert_non_null(next);
        assert_int_equal(acp_store_list(f->st, cwd, next, 2, on_row, &p, &end), 0);
        assert_int_equal(p.n, 4);
        assert_null(end);
        free(next);
        page_free(&p);
    }
    assert_state(f->st, "s0", "{\"mode\":\"code\"}"); /* still stored */
}

/* Delete takes the state with the session: an id used again starts with none. */
static void t_state_delete(void **state)
{
    fx *f = *state;
    mk(f->st, "a", "/w", "2026-01-01T00:00:00.000Z");
    mk(f->st, "b", "/w", "2026-01-01T00:00:00.000Z");
    assert_int_equal(acp_store_set_state(f->st, "a", 0, "{\"mode\":\"a\"}"), 0);
    assert_int_equal(acp_store_set_state(f->st, "b", 0, "{\"mode\":\"b\"}"), 0);
    assert_int_equal(acp_store_delete(f->st, "a"), 0);
    acp_store_session out = ACP_STORE_SESSION_INIT;
    assert_int_equal(acp_store_get(f->st, "a", &out), ACP_ENOTFOUND);
    assert_state(f->st, "b", "{\"mode\":\"b\"}");
    mk(f->st, "a", "/w", "2026-01-02T00:00:00.000Z");
    assert_state(f->st, "a", NULL);
}

/* --- leases ------------------------------------------------------------------------------ */

#define DAY_MS (24u * 3600 * 1000)

/* Waits out a lease of ttl_ms by the database's clock (the test's own clock is no proof, so
 * ask the store: another holder can take it once it is free). */
static void wait_expired(acp_store *st, const char *id, const char *other)
{
    for (;;) {
        int64_t fence = 0;
        acp_store_lease_busy busy;
        int rc = acp_store_lease_acquire(st, id, other, DAY_MS, NULL, &fence, &busy);
        if (rc == 0) {
            assert_int_equal(acp_store_lease_release(st, id, fence), 0);
            return;
        }
        assert_int_equal(rc, ACP_EBUSY);
        struct timespec ts = {0, (long)(busy.wait_ms + 1) * 1000000};
        nanosleep(&ts, NULL);
    }
}

static int64_t take(acp_store *st, const char *id, const char *holder, unsigned ttl_ms)
{
    int64_t fence = 0;
    assert_int_equal(acp_store_lease_acquire(st, id, holder, ttl_ms, NULL, &fence, NULL), 0);
    assert_true(fence > 0);
    return fence;
}

static int replayed(acp_store *st, const char *id)
{
    got g = {0};
    replay_all(st, id, &g);
    int n = g.n;
    got_free(&g);
    return n;
}

/* One holder at a time: a fresh lease refuses another holder (another handle: another
 * process) with how long it has left; its own holder gets it again under the same epoch. */
static void t_lease_acquire(void **state)
{
    fx *f = *state;
    acp_store *o = open_where(f->where);
    mk(f->st, "s", "/w", "2026-01-01T00:00:00.000Z");
    int64_t f1 = take(f->st, "s", "A", 60000), fence = -1;
    acp_store_lease_busy busy;
    assert_int_equal(acp_store_lease_acquire(o, "s", "B", 60000, NULL, &fence, &busy), ACP_EBUSY);
    assert_int_equal(fence, 0);
    assert_true(busy.wait_ms > 0 && busy.wait_ms <= 60000);
    assert_string_equal(busy.holder, "A");
    assert_non_null(strstr(acp_error_last()->message, "s"));
    assert_int_equal(acp_store_lease_acquire(o, "s", "B", 60000, NULL, &fence, NULL), ACP_EBUSY);
    assert_int_equal(take(o, "s", "A", 60000), f1); /* A's again: a renewal */

    assert_int_equal(acp_store_lease_acquire(f->st, "nope", "A", 1000, NULL, &fence, &busy),
                     ACP_ENOTFOUND);
    char big[ACP_STORE_HOLDER_MAX + 2];
    memset(big, 'h', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    assert_int_equal(acp_store_lease_acquire(f->st, "s", big, 1000, NULL, &fence, &busy),
                     ACP_EINVAL);
    big[ACP_STORE_HOLDER_MAX] = '\0'; /* the longest accepted, but not the holder */
    assert_int_equal(acp_store_lease_acquire(f->st, "s", big, 1000, NULL, &fence, &busy),
                     ACP_EBUSY);
    assert_int_equal(acp_store_lease_acquire(f->st, "s", "", 1000, NULL, &fence, &busy),
                     ACP_EINVAL);
    assert_int_equal(acp_store_lease_acquire(f->st, "s", NULL, 1000, NULL, &fence, &busy),
                     ACP_EINVAL);
    assert_int_equal(acp_store_lease_acquire(f->st, "s", "A", 0, NULL, &fence, &busy), ACP_EINVAL);
    assert_int_equal(acp_store_lease_acquire(f->st, "s", "A", DAY_MS + 1, NULL, &fence, &busy),
                     ACP_EINVAL);
    assert_int_equal(acp_store_lease_renew(f->st, "s", f1, 0), ACP_EINVAL);
    assert_int_equal(acp_store_lease_renew(f->st, "s", 0, 1000), ACP_EINVAL);
    assert_int_equal(acp_store_lease_release(f->st, "s", -1), ACP_EINVAL);

    /* a holder known dead: its fresh lease is free to take, with a new epoch; naming another
     * holder dead changes nothing */
    assert_int_equal(acp_store_lease_acquire(o, "s", "B", 60000, "C", &fence, &busy), ACP_EBUSY);
    assert_int_equal(acp_store_lease_acquire(o, "s", "B", 60000, "", &fence, &busy), ACP_EINVAL);
    assert_int_equal(acp_store_lease_acquire(o, "s", "B", 60000, "A", &fence, &busy), 0);
    assert_true(fence > f1);
    assert_int_equal(acp_store_set_state(f->st, "s", f1, "{}"), ACP_ESTALE);
    acp_store_close(o);
}

/* Every write carries its fence, and only the current epoch's (or none) is stored. */
static void t_lease_fence(void **state)
{
    fx *f = *state;
    mk(f->st, "s", "/w", "2026-01-01T00:00:00.000Z");
    int64_t f1 = take(f->st, "s", "A", 60000), stale = f1 + 1;
    assert_int_equal(acp_store_append(f->st, "s", f1, "{\"a\":1}", 7), 0);
    assert_int_equal(acp_store_commit(f->st, NULL), 0);
    assert_int_equal(acp_store_set_info(f->st, "s", f1, true, "t", NULL), 0);
    assert_int_equal(acp_store_set_roots(f->st, "s", f1, "/x", "[]"), 0);
    assert_int_equal(acp_store_set_state(f->st, "s", f1, "{\"m\":1}"), 0);
    append(f->st, "s", "{\"none\":1}"); /* fence 0: no lease asked for */
    assert_int_equal(acp_store_commit(f->st, NULL), 0);

    assert_int_equal(acp_store_set_info(f->st, "s", stale, true, "u", NULL), ACP_ESTALE);
    assert_int_equal(acp_store_set_roots(f->st, "s", stale, "/y", "[]"), ACP_ESTALE);
    assert_int_equal(acp_store_set_state(f->st, "s", stale, "{\"m\":2}"), ACP_ESTALE);
    assert_int_equal(acp_store_set_info(f->st, "s", -1, true, "u", NULL), ACP_EINVAL);
    assert_int_equal(acp_store_append(f->st, "s", stale, "{\"a\":2}", 7), 0);
    assert_int_equal(acp_store_commit(f->st, NULL), ACP_ESTALE);
    int64_t fence = 0;
    int why = 0;
    assert_string_equal(acp_store_gone(f->st, 0, &fence, &why), "s");
    assert_int_equal(fence, stale);
    assert_int_equal(why, ACP_ESTALE);
    assert_null(acp_store_gone(f->st, 1, NULL, NULL));
    acp_store_session out = ACP_STORE_SESSION_INIT;
    assert_int_equal(acp_store_get(f->st, "s", &out), 0);
    assert_string_equal(out.title, "t");
    assert_string_equal(out.cwd, "/x");
    assert_string_equal(out.state, "{\"m\":1}");
    acp_store_session_clear(&out);
    assert_int_equal(replayed(f->st, "s"), 2);
}

/* A holder that stops renewing loses the lease once it expires: another takes it with a new
 * epoch, and from then on the old holder's writes store nothing, its renewal says so, and in
 * one batch shared by both (one handle, two holders) only the new holder's appends count. */
static void t_lease_takeover(void **state)
{
    fx *f = *state;
    acp_store *o = open_where(f->where);
    mk(f->st, "s", "/w", "2026-01-01T00:00:00.000Z");
    mk(f->st, "t", "/w", "2026-01-01T00:00:00.000Z");
    int64_t f1 = take(f->st, "s", "A", 5), ft = take(f->st, "t", "A", 60000);
    wait_expired(o, "s", "probe");
    /* expired and free again, but not taken: the old holder may renew and go on */
    assert_int_equal(acp_store_lease_renew(f->st, "s", f1, 5), ACP_ESTALE); /* the probe's */
    int64_t f2 = take(o, "s", "B", 60000);
    assert_true(f2 > f1);
    assert_int_equal(acp_store_lease_renew(f->st, "s", f1, 60000), ACP_ESTALE);
    assert_int_equal(acp_store_set_state(f->st, "s", f1, "{}"), ACP_ESTALE);

    assert_int_equal(acp_store_append(f->st, "s", f1, "{\"A\":1}", 7), 0);
    assert_int_equal(acp_store_append(f->st, "t", ft, "{\"A\":2}", 7), 0);
    assert_int_equal(acp_store_append(f->st, "s", f2, "{\"B\":1}", 7), 0);
    assert_int_equal(acp_store_append(f->st, "s", f1, "{\"A\":3}", 7), 0);
    assert_int_equal(acp_store_commit(f->st, NULL), ACP_ESTALE);
    int64_t fence = 0;
    int why = 0;
    assert_string_equal(acp_store_gone(f->st, 0, &fence, &why), "s");
    assert_int_equal(fence, f1);
    assert_int_equal(why, ACP_ESTALE);
    assert_null(acp_store_gone(f->st, 1, NULL, NULL));
    got g = {0};
    replay_all(o, "s", &g);
    assert_int_equal(g.n, 1);
    assert_string_equal(g.json[0], "{\"B\":1}");
    got_free(&g);
    assert_int_equal(replayed(o, "t"), 1);

    /* the new holder renews; the old cannot get it back while it is fresh */
    assert_int_equal(acp_store_lease_renew(o, "s", f2, 60000), 0);
    acp_store_lease_busy busy;
    assert_int_equal(acp_store_lease_acquire(f->st, "s", "A", 60000, NULL, &fence, &busy),
                     ACP_EBUSY);
    acp_store_close(o);
}

/* Taking over (acp_store_lease_take): an idle fresh lease goes to the taker with a new epoch,
 * fencing the old holder's writes at once; one marked busy refuses it until marked idle again,
 * released, or expired; the mark is the holder's renewal and fails ACP_ESTALE once taken. */
static void t_lease_take(void **state)
{
    fx *f = *state;
    acp_store *o = open_where(f->where);
    mk(f->st, "s", "/w", "2026-01-01T00:00:00.000Z");
    int64_t f1 = take(f->st, "s", "A", 60000), fence = -1;
    acp_store_lease_busy busy;
    /* plain acquire still waits for a fresh lease, idle or not */
    assert_int_equal(acp_store_lease_acquire(o, "s", "B", 60000, NULL, &fence, NULL), ACP_EBUSY);
    assert_int_equal(acp_store_lease_mark(f->st, "s", f1, 60000, true), 0);
    assert_int_equal(acp_store_lease_take(o, "s", "B", 60000, NULL, &fence, &busy), ACP_EBUSY);
    assert_int_equal(fence, 0);
    assert_string_equal(busy.holder, "A");
    assert_true(busy.wait_ms > 0 && busy.wait_ms <= 60000);
    /* renewing keeps the mark; the holder's own take keeps it too */
    assert_int_equal(acp_store_lease_renew(f->st, "s", f1, 60000), 0);
    assert_int_equal(acp_store_lease_take(o, "s", "B", 60000, NULL, &fence, NULL), ACP_EBUSY);
    int64_t again = 0;
    assert_int_equal(acp_store_lease_take(f->st, "s", "A", 60000, NULL, &again, NULL), 0);
    assert_int_equal(again, f1);
    assert_int_equal(acp_store_lease_take(o, "s", "B", 60000, NULL, &fence, NULL), ACP_EBUSY);
    /* a dead holder's is taken even busy */
    assert_int_equal(acp_store_lease_take(o, "s", "B", 60000, "A", &fence, NULL), 0);
    assert_true(fence > f1);
    int64_t f2 = fence;
    assert_int_equal(acp_store_lease_mark(f->st, "s", f1, 60000, false), ACP_ESTALE);
    /* B's lease starts idle: A takes it back at once, B is fenced */
    assert_int_equal(acp_store_lease_take(f->st, "s", "A", 60000, NULL, &fence, NULL), 0);
    assert_true(fence > f2);
    int64_t f3 = fence;
    assert_int_equal(acp_store_set_state(o, "s", f2, "{}"), ACP_ESTALE);
    assert_int_equal(acp_store_lease_check(o, "s", f2), ACP_ESTALE);
    assert_int_equal(acp_store_lease_check(o, "s", f3), 0);
    assert_int_equal(acp_store_lease_check(o, "nope", f3), ACP_ENOTFOUND);
    assert_int_equal(acp_store_lease_mark(o, "s", f2, 60000, true), ACP_ESTALE);
    assert_int_equal(acp_store_lease_renew(o, "s", f2, 60000), ACP_ESTALE);
    /* busy, then idle: taken */
    assert_int_equal(acp_store_lease_mark(f->st, "s", f3, 60000, true), 0);
    assert_int_equal(acp_store_lease_take(o, "s", "B", 60000, NULL, &fence, NULL), ACP_EBUSY);
    assert_int_equal(acp_store_lease_mark(f->st, "s", f3, 60000, false), 0);
    assert_int_equal(acp_store_lease_take(o, "s", "B", 60000, NULL, &fence, NULL), 0);
    int64_t f4 = fence;
    /* released while busy: the next holder starts idle */
    assert_int_equal(acp_store_lease_mark(o, "s", f4, 60000, true), 0);
    assert_int_equal(acp_store_lease_release(o, "s", f4), 0);
    int64_t f5 = take(f->st, "s", "A", 60000);
    assert_int_equal(acp_store_lease_take(o, "s", "B", 60000, NULL, &fence, NULL), 0);
    assert_true(fence > f5);
    /* expired while busy: taken */
    assert_int_equal(acp_store_lease_mark(o, "s", fence, 1, true), 0);
    wait_expired(f->st, "s", "C");
    assert_int_equal(acp_store_lease_take(f->st, "s", "A", 60000, NULL, &fence, NULL), 0);
    assert_int_equal(acp_store_lease_take(o, "nope", "B", 1000, NULL, &fence, NULL), ACP_ENOTFOUND);
    assert_int_equal(acp_store_lease_mark(o, "nope", 1, 1000, true), ACP_ENOTFOUND);
    assert_int_equal(acp_store_lease_mark(o, "s", 0, 1000, true), ACP_EINVAL);
    assert_int_equal(acp_store_lease_take(o, "s", "", 1000, NULL, &fence, NULL), ACP_EINVAL);
    acp_store_close(o);
}

/* A renewal extends the lease from now, also one that had expired while nobody took it. */
static void t_lease_renew(void **state)
{
    fx *f = *state;
    mk(f->st, "s", "/w", "2026-01-01T00:00:00.000Z");
    int64_t f1 = take(f->st, "s", "A", 5);
    struct timespec ts = {0, 30 * 1000000};
    nanosleep(&ts, NULL); /* past its 5 ms (nobody else can have taken it: it is ours) */
    assert_int_equal(acp_store_lease_renew(f->st, "s", f1, 60000), 0);
    int64_t fence = 0;
    acp_store_lease_busy busy;
    assert_int_equal(acp_store_lease_acquire(f->st, "s", "B", 60000, NULL, &fence, &busy),
                     ACP_EBUSY);
    assert_true(busy.wait_ms > 5);
    assert_int_equal(acp_store_lease_renew(f->st, "nope", f1, 1000), ACP_ENOTFOUND);
    assert_int_equal(acp_store_append(f->st, "s", f1, "{}", 2), 0);
    assert_int_equal(acp_store_commit(f->st, NULL), 0);
}

/* Release frees the lease at once (no TTL to wait) and makes the released fence stale. */
static void t_lease_release(void **state)
{
    fx *f = *state;
    acp_store *o = open_where(f->where);
    mk(f->st, "s", "/w", "2026-01-01T00:00:00.000Z");
    int64_t f1 = take(f->st, "s", "A", DAY_MS);
    assert_int_equal(acp_store_lease_release(f->st, "s", f1), 0);
    assert_int_equal(acp_store_lease_release(f->st, "s", f1), 0); /* not ours: nothing to do */
    assert_int_equal(acp_store_set_state(f->st, "s", f1, "{}"), ACP_ESTALE);
    assert_int_equal(acp_store_lease_renew(f->st, "s", f1, 1000), ACP_ESTALE);
    int64_t f2 = take(o, "s", "B", DAY_MS);
    assert_true(f2 > f1);
    assert_int_equal(acp_store_lease_release(f->st, "s", f1), 0); /* stale: B's stays */
    int64_t fence = 0;
    acp_store_lease_busy busy;
    assert_int_equal(acp_store_lease_acquire(f->st, "s", "A", 1000, NULL, &fence, &busy),
                     ACP_EBUSY);
    assert_int_equal(acp_store_lease_release(f->st, "nope", 3), 0);
    /* the same holder after a release: a new epoch, the released one stays stale */
    assert_int_equal(acp_store_lease_release(o, "s", f2), 0);
    int64_t f3 = take(o, "s", "B", DAY_MS);
    assert_true(f3 > f2);
    assert_int_equal(acp_store_set_state(o, "s", f2, "{}"), ACP_ESTALE);
    assert_int_equal(acp_store_lease_check(o, "s", f2), ACP_ESTALE);
    assert_int_equal(acp_store_lease_check(o, "s", f3), 0);
    assert_int_equal(acp_store_lease_check(o, "nope", f3), ACP_ENOTFOUND);
    acp_store_close(o);
}

/* A session created with its lease: held from the first statement, epoch 1, and otherwise
 * like any other. */
static void t_lease_create(void **state)
{
    fx *f = *state;
    acp_store_session s = {
        .struct_size = sizeof(acp_store_session), .id = "s", .cwd = "/w", .add_dirs = "[]"};
    acp_store_now(s.created_at);
    acp_store_now(s.updated_at);
    int64_t fence = -1;
    assert_int_equal(acp_store_create_leased(f->st, &s, "A", 0, &fence), ACP_EINVAL);
    assert_int_equal(fence, 0);
    assert_int_equal(acp_store_create_leased(f->st, &s, "", 1000, &fence), ACP_EINVAL);
    assert_int_equal(acp_store_create_leased(f->st, &s, "A", 60000, &fence), 0);
    assert_int_equal(fence, 1);
    assert_int_equal(acp_store_create_leased(f->st, &s, "B", 60000, &fence), ACP_EINVAL);
    acp_store_lease_busy busy;
    assert_int_equal(acp_store_lease_acquire(f->st, "s", "B", 1000, NULL, &fence, &busy),
                     ACP_EBUSY);
    assert_string_equal(busy.holder, "A");
    assert_int_equal(acp_store_lease_acquire(f->st, "s", "A", 1000, NULL, &fence, NULL), 0);
    assert_int_equal(fence, 1);
    assert_int_equal(acp_store_append(f->st, "s", 1, "{}", 2), 0);
    assert_int_equal(acp_store_commit(f->st, NULL), 0);
    assert_int_equal(replayed(f->st, "s"), 1);
    /* a plain create takes no lease: anyone may */
    s.id = "t";
    assert_int_equal(acp_store_create(f->st, &s), 0);
    assert_int_equal(acp_store_lease_acquire(f->st, "t", "B", 1000, NULL, &fence, NULL), 0);
    assert_int_equal(fence, 1);
}

/* Delete wins over a lease: the holder's next write, commit or renewal finds the session
 * gone (not stale), and nothing brings it back. */
static void t_lease_delete(void **state)
{
    fx *f = *state;
    acp_store *o = open_where(f->where);
    mk(f->st, "s", "/w", "2026-01-01T00:00:00.000Z");
    int64_t f1 = take(f->st, "s", "A", DAY_MS);
    assert_int_equal(acp_store_delete(o, "s"), 0);
    assert_int_equal(acp_store_set_state(f->st, "s", f1, "{}"), ACP_ENOTFOUND);
    assert_int_equal(acp_store_lease_renew(f->st, "s", f1, 1000), ACP_ENOTFOUND);
    assert_int_equal(acp_store_append(f->st, "s", f1, "{}", 2), 0);
    assert_int_equal(acp_store_commit(f->st, NULL), ACP_ENOTFOUND);
    int why = 0;
    assert_string_equal(acp_store_gone(f->st, 0, NULL, &why), "s");
    assert_int_equal(why, ACP_ENOTFOUND);
    assert_int_equal(acp_store_lease_release(f->st, "s", f1), 0);
    acp_store_session out = ACP_STORE_SESSION_INIT;
    assert_int_equal(acp_store_get(o, "s", &out), ACP_ENOTFOUND);
    acp_store_close(o);
}

/* --- subagent sessions (unstable): the parent column ---------------------------------- */

static void mk_child(acp_store *st, const char *id, const char *parent, const char *t)
{
    acp_store_session s = {.struct_size = sizeof(acp_store_session),
                           .id = (char *)id,
                           .cwd = (char *)"/w",
                           .add_dirs = (char *)"[]",
                           .parent = (char *)parent};
    memcpy(s.created_at, t, ACP_STORE_TIME_LEN + 1);
    memcpy(s.updated_at, t, ACP_STORE_TIME_LEN + 1);
    assert_int_equal(acp_store_create(st, &s), 0);
}

static void t_children(void **state)
{
    fx *f = *state;
    mk(f->st, "p", "/w", "2026-01-01T00:00:00.000Z");
    mk(f->st, "other", "/w", "2026-01-01T00:00:00.000Z");
    /* made out of id order: listed oldest first */
    mk_child(f->st, "c2", "p", "2026-01-01T00:00:02.000Z");
    mk_child(f->st, "c1", "p", "2026-01-01T00:00:01.000Z");
    mk_child(f->st, "g1", "c1", "2026-01-01T00:00:03.000Z");
    acp_store_session out = ACP_STORE_SESSION_INIT;
    assert_int_equal(acp_store_get(f->st, "c1", &out), 0);
    assert_string_equal(out.parent, "p");
    acp_store_session_clear(&out);
    assert_int_equal(acp_store_get(f->st, "p", &out), 0);
    assert_null(out.parent);
    acp_store_session_clear(&out);
    /* a 1.0-sized struct gets no parent member, and nothing leaks */
    struct {
        acp_store_session s;
    } small;
    memset(&small, 0, sizeof small);
    small.s.struct_size = offsetof(acp_store_session, parent);
    assert_int_equal(acp_store_get(f->st, "c1", &small.s), 0);
    acp_store_session_clear(&small.s);

    page p = {0};
    assert_int_equal(acp_store_children(f->st, "p", on_row, &p), 0);
    assert_int_equal(p.n, 2);
    assert_string_equal(p.id[0], "c1");
    assert_string_equal(p.id[1], "c2");
    page_free(&p);
    assert_int_equal(acp_store_children(f->st, "other", on_row, &p), 0);
    assert_int_equal(p.n, 0);
    assert_int_equal(acp_store_children(f->st, "nobody", on_row, &p), 0);
    assert_int_equal(p.n, 0);

    /* a session cannot be its own parent; an empty parent is refused */
    acp_store_session bad = {.struct_size = sizeof bad,
                             .id = (char *)"x",
                             .cwd = (char *)"/w",
                             .add_dirs = (char *)"[]",
                             .parent = (char *)"x"};
    stamp(bad.created_at, 1);
    stamp(bad.updated_at, 1);
    assert_int_equal(acp_store_create(f->st, &bad), ACP_EINVAL);
    bad.parent = (char *)"";
    assert_int_equal(acp_store_create(f->st, &bad), ACP_EINVAL);
}

/* Deleting a parent deletes its children and theirs, histories included; a child's delete
 * leaves the parent. */
static void t_delete_tree(void **state)
{
    fx *f = *state;
    mk(f->st, "p", "/w", "2026-01-01T00:00:00.000Z");
    mk(f->st, "keep", "/w", "2026-01-01T00:00:00.000Z");
    mk_child(f->st, "c1", "p", "2026-01-01T00:00:01.000Z");
    mk_child(f->st, "c2", "p", "2026-01-01T00:00:02.000Z");
    mk_child(f->st, "g1", "c1", "2026-01-01T00:00:03.000Z");
    mk_child(f->st, "k1", "keep", "2026-01-01T00:00:03.000Z");
    append(f->st, "c1", "{\"a\":1}");
    append(f->st, "g1", "{\"b\":1}");
    append(f->st, "k1", "{\"c\":1}");
    assert_int_equal(acp_store_commit(f->st, NULL), 0);
    assert_int_equal(acp_store_delete(f->st, "c2"), 0);
    acp_store_session out = ACP_STORE_SESSION_INIT;
    assert_int_equal(acp_store_get(f->st, "p", &out), 0);
    acp_store_session_clear(&out);
    assert_int_equal(acp_store_delete(f->st, "p"), 0);
    const char *gone[] = {"p", "c1", "g1"};
    for (size_t i = 0; i < 3; i++) {
        got g = {0};
        int64_t last;
        bool done;
        assert_int_equal(acp_store_get(f->st, gone[i], &out), ACP_ENOTFOUND);
        assert_int_equal(acp_store_replay(f->st, gone[i], 0, 0, collect, &g, &last, &done),
                         ACP_ENOTFOUND);
    }
    got g = {0};
    replay_all(f->st, "k1", &g);
    assert_int_equal(g.n, 1);
    got_free(&g);
    /* a new session reusing a deleted child's id starts empty */
    mk(f->st, "g1", "/w", "2026-01-05T00:00:00.000Z");
    replay_all(f->st, "g1", &g);
    assert_int_equal(g.n, 0);
}

/* --- archive and system prompt (the unstable session/archive and systemPrompt) ---------- */

/* Every page of a filtered list, limit per page, into p; asserts the cursors chain. */
static void list_all(acp_store *st, const char *cwd, int archived, unsigned limit, page *p)
{
    char *cursor = NULL, *next = NULL;
    do {
        int before = p->n;
        assert_int_equal(
            acp_store_list_archived(st, cwd, archived, cursor, limit, on_row, p, &next), 0);
        assert_true(p->n - before <= (int)limit);
        free(cursor);
        cursor = next;
        next = NULL;
    } while (cursor);
}

static void t_archive_filter(void **state)
{
    fx *f = *state;
    mk_n(f->st, 11, NULL); /* s0 .. s10 in /w, s10 newest */
    mk(f->st, "other", "/o", "2026-03-01T00:00:00.000Z");
    char id[16];
    for (int i = 1; i < 11; i += 2) {
        snprintf(id, sizeof id, "s%d", i);
        assert_int_equal(acp_store_set_archived(f->st, id, true), 0);
    }
    assert_int_equal(acp_store_set_archived(f->st, "s1", true), 0); /* idempotent */
    acp_store_session row = ACP_STORE_SESSION_INIT;
    assert_int_equal(acp_store_get(f->st, "s1", &row), 0);
    assert_true(row.archived);
    char t[ACP_STORE_TIME_LEN + 1];
    stamp(t, 1);
    assert_string_equal(row.updated_at, t); /* archiving is not activity */
    acp_store_session_clear(&row);

    /* Each filter, paged by 2 (and in one page): every session once, in list order. */
    static const int want_n[] = {7, 12, 5};
    for (int a = 0; a < 3; a++)
        for (unsigned limit = 1; limit <= 50; limit += 49) {
            page p = {0};
            list_all(f->st, NULL, a, limit, &p);
            assert_int_equal(p.n, want_n[a]);
            for (int i = 0; i < p.n; i++) {
                if (a == ACP_STORE_ARCHIVED_EXCLUDE) assert_false(p.archived[i]);
                if (a == ACP_STORE_ARCHIVED_ONLY) assert_true(p.archived[i]);
                if (i) assert_true(strcmp(p.updated[i - 1], p.updated[i]) >= 0);
                int k = p.id[i][0] == 's' ? atoi(p.id[i] + 1) : -1;
                if (k >= 0) assert_int_equal(p.archived[i], k % 2 == 1);
            }
            page_free(&p);
        }
    /* with cwd */
    page p = {0};
    list_all(f->st, "/w", ACP_STORE_ARCHIVED_EXCLUDE, 2, &p);
    assert_int_equal(p.n, 6);
    assert_string_equal(p.id[0], "s10");
    assert_string_equal(p.id[5], "s0");
    page_free(&p);
    list_all(f->st, "/o", ACP_STORE_ARCHIVED_ONLY, 2, &p);
    assert_int_equal(p.n, 0);
    /* acp_store_list (1.0) lists them all */
    char *next = NULL;
    assert_int_equal(acp_store_list(f->st, NULL, NULL, 50, on_row, &p, &next), 0);
    assert_int_equal(p.n, 12);
    page_free(&p);

    /* unarchive, idempotent too */
    assert_int_equal(acp_store_set_archived(f->st, "s1", false), 0);
    assert_int_equal(acp_store_set_archived(f->st, "s1", false), 0);
    assert_int_equal(acp_store_set_archived(f->st, "s0", false), 0);
    list_all(f->st, NULL, ACP_STORE_ARCHIVED_ONLY, 50, &p);
    assert_int_equal(p.n, 4);
    page_free(&p);

    /* bad input */
    assert_int_equal(acp_store_set_archived(f->st, "nope", true), ACP_ENOTFOUND);
    assert_int_equal(acp_store_list_archived(f->st, NULL, 3, NULL, 5, on_row, &p, &next),
                     ACP_EINVAL);
    assert_int_equal(acp_store_list_archived(f->st, NULL, -1, NULL, 5, on_row, &p, &next),
                     ACP_EINVAL);
    assert_null(next);
    assert_int_equal(p.n, 0);

    /* a deleted session stays deleted, archived or not */
    assert_int_equal(acp_store_delete(f->st, "s3"), 0);
    assert_int_equal(acp_store_set_archived(f->st, "s3", false), ACP_ENOTFOUND);
}

/* Created archived, and kept across a reopen (another handle). */
static void t_archive_create_reopen(void **state)
{
    fx *f = *state;
    acp_store_session s = {.struct_size = sizeof(acp_store_session),
                           .id = (char *)"a",
                           .cwd = (char *)"/w",
                           .add_dirs = (char *)"[]",
                           .archived = true};
    acp_store_now(s.created_at);
    memcpy(s.updated_at, s.created_at, sizeof s.updated_at);
    assert_int_equal(acp_store_create(f->st, &s), 0);
    acp_store *other = open_where(f->where);
    page p = {0};
    list_all(other, NULL, ACP_STORE_ARCHIVED_ONLY, 10, &p);
    assert_int_equal(p.n, 1);
    assert_true(p.archived[0]);
    page_free(&p);
    list_all(other, NULL, ACP_STORE_ARCHIVED_EXCLUDE, 10, &p);
    assert_int_equal(p.n, 0);
    acp_store_close(other);
}

static void t_system_prompt(void **state)
{
    fx *f = *state;
    const char *sp =
        "{\"mode\":\"append\",\"content\":[{\"type\":\"text\",\"text\":\"Be brief\"}]}";
    acp_store_session s = {.struct_size = sizeof(acp_store_session),
                           .id = (char *)"p",
                           .cwd = (char *)"/w",
                           .add_dirs = (char *)"[]",
                           .system_prompt = (char *)sp};
    acp_store_now(s.created_at);
    memcpy(s.updated_at, s.created_at, sizeof s.updated_at);
    int64_t fence = 0;
    assert_int_equal(acp_store_create_leased(f->st, &s, "h1", 60000, &fence), 0);
    acp_store_session row = ACP_STORE_SESSION_INIT;
    assert_int_equal(acp_store_get(f->st, "p", &row), 0);
    assert_string_equal(row.system_prompt, sp);
    assert_false(row.archived);
    acp_store_session_clear(&row);

    const char *sp2 = "{\"mode\":\"override\",\"content\":[]}";
    assert_int_equal(acp_store_set_system_prompt(f->st, "p", fence, sp2), 0);
    assert_int_equal(acp_store_set_system_prompt(f->st, "p", fence + 1, sp), ACP_ESTALE);
    acp_store *other = open_where(f->where);
    assert_int_equal(acp_store_get(other, "p", &row), 0);
    assert_string_equal(row.system_prompt, sp2);
    acp_store_session_clear(&row);
    acp_store_close(other);

    /* not listed */
    page p = {0};
    list_all(f->st, NULL, ACP_STORE_ARCHIVED_INCLUDE, 10, &p);
    assert_int_equal(p.n, 1);
    page_free(&p);

    /* cleared; bad input */
    assert_int_equal(acp_store_set_system_prompt(f->st, "p", 0, NULL), 0);
    assert_int_equal(acp_store_get(f->st, "p", &row), 0);
    assert_null(row.system_prompt);
    acp_store_session_clear(&row);
    assert_int_equal(acp_store_set_system_prompt(f->st, "p", 0, "[1]"), ACP_EINVAL);
    assert_int_equal(acp_store_set_system_prompt(f->st, "p", 0, "{"), ACP_EINVAL);
    assert_int_equal(acp_store_set_system_prompt(f->st, "nope", 0, sp), ACP_ENOTFOUND);
    s.id = (char *)"q";
    s.system_prompt = (char *)"\"text\"";
    assert_int_equal(acp_store_create(f->st, &s), ACP_EINVAL);
    assert_int_equal(acp_store_get(f->st, "q", &row), ACP_ENOTFOUND);
    acp_store_session_clear(&row);

    /* A 1.0 program's struct (acp_store_session as 1.0 declared it, smaller than ours): get
     * and clear touch only its bytes (ASan watches the heap block's end). */
    struct session_1_0 {
        size_t struct_size;
        char *id, *cwd, *add_dirs, *title, *state;
        char created_at[ACP_STORE_TIME_LEN + 1];
        char updated_at[ACP_STORE_TIME_LEN + 1];
    } *old = calloc(1, sizeof *old);
    assert_non_null(old);
    old->struct_size = sizeof *old;
    assert_true(sizeof *old < sizeof(acp_store_session));
    assert_int_equal(acp_store_set_system_prompt(f->st, "p", 0, sp), 0);
    assert_int_equal(acp_store_get(f->st, "p", (acp_store_session *)(void *)old), 0);
    assert_string_equal(old->id, "p");
    acp_store_session_clear((acp_store_session *)(void *)old);
    assert_int_equal(old->struct_size, sizeof *old);
    assert_null(old->id);
    free(old);
}

int store_contract_run(const store_contract_env *env)
{
    void *e = (void *)env;
#define T(fn) cmocka_unit_test_prestate_setup_teardown(fn, store_fx_setup, store_fx_teardown, e)
    const struct CMUnitTest tests[] = {
        T(t_create_get),
        T(t_set_info),
        T(t_set_roots),
        T(t_append_commit_replay),
        T(t_batch_many_sessions),
        T(t_replay_chunks),
        T(t_empty_commit),
        T(t_append_deleted),
        T(t_replay_deleted),
        T(t_list_order),
        T(t_list_cwd),
        T(t_last_page),
        T(t_pagination_churn),
        T(t_bad_cursors),
        T(t_delete),
        T(t_two_handles),
        T(t_errmsg),
        T(t_longest_id),
        T(t_state_set_get),
        T(t_state_missing),
        T(t_state_invalid),
        T(t_state_reopen),
        T(t_state_not_listed),
        T(t_state_delete),
        T(t_lease_acquire),
        T(t_lease_fence),
        T(t_lease_takeover),
        T(t_lease_take),
        T(t_lease_renew),
        T(t_lease_release),
        T(t_lease_delete),
        T(t_lease_create),
        T(t_archive_filter),
        T(t_archive_create_reopen),
        T(t_system_prompt),
        T(t_children),
        T(t_delete_tree),
    };
#undef T
    return _cmocka_run_group_tests(env->name, tests, sizeof tests / sizeof tests[0], NULL, NULL);
}
