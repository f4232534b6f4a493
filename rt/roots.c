/* SPDX-License-Identifier: Apache-2.0 */
/* The root set, and the one way every file inside it is opened, read and written.
 *
 * A path is resolved twice. First by our own component walk (walk() below), which follows
 * symlinks the way the kernel would and tells which root the result lies in: realpath(3) will
 * not do, as a file about to be written does not exist yet, and resolving only its parent
 * would miss a dangling symlink in its place (which a create would follow). That walk is only
 * advice, since anything may change after it; the open that follows is relative to the root's
 * descriptor with no symlink allowed on the way (openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS,
 * or O_NOFOLLOW at every step), so a directory swapped for a link to the outside makes it fail
 * instead of reaching out. Resolving ourselves first is what keeps links that stay inside the
 * roots working: RESOLVE_BENEATH alone would refuse an absolute link, or one into another
 * root. */
#include "acp/roots.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "acp/json.h"
#include "rpc/lasterr.h"

/* Linux's own limit on symlinks followed in one resolution. */
#define MAX_LINKS 40
/* Times an access is tried again when the tree changed under it (a link appeared where the
 * walk saw a directory): a legitimate rename settles at once, a hostile loop does not. */
#define RETRIES 4

struct acp_roots {
    size_t n;
    char **dirs; /* dirs[0] is cwd */
};

int acp_roots_new(const char *cwd, const char *const *dirs, size_t ndirs, acp_roots **out)
{
    *out = NULL;
    for (size_t i = 0; i <= ndirs; i++) {
        const char *d = i == 0 ? cwd : dirs[i - 1];
        if (d && d[0] == '/') continue;
        if (i == 0)
            return acp_error_set(ACP_EINVAL, "cwd must be an absolute path: '%s'", d ? d : "");
        return acp_error_set(ACP_EINVAL,
                             "additionalDirectories[%zu] must be an absolute path: '%s'", i - 1,
                             d ? d : "");
    }
    acp_roots *r = calloc(1, sizeof *r);
    if (!r || !(r->dirs = calloc(ndirs + 1, sizeof *r->dirs))) {
        free(r);
        return acp_error_code(ACP_ENOMEM);
    }
    for (size_t i = 0; i <= ndirs; i++) {
        if (!(r->dirs[i] = strdup(i == 0 ? cwd : dirs[i - 1]))) {
            acp_roots_free(r);
            return acp_error_code(ACP_ENOMEM);
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

static int io_failed(const char *path, const char *verb, int e);

/* A resolved path and the root it lies in. */
typedef struct {
    int root;        /* O_PATH descriptor of that root (-1 when not asked for) */
    char *real;      /* the resolved absolute path */
    const char *rel; /* real below the root: "." for the root itself */
} spot;

static void spot_free(spot *s)
{
    if (s->root >= 0) close(s->root);
    free(s->real);
}

/* Resolves path and finds the root holding it (the first, each root resolved now: a root may
 * be a symlink, and where it points is what counts), opening its descriptor when want_fd. */
static int locate(const acp_roots *r, const char *path, bool want_fd, spot *s)
{
    *s = (spot){.root = -1};
    if (!path || !*path) return acp_error_set(ACP_EINVAL, "path must not be empty");
    acp_buf full = {0}, res = {0}, root = {0};
    int rc = acp_error_code(ACP_ENOMEM), err;
    if (path[0] != '/' &&
        (acp_buf_append(&full, r->dirs[0], strlen(r->dirs[0])) || acp_buf_putc(&full, '/')))
        goto done;
    if (acp_buf_append(&full, path, strlen(path)) || !acp_buf_cstr(&full)) goto done;
    if ((err = walk(full.data, &res)) == ENOMEM) goto done;
    if (err) {
        rc = acp_error_set(ACP_EACCES, "cannot resolve '%s' safely: %s", path,
                           err == ENOENT ? "'..' after a directory that does not exist"
                                         : strerror(err));
        goto done;
    }
    int gone = 0; /* why the root holding the path could not be opened */
    for (size_t i = 0; i < r->n; i++) {
        if ((err = walk(r->dirs[i], &root)) == ENOMEM) goto done;
        if (err || !inside(res.data, root.data)) continue;
        if (want_fd && (s->root = open(root.data, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0) {
            gone = errno;
            continue;
        }
        size_t k = strcmp(root.data, "/") == 0 ? 0 : root.len;
        s->real = acp_buf_take(&res, NULL);
        s->rel = s->real[k] ? s->real + k + 1 : ".";
        if (!*s->rel) s->rel = "."; /* the root "/" itself */
        rc = 0;
        goto done;
    }
    if (gone)
        rc = io_failed(path, "open", gone);
    else if (strcmp(path, res.data) == 0)
        rc = acp_error_set(ACP_EACCES, "'%s' is outside the session's directories", path);
    else
        rc = acp_error_set(ACP_EACCES, "'%s' resolves to '%s', outside the session's directories",
                           path, res.data);
done:
    acp_buf_free(&full);
    acp_buf_free(&res);
    acp_buf_free(&root);
    return rc;
}

/* ACP_ROOTS_COMPAT set: behave as on a kernel before 5.6 (see roots.h). */
static bool compat(void)
{
    const char *e = getenv("ACP_ROOTS_COMPAT");
    return e && *e && strcmp(e, "0") != 0;
}

/* openat(dir, rel, flags, mode) with no symlink followed anywhere on the way and nothing
 * reached outside dir: rel comes from walk(), so a link on it now was swapped in since. */
static int open_beneath(int dir, const char *rel, int flags, mode_t mode)
{
    flags |= O_CLOEXEC | O_NOFOLLOW;
    if (!compat()) {
        struct open_how how = {
            .flags = (uint64_t)flags,
            .mode = (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? mode : 0,
            .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
        };
        long fd = syscall(SYS_openat2, dir, rel, &how, sizeof how);
        /* ENOSYS before 5.6; EPERM also from container seccomp filters that predate openat2.
         * The walk below is as safe, and a real EPERM fails there the same way. */
        if (fd >= 0 || (errno != ENOSYS && errno != EPERM)) return (int)fd;
    }
    /* The same by hand: each directory opened O_NOFOLLOW from the one before. */
    int cur = dir;
    for (;;) {
        size_t len = strcspn(rel, "/");
        char comp[NAME_MAX + 1];
        if (len > NAME_MAX || (len == 2 && rel[0] == '.' && rel[1] == '.')) {
            errno = len > NAME_MAX ? ENAMETOOLONG : EXDEV;
            break;
        }
        if (rel[len] == '\0') {
            int fd = openat(cur, rel, flags, mode), e = errno;
            if (cur != dir) close(cur);
            errno = e;
            return fd;
        }
        memcpy(comp, rel, len);
        comp[len] = '\0';
        int next = openat(cur, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), e = errno;
        if (cur != dir) close(cur);
        errno = e;
        if (next < 0) return -1;
        cur = next;
        for (rel += len; *rel == '/';) rel++;
    }
    if (cur != dir) close(cur);
    return -1;
}

/* What a failure of the kernel's walk means here: the tree changed since walk() looked at it
 * (a link where a directory was). */
static bool raced(int e)
{
    return e == ELOOP || e == EXDEV || e == ENOTDIR;
}

static int refuse_raced(const char *path)
{
    return acp_error_set(ACP_EACCES,
                         "'%s' kept changing while being opened (a symbolic link appeared on its "
                         "way): refused",
                         path);
}

static int not_regular(const char *path, mode_t m)
{
    const char *what = S_ISDIR(m)    ? "a directory"
                       : S_ISFIFO(m) ? "a FIFO"
                       : S_ISSOCK(m) ? "a socket"
                       : S_ISCHR(m)  ? "a character device"
                       : S_ISBLK(m)  ? "a block device"
                                     : "a special file";
    return acp_error_set(ACP_EINVAL, "'%s' is %s: only regular files are read or written", path,
                         what);
}

static int io_failed(const char *path, const char *verb, int e)
{
    if (e == EISDIR) return not_regular(path, S_IFDIR);
    int rc = e == ENOENT ? ACP_ENOTFOUND : e == EACCES || e == EPERM ? ACP_EACCES : ACP_EIO;
    return acp_error_set(rc, "cannot %s '%s': %s", verb, path, strerror(e));
}

int acp_roots_resolve(const acp_roots *r, const char *path, char **out)
{
    spot s;
    *out = NULL;
    int rc = locate(r, path, false, &s);
    if (!rc) *out = s.real, s.real = NULL;
    spot_free(&s);
    return rc;
}

int acp_roots_open(const acp_roots *r, const char *path, int flags, mode_t mode, int *fd)
{
    *fd = -1;
    for (int tries = 0;; tries++) {
        spot s;
        int rc = locate(r, path, true, &s);
        if (rc) return rc;
        int f = open_beneath(s.root, s.rel, flags | O_NOCTTY | O_NONBLOCK, mode), e = errno;
        struct stat st;
        if (f < 0 && e == ENXIO) { /* a FIFO without a reader, or a socket: say which */
            int p = open_beneath(s.root, s.rel, O_PATH, 0);
            bool special = p >= 0 && fstat(p, &st) == 0 && !S_ISREG(st.st_mode);
            if (p >= 0) close(p);
            if (special) {
                spot_free(&s);
                return not_regular(path, st.st_mode);
            }
        }
        spot_free(&s);
        if (f < 0 && raced(e) && tries < RETRIES) continue;
        if (f < 0) return raced(e) ? refuse_raced(path) : io_failed(path, "open", e);
        rc = fstat(f, &st)         ? io_failed(path, "open", errno)
             : S_ISREG(st.st_mode) ? 0
                                   : not_regular(path, st.st_mode);
        if (rc) {
            close(f);
            return rc;
        }
        *fd = f;
        return 0;
    }
}

static int too_big(const char *path, size_t max)
{
    return acp_error_set(ACP_ETOOBIG,
                         "reading '%s' would return more than the maximum of one read (%zu "
                         "bytes): ask for fewer lines (line, limit) or raise the maximum",
                         path, max);
}

/* The part of [p, end) that the remaining line window takes: *skip lines dropped first, then
 * up to *left lines kept (SIZE_MAX: all); both counters advance. */
static void window(const char **p, const char **q, const char *end, size_t *skip, size_t *left)
{
    const char *nl;
    while (*skip > 0 && *p < end) {
        nl = memchr(*p, '\n', (size_t)(end - *p));
        *p = nl ? nl + 1 : end;
        if (nl) --*skip;
    }
    *q = *p;
    if (*left == SIZE_MAX) *q = end;
    while (*left != SIZE_MAX && *left > 0 && *q < end) {
        nl = memchr(*q, '\n', (size_t)(end - *q));
        *q = nl ? nl + 1 : end;
        if (nl) --*left;
    }
}

int acp_roots_read(const acp_roots *r, const char *path, size_t line, size_t limit, size_t max,
                   char **text, size_t *n)
{
    enum { CHUNK = 1 << 16 };
    *text = NULL;
    *n = 0;
    if (!max) max = ACP_ROOTS_MAX_READ;
    int fd, rc = acp_roots_open(r, path, O_RDONLY, 0, &fd);
    if (rc) return rc;
    struct stat st;
    if (line <= 1 && limit == SIZE_MAX && fstat(fd, &st) == 0 && (uintmax_t)st.st_size > max) {
        close(fd);
        return too_big(path, max);
    }
    acp_buf out = {0};
    size_t skip = line > 1 ? line - 1 : 0, left = limit;
    char *buf = malloc(CHUNK);
    if (!buf) rc = acp_error_code(ACP_ENOMEM);
    while (!rc && left > 0) {
        ssize_t k = read(fd, buf, CHUNK);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) rc = io_failed(path, "read", errno);
        if (k <= 0) break;
        const char *p = buf, *q;
        window(&p, &q, buf + k, &skip, &left);
        if (out.len + (size_t)(q - p) > max)
            rc = too_big(path, max);
        else if (acp_buf_append(&out, p, (size_t)(q - p)))
            rc = acp_error_code(ACP_ENOMEM);
    }
    free(buf);
    close(fd);
    if (!rc && !acp_buf_cstr(&out)) rc = acp_error_code(ACP_ENOMEM);
    if (rc) {
        acp_buf_free(&out);
        return rc;
    }
    *text = acp_buf_take(&out, n);
    return 0;
}

/* A fresh name for a temporary beside base in the same directory (hidden, and saying what it
 * is to whoever finds one left by a kill). */
static void temp_name(char *out, size_t size, const char *base)
{
    uint64_t x = 0;
    if (getrandom(&x, sizeof x, 0) != sizeof x) x ^= (uint64_t)getpid() << 32 ^ (uint64_t)rand();
    snprintf(out, size, ".%.200s.%016llx.acp-tmp", base, (unsigned long long)x);
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) return errno;
        p += k, n -= (size_t)k;
    }
    return 0;
}

/* The temporary file in dir: anonymous (O_TMPFILE: a kill leaves nothing behind), else under
 * a fresh name in *tmp. -1 with errno. */
static int temp_open(int dir, const char *base, mode_t mode, char *tmp, size_t size)
{
    tmp[0] = '\0';
    int fd = compat() ? -1 : openat(dir, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, mode);
    for (int i = 0; fd < 0 && i < 16; i++) {
        temp_name(tmp, size, base);
        fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) tmp[0] = '\0';
    return fd;
}

/* Gives the anonymous temporary fd a fresh name in dir (linkat through /proc/self/fd, which
 * needs no privilege, unlike AT_EMPTY_PATH). 0 or an errno value. */
static int temp_link(int fd, int dir, const char *base, char *tmp, size_t size)
{
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    for (int i = 0; i < 16; i++) {
        temp_name(tmp, size, base);
        if (linkat(AT_FDCWD, proc, dir, tmp, AT_SYMLINK_FOLLOW) == 0) return 0;
        if (errno != EEXIST) break;
    }
    int e = errno;
    tmp[0] = '\0';
    return e;
}

/* A status, or RACED: try again from the walk. */
#define RACED 1

/* Replaces the file s names (see acp_roots_write): everything relative to its directory's
 * descriptor, opened beneath the root, so a swapped link cannot move the rename elsewhere. */
static int replace(spot *s, const char *path, const char *data, size_t n)
{
    if (strcmp(s->rel, ".") == 0) return not_regular(path, S_IFDIR);
    char *slash = strrchr(s->rel, '/'); /* s->rel points into s->real, ours */
    const char *base = slash ? slash + 1 : s->rel;
    if (slash) *slash = '\0';
    int dir = open_beneath(s->root, slash ? s->rel : ".", O_RDONLY | O_DIRECTORY, 0), e = errno;
    if (slash) *slash = '/';
    if (dir < 0) return raced(e) ? RACED : io_failed(path, "write", e);
    struct stat st;
    bool exists = fstatat(dir, base, &st, AT_SYMLINK_NOFOLLOW) == 0;
    int rc = 0;
    if (!exists && errno != ENOENT)
        rc = io_failed(path, "write", errno);
    else if (exists && S_ISLNK(st.st_mode))
        rc = RACED;
    else if (exists && !S_ISREG(st.st_mode))
        rc = not_regular(path, st.st_mode);
    if (rc) {
        close(dir);
        return rc;
    }
    mode_t mode = exists ? st.st_mode & 07777 : 0666;
    char tmp[NAME_MAX + 1];
    int fd = temp_open(dir, base, mode, tmp, sizeof tmp);
    bool anon = fd >= 0 && !tmp[0];
    e = fd < 0 ? errno : write_all(fd, data, n);
    if (!e && exists) {
        /* Owner first: fchown clears set-id bits, fchmod puts them back. A user who may not
         * give the file away keeps it (the rename still replaces it). */
        if (st.st_uid != geteuid() || st.st_gid != getegid())
            (void)!fchown(fd, st.st_uid, st.st_gid);
        if (fchmod(fd, mode)) e = errno;
    }
    if (!e && fsync(fd)) e = errno;
    if (!e && anon) e = temp_link(fd, dir, base, tmp, sizeof tmp);
    if (!e && renameat(dir, tmp, dir, base)) e = errno;
    if (e && tmp[0]) unlinkat(dir, tmp, 0);
    if (fd >= 0) close(fd);
    if (!e) (void)fsync(dir); /* the rename itself, durable */
    close(dir);
    return e ? io_failed(path, "write", e) : 0;
}

int acp_roots_write(const acp_roots *r, const char *path, const void *data, size_t n)
{
    for (int tries = 0;; tries++) {
        spot s;
        int rc = locate(r, path, true, &s);
        if (rc) return rc;
        rc = replace(&s, path, data, n);
        spot_free(&s);
        if (rc != RACED) return rc;
        if (tries == RETRIES) return refuse_raced(path);
    }
}
