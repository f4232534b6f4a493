/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the fuzz targets that drive a connection: whatever it produced must be complete
 * lines of valid JSON. Takes (and frees) the output. ACP_FUZZ_TRACE=1 copies it to stderr, to
 * write seeds by hand. */
#ifndef ACP_FUZZ_CHECK_OUTPUT_H
#define ACP_FUZZ_CHECK_OUTPUT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp/rpc.h"

/* The same, calling line(text, length, user) on each line (without its newline) after checking
 * it: a target's own properties of what was written. */
static inline void fuzz_check_output_lines(acp_conn *c, void (*line)(const char *, size_t, void *),
                                           void *user)
{
    size_t len;
    char *out = acp_conn_out_take(c, &len);
    if (len && getenv("ACP_FUZZ_TRACE")) fwrite(out, 1, len, stderr);
    for (size_t i = 0; i < len;) {
        char *nl = memchr(out + i, '\n', len - i);
        if (!nl || acp_json_validate(out + i, (size_t)(nl - (out + i)), 512)) abort();
        if (line) line(out + i, (size_t)(nl - (out + i)), user);
        i = (size_t)(nl - out) + 1;
    }
    free(out);
}

static inline void fuzz_check_output(acp_conn *c)
{
    fuzz_check_output_lines(c, NULL, NULL);
}

#endif
