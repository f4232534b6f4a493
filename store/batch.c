/* SPDX-License-Identifier: Apache-2.0 */
/* The pending batch: every append of one event-loop turn, committed in one transaction.
 * Texts are copied into one growing buffer (one allocation per doubling, not per update),
 * and each distinct session is recorded once so a backend's commit touches each session
 * row once, whatever the number of updates. */
#include <stdlib.h>
#include <string.h>

#include "store/inject.h"

/* Capacity kept across commits so a streaming turn does not reallocate; a batch that grew
 * past this (a 20 MB prompt) gives its memory back. */
#define KEEP_BYTES (1u << 20)

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return 0;
    size_t n = *cap ? *cap : 16;
    while (n < need) {
        if (n > SIZE_MAX / 2 / elem) return ACP_ENOMEM;
        n *= 2;
    }
    void *q = realloc(*p, n * elem);
    if (!q) return ACP_ENOMEM;
    *p = q;
    *cap = n;
    return 0;
}

static int put(acp_store_batch *b, const char *s, size_t n, size_t *off)
{
    if (n > SIZE_MAX - b->len - 1) return ACP_ENOMEM;
    if (grow((void **)&b->buf, &b->cap, b->len + n + 1, 1)) return ACP_ENOMEM;
    *off = b->len;
    memcpy(b->buf + b->len, s, n);
    b->buf[b->len + n] = '\0';
    b->len += n + 1;
    return 0;
}

static bool same(const acp_store_batch *b, size_t s, const char *id, int64_t fence)
{
    return b->sess[s].fence == fence && strcmp(acp_store_batch_id(b, s), id) == 0;
}

/* The session index for (id, fence): the previous item's session first (the common case: a
 * turn streams into one session), then the others. */
static int session_of(acp_store_batch *b, const char *id, int64_t fence, size_t *out)
{
    if (b->nitems) {
        size_t s = b->items[b->nitems - 1].sess;
        if (same(b, s, id, fence)) return *out = s, 0;
    }
    for (size_t s = 0; s < b->nsess; s++)
        if (same(b, s, id, fence)) return *out = s, 0;
    if (grow((void **)&b->sess, &b->sess_cap, b->nsess + 1, sizeof *b->sess)) return ACP_ENOMEM;
    size_t off;
    if (put(b, id, strlen(id), &off)) return ACP_ENOMEM;
    b->sess[b->nsess] = (acp_store_bsess){.id = off, .fence = fence};
    *out = b->nsess++;
    return 0;
}

/* An armed ACP_FAULT_APPEND error is the one failure an append has. */
static bool append_faults(acp_store *st)
{
    if (!st->inject) return false;
    acp_store_inject_op(st, ACP_FAULT_APPEND);
    return acp_store_inject_step(st) != NULL;
}

int acp_store_append(acp_store *st, const char *id, int64_t fence, const char *json, size_t n)
{
    acp_store_batch *b = &st->batch;
    static const char oom[] = "store: out of memory appending an update to the batch";
    if (append_faults(st)) return acp_error_set(ACP_ENOMEM, oom);
    size_t sess, off;
    if (grow((void **)&b->items, &b->items_cap, b->nitems + 1, sizeof *b->items) ||
        session_of(b, id, fence, &sess))
        return acp_error_set(ACP_ENOMEM, oom);
    if (put(b, json, n, &off)) {
        if (b->sess[sess].count == 0) b->nsess--; /* it was added just now: forget it */
        return acp_error_set(ACP_ENOMEM, oom);
    }
    b->items[b->nitems++] = (acp_store_item){.json = off, .n = n, .sess = sess};
    b->sess[sess].count++;
    return 0;
}

size_t acp_store_pending(const acp_store *st)
{
    return st->batch.nitems;
}

void acp_store_discard(acp_store *st, size_t n)
{
    acp_store_batch *b = &st->batch;
    if (n >= b->nitems) return;
    size_t len = b->items[n].json;
    for (size_t i = n; i < b->nitems; i++) b->sess[b->items[i].sess].count--;
    /* A session first appended at or after n is behind every other (sessions are recorded in
     * order of first append), and its id was put just before that append's text. */
    while (b->nsess && b->sess[b->nsess - 1].count == 0) {
        b->nsess--;
        if (b->sess[b->nsess].id < len) len = b->sess[b->nsess].id;
    }
    b->nitems = n;
    b->len = len;
}

static void batch_reset(acp_store_batch *b)
{
    if (b->cap > KEEP_BYTES) {
        free(b->buf);
        free(b->items);
        free(b->sess);
        memset(b, 0, sizeof *b);
        return;
    }
    b->len = b->nitems = b->nsess = 0;
}

/* Room for every id of the batch in st->gone, made before the commit: once the batch is
 * stored, naming the sessions that were not must not be able to fail. */
static int reserve_gone(acp_store *st)
{
    const acp_store_batch *b = &st->batch;
    size_t need = 0;
    for (size_t i = 0; i < b->nsess; i++) need += strlen(acp_store_batch_id(b, i)) + 1;
    return grow((void **)&st->gone, &st->gone_cap, need, 1) ||
           grow((void **)&st->lost, &st->lost_cap, b->nsess, sizeof *st->lost);
}

/* Records the sessions the backend did not store (acp_store_gone) and says so: ACP_ENOTFOUND
 * naming the first gone one, else ACP_ESTALE naming the first fenced out, or 0. */
static int note_gone(acp_store *st)
{
    const acp_store_batch *b = &st->batch;
    size_t n[2] = {0, 0}, first[2] = {0, 0}; /* [0]: gone, [1]: fenced out */
    for (size_t i = 0; i < b->nsess; i++) {
        if (!b->sess[i].lost) continue;
        const char *id = acp_store_batch_id(b, i);
        size_t len = strlen(id) + 1;
        st->lost[st->nlost++] =
            (acp_store_lost){.id = st->gone_len, .fence = b->sess[i].fence, .why = b->sess[i].lost};
        memcpy(st->gone + st->gone_len, id, len);
        st->gone_len += len;
        int k = b->sess[i].lost == ACP_ESTALE;
        if (!n[k]++) first[k] = i;
    }
    if (n[0])
        return acp_error_set(
            ACP_ENOTFOUND, "session %s%s no longer exists: its updates were not stored",
            acp_store_batch_id(b, first[0]), n[0] + n[1] > 1 ? " (and others)" : "");
    if (n[1])
        return acp_error_set(ACP_ESTALE,
                             "session %s%s is leased to another holder now: updates appended "
                             "under an older lease were not stored",
                             acp_store_batch_id(b, first[1]), n[1] > 1 ? " (and others)" : "");
    return 0;
}

int acp_store_commit(acp_store *st, const char *now)
{
    unsigned mark = acp_error_mark();
    st->gone_len = st->nlost = 0;
    if (st->batch.nitems == 0) return 0;
    char stamp[ACP_STORE_TIME_LEN + 1];
    int rc;
    if (now && !acp_store_time_valid(now)) {
        rc = acp_error_set(ACP_EINVAL, "store: invalid commit timestamp");
    } else if (reserve_gone(st)) {
        rc = acp_error_set(ACP_ENOMEM, "out of memory");
    } else {
        if (!now) acp_store_now(stamp);
        for (size_t i = 0; i < st->batch.nsess; i++) st->batch.sess[i].lost = 0;
        if (st->inject) acp_store_inject_op(st, ACP_FAULT_COMMIT);
        rc = st->ops->commit(st, now ? now : stamp);
        if (!rc) rc = note_gone(st);
    }
    batch_reset(&st->batch);
    return acp_error_since(mark, rc);
}

const char *acp_store_gone(const acp_store *st, size_t i, int64_t *fence, int *why)
{
    if (i >= st->nlost) return NULL;
    if (fence) *fence = st->lost[i].fence;
    if (why) *why = st->lost[i].why;
    return st->gone + st->lost[i].id;
}
