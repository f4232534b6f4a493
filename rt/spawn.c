/* SPDX-License-Identifier: Apache-2.0 */
/* rt_spawn: acp_proc's fork + exec. uv_spawn would do, but for one call: the child has to ask
 * for PR_SET_PDEATHSIG between fork and exec (it cannot be set from outside), and uv_spawn has
 * no hook there. An exec wrapper program could set it instead, but a library cannot count on
 * finding its own helper binary (static links, relocated installs), so the fork is ours.
 *
 * The child side follows libuv's (src/unix/process.c, 1.44): signals blocked across fork() so
 * no handler of the parent runs in the child, dispositions reset to default, stdio moved into
 * place without clobbering, a close-on-exec pipe that carries a failed exec's errno back, and
 * PATH searched in the child's environment. Between fork() and exec the child calls only
 * async-signal-safe functions: another thread of the parent may hold malloc's lock. The exit
 * is noticed by acp_proc's own SIGCHLD watcher, which waits for this pid only, as libuv's does
 * for its own: neither steals the other's children. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "rt/spawn.h"
#include "rt/tree.h"

/* Where a name without '/' is looked for when the environment has no PATH (glibc's default). */
#define DEFAULT_PATH "/bin:/usr/bin"

/* The paths to try, in order, built before fork() (the child must not allocate). */
static char **exec_paths(const char *file, char *const *envp)
{
    const char *path = NULL;
    if (!strchr(file, '/')) {
        for (char *const *e = envp; *e && !path; e++)
            if (!strncmp(*e, "PATH=", 5)) path = *e + 5;
        if (!path) path = DEFAULT_PATH;
    }
    size_t n = 1;
    for (const char *p = path; p && *p; p++) n += *p == ':';
    char **v = calloc(n + 1, sizeof *v);
    if (!v) return NULL;
    if (!path) {
        v[0] = strdup(file);
        if (!v[0]) goto nomem;
        return v;
    }
    size_t k = 0, flen = strlen(file);
    for (const char *p = path;; p++) {
        size_t dlen = strcspn(p, ":");
        /* An empty entry means the current directory, as execvp() reads it. */
        char *s = malloc(dlen + flen + 2);
        if (!s) goto nomem;
        memcpy(s, p, dlen);
        s[dlen] = '/';
        memcpy(s + dlen + 1, file, flen + 1);
        v[k++] = dlen ? s : memmove(s, s + 1, flen + 1);
        p += dlen;
        if (!*p) break;
    }
    return v;
nomem:
    for (size_t i = 0; v[i]; i++) free(v[i]);
    free(v);
    return NULL;
}

static void free_paths(char **v)
{
    for (size_t i = 0; v && v[i]; i++) free(v[i]);
    free(v);
}

static _Noreturn void child_fail(int err_fd, int err)
{
    ssize_t n;
    do n = write(err_fd, &err, sizeof err);
    while (n < 0 && errno == EINTR);
    _exit(127);
}

/* In the child, between fork() and exec: async-signal-safe calls only. */
static _Noreturn void child(const rt_spawn_req *r, char **paths, char **sh_argv, int err_fd,
                            pid_t parent)
{
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    for (int n = 1; n < 32; n++) {
        if (n == SIGKILL || n == SIGSTOP) continue;
        if (sigaction(n, &dfl, NULL)) child_fail(err_fd, errno);
    }
    if (setsid() < 0) child_fail(err_fd, errno);
#ifdef __linux__
    if (prctl(PR_SET_PDEATHSIG, SIGKILL)) child_fail(err_fd, errno);
    /* The parent died before the request: the signal will never come, so leave now. */
    if (getppid() != parent) _exit(127);
#endif
    /* First move sources that sit on another slot's number (stdout wired to our fd 2 while
     * our fd 2 becomes the child's stderr...), then put each in place. */
    int fd[3] = {r->fd[0], r->fd[1], r->fd[2]};
    for (int i = 0; i < 3; i++) {
        if (fd[i] < 0 || fd[i] >= 3 || fd[i] == i) continue;
        fd[i] = fcntl(fd[i], F_DUPFD_CLOEXEC, 3);
        if (fd[i] < 0) child_fail(err_fd, errno);
    }
    for (int i = 0; i < 3; i++) {
        if (fd[i] < 0) {
            int nul = open("/dev/null", i == 0 ? O_RDONLY : O_RDWR);
            if (nul < 0) child_fail(err_fd, errno);
            if (nul != i && (dup2(nul, i) < 0 || close(nul))) child_fail(err_fd, errno);
            continue;
        }
        if (fd[i] == i ? fcntl(i, F_SETFD, 0) < 0 : dup2(fd[i], i) < 0) child_fail(err_fd, errno);
        /* A descriptor shared with us may be non-blocking; programs expect blocking stdio. */
        int fl = fcntl(i, F_GETFL);
        if (fl >= 0 && (fl & O_NONBLOCK)) fcntl(i, F_SETFL, fl & ~O_NONBLOCK);
    }
    if (r->cwd && chdir(r->cwd)) child_fail(err_fd, errno);
    sigset_t none;
    sigemptyset(&none);
    if (sigprocmask(SIG_SETMASK, &none, NULL)) child_fail(err_fd, errno);

    int err = ENOENT;
    bool eacces = false;
    for (size_t i = 0; paths[i]; i++) {
        execve(paths[i], r->argv, r->envp);
        if (errno == ENOEXEC) { /* no #! line: a shell script, as execvp() runs it */
            sh_argv[1] = paths[i];
            execve("/bin/sh", sh_argv, r->envp);
        }
        err = errno;
        if (err == EACCES) {
            eacces = true;
        } else if (err != ENOENT && err != ENOTDIR && err != ESTALE && err != ENODEV &&
                   err != ETIMEDOUT) {
            break; /* a real failure, not just "not in this directory" */
        }
    }
    child_fail(err_fd, eacces ? EACCES : err);
}

int rt_spawn(const rt_spawn_req *r, int *out)
{
    *out = 0;
    char **paths = exec_paths(r->file, r->envp);
    size_t argc = 0;
    while (r->argv[argc]) argc++;
    char **sh_argv = calloc(argc + 2, sizeof *sh_argv);
    int ep[2] = {-1, -1};
    int rc = 0;
    if (!paths || !sh_argv) {
        rc = -ENOMEM;
        goto out;
    }
    sh_argv[0] = "/bin/sh";
    for (size_t i = 1; i < argc; i++) sh_argv[i + 1] = r->argv[i];
    if (pipe2(ep, O_CLOEXEC)) {
        rc = -errno;
        goto out;
    }

    /* Synchronous signals stay deliverable: blocking them would turn a crash into a hang. */
    sigset_t all, old;
    sigfillset(&all);
    int sync_sigs[] = {SIGKILL, SIGSTOP, SIGTRAP, SIGSEGV, SIGBUS, SIGILL, SIGSYS, SIGABRT, SIGFPE};
    for (size_t i = 0; i < sizeof sync_sigs / sizeof *sync_sigs; i++) sigdelset(&all, sync_sigs[i]);
    pid_t parent = getpid();
    rt_children_lock();
    if (rt_children_reserve()) {
        rt_children_unlock();
        rc = -ENOMEM;
        goto out;
    }
    pthread_sigmask(SIG_BLOCK, &all, &old);
    pid_t pid = fork();
    if (pid == 0) child(r, paths, sh_argv, ep[1], parent);
    int fork_errno = errno;
    if (pid > 0) rt_children_add(pid);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    rt_children_unlock();
    close(ep[1]);
    ep[1] = -1;
    if (pid < 0) {
        rc = -fork_errno;
        goto out;
    }

    /* EOF: the exec succeeded (the pipe was close-on-exec). An int: it failed, and said why. */
    int err;
    ssize_t n;
    do n = read(ep[0], &err, sizeof err);
    while (n < 0 && errno == EINTR);
    if (n != 0) {
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) continue;
        rt_children_remove(pid);
        rc = n == (ssize_t)sizeof err ? -err : -EIO;
        goto out;
    }
    *out = pid;
out:
    if (ep[0] >= 0) close(ep[0]);
    if (ep[1] >= 0) close(ep[1]);
    free_paths(paths);
    free(sh_argv);
    return rc;
}
