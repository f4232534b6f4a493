/* SPDX-License-Identifier: Apache-2.0 */
/* libpq, loaded when the first PostgreSQL store is opened instead of when the program starts.
 *
 * Why: linking libpq costs every program ~3.4 ms of CPU at each start (perf stat -r 50: an
 * empty main linked against libuv+jansson+sqlite3 1.1 ms, the same plus libpq 4.5 ms), because
 * libpq drags in Kerberos, LDAP and TLS libraries and runs their constructors. acp-agent on its
 * default SQLite store never needs it, and its cold-start goal (spawn + initialize + session/new)
 * is 5 ms. So libacp does not link libpq: store/postgres.c stays written against <libpq-fe.h>,
 * and the functions it calls are defined here, each resolving libpq.so.5 on first use
 * (dlopen, RTLD_LOCAL) and forwarding to it.
 *
 * Without libpq.so.5 on the system, PQconninfoParse accepts every string (with no options),
 * PQconnectdbParams returns a connection that never connects, and PQerrorMessage says why:
 * acp_store_open fails with "PostgreSQL support needs libpq.so.5: <dlerror>". Every other
 * function behaves as libpq does for a NULL connection or result.
 *
 * The definitions are hidden: inside libacp.so they replace libpq for libacp's own calls only,
 * never for a program that links libpq itself. The resolved table is process-wide on purpose:
 * it caches what the dynamic linker would have done, written once under pthread_once. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#pragma GCC visibility push(hidden)
#include <libpq-fe.h>
#pragma GCC visibility pop

#define LIBPQ "libpq.so.5"

static char never_connected; /* what DEAD points at; never read */
#define DEAD ((PGconn *)&never_connected)

/* X(return type, name, parameters, arguments, the result without libpq) */
#define PQ_CALLS(X)                                                                                \
    X(PGconn *, PQconnectdbParams, (const char *const *k, const char *const *v, int e), (k, v, e), \
      DEAD)                                                                                        \
    X(PQconninfoOption *, PQconninfoParse, (const char *s, char **err), (s, err), no_options(err)) \
    X(char *, PQerrorMessage, (const PGconn *c), (c), pq.error)                                    \
    X(ConnStatusType, PQstatus, (const PGconn *c), (c), CONNECTION_BAD)                            \
    X(PGTransactionStatusType, PQtransactionStatus, (const PGconn *c), (c), PQTRANS_UNKNOWN)       \
    X(char *, PQhost, (const PGconn *c), (c), NULL)                                                \
    X(char *, PQport, (const PGconn *c), (c), NULL)                                                \
    X(char *, PQdb, (const PGconn *c), (c), NULL)                                                  \
    X(char *, PQuser, (const PGconn *c), (c), NULL)                                                \
    X(char *, PQpass, (const PGconn *c), (c), NULL)                                                \
    X(int, PQsocket, (const PGconn *c), (c), -1)                                                   \
    X(int, PQconsumeInput, (PGconn * c), (c), 0)                                                   \
    X(int, PQisBusy, (PGconn * c), (c), 0)                                                         \
    X(PGnotify *, PQnotifies, (PGconn * c), (c), NULL)                                             \
    X(PQnoticeProcessor, PQsetNoticeProcessor, (PGconn * c, PQnoticeProcessor f, void *arg),       \
      (c, f, arg), NULL)                                                                           \
    X(PGresult *, PQexec, (PGconn * c, const char *q), (c, q), NULL)                               \
    X(PGresult *, PQprepare, (PGconn * c, const char *n, const char *q, int np, const Oid *t),     \
      (c, n, q, np, t), NULL)                                                                      \
    X(PGresult *, PQexecPrepared,                                                                  \
      (PGconn * c, const char *n, int np, const char *const *v, const int *l, const int *f,        \
       int rf),                                                                                    \
      (c, n, np, v, l, f, rf), NULL)                                                               \
    X(int, PQsendQueryPrepared,                                                                    \
      (PGconn * c, const char *n, int np, const char *const *v, const int *l, const int *f,        \
       int rf),                                                                                    \
      (c, n, np, v, l, f, rf), 0)                                                                  \
    X(int, PQsendQueryParams,                                                                      \
      (PGconn * c, const char *q, int np, const Oid *t, const char *const *v, const int *l,        \
       const int *f, int rf),                                                                      \
      (c, q, np, t, v, l, f, rf), 0)                                                               \
    X(int, PQbackendPID, (const PGconn *c), (c), 0)                                                \
    X(PGresult *, PQgetResult, (PGconn * c), (c), NULL)                                            \
    X(int, PQenterPipelineMode, (PGconn * c), (c), 0)                                              \
    X(int, PQexitPipelineMode, (PGconn * c), (c), 0)                                               \
    X(int, PQpipelineSync, (PGconn * c), (c), 0)                                                   \
    X(ExecStatusType, PQresultStatus, (const PGresult *r), (r), PGRES_FATAL_ERROR)                 \
    X(char *, PQresultErrorField, (const PGresult *r, int f), (r, f), NULL)                        \
    X(int, PQntuples, (const PGresult *r), (r), 0)                                                 \
    X(char *, PQgetvalue, (const PGresult *r, int t, int f), (r, t, f), NULL)                      \
    X(int, PQgetlength, (const PGresult *r, int t, int f), (r, t, f), 0)                           \
    X(int, PQgetisnull, (const PGresult *r, int t, int f), (r, t, f), 1)                           \
    X(char *, PQcmdTuples, (PGresult * r), (r), "")

/* V(name, parameters, arguments, what to do without libpq) */
#define PQ_VOID_CALLS(V)                                                                           \
    V(PQfinish, (PGconn * c), (c), (void)c)                                                        \
    V(PQclear, (PGresult * r), (r), (void)r)                                                       \
    V(PQfreemem, (void *p), (p), free(p))                                                          \
    V(PQconninfoFree, (PQconninfoOption * o), (o), free(o))

#define FIELD(r, n, p, a, f)   r(*n) p;
#define VOID_FIELD(n, p, a, f) void(*n) p;
static struct {
    pthread_once_t once;
    bool loaded;
    char error[512]; /* why libpq could not be used */
    PQ_CALLS(FIELD)
    PQ_VOID_CALLS(VOID_FIELD)
} pq = {.once = PTHREAD_ONCE_INIT};

/* Stands for the parse of a string nobody can check without libpq: connecting will fail with
 * the reason, which "invalid connection string" would hide. */
static PQconninfoOption *no_options(char **err)
{
    if (err) *err = NULL;
    return calloc(1, sizeof(PQconninfoOption));
}

static bool resolve(void *lib, const char *name, void *slot)
{
    void *sym = dlsym(lib, name);
    if (!sym)
        snprintf(pq.error, sizeof pq.error, "PostgreSQL support needs " LIBPQ " with %s: %s", name,
                 dlerror());
    else
        memcpy(slot, &sym, sizeof sym); /* POSIX: a function's address fits a void * */
    return sym != NULL;
}

static void load(void)
{
    void *lib = dlopen(LIBPQ, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(pq.error, sizeof pq.error, "PostgreSQL support needs " LIBPQ ": %s", dlerror());
        return;
    }
#define RESOLVE(r, n, p, a, f)   &&resolve(lib, #n, &pq.n)
#define VOID_RESOLVE(n, p, a, f) &&resolve(lib, #n, &pq.n)
    pq.loaded = true PQ_CALLS(RESOLVE) PQ_VOID_CALLS(VOID_RESOLVE);
    if (!pq.loaded) dlclose(lib);
}

static bool ready(void)
{
    pthread_once(&pq.once, load);
    return pq.loaded;
}

#define SHIM(r, n, p, a, f)                                                                        \
    r n p                                                                                          \
    {                                                                                              \
        return ready() ? pq.n a : f;                                                               \
    }
#define VOID_SHIM(n, p, a, f)                                                                      \
    void n p                                                                                       \
    {                                                                                              \
        if (ready())                                                                               \
            pq.n a;                                                                                \
        else                                                                                       \
            f;                                                                                     \
    }
PQ_CALLS(SHIM)
PQ_VOID_CALLS(VOID_SHIM)
