/* SPDX-License-Identifier: Apache-2.0 */
/* Splitting an agent command line the way a POSIX shell would, without any expansion: the
 * user writes --agent 'node "/path with spaces/agent.js" --flag' and means three words. */
#include <stdlib.h>
#include <string.h>

#include "acp/client.h"
#include "rpc/lasterr.h"

static void argv_free_n(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++) free(v[i]);
    free(v);
}

void acp_client_argv_free(char **argv)
{
    if (!argv) return;
    size_t n = 0;
    while (argv[n]) n++;
    argv_free_n(argv, n);
}

int acp_client_split_command(const char *s, char ***out)
{
    *out = NULL;
    size_t n = 0, cap = 8;
    char **v = calloc(cap, sizeof *v);
    char *word = malloc(strlen(s) + 1);
    if (!v || !word) goto nomem;
    for (;;) {
        while (*s == ' ' || *s == '\t' || *s == '\n') s++;
        if (!*s) break;
        size_t w = 0;
        char quote = 0;
        for (; *s; s++) {
            char ch = *s;
            if (quote == '\'') {
                if (ch == '\'')
                    quote = 0;
                else
                    word[w++] = ch;
            } else if (quote == '"') {
                if (ch == '"')
                    quote = 0;
                else if (ch == '\\' && s[1] && strchr("\"\\$`", s[1]))
                    word[w++] = *++s;
                else
                    word[w++] = ch;
            } else if (ch == '\'' || ch == '"') {
                quote = ch;
            } else if (ch == '\\' && s[1]) {
                word[w++] = *++s;
            } else if (ch == ' ' || ch == '\t' || ch == '\n') {
                break;
            } else {
                word[w++] = ch;
            }
        }
        if (quote) {
            free(word);
            argv_free_n(v, n);
            return acp_error_code(ACP_EINVAL);
        }
        if (n + 2 > cap) {
            char **nv = realloc(v, (cap *= 2) * sizeof *v);
            if (!nv) goto nomem;
            v = nv;
        }
        if (!(v[n] = malloc(w + 1))) goto nomem;
        memcpy(v[n], word, w);
        v[n][w] = 0;
        v[++n] = NULL;
    }
    free(word);
    if (n == 0) {
        free(v);
        return acp_error_code(ACP_EINVAL);
    }
    *out = v;
    return 0;
nomem:
    free(word);
    if (v) argv_free_n(v, n);
    return acp_error_code(ACP_ENOMEM);
}
