/* SPDX-License-Identifier: Apache-2.0 */
/* fs/read_text_file and fs/write_text_file, confined to the session's root set by
 * acp_roots_read and acp_roots_write (the kernel refuses a link swapped in after the check;
 * writes replace the file atomically; only regular files; reads bounded by opts.max_read).
 *
 * The file I/O runs on libuv's thread pool, never on the loop: a slow disk or a large file
 * must not stop the client from answering anything else, a signal included. Each job owns a
 * copy of the session's roots (the session may close meanwhile) and the request until it
 * answers; acp_client_free() orphans the jobs still running, which then answer nothing. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "client/internal.h"
#include "rt/fsio.h"

typedef struct fs_job {
    uv_work_t work;
    acp_client *c; /* NULL once the client is freed */
    struct fs_job *next;
    acp_req *req;
    rt_fsio io;
    json_t *content; /* a write's text (a reference: req may go with the client) */
} fs_job;

static void job_run(uv_work_t *w)
{
    rt_fsio_run(&((fs_job *)w->data)->io);
}

static void job_answer(fs_job *j)
{
    acp_client *c = j->c;
    acp_req *req = j->req;
    int status = j->io.status;
    if (status) {
        int code = status == ACP_ENOTFOUND                     ? ACP_RPC_NOT_FOUND
                   : status == ACP_EIO || status == ACP_ENOMEM ? ACP_RPC_INTERNAL_ERROR
                                                               : ACP_RPC_INVALID_PARAMS;
        acp_client_refuse(c, req, code, "%s", j->io.msg);
        return;
    }
    if (j->content) {
        acp_req_reply(req, NULL);
        return;
    }
    acp_buf tmp = {0};
    if (acp_json_escape(&tmp, j->io.text, j->io.tn)) {
        acp_client_refuse(c, req, ACP_RPC_INVALID_PARAMS, "'%s' is not UTF-8 text", j->io.path);
    } else {
        acp_jw *w = acp_req_reply_begin(req);
        acp_jw_obj(w);
        acp_jw_key(w, "content");
        acp_jw_raw(w, tmp.data, tmp.len);
        acp_jw_obj_end(w);
        acp_req_reply_end(req);
    }
    acp_buf_free(&tmp);
}

static void job_free(fs_job *j)
{
    rt_fsio_free(&j->io);
    json_decref(j->content);
    free(j);
}

static void job_done(uv_work_t *w, int status)
{
    fs_job *j = w->data;
    if (j->c) {
        for (fs_job **p = &j->c->fs_jobs; *p; p = &(*p)->next)
            if (*p == j) {
                *p = j->next;
                break;
            }
        job_answer(j);
    }
    job_free(j);
}

/* Runs the job on the thread pool (here and now without a loop), owning it from here on. */
static void job_start(acp_client *c, fs_job *j)
{
    j->c = c;
    j->work.data = j;
    if (c->loop) {
        j->next = c->fs_jobs;
        c->fs_jobs = j;
        if (uv_queue_work(c->loop, &j->work, job_run, job_done) == 0) return;
        c->fs_jobs = j->next;
    }
    job_run(&j->work);
    job_answer(j);
    job_free(j);
}

void acp_client_fs_orphan(acp_client *c)
{
    for (fs_job *j = c->fs_jobs; j; j = j->next) j->c = NULL;
    c->fs_jobs = NULL;
}

/* A job for req's `path` with a copy of its session's roots, or NULL after answering req. */
static fs_job *job_new(acp_client *c, acp_req *req)
{
    acp_client_session *s = acp_client_req_session(c, req);
    if (!s) return NULL;
    const char *path = json_string_value(json_object_get(acp_req_params(req), "path"));
    if (!path || path[0] != '/') {
        acp_client_refuse(c, req, ACP_RPC_INVALID_PARAMS, "path must be an absolute path: '%s'",
                          path ? path : "");
        return NULL;
    }
    fs_job *j = calloc(1, sizeof *j);
    if (!j || rt_fsio_init(&j->io, s->roots, path)) {
        if (j) job_free(j);
        acp_req_error(req, ACP_RPC_INTERNAL_ERROR, NULL, "out of memory");
        return NULL;
    }
    j->req = req;
    j->io.max = c->opts.max_read;
    return j;
}

/* line: 1-based first line (null or absent: 1); limit: at most that many lines. */
static bool get_uint(json_t *params, const char *key, size_t *v)
{
    json_t *j = json_object_get(params, key);
    if (!j || json_is_null(j)) return true;
    if (!json_is_integer(j) || json_integer_value(j) < 0) return false;
    *v = (uintmax_t)json_integer_value(j) < SIZE_MAX ? (size_t)json_integer_value(j) : SIZE_MAX;
    return true;
}

static void on_read(acp_conn *conn, acp_req *req, void *user)
{
    acp_client *c = user;
    json_t *params = acp_req_params(req);
    size_t line = 1, limit = SIZE_MAX;
    if (!get_uint(params, "line", &line) || !get_uint(params, "limit", &limit) || line < 1) {
        acp_client_refuse(c, req, ACP_RPC_INVALID_PARAMS,
                          "line (1-based) and limit must be non-negative integers");
        return;
    }
    fs_job *j = job_new(c, req);
    if (!j) return;
    j->io.line = line;
    j->io.limit = limit;
    job_start(c, j);
}

static void do_write(acp_client *c, acp_req *req)
{
    fs_job *j = job_new(c, req);
    if (!j) return;
    j->content = json_incref(json_object_get(acp_req_params(req), "content"));
    j->io.write = true;
    j->io.data = json_string_value(j->content);
    j->io.n = json_string_length(j->content);
    job_start(c, j);
}

/* Checked first (the session, the content, the path inside the roots), then approved by the
 * application, then written: the user is never asked about a write that would be refused. */
static void on_write(acp_conn *conn, acp_req *req, void *user)
{
    acp_client *c = user;
    json_t *params = acp_req_params(req);
    if (!json_is_string(json_object_get(params, "content"))) {
        acp_client_refuse(c, req, ACP_RPC_INVALID_PARAMS, "content (a string) is required");
        return;
    }
    acp_client_session *s = acp_client_req_session(c, req);
    if (!s) return;
    const char *path = json_string_value(json_object_get(params, "path"));
    char *real = NULL;
    int rc = path && path[0] == '/' ? acp_roots_resolve(s->roots, path, &real) : ACP_EINVAL;
    if (rc) {
        acp_client_refuse(c, req, ACP_RPC_INVALID_PARAMS, "%s",
                          rc == ACP_EINVAL ? "path must be an absolute path"
                                           : acp_error_last()->message);
        return;
    }
    free(real);
    acp_client_ask_app(c, s, req, "fs/write_text_file", do_write);
}

void acp_client_fs_register(acp_client *c)
{
    if (c->opts.fs_read) acp_conn_on(c->conn, "fs/read_text_file", on_read, NULL, c);
    if (c->opts.fs_write) acp_conn_on(c->conn, "fs/write_text_file", on_write, NULL, c);
}
