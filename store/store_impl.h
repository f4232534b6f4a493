/* SPDX-License-Identifier: Apache-2.0 */
/* Private to store/: the layout every backend shares, and the helpers both backends use so
 * that cursors, errors and the batch behave identically whichever database is underneath.
 *
 * A backend embeds `acp_store` as the FIRST member of its own handle struct, fills it with
 * acp_store_init() in its open function, and frees its whole struct in ops->close (the
 * generic layer has already released the batch by then). */
#ifndef ACP_STORE_IMPL_H
#define ACP_STORE_IMPL_H

#include <stdarg.h>

#include "acp/store.h"
#include "rpc/lasterr.h"

/* A backend's operations. Internal: libacp has no public way to register a backend, so the
 * table is free to change with the library (and needs no struct_size). */
/* The generic layer checks every argument before it calls an op, so ops do not check again:
 * ids, cwd and add_dirs are non-NULL, timestamps well-formed, commit gets a non-empty batch
 * and a `now`, replay non-NULL last_seq/done, list a limit > 0 and *next_cursor already NULL. */

typedef struct acp_store_ops {
    const char *name;
    void (*close)(acp_store *st);
    /* holder NULL: no lease (ttl_ms 0); else the lease taken as the row is made, epoch 1. */
    int (*create)(acp_store *st, const acp_store_session *s, const char *holder, unsigned ttl_ms);
    int (*get)(acp_store *st, const char *id, acp_store_session *out);
    int (*set_info)(acp_store *st, const char *id, int64_t fence, bool set_title, const char *title,
                    const char *updated_at);
    int (*set_roots)(acp_store *st, const char *id, int64_t fence, const char *cwd,
                     const char *add_dirs);
    int (*set_state)(acp_store *st, const char *id, int64_t fence, const char *state);
    /* The batch (ids and texts, in append order) is kept by the generic layer; commit gets it. */
    int (*commit)(acp_store *st, const char *now);
    int (*replay)(acp_store *st, const char *id, int64_t after_seq, size_t max_bytes,
                  acp_store_replay_cb cb, void *user, int64_t *last_seq, bool *done);
    /* archived: an acp_store_archived_filter, already checked. */
    int (*list)(acp_store *st, const char *cwd, int archived, const char *cursor, unsigned limit,
                acp_store_list_cb cb, void *user, char **next_cursor);
    int (*remove)(acp_store *st, const char *id);
    int (*children)(acp_store *st, const char *id, acp_store_list_cb cb, void *user);
    /* busy is non-NULL and zeroed. take: also granted over a fresh holder that is idle
     * (acp_store_lease_take). */
    int (*lease_acquire)(acp_store *st, const char *id, const char *holder, unsigned ttl_ms,
                         const char *dead, bool take, int64_t *fence, acp_store_lease_busy *busy);
    /* busy: 1 or 0 marks the lease busy or idle (acp_store_lease_mark), -1 leaves it. */
    int (*lease_renew)(acp_store *st, const char *id, int64_t fence, unsigned ttl_ms, int busy);
    int (*lease_release)(acp_store *st, const char *id, int64_t fence);
    int (*set_archived)(acp_store *st, const char *id, bool archived);
    int (*set_system_prompt)(acp_store *st, const char *id, int64_t fence, const char *json);
    /* 0 while fence is the session's epoch, else ACP_ESTALE / ACP_ENOTFOUND: a read. */
    int (*lease_check)(acp_store *st, const char *id, int64_t fence);
} acp_store_ops;

/* One appended update. Offsets (not pointers) into batch.buf, because buf grows by realloc.
 * Each id and json is NUL-terminated inside buf (JSON text never holds a raw NUL). */
typedef struct acp_store_item {
    size_t json; /* offset of the JSON text in buf */
    size_t n;    /* its length, without the NUL */
    size_t sess; /* index into batch.sess */
} acp_store_item;

/* One distinct (session, fence) touched by the batch, in order of first append. Keyed by the
 * fence too: two holders sharing one handle may append to one session in one batch (the old
 * one not yet aware it was fenced out), and only the current one's appends may be stored. */
typedef struct acp_store_bsess {
    size_t id;     /* offset of the session id in buf */
    int64_t fence; /* the lease epoch its appends were made under (0: none) */
    size_t count;  /* how many items of the batch belong to it */
    int64_t next;  /* scratch for the backend's commit: next seq to assign */
    int64_t key;   /* scratch for the backend's commit: its row key, if it has one */
    int lost;      /* set by the backend's commit when its updates were not stored:
                    * ACP_ENOTFOUND (the session no longer exists) or ACP_ESTALE (the fence
                    * is no longer its epoch); 0 on entry */
} acp_store_bsess;

/* One entry of acp_store_gone(). */
typedef struct acp_store_lost {
    size_t id; /* offset of the id in acp_store.gone */
    int64_t fence;
    int why;
} acp_store_lost;

typedef struct acp_store_batch {
    char *buf;
    size_t len, cap;
    acp_store_item *items;
    size_t nitems, items_cap;
    acp_store_bsess *sess;
    size_t nsess, sess_cap;
} acp_store_batch;

struct acp_store {
    const acp_store_ops *ops;
    acp_store_batch batch; /* appended, not yet committed; owned by the generic layer */
    /* The sessions the last commit did not store (acp_store_gone): their ids, each
     * NUL-terminated, one after the other, and one record each; owned by the generic layer. */
    char *gone;
    size_t gone_len, gone_cap;
    acp_store_lost *lost;
    size_t nlost, lost_cap;
    struct acp_store_inject *inject; /* NULL unless a test armed a fault (store/inject.h) */
};

/* Sets st->ops and clears everything else. */
void acp_store_init(acp_store *st, const acp_store_ops *ops);

/* Backends report a failure as every layer does, `return acp_error_set(ACP_ESTORE, "insert:
 * %s", sqlite3_errmsg(db));` (rpc/lasterr.h), with text that holds no password (the
 * PostgreSQL side scrubs first). */

static inline const char *acp_store_batch_id(const acp_store_batch *b, size_t sess)
{
    return b->buf + b->sess[sess].id;
}
static inline const char *acp_store_batch_json(const acp_store_batch *b, size_t item)
{
    return b->buf + b->items[item].json;
}

/* List cursors, shared so a cursor is the same string whichever backend made it:
 * base64url (no padding) of "v1|<updated_at>|<id length in decimal>|<id>" (the length
 * catches truncation). encode: *out malloc'd (caller frees). decode: strict; anything but
 * the exact encoding of a well-formed timestamp and a non-empty id is ACP_EINVAL. On success
 * updated_at holds the time (NUL-terminated) and *id a malloc'd copy of the id (caller frees). */
int acp_store_cursor_encode(const char *updated_at, const char *id, char **out);
int acp_store_cursor_decode(const char *cursor, char updated_at[ACP_STORE_TIME_LEN + 1], char **id);

/* Copies in (borrowed strings, e.g. views into a result row) into out, which then owns its
 * strings (acp_store_session_clear()). ACP_ENOMEM leaves out cleared. */
int acp_store_session_copy(acp_store_session *out, const acp_store_session *in);

/* True if s is exactly an ACP_STORE_TIME_LEN-char "YYYY-MM-DDTHH:MM:SS.mmmZ". */
bool acp_store_time_valid(const char *s);

#endif
