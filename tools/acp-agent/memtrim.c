/* SPDX-License-Identifier: Apache-2.0 */
#include "tools/acp-agent/memtrim.h"

#ifdef __GLIBC__
#if __GLIBC_PREREQ(2, 33) /* mallinfo2 */
#define GLIBC_HEAP 1
#include <malloc.h>
#endif
#endif

#define TRIM_EVERY_MS 1000
/* Blocks from this size on are mmapped, and so unmapped at free; the heap's free top is
 * trimmed past it. Fixed: glibc's default raises both after each free of a big block (up to
 * 32 and 64 MiB), so one huge message taught it to keep the next ones. Not lower: a streaming
 * turn reuses its output buffers (up to twice the agent's 4 MiB high water) every loop turn,
 * and 1 MiB made each of them a fresh mapping faulted in page by page (4.7 times the page
 * faults on /stream 200000 200). */
#define HEAP_KEEP (8 << 20)
/* Below this much free heap there is nothing worth a trim: ordinary traffic stays as it is. */
#define TRIM_FREE_MIN (4u << 20)

static void on_timer(uv_timer_t *t)
{
    memtrim *m = t->data;
    m->quiet = true;
#ifdef GLIBC_HEAP
    struct mallinfo2 mi = mallinfo2();
    if (mi.fordblks >= TRIM_FREE_MIN) malloc_trim(0);
#endif
}

static void on_prepare(uv_prepare_t *p)
{
    memtrim *m = p->data;
    if (m->quiet) { /* the trim was all this loop turn did: stay asleep */
        m->quiet = false;
        return;
    }
    if (!uv_is_active((uv_handle_t *)&m->timer))
        uv_timer_start(&m->timer, on_timer, TRIM_EVERY_MS, 0);
}

void memtrim_start(uv_loop_t *loop, memtrim *m)
{
#ifdef GLIBC_HEAP
    mallopt(M_MMAP_THRESHOLD, HEAP_KEEP);
    mallopt(M_TRIM_THRESHOLD, HEAP_KEEP);
#endif
    m->quiet = false;
    uv_prepare_init(loop, &m->prepare);
    uv_timer_init(loop, &m->timer);
    m->prepare.data = m->timer.data = m;
    uv_prepare_start(&m->prepare, on_prepare);
    uv_unref((uv_handle_t *)&m->prepare);
    uv_unref((uv_handle_t *)&m->timer);
}

void memtrim_close(memtrim *m)
{
    uv_close((uv_handle_t *)&m->prepare, NULL);
    uv_close((uv_handle_t *)&m->timer, NULL);
}
