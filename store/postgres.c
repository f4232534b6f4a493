/* SPDX-License-Identifier: Apache-2.0 */
/* The PostgreSQL store backend: one session history shared by agent processes on many hosts.
 *
 * Same model and semantics as sqlite.c. What differs is the database's nature:
 * - Order across processes: a batch locks each touched session row (UPDATE ... next_seq) in
 *   the committing transaction, so seqs of one session are handed out in commit order.
 * - Round trips: a session's share of a batch goes in one statement (its texts as one
 *   binary text[] parameter, unnested server-side), so 1,000 updates are one round trip.
 * - The server can go away. Every call first checks the connection; a dead one is dropped
 *   and re-made (at most one attempt per backoff step, each bounded by connect_timeout), and
 *   while that fails calls return ACP_ESTORE "session store unavailable: ...". Every write is
 *   one transaction, so a failure leaves nothing half-written.
 * - Secrets: the conninfo may hold a password. Messages are built from PQuser/PQhost/PQport/
 *   PQdb and from libpq's error text with every known password value masked out; libpq's own
 *   conninfo parse errors (which quote the string) are never shown. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <limits.h>
#include <libpq-fe.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "acp/num.h"
#include "store/backends.h"
#include "store/inject.h"

#define SCHEMA_VERSION   6
#define MIGRATE_LOCK_KEY 0x6c69626163700001LL /* "libacp" + 1: any constant all agents share */
#define REPLAY_CHUNK     1000                 /* updates per replay round trip */
#define BACKOFF_FIRST_MS 100
#define BACKOFF_MAX_MS   5000 /* a blackholed host costs connect_timeout per attempt */
#define TEXTOID          25
/* libpq grows a connection's input and output buffers to the largest message it carried and
 * never shrinks them; past this the connection is replaced after the call (the next call
 * reconnects), or one 60 MB prompt stored pins 128 MiB for the agent's life. A streaming
 * turn's batches stay under it and reuse the buffers. */
#define CONN_KEEP_BYTES (16u << 20)

typedef struct pg_store {
    acp_store base; /* first: the generic layer's view */
    char *conninfo;
    char *password; /* from the conninfo, only to mask it out of messages */
    PGconn *conn;   /* NULL while disconnected */
    char target[256];
    int64_t retry_at_ms; /* no reconnect attempt before this (monotonic) */
    int backoff_ms;
    char reason[256]; /* why the last connect failed, masked */
    size_t row_bytes; /* mean size of replayed updates lately: sizes capped replay chunks */
    bool lose_answer; /* store/inject.h: the commit's answer is to be lost */
} pg_store;

/* Each migration moves the schema from version i to i + 1. Only ever append. Every name
 * starts with acp_: the store may share a database (or schema) with other applications,
 * where "sessions" is a likely name already taken. Text columns
 * use the "C" collation so ids and timestamps order bytewise, as in SQLite, whatever the
 * database's locale. History has no foreign key (a per-row check would cost more than the
 * insert): delete removes both under the session's row lock instead. */
static const char *const migrations[SCHEMA_VERSION] = {
    "CREATE TABLE acp_sessions ("
    " id text COLLATE \"C\" PRIMARY KEY,"
    " cwd text COLLATE \"C\" NOT NULL,"
    " add_dirs text NOT NULL,"
    " title text,"
    " created_at text COLLATE \"C\" NOT NULL,"
    " updated_at text COLLATE \"C\" NOT NULL,"
    " next_seq bigint NOT NULL DEFAULT 1);"
    "CREATE INDEX acp_sessions_by_time ON acp_sessions (updated_at DESC, id DESC);"
    "CREATE INDEX acp_sessions_by_cwd_time ON acp_sessions (cwd, updated_at DESC, id DESC);"
    "CREATE TABLE acp_updates ("
    " session_id text COLLATE \"C\" NOT NULL,"
    " seq bigint NOT NULL,"
    " body text NOT NULL,"
    " PRIMARY KEY (session_id, seq));",
    /* v1 -> v2: the agent's per-session state. A nullable column without a default is a
     * catalog change only (no table rewrite), so the migration's ACCESS EXCLUSIVE lock is
     * held for moments even on a large store. */
    "ALTER TABLE acp_sessions ADD COLUMN state text;",
    /* v2 -> v3: the session's lease (acp_store_lease_acquire): who holds it, its epoch (the
     * fence of every write) and until when by the server's clock (never the hosts': theirs
     * disagree). A constant default is a catalog change too (PostgreSQL 11 and later). */
    "ALTER TABLE acp_sessions ADD COLUMN lease_holder text,"
    " ADD COLUMN lease_epoch bigint NOT NULL DEFAULT 0,"
    " ADD COLUMN lease_expires timestamptz;",
    /* v3 -> v4: the unstable session/archive and systemPrompt (catalog changes only), and
     * indexes leading with the flag for the filtered lists: a page is one index range scan
     * however many sessions the filter leaves out. */
    "ALTER TABLE acp_sessions ADD COLUMN archived boolean NOT NULL DEFAULT false,"
    " ADD COLUMN system_prompt text;"
    "CREATE INDEX acp_sessions_by_archived ON acp_sessions"
    " (archived, updated_at DESC, id DESC);"
    "CREATE INDEX acp_sessions_by_cwd_archived ON acp_sessions"
    " (cwd, archived, updated_at DESC, id DESC);",
    /* v4 -> v5 (unstable: subagent sessions): the id of the session that owns this one as a
     * child. The partial index serves acp_store_children() and a parent's delete. */
    "ALTER TABLE acp_sessions ADD COLUMN parent text COLLATE \"C\";"
    "CREATE INDEX acp_sessions_by_parent ON acp_sessions (parent, created_at, id)"
    " WHERE parent IS NOT NULL;",
    /* v5 -> v6: whether the holder marked its lease busy (a turn running): an idle lease is
     * taken over by acp_store_lease_take(), a busy one waited for. */
    "ALTER TABLE acp_sessions ADD COLUMN lease_busy boolean NOT NULL DEFAULT false;",
};

enum {
    Q_CREATE,
    Q_GET,
    Q_SET_INFO,
    Q_SET_ROOTS,
    Q_SET_STATE,
    Q_APPEND,
    Q_LAST_SEQ,
    Q_REPLAY,
    Q_DEL_SESSION,
    Q_DEL_UPDATES,
    Q_LIST_ALL,
    Q_LIST_ALL_AFTER,
    Q_LIST_CWD,
    Q_LIST_CWD_AFTER,
    Q_EPOCH,
    Q_ACQUIRE,
    Q_RENEW,
    Q_RELEASE,
    Q_SET_ARCHIVED,
    Q_SET_PROMPT,
    Q_CHILDREN,
    Q_DEL_TREE,
    Q_FORK,
    Q_FORK_UPDATES,
    /* Q_LIST_ALL .. Q_LIST_CWD_AFTER again for archived = false, then for archived = true. */
    Q_LIST_X,
    Q_LIST_O = Q_LIST_X + 4,
    Q_COUNT = Q_LIST_O + 4
};

/* COLS leaves state out: only get returns it, so list ships no more than it shows. */
#define COLS "id, cwd, add_dirs, title, created_at, updated_at"
/* What list and get read: COLS and the archived flag (column 6). */
#define RCOLS      COLS ", archived, parent"
#define LIST_ORDER " ORDER BY updated_at DESC, id DESC LIMIT "

static const struct {
    const char *name;
    const char *sql;
} stmts[Q_COUNT] = {
    /* With a holder ($7), its lease is taken as the row is made: epoch 1. */
    [Q_CREATE] = {"acp_create",
                  "INSERT INTO acp_sessions (" COLS ", lease_holder, lease_epoch, lease_expires,"
                  " archived, system_prompt, parent)"
                  " VALUES ($1, $2, $3, $4, $5, $6, $7::text, ($7::text IS NOT NULL)::int,"
                  " clock_timestamp() + $8::bigint * interval '1 millisecond', $9::boolean, $10,"
                  " $11)"
                  " ON CONFLICT (id) DO NOTHING"},
    [Q_GET] = {"acp_get", "SELECT " RCOLS ", state, system_prompt FROM acp_sessions WHERE id = $1"},
    /* Every write's "AND ($n = 0 OR lease_epoch = $n)": no lease fence, or the current one. */
    [Q_SET_INFO] = {"acp_set_info",
                    "UPDATE acp_sessions SET title = CASE WHEN $2::boolean THEN $3 ELSE title END,"
                    " updated_at = COALESCE($4, updated_at) WHERE id = $1"
                    " AND ($5::bigint = 0 OR lease_epoch = $5::bigint)"},
    [Q_SET_ROOTS] = {"acp_set_roots",
                     "UPDATE acp_sessions SET cwd = $2, add_dirs = $3 WHERE id = $1"
                     " AND ($4::bigint = 0 OR lease_epoch = $4::bigint)"},
    [Q_SET_STATE] = {"acp_set_state", "UPDATE acp_sessions SET state = $2 WHERE id = $1"
                                      " AND ($3::bigint = 0 OR lease_epoch = $3::bigint)"},
    /* The row lock taken by the UPDATE orders concurrent committers of one session; a
     * session deleted meanwhile, or whose fence is stale, matches no row, and then nothing is
     * inserted (0 rows: the commit reports the session lost). */
    [Q_APPEND] = {"acp_append",
                  "WITH s AS (UPDATE acp_sessions SET next_seq = next_seq + $2::bigint,"
                  " updated_at = $3 WHERE id = $1"
                  " AND ($5::bigint = 0 OR lease_epoch = $5::bigint)"
                  " RETURNING next_seq - $2::bigint"
                  " AS base) INSERT INTO acp_updates (session_id, seq, body)"
                  " SELECT $1, s.base + u.ord - 1, u.body"
                  " FROM s, unnest($4::text[]) WITH ORDINALITY AS u(body, ord)"},
    [Q_LAST_SEQ] = {"acp_last_seq", "SELECT next_seq - 1 FROM acp_sessions WHERE id = $1"},
    [Q_REPLAY] = {"acp_replay", "SELECT seq, body FROM acp_updates WHERE session_id = $1"
                                " AND seq > $2::bigint AND seq <= $3::bigint ORDER BY seq"},
    [Q_DEL_SESSION] = {"acp_del_session", "DELETE FROM acp_sessions WHERE id = $1"},
    [Q_DEL_UPDATES] = {"acp_del_updates", "DELETE FROM acp_updates WHERE session_id = $1"},
    [Q_LIST_ALL] = {"acp_list", "SELECT " RCOLS " FROM acp_sessions" LIST_ORDER "$1::bigint"},
    [Q_LIST_ALL_AFTER] = {"acp_list_after",
                          "SELECT " RCOLS " FROM acp_sessions"
                          " WHERE (updated_at, id) < ($2, $3)" LIST_ORDER "$1::bigint"},
    [Q_LIST_CWD] = {"acp_list_cwd",
                    "SELECT " RCOLS " FROM acp_sessions WHERE cwd = $2" LIST_ORDER "$1::bigint"},
    [Q_LIST_CWD_AFTER] = {"acp_list_cwd_after",
                          "SELECT " RCOLS " FROM acp_sessions WHERE cwd = $2"
                          " AND (updated_at, id) < ($3, $4)" LIST_ORDER "$1::bigint"},
#define LIST_BY(base, name, a)                                                                     \
    [base] = {"acp_list_" name,                                                                    \
              "SELECT " RCOLS " FROM acp_sessions WHERE archived = " a LIST_ORDER "$1::bigint"},   \
    [base + 1] = {"acp_list_after_" name,                                                          \
                  "SELECT " RCOLS " FROM acp_sessions WHERE archived = " a                         \
                  " AND (updated_at, id) < ($2, $3)" LIST_ORDER "$1::bigint"},                     \
    [base + 2] = {"acp_list_cwd_" name, "SELECT " RCOLS " FROM acp_sessions WHERE cwd = $2"        \
                                        " AND archived = " a LIST_ORDER "$1::bigint"},             \
    [base + 3] = {"acp_list_cwd_after_" name,                                                      \
                  "SELECT " RCOLS " FROM acp_sessions WHERE cwd = $2 AND archived = " a            \
                  " AND (updated_at, id) < ($3, $4)" LIST_ORDER "$1::bigint"}
    LIST_BY(Q_LIST_X, "x", "false"),
    LIST_BY(Q_LIST_O, "o", "true"),
#undef LIST_BY
    [Q_SET_ARCHIVED] = {"acp_set_archived",
                        "UPDATE acp_sessions SET archived = $2::boolean WHERE id = $1"},
    [Q_SET_PROMPT] = {"acp_set_prompt", "UPDATE acp_sessions SET system_prompt = $2 WHERE id = $1"
                                        " AND ($3::bigint = 0 OR lease_epoch = $3::bigint)"},
    [Q_CHILDREN] = {"acp_children", "SELECT " RCOLS " FROM acp_sessions WHERE parent = $1"
                                    " ORDER BY created_at, id"},
    /* The session's descendants, every generation, rows and histories. */
    [Q_DEL_TREE] = {"acp_del_tree",
                    "WITH RECURSIVE t(id) AS (SELECT id FROM acp_sessions WHERE parent = $1"
                    " UNION SELECT s.id FROM acp_sessions s JOIN t ON s.parent = t.id),"
                    " d AS (DELETE FROM acp_sessions WHERE id IN (SELECT id FROM t) RETURNING id)"
                    " DELETE FROM acp_updates WHERE session_id IN (SELECT id FROM d)"},
    [Q_EPOCH] = {"acp_epoch", "SELECT lease_epoch FROM acp_sessions WHERE id = $1"},
    /* One statement, one row lock, one reading of the server's clock: no row when the session
     * is absent; else the epoch when granted (a new one when the lease was free: never taken,
     * released, or expired; the same when it is already this holder's), or NULL and the ms
     * the holder's lease has left. */
    [Q_ACQUIRE] = {"acp_lease_acquire",
                   "WITH c AS (SELECT id, lease_holder, lease_expires, lease_busy,"
                   " clock_timestamp() AS now FROM acp_sessions WHERE id = $1 FOR UPDATE),"
                   " g AS (UPDATE acp_sessions s SET lease_holder = $2, lease_epoch ="
                   " s.lease_epoch + (c.lease_holder IS DISTINCT FROM $2)::int, lease_expires ="
                   " c.now + $3::bigint * interval '1 millisecond', lease_busy = c.lease_busy"
                   " AND c.lease_holder IS NOT DISTINCT FROM $2 FROM c WHERE s.id = c.id AND"
                   " (c.lease_expires IS NULL OR c.lease_expires <= c.now OR c.lease_holder = $2"
                   " OR c.lease_holder = $4 OR ($5::boolean AND NOT c.lease_busy))"
                   " RETURNING s.lease_epoch)"
                   " SELECT (SELECT lease_epoch FROM g),"
                   " ceil(extract(epoch FROM c.lease_expires - c.now) * 1000)::bigint,"
                   " c.lease_holder FROM c"},
    /* No row: absent; 1: renewed; 0: the epoch moved on. */
    [Q_RENEW] = {"acp_lease_renew",
                 "WITH c AS (SELECT id, lease_epoch FROM acp_sessions WHERE id = $1 FOR UPDATE),"
                 " r AS (UPDATE acp_sessions s SET lease_expires = clock_timestamp() +"
                 " $3::bigint * interval '1 millisecond', lease_busy ="
                 " COALESCE($4::boolean, s.lease_busy) FROM c WHERE s.id = c.id AND"
                 " c.lease_epoch = $2::bigint RETURNING 1) SELECT (SELECT count(*) FROM r) FROM c"},
    /* A new epoch: writes under the given-up fence are stale from now on. */
    [Q_RELEASE] = {"acp_lease_release",
                   "UPDATE acp_sessions SET lease_holder = NULL, lease_expires = NULL,"
                   " lease_busy = false, lease_epoch = lease_epoch + 1 WHERE id = $1 AND "
                   "lease_epoch = $2::bigint"},
    /* The fork's row from the source's ($9), which stays share-locked to the transaction's
     * end: a delete or a commit of the source waits, so the history copied next is exactly
     * what next_seq says. One row back: whether the source exists, and whether the fork's
     * row was made (no: its id exists). */
    [Q_FORK] = {"acp_fork",
                "WITH src AS (SELECT * FROM acp_sessions WHERE id = $9 FOR SHARE),"
                " ins AS (INSERT INTO acp_sessions (" COLS ", state, next_seq, lease_holder,"
                " lease_epoch, lease_expires, archived, system_prompt) SELECT $1, $2, $3,"
                " COALESCE($4, title), $5, $6, COALESCE($10, state), next_seq, $7::text,"
                " ($7::text IS NOT NULL)::int,"
                " clock_timestamp() + $8::bigint * interval '1 millisecond', $11::boolean,"
                " COALESCE($12, system_prompt) FROM src ON CONFLICT (id) DO NOTHING RETURNING 1)"
                " SELECT (SELECT count(*) FROM src), (SELECT count(*) FROM ins)"},
    /* Copied inside the server, never through this process. */
    [Q_FORK_UPDATES] = {"acp_fork_updates",
                        "INSERT INTO acp_updates (session_id, seq, body) SELECT $1, seq, body"
                        " FROM acp_updates WHERE session_id = $2"},
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Copies the first line of libpq text into dst with every password occurrence masked. */
static void scrub(const pg_store *p, const char *src, char *dst, size_t cap)
{
    const char *secrets[3] = {p->password, getenv("PGPASSWORD"), p->conn ? PQpass(p->conn) : NULL};
    size_t o = 0;
    if (!src) src = "";
    if (!strncmp(src, "FATAL:  ", 8)) src += 8; /* libpq's severity prefix says nothing here */
    while (*src == ' ') src++;
    while (*src && o + 1 < cap) {
        size_t skip = 0;
        for (int i = 0; i < 3 && !skip; i++) {
            size_t n = secrets[i] ? strlen(secrets[i]) : 0;
            if (n && !strncmp(src, secrets[i], n)) skip = n;
        }
        if (skip) {
            for (const char *m = "***"; *m && o + 1 < cap; m++) dst[o++] = *m;
            src += skip;
            continue;
        }
        char c = *src++;
        if (c == '\n' || c == '\r') break; /* the rest is libpq's hint ("Is the server ...") */
        dst[o++] = (char)(c == '\t' ? ' ' : c);
    }
    while (o && dst[o - 1] == ' ') o--;
    dst[o] = 0;
}

static void set_target(pg_store *p, const PGconn *c)
{
    const char *host = PQhost(c), *port = PQport(c), *db = PQdb(c), *user = PQuser(c);
    char t[sizeof p->target];
    snprintf(t, sizeof t, "postgresql %s@%s:%s/%s", user ? user : "", host ? host : "",
             port ? port : "", db ? db : "");
    scrub(p, t, p->target, sizeof p->target); /* a careless host name could hold it */
}

static void drop_conn(pg_store *p)
{
    if (p->conn) PQfinish(p->conn);
    p->conn = NULL;
}

/* After a call whose largest message was about `bytes` (issue 13, item 6). */
static void shed_buffers(pg_store *p, size_t bytes)
{
    if (bytes <= CONN_KEEP_BYTES || !p->conn) return;
    drop_conn(p);
    p->retry_at_ms = 0;
}

static int unavailable(pg_store *p)
{
    return acp_error_set(ACP_ESTORE, "session store unavailable: %s (%s)", p->reason, p->target);
}

/* A statement failed. A lost connection, a server shutting down (57P*), or a server that
 * became read-only under us (25006: a failover demoted it; a new connection may reach the
 * new primary) is "unavailable" and the connection is dropped so the next call reconnects;
 * anything else is a plain error and an open transaction is rolled back. */
static int fail_result(pg_store *p, PGresult *r, const char *what)
{
    const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    const char *primary = r ? PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    char msg[256];
    scrub(p, primary ? primary : PQerrorMessage(p->conn), msg, sizeof msg);
    bool lost = PQstatus(p->conn) != CONNECTION_OK ||
                (state && (!strncmp(state, "08", 2) || !strncmp(state, "57P", 3) ||
                           !strcmp(state, "25006")));
    PQclear(r);
    if (lost) {
        snprintf(p->reason, sizeof p->reason, "%s", msg[0] ? msg : "connection lost");
        drop_conn(p);
        p->retry_at_ms = 0; /* the first reconnect is immediate */
        return unavailable(p);
    }
    if (PQtransactionStatus(p->conn) != PQTRANS_IDLE) PQclear(PQexec(p->conn, "ROLLBACK"));
    return acp_error_set(ACP_ESTORE, "postgresql %s: %s", what, msg);
}

/* --- fault injection (store/inject.h) ------------------------------------------------------ */

static PGconn *open_conn(const pg_store *p);

/* ACP_FAULT_ERROR: what is sent in place of the statement. The server raises the SQLSTATE
 * as it would for the statement failing there (inside a transaction, aborting it). */
static void raise_sql(const acp_store_fault *f, char *buf, size_t n)
{
    snprintf(buf, n, "DO $$BEGIN RAISE EXCEPTION 'injected fault' USING ERRCODE = '%s'; END$$",
             f->sqlstate);
}

/* ACP_FAULT_LOSE: the server ends our backend, as an administrator or a restart would
 * (pg_terminate_backend from a second connection), and its goodbye reaches our socket. */
static void lose_conn(pg_store *p)
{
    char sql[64];
    snprintf(sql, sizeof sql, "SELECT pg_terminate_backend(%d)", PQbackendPID(p->conn));
    PGconn *k = open_conn(p);
    if (k && PQstatus(k) == CONNECTION_OK) PQclear(PQexec(k, sql));
    PQfinish(k);
    struct pollfd pfd = {.fd = PQsocket(p->conn), .events = POLLIN};
    if (pfd.fd >= 0) poll(&pfd, 1, 2000);
}

/* ACP_FAULT_LOSE_AFTER: the statement ran, and its answer is lost with the connection. Our
 * socket is swapped for one whose peer is gone (the server sees us leave), and libpq reads
 * the end of the stream as it would had the network dropped there. */
static void lose_answer(pg_store *p)
{
    int fd = PQsocket(p->conn), sv[2];
    if (fd >= 0 && !socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
        dup3(sv[0], fd, O_CLOEXEC);
        close(sv[0]);
        close(sv[1]);
    }
    PQconsumeInput(p->conn);
}

/* Runs one statement of an operation: sql (simple protocol), else prepared statement q with
 * text parameters. Every statement but commit's appends comes here, so an armed fault takes
 * the place of the server's answer where the server would have given it. */
static PGresult *run(pg_store *p, const char *sql, int q, int n, const char *const *vals)
{
    const acp_store_fault *f = acp_store_fault_at(&p->base);
    char raise[160];
    if (f && f->kind == ACP_FAULT_ERROR) {
        raise_sql(f, raise, sizeof raise);
        sql = raise;
    }
    if (f && f->kind == ACP_FAULT_LOSE) lose_conn(p);
    PGresult *r =
        sql ? PQexec(p->conn, sql) : PQexecPrepared(p->conn, stmts[q].name, n, vals, NULL, NULL, 0);
    if (f && f->kind == ACP_FAULT_LOSE_AFTER) {
        PQclear(r);
        lose_answer(p);
        return NULL;
    }
    return r;
}

/* Runs a prepared statement with text parameters (the one binary parameter, commit's text[],
 * goes through send_append). *out receives the result (caller PQclear()s) when it has
 * status `want`. */
static int exec(pg_store *p, int q, int n, const char *const *vals, ExecStatusType want,
                PGresult **out)
{
    PGresult *r = run(p, NULL, q, n, vals);
    if (!r || PQresultStatus(r) != want) return fail_result(p, r, stmts[q].name + 4);
    *out = r;
    return 0;
}

/* A count or a bigint the server wrote as text. Anything but a number from 0 up is a broken
 * server or connection, said as a store failure rather than read as 0. */
static int server_number(pg_store *p, const char *text, const char *what, int64_t *out)
{
    if (!acp_parse_i64(text, 0, INT64_MAX, out)) return 0;
    return acp_error_set(ACP_ESTORE, "PostgreSQL sent a bad %s: %s (%s)", what,
                         acp_error_last()->message, p->target);
}

static int exec_cmd(pg_store *p, int q, int n, const char *const *vals, int64_t *affected)
{
    PGresult *r = NULL;
    int rc = exec(p, q, n, vals, PGRES_COMMAND_OK, &r);
    if (rc) return rc;
    if (affected) rc = server_number(p, PQcmdTuples(r), "row count", affected);
    PQclear(r);
    return rc;
}

static int exec_simple(pg_store *p, const char *sql, const char *what)
{
    PGresult *r = run(p, sql, 0, 0, NULL);
    if (!r || PQresultStatus(r) != PGRES_COMMAND_OK) return fail_result(p, r, what);
    PQclear(r);
    return 0;
}

static void quiet_notice(void *arg, const char *message)
{
    (void)arg;
    (void)message; /* NOTICEs ("already exists, skipping") are not ours to print */
}

/* Brings the schema to SCHEMA_VERSION in one transaction. The advisory lock is taken first,
 * so two agents starting at once migrate one after the other, and the second sees the
 * first's tables. */
static int migrate(pg_store *p)
{
    char sql[128];
    snprintf(sql, sizeof sql, "BEGIN; SELECT pg_advisory_xact_lock(%lld)",
             (long long)MIGRATE_LOCK_KEY);
    PGresult *r = PQexec(p->conn, sql);
    if (!r || PQresultStatus(r) != PGRES_TUPLES_OK) return fail_result(p, r, "migrate");
    PQclear(r);
    int rc = exec_simple(p, "CREATE TABLE IF NOT EXISTS acp_schema (version integer NOT NULL)",
                         "migrate");
    if (rc) return rc;
    r = PQexec(p->conn, "SELECT coalesce(max(version), 0) FROM acp_schema");
    if (!r || PQresultStatus(r) != PGRES_TUPLES_OK) return fail_result(p, r, "migrate");
    int64_t have = 0;
    rc = server_number(p, PQgetvalue(r, 0, 0), "schema version", &have);
    PQclear(r);
    if (rc) return rc;
    if (have > SCHEMA_VERSION) {
        PQclear(PQexec(p->conn, "ROLLBACK"));
        return acp_error_set(ACP_ESTORE,
                             "session store schema version %lld is newer than this libacp "
                             "supports (%d) (%s)",
                             (long long)have, SCHEMA_VERSION, p->target);
    }
    for (int64_t v = have; v < SCHEMA_VERSION; v++)
        if ((rc = exec_simple(p, migrations[v], "migrate"))) return rc;
    if (have < SCHEMA_VERSION) {
        snprintf(sql, sizeof sql, "DELETE FROM acp_schema; INSERT INTO acp_schema VALUES (%d)",
                 SCHEMA_VERSION);
        if ((rc = exec_simple(p, sql, "migrate"))) return rc;
    }
    return exec_simple(p, "COMMIT", "migrate");
}

/* A new connection with our settings (PQstatus says whether it is up; NULL: no memory). */
static PGconn *open_conn(const pg_store *p)
{
    /* Keywords before dbname are defaults the conninfo may override; client_encoding after
     * it is forced, because stored texts must come back byte for byte. The TCP ones bound
     * how long a vanished server host (no FIN, no RST) can stall a call: the agent's loop
     * waits on it. They mean nothing on a unix socket. */
    const char *kw[10], *val[10];
    int k = 0;
    if (!getenv("PGCONNECT_TIMEOUT")) kw[k] = "connect_timeout", val[k++] = "2";
    kw[k] = "tcp_user_timeout", val[k++] = "10000"; /* ms of unacknowledged data */
    kw[k] = "keepalives_idle", val[k++] = "15";
    kw[k] = "keepalives_interval", val[k++] = "5";
    kw[k] = "keepalives_count", val[k++] = "3";
    kw[k] = "fallback_application_name", val[k++] = "libacp";
    kw[k] = "dbname", val[k++] = p->conninfo;
    kw[k] = "client_encoding", val[k++] = "UTF8";
    kw[k] = NULL, val[k] = NULL;
    return PQconnectdbParams(kw, val, 1);
}

/* One connection attempt: connect, (on the first) migrate, prepare the statements. */
static int connect_once(pg_store *p, bool first)
{
    PGconn *c = open_conn(p);
    if (!c) return acp_error_set(ACP_ENOMEM, "out of memory");
    p->conn = c;
    set_target(p, c);
    if (PQstatus(c) != CONNECTION_OK) {
        scrub(p, PQerrorMessage(c), p->reason, sizeof p->reason);
        drop_conn(p);
        return unavailable(p);
    }
    PQsetNoticeProcessor(c, quiet_notice, NULL);
    int rc = first ? migrate(p) : 0;
    for (int q = 0; !rc && q < Q_COUNT; q++) {
        PGresult *r = PQprepare(c, stmts[q].name, stmts[q].sql, 0, NULL);
        if (!r || PQresultStatus(r) != PGRES_COMMAND_OK)
            rc = fail_result(p, r, "prepare");
        else
            PQclear(r);
    }
    if (rc) drop_conn(p);
    return rc;
}

/* Whether an idle connection is still usable. A server that restarted or ended our backend
 * has sent its FATAL message and closed the socket, which shows as a readable hangup: it is
 * noticed here, before any statement is sent on it, so no write is ever left in doubt by a
 * connection that was already dead. Whatever else arrived (notices) is consumed. */
static bool conn_alive(PGconn *c)
{
    if (PQstatus(c) != CONNECTION_OK || PQtransactionStatus(c) != PQTRANS_IDLE) return false;
    for (int i = 0; i < 8; i++) {
        struct pollfd pfd = {.fd = PQsocket(c), .events = POLLIN | POLLRDHUP};
        int n = pfd.fd < 0 ? -1 : poll(&pfd, 1, 0);
        if (n == 0) return true;
        if (n < 0 || (pfd.revents & (POLLHUP | POLLRDHUP | POLLERR | POLLNVAL))) return false;
        if (!PQconsumeInput(c) || PQstatus(c) != CONNECTION_OK) return false;
        (void)PQisBusy(c); /* parses what came in */
        for (PGnotify *nt; (nt = PQnotifies(c));) PQfreemem(nt);
    }
    return PQstatus(c) == CONNECTION_OK;
}

/* Every call starts here: a usable connection, or ACP_ESTORE "unavailable". */
static int ready(pg_store *p)
{
    if (p->conn) {
        if (conn_alive(p->conn)) return 0;
        snprintf(p->reason, sizeof p->reason, "the server closed the connection");
        drop_conn(p);
        p->retry_at_ms = 0;
    }
    int64_t now = now_ms();
    if (now < p->retry_at_ms) return unavailable(p);
    int rc = connect_once(p, false);
    if (rc == ACP_ESTORE) {
        p->backoff_ms = p->backoff_ms ? p->backoff_ms * 2 : BACKOFF_FIRST_MS;
        if (p->backoff_ms > BACKOFF_MAX_MS) p->backoff_ms = BACKOFF_MAX_MS;
        p->retry_at_ms = now_ms() + p->backoff_ms;
    } else if (!rc) {
        p->backoff_ms = 0;
    }
    return rc;
}

/* Fills s with views into row i of an RCOLS result (valid while r lives); state and the
 * system prompt stay NULL. */
static void row_session(const PGresult *r, int i, acp_store_session *s)
{
    s->struct_size = sizeof *s;
    s->state = NULL;
    s->system_prompt = NULL;
    s->archived = PQgetvalue(r, i, 6)[0] == 't';
    s->parent = PQgetisnull(r, i, 7) ? NULL : PQgetvalue(r, i, 7);
    s->id = PQgetvalue(r, i, 0);
    s->cwd = PQgetvalue(r, i, 1);
    s->add_dirs = PQgetvalue(r, i, 2);
    s->title = PQgetisnull(r, i, 3) ? NULL : PQgetvalue(r, i, 3);
    snprintf(s->created_at, sizeof s->created_at, "%s", PQgetvalue(r, i, 4));
    snprintf(s->updated_at, sizeof s->updated_at, "%s", PQgetvalue(r, i, 5));
}

/* $1..$8 of a new session's row, as create and fork both bind them (ttl: its text's room). */
static void row_params(const char **v, const acp_store_session *s, const char *holder,
                       unsigned ttl_ms, char ttl[24])
{
    snprintf(ttl, 24, "%u", ttl_ms);
    const char *row[8] = {s->id,         s->cwd,        s->add_dirs, s->title,
                          s->created_at, s->updated_at, holder,      holder ? ttl : NULL};
    memcpy(v, row, sizeof row);
}

static int pg_create(acp_store *st, const acp_store_session *s, const char *holder, unsigned ttl_ms)
{
    pg_store *p = (pg_store *)st;
    int rc = ready(p);
    if (rc) return rc;
    char ttl[24];
    const char *v[11] = {[8] = s->archived ? "t" : "f", [9] = s->system_prompt, [10] = s->parent};
    row_params(v, s, holder, ttl_ms, ttl);
    int64_t n = 0;
    if ((rc = exec_cmd(p, Q_CREATE, 11, v, &n))) return rc;
    if (n == 0) return acp_error_set(ACP_EINVAL, "session %s already exists", s->id);
    return 0;
}

static int pg_get(acp_store *st, const char *id, acp_store_session *out)
{
    pg_store *p = (pg_store *)st;
    PGresult *r = NULL;
    int rc = ready(p);
    if (rc || (rc = exec(p, Q_GET, 1, &id, PGRES_TUPLES_OK, &r))) return rc;
    if (PQntuples(r) == 0) {
        PQclear(r);
        return acp_error_set(ACP_ENOTFOUND, "no session %s", id);
    }
    acp_store_session v;
    row_session(r, 0, &v);
    v.state = PQgetisnull(r, 0, 8) ? NULL : PQgetvalue(r, 0, 8);
    v.system_prompt = PQgetisnull(r, 0, 9) ? NULL : PQgetvalue(r, 0, 9);
    rc = acp_store_session_copy(out, &v);
    PQclear(r);
    return rc ? acp_error_set(rc, "out of memory") : 0;
}

/* Why a write under `fence` for session id matched no row: ACP_ENOTFOUND (no such session),
 * ACP_ESTALE (the session is there: its epoch moved on), or ACP_ESTORE. Asked after the write:
 * a delete in between makes a stale fence look gone, and either way the writer stops. */
static int why_unmatched(pg_store *p, const char *id, int64_t fence)
{
    PGresult *r = NULL;
    int rc = exec(p, Q_EPOCH, 1, &id, PGRES_TUPLES_OK, &r);
    if (rc) return rc;
    rc = PQntuples(r) && fence ? ACP_ESTALE : ACP_ENOTFOUND;
    PQclear(r);
    return rc;
}

static int unmatched(pg_store *p, const char *id, int64_t fence)
{
    int rc = why_unmatched(p, id, fence);
    if (rc == ACP_ENOTFOUND) return acp_error_set(rc, "no session %s", id);
    if (rc == ACP_ESTALE)
        return acp_error_set(rc, "session %s is leased to another holder now", id);
    return rc;
}

/* Runs a single-row UPDATE made under fence; ENOTFOUND when it matched no session, ESTALE
 * when it matched none because the fence is stale. */
static int update_one(acp_store *st, int q, int n, const char *const *v, int64_t fence)
{
    pg_store *p = (pg_store *)st;
    int rc = ready(p);
    if (rc) return rc;
    int64_t rows = 0;
    if ((rc = exec_cmd(p, q, n, v, &rows))) return rc;
    return rows ? 0 : unmatched(p, v[0], fence);
}

static int pg_set_info(acp_store *st, const char *id, int64_t fence, bool set_title,
                       const char *title, const char *updated_at)
{
    char f[24];
    snprintf(f, sizeof f, "%lld", (long long)fence);
    const char *v[5] = {id, set_title ? "t" : "f", title, updated_at, f};
    return update_one(st, Q_SET_INFO, 5, v, fence);
}

static int pg_set_roots(acp_store *st, const char *id, int64_t fence, const char *cwd,
                        const char *add_dirs)
{
    char f[24];
    snprintf(f, sizeof f, "%lld", (long long)fence);
    const char *v[4] = {id, cwd, add_dirs, f};
    return update_one(st, Q_SET_ROOTS, 4, v, fence);
}

/* One text column of the session's row ($2) under the fence ($3): Q_SET_STATE, Q_SET_PROMPT. */
static int set_text(acp_store *st, int which, const char *id, int64_t fence, const char *text)
{
    char f[24];
    snprintf(f, sizeof f, "%lld", (long long)fence);
    const char *v[3] = {id, text, f};
    return update_one(st, which, 3, v, fence);
}

static int pg_set_state(acp_store *st, const char *id, int64_t fence, const char *state)
{
    return set_text(st, Q_SET_STATE, id, fence, state);
}

static void put32(char *at, uint32_t v)
{
    v = htonl(v);
    memcpy(at, &v, 4);
}

static int by_id(const void *a, const void *b, void *batch)
{
    const acp_store_batch *bt = batch;
    return strcmp(acp_store_batch_id(bt, *(const size_t *)a),
                  acp_store_batch_id(bt, *(const size_t *)b));
}

/* Each session's texts as a binary one-dimensional text[] (array_recv's format): no
 * escaping, just lengths and bytes. off[s] is where session s's array starts in the
 * returned buffer, size[s] its length. */
static char *batch_arrays(const acp_store_batch *b, size_t *off, size_t *size)
{
    enum { HEAD = 20 };
    size_t total = 0;
    for (size_t s = 0; s < b->nsess; s++) size[s] = HEAD + 4 * b->sess[s].count;
    for (size_t i = 0; i < b->nitems; i++) size[b->items[i].sess] += b->items[i].n;
    for (size_t s = 0; s < b->nsess; s++) off[s] = total, total += size[s];
    char *buf = malloc(total ? total : 1);
    if (!buf) return NULL;
    for (size_t s = 0; s < b->nsess; s++) {
        char *h = buf + off[s];
        put32(h, 1);                               /* dimensions */
        put32(h + 4, 0);                           /* no NULLs */
        put32(h + 8, TEXTOID);                     /* element type */
        put32(h + 12, (uint32_t)b->sess[s].count); /* length of the one dimension */
        put32(h + 16, 1);                          /* its lower bound */
        off[s] += HEAD;                            /* now the fill position */
    }
    for (size_t i = 0; i < b->nitems; i++) {
        const acp_store_item *it = &b->items[i];
        char *at = buf + off[it->sess];
        put32(at, (uint32_t)it->n);
        memcpy(at + 4, acp_store_batch_json(b, i), it->n);
        off[it->sess] += 4 + it->n;
    }
    for (size_t s = 0; s < b->nsess; s++) off[s] -= size[s]; /* back to the start */
    return buf;
}

/* Marks session s of the batch lost when its append inserted nothing: the UPDATE that locks
 * its row matched none (deleted meanwhile, perhaps by another process, or its fence is stale:
 * which one is asked once the commit is over). */
static void note_gone(acp_store_batch *b, size_t s, PGresult *r)
{
    int64_t n = 0; /* a count that is not a number proves nothing stored, as 0 does */
    bool lost = acp_parse_i64(PQcmdTuples(r), 0, INT64_MAX, &n) || n == 0;
    b->sess[s].lost = lost ? ACP_ENOTFOUND : 0;
}

/* Sends session k's share of the batch: its id, its count, the commit time, its texts, its
 * fence. */
static int send_append(pg_store *p, const acp_store_batch *b, size_t s, const char *now,
                       const char *array, size_t size)
{
    char count[24], fence[24];
    snprintf(count, sizeof count, "%zu", b->sess[s].count);
    snprintf(fence, sizeof fence, "%lld", (long long)b->sess[s].fence);
    const char *v[5] = {acp_store_batch_id(b, s), count, now, array, fence};
    const int lens[5] = {0, 0, 0, (int)size, 0}, fmts[5] = {0, 0, 0, 1, 0};
    const acp_store_fault *f = acp_store_fault_at(&p->base);
    if (f && f->kind == ACP_FAULT_LOSE) lose_conn(p);
    if (f && f->kind == ACP_FAULT_LOSE_AFTER) p->lose_answer = true; /* once it has run */
    if (f && f->kind == ACP_FAULT_ERROR) {
        char raise[160];
        raise_sql(f, raise, sizeof raise);
        return PQsendQueryParams(p->conn, raise, 0, NULL, NULL, NULL, NULL, 0) ? 0 : -1;
    }
    return PQsendQueryPrepared(p->conn, stmts[Q_APPEND].name, 5, v, lens, fmts, 0) ? 0 : -1;
}

/* An ACP_FAULT_LOSE_AFTER met by one of the commit's statements: the server has answered the
 * whole commit (in a pipeline, its transaction is over), and that answer is lost now. */
static bool lose_now(pg_store *p)
{
    if (!p->lose_answer) return false;
    p->lose_answer = false;
    lose_answer(p);
    return true;
}

/* Several sessions: their statements go out as one pipeline, which the server runs as one
 * implicit transaction up to the sync point, so the whole batch is one round trip and an
 * error anywhere rolls all of it back (the statements after it are skipped). */
static int commit_pipeline(pg_store *p, acp_store_batch *b, const size_t *order, const char *arrays,
                           const size_t *off, const size_t *size, const char *now)
{
    PGconn *c = p->conn;
    size_t sent = 0;
    bool ok = PQenterPipelineMode(c);
    while (ok && sent < b->nsess) {
        size_t s = order[sent];
        ok = send_append(p, b, s, now, arrays + off[s], size[s]) == 0;
        if (ok) sent++;
    }
    ok = ok && PQpipelineSync(c);
    PGresult *err = NULL; /* the first failure: the one that says why */
    for (size_t i = 0; ok && i <= sent; i++) {
        PGresult *r = PQgetResult(c);
        ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
        bool expected = i < sent ? st == PGRES_COMMAND_OK || st == PGRES_PIPELINE_ABORTED
                                 : st == PGRES_PIPELINE_SYNC;
        if (!expected && !err) {
            err = r;
            r = NULL;
        }
        if (i < sent && st == PGRES_COMMAND_OK) note_gone(b, order[i], r);
        PQclear(r);
        if (PQstatus(c) != CONNECTION_OK)
            ok = false; /* nothing more will come */
        else if (i < sent)
            PQgetResult(c); /* the NULL that ends this statement */
    }
    if (ok && lose_now(p)) {
        PQclear(err);
        return fail_result(p, NULL, "commit");
    }
    if (!ok || !PQexitPipelineMode(c)) {
        /* A broken connection: whatever the server did with the batch, this handle cannot
         * finish the exchange, so it starts over on a new connection. */
        PQclear(err);
        if (PQstatus(c) == CONNECTION_OK) {
            snprintf(p->reason, sizeof p->reason, "pipeline failed");
            drop_conn(p);
            return unavailable(p);
        }
        return fail_result(p, NULL, "commit");
    }
    return err ? fail_result(p, err, "commit") : 0;
}

/* One transaction for the whole batch. Sessions are locked in id order, so two processes
 * committing batches that touch the same sessions cannot deadlock. A batch of one session
 * (the usual turn: one prompt streaming) is a single statement, its own transaction. */
static int pg_commit(acp_store *st, const char *now)
{
    pg_store *p = (pg_store *)st;
    acp_store_batch *b = &st->batch;
    int rc = ready(p);
    if (rc) return rc;

    size_t ns = b->nsess;
    size_t *order = malloc(ns * sizeof *order), *off = malloc(ns * sizeof *off),
           *size = malloc(ns * sizeof *size);
    char *arrays = order && off && size ? batch_arrays(b, off, size) : NULL;
    if (!arrays) {
        rc = acp_error_set(ACP_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t s = 0; s < ns; s++) {
        order[s] = s;
        if (size[s] > INT32_MAX) {
            rc = acp_error_set(ACP_ETOOBIG, "batch over 2 GB for one session");
            goto out;
        }
    }
    if (ns > 1) {
        qsort_r(order, ns, sizeof *order, by_id, (void *)b);
        rc = commit_pipeline(p, b, order, arrays, off, size, now);
    } else if (send_append(p, b, 0, now, arrays, size[0])) {
        rc = fail_result(p, NULL, "commit");
    } else {
        PGresult *r = PQgetResult(p->conn), *end;
        while ((end = PQgetResult(p->conn))) PQclear(end);
        if (lose_now(p)) {
            PQclear(r);
            r = NULL;
        }
        if (!r || PQresultStatus(r) != PGRES_COMMAND_OK) {
            rc = fail_result(p, r, "commit");
        } else {
            note_gone(b, 0, r);
            PQclear(r);
        }
    }
    /* The batch is committed: sessions appended under a fence that stored nothing were deleted
     * or fenced out, and only a read tells which. */
    for (size_t s = 0; !rc && s < ns; s++)
        if (b->sess[s].lost && b->sess[s].fence) {
            int why = why_unmatched(p, acp_store_batch_id(b, s), b->sess[s].fence);
            if (why == ACP_ESTORE) why = ACP_ENOTFOUND; /* the store fails the next call too */
            b->sess[s].lost = why;
        }
out:
    p->lose_answer = false;
    size_t sent = 0;
    for (size_t s = 0; arrays && s < ns; s++) sent = size[s] > sent ? size[s] : sent;
    shed_buffers(p, sent);
    free(order);
    free(off);
    free(size);
    free(arrays);
    return rc;
}

/* History comes in chunks of seq ranges (seqs of a session are gapless, handed out under
 * its row lock), so each statement is a bounded primary-key range scan whatever the planner
 * thinks of the table, and one session's 20,000 updates are 20 round trips, not 20,000.
 * The session's last seq, read first, bounds the replay (and answers `done`). */
static int pg_replay(acp_store *st, const char *id, int64_t after_seq, size_t max_bytes,
                     acp_store_replay_cb cb, void *user, int64_t *last_seq, bool *done)
{
    pg_store *p = (pg_store *)st;
    PGresult *r = NULL;
    int rc = ready(p);
    if (rc || (rc = exec(p, Q_LAST_SEQ, 1, &id, PGRES_TUPLES_OK, &r))) return rc;
    if (PQntuples(r) == 0) {
        PQclear(r);
        return acp_error_set(ACP_ENOTFOUND, "no session %s", id);
    }
    int64_t hi = 0;
    rc = server_number(p, PQgetvalue(r, 0, 0), "seq", &hi);
    PQclear(r);
    if (rc) return rc;

    int64_t pos = after_seq, last = after_seq;
    size_t total = 0, biggest = 0;
    bool stopped = false;
    while (pos < hi && !stopped) {
        /* Under a byte cap, ask for about as many rows as the cap has room for (sized by
         * the rows seen so far), not a full chunk that would mostly be thrown away. */
        int64_t want = REPLAY_CHUNK;
        if (max_bytes && p->row_bytes) {
            want = (int64_t)((max_bytes > total ? max_bytes - total : 0) / p->row_bytes) + 2;
            if (want > REPLAY_CHUNK) want = REPLAY_CHUNK;
        }
        int64_t top = hi - pos > want ? pos + want : hi;
        char from[24], to[24];
        snprintf(from, sizeof from, "%lld", (long long)pos);
        snprintf(to, sizeof to, "%lld", (long long)top);
        const char *v[3] = {id, from, to};
        if ((rc = exec(p, Q_REPLAY, 3, v, PGRES_TUPLES_OK, &r))) return rc;
        int n = PQntuples(r), given = 0;
        if (n != top - pos) {
            /* Seqs are gapless up to hi and only a delete removes history: the session was
             * deleted since hi was read. Not a cut history reported as done. */
            PQclear(r);
            *last_seq = last;
            return acp_error_set(ACP_ENOTFOUND, "no session %s (deleted during replay)", id);
        }
        size_t got = 0;
        for (; given < n && !stopped; given++) {
            if ((rc = server_number(p, PQgetvalue(r, given, 0), "seq", &last))) {
                PQclear(r);
                *last_seq = last; /* the last one given: a failed read leaves it alone */
                return rc;
            }
            size_t len = (size_t)PQgetlength(r, given, 1);
            rc = cb(user, last, PQgetvalue(r, given, 1), len);
            total += len;
            biggest = len > biggest ? len : biggest;
            got += len;
            stopped = rc != 0 || (max_bytes && total > max_bytes);
        }
        if (given) p->row_bytes = got / (size_t)given + 1;
        PQclear(r);
        pos = stopped ? last : top;
    }
    *last_seq = last;
    *done = pos >= hi;
    shed_buffers(p, biggest);
    return rc;
}

static int pg_list(acp_store *st, const char *cwd, int archived, const char *cursor, unsigned limit,
                   acp_store_list_cb cb, void *user, char **next_cursor)
{
    pg_store *p = (pg_store *)st;
    char at[ACP_STORE_TIME_LEN + 1], *after_id = NULL, lim[24];
    if (cursor && acp_store_cursor_decode(cursor, at, &after_id))
        return acp_error_set(ACP_EINVAL, "malformed cursor");
    int rc = ready(p);
    if (rc) goto out;
    snprintf(lim, sizeof lim, "%llu", (unsigned long long)limit + 1); /* +1: do more follow? */
    const char *v[4] = {lim};
    int n = 1, q;
    if (cwd) v[n++] = cwd;
    if (cursor) v[n++] = at, v[n++] = after_id;
    /* Q_LIST_ALL + (cwd: 2) + (cursor: 1), in the block of the filter. */
    q = (archived == ACP_STORE_ARCHIVED_EXCLUDE ? Q_LIST_X
         : archived == ACP_STORE_ARCHIVED_ONLY  ? Q_LIST_O
                                                : Q_LIST_ALL) +
        (cwd ? 2 : 0) + (cursor ? 1 : 0);
    PGresult *r = NULL;
    if ((rc = exec(p, q, n, v, PGRES_TUPLES_OK, &r))) goto out;
    int rows = PQntuples(r);
    for (int i = 0; i < rows && (unsigned)i < limit && !rc; i++) {
        acp_store_session s;
        row_session(r, i, &s);
        rc = cb(user, &s);
    }
    if (!rc && (unsigned)rows > limit) {
        acp_store_session s;
        row_session(r, (int)limit - 1, &s);
        if (acp_store_cursor_encode(s.updated_at, s.id, next_cursor))
            rc = acp_error_set(ACP_ENOMEM, "out of memory");
    }
    PQclear(r);
out:
    free(after_id);
    return rc;
}

/* The session row first: its lock waits out any commit in flight for it, and once it is
 * gone no later commit can add to it; the history delete then sees everything committed. */
static int pg_remove(acp_store *st, const char *id)
{
    pg_store *p = (pg_store *)st;
    int rc = ready(p);
    if (rc || (rc = exec_simple(p, "BEGIN", "delete"))) return rc;
    if ((rc = exec_cmd(p, Q_DEL_SESSION, 1, &id, NULL)) ||
        (rc = exec_cmd(p, Q_DEL_UPDATES, 1, &id, NULL)) ||
        (rc = exec_cmd(p, Q_DEL_TREE, 1, &id, NULL)))
        return rc;
    return exec_simple(p, "COMMIT", "delete");
}

static int pg_children(acp_store *st, const char *id, acp_store_list_cb cb, void *user)
{
    pg_store *p = (pg_store *)st;
    PGresult *r = NULL;
    int rc = ready(p);
    if (rc || (rc = exec(p, Q_CHILDREN, 1, &id, PGRES_TUPLES_OK, &r))) return rc;
    for (int i = 0; i < PQntuples(r) && !rc; i++) {
        acp_store_session s;
        row_session(r, i, &s);
        rc = cb(user, &s);
    }
    PQclear(r);
    return rc;
}

static int pg_lease_acquire(acp_store *st, const char *id, const char *holder, unsigned ttl_ms,
                            const char *dead, bool take, int64_t *fence, acp_store_lease_busy *busy)
{
    pg_store *p = (pg_store *)st;
    char ttl[24];
    snprintf(ttl, sizeof ttl, "%u", ttl_ms);
    const char *v[5] = {id, holder, ttl, dead, take ? "t" : "f"};
    PGresult *r = NULL;
    int rc = ready(p);
    if (rc || (rc = exec(p, Q_ACQUIRE, 5, v, PGRES_TUPLES_OK, &r))) return rc;
    if (PQntuples(r) == 0) {
        rc = acp_error_set(ACP_ENOTFOUND, "no session %s", id);
    } else if (!PQgetisnull(r, 0, 0)) {
        rc = server_number(p, PQgetvalue(r, 0, 0), "lease epoch", fence);
    } else if (!(rc = server_number(p, PQgetvalue(r, 0, 1), "lease time", &busy->wait_ms))) {
        snprintf(busy->holder, sizeof busy->holder, "%s", PQgetvalue(r, 0, 2));
        rc = acp_error_set(ACP_EBUSY, "session %s is leased to another holder", id);
    }
    PQclear(r);
    return rc;
}

static int pg_lease_renew(acp_store *st, const char *id, int64_t fence, unsigned ttl_ms, int busy)
{
    pg_store *p = (pg_store *)st;
    char f[24], ttl[24];
    snprintf(f, sizeof f, "%lld", (long long)fence);
    snprintf(ttl, sizeof ttl, "%u", ttl_ms);
    const char *v[4] = {id, f, ttl, busy < 0 ? NULL : busy ? "t" : "f"};
    PGresult *r = NULL;
    int rc = ready(p);
    if (rc || (rc = exec(p, Q_RENEW, 4, v, PGRES_TUPLES_OK, &r))) return rc;
    if (PQntuples(r) == 0)
        rc = acp_error_set(ACP_ENOTFOUND, "no session %s", id);
    else if (strcmp(PQgetvalue(r, 0, 0), "1"))
        rc = acp_error_set(ACP_ESTALE, "session %s is leased to another holder now", id);
    PQclear(r);
    return rc;
}

static int pg_lease_release(acp_store *st, const char *id, int64_t fence)
{
    pg_store *p = (pg_store *)st;
    char f[24];
    snprintf(f, sizeof f, "%lld", (long long)fence);
    const char *v[2] = {id, f};
    int rc = ready(p);
    return rc ? rc : exec_cmd(p, Q_RELEASE, 2, v, NULL);
}

static int pg_lease_check(acp_store *st, const char *id, int64_t fence)
{
    pg_store *p = (pg_store *)st;
    PGresult *r = NULL;
    int64_t epoch = 0;
    int rc = ready(p);
    if (rc || (rc = exec(p, Q_EPOCH, 1, &id, PGRES_TUPLES_OK, &r))) return rc;
    if (PQntuples(r) == 0)
        rc = acp_error_set(ACP_ENOTFOUND, "no session %s", id);
    else if (!(rc = server_number(p, PQgetvalue(r, 0, 0), "lease epoch", &epoch)) && epoch != fence)
        rc = acp_error_set(ACP_ESTALE, "session %s is leased to another holder now", id);
    PQclear(r);
    return rc;
}

static int pg_fork(acp_store *st, const char *src, const acp_store_session *in, const char *holder,
                   unsigned ttl_ms)
{
    pg_store *p = (pg_store *)st;
    char ttl[24];
    const char *v[12] = {
        [8] = src, [9] = in->state, [10] = in->archived ? "t" : "f", [11] = in->system_prompt};
    row_params(v, in, holder, ttl_ms, ttl);
    PGresult *r = NULL;
    int rc = ready(p);
    if (rc || (rc = exec_simple(p, "BEGIN", "fork"))) return rc;
    if ((rc = exec(p, Q_FORK, 12, v, PGRES_TUPLES_OK, &r))) return rc;
    bool found = strcmp(PQgetvalue(r, 0, 0), "0") != 0;
    bool made = strcmp(PQgetvalue(r, 0, 1), "0") != 0;
    PQclear(r);
    if (!found || !made) {
        PQclear(PQexec(p->conn, "ROLLBACK"));
        return !found ? acp_error_set(ACP_ENOTFOUND, "no session %s", src)
                      : acp_error_set(ACP_EINVAL, "session %s already exists", in->id);
    }
    const char *u[2] = {in->id, src};
    if ((rc = exec_cmd(p, Q_FORK_UPDATES, 2, u, NULL))) return rc;
    return exec_simple(p, "COMMIT", "fork");
}

static void pg_close(acp_store *st)
{
    pg_store *p = (pg_store *)st;
    drop_conn(p);
    free(p->conninfo);
    free(p->password);
    free(p);
}

static int pg_set_archived(acp_store *st, const char *id, bool archived)
{
    const char *v[2] = {id, archived ? "t" : "f"};
    return update_one(st, Q_SET_ARCHIVED, 2, v, 0);
}

static int pg_set_system_prompt(acp_store *st, const char *id, int64_t fence, const char *json)
{
    return set_text(st, Q_SET_PROMPT, id, fence, json);
}

static const acp_store_ops pg_ops = {
    .name = "postgresql",
    .close = pg_close,
    .create = pg_create,
    .get = pg_get,
    .set_info = pg_set_info,
    .set_roots = pg_set_roots,
    .set_state = pg_set_state,
    .commit = pg_commit,
    .replay = pg_replay,
    .list = pg_list,
    .remove = pg_remove,
    .children = pg_children,
    .lease_acquire = pg_lease_acquire,
    .lease_renew = pg_lease_renew,
    .lease_release = pg_lease_release,
    .set_archived = pg_set_archived,
    .set_system_prompt = pg_set_system_prompt,
    .lease_check = pg_lease_check,
    .fork = pg_fork,
};

/* The numbers of a connection string, and of the PG* variables libpq reads in their place,
 * checked before libpq sees them: it reads connect_timeout=0 or -5 as "wait for ever" (and
 * the agent's loop waits with it), and says "invalid port" only at connect time. */
static const struct {
    const char *keyword, *env;
    int64_t min, max;
} conn_numbers[] = {
    {"port", "PGPORT", 1, 65535}, /* each of a comma-separated list, one per host */
    {"connect_timeout", "PGCONNECT_TIMEOUT", 1, 3600},
    {"keepalives", NULL, 0, 1},
    {"keepalives_idle", NULL, 0, INT_MAX},
    {"keepalives_interval", NULL, 0, INT_MAX},
    {"keepalives_count", NULL, 0, INT_MAX},
    {"tcp_user_timeout", NULL, 0, INT_MAX},
};

/* NULL when every number is good, else the sentence (in why) naming the first bad one. */
static const char *bad_number(PQconninfoOption *opts, char *why, size_t n)
{
    for (size_t i = 0; i < sizeof conn_numbers / sizeof *conn_numbers; i++) {
        const char *v = NULL, *from = conn_numbers[i].keyword;
        for (PQconninfoOption *o = opts; o->keyword && !v; o++)
            if (!strcmp(o->keyword, conn_numbers[i].keyword)) v = o->val;
        if (!v && conn_numbers[i].env && (v = getenv(conn_numbers[i].env)))
            from = conn_numbers[i].env;
        if (!v) continue;
        bool list = !strcmp(conn_numbers[i].keyword, "port");
        for (const char *p = v;; p++) {
            size_t len = list ? strcspn(p, ",") : strlen(p);
            char *num = strndup(p, len);
            int64_t x;
            int rc = !num ? ACP_ENOMEM
                     : len == 0 && list
                         ? 0 /* a host's default port */
                         : acp_parse_i64(num, conn_numbers[i].min, conn_numbers[i].max, &x);
            free(num);
            if (rc) {
                snprintf(why, n, "%s: %s", from,
                         rc == ACP_ENOMEM ? "out of memory" : acp_error_last()->message);
                return why;
            }
            p += len;
            if (!*p) break;
        }
    }
    return NULL;
}

int acp_store_pg_open(const char *conninfo, acp_store **out)
{
    char *perr = NULL;
    PQconninfoOption *opts = PQconninfoParse(conninfo, &perr);
    if (!opts) {
        /* libpq's message quotes the string, password and all. */
        PQfreemem(perr);
        return acp_error_set(ACP_ESTORE, "invalid PostgreSQL connection string (check its syntax)");
    }
    char why[ACP_NUM_WHY + 64];
    if (bad_number(opts, why, sizeof why)) {
        PQconninfoFree(opts);
        return acp_error_set(ACP_ESTORE, "invalid PostgreSQL connection parameter: %s", why);
    }
    pg_store *p = calloc(1, sizeof *p);
    if (p) {
        acp_store_init(&p->base, &pg_ops);
        p->conninfo = strdup(conninfo);
        for (PQconninfoOption *o = opts; o->keyword; o++)
            if (!strcmp(o->keyword, "password") && o->val && o->val[0])
                p->password = strdup(o->val);
    }
    PQconninfoFree(opts);
    if (!p || !p->conninfo) {
        if (p) pg_close(&p->base);
        return acp_error_set(ACP_ENOMEM, "out of memory");
    }
    int rc = connect_once(p, true);
    if (rc) {
        pg_close(&p->base);
        return rc;
    }
    *out = &p->base;
    return 0;
}
