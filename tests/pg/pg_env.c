/* SPDX-License-Identifier: Apache-2.0 */
#include "pg_env.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "re");
    if (!f) return NULL;
    char buf[1024];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' ')) buf[--n] = 0;
    return n ? strdup(buf) : NULL;
}

char *pg_env_conninfo(const char *name)
{
    const char *build = getenv("ACP_BUILD");
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/conninfo", build ? build : ".", name);
    char *c = read_file(path);
    if (!c) fprintf(stderr, "no PostgreSQL test cluster (%s): skipping\n", path);
    return c;
}

static PGconn *connect_to(const char *conninfo)
{
    PGconn *c = PQconnectdb(conninfo);
    if (PQstatus(c) != CONNECTION_OK) {
        fprintf(stderr, "pg_env: connect: %s", PQerrorMessage(c));
        PQfinish(c);
        return NULL;
    }
    return c;
}

int pg_env_exec(const char *conninfo, const char *sql)
{
    PGconn *c = connect_to(conninfo);
    if (!c) return -1;
    PGresult *r = PQexec(c, sql);
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
    if (!ok) fprintf(stderr, "pg_env: %s: %s", sql, PQerrorMessage(c));
    PQclear(r);
    PQfinish(c);
    return ok ? 0 : -1;
}

char *pg_env_value(const char *conninfo, const char *sql)
{
    PGconn *c = connect_to(conninfo);
    if (!c) return NULL;
    PGresult *r = PQexec(c, sql);
    char *v = NULL;
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0 && !PQgetisnull(r, 0, 0))
        v = strdup(PQgetvalue(r, 0, 0));
    else if (PQresultStatus(r) != PGRES_TUPLES_OK)
        fprintf(stderr, "pg_env: %s: %s", sql, PQerrorMessage(c));
    PQclear(r);
    PQfinish(c);
    return v;
}

char *pg_env_new_db(const char *base, char *name_out)
{
    static const char hex[] = "0123456789abcdef";
    char rnd[8] = {0}, sql[128];
    FILE *u = fopen("/dev/urandom", "re");
    if (!u || fread(rnd, 1, sizeof rnd, u) != sizeof rnd) {
        if (u) fclose(u);
        return NULL;
    }
    fclose(u);
    strcpy(name_out, "acp_t_");
    for (int i = 0; i < 8; i++) {
        name_out[6 + 2 * i] = hex[(rnd[i] >> 4) & 15];
        name_out[7 + 2 * i] = hex[rnd[i] & 15];
    }
    name_out[22] = 0;
    snprintf(sql, sizeof sql, "CREATE DATABASE %s", name_out);
    if (pg_env_exec(base, sql)) return NULL;
    size_t n = strlen(base) + 64;
    char *c = malloc(n);
    if (c) snprintf(c, n, "%s dbname=%s", base, name_out); /* a later key wins in a conninfo */
    return c;
}

char *pg_env_new_db_nosync(const char *base, char *name_out)
{
    char *plain = pg_env_new_db(base, name_out);
    if (!plain) return NULL;
    size_t n = strlen(plain) + 64;
    char *c = malloc(n);
    if (c) snprintf(c, n, "%s options='-c synchronous_commit=off'", plain);
    free(plain);
    return c;
}

void pg_env_drop_db(const char *base, const char *name)
{
    char sql[128];
    snprintf(sql, sizeof sql, "DROP DATABASE %s WITH (FORCE)", name);
    pg_env_exec(base, sql);
}

int pg_env_cluster(const char *cmd, const char *name)
{
    const char *src = getenv("ACP_SOURCE"), *build = getenv("ACP_BUILD");
    char script[1024], state[1024];
    snprintf(script, sizeof script, "%s/scripts/pg-test-cluster.sh", src ? src : ".");
    snprintf(state, sizeof state, "%s/%s", build ? build : ".", name);
    pid_t pid = fork();
    if (pid == 0) {
        /* The script's own output (the conninfo on start) is not the test's. */
        if (!freopen("/dev/null", "w", stdout)) _exit(127);
        execl(script, script, cmd, state, (char *)NULL);
        _exit(127);
    }
    int st;
    if (pid < 0 || waitpid(pid, &st, 0) != pid) return -1;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}
