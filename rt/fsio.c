/* SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp/error.h"
#include "rt/fsio.h"

int rt_fsio_init(rt_fsio *io, const acp_roots *r, const char *path)
{
    size_t n = acp_roots_count(r);
    const char **dirs = calloc(n, sizeof *dirs);
    for (size_t i = 1; dirs && i < n; i++) dirs[i - 1] = acp_roots_at(r, i);
    int rc = !dirs || !(io->path = strdup(path))
                 ? ACP_ENOMEM
                 : acp_roots_new(acp_roots_cwd(r), dirs, n - 1, &io->roots);
    free(dirs);
    return rc;
}

void rt_fsio_run(rt_fsio *io)
{
    io->status = io->write ? acp_roots_write(io->roots, io->path, io->data, io->n)
                           : acp_roots_read(io->roots, io->path, io->line, io->limit, io->max,
                                            &io->text, &io->tn);
    if (io->status) snprintf(io->msg, sizeof io->msg, "%s", acp_error_last()->message);
}

void rt_fsio_free(rt_fsio *io)
{
    acp_roots_free(io->roots);
    free(io->path);
    free(io->text);
}
