/* SPDX-License-Identifier: Apache-2.0 */
/* acp_agent_run_stdio(), the whole stdio agent in one call: a child process runs it with a pipe
 * pair as its stdin and stdout and the test is its client. The child's exit status says that
 * the call returned 0 and, under ASan, that nothing it allocated was left at exit
 * (LeakSanitizer's exit code is 66): the teardown the README's agent used to get wrong. EOF
 * ends it; so does SIGTERM, with the answers already given still delivered. */
#include <setjmp.h>
#include <stdbool.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "acp/agent.h"

static void prompt(acp_turn *t, const json_t *blocks, void *user)
{
    acp_turn_text(t, NULL, NULL, "hello", 5);
    acp_turn_end(t, "end_turn");
}

typedef struct child {
    pid_t pid;
    int to, from; /* the agent's stdin and stdout, our ends */
    char buf[65536];
    size_t n;
} child;

static void start(child *c)
{
    int in[2], out[2];
    assert_int_equal(pipe(in), 0);
    assert_int_equal(pipe(out), 0);
    c->pid = fork();
    assert_true(c->pid >= 0);
    if (c->pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[0]), close(in[1]), close(out[0]), close(out[1]);
        acp_store *st;
        if (acp_store_open(":memory:", &st)) _exit(3);
        acp_engine e = {.struct_size = sizeof(acp_engine), .name = "run-stdio-test", .version = "1", .prompt = prompt};
        int rc = acp_agent_run_stdio(st, &e, NULL);
        acp_store_close(st);
        exit(rc ? 2 : 0); /* exit, not _exit: LeakSanitizer looks at exit */
    }
    close(in[0]), close(out[1]);
    c->to = in[1], c->from = out[0], c->n = 0;
}

static void send_line(child *c, const char *line)
{
    size_t n = strlen(line);
    assert_int_equal(write(c->to, line, n), (ssize_t)n);
}

/* The response with this id, parsed (caller decrefs); the lines before it are dropped. */
static json_t *response(child *c, int id)
{
    for (;;) {
        char *nl;
        while ((nl = memchr(c->buf, '\n', c->n))) {
            json_t *m = json_loadb(c->buf, (size_t)(nl - c->buf), 0, NULL);
            c->n -= (size_t)(nl + 1 - c->buf);
            memmove(c->buf, nl + 1, c->n);
            assert_non_null(m);
            json_t *mid = json_object_get(m, "id");
            if (json_is_integer(mid) && json_integer_value(mid) == id &&
                !json_object_get(m, "method"))
                return m;
            json_decref(m);
        }
        assert_true(c->n < sizeof c->buf);
        ssize_t r = read(c->from, c->buf + c->n, sizeof c->buf - c->n);
        assert_true(r > 0);
        c->n += (size_t)r;
    }
}

/* eof: close the agent's stdin first; else it must end by itself (our end of its stdin stays
 * open until its stdout reached EOF, which only its exit gives: fd 1 is its own). */
static int finish(child *c, bool eof)
{
    if (eof) close(c->to);
    char sink[4096];
    while (read(c->from, sink, sizeof sink) > 0) continue;
    if (!eof) close(c->to);
    close(c->from);
    int status;
    assert_int_equal(waitpid(c->pid, &status, 0), c->pid);
    assert_true(WIFEXITED(status));
    return WEXITSTATUS(status);
}

static const char init[] =
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1}}\n";

static void test_eof_ends_it_with_nothing_left(void **state)
{
    child c;
    start(&c);
    send_line(&c, init);
    json_decref(response(&c, 1));
    send_line(&c, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/new\","
                  "\"params\":{\"cwd\":\"/\",\"mcpServers\":[]}}\n");
    json_t *r = response(&c, 2);
    const char *sid = json_string_value(json_object_get(json_object_get(r, "result"), "sessionId"));
    assert_non_null(sid);
    char line[512];
    snprintf(line, sizeof line,
             "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"session/prompt\",\"params\":"
             "{\"sessionId\":\"%s\",\"prompt\":[{\"type\":\"text\",\"text\":\"hi\"}]}}\n",
             sid);
    json_decref(r);
    send_line(&c, line);
    r = response(&c, 3);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(r, "result"), "stopReason")), "end_turn");
    json_decref(r);
    assert_int_equal(finish(&c, true), 0);
}

static void test_sigterm_ends_it_cleanly(void **state)
{
    child c;
    start(&c);
    send_line(&c, init);
    json_decref(response(&c, 1)); /* the loop runs: its signal handles are in place */
    assert_int_equal(kill(c.pid, SIGTERM), 0);
    assert_int_equal(finish(&c, false), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_eof_ends_it_with_nothing_left),
        cmocka_unit_test(test_sigterm_ends_it_cleanly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
