/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target over the MCP client (mcp/set.c and the stdio transport): whatever an MCP
 * server writes to its stdout and stderr. A set with one stdio server is created as the agent
 * does; the server's replies are the fuzz input. Never a crash, a leak or a handle left open;
 * every line we send the server is valid JSON; and the header's promise that on_log never
 * carries an env value is checked: the server's env holds a secret, and no log line may
 * contain it, whatever the server prints or answers.
 *
 * No process is started: acp_proc_spawn, acp_transport_open_proc, acp_transport_close and
 * acp_proc_stop are wrapped at link time (-Wl,--wrap=...) so the stdio transport gets a fake
 * process whose stdin is the connection's output (read here) and whose stdout and stderr are
 * the input. Once the server is READY a tool call and a roots change are made, so replies to
 * those (ids in order: 0 initialize, 1 tools/list, 2 tools/call) reach their handlers too.
 *
 * Input: byte 0 picks the piece size and whether the call is cancelled and the server's
 * stdout ends before the close; the rest is stdout, then (after the first NUL byte, if any)
 * stderr. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp/mcp.h"
#include "acp/rt.h"
#include "fuzz/check_output.h"

#define SECRET "sekrit-Value-42"

/* The fake process of the current input (the target runs one input at a time). */
static struct fake {
    acp_proc_opts po;
    acp_transport_opts to;
    acp_conn *conn;
    int spawns;
} F;
static char fake_proc, fake_tr; /* addresses used as handles; never dereferenced */

int __wrap_acp_proc_spawn(uv_loop_t *loop, const acp_proc_opts *o, acp_proc **out, char **errmsg)
{
    if (errmsg) *errmsg = NULL;
    if (F.spawns++) { /* one server, one start */
        if (errmsg) *errmsg = strdup("fake: already started");
        return ACP_EIO;
    }
    F.po = *o;
    *out = (acp_proc *)&fake_proc;
    return 0;
}

int __wrap_acp_transport_open_proc(uv_loop_t *loop, acp_conn *conn, acp_proc *p,
                                   const acp_transport_opts *opts, acp_transport **out)
{
    if (p != (acp_proc *)&fake_proc) abort();
    F.conn = conn;
    F.to = *opts;
    *out = (acp_transport *)&fake_tr;
    return 0;
}

void __wrap_acp_transport_close(acp_transport *t, void (*done)(void *user), void *user)
{
    if (t != (acp_transport *)&fake_tr) abort();
    F.conn = NULL;
    if (done) done(user);
}

void __wrap_acp_proc_stop(acp_proc *p, unsigned grace_ms, void (*done)(void *user), void *user)
{
    if (p != (acp_proc *)&fake_proc) abort();
    /* A stopped proc calls nothing after done; this one is done at once. */
    F.po.on_stderr = NULL;
    F.po.on_exit = NULL;
    if (done) done(user);
}

typedef struct fz {
    acp_mcp_set *set;
    acp_mcp_call *call;
    bool called, closed;
    size_t logs;
} fz;

static void on_log(const char *name, const char *line, void *user)
{
    if (strstr(line, SECRET) || strstr(name, SECRET)) abort(); /* a secret reached the log */
    if (getenv("ACP_FUZZ_TRACE")) fprintf(stderr, "log %s: %s\n", name, line);
    ((fz *)user)->logs++;
}

static void on_progress(acp_mcp_call *c, double progress, double total, const char *message,
                        void *user)
{
}

static void on_done(acp_mcp_call *c, int status, const json_t *result, const char *error,
                    void *user)
{
    fz *z = user;
    if (z->call != c && z->call) abort();
    if ((status == 0) != (result != NULL) || (status && !error)) abort();
    z->call = NULL;
}

static void closed(void *user)
{
    ((fz *)user)->closed = true;
}

/* What we sent the server: every line valid JSON. */
static void drain(void)
{
    if (!F.conn) return;
    fuzz_check_output(F.conn);
}

/* Once READY: call the first tool (or "t") and change the roots. */
static void use(fz *z)
{
    if (z->called || acp_mcp_server_status(z->set, 0, NULL) != ACP_MCP_READY) return;
    z->called = true;
    const char *tool = acp_mcp_tool_count(z->set, 0) ? acp_mcp_tool_name(z->set, 0, 0) : "t";
    for (size_t t = 0; t < acp_mcp_tool_count(z->set, 0); t++) {
        (void)acp_mcp_tool_description(z->set, 0, t);
        (void)acp_mcp_tool_input_schema(z->set, 0, t);
    }
    acp_mcp_call_cbs cbs = {
        .struct_size = sizeof(acp_mcp_call_cbs), .on_progress = on_progress, .on_done = on_done};
    if (acp_mcp_call_tool(z->set, "srv", tool, json_pack("{si}", "n", 1), &cbs, z, &z->call))
        z->call = NULL;
    const char *roots[] = {"/fuzz", "/fuzz2"};
    acp_mcp_set_roots(z->set, roots, 2);
}

static void step(uv_loop_t *loop, fz *z)
{
    uv_run(loop, UV_RUN_NOWAIT);
    drain();
    use(z);
    drain();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) return 0;
    memset(&F, 0, sizeof F);
    uv_loop_t loop;
    if (uv_loop_init(&loop)) abort();
    fz z = {0};
    json_t *servers =
        json_pack("[{ss ss s[s] s[{ss ss}]}]", "name", "srv", "command", "/fuzz/server", "args",
                  "--stdio", "env", "name", "TOKEN", "value", SECRET);
    acp_mcp_opts mo = {.struct_size = sizeof(acp_mcp_opts),
                       .connect_timeout_ms = 600000,
                       .on_log = on_log,
                       .user = &z};
    const char *roots[] = {"/fuzz"};
    if (acp_mcp_set_new(&loop, servers, &mo, roots, 1, &z.set)) abort();
    json_decref(servers);
    step(&loop, &z);

    const char *in = (const char *)data + 1;
    size_t n = size - 1, nout = n;
    const char *nul = memchr(in, '\0', n);
    if (nul) nout = (size_t)(nul - in);
    const char *errs = nul ? nul + 1 : in + n;
    size_t nerr = nul ? n - nout - 1 : 0;
    size_t piece = (size_t)(data[0] >> 2) % 41 + 1;
    for (size_t i = 0, j = 0; i < nout || j < nerr; i += piece, j += piece) {
        if (i < nout && F.conn) acp_conn_recv(F.conn, in + i, nout - i < piece ? nout - i : piece);
        if (j < nerr && F.po.on_stderr)
            F.po.on_stderr((acp_proc *)&fake_proc, errs + j, nerr - j < piece ? nerr - j : piece,
                           F.po.user);
        step(&loop, &z);
    }
    if ((data[0] & 1) && z.call) acp_mcp_call_cancel(z.call);
    step(&loop, &z);
    if ((data[0] & 2) && F.conn) { /* the server's stdout ends, then it exits */
        acp_conn_eof(F.conn);
        if (F.to.on_eof) F.to.on_eof((acp_transport *)&fake_tr, F.to.user);
        if (F.po.on_exit) F.po.on_exit((acp_proc *)&fake_proc, 3, 0, F.po.user);
        step(&loop, &z);
    }
    acp_mcp_set_close(z.set, closed, &z);
    for (int i = 0; i < 1000 && !z.closed; i++) uv_run(&loop, UV_RUN_ONCE);
    if (!z.closed || z.call) abort();
    uv_run(&loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&loop)) abort();
    return 0;
}
