/* SPDX-License-Identifier: Apache-2.0 */
/* One read or write of a file inside a root set, made to run on libuv's thread pool: what the
 * agent's local file access (agent/localfs.c) and the client's fs/read_text_file and
 * fs/write_text_file handlers (client/fs.c) share. Each embeds an rt_fsio in its own job, which
 * says whom to answer. Internal. */
#ifndef ACP_RT_FSIO_H
#define ACP_RT_FSIO_H

#include <stdbool.h>
#include <stddef.h>

#include "acp/roots.h"

typedef struct rt_fsio {
    acp_roots *roots; /* a copy of the session's: the session may end while the job runs */
    char *path;
    size_t line, limit, max; /* a read's, as acp_roots_read() takes them */
    bool write;
    const char *data; /* a write's bytes: the job's owner keeps them alive until the end */
    size_t n;
    /* The result, set by rt_fsio_run() on the pool's thread. */
    int status;
    char *text; /* a read's (ours) */
    size_t tn;
    char msg[1024]; /* why it failed: the pool thread's last error, copied */
} rt_fsio;

/* Copies r and path into io (zero it first); ACP_ENOMEM. */
int rt_fsio_init(rt_fsio *io, const acp_roots *r, const char *path);
/* The read or write itself; blocks on the disk (call it from the pool). */
void rt_fsio_run(rt_fsio *io);
void rt_fsio_free(rt_fsio *io);

#endif
