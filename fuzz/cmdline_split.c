/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target over the command-line splitter (acp_client_split_command), which takes
 * the `acp --agent` string and acp_client_opts.command of any embedding application. Never a
 * crash, an out-of-bounds read or a leak; and the words it gives, each quoted back the POSIX
 * way ('...' with ' written as '\''), split again into the same words.
 *
 * Input: the command line (up to the first NUL byte). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "acp/client.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s) return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    char **v = NULL;
    int rc = acp_client_split_command(s, &v);
    if (rc == 0) {
        acp_buf b = {0};
        size_t n = 0;
        for (; v[n]; n++) {
            acp_buf_putc(&b, n ? ' ' : '\'');
            if (n) acp_buf_putc(&b, '\'');
            for (const char *p = v[n]; *p; p++)
                *p == '\'' ? acp_buf_append(&b, "'\\''", 4) : acp_buf_putc(&b, *p);
            acp_buf_putc(&b, '\'');
        }
        char **w = NULL;
        if (n == 0 || !acp_buf_cstr(&b) || acp_client_split_command(b.data, &w)) abort();
        for (size_t i = 0; i <= n; i++)
            if (!w[i] != !v[i] || (v[i] && strcmp(w[i], v[i]))) abort();
        acp_client_argv_free(w);
        acp_buf_free(&b);
        acp_client_argv_free(v);
    } else if ((rc != ACP_EINVAL && rc != ACP_ENOMEM) || v) {
        abort();
    }
    free(s);
    return 0;
}
