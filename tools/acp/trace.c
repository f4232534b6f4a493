/* SPDX-License-Identifier: Apache-2.0 */
/* acp trace: not yet. */
#include <stdio.h>

#include "tools/acp/app.h"

int cmd_trace(app *a)
{
    fprintf(stderr, "acp: trace is not built yet\n");
    return EXIT_USAGE;
}
