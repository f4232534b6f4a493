/* SPDX-License-Identifier: Apache-2.0 */
#include "fuzz/agent_harness.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "fuzz/check_output.h"
#include "rt/spawn.h"
#include "store/store_impl.h"

/* --- no processes ------------------------------------------------------------------------- */

/* Fails as a spawn does when exec fails, so acp_proc takes its ordinary failure path (its
 * pipes and handles released) and no child ever exists: a stdio MCP server with any command
 * fails before fork(). */
int __wrap_rt_spawn(const rt_spawn_req *r, int *pid)
{
    *pid = 0;
    return -EINVAL;
}

/* --- ids from a counter ------------------------------------------------------------------- */

/* Only the agent's calls are wrapped: libuv and jansson are shared libraries, their getrandom
 * calls are not. */
static uint64_t next_random;

void fuzz_ids_reset(void)
{
    next_random = 0;
}

ssize_t __wrap_getrandom(void *buf, size_t n, unsigned flags)
{
    unsigned char *b = buf;
    memset(b, 0, n);
    uint64_t v = next_random++;
    for (size_t i = 0; i < 8 && i < n; i++) b[n - 1 - i] = (unsigned char)(v >> (8 * i));
    return (ssize_t)n;
}

/* --- store faults ------------------------------------------------------------------------- */

typedef struct wrapped {
    acp_store *st;
    const acp_store_ops *real;
    acp_store_ops ops;
    fuzz_store_faults *f;
} wrapped;

static wrapped stores[FUZZ_STORES];

static wrapped *find(const acp_store *st)
{
    for (int i = 0; i < FUZZ_STORES; i++)
        if (stores[i].st == st) return &stores[i];
    abort();
}

static int commit(acp_store *st, const char *now)
{
    wrapped *w = find(st);
    if (w->f->commit) {
        w->f->commit = false;
        w->f->commits_failed++;
        return acp_error_set(ACP_ESTORE, "disk I/O error (injected)");
    }
    return w->real->commit(st, now);
}

/* True (after setting st's error) when the next call of operation `op` was armed to fail. */
static bool op_fails(acp_store *st, char op)
{
    fuzz_store_faults *f = find(st)->f;
    char *at = strchr(f->ops, op);
    if (!at) return false;
    memmove(at, at + 1, strlen(at));
    f->ops_failed++;
    acp_error_set(ACP_ESTORE, "disk full (injected)");
    return true;
}

static int op_create(acp_store *st, const acp_store_session *s, const char *holder, unsigned ttl_ms)
{
    return op_fails(st, 'c') ? ACP_ESTORE : find(st)->real->create(st, s, holder, ttl_ms);
}

static int op_get(acp_store *st, const char *id, acp_store_session *out)
{
    return op_fails(st, 'g') ? ACP_ESTORE : find(st)->real->get(st, id, out);
}

static int op_set_info(acp_store *st, const char *id, int64_t fence, bool set_title,
                       const char *title, const char *updated_at)
{
    return op_fails(st, 'i')
               ? ACP_ESTORE
               : find(st)->real->set_info(st, id, fence, set_title, title, updated_at);
}

static int op_set_roots(acp_store *st, const char *id, int64_t fence, const char *cwd,
                        const char *add_dirs)
{
    return op_fails(st, 'r') ? ACP_ESTORE : find(st)->real->set_roots(st, id, fence, cwd, add_dirs);
}

static int op_set_state(acp_store *st, const char *id, int64_t fence, const char *state)
{
    return op_fails(st, 's') ? ACP_ESTORE : find(st)->real->set_state(st, id, fence, state);
}

static int op_replay(acp_store *st, const char *id, int64_t after_seq, size_t max_bytes,
                     acp_store_replay_cb cb, void *user, int64_t *last_seq, bool *done)
{
    return op_fails(st, 'p')
               ? ACP_ESTORE
               : find(st)->real->replay(st, id, after_seq, max_bytes, cb, user, last_seq, done);
}

static int op_list(acp_store *st, const char *cwd, int archived, const char *cursor, unsigned limit,
                   acp_store_list_cb cb, void *user, char **next_cursor)
{
    return op_fails(st, 'l')
               ? ACP_ESTORE
               : find(st)->real->list(st, cwd, archived, cursor, limit, cb, user, next_cursor);
}

static int op_remove(acp_store *st, const char *id)
{
    return op_fails(st, 'd') ? ACP_ESTORE : find(st)->real->remove(st, id);
}

void fuzz_store_wrap(acp_store *st, fuzz_store_faults *f)
{
    wrapped *w = find(NULL);
    *w = (wrapped){.st = st, .real = st->ops, .ops = *st->ops, .f = f};
    w->ops.commit = commit;
    w->ops.create = op_create;
    w->ops.get = op_get;
    w->ops.set_info = op_set_info;
    w->ops.set_roots = op_set_roots;
    w->ops.set_state = op_set_state;
    w->ops.replay = op_replay;
    w->ops.list = op_list;
    w->ops.remove = op_remove;
    st->ops = &w->ops;
}

void fuzz_store_unwrap(acp_store *st)
{
    wrapped *w = find(st);
    st->ops = w->real;
    *w = (wrapped){0};
}

/* --- output ------------------------------------------------------------------------------- */

void fuzz_agent_drain(acp_agent *a, void (*line)(const char *, size_t, void *), void *user)
{
    acp_agent_flush(a);
    fuzz_check_output_lines(acp_agent_conn(a), line, user);
}
