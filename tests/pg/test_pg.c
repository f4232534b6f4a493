/* SPDX-License-Identifier: Apache-2.0 */
/* PostgreSQL specifics the shared contract cannot see: migration (versioned, concurrent
 * starts), many processes appending to one session, batch atomicity across sessions,
 * byte-exact text, history physically gone after delete, PG* environment, passwords kept
 * out of messages, and a backend killed under an idle store. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "acp/store.h"
#include "pg_env.h"

static char *base; /* the shared cluster's conninfo */

typedef struct fx {
    char name[64];
    char *where; /* a fresh database */
    acp_store *st;
} fx;

static acp_store *open_ok(const char *where)
{
    acp_store *st = NULL;
    int rc = acp_store_open(where, &st);
    if (rc) print_error("acp_store_open: %s\n", acp_error_last()->message);
    assert_int_equal(rc, 0);
    assert_string_equal(acp_store_backend(st), "postgresql");
    return st;
}

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    if (!f || !(f->where = pg_env_new_db(base, f->name))) return -1;
    f->st = open_ok(f->where);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    char sql[128];
    acp_store_close(f->st);
    snprintf(sql, sizeof sql, "DROP DATABASE %s WITH (FORCE)", f->name);
    pg_env_exec(base, sql);
    free(f->where);
    free(f);
    return 0;
}

static void mk(acp_store *st, const char *id)
{
    acp_store_session s = {
        .struct_size = sizeof(acp_store_session), .id = (char *)id, .cwd = "/w", .add_dirs = "[]"};
    acp_store_now(s.created_at);
    acp_store_now(s.updated_at);
    assert_int_equal(acp_store_create(st, &s), 0);
}

static void append(acp_store *st, const char *id, const char *json)
{
    assert_int_equal(acp_store_append(st, id, 0, json, strlen(json)), 0);
}

typedef struct got {
    int n;
    int64_t seq[1024];
    char *json[1024];
    size_t len[1024];
} got;

static int collect(void *user, int64_t seq, const char *json, size_t n)
{
    got *g = user;
    assert_true(g->n < 1024);
    g->seq[g->n] = seq;
    g->len[g->n] = n;
    g->json[g->n] = malloc(n + 1);
    memcpy(g->json[g->n], json, n + 1);
    g->n++;
    return 0;
}

static void replay_all(acp_store *st, const char *id, got *g)
{
    int64_t last;
    bool done = false;
    assert_int_equal(acp_store_replay(st, id, 0, 0, collect, g, &last, &done), 0);
    assert_true(done);
}

static void got_free(got *g)
{
    for (int i = 0; i < g->n; i++) free(g->json[i]);
    g->n = 0;
}

/* A count from SQL on the test database. */
static long count(const fx *f, const char *sql)
{
    char *v = pg_env_value(f->where, sql);
    assert_non_null(v);
    long n = strtol(v, NULL, 10);
    free(v);
    return n;
}

/* --- migration ------------------------------------------------------------------------- */

static void t_migration(void **state)
{
    fx *f = *state;
    assert_int_equal(count(f, "SELECT version FROM acp_schema"), 6);
    assert_int_equal(count(f, "SELECT count(*) FROM acp_schema"), 1);
    acp_store *again = open_ok(f->where); /* idempotent */
    acp_store_close(again);
    assert_int_equal(count(f, "SELECT count(*) FROM acp_schema"), 1);

    /* A store written by a newer libacp is refused, not mangled. */
    assert_int_equal(pg_env_exec(f->where, "UPDATE acp_schema SET version = 99"), 0);
    acp_store *st = NULL;
    assert_int_equal(acp_store_open(f->where, &st), ACP_ESTORE);
    assert_null(st);
    assert_non_null(strstr(acp_error_last()->message, "newer"));
    assert_int_equal(pg_env_exec(f->where, "UPDATE acp_schema SET version = 6"), 0);
}

/* A v1 store as the first release left it (store/postgres.c's v1 migration, copied verbatim:
 * that text is what databases in the field hold) with one session of two updates. */
#define V1_STORE                                                                                   \
    "CREATE TABLE acp_schema (version integer NOT NULL);"                                          \
    "CREATE TABLE acp_sessions ("                                                                  \
    " id text COLLATE \"C\" PRIMARY KEY,"                                                          \
    " cwd text COLLATE \"C\" NOT NULL,"                                                            \
    " add_dirs text NOT NULL,"                                                                     \
    " title text,"                                                                                 \
    " created_at text COLLATE \"C\" NOT NULL,"                                                     \
    " updated_at text COLLATE \"C\" NOT NULL,"                                                     \
    " next_seq bigint NOT NULL DEFAULT 1);"                                                        \
    "CREATE INDEX acp_sessions_by_time ON acp_sessions (updated_at DESC, id DESC);"                \
    "CREATE INDEX acp_sessions_by_cwd_time ON acp_sessions (cwd, updated_at DESC, id DESC);"       \
    "CREATE TABLE acp_updates ("                                                                   \
    " session_id text COLLATE \"C\" NOT NULL,"                                                     \
    " seq bigint NOT NULL,"                                                                        \
    " body text NOT NULL,"                                                                         \
    " PRIMARY KEY (session_id, seq));"                                                             \
    "INSERT INTO acp_schema VALUES (1);"                                                           \
    "INSERT INTO acp_sessions VALUES ('old', '/p', '[\"/q\"]', 'Old one',"                         \
    " '2025-01-01T00:00:00.000Z', '2025-01-02T00:00:00.000Z', 3);"                                 \
    "INSERT INTO acp_updates VALUES ('old', 1, '{\"k\":1}'), ('old', 2, '{\"k\":2}');"

/* Opening a v1 store migrates it to the current version (v2: the state column; v3: the
 * lease columns) in place: its sessions and their
 * history are kept, the new column starts empty, and set_state works on the old sessions. */
static void t_migrate_v1_to_v2(void **state)
{
    (void)state;
    char name[64], sql[128];
    char *where = pg_env_new_db(base, name);
    assert_non_null(where);
    assert_int_equal(pg_env_exec(where, V1_STORE), 0);
    acp_store *st = open_ok(where);
    char *v = pg_env_value(where, "SELECT string_agg(version::text, ',') FROM acp_schema");
    assert_string_equal(v, "6");
    free(v);
    v = pg_env_value(where, "SELECT string_agg(column_name, ',' ORDER BY ordinal_position)"
                            " FROM information_schema.columns WHERE table_name = 'acp_sessions'"
                            " AND table_schema = current_schema()");
    assert_string_equal(
        v, "id,cwd,add_dirs,title,created_at,updated_at,next_seq,state,lease_holder,lease_epoch,"
           "lease_expires,archived,system_prompt,parent,lease_busy");
    free(v);

    acp_store_session s = ACP_STORE_SESSION_INIT;
    assert_int_equal(acp_store_get(st, "old", &s), 0);
    assert_string_equal(s.cwd, "/p");
    assert_false(s.archived); /* v4: not archived, no system prompt */
    assert_null(s.system_prompt);
    assert_string_equal(s.add_dirs, "[\"/q\"]");
    assert_string_equal(s.title, "Old one");
    assert_string_equal(s.created_at, "2025-01-01T00:00:00.000Z");
    assert_string_equal(s.updated_at, "2025-01-02T00:00:00.000Z");
    assert_null(s.state);
    acp_store_session_clear(&s);
    append(st, "old", "{\"k\":3}");
    assert_int_equal(acp_store_commit(st, NULL), 0);
    got g = {0};
    replay_all(st, "old", &g);
    assert_int_equal(g.n, 3);
    for (int i = 0; i < 3; i++) assert_int_equal(g.seq[i], i + 1);
    assert_string_equal(g.json[0], "{\"k\":1}");
    assert_string_equal(g.json[2], "{\"k\":3}");
    got_free(&g);

    assert_int_equal(acp_store_set_state(st, "old", 0, "{\"mode\":\"code\"}"), 0);
    assert_int_equal(acp_store_set_state(st, "gone", 0, "{}"), ACP_ENOTFOUND);
    acp_store_close(st);
    v = pg_env_value(where, "SELECT state FROM acp_sessions WHERE id = 'old'");
    assert_string_equal(v, "{\"mode\":\"code\"}");
    free(v);

    /* opened again: nothing left to migrate, the state is there */
    st = open_ok(where);
    assert_int_equal(acp_store_get(st, "old", &s), 0);
    assert_string_equal(s.state, "{\"mode\":\"code\"}");
    acp_store_session_clear(&s);
    acp_store_close(st);
    v = pg_env_value(where, "SELECT string_agg(version::text, ',') FROM acp_schema");
    assert_string_equal(v, "6");
    free(v);
    free(where);
    snprintf(sql, sizeof sql, "DROP DATABASE %s WITH (FORCE)", name);
    assert_int_equal(pg_env_exec(base, sql), 0);
}

/* The store can share a database with another application's "sessions" and "updates". */
static void t_foreign_tables(void **state)
{
    (void)state;
    char name[64], sql[128];
    char *where = pg_env_new_db(base, name);
    assert_non_null(where);
    assert_int_equal(pg_env_exec(where,
                                 "CREATE TABLE sessions (x int); CREATE TABLE updates (y int);"
                                 "INSERT INTO sessions VALUES (42)"),
                     0);
    acp_store *st = open_ok(where);
    mk(st, "mine");
    acp_store_close(st);
    char *v = pg_env_value(where, "SELECT x FROM sessions");
    assert_string_equal(v, "42");
    free(v);
    free(where);
    snprintf(sql, sizeof sql, "DROP DATABASE %s WITH (FORCE)", name);
    assert_int_equal(pg_env_exec(base, sql), 0);
}

/* Children released at once by closing a pipe they all block on. */
static void release_and_wait(int *gate, pid_t *pids, int n)
{
    close(gate[1]);
    for (int i = 0; i < n; i++) {
        int status;
        assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
    }
}

static void wait_gate(int *gate)
{
    char c;
    close(gate[1]);
    if (read(gate[0], &c, 1) != 0) _exit(3);
    close(gate[0]);
}

/* Six agents starting at once on an empty database: every one opens (the advisory lock
 * serialises their migrations) and the schema exists once. */
static void t_concurrent_first_open(void **state)
{
    fx *f = *state;
    char name[64], sql[128];
    char *where = pg_env_new_db(base, name);
    assert_non_null(where);
    int gate[2];
    assert_int_equal(pipe(gate), 0);
    pid_t pids[6];
    for (int i = 0; i < 6; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0) {
            wait_gate(gate);
            acp_store *st = NULL;
            int rc = acp_store_open(where, &st);
            if (rc) fprintf(stderr, "child open: %s\n", acp_error_last()->message);
            acp_store_close(st);
            _exit(rc ? 1 : 0);
        }
    }
    close(gate[0]);
    release_and_wait(gate, pids, 6);
    char *v = pg_env_value(where, "SELECT count(*) FROM acp_schema");
    assert_string_equal(v, "1");
    free(v);
    free(where);
    snprintf(sql, sizeof sql, "DROP DATABASE %s WITH (FORCE)", name);
    assert_int_equal(pg_env_exec(base, sql), 0);
    (void)f;
}

/* --- concurrency and atomicity --------------------------------------------------------- */

#define WRITERS 4
#define BATCHES 40
#define PER     3

/* WRITERS processes commit BATCHES batches of PER updates each to one session, all at
 * once. Nothing is lost, seqs are gapless, each batch is contiguous (it was one
 * transaction holding the session's row lock) and each writer's batches keep its order. */
static void t_processes_append(void **state)
{
    fx *f = *state;
    mk(f->st, "shared");
    int gate[2];
    assert_int_equal(pipe(gate), 0);
    pid_t pids[WRITERS];
    for (int w = 0; w < WRITERS; w++) {
        pids[w] = fork();
        assert_true(pids[w] >= 0);
        if (pids[w] == 0) {
            acp_store *st = NULL;
            if (acp_store_open(f->where, &st)) _exit(1);
            wait_gate(gate);
            char u[64];
            for (int b = 0; b < BATCHES; b++) {
                for (int k = 0; k < PER; k++) {
                    snprintf(u, sizeof u, "{\"w\":%d,\"b\":%d,\"k\":%d}", w, b, k);
                    if (acp_store_append(st, "shared", 0, u, strlen(u))) _exit(2);
                }
                if (acp_store_commit(st, NULL)) _exit(3);
            }
            acp_store_close(st);
            _exit(0);
        }
    }
    close(gate[0]);
    release_and_wait(gate, pids, WRITERS);

    got g = {0};
    replay_all(f->st, "shared", &g);
    assert_int_equal(g.n, WRITERS * BATCHES * PER);
    int next_b[WRITERS] = {0};
    for (int i = 0; i < g.n; i++) {
        assert_int_equal(g.seq[i], i + 1);
        int w, b, k;
        assert_int_equal(sscanf(g.json[i], "{\"w\":%d,\"b\":%d,\"k\":%d}", &w, &b, &k), 3);
        assert_int_equal(k, i % PER); /* batches never interleave */
        if (k == 0) {
            assert_int_equal(b, next_b[w]); /* a writer's batches in its own order */
            next_b[w]++;
        } else {
            int w0, b0, k0;
            sscanf(g.json[i - 1], "{\"w\":%d,\"b\":%d,\"k\":%d}", &w0, &b0, &k0);
            assert_int_equal(w, w0);
            assert_int_equal(b, b0);
        }
    }
    for (int w = 0; w < WRITERS; w++) assert_int_equal(next_b[w], BATCHES);
    got_free(&g);
}

/* Two processes committing batches that touch the same two sessions, appended in opposite
 * orders: row locks taken in append order would deadlock (and the server would abort one
 * commit); taken in id order every commit succeeds, and each batch stays contiguous. */
static void t_cross_batches(void **state)
{
    fx *f = *state;
    mk(f->st, "a");
    mk(f->st, "b");
    int gate[2];
    assert_int_equal(pipe(gate), 0);
    pid_t pids[2];
    for (int w = 0; w < 2; w++) {
        pids[w] = fork();
        assert_true(pids[w] >= 0);
        if (pids[w] == 0) {
            acp_store *st = NULL;
            if (acp_store_open(f->where, &st)) _exit(1);
            wait_gate(gate);
            const char *first = w ? "b" : "a", *second = w ? "a" : "b";
            char u[32];
            for (int i = 0; i < 30; i++) {
                snprintf(u, sizeof u, "{\"w\":%d,\"i\":%d}", w, i);
                if (acp_store_append(st, first, 0, u, strlen(u)) ||
                    acp_store_append(st, second, 0, u, strlen(u)) ||
                    acp_store_append(st, first, 0, u, strlen(u)))
                    _exit(2);
                if (acp_store_commit(st, NULL)) {
                    fprintf(stderr, "commit: %s\n", acp_error_last()->message);
                    _exit(3);
                }
            }
            acp_store_close(st);
            _exit(0);
        }
    }
    close(gate[0]);
    release_and_wait(gate, pids, 2);
    got g = {0};
    replay_all(f->st, "a", &g);
    assert_int_equal(g.n, 30 + 60); /* w=0 put 2 per batch in a, w=1 put 1 */
    for (int i = 0; i < g.n; i++) assert_int_equal(g.seq[i], i + 1);
    for (int i = 0; i < g.n; i++) {
        int w, k;
        sscanf(g.json[i], "{\"w\":%d,\"i\":%d}", &w, &k);
        if (w == 0) { /* its two updates of one batch are adjacent */
            assert_true(i + 1 < g.n);
            assert_string_equal(g.json[i], g.json[i + 1]);
            i++;
        }
    }
    got_free(&g);
    replay_all(f->st, "b", &g);
    assert_int_equal(g.n, 60 + 30);
    got_free(&g);
}

/* A batch over several sessions is one transaction: when the server rejects one text
 * (invalid UTF-8), nothing of the batch is stored and no seq was used. A session that does
 * not exist stores nothing and is reported (ACP_ENOTFOUND, acp_store_gone), without failing
 * the others. */
static void t_batch_atomic(void **state)
{
    fx *f = *state;
    mk(f->st, "a");
    mk(f->st, "b");
    append(f->st, "a", "{\"ok\":1}");
    append(f->st, "b", "{\"bad\":\"\xff\"}");
    assert_int_equal(acp_store_commit(f->st, NULL), ACP_ESTORE);
    assert_string_not_equal(acp_error_last()->message, "");
    assert_int_equal(acp_store_pending(f->st), 0);
    assert_int_equal(count(f, "SELECT count(*) FROM acp_updates"), 0);

    /* one session, the bad text second: its first text is not kept either */
    append(f->st, "a", "{\"ok\":2}");
    append(f->st, "a", "\xc3");
    assert_int_equal(acp_store_commit(f->st, NULL), ACP_ESTORE);
    assert_int_equal(count(f, "SELECT count(*) FROM acp_updates"), 0);

    /* the handle is fine afterwards, and seqs start at 1: nothing was consumed */
    append(f->st, "b", "{\"b\":1}");
    append(f->st, "ghost", "{\"g\":1}");
    append(f->st, "a", "{\"a\":1}");
    append(f->st, "b", "{\"b\":2}");
    assert_int_equal(acp_store_commit(f->st, "2031-01-01T00:00:00.000Z"), ACP_ENOTFOUND);
    assert_string_equal(acp_store_gone(f->st, 0, NULL, NULL), "ghost");
    assert_null(acp_store_gone(f->st, 1, NULL, NULL));
    got g = {0};
    replay_all(f->st, "b", &g);
    assert_int_equal(g.n, 2);
    assert_int_equal(g.seq[0], 1);
    assert_string_equal(g.json[1], "{\"b\":2}");
    got_free(&g);
    replay_all(f->st, "a", &g);
    assert_int_equal(g.n, 1);
    assert_int_equal(g.seq[0], 1);
    got_free(&g);
    assert_int_equal(count(f, "SELECT count(*) FROM acp_updates WHERE session_id = 'ghost'"), 0);
    acp_store_session s = ACP_STORE_SESSION_INIT;
    assert_int_equal(acp_store_get(f->st, "a", &s), 0);
    assert_string_equal(s.updated_at, "2031-01-01T00:00:00.000Z");
    acp_store_session_clear(&s);
}

/* Stored text comes back byte for byte (whitespace, escapes, raw UTF-8, a megabyte), and
 * a batch of 1,000 updates is kept whole and in order. */
/* Deletes the session through another handle when the replay gives its first update. */
typedef struct deleter {
    got g;
    acp_store *other;
    const char *id;
} deleter;

static int delete_at_first(void *user, int64_t seq, const char *json, size_t n)
{
    deleter *d = user;
    if (d->g.n == 0) assert_int_equal(acp_store_delete(d->other, d->id), 0);
    return collect(&d->g, seq, json, n);
}

/* A replay longer than one round trip (1,000 updates) while another process deletes the
 * session: the call ends ACP_ENOTFOUND, not `done` with the first round trip's updates as if
 * they were the whole history. */
static void t_replay_across_delete(void **state)
{
    fx *f = *state;
    mk(f->st, "a");
    for (int i = 0; i < 1500; i++) append(f->st, "a", "{\"u\":1}");
    assert_int_equal(acp_store_commit(f->st, NULL), 0);
    deleter d = {.other = open_ok(f->where), .id = "a"};
    int64_t last = -1;
    bool done = true;
    assert_int_equal(acp_store_replay(f->st, "a", 0, 0, delete_at_first, &d, &last, &done),
                     ACP_ENOTFOUND);
    assert_false(done);
    assert_int_equal(d.g.n, 1000);
    assert_int_equal(last, 1000);
    got_free(&d.g);
    acp_store_close(d.other);
}

static void t_byte_exact(void **state)
{
    fx *f = *state;
    mk(f->st, "x");
    const char *odd = " {\"t\" : \"a\\\\b\\n\\u00e9 é 😀 \\\"q\\\"\",\n\t\"n\":1.50e+3 } ";
    append(f->st, "x", odd);
    size_t big = 1 << 20;
    char *j = malloc(big + 1);
    memset(j, 'z', big);
    memcpy(j, "{\"s\":\"", 6);
    memcpy(j + big - 2, "\"}", 2);
    j[big] = 0;
    assert_int_equal(acp_store_append(f->st, "x", 0, j, big), 0);
    char u[32];
    for (int i = 0; i < 1000; i++) {
        snprintf(u, sizeof u, "[%d]", i);
        append(f->st, "x", u);
    }
    assert_int_equal(acp_store_commit(f->st, NULL), 0);
    got g = {0};
    replay_all(f->st, "x", &g);
    assert_int_equal(g.n, 1002);
    assert_int_equal(g.len[0], strlen(odd));
    assert_memory_equal(g.json[0], odd, strlen(odd));
    assert_int_equal(g.len[1], big);
    assert_memory_equal(g.json[1], j, big);
    for (int i = 0; i < 1000; i++) {
        snprintf(u, sizeof u, "[%d]", i);
        assert_string_equal(g.json[2 + i], u);
        assert_int_equal(g.seq[2 + i], 3 + i);
    }
    got_free(&g);
    free(j);
}

/* Delete takes the history out of the tables, not only out of lists. */
static void t_delete_rows(void **state)
{
    fx *f = *state;
    mk(f->st, "d");
    mk(f->st, "keep");
    for (int i = 0; i < 10; i++) append(f->st, "d", "{\"secret\":true}");
    append(f->st, "keep", "{}");
    assert_int_equal(acp_store_commit(f->st, NULL), 0);
    assert_int_equal(count(f, "SELECT count(*) FROM acp_updates WHERE session_id = 'd'"), 10);
    assert_int_equal(acp_store_set_state(f->st, "d", 0, "{\"secret\":true}"), 0);
    assert_int_equal(acp_store_delete(f->st, "d"), 0);
    assert_int_equal(count(f, "SELECT count(*) FROM acp_updates WHERE session_id = 'd'"), 0);
    assert_int_equal(count(f, "SELECT count(*) FROM acp_sessions WHERE id = 'd'"), 0);
    assert_int_equal(count(f, "SELECT count(*) FROM acp_updates"), 1);
}

/* PG* variables fill in what the URI leaves out. */
static void t_environment(void **state)
{
    fx *f = *state;
    char *host = pg_env_value(f->where, "SELECT current_setting('unix_socket_directories')");
    char *db = pg_env_value(f->where, "SELECT current_database()");
    assert_non_null(host);
    setenv("PGHOST", host, 1);
    setenv("PGPORT", "5432", 1);
    setenv("PGUSER", "postgres", 1);
    setenv("PGDATABASE", db, 1);
    acp_store *st = open_ok("postgresql://");
    mk(st, "via-env");
    acp_store_close(st);
    unsetenv("PGHOST");
    unsetenv("PGPORT");
    unsetenv("PGUSER");
    unsetenv("PGDATABASE");
    acp_store_session s = ACP_STORE_SESSION_INIT;
    assert_int_equal(acp_store_get(f->st, "via-env", &s), 0);
    acp_store_session_clear(&s);
    free(host);
    free(db);
}

/* --- secrets --------------------------------------------------------------------------- */

static void open_fails_clean(const char *where, const char *secret, const char *prefix)
{
    acp_store *st = NULL;
    assert_int_equal(acp_store_open(where, &st), ACP_ESTORE);
    assert_null(st);
    assert_true(*acp_error_last()->message);
    if (strstr(acp_error_last()->message, secret))
        fail_msg("password in message: %s", acp_error_last()->message);
    if (prefix && strncmp(acp_error_last()->message, prefix, strlen(prefix)))
        fail_msg("message \"%s\" does not start with \"%s\"", acp_error_last()->message, prefix);
}

static void t_no_password_in_messages(void **state)
{
    (void)state;
    const char *down = "session store unavailable: ";
    open_fails_clean("host=/nonexistent/dir port=1 user=u password=Hunter2pw dbname=x", "Hunter2pw",
                     down);
    open_fails_clean("postgresql://u:Hunter2pw@/x?host=/nonexistent/dir", "Hunter2pw", down);
    open_fails_clean("postgresql://u:Hunter2pw@/x?host=/nonexistent/dir&bogus=1", "Hunter2pw",
                     NULL);
    open_fails_clean("host=/x password='Hunter2pw", "Hunter2pw", NULL); /* unterminated */
    open_fails_clean("postgresql://u:Hunter2pw@[::1/x", "Hunter2pw", NULL);
    /* a password that appears in the target's own name is masked there too */
    open_fails_clean("host=/nonexistent/Hunter2pw password=Hunter2pw dbname=x", "Hunter2pw", down);
    setenv("PGPASSWORD", "EnvSecret9", 1);
    open_fails_clean("host=/nonexistent/EnvSecret9 dbname=x", "EnvSecret9", down);
    unsetenv("PGPASSWORD");
}

/* --- connection replaced under an idle handle ------------------------------------------ */

/* The server ends our backend (as a restart or an administrator would) while the handle is
 * idle: the next call notices before sending anything, reconnects, and succeeds. */
static void t_backend_terminated(void **state)
{
    fx *f = *state;
    mk(f->st, "t");
    append(f->st, "t", "{\"n\":1}");
    assert_int_equal(acp_store_commit(f->st, NULL), 0);
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT count(pg_terminate_backend(pid, 30000)) FROM pg_stat_activity"
             " WHERE datname = '%s' AND application_name = 'libacp'",
             f->name);
    char *n = pg_env_value(base, sql);
    assert_string_equal(n, "1");
    free(n);
    append(f->st, "t", "{\"n\":2}");
    assert_int_equal(acp_store_commit(f->st, NULL), 0);
    got g = {0};
    replay_all(f->st, "t", &g);
    assert_int_equal(g.n, 2);
    assert_int_equal(g.seq[1], 2);
    got_free(&g);
}

/* A server that turns read-only under us (a failover demoted it) is "unavailable", not a
 * plain failure: the connection is dropped, so once a writable server answers (here: the
 * same one, made writable again) the next call reconnects and succeeds. */
static void t_read_only_server(void **state)
{
    fx *f = *state;
    char sql[256];
    mk(f->st, "ro");
    snprintf(sql, sizeof sql, "ALTER DATABASE %s SET default_transaction_read_only = on", f->name);
    assert_int_equal(pg_env_exec(base, sql), 0);
    snprintf(sql, sizeof sql,
             "SELECT count(pg_terminate_backend(pid, 30000)) FROM pg_stat_activity"
             " WHERE datname = '%s' AND application_name = 'libacp'",
             f->name);
    free(pg_env_value(base, sql)); /* our next call reconnects, to a read-only session */
    append(f->st, "ro", "{\"n\":1}");
    assert_int_equal(acp_store_commit(f->st, NULL), ACP_ESTORE);
    const char *m = acp_error_last()->message;
    if (strncmp(m, "session store unavailable: ", 27)) fail_msg("message: %s", m);
    assert_non_null(strstr(m, "read-only"));
    snprintf(sql, sizeof sql, "ALTER DATABASE %s RESET default_transaction_read_only", f->name);
    assert_int_equal(pg_env_exec(base, sql), 0);
    append(f->st, "ro", "{\"n\":2}");
    assert_int_equal(acp_store_commit(f->st, NULL), 0);
    got g = {0};
    replay_all(f->st, "ro", &g);
    assert_int_equal(g.n, 1);
    assert_string_equal(g.json[0], "{\"n\":2}");
    assert_int_equal(g.seq[0], 1);
    got_free(&g);
}

static double mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Connection attempts back off: with the server replaced by a socket that accepts and hangs
 * up at once (every attempt fails, and each one is counted), a tight loop of calls makes
 * no more attempts than the backoff schedule allows in the time it took, however slow the
 * machine. The handle reaches the server through a symlinked socket, so swapping the link
 * for the fake listener swaps the server under it. */
static void t_backoff(void **state)
{
    fx *f = *state;
    char dir[] = "/tmp/acp-pgfake.XXXXXX", sock[64], real[256], where[512];
    assert_non_null(mkdtemp(dir));
    snprintf(sock, sizeof sock, "%s/.s.PGSQL.5432", dir);
    char *host = pg_env_value(f->where, "SELECT current_setting('unix_socket_directories')");
    char *db = pg_env_value(f->where, "SELECT current_database()");
    snprintf(real, sizeof real, "%s/.s.PGSQL.5432", host);
    assert_int_equal(symlink(real, sock), 0);
    snprintf(where, sizeof where, "host=%s port=5432 user=postgres dbname=%s", dir, db);
    acp_store *st = open_ok(where);
    mk(st, "b");

    int ready[2], hits[2];
    assert_int_equal(pipe(ready), 0);
    assert_int_equal(pipe(hits), 0);
    assert_int_equal(unlink(sock), 0);
    pid_t fake = fork();
    assert_true(fake >= 0);
    if (fake == 0) {
        int l = socket(AF_UNIX, SOCK_STREAM, 0);
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        snprintf(a.sun_path, sizeof a.sun_path, "%s", sock);
        if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 64)) _exit(1);
        if (write(ready[1], "r", 1) != 1) _exit(1);
        for (;;) {
            int c = accept(l, NULL, NULL);
            if (c < 0) continue;
            close(c);
            if (write(hits[1], "a", 1) != 1) _exit(1);
        }
    }
    char r;
    assert_int_equal(read(ready[0], &r, 1), 1);
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT count(pg_terminate_backend(pid, 30000)) FROM pg_stat_activity"
             " WHERE datname = '%s' AND application_name = 'libacp'",
             db);
    free(pg_env_value(base, sql));

    double t0 = mono_ms();
    acp_store_session out = ACP_STORE_SESSION_INIT;
    for (int i = 0; i < 300; i++) { /* an agent busy with requests for over a second */
        assert_int_equal(acp_store_get(st, "b", &out), ACP_ESTORE);
        assert_int_equal(strncmp(acp_error_last()->message, "session store unavailable: ", 27), 0);
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    double elapsed = mono_ms() - t0;
    kill(fake, SIGKILL);
    waitpid(fake, NULL, 0);
    close(hits[1]);
    int attempts = 0;
    while (read(hits[0], &r, 1) == 1) attempts++;
    /* What the schedule (100 ms doubling to 5 s) allows in `elapsed`, plus one for slack. */
    int allowed = 1;
    for (double t = 0, d = 100; t + d <= elapsed; t += d, d = d * 2 > 5000 ? 5000 : d * 2)
        allowed++;
    print_message("300 calls in %.0f ms: %d connection attempts (schedule allows %d)\n", elapsed,
                  attempts, allowed);
    assert_true(attempts >= 1);
    assert_true(attempts <= allowed + 1);

    acp_store_close(st);
    unlink(sock);
    rmdir(dir);
    close(ready[0]);
    close(ready[1]);
    close(hits[0]);
    free(host);
    free(db);
}

int main(void)
{
    if (!(base = pg_env_conninfo("pg"))) return PG_ENV_SKIP;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(t_migration, setup, teardown),
        cmocka_unit_test(t_migrate_v1_to_v2),
        cmocka_unit_test(t_foreign_tables),
        cmocka_unit_test_setup_teardown(t_concurrent_first_open, setup, teardown),
        cmocka_unit_test_setup_teardown(t_processes_append, setup, teardown),
        cmocka_unit_test_setup_teardown(t_cross_batches, setup, teardown),
        cmocka_unit_test_setup_teardown(t_batch_atomic, setup, teardown),
        cmocka_unit_test_setup_teardown(t_replay_across_delete, setup, teardown),
        cmocka_unit_test_setup_teardown(t_byte_exact, setup, teardown),
        cmocka_unit_test_setup_teardown(t_delete_rows, setup, teardown),
        cmocka_unit_test_setup_teardown(t_environment, setup, teardown),
        cmocka_unit_test(t_no_password_in_messages),
        cmocka_unit_test_setup_teardown(t_backend_terminated, setup, teardown),
        cmocka_unit_test_setup_teardown(t_read_only_server, setup, teardown),
        cmocka_unit_test_setup_teardown(t_backoff, setup, teardown),
    };
    int failed = cmocka_run_group_tests_name("pg_store", tests, NULL, NULL);
    free(base);
    return failed ? 1 : 0;
}
