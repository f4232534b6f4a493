/* SPDX-License-Identifier: Apache-2.0 */
/* The generic layer: picks the backend, checks arguments once for both backends, keeps the
 * error message, and forwards every call through the ops table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp/json.h"
#include "store/backends.h"
#include "store/inject.h"
#include "rpc/lasterr.h"

/* The 1.0 size of acp_store_session (when it changes: rpc/lasterr.h). */
#define ACP_STORE_SESSION_SIZE_1_0 ACP_STRUCT_SIZE_AT(acp_store_session, updated_at)

/* acp_store_set_state's limit (the header's "at most 1 MiB"): a session's state is a handful
 * of mode and option ids, so anything near this is a bug upstream, not data to keep. */
#define STATE_MAX ((size_t)1 << 20)
/* The scanner recurses once per nesting level; the agent's state is a few levels deep, and
 * this is the depth the rpc layer allows for whole messages. */
#define STATE_MAX_DEPTH 256

void acp_store_init(acp_store *st, const acp_store_ops *ops)
{
    memset(st, 0, sizeof *st);
    st->ops = ops;
}

/* A libpq URI, or a conninfo ("host=... dbname=..."): a file path never needs '=' in
 * practice, and libpq's own rule is that a conninfo is recognised by it. */
static bool is_postgres(const char *where)
{
    return strncmp(where, "postgresql://", 13) == 0 || strncmp(where, "postgres://", 11) == 0 ||
           strchr(where, '=') != NULL;
}

int acp_store_open(const char *where, acp_store **out)
{
    *out = NULL;
    if (!where || !*where) return acp_error_set(ACP_ESTORE, "store: empty store location");
    if (is_postgres(where)) return acp_store_pg_open(where, out);
    return acp_store_sqlite_open(where, out);
}

void acp_store_close(acp_store *st)
{
    if (!st) return;
    acp_store_batch *b = &st->batch;
    free(b->buf);
    free(b->items);
    free(b->sess);
    memset(b, 0, sizeof *b);
    free(st->gone);
    st->gone = NULL;
    free(st->lost);
    st->lost = NULL;
    free(st->inject);
    st->inject = NULL;
    st->ops->close(st);
}

const char *acp_store_backend(const acp_store *st)
{
    return st->ops->name;
}

/* Whether the caller's struct has the members after 1.0 (size: its struct_size). */
#define HAS_1_1(size) ((size) >= ACP_STRUCT_SIZE_AT(acp_store_session, system_prompt))
/* ... and the subagent sessions' parent (unstable). */
#define HAS_PARENT(size) ((size) >= ACP_STRUCT_SIZE_AT(acp_store_session, parent))

void acp_store_session_clear(acp_store_session *s)
{
    size_t size = s->struct_size;
    free(s->id);
    free(s->cwd);
    free(s->add_dirs);
    free(s->title);
    free(s->state);
    if (HAS_1_1(size)) free(s->system_prompt);
    if (HAS_PARENT(size)) free(s->parent);
    /* Only the bytes the caller's struct has: one built against 1.0 is smaller than ours. */
    memset(s, 0, size < sizeof *s ? size : sizeof *s);
    s->struct_size = size;
}

int acp_store_session_copy(acp_store_session *out, const acp_store_session *in)
{
    *out =
        (acp_store_session){.struct_size = sizeof(acp_store_session),
                            .id = strdup(in->id),
                            .cwd = strdup(in->cwd),
                            .add_dirs = strdup(in->add_dirs),
                            .title = in->title ? strdup(in->title) : NULL,
                            .state = in->state ? strdup(in->state) : NULL,
                            .archived = in->archived,
                            .system_prompt = in->system_prompt ? strdup(in->system_prompt) : NULL,
                            .parent = in->parent ? strdup(in->parent) : NULL};
    memcpy(out->created_at, in->created_at, sizeof out->created_at);
    memcpy(out->updated_at, in->updated_at, sizeof out->updated_at);
    if (out->id && out->cwd && out->add_dirs && (out->title || !in->title) &&
        (out->state || !in->state) && (out->system_prompt || !in->system_prompt) &&
        (out->parent || !in->parent))
        return 0;
    acp_store_session_clear(out);
    return ACP_ENOMEM;
}

/* Counts the operation for an armed fault (store/inject.h); a NULL test when none is. */
static void begin(acp_store *st, unsigned op)
{
    if (st->inject) acp_store_inject_op(st, op);
}

static int bad(acp_store *st, const char *what)
{
    return acp_error_set(ACP_EINVAL, "store: invalid %s", what);
}

static int check_object(const char *text, const char *what);

static int create(acp_store *st, const acp_store_session *app, const char *holder, unsigned ttl_ms)
{
    unsigned mark = acp_error_mark();
    acp_store_session in;
    const acp_store_session *s = &in;
    int rc = acp_struct_read(&in, sizeof in, ACP_STORE_SESSION_SIZE_1_0, app, "acp_store_session");
    if (rc) return rc;
    if (!app || !s->id || !*s->id || strlen(s->id) > ACP_STORE_ID_MAX) return bad(st, "session id");
    if (!s->cwd || !s->add_dirs) return bad(st, "session roots");
    if (s->parent &&
        (!*s->parent || strlen(s->parent) > ACP_STORE_ID_MAX || !strcmp(s->parent, s->id)))
        return bad(st, "parent session id");
    if (!acp_store_time_valid(s->created_at) || !acp_store_time_valid(s->updated_at))
        return bad(st, "session timestamp");
    if ((rc = check_object(s->system_prompt, "system prompt"))) return rc;
    begin(st, ACP_FAULT_CREATE);
    return acp_error_since(mark, st->ops->create(st, s, holder, ttl_ms));
}

int acp_store_create(acp_store *st, const acp_store_session *s)
{
    return create(st, s, NULL, 0);
}

static bool bad_holder(const char *h);
static bool bad_ttl(unsigned ttl_ms);

int acp_store_create_leased(acp_store *st, const acp_store_session *s, const char *holder,
                            unsigned ttl_ms, int64_t *fence)
{
    *fence = 0;
    if (bad_holder(holder) || bad_ttl(ttl_ms))
        return bad(st, bad_ttl(ttl_ms) ? "lease ttl" : "lease holder");
    int rc = create(st, s, holder, ttl_ms);
    if (!rc) *fence = 1;
    return rc;
}

int acp_store_get(acp_store *st, const char *id, acp_store_session *out)
{
    unsigned mark = acp_error_mark();
    /* Ours in full, then as much as the caller's struct holds. */
    acp_store_session full = ACP_STORE_SESSION_INIT;
    int rc =
        acp_struct_write(out, sizeof full, ACP_STORE_SESSION_SIZE_1_0, &full, "acp_store_session");
    if (rc) return rc;
    if (!id) return bad(st, "session id");
    begin(st, ACP_FAULT_GET);
    rc = acp_error_since(mark, st->ops->get(st, id, &full));
    acp_struct_write(out, sizeof full, ACP_STORE_SESSION_SIZE_1_0, &full, "acp_store_session");
    /* What the caller's struct has no room for is not handed over: freed here. */
    if (!HAS_1_1(out->struct_size)) free(full.system_prompt);
    if (!HAS_PARENT(out->struct_size)) free(full.parent);
    return rc;
}

int acp_store_set_info(acp_store *st, const char *id, int64_t fence, bool set_title,
                       const char *title, const char *updated_at)
{
    unsigned mark = acp_error_mark();
    if (!id) return bad(st, "session id");
    if (fence < 0) return bad(st, "lease fence");
    if (updated_at && !acp_store_time_valid(updated_at)) return bad(st, "timestamp");
    begin(st, ACP_FAULT_SET_INFO);
    return acp_error_since(mark, st->ops->set_info(st, id, fence, set_title, title, updated_at));
}

int acp_store_set_roots(acp_store *st, const char *id, int64_t fence, const char *cwd,
                        const char *add_dirs)
{
    unsigned mark = acp_error_mark();
    if (!id) return bad(st, "session id");
    if (fence < 0) return bad(st, "lease fence");
    if (!cwd || !add_dirs) return bad(st, "session roots");
    begin(st, ACP_FAULT_SET_ROOTS);
    return acp_error_since(mark, st->ops->set_roots(st, id, fence, cwd, add_dirs));
}

/* A JSON object, judged by its first character after the whitespace JSON allows around a
 * value (acp_json_kind() looks only at the first byte it is given). */
static bool is_object(const char *s, size_t n)
{
    size_t i = strspn(s, " \t\n\r");
    return acp_json_kind((acp_span){s + i, n - i}) == 'o';
}

/* The state and the system prompt: NULL, or a JSON object of at most STATE_MAX bytes. */
static int check_object(const char *text, const char *what)
{
    if (!text) return 0;
    /* strnlen: a runaway string is refused without reading all of it */
    size_t n = strnlen(text, STATE_MAX + 1);
    if (n > STATE_MAX)
        return acp_error_set(ACP_EINVAL, "store: session %s over %zu bytes", what, STATE_MAX);
    if (acp_json_validate(text, n, STATE_MAX_DEPTH) || !is_object(text, n))
        return acp_error_set(ACP_EINVAL, "store: session %s is not a JSON object", what);
    return 0;
}

int acp_store_set_state(acp_store *st, const char *id, int64_t fence, const char *state)
{
    unsigned mark = acp_error_mark();
    if (!id) return bad(st, "session id");
    if (fence < 0) return bad(st, "lease fence");
    int rc = check_object(state, "state");
    if (rc) return rc;
    begin(st, ACP_FAULT_SET_STATE);
    return acp_error_since(mark, st->ops->set_state(st, id, fence, state));
}

int acp_store_set_system_prompt(acp_store *st, const char *id, int64_t fence, const char *json)
{
    unsigned mark = acp_error_mark();
    if (!id) return bad(st, "session id");
    if (fence < 0) return bad(st, "lease fence");
    int rc = check_object(json, "system prompt");
    if (rc) return rc;
    begin(st, ACP_FAULT_SET_STATE);
    return acp_error_since(mark, st->ops->set_system_prompt(st, id, fence, json));
}

int acp_store_set_archived(acp_store *st, const char *id, bool archived)
{
    unsigned mark = acp_error_mark();
    if (!id) return bad(st, "session id");
    begin(st, ACP_FAULT_SET_INFO);
    return acp_error_since(mark, st->ops->set_archived(st, id, archived));
}

int acp_store_replay(acp_store *st, const char *id, int64_t after_seq, size_t max_bytes,
                     acp_store_replay_cb cb, void *user, int64_t *last_seq, bool *done)
{
    unsigned mark = acp_error_mark();
    if (!id || !cb || after_seq < 0) return bad(st, "replay argument");
    int64_t last = after_seq;
    bool fin = false;
    begin(st, ACP_FAULT_REPLAY);
    int rc = st->ops->replay(st, id, after_seq, max_bytes, cb, user, &last, &fin);
    if (last_seq) *last_seq = last;
    if (done) *done = fin;
    return acp_error_since(mark, rc);
}

int acp_store_list_archived(acp_store *st, const char *cwd, int archived, const char *cursor,
                            unsigned limit, acp_store_list_cb cb, void *user, char **next_cursor)
{
    unsigned mark = acp_error_mark();
    *next_cursor = NULL;
    if (!cb || limit == 0) return bad(st, "list argument");
    if (archived < ACP_STORE_ARCHIVED_EXCLUDE || archived > ACP_STORE_ARCHIVED_ONLY)
        return bad(st, "archived filter");
    begin(st, ACP_FAULT_LIST);
    return acp_error_since(mark,
                           st->ops->list(st, cwd, archived, cursor, limit, cb, user, next_cursor));
}

int acp_store_list(acp_store *st, const char *cwd, const char *cursor, unsigned limit,
                   acp_store_list_cb cb, void *user, char **next_cursor)
{
    return acp_store_list_archived(st, cwd, ACP_STORE_ARCHIVED_INCLUDE, cursor, limit, cb, user,
                                   next_cursor);
}

int acp_store_delete(acp_store *st, const char *id)
{
    unsigned mark = acp_error_mark();
    if (!id) return bad(st, "session id");
    begin(st, ACP_FAULT_DELETE);
    return acp_error_since(mark, st->ops->remove(st, id));
}

int acp_store_children(acp_store *st, const char *id, acp_store_list_cb cb, void *user)
{
    unsigned mark = acp_error_mark();
    if (!id || !cb) return bad(st, "children argument");
    begin(st, ACP_FAULT_LIST);
    return acp_error_since(mark, st->ops->children(st, id, cb, user));
}

/* A day: a lease is a liveness bound, and a longer one only hides a dead holder longer. */
#define LEASE_TTL_MAX (24u * 3600 * 1000)

static bool bad_ttl(unsigned ttl_ms)
{
    return ttl_ms == 0 || ttl_ms > LEASE_TTL_MAX;
}

static bool bad_holder(const char *h)
{
    return !h || !*h || strlen(h) > ACP_STORE_HOLDER_MAX;
}

static int lease_acquire(acp_store *st, const char *id, const char *holder, unsigned ttl_ms,
                         const char *dead, bool take, int64_t *fence, acp_store_lease_busy *busy)
{
    unsigned mark = acp_error_mark();
    acp_store_lease_busy b = {0};
    *fence = 0;
    if (busy) *busy = b;
    if (!id) return bad(st, "session id");
    if (bad_holder(holder) || (dead && bad_holder(dead))) return bad(st, "lease holder");
    if (bad_ttl(ttl_ms)) return bad(st, "lease ttl");
    begin(st, ACP_FAULT_LEASE);
    int rc = st->ops->lease_acquire(st, id, holder, ttl_ms, dead, take, fence, &b);
    if (b.wait_ms < 0) b.wait_ms = 0;
    if (rc == ACP_EBUSY && busy) *busy = b;
    return acp_error_since(mark, rc);
}

int acp_store_lease_acquire(acp_store *st, const char *id, const char *holder, unsigned ttl_ms,
                            const char *dead, int64_t *fence, acp_store_lease_busy *busy)
{
    return lease_acquire(st, id, holder, ttl_ms, dead, false, fence, busy);
}

int acp_store_lease_take(acp_store *st, const char *id, const char *holder, unsigned ttl_ms,
                         const char *dead, int64_t *fence, acp_store_lease_busy *busy)
{
    return lease_acquire(st, id, holder, ttl_ms, dead, true, fence, busy);
}

static int lease_renew(acp_store *st, const char *id, int64_t fence, unsigned ttl_ms, int busy)
{
    unsigned mark = acp_error_mark();
    if (!id) return bad(st, "session id");
    if (fence <= 0) return bad(st, "lease fence");
    if (bad_ttl(ttl_ms)) return bad(st, "lease ttl");
    begin(st, ACP_FAULT_LEASE);
    return acp_error_since(mark, st->ops->lease_renew(st, id, fence, ttl_ms, busy));
}

int acp_store_lease_renew(acp_store *st, const char *id, int64_t fence, unsigned ttl_ms)
{
    return lease_renew(st, id, fence, ttl_ms, -1);
}

int acp_store_lease_mark(acp_store *st, const char *id, int64_t fence, unsigned ttl_ms, bool busy)
{
    return lease_renew(st, id, fence, ttl_ms, busy);
}

int acp_store_lease_check(acp_store *st, const char *id, int64_t fence)
{
    unsigned mark = acp_error_mark();
    if (!id) return bad(st, "session id");
    if (fence <= 0) return bad(st, "lease fence");
    begin(st, ACP_FAULT_LEASE);
    return acp_error_since(mark, st->ops->lease_check(st, id, fence));
}

int acp_store_lease_release(acp_store *st, const char *id, int64_t fence)
{
    unsigned mark = acp_error_mark();
    if (!id) return bad(st, "session id");
    if (fence <= 0) return bad(st, "lease fence");
    begin(st, ACP_FAULT_LEASE);
    return acp_error_since(mark, st->ops->lease_release(st, id, fence));
}
