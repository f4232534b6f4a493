/* acp_proc: a peer process in its own session and process group, with optional pipes.
 *
 * libuv reaps the child (its SIGCHLD handler) and sets close-on-exec on every descriptor it
 * opens, so the child inherits only its three stdio fds. The group is signalled as a whole,
 * since peers are often wrappers (npx -> node, sh -> the real command). */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "acp/rt.h"
#include "rt/errmsg.h"
#include "rt/proc_stdio.h"

/* After the leader exited, how long its read pipes may take to reach EOF before on_exit is
 * reported anyway (a process outside the group could hold them open). */
#define EXIT_DRAIN_MS 2000

enum timer_mode { T_NONE, T_TERM, T_KILL, T_DRAIN };

struct acp_proc {
    uv_loop_t *loop;
    acp_proc_opts o;
    uv_process_t proc;
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
    if (h != (uv_handle_t *)&p->proc && h != (uv_handle_t *)&p->timer) free(h);
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

static void on_timer(uv_timer_t *tm)
{
    acp_proc *p = tm->data;
    enum timer_mode m = p->mode;
    p->mode = T_NONE;
    if (m == T_TERM) {
        kill(-p->pid, SIGTERM);
        p->mode = T_KILL;
        uv_timer_start(&p->timer, on_timer, p->grace, 0);
    } else if (m == T_KILL) {
        kill(-p->pid, SIGKILL);
    } else if (m == T_DRAIN) {
        report_exit(p);
    }
}

static void on_proc_exit(uv_process_t *h, int64_t status, int term_signal)
{
    acp_proc *p = h->data;
    p->exited = true;
    p->status = status;
    p->term_signal = term_signal;
    /* The leader is gone; whatever it left in its group goes with it. */
    kill(-p->pid, SIGKILL);
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

int acp_proc_spawn(uv_loop_t *loop, const acp_proc_opts *o, acp_proc **out, char **errmsg)
{
    *out = NULL;
    if (errmsg) *errmsg = NULL;
    if (!o || !o->file || !o->argv || !o->argv[0]) {
        rt_set_err(errmsg, "no command to run");
        return ACP_EINVAL;
    }
    acp_proc *p = calloc(1, sizeof *p);
    if (!p) return ACP_ENOMEM;
    p->loop = loop;
    p->o = *o;
    /* Every initialised handle is counted; the proc is freed when the last one has closed. */
    uv_timer_init(loop, &p->timer);
    p->open_handles = 1;
    p->timer.data = p;
    p->proc.data = p;
    bool oom = (o->pipe_stdin && !(p->in = new_pipe(loop, p))) ||
               (o->pipe_stdout && !(p->out = new_pipe(loop, p))) ||
               (o->pipe_stderr && !(p->err = new_pipe(loop, p)));

    uv_stdio_container_t stdio[3];
    uv_pipe_t *pipes[3] = {p->in, p->out, p->err};
    for (int i = 0; i < 3; i++) {
        if (pipes[i]) {
            stdio[i].flags = UV_CREATE_PIPE | (i == 0 ? UV_READABLE_PIPE : UV_WRITABLE_PIPE);
            stdio[i].data.stream = (uv_stream_t *)pipes[i];
        } else if (i == 2 && o->inherit_stderr) {
            stdio[i].flags = UV_INHERIT_FD;
            stdio[i].data.fd = 2;
        } else {
            stdio[i].flags = UV_IGNORE; /* libuv puts /dev/null there */
        }
    }
    uv_process_options_t po = {
        .exit_cb = on_proc_exit,
        .file = o->file,
        .args = (char **)o->argv,
        .env = (char **)o->env,
        .cwd = o->cwd,
        .flags = UV_PROCESS_DETACHED, /* setsid(): a new session, so its own group */
        .stdio_count = 3,
        .stdio = stdio,
    };
    int rc = UV_ENOMEM;
    if (!oom) {
        rc = uv_spawn(loop, &p->proc, &po);
        p->open_handles++; /* initialised even when the spawn failed */
    }
    if (rc != 0) {
        int status = rc == UV_ENOENT   ? ACP_ENOTFOUND
                     : rc == UV_EACCES ? ACP_EACCES
                     : rc == UV_ENOMEM ? ACP_ENOMEM
                     : rc == UV_EINVAL ? ACP_EINVAL
                                       : ACP_EIO;
        struct stat st;
        if (o->cwd && (stat(o->cwd, &st) != 0 || !S_ISDIR(st.st_mode)))
            rt_set_err(errmsg, "cannot run '%s': its directory '%s' is not usable", o->file,
                       o->cwd);
        else
            rt_set_err(errmsg, "cannot run '%s': %s", o->file, uv_strerror(rc));
        /* Every initialised handle, the process included, is released through the loop. */
        p->closing = true;
        close_handle(p, (uv_handle_t *)p->in);
        close_handle(p, (uv_handle_t *)p->out);
        close_handle(p, (uv_handle_t *)p->err);
        close_handle(p, (uv_handle_t *)&p->timer);
        if (!oom) close_handle(p, (uv_handle_t *)&p->proc);
        return status;
    }
    p->pid = p->proc.pid;
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
    close_handle(p, (uv_handle_t *)&p->proc);
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
