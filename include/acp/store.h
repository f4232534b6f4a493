/* SPDX-License-Identifier: Apache-2.0 */
/* acp_store: where sessions and their history live. An interface (a table of functions) with
 * an SQLite backend (the embedded default) and a PostgreSQL backend (many agent processes on
 * many hosts). Nothing above this header knows which one it talks to.
 *
 * Model: a session row (id, cwd, additional directories, title, created/updated times) and
 * its history, an ordered list of session/update `update` objects kept as their exact JSON
 * text. Updates are appended into a batch and become durable on acp_store_commit(): the
 * agent commits once per event-loop turn, before any of those updates are written to the
 * client, so what the client saw is always in the store.
 *
 * Several processes may use one store at once; appends to one session from two processes
 * keep a single order (seq is assigned inside the committing transaction) and lose nothing.
 * A session deleted by one process stays deleted for every other: their later writes for it
 * (commits of its appends, set_info, set_roots, set_state) are ACP_ENOTFOUND and store
 * nothing, and a replay running across the delete ends ACP_ENOTFOUND rather than pass a cut
 * history off as whole.
 *
 * Leases: one writer at a time per session. A holder (an acp_agent: one per connection, many
 * per process) takes a session's lease with acp_store_lease_acquire() and gets a fence, the
 * lease's epoch, which grows by one at every acquisition. Every write for the session carries
 * that fence and is made only while the fence is still the session's current epoch, checked
 * in the same statement or transaction that writes: once another holder has taken the lease
 * (after it went stale), the old holder's writes are ACP_ESTALE and store nothing, however
 * late its timers or clock, so two holders never interleave one history. A lease lasts ttl_ms
 * by the database's clock (PostgreSQL's clock_timestamp(); SQLite's, which is the one host's)
 * unless renewed; a dead holder's lease is free to take once it has expired. Fence 0 writes
 * without a lease (single-writer embedders, tools); such writes are not fenced.
 *
 * Not thread-safe: one store handle per thread. Secrets (MCP env values, HTTP headers) are
 * never passed to the store.
 *
 * Errors: a negative ACP_E* status, with the sentence in acp_error_last() (acp/error.h). */
#ifndef ACP_STORE_H
#define ACP_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "acp/error.h"

#include "acp/api.h"

ACP_BEGIN_DECLS

typedef struct acp_store acp_store;

/* Timestamps are ISO 8601 UTC with milliseconds, "2026-12-02T13:44:52.123Z" (24 chars), so
 * that text order is time order. */
#define ACP_STORE_TIME_LEN 24

/* The longest session id the store accepts (ids are the agent's own: 128 random bits). */
#define ACP_STORE_ID_MAX 1000

/* One session's metadata. As an out-parameter every string is owned by the struct: release
 * it with acp_store_session_clear(). As an in-parameter the strings are borrowed.
 * Extensible (acp/api.h) both ways: start from ACP_STORE_SESSION_INIT. acp_store_create()
 * reads it as options are read; acp_store_get() fills only the first struct_size bytes of
 * the caller's struct (a program built against 1.0 gets the 1.0 members). */
typedef struct acp_store_session {
    size_t struct_size; /* sizeof(acp_store_session): ACP_STORE_SESSION_INIT sets it */
    char *id;
    char *cwd;
    char *add_dirs; /* additionalDirectories as a JSON array text, "[]" when none */
    char *title;    /* NULL: no title */
    char *state;    /* the agent's per-session state (modes, config values) as JSON object
                     * text; NULL: none recorded */
    char created_at[ACP_STORE_TIME_LEN + 1];
    char updated_at[ACP_STORE_TIME_LEN + 1];
    /* Since 1.1 (the unstable session/archive and systemPrompt; read and written only when
     * struct_size covers them): */
    bool archived;       /* hidden from acp_store_list_archived()'s default (EXCLUDE) */
    char *system_prompt; /* the client's SystemPrompt object as JSON text, NULL: none. As
                          * state, returned by acp_store_get() and left out of lists */
    /* (unstable: subagent sessions) The id of the session that owns this one as a subagent
     * (a child session), NULL for a top-level session. Set at create, never changed. */
    char *parent;
} acp_store_session;
#define ACP_STORE_SESSION_INIT ACP_STRUCT_INIT(acp_store_session)

/* Frees the strings and zeroes the members; struct_size is kept, so s can be reused. */
void acp_store_session_clear(acp_store_session *s);

/* The current time in the store's format into buf (ACP_STORE_TIME_LEN + 1 bytes). */
void acp_store_now(char *buf);

/* Opens (creating and migrating the schema as needed) the store named by `where`:
 * "postgresql://..." / "postgres://..." or a libpq "key=value" conninfo selects PostgreSQL,
 * anything else is an SQLite file path (parent directories are created). On failure returns
 * ACP_ESTORE (or ACP_ENOMEM), and acp_error_last() names the location and the cause (never a
 * password). On success *out is owned by the caller: acp_store_close(). */
int acp_store_open(const char *where, acp_store **out);
void acp_store_close(acp_store *st);

const char *acp_store_backend(const acp_store *st); /* "sqlite" or "postgresql" */

/* Every call below returns 0, or ACP_ESTORE (backend failure, acp_error_last() says which;
 * never a password; nothing was half-written), ACP_ENOTFOUND, ACP_EINVAL, ACP_ENOMEM as stated. */

/* Inserts a new session, committed before returning. ACP_EINVAL / ACP_ENOTSUP for a
 * struct_size refused (acp/api.h). s->id must be new (ACP_EINVAL if it
 * exists); created_at/updated_at are taken from s (fill them with acp_store_now()).
 * ACP_EINVAL too for an empty id or one over ACP_STORE_ID_MAX bytes, a NULL cwd or
 * add_dirs, or a malformed timestamp. */
int acp_store_create(acp_store *st, const acp_store_session *s);
/* As acp_store_create(), with the new session's lease taken by holder for ttl_ms in the same
 * statement, as acp_store_lease_acquire() would (the first epoch, into *fence): one write, not
 * two, for a session opened as it is created. ACP_EINVAL also for holder or ttl_ms out of
 * range (see acp_store_lease_acquire). */
int acp_store_create_leased(acp_store *st, const acp_store_session *s, const char *holder,
                            unsigned ttl_ms, int64_t *fence);
/* Makes session dst->id a fork of session src, in one transaction: a new session as
 * acp_store_create_leased() makes it (dst's id, cwd, add_dirs and timestamps; the lease taken
 * by holder for ttl_ms, its epoch into *fence, when holder is non-NULL; no lease and *fence 0
 * when NULL), whose title, state and system_prompt are dst's when set, else src's (archived
 * is dst's), and whose history is src's committed history, update for update, under the same
 * seqs, then its own. Nothing of src changes, and whatever happens to either session later
 * (appends, deletes, forks) never reaches the other: a backend may share the rows (SQLite
 * does, until a delete hands them to a surviving fork) or copy them (PostgreSQL). Appends to
 * src still in the batch are not in the fork (commit first). A concurrent commit or delete of
 * src is either wholly before the fork or wholly after it. Needs no lease on src. ACP_ENOTFOUND
 * when src does not exist; ACP_EINVAL as acp_store_create_leased(). */
int acp_store_fork(acp_store *st, const char *src, const acp_store_session *dst, const char *holder,
                   unsigned ttl_ms, int64_t *fence);
/* Reads one session into *out (struct_size set by the caller; caller clears it).
 * ACP_ENOTFOUND if absent or deleted; ACP_EINVAL for a struct_size 0 or too small. */
int acp_store_get(acp_store *st, const char *id, acp_store_session *out);
/* Every write for one session below takes `fence`: the epoch of the caller's lease on it
 * (acp_store_lease_acquire), or 0 for no lease. With a fence that is no longer the session's
 * epoch (another holder acquired it since) the write stores nothing and is ACP_ESTALE. */

/* Updates metadata, committed before returning. title: set_title=false leaves it, true sets
 * it (NULL clears). updated_at: NULL leaves it (malformed: ACP_EINVAL). ACP_ENOTFOUND if
 * absent. */
int acp_store_set_info(acp_store *st, const char *id, int64_t fence, bool set_title,
                       const char *title, const char *updated_at);
/* Records the roots a load/resume activated (cwd and additional directories as JSON array
 * text), committed before returning, so session/list reports the current ones. */
int acp_store_set_roots(acp_store *st, const char *id, int64_t fence, const char *cwd,
                        const char *add_dirs);

/* Records the session's state (JSON object text, at most 1 MiB; NULL clears it), committed
 * before returning. It is returned by acp_store_get() and left out of acp_store_list(). The
 * agent keeps the current mode and config values here. ACP_ENOTFOUND if the session is
 * absent (deleted, perhaps by another process), ACP_EINVAL for text that is not a JSON
 * object or too long. */
int acp_store_set_state(acp_store *st, const char *id, int64_t fence, const char *state);

/* Adds one update (its JSON text, n bytes with no NUL among them, copied) for session id
 * (non-NULL) under `fence` to the pending batch. Nothing reaches the database until
 * acp_store_commit(). Only ACP_ENOMEM can fail here. */
int acp_store_append(acp_store *st, const char *id, int64_t fence, const char *json, size_t n);
/* Commits the pending batch in one transaction: each update gets the next seq of its session,
 * and each touched session's updated_at becomes `now` (NULL: acp_store_now()). On failure
 * nothing of the batch is stored and the batch is dropped. No-op and 0 when the batch is
 * empty. A malformed `now` is ACP_EINVAL (and drops the batch too). ACP_ETOOBIG if one update
 * is over the backend's limit (SQLite: 1e9 bytes).
 * Appends for a session that does not exist (deleted meanwhile, perhaps by another process),
 * or whose fence is stale (another holder took its lease), are not stored, and that is the
 * one partial result: the rest of the batch is committed all the same and the call returns
 * ACP_ENOTFOUND if any session was gone, else ACP_ESTALE; acp_store_gone() names them.
 * (A batch spans every session of a process's loop turn, and of every holder sharing the
 * handle: one lost session must not cost the others their history.) */
int acp_store_commit(acp_store *st, const char *now);
/* After acp_store_commit() returned ACP_ENOTFOUND or ACP_ESTALE: the id of the i-th session
 * (from 0, in the order of their first append) whose appends were not stored; *fence (if
 * non-NULL) receives the fence they were appended under, *why (if non-NULL) ACP_ENOTFOUND
 * (it no longer exists) or ACP_ESTALE (its lease moved on). One session appended under two
 * fences counts twice. NULL past the last, and after a commit that returned anything else.
 * Borrowed until the next acp_store_commit() or acp_store_close() on the handle. */
const char *acp_store_gone(const acp_store *st, size_t i, int64_t *fence, int *why);
/* Number of updates waiting in the batch. */
size_t acp_store_pending(const acp_store *st);
/* Takes back the updates appended after the first n of the batch (n as acp_store_pending()
 * said before them), as if they had never been appended: several updates that must be stored
 * together or not at all (a prompt's blocks) are dropped together when one cannot be added.
 * n at or past acp_store_pending(): nothing happens. */
void acp_store_discard(acp_store *st, size_t n);

/* Streams history in order (seq runs 1, 2, 3, ... per session, without gaps). Calls cb for
 * each update with seq > after_seq (>= 0), stopping after the first update that takes the
 * total of n past max_bytes (0: no limit), so one call gives at least one update if any is
 * left, or when cb returns non-zero (that value is returned). *last_seq receives the seq of
 * the last update given (after_seq if none); *done is true when no update is left after it.
 * json is borrowed for the call only (NUL-terminated at n); cb must not use st itself (the
 * call may hold one snapshot of the store until it returns). ACP_ENOTFOUND if the session
 * does not exist, also when it was deleted (by another process) during the call: `done` is
 * never reported for a history the delete cut short. */
typedef int (*acp_store_replay_cb)(void *user, int64_t seq, const char *json, size_t n);
int acp_store_replay(acp_store *st, const char *id, int64_t after_seq, size_t max_bytes,
                     acp_store_replay_cb cb, void *user, int64_t *last_seq, bool *done);

/* One page of sessions, newest updated_at first (ties: id descending). cwd (NULL: all) is an
 * exact match. cursor NULL starts at the top; otherwise it must be a cursor this function
 * returned (from any process on the same store), else ACP_EINVAL. The page is a keyset
 * (updated_at, id) < cursor, so creations and deletions between pages never skip or repeat
 * a session that stayed put. cb gets each session (borrowed for the call). *next_cursor
 * receives a malloc'd opaque string (caller frees) when more sessions follow, else NULL
 * (also when the page is exactly full and nothing follows). limit 0 is ACP_EINVAL. */
typedef int (*acp_store_list_cb)(void *user, const acp_store_session *s);
int acp_store_list(acp_store *st, const char *cwd, const char *cursor, unsigned limit,
                   acp_store_list_cb cb, void *user, char **next_cursor);

/* Which sessions acp_store_list_archived() gives by their `archived` flag. */
typedef enum acp_store_archived_filter {
    ACP_STORE_ARCHIVED_EXCLUDE = 0, /* only those not archived (session/list's default) */
    ACP_STORE_ARCHIVED_INCLUDE = 1, /* all of them, as acp_store_list() */
    ACP_STORE_ARCHIVED_ONLY = 2,    /* only the archived ones */
} acp_store_archived_filter;
/* As acp_store_list(), keeping only the sessions `archived` (an acp_store_archived_filter;
 * another value is ACP_EINVAL) selects. The filter is applied by the database before the
 * page is cut, so a cursor stays a plain keyset: pass the same filter (and cwd) with it. */
int acp_store_list_archived(acp_store *st, const char *cwd, int archived, const char *cursor,
                            unsigned limit, acp_store_list_cb cb, void *user, char **next_cursor);

/* Sets or clears the session's archived flag, committed before returning; updated_at is left
 * as it was. Not fenced: archiving is about the session's place in lists, not its history.
 * Setting the value it has succeeds. ACP_ENOTFOUND if the session is absent. */
int acp_store_set_archived(acp_store *st, const char *id, bool archived);

/* Records the client's system prompt (a JSON object text, at most 1 MiB; NULL clears it),
 * committed before returning, under `fence` as every write. ACP_ENOTFOUND, ACP_ESTALE,
 * ACP_EINVAL (not a JSON object, too long). */
int acp_store_set_system_prompt(acp_store *st, const char *id, int64_t fence, const char *json);

/* Deletes the session and its whole history from disk (not only from lists): SQLite
 * overwrites the freed pages (secure_delete) and truncates the WAL that still held them.
 * The session's child sessions (acp_store_session.parent), and theirs, go with it in the
 * same transaction: a subagent's history is part of its parent's conversation.
 * Deleting a session that does not exist succeeds. */
int acp_store_delete(acp_store *st, const char *id);

/* (unstable: subagent sessions) Calls cb for every session whose parent is id, oldest first
 * (created_at, then id), as acp_store_list() calls it (state NULL); cb's non-zero return stops
 * and is returned. No children, or no session id: 0 and no call. */
int acp_store_children(acp_store *st, const char *id, acp_store_list_cb cb, void *user);

/* --- Leases (see the top of this header) --------------------------------------------------- */

/* The longest holder id the store accepts. */
#define ACP_STORE_HOLDER_MAX 128

/* What acp_store_lease_acquire() says of the lease that refused it. The caller allocates it:
 * frozen in 1.0 (acp/api.h; a later release says more through a new struct). */
typedef struct acp_store_lease_busy {
    int64_t wait_ms; /* how long until it expires unless renewed (>= 0) */
    char holder[ACP_STORE_HOLDER_MAX + 1];
} acp_store_lease_busy;

/* Takes session id's lease for `holder` (a non-empty string of at most ACP_STORE_HOLDER_MAX
 * bytes naming one writer, unique among all that share the store) for ttl_ms (1 ms to one
 * day), committed before returning. It is granted when the lease is free (never taken,
 * released, expired by the database's clock, or held by `dead`: NULL, or a holder the caller
 * knows has died, whose lease counts as expired), with a new epoch, or when it is this
 * holder's already, with the same epoch (a renewal: the holder's writes in flight stand).
 * *fence receives the epoch, the fence of the caller's writes. ACP_EBUSY when another
 * holder's lease is fresh: *busy (if non-NULL) says whose and for how long. ACP_ENOTFOUND,
 * ACP_EINVAL (holder, dead or ttl_ms out of range), ACP_ESTORE. */
int acp_store_lease_acquire(acp_store *st, const char *id, const char *holder, unsigned ttl_ms,
                            const char *dead, int64_t *fence, acp_store_lease_busy *busy);
/* Extends the lease of `fence` to ttl_ms from now (the database's clock), also when it had
 * expired and nobody took it since. ACP_ESTALE: the lease is no longer this fence's (another
 * holder took it, or it was released): the caller must stop writing. ACP_ENOTFOUND,
 * ACP_EINVAL (ttl_ms), ACP_ESTORE. */
int acp_store_lease_renew(acp_store *st, const char *id, int64_t fence, unsigned ttl_ms);
/* Taking over (issue 22): a holder that is alive but idle (an agent whose client keeps the
 * session open between turns, all day) should not lock it for everyone else. A lease is idle
 * unless its holder marked it busy with acp_store_lease_mark(); every new grant starts idle.
 * acp_store_lease_take() is acp_store_lease_acquire() that is also granted, with a new epoch,
 * over a fresh lease that is idle: from then on the old holder's writes under its fence are
 * ACP_ESTALE, so it is fenced out at once, as one whose lease lapsed would be. ACP_EBUSY only
 * while the lease is fresh and marked busy (a turn running there). The mark is checked and
 * the grant made in one statement, so a holder that marks busy either marked first (and the
 * taker is refused) or finds its fence stale (ACP_ESTALE: the session is no longer its). */
int acp_store_lease_take(acp_store *st, const char *id, const char *holder, unsigned ttl_ms,
                         const char *dead, int64_t *fence, acp_store_lease_busy *busy);
/* acp_store_lease_renew() that also marks the lease busy (not to be taken over while fresh)
 * or idle. Same results: ACP_ESTALE when the lease is no longer this fence's. */
int acp_store_lease_mark(acp_store *st, const char *id, int64_t fence, unsigned ttl_ms, bool busy);
/* Whether `fence` is still the session's lease epoch: 0, ACP_ESTALE (another holder took it,
 * or it was released), ACP_ENOTFOUND, ACP_ESTORE. One read, no write: how a holder checks
 * before acting on a request that it was not taken over meanwhile. */
int acp_store_lease_check(acp_store *st, const char *id, int64_t fence);
/* Gives the lease of `fence` up at once, so another holder may take it without waiting for
 * the TTL; the caller's later writes under it are ACP_ESTALE. 0 also when the lease was no
 * longer this fence's or the session is gone (nothing to give up). ACP_ESTORE. */
int acp_store_lease_release(acp_store *st, const char *id, int64_t fence);

ACP_END_DECLS
#endif
