/* SPDX-License-Identifier: Apache-2.0 */
/* Private seam between proc.c and transport.c: a transport takes over a child's pipes. */
#ifndef ACP_RT_PROC_STDIO_H
#define ACP_RT_PROC_STDIO_H

#include <uv.h>

#include "acp/rt.h"

/* Moves the child's stdin (we write) and stdout (we read) pipes out of p; the caller then
 * owns them: it uv_close()s them and free()s them in the close callback. ACP_EINVAL when
 * either is not piped, already taken, read by the proc itself (on_stdout) or p is stopping. */
int acp_proc_take_stdio(acp_proc *p, uv_stream_t **child_stdin, uv_stream_t **child_stdout);

#endif
