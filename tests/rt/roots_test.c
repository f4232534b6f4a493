/* SPDX-License-Identifier: Apache-2.0 */
/* acp_roots against a real directory tree in a temp dir: escapes by "..", by symlinks
 * (outward, dangling, to a parent), relative paths, a root that is a symlink, files that do
 * not exist yet, and prefix confusion. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "acp/roots.h"

/* Layout under a fresh temp dir T (T itself resolved, as mkdtemp may sit under a link):
 *   T/a/            root (cwd)
 *   T/a/f.txt
 *   T/a/sub/
 *   T/a/out  -> T/secret          link escaping the root
 *   T/a/up   -> ..                link to the parent of the root
 *   T/a/dang -> T/nowhere.txt     dangling link pointing outside
 *   T/a/dangin -> new-inside.txt  dangling link pointing inside
 *   T/a/loop -> loop
 *   T/ab/    sibling whose name starts like the root
 *   T/secret
 *   T/real/  second root, reached through T/link -> real */
typedef struct {
    char t[256];
    acp_roots *roots;
} fx;

static void pathf(char *buf, const fx *f, const char *rel)
{
    snprintf(buf, PATH_MAX, "%s/%s", f->t, rel);
}

static void mk(const fx *f, const char *rel, int dir)
{
    char p[PATH_MAX];
    pathf(p, f, rel);
    if (dir) {
        assert_int_equal(mkdir(p, 0755), 0);
    } else {
        int fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        close(fd);
    }
}

static void ln(const fx *f, const char *target, const char *rel)
{
    char p[PATH_MAX];
    pathf(p, f, rel);
    assert_int_equal(symlink(target, p), 0);
}

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    char tmpl[] = "/tmp/acp-roots-XXXXXX";
    assert_non_null(mkdtemp(tmpl));
    assert_non_null(realpath(tmpl, f->t));
    mk(f, "a", 1);
    mk(f, "a/f.txt", 0);
    mk(f, "a/sub", 1);
    mk(f, "ab", 1);
    mk(f, "ab/x.txt", 0);
    mk(f, "secret", 0);
    mk(f, "real", 1);
    mk(f, "real/r.txt", 0);
    char p[PATH_MAX];
    pathf(p, f, "secret");
    ln(f, p, "a/out");
    ln(f, "..", "a/up");
    pathf(p, f, "nowhere.txt");
    ln(f, p, "a/dang");
    ln(f, "new-inside.txt", "a/dangin");
    ln(f, "loop", "a/loop");
    ln(f, "real", "link");
    char cwd[PATH_MAX], extra[PATH_MAX];
    pathf(cwd, f, "a");
    pathf(extra, f, "link");
    const char *dirs[] = {extra};
    assert_int_equal(acp_roots_new(cwd, dirs, 1, &f->roots), 0);
    *state = f;
    return 0;
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
    return remove(p);
}

static int teardown(void **state)
{
    fx *f = *state;
    acp_roots_free(f->roots);
    nftw(f->t, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    free(f);
    return 0;
}

/* Resolves rel (relative to T unless it starts with '/' or "@", which means "as given"),
 * expecting rc; on success compares the result with T/want. */
static void expect(const fx *f, const char *path, int rc, const char *want)
{
    char *out = NULL;
    int got = acp_roots_resolve(f->roots, path, &out);
    if (got != rc) fail_msg("%s: got %d (%s), want %d", path, got, acp_error_last()->message, rc);
    if (rc == 0) {
        char w[PATH_MAX];
        pathf(w, f, want);
        assert_non_null(out);
        assert_string_equal(out, w);
    } else {
        assert_null(out);
        assert_int_equal(acp_error_last()->status, rc);
    }
    free(out);
}

static void abs_of(char *buf, const fx *f, const char *rel)
{
    pathf(buf, f, rel);
}

static void test_inside_and_relative(void **state)
{
    fx *f = *state;
    char p[PATH_MAX];
    abs_of(p, f, "a/f.txt");
    expect(f, p, 0, "a/f.txt");
    expect(f, "f.txt", 0, "a/f.txt"); /* relative: against cwd */
    expect(f, "./sub/../f.txt", 0, "a/f.txt");
    expect(f, "sub", 0, "a/sub");
    expect(f, ".", 0, "a");
    abs_of(p, f, "a//sub/./");
    expect(f, p, 0, "a/sub");
}

static void test_dotdot_escape(void **state)
{
    fx *f = *state;
    char p[PATH_MAX];
    expect(f, "../secret", ACP_EACCES, NULL);
    expect(f, "sub/../../secret", ACP_EACCES, NULL);
    abs_of(p, f, "a/../secret");
    expect(f, p, ACP_EACCES, NULL);
    expect(f, "/etc/passwd", ACP_EACCES, NULL);
    expect(f, "../../../../../../../../..", ACP_EACCES, NULL);
    /* ".." after a missing directory: the kernel would refuse it; so do we. */
    expect(f, "nodir/../../secret", ACP_EACCES, NULL);
    expect(f, "nodir/../f.txt", ACP_EACCES, NULL);
}

static void test_symlink_escapes(void **state)
{
    fx *f = *state;
    expect(f, "out", ACP_EACCES, NULL);         /* link to a file outside */
    expect(f, "up/secret", ACP_EACCES, NULL);   /* link to the root's parent */
    expect(f, "up/a/f.txt", 0, "a/f.txt");      /* ... and back in */
    expect(f, "dang", ACP_EACCES, NULL);        /* dangling, would create outside */
    expect(f, "dangin", 0, "a/new-inside.txt"); /* dangling, would create inside */
    expect(f, "loop", ACP_EACCES, NULL);        /* ELOOP: fail closed */
    expect(f, "f.txt/x", ACP_EACCES, NULL);     /* ENOTDIR in the middle */
}

static void test_root_is_symlink(void **state)
{
    fx *f = *state;
    char p[PATH_MAX];
    abs_of(p, f, "link/r.txt");
    expect(f, p, 0, "real/r.txt");
    abs_of(p, f, "real/r.txt"); /* the same directory by its real name */
    expect(f, p, 0, "real/r.txt");
    abs_of(p, f, "real/new/deeper.txt");
    expect(f, p, 0, "real/new/deeper.txt");
}

static void test_missing_files(void **state)
{
    fx *f = *state;
    char p[PATH_MAX];
    expect(f, "new.txt", 0, "a/new.txt");
    expect(f, "sub/x/y/z.txt", 0, "a/sub/x/y/z.txt");
    expect(f, "sub/./x//y.txt", 0, "a/sub/x/y.txt");
    abs_of(p, f, "nowhere/new.txt");
    expect(f, p, ACP_EACCES, NULL);
    expect(f, "out/x", ACP_EACCES, NULL); /* through a link to a file: ENOTDIR or outside */
}

static void test_prefix_confusion(void **state)
{
    fx *f = *state;
    char p[PATH_MAX];
    abs_of(p, f, "ab/x.txt");
    expect(f, p, ACP_EACCES, NULL);
    expect(f, "../ab/x.txt", ACP_EACCES, NULL);
    abs_of(p, f, "ab");
    expect(f, p, ACP_EACCES, NULL);
    abs_of(p, f, "a");
    expect(f, p, 0, "a");
}

static void test_errors_and_messages(void **state)
{
    fx *f = *state;
    char *out = (char *)1;
    assert_int_equal(acp_roots_resolve(f->roots, "", &out), ACP_EINVAL);
    assert_null(out);
    assert_string_equal(acp_error_last()->message, "path must not be empty");

    assert_int_equal(acp_roots_resolve(f->roots, "../secret", &out), ACP_EACCES);
    assert_int_equal(acp_error_last()->status, ACP_EACCES);
    assert_non_null(strstr(acp_error_last()->message, "outside"));
    assert_non_null(strstr(acp_error_last()->message, "secret"));

    acp_roots *r = NULL;
    const char *dirs[] = {"/ok", "src"};
    assert_int_equal(acp_roots_new("/x", dirs, 2, &r), ACP_EINVAL);
    assert_null(r);
    assert_string_equal(acp_error_last()->message,
                        "additionalDirectories[1] must be an absolute path: 'src'");
    assert_int_equal(acp_roots_new("rel", NULL, 0, &r), ACP_EINVAL);
    assert_string_equal(acp_error_last()->message, "cwd must be an absolute path: 'rel'");
    const char *empty[] = {""};
    assert_int_equal(acp_roots_new("/x", empty, 1, &r), ACP_EINVAL);
    assert_string_equal(acp_error_last()->message,
                        "additionalDirectories[0] must be an absolute path: ''");

    assert_int_equal(acp_roots_new("/x", dirs, 1, &r), 0);
    assert_int_equal(acp_roots_count(r), 2);
    assert_string_equal(acp_roots_cwd(r), "/x");
    assert_string_equal(acp_roots_at(r, 1), "/ok");
    assert_null(acp_roots_at(r, 2));
    acp_roots_free(r);
}

/* The same file (device and inode) as the path names. */
static void same_file(int fd, const char *path)
{
    struct stat a, b;
    assert_int_equal(fstat(fd, &a), 0);
    assert_int_equal(stat(path, &b), 0);
    assert_true(a.st_dev == b.st_dev && a.st_ino == b.st_ino);
}

static void test_open(void **state)
{
    fx *f = *state;
    int fd = -1;
    char want[PATH_MAX];
    assert_int_equal(acp_roots_open(f->roots, "f.txt", O_RDONLY, 0, &fd), 0);
    assert_true(fd >= 0);
    assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    pathf(want, f, "a/f.txt");
    same_file(fd, want);
    close(fd);

    /* Writes: a new file, and one created through a dangling link that stays inside. */
    assert_int_equal(acp_roots_open(f->roots, "new.txt", O_WRONLY | O_CREAT | O_EXCL, 0600, &fd),
                     0);
    close(fd);
    pathf(want, f, "a/new.txt");
    assert_int_equal(access(want, F_OK), 0);
    assert_int_equal(acp_roots_open(f->roots, "dangin", O_WRONLY | O_CREAT, 0600, &fd), 0);
    pathf(want, f, "a/new-inside.txt");
    same_file(fd, want);
    close(fd);

    /* Outside, through a link: refused before anything is opened or created. */
    assert_int_equal(acp_roots_open(f->roots, "dang", O_WRONLY | O_CREAT, 0600, &fd), ACP_EACCES);
    assert_int_equal(fd, -1);
    pathf(want, f, "nowhere.txt");
    assert_int_equal(access(want, F_OK), -1);
    assert_int_equal(acp_roots_open(f->roots, "out", O_RDONLY, 0, &fd), ACP_EACCES);

    /* Missing file, missing parent (never created). */
    assert_int_equal(acp_roots_open(f->roots, "none.txt", O_RDONLY, 0, &fd), ACP_ENOTFOUND);
    assert_non_null(strstr(acp_error_last()->message, "none.txt"));
    assert_int_equal(acp_roots_open(f->roots, "nodir/x.txt", O_WRONLY | O_CREAT, 0600, &fd),
                     ACP_ENOTFOUND);
    assert_int_equal(acp_roots_write(f->roots, "nodir/x.txt", "x", 1), ACP_ENOTFOUND);
    pathf(want, f, "a/nodir");
    assert_int_equal(access(want, F_OK), -1);
}

static void test_root_slash(void **state)
{
    acp_roots *r = NULL;
    assert_int_equal(acp_roots_new("/", NULL, 0, &r), 0);
    char *out = NULL;
    assert_int_equal(acp_roots_resolve(r, "etc/../etc/./hostname", &out), 0);
    assert_string_equal(out, "/etc/hostname");
    free(out);
    assert_int_equal(acp_roots_resolve(r, "/..", &out), 0);
    assert_string_equal(out, "/");
    free(out);
    int fd;
    assert_int_equal(acp_roots_open(r, "/etc/hostname", O_RDONLY, 0, &fd), 0);
    close(fd);
    acp_roots_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_inside_and_relative, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dotdot_escape, setup, teardown),
        cmocka_unit_test_setup_teardown(test_symlink_escapes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_root_is_symlink, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prefix_confusion, setup, teardown),
        cmocka_unit_test_setup_teardown(test_errors_and_messages, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open, setup, teardown),
        cmocka_unit_test(test_root_slash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
