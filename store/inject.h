/* SPDX-License-Identifier: Apache-2.0 */
/* Fault injection into a store handle, for tests (private to store/ and tests/; not
 * installed). In the spirit of SQLite's own tests: the Nth call of chosen operations meets a
 * fault at its Kth database call (its "step": a statement, a BEGIN or COMMIT), and a test
 * walks K = 1, 2, ... until a call goes through with no fault met, so every step of every
 * operation is tried without the test knowing how many there are.
 *
 * The faults are the backends' own: SQLite gets SQLITE_BUSY, SQLITE_FULL, SQLITE_IOERR (any
 * result code) where sqlite3_step or sqlite3_exec would have returned it, with SQLite's own
 * message for it; PostgreSQL gets a real server error (the server raises the SQLSTATE asked
 * for in place of the statement, aborting the transaction as a failing statement would), or
 * loses its connection: before the step (the server ends our backend, as
 * pg_terminate_backend from another connection does) or after it (the server ran the
 * statement, committed it if it was a transaction of its own, and its answer never arrives:
 * a write in doubt). Either backend can stall at a step (it waits T ms, then goes on: the
 * busy-timeout path that ends well), or call the test back there (restart a server, delete
 * the session from another handle, take a lock).
 *
 * Why it is built this way:
 * - Always compiled in, so the error paths the tests exercise are the ones that ship, not
 *   those of a test build. Off, it costs one NULL test per database call (a statement costs
 *   microseconds).
 * - Armed only by calling acp_store_inject() on one handle, and nothing else: no environment
 *   variable, no global, no public declaration. A program can only switch it on by including
 *   this uninstalled header and calling it on purpose; the functions are also left out of
 *   libacp.so's exported symbols (visibility "hidden"), so a program linked against the
 *   shared library cannot reach them at all. An environment variable was the alternative
 *   (it would reach a real acp-agent process), but one left set in a service's environment
 *   would quietly break a production store, and in-process tests reopen the store (a fresh
 *   handle, a fresh agent) just as well as a new process would. */
#ifndef ACP_STORE_INJECT_H
#define ACP_STORE_INJECT_H

#include <stdbool.h>

#include "store/store_impl.h"

#define ACP_INJECT_API __attribute__((visibility("hidden")))

/* The operations a fault counts: one bit per public call. */
enum {
    ACP_FAULT_CREATE = 1u << 0,
    ACP_FAULT_GET = 1u << 1,
    ACP_FAULT_SET_INFO = 1u << 2,
    ACP_FAULT_SET_ROOTS = 1u << 3,
    ACP_FAULT_SET_STATE = 1u << 4,
    ACP_FAULT_APPEND = 1u << 5, /* acp_store_append: memory only, so its one fault is ACP_ENOMEM */
    ACP_FAULT_COMMIT = 1u << 6,
    ACP_FAULT_REPLAY = 1u << 7, /* each acp_store_replay call: the agent's replay steps */
    ACP_FAULT_LIST = 1u << 8,
    ACP_FAULT_DELETE = 1u << 9,
    ACP_FAULT_LEASE = 1u << 10, /* acp_store_lease_acquire, _take, _renew, _mark, _release */
    ACP_FAULT_WRITES = ACP_FAULT_CREATE | ACP_FAULT_SET_INFO | ACP_FAULT_SET_ROOTS |
                       ACP_FAULT_SET_STATE | ACP_FAULT_COMMIT | ACP_FAULT_DELETE,
    ACP_FAULT_ALL = (1u << 11) - 1,
};

typedef enum acp_fault_kind {
    ACP_FAULT_ERROR,      /* the step fails: SQLite with result code `code`, PostgreSQL with
                           * the server raising `sqlstate`; acp_store_append: ACP_ENOMEM */
    ACP_FAULT_STALL,      /* the step waits `ms`, then runs */
    ACP_FAULT_LOSE,       /* PostgreSQL: the server ends the connection before the step */
    ACP_FAULT_LOSE_AFTER, /* PostgreSQL: the step runs, its answer is lost with the connection */
    ACP_FAULT_CALL,       /* call(user) at the step, then the step runs */
} acp_fault_kind;

typedef struct acp_store_fault {
    unsigned ops;   /* which operations are counted (ACP_FAULT_* bits) */
    unsigned nth;   /* the first counted operation that faults (1: the next one) */
    unsigned times; /* how many counted operations in a row fault (0: one); UINT_MAX: all */
    unsigned step;  /* at which database call of each (1: the first; 0: every one) */
    acp_fault_kind kind;
    int code;             /* ACP_FAULT_ERROR on SQLite: SQLITE_BUSY, SQLITE_FULL, ... */
    const char *sqlstate; /* ACP_FAULT_ERROR on PostgreSQL ("53100": disk full); copied */
    unsigned ms;          /* ACP_FAULT_STALL */
    void (*call)(acp_store *st, void *user); /* ACP_FAULT_CALL; must not use st */
    void *user;
} acp_store_fault;

/* Arms f on st (copied; replaces what was armed, counting from zero again), or disarms with
 * f NULL. 0, ACP_ENOMEM, or ACP_EINVAL for a kind the backend cannot produce (LOSE on
 * SQLite). */
ACP_INJECT_API int acp_store_inject(acp_store *st, const acp_store_fault *f);
/* How many steps met the armed fault since it was armed. */
ACP_INJECT_API unsigned acp_store_inject_fired(const acp_store *st);
/* SQLite: the busy timeout (ms) of this handle, so a test can meet a real SQLITE_BUSY (a lock
 * held by another connection) without waiting the default 10 s. ACP_EINVAL on PostgreSQL. */
ACP_INJECT_API int acp_store_inject_busy_timeout(acp_store *st, unsigned ms);

/* --- For the backends --------------------------------------------------------------------- */

/* The generic layer, as an operation begins (only when st->inject is set). */
ACP_INJECT_API void acp_store_inject_op(acp_store *st, unsigned op);
ACP_INJECT_API const acp_store_fault *acp_store_inject_step(acp_store *st);
/* A backend, before each database call of an operation: the fault to produce there, or NULL
 * (STALL and CALL are carried out inside and give NULL: the step then runs as usual). */
static inline const acp_store_fault *acp_store_fault_at(acp_store *st)
{
    return st->inject ? acp_store_inject_step(st) : NULL;
}

#endif
