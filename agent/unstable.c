/* SPDX-License-Identifier: Apache-2.0 */
/* The names of the unstable features (acp_unstable in <acp/agent.h>), one table for the
 * agent's switch, acp-agent's --unstable-off and the documentation. */
#include <string.h>

#include "agent/internal.h"

static const char *const names[] = {"fork",    "title",         "archive",
                                    "status",  "system-prompt", "subagents",
                                    "mcp-acp", "providers",     "auth-status"};
_Static_assert(ACP_UNSTABLE_ALL == (1u << (sizeof names / sizeof *names)) - 1,
               "one name per ACP_UNSTABLE_* bit");

const char *acp_unstable_name(unsigned feature)
{
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (feature == 1u << i) return names[i];
    return NULL;
}

int acp_unstable_parse(const char *list, unsigned *out)
{
    unsigned bits = 0;
    for (const char *p = list ? list : ""; *p;) {
        size_t n = strcspn(p, ",");
        size_t i = 0;
        if (n == 3 && !strncmp(p, "all", 3))
            bits |= ACP_UNSTABLE_ALL;
        else {
            while (i < sizeof names / sizeof *names &&
                   (strlen(names[i]) != n || strncmp(p, names[i], n)))
                i++;
            if (i == sizeof names / sizeof *names)
                return acp_error_set(ACP_EINVAL, "no unstable feature is called '%.*s'", (int)n, p);
            bits |= 1u << i;
        }
        p += n + (p[n] == ',');
    }
    *out = bits;
    return 0;
}

bool agent_offers(const acp_agent *a, unsigned feature)
{
    return !(a->opts.unstable_off & feature);
}
