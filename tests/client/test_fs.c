/* SPDX-License-Identifier: Apache-2.0 */
/* The client's own methods, driven by a TypeScript-SDK agent (ts-agent-fs.mjs) that calls
 * them: fs reads and writes confined to the session's root set (outside paths, symlink
 * escapes, relative paths), line/limit, permission requests (and the `cancelled` answer a
 * cancel owes them), terminals (truncation at a UTF-8 boundary, a command that ignores
 * SIGTERM, no zombies). */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common.h"

typedef struct fixture {
    int fds; /* open descriptors before the client: the same number must remain after */
    char root[64], outside[64];
    acp_client *c;
    acp_client_session *s;
    seen k;
} fixture;

static void on_permission(acp_client *c, acp_client_session *s, acp_client_perm *p, json_t *params,
                          void *user)
{
    seen *k = user;
    if (k->perm_mode == 0) {
        acp_client_perm_reply(p, "allow");
    } else { /* hold it and cancel the turn: the client must answer `cancelled` itself */
        k->held = p;
        acp_client_session_cancel(s);
    }
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    strcpy(f->root, "/tmp/acp-fs-root-XXXXXX");
    strcpy(f->outside, "/tmp/acp-fs-out-XXXXXX");
    make_roots(f->root, f->outside, "l1\nl2\nl3\n");
    f->fds = count_fds();
    acp_client_opts o = {.struct_size = sizeof(acp_client_opts),
                         .argv = node_agent("ts-agent-fs.mjs"),
                         .fs_read = true,
                         .fs_write = true,
                         .terminal = true,
                         .on_update = seen_update,
                         .on_permission = on_permission,
                         .user = &f->k};
    int rc = acp_client_open(&o, &f->c);
    if (rc) fprintf(stderr, "open: %s\n", acp_error_last()->message);
    assert_int_equal(rc, 0);
    acp_session_opts so = {.struct_size = sizeof(acp_session_opts), .cwd = f->root};
    assert_int_equal(acp_client_session_new(f->c, &so, &f->s), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    acp_client_free(f->c);
    assert_int_equal(count_fds(), f->fds); /* agent pipes, terminal pipes: all closed */
    acp_buf_free(&f->k.text);
    assert_true(rm_rf(f->root) && rm_rf(f->outside));
    free(f);
    return 0;
}

/* Runs one prompt of calls (a JSON array text with %s for the root / outside dirs filled
 * by the caller) and returns the agent's array of outcomes (caller owns). */
static json_t *run(fixture *f, const char *calls, const char **stop)
{
    f->k.text.len = 0;
    const char *st = NULL;
    assert_int_equal(acp_client_session_prompt(f->s, calls, &st), 0);
    if (stop) *stop = st;
    json_t *out = json_loadb(f->k.text.data, f->k.text.len, 0, NULL);
    assert_non_null(out);
    return out;
}

/* Copies a template into out with @R, @O and @N replaced by the root, the outside directory
 * and the outside directory's name. */
static void fill(fixture *f, char *out, const char *tmpl)
{
    const char *name = strrchr(f->outside, '/') + 1;
    for (; *tmpl; tmpl++) {
        const char *rep = NULL;
        if (tmpl[0] == '@' && tmpl[1] == 'R')
            rep = f->root;
        else if (tmpl[0] == '@' && tmpl[1] == 'O')
            rep = f->outside;
        else if (tmpl[0] == '@' && tmpl[1] == 'N')
            rep = name;
        if (rep) {
            out = stpcpy(out, rep);
            tmpl++;
        } else {
            *out++ = *tmpl;
        }
    }
    *out = 0;
}

static json_t *nth(json_t *out, size_t i)
{
    return json_array_get(out, i);
}

static void expect_ok(json_t *out, size_t i)
{
    if (!json_is_true(json_object_get(nth(out, i), "ok")))
        fail_msg("call %zu failed: %s", i,
                 json_string_value(json_object_get(nth(out, i), "message")));
}

static void expect_err(json_t *out, size_t i, int code)
{
    json_t *o = nth(out, i);
    assert_false(json_is_true(json_object_get(o, "ok")));
    assert_int_equal(json_integer_value(json_object_get(o, "code")), code);
    assert_true(json_string_length(json_object_get(o, "message")) > 10);
}

static const char *content(json_t *out, size_t i)
{
    return json_string_value(json_object_get(json_object_get(nth(out, i), "result"), "content"));
}

static void test_read_write(void **state)
{
    fixture *f = *state;
    char calls[8192];
    fill(f, calls,
         "[{\"method\":\"fs/read_text_file\",\"params\":{\"path\":\"@R/a.txt\"}},"
         "{\"method\":\"fs/read_text_file\",\"params\":{\"path\":\"@R/"
         "a.txt\",\"line\":2,\"limit\":1}},"
         "{\"method\":\"fs/read_text_file\",\"params\":{\"path\":\"@R/a.txt\",\"line\":3}},"
         "{\"method\":\"fs/read_text_file\",\"params\":{\"path\":\"@R/a.txt\",\"limit\":2}},"
         "{\"method\":\"fs/read_text_file\",\"params\":{\"path\":\"@O/secret.txt\"}},"
         "{\"method\":\"fs/read_text_file\",\"params\":{\"path\":\"@R/link\"}},"
         "{\"method\":\"fs/read_text_file\",\"params\":{\"path\":\"@R/dirlink/secret.txt\"}},"
         "{\"method\":\"fs/read_text_file\",\"params\":{\"path\":\"@R/../@N/secret.txt\"}},"
         "{\"method\":\"fs/read_text_file\",\"params\":{\"path\":\"a.txt\"}},"
         "{\"method\":\"fs/read_text_file\",\"params\":{\"path\":\"@R/missing.txt\"}},"
         "{\"method\":\"fs/write_text_file\",\"params\":{\"path\":\"@R/"
         "new.txt\",\"content\":\"héllo\"}},"
         "{\"method\":\"fs/write_text_file\",\"params\":{\"path\":\"@R/dirlink/"
         "planted.txt\",\"content\":\"x\"}},"
         "{\"method\":\"fs/write_text_file\",\"params\":{\"path\":\"@R/"
         "link\",\"content\":\"pwned\"}},"
         "{\"method\":\"fs/read_text_file\",\"params\":{\"path\":\"@R/new.txt\"}}]");
    json_t *out = run(f, calls, NULL);
    expect_ok(out, 0);
    assert_string_equal(content(out, 0), "l1\nl2\nl3\n");
    assert_string_equal(content(out, 1), "l2\n");
    assert_string_equal(content(out, 2), "l3\n");
    assert_string_equal(content(out, 3), "l1\nl2\n");
    expect_err(out, 4, -32602); /* outside the root set */
    expect_err(out, 5, -32602); /* a symlink pointing outside */
    expect_err(out, 6, -32602); /* through a directory symlink */
    expect_err(out, 7, -32602); /* .. out of the root */
    expect_err(out, 8, -32602); /* relative */
    expect_err(out, 9, -32002); /* inside, but missing */
    expect_ok(out, 10);
    expect_err(out, 11, -32602);
    expect_err(out, 12, -32602);
    assert_string_equal(content(out, 13), "héllo");
    json_decref(out);
    char p[256];
    snprintf(p, sizeof p, "%s/planted.txt", f->outside);
    assert_int_equal(access(p, F_OK), -1);
    snprintf(p, sizeof p, "%s/secret.txt", f->outside);
    FILE *fp = fopen(p, "r");
    char buf[32] = {0};
    assert_non_null(fgets(buf, sizeof buf, fp));
    fclose(fp);
    assert_string_equal(buf, "secret\n");
}

static void test_permission(void **state)
{
    fixture *f = *state;
    static const char calls[] =
        "[{\"method\":\"session/request_permission\",\"params\":{\"toolCall\":{\"toolCallId\":"
        "\"t1\",\"title\":\"write x\"},\"options\":[{\"optionId\":\"allow\",\"name\":\"Allow\","
        "\"kind\":\"allow_once\"},{\"optionId\":\"no\",\"name\":\"No\",\"kind\":\"reject_once\"}]}}"
        "]";
    const char *stop;
    json_t *out = run(f, calls, &stop);
    assert_string_equal(stop, "end_turn");
    json_t *outcome = json_object_get(json_object_get(nth(out, 0), "result"), "outcome");
    assert_string_equal(json_string_value(json_object_get(outcome, "outcome")), "selected");
    assert_string_equal(json_string_value(json_object_get(outcome, "optionId")), "allow");
    json_decref(out);

    f->k.perm_mode = 1;
    out = run(f, calls, &stop);
    assert_string_equal(stop, "cancelled");
    outcome = json_object_get(json_object_get(nth(out, 0), "result"), "outcome");
    assert_string_equal(json_string_value(json_object_get(outcome, "outcome")), "cancelled");
    assert_non_null(f->k.held);
    assert_true(acp_client_perm_cancelled(f->k.held));
    assert_int_equal(acp_client_perm_reply(f->k.held, "allow"), 0); /* only frees */
    json_decref(out);
}

static int read_pid(const char *path)
{
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    int pid = 0;
    assert_int_equal(fscanf(fp, "%d", &pid), 1);
    fclose(fp);
    return pid;
}

static void test_terminal(void **state)
{
    fixture *f = *state;
    char calls[8192];
    /* 'x' + 'é' (2 bytes) + "yz": the last 3 bytes start inside 'é', so "yz" remains. */
    fill(f, calls,
         "[{\"method\":\"terminal/create\",\"params\":{\"command\":\"/bin/sh\",\"args\":[\"-c\","
         "\"printf 'x\\u00e9yz'; exit 3\"],\"outputByteLimit\":3}},"
         "{\"method\":\"terminal/wait_for_exit\",\"params\":{\"terminalId\":\"$T\"}},"
         "{\"method\":\"terminal/output\",\"params\":{\"terminalId\":\"$T\"}},"
         "{\"method\":\"terminal/release\",\"params\":{\"terminalId\":\"$T\"}},"
         "{\"method\":\"terminal/output\",\"params\":{\"terminalId\":\"$T\"}},"
         "{\"method\":\"terminal/create\",\"params\":{\"command\":\"/bin/sh\",\"args\":[\"-c\","
         "\"trap '' TERM; echo ready; echo $$ > @R/pid1.tmp; mv @R/pid1.tmp @R/pid1; while :; do "
         "sleep 1; done\"]}},"
         "{\"method\":\"$waitfile\",\"path\":\"@R/pid1\"},"
         "{\"method\":\"terminal/kill\",\"params\":{\"terminalId\":\"$T\"}},"
         "{\"method\":\"terminal/wait_for_exit\",\"params\":{\"terminalId\":\"$T\"}},"
         "{\"method\":\"terminal/output\",\"params\":{\"terminalId\":\"$T\"}},"
         "{\"method\":\"terminal/release\",\"params\":{\"terminalId\":\"$T\"}},"
         "{\"method\":\"terminal/create\",\"params\":{\"command\":\"/bin/sh\",\"args\":[\"-c\","
         "\"trap '' TERM; echo $$ > @R/pid2.tmp; mv @R/pid2.tmp @R/pid2; while :; do sleep 1; "
         "done\"]}},"
         "{\"method\":\"$waitfile\",\"path\":\"@R/pid2\"},"
         "{\"method\":\"terminal/release\",\"params\":{\"terminalId\":\"$T\"}},"
         "{\"method\":\"terminal/create\",\"params\":{\"command\":\"/nonexistent/cmd\"}}]");
    json_t *out = run(f, calls, NULL);
    for (size_t i = 0; i < 14; i++)
        if (i != 4) expect_ok(out, i);
    json_t *r1 = json_object_get(nth(out, 1), "result");
    assert_int_equal(json_integer_value(json_object_get(r1, "exitCode")), 3);
    json_t *r2 = json_object_get(nth(out, 2), "result");
    assert_string_equal(json_string_value(json_object_get(r2, "output")), "yz");
    assert_true(json_is_true(json_object_get(r2, "truncated")));
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(r2, "exitStatus"), "exitCode")), 3);
    expect_err(out, 4, -32002); /* released: the id is gone */
    /* kill ended a SIGTERM-ignoring command; the terminal stayed valid. */
    json_t *r8 = json_object_get(nth(out, 8), "result");
    assert_string_equal(json_string_value(json_object_get(r8, "signal")), "SIGKILL");
    assert_true(json_is_null(json_object_get(r8, "exitCode")));
    json_t *r9 = json_object_get(nth(out, 9), "result");
    assert_string_equal(json_string_value(json_object_get(r9, "output")), "ready\n");
    assert_false(json_is_true(json_object_get(r9, "truncated")));
    expect_err(out, 14, -32603);
    json_decref(out);

    char p[256];
    snprintf(p, sizeof p, "%s/pid1", f->root);
    int pid1 = read_pid(p);
    snprintf(p, sizeof p, "%s/pid2", f->root);
    int pid2 = read_pid(p);
    /* Reaped, not zombies: kill(pid, 0) succeeds on a zombie. pid2 was released while running:
     * its reaping completes on the loop, which acp_client_free() runs to the end. */
    assert_int_equal(kill(pid1, 0), -1);
    assert_int_equal(errno, ESRCH);
    acp_client_free(f->c);
    f->c = NULL;
    assert_int_equal(kill(pid2, 0), -1);
    assert_int_equal(errno, ESRCH);
}

/* Many reads' worth of multibyte output into a small limit: always the tail, always valid
 * UTF-8 (the JSON would not parse otherwise), the flag set. */
static void test_terminal_big(void **state)
{
    fixture *f = *state;
    static const char calls[] =
        "[{\"method\":\"terminal/create\",\"params\":{\"command\":\"/bin/sh\",\"args\":[\"-c\","
        "\"yes h\u00e9llo | head -n 30000; echo end\"],\"outputByteLimit\":1001}},"
        "{\"method\":\"terminal/wait_for_exit\",\"params\":{\"terminalId\":\"$T\"}},"
        "{\"method\":\"terminal/output\",\"params\":{\"terminalId\":\"$T\"}},"
        "{\"method\":\"terminal/release\",\"params\":{\"terminalId\":\"$T\"}}]";
    json_t *out = run(f, calls, NULL);
    for (size_t i = 0; i < 4; i++) expect_ok(out, i);
    json_t *r = json_object_get(nth(out, 2), "result");
    const char *o = json_string_value(json_object_get(r, "output"));
    size_t n = strlen(o);
    assert_true(n <= 1001 && n > 990);
    assert_true(json_is_true(json_object_get(r, "truncated")));
    assert_string_equal(o + n - 11, "h\xc3\xa9llo\nend\n");
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(r, "exitStatus"), "exitCode")), 0);
    json_decref(out);
}

/* What a UI shows under a tool call's embedded terminal: the output the client holds, then
 * the exit, read by the terminalId the agent got. */
static void test_terminal_view(void **state)
{
    fixture *f = *state;
    json_t *out = run(f,
                      "[{\"method\":\"terminal/create\",\"params\":{\"command\":\"/bin/sh\","
                      "\"args\":[\"-c\",\"printf 'two\\\\nlines'; exit 4\"]}},"
                      "{\"method\":\"terminal/wait_for_exit\",\"params\":{\"terminalId\":\"$T\"}}]",
                      NULL);
    expect_ok(out, 0);
    expect_ok(out, 1);
    const char *id =
        json_string_value(json_object_get(json_object_get(nth(out, 0), "result"), "terminalId"));
    const char *text = NULL;
    size_t len = 0;
    bool truncated = true, exited = false;
    int64_t code = 0;
    int sig = -1;
    assert_int_equal(
        acp_client_terminal_output(f->c, id, &text, &len, &truncated, &exited, &code, &sig), 0);
    assert_int_equal(len, 9);
    assert_memory_equal(text, "two\nlines", 9);
    assert_false(truncated);
    assert_true(exited);
    assert_int_equal(code, 4);
    assert_int_equal(sig, 0);
    assert_int_equal(
        acp_client_terminal_output(f->c, "term-none", &text, &len, NULL, NULL, NULL, NULL),
        ACP_ENOTFOUND);
    json_decref(out);
}

static void test_modes_config(void **state)
{
    fixture *f = *state;
    assert_int_equal(acp_client_session_set_mode(f->s, "code"), 0);
    assert_string_equal(acp_client_session_mode(f->s), "code");
    assert_int_equal(acp_client_session_set_mode(f->s, "nope"), ACP_EPROTO);
    assert_string_equal(acp_client_session_mode(f->s), "code");
    assert_int_equal(acp_client_errcode(f->c), -32602);
    assert_int_equal(acp_client_session_set_config(f->s, "model", "b"), 0);
    /* The session's state follows the agent's answer (the complete option list). */
    json_t *opt = json_array_get(acp_client_session_config_options(f->s), 0);
    assert_string_equal(json_string_value(json_object_get(opt, "currentValue")), "b");
    assert_int_equal(acp_client_session_set_config(f->s, "model", "zzz"), ACP_EPROTO);
}

int main(void)
{
    test_process_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_read_write, setup, teardown),
        cmocka_unit_test_setup_teardown(test_permission, setup, teardown),
        cmocka_unit_test_setup_teardown(test_terminal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_terminal_big, setup, teardown),
        cmocka_unit_test_setup_teardown(test_terminal_view, setup, teardown),
        cmocka_unit_test_setup_teardown(test_modes_config, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
