/* SPDX-License-Identifier: Apache-2.0 */
/* Gives the heap's free memory back to the system after busy spells, so a long-running agent
 * returns to its idle footprint after a huge message (issue 13, item 6).
 *
 * libacp frees its big buffers when a message is done. glibc gives blocks of 8 MiB and more
 * back at free (fixed thresholds: see memtrim.c), but keeps freed memory that lies below live
 * blocks in its heap; malloc_trim(0) releases those pages too. It runs at most once a second
 * while the loop is busy and once more about a second after the loop went quiet: an idle agent
 * is not woken again. The program's choice, not the library's: the heap is the process's. A
 * no-op without glibc. */
#ifndef ACP_AGENT_MEMTRIM_H
#define ACP_AGENT_MEMTRIM_H

#include <stdbool.h>
#include <uv.h>

typedef struct memtrim {
    uv_prepare_t prepare; /* arms the timer whenever the loop did something */
    uv_timer_t timer;
    bool quiet; /* the timer fired in this loop turn: nothing else happened yet */
} memtrim;

/* Sets the allocator's thresholds and starts watching loop (the handles do not keep it alive). */
void memtrim_start(uv_loop_t *loop, memtrim *m);
/* Closes the handles; m must stay valid until the loop has run their close callbacks. */
void memtrim_close(memtrim *m);

#endif
