/* SPDX-License-Identifier: Apache-2.0 */
/* Fault injection at the store's own API (store/inject.h), SQLite: every database step of every
 * operation fails in turn with SQLITE_BUSY, SQLITE_FULL and SQLITE_IOERR, the SQLite way (step
 * 1, 2, ... until the operation runs through without meeting the fault). A failed write leaves
 * the file exactly as it was (the whole file compared, by another connection), drops its batch,
 * says SQLite's own words for the fault, and the same handle then does the write as if nothing
 * had happened. Also: a fault that stays (a full disk) until it goes, a stall, a real
 * SQLITE_BUSY from a lock another connection holds, a delete by another handle at the exact
 * step, and an injector that cannot be armed with what the backend cannot produce. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fault_ops.h"
#include "tmpdir.h"

static char dir[PATH_MAX], db[PATH_MAX + 32];
static int serial;

/* A new file with sessions a and b, two updates each. */
static acp_store *fixture(void)
{
    snprintf(db, sizeof db, "%s/s%d.db", dir, ++serial);
    acp_store *st = NULL;
    assert_int_equal(acp_store_open(db, &st), 0);
    fault_fill(st);
    return st;
}

/* Everything the file holds, as text, read by a connection of its own. */
static char *dump(void)
{
    static const char *const parts[] = {
        "SELECT group_concat(x, ' | ') FROM (SELECT id || ',' || coalesce(title, '-') || ',' ||"
        " coalesce(state, '-') || ',' || cwd || ',' || add_dirs || ',' || created_at || ',' ||"
        " updated_at || ',' || last_seq AS x FROM sessions ORDER BY id)",
        "SELECT group_concat(x, ' | ') FROM (SELECT sid || ':' || seq || ':' || json AS x"
        " FROM updates ORDER BY sid, seq)"};
    sqlite3 *d;
    assert_int_equal(sqlite3_open_v2(db, &d, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    char *out = NULL;
    for (size_t i = 0; i < 2; i++) {
        sqlite3_stmt *q;
        assert_int_equal(sqlite3_prepare_v2(d, parts[i], -1, &q, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_step(q), SQLITE_ROW);
        const char *t = (const char *)sqlite3_column_text(q, 0);
        char *prev = out;
        assert_true(asprintf(&out, "%s\n%s", prev ? prev : "", t ? t : "") > 0);
        free(prev);
        sqlite3_finalize(q);
    }
    sqlite3_close(d);
    return out;
}

/* For each operation and each code: step 1, 2, ... fails until the operation runs through. */
static void t_every_step(void **state)
{
    static const int codes[] = {SQLITE_BUSY, SQLITE_FULL, SQLITE_IOERR};
    unsigned runs = 0;
    for (int op = 0; op < NOPS; op++) {
        /* what the operation makes of the fixture with no fault */
        acp_store *st = fixture();
        prepare(st, op);
        assert_int_equal(do_op(st, op), 0);
        char *after = dump();
        acp_store_close(st);
        unsigned steps = 0;
        for (size_t c = 0; c < sizeof codes / sizeof *codes; c++) {
            for (unsigned step = 1;; step++, runs++) {
                st = fixture();
                char *before = dump();
                prepare(st, op);
                acp_store_fault f = {.ops = op_bit[op], .step = step, .code = codes[c]};
                assert_int_equal(acp_store_inject(st, &f), 0);
                int rc = do_op(st, op);
                if (!acp_store_inject_fired(st)) {
                    /* past the last step: the operation ran through */
                    assert_int_equal(rc, 0);
                    char *now = dump();
                    assert_string_equal(now, after);
                    free(now);
                    free(before);
                    acp_store_close(st);
                    if (!c) steps = step - 1;
                    assert_int_equal(step - 1, steps); /* the same steps whatever the code */
                    break;
                }
                /* the read transaction's end: a failure there changes nothing the caller has */
                bool harmless = op == OP_REPLAY && rc == 0;
                if (!harmless) {
                    if (rc != ACP_ESTORE)
                        fail_msg("%s, step %u, %s: %d", op_name[op], step, sqlite3_errstr(codes[c]),
                                 rc);
                    if (!strstr(acp_error_last()->message, sqlite3_errstr(codes[c])))
                        fail_msg("%s, step %u: \"%s\" lacks \"%s\"", op_name[op], step,
                                 acp_error_last()->message, sqlite3_errstr(codes[c]));
                }
                assert_int_equal(acp_store_pending(st), 0);
                char *now = dump();
                assert_string_equal(now, before); /* nothing half-written */
                free(now);
                /* the same handle does it as if nothing had happened */
                assert_int_equal(acp_store_inject(st, NULL), 0);
                prepare(st, op);
                assert_int_equal(do_op(st, op), 0);
                now = dump();
                assert_string_equal(now, after);
                free(now);
                free(before);
                acp_store_close(st);
            }
        }
        assert_true(steps >= 1);
        print_message("%-22s %u steps\n", op_name[op], steps);
        free(after);
    }
    print_message("%u faulted runs\n", runs);
}

/* A disk that stays full: every write fails, at whichever step, until space comes back;
 * reads go on; nothing of the failed writes appears afterwards. */
static void t_stays_full(void **state)
{
    acp_store *st = fixture();
    char *before = dump();
    acp_store_fault f = {.ops = ACP_FAULT_WRITES, .times = UINT_MAX, .code = SQLITE_FULL};
    assert_int_equal(acp_store_inject(st, &f), 0);
    for (int op = 0; op < NOPS; op++) {
        prepare(st, op);
        int rc = do_op(st, op);
        assert_int_equal(rc, op_bit[op] & ACP_FAULT_WRITES ? ACP_ESTORE : 0);
    }
    char *now = dump();
    assert_string_equal(now, before);
    free(now);
    assert_int_equal(acp_store_inject(st, NULL), 0);
    assert_int_equal(acp_store_append(st, "a", 0, "{\"n\":3}", 7), 0);
    assert_int_equal(acp_store_commit(st, NULL), 0);
    int n = 0;
    int64_t last;
    bool done;
    assert_int_equal(acp_store_replay(st, "a", 0, 0, count_row, &n, &last, &done), 0);
    assert_int_equal(n, 3);
    assert_int_equal(last, 3); /* no seq was used up by the failed commits */
    free(before);
    acp_store_close(st);
}

/* An append's one failure (out of memory): that update is not in the batch, the others are. */
static void t_append(void **state)
{
    acp_store *st = fixture();
    acp_store_fault f = {.ops = ACP_FAULT_APPEND, .nth = 2};
    assert_int_equal(acp_store_inject(st, &f), 0);
    assert_int_equal(acp_store_append(st, "a", 0, "{\"n\":3}", 7), 0);
    assert_int_equal(acp_store_append(st, "b", 0, "{\"n\":3}", 7), ACP_ENOMEM);
    assert_int_equal(acp_store_append(st, "a", 0, "{\"n\":4}", 7), 0);
    assert_int_equal(acp_store_pending(st), 2);
    assert_int_equal(acp_store_commit(st, NULL), 0);
    int n = 0;
    int64_t last;
    bool done;
    assert_int_equal(acp_store_replay(st, "b", 0, 0, count_row, &n, &last, &done), 0);
    assert_int_equal(n, 2);
    assert_int_equal(acp_store_replay(st, "a", 0, 0, count_row, &n, &last, &done), 0);
    assert_int_equal(n, 6);
    acp_store_close(st);
}

static int collect_text(void *user, int64_t seq, const char *json, size_t n)
{
    char **all = user, *prev = *all;
    assert_true(asprintf(all, "%s%.*s;", prev ? prev : "", (int)n, json) > 0);
    free(prev);
    return 0;
}

/* acp_store_discard: what was appended after the mark goes, sessions first appended after it
 * included; what was before it, and what is appended next, is committed byte for byte. */
static void t_discard(void **state)
{
    acp_store *st = fixture();
    assert_int_equal(acp_store_append(st, "a", 0, "{\"n\":3}", 7), 0);
    size_t mark = acp_store_pending(st);
    assert_int_equal(acp_store_append(st, "a", 0, "{\"gone\":1}", 10), 0);
    assert_int_equal(acp_store_append(st, "b", 0, "{\"gone\":2}", 10), 0);
    acp_store_discard(st, mark);
    assert_int_equal(acp_store_pending(st), 1);
    acp_store_discard(st, 5); /* past the end: nothing */
    assert_int_equal(acp_store_pending(st), 1);
    assert_int_equal(acp_store_append(st, "b", 0, "{\"n\":3}", 7), 0);
    assert_int_equal(acp_store_commit(st, NULL), 0);
    acp_store_discard(st, 0); /* an empty batch: nothing */
    char *a = NULL, *b = NULL;
    int64_t last;
    bool done;
    assert_int_equal(acp_store_replay(st, "a", 0, 0, collect_text, &a, &last, &done), 0);
    assert_int_equal(acp_store_replay(st, "b", 0, 0, collect_text, &b, &last, &done), 0);
    assert_string_equal(a, "{\"n\":1};{\"n\":2};{\"n\":3};");
    assert_string_equal(b, "{\"n\":1};{\"n\":2};{\"n\":3};");
    free(a);
    free(b);
    acp_store_close(st);
}

static double ms_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) * 1e3 + (double)(t.tv_nsec - t0->tv_nsec) / 1e6;
}

/* A stall slows the step and changes nothing else. */
static void t_stall(void **state)
{
    acp_store *st = fixture();
    acp_store_fault f = {.ops = ACP_FAULT_COMMIT, .step = 1, .kind = ACP_FAULT_STALL, .ms = 60};
    assert_int_equal(acp_store_inject(st, &f), 0);
    prepare(st, OP_COMMIT2);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(do_op(st, OP_COMMIT2), 0);
    assert_true(ms_since(&t0) >= 60);
    assert_int_equal(acp_store_inject_fired(st), 1);
    int n = 0;
    int64_t last;
    bool done;
    assert_int_equal(acp_store_replay(st, "a", 0, 0, count_row, &n, &last, &done), 0);
    assert_int_equal(n, 4);
    acp_store_close(st);
}

/* SQLite's own SQLITE_BUSY: another connection holds the write lock past the busy timeout.
 * The commit fails in about that time, nothing of it is stored, and it goes through once the
 * lock is released. */
static void t_real_busy(void **state)
{
    acp_store *st = fixture();
    char *before = dump();
    assert_int_equal(acp_store_inject_busy_timeout(st, 30), 0);
    sqlite3 *other;
    assert_int_equal(sqlite3_open(db, &other), SQLITE_OK);
    assert_int_equal(sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
    prepare(st, OP_COMMIT2);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(do_op(st, OP_COMMIT2), ACP_ESTORE);
    assert_true(ms_since(&t0) >= 30);
    assert_non_null(strstr(acp_error_last()->message, "database is locked"));
    assert_int_equal(acp_store_set_state(st, "a", 0, "{}"), ACP_ESTORE);
    assert_int_equal(acp_store_delete(st, "b"), ACP_ESTORE);
    assert_int_equal(sqlite3_exec(other, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(other);
    char *now = dump();
    assert_string_equal(now, before);
    free(now);
    prepare(st, OP_COMMIT2);
    assert_int_equal(do_op(st, OP_COMMIT2), 0);
    free(before);
    acp_store_close(st);
}

static void delete_a(acp_store *st, void *user)
{
    assert_int_equal(acp_store_delete(user, "a"), 0);
}

/* The call hook: another handle deletes session a at the commit's first step, just before
 * its transaction: a's appends are refused (ACP_ENOTFOUND, acp_store_gone), b's stored. */
static void t_call(void **state)
{
    acp_store *st = fixture(), *other = NULL;
    assert_int_equal(acp_store_open(db, &other), 0);
    acp_store_fault f = {.ops = ACP_FAULT_COMMIT,
                         .step = 1,
                         .kind = ACP_FAULT_CALL,
                         .call = delete_a,
                         .user = other};
    assert_int_equal(acp_store_inject(st, &f), 0);
    prepare(st, OP_COMMIT2);
    assert_int_equal(do_op(st, OP_COMMIT2), ACP_ENOTFOUND);
    assert_string_equal(acp_store_gone(st, 0, NULL, NULL), "a");
    assert_null(acp_store_gone(st, 1, NULL, NULL));
    int n = 0;
    int64_t last;
    bool done;
    assert_int_equal(acp_store_replay(other, "b", 0, 0, count_row, &n, &last, &done), 0);
    assert_int_equal(n, 3);
    acp_store_close(other);
    acp_store_close(st);
}

/* What SQLite cannot produce is refused when armed; disarmed, the count is gone. */
static void t_arming(void **state)
{
    acp_store *st = fixture();
    acp_store_fault f = {.ops = ACP_FAULT_COMMIT, .kind = ACP_FAULT_LOSE};
    assert_int_equal(acp_store_inject(st, &f), ACP_EINVAL);
    f.kind = ACP_FAULT_LOSE_AFTER;
    assert_int_equal(acp_store_inject(st, &f), ACP_EINVAL);
    f.kind = ACP_FAULT_CALL; /* without a function */
    assert_int_equal(acp_store_inject(st, &f), ACP_EINVAL);
    /* nth and times: the 2nd and 3rd gets fail, the 1st and 4th do not */
    f = (acp_store_fault){.ops = ACP_FAULT_GET, .nth = 2, .times = 2, .code = SQLITE_IOERR};
    assert_int_equal(acp_store_inject(st, &f), 0);
    int want[] = {0, ACP_ESTORE, ACP_ESTORE, 0};
    for (int i = 0; i < 4; i++) assert_int_equal(do_op(st, OP_GET), want[i]);
    assert_int_equal(acp_store_inject_fired(st), 2);
    assert_int_equal(acp_store_inject(st, NULL), 0);
    assert_int_equal(acp_store_inject_fired(st), 0);
    acp_store_close(st);
}

static int setup(void **state)
{
    return tmpdir_make(dir, sizeof dir, "fault");
}

static int teardown(void **state)
{
    tmpdir_remove(dir);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(t_every_step), cmocka_unit_test(t_stays_full),
        cmocka_unit_test(t_append),     cmocka_unit_test(t_discard),
        cmocka_unit_test(t_stall),      cmocka_unit_test(t_real_busy),
        cmocka_unit_test(t_call),       cmocka_unit_test(t_arming),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
