/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers for tests that use the throwaway clusters of scripts/pg-test-cluster.sh, which the
 * ctest fixtures pg_start / pg_outage_start bring up in $ACP_BUILD/<name>. */
#ifndef ACP_TEST_PG_ENV_H
#define ACP_TEST_PG_ENV_H

#include <stdbool.h>

/* Exit status that ctest reports as "skipped" (SKIP_RETURN_CODE). */
#define PG_ENV_SKIP 77

/* The conninfo of cluster `name` (malloc'd), or NULL when it is not running: the caller
 * then exits PG_ENV_SKIP. */
char *pg_env_conninfo(const char *name);

/* Runs `sql` (any number of statements) on conninfo; returns 0 or -1 (message printed). */
int pg_env_exec(const char *conninfo, const char *sql);

/* The first column of the first row of `sql`, malloc'd; NULL if no row or on error. */
char *pg_env_value(const char *conninfo, const char *sql);

/* A new, empty database on the cluster of `base`; returns the conninfo naming it
 * (malloc'd) and its name in name_out (64 bytes). NULL on failure. */
char *pg_env_new_db(const char *base, char *name_out);

/* As pg_env_new_db(), with synchronous_commit off for every connection made with the returned
 * conninfo: for tests of what a fault leaves, not of power loss (a loaded host's fsyncs made
 * them many times slower). */
char *pg_env_new_db_nosync(const char *base, char *name_out);

/* DROP DATABASE name, whoever is still connected to it. */
void pg_env_drop_db(const char *base, const char *name);

/* Runs `scripts/pg-test-cluster.sh cmd $ACP_BUILD/name`: 0 when it exited 0. */
int pg_env_cluster(const char *cmd, const char *name);

#endif
