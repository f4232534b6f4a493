/* SPDX-License-Identifier: Apache-2.0 */
/* The store contract against SQLite: each test gets a new database file. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contract.h"
#include "tmpdir.h"

typedef struct sqlite_env {
    char dir[PATH_MAX];
    int n;
} sqlite_env;

static char *fresh(void *user)
{
    sqlite_env *e = user;
    char path[PATH_MAX + 64];
    /* a missing parent directory too: acp_store_open creates it */
    snprintf(path, sizeof path, "%s/t%d/sub/sessions.db", e->dir, e->n++);
    return strdup(path);
}

int main(void)
{
    sqlite_env e = {0};
    if (tmpdir_make(e.dir, sizeof e.dir, "store")) return perror("mkdtemp"), 1;
    store_contract_env env = {.name = "store_contract_sqlite", .fresh = fresh, .user = &e};
    int failed = store_contract_run(&env);
    failed += store_fork_contract_run(&env);
    tmpdir_remove(e.dir);
    return failed ? 1 : 0;
}
