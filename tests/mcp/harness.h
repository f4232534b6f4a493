/* SPDX-License-Identifier: Apache-2.0 */
/* Shared helpers of the MCP tests: run a loop until something happens (with a generous
 * guard against hangs, never a timing assertion), build sets from JSON text, call tools and
 * close sets synchronously, list our child processes. */
#ifndef ACP_TESTS_MCP_HARNESS_H
#define ACP_TESTS_MCP_HARNESS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <jansson.h>
#include <uv.h>

#include "acp/mcp.h"

#define GUARD_MS 120000 /* only against hangs */

static void h_guard(uv_timer_t *t)
{
    *(bool *)t->data = true;
    uv_stop(t->loop);
}

/* Before the loop would block: stop it once the flag is set (a timer callback may have set
 * it, and UV_RUN_ONCE would then sleep until the next event). */
static void h_check_flag(uv_prepare_t *p)
{
    if (*(bool *)p->data) uv_stop(p->loop);
}

/* Runs the loop until *flag is set. */
static void h_run_until(uv_loop_t *loop, bool *flag)
{
    bool hung = false;
    uv_timer_t guard;
    uv_prepare_t check;
    uv_timer_init(loop, &guard);
    uv_prepare_init(loop, &check);
    guard.data = &hung;
    check.data = flag;
    uv_timer_start(&guard, h_guard, GUARD_MS, 0);
    uv_prepare_start(&check, h_check_flag);
    while (!*flag && !hung) uv_run(loop, UV_RUN_DEFAULT);
    uv_close((uv_handle_t *)&guard, NULL);
    uv_close((uv_handle_t *)&check, NULL);
    uv_run(loop, UV_RUN_NOWAIT);
    if (hung) fail_msg("the loop did not reach the awaited event");
}

static void h_set_flag(void *user)
{
    *(bool *)user = true;
}

static char *h_fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *h_fmt(const char *f, ...)
{
    va_list ap;
    va_start(ap, f);
    char *s = NULL;
    assert_true(vasprintf(&s, f, ap) > 0);
    va_end(ap);
    return s;
}

/* Logs collected from opts.on_log, to check what was (and was not) written. */
typedef struct h_log {
    char *text;
    size_t len;
} h_log;

static void h_on_log(const char *name, const char *line, void *user)
{
    h_log *l = user;
    size_t n = strlen(name) + strlen(line) + 3;
    l->text = realloc(l->text, l->len + n + 1);
    l->len += (size_t)sprintf(l->text + l->len, "%s: %s\n", name, line);
}

static acp_mcp_set *h_open(uv_loop_t *loop, const char *servers, const acp_mcp_opts *o,
                           const char *const *roots, size_t nroots)
{
    json_error_t e;
    json_t *j = json_loads(servers, 0, &e);
    if (!j) fail_msg("bad test JSON: %s: %s", e.text, servers);
    acp_mcp_set *s = NULL;
    int rc = acp_mcp_set_new(loop, j, o, roots, nroots, &s);
    if (rc) fail_msg("acp_mcp_set_new: %d %s", rc, acp_error_last()->message);
    json_decref(j);
    return s;
}

static void h_wait(uv_loop_t *loop, acp_mcp_set *s)
{
    bool done = false;
    acp_mcp_set_wait(s, GUARD_MS, h_set_flag, &done);
    h_run_until(loop, &done);
}

static void h_close(uv_loop_t *loop, acp_mcp_set *s)
{
    bool done = false;
    acp_mcp_set_close(s, h_set_flag, &done);
    h_run_until(loop, &done);
}

/* Runs the loop dry and closes it: fails if any handle was left behind. */
static void h_loop_end(uv_loop_t *loop)
{
    uv_run(loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(loop), 0);
}

typedef struct h_call {
    bool done;
    int status;
    json_t *result;
    char *error;
    int progress;
    double last_total;
    bool cancel_on_progress;
    acp_mcp_call *handle;
    void (*on_first_progress)(struct h_call *c);
    void *user;
} h_call;

static void h_on_done(acp_mcp_call *c, int status, const json_t *result, const char *error,
                      void *user)
{
    h_call *h = user;
    h->done = true;
    h->status = status;
    h->result = result ? json_deep_copy(result) : NULL;
    h->error = error ? strdup(error) : NULL;
    h->handle = NULL;
}

static void h_on_progress(acp_mcp_call *c, double progress, double total, const char *message,
                          void *user)
{
    h_call *h = user;
    h->progress++;
    h->last_total = total;
    if (h->progress == 1 && h->on_first_progress) h->on_first_progress(h);
    if (h->cancel_on_progress && h->handle) acp_mcp_call_cancel(h->handle);
}

static const acp_mcp_call_cbs h_cbs = {
    .struct_size = sizeof(acp_mcp_call_cbs), .on_progress = h_on_progress, .on_done = h_on_done};

static void h_call_start(acp_mcp_set *s, const char *server, const char *tool, const char *args,
                         h_call *h)
{
    json_t *a = json_loads(args, 0, NULL);
    assert_non_null(a);
    assert_int_equal(acp_mcp_call_tool(s, server, tool, a, &h_cbs, h, &h->handle), 0);
}

/* Calls and waits; returns the first text content (owned by h->result) or NULL. */
static const char *h_call_sync(uv_loop_t *loop, acp_mcp_set *s, const char *server,
                               const char *tool, const char *args, h_call *h)
{
    memset(h, 0, sizeof *h);
    h_call_start(s, server, tool, args, h);
    h_run_until(loop, &h->done);
    json_t *c0 = json_array_get(json_object_get(h->result, "content"), 0);
    return json_string_value(json_object_get(c0, "text"));
}

static void h_call_clear(h_call *h)
{
    json_decref(h->result);
    free(h->error);
    h->result = NULL;
    h->error = NULL;
}

/* Open file descriptors of this process: equal before a loop starts and after it closed
 * means nothing leaked one. */
__attribute__((unused)) static int h_fd_count(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.') n++;
    if (d) closedir(d);
    return n;
}

/* libuv opens process-wide descriptors on its first spawn (the SIGCHLD pipe): spawn once
 * before counting, so h_fd_count() compares like with like. */
static void h_warm_exit(uv_process_t *p, int64_t status, int sig)
{
    uv_close((uv_handle_t *)p, NULL); /* reaped: no zombie left */
}

__attribute__((unused)) static void h_uv_warm_up(void)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    uv_process_t p;
    char *argv[] = {"/bin/true", NULL};
    uv_process_options_t o = {.file = argv[0], .args = argv, .exit_cb = h_warm_exit};
    assert_int_equal(uv_spawn(&loop, &p, &o), 0);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
}

/* The parent and process group of pid, from /proc/<pid>/stat. False when it is gone. */
__attribute__((unused)) static bool h_proc_stat(int pid, int *ppid, int *pgrp)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f) return false;
    size_t k = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[k] = 0;
    char *rp = strrchr(buf, ')'); /* the command name before it may hold anything */
    char state;
    return rp && sscanf(rp + 2, "%c %d %d", &state, ppid, pgrp) == 3;
}

/* Our direct children (pid), up to max. */
__attribute__((unused)) static size_t h_children(int *out, size_t max)
{
    size_t n = 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    int ppid, pgrp;
    while (d && (e = readdir(d)) && n < max) {
        int pid = atoi(e->d_name);
        if (pid > 0 && h_proc_stat(pid, &ppid, &pgrp) && ppid == getpid()) out[n++] = pid;
    }
    if (d) closedir(d);
    return n;
}

/* Whether any process of the group pgid still exists (zombies included). */
__attribute__((unused)) static bool h_group_alive(int pgid)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    bool alive = false;
    int ppid, pgrp;
    while (d && (e = readdir(d)) && !alive) {
        int pid = atoi(e->d_name);
        alive = pid > 0 && h_proc_stat(pid, &ppid, &pgrp) && pgrp == pgid;
    }
    if (d) closedir(d);
    return alive;
}

#endif
