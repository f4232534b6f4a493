/* SPDX-License-Identifier: Apache-2.0 */
/* acp_transport: an acp_conn bound to an input and an output, on libuv.
 *
 * Output leaves from a uv_prepare handle, which runs once per loop turn right before the loop
 * blocks: everything produced during a turn goes out in one write, in order. Streams (pipes,
 * sockets, TTYs) use uv_write; regular files and character devices cannot be polled, so they
 * are read with uv_fs_read and written with plain blocking write(2). */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "acp/rt.h"
#include "rpc/lasterr.h"
#include "rt/proc_stdio.h"

#define DEFAULT_HIGH_WATER (4u << 20)
#define READ_CHUNK         (64u << 10)
/* How soon a flush refused by before_flush is retried. */
#define RETRY_MS 10

union stream {
    uv_handle_t h;
    uv_stream_t s;
    uv_pipe_t pipe;
    uv_tcp_t tcp;
    uv_tty_t tty;
};

struct wreq {
    uv_write_t req;
    acp_transport *t;
    char *buf;
    size_t len;
};

struct acp_transport {
    uv_loop_t *loop;
    acp_conn *conn;
    acp_transport_opts o;
    uv_stream_t *in, *out; /* NULL for a file end; in == out when shared */
    int in_fd, out_fd;     /* file ends (our duplicates), else -1 */
    int spare[2];          /* our fds that a TTY stream does not own, else -1 */
    uv_fs_t fs_req;
    bool fs_reading; /* a uv_fs_read is in flight (it cannot be abandoned) */
    uv_prepare_t prepare;
    uv_timer_t retry;
    size_t inflight; /* bytes given to uv_write and not yet completed */
    unsigned writes; /* uv_write requests in flight */
    bool full;       /* writable() said no; on_drain is owed */
    bool eof, write_failed, closing, handles_closed;
    int open_handles; /* close callbacks still to come */
    void (*done)(void *user);
    void *done_user;
    char rbuf[READ_CHUNK];
};

static void maybe_finish(acp_transport *t);
static void flush(acp_transport *t);

static void handle_gone(acp_transport *t)
{
    if (--t->open_handles > 0) return;
    void (*done)(void *) = t->done;
    void *user = t->done_user;
    free(t);
    if (done) done(user);
}

static void on_handle_closed(uv_handle_t *h)
{
    handle_gone(h->data);
}

static void on_stream_closed(uv_handle_t *h)
{
    acp_transport *t = h->data;
    free(h);
    handle_gone(t);
}

/* For streams that never became part of a transport. */
static void free_handle(uv_handle_t *h)
{
    free(h);
}

static void input_ended(acp_transport *t)
{
    if (t->eof) return;
    t->eof = true;
    if (t->in && !uv_is_closing((uv_handle_t *)t->in)) uv_read_stop(t->in);
    acp_conn_eof(t->conn);
    if (!t->closing && t->o.on_eof) t->o.on_eof(t, t->o.user);
}

static void drop_output(acp_transport *t)
{
    size_t n;
    free(acp_conn_out_take(t->conn, &n));
}

static void check_drain(acp_transport *t)
{
    if (!t->full || t->closing || acp_transport_queued(t) >= t->o.high_water / 2) return;
    t->full = false;
    if (t->o.on_drain) t->o.on_drain(t, t->o.user);
}

static void write_failed(acp_transport *t)
{
    if (t->write_failed) return;
    t->write_failed = true;
    drop_output(t);
    input_ended(t);
    check_drain(t);
}

/* --- input -------------------------------------------------------------------------- */

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    acp_transport *t = h->data;
    *buf = uv_buf_init(t->rbuf, sizeof t->rbuf);
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    acp_transport *t = s->data;
    if (n > 0) {
        if (acp_conn_recv(t->conn, buf->base, (size_t)n) == ACP_ENOMEM) input_ended(t);
    } else if (n < 0) {
        input_ended(t);
    }
}

static void file_read_next(acp_transport *t);

static void on_file_read(uv_fs_t *req)
{
    acp_transport *t = req->data;
    ssize_t n = req->result;
    uv_fs_req_cleanup(req);
    t->fs_reading = false;
    if (t->closing) {
        maybe_finish(t);
        return;
    }
    if (n > 0 && acp_conn_recv(t->conn, t->rbuf, (size_t)n) != ACP_ENOMEM) {
        file_read_next(t);
        return;
    }
    if (n != UV_EINTR)
        input_ended(t);
    else
        file_read_next(t);
}

static void file_read_next(acp_transport *t)
{
    if (t->eof || t->closing) return;
    uv_buf_t b = uv_buf_init(t->rbuf, sizeof t->rbuf);
    t->fs_req.data = t;
    if (uv_fs_read(t->loop, &t->fs_req, t->in_fd, &b, 1, -1, on_file_read) == 0)
        t->fs_reading = true;
    else
        input_ended(t);
}

/* --- output ------------------------------------------------------------------------- */

static void on_written(uv_write_t *req, int status)
{
    struct wreq *w = (struct wreq *)req;
    acp_transport *t = w->t;
    t->inflight -= w->len;
    if (t->writes > 0) t->writes--; /* zeroed by a close timeout */
    free(w->buf);
    free(w);
    if (status < 0) write_failed(t);
    if (t->closing)
        maybe_finish(t);
    else
        check_drain(t);
}

static void write_file(acp_transport *t, char *buf, size_t len)
{
    size_t off = 0;
    while (off < len) {
        ssize_t n = write(t->out_fd, buf + off, len - off);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        off += (size_t)n;
    }
    free(buf);
    if (off < len) write_failed(t);
}

static void write_stream(acp_transport *t, char *buf, size_t len)
{
    struct wreq *w = malloc(sizeof *w);
    if (!w) {
        free(buf);
        write_failed(t);
        return;
    }
    w->t = t;
    w->buf = buf;
    w->len = len;
    uv_buf_t b = {.base = buf, .len = len}; /* not uv_buf_init(): its length is unsigned int */
    if (uv_write(&w->req, t->out, &b, 1, on_written) != 0) {
        free(buf);
        free(w);
        write_failed(t);
        return;
    }
    t->inflight += len;
    t->writes++;
}

static void on_retry(uv_timer_t *tm)
{
    flush(tm->data);
}

static void flush(acp_transport *t)
{
    if (t->write_failed) {
        drop_output(t);
        return;
    }
    if (acp_conn_out_len(t->conn) == 0) return;
    if (t->o.before_flush && t->o.before_flush(t, t->o.user) != 0) {
        if (!t->closing && !uv_is_active((uv_handle_t *)&t->retry))
            uv_timer_start(&t->retry, on_retry, RETRY_MS, 0);
        return;
    }
    size_t len = 0;
    char *buf = acp_conn_out_take(t->conn, &len);
    if (!buf) return;
    if (t->out) {
        write_stream(t, buf, len);
    } else {
        write_file(t, buf, len);
        check_drain(t);
    }
}

static void on_prepare(uv_prepare_t *p)
{
    flush(p->data);
}

/* --- opening ------------------------------------------------------------------------ */

/* Wraps fd (ours) in a stream handle, or leaves it as a file end (*s NULL). *spare is set to
 * fd when the stream ended up not owning it (libuv reopens a TTY on a new fd), else -1. */
static int open_end(uv_loop_t *loop, int fd, bool readable, uv_stream_t **s, int *spare)
{
    *s = NULL;
    *spare = -1;
    uv_handle_type ty = uv_guess_handle(fd);
    if (ty == UV_FILE) return 0;
    if (ty != UV_NAMED_PIPE && ty != UV_TCP && ty != UV_TTY) return ACP_EINVAL;
    union stream *u = malloc(sizeof *u);
    if (!u) return ACP_ENOMEM;
    int rc;
    if (ty == UV_TTY) {
        rc = uv_tty_init(loop, &u->tty, fd, readable);
        if (rc) {
            free(u);
            return ACP_EIO;
        }
        uv_os_fd_t used;
        if (uv_fileno(&u->h, &used) == 0 && used != fd) *spare = fd;
    } else {
        rc = ty == UV_TCP ? uv_tcp_init(loop, &u->tcp) : uv_pipe_init(loop, &u->pipe, 0);
        if (!rc) rc = ty == UV_TCP ? uv_tcp_open(&u->tcp, fd) : uv_pipe_open(&u->pipe, fd);
        if (rc) {
            /* An initialised handle can only be released through the loop. */
            uv_close(&u->h, free_handle);
            return ACP_EIO;
        }
    }
    *s = &u->s;
    return 0;
}

/* The 1.0 size of the options (when it changes: rpc/lasterr.h). */
#define ACP_TRANSPORT_OPTS_SIZE_1_0 ACP_STRUCT_SIZE_AT(acp_transport_opts, close_timeout_ms)

static int read_opts(acp_transport_opts *o, const acp_transport_opts *opts)
{
    return acp_struct_read(o, sizeof *o, ACP_TRANSPORT_OPTS_SIZE_1_0, opts, "acp_transport_opts");
}

/* opts: the library's copy (read_opts). */
static int setup(uv_loop_t *loop, acp_conn *conn, const acp_transport_opts *opts,
                 acp_transport **out)
{
    /* Zeroed but for the read buffer, which is written before it is read: clearing its 64 KiB
     * was 2.5% of an agent's whole start (a recycled heap block is cleared, a fresh one not). */
    acp_transport *t = malloc(sizeof *t);
    if (!t) return ACP_ENOMEM;
    memset(t, 0, offsetof(acp_transport, rbuf));
    t->loop = loop;
    t->conn = conn;
    t->o = *opts;
    if (!t->o.high_water) t->o.high_water = DEFAULT_HIGH_WATER;
    t->in_fd = t->out_fd = t->spare[0] = t->spare[1] = -1;
    uv_prepare_init(loop, &t->prepare);
    uv_timer_init(loop, &t->retry);
    t->prepare.data = t->retry.data = t;
    *out = t;
    return 0;
}

static void start(acp_transport *t)
{
    if (t->in) {
        t->in->data = t;
        if (uv_read_start(t->in, on_alloc, on_read) != 0) {
            t->eof = true;
            acp_conn_eof(t->conn);
        }
    }
    if (t->out) t->out->data = t;
    t->open_handles = 2 + (t->in != NULL) + (t->out && t->out != t->in);
    uv_prepare_start(&t->prepare, on_prepare);
    if (!t->in) file_read_next(t);
}

/* Releases an end that did not become part of a transport: a stream owns its fd. */
static void release_end(uv_stream_t *s, int fd)
{
    if (s)
        uv_close((uv_handle_t *)s, free_handle);
    else if (fd >= 0)
        close(fd);
}

/* Our own descriptor for fd. libuv makes stream fds non-blocking, a flag of the open file
 * description, which a dup shares with the original and thus with everyone else holding it:
 * stderr when it is the same pipe as stdout (2>&1), the parent shell. A pipe reopened through
 * /proc is a new description of the same pipe, so the flag stays ours; other kinds fall back
 * to a dup. */
static int own_fd(int fd, int mode)
{
    struct stat st;
    if (mode != O_RDWR && fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode)) {
        char path[64];
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        /* O_NONBLOCK: opening a pipe end blocks until the other end is open, forever
         * if it has already been closed. */
        int r = open(path, mode | O_CLOEXEC | O_NONBLOCK);
        if (r >= 0) return r;
    }
    return fcntl(fd, F_DUPFD_CLOEXEC, 3);
}

int acp_transport_open(uv_loop_t *loop, acp_conn *conn, int in_fd, int out_fd,
                       const acp_transport_opts *opts, acp_transport **out)
{
    *out = NULL;
    acp_transport_opts o;
    int rc = read_opts(&o, opts);
    if (rc) return rc;
    bool same = in_fd == out_fd;
    int fi = own_fd(in_fd, same ? O_RDWR : O_RDONLY);
    int fo = same ? fi : own_fd(out_fd, O_WRONLY);
    uv_stream_t *si = NULL, *so = NULL;
    acp_transport *t = NULL;
    int spare[2] = {-1, -1};
    rc = ACP_EIO;
    if (fi < 0 || fo < 0) goto fail;
    if ((rc = open_end(loop, fi, true, &si, &spare[0]))) goto fail;
    if (fo == fi)
        so = si;
    else if ((rc = open_end(loop, fo, false, &so, &spare[1])))
        goto fail;
    if ((rc = setup(loop, conn, &o, &t))) goto fail;
    t->in = si;
    t->out = so;
    if (!si) t->in_fd = fi;
    if (!so) t->out_fd = fo;
    t->spare[0] = spare[0];
    t->spare[1] = spare[1];
    start(t);
    *out = t;
    return 0;
fail:
    release_end(si, fi);
    if (fo != fi) release_end(so, fo);
    for (int i = 0; i < 2; i++)
        if (spare[i] >= 0) close(spare[i]);
    return acp_error_set(rc, "cannot carry a connection on fds %d and %d: %s", in_fd, out_fd,
                         rc == ACP_EINVAL ? "not a pipe, socket, terminal or file"
                                          : acp_strerror(rc));
}

int acp_transport_open_proc(uv_loop_t *loop, acp_conn *conn, acp_proc *p,
                            const acp_transport_opts *opts, acp_transport **out)
{
    *out = NULL;
    acp_transport_opts o;
    int rc = read_opts(&o, opts);
    if (rc) return rc;
    uv_stream_t *child_in, *child_out;
    if ((rc = acp_proc_take_stdio(p, &child_in, &child_out)))
        return acp_error_set(rc, "a transport needs the process's stdin and stdout piped, "
                                 "stdout not read by on_stdout, and the process not stopping");
    if ((rc = setup(loop, conn, &o, out))) {
        uv_close((uv_handle_t *)child_in, free_handle);
        uv_close((uv_handle_t *)child_out, free_handle);
        return acp_error_set(rc, "out of memory making a transport");
    }
    (*out)->in = child_out;
    (*out)->out = child_in;
    start(*out);
    return 0;
}

/* --- state and closing -------------------------------------------------------------- */

size_t acp_transport_queued(const acp_transport *t)
{
    return acp_conn_out_len(t->conn) + t->inflight;
}

bool acp_transport_writable(acp_transport *t)
{
    if (t->write_failed) return true; /* output is discarded: nothing accumulates */
    if (acp_transport_queued(t) < t->o.high_water) return true;
    t->full = true;
    return false;
}

void acp_transport_flush(acp_transport *t)
{
    if (!t->closing) flush(t);
}

static void maybe_finish(acp_transport *t)
{
    if (t->handles_closed || t->writes > 0 || t->fs_reading) return;
    t->handles_closed = true;
    uv_timer_stop(&t->retry);
    if (t->in) uv_close((uv_handle_t *)t->in, on_stream_closed);
    if (t->out && t->out != t->in) uv_close((uv_handle_t *)t->out, on_stream_closed);
    if (t->in_fd >= 0) close(t->in_fd);
    if (t->out_fd >= 0 && t->out_fd != t->in_fd) close(t->out_fd);
    for (int i = 0; i < 2; i++)
        if (t->spare[i] >= 0) close(t->spare[i]);
    uv_close((uv_handle_t *)&t->prepare, on_handle_closed);
    uv_close((uv_handle_t *)&t->retry, on_handle_closed);
}

/* The peer did not take our last output in time: closing the stream cancels the writes. */
static void on_close_timeout(uv_timer_t *tm)
{
    acp_transport *t = tm->data;
    t->writes = 0;
    maybe_finish(t);
}

void acp_transport_close(acp_transport *t, void (*done)(void *user), void *user)
{
    if (t->closing) return;
    t->closing = true;
    t->done = done;
    t->done_user = user;
    flush(t);
    if (t->in && !t->eof) uv_read_stop(t->in);
    uv_prepare_stop(&t->prepare);
    uv_timer_stop(&t->retry);
    if (t->fs_reading) uv_cancel((uv_req_t *)&t->fs_req);
    if (t->writes > 0 && t->o.close_timeout_ms)
        uv_timer_start(&t->retry, on_close_timeout, t->o.close_timeout_ms, 0);
    maybe_finish(t);
}
