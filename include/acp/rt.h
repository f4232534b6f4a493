/* SPDX-License-Identifier: Apache-2.0 */
/* The libuv runtime: an acp_conn bound to a byte stream (acp_transport), peer processes
 * spawned with pipes in their own process group (acp_proc), and a reaper for the orphans they
 * leave (acp_reaper). docs/processes.md tells which process is killed when, and why.
 *
 * Everything here runs on one uv_loop_t, from one thread. Nothing in rt writes to stdout: a
 * transport on fd 1 is the only writer there. Callbacks may call any function of this header,
 * including the close/stop of the object that called them (the object is freed later, from
 * a libuv close callback, never under the caller's feet).
 *
 * SIGPIPE: the library leaves signal dispositions alone. Programs should ignore SIGPIPE
 * (signal(SIGPIPE, SIG_IGN)); a write that fails with EPIPE is then treated as end of input.
 *
 * Errors: a negative ACP_E* status, with the sentence in acp_error_last() (acp/error.h); a
 * process's end reports through on_exit, a transport's through its callbacks. */
#ifndef ACP_RT_H
#define ACP_RT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "acp/error.h"
#include "acp/rpc.h"

#include "acp/api.h"

ACP_BEGIN_DECLS

/* --- Transport ----------------------------------------------------------------------- */

typedef struct acp_transport acp_transport;

/* Extensible (acp/api.h): start from ACP_TRANSPORT_OPTS_INIT. */
typedef struct acp_transport_opts {
    size_t struct_size; /* sizeof(acp_transport_opts): ACP_TRANSPORT_OPTS_INIT sets it */
    /* Bytes queued for writing (connection output + writes in flight) at or above which
     * acp_transport_writable() is false. 0 means 4 MiB. */
    size_t high_water;
    /* Called once per loop turn, just before the output produced during that turn is written
     * (from a uv_prepare handle), only when there is output. The agent commits its store
     * batch here, so what leaves was committed. Non-zero keeps the output queued; it is
     * retried on a later turn (a short timer makes sure there is one). */
    int (*before_flush)(acp_transport *t, void *user);
    /* The queue fell below high_water / 2 after acp_transport_writable() had become false. */
    void (*on_drain)(acp_transport *t, void *user);
    /* Input ended (peer closed, read error, or a write failed with EPIPE and the like).
     * acp_conn_eof() was already called. Called at most once. */
    void (*on_eof)(acp_transport *t, void *user);
    void *user;
    /* How long acp_transport_close() waits for a peer that stopped reading before it drops
     * what is still queued. 0: as long as it takes. */
    unsigned close_timeout_ms;
} acp_transport_opts;
#define ACP_TRANSPORT_OPTS_INIT ACP_STRUCT_INIT(acp_transport_opts)

/* Binds conn (borrowed: it must outlive the transport, i.e. until the close's done callback)
 * to in_fd and out_fd, which may be the same number. The fds are borrowed too: the transport
 * works on duplicates (close-on-exec) that it closes itself, so fd 0 and 1 stay valid for the
 * caller. Pipes, sockets, TTYs, regular files and character devices like /dev/null work.
 * opts may be NULL; it is copied. The transport keeps the loop alive until it is closed.
 * Returns 0 and *out (owned by the caller; release with acp_transport_close()), or ACP_EIO
 * (an fd is unusable), ACP_EINVAL (struct_size 0 or too small, acp/api.h), ACP_ENOTSUP (opts
 * from a newer libacp setting members this one does not know), ACP_ENOMEM. */
int acp_transport_open(uv_loop_t *loop, acp_conn *conn, int in_fd, int out_fd,
                       const acp_transport_opts *opts, acp_transport **out);

/* False once the queue reached high_water; on_drain then follows when it falls below half. */
bool acp_transport_writable(acp_transport *t);
/* Bytes not yet written: the connection's output buffer plus writes in flight. */
size_t acp_transport_queued(const acp_transport *t);
/* Starts writing the connection's output now (normally done once per loop turn). Runs
 * before_flush first, like the automatic flush. */
void acp_transport_flush(acp_transport *t);
/* Stops reading, writes what the connection has queued (until a write error, or
 * close_timeout_ms), then closes the transport's descriptors and frees it; done (may be NULL)
 * runs after that, from the loop. Output the connection produces after this call is
 * discarded. Call once. */
void acp_transport_close(acp_transport *t, void (*done)(void *user), void *user);

/* --- Processes ----------------------------------------------------------------------- */

typedef struct acp_proc acp_proc;

/* Extensible (acp/api.h): start from ACP_PROC_OPTS_INIT. */
typedef struct acp_proc_opts {
    size_t struct_size;  /* sizeof(acp_proc_opts): ACP_PROC_OPTS_INIT sets it */
    const char *file;    /* program; searched in the child's PATH when it has no '/' */
    char *const *argv;   /* NULL-terminated, argv[0] included */
    char *const *env;    /* these "K=V" strings, NULL-terminated; NULL inherits ours. Either
                          * way ACP_PROC_TAG gains the proc's tag (see acp_proc_spawn) */
    const char *cwd;     /* NULL: inherit */
    bool pipe_stdin;     /* else /dev/null */
    bool pipe_stdout;    /* for a transport or on_stdout; else /dev/null */
    bool pipe_stderr;    /* delivered to on_stderr; else see inherit_stderr */
    bool inherit_stderr; /* when !pipe_stderr: share our fd 2 (else /dev/null) */
    /* Bytes the child wrote (borrowed, valid during the call). on_stdout set: the proc reads
     * stdout itself (a terminal command); unset: stdout is left for a transport. */
    void (*on_stdout)(acp_proc *p, const char *buf, size_t n, void *user);
    void (*on_stderr)(acp_proc *p, const char *buf, size_t n, void *user);
    /* The child (the group leader) exited: exit_status, or term_signal when it was killed
     * (exit_status -1: someone else's waitpid() took the status). By then whatever remained
     * of its process group, and every process carrying its tag, has been sent SIGKILL, so no
     * helper (npx -> node, a daemon it forked) outlives it, and the pipes the proc reads
     * (on_stdout, on_stderr) have reached EOF (or 2 s passed): all its output was delivered
     * before this. The proc still has to be released with acp_proc_stop(). */
    void (*on_exit)(acp_proc *p, int64_t exit_status, int term_signal, void *user);
    void *user;
} acp_proc_opts;
#define ACP_PROC_OPTS_INIT ACP_STRUCT_INIT(acp_proc_opts)

/* Spawns the child in a new session (so its own process group, pgid == pid), with
 *   - PR_SET_PDEATHSIG SIGKILL (Linux): it is killed when the thread that called this ends,
 *     the process dying included. Spawn from the thread that runs the loop, and keep that
 *     thread until the proc is stopped.
 *   - a tag: 32 random hex digits appended to the space-separated list in the environment
 *     variable ACP_PROC_TAG. Descendants inherit it whatever group or session they move to;
 *     the proc finds them by it in /proc/PID/environ and signals them with its group. One
 *     that clears its environment is out of reach (acp_reaper catches it at exit).
 * The strings in opts are used during the call only; opts itself is copied. Returns 0 and
 * *out (owned by the caller; release with acp_proc_stop()), or ACP_ENOTFOUND (no such
 * program), ACP_EACCES (not executable), ACP_EIO (other spawn failures), ACP_EINVAL (also a
 * struct_size 0 or too small, acp/api.h), ACP_ENOTSUP (opts from a newer libacp), ACP_ENOMEM;
 * then acp_error_last() is a sentence naming the command: "cannot run 'npx': no such file or
 * directory".
 *
 * The child is reaped on the proc's own SIGCHLD watcher, by its pid: a program must not
 * waitpid(-1) (or ignore SIGCHLD) while procs run, just as with libuv's processes. */
int acp_proc_spawn(uv_loop_t *loop, const acp_proc_opts *opts, acp_proc **out);

int acp_proc_pid(const acp_proc *p);
bool acp_proc_exited(const acp_proc *p);

/* Binds conn to the child's stdin and stdout, which must both be piped. The two pipes move
 * from the proc into the transport: closing the transport closes them (the child sees EOF on
 * its stdin). The proc must not be stopped before the transport is closed, or at the same
 * time (acp_proc_stop() then leaves the pipes to the transport). Otherwise like
 * acp_transport_open(). */
int acp_transport_open_proc(uv_loop_t *loop, acp_conn *conn, acp_proc *p,
                            const acp_transport_opts *opts, acp_transport **out);

/* Teardown, and the only way to free a proc (also after on_exit): closes the child's stdin
 * (unless a transport owns it), waits grace_ms for it to exit, sends SIGTERM to its process
 * group and every process carrying its tag, waits grace_ms again, then SIGKILL to the same:
 * nothing of the child outlives 2 * grace_ms after this call (plus the few milliseconds a
 * /proc scan takes). Once the leader has exited, the rest was killed and on_exit was called,
 * every handle is closed, the proc is freed and done (may be NULL) runs, from the loop.
 * on_stdout, on_stderr and on_exit may still be called before done. Call once. */
void acp_proc_stop(acp_proc *p, unsigned grace_ms, void (*done)(void *user), void *user);

/* --- Orphans ------------------------------------------------------------------------------ */

/* A program-wide decision, so the program makes it (acp-agent and acp do): the process
 * becomes a child subreaper (Linux PR_SET_CHILD_SUBREAPER), so a descendant whose parent dies
 * (a double-forked daemon, an MCP server's helper) is re-parented to us instead of to init:
 * it stays in our tree, the reaper reaps it when it exits, and acp_reaper_close() kills it.
 *
 * It reaps, from SIGCHLD, every child of the process that exits except acp_procs' (which
 * reap their own) and libuv processes (uv_spawn) of this loop. So start it only in a program
 * that waits for no other children itself (no fork()ed helpers of its own, no libuv
 * processes on other loops). The watcher does not keep the loop alive.
 *
 * Returns 0 and *out (release with acp_reaper_close()), ACP_ENOTSUP where the kernel has no
 * subreapers, ACP_EIO if the kernel refused, ACP_ENOMEM. */
typedef struct acp_reaper acp_reaper;
int acp_reaper_start(uv_loop_t *loop, acp_reaper **out);

/* At program end, after the procs were stopped: SIGKILLs every orphan still with us (and the
 * orphans that leaves), reaping them, for up to a second (blocking); ends the subreaper role;
 * done (may be NULL) runs from the loop once the reaper is freed. r may be NULL. */
void acp_reaper_close(acp_reaper *r, void (*done)(void *user), void *user);

ACP_END_DECLS
#endif
