/* SPDX-License-Identifier: Apache-2.0 */
/* acp_roots under attack and under load (issue 20), each test run twice: through openat2 and
 * through the pre-5.6 walk (ACP_ROOTS_COMPAT=1), as every kernel path must hold.
 *   - a hostile thread swapping a directory for a link to the outside while we open, read,
 *     create and write under it: nothing outside is created, truncated or read;
 *   - a reader never sees a torn file while another process rewrites it (4 MB, again and
 *     again), and kill -9 in the middle of a large write leaves the old file whole and no
 *     temporary behind;
 *   - FIFOs, sockets and devices are refused at once (a FIFO would block the open forever);
 *   - a few lines of a huge sparse file are read in little memory, and a read over the
 *     maximum is refused;
 *   - links that stay inside the roots work (absolute, into another root), a write through
 *     one replaces the file it names, the mode is kept. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "acp/roots.h"
#include "tests/store/tmpdir.h"

/* T/root (the root, cwd) holding d/victim; T/other (a second root); T/outside/victim. */
typedef struct {
    char t[256];
    bool compat;
    acp_roots *roots;
} fx;

static void at(char *buf, const fx *f, const char *rel)
{
    snprintf(buf, PATH_MAX, "%s/%s", f->t, rel);
}

static void put(const fx *f, const char *rel, const char *text)
{
    char p[PATH_MAX];
    at(p, f, rel);
    FILE *fp = fopen(p, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
}

/* The whole file (malloc'd), or NULL when it cannot be opened. */
static char *slurp(const char *path, size_t *n)
{
    FILE *fp = fopen(path, "r");
    if (!fp) return NULL;
    char *b = NULL;
    size_t cap = 0, len = 0, k;
    do {
        if (len + 65536 > cap) b = realloc(b, cap = (cap + 65536) * 2);
        k = fread(b + len, 1, 65536, fp);
        len += k;
    } while (k > 0);
    fclose(fp);
    b[len] = '\0';
    if (n) *n = len;
    return b;
}

static size_t entries(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    f->compat = *state != NULL;
    if (f->compat) setenv("ACP_ROOTS_COMPAT", "1", 1);
    char tmp[PATH_MAX];
    assert_int_equal(tmpdir_make(tmp, sizeof tmp, "roots-safety"), 0);
    assert_non_null(realpath(tmp, f->t));
    char p[PATH_MAX], q[PATH_MAX];
    const char *dirs[] = {"root", "root/d", "other", "outside"};
    for (size_t i = 0; i < 4; i++) {
        at(p, f, dirs[i]);
        assert_int_equal(mkdir(p, 0755), 0);
    }
    put(f, "root/d/victim", "inside");
    put(f, "outside/victim", "SECRET");
    at(p, f, "root");
    at(q, f, "other");
    const char *extra[] = {q};
    assert_int_equal(acp_roots_new(p, extra, 1, &f->roots), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    acp_roots_free(f->roots);
    tmpdir_remove(f->t);
    unsetenv("ACP_ROOTS_COMPAT");
    free(f);
    return 0;
}

/* acp_roots_read(path, line, limit, max) succeeds with want. */
static void read_is(const fx *f, const char *path, size_t line, size_t limit, size_t max,
                    const char *want)
{
    char *text = NULL;
    size_t n = 0;
    int rc = acp_roots_read(f->roots, path, line, limit, max, &text, &n);
    if (rc) fail_msg("%s: %s", path, acp_error_last()->message);
    assert_string_equal(text, want);
    assert_int_equal(n, strlen(want));
    free(text);
}

/* --- the hostile swapper --------------------------------------------------------------- */

typedef struct {
    const fx *f;
    atomic_bool stop;
} swapper;

/* The loop: root/d becomes a link to the outside (relative, then absolute) and back,
 * as fast as it can. */
static void *swap_loop(void *arg)
{
    swapper *sw = arg;
    char d[PATH_MAX], real[PATH_MAX], out[PATH_MAX];
    at(d, sw->f, "root/d");
    at(real, sw->f, "root/d_real");
    at(out, sw->f, "outside");
    for (unsigned i = 0; !atomic_load(&sw->stop); i++) {
        if (rename(d, real)) continue;
        if (symlink(i & 1 ? out : "../outside", d) == 0) unlink(d);
        rename(real, d);
    }
    return NULL;
}

static void test_race(void **state)
{
    fx *f = *state;
    swapper sw = {.f = f};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, swap_loop, &sw), 0);
    char abs[PATH_MAX];
    at(abs, f, "root/d/victim");
    unsigned ok = 0, tries = 0;
    time_t end = time(NULL) + 3;
    while (time(NULL) < end) {
        const char *path = tries++ & 1 ? abs : "d/victim";
        int fd;
        if (acp_roots_open(f->roots, path, O_WRONLY | O_CREAT | O_TRUNC, 0644, &fd) == 0) {
            ok++;
            assert_int_equal(write(fd, "inside", 6), 6);
            close(fd);
        }
        if (acp_roots_open(f->roots, "d/created", O_WRONLY | O_CREAT, 0644, &fd) == 0) close(fd);
        ok += acp_roots_write(f->roots, path, "inside", 6) == 0;
        char *text = NULL;
        size_t n = 0;
        if (acp_roots_read(f->roots, path, 1, SIZE_MAX, 0, &text, &n) == 0) {
            ok++;
            if (strstr(text, "SECRET")) fail_msg("read the file outside the roots");
            free(text);
        }
    }
    atomic_store(&sw.stop, true);
    pthread_join(th, NULL);
    char p[PATH_MAX];
    at(p, f, "outside/victim");
    char *secret = slurp(p, NULL);
    assert_string_equal(secret, "SECRET"); /* neither truncated nor written */
    free(secret);
    at(p, f, "outside");
    assert_int_equal(entries(p), 1); /* nothing created there */
    assert_true(ok > 0);             /* and the accesses were not all refused */
}

/* --- torn reads, kill -9 ---------------------------------------------------------------- */

enum { BIG = 4 << 20 };

static void test_no_torn_reads(void **state)
{
    fx *f = *state;
    char *a = malloc(BIG), *b = malloc(BIG);
    memset(a, 'A', BIG);
    memset(b, 'B', BIG);
    assert_int_equal(acp_roots_write(f->roots, "big", a, BIG), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        for (int i = 0; i < 30; i++)
            if (acp_roots_write(f->roots, "big", i & 1 ? a : b, BIG)) _exit(1);
        _exit(0);
    }
    char p[PATH_MAX];
    at(p, f, "root/big");
    unsigned reads = 0, torn = 0;
    int st;
    while (waitpid(pid, &st, WNOHANG) == 0) {
        size_t n = 0;
        char *text = slurp(p, &n);
        assert_non_null(text);
        reads++;
        if (n != BIG || memcmp(text, text[0] == 'A' ? a : b, BIG)) torn++;
        free(text);
    }
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    assert_int_equal(torn, 0);
    assert_true(reads > 0);
    at(p, f, "root");
    assert_int_equal(entries(p), 2); /* d and big: no temporary left */
    free(a);
    free(b);
}

static void test_kill_during_write(void **state)
{
    fx *f = *state;
    enum { NEW = 64 << 20 };
    put(f, "root/keep", "the old content, whole");
    char p[PATH_MAX], dir[PATH_MAX];
    at(p, f, "root/keep");
    at(dir, f, "root");
    for (int i = 0; i < 6; i++) {
        int go[2];
        assert_int_equal(pipe(go), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            char *b = malloc(NEW);
            memset(b, 'B', NEW);
            close(go[0]);
            if (write(go[1], "g", 1) != 1) _exit(1);
            acp_roots_write(f->roots, "keep", b, NEW);
            _exit(0);
        }
        close(go[1]);
        char c;
        assert_int_equal(read(go[0], &c, 1), 1);
        close(go[0]);
        usleep(1000 * (useconds_t)i);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        size_t n = 0;
        char *text = slurp(p, &n);
        /* The old file, or (the kill came after the rename) the whole new one. */
        if (n == NEW) {
            assert_true(text[0] == 'B' && text[NEW - 1] == 'B');
            free(text);
            put(f, "root/keep", "the old content, whole");
        } else {
            assert_string_equal(text, "the old content, whole");
            free(text);
        }
        /* The pre-5.6 way names its temporary: a kill can leave one (roots.h says so). */
        if (!f->compat) assert_int_equal(entries(dir), 2); /* d and keep */
    }
}

/* --- special files ---------------------------------------------------------------------- */

static void test_special_files_refused(void **state)
{
    fx *f = *state;
    char p[PATH_MAX];
    at(p, f, "root/fifo");
    assert_int_equal(mkfifo(p, 0644), 0);
    char *text = NULL;
    size_t n = 0;
    int fd;
    /* Without O_NONBLOCK and the check, each of these waits for a writer or reader forever. */
    assert_int_equal(acp_roots_read(f->roots, "fifo", 1, SIZE_MAX, 0, &text, &n), ACP_EINVAL);
    assert_non_null(strstr(acp_error_last()->message, "is a FIFO"));
    assert_null(text);
    assert_int_equal(acp_roots_open(f->roots, "fifo", O_RDONLY, 0, &fd), ACP_EINVAL);
    assert_int_equal(acp_roots_open(f->roots, "fifo", O_WRONLY, 0, &fd), ACP_EINVAL);
    assert_non_null(strstr(acp_error_last()->message, "is a FIFO"));
    assert_int_equal(acp_roots_write(f->roots, "fifo", "x", 1), ACP_EINVAL);
    assert_non_null(strstr(acp_error_last()->message, "only regular files"));
    struct stat st;
    assert_int_equal(lstat(p, &st), 0);
    assert_true(S_ISFIFO(st.st_mode)); /* not replaced by a file either */

    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    at(sa.sun_path, f, "root/sock");
    assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(acp_roots_read(f->roots, "sock", 1, SIZE_MAX, 0, &text, &n), ACP_EINVAL);
    assert_non_null(strstr(acp_error_last()->message, "'sock' is a socket"));
    assert_int_equal(acp_roots_write(f->roots, "sock", "x", 1), ACP_EINVAL);
    close(s);

    assert_int_equal(acp_roots_read(f->roots, "d", 1, SIZE_MAX, 0, &text, &n), ACP_EINVAL);
    assert_non_null(strstr(acp_error_last()->message, "is a directory"));
    assert_int_equal(acp_roots_write(f->roots, "d", "x", 1), ACP_EINVAL);
    assert_int_equal(acp_roots_write(f->roots, ".", "x", 1), ACP_EINVAL);

    acp_roots *dev;
    assert_int_equal(acp_roots_new("/dev", NULL, 0, &dev), 0);
    assert_int_equal(acp_roots_read(dev, "zero", 1, SIZE_MAX, 0, &text, &n), ACP_EINVAL);
    assert_non_null(strstr(acp_error_last()->message, "character device"));
    acp_roots_free(dev);
}

/* --- bounded reads ---------------------------------------------------------------------- */

static long max_rss_kb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

static void test_bounded_reads(void **state)
{
    fx *f = *state;
    char p[PATH_MAX];
    put(f, "root/huge", "one\ntwo\nthree\nfour\n");
    at(p, f, "root/huge");
    assert_int_equal(truncate(p, (off_t)6 << 30), 0); /* 6 GiB, sparse */
    long before = max_rss_kb();
    read_is(f, "huge", 2, 2, 0, "two\nthree\n");
    char *text = NULL;
    size_t n = 0;
    long grown = max_rss_kb() - before;
    print_message("peak RSS growth reading 2 lines of 6 GiB sparse: %ld KiB\n", grown);
    assert_true(grown < 32 * 1024); /* the old full read took the file's size */
    /* The whole file: refused before reading, saying why. */
    assert_int_equal(acp_roots_read(f->roots, "huge", 1, SIZE_MAX, 0, &text, &n), ACP_ETOOBIG);
    assert_non_null(strstr(acp_error_last()->message, "maximum of one read (67108864 bytes)"));
    assert_null(text);
    /* 64 MiB of zeros is one line: refused while reading, at the maximum. */
    assert_int_equal(acp_roots_read(f->roots, "huge", 5, 1, 0, &text, &n), ACP_ETOOBIG);
    grown = max_rss_kb() - before;
    print_message("peak RSS growth reading past the 64 MiB maximum: %ld KiB\n", grown);
    assert_true(grown < 512 * 1024);

    /* line and limit, and the maximum applied to what is returned. */
    put(f, "root/small", "a\nbb\nccc\n");
    assert_int_equal(acp_roots_read(f->roots, "small", 1, SIZE_MAX, 5, &text, &n), ACP_ETOOBIG);
    read_is(f, "small", 2, 1, 5, "bb\n");
    read_is(f, "small", 3, SIZE_MAX, 4, "ccc\n");
    read_is(f, "small", 9, SIZE_MAX, 0, "");
    read_is(f, "small", 1, 0, 0, "");
}

/* --- links inside the roots, and what a write keeps ----------------------------------- */

static void test_links_inside_and_replace(void **state)
{
    fx *f = *state;
    char p[PATH_MAX], q[PATH_MAX];
    put(f, "root/f.txt", "f");
    put(f, "other/g.txt", "g");
    at(p, f, "root/f.txt");
    assert_int_equal(chmod(p, 0640), 0);
    at(q, f, "root/abs");
    assert_int_equal(symlink(p, q), 0); /* absolute, inside the same root */
    at(p, f, "other/g.txt");
    at(q, f, "root/tog");
    assert_int_equal(symlink(p, q), 0); /* into the other root */
    at(p, f, "root/f.txt");
    at(q, f, "root/hard");
    assert_int_equal(link(p, q), 0);

    read_is(f, "abs", 1, SIZE_MAX, 0, "f");
    read_is(f, "tog", 1, SIZE_MAX, 0, "g");
    char *text;

    assert_int_equal(acp_roots_write(f->roots, "abs", "new f", 5), 0);
    assert_int_equal(acp_roots_write(f->roots, "tog", "new g", 5), 0);
    struct stat st;
    at(p, f, "root/abs");
    assert_int_equal(lstat(p, &st), 0);
    assert_true(S_ISLNK(st.st_mode)); /* the link stays; the file it names is replaced */
    at(p, f, "root/f.txt");
    text = slurp(p, NULL);
    assert_string_equal(text, "new f");
    free(text);
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0640); /* the mode is kept */
    at(p, f, "other/g.txt");
    text = slurp(p, NULL);
    assert_string_equal(text, "new g");
    free(text);
    /* A rename splits a hard link: the other name keeps the old text (docs/agent.md). */
    at(p, f, "root/hard");
    text = slurp(p, NULL);
    assert_string_equal(text, "f");
    free(text);
    /* A new file: created with the umask's mode, and nothing else left in the directory. */
    assert_int_equal(acp_roots_write(f->roots, "d/new.txt", "", 0), 0);
    at(p, f, "root/d");
    assert_int_equal(entries(p), 2);
}

#define BOTH(t)                                                                                    \
    cmocka_unit_test_prestate_setup_teardown(t, setup, teardown, NULL),                            \
        cmocka_unit_test_prestate_setup_teardown(t, setup, teardown, (void *)"compat")

int main(void)
{
    const struct CMUnitTest tests[] = {
        BOTH(test_links_inside_and_replace),
        BOTH(test_special_files_refused),
        BOTH(test_bounded_reads),
        BOTH(test_no_torn_reads),
        BOTH(test_kill_during_write),
        BOTH(test_race),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
