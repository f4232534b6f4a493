/* SPDX-License-Identifier: Apache-2.0 */
/* The stdio transport: the server is a child process in its own process group speaking
 * NDJSON on its stdin/stdout (rt's acp_proc + acp_transport). Its stderr goes to the log,
 * line by line, bounded, with secret values scrubbed. */
#include <stdlib.h>
#include <string.h>

#include "acp/rt.h"
#include "mcp/internal.h"

#define STDERR_LINE_MAX   4096 /* longer lines are cut */
#define STDERR_BURST      200  /* lines logged at once; beyond, they are only counted ... */
#define STDERR_PER_SECOND 10   /* ... until the budget refills at this rate */

typedef struct stdio_tp {
    acp_proc *proc;
    acp_transport *tr;
    acp_buf line;
    bool cut;      /* the current line exceeded STDERR_LINE_MAX */
    double budget; /* lines that may be logged now */
    uint64_t refilled_ms;
    size_t dropped; /* lines not logged since the last one that was */
    int pending;    /* teardown steps not finished */
    bool eof;       /* the reason given was the end of its stdout */
} stdio_tp;

/* A chatty server must not flood the agent's log: a token bucket, and a count of what it
 * held back. */
static void log_line(mcp_server *s, stdio_tp *t)
{
    uint64_t now = uv_now(s->loop);
    t->budget += (double)(now - t->refilled_ms) * STDERR_PER_SECOND / 1000.0;
    if (t->budget > STDERR_BURST) t->budget = STDERR_BURST;
    t->refilled_ms = now;
    if (t->budget < 1) {
        t->dropped++;
    } else if (acp_buf_cstr(&t->line)) {
        if (t->dropped) mcp_server_log(s, "%zu more stderr lines not shown", t->dropped);
        t->dropped = 0;
        mcp_server_log(s, "stderr: %s%s", t->line.data, t->cut ? " [cut]" : "");
        t->budget -= 1;
    }
    t->line.len = 0;
    t->cut = false;
}

static void on_stderr(acp_proc *p, const char *buf, size_t n, void *user)
{
    mcp_server *s = user;
    stdio_tp *t = s->tp;
    for (size_t i = 0; i < n; i++) {
        if (buf[i] == '\n') {
            log_line(s, t);
        } else if (t->line.len < STDERR_LINE_MAX) {
            acp_buf_putc(&t->line, buf[i]);
        } else {
            t->cut = true;
        }
    }
}

static void on_exit_cb(acp_proc *p, int64_t status, int sig, void *user)
{
    mcp_server *s = user;
    stdio_tp *t = s->tp;
    if (t && t->eof && s->status == ACP_MCP_FAILED) {
        if (sig)
            mcp_server_amend(s, "the server was killed by signal %d", sig);
        else
            mcp_server_amend(s, "the server exited with status %lld", (long long)status);
    } else if (sig) {
        mcp_server_fail(s, "the server was killed by signal %d", sig);
    } else {
        mcp_server_fail(s, "the server exited with status %lld", (long long)status);
    }
}

/* Usually the exit follows at once and on_exit_cb gives the precise reason. */
static void on_eof(acp_transport *tr, void *user)
{
    mcp_server *s = user;
    bool fresh = s->status == ACP_MCP_CONNECTING || s->status == ACP_MCP_READY;
    mcp_server_fail(s, "the server closed its stdout");
    if (fresh && s->tp) ((stdio_tp *)s->tp)->eof = true;
}

static void start(mcp_server *s)
{
    stdio_tp *t = calloc(1, sizeof *t);
    if (!t) {
        mcp_server_fail(s, "out of memory");
        return;
    }
    s->tp = t;
    t->budget = STDERR_BURST;
    t->refilled_ms = uv_now(s->loop);
    acp_proc_opts po = {.struct_size = sizeof(acp_proc_opts),
                        .file = s->command,
                        .argv = s->argv,
                        .env = s->env,
                        .pipe_stdin = true,
                        .pipe_stdout = true,
                        .pipe_stderr = true,
                        .on_stderr = on_stderr,
                        .on_exit = on_exit_cb,
                        .user = s};
    if (acp_proc_spawn(s->loop, &po, &t->proc)) {
        t->proc = NULL;
        mcp_server_fail(s, "%s", acp_error_last()->message);
        return;
    }
    acp_transport_opts to = {
        .struct_size = sizeof(acp_transport_opts), .on_eof = on_eof, .user = s};
    if (acp_transport_open_proc(s->loop, s->conn, t->proc, &to, &t->tr)) {
        t->tr = NULL;
        mcp_server_fail(s, "cannot attach to the server's pipes");
        return;
    }
    mcp_server_open(s);
}

static void step_done(void *user)
{
    mcp_server *s = user;
    stdio_tp *t = s->tp;
    if (--t->pending > 0) return;
    if (t->line.len) log_line(s, t);
    if (t->dropped) mcp_server_log(s, "%zu more stderr lines not shown", t->dropped);
    acp_buf_free(&t->line);
    free(t);
    s->tp = NULL;
    mcp_server_stopped(s);
}

static void stop(mcp_server *s)
{
    stdio_tp *t = s->tp;
    if (!t) {
        mcp_server_stopped(s);
        return;
    }
    t->pending = 1; /* held while the steps start */
    if (t->tr) {
        t->pending++;
        acp_transport_close(t->tr, step_done, s);
    }
    if (t->proc) {
        t->pending++;
        acp_proc_stop(t->proc, mcp_server_grace_ms(s), step_done, s);
    }
    step_done(s);
}

const mcp_transport_ops mcp_stdio_ops = {.start = start, .stop = stop};
