/* SPDX-License-Identifier: Apache-2.0 */
/* The store operations the fault tests walk, shared by test_store_fault.c (SQLite) and
 * tests/pg/test_pg_fault.c: each is one call with fixed arguments on sessions fault_a and
 * fault_b (fault_c is the one OP_CREATE makes), so that two runs write the same bytes. */
#ifndef ACP_TESTS_STORE_FAULT_OPS_H
#define ACP_TESTS_STORE_FAULT_OPS_H

#include <string.h>

#include "store/inject.h"

#define T0 "2026-01-01T00:00:00.000Z"
#define T1 "2026-02-02T00:00:00.000Z"

/* The current run's session ids (a test may number them per run). */
static char fault_a[16] = "a", fault_b[16] = "b", fault_c[16] = "c";

/* Sessions fault_a and fault_b, two updates each, committed. */
static void fault_fill(acp_store *st)
{
    const char *ids[] = {fault_a, fault_b};
    for (int i = 0; i < 2; i++) {
        acp_store_session s = {.struct_size = sizeof(acp_store_session),
                               .id = (char *)ids[i],
                               .cwd = "/w",
                               .add_dirs = "[]"};
        strcpy(s.created_at, T0);
        strcpy(s.updated_at, T0);
        assert_int_equal(acp_store_create(st, &s), 0);
        assert_int_equal(acp_store_append(st, ids[i], 0, "{\"n\":1}", 7), 0);
        assert_int_equal(acp_store_append(st, ids[i], 0, "{\"n\":2}", 7), 0);
    }
    assert_int_equal(acp_store_commit(st, T0), 0);
}

static int count_row(void *user, int64_t seq, const char *json, size_t n)
{
    (*(int *)user)++;
    return 0;
}

static int count_session(void *user, const acp_store_session *s)
{
    (*(int *)user)++;
    return 0;
}

/* The operations, each as one call with fixed arguments (so two runs write the same bytes). */
enum {
    OP_CREATE,
    OP_SET_INFO,
    OP_SET_ROOTS,
    OP_SET_STATE,
    OP_COMMIT1,
    OP_COMMIT2,
    OP_DELETE,
    OP_GET,
    OP_REPLAY,
    OP_LIST,
    OP_FORK, /* fault_c made a fork of fault_a */
    NOPS
};
static const unsigned op_bit[NOPS] = {ACP_FAULT_CREATE,    ACP_FAULT_SET_INFO, ACP_FAULT_SET_ROOTS,
                                      ACP_FAULT_SET_STATE, ACP_FAULT_COMMIT,   ACP_FAULT_COMMIT,
                                      ACP_FAULT_DELETE,    ACP_FAULT_GET,      ACP_FAULT_REPLAY,
                                      ACP_FAULT_LIST,      ACP_FAULT_CREATE};
static const char *const op_name[NOPS] = {"create",
                                          "set_info",
                                          "set_roots",
                                          "set_state",
                                          "commit (one session)",
                                          "commit (two sessions)",
                                          "delete",
                                          "get",
                                          "replay",
                                          "list",
                                          "fork"};

/* The batch a commit takes is appended before the fault is armed. */
static void prepare(acp_store *st, int op)
{
    if (op == OP_COMMIT1 || op == OP_COMMIT2) {
        assert_int_equal(acp_store_append(st, fault_a, 0, "{\"n\":3}", 7), 0);
        assert_int_equal(acp_store_append(st, fault_a, 0, "{\"n\":4}", 7), 0);
    }
    if (op == OP_COMMIT2) assert_int_equal(acp_store_append(st, fault_b, 0, "{\"n\":3}", 7), 0);
}

static int do_op(acp_store *st, int op)
{
    int n = 0;
    acp_store_session s = {
        .struct_size = sizeof(acp_store_session), .id = fault_c, .cwd = "/w", .add_dirs = "[]"};
    int64_t last;
    bool done;
    char *next = NULL;
    int rc;
    switch (op) {
    case OP_CREATE:
        strcpy(s.created_at, T1);
        strcpy(s.updated_at, T1);
        return acp_store_create(st, &s);
    case OP_SET_INFO:
        return acp_store_set_info(st, fault_a, 0, true, "t", T1);
    case OP_SET_ROOTS:
        return acp_store_set_roots(st, fault_a, 0, "/v", "[\"/x\"]");
    case OP_SET_STATE:
        return acp_store_set_state(st, fault_a, 0, "{\"mode\":\"ask\"}");
    case OP_COMMIT1:
    case OP_COMMIT2:
        return acp_store_commit(st, T1);
    case OP_DELETE:
        return acp_store_delete(st, fault_b);
    case OP_GET:
        rc = acp_store_get(st, fault_a, &s);
        acp_store_session_clear(&s);
        return rc;
    case OP_REPLAY:
        return acp_store_replay(st, fault_a, 0, 0, count_row, &n, &last, &done);
    case OP_LIST:
        rc = acp_store_list(st, NULL, NULL, 1, count_session, &n, &next);
        free(next);
        return rc;
    case OP_FORK:
        strcpy(s.created_at, T1);
        strcpy(s.updated_at, T1);
        return acp_store_fork(st, fault_a, &s, NULL, 0, NULL);
    }
    return -1;
}

#endif
