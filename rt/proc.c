/* SPDX-License-Identifier: Apache-2.0 */
/* acp_proc: a peer process in its own session and process group, with optional pipes.
 *
 * The child is forked by rt_spawn (spawn.c) and reaped here, on a SIGCHLD watcher that waits
 * for its pid only. Every descriptor rt opens is close-on-exec, so the child inherits only its
 * three stdio fds. What belongs to the child is signalled as a whole: its process group (peers
 * are often wrappers: npx -> node, sh -> the real command) and every process carrying its tag
 * (tree.h), which is how a descendant that left the group with setsid() is still found. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "acp/rt.h"
#include "rpc/lasterr.h"
#include "rt/proc_stdio.h"
#include "rt/spawn.h"
#include "rt/tree.h"
#include "rpc/lasterr.h"

/* The 1.0 size of the options (when it changes: rpc/lasterr.h). */
#define ACP_PROC_OPTS_SIZE_1_0 ACP_STRUCT_SIZE_AT(acp_proc_opts, user)

extern char **environ;

/* After the leader exited, how long its read pipes may take to reach EOF before on_exit is
 * reported anyway (a process outside the group could hold them open). */
#define EXIT_DRAIN_MS 2000

enum timer_mode { T_NONE, T_TERM, T_KILL, T_DRAIN };

struct acp_proc {
    uv_loop_t *loop;
    acp_proc_opts o;
    uv_signal_t sigchld;
    char tag[RT_TAG_LEN + 1];
    uv_pipe_t *in, *out, *err; /* NULL when not piped, moved to a transport, or closed */
    bool out_open, err_open;   /* still being read by us (EOF not seen) */
    uv_timer_t timer;
    enum timer_mode mode;
    int pid;
    int64_t status;
    int term_signal;
    bool exited, reported, stopping, closing;
    unsigned grace;
    int open_handles;
    void (*done)(void *user);
    void *done_user;
    char rbuf[16384];
};

static void close_all(acp_proc *p);

static void on_closed(uv_handle_t *h)
{
    acp_proc *p = h->data;
    if (h != (uv_handle_t *)&p->sigchld && h != (uv_handle_t *)&p->timer) free(h);
    if (--p->open_handles > 0) return;
    void (*done)(void *) = p->done;
    void *user = p->done_user;
    free(p);
    if (done) done(user);
}

static void close_handle(acp_proc *p, uv_handle_t *h)
{
    if (!h) return;
    h->data = p;
    uv_close(h, on_closed);
}

static void report_exit(acp_proc *p)
{
    if (p->reported) return;
    p->reported = true;
    uv_timer_stop(&p->timer);
    p->mode = T_NONE;
    if (p->o.on_exit) p->o.on_exit(p, p->status, p->term_signal, p->o.user);
    if (p->stopping) close_all(p);
}

static void pipes_maybe_drained(acp_proc *p)
{
    if (p->exited && !p->out_open && !p->err_open) report_exit(p);
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    acp_proc *p = h->data;
    *buf = uv_buf_init(p->rbuf, sizeof p->rbuf);
}

static void on_pipe_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    acp_proc *p = s->data;
    bool is_err = s == (uv_stream_t *)p->err;
    if (n > 0) {
        void (*cb)(acp_proc *, const char *, size_t, void *) =
            is_err ? p->o.on_stderr : p->o.on_stdout;
        if (cb) cb(p, buf->base, (size_t)n, p->o.user);
        return;
    }
    if (n == 0) return;
    uv_read_stop(s);
    if (is_err)
        p->err_open = false;
    else
        p->out_open = false;
    pipes_maybe_drained(p);
}

/* Everything that is the child's: its group, and whoever carries its tag elsewhere. */
static void signal_all(acp_proc *p, int sig)
{
    kill(-p->pid, sig);
    rt_sweep(p->tag, sig);
}

static void on_timer(uv_timer_t *tm)
{
    acp_proc *p = tm->data;
    enum timer_mode m = p->mode;
    p->mode = T_NONE;
    if (m == T_TERM) {
        signal_all(p, SIGTERM);
        p->mode = T_KILL;
        uv_timer_start(&p->timer, on_timer, p->grace, 0);
    } else if (m == T_KILL) {
        signal_all(p, SIGKILL);
    } else if (m == T_DRAIN) {
        report_exit(p);
    }
}

static void on_sigchld(uv_signal_t *h, int signum)
{
    acp_proc *p = h->data;
    int st = 0;
    pid_t r;
    do r = waitpid(p->pid, &st, WNOHANG);
    while (r < 0 && errno == EINTR);
    if (r == 0) return; /* another child, or ours stopped rather than exited */
    uv_signal_stop(&p->sigchld);
    rt_children_remove(p->pid);
    p->exited = true;
    if (r < 0) { /* someone else reaped it (waitpid(-1) elsewhere): the status is lost */
        p->status = -1;
    } else if (WIFSIGNALED(st)) {
        p->term_signal = WTERMSIG(st);
    } else {
        p->status = WEXITSTATUS(st);
    }
    /* The leader is gone; whatever it left behind goes with it. */
    signal_all(p, SIGKILL);
    uv_timer_stop(&p->timer);
    p->mode = T_DRAIN;
    uv_timer_start(&p->timer, on_timer, EXIT_DRAIN_MS, 0);
    pipes_maybe_drained(p);
}

static uv_pipe_t *new_pipe(uv_loop_t *loop, acp_proc *p)
{
    uv_pipe_t *pp = malloc(sizeof *pp);
    if (!pp) return NULL;
    uv_pipe_init(loop, pp, 0);
    pp->data = p;
    p->open_handles++;
    return pp;
}

/* env (or ours) with the tag added to RT_TAG_VAR's list: the pointers are borrowed except the
 * last one, which *own holds. */
static char **tagged_env(char *const *env, const char *tag, char **own)
{
    static const char var[] = RT_TAG_VAR "=";
    char *const *src = env ? env : environ;
    const char *prev = NULL;
    size_t n = 0;
    while (src[n]) n++;
    char **v = calloc(n + 2, sizeof *v);
    if (!v) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (strncmp(src[i], var, sizeof var - 1)) {
            v[k++] = src[i];
        } else if (!prev) {
            prev = src[i] + sizeof var - 1;
        }
    }
    /* An outer tree's tags stay, so its sweep finds this one too; a runaway list does not. */
    if (prev && (!*prev || strlen(prev) > 1024)) prev = NULL;
    if (asprintf(own, "%s%s%s%s", var, prev ? prev : "", prev ? " " : "", tag) < 0) {
        free(v);
        return NULL;
    }
    v[k] = *own;
    return v;
}

static int status_of(int err)
{
    return err == -ENOENT   ? ACP_ENOTFOUND
           : err == -EACCES ? ACP_EACCES
           : err == -ENOMEM ? ACP_ENOMEM
           : err == -EINVAL ? ACP_EINVAL
                            : ACP_EIO;
}

int acp_proc_spawn(uv_loop_t *loop, const acp_proc_opts *opts, acp_proc **out)
{
    *out = NULL;
    acp_proc_opts copy;
    const acp_proc_opts *o = &copy;
    int rc = acp_struct_read(&copy, sizeof copy, ACP_PROC_OPTS_SIZE_1_0, opts, "acp_proc_opts");
    if (rc) return rc;
    if (!opts || !o->file || !o->argv || !o->argv[0])
        return acp_error_set(ACP_EINVAL, "no command to run");
    acp_proc *p = calloc(1, sizeof *p);
    if (!p) return acp_error_set(ACP_ENOMEM, "cannot run '%s': out of memory", o->file);
    p->loop = loop;
    p->o = *o;
    /* Every initialised handle is counted; the proc is freed when the last one has closed. */
    uv_timer_init(loop, &p->timer);
    uv_signal_init(loop, &p->sigchld);
    p->open_handles = 2;
    p->timer.data = p;
    p->sigchld.data = p;
    bool oom = (o->pipe_stdin && !(p->in = new_pipe(loop, p))) ||
               (o->pipe_stdout && !(p->out = new_pipe(loop, p))) ||
               (o->pipe_stderr && !(p->err = new_pipe(loop, p)));

    /* fds[i]: {ours, the child's}; the child reads stdin and writes the other two. */
    int fds[3][2] = {{-1, -1}, {-1, -1}, {-1, -1}};
    uv_pipe_t *pipes[3] = {p->in, p->out, p->err};
    char *own = NULL;
    char **env = NULL;
    rc = oom ? -ENOMEM : rt_tag_new(p->tag) ? -EIO : 0;
    if (!rc && !(env = tagged_env(o->env, p->tag, &own))) rc = -ENOMEM;
    for (int i = 0; i < 3 && !rc; i++) {
        int pfd[2];
        if (!pipes[i]) continue;
        if (pipe2(pfd, O_CLOEXEC)) {
            rc = -errno;
            break;
        }
        fds[i][0] = pfd[i == 0 ? 1 : 0];
        fds[i][1] = pfd[i == 0 ? 0 : 1];
    }
    /* Watching before the fork: a child that exits at once is not missed. */
    if (!rc) rc = uv_signal_start(&p->sigchld, on_sigchld, SIGCHLD);
    if (!rc) {
        rt_spawn_req req = {
            .file = o->file,
            .argv = o->argv,
            .envp = env,
            .cwd = o->cwd,
            .fd = {fds[0][1], fds[1][1], !pipes[2] && o->inherit_stderr ? 2 : fds[2][1]}};
        rc = rt_spawn(&req, &p->pid);
    }
    free(own);
    free(env);
    for (int i = 0; i < 3; i++) {
        if (fds[i][1] >= 0) close(fds[i][1]);
        if (!rc && pipes[i] && uv_pipe_open(pipes[i], fds[i][0]) == 0) fds[i][0] = -1;
        if (fds[i][0] >= 0) {
            close(fds[i][0]);
            if (!rc) rc = -EIO;
        }
    }
    if (rc) {
        if (p->pid) { /* a pipe could not be opened: the child must not run unwatched */
            kill(-p->pid, SIGKILL);
            while (waitpid(p->pid, NULL, 0) < 0 && errno == EINTR) continue;
            rt_children_remove(p->pid);
        }
        struct stat st;
        if (o->cwd && (stat(o->cwd, &st) != 0 || !S_ISDIR(st.st_mode)))
            acp_error_set(status_of(rc), "cannot run '%s': its directory '%s' is not usable",
                          o->file, o->cwd);
        else
            acp_error_set(status_of(rc), "cannot run '%s': %s", o->file, uv_strerror(rc));
        /* Every initialised handle is released through the loop. */
        p->closing = true;
        close_handle(p, (uv_handle_t *)p->in);
        close_handle(p, (uv_handle_t *)p->out);
        close_handle(p, (uv_handle_t *)p->err);
        close_handle(p, (uv_handle_t *)&p->timer);
        close_handle(p, (uv_handle_t *)&p->sigchld);
        return status_of(rc);
    }
    if (p->out && o->on_stdout) {
        p->out_open = uv_read_start((uv_stream_t *)p->out, on_alloc, on_pipe_read) == 0;
    }
    if (p->err) p->err_open = uv_read_start((uv_stream_t *)p->err, on_alloc, on_pipe_read) == 0;
    *out = p;
    return 0;
}

int acp_proc_pid(const acp_proc *p)
{
    return p->pid;
}

bool acp_proc_exited(const acp_proc *p)
{
    return p->exited;
}

int acp_proc_take_stdio(acp_proc *p, uv_stream_t **child_stdin, uv_stream_t **child_stdout)
{
    if (!p->in || !p->out || p->o.on_stdout || p->stopping) return ACP_EINVAL;
    *child_stdin = (uv_stream_t *)p->in;
    *child_stdout = (uv_stream_t *)p->out;
    p->in = p->out = NULL;
    p->open_handles -= 2;
    return 0;
}

static void close_all(acp_proc *p)
{
    if (p->closing) return;
    p->closing = true;
    uv_timer_stop(&p->timer);
    close_handle(p, (uv_handle_t *)p->in);
    close_handle(p, (uv_handle_t *)p->out);
    close_handle(p, (uv_handle_t *)p->err);
    p->in = p->out = p->err = NULL;
    close_handle(p, (uv_handle_t *)&p->timer);
    close_handle(p, (uv_handle_t *)&p->sigchld);
}

void acp_proc_stop(acp_proc *p, unsigned grace_ms, void (*done)(void *user), void *user)
{
    if (p->stopping) return;
    p->stopping = true;
    p->grace = grace_ms;
    p->done = done;
    p->done_user = user;
    /* EOF on its stdin is the polite way to ask a peer to finish. */
    if (p->in) {
        close_handle(p, (uv_handle_t *)p->in);
        p->in = NULL;
    }
    if (p->reported) {
        close_all(p);
    } else if (!p->exited) {
        p->mode = T_TERM;
        uv_timer_start(&p->timer, on_timer, grace_ms, 0);
    }
    /* else: the leader exited and its pipes are draining; report_exit() finishes. */
}
