/* SPDX-License-Identifier: Apache-2.0 */
/* The process tree: tags and sweeps, the registry of pids acp_procs wait for, our children.
 *
 * /proc is read with plain blocking calls: it is not disk I/O, and a sweep happens only when a
 * process ends or is stopped. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <uv.h>

#include "acp/error.h"
#include "rt/tree.h"

/* A sweep stops after this many rounds even if a process keeps forking faster than we kill. */
#define SWEEP_ROUNDS 16
/* Environments larger than this are read only this far (the kernel's limit is 2 MiB + argv). */
#define ENV_MAX (4u << 20)

int rt_tag_new(char tag[RT_TAG_LEN + 1])
{
    unsigned char r[RT_TAG_LEN / 2];
    if (uv_random(NULL, NULL, r, sizeof r, 0, NULL)) return ACP_EIO;
    for (size_t i = 0; i < sizeof r; i++) snprintf(tag + 2 * i, 3, "%02x", r[i]);
    return 0;
}

/* --- sweep ---------------------------------------------------------------------------------- */

typedef struct {
    char *data;
    size_t len, cap;
} rbuf;

/* Reads the environment of the process whose /proc directory is dir. Fails (false) for
 * processes we may not inspect (another user's, or not dumpable), and a zombie's is empty. */
static bool read_env(int dir, rbuf *b)
{
    int fd = openat(dir, "environ", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    b->len = 0;
    for (;;) {
        if (b->cap - b->len < 4096) {
            size_t cap = b->cap ? b->cap * 2 : 65536;
            if (cap > ENV_MAX) break;
            char *d = realloc(b->data, cap);
            if (!d) break;
            b->data = d;
            b->cap = cap;
        }
        ssize_t n = read(fd, b->data + b->len, b->cap - b->len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        b->len += (size_t)n;
    }
    close(fd);
    return b->len > 0;
}

/* Whether an entry RT_TAG_VAR=... of the NUL-separated environment lists tag as a word. */
static bool env_has_tag(const rbuf *b, const char *tag)
{
    static const char var[] = RT_TAG_VAR "=";
    const char *p = b->data, *end = b->data + b->len;
    while (p < end) {
        const char *e = memchr(p, '\0', (size_t)(end - p));
        if (!e) e = end;
        if ((size_t)(e - p) > sizeof var - 1 && !memcmp(p, var, sizeof var - 1)) {
            const char *w = p + sizeof var - 1;
            while (w < e) {
                const char *sp = memchr(w, ' ', (size_t)(e - w));
                if (!sp) sp = e;
                if (sp - w == RT_TAG_LEN && !memcmp(w, tag, RT_TAG_LEN)) return true;
                w = sp + 1;
            }
        }
        p = e + 1;
    }
    return false;
}

/* Signals through the /proc directory fd when the kernel can (Linux 5.1): it names that very
 * process, never one that reused its pid since we read its environment. */
static void signal_proc(int dir, int pid, int sig)
{
#ifdef SYS_pidfd_send_signal
    if (syscall(SYS_pidfd_send_signal, dir, sig, NULL, 0) == 0 || errno != ENOSYS) return;
#endif
    kill(pid, sig);
}

static bool all_digits(const char *s)
{
    if (!*s) return false;
    for (; *s; s++)
        if (*s < '0' || *s > '9') return false;
    return true;
}

typedef struct {
    int *v;
    size_t n, cap;
} plist;

static void push(plist *l, int pid)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        int *v = realloc(l->v, cap * sizeof *v);
        if (!v) return; /* a pid less to look at; nothing else breaks */
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = pid;
}

static bool has(const plist *l, int pid)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i] == pid) return true;
    return false;
}

/* Whether the kernel lists children (CONFIG_PROC_CHILDREN): /proc/PID/task/TID/children. */
static bool children_files(void)
{
    return access("/proc/thread-self/children", R_OK) == 0;
}

/* The children of process `who` ("self" or a pid). An orphan may be handed to any thread of a
 * subreaper, so every thread's list is read. */
static void children_of(const char *who, plist *out)
{
    char path[300];
    snprintf(path, sizeof path, "/proc/%s/task", who);
    DIR *d = opendir(path);
    if (!d) return; /* gone meanwhile */
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!all_digits(e->d_name)) continue;
        char buf[4096];
        snprintf(path, sizeof path, "/proc/%s/task/%s/children", who, e->d_name);
        FILE *f = fopen(path, "re");
        if (!f) continue; /* the thread ended */
        setvbuf(f, buf, _IOFBF, sizeof buf);
        int pid;
        while (fscanf(f, "%d", &pid) == 1) push(out, pid);
        fclose(f);
    }
    closedir(d);
}

/* Where a sweep looks. A subreaper's descendants cannot leave its tree (an orphan comes back
 * to it), so when we are one, and the kernel lists children, our descendants are all there is
 * to read: a few processes, not the whole system. Otherwise an orphan may have gone to init
 * or to an ancestor's subreaper: then every process is read. */
static void candidates(plist *out)
{
    out->n = 0;
    int sub = 0;
#ifdef PR_GET_CHILD_SUBREAPER
    if (prctl(PR_GET_CHILD_SUBREAPER, &sub)) sub = 0;
#endif
    if (sub && children_files()) {
        children_of("self", out);
        /* Breadth first; the bound only matters if pids are reused under our feet. */
        for (size_t i = 0; i < out->n && out->n < 65536; i++) {
            char who[16];
            snprintf(who, sizeof who, "%d", out->v[i]);
            children_of(who, out);
        }
        return;
    }
    out->n = 0;
    DIR *d = opendir("/proc");
    if (!d) return;
    int self = getpid();
    struct dirent *e;
    while ((e = readdir(d)))
        if (all_digits(e->d_name) && atoi(e->d_name) != self) push(out, atoi(e->d_name));
    closedir(d);
}

int rt_sweep(const char *tag, int sig)
{
    rbuf b = {0};
    plist cand = {0}, seen = {0};
    for (int round = 0; round < SWEEP_ROUNDS; round++) {
        size_t fresh = 0;
        candidates(&cand);
        for (size_t i = 0; i < cand.n; i++) {
            char path[32];
            snprintf(path, sizeof path, "/proc/%d", cand.v[i]);
            int dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (dir < 0) continue;
            if (read_env(dir, &b) && env_has_tag(&b, tag)) {
                signal_proc(dir, cand.v[i], sig);
                if (!has(&seen, cand.v[i])) {
                    fresh++;
                    push(&seen, cand.v[i]);
                }
            }
            close(dir);
        }
        /* A SIGTERM is a request: who gets it may fork its way out; SIGKILL follows. */
        if (!fresh || sig != SIGKILL) break;
    }
    free(b.data);
    free(cand.v);
    free(seen.v);
    return (int)seen.n;
}

/* --- registry ------------------------------------------------------------------------------- */

/* Process-wide, like the set of children it describes: acp_procs on any loop, any thread. */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static int *reg;
static size_t nreg, reg_cap;

void rt_children_lock(void)
{
    pthread_mutex_lock(&reg_lock);
}

void rt_children_unlock(void)
{
    pthread_mutex_unlock(&reg_lock);
}

int rt_children_reserve(void)
{
    if (nreg < reg_cap) return 0;
    size_t cap = reg_cap ? reg_cap * 2 : 16;
    int *v = realloc(reg, cap * sizeof *v);
    if (!v) return ACP_ENOMEM;
    reg = v;
    reg_cap = cap;
    return 0;
}

void rt_children_add(int pid)
{
    reg[nreg++] = pid;
}

bool rt_children_has(int pid)
{
    for (size_t i = 0; i < nreg; i++)
        if (reg[i] == pid) return true;
    return false;
}

void rt_children_remove(int pid)
{
    rt_children_lock();
    for (size_t i = 0; i < nreg; i++) {
        if (reg[i] == pid) {
            reg[i] = reg[--nreg];
            break;
        }
    }
    if (!nreg) { /* nothing left for a leak checker to call reachable */
        free(reg);
        reg = NULL;
        reg_cap = 0;
    }
    rt_children_unlock();
}

/* --- our children --------------------------------------------------------------------------- */

int rt_list_children(int **out)
{
    plist l = {0};
    if (children_files()) {
        children_of("self", &l);
    } else {
        /* Every /proc/PID/stat: "pid (comm) state ppid ...", where comm may hold anything. */
        l.n = 0;
        DIR *d = opendir("/proc");
        int self = getpid();
        struct dirent *e;
        while (d && (e = readdir(d))) {
            if (!all_digits(e->d_name)) continue;
            char path[300], buf[512];
            snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
            int fd = open(path, O_RDONLY | O_CLOEXEC);
            if (fd < 0) continue;
            ssize_t len = read(fd, buf, sizeof buf - 1);
            close(fd);
            if (len <= 0) continue;
            buf[len] = '\0';
            char *rp = strrchr(buf, ')');
            int ppid;
            char state;
            if (rp && sscanf(rp + 1, " %c %d", &state, &ppid) == 2 && ppid == self)
                push(&l, atoi(e->d_name));
        }
        if (d) closedir(d);
    }
    if (!l.n) {
        free(l.v);
        l.v = NULL;
    }
    *out = l.v;
    return (int)l.n;
}
