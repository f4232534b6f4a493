/* SPDX-License-Identifier: Apache-2.0 */
/* The SQLite backend: the embedded default. One file, WAL, many processes.
 *
 * Durability: WAL with synchronous=NORMAL survives a killed process with every committed
 * transaction intact (only an OS crash or power loss can lose the last ones). Concurrency:
 * every write is BEGIN IMMEDIATE, so writers queue on the busy timeout instead of failing
 * halfway through a transaction, and a session's next seq is read and advanced inside the
 * writing transaction, so two processes appending to one session keep one gapless order. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store/backends.h"
#include "store/inject.h"

#define BUSY_TIMEOUT_MS 10000

/* Forward migrations: entry v brings a store from schema version v to v + 1. A new schema
 * version is one more entry; existing entries never change (files in the field ran them). */
static const char *const migrations[] = {
    /* v0 -> v1 */
    "CREATE TABLE sessions ("
    " sid INTEGER PRIMARY KEY,"
    " id TEXT NOT NULL UNIQUE,"
    " cwd TEXT NOT NULL,"
    " add_dirs TEXT NOT NULL,"
    " title TEXT,"
    " created_at TEXT NOT NULL,"
    " updated_at TEXT NOT NULL,"
    " last_seq INTEGER NOT NULL DEFAULT 0"
    ") STRICT;"
    "CREATE INDEX sessions_by_time ON sessions (updated_at DESC, id DESC);"
    "CREATE INDEX sessions_by_cwd ON sessions (cwd, updated_at DESC, id DESC);"
    /* History keyed by (session, seq): replay is one range scan of the primary key. */
    "CREATE TABLE updates ("
    " sid INTEGER NOT NULL,"
    " seq INTEGER NOT NULL,"
    " json TEXT NOT NULL,"
    " PRIMARY KEY (sid, seq)"
    ") STRICT;",
    /* v1 -> v2: the agent's per-session state. ADD COLUMN rewrites the table's definition,
     * not its rows, so a store of any size migrates at once. */
    "ALTER TABLE sessions ADD COLUMN state TEXT;",
    /* v2 -> v3: the session's lease (acp_store_lease_acquire): who holds it, its epoch (the
     * fence of every write), and until when, in ms since the Unix epoch by SQLite's clock. */
    "ALTER TABLE sessions ADD COLUMN lease_holder TEXT;"
    "ALTER TABLE sessions ADD COLUMN lease_epoch INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE sessions ADD COLUMN lease_expires INTEGER;",
    /* v3 -> v4: the unstable session/archive and systemPrompt. The filtered lists (archived
     * or not, for all or one cwd) get indexes that lead with the flag, so a page is one
     * range scan however many sessions the filter leaves out. */
    "ALTER TABLE sessions ADD COLUMN archived INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE sessions ADD COLUMN system_prompt TEXT;"
    "CREATE INDEX sessions_by_archived ON sessions (archived, updated_at DESC, id DESC);"
    "CREATE INDEX sessions_by_cwd_archived ON sessions"
    " (cwd, archived, updated_at DESC, id DESC);",
    /* v4 -> v5 (unstable: subagent sessions): the id of the session that owns this one as
     * a child; the partial index serves acp_store_children() and the delete of a parent's
     * children without growing for the top-level sessions. */
    "ALTER TABLE sessions ADD COLUMN parent TEXT;"
    "CREATE INDEX sessions_by_parent ON sessions (parent, created_at, id)"
    " WHERE parent IS NOT NULL;",
    /* v5 -> v6: whether the holder marked its lease busy (a turn running): an idle lease is
     * taken over by acp_store_lease_take(), a busy one waited for. */
    "ALTER TABLE sessions ADD COLUMN lease_busy INTEGER NOT NULL DEFAULT 0;",
    /* v6 -> v7: a fork continues its source's history instead of copying it. base is the sid
     * of the session whose history, up to base_seq, is this one's beginning (NULL: none); the
     * session's own updates are those after base_seq. A base that is deleted first hands its
     * dependents the updates they took from it (release_dependents). */
    "ALTER TABLE sessions ADD COLUMN base INTEGER;"
    "ALTER TABLE sessions ADD COLUMN base_seq INTEGER NOT NULL DEFAULT 0;"
    "CREATE INDEX sessions_by_base ON sessions (base) WHERE base IS NOT NULL;",
};
#define SCHEMA_VERSION ((int)(sizeof migrations / sizeof migrations[0]))

enum {
    Q_CREATE,
    Q_GET,
    Q_SET_INFO,
    Q_SET_ROOTS,
    Q_SET_STATE,
    Q_BUMP,
    Q_INSERT,
    Q_SID,
    Q_REPLAY,
    Q_LIST,
    Q_LIST_AFTER,
    Q_LIST_CWD,
    Q_LIST_CWD_AFTER,
    Q_DEL_UPDATES,
    Q_DEL_SESSION,
    Q_EPOCH,
    Q_ACQUIRE,
    Q_LEASE_LEFT,
    Q_RENEW,
    Q_RELEASE,
    Q_SET_ARCHIVED,
    Q_SET_PROMPT,
    Q_CHILDREN,
    Q_DEL_TREE,
    Q_FORK,
    Q_BASE,
    Q_DEPENDENTS,
    Q_MOVE,
    Q_REBASE,
    /* Q_LIST.. Q_LIST_CWD_AFTER again for archived = 0, then for archived = 1. */
    Q_LIST_X,
    Q_LIST_O = Q_LIST_X + 4,
    Q_COUNT = Q_LIST_O + 4
};

/* COLS leaves state out: only get returns it, so list reads no more than it shows. */
#define COLS "id, cwd, add_dirs, title, created_at, updated_at"
/* What list and get read: COLS, the archived flag (column 6) and the parent (7). */
#define RCOLS COLS ", archived, parent"
#define ORDER " ORDER BY updated_at DESC, id DESC LIMIT ?4"
/* The keyset: strictly after (updated_at, id) in list order. */
#define AFTER "(updated_at < ?2 OR (updated_at = ?2 AND id < ?3))"
/* Now in ms since the Unix epoch, by the clock of the one host that shares an SQLite file
 * (julianday: unixepoch()'s 'subsec' needs SQLite 3.42). Fixed for one statement. */
#define NOW_MS "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)"

static const char *const sql[Q_COUNT] = {
    /* With a holder (?7), its lease is taken as the row is made: epoch 1. */
    [Q_CREATE] = "INSERT INTO sessions (" COLS ", lease_holder, lease_epoch, lease_expires,"
                 " archived, system_prompt, parent)"
                 " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7 IS NOT NULL,"
                 " CASE WHEN ?7 IS NULL THEN NULL ELSE " NOW_MS " + ?8 END, ?9, ?10, ?11)",
    [Q_GET] = "SELECT " RCOLS ", state, system_prompt FROM sessions WHERE id = ?1",
    /* Every write's "AND (?n = 0 OR lease_epoch = ?n)": no lease fence, or the current one. */
    [Q_SET_INFO] = "UPDATE sessions SET title = CASE WHEN ?2 THEN ?3 ELSE title END,"
                   " updated_at = coalesce(?4, updated_at) WHERE id = ?1"
                   " AND (?5 = 0 OR lease_epoch = ?5)",
    [Q_SET_ROOTS] = "UPDATE sessions SET cwd = ?2, add_dirs = ?3 WHERE id = ?1"
                    " AND (?4 = 0 OR lease_epoch = ?4)",
    [Q_SET_STATE] = "UPDATE sessions SET state = ?2 WHERE id = ?1"
                    " AND (?3 = 0 OR lease_epoch = ?3)",
    [Q_BUMP] = "UPDATE sessions SET last_seq = last_seq + ?2, updated_at = ?3 WHERE id = ?1"
               " AND (?4 = 0 OR lease_epoch = ?4)"
               " RETURNING sid, last_seq",
    [Q_INSERT] = "INSERT INTO updates (sid, seq, json) VALUES (?1, ?2, ?3)",
    [Q_SID] = "SELECT sid FROM sessions WHERE id = ?1",
    [Q_REPLAY] = "SELECT seq, json FROM updates WHERE sid = ?1 AND seq > ?2 AND seq <= ?3"
                 " ORDER BY seq",
    [Q_LIST] = "SELECT " RCOLS " FROM sessions" ORDER,
    [Q_LIST_AFTER] = "SELECT " RCOLS " FROM sessions WHERE " AFTER ORDER,
    [Q_LIST_CWD] = "SELECT " RCOLS " FROM sessions WHERE cwd = ?1" ORDER,
    [Q_LIST_CWD_AFTER] = "SELECT " RCOLS " FROM sessions WHERE cwd = ?1 AND " AFTER ORDER,
#define LIST_BY(base, a)                                                                           \
    [base] = "SELECT " RCOLS " FROM sessions WHERE archived = " a ORDER,                           \
    [base + 1] = "SELECT " RCOLS " FROM sessions WHERE archived = " a " AND " AFTER ORDER,         \
    [base + 2] = "SELECT " RCOLS " FROM sessions WHERE cwd = ?1 AND archived = " a ORDER,          \
    [base + 3] =                                                                                   \
        "SELECT " RCOLS " FROM sessions WHERE cwd = ?1 AND archived = " a " AND " AFTER ORDER
    LIST_BY(Q_LIST_X, "0"),
    LIST_BY(Q_LIST_O, "1"),
#undef LIST_BY
    [Q_DEL_UPDATES] = "DELETE FROM updates WHERE sid = ?1",
    [Q_DEL_SESSION] = "DELETE FROM sessions WHERE sid = ?1",
    [Q_EPOCH] = "SELECT lease_epoch FROM sessions WHERE id = ?1",
    /* Free (never taken, released: NULL; expired): a new epoch; this holder's: the same. */
    /* Taking (?5) also when the holder's fresh lease is idle. A new holder starts idle. */
    [Q_ACQUIRE] = "UPDATE sessions SET lease_holder = ?2, lease_epoch = lease_epoch +"
                  " (lease_holder IS NOT ?2), lease_expires = " NOW_MS " + ?3,"
                  " lease_busy = lease_busy AND lease_holder IS ?2 WHERE id = ?1"
                  " AND (lease_expires IS NULL OR lease_expires <= " NOW_MS
                  " OR lease_holder = ?2 OR lease_holder = ?4 OR (?5 AND NOT lease_busy))"
                  " RETURNING lease_epoch",
    [Q_LEASE_LEFT] = "SELECT lease_expires - " NOW_MS ", lease_holder FROM sessions WHERE id = ?1",
    [Q_RENEW] = "UPDATE sessions SET lease_expires = " NOW_MS " + ?3,"
                " lease_busy = CASE WHEN ?4 < 0 THEN lease_busy ELSE ?4 END"
                " WHERE id = ?1 AND lease_epoch = ?2",
    /* A new epoch: writes under the given-up fence are stale from now on. */
    [Q_RELEASE] = "UPDATE sessions SET lease_holder = NULL, lease_expires = NULL, lease_busy = 0,"
                  " lease_epoch = lease_epoch + 1 WHERE id = ?1 AND lease_epoch = ?2",
    [Q_SET_ARCHIVED] = "UPDATE sessions SET archived = ?2 WHERE id = ?1",
    [Q_SET_PROMPT] = "UPDATE sessions SET system_prompt = ?2 WHERE id = ?1"
                     " AND (?3 = 0 OR lease_epoch = ?3)",
    [Q_CHILDREN] = "SELECT " RCOLS " FROM sessions WHERE parent = ?1 ORDER BY created_at, id",
    /* The session's descendants, every generation: their rows and histories go with it. */
    [Q_DEL_TREE] = "WITH RECURSIVE t(id) AS (SELECT id FROM sessions WHERE parent = ?1"
                   " UNION SELECT s.id FROM sessions s JOIN t ON s.parent = t.id)"
                   " SELECT sid FROM sessions WHERE id IN t",
    /* The fork's row from the source's (?9): its title (?4 NULL), state (?10 NULL) and
     * system prompt (?12 NULL), archived as ?11 says, and its last seq, which its own updates
     * continue from. Its history so far is the source's: the source is its base. */
    [Q_FORK] = "INSERT INTO sessions (" COLS ", state, last_seq, lease_holder, lease_epoch,"
               " lease_expires, archived, system_prompt, base, base_seq)"
               " SELECT ?1, ?2, ?3, coalesce(?4, title),"
               " ?5, ?6, coalesce(?10, state), last_seq, ?7, ?7 IS NOT NULL,"
               " CASE WHEN ?7 IS NULL THEN NULL ELSE " NOW_MS " + ?8 END, ?11,"
               " coalesce(?12, system_prompt), CASE WHEN last_seq > 0 THEN sid END, last_seq"
               " FROM sessions WHERE id = ?9",
    [Q_BASE] = "SELECT base, base_seq FROM sessions WHERE sid = ?1",
    [Q_DEPENDENTS] = "SELECT sid, base_seq FROM sessions WHERE base = ?1",
    /* A dependent (?1) takes the updates it shares with its base (?2): the base's own ones
     * (after ?3) up to where the dependent began (?4). Its own come after: no key collides. */
    [Q_MOVE] = "UPDATE updates SET sid = ?1 WHERE sid = ?2 AND seq > ?3 AND seq <= ?4",
    [Q_REBASE] = "UPDATE sessions SET base = ?2, base_seq = ?3 WHERE sid = ?1",
};

typedef struct sq_store {
    acp_store base; /* first: the generic layer's view */
    sqlite3 *db;
    sqlite3_stmt *q[Q_COUNT]; /* prepared on first use, kept until close */
    int fault;                /* the result code the last step was given by store/inject.h */
} sq_store;

static sq_store *sq(acp_store *st)
{
    return (sq_store *)st;
}

static int fail(sq_store *s, const char *what)
{
    const char *why = s->fault ? sqlite3_errstr(s->fault) : sqlite3_errmsg(s->db);
    return acp_error_set(ACP_ESTORE, "sqlite: %s: %s", what, why);
}

/* Every database call of an operation goes through these two, so that an armed fault
 * (store/inject.h) takes the place of SQLite's answer where SQLite would have given it. */
static int db_step(sq_store *s, sqlite3_stmt *q)
{
    const acp_store_fault *f = acp_store_fault_at(&s->base);
    s->fault = f ? f->code : 0;
    return f ? f->code : sqlite3_step(q);
}

static int db_exec(sq_store *s, const char *text)
{
    const acp_store_fault *f = acp_store_fault_at(&s->base);
    s->fault = f ? f->code : 0;
    return f ? f->code : sqlite3_exec(s->db, text, NULL, NULL, NULL);
}

/* The cached statement for q, reset and unbound; NULL (with the error set) on failure. */
static sqlite3_stmt *stmt(sq_store *s, int q)
{
    if (!s->q[q] && sqlite3_prepare_v3(s->db, sql[q], -1, SQLITE_PREPARE_PERSISTENT, &s->q[q],
                                       NULL) != SQLITE_OK) {
        fail(s, "prepare");
        return NULL;
    }
    sqlite3_reset(s->q[q]);
    sqlite3_clear_bindings(s->q[q]);
    return s->q[q];
}

static void bind_text(sqlite3_stmt *q, int i, const char *t)
{
    if (t)
        sqlite3_bind_text(q, i, t, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(q, i);
}

static int exec(sq_store *s, const char *what, const char *text)
{
    return db_exec(s, text) == SQLITE_OK ? 0 : fail(s, what);
}

/* Ends a write transaction: COMMIT if rc is 0, else ROLLBACK (keeping rc's message). */
static int finish(sq_store *s, int rc)
{
    if (rc == 0) {
        if (db_exec(s, "COMMIT") == SQLITE_OK) return 0;
        rc = fail(s, "commit");
    }
    if (!sqlite3_get_autocommit(s->db)) sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

/* The version a file is at: 0 for a file that predates the schema_version table. */
static int schema_version(sq_store *s, int *v)
{
    sqlite3_stmt *q;
    *v = 0;
    int rc = sqlite3_prepare_v2(s->db,
                                "SELECT version FROM schema_version"
                                " WHERE 1 = (SELECT count(*) FROM schema_version)",
                                -1, &q, NULL);
    if (rc != SQLITE_OK) return 0; /* no table yet */
    rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) *v = sqlite3_column_int(q, 0);
    sqlite3_finalize(q);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : fail(s, "schema version");
}

static int migrate(sq_store *s)
{
    int v;
    if (schema_version(s, &v)) return ACP_ESTORE;
    if (v == SCHEMA_VERSION) return 0;
    /* Under the write lock, look again: another process may be migrating right now. */
    if (exec(s, "begin", "BEGIN IMMEDIATE") ||
        exec(s, "schema",
             "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)"
             " STRICT") ||
        schema_version(s, &v))
        return finish(s, ACP_ESTORE);
    if (v > SCHEMA_VERSION)
        return finish(s, acp_error_set(ACP_ESTORE,
                                       "sqlite: store schema version %d is newer than this "
                                       "program's (%d)",
                                       v, SCHEMA_VERSION));
    for (; v < SCHEMA_VERSION; v++)
        if (exec(s, "migrate", migrations[v])) return finish(s, ACP_ESTORE);
    char set[96];
    snprintf(set, sizeof set, "DELETE FROM schema_version; INSERT INTO schema_version VALUES (%d)",
             SCHEMA_VERSION);
    return finish(s, exec(s, "schema version", set));
}

/* Switching a new file to WAL takes an exclusive lock and SQLite answers BUSY at once, not
 * through the busy handler, when several processes open a new store together: wait here
 * the way the busy timeout would. A file already in WAL (the usual case) takes no lock. */
static int wal_mode(sq_store *s)
{
    for (unsigned waited = 0, ms = 1;; waited += ms, ms = ms < 32 ? ms * 2 : ms) {
        int rc = sqlite3_exec(s->db, "PRAGMA journal_mode = WAL", NULL, NULL, NULL);
        if (rc == SQLITE_OK) return 0;
        if ((rc & 0xff) != SQLITE_BUSY || waited >= BUSY_TIMEOUT_MS) return fail(s, "journal mode");
        struct timespec ts = {0, (long)ms * 1000000};
        nanosleep(&ts, NULL);
    }
}

/* mkdir -p of path's directory. */
static int make_parents(const char *path)
{
    char dir[PATH_MAX];
    size_t n = strlen(path);
    if (n >= sizeof dir) return ENAMETOOLONG;
    memcpy(dir, path, n + 1);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir) return 0;
    *slash = '\0';
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(dir, 0700) != 0 && errno != EEXIST) return errno;
        *p = '/';
    }
    return mkdir(dir, 0700) != 0 && errno != EEXIST ? errno : 0;
}

static const acp_store_ops sqlite_ops;

int acp_store_sqlite_open(const char *path, acp_store **out)
{
    int e = make_parents(path);
    if (e)
        return acp_error_set(ACP_ESTORE, "sqlite: cannot create the directory of %s: %s", path,
                             strerror(e));
    /* Session histories are private: create the file owner-only before SQLite does (with
     * 0644); its -wal and -shm files take the database file's mode. */
    int fd =
        strcmp(path, ":memory:") ? open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600) : -1;
    if (fd >= 0) close(fd);
    sq_store *s = calloc(1, sizeof *s);
    if (!s) return acp_error_set(ACP_ENOMEM, "sqlite: out of memory opening %s", path);
    acp_store_init(&s->base, &sqlite_ops);
    int rc = sqlite3_open_v2(
        path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_busy_timeout(s->db, BUSY_TIMEOUT_MS);
        /* secure_delete: a deleted session's bytes are overwritten, not just unlinked from
         * the b-tree (users delete sessions to get rid of the data). temp_store: the temporary
         * b-tree of an INSERT ... SELECT from its own table (a fork's history) stays in memory
         * instead of going through a temporary file, a third of what a fork wrote. */
        rc = wal_mode(s) ||
             exec(s, "configure",
                  "PRAGMA synchronous = NORMAL;"
                  "PRAGMA secure_delete = ON;"
                  "PRAGMA foreign_keys = OFF;"
                  "PRAGMA temp_store = MEMORY;") ||
             migrate(s);
    } else {
        /* "unable to open database file" alone does not say why: the system does. */
        int sys = sqlite3_system_errno(s->db);
        if (sys)
            acp_error_set(ACP_ESTORE, "sqlite: open: %s: %s", sqlite3_errmsg(s->db), strerror(sys));
        else
            fail(s, "open");
    }
    if (rc) {
        acp_error_set(ACP_ESTORE, "%s (%s)", acp_error_last()->message, path);
        sqlite3_close_v2(s->db);
        free(s);
        return ACP_ESTORE;
    }
    *out = &s->base;
    return 0;
}

int acp_store_sqlite_busy_timeout(acp_store *st, unsigned ms)
{
    return sqlite3_busy_timeout(sq(st)->db, ms > INT_MAX ? INT_MAX : (int)ms) == SQLITE_OK
               ? 0
               : ACP_ESTORE;
}

static void sq_close(acp_store *st)
{
    sq_store *s = sq(st);
    for (int i = 0; i < Q_COUNT; i++) sqlite3_finalize(s->q[i]);
    sqlite3_close_v2(s->db);
    free(s);
}

/* ?1..?8 of Q_CREATE and Q_FORK: the new row's columns, its holder and the lease's ttl. */
static void bind_row(sqlite3_stmt *q, const acp_store_session *in, const char *holder,
                     unsigned ttl_ms)
{
    bind_text(q, 1, in->id);
    bind_text(q, 2, in->cwd);
    bind_text(q, 3, in->add_dirs);
    bind_text(q, 4, in->title);
    bind_text(q, 5, in->created_at);
    bind_text(q, 6, in->updated_at);
    bind_text(q, 7, holder);
    sqlite3_bind_int64(q, 8, ttl_ms);
}

static int sq_create(acp_store *st, const acp_store_session *in, const char *holder,
                     unsigned ttl_ms)
{
    sq_store *s = sq(st);
    sqlite3_stmt *q = stmt(s, Q_CREATE);
    if (!q) return ACP_ESTORE;
    bind_row(q, in, holder, ttl_ms);
    sqlite3_bind_int(q, 9, in->archived);
    bind_text(q, 10, in->system_prompt);
    bind_text(q, 11, in->parent);
    int rc = db_step(s, q);
    sqlite3_reset(q);
    if (rc == SQLITE_DONE) return 0;
    if (rc == SQLITE_CONSTRAINT)
        return acp_error_set(ACP_EINVAL, "sqlite: session %s already exists", in->id);
    return fail(s, "create");
}

static void copy_time(char *dst, sqlite3_stmt *q, int i)
{
    const char *t = (const char *)sqlite3_column_text(q, i);
    snprintf(dst, ACP_STORE_TIME_LEN + 1, "%s", t ? t : "");
}

/* Fills s with views into the current row of an RCOLS statement (valid until it steps or
 * resets). ACP_ENOMEM when SQLite could not convert a column that is not NULL. */
static int row_session(sqlite3_stmt *q, acp_store_session *s)
{
    *s = (acp_store_session){
        .struct_size = sizeof(acp_store_session),
        .id = (char *)sqlite3_column_text(q, 0),
        .cwd = (char *)sqlite3_column_text(q, 1),
        .add_dirs = (char *)sqlite3_column_text(q, 2),
        .title = (char *)sqlite3_column_text(q, 3),
        .archived = sqlite3_column_int(q, 6) != 0,
        .parent = (char *)sqlite3_column_text(q, 7),
    };
    copy_time(s->created_at, q, 4);
    copy_time(s->updated_at, q, 5);
    bool nomem = !s->id || !s->cwd || !s->add_dirs ||
                 (!s->title && sqlite3_column_type(q, 3) != SQLITE_NULL) ||
                 (!s->parent && sqlite3_column_type(q, 7) != SQLITE_NULL);
    return nomem ? ACP_ENOMEM : 0;
}

static int sq_get(acp_store *st, const char *id, acp_store_session *out)
{
    sq_store *s = sq(st);
    sqlite3_stmt *q = stmt(s, Q_GET);
    if (!q) return ACP_ESTORE;
    bind_text(q, 1, id);
    int rc = db_step(s, q);
    if (rc != SQLITE_ROW) {
        sqlite3_reset(q);
        return rc == SQLITE_DONE ? acp_error_set(ACP_ENOTFOUND, "no session %s", id)
                                 : fail(s, "get");
    }
    acp_store_session row;
    rc = row_session(q, &row);
    if (!rc) {
        row.state = (char *)sqlite3_column_text(q, 8);
        row.system_prompt = (char *)sqlite3_column_text(q, 9);
        if ((!row.state && sqlite3_column_type(q, 8) != SQLITE_NULL) ||
            (!row.system_prompt && sqlite3_column_type(q, 9) != SQLITE_NULL))
            rc = ACP_ENOMEM;
    }
    if (!rc) rc = acp_store_session_copy(out, &row);
    sqlite3_reset(q);
    return rc;
}

/* Why a write under `fence` for session id matched no row: ACP_ENOTFOUND (no such session),
 * ACP_ESTALE (the session is there: its epoch moved on), or ACP_ESTORE. */
static int why_unmatched(sq_store *s, const char *id, int64_t fence)
{
    sqlite3_stmt *q = stmt(s, Q_EPOCH);
    if (!q) return ACP_ESTORE;
    bind_text(q, 1, id);
    int rc = db_step(s, q);
    sqlite3_reset(q);
    if (rc == SQLITE_DONE || (rc == SQLITE_ROW && !fence)) return ACP_ENOTFOUND;
    return rc == SQLITE_ROW ? ACP_ESTALE : fail(s, "lease");
}

static int unmatched(sq_store *s, const char *id, int64_t fence)
{
    int rc = why_unmatched(s, id, fence);
    if (rc == ACP_ENOTFOUND) return acp_error_set(rc, "no session %s", id);
    if (rc == ACP_ESTALE)
        return acp_error_set(rc, "session %s is leased to another holder now", id);
    return rc;
}

/* Runs a single-row UPDATE already bound; ENOTFOUND when it matched no session, ESTALE when
 * it matched none because the fence is stale. */
static int update_one(sq_store *s, sqlite3_stmt *q, const char *what, const char *id, int64_t fence)
{
    int rc = db_step(s, q);
    sqlite3_reset(q);
    if (rc != SQLITE_DONE) return fail(s, what);
    return sqlite3_changes(s->db) ? 0 : unmatched(s, id, fence);
}

static int sq_set_info(acp_store *st, const char *id, int64_t fence, bool set_title,
                       const char *title, const char *updated_at)
{
    sq_store *s = sq(st);
    sqlite3_stmt *q = stmt(s, Q_SET_INFO);
    if (!q) return ACP_ESTORE;
    bind_text(q, 1, id);
    sqlite3_bind_int(q, 2, set_title);
    bind_text(q, 3, title);
    bind_text(q, 4, updated_at);
    sqlite3_bind_int64(q, 5, fence);
    return update_one(s, q, "set info", id, fence);
}

static int sq_set_roots(acp_store *st, const char *id, int64_t fence, const char *cwd,
                        const char *add_dirs)
{
    sq_store *s = sq(st);
    sqlite3_stmt *q = stmt(s, Q_SET_ROOTS);
    if (!q) return ACP_ESTORE;
    bind_text(q, 1, id);
    bind_text(q, 2, cwd);
    bind_text(q, 3, add_dirs);
    sqlite3_bind_int64(q, 4, fence);
    return update_one(s, q, "set roots", id, fence);
}

/* One text column of the session's row (?2) under the fence (?3): Q_SET_STATE, Q_SET_PROMPT. */
static int set_text(acp_store *st, int which, const char *what, const char *id, int64_t fence,
                    const char *text)
{
    sq_store *s = sq(st);
    sqlite3_stmt *q = stmt(s, which);
    if (!q) return ACP_ESTORE;
    bind_text(q, 1, id);
    bind_text(q, 2, text);
    sqlite3_bind_int64(q, 3, fence);
    return update_one(s, q, what, id, fence);
}

static int sq_set_state(acp_store *st, const char *id, int64_t fence, const char *state)
{
    return set_text(st, Q_SET_STATE, "set state", id, fence, state);
}

/* Reserves count seqs for each session of the batch: one UPDATE ... RETURNING per session,
 * inside the write transaction, so the range is ours alone. A session deleted meanwhile
 * (by another process), or whose fence is stale, matches no row: it is marked lost (why,
 * asked in the same transaction) and none of its updates is stored. */
static int reserve(sq_store *s, acp_store_batch *b, const char *now)
{
    sqlite3_stmt *q = stmt(s, Q_BUMP);
    if (!q) return ACP_ESTORE;
    for (size_t i = 0; i < b->nsess; i++) {
        acp_store_bsess *bs = &b->sess[i];
        sqlite3_reset(q);
        bind_text(q, 1, acp_store_batch_id(b, i));
        sqlite3_bind_int64(q, 2, (sqlite3_int64)bs->count);
        bind_text(q, 3, now);
        sqlite3_bind_int64(q, 4, bs->fence);
        int rc = db_step(s, q);
        bool matched = rc == SQLITE_ROW;
        if (matched) {
            bs->key = sqlite3_column_int64(q, 0);
            bs->next = sqlite3_column_int64(q, 1) - (int64_t)bs->count + 1;
            rc = db_step(s, q);
        }
        sqlite3_reset(q);
        if (rc != SQLITE_DONE) return fail(s, "reserve seq");
        if (!matched) { /* nothing of it is stored */
            bs->lost = why_unmatched(s, acp_store_batch_id(b, i), bs->fence);
            if (bs->lost == ACP_ESTORE) return ACP_ESTORE;
        }
    }
    return 0;
}

static int sq_commit(acp_store *st, const char *now)
{
    sq_store *s = sq(st);
    acp_store_batch *b = &st->batch;
    if (exec(s, "begin", "BEGIN IMMEDIATE")) return ACP_ESTORE;
    int rc = reserve(s, b, now);
    sqlite3_stmt *q = rc ? NULL : stmt(s, Q_INSERT);
    if (!rc && !q) rc = ACP_ESTORE;
    for (size_t i = 0; !rc && i < b->nitems; i++) {
        acp_store_bsess *bs = &b->sess[b->items[i].sess];
        if (bs->lost) continue;
        sqlite3_bind_int64(q, 1, bs->key);
        sqlite3_bind_int64(q, 2, bs->next++);
        if (sqlite3_bind_text64(q, 3, acp_store_batch_json(b, i), b->items[i].n, SQLITE_STATIC,
                                SQLITE_UTF8) != SQLITE_OK)
            rc = acp_error_set(ACP_ETOOBIG, "sqlite: update of %zu bytes is over the limit",
                               b->items[i].n);
        else if (db_step(s, q) != SQLITE_DONE)
            rc = fail(s, "append");
        sqlite3_reset(q);
    }
    return finish(s, rc);
}

/* Where a session's history lives: its own updates, then (a fork) those of its base up to
 * where it began, and so on. Level i holds the updates of sid in (lo, hi]; the last level is the
 * oldest. */
typedef struct level {
    sqlite3_int64 sid;
    int64_t lo, hi;
} level;

#define MAX_LEVELS 4096 /* forks of forks; more would be a loop in a damaged file */

/* Session sid's base (*has false: none) and the seq up to which it continues it: 0, or
 * ACP_ENOTFOUND when there is no session sid, or the store's error. */
static int base_of(sq_store *s, sqlite3_int64 sid, bool *has, sqlite3_int64 *base,
                   int64_t *base_seq, const char *what)
{
    sqlite3_stmt *q = stmt(s, Q_BASE);
    if (!q) return ACP_ESTORE;
    sqlite3_bind_int64(q, 1, sid);
    int rc = db_step(s, q);
    *has = rc == SQLITE_ROW && sqlite3_column_type(q, 0) != SQLITE_NULL;
    *base = *has ? sqlite3_column_int64(q, 0) : 0;
    *base_seq = rc == SQLITE_ROW ? sqlite3_column_int64(q, 1) : 0;
    sqlite3_reset(q);
    return rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? ACP_ENOTFOUND : fail(s, what);
}

static int levels_push(level **v, size_t *n, size_t *cap, level l)
{
    if (*n == *cap) {
        level *nv = realloc(*v, (*cap = *cap ? 2 * *cap : 4) * sizeof **v);
        if (!nv) return acp_error_set(ACP_ENOMEM, "sqlite: out of memory reading a fork");
        *v = nv;
    }
    (*v)[(*n)++] = l;
    return 0;
}

static int levels_of(sq_store *s, sqlite3_int64 sid, level **out, size_t *n)
{
    level *v = NULL;
    size_t cap = 0;
    int64_t hi = INT64_MAX;
    int ret = 0;
    *n = 0;
    for (bool more = true; more && !ret;) {
        sqlite3_int64 base;
        int64_t base_seq;
        if ((ret = base_of(s, sid, &more, &base, &base_seq, "replay")) == ACP_ENOTFOUND)
            ret = acp_error_set(ACP_ESTORE, "sqlite: a fork's base is gone");
        else if (!ret && *n == MAX_LEVELS)
            ret = acp_error_set(ACP_ESTORE, "sqlite: history of more than %d forks", MAX_LEVELS);
        else if (!ret)
            ret = levels_push(&v, n, &cap, (level){sid, base_seq, hi});
        sid = base;
        if (base_seq < hi) hi = base_seq;
    }
    if (ret) free(v);
    *out = ret ? NULL : v;
    return ret;
}

/* Steps the history of level l from after `after`; q is left at its first row (or done). */
static sqlite3_stmt *level_rows(sq_store *s, const level *l, int64_t after, int *rc)
{
    sqlite3_stmt *q = stmt(s, Q_REPLAY);
    if (!q) {
        *rc = SQLITE_ERROR;
        return NULL;
    }
    sqlite3_bind_int64(q, 1, l->sid);
    sqlite3_bind_int64(q, 2, after > l->lo ? after : l->lo);
    sqlite3_bind_int64(q, 3, l->hi);
    *rc = db_step(s, q);
    return q;
}

static int replay_in(sq_store *s, const char *id, int64_t after_seq, size_t max_bytes,
                     acp_store_replay_cb cb, void *user, int64_t *last_seq, bool *done)
{
    sqlite3_stmt *q = stmt(s, Q_SID);
    if (!q) return ACP_ESTORE;
    bind_text(q, 1, id);
    int rc = db_step(s, q);
    sqlite3_int64 sid = rc == SQLITE_ROW ? sqlite3_column_int64(q, 0) : 0;
    sqlite3_reset(q);
    if (rc != SQLITE_ROW)
        return rc == SQLITE_DONE ? acp_error_set(ACP_ENOTFOUND, "no session %s", id)
                                 : fail(s, "replay");
    level *lv = NULL;
    size_t nlv = 0;
    int ret = levels_of(s, sid, &lv, &nlv);
    if (ret) return ret;
    /* Oldest first: seqs rise from one level to the next. */
    size_t total = 0;
    bool full = false; /* stopped by max_bytes or the callback */
    rc = SQLITE_DONE;
    for (size_t i = nlv; i-- > 0 && !full && !ret;) {
        q = level_rows(s, &lv[i], after_seq, &rc);
        for (; q && rc == SQLITE_ROW; rc = db_step(s, q)) {
            int64_t seq = sqlite3_column_int64(q, 0);
            const char *json = (const char *)sqlite3_column_text(q, 1);
            size_t n = (size_t)sqlite3_column_bytes(q, 1);
            if (!json) {
                ret = ACP_ENOMEM;
                break;
            }
            *last_seq = after_seq = seq;
            total += n;
            if ((ret = cb(user, seq, json, n)) != 0 || (max_bytes && total > max_bytes)) {
                full = true;
                rc = db_step(s, q); /* is anything left here? */
                break;
            }
        }
        if (q) sqlite3_reset(q);
        if (!q || (rc != SQLITE_ROW && rc != SQLITE_DONE)) ret = ret ? ret : fail(s, "replay");
        /* Stopped at a level's last update: is anything left in the newer ones? */
        for (size_t j = i; full && !ret && rc == SQLITE_DONE && j-- > 0;) {
            q = level_rows(s, &lv[j], after_seq, &rc);
            if (q) sqlite3_reset(q);
            if (!q || (rc != SQLITE_ROW && rc != SQLITE_DONE)) ret = fail(s, "replay");
        }
    }
    free(lv);
    *done = ret != ACP_ENOMEM && (!full || rc == SQLITE_DONE);
    return ret;
}

/* One read transaction: the session's row and its history come from one snapshot, so a delete
 * committed by another process between the two reads cannot pass an empty or cut history off
 * as the whole one (the next call finds the session gone instead). */
static int sq_replay(acp_store *st, const char *id, int64_t after_seq, size_t max_bytes,
                     acp_store_replay_cb cb, void *user, int64_t *last_seq, bool *done)
{
    sq_store *s = sq(st);
    if (exec(s, "begin", "BEGIN")) return ACP_ESTORE;
    int rc = replay_in(s, id, after_seq, max_bytes, cb, user, last_seq, done);
    /* Ending a read transaction changes nothing: a failure here is not the caller's problem. */
    if (db_exec(s, "COMMIT") != SQLITE_OK && !sqlite3_get_autocommit(s->db))
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

static int sq_list(acp_store *st, const char *cwd, int archived, const char *cursor, unsigned limit,
                   acp_store_list_cb cb, void *user, char **next_cursor)
{
    sq_store *s = sq(st);
    char at[ACP_STORE_TIME_LEN + 1];
    char *after_id = NULL;
    if (cursor && acp_store_cursor_decode(cursor, at, &after_id))
        return acp_error_set(ACP_EINVAL, "sqlite: malformed list cursor");
    /* Q_LIST + (cwd: 2) + (cursor: 1), in the block of the filter. */
    int base = archived == ACP_STORE_ARCHIVED_EXCLUDE ? Q_LIST_X
               : archived == ACP_STORE_ARCHIVED_ONLY  ? Q_LIST_O
                                                      : Q_LIST;
    sqlite3_stmt *q = stmt(s, base + (cwd ? 2 : 0) + (cursor ? 1 : 0));
    if (!q) {
        free(after_id);
        return ACP_ESTORE;
    }
    bind_text(q, 1, cwd);
    if (cursor) {
        bind_text(q, 2, at);
        bind_text(q, 3, after_id);
    }
    sqlite3_bind_int64(q, 4, (sqlite3_int64)limit + 1); /* one more: does a next page exist? */
    int rc, ret = 0;
    unsigned n = 0;
    char *next = NULL;
    while ((rc = db_step(s, q)) == SQLITE_ROW) {
        if (n == limit) break; /* the extra row: more follow */
        acp_store_session row;
        if ((ret = row_session(q, &row))) break;
        if (++n == limit && (ret = acp_store_cursor_encode(row.updated_at, row.id, &next))) break;
        if ((ret = cb(user, &row)) != 0) break;
    }
    sqlite3_reset(q);
    free(after_id);
    if (ret == 0 && rc != SQLITE_ROW && rc != SQLITE_DONE) ret = fail(s, "list");
    if (ret == 0 && rc == SQLITE_ROW)
        *next_cursor = next;
    else
        free(next);
    return ret;
}

/* Points session `of` at base (NULL when !has) up to base_seq. */
static int rebase(sq_store *s, sqlite3_int64 of, bool has, sqlite3_int64 base, int64_t base_seq)
{
    sqlite3_stmt *q = stmt(s, Q_REBASE);
    if (!q) return ACP_ESTORE;
    sqlite3_bind_int64(q, 1, of);
    if (has)
        sqlite3_bind_int64(q, 2, base);
    else
        sqlite3_bind_null(q, 2);
    sqlite3_bind_int64(q, 3, base_seq);
    int rc = db_step(s, q);
    sqlite3_reset(q);
    return rc == SQLITE_DONE ? 0 : fail(s, "delete");
}

/* Before sid is deleted, the sessions that continue its history (forks of it) must not lose
 * any of it. The one that took the most (the heir) takes sid's own rows it shared, moved under
 * its key rather than copied, and continues sid's base; the others continue the heir, whose
 * history up to where they began is now what sid's was. */
static int release_dependents(sq_store *s, sqlite3_int64 sid)
{
    bool has_base;
    sqlite3_int64 base;
    int64_t base_seq;
    int ret = base_of(s, sid, &has_base, &base, &base_seq, "delete");
    if (ret) return ret == ACP_ENOTFOUND ? 0 : ret;
    /* The dependents first (a statement must not read rows that the loop changes). */
    sqlite3_stmt *q = stmt(s, Q_DEPENDENTS);
    if (!q) return ACP_ESTORE;
    sqlite3_bind_int64(q, 1, sid);
    level *v = NULL, *heir = NULL;
    size_t n = 0, cap = 0;
    int rc = SQLITE_DONE;
    while (!ret && (rc = db_step(s, q)) == SQLITE_ROW)
        ret = levels_push(&v, &n, &cap,
                          (level){sqlite3_column_int64(q, 0), 0, sqlite3_column_int64(q, 1)});
    sqlite3_reset(q);
    if (!ret && rc != SQLITE_DONE) ret = fail(s, "delete");
    for (size_t i = 0; !ret && i < n; i++)
        if (!heir || v[i].hi > heir->hi) heir = &v[i];
    if (!ret && heir) {
        if (!(q = stmt(s, Q_MOVE))) {
            free(v);
            return ACP_ESTORE;
        }
        sqlite3_bind_int64(q, 1, heir->sid);
        sqlite3_bind_int64(q, 2, sid);
        sqlite3_bind_int64(q, 3, base_seq);
        sqlite3_bind_int64(q, 4, heir->hi);
        if (db_step(s, q) != SQLITE_DONE) ret = fail(s, "delete");
        sqlite3_reset(q);
    }
    for (size_t i = 0; !ret && i < n; i++)
        ret = &v[i] == heir
                  ? rebase(s, heir->sid, has_base, base, heir->hi < base_seq ? heir->hi : base_seq)
                  : rebase(s, v[i].sid, true, heir->sid, v[i].hi);
    free(v);
    return ret;
}

/* Deletes one session's history and row by its key. */
static int remove_sid(sq_store *s, sqlite3_int64 sid)
{
    int ret = release_dependents(s, sid);
    if (ret) return ret;
    for (int k = Q_DEL_UPDATES; k <= Q_DEL_SESSION; k++) {
        sqlite3_stmt *q = stmt(s, k);
        if (!q) return ACP_ESTORE;
        sqlite3_bind_int64(q, 1, sid);
        int rc = db_step(s, q);
        sqlite3_reset(q);
        if (rc != SQLITE_DONE) return fail(s, "delete");
    }
    return 0;
}

/* The session's descendants (subagent sessions), gathered before any is deleted: the
 * recursive query must not read the rows it deletes. */
static int remove_children(sq_store *s, const char *id)
{
    sqlite3_stmt *q = stmt(s, Q_DEL_TREE);
    if (!q) return ACP_ESTORE;
    bind_text(q, 1, id);
    sqlite3_int64 *v = NULL;
    size_t n = 0, cap = 0;
    int rc, ret = 0;
    while ((rc = db_step(s, q)) == SQLITE_ROW) {
        if (n == cap) {
            sqlite3_int64 *nv = realloc(v, (cap = cap ? 2 * cap : 8) * sizeof *v);
            if (!nv) {
                ret = acp_error_set(ACP_ENOMEM, "sqlite: out of memory deleting %s", id);
                break;
            }
            v = nv;
        }
        v[n++] = sqlite3_column_int64(q, 0);
    }
    sqlite3_reset(q);
    if (!ret && rc != SQLITE_DONE) ret = fail(s, "delete");
    for (size_t i = 0; !ret && i < n; i++) ret = remove_sid(s, v[i]);
    free(v);
    return ret;
}

static int sq_remove(acp_store *st, const char *id)
{
    sq_store *s = sq(st);
    if (exec(s, "begin", "BEGIN IMMEDIATE")) return ACP_ESTORE;
    sqlite3_stmt *q = stmt(s, Q_SID);
    if (!q) return finish(s, ACP_ESTORE);
    bind_text(q, 1, id);
    int rc = db_step(s, q);
    sqlite3_int64 sid = rc == SQLITE_ROW ? sqlite3_column_int64(q, 0) : 0;
    sqlite3_reset(q);
    if (rc == SQLITE_DONE) return finish(s, 0); /* already gone */
    if (rc != SQLITE_ROW) return finish(s, fail(s, "delete"));
    if ((rc = remove_children(s, id)) || (rc = remove_sid(s, sid))) return finish(s, rc);
    if ((rc = finish(s, 0))) return rc;
    /* The WAL still holds the old page images with the session's text: copy the zeroed
     * pages into the database and truncate the WAL. Best effort: if another process is
     * reading right now the next checkpoint finishes the job. */
    sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
    return 0;
}

static int sq_children(acp_store *st, const char *id, acp_store_list_cb cb, void *user)
{
    sq_store *s = sq(st);
    sqlite3_stmt *q = stmt(s, Q_CHILDREN);
    if (!q) return ACP_ESTORE;
    bind_text(q, 1, id);
    int rc, ret = 0;
    while ((rc = db_step(s, q)) == SQLITE_ROW) {
        acp_store_session row;
        if ((ret = row_session(q, &row)) || (ret = cb(user, &row))) break;
    }
    sqlite3_reset(q);
    if (ret == 0 && rc != SQLITE_ROW && rc != SQLITE_DONE) ret = fail(s, "children");
    return ret;
}

/* One write transaction: the grant and, when refused, how long the holder's lease has left,
 * from one state of the row. */
static int sq_lease_acquire(acp_store *st, const char *id, const char *holder, unsigned ttl_ms,
                            const char *dead, bool take, int64_t *fence, acp_store_lease_busy *busy)
{
    sq_store *s = sq(st);
    if (exec(s, "begin", "BEGIN IMMEDIATE")) return ACP_ESTORE;
    sqlite3_stmt *q = stmt(s, Q_ACQUIRE);
    if (!q) return finish(s, ACP_ESTORE);
    bind_text(q, 1, id);
    bind_text(q, 2, holder);
    sqlite3_bind_int64(q, 3, ttl_ms);
    bind_text(q, 4, dead);
    sqlite3_bind_int(q, 5, take);
    int rc = db_step(s, q);
    if (rc == SQLITE_ROW) {
        *fence = sqlite3_column_int64(q, 0);
        rc = db_step(s, q);
    }
    sqlite3_reset(q);
    if (rc != SQLITE_DONE) return finish(s, fail(s, "lease"));
    if (*fence) return finish(s, 0);
    if (!(q = stmt(s, Q_LEASE_LEFT))) return finish(s, ACP_ESTORE);
    bind_text(q, 1, id);
    rc = db_step(s, q);
    if (rc == SQLITE_ROW) {
        const char *h = (const char *)sqlite3_column_text(q, 1);
        busy->wait_ms = sqlite3_column_int64(q, 0);
        snprintf(busy->holder, sizeof busy->holder, "%s", h ? h : "");
    }
    sqlite3_reset(q);
    if (rc == SQLITE_DONE) return finish(s, acp_error_set(ACP_ENOTFOUND, "no session %s", id));
    if (rc != SQLITE_ROW) return finish(s, fail(s, "lease"));
    return finish(s, acp_error_set(ACP_EBUSY, "session %s is leased to another holder", id));
}

static int sq_lease_renew(acp_store *st, const char *id, int64_t fence, unsigned ttl_ms, int busy)
{
    sq_store *s = sq(st);
    sqlite3_stmt *q = stmt(s, Q_RENEW);
    if (!q) return ACP_ESTORE;
    bind_text(q, 1, id);
    sqlite3_bind_int64(q, 2, fence);
    sqlite3_bind_int64(q, 3, ttl_ms);
    sqlite3_bind_int(q, 4, busy);
    return update_one(s, q, "lease", id, fence);
}

static int sq_lease_release(acp_store *st, const char *id, int64_t fence)
{
    sq_store *s = sq(st);
    sqlite3_stmt *q = stmt(s, Q_RELEASE);
    if (!q) return ACP_ESTORE;
    bind_text(q, 1, id);
    sqlite3_bind_int64(q, 2, fence);
    int rc = db_step(s, q);
    sqlite3_reset(q);
    return rc == SQLITE_DONE ? 0 : fail(s, "lease");
}

static int sq_lease_check(acp_store *st, const char *id, int64_t fence)
{
    sq_store *s = sq(st);
    sqlite3_stmt *q = stmt(s, Q_EPOCH);
    if (!q) return ACP_ESTORE;
    bind_text(q, 1, id);
    int rc = db_step(s, q);
    int64_t epoch = rc == SQLITE_ROW ? sqlite3_column_int64(q, 0) : 0;
    sqlite3_reset(q);
    if (rc == SQLITE_DONE) return acp_error_set(ACP_ENOTFOUND, "no session %s", id);
    if (rc != SQLITE_ROW) return fail(s, "lease");
    return epoch == fence
               ? 0
               : acp_error_set(ACP_ESTALE, "session %s is leased to another holder now", id);
}

static int sq_set_archived(acp_store *st, const char *id, bool archived)
{
    sq_store *s = sq(st);
    sqlite3_stmt *q = stmt(s, Q_SET_ARCHIVED);
    if (!q) return ACP_ESTORE;
    bind_text(q, 1, id);
    sqlite3_bind_int(q, 2, archived);
    return update_one(s, q, "set archived", id, 0);
}

static int sq_set_system_prompt(acp_store *st, const char *id, int64_t fence, const char *json)
{
    return set_text(st, Q_SET_PROMPT, "set system prompt", id, fence, json);
}

/* One statement: the fork's row takes the source's last seq as the end of what it shares (its
 * base_seq), so no update of the source's can fall between them, and nothing is copied. */
static int sq_fork(acp_store *st, const char *src, const acp_store_session *in, const char *holder,
                   unsigned ttl_ms)
{
    sq_store *s = sq(st);
    if (exec(s, "begin", "BEGIN IMMEDIATE")) return ACP_ESTORE;
    sqlite3_stmt *q = stmt(s, Q_FORK);
    if (!q) return finish(s, ACP_ESTORE);
    bind_row(q, in, holder, ttl_ms);
    bind_text(q, 9, src);
    bind_text(q, 10, in->state);
    sqlite3_bind_int(q, 11, in->archived);
    bind_text(q, 12, in->system_prompt);
    int rc = db_step(s, q);
    sqlite3_reset(q);
    if (rc == SQLITE_CONSTRAINT)
        return finish(s, acp_error_set(ACP_EINVAL, "sqlite: session %s already exists", in->id));
    if (rc != SQLITE_DONE) return finish(s, fail(s, "fork"));
    if (sqlite3_changes(s->db) == 0)
        return finish(s, acp_error_set(ACP_ENOTFOUND, "no session %s", src));
    return finish(s, 0);
}

static const acp_store_ops sqlite_ops = {
    .name = "sqlite",
    .close = sq_close,
    .create = sq_create,
    .get = sq_get,
    .set_info = sq_set_info,
    .set_roots = sq_set_roots,
    .set_state = sq_set_state,
    .commit = sq_commit,
    .replay = sq_replay,
    .list = sq_list,
    .remove = sq_remove,
    .children = sq_children,
    .lease_acquire = sq_lease_acquire,
    .lease_renew = sq_lease_renew,
    .lease_release = sq_lease_release,
    .set_archived = sq_set_archived,
    .set_system_prompt = sq_set_system_prompt,
    .lease_check = sq_lease_check,
    .fork = sq_fork,
};
