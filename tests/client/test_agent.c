/* SPDX-License-Identifier: Apache-2.0 */
/* The client library against acp-agent: every agent method, on a fresh SQLite store; replay
 * delivered (flagged) before the load returns, none on resume; cancel of a running turn;
 * the agent calling back into our fs methods; errors from the agent surfacing as
 * ACP_EPROTO with its code. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include <cmocka.h>

#include "common.h"

typedef struct fixture {
    char dir[64];
    char cmd[512];
    seen k;
} fixture;

static acp_client *open_agent(fixture *f, bool fs)
{
    acp_client_opts o = {.struct_size = sizeof(acp_client_opts),
                         .command = f->cmd,
                         .fs_read = fs,
                         .fs_write = fs,
                         .on_update = seen_update,
                         .user = &f->k};
    acp_client *c = NULL;
    int rc = acp_client_open(&o, &c);
    if (rc) fail_msg("open: %s", acp_error_last()->message);
    return c;
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    strcpy(f->dir, "/tmp/acp-client-agent-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->cmd, sizeof f->cmd, "'%s/acp-agent' --store '%s/s.db'", getenv("ACP_BUILD"),
             f->dir);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    assert_int_equal(system(cmd), 0);
    acp_buf_free(&f->k.text);
    free(f);
    return 0;
}

static const char *text(fixture *f)
{
    acp_buf_cstr(&f->k.text);
    return f->k.text.data ? f->k.text.data : "";
}

static bool listed(acp_client *c, const char *cwd, const char *id, const char *title)
{
    json_t *res = NULL;
    assert_int_equal(acp_client_list(c, cwd, NULL, &res), 0);
    bool found = false;
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(res, "sessions"), i, s)
    {
        if (strcmp(json_string_value(json_object_get(s, "sessionId")), id) == 0) {
            found = true;
            if (title) assert_string_equal(json_string_value(json_object_get(s, "title")), title);
        }
    }
    json_decref(res);
    return found;
}

static void on_timer(uv_timer_t *t)
{
    acp_client_session_cancel(t->data);
}

static void test_lifecycle(void **state)
{
    fixture *f = *state;
    acp_client *c = open_agent(f, false);
    static const acp_agent_cap all[] = {ACP_CAP_LOAD_SESSION, ACP_CAP_RESUME,
                                        ACP_CAP_CLOSE,        ACP_CAP_LIST,
                                        ACP_CAP_DELETE,       ACP_CAP_ADDITIONAL_DIRS};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        assert_true(acp_client_supports(c, all[i]));
    const char *dirs[] = {"/tmp", NULL};
    acp_session_opts so = {
        .struct_size = sizeof(acp_session_opts), .cwd = f->dir, .add_dirs = dirs};
    acp_client_session *s;
    assert_int_equal(acp_client_session_new(c, &so, &s), 0);
    char id[128];
    snprintf(id, sizeof id, "%s", acp_client_session_id(s));
    const char *stop;
    assert_int_equal(acp_client_session_prompt(s, "hello libacp", &stop), 0);
    assert_string_equal(stop, "end_turn");
    assert_string_equal(text(f), "hello libacp");
    assert_int_equal(acp_client_session_prompt(s, "/title Client test", &stop), 0);
    assert_string_equal(f->k.last_kind, "\"session_info_update\"");
    assert_true(listed(c, f->dir, id, "Client test"));

    /* A running turn, cancelled from a timer on the client's loop. */
    uv_timer_t timer;
    uv_timer_init(acp_client_loop(c), &timer);
    timer.data = s;
    uv_timer_start(&timer, on_timer, 1, 0);
    assert_int_equal(acp_client_session_prompt(s, "/sleep 60000", &stop), 0);
    assert_string_equal(stop, "cancelled");
    uv_close((uv_handle_t *)&timer, NULL);
    assert_int_equal(acp_client_session_close(s), 0);
    acp_client_free(c);

    /* Another process: load replays the conversation before it returns. */
    c = open_agent(f, false);
    f->k.text.len = 0;
    f->k.updates = f->k.replayed = 0;
    acp_session_opts plain = {.struct_size = sizeof(acp_session_opts), .cwd = f->dir};
    assert_int_equal(acp_client_session_load(c, id, &plain, &s), 0);
    assert_true(f->k.replayed >= 2);
    assert_non_null(strstr(text(f), "hello libacp"));
    int replayed = f->k.replayed;
    assert_int_equal(acp_client_session_prompt(s, "again", &stop), 0);
    assert_int_equal(f->k.replayed, replayed); /* live updates are not replay */
    assert_int_equal(acp_client_session_close(s), 0);

    /* Resume: nothing replayed. */
    f->k.replayed = 0;
    f->k.text.len = 0;
    assert_int_equal(acp_client_session_resume(c, id, &plain, &s), 0);
    assert_int_equal(f->k.replayed, 0);
    assert_string_equal(text(f), "");
    /* Same session twice in one client is refused locally. */
    acp_client_session *dup = NULL;
    assert_int_equal(acp_client_session_resume(c, id, &plain, &dup), ACP_EBUSY);
    acp_client_session_free(s);

    /* Errors from the agent carry its code. */
    assert_int_equal(acp_client_session_load(c, "sess_nope", &plain, &s), ACP_EPROTO);
    assert_int_equal(acp_client_errcode(c), -32002);
    acp_session_opts relative = {.struct_size = sizeof(acp_session_opts), .cwd = "relative/dir"};
    assert_int_not_equal(acp_client_session_new(c, &relative, &s), 0);

    /* Delete: gone from the list; deleting again succeeds. */
    assert_int_equal(acp_client_delete(c, id), 0);
    assert_false(listed(c, NULL, id, NULL));
    assert_int_equal(acp_client_delete(c, id), 0);
    acp_client_free(c);
}

static void test_fs_callbacks(void **state)
{
    fixture *f = *state;
    char path[128];
    snprintf(path, sizeof path, "%s/note.txt", f->dir);
    FILE *fp = fopen(path, "w");
    fputs("from the client's disk", fp);
    fclose(fp);
    acp_client *c = open_agent(f, true);
    acp_session_opts so = {.struct_size = sizeof(acp_session_opts), .cwd = f->dir};
    acp_client_session *s;
    assert_int_equal(acp_client_session_new(c, &so, &s), 0);
    char prompt[256];
    snprintf(prompt, sizeof prompt, "/read %s", path);
    const char *stop;
    f->k.text.len = 0;
    assert_int_equal(acp_client_session_prompt(s, prompt, &stop), 0);
    assert_non_null(strstr(text(f), "from the client's disk"));
    /* /write asks permission; without a callback the client rejects, and nothing is written. */
    snprintf(prompt, sizeof prompt, "/write %s/out.txt data", f->dir);
    assert_int_equal(acp_client_session_prompt(s, prompt, &stop), 0);
    snprintf(path, sizeof path, "%s/out.txt", f->dir);
    assert_int_equal(access(path, F_OK), -1);
    acp_client_free(c);
}

typedef struct done {
    int n;
    const char *stop[2];
} done;

static void prompt_done(acp_client *c, const acp_client_reply *r, void *user)
{
    done *d = user;
    int status = r->status;
    const char *stop = r->stop;
    if (d->n < 2) {
        assert_int_equal(status, 0);
        d->stop[d->n] = stop;
    } else {
        assert_int_equal(status, ACP_ECANCELLED);
    }
    d->n++;
}

static void test_concurrent(void **state)
{
    fixture *f = *state;
    acp_client *c = open_agent(f, false);
    acp_session_opts so = {.struct_size = sizeof(acp_session_opts), .cwd = f->dir};
    acp_client_session *a, *b;
    assert_int_equal(acp_client_session_new(c, &so, &a), 0);
    assert_int_equal(acp_client_session_new(c, &so, &b), 0);
    int na = 0, nb = 0;
    acp_client_session_set_user(a, &na);
    acp_client_session_set_user(b, &nb);
    json_t *pa = json_pack("[{s:s, s:s}]", "type", "text", "text", "/stream 300 16");
    json_t *pb = json_pack("[{s:s, s:s}]", "type", "text", "text", "/stream 200 16");
    done d = {0};
    assert_int_equal(acp_client_session_prompt_start(a, pa, prompt_done, &d, NULL), 0);
    assert_int_equal(acp_client_session_prompt_start(b, pb, prompt_done, &d, NULL), 0);
    assert_int_equal(acp_client_session_prompt_start(a, pa, prompt_done, &d, NULL), ACP_EBUSY);
    while (d.n < 2) assert_int_equal(acp_client_run_once(c), 0);
    assert_string_equal(d.stop[0], "end_turn");
    assert_string_equal(d.stop[1], "end_turn");
    assert_int_equal(na, 300);
    assert_int_equal(nb, 200);
    /* A handle freed with its prompt in flight: its waiter hears ACP_ECANCELLED at once, the
     * agent's answer is dropped, nothing leaks. */
    assert_int_equal(acp_client_session_prompt_start(a, pa, prompt_done, &d, NULL), 0);
    acp_client_session_free(a);
    assert_int_equal(d.n, 3);
    json_decref(pa);
    json_decref(pb);
    acp_client_free(c);
    assert_int_equal(d.n, 3);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN); /* an agent that exits early must not kill the test */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_lifecycle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fs_callbacks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
