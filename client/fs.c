/* SPDX-License-Identifier: Apache-2.0 */
/* fs/read_text_file and fs/write_text_file, confined to the session's root set: every file is
 * opened through acp_roots_open, which resolves symlinks at the time of the access and checks
 * the file actually opened, so a link swapped in after the check is not followed. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client/internal.h"

/* Opens the request's `path` inside the session's roots with acp_roots_open (symlinks
 * resolved, the file actually opened checked again), or answers the request and returns -1.
 * On success *real is the resolved path (caller frees). */
static int open_in_roots(acp_client *c, acp_req *req, int flags, char **real)
{
    acp_client_session *s = acp_client_req_session(c, req);
    if (!s) return -1;
    const char *path = json_string_value(json_object_get(acp_req_params(req), "path"));
    if (!path || path[0] != '/') {
        acp_client_refuse(c, req, ACP_RPC_INVALID_PARAMS, "path must be an absolute path: '%s'",
                          path ? path : "");
        return -1;
    }
    int fd;
    char *msg = NULL;
    int rc = acp_roots_open(s->roots, path, flags, 0666, &fd, real, &msg);
    if (rc) {
        int code = rc == ACP_ENOTFOUND ? ACP_RPC_NOT_FOUND
                   : rc == ACP_EIO     ? ACP_RPC_INTERNAL_ERROR
                                       : ACP_RPC_INVALID_PARAMS; /* outside, or not allowed */
        acp_client_refuse(c, req, code, "%s", msg ? msg : acp_strerror(rc));
        free(msg);
        return -1;
    }
    return fd;
}

static void fs_error(acp_req *req, const char *what, const char *path, int err)
{
    acp_req_error(req, err == ENOENT ? ACP_RPC_NOT_FOUND : ACP_RPC_INTERNAL_ERROR, NULL,
                  "cannot %s '%s': %s", what, path, strerror(err));
}

static int read_all(int fd, acp_buf *b)
{
    for (;;) {
        if (acp_buf_reserve(b, 65536)) return ENOMEM;
        ssize_t n = read(fd, b->data + b->len, b->cap - b->len);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return errno;
        if (n == 0) return 0;
        b->len += (size_t)n;
    }
}

/* The start of the line n lines after p (end when there are fewer). */
static const char *skip_lines(const char *p, const char *end, json_int_t n)
{
    for (; n > 0 && p < end; n--) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        p = nl ? nl + 1 : end;
    }
    return p;
}

/* line: 1-based first line (null or absent: 1); limit: at most that many lines. */
static bool get_uint(json_t *params, const char *key, json_int_t *v, bool *given)
{
    json_t *j = json_object_get(params, key);
    *given = j && !json_is_null(j);
    if (!*given) return true;
    if (!json_is_integer(j) || json_integer_value(j) < 0) return false;
    *v = json_integer_value(j);
    return true;
}

static void on_read(acp_conn *conn, acp_req *req, void *user)
{
    acp_client *c = user;
    json_t *params = acp_req_params(req);
    json_int_t line = 1, limit = 0;
    bool has_line, has_limit;
    if (!get_uint(params, "line", &line, &has_line) ||
        !get_uint(params, "limit", &limit, &has_limit) || (has_line && line < 1)) {
        acp_client_refuse(c, req, ACP_RPC_INVALID_PARAMS,
                          "line (1-based) and limit must be non-negative integers");
        return;
    }
    char *real;
    int fd = open_in_roots(c, req, O_RDONLY, &real);
    if (fd < 0) return;
    acp_buf b = {0};
    int err = read_all(fd, &b);
    close(fd);
    if (err) {
        fs_error(req, "read", real, err);
        goto out;
    }
    const char *text = b.data ? b.data : "", *end = text + b.len;
    const char *p = skip_lines(text, end, line - 1);
    const char *q = has_limit ? skip_lines(p, end, limit) : end;
    acp_buf tmp = {0};
    if (acp_json_escape(&tmp, p, (size_t)(q - p))) {
        acp_client_refuse(c, req, ACP_RPC_INVALID_PARAMS, "'%s' is not UTF-8 text", real);
    } else {
        acp_jw *w = acp_req_reply_begin(req);
        acp_jw_obj(w);
        acp_jw_key(w, "content");
        acp_jw_raw(w, tmp.data, tmp.len);
        acp_jw_obj_end(w);
        acp_req_reply_end(req);
    }
    acp_buf_free(&tmp);
out:
    acp_buf_free(&b);
    free(real);
}

static void do_write(acp_client *c, acp_req *req)
{
    json_t *content = json_object_get(acp_req_params(req), "content");
    char *real;
    int fd = open_in_roots(c, req, O_WRONLY | O_CREAT | O_TRUNC, &real);
    if (fd < 0) return;
    int err = 0;
    const char *p = json_string_value(content);
    size_t n = json_string_length(content);
    while (!err && n) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0)
            err = errno;
        else
            p += k, n -= (size_t)k;
    }
    if (close(fd) && !err) err = errno;
    if (err)
        fs_error(req, "write", real, err);
    else
        acp_req_reply(req, NULL);
    free(real);
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
    char *real = NULL, *msg = NULL;
    int rc = path && path[0] == '/' ? acp_roots_resolve(s->roots, path, &real, &msg) : ACP_EINVAL;
    if (rc) {
        acp_client_refuse(c, req, ACP_RPC_INVALID_PARAMS, "%s",
                          msg ? msg : "path must be an absolute path");
        free(msg);
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
