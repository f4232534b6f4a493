/* SPDX-License-Identifier: Apache-2.0 */
/* acp_net_limits_resolve: the defaults net/limits.h names, in one place. */
#include "net/limits.h"

acp_net_limits acp_net_limits_resolve(const acp_net_limits *l)
{
    acp_net_limits r = l ? *l : (acp_net_limits){0};
    if (!r.max_message) r.max_message = 64u << 20;
    if (!r.high_water) r.high_water = 4u << 20;
    if (!r.max_connections) r.max_connections = 1024;
    if (!r.idle_timeout_ms) r.idle_timeout_ms = 300000;
    if (!r.ping_interval_ms) r.ping_interval_ms = 30000;
    if (!r.close_timeout_ms) r.close_timeout_ms = 5000;
    if (!r.header_timeout_ms) r.header_timeout_ms = 10000;
    return r;
}
