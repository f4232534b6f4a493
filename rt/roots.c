/* SPDX-License-Identifier: Apache-2.0 */
/* The root-set check. Paths are resolved by our own component walk rather than realpath(3)
 * because a file about to be written does not exist yet: realpath fails on it, and resolving
 * only its parent would miss a dangling symlink in its place (which a create would follow). */
#include "acp/roots.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "acp/json.h"
#include "rt/errmsg.h"

/* Linux's own limit on symlinks followed in one resolution. */
#define MAX_LINKS 40

struct acp_roots {
    size_t n;
    char **dirs; /* dirs[0] is cwd */
};

int acp_roots_new(const char *cwd, const char *const *dirs, size_t ndirs, acp_roots **out,
                  char **errmsg)
{
    if (errmsg) *errmsg = NULL;
    *out = NULL;
    for (size_t i = 0; i <= ndirs; i++) {
        const char *d = i == 0 ? cwd : dirs[i - 1];
        if (d && d[0] == '/') continue;
        if (i == 0)
            rt_set_err(errmsg, "cwd must be an absolute path: '%s'", d ? d : "");
        else
            rt_set_err(errmsg, "additionalDirectories[%zu] must be an absolute path: '%s'", i - 1,
                       d ? d : "");
        return ACP_EINVAL;
    }
    acp_roots *r = calloc(1, sizeof *r);
    if (!r || !(r->dirs = calloc(ndirs + 1, sizeof *r->dirs))) {
        free(r);
        return ACP_ENOMEM;
    }
    for (size_t i = 0; i <= ndirs; i++) {
        if (!(r->dirs[i] = strdup(i == 0 ? cwd : dirs[i - 1]))) {
            acp_roots_free(r);
            return ACP_ENOMEM;
        }
        r->n++;
    }
    *out = r;
    return 0;
}

void acp_roots_free(acp_roots *r)
{
    if (!r) return;
    for (size_t i = 0; i < r->n; i++) free(r->dirs[i]);
    free(r->dirs);
    free(r);
}

const char *acp_roots_cwd(const acp_roots *r)
{
    return r->dirs[0];
}

size_t acp_roots_count(const acp_roots *r)
{
    return r->n;
}

const char *acp_roots_at(const acp_roots *r, size_t i)
{
    return i < r->n ? r->dirs[i] : NULL;
}

/* Resolves the absolute path `in` into `res` (a path with no symlink, ".", ".." or empty
 * component; "/" is the empty string). A missing tail is appended as is, provided it holds
 * no ".." (which cannot be resolved against a directory that does not exist). Returns 0, or
 * an errno value. */
static int walk(const char *in, acp_buf *res)
{
    acp_buf todo = {0}; /* what is left to resolve, absolute */
    int links = 0, err = 0;
    bool missing = false;
    res->len = 0;
    if (acp_buf_append(&todo, in, strlen(in)) || !acp_buf_cstr(&todo)) return ENOMEM;
    size_t pos = 0;
    while (pos < todo.len) {
        while (pos < todo.len && todo.data[pos] == '/') pos++;
        size_t end = pos;
        while (end < todo.len && todo.data[end] != '/') end++;
        const char *c = todo.data + pos;
        size_t cn = end - pos;
        bool last = end == todo.len;
        if (cn == 0 || (cn == 1 && c[0] == '.')) {
            pos = end;
            continue;
        }
        if (cn == 2 && c[0] == '.' && c[1] == '.') {
            if (missing) {
                err = ENOENT;
                break;
            }
            while (res->len > 0 && res->data[res->len - 1] != '/') res->len--;
            if (res->len > 0) res->len--;
            pos = end;
            continue;
        }
        size_t keep = res->len;
        if (acp_buf_putc(res, '/') || acp_buf_append(res, c, cn) || !acp_buf_cstr(res)) {
            err = ENOMEM;
            break;
        }
        pos = end;
        if (missing) continue;
        struct stat st;
        if (lstat(res->data, &st) != 0) {
            if (errno != ENOENT) {
                err = errno;
                break;
            }
            missing = true;
            continue;
        }
        if (S_ISLNK(st.st_mode)) {
            if (++links > MAX_LINKS) {
                err = ELOOP;
                break;
            }
            char target[PATH_MAX];
            ssize_t tn = readlink(res->data, target, sizeof target);
            if (tn < 0 || (size_t)tn >= sizeof target) {
                err = tn < 0 ? errno : ENAMETOOLONG;
                break;
            }
            res->len = keep;
            /* The rest becomes target + remaining components; an absolute target restarts
             * from the root. */
            acp_buf next = {0};
            if (acp_buf_append(&next, target, (size_t)tn) ||
                acp_buf_append(&next, todo.data + pos, todo.len - pos) || !acp_buf_cstr(&next)) {
                acp_buf_free(&next);
                err = ENOMEM;
                break;
            }
            if (target[0] == '/') res->len = 0;
            acp_buf_free(&todo);
            todo = next;
            pos = 0;
            continue;
        }
        if (!last && !S_ISDIR(st.st_mode)) {
            err = ENOTDIR;
            break;
        }
    }
    acp_buf_free(&todo);
    if (!err && res->len == 0 && acp_buf_putc(res, '/')) err = ENOMEM;
    if (!err && !acp_buf_cstr(res)) err = ENOMEM;
    return err;
}

static bool inside(const char *path, const char *root)
{
    if (strcmp(root, "/") == 0) return true;
    size_t n = strlen(root);
    return strncmp(path, root, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* Whether the resolved path lies inside one of r's roots, each resolved now (a root may be a
 * symlink, and where it points is what counts): 1 inside, 0 not, ENOMEM as -1. */
static int inside_roots(const acp_roots *r, const char *path)
{
    acp_buf root = {0};
    int in = 0;
    for (size_t i = 0; i < r->n && !in; i++) {
        int err = walk(r->dirs[i], &root);
        if (err == ENOMEM)
            in = -1;
        else if (err == 0 && inside(path, root.data))
            in = 1;
    }
    acp_buf_free(&root);
    return in;
}

int acp_roots_resolve(const acp_roots *r, const char *path, char **out, char **errmsg)
{
    *out = NULL;
    if (errmsg) *errmsg = NULL;
    if (!path || !*path) {
        rt_set_err(errmsg, "path must not be empty");
        return ACP_EINVAL;
    }
    acp_buf full = {0}, res = {0};
    int rc = ACP_ENOMEM;
    if (path[0] != '/' &&
        (acp_buf_append(&full, r->dirs[0], strlen(r->dirs[0])) || acp_buf_putc(&full, '/')))
        goto done;
    if (acp_buf_append(&full, path, strlen(path)) || !acp_buf_cstr(&full)) goto done;
    int err = walk(full.data, &res);
    if (err == ENOMEM) goto done;
    if (err) {
        rt_set_err(errmsg, "cannot resolve '%s' safely: %s", path,
                   err == ENOENT ? "'..' after a directory that does not exist" : strerror(err));
        rc = ACP_EACCES;
        goto done;
    }
    int in = inside_roots(r, res.data);
    if (in < 0) goto done;
    if (in) {
        *out = acp_buf_take(&res, NULL);
        rc = 0;
        goto done;
    }
    if (strcmp(path, res.data) == 0)
        rt_set_err(errmsg, "'%s' is outside the session's directories", path);
    else
        rt_set_err(errmsg, "'%s' resolves to '%s', outside the session's directories", path,
                   res.data);
    rc = ACP_EACCES;
done:
    acp_buf_free(&full);
    acp_buf_free(&res);
    return rc;
}

int acp_roots_open(const acp_roots *r, const char *path, int flags, mode_t mode, int *fd,
                   char **real, char **errmsg)
{
    *fd = -1;
    if (real) *real = NULL;
    char *res = NULL;
    int rc = acp_roots_resolve(r, path, &res, errmsg);
    if (rc) return rc;
    int f = open(res, flags | O_CLOEXEC | O_NOFOLLOW, mode);
    if (f < 0) {
        int e = errno;
        rc = e == ENOENT                               ? ACP_ENOTFOUND
             : e == EACCES || e == EPERM || e == ELOOP ? ACP_EACCES
                                                       : ACP_EIO;
        rt_set_err(errmsg, "cannot open '%s': %s", path,
                   e == ELOOP ? "it became a symbolic link" : strerror(e));
        free(res);
        return rc;
    }
    /* What was opened, whatever happened to the path since it was resolved. */
    char link[64], now[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", f);
    ssize_t n = readlink(link, now, sizeof now - 1);
    if (n > 0) now[n] = '\0';
    if (n <= 0 || inside_roots(r, now) != 1) {
        close(f);
        rt_set_err(errmsg, "'%s' moved outside the session's directories while being opened", path);
        free(res);
        return ACP_EACCES;
    }
    *fd = f;
    if (real)
        *real = res;
    else
        free(res);
    return 0;
}
