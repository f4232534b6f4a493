/* SPDX-License-Identifier: Apache-2.0 */
/* The asynchronous client on the application's own uv_loop_t, against real agents (acp-agent,
 * and script-agent.mjs where a test needs an agent that misbehaves on purpose): five sessions
 * streaming at once on one connection; a permission answered from a timer while another session
 * streams; cancel during a permission request; acp_client_free() with calls in flight; the fds
 * and Unix socket transports; call deadlines, $/cancel_request and acp_client_op_cancel(); an
 * agent that dies mid-turn. Every test ends with the loop closable (no handle left), the same
 * descriptors open as before, and no child process left. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common.h"

extern char **environ;

#ifdef __SANITIZE_ADDRESS__
/* A callback that writes into a returned function's frame is caught, not silently done. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "detect_stack_use_after_return=1";
}
#endif

/* One session as the test sees it (the handle's user pointer). */
typedef struct sess {
    int idx;
    acp_client_session *s;
    int chunks;         /* agent_message_chunk updates routed here */
    size_t bytes;       /* their text */
    bool misrouted;     /* an update for another session id reached this handle */
    acp_client_perm *p; /* a permission request held by the test */
    acp_buf text;
} sess;

/* The end of one call. */
typedef struct done {
    bool done;
    int status;
    int code;
    const char *stop;
    acp_client_session *s;
    json_t *result;    /* owned */
    uint64_t at;       /* uv_now() when it ended */
    char errmsg[1024]; /* the reply's: an answer's failure is not the thread's last error */
} done;

typedef struct fixture {
    uv_loop_t loop;
    uv_timer_t watchdog;
    bool timed_out;
    int fds; /* open before the test: the same must be open after */
    char agent[512];
    acp_client *c;
    int closed;   /* on_closed calls */
    int unrouted; /* updates for no handle of ours */
    int last_idx; /* session of the previous chunk */
    int switches; /* chunks of one session followed by another's */
    int perms;    /* permission requests seen */
    acp_buf log;  /* on_log lines */
    sess *slow;   /* the streaming session of test_permission_while_streaming */
    int slow_at_request, slow_at_reply;
    bool slow_done_at_reply;
    struct done *slow_done; /* its prompt */
    sess *asker;            /* the session whose permission the timer answers */
    int reply_rc;
    uv_timer_t later; /* answers a held permission */
    char root[64];    /* the sessions' cwd when set (a temp dir); else /tmp */
    acp_client_ask *ask;
    acp_client_elicit *elicit;
} fixture;

static void on_watchdog(uv_timer_t *t)
{
    fixture *f = t->data;
    f->timed_out = true;
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->fds = count_fds();
    assert_int_equal(uv_loop_init(&f->loop), 0);
    uv_timer_init(&f->loop, &f->watchdog);
    f->watchdog.data = f;
    uv_timer_start(&f->watchdog, on_watchdog, 20000, 0);
    uv_unref((uv_handle_t *)&f->watchdog); /* it never keeps the loop alive by itself */
    uv_timer_init(&f->loop, &f->later);
    f->later.data = f;
    uv_unref((uv_handle_t *)&f->later);
    f->last_idx = -1;
    snprintf(f->agent, sizeof f->agent, "'%s/acp-agent' --store :memory: --log-level quiet",
             getenv("ACP_BUILD"));
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    acp_client_free(f->c);
    uv_close((uv_handle_t *)&f->watchdog, NULL);
    uv_close((uv_handle_t *)&f->later, NULL);
    uv_run(&f->loop, UV_RUN_DEFAULT); /* the client's handles close, the agent is reaped */
    assert_int_equal(uv_loop_close(&f->loop), 0);
    assert_int_equal(count_fds(), f->fds);
    errno = 0;
    assert_int_equal(waitpid(-1, NULL, WNOHANG), -1); /* no child left, zombie or running */
    assert_int_equal(errno, ECHILD);
    acp_buf_free(&f->log);
    assert_true(rm_rf(f->root));
    free(f);
    return 0;
}

/* Runs the loop until cond holds, failing on the watchdog or an idle loop. */
#define SPIN_UNTIL(f, cond, what)                                                                  \
    do {                                                                                           \
        while (!(cond)) {                                                                          \
            if ((f)->timed_out) fail_msg("timed out waiting for %s", what);                        \
            if (uv_run(&(f)->loop, UV_RUN_ONCE) == 0 && !(cond))                                   \
                fail_msg("the loop went idle waiting for %s", what);                               \
        }                                                                                          \
    } while (0)

static void spin(fixture *f, const bool *flag)
{
    SPIN_UNTIL(f, *flag, "an answer");
}

static void on_done(acp_client *c, const acp_client_reply *r, void *user)
{
    done *d = user;
    d->done = true;
    d->status = r->status;
    d->code = r->code;
    d->stop = r->stop;
    d->s = r->session;
    d->result = json_incref(r->result);
    d->at = acp_client_loop(c) ? uv_now(acp_client_loop(c)) : 0; /* none: manual mode */
    snprintf(d->errmsg, sizeof d->errmsg, "%s", r->errmsg);
}

static void done_clear(done *d)
{
    json_decref(d->result);
    *d = (done){0};
}

static void on_update(acp_client *c, acp_client_session *s, const acp_update *u, void *user)
{
    fixture *f = user;
    if (!s) {
        f->unrouted++;
        return;
    }
    sess *x = acp_client_session_user(s);
    if (!x) return;
    if (!acp_json_str_eq(u->session_id, acp_client_session_id(s))) x->misrouted = true;
    if (u->kind != ACP_UPDATE_AGENT_MESSAGE_CHUNK) return;
    x->chunks++;
    x->bytes += chunk_text(u, &x->text);
    if (f->last_idx >= 0 && f->last_idx != x->idx) f->switches++;
    f->last_idx = x->idx;
}

static void on_permission(acp_client *c, acp_client_session *s, acp_client_perm *p, json_t *params,
                          void *user)
{
    fixture *f = user;
    sess *x = acp_client_session_user(s);
    f->perms++;
    x->p = p; /* answered later by the test */
    if (f->slow) f->slow_at_request = f->slow->chunks;
}

static void on_closed(acp_client *c, void *user)
{
    ((fixture *)user)->closed++;
}

static void on_log(acp_client *c, const char *message, void *user)
{
    fixture *f = user;
    acp_buf_append(&f->log, message, strlen(message));
    acp_buf_append(&f->log, "\n", 1);
}

static acp_client_opts base_opts(fixture *f)
{
    return (acp_client_opts){.struct_size = sizeof(acp_client_opts),
                             .loop = &f->loop,
                             .command = f->agent,
                             .on_update = on_update,
                             .on_permission = on_permission,
                             .on_closed = on_closed,
                             .on_log = on_log,
                             .user = f};
}

/* acp_client_start on the test's loop, run until initialize is answered. */
static acp_client *start(fixture *f, const acp_client_opts *o)
{
    done d = {0};
    int rc = acp_client_start(o, on_done, &d, &f->c);
    if (rc) fail_msg("start: %s", acp_error_last()->message);
    assert_non_null(f->c);
    assert_ptr_equal(acp_client_loop(f->c), &f->loop);
    spin(f, &d.done);
    if (d.status) fail_msg("initialize: %s", d.errmsg);
    assert_non_null(d.result);
    assert_ptr_equal(acp_client_init_result(f->c), d.result);
    done_clear(&d);
    return f->c;
}

/* n sessions, all asked for at once; x[i] becomes each handle's user. */
static void open_sessions(fixture *f, sess *x, int n)
{
    done d[8] = {0};
    acp_session_opts so = {.struct_size = sizeof(acp_session_opts),
                           .cwd = f->root[0] ? f->root : "/tmp"};
    for (int i = 0; i < n; i++)
        assert_int_equal(acp_client_session_new_start(f->c, &so, on_done, &d[i], NULL), 0);
    for (int i = 0; i < n; i++) {
        spin(f, &d[i].done);
        assert_int_equal(d[i].status, 0);
        assert_non_null(d[i].s);
        x[i].idx = i;
        x[i].s = d[i].s;
        acp_client_session_set_user(d[i].s, &x[i]);
        done_clear(&d[i]);
    }
}

/* A client started with o and n sessions on it. */
static void begin(fixture *f, const acp_client_opts *o, sess *x, int n)
{
    start(f, o);
    open_sessions(f, x, n);
}

static void sess_free(sess *x, int n)
{
    for (int i = 0; i < n; i++) acp_buf_free(&x[i].text);
}

static json_t *text_prompt(const char *text)
{
    return json_pack("[{s:s, s:s}]", "type", "text", "text", text);
}

static int prompt(sess *x, const char *text, done *d)
{
    json_t *b = text_prompt(text);
    int rc = acp_client_session_prompt_start(x->s, b, on_done, d, NULL);
    json_decref(b);
    return rc;
}

static bool has(const acp_buf *b, const char *needle)
{
    return b->len && memmem(b->data, b->len, needle, strlen(needle));
}

/* --- concurrency on one connection -------------------------------------------------------- */

/* Five sessions stream at once; every update reaches its own handle, all five finish. */
static void test_five_sessions_stream(void **state)
{
    fixture *f = *state;
    acp_client_opts o = base_opts(f);
    sess x[5] = {0};
    begin(f, &o, x, 5);
    done d[5] = {0};
    for (int i = 0; i < 5; i++) assert_int_equal(prompt(&x[i], "/stream 1500 1000", &d[i]), 0);
    /* One prompt per session: a second one on a busy session is refused locally. */
    assert_int_equal(prompt(&x[0], "again", &(done){0}), ACP_EBUSY);
    for (int i = 0; i < 5; i++) {
        spin(f, &d[i].done);
        assert_int_equal(d[i].status, 0);
        assert_string_equal(d[i].stop, "end_turn");
        assert_ptr_equal(d[i].s, x[i].s);
        assert_false(x[i].misrouted);
        assert_int_equal(x[i].chunks, 1500);
        assert_int_equal(x[i].bytes, 1500 * 1000);
        done_clear(&d[i]);
    }
    assert_int_equal(f->unrouted, 0);
    /* They really ran at once: the agent interleaved the streams (it sends at most 1 MiB of
     * one turn per loop iteration). */
    assert_true(f->switches >= 4);
    sess_free(x, 5);
}

/* A permission request held by the application and answered from a timer 20 ms later, while
 * another session keeps streaming; the stream is then cancelled. */
static void reply_perm(uv_timer_t *t)
{
    fixture *f = t->data;
    f->slow_at_reply = f->slow->chunks;
    f->slow_done_at_reply = f->slow_done->done;
    f->reply_rc = acp_client_perm_reply(f->asker->p, "allow_once");
    f->asker->p = NULL;
}

static void test_permission_while_streaming(void **state)
{
    fixture *f = *state;
    acp_client_opts o = base_opts(f);
    sess x[2] = {0};
    begin(f, &o, x, 2);
    done ask = {0}, stream = {0};
    f->slow = &x[1];
    f->asker = &x[0];
    f->slow_done = &stream;
    assert_int_equal(prompt(&x[1], "/stream 1000000 100", &stream), 0);
    assert_int_equal(prompt(&x[0], "/ask", &ask), 0);
    SPIN_UNTIL(f, x[0].p, "a permission request");
    assert_int_equal(f->perms, 1);
    assert_false(acp_client_perm_cancelled(x[0].p));
    uv_timer_start(&f->later, reply_perm, 20, 0);
    spin(f, &ask.done);
    assert_int_equal(f->reply_rc, 0);
    assert_int_equal(ask.status, 0);
    assert_string_equal(ask.stop, "end_turn");
    acp_buf_cstr(&x[0].text);
    assert_true(has(&x[0].text, "permission: selected allow_once"));
    /* The stream went on while the question was open, and after it was answered. */
    assert_false(f->slow_done_at_reply);
    assert_true(f->slow_at_reply > f->slow_at_request);
    int at_end_of_ask = x[1].chunks;
    assert_false(stream.done);
    SPIN_UNTIL(f, x[1].chunks > at_end_of_ask, "more of the stream");
    assert_int_equal(acp_client_session_cancel(x[1].s), 0);
    spin(f, &stream.done);
    assert_int_equal(stream.status, 0);
    assert_string_equal(stream.stop, "cancelled");
    assert_false(x[0].misrouted || x[1].misrouted);
    done_clear(&ask);
    done_clear(&stream);
    f->slow = NULL;
    sess_free(x, 2);
}

/* Two sessions each wait on a permission; cancelling one answers its request `cancelled`
 * (the handle stays the application's, its reply only frees it) and ends that prompt
 * `cancelled`; the other session's request is untouched and answered normally. */
static void test_cancel_during_permission(void **state)
{
    fixture *f = *state;
    acp_client_opts o = base_opts(f);
    sess x[2] = {0};
    begin(f, &o, x, 2);
    done d[2] = {0};
    assert_int_equal(prompt(&x[0], "/ask", &d[0]), 0);
    assert_int_equal(prompt(&x[1], "/ask", &d[1]), 0);
    SPIN_UNTIL(f, x[0].p && x[1].p, "the permission requests");
    assert_int_equal(acp_client_session_cancel(x[0].s), 0);
    assert_true(acp_client_perm_cancelled(x[0].p));
    assert_false(acp_client_perm_cancelled(x[1].p));
    assert_int_equal(acp_client_perm_reply(x[0].p, "allow_once"), 0); /* frees only */
    x[0].p = NULL;
    spin(f, &d[0].done);
    assert_int_equal(d[0].status, 0);
    assert_string_equal(d[0].stop, "cancelled");
    assert_false(d[1].done);
    assert_int_equal(acp_client_perm_reply(x[1].p, "reject_once"), 0);
    x[1].p = NULL;
    spin(f, &d[1].done);
    assert_string_equal(d[1].stop, "end_turn");
    acp_buf_cstr(&x[1].text);
    assert_true(has(&x[1].text, "permission: selected reject_once"));
    /* Cancel with no prompt running is a no-op. */
    assert_int_equal(acp_client_session_cancel(x[0].s), 0);
    for (int i = 0; i < 2; i++) done_clear(&d[i]);
    sess_free(x, 2);
}

/* A prompt for script-agent.mjs: one permission request (id "p1") for session sid, answered
 * with stop (stolen; JSON null: never answered) once the request is. Caller frees. */
static char *perm_script(const char *sid, json_t *stop)
{
    json_t *perm = json_pack("{s:s, s:s, s:s, s:{s:s, s:{s:s}, s:[{s:s, s:s, s:s}]}}", "jsonrpc",
                             "2.0", "id", "p1", "method", "session/request_permission", "params",
                             "sessionId", sid, "toolCall", "toolCallId", "t1", "options",
                             "optionId", "a", "name", "Allow", "kind", "allow_once");
    char *line = json_dumps(perm, JSON_COMPACT);
    json_t *script = json_pack("{s:[s], s:o}", "write", line, "stop", stop);
    char *text = json_dumps(script, JSON_COMPACT);
    json_decref(script);
    json_decref(perm);
    free(line);
    return text;
}

/* m is our answer to request id, with the outcome `cancelled`. */
static bool is_cancelled_answer(json_t *m, const char *id)
{
    const char *mid = json_string_value(json_object_get(m, "id"));
    json_t *outcome = json_object_get(json_object_get(m, "result"), "outcome");
    const char *o = json_string_value(json_object_get(outcome, "outcome"));
    return mid && !strcmp(mid, id) && o && !strcmp(o, "cancelled");
}

/* The wire: the agent (script-agent.mjs) receives the `cancelled` outcome for its pending
 * permission request after the client cancelled the turn. */
static void cancel_from_permission(acp_client *c, acp_client_session *s, acp_client_perm *p,
                                   json_t *params, void *user)
{
    fixture *f = user;
    f->perms++;
    acp_client_session_cancel(s); /* from inside the callback */
    ((sess *)acp_client_session_user(s))->p = p;
}

static void test_cancel_during_permission_wire(void **state)
{
    fixture *f = *state;
    acp_client_opts o = base_opts(f);
    o.command = NULL;
    o.argv = node_agent("script-agent.mjs");
    o.on_permission = cancel_from_permission;
    sess x[1] = {0};
    begin(f, &o, x, 1);
    char *text = perm_script(acp_client_session_id(x[0].s), json_string("cancelled"));
    done d = {0};
    assert_int_equal(prompt(&x[0], text, &d), 0);
    spin(f, &d.done);
    assert_int_equal(d.status, 0);
    assert_string_equal(d.stop, "cancelled");
    assert_int_equal(f->perms, 1);
    assert_true(acp_client_perm_cancelled(x[0].p));
    acp_client_perm_reply(x[0].p, NULL);
    json_t *a = json_array_get(json_object_get(json_object_get(d.result, "_meta"), "answers"), 0);
    assert_true(is_cancelled_answer(a, "p1"));
    done_clear(&d);
    free(text);
    sess_free(x, 1);
}

/* --- teardown with calls in flight ---------------------------------------------------------- */

static void test_free_in_flight(void **state)
{
    fixture *f = *state;
    acp_client_opts o = base_opts(f);
    /* Freed before initialize was answered: its callback hears ACP_ECANCELLED. */
    done init = {0};
    assert_int_equal(acp_client_start(&o, on_done, &init, &f->c), 0);
    acp_client_free(f->c);
    f->c = NULL;
    assert_true(init.done);
    assert_int_equal(init.status, ACP_ECANCELLED);
    done_clear(&init);
    uv_run(&f->loop, UV_RUN_DEFAULT); /* the agent is stopped, its handles closed */

    sess x[3] = {0};
    begin(f, &o, x, 3);
    done sleep = {0}, ask = {0}, ext = {0}, list = {0}, gone = {0};
    acp_client_op *op;
    json_t *b = text_prompt("/sleep 60000");
    assert_int_equal(acp_client_session_prompt_start(x[0].s, b, on_done, &sleep, &op), 0);
    json_decref(b);
    acp_client_op_timeout(op, 60000); /* a deadline timer running at the free */
    assert_int_equal(prompt(&x[1], "/ask", &ask), 0);
    /* A session handle freed while its prompt runs: the prompt's callback hears it at once. */
    assert_int_equal(prompt(&x[2], "/sleep 60000", &gone), 0);
    acp_client_session_free(x[2].s);
    assert_true(gone.done);
    assert_int_equal(gone.status, ACP_ECANCELLED);
    assert_ptr_equal(gone.s, x[2].s);
    done_clear(&gone);
    SPIN_UNTIL(f, x[1].p, "a permission request");
    acp_client_perm *held = x[1].p;
    /* Two more, sent but not answered yet (the loop has not run since). */
    assert_int_equal(acp_client_call_start(f->c, "_acp-agent/echo", json_pack("{s:i}", "n", 1),
                                           on_done, &ext, NULL),
                     0);
    assert_int_equal(acp_client_list_start(f->c, NULL, NULL, on_done, &list, NULL), 0);
    acp_client_free(f->c);
    f->c = NULL;
    done *all[] = {&sleep, &ask, &ext, &list};
    for (size_t i = 0; i < 4; i++) {
        assert_true(all[i]->done);
        assert_int_equal(all[i]->status, ACP_ECANCELLED);
        done_clear(all[i]);
    }
    assert_int_equal(f->closed, 0); /* teardown is not news */
    /* The application's permission handle outlived the client: answered, then only freed. */
    assert_true(acp_client_perm_cancelled(held));
    assert_int_equal(acp_client_perm_reply(held, "allow_once"), 0);
    /* The loop runs to idle: the agent is reaped, every handle closed (teardown checks
     * uv_loop_close and the descriptors). */
    assert_int_equal(uv_run(&f->loop, UV_RUN_DEFAULT), 0);
    sess_free(x, 3);
}

/* --- transports ------------------------------------------------------------------------------ */

/* acp-agent with in_fd as its stdin and out_fd as its stdout (every other descriptor of ours
 * is close-on-exec). */
static pid_t spawn_agent(int in_fd, int out_fd)
{
    char path[512];
    snprintf(path, sizeof path, "%s/acp-agent", getenv("ACP_BUILD"));
    char *argv[] = {path, "--store", ":memory:", "--log-level", "quiet", NULL};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in_fd, 0);
    posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
    pid_t pid;
    assert_int_equal(posix_spawn(&pid, path, &fa, NULL, argv, environ), 0);
    posix_spawn_file_actions_destroy(&fa);
    return pid;
}

/* A session and one prompt over whatever transport f->c has; then the client is freed and
 * the agent, seeing EOF, exits 0. */
static void converse(fixture *f, pid_t pid, const char *text)
{
    assert_int_equal(acp_client_agent_pid(f->c), 0); /* not ours: we did not spawn it */
    assert_false(acp_client_agent_status(f->c, NULL, NULL));
    sess x[1] = {0};
    open_sessions(f, x, 1);
    done d = {0};
    assert_int_equal(prompt(&x[0], text, &d), 0);
    spin(f, &d.done);
    assert_int_equal(d.status, 0);
    acp_buf_cstr(&x[0].text);
    assert_string_equal(x[0].text.data, text);
    done_clear(&d);
    acp_client_free(f->c);
    f->c = NULL;
    uv_run(&f->loop, UV_RUN_DEFAULT);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    sess_free(x, 1);
}

static void test_fds_socketpair(void **state)
{
    fixture *f = *state;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    pid_t pid = spawn_agent(sv[1], sv[1]);
    close(sv[1]);
    acp_client_opts o = base_opts(f);
    o.transport = ACP_CLIENT_FDS;
    o.command = NULL;
    o.in_fd = o.out_fd = sv[0];
    start(f, &o);
    close(sv[0]); /* the client works on its own duplicates */
    converse(f, pid, "over a socketpair");
}

static void test_fds_pipes(void **state)
{
    fixture *f = *state;
    int to[2], from[2];
    assert_int_equal(pipe2(to, O_CLOEXEC), 0);
    assert_int_equal(pipe2(from, O_CLOEXEC), 0);
    pid_t pid = spawn_agent(to[0], from[1]);
    close(to[0]);
    close(from[1]);
    acp_client_opts o = base_opts(f);
    o.transport = ACP_CLIENT_FDS;
    o.command = NULL;
    o.in_fd = from[0];
    o.out_fd = to[1];
    start(f, &o);
    close(from[0]);
    close(to[1]);
    converse(f, pid, "over two pipes");
}

/* A listener of our own: connect, then accept (the connection waits in the backlog) and give
 * the accepted socket to acp-agent as its stdin and stdout. */
static void test_unix(void **state)
{
    fixture *f = *state;
    char dir[] = "/tmp/acp-async-XXXXXX";
    assert_non_null(mkdtemp(dir));
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s/agent.sock", dir);
    acp_client_opts o = base_opts(f);
    o.transport = ACP_CLIENT_UNIX;
    o.command = NULL;
    o.path = sa.sun_path;
    /* Nothing listens yet: ACP_ENOTFOUND, no client, a message naming the path. */
    acp_client *c = (acp_client *)1;
    assert_int_equal(acp_client_start(&o, on_done, NULL, &c), ACP_ENOTFOUND);
    assert_null(c);
    assert_non_null(strstr(acp_error_last()->message, sa.sun_path));
    o.path = "";
    assert_int_equal(acp_client_start(&o, on_done, NULL, &c), ACP_EINVAL);
    o.path = sa.sun_path;

    int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(l >= 0);
    assert_int_equal(bind(l, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(l, 1), 0);
    done d = {0};
    assert_int_equal(acp_client_start(&o, on_done, &d, &f->c), 0);
    int a = accept4(l, NULL, NULL, SOCK_CLOEXEC);
    assert_true(a >= 0);
    pid_t pid = spawn_agent(a, a);
    close(a);
    spin(f, &d.done);
    assert_int_equal(d.status, 0);
    done_clear(&d);
    converse(f, pid, "over a Unix socket");

    /* A listener that hangs up at once: initialize ends ACP_ECLOSED, on_closed runs. */
    assert_int_equal(acp_client_start(&o, on_done, &d, &f->c), 0);
    a = accept4(l, NULL, NULL, SOCK_CLOEXEC);
    assert_true(a >= 0);
    close(a);
    spin(f, &d.done);
    assert_int_equal(d.status, ACP_ECLOSED);
    assert_int_equal(f->closed, 1);
    assert_null(acp_client_init_result(f->c));
    done_clear(&d);
    close(l);
    unlink(sa.sun_path);
    rmdir(dir);
}

/* --- silence: deadlines and cancellation --------------------------------------------------- */

static json_t *received(fixture *f)
{
    done d = {0};
    assert_int_equal(acp_client_call_start(f->c, "_test/received", NULL, on_done, &d, NULL), 0);
    spin(f, &d.done);
    assert_int_equal(d.status, 0);
    json_t *r = json_incref(json_object_get(d.result, "received"));
    done_clear(&d);
    return r;
}

/* The id of the first message received with method, and whether a $/cancel_request for it
 * came too. */
static bool cancel_sent_for(json_t *rec, const char *method)
{
    json_t *id = NULL, *m;
    size_t i;
    json_array_foreach(rec, i, m)
    {
        const char *name = json_string_value(json_object_get(m, "method"));
        if (!id && name && !strcmp(name, method)) id = json_object_get(m, "id");
        if (id && name && !strcmp(name, "$/cancel_request") &&
            json_equal(json_object_get(json_object_get(m, "params"), "requestId"), id))
            return true;
    }
    return false;
}

static void test_timeouts(void **state)
{
    fixture *f = *state;
    acp_client_opts o = base_opts(f);
    o.command = NULL;
    o.argv = node_agent("script-agent.mjs");
    o.call_timeout_ms = 150;
    sess x[1] = {0};
    begin(f, &o, x, 1);

    /* A prompt the agent never answers, with a permission request open: call_timeout_ms ends
     * it; the turn is cancelled as the protocol has it (session/cancel, and the request
     * answered `cancelled`) and the request itself withdrawn ($/cancel_request). The session
     * is free for the next prompt. */
    done d = {0};
    uint64_t t0 = uv_now(&f->loop);
    char *script = perm_script(acp_client_session_id(x[0].s), json_null());
    assert_int_equal(prompt(&x[0], script, &d), 0);
    free(script);
    spin(f, &d.done);
    assert_int_equal(d.status, ACP_ETIMEDOUT);
    assert_true(d.at - t0 >= 140);
    assert_non_null(strstr(d.errmsg, "session/prompt"));
    /* Reported through the callback only: the thread's last error is not the answer's. */
    assert_null(strstr(acp_error_last()->message, "session/prompt"));
    done_clear(&d);
    assert_non_null(x[0].p);
    assert_true(acp_client_perm_cancelled(x[0].p));
    acp_client_perm_reply(x[0].p, NULL);
    x[0].p = NULL;
    assert_int_equal(prompt(&x[0], "answered", &d), 0);
    spin(f, &d.done);
    assert_int_equal(d.status, 0);
    done_clear(&d);
    json_t *rec = received(f);
    assert_true(cancel_sent_for(rec, "session/prompt"));
    bool session_cancel = false, perm_cancelled = false;
    size_t i;
    json_t *m;
    json_array_foreach(rec, i, m)
    {
        const char *name = json_string_value(json_object_get(m, "method"));
        session_cancel |= name && !strcmp(name, "session/cancel");
        perm_cancelled |= is_cancelled_answer(m, "p1");
    }
    assert_true(session_cancel);
    assert_true(perm_cancelled);
    json_decref(rec);

    /* acp_client_op_timeout: a shorter deadline for one call; 0 lifts it. */
    acp_client_op *op;
    t0 = uv_now(&f->loop);
    assert_int_equal(acp_client_call_start(f->c, "_test/silent", NULL, on_done, &d, &op), 0);
    acp_client_op_timeout(op, 30);
    done late = {0};
    assert_int_equal(acp_client_call_start(f->c, "_test/late", json_pack("{s:i}", "ms", 300),
                                           on_done, &late, &op),
                     0);
    acp_client_op_timeout(op, 0);
    spin(f, &d.done);
    assert_int_equal(d.status, ACP_ETIMEDOUT);
    assert_true(d.at - t0 < 140);
    done_clear(&d);
    spin(f, &late.done);
    assert_int_equal(late.status, 0); /* past call_timeout_ms, yet no deadline */
    assert_true(late.at - t0 >= 290);
    done_clear(&late);

    /* An answer that comes after the deadline is dropped; the connection goes on. */
    assert_int_equal(acp_client_call_start(f->c, "_test/late", json_pack("{s:i}", "ms", 60),
                                           on_done, &late, &op),
                     0);
    acp_client_op_timeout(op, 10);
    spin(f, &late.done);
    assert_int_equal(late.status, ACP_ETIMEDOUT);
    done_clear(&late);
    assert_int_equal(acp_client_call_start(f->c, "_test/late", json_pack("{s:i}", "ms", 100),
                                           on_done, &late, &op),
                     0);
    spin(f, &late.done);
    assert_int_equal(late.status, 0);
    done_clear(&late);

    /* acp_client_op_cancel: $/cancel_request; the agent decides (-32800 here). */
    assert_int_equal(acp_client_call_start(f->c, "_test/silent",
                                           json_pack("{s:b}", "cancellable", 1), on_done, &d, &op),
                     0);
    assert_int_equal(acp_client_op_cancel(op), 0);
    spin(f, &d.done);
    assert_int_equal(d.status, ACP_EPROTO);
    assert_int_equal(d.code, -32800);
    assert_int_equal(acp_client_errcode(f->c), -32800);
    done_clear(&d);
    sess_free(x, 1);
}

/* --- the agent dies mid-turn ---------------------------------------------------------------- */

static void test_agent_killed(void **state)
{
    fixture *f = *state;
    acp_client_opts o = base_opts(f);
    start(f, &o);
    int pid = acp_client_agent_pid(f->c);
    assert_true(pid > 0);
    sess x[2] = {0};
    open_sessions(f, x, 2);
    done sleep = {0}, ask = {0};
    assert_int_equal(prompt(&x[0], "/sleep 60000", &sleep), 0);
    assert_int_equal(prompt(&x[1], "/ask", &ask), 0);
    SPIN_UNTIL(f, x[1].p, "a permission request");
    assert_int_equal(kill(pid, SIGKILL), 0);
    spin(f, &sleep.done);
    spin(f, &ask.done);
    assert_int_equal(sleep.status, ACP_ECLOSED);
    assert_int_equal(ask.status, ACP_ECLOSED);
    assert_int_equal(f->closed, 1);
    assert_true(acp_client_agent_gone(f->c));
    SPIN_UNTIL(f, acp_client_agent_status(f->c, NULL, NULL), "the agent to be reaped");
    int64_t code = -1;
    int sig = 0;
    assert_true(acp_client_agent_status(f->c, &code, &sig));
    assert_int_equal(sig, SIGKILL);
    assert_int_equal(acp_client_agent_pid(f->c), 0);
    /* Nothing new can start; the held permission can still be answered (and is freed). */
    assert_int_equal(prompt(&x[0], "hello?", &sleep), ACP_ECLOSED);
    assert_int_equal(acp_client_perm_reply(x[1].p, "allow_once"), 0);
    done_clear(&sleep);
    done_clear(&ask);
    sess_free(x, 2);
}

static void test_agent_exits(void **state)
{
    fixture *f = *state;
    acp_client_opts o = base_opts(f);
    o.command = NULL;
    o.argv = node_agent("script-agent.mjs");
    sess x[1] = {0};
    begin(f, &o, x, 1);
    done d = {0}, silent = {0};
    assert_int_equal(acp_client_call_start(f->c, "_test/silent", NULL, on_done, &silent, NULL), 0);
    assert_int_equal(prompt(&x[0], "{\"exit\":3}", &d), 0);
    spin(f, &d.done);
    assert_int_equal(d.status, ACP_ECLOSED);
    assert_true(silent.done);
    assert_int_equal(silent.status, ACP_ECLOSED);
    assert_int_equal(f->closed, 1);
    SPIN_UNTIL(f, acp_client_agent_status(f->c, NULL, NULL), "the agent to be reaped");
    int64_t code = -1;
    int sig = -1;
    acp_client_agent_status(f->c, &code, &sig);
    assert_int_equal(code, 3);
    assert_int_equal(sig, 0);
    done_clear(&d);
    done_clear(&silent);
    sess_free(x, 1);
}

/* --- requests withdrawn, and cancelled while the application holds them ------------------ */

static void hold_ask(acp_client *c, acp_client_session *s, acp_client_ask *a, const char *method,
                     json_t *params, void *user)
{
    ((fixture *)user)->ask = a;
}

static void hold_elicit(acp_client *c, acp_client_session *s, acp_client_elicit *e, json_t *params,
                        void *user)
{
    ((fixture *)user)->elicit = e;
}

/* A prompt for script-agent.mjs writing a permission request (p1), an fs write (w1, of
 * root/w.txt) and a form elicitation (e1), then, with withdraw, a $/cancel_request for each;
 * answered with stop once all three are. Caller frees. */
static char *three_requests(fixture *f, const char *sid, bool withdraw, const char *stop)
{
    char path[128];
    snprintf(path, sizeof path, "%s/w.txt", f->root);
    json_t *reqs[] = {
        json_pack("{s:s, s:s, s:s, s:{s:s, s:{s:s}, s:[{s:s, s:s, s:s}]}}", "jsonrpc", "2.0", "id",
                  "p1", "method", "session/request_permission", "params", "sessionId", sid,
                  "toolCall", "toolCallId", "t1", "options", "optionId", "a", "name", "Allow",
                  "kind", "allow_once"),
        json_pack("{s:s, s:s, s:s, s:{s:s, s:s, s:s}}", "jsonrpc", "2.0", "id", "w1", "method",
                  "fs/write_text_file", "params", "sessionId", sid, "path", path, "content",
                  "written"),
        json_pack("{s:s, s:s, s:s, s:{s:s, s:s, s:s, s:{s:s, s:{}}}}", "jsonrpc", "2.0", "id", "e1",
                  "method", "elicitation/create", "params", "sessionId", sid, "mode", "form",
                  "message", "Your name?", "requestedSchema", "type", "object", "properties"),
    };
    json_t *lines = json_array();
    for (size_t i = 0; i < 3; i++) {
        char *l = json_dumps(reqs[i], JSON_COMPACT);
        json_array_append_new(lines, json_string(l));
        free(l);
    }
    for (size_t i = 0; withdraw && i < 3; i++) {
        json_t *n = json_pack("{s:s, s:s, s:{s:O}}", "jsonrpc", "2.0", "method", "$/cancel_request",
                              "params", "requestId", json_object_get(reqs[i], "id"));
        char *l = json_dumps(n, JSON_COMPACT);
        json_array_append_new(lines, json_string(l));
        free(l);
        json_decref(n);
    }
    for (size_t i = 0; i < 3; i++) json_decref(reqs[i]);
    json_t *script = json_pack("{s:o, s:s}", "write", lines, "stop", stop);
    char *text = json_dumps(script, JSON_COMPACT);
    json_decref(script);
    return text;
}

static json_t *answer_to(json_t *answers, const char *id)
{
    size_t i;
    json_t *a;
    json_array_foreach(answers, i, a)
    {
        const char *aid = json_string_value(json_object_get(a, "id"));
        if (aid && !strcmp(aid, id)) return a;
    }
    fail_msg("no answer to %s", id);
    return NULL;
}

/* What the agent got for p1, w1 and e1: cancelled, an error, the action `cancel`. */
static void expect_three_cancelled(json_t *result, int write_code)
{
    json_t *answers = json_object_get(json_object_get(result, "_meta"), "answers");
    assert_int_equal(json_array_size(answers), 3);
    assert_true(is_cancelled_answer(answer_to(answers, "p1"), "p1"));
    json_t *e = json_object_get(answer_to(answers, "w1"), "error");
    assert_int_equal(json_integer_value(json_object_get(e, "code")), write_code);
    json_t *r = json_object_get(answer_to(answers, "e1"), "result");
    assert_string_equal(json_string_value(json_object_get(r, "action")), "cancel");
}

/* The application's late answers change nothing once a request is over: no write happens. */
static void answer_late(fixture *f, sess *x)
{
    assert_true(acp_client_perm_cancelled(x->p));
    assert_int_equal(acp_client_perm_reply(x->p, "a"), 0);
    x->p = NULL;
    assert_int_equal(acp_client_ask_reply(f->ask, true), 0);
    f->ask = NULL;
    assert_int_equal(acp_client_elicit_reply(f->elicit, "accept", json_pack("{s:s}", "n", "x")), 0);
    f->elicit = NULL;
    char path[128];
    snprintf(path, sizeof path, "%s/w.txt", f->root);
    assert_int_equal(access(path, F_OK), -1);
}

static acp_client_opts holding_opts(fixture *f)
{
    strcpy(f->root, "/tmp/acp-async-root-XXXXXX");
    assert_non_null(mkdtemp(f->root));
    acp_client_opts o = base_opts(f);
    o.command = NULL;
    o.argv = node_agent("script-agent.mjs");
    o.fs_write = true;
    o.elicitation_form = true;
    o.on_ask = hold_ask;
    o.on_elicit = hold_elicit;
    return o;
}

/* The agent withdraws ($/cancel_request) a permission request, a write waiting for approval
 * and an elicitation while the application holds them: each is answered at once. */
static void test_withdrawn(void **state)
{
    fixture *f = *state;
    acp_client_opts o = holding_opts(f);
    sess x[1] = {0};
    begin(f, &o, x, 1);
    char *text = three_requests(f, acp_client_session_id(x[0].s), true, "end_turn");
    done d = {0};
    assert_int_equal(prompt(&x[0], text, &d), 0);
    free(text);
    spin(f, &d.done);
    assert_int_equal(d.status, 0);
    assert_non_null(x[0].p);
    assert_non_null(f->ask);
    assert_non_null(f->elicit);
    expect_three_cancelled(d.result, ACP_RPC_CANCELLED);
    answer_late(f, &x[0]);
    done_clear(&d);
    sess_free(x, 1);
}

/* The user cancels the turn while all three wait on the application. */
static void test_cancel_while_held(void **state)
{
    fixture *f = *state;
    acp_client_opts o = holding_opts(f);
    sess x[1] = {0};
    begin(f, &o, x, 1);
    char *text = three_requests(f, acp_client_session_id(x[0].s), false, "cancelled");
    done d = {0};
    assert_int_equal(prompt(&x[0], text, &d), 0);
    free(text);
    SPIN_UNTIL(f, x[0].p && f->ask && f->elicit, "the requests");
    assert_int_equal(acp_client_session_cancel(x[0].s), 0);
    spin(f, &d.done);
    assert_string_equal(d.stop, "cancelled");
    expect_three_cancelled(d.result, ACP_RPC_INTERNAL_ERROR); /* "cancelled by the user" */
    answer_late(f, &x[0]);
    done_clear(&d);
    sess_free(x, 1);
}

/* session/close while a prompt runs: the agent ends the turn first (cancelled), then answers
 * the close; the handle is gone when the close's callback runs. */
static int order;
static void on_prompt_order(acp_client *c, const acp_client_reply *r, void *user)
{
    on_done(c, r, user);
    ((done *)user)->code = ++order;
}

static void test_close_during_prompt(void **state)
{
    fixture *f = *state;
    acp_client_opts o = base_opts(f);
    sess x[1] = {0};
    begin(f, &o, x, 1);
    done p = {0}, cl = {0};
    order = 0;
    json_t *b = text_prompt("/sleep 60000");
    assert_int_equal(acp_client_session_prompt_start(x[0].s, b, on_prompt_order, &p, NULL), 0);
    json_decref(b);
    assert_int_equal(acp_client_session_close_start(x[0].s, on_prompt_order, &cl, NULL), 0);
    spin(f, &cl.done);
    assert_true(p.done);
    assert_int_equal(p.code, 1); /* the prompt ended first */
    assert_int_equal(p.status, 0);
    assert_string_equal(p.stop, "cancelled");
    assert_int_equal(cl.status, 0);
    assert_null(cl.s);
    done_clear(&p);
    done_clear(&cl);
    sess_free(x, 1);
}

/* Two clients, two agents, one loop: independent. */
static void test_two_clients(void **state)
{
    fixture *f = *state;
    acp_client_opts o = base_opts(f);
    acp_client *first = start(f, &o);
    sess x[2] = {0};
    open_sessions(f, x, 1);
    f->c = NULL;
    acp_client *second = start(f, &o);
    open_sessions(f, x + 1, 1);
    x[1].idx = 1;
    assert_int_not_equal(acp_client_agent_pid(first), acp_client_agent_pid(second));
    done d[2] = {0};
    assert_int_equal(prompt(&x[0], "/stream 300 1000", &d[0]), 0);
    assert_int_equal(prompt(&x[1], "/stream 300 1000", &d[1]), 0);
    spin(f, &d[0].done);
    spin(f, &d[1].done);
    for (int i = 0; i < 2; i++) {
        assert_string_equal(d[i].stop, "end_turn");
        assert_int_equal(x[i].chunks, 300);
        assert_false(x[i].misrouted);
        done_clear(&d[i]);
    }
    acp_client_free(first); /* the other one goes on */
    assert_int_equal(prompt(&x[1], "alone", &d[1]), 0);
    spin(f, &d[1].done);
    assert_int_equal(d[1].status, 0);
    done_clear(&d[1]);
    sess_free(x, 2);
}

/* --- no loop at all: ACP_CLIENT_MANUAL ----------------------------------------------------- */

static char *take_text(acp_client *c)
{
    size_t n = 0;
    char *b = acp_client_take(c, &n);
    if (!b) return NULL;
    char *s = malloc(n + 1); /* not strndup: b has no NUL (ASan's strict_string_checks) */
    memcpy(s, b, n);
    s[n] = 0;
    free(b);
    return s;
}

/* Synchronous calls in manual mode, from a frame that is gone when their answers come. */
static void __attribute__((noinline))
sync_calls_in_manual_mode(acp_client *c, acp_client_session *s)
{
    json_t *res = (json_t *)1;
    assert_int_equal(acp_client_call(c, "_x/sync", NULL, &res), ACP_EINVAL);
    assert_null(res);
    const char *stop = NULL;
    assert_int_equal(acp_client_session_prompt(s, "hi", &stop), ACP_EINVAL);
}

/* Takes the client's output and returns the id of its last line. */
static long long take_id(acp_client *c)
{
    char *out = take_text(c);
    assert_non_null(out);
    char *last = strstr(out, "\"id\":"), *p;
    while (last && (p = strstr(last + 1, "\"id\":"))) last = p;
    assert_non_null(last);
    long long id = strtoll(last + 5, NULL, 10);
    free(out);
    return id;
}

/* The application moves every byte: take, feed, next_timeout, tick, eof (docs/client.md's
 * poll() example runs this against a real agent; here each step is checked on its own). */
static void test_manual(void **state)
{
    fixture *f = *state;
    acp_client_opts o = {.struct_size = sizeof(acp_client_opts),
                         .transport = ACP_CLIENT_MANUAL,
                         .on_update = on_update,
                         .on_closed = on_closed,
                         .user = f};
    o.terminal = true; /* terminals need a loop */
    done init = {0};
    assert_int_equal(acp_client_start(&o, on_done, &init, &f->c), ACP_EINVAL);
    assert_null(f->c);
    assert_non_null(strstr(acp_error_last()->message, "loop"));
    o.terminal = false;
    assert_int_equal(acp_client_start(&o, on_done, &init, &f->c), 0);
    assert_null(acp_client_loop(f->c));
    /* initialize is waiting to be written, with its deadline (30 s by default) running. */
    char *out = take_text(f->c);
    assert_non_null(strstr(out, "\"method\":\"initialize\""));
    free(out);
    assert_null(take_text(f->c));
    int ms = acp_client_next_timeout(f->c);
    assert_true(ms > 29000 && ms <= 30000);
    /* The answer may come in any split. */
    const char *answer = "{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"protocolVersion\":1,"
                         "\"agentCapabilities\":{}}}\n";
    for (const char *p = answer; *p; p++) assert_int_equal(acp_client_feed(f->c, p, 1), 0);
    assert_true(init.done);
    assert_int_equal(init.status, 0);
    done_clear(&init);
    assert_int_equal(acp_client_next_timeout(f->c), -1);

    /* A call with a deadline: next_timeout says when; tick ends it and asks the agent to
     * cancel. */
    done d = {0}, other = {0};
    acp_client_op *op;
    assert_int_equal(acp_client_call_start(f->c, "_x/slow", NULL, on_done, &d, &op), 0);
    acp_client_op_timeout(op, 20);
    assert_int_equal(acp_client_call_start(f->c, "_x/other", NULL, on_done, &other, NULL), 0);
    ms = acp_client_next_timeout(f->c);
    assert_true(ms >= 0 && ms <= 20);
    acp_client_tick(f->c); /* too early: nothing ends */
    assert_false(d.done);
    free(take_text(f->c));
    usleep(25 * 1000);
    assert_int_equal(acp_client_next_timeout(f->c), 0);
    acp_client_tick(f->c);
    assert_true(d.done);
    assert_int_equal(d.status, ACP_ETIMEDOUT);
    done_clear(&d);
    out = take_text(f->c);
    assert_non_null(strstr(out, "$/cancel_request"));
    free(out);
    assert_int_equal(acp_client_next_timeout(f->c), -1);
    /* The late answer is dropped. */
    const char *late = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n";
    assert_int_equal(acp_client_feed(f->c, late, strlen(late)), 0);
    assert_false(other.done);
    /* A synchronous call has no loop to run here: ACP_EINVAL before anything is sent. */
    done ns = {0};
    assert_int_equal(acp_client_session_new_start(f->c, NULL, on_done, &ns, NULL), 0);
    char line[128];
    snprintf(line, sizeof line,
             "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{\"sessionId\":\"m1\"}}\n",
             take_id(f->c));
    assert_int_equal(acp_client_feed(f->c, line, strlen(line)), 0);
    assert_int_equal(ns.status, 0);
    acp_client_session *s = ns.s;
    done_clear(&ns);
    /* Refused before anything is sent: nothing would ever run a loop for them. */
    sync_calls_in_manual_mode(f->c, s);
    assert_null(acp_client_take(f->c, &(size_t){0}));
    /* The refused prompt left the session free. */
    json_t *b = text_prompt("again");
    assert_int_equal(acp_client_session_prompt_start(s, b, on_done, &d, NULL), 0);
    json_decref(b);
    acp_client_eof(f->c);
    assert_int_equal(d.status, ACP_ECLOSED);
    done_clear(&d);
    assert_true(other.done);
    assert_int_equal(other.status, ACP_ECLOSED);
    done_clear(&other);
    assert_int_equal(f->closed, 1);
    assert_true(acp_client_agent_gone(f->c));
    assert_int_equal(acp_client_feed(f->c, "\n", 1), ACP_ECLOSED);
    assert_int_equal(acp_client_call_start(f->c, "_x/late", NULL, on_done, &d, NULL), ACP_ECLOSED);
    assert_int_equal(acp_client_run_once(f->c), ACP_ECLOSED);
    acp_client_free(f->c); /* no loop: everything is released now */
    f->c = NULL;
}

int main(void)
{
    test_process_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_five_sessions_stream, setup, teardown),
        cmocka_unit_test_setup_teardown(test_permission_while_streaming, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_during_permission, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_during_permission_wire, setup, teardown),
        cmocka_unit_test_setup_teardown(test_free_in_flight, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fds_socketpair, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fds_pipes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unix, setup, teardown),
        cmocka_unit_test_setup_teardown(test_timeouts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_agent_killed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_agent_exits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_withdrawn, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_while_held, setup, teardown),
        cmocka_unit_test_setup_teardown(test_close_during_prompt, setup, teardown),
        cmocka_unit_test_setup_teardown(test_two_clients, setup, teardown),
        cmocka_unit_test_setup_teardown(test_manual, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
