/* SPDX-License-Identifier: Apache-2.0 */
/* acp_proc with real children: spawn failures, exit at once, stdin EOF, a child that ignores
 * SIGTERM, grandchildren, explicit environments, stderr capture, a descendant in its own
 * session, the tag, death of the parent; acp_reaper. After every stop no zombie, no process
 * left in the group and the parent's fd count back where it started. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "acp/rt.h"

static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    assert_non_null(d);
    int n = 0;
    while (readdir(d)) n++;
    closedir(d);
    return n;
}

enum stop_when { STOP_NOW, STOP_AT_READY, STOP_AT_EXIT };

typedef struct {
    uv_loop_t loop;
    acp_proc *p;
    char out[4096], err[4096];
    size_t nout, nerr;
    int exits;
    int64_t status;
    int sig;
    size_t err_at_exit, out_at_exit;
    bool stopped;
    unsigned grace;
    enum stop_when when;
} ctx;

static void on_stopped(void *u)
{
    ((ctx *)u)->stopped = true;
}

static void on_out(acp_proc *p, const char *b, size_t n, void *u)
{
    ctx *c = u;
    assert_true(c->nout + n < sizeof c->out);
    memcpy(c->out + c->nout, b, n);
    c->nout += n;
    if (c->when == STOP_AT_READY && memchr(c->out, '\n', c->nout)) {
        c->when = STOP_NOW;
        acp_proc_stop(p, c->grace, on_stopped, c);
    }
}

static void on_err(acp_proc *p, const char *b, size_t n, void *u)
{
    ctx *c = u;
    assert_true(c->nerr + n < sizeof c->err);
    memcpy(c->err + c->nerr, b, n);
    c->nerr += n;
}

static void on_exit_cb(acp_proc *p, int64_t status, int sig, void *u)
{
    ctx *c = u;
    c->exits++;
    c->status = status;
    c->sig = sig;
    c->err_at_exit = c->nerr;
    c->out_at_exit = c->nout;
    if (c->when == STOP_AT_EXIT) acp_proc_stop(p, c->grace, on_stopped, c);
}

static acp_proc_opts base(ctx *c, char *const *argv)
{
    return (acp_proc_opts){.struct_size = sizeof(acp_proc_opts),
                           .file = argv[0],
                           .argv = argv,
                           .pipe_stdout = true,
                           .on_stdout = on_out,
                           .on_stderr = on_err,
                           .on_exit = on_exit_cb,
                           .user = c};
}

/* Spawns, stops (now, at the first line of output, or at exit), runs the loop until it is
 * empty, and checks: the leader was reaped, every other member of its group is dead (we are
 * a subreaper, so orphans come back to us: we reap them; one still alive would hang here, so
 * an alarm fails the test instead), and the group is gone. Returns the leader's pid. */
static int run(ctx *c, const acp_proc_opts *o)
{
    assert_int_equal(uv_loop_init(&c->loop), 0);
    int rc = acp_proc_spawn(&c->loop, o, &c->p);
    if (rc) fail_msg("spawn: %s", acp_error_last()->message);
    int pid = acp_proc_pid(c->p);
    assert_true(pid > 0);
    if (c->when == STOP_NOW) acp_proc_stop(c->p, c->grace, on_stopped, c);
    assert_int_equal(uv_run(&c->loop, UV_RUN_DEFAULT), 0);
    assert_true(c->stopped);
    assert_int_equal(uv_loop_close(&c->loop), 0);
    assert_int_equal(c->exits, 1);
    assert_int_equal(waitpid(pid, NULL, WNOHANG), -1);
    assert_int_equal(errno, ECHILD);
    alarm(30);
    while (waitpid(-pid, NULL, 0) > 0) continue;
    assert_int_equal(errno, ECHILD);
    alarm(0);
    assert_int_equal(kill(-pid, 0), -1);
    assert_int_equal(errno, ESRCH);
    return pid;
}

static int fds_at_start;

/* Processes a test made that nothing else would end if it failed half-way: killed at the end. */
static int leftovers[8];
static size_t nleftovers;

static int kill_leftovers(void **state)
{
    for (size_t i = 0; i < nleftovers; i++) kill(leftovers[i], SIGKILL);
    return 0;
}

static void check_fds(void)
{
    assert_int_equal(count_fds(), fds_at_start);
}

static void test_spawn_failures(void **state)
{
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    char *argv[] = {"no-such-program-acp", NULL};
    acp_proc_opts o = {.struct_size = sizeof(acp_proc_opts),
                       .file = argv[0],
                       .argv = argv,
                       .pipe_stdin = true,
                       .pipe_stdout = true};
    acp_proc *p = (acp_proc *)1;
    assert_int_equal(acp_proc_spawn(&loop, &o, &p), ACP_ENOTFOUND);
    assert_null(p);
    assert_true(*acp_error_last()->message);
    assert_non_null(strstr(acp_error_last()->message, "'no-such-program-acp'"));

    char path[] = "/tmp/acp-noexec-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    char *argv2[] = {path, NULL};
    o.file = path;
    o.argv = argv2;
    assert_int_equal(acp_proc_spawn(&loop, &o, &p), ACP_EACCES);
    assert_non_null(strstr(acp_error_last()->message, path));
    unlink(path);

    /* A missing working directory is named as such, not as a missing program. */
    char *argv3[] = {"/bin/true", NULL};
    o.file = argv3[0];
    o.argv = argv3;
    o.cwd = "/nonexistent-acp-dir";
    assert_int_equal(acp_proc_spawn(&loop, &o, &p), ACP_ENOTFOUND);
    assert_non_null(strstr(acp_error_last()->message, "/nonexistent-acp-dir"));

    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(uv_loop_close(&loop), 0);
    check_fds();
}

static void test_exits_at_once(void **state)
{
    ctx c = {.when = STOP_AT_EXIT, .grace = 5000};
    char *argv[] = {"/bin/sh", "-c", "echo out; echo oops >&2; exit 3", NULL};
    acp_proc_opts o = base(&c, argv);
    o.pipe_stderr = true;
    run(&c, &o);
    assert_int_equal(c.status, 3);
    assert_int_equal(c.sig, 0);
    /* All output arrived before on_exit. */
    assert_int_equal(c.out_at_exit, 4);
    assert_memory_equal(c.out, "out\n", 4);
    assert_int_equal(c.err_at_exit, 5);
    assert_memory_equal(c.err, "oops\n", 5);
    check_fds();
}

static void test_stdin_eof_first(void **state)
{
    /* A long grace: cat must leave because its stdin closed, not because of a signal. */
    ctx c = {.when = STOP_NOW, .grace = 60000};
    char *argv[] = {"/bin/cat", NULL};
    acp_proc_opts o = base(&c, argv);
    o.pipe_stdin = true;
    run(&c, &o);
    assert_int_equal(c.status, 0);
    assert_int_equal(c.sig, 0);
    check_fds();
}

static void test_ignores_sigterm(void **state)
{
    /* Stopped once "ready" is out, so the trap is in place. */
    ctx c = {.when = STOP_AT_READY, .grace = 50};
    char *argv[] = {"/bin/sh", "-c", "trap '' TERM; echo ready; while :; do sleep 1; done", NULL};
    acp_proc_opts o = base(&c, argv);
    o.pipe_stdin = true;
    run(&c, &o);
    assert_int_equal(c.sig, SIGKILL); /* escalated past the ignored SIGTERM */
    check_fds();
}

/* The leader dies at SIGTERM; its child ignores SIGTERM and would be orphaned, but the group
 * is killed once the leader has gone. The orphan comes back to us (subreaper), so we can see
 * how it died. */
static void test_grandchild(void **state)
{
    ctx c = {.when = STOP_AT_READY, .grace = 50};
    /* The grandchild prints its pid once its trap is set; the leader just waits. */
    char *argv[] = {"/bin/sh", "-c", "/bin/sh -c 'trap \"\" TERM; echo $$; exec sleep 1000' & wait",
                    NULL};
    acp_proc_opts o = base(&c, argv);
    assert_int_equal(uv_loop_init(&c.loop), 0);
    assert_int_equal(acp_proc_spawn(&c.loop, &o, &c.p), 0);
    int pid = acp_proc_pid(c.p);
    assert_int_equal(uv_run(&c.loop, UV_RUN_DEFAULT), 0);
    assert_true(c.stopped);
    assert_int_equal(uv_loop_close(&c.loop), 0);
    assert_int_equal(c.exits, 1);
    assert_int_equal(c.sig, SIGTERM);
    int gpid = atoi(c.out);
    assert_true(gpid > 0);
    int st = 0;
    alarm(30); /* a grandchild that survived would hang here: fail instead */
    assert_int_equal(waitpid(gpid, &st, 0), gpid);
    alarm(0);
    assert_true(WIFSIGNALED(st));
    assert_int_equal(WTERMSIG(st), SIGKILL);
    assert_int_equal(kill(-pid, 0), -1);
    assert_int_equal(errno, ESRCH);
    check_fds();
}

static bool is_zombie_or_gone(int pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f) return true;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *rp = strrchr(buf, ')');
    return !rp || rp[2] == 'Z';
}

/* A descendant that left the group (setsid) and ignores SIGTERM, under a leader that ignores
 * it too: the group kill misses it, the tag finds it, within 2 * grace. As a subreaper we
 * look for it among our descendants; otherwise (it went to init) in all of /proc. */
static void escapee(bool subreaper)
{
    assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, subreaper), 0);
    ctx c = {.when = STOP_AT_READY, .grace = 50};
    char *argv[] = {"/bin/sh", "-c",
                    "trap '' TERM; setsid /bin/sh -c 'echo $$; exec sleep 1000' & wait", NULL};
    acp_proc_opts o = base(&c, argv);
    o.pipe_stdin = true;
    uint64_t t0 = uv_hrtime();
    int pid = run(&c, &o);
    uint64_t took_ms = (uv_hrtime() - t0) / 1000000;
    assert_int_equal(c.sig, SIGKILL);
    int epid = atoi(c.out);
    assert_true(epid > 0 && epid != pid);
    if (subreaper) { /* it comes back to us to be reaped, unless the leader reaped it first */
        int st = 0;
        alarm(30);
        int w = waitpid(epid, &st, 0);
        alarm(0);
        if (w == epid) {
            assert_true(WIFSIGNALED(st));
            assert_int_equal(WTERMSIG(st), SIGKILL);
        }
    }
    for (int i = 0; i < 200 && !is_zombie_or_gone(epid); i++) usleep(10000);
    assert_true(is_zombie_or_gone(epid));
    assert_true(took_ms < 2000);
    assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    check_fds();
}

static void test_setsid_escapee(void **state)
{
    escapee(true);
}

static void test_setsid_escapee_no_subreaper(void **state)
{
    escapee(false);
}

/* The child's environment: its tag appended to an inherited list, given env or not. */
static void test_tag(void **state)
{
    ctx c = {.when = STOP_AT_EXIT, .grace = 5000};
    char *argv[] = {"/bin/sh", "-c", "echo \"$ACP_PROC_TAG\"", NULL};
    char *env[] = {"ACP_PROC_TAG=outer", "FOO=1", NULL};
    acp_proc_opts o = base(&c, argv);
    o.env = env;
    run(&c, &o);
    c.out[c.nout] = '\0';
    assert_int_equal(strlen(c.out), strlen("outer ") + 32 + 1);
    assert_memory_equal(c.out, "outer ", 6);
    for (int i = 6; i < 38; i++) assert_non_null(strchr("0123456789abcdef", c.out[i]));

    ctx d = {.when = STOP_AT_EXIT, .grace = 5000};
    o = base(&d, argv);
    run(&d, &o);
    d.out[d.nout] = '\0';
    assert_int_equal(strlen(d.out), 32 + 1);
    assert_true(strcmp(c.out + 6, d.out) != 0); /* a fresh tag per proc */
    check_fds();
}

/* PR_SET_PDEATHSIG: a helper process spawns `sleep` and dies without stopping it; the sleep is
 * killed, and comes back to us (a subreaper) to be reaped. */
static void test_parent_death(void **state)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t helper = fork();
    assert_true(helper >= 0);
    if (helper == 0) {
        uv_loop_t loop;
        uv_loop_init(&loop);
        char *argv[] = {"/bin/sleep", "1000", NULL};
        acp_proc_opts o = {.struct_size = sizeof(acp_proc_opts), .file = argv[0], .argv = argv};
        acp_proc *p;
        int pid = acp_proc_spawn(&loop, &o, &p) ? -1 : acp_proc_pid(p);
        if (write(fds[1], &pid, sizeof pid) != sizeof pid) _exit(2);
        _exit(0); /* no stop, no cleanup: a crash, as far as the child can tell */
    }
    close(fds[1]);
    int spid = 0;
    assert_int_equal(read(fds[0], &spid, sizeof spid), sizeof spid);
    close(fds[0]);
    assert_true(spid > 0);
    assert_int_equal(waitpid(helper, NULL, 0), helper);
    int st = 0;
    alarm(30);
    assert_int_equal(waitpid(spid, &st, 0), spid);
    alarm(0);
    assert_true(WIFSIGNALED(st));
    assert_int_equal(WTERMSIG(st), SIGKILL);
}

static void uv_exited(uv_process_t *h, int64_t status, int sig)
{
    *(int64_t *)h->data = status;
    uv_close((uv_handle_t *)h, NULL);
}

static void nothing(uv_timer_t *t)
{
}

static void on_reaper_closed(void *u)
{
    *(bool *)u = true;
}

/* acp_reaper: reaps orphans, never the children libuv or an acp_proc wait for, and kills at
 * close the orphan that no tag reaches (an emptied environment). */
static void test_reaper(void **state)
{
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    acp_reaper *r = NULL;
    assert_int_equal(acp_reaper_start(&loop, &r), 0);

    /* libuv's own child, exit status 7, on the reaper's loop. */
    int64_t uv_status = -1;
    uv_process_t up;
    up.data = &uv_status;
    char *uargv[] = {"/bin/sh", "-c", "sleep 0.1; exit 7", NULL};
    uv_process_options_t uo = {.exit_cb = uv_exited, .file = uargv[0], .args = uargv};
    assert_int_equal(uv_spawn(&loop, &up, &uo), 0);

    /* An acp_proc that exits 3 and leaves two orphans with empty environments: one that
     * exits by itself (a zombie of ours until the reaper reaps it) and one that lives. */
    ctx c = {.when = STOP_AT_EXIT, .grace = 5000};
    char *argv[] = {"/bin/sh", "-c",
                    "env -i /bin/sh -c 'echo q $$; exec sleep 0.1' & "
                    "env -i /usr/bin/setsid /bin/sh -c 'echo l $$; exec sleep 1000' & "
                    "sleep 0.05; exit 3",
                    NULL};
    acp_proc_opts o = base(&c, argv);
    assert_int_equal(acp_proc_spawn(&loop, &o, &c.p), 0);
    while (!c.stopped || uv_status < 0) uv_run(&loop, UV_RUN_ONCE);
    assert_int_equal(uv_status, 7);
    assert_int_equal(c.status, 3);
    c.out[c.nout] = '\0';
    char *q = strstr(c.out, "q "), *l = strstr(c.out, "l ");
    assert_true(q && l);
    int quick = atoi(q + 2), lasting = atoi(l + 2);
    assert_true(quick > 0 && lasting > 0);
    leftovers[nleftovers++] = lasting;
    /* The quick one exits after 0.1 s: the reaper's SIGCHLD pass reaps it. */
    uv_timer_t t;
    uv_timer_init(&loop, &t);
    uv_timer_start(&t, nothing, 300, 0);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(kill(quick, 0), -1); /* reaped: not even a zombie */
    assert_false(is_zombie_or_gone(lasting));

    bool closed = false;
    acp_reaper_close(r, on_reaper_closed, &closed);
    assert_int_equal(kill(lasting, 0), -1); /* killed and reaped */
    uv_close((uv_handle_t *)&t, NULL);
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    assert_true(closed);
    assert_int_equal(uv_loop_close(&loop), 0);
    /* The reaper gave the role up; the other tests rely on it. */
    assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    check_fds();
}

static void test_env_cwd_and_fds(void **state)
{
    ctx c = {.when = STOP_AT_EXIT, .grace = 5000};
    /* Only 0, 1, 2 (and ls's own directory fd) may be open in the child. */
    char *argv[] = {"/bin/sh", "-c", "echo \"$FOO:$HOME:$(pwd)\"; exec /bin/ls /proc/self/fd",
                    NULL};
    char *env[] = {"FOO=bar baz", NULL};
    acp_proc_opts o = base(&c, argv);
    o.env = env;
    o.cwd = "/tmp";
    o.pipe_stdin = true;
    o.pipe_stderr = true;
    run(&c, &o);
    assert_int_equal(c.status, 0);
    c.out[c.nout] = '\0';
    assert_string_equal(c.out, "bar baz::/tmp\n0\n1\n2\n3\n");
    check_fds();
}

/* Descriptors this test inherited without close-on-exec (from ctest or a shell) would reach
 * the children too: libuv cannot close them in the child. Mark them, so the fd check below
 * sees only what libuv and rt open. */
static void cloexec_inherited(void)
{
    DIR *d = opendir("/proc/self/fd");
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d))) {
        int fd = atoi(e->d_name);
        if (fd > 2 && fd != dirfd(d)) fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC);
    }
    closedir(d);
}

/* libuv opens a process-wide signal pipe the first time a child is spawned, once; warm it
 * up so that the fd baseline is taken after it. */
static void warm_up(void)
{
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    char *argv[] = {"/bin/true", NULL};
    acp_proc_opts o = {.struct_size = sizeof(acp_proc_opts), .file = argv[0], .argv = argv};
    acp_proc *p;
    assert_int_equal(acp_proc_spawn(&loop, &o, &p), 0);
    acp_proc_stop(p, 5000, NULL, NULL);
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    cloexec_inherited();
    warm_up();
    fds_at_start = count_fds();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spawn_failures),
        cmocka_unit_test(test_exits_at_once),
        cmocka_unit_test(test_stdin_eof_first),
        cmocka_unit_test(test_ignores_sigterm),
        cmocka_unit_test(test_grandchild),
        cmocka_unit_test(test_env_cwd_and_fds),
        cmocka_unit_test(test_setsid_escapee),
        cmocka_unit_test(test_setsid_escapee_no_subreaper),
        cmocka_unit_test(test_tag),
        cmocka_unit_test(test_parent_death),
        cmocka_unit_test(test_reaper),
    };
    return cmocka_run_group_tests(tests, NULL, kill_leftovers);
}
