/* SPDX-License-Identifier: Apache-2.0 */
/* Extensible structs (include/acp/api.h): acp_struct_read()'s rules, then programs built
 * against other releases calling real entry points. Every struct handed to libacp here is a
 * heap block of exactly its struct_size bytes, so ASan catches a library that reads (or
 * writes) past what the program has. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include <cmocka.h>

#include "acp/agent.h"
#include "acp/client.h"
#include "acp/rt.h"
#include "acp/store.h"
#include "acp/update.h"
#include "rpc/lasterr.h"
#include "tests/store/tmpdir.h"

/* --- acp_struct_read / acp_struct_write ---------------------------------------------------- */

/* No padding in either: v2 is v1 and a member a later release added. */
typedef struct v1 {
    size_t struct_size;
    int64_t a;
} v1;
typedef struct v2 {
    size_t struct_size;
    int64_t a;
    int64_t b;
} v2;

static void assert_last(int status, const char *part)
{
    assert_int_equal(acp_error_last()->status, status);
    assert_non_null(strstr(acp_error_last()->message, part));
}

static void test_read_shorter_is_zero_filled(void **state)
{
    (void)state;
    v1 old = {.struct_size = sizeof old, .a = 7};
    v2 got = {.b = 99};
    assert_int_equal(acp_struct_read(&got, sizeof got, sizeof(v1), &old, "v2"), 0);
    assert_int_equal(got.a, 7);
    assert_int_equal(got.b, 0);
    /* The library's copy describes itself, so it can be handed on. */
    assert_int_equal(got.struct_size, sizeof got);
}

static void test_read_longer(void **state)
{
    (void)state;
    v2 newer = {.struct_size = sizeof newer, .a = 7};
    v1 got;
    assert_int_equal(acp_struct_read(&got, sizeof got, sizeof got, &newer, "v1"), 0);
    assert_int_equal(got.a, 7);
    assert_int_equal(got.struct_size, sizeof got);

    newer.b = 1; /* a member this library does not know, set */
    assert_int_equal(acp_struct_read(&got, sizeof got, sizeof got, &newer, "v1"), ACP_ENOTSUP);
    assert_last(ACP_ENOTSUP, "v1: the program sets members this libacp does not know");
}

static void test_read_bad_size(void **state)
{
    (void)state;
    v2 s = {.struct_size = 0, .a = 1};
    v2 got;
    assert_int_equal(acp_struct_read(&got, sizeof got, sizeof(v1), &s, "v2"), ACP_EINVAL);
    assert_last(ACP_EINVAL, "v2: struct_size is 0; initialise the struct with its ACP_..._INIT");
    s.struct_size = sizeof(size_t); /* under the 1.0 size */
    assert_int_equal(acp_struct_read(&got, sizeof got, sizeof(v1), &s, "v2"), ACP_EINVAL);
    /* NULL: all defaults */
    got.a = 5;
    assert_int_equal(acp_struct_read(&got, sizeof got, sizeof(v1), NULL, "v2"), 0);
    assert_int_equal(got.a, 0);
}

static void test_write_stops_at_struct_size(void **state)
{
    (void)state;
    v1 *old = malloc(sizeof *old); /* exactly the old program's bytes: ASan guards the rest */
    *old = (v1){.struct_size = sizeof *old};
    v2 full = {.struct_size = sizeof full, .a = 3, .b = 4};
    assert_int_equal(acp_struct_write(old, sizeof full, sizeof(v1), &full, "v2"), 0);
    assert_int_equal(old->a, 3);
    assert_int_equal(old->struct_size, sizeof *old);
    old->struct_size = 0;
    assert_int_equal(acp_struct_write(old, sizeof full, sizeof(v1), &full, "v2"), ACP_EINVAL);
    free(old);
}

/* --- programs of other releases, through the entry points -----------------------------------
 *
 * The size a program built against 1.0 passes: the end of the struct's last 1.0 member,
 * rounded to the struct's alignment. It stays the 1.0 size when members are added. (Until 1.0
 * is released the last member named here follows the header; from then on, never.) */
#define SIZE_1_0(T, last)                                                                          \
    ((offsetof(T, last) + sizeof(((T *)0)->last) + _Alignof(T) - 1) / _Alignof(T) * _Alignof(T))

typedef struct fx {
    uv_loop_t loop;
    char dir[256], db[300];
    acp_store *st;
    acp_engine eng;
    unsigned n; /* ids for the sessions the store tests make */
    char id[32];
} fx;

static void noop_prompt(acp_turn *t, const json_t *prompt, void *user)
{
    (void)prompt;
    (void)user;
    acp_turn_end(t, "end_turn");
}

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    assert_int_equal(tmpdir_make(f->dir, sizeof f->dir, "api"), 0);
    snprintf(f->db, sizeof f->db, "%s/s.db", f->dir);
    assert_int_equal(uv_loop_init(&f->loop), 0);
    assert_int_equal(acp_store_open(f->db, &f->st), 0);
    f->eng = (acp_engine)ACP_ENGINE_INIT;
    f->eng.name = "api";
    f->eng.version = "1";
    f->eng.prompt = noop_prompt;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    acp_store_close(f->st);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&f->loop), 0);
    tmpdir_remove(f->dir);
    free(f);
    return 0;
}

/* One entry point: fill writes the library's current struct (sizeof full_size), call hands
 * the program's struct to the library and releases whatever it made. */
typedef struct entry {
    const char *type;
    size_t full_size, size_1_0;
    void (*fill)(fx *f, void *full);
    int (*call)(fx *f, const void *s);
} entry;

/* The program's struct: `size` bytes, the first ones from the current struct, the rest
 * (past what this library knows) `extra`. */
static void *program_struct(fx *f, const entry *e, size_t size, unsigned char extra)
{
    unsigned char *full = calloc(1, e->full_size);
    e->fill(f, full);
    unsigned char *s = malloc(size < sizeof size ? sizeof size : size);
    memcpy(s, full, size < e->full_size ? size : e->full_size);
    if (size > e->full_size) memset(s + e->full_size, extra, size - e->full_size);
    memcpy(s, &size, sizeof size);
    free(full);
    return s;
}

static int call_with(fx *f, const entry *e, size_t size, unsigned char extra)
{
    void *s = program_struct(f, e, size, extra);
    acp_error_clear();
    int rc = e->call(f, s);
    free(s);
    return rc;
}

static void check_entry(fx *f, const entry *e)
{
    /* A program built against 1.0 works, whatever this library added since. */
    assert_int_equal(call_with(f, e, e->size_1_0, 0), 0);
    /* struct_size forgotten, or smaller than 1.0 ever was: refused, saying what to do. */
    assert_int_equal(call_with(f, e, 0, 0), ACP_EINVAL);
    assert_last(ACP_EINVAL, e->type);
    assert_last(ACP_EINVAL, "initialise the struct with its ACP_..._INIT macro");
    assert_int_equal(call_with(f, e, e->size_1_0 - sizeof(void *), 0), ACP_EINVAL);
    /* A program built against a later libacp: fine while it leaves the new members zero
     * (their defaults), refused when it sets one. */
    size_t later = e->full_size + 2 * sizeof(uint64_t);
    assert_int_equal(call_with(f, e, later, 0), 0);
    assert_int_equal(call_with(f, e, later, 1), ACP_ENOTSUP);
    assert_last(ACP_ENOTSUP, e->type);
    assert_last(ACP_ENOTSUP, "it needs a newer libacp");
}

/* acp_agent_new: the engine and the options. */
static void fill_engine(fx *f, void *full)
{
    memcpy(full, &f->eng, sizeof f->eng);
}
static int free_agent(fx *f, int rc, acp_agent *a)
{
    if (!rc) acp_agent_free(a);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    return rc;
}
static int call_agent_engine(fx *f, const void *s)
{
    acp_agent *a = NULL;
    int rc = acp_agent_new(&f->loop, f->st, s, NULL, &a);
    return free_agent(f, rc, a);
}
static void fill_agent_opts(fx *f, void *full)
{
    (void)f;
    *(acp_agent_opts *)full =
        (acp_agent_opts){.struct_size = sizeof(acp_agent_opts), .lease_ttl_ms = 60000};
}
static int call_agent_opts(fx *f, const void *s)
{
    acp_agent *a = NULL;
    int rc = acp_agent_new(&f->loop, f->st, &f->eng, s, &a);
    if (!rc) assert_string_equal(acp_store_backend(f->st), "sqlite"); /* still usable */
    return free_agent(f, rc, a);
}

static void test_agent_new(void **state)
{
    fx *f = *state;
    check_entry(f, &(entry){"acp_engine", sizeof(acp_engine), SIZE_1_0(acp_engine, user),
                            fill_engine, call_agent_engine});
    check_entry(f, &(entry){"acp_agent_opts", sizeof(acp_agent_opts),
                            SIZE_1_0(acp_agent_opts, max_read), fill_agent_opts, call_agent_opts});
    /* NULL options: all defaults, as before */
    acp_agent *a = NULL;
    int rc = acp_agent_new(&f->loop, f->st, &f->eng, NULL, &a);
    assert_int_equal(free_agent(f, rc, a), 0);
}

/* acp_client_start, ACP_CLIENT_MANUAL: no process, no I/O. */
static void fill_client_opts(fx *f, void *full)
{
    (void)f;
    *(acp_client_opts *)full = (acp_client_opts){.struct_size = sizeof(acp_client_opts),
                                                 .transport = ACP_CLIENT_MANUAL,
                                                 .client_name = "api-test"};
}
static void on_init(acp_client *c, const acp_client_reply *r, void *user)
{
    (void)c;
    (void)r;
    (void)user;
}
static int call_client_start(fx *f, const void *s)
{
    (void)f;
    acp_client *c = NULL;
    int rc = acp_client_start(s, on_init, NULL, &c);
    if (!rc) {
        size_t n;
        char *out = acp_client_take(c, &n); /* initialize, with the name the struct gave */
        assert_non_null(memmem(out, n, "\"api-test\"", 10));
        free(out);
        acp_client_free(c);
    }
    return rc;
}

static void test_client_start(void **state)
{
    check_entry(*state,
                &(entry){"acp_client_opts", sizeof(acp_client_opts),
                         SIZE_1_0(acp_client_opts, max_read), fill_client_opts, call_client_start});
}

/* acp_proc_spawn */
static char *const true_argv[] = {"true", NULL};
static void fill_proc_opts(fx *f, void *full)
{
    (void)f;
    *(acp_proc_opts *)full =
        (acp_proc_opts){.struct_size = sizeof(acp_proc_opts), .file = "true", .argv = true_argv};
}
static int call_proc_spawn(fx *f, const void *s)
{
    acp_proc *p = NULL;
    int rc = acp_proc_spawn(&f->loop, s, &p);
    if (!rc) {
        acp_proc_stop(p, 100, NULL, NULL);
        uv_run(&f->loop, UV_RUN_DEFAULT);
    }
    return rc;
}

static void test_proc_spawn(void **state)
{
    check_entry(*state, &(entry){"acp_proc_opts", sizeof(acp_proc_opts),
                                 SIZE_1_0(acp_proc_opts, user), fill_proc_opts, call_proc_spawn});
}

/* acp_store_create (in) and acp_store_get (out) */
static void fill_session(fx *f, void *full)
{
    snprintf(f->id, sizeof f->id, "s%u", ++f->n);
    acp_store_session *s = full;
    *s = (acp_store_session){.struct_size = sizeof *s, .id = f->id, .cwd = "/", .add_dirs = "[]"};
    acp_store_now(s->created_at);
    acp_store_now(s->updated_at);
}
static int call_store_create(fx *f, const void *s)
{
    return acp_store_create(f->st, s);
}

static void test_store_session(void **state)
{
    fx *f = *state;
    size_t size_1_0 = SIZE_1_0(acp_store_session, updated_at);
    check_entry(f, &(entry){"acp_store_session", sizeof(acp_store_session), size_1_0, fill_session,
                            call_store_create});
    /* Out: the library writes only the program's struct_size bytes (ASan guards the rest): a
     * struct of 1.0's layout, smaller than today's (members were appended since). */
    struct session_1_0 {
        size_t struct_size;
        char *id, *cwd, *add_dirs, *title, *state;
        char created_at[ACP_STORE_TIME_LEN + 1];
        char updated_at[ACP_STORE_TIME_LEN + 1];
    } *old = malloc(sizeof *old);
    assert_int_equal(sizeof *old, size_1_0);
    memset(old, 0xff, sizeof *old);
    old->struct_size = size_1_0;
    acp_store_session *as_now = (acp_store_session *)(void *)old;
    assert_int_equal(acp_store_get(f->st, "s1", as_now), 0);
    assert_string_equal(old->id, "s1");
    assert_string_equal(old->cwd, "/");
    assert_null(old->title);
    acp_store_session_clear(as_now);
    assert_int_equal(old->struct_size, size_1_0); /* reusable as it is */
    assert_null(old->id);
    old->struct_size = 0;
    assert_int_equal(acp_store_get(f->st, "s1", as_now), ACP_EINVAL);
    assert_last(ACP_EINVAL, "acp_store_session: struct_size is 0");
    free(old);
}

/* acp_update_view: the application's, filled by the library up to its struct_size. */
static void test_update_view(void **state)
{
    (void)state;
    static const char text[] = "{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{\"type\":"
                               "\"text\",\"text\":\"hi\"}}";
    acp_update u = {.update = {text, sizeof text - 1}};
    acp_update_view *v = malloc(sizeof *v); /* exactly the program's bytes */
    *v = (acp_update_view)ACP_UPDATE_VIEW_INIT;
    for (int i = 0; i < 2; i++) { /* freed, the view is ready for the next parse */
        assert_int_equal(acp_update_view_parse(&u, v), 0);
        assert_int_equal(v->kind, ACP_UPDATE_AGENT_MESSAGE_CHUNK);
        assert_string_equal(v->chunk.content.text, "hi");
        acp_update_view_free(v);
        assert_int_equal(v->struct_size, sizeof *v);
        assert_null(v->raw);
    }
    v->struct_size = 0;
    assert_int_equal(acp_update_view_parse(&u, v), ACP_EINVAL);
    assert_last(ACP_EINVAL, "acp_update_view: struct_size is 0");
    assert_non_null(strstr(acp_error_last()->message, "ACP_..._INIT"));
    acp_update_view_free(v); /* never parsed: nothing to release */
    free(v);
}

/* acp_conn_new: NULL when refused, acp_error_last() says why. */
static void test_conn_new(void **state)
{
    (void)state;
    struct {
        acp_conn_opts o;
        uint64_t later;
    } big = {.o = {.struct_size = sizeof big, .max_message = 10}, .later = 1};
    assert_null(acp_conn_new(&big.o));
    assert_last(ACP_ENOTSUP, "acp_conn_opts");
    big.later = 0;
    acp_conn *c = acp_conn_new(&big.o);
    assert_non_null(c);
    acp_conn_free(c);
    acp_conn_free(acp_conn_new(NULL)); /* NULL: defaults */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_shorter_is_zero_filled),
        cmocka_unit_test(test_read_longer),
        cmocka_unit_test(test_read_bad_size),
        cmocka_unit_test(test_write_stops_at_struct_size),
        cmocka_unit_test_setup_teardown(test_agent_new, setup, teardown),
        cmocka_unit_test_setup_teardown(test_client_start, setup, teardown),
        cmocka_unit_test_setup_teardown(test_proc_spawn, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_session, setup, teardown),
        cmocka_unit_test(test_update_view),
        cmocka_unit_test(test_conn_new),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
