/* SPDX-License-Identifier: Apache-2.0 */
/* The store contract for acp_store_fork (see contract.h): a fork's history is its source's up to
 * the fork, then its own; whatever happens to either later (appends, deletes, forks of forks)
 * never reaches the other. SQLite shares the source's rows (sessions.base), PostgreSQL copies
 * them: the contract is the same. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "acp/store.h"
#include "contract.h"

#define T0 "2026-01-01T00:00:00.000Z"
#define T1 "2026-01-02T00:00:00.000Z"

typedef store_fx fx;

static acp_store_session row(const char *id, const char *cwd, const char *t)
{
    acp_store_session s = {.struct_size = sizeof(acp_store_session),
                           .id = (char *)id,
                           .cwd = (char *)cwd,
                           .add_dirs = (char *)"[]"};
    memcpy(s.created_at, t, ACP_STORE_TIME_LEN + 1);
    memcpy(s.updated_at, t, ACP_STORE_TIME_LEN + 1);
    return s;
}

/* Appends {"n":from} .. {"n":to} to id, committed at t. */
static void append_n(acp_store *st, const char *id, int from, int to, const char *t)
{
    char j[32];
    for (int i = from; i <= to; i++) {
        int len = snprintf(j, sizeof j, "{\"n\":%d}", i);
        assert_int_equal(acp_store_append(st, id, 0, j, (size_t)len), 0);
    }
    assert_int_equal(acp_store_commit(st, t), 0);
}

static void more(acp_store *st, const char *id, int from, int to)
{
    append_n(st, id, from, to, T1);
}

/* Session id in /w with n updates {"n":1} .. {"n":n}, title "T", state {"m":"x"}. */
static void mk(acp_store *st, const char *id, int n)
{
    acp_store_session s = row(id, "/w", T0);
    assert_int_equal(acp_store_create(st, &s), 0);
    assert_int_equal(acp_store_set_info(st, id, 0, true, "T", NULL), 0);
    assert_int_equal(acp_store_set_state(st, id, 0, "{\"m\":\"x\"}"), 0);
    append_n(st, id, 1, n, T0);
}

typedef struct seen {
    int64_t n, bad;
    int64_t first, last;
} seen;

/* Checks that update seq k is {"n":k}. */
static int check(void *user, int64_t seq, const char *json, size_t n)
{
    seen *s = user;
    char want[32];
    snprintf(want, sizeof want, "{\"n\":%lld}", (long long)seq);
    if (strlen(want) != n || memcmp(want, json, n)) s->bad++;
    if (!s->n) s->first = seq;
    s->last = seq;
    s->n++;
    return 0;
}

/* The whole history of id, every update checked against its seq; returns how many. */
static int64_t history(acp_store *st, const char *id)
{
    seen s = {0};
    int64_t last = -1;
    bool done = false;
    assert_int_equal(acp_store_replay(st, id, 0, 0, check, &s, &last, &done), 0);
    assert_true(done);
    assert_int_equal(s.bad, 0);
    assert_int_equal(last, s.n ? s.last : 0);
    if (s.n) assert_int_equal(s.first, 1);
    return s.n;
}

static void t_fork_copies(void **state)
{
    fx *f = *state;
    mk(f->st, "src", 5);
    /* The source's system prompt comes along; its archived flag does not. */
    assert_int_equal(acp_store_set_system_prompt(f->st, "src", 0, "{\"mode\":\"append\"}"), 0);
    assert_int_equal(acp_store_set_archived(f->st, "src", true), 0);
    acp_store_session d = row("fork", "/other", T1);
    d.add_dirs = (char *)"[\"/x\"]";
    int64_t fence = -1;
    assert_int_equal(acp_store_fork(f->st, "src", &d, "holder-A", 60000, &fence), 0);
    assert_int_equal(fence, 1);
    assert_int_equal(history(f->st, "fork"), 5);
    acp_store_session g = ACP_STORE_SESSION_INIT;
    assert_int_equal(acp_store_get(f->st, "fork", &g), 0);
    assert_string_equal(g.cwd, "/other");
    assert_string_equal(g.add_dirs, "[\"/x\"]");
    assert_string_equal(g.title, "T");             /* the source's */
    assert_string_equal(g.state, "{\"m\":\"x\"}"); /* the source's */
    assert_string_equal(g.created_at, T1);
    assert_string_equal(g.system_prompt, "{\"mode\":\"append\"}");
    assert_false(g.archived);
    acp_store_session_clear(&g);
    /* The fork's lease is holder-A's: another holder is refused, and its fence writes. */
    assert_int_equal(acp_store_lease_acquire(f->st, "fork", "B", 1000, NULL, &fence, NULL),
                     ACP_EBUSY);
    assert_int_equal(acp_store_set_state(f->st, "fork", 1, "{}"), 0);
    /* The source is untouched, lease-free. */
    assert_int_equal(acp_store_lease_acquire(f->st, "src", "B", 1000, NULL, &fence, NULL), 0);
    assert_int_equal(history(f->st, "src"), 5);
}

/* The fork's own title and state win over the source's; no holder, no lease. */
static void t_fork_own_meta(void **state)
{
    fx *f = *state;
    mk(f->st, "src", 1);
    acp_store_session d = row("fork", "/w", T1);
    d.title = (char *)"mine";
    d.state = (char *)"{\"m\":\"y\"}";
    d.system_prompt = (char *)"{\"mode\":\"override\"}";
    int64_t fence = -1;
    assert_int_equal(acp_store_fork(f->st, "src", &d, NULL, 0, &fence), 0);
    assert_int_equal(fence, 0);
    acp_store_session g = ACP_STORE_SESSION_INIT;
    assert_int_equal(acp_store_get(f->st, "fork", &g), 0);
    assert_string_equal(g.title, "mine");
    assert_string_equal(g.state, "{\"m\":\"y\"}");
    assert_string_equal(g.system_prompt, "{\"mode\":\"override\"}");
    acp_store_session_clear(&g);
    assert_int_equal(acp_store_lease_acquire(f->st, "fork", "B", 1000, NULL, &fence, NULL), 0);
    d.state = (char *)"[1]";
    d.id = (char *)"f2";
    assert_int_equal(acp_store_fork(f->st, "src", &d, NULL, 0, NULL), ACP_EINVAL);
}

/* Appends to either go on from the same seq and never reach the other. */
static void t_fork_independent(void **state)
{
    fx *f = *state;
    mk(f->st, "src", 3);
    acp_store_session d = row("fork", "/w", T1);
    assert_int_equal(acp_store_fork(f->st, "src", &d, NULL, 0, NULL), 0);
    assert_int_equal(acp_store_append(f->st, "fork", 0, "{\"n\":4}", 7), 0);
    assert_int_equal(acp_store_append(f->st, "fork", 0, "{\"n\":5}", 7), 0);
    assert_int_equal(acp_store_commit(f->st, T1), 0);
    assert_int_equal(history(f->st, "fork"), 5);
    assert_int_equal(history(f->st, "src"), 3);
    assert_int_equal(acp_store_append(f->st, "src", 0, "{\"n\":4}", 7), 0);
    assert_int_equal(acp_store_commit(f->st, T1), 0);
    assert_int_equal(history(f->st, "src"), 4);
    assert_int_equal(history(f->st, "fork"), 5);
}

/* Deleting either leaves the other whole; a fork of a fork too. */
static void t_fork_delete(void **state)
{
    fx *f = *state;
    mk(f->st, "src", 4);
    acp_store_session d = row("fork", "/w", T1);
    assert_int_equal(acp_store_fork(f->st, "src", &d, NULL, 0, NULL), 0);
    d.id = (char *)"fork2";
    assert_int_equal(acp_store_fork(f->st, "fork", &d, NULL, 0, NULL), 0);
    assert_int_equal(acp_store_delete(f->st, "src"), 0);
    assert_int_equal(history(f->st, "fork"), 4);
    assert_int_equal(acp_store_delete(f->st, "fork2"), 0);
    assert_int_equal(history(f->st, "fork"), 4);
    d.id = (char *)"fork3";
    assert_int_equal(acp_store_fork(f->st, "fork", &d, NULL, 0, NULL), 0);
    assert_int_equal(acp_store_delete(f->st, "fork"), 0);
    assert_int_equal(history(f->st, "fork3"), 4);
    acp_store_session g = ACP_STORE_SESSION_INIT;
    assert_int_equal(acp_store_get(f->st, "fork", &g), ACP_ENOTFOUND);
}

static void t_fork_errors(void **state)
{
    fx *f = *state;
    mk(f->st, "src", 2);
    mk(f->st, "taken", 1);
    acp_store_session d = row("fork", "/w", T1);
    int64_t fence = -1;
    assert_int_equal(acp_store_fork(f->st, "nope", &d, "A", 1000, &fence), ACP_ENOTFOUND);
    assert_int_equal(fence, 0);
    acp_store_session g = ACP_STORE_SESSION_INIT;
    assert_int_equal(acp_store_get(f->st, "fork", &g), ACP_ENOTFOUND);
    /* An id that exists: refused, and neither session changes. */
    d.id = (char *)"taken";
    assert_int_equal(acp_store_fork(f->st, "src", &d, NULL, 0, NULL), ACP_EINVAL);
    assert_int_equal(history(f->st, "taken"), 1);
    assert_int_equal(history(f->st, "src"), 2);
    d.id = (char *)"";
    assert_int_equal(acp_store_fork(f->st, "src", &d, NULL, 0, NULL), ACP_EINVAL);
    d.id = (char *)"fork";
    assert_int_equal(acp_store_fork(f->st, NULL, &d, NULL, 0, NULL), ACP_EINVAL);
    assert_int_equal(acp_store_fork(f->st, "src", &d, "A", 0, &fence), ACP_EINVAL);
    /* An empty history forks into an empty one that continues at seq 1. */
    acp_store_session e = row("empty", "/w", T0);
    assert_int_equal(acp_store_create(f->st, &e), 0);
    assert_int_equal(acp_store_fork(f->st, "empty", &d, NULL, 0, NULL), 0);
    assert_int_equal(history(f->st, "fork"), 0);
    assert_int_equal(acp_store_append(f->st, "fork", 0, "{\"n\":1}", 7), 0);
    assert_int_equal(acp_store_commit(f->st, T1), 0);
    assert_int_equal(history(f->st, "fork"), 1);
}

/* The history of id read in pages of about `bytes` (each page at least one update): every
 * update once, in order, `done` only with the last page. Returns how many. */
static int64_t paged(acp_store *st, const char *id, size_t bytes)
{
    seen s = {0};
    int64_t after = 0, pages = 0;
    for (bool done = false; !done; pages++) {
        int64_t last = -1;
        int64_t before = s.n;
        assert_int_equal(acp_store_replay(st, id, after, bytes, check, &s, &last, &done), 0);
        if (!done) assert_true(s.n > before); /* a page that is not the last gives something */
        after = last;
        assert_true(pages < 100000);
    }
    assert_int_equal(s.bad, 0);
    if (s.n) assert_int_equal(s.first, 1);
    if (s.n) assert_int_equal(s.last, s.n);
    return s.n;
}

/* Forks of forks, each with updates of its own, read whole and in pages of every size: the
 * joins between what a fork shares and what it added never lose, repeat or misorder an
 * update, and `done` comes with the last one. */
static void t_fork_chain_paged(void **state)
{
    fx *f = *state;
    mk(f->st, "src", 3);
    acp_store_session d = row("f1", "/w", T1);
    assert_int_equal(acp_store_fork(f->st, "src", &d, NULL, 0, NULL), 0);
    more(f->st, "f1", 4, 6);
    more(f->st, "src", 4, 9); /* the source goes on: none of it reaches f1 */
    d.id = (char *)"f2";
    assert_int_equal(acp_store_fork(f->st, "f1", &d, NULL, 0, NULL), 0);
    d.id = (char *)"f3"; /* a fork that adds nothing, forked again */
    assert_int_equal(acp_store_fork(f->st, "f2", &d, NULL, 0, NULL), 0);
    more(f->st, "f3", 7, 8);
    assert_int_equal(history(f->st, "src"), 9);
    assert_int_equal(history(f->st, "f1"), 6);
    assert_int_equal(history(f->st, "f2"), 6);
    assert_int_equal(history(f->st, "f3"), 8);
    /* {"n":k} is 7 or 8 bytes: pages of one update, of two, three, ... */
    for (size_t bytes = 1; bytes <= 64; bytes += 7) {
        assert_int_equal(paged(f->st, "f3", bytes), 8);
        assert_int_equal(paged(f->st, "f1", bytes), 6);
    }
    /* From the middle: what follows seq 5 of f3 is 6, 7, 8. */
    seen s = {0};
    int64_t last = 0;
    bool done = false;
    assert_int_equal(acp_store_replay(f->st, "f3", 5, 0, check, &s, &last, &done), 0);
    assert_true(done);
    assert_int_equal(s.n, 3);
    assert_int_equal(s.first, 6);
    assert_int_equal(last, 8);
}

/* Deleting a session in the middle of a chain, or one forked from at two points, leaves every
 * other history whole (each takes what it shared with the deleted one). */
static void t_fork_delete_shared(void **state)
{
    fx *f = *state;
    mk(f->st, "src", 2);
    acp_store_session d = row("at2", "/w", T1);
    assert_int_equal(acp_store_fork(f->st, "src", &d, NULL, 0, NULL), 0);
    more(f->st, "src", 3, 4);
    d.id = (char *)"at4";
    assert_int_equal(acp_store_fork(f->st, "src", &d, NULL, 0, NULL), 0);
    more(f->st, "at4", 5, 7);
    d.id = (char *)"at6"; /* from at4 (whose 5..6 are its own) at 7 */
    assert_int_equal(acp_store_fork(f->st, "at4", &d, NULL, 0, NULL), 0);
    more(f->st, "at4", 8, 8);
    more(f->st, "at2", 3, 5);
    assert_int_equal(acp_store_delete(f->st, "src"), 0);
    assert_int_equal(history(f->st, "at2"), 5);
    assert_int_equal(history(f->st, "at4"), 8);
    assert_int_equal(history(f->st, "at6"), 7);
    assert_int_equal(acp_store_delete(f->st, "at4"), 0);
    assert_int_equal(history(f->st, "at6"), 7);
    assert_int_equal(paged(f->st, "at6", 8), 7);
    more(f->st, "at6", 8, 9);
    assert_int_equal(history(f->st, "at6"), 9);
    assert_int_equal(history(f->st, "at2"), 5);
    /* A subagent child forked, then its parent (and so the child) deleted: the fork stays. */
    acp_store_session p = row("parent", "/w", T0), c = row("child", "/w", T0);
    assert_int_equal(acp_store_create(f->st, &p), 0);
    c.parent = (char *)"parent";
    assert_int_equal(acp_store_create(f->st, &c), 0);
    more(f->st, "child", 1, 3);
    d.id = (char *)"child-fork";
    assert_int_equal(acp_store_fork(f->st, "child", &d, NULL, 0, NULL), 0);
    assert_int_equal(acp_store_delete(f->st, "parent"), 0);
    assert_int_equal(history(f->st, "child-fork"), 3);
}

/* The size the issue names: 20,000 updates, copied whole in one call. */
static void t_fork_large(void **state)
{
    fx *f = *state;
    mk(f->st, "src", 20000);
    acp_store_session d = row("fork", "/w", T1);
    assert_int_equal(acp_store_fork(f->st, "src", &d, NULL, 0, NULL), 0);
    assert_int_equal(acp_store_delete(f->st, "src"), 0);
    assert_int_equal(history(f->st, "fork"), 20000);
}

int store_fork_contract_run(const store_contract_env *env)
{
    void *e = (void *)env;
#define T(fn) cmocka_unit_test_prestate_setup_teardown(fn, store_fx_setup, store_fx_teardown, e)
    const struct CMUnitTest tests[] = {
        T(t_fork_copies), T(t_fork_own_meta), T(t_fork_independent), T(t_fork_delete),
        T(t_fork_errors), T(t_fork_large),    T(t_fork_chain_paged), T(t_fork_delete_shared),
    };
#undef T
    char name[128];
    snprintf(name, sizeof name, "%s_fork", env->name);
    return _cmocka_run_group_tests(name, tests, sizeof tests / sizeof tests[0], NULL, NULL);
}
