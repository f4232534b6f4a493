/* SPDX-License-Identifier: Apache-2.0 */
/* What the fuzz targets that run whole acp_agents in process share (agent_recv, agent_seq): no
 * input can start a process, the agent's ids come from a counter so that every input replays
 * the same way, store operations fail when a target asks, and whatever an agent writes is
 * checked line by line once per loop turn. A target using it links agent_harness.c with
 * -Wl,--wrap=rt_spawn,--wrap=getrandom (fuzz/CMakeLists.txt). */
#ifndef ACP_FUZZ_AGENT_HARNESS_H
#define ACP_FUZZ_AGENT_HARNESS_H

#include <stdbool.h>
#include <stddef.h>

#include "acp/agent.h"

/* Restarts the counter behind the agent's ids (getrandom, wrapped): the first id made is all
 * zeros (session/new's first is sess_00000000000000000000000000000000), then 1, 2, ... */
void fuzz_ids_reset(void);

/* Failures armed on a store handle, each delivered once: an ACP_ESTORE with the backend's
 * usual error message slot filled, as a real failure would leave it. */
typedef struct fuzz_store_faults {
    bool commit; /* the next commit fails */
    /* Letters of the other operations whose next call fails: c create, g get, i set_info,
     * r set_roots, s set_state, p replay, l list, d remove. */
    char ops[16];
    unsigned commits_failed, ops_failed; /* delivered so far */
} fuzz_store_faults;

/* Routes st's operations through f (borrowed until fuzz_store_unwrap()). At most
 * FUZZ_STORES handles are wrapped at once. */
#define FUZZ_STORES 4
void fuzz_store_wrap(acp_store *st, fuzz_store_faults *f);
void fuzz_store_unwrap(acp_store *st);

/* Once per loop turn: commits a's batch (acp_agent_flush), takes its output and checks that it
 * is complete lines of valid JSON, calling line(text, length, user) on each (line may be
 * NULL). */
void fuzz_agent_drain(acp_agent *a, void (*line)(const char *, size_t, void *), void *user);

#endif
