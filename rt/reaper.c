/* SPDX-License-Identifier: Apache-2.0 */
/* acp_reaper: this process as a child subreaper, reaping and finally killing the orphans of its
 * descendants.
 *
 * Which children are ours to wait for: a zombie has lost its environment (so its tag), and an
 * orphan that arrives sends no signal, so orphans cannot be told apart by what they are, only
 * by what they are not: not an acp_proc's child (the registry, tree.h) and not a libuv process
 * of this loop (uv_walk). Both of those are waited for by their owners, by pid; waitpid(-1)
 * would steal their status, so the reaper, too, waits pid by pid. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "acp/rt.h"
#include "rpc/lasterr.h"
#include "rt/tree.h"

/* How long acp_reaper_close() waits for killed orphans to die (a process in uninterruptible
 * sleep dies only when it wakes). */
#define CLOSE_WAIT_MS 1000

struct acp_reaper {
    uv_signal_t sig;
    void (*done)(void *user);
    void *user;
};

typedef struct {
    int *v;
    size_t n, cap;
} pids;

static void add_uv_child(uv_handle_t *h, void *arg)
{
    pids *ps = arg;
    if (h->type != UV_PROCESS || !uv_is_active(h)) return;
    if (ps->n == ps->cap) {
        size_t cap = ps->cap ? ps->cap * 2 : 8;
        int *v = realloc(ps->v, cap * sizeof *v);
        if (!v) return;
        ps->v = v;
        ps->cap = cap;
    }
    ps->v[ps->n++] = uv_process_get_pid((uv_process_t *)h);
}

/* Reaps every orphan that has exited (after SIGKILL when kill_all). Returns how many orphans
 * there were. */
static int pass(acp_reaper *r, bool kill_all)
{
    pids uvp = {0};
    uv_walk(r->sig.loop, add_uv_child, &uvp);
    int *kids;
    int n = rt_list_children(&kids), orphans = 0;
    rt_children_lock();
    for (int i = 0; i < n; i++) {
        bool theirs = rt_children_has(kids[i]);
        for (size_t j = 0; j < uvp.n && !theirs; j++) theirs = uvp.v[j] == kids[i];
        if (theirs) continue;
        orphans++;
        if (kill_all) kill(kids[i], SIGKILL);
        pid_t w;
        do w = waitpid(kids[i], NULL, WNOHANG);
        while (w < 0 && errno == EINTR);
    }
    rt_children_unlock();
    free(kids);
    free(uvp.v);
    return orphans;
}

static void on_sigchld(uv_signal_t *h, int signum)
{
    pass(h->data, false);
}

int acp_reaper_start(uv_loop_t *loop, acp_reaper **out)
{
    *out = NULL;
#ifdef __linux__
    if (prctl(PR_SET_CHILD_SUBREAPER, 1))
        return acp_error_set(ACP_EIO, "cannot become a child subreaper: %s", strerror(errno));
#else
    return acp_error_set(ACP_ENOTSUP, "child subreapers are a Linux feature");
#endif
    acp_reaper *r = calloc(1, sizeof *r);
    if (!r) return acp_error_set(ACP_ENOMEM, "out of memory starting the reaper");
    uv_signal_init(loop, &r->sig);
    r->sig.data = r;
    uv_signal_start(&r->sig, on_sigchld, SIGCHLD);
    uv_unref((uv_handle_t *)&r->sig);
    pass(r, false); /* orphans that came before the watcher */
    *out = r;
    return 0;
}

static void closed(uv_handle_t *h)
{
    acp_reaper *r = h->data;
    void (*done)(void *) = r->done;
    void *user = r->user;
    free(r);
    if (done) done(user);
}

void acp_reaper_close(acp_reaper *r, void (*done)(void *user), void *user)
{
    if (!r) return;
    /* Killing an orphan orphans its own children, which come to us in turn: repeat until a
     * pass finds no orphan at all, or the time is up. */
    uint64_t until = uv_hrtime() + (uint64_t)CLOSE_WAIT_MS * 1000000;
    while (pass(r, true) && uv_hrtime() < until) {
        struct timespec ts = {0, 2 * 1000000};
        nanosleep(&ts, NULL);
    }
#ifdef __linux__
    prctl(PR_SET_CHILD_SUBREAPER, 0);
#endif
    r->done = done;
    r->user = user;
    uv_close((uv_handle_t *)&r->sig, closed);
}
