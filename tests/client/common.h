/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the client tests: opening a client on a Node agent from tests/client, collecting
 * what the application sees, and the files and descriptors around it. */
#ifndef ACP_TEST_CLIENT_COMMON_H
#define ACP_TEST_CLIENT_COMMON_H

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acp/client.h"

typedef struct seen {
    int updates;
    int other;          /* ACP_UPDATE_OTHER updates */
    int replayed;       /* updates flagged replay */
    size_t biggest;     /* largest update text */
    acp_buf text;       /* agent_message_chunk texts, concatenated */
    char last_kind[64]; /* the last sessionUpdate literal */
    int perm_mode;      /* tests choose what on_permission does */
    acp_client_perm *held;
} seen;

/* Appends an agent_message_chunk's text to b; returns its length (0 for another kind, or a
 * chunk whose content has no text). */
static inline size_t chunk_text(const acp_update *u, acp_buf *b)
{
    if (u->kind != ACP_UPDATE_AGENT_MESSAGE_CHUNK) return 0;
    json_t *j = json_loadb(u->update.p, u->update.n, 0, NULL);
    json_t *t = json_object_get(json_object_get(j, "content"), "text");
    size_t n = json_string_length(t);
    if (json_is_string(t)) acp_buf_append(b, json_string_value(t), n);
    json_decref(j);
    return n;
}

static inline void seen_update(acp_client *c, acp_client_session *s, const acp_update *u,
                               void *user)
{
    seen *k = user;
    k->updates++;
    /* Per-session counts, for tests that set an int as the session's user pointer; the
     * update must be the handle's own. */
    if (s && acp_client_session_user(s)) {
        if (!acp_json_str_eq(u->session_id, acp_client_session_id(s))) abort();
        ++*(int *)acp_client_session_user(s);
    }
    if (u->kind == ACP_UPDATE_OTHER) k->other++;
    if (u->replay) k->replayed++;
    if (u->update.n > k->biggest) k->biggest = u->update.n;
    size_t n = u->kind_text.n < sizeof k->last_kind - 1 ? u->kind_text.n : sizeof k->last_kind - 1;
    memcpy(k->last_kind, u->kind_text.p, n);
    k->last_kind[n] = 0;
    chunk_text(u, &k->text);
}

/* argv for `node tests/client/<script>` (static storage). */
static inline const char *const *node_agent(const char *script)
{
    static char path[4096];
    static const char *argv[3];
    snprintf(path, sizeof path, "%s/tests/client/%s", getenv("ACP_SOURCE"), script);
    argv[0] = ACP_NODE;
    argv[1] = path;
    argv[2] = NULL;
    return argv;
}

/* Descriptors open in this process: a test compares the count before and after. */
static inline int count_fds(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    for (struct dirent *e; d && (e = readdir(d));) n += e->d_name[0] != '.';
    if (d) closedir(d);
    return n;
}

static inline void put_file(const char *path, const char *text)
{
    FILE *fp = fopen(path, "w");
    if (!fp || fputs(text, fp) < 0 || fclose(fp)) abort();
}

/* The fs tests' root set, in two new directories made from the mkdtemp templates root and
 * outside: root/a.txt (a_text), outside/secret.txt ("secret\n"), root/link (a symlink to the
 * secret) and root/dirlink (to outside). */
static inline void make_roots(char *root, char *outside, const char *a_text)
{
    char p[256], q[256];
    if (!mkdtemp(root) || !mkdtemp(outside)) abort();
    snprintf(p, sizeof p, "%s/a.txt", root);
    put_file(p, a_text);
    snprintf(p, sizeof p, "%s/secret.txt", outside);
    put_file(p, "secret\n");
    snprintf(q, sizeof q, "%s/link", root);
    if (symlink(p, q)) abort();
    snprintf(q, sizeof q, "%s/dirlink", root);
    if (symlink(outside, q)) abort();
}

/* rm -rf of a test's directory (NULL or "" is ignored); false when it failed. */
static inline bool rm_rf(const char *dir)
{
    if (!dir || !*dir) return true;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0;
}

/* Before any test: an agent that exits early must not kill the test with SIGPIPE, and libuv's
 * process-wide pipe (opened once, at the first loop) must not count as a test's descriptor. */
static inline void test_process_init(void)
{
    signal(SIGPIPE, SIG_IGN);
    uv_loop_t warm;
    uv_loop_init(&warm);
    uv_loop_close(&warm);
}

/* A fresh record (the lines a recording test agent receives, ACP_RECORD) for the agent spawned
 * next, in path, named after the test. */
static inline void record_start(char *path, size_t cap, const char *test)
{
    snprintf(path, cap, "/tmp/acp-test-%s-%d.jsonl", test, (int)getpid());
    unlink(path);
    setenv("ACP_RECORD", path, 1);
}

/* What the agent received, as one string (caller frees). *c is freed first and set NULL: the
 * agent has flushed its record once it exited. Aborts, said, when there is no record. */
static inline char *record_read(const char *path, acp_client **c)
{
    acp_client_free(*c);
    *c = NULL;
    FILE *fp = fopen(path, "r");
    if (!fp) {
        fprintf(stderr, "no record at %s\n", path);
        abort();
    }
    acp_buf b = {0};
    char tmp[4096];
    size_t n;
    while ((n = fread(tmp, 1, sizeof tmp, fp)) > 0) acp_buf_append(&b, tmp, n);
    fclose(fp);
    acp_buf_cstr(&b);
    return b.data;
}

/* The fixture of the tests that prove what the client sent, and did not, to a recording agent
 * (a tests/client script): the client, its updates counted in k. */
typedef struct recording {
    char record[256];
    acp_client *c;
    seen k;
} recording;

/* Opens node_agent(script) with a fresh record named after test; NULL (said) when it cannot. */
static inline recording *recording_open(const char *test, const char *script)
{
    recording *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    record_start(f->record, sizeof f->record, test);
    acp_client_opts o = {.struct_size = sizeof(acp_client_opts),
                         .argv = node_agent(script),
                         .on_update = seen_update,
                         .user = &f->k};
    if (acp_client_open(&o, &f->c)) {
        fprintf(stderr, "open: %s\n", acp_error_last()->message);
        free(f);
        return NULL;
    }
    return f;
}

static inline void recording_free(recording *f)
{
    acp_client_free(f->c);
    acp_buf_free(&f->k.text);
    unlink(f->record);
    free(f);
}

static inline char *recording_text(recording *f)
{
    return record_read(f->record, &f->c);
}

#endif
