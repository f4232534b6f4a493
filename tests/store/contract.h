/* SPDX-License-Identifier: Apache-2.0 */
/* The store contract: one suite every backend must pass, written against acp/store.h only.
 * A runner supplies `fresh`, which names a brand-new empty store for each test (SQLite: a
 * new file; PostgreSQL: a new database), then calls store_contract_run(). */
#ifndef ACP_TEST_STORE_CONTRACT_H
#define ACP_TEST_STORE_CONTRACT_H

typedef struct store_contract_env {
    const char *name; /* the cmocka group name, e.g. "store_contract_sqlite" */
    /* A malloc'd `where` for acp_store_open() naming a new, empty store; NULL on failure. */
    char *(*fresh)(void *user);
    void *user;
} store_contract_env;

/* Each test's fixture: a fresh store from env, open. cmocka setup (the prestate is the env)
 * and teardown; shared by the contract's files. */
typedef struct store_fx {
    const store_contract_env *env;
    char *where;
    struct acp_store *st;
} store_fx;
int store_fx_setup(void **state);
int store_fx_teardown(void **state);

/* Runs every contract test; returns the number of failures (0: all passed). */
int store_contract_run(const store_contract_env *env);
/* The same for acp_store_fork (contract_fork.c). */
int store_fork_contract_run(const store_contract_env *env);

#endif
