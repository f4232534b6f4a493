/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target over the root-set check (rt/roots.c), which every file path from a client
 * or an engine passes through. Any path bytes must never crash, leak or escape: an accepted
 * path is absolute and canonical (no ".", "..", "//" or trailing "/"), lies inside one of the
 * resolved roots, and is what realpath(3) gives for it when it exists; acp_roots_open of it
 * (read-only) opens that same file, when it is a regular file, and refuses anything else.
 *
 * The roots live in a private temporary directory made once per process (removed at exit):
 * a real directory, one reached through a symlink, and one that does not exist, with links
 * inside that point out, loop, dangle, and go through a file. Nothing is ever written: the
 * target only resolves and opens read-only. Input: the path (up to the first NUL byte); a
 * leading "@R", "@B", "@N" or "@T" stands for the first, second or missing root or the
 * temporary directory itself (their names are random), so absolute paths inside are reached. */
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "acp/roots.h"
#include "tests/store/tmpdir.h"

typedef struct tree {
    char base[256];
    char real[3][PATH_MAX]; /* the roots resolved, for the containment check */
    acp_roots *roots;
} tree;

static tree T; /* made once per process: the fuzzer calls the target millions of times */

static void mk(const char *kind, const char *rel, const char *target)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", T.base, rel);
    int rc = 0;
    if (kind[0] == 'd') rc = mkdir(p, 0700);
    if (kind[0] == 'f') {
        FILE *f = fopen(p, "w");
        rc = f ? fclose(f) : -1;
    }
    if (kind[0] == 'l') rc = symlink(target, p);
    if (rc) abort();
}

static void cleanup(void)
{
    acp_roots_free(T.roots);
    tmpdir_remove(T.base);
}

static void setup(void)
{
    if (tmpdir_make(T.base, sizeof T.base, "fuzz-roots")) abort();
    mk("d", "r", NULL);
    mk("d", "r/a", NULL);
    mk("f", "r/a/f", NULL);
    mk("l", "r/up", "..");              /* the base: outside */
    mk("l", "r/root", "/");             /* the real system: outside */
    mk("l", "r/loop1", "loop2");        /* a loop */
    mk("l", "r/loop2", "loop1");        /* */
    mk("l", "r/dangle", "a/missing/x"); /* resolves to a file that does not exist */
    mk("l", "r/via_f", "a/f/x");        /* through a regular file */
    mk("l", "r/to_b", "../b/c");        /* into the second root */
    mk("d", "b", NULL);
    mk("d", "b/c", NULL);
    mk("f", "b/c/g", NULL);
    mk("l", "blink", "b");            /* the second root is given through this link */
    mk("l", "b/c/back", "../../r/a"); /* from one root into the other */
    mk("l", "b/c/self", ".");
    mk("f", "outside", NULL);
    char t[PATH_MAX];
    snprintf(t, sizeof t, "%s/r/a", T.base);
    mk("l", "r/abs_a", t); /* an absolute link, inside */

    char cwd[PATH_MAX], d1[PATH_MAX], d2[PATH_MAX];
    snprintf(cwd, sizeof cwd, "%s/r", T.base);
    snprintf(d1, sizeof d1, "%s/blink/c", T.base);
    snprintf(d2, sizeof d2, "%s/none", T.base); /* a root that does not exist */
    const char *dirs[] = {d1, d2};
    if (acp_roots_new(cwd, dirs, 2, &T.roots)) abort();
    if (!realpath(cwd, T.real[0]) || !realpath(d1, T.real[1])) abort();
    if (!realpath(T.base, T.real[2])) abort();
    strcat(T.real[2], "/none");
    atexit(cleanup);
}

static bool under(const char *path, const char *root)
{
    size_t n = strlen(root);
    return !strncmp(path, root, n) && (path[n] == '/' || path[n] == '\0');
}

static void check(const char *out)
{
    if (out[0] != '/' || strstr(out, "//") || strstr(out, "/./") || strstr(out, "/../")) abort();
    size_t n = strlen(out);
    if (n > 1 && out[n - 1] == '/') abort();
    if (n >= 2 && !strcmp(out + n - 2, "/.")) abort();
    if (n >= 3 && !strcmp(out + n - 3, "/..")) abort();
    if (!under(out, T.real[0]) && !under(out, T.real[1]) && !under(out, T.real[2])) abort();
    char rp[PATH_MAX];
    if (realpath(out, rp) && strcmp(rp, out)) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!T.roots) setup();
    const char *pre = "";
    if (size >= 2 && data[0] == '@') {
        pre = data[1] == 'R'   ? acp_roots_at(T.roots, 0)
              : data[1] == 'B' ? acp_roots_at(T.roots, 1)
              : data[1] == 'N' ? acp_roots_at(T.roots, 2)
              : data[1] == 'T' ? T.base
                               : "";
        if (*pre) data += 2, size -= 2;
    }
    size_t pl = strlen(pre);
    char *path = malloc(pl + size + 1);
    if (!path) return 0;
    memcpy(path, pre, pl);
    memcpy(path + pl, data, size);
    path[pl + size] = '\0';

    char *out = NULL;
    int rc = acp_roots_resolve(T.roots, path, &out);
    if (getenv("ACP_FUZZ_TRACE"))
        fprintf(stderr, "%.80s -> %d %s %s\n", path, rc, out ? out : "",
                rc ? acp_error_last()->message : "");
    if (rc == 0) {
        if (!out) abort();
        check(out);
    } else if (out || (rc != ACP_EINVAL && rc != ACP_EACCES && rc != ACP_ENOMEM)) {
        abort();
    }

    int fd = -1;
    int orc = acp_roots_open(T.roots, path, O_RDONLY, 0, &fd);
    if (orc == 0) {
        /* What was opened is what resolve said (the tree does not change under us). */
        struct stat a, b;
        if (fd < 0 || rc != 0 || fstat(fd, &a) || stat(out, &b) || a.st_dev != b.st_dev ||
            a.st_ino != b.st_ino || !S_ISREG(a.st_mode))
            abort();
        close(fd);
    } else if (fd >= 0 ||
               (rc == 0 && orc != ACP_ENOTFOUND && orc != ACP_EIO && orc != ACP_EINVAL)) {
        abort();
    }
    free(out);
    free(path);
    return 0;
}
