/* SPDX-License-Identifier: Apache-2.0 */
/* The shared store contract suite (tests/store/contract.c) against PostgreSQL. One fresh
 * database per run; each test gets a new, empty schema in it (search_path in the conninfo's
 * options), which is how a site would give the store its own schema, and costs milliseconds
 * where a database per test costs a template copy. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contract.h"
#include "pg_env.h"

typedef struct run {
    char *db; /* conninfo of this run's database */
    int n;
} run;

static char *fresh(void *user)
{
    run *r = user;
    char sql[64];
    snprintf(sql, sizeof sql, "CREATE SCHEMA s%d", ++r->n);
    if (pg_env_exec(r->db, sql)) return NULL;
    size_t len = strlen(r->db) + 64;
    char *where = malloc(len);
    if (where) snprintf(where, len, "%s options='-c search_path=s%d'", r->db, r->n);
    return where;
}

int main(void)
{
    char *base = pg_env_conninfo("pg");
    if (!base) return PG_ENV_SKIP;
    char name[64], sql[128];
    run r = {.db = pg_env_new_db(base, name)};
    if (!r.db) {
        free(base);
        return 1;
    }
    store_contract_env env = {.name = "store_contract_postgresql", .fresh = fresh, .user = &r};
    int failed = store_contract_run(&env);
    failed += store_fork_contract_run(&env);
    snprintf(sql, sizeof sql, "DROP DATABASE %s WITH (FORCE)", name);
    pg_env_exec(base, sql);
    free(r.db);
    free(base);
    return failed ? 1 : 0;
}
