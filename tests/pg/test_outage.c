/* SPDX-License-Identifier: Apache-2.0 */
/* The server goes away under a live store and comes back: every call fails fast with
 * ACP_ESTORE "session store unavailable: ...", a batch committed meanwhile is dropped
 * whole, and the same handle recovers by itself once the server is up again. Uses its own
 * cluster (fixture pg_outage), since it stops the server. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "acp/store.h"
#include "pg_env.h"

#define UNAVAILABLE "session store unavailable: "

static char *base;

static int collect(void *user, int64_t seq, const char *json, size_t n)
{
    (void)json;
    (void)n;
    int64_t *seqs = user;
    seqs[++seqs[0]] = seq;
    return 0;
}

static int on_row(void *user, const acp_store_session *s)
{
    (void)user;
    (void)s;
    fail_msg("a row while the server is down");
    return 0;
}

static void assert_unavailable(acp_store *st, int rc)
{
    assert_int_equal(rc, ACP_ESTORE);
    const char *m = acp_error_last()->message;
    if (strncmp(m, UNAVAILABLE, strlen(UNAVAILABLE)))
        fail_msg("message \"%s\" does not start with \"%s\"", m, UNAVAILABLE);
}

static void nap(void)
{
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
}

static void t_outage(void **state)
{
    (void)state;
    char name[64];
    char *where = pg_env_new_db(base, name);
    assert_non_null(where);
    acp_store *st = NULL;
    assert_int_equal(acp_store_open(where, &st), 0);
    acp_store_session s = {.struct_size = sizeof(acp_store_session), .id = "s", .cwd = "/w", .add_dirs = "[]"};
    acp_store_now(s.created_at);
    acp_store_now(s.updated_at);
    assert_int_equal(acp_store_create(st, &s), 0);
    assert_int_equal(acp_store_append(st, "s", 0, "{\"n\":1}", 7), 0);
    assert_int_equal(acp_store_append(st, "s", 0, "{\"n\":2}", 7), 0);
    assert_int_equal(acp_store_commit(st, NULL), 0);

    assert_int_equal(pg_env_cluster("down", "pg_outage"), 0);

    /* Every kind of call fails the same clear way, and fast (no server to wait for). */
    acp_store_session out = ACP_STORE_SESSION_INIT;
    assert_unavailable(st, acp_store_get(st, "s", &out));
    print_message("while down: %s\n", acp_error_last()->message);
    assert_unavailable(st, acp_store_get(st, "s", &out)); /* within the backoff: no attempt */
    int64_t seqs[8] = {0}, last;
    bool done;
    assert_unavailable(st, acp_store_replay(st, "s", 0, 0, collect, seqs, &last, &done));
    assert_int_equal(seqs[0], 0);
    char *next = NULL;
    assert_unavailable(st, acp_store_list(st, NULL, NULL, 10, on_row, NULL, &next));
    assert_null(next);
    acp_store_session t = s;
    t.id = "t";
    assert_unavailable(st, acp_store_create(st, &t));
    assert_unavailable(st, acp_store_set_info(st, "s", 0, true, "x", NULL));
    assert_unavailable(st, acp_store_delete(st, "s"));
    assert_int_equal(acp_store_append(st, "s", 0, "{\"n\":3}", 7), 0);
    assert_unavailable(st, acp_store_commit(st, NULL));
    assert_int_equal(acp_store_pending(st), 0); /* the failed batch is dropped */

    /* A second agent starting now is told the same. */
    acp_store *st2 = NULL;
    assert_int_equal(acp_store_open(where, &st2), ACP_ESTORE);
    assert_true(*acp_error_last()->message);
    assert_int_equal(strncmp(acp_error_last()->message, UNAVAILABLE, strlen(UNAVAILABLE)), 0);

    assert_int_equal(pg_env_cluster("up", "pg_outage"), 0);

    /* Recovery by itself: the same handle works again once its backoff lets it retry. */
    int rc = ACP_ESTORE;
    int tries = 0;
    while (tries < 1200 && (rc = acp_store_get(st, "s", &out)) == ACP_ESTORE) tries++, nap();
    assert_int_equal(rc, 0);
    print_message("recovered after %d failed calls\n", tries);
    assert_null(out.title); /* the set_info while down did not happen */
    acp_store_session_clear(&out);
    assert_int_equal(acp_store_get(st, "t", &out), ACP_ENOTFOUND);

    /* Nothing half-written: exactly the two updates committed before the outage. */
    assert_int_equal(acp_store_replay(st, "s", 0, 0, collect, seqs, &last, &done), 0);
    assert_int_equal(seqs[0], 2);
    assert_int_equal(seqs[1], 1);
    assert_int_equal(seqs[2], 2);
    assert_true(done);
    assert_int_equal(acp_store_append(st, "s", 0, "{\"n\":4}", 7), 0);
    assert_int_equal(acp_store_commit(st, NULL), 0);
    seqs[0] = 0;
    assert_int_equal(acp_store_replay(st, "s", 2, 0, collect, seqs, &last, &done), 0);
    assert_int_equal(seqs[0], 1);
    assert_int_equal(seqs[1], 3);

    acp_store_close(st);
    free(where);
}

int main(void)
{
    if (!(base = pg_env_conninfo("pg_outage"))) return PG_ENV_SKIP;
    const struct CMUnitTest tests[] = {cmocka_unit_test(t_outage)};
    int failed = cmocka_run_group_tests_name("pg_outage", tests, NULL, NULL);
    free(base);
    return failed ? 1 : 0;
}
