/* SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>
#include <stdio.h>

#include "rt/errmsg.h"

void rt_set_err(char **errmsg, const char *fmt, ...)
{
    if (!errmsg) return;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(errmsg, fmt, ap) < 0) *errmsg = NULL;
    va_end(ap);
}
