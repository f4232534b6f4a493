/* SPDX-License-Identifier: Apache-2.0 */
/* What only the SQLite backend promises: its file format and migrations, what survives a
 * killed process, several processes on one file, and deletion that leaves no bytes behind. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "acp/store.h"
#include "tmpdir.h"

typedef struct fx {
    char dir[PATH_MAX];
    char db[PATH_MAX + 32];
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    if (!f || tmpdir_make(f->dir, sizeof f->dir, "sqlite")) return free(f), -1;
    snprintf(f->db, sizeof f->db, "%s/sessions.db", f->dir);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    tmpdir_remove(f->dir);
    free(f);
    return 0;
}

static acp_store *open_ok(const char *path)
{
    acp_store *st = NULL;
    int rc = acp_store_open(path, &st);
    if (rc) print_error("open %s: %s\n", path, acp_error_last()->message);
    assert_int_equal(rc, 0);
    assert_string_equal(acp_store_backend(st), "sqlite");
    return st;
}

/* Runs SQL on the file directly, as another tool (or an older program) would. */
static void raw_exec(const char *path, const char *sql)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    char *err = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &err);
    if (rc) print_error("%s: %s\n", sql, err);
    sqlite3_free(err);
    sqlite3_close(db);
    assert_int_equal(rc, SQLITE_OK);
}

/* The first column of the first row of sql, as a malloc'd string ("" if no row). */
static char *raw_text(const char *path, const char *sql)
{
    sqlite3 *db;
    sqlite3_stmt *q;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &q, NULL), SQLITE_OK);
    int rc = sqlite3_step(q);
    const char *t = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(q, 0) : NULL;
    char *out = strdup(t ? t : "");
    sqlite3_finalize(q);
    sqlite3_close(db);
    return out;
}

/* The EXPLAIN QUERY PLAN details of sql, joined by "; " (malloc'd). */
static char *raw_plan(const char *path, const char *sql)
{
    sqlite3 *db;
    sqlite3_stmt *q;
    char eqp[1024];
    snprintf(eqp, sizeof eqp, "EXPLAIN QUERY PLAN %s", sql);
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, eqp, -1, &q, NULL), SQLITE_OK);
    char *out = calloc(1, 4096);
    assert_non_null(out);
    while (sqlite3_step(q) == SQLITE_ROW) {
        size_t l = strlen(out);
        snprintf(out + l, 4096 - l, "%s; ", (const char *)sqlite3_column_text(q, 3));
    }
    sqlite3_finalize(q);
    sqlite3_close(db);
    return out;
}

static void assert_raw(const char *path, const char *sql, const char *want)
{
    char *got = raw_text(path, sql);
    assert_string_equal(got, want);
    free(got);
}

static void mk(acp_store *st, const char *id)
{
    acp_store_session s = {
        .struct_size = sizeof(acp_store_session), .id = (char *)id, .cwd = "/w", .add_dirs = "[]"};
    acp_store_now(s.created_at);
    acp_store_now(s.updated_at);
    assert_int_equal(acp_store_create(st, &s), 0);
}

typedef struct hist {
    int64_t n, bad;
    char fmt[32]; /* expected text of seq k: printf(fmt, k); "" to skip the check */
} hist;

static int check_cb(void *user, int64_t seq, const char *json, size_t n)
{
    hist *h = user;
    char want[64];
    if (seq != h->n + 1) h->bad++;
    if (h->fmt[0]) {
        snprintf(want, sizeof want, h->fmt, (long long)seq);
        if (strlen(want) != n || memcmp(want, json, n) != 0) h->bad++;
    }
    h->n++;
    return 0;
}

/* --- schema ---------------------------------------------------------------------------- */

static void t_fresh_file_settings(void **state)
{
    fx *f = *state;
    acp_store *st = open_ok(f->db);
    mk(st, "a");
    /* private files, the WAL included */
    char wal[PATH_MAX + 64];
    snprintf(wal, sizeof wal, "%s-wal", f->db);
    struct stat sb;
    assert_int_equal(stat(f->db, &sb), 0);
    assert_int_equal(sb.st_mode & 077, 0);
    assert_int_equal(stat(wal, &sb), 0);
    assert_int_equal(sb.st_mode & 077, 0);
    acp_store_close(st);
    assert_raw(f->db, "PRAGMA journal_mode", "wal"); /* persistent in the file */
    assert_raw(f->db, "SELECT group_concat(version) FROM schema_version", "7");
    assert_raw(f->db,
               "SELECT group_concat(name, ',') FROM (SELECT name FROM pragma_table_list"
               " WHERE strict = 1 AND schema = 'main' ORDER BY name)",
               "schema_version,sessions,updates");
    assert_raw(f->db,
               "SELECT group_concat(name, ',') FROM (SELECT name FROM sqlite_master WHERE"
               " type = 'index' AND name NOT LIKE 'sqlite_autoindex%' ORDER BY name)",
               "sessions_by_archived,sessions_by_base,sessions_by_cwd,sessions_by_cwd_archived,"
               "sessions_by_parent,sessions_by_time");
    /* list and replay are index walks, not sorts or scans */
    char *plan = raw_plan(f->db, "SELECT id FROM sessions WHERE cwd = 'x'"
                                 " AND (updated_at < '1' OR (updated_at = '1' AND id < 'a'))"
                                 " ORDER BY updated_at DESC, id DESC LIMIT 51");
    if (!strstr(plan, "sessions_by_cwd") || strstr(plan, "TEMP B-TREE")) print_error("%s\n", plan);
    assert_non_null(strstr(plan, "sessions_by_cwd"));
    assert_null(strstr(plan, "TEMP B-TREE")); /* no sort */
    free(plan);
    plan = raw_plan(f->db, "SELECT id FROM sessions"
                           " ORDER BY updated_at DESC, id DESC LIMIT 51");
    assert_non_null(strstr(plan, "sessions_by_time"));
    assert_null(strstr(plan, "TEMP B-TREE"));
    free(plan);
    plan = raw_plan(f->db, "SELECT seq, json FROM updates WHERE sid = 1 AND seq > 5 AND seq <= 9"
                           " ORDER BY seq");
    assert_non_null(strstr(plan, "PRIMARY KEY") ? plan : strstr(plan, "sqlite_autoindex_updates"));
    assert_null(strstr(plan, "TEMP B-TREE"));
    free(plan);
}

static void t_migrate_from_v0(void **state)
{
    fx *f = *state;
    /* a file from before the schema was versioned: some other table, no schema_version */
    raw_exec(f->db, "CREATE TABLE notes (x TEXT); INSERT INTO notes VALUES ('keep me')");
    acp_store *st = open_ok(f->db);
    mk(st, "a");
    assert_int_equal(acp_store_append(st, "a", 0, "{}", 2), 0);
    assert_int_equal(acp_store_commit(st, NULL), 0);
    acp_store_close(st);
    assert_raw(f->db, "SELECT version FROM schema_version", "7");
    assert_raw(f->db, "SELECT x FROM notes", "keep me");
    /* opening again changes nothing */
    st = open_ok(f->db);
    acp_store_close(st);
    assert_raw(f->db, "SELECT count(*) FROM schema_version", "1");
}

/* A v1 file as the first release wrote it: its migrate() made schema_version and ran the
 * v0 -> v1 entry of store/sqlite.c's migrations (copied here verbatim: that text is what
 * files in the field hold), then one session of two updates was stored. */
#define V1_FILE                                                                                    \
    "PRAGMA journal_mode = WAL;"                                                                   \
    "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL) STRICT;"                 \
    "CREATE TABLE sessions ("                                                                      \
    " sid INTEGER PRIMARY KEY,"                                                                    \
    " id TEXT NOT NULL UNIQUE,"                                                                    \
    " cwd TEXT NOT NULL,"                                                                          \
    " add_dirs TEXT NOT NULL,"                                                                     \
    " title TEXT,"                                                                                 \
    " created_at TEXT NOT NULL,"                                                                   \
    " updated_at TEXT NOT NULL,"                                                                   \
    " last_seq INTEGER NOT NULL DEFAULT 0"                                                         \
    ") STRICT;"                                                                                    \
    "CREATE INDEX sessions_by_time ON sessions (updated_at DESC, id DESC);"                        \
    "CREATE INDEX sessions_by_cwd ON sessions (cwd, updated_at DESC, id DESC);"                    \
    "CREATE TABLE updates ("                                                                       \
    " sid INTEGER NOT NULL,"                                                                       \
    " seq INTEGER NOT NULL,"                                                                       \
    " json TEXT NOT NULL,"                                                                         \
    " PRIMARY KEY (sid, seq)"                                                                      \
    ") STRICT;"                                                                                    \
    "DELETE FROM schema_version; INSERT INTO schema_version VALUES (1);"                           \
    "INSERT INTO sessions VALUES (7, 'old', '/p', '[\"/q\"]', 'Old one',"                          \
    " '2025-01-01T00:00:00.000Z', '2025-01-02T00:00:00.000Z', 2);"                                 \
    "INSERT INTO updates VALUES (7, 1, '{\"k\":1}'), (7, 2, '{\"k\":2}');"

/* V1_FILE's session "old" as stored, with state (NULL: none). */
static void assert_old(acp_store *st, const char *state)
{
    acp_store_session s = ACP_STORE_SESSION_INIT;
    assert_int_equal(acp_store_get(st, "old", &s), 0);
    assert_string_equal(s.cwd, "/p");
    assert_string_equal(s.add_dirs, "[\"/q\"]");
    assert_string_equal(s.title, "Old one");
    assert_string_equal(s.created_at, "2025-01-01T00:00:00.000Z");
    assert_string_equal(s.updated_at, "2025-01-02T00:00:00.000Z");
    if (!state) assert_null(s.state);
    if (state) assert_string_equal(s.state, state);
    acp_store_session_clear(&s);
}

/* The history of "old" is n updates {"k":1} .. {"k":n} at seq 1 .. n. */
static void assert_old_history(acp_store *st, int64_t n)
{
    hist h = {.fmt = "{\"k\":%lld}"};
    int64_t last;
    bool done;
    assert_int_equal(acp_store_replay(st, "old", 0, 0, check_cb, &h, &last, &done), 0);
    assert_int_equal(h.n, n);
    assert_int_equal(h.bad, 0);
}

/* A v1 file opens, reads, and appends continue its sequence. This pins the v1 on-disk
 * format. */
static void t_open_v1_file(void **state)
{
    fx *f = *state;
    raw_exec(f->db, V1_FILE);
    acp_store *st = open_ok(f->db);
    assert_old(st, NULL);
    assert_int_equal(acp_store_append(st, "old", 0, "{\"k\":3}", 7), 0);
    assert_int_equal(acp_store_commit(st, NULL), 0);
    assert_old_history(st, 3);
    acp_store_close(st);
}

/* Opening a v1 file migrates it to the current version (v2: the state column; v3: the lease
 * columns) in place: its sessions and their
 * history are kept, the new column starts empty, and set_state works on the old sessions. */
static void t_migrate_v1_to_v2(void **state)
{
    fx *f = *state;
    raw_exec(f->db, V1_FILE);
    acp_store *st = open_ok(f->db);
    assert_raw(f->db, "SELECT group_concat(version) FROM schema_version", "7");
    assert_raw(f->db, "SELECT group_concat(name, ',') FROM pragma_table_info('sessions')",
               "sid,id,cwd,add_dirs,title,created_at,updated_at,last_seq,state,lease_holder,"
               "lease_epoch,lease_expires,archived,system_prompt,parent,lease_busy,base,base_seq");
    assert_raw(f->db, "SELECT count(*) FROM sessions WHERE sid = 7 AND state IS NULL", "1");
    /* v4: the old sessions are not archived and have no system prompt */
    assert_raw(f->db, "SELECT count(*) FROM sessions WHERE archived = 0 AND system_prompt IS NULL",
               "1");
    assert_old(st, NULL);
    assert_old_history(st, 2);

    assert_int_equal(acp_store_set_state(st, "old", 0, "{\"mode\":\"code\"}"), 0);
    assert_int_equal(acp_store_set_state(st, "gone", 0, "{}"), ACP_ENOTFOUND);
    acp_store_close(st);
    assert_raw(f->db, "SELECT state FROM sessions WHERE id = 'old'", "{\"mode\":\"code\"}");

    /* opened again: nothing left to migrate, the state is there */
    st = open_ok(f->db);
    assert_old(st, "{\"mode\":\"code\"}");
    acp_store_close(st);
    assert_raw(f->db, "SELECT group_concat(version) FROM schema_version", "7");
    assert_raw(f->db, "PRAGMA integrity_check", "ok");
}

static void t_newer_version_refused(void **state)
{
    fx *f = *state;
    raw_exec(f->db, "CREATE TABLE schema_version (version INTEGER NOT NULL) STRICT;"
                    "INSERT INTO schema_version VALUES (99);");
    acp_store *st = NULL;
    assert_int_equal(acp_store_open(f->db, &st), ACP_ESTORE);
    assert_null(st);
    assert_true(*acp_error_last()->message);
    assert_non_null(strstr(acp_error_last()->message, "newer"));
    assert_raw(f->db, "SELECT version FROM schema_version", "99"); /* untouched */
}

static void t_open_errors(void **state)
{
    fx *f = *state;
    char path[PATH_MAX + 64];
    acp_store *st = NULL;
    /* not a database */
    FILE *fp = fopen(f->db, "w");
    assert_non_null(fp);
    fputs("this is not an SQLite file, not even close; it is long enough to be read\n", fp);
    fclose(fp);
    assert_int_equal(acp_store_open(f->db, &st), ACP_ESTORE);
    assert_null(st);
    assert_true(*acp_error_last()->message);
    assert_non_null(strstr(acp_error_last()->message, f->db));
    /* its parent is a regular file */
    snprintf(path, sizeof path, "%s/sub/x.db", f->db);
    assert_int_equal(acp_store_open(path, &st), ACP_ESTORE);
    assert_true(*acp_error_last()->message);
    assert_int_equal(acp_store_open(path, &st), ACP_ESTORE); /* errmsg is optional */
    /* ":memory:" is SQLite's private in-memory database, not a file in the cwd */
    assert_int_equal(acp_store_open(":memory:", &st), 0);
    assert_int_equal(access(":memory:", F_OK), -1);
    acp_store_session s = {
        .struct_size = sizeof(acp_store_session), .id = "m", .cwd = "/w", .add_dirs = "[]"};
    acp_store_now(s.created_at);
    acp_store_now(s.updated_at);
    assert_int_equal(acp_store_create(st, &s), 0);
    acp_store_close(st);
}

/* --- failures ------------------------------------------------------------------------- */

/* A commit that fails halfway (a trigger, added by another connection, aborts one insert)
 * stores nothing of the batch, advances no sequence and no updated_at, and drops the batch;
 * a delete that fails deletes nothing. The cached statements survive the schema change. */
static void t_failed_writes_are_atomic(void **state)
{
    fx *f = *state;
    acp_store *st = open_ok(f->db);
    mk(st, "a");
    mk(st, "b");
    assert_int_equal(acp_store_append(st, "a", 0, "{\"ok\":0}", 8), 0);
    assert_int_equal(acp_store_commit(st, "2026-01-01T00:00:00.000Z"), 0);
    raw_exec(f->db, "CREATE TRIGGER boom BEFORE INSERT ON updates WHEN NEW.json = '\"boom\"'"
                    " BEGIN SELECT RAISE(ABORT, 'injected failure'); END;"
                    "CREATE TRIGGER nodel BEFORE DELETE ON sessions WHEN OLD.id = 'b'"
                    " BEGIN SELECT RAISE(ABORT, 'injected delete failure'); END;");
    assert_int_equal(acp_store_append(st, "a", 0, "{\"ok\":1}", 8), 0);
    assert_int_equal(acp_store_append(st, "b", 0, "{\"ok\":2}", 8), 0);
    assert_int_equal(acp_store_append(st, "a", 0, "\"boom\"", 6), 0);
    assert_int_equal(acp_store_commit(st, "2027-01-01T00:00:00.000Z"), ACP_ESTORE);
    assert_non_null(strstr(acp_error_last()->message, "injected failure"));
    assert_int_equal(acp_store_pending(st), 0);
    assert_raw(f->db,
               "SELECT group_concat(id || '=' || last_seq, ' ')"
               " FROM (SELECT * FROM sessions ORDER BY id)",
               "a=1 b=0");
    assert_raw(f->db, "SELECT updated_at FROM sessions WHERE id = 'a'", "2026-01-01T00:00:00.000Z");
    assert_raw(f->db, "SELECT count(*) FROM sessions WHERE updated_at >= '2027'", "0");
    assert_raw(f->db, "SELECT count(*) FROM updates", "1");

    /* the next commit continues as if the failed one never happened */
    assert_int_equal(acp_store_append(st, "a", 0, "{\"ok\":3}", 8), 0);
    assert_int_equal(acp_store_commit(st, NULL), 0);
    assert_raw(f->db, "SELECT group_concat(seq || ':' || json, ' ') FROM updates",
               "1:{\"ok\":0} 2:{\"ok\":3}");

    assert_int_equal(acp_store_append(st, "b", 0, "{\"ok\":4}", 8), 0);
    assert_int_equal(acp_store_commit(st, NULL), 0);
    assert_int_equal(acp_store_delete(st, "b"), ACP_ESTORE);
    assert_non_null(strstr(acp_error_last()->message, "injected delete failure"));
    acp_store_session out = ACP_STORE_SESSION_INIT;
    assert_int_equal(acp_store_get(st, "b", &out), 0);
    acp_store_session_clear(&out);
    assert_raw(f->db, "SELECT count(*) FROM updates", "3"); /* b's history is still whole */
    acp_store_close(st);
}

/* --- crash safety ---------------------------------------------------------------------- */

enum { BATCH = 40 };

/* The child: commits batches of BATCH updates forever, reporting each batch's last seq
 * after its commit returned. The next batch is appended before the report goes out, so
 * the moment after a report the child is inside a transaction. Never returns. */
static void crash_child(const char *path, int wfd)
{
    acp_store *st = NULL;
    if (acp_store_open(path, &st)) _exit(2);
    char u[1100];
    int64_t seq = 1, committed = 0;
    for (;;) {
        for (int i = 0; i < BATCH; i++, seq++) {
            int n = snprintf(u, sizeof u, "{\"k\":%lld,\"pad\":\"%01000d\"}", (long long)seq, 0);
            if (acp_store_append(st, "s", 0, u, (size_t)n)) _exit(3);
        }
        if (committed && write(wfd, &committed, sizeof committed) != sizeof committed) _exit(5);
        if (acp_store_commit(st, NULL)) _exit(4);
        committed = seq - 1;
    }
}

static void t_kill_mid_transaction(void **state)
{
    fx *f = *state;
    acp_store *st = open_ok(f->db);
    mk(st, "s");
    acp_store_close(st);
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(p[0]);
        crash_child(f->db, p[1]);
    }
    close(p[1]);
    int64_t reported = 0, v;
    for (int k = 0; k < 60; k++) {
        assert_int_equal(read(p[0], &v, sizeof v), sizeof v);
        reported = v;
    }
    /* right after a report the child is already inside its next transaction */
    kill(pid, SIGKILL);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    while (read(p[0], &v, sizeof v) == sizeof v) reported = v;
    close(p[0]);

    assert_raw(f->db, "PRAGMA integrity_check", "ok");
    st = open_ok(f->db);
    hist h = {.fmt = ""};
    int64_t last;
    bool done;
    assert_int_equal(acp_store_replay(st, "s", 0, 0, check_cb, &h, &last, &done), 0);
    assert_int_equal(h.bad, 0);       /* gapless from 1 */
    assert_true(h.n >= reported);     /* every acknowledged commit is there */
    assert_int_equal(h.n % BATCH, 0); /* and no half of a transaction */
    /* still writable, continuing the order */
    assert_int_equal(acp_store_append(st, "s", 0, "{}", 2), 0);
    assert_int_equal(acp_store_commit(st, NULL), 0);
    assert_int_equal(acp_store_replay(st, "s", h.n, 0, check_cb, &h, &last, &done), 0);
    assert_int_equal(h.bad, 0);
    assert_int_equal(last, h.n);
    acp_store_close(st);
    assert_raw(f->db, "PRAGMA integrity_check", "ok");
}

/* --- two processes --------------------------------------------------------------------- */

enum { COMMITS = 150, PER = 4 };

static void writer_child(const char *path, int w, int go)
{
    char c;
    if (read(go, &c, 1) < 0) _exit(2); /* EOF: everyone starts together */
    acp_store *st = NULL;
    if (acp_store_open(path, &st)) _exit(3);
    char u[64];
    for (int i = 0; i < COMMITS * PER; i++) {
        int n = snprintf(u, sizeof u, "{\"w\":%d,\"i\":%d}", w, i);
        if (acp_store_append(st, "s", 0, u, (size_t)n)) _exit(4);
        if (i % PER == PER - 1 && acp_store_commit(st, NULL)) _exit(5);
    }
    acp_store_close(st);
    _exit(0);
}

typedef struct order {
    int64_t n, gaps;
    int next[2]; /* the next i expected from each writer */
    int wrong;
} order;

static int order_cb(void *user, int64_t seq, const char *json, size_t len)
{
    order *o = user;
    int w, i;
    if (seq != ++o->n) o->gaps++;
    if (sscanf(json, "{\"w\":%d,\"i\":%d}", &w, &i) != 2 || w < 0 || w > 1 || i != o->next[w])
        o->wrong++;
    else
        o->next[w]++;
    (void)len;
    return 0;
}

static void t_two_processes_one_session(void **state)
{
    fx *f = *state;
    acp_store *st = open_ok(f->db);
    mk(st, "s");
    acp_store_close(st);
    int go[2];
    assert_int_equal(pipe(go), 0);
    pid_t pid[2];
    for (int w = 0; w < 2; w++) {
        pid[w] = fork();
        assert_true(pid[w] >= 0);
        if (pid[w] == 0) {
            close(go[1]);
            writer_child(f->db, w, go[0]);
        }
    }
    close(go[0]);
    close(go[1]); /* go */
    for (int w = 0; w < 2; w++) {
        int status;
        assert_int_equal(waitpid(pid[w], &status, 0), pid[w]);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
    }
    st = open_ok(f->db);
    order o = {0};
    int64_t last;
    bool done;
    assert_int_equal(acp_store_replay(st, "s", 0, 0, order_cb, &o, &last, &done), 0);
    assert_int_equal(o.n, 2 * COMMITS * PER);
    assert_int_equal(o.gaps, 0);
    assert_int_equal(o.wrong, 0);
    assert_int_equal(o.next[0], COMMITS * PER);
    assert_int_equal(o.next[1], COMMITS * PER);
    acp_store_close(st);
}

/* Several processes opening one new file at the same moment: one migrates, the others
 * wait for it, and all of them work. */
static void t_concurrent_first_open(void **state)
{
    fx *f = *state;
    enum { KIDS = 6 };
    int go[2];
    assert_int_equal(pipe(go), 0);
    pid_t pid[KIDS];
    for (int k = 0; k < KIDS; k++) {
        pid[k] = fork();
        assert_true(pid[k] >= 0);
        if (pid[k] == 0) {
            char c, id[16];
            close(go[1]);
            if (read(go[0], &c, 1) < 0) _exit(2);
            acp_store *st = NULL;
            if (acp_store_open(f->db, &st)) {
                fprintf(stderr, "child %d: %s\n", k, acp_error_last()->message);
                _exit(3);
            }
            snprintf(id, sizeof id, "k%d", k);
            acp_store_session s = {
                .struct_size = sizeof(acp_store_session), .id = id, .cwd = "/w", .add_dirs = "[]"};
            acp_store_now(s.created_at);
            acp_store_now(s.updated_at);
            if (acp_store_create(st, &s) || acp_store_append(st, id, 0, "{}", 2) ||
                acp_store_commit(st, NULL))
                _exit(4);
            acp_store_close(st);
            _exit(0);
        }
    }
    close(go[0]);
    close(go[1]);
    for (int k = 0; k < KIDS; k++) {
        int status;
        assert_int_equal(waitpid(pid[k], &status, 0), pid[k]);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
    }
    assert_raw(f->db, "SELECT count(*) FROM sessions", "6");
    assert_raw(f->db, "SELECT count(*) FROM updates", "6");
    assert_raw(f->db, "SELECT group_concat(version) FROM schema_version", "7");
}

/* --- secure delete --------------------------------------------------------------------- */

static bool file_has(const char *path, const char *needle)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) return false;
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    rewind(fp);
    char *buf = malloc(n > 0 ? (size_t)n : 1);
    assert_non_null(buf);
    size_t got = fread(buf, 1, (size_t)(n > 0 ? n : 0), fp);
    fclose(fp);
    bool found = memmem(buf, got, needle, strlen(needle)) != NULL;
    free(buf);
    return found;
}

static bool store_has(const char *db, const char *needle)
{
    char p[PATH_MAX + 64];
    bool found = file_has(db, needle);
    snprintf(p, sizeof p, "%s-wal", db);
    found |= file_has(p, needle);
    snprintf(p, sizeof p, "%s-shm", db);
    found |= file_has(p, needle);
    return found;
}

static void t_delete_leaves_no_bytes(void **state)
{
    fx *f = *state;
    acp_store *st = open_ok(f->db);
    acp_store *other = open_ok(f->db); /* a second process's connection stays open */
    mk(st, "keep");
    mk(st, "victim");
    assert_int_equal(acp_store_set_info(st, "victim", 0, true, "TITLE-MARK-31337", NULL), 0);
    assert_int_equal(acp_store_set_state(st, "victim", 0, "{\"m\":\"STATE-MARK-2718\"}"), 0);
    char u[3000];
    for (int i = 0; i < 300; i++) {
        /* small and overflowing rows, so both leaf cells and overflow pages are freed */
        int n =
            snprintf(u, sizeof u, "{\"t\":\"SECRET-MARK-8472 %d %0*d\"}", i, i % 3 ? 20 : 2500, 0);
        assert_int_equal(acp_store_append(st, "victim", 0, u, (size_t)n), 0);
        n = snprintf(u, sizeof u, "{\"t\":\"KEPT-MARK-5150 %d\"}", i);
        assert_int_equal(acp_store_append(st, "keep", 0, u, (size_t)n), 0);
        if (i % 50 == 49) assert_int_equal(acp_store_commit(st, NULL), 0);
    }
    /* some of it checkpointed into the main file, some still in the WAL */
    assert_int_equal(acp_store_delete(other, "nothing-here"), 0);
    assert_true(store_has(f->db, "SECRET-MARK-8472")); /* the test can see the bytes */
    assert_true(store_has(f->db, "TITLE-MARK-31337"));
    assert_true(store_has(f->db, "STATE-MARK-2718"));
    assert_int_equal(acp_store_delete(st, "victim"), 0);
    assert_false(store_has(f->db, "SECRET-MARK-8472"));
    assert_false(store_has(f->db, "TITLE-MARK-31337"));
    assert_false(store_has(f->db, "STATE-MARK-2718"));
    assert_true(store_has(f->db, "KEPT-MARK-5150"));
    /* and it stays gone as the store is used and closed */
    mk(other, "later");
    assert_int_equal(acp_store_append(other, "later", 0, "{}", 2), 0);
    assert_int_equal(acp_store_commit(other, NULL), 0);
    acp_store_close(other);
    acp_store_close(st);
    assert_false(store_has(f->db, "SECRET-MARK-8472"));
    assert_raw(f->db, "PRAGMA integrity_check", "ok");
}

/* A fork shares its source's rows instead of copying them; deleting the source gives the fork
 * the rows it shared, and deleting both leaves none of their bytes. */
static void t_fork_shares_history(void **state)
{
    fx *f = *state;
    acp_store *st = open_ok(f->db);
    mk(st, "src");
    char u[64];
    for (int i = 0; i < 1000; i++) {
        int n = snprintf(u, sizeof u, "{\"t\":\"SHARED-MARK-4242 %d\"}", i);
        assert_int_equal(acp_store_append(st, "src", 0, u, (size_t)n), 0);
    }
    assert_int_equal(acp_store_commit(st, NULL), 0);
    acp_store_session d = {.struct_size = sizeof d, .id = "fork", .cwd = "/w", .add_dirs = "[]"};
    acp_store_now(d.created_at);
    acp_store_now(d.updated_at);
    assert_int_equal(acp_store_fork(st, "src", &d, NULL, 0, NULL), 0);
    assert_raw(f->db, "SELECT count(*) FROM updates", "1000"); /* nothing copied */
    assert_raw(f->db, "SELECT base_seq FROM sessions WHERE id = 'fork'", "1000");
    assert_int_equal(acp_store_delete(st, "src"), 0);
    assert_raw(f->db, "SELECT count(*) FROM updates", "1000"); /* now the fork's own */
    assert_raw(f->db, "SELECT base IS NULL FROM sessions WHERE id = 'fork'", "1");
    assert_true(store_has(f->db, "SHARED-MARK-4242"));
    assert_int_equal(acp_store_delete(st, "fork"), 0);
    assert_raw(f->db, "SELECT count(*) FROM updates", "0");
    acp_store_close(st);
    assert_false(store_has(f->db, "SHARED-MARK-4242"));
    assert_raw(f->db, "PRAGMA integrity_check", "ok");
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(t_fresh_file_settings),      T(t_migrate_from_v0),        T(t_open_v1_file),
        T(t_migrate_v1_to_v2),         T(t_newer_version_refused),  T(t_open_errors),
        T(t_failed_writes_are_atomic), T(t_kill_mid_transaction),   T(t_two_processes_one_session),
        T(t_concurrent_first_open),    T(t_delete_leaves_no_bytes), T(t_fork_shares_history),
    };
#undef T
    return cmocka_run_group_tests_name("store_sqlite", tests, NULL, NULL);
}
