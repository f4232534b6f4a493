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

struct lfs_job {
    uv_work_t work;
    acp_turn *t; /* NULL once the turn ended */
    lfs_job *next;
    acp_roots *roots;
    char *path;
    size_t line, limit, max;
    char *data; /* a write's bytes (ours), or NULL for a read */
    size_t n;
    acp_fs_read_cb read;
    acp_done_cb done;
    void *user;
    /* The result, set on the pool's thread. */
    int status;
    char *text;
    size_t tn;
    char msg[1024];
};

static void job_run(uv_work_t *w)
{
    lfs_job *j = w->data;
    j->status =
        j->data ? acp_roots_write(j->roots, j->path, j->data, j->n)
                : acp_roots_read(j->roots, j->path, j->line, j->limit, j->max, &j->text, &j->tn);
    if (j->status) snprintf(j->msg, sizeof j->msg, "%s", acp_error_last()->message);
}

static void job_free(lfs_job *j)
{
    acp_roots_free(j->roots);
    free(j->path);
    free(j->data);
    free(j->text);
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
        const char *err = j->status ? j->msg : "";
        if (j->read)
            j->read(t->s, j->status, j->text ? j->text : "", j->tn, err, j->user);
        else if (j->done)
            j->done(t->s, j->status, err, j->user);
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
    size_t n = acp_roots_count(s->roots);
    const char **dirs = calloc(n, sizeof *dirs);
    for (size_t i = 1; dirs && i < n; i++) dirs[i - 1] = acp_roots_at(s->roots, i);
    int rc = !dirs || !(j->path = strdup(path))
                 ? ACP_ENOMEM
                 : acp_roots_new(acp_roots_cwd(s->roots), dirs, n - 1, &j->roots);
    free(dirs);
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
    *j = (lfs_job){
        .line = line, .limit = limit, .max = t->s->a->opts.max_read, .read = cb, .user = user};
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
    j->n = n;
    j->done = cb;
    j->user = user;
    return job_start(t, j, path);
}
