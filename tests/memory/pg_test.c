/* SPDX-License-Identifier: Apache-2.0 */
/* Memory after huge messages on PostgreSQL (issue 13, item 6): libpq grows a connection's
 * output buffer to the largest statement it sent and its input buffer to the largest row it
 * received, and never shrinks them, so one 60 MB prompt stored (or replayed by a load) kept
 * 64 to 128 MiB for the agent's life. The store replaces such a connection after the call:
 * the live heap is back near where it was, and the next calls work on a new connection. Runs
 * on the throwaway cluster of tests/pg (fixture pg); skipped without a PostgreSQL server. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "acp/store.h"
#include "pg_env.h"
#include "tests/memory/live.h"

#define HUGE (20u << 20) /* over the store's 16 MiB keep */

static char *base; /* the shared cluster's conninfo */

typedef struct got {
    int n;
    size_t biggest;
} got;

static int count_row(void *user, int64_t seq, const char *json, size_t n)
{
    got *g = user;
    g->n++;
    g->biggest = n > g->biggest ? n : g->biggest;
    return 0;
}

static got replay_all(acp_store *st, const char *id)
{
    got g = {0};
    int64_t last = 0;
    bool done = false;
    assert_int_equal(acp_store_replay(st, id, 0, 0, count_row, &g, &last, &done), 0);
    assert_true(done);
    return g;
}

/* One update whose JSON text is a string of n bytes (n + 2 with its quotes). */
static void append_text(acp_store *st, const char *id, size_t n)
{
    char *json = malloc(n + 2);
    json[0] = json[n + 1] = '"';
    memset(json + 1, 'x', n);
    assert_int_equal(acp_store_append(st, id, 0, json, n + 2), 0);
    free(json);
    assert_int_equal(acp_store_commit(st, NULL), 0);
}

static void pg_huge(void **state)
{
    char name[64];
    char *where = pg_env_new_db_nosync(base, name);
    assert_non_null(where);
    acp_store *st = NULL;
    assert_int_equal(acp_store_open(where, &st), 0);
    acp_store_session s = {.struct_size = sizeof(acp_store_session), .id = "s1", .cwd = "/w", .add_dirs = "[]"};
    acp_store_now(s.created_at);
    acp_store_now(s.updated_at);
    assert_int_equal(acp_store_create(st, &s), 0);
    append_text(st, "s1", 100);
    assert_int_equal(replay_all(st, "s1").n, 1);
    size_t before = live();

    append_text(st, "s1", HUGE);
    assert_back(before, 256u << 10, "after storing a huge update");
    got g = replay_all(st, "s1");
    assert_int_equal(g.n, 2);
    assert_int_equal(g.biggest, HUGE + 2);
    assert_back(before, 256u << 10, "after replaying it");

    /* The connection was replaced: the store goes on as before. */
    append_text(st, "s1", 100);
    assert_int_equal(replay_all(st, "s1").n, 3);
    assert_back(before, 256u << 10, "after small calls");
    acp_store_close(st);
    pg_env_drop_db(base, name);
    free(where);
}

int main(void)
{
    if (!(base = pg_env_conninfo("pg"))) return PG_ENV_SKIP;
    const struct CMUnitTest tests[] = {cmocka_unit_test(pg_huge)};
    int failed = cmocka_run_group_tests_name("memory_pg", tests, NULL, NULL);
    free(base);
    return failed ? 1 : 0;
}
