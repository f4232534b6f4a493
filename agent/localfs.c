/* SPDX-License-Identifier: Apache-2.0 */
/* An engine's reads and writes of its own disk (acp_turn_read_local_file and
 * acp_turn_write_local_file): acp_roots_read and acp_roots_write on libuv's thread pool, so
 * that a large file or a slow disk never holds up the loop, and with it every other session
 * of a --listen server. A job owns a copy of the session's roots and the data it writes; when
 * its turn ends first, the job is orphaned: it finishes and calls nobody. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/internal.h"
#include "rpc/lasterr.h"
#include "rt/fsio.h"

struct lfs_job {
    uv_work_t work;
    acp_turn *t; /* NULL once the turn ended */
    lfs_job *next;
    rt_fsio io;
    char *data; /* a write's bytes (ours) */
    acp_fs_read_cb read;
    acp_done_cb done;
    void *user;
};

static void job_run(uv_work_t *w)
{
    rt_fsio_run(&((lfs_job *)w->data)->io);
}

static void job_free(lfs_job *j)
{
    rt_fsio_free(&j->io);
    free(j->data);
    free(j);
}

static void job_done(uv_work_t *w, int status)
{
    lfs_job *j = w->data;
    acp_turn *t = j->t;
    if (t) {
        for (lfs_job **p = &t->files; *p; p = &(*p)->next)
            if (*p == j) {
                *p = j->next;
                break;
            }
        const char *err = j->io.status ? j->io.msg : "";
        if (j->read)
            j->read(t->s, j->io.status, j->io.text ? j->io.text : "", j->io.tn, err, j->user);
        else if (j->done)
            j->done(t->s, j->io.status, err, j->user);
    }
    job_free(j);
}

void localfs_turn_free(acp_turn *t)
{
    for (lfs_job *j = t->files; j; j = j->next) j->t = NULL;
    t->files = NULL;
}

/* Queues the job for t, or frees it and says why not. */
static int job_start(acp_turn *t, lfs_job *j, const char *path)
{
    acp_session *s = t->s;
    int rc = rt_fsio_init(&j->io, s->roots, path);
    j->work.data = j;
    if (!rc) rc = uv_queue_work(s->a->loop, &j->work, job_run, job_done) ? ACP_ENOMEM : 0;
    if (rc) {
        job_free(j);
        return acp_error_code(rc);
    }
    j->t = t;
    j->next = t->files;
    t->files = j;
    return 0;
}

int acp_turn_read_local_file(acp_turn *t, const char *path, size_t line, size_t limit,
                             acp_fs_read_cb cb, void *user)
{
    lfs_job *j = calloc(1, sizeof *j);
    if (!j) return acp_error_code(ACP_ENOMEM);
    j->io.line = line;
    j->io.limit = limit;
    j->io.max = t->s->a->opts.max_read;
    j->read = cb;
    j->user = user;
    return job_start(t, j, path);
}

int acp_turn_write_local_file(acp_turn *t, const char *path, const void *data, size_t n,
                              acp_done_cb cb, void *user)
{
    lfs_job *j = calloc(1, sizeof *j);
    if (!j || !(j->data = malloc(n ? n : 1))) {
        free(j);
        return acp_error_code(ACP_ENOMEM);
    }
    memcpy(j->data, data, n);
    j->io.write = true;
    j->io.data = j->data;
    j->io.n = n;
    j->done = cb;
    j->user = user;
    return job_start(t, j, path);
}
