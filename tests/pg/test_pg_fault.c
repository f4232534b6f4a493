/* SPDX-License-Identifier: Apache-2.0 */
/* Fault injection at the store's API (store/inject.h), PostgreSQL: every statement of every
 * operation in turn meets a server error (the server raises SQLSTATE 53100, disk full, in its
 * place), loses the connection before it (the server ends our backend), or loses its answer
 * after the server ran it. A failed write leaves the database as it was (compared whole, from
 * another connection), except that a write whose answer was lost after the server committed
 * it is there whole: never half. The same handle reconnects by itself and goes on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "fault_ops.h"
#include "pg_env.h"

#define T0          "2026-01-01T00:00:00.000Z"
#define T1          "2026-02-02T00:00:00.000Z"
#define UNAVAILABLE "session store unavailable: "

static char *db;      /* this program's database, its store in one schema */
static PGconn *admin; /* reads it for the comparisons */
static int serial;

/* Sessions a and b of a new run, two updates each, through a new handle. */
static acp_store *fixture(void)
{
    serial++;
    snprintf(fault_a, sizeof fault_a, "a%d", serial);
    snprintf(fault_b, sizeof fault_b, "b%d", serial);
    snprintf(fault_c, sizeof fault_c, "c%d", serial);
    acp_store *st = NULL;
    assert_int_equal(acp_store_open(db, &st), 0);
    fault_fill(st);
    return st;
}

/* Everything stored of the run's sessions, as text (each id without its run number). */
static char *dump(void)
{
    const char *ids[3] = {fault_a, fault_b, fault_c};
    PGresult *r = PQexecParams(
        admin,
        "SELECT coalesce((SELECT string_agg(left(id, 1) || ',' || coalesce(title, '-') || ',' ||"
        " coalesce(state, '-') || ',' || cwd || ',' || add_dirs || ',' || updated_at || ',' ||"
        " next_seq, ' | ' ORDER BY id) FROM acp_sessions WHERE id IN ($1, $2, $3)), '') ||"
        " E'\\n' || coalesce((SELECT string_agg(left(session_id, 1) || ':' || seq || ':' || body, "
        "' | '"
        " ORDER BY session_id, seq) FROM acp_updates WHERE session_id IN ($1, $2, $3)), '')",
        3, NULL, ids, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) fail_msg("dump: %s", PQerrorMessage(admin));
    char *v = strdup(PQgetvalue(r, 0, 0));
    PQclear(r);
    return v;
}

static void walk(acp_fault_kind kind)
{
    static const char *const kinds[] = {"server error", "", "connection lost before",
                                        "answer lost after"};
    for (int op = 0; op < NOPS; op++) {
        acp_store *st = fixture();
        prepare(st, op);
        assert_int_equal(do_op(st, op), 0);
        char *after = dump();
        acp_store_close(st);
        unsigned step = 1, in_doubt = 0;
        for (;; step++) {
            st = fixture();
            char *before = dump();
            prepare(st, op);
            acp_store_fault f = {
                .ops = op_bit[op], .step = step, .kind = kind, .sqlstate = "53100"};
            assert_int_equal(acp_store_inject(st, &f), 0);
            int rc = do_op(st, op);
            bool fired = acp_store_inject_fired(st) > 0;
            assert_int_equal(acp_store_inject(st, NULL), 0);
            char *now = dump();
            if (!fired) {
                assert_int_equal(rc, 0);
                assert_string_equal(now, after);
                free(now);
                free(before);
                acp_store_close(st);
                break;
            }
            assert_int_equal(rc, ACP_ESTORE);
            const char *m = acp_error_last()->message;
            if (kind == ACP_FAULT_ERROR) {
                if (!strstr(m, "injected fault")) fail_msg("%s: \"%s\"", op_name[op], m);
            } else if (strncmp(m, UNAVAILABLE, strlen(UNAVAILABLE))) {
                fail_msg("%s, step %u: \"%s\"", op_name[op], step, m);
            }
            assert_int_equal(acp_store_pending(st), 0);
            bool done = !strcmp(now, after) && strcmp(now, before);
            if (done) {
                /* only an answer lost after the server committed leaves the write done */
                assert_int_equal(kind, ACP_FAULT_LOSE_AFTER);
                in_doubt++;
            } else {
                assert_string_equal(now, before); /* nothing half-written */
                prepare(st, op);
                assert_int_equal(do_op(st, op), 0); /* the same handle, reconnected */
                free(now);
                now = dump();
                assert_string_equal(now, after);
            }
            free(now);
            free(before);
            acp_store_close(st);
        }
        assert_true(step > 1);
        print_message("%-22s %s: %u steps, %u left done and reported failed\n", op_name[op],
                      kinds[kind], step - 1, in_doubt);
        free(after);
    }
}

static void t_error(void **state)
{
    walk(ACP_FAULT_ERROR);
}

static void t_lose(void **state)
{
    walk(ACP_FAULT_LOSE);
}

static void t_lose_after(void **state)
{
    walk(ACP_FAULT_LOSE_AFTER);
}

int main(void)
{
    char *base = pg_env_conninfo("pg");
    if (!base) return PG_ENV_SKIP;
    char name[64];
    if (!(db = pg_env_new_db_nosync(base, name))) return 1;
    admin = PQconnectdb(db);
    if (PQstatus(admin) != CONNECTION_OK) return 1;
    const struct CMUnitTest tests[] = {cmocka_unit_test(t_error), cmocka_unit_test(t_lose),
                                       cmocka_unit_test(t_lose_after)};
    int failed = cmocka_run_group_tests_name("pg_store_fault", tests, NULL, NULL);
    PQfinish(admin);
    pg_env_drop_db(base, name);
    free(db);
    free(base);
    return failed ? 1 : 0;
}
