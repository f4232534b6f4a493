/* SPDX-License-Identifier: Apache-2.0 */
/* acp_json_path: the JSON path of a member, rendered for error messages. The request validator
 * (agent/validate.c) and the typed update views (client/update.c) both name a bad member by it. */
#include <stdio.h>

#include "acp/json.h"

size_t acp_json_path_render(const acp_json_path *p, char *buf, size_t cap)
{
    size_t n = p->up ? acp_json_path_render(p->up, buf, cap) : 0;
    if (n >= cap) return n;
    int k = !p->up   ? snprintf(buf, cap, "%s", p->key)
            : p->key ? snprintf(buf + n, cap - n, ".%s", p->key)
                     : snprintf(buf + n, cap - n, "[%zu]", p->index);
    return k < 0 ? n : n + (size_t)k;
}
