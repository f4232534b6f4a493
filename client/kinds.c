/* SPDX-License-Identifier: Apache-2.0 */
/* session/update kind names. Kept as a table so routing compares the raw string literal
 * against known names without unescaping or allocating. */
#include <string.h>

#include "acp/client.h"

static const char *const names[] = {
    [ACP_UPDATE_OTHER] = "other",
    [ACP_UPDATE_USER_MESSAGE_CHUNK] = "user_message_chunk",
    [ACP_UPDATE_AGENT_MESSAGE_CHUNK] = "agent_message_chunk",
    [ACP_UPDATE_AGENT_THOUGHT_CHUNK] = "agent_thought_chunk",
    [ACP_UPDATE_TOOL_CALL] = "tool_call",
    [ACP_UPDATE_TOOL_CALL_UPDATE] = "tool_call_update",
    [ACP_UPDATE_PLAN] = "plan",
    [ACP_UPDATE_AVAILABLE_COMMANDS] = "available_commands_update",
    [ACP_UPDATE_CURRENT_MODE] = "current_mode_update",
    [ACP_UPDATE_CONFIG_OPTION] = "config_option_update",
    [ACP_UPDATE_SESSION_INFO] = "session_info_update",
    [ACP_UPDATE_USAGE] = "usage_update",
    [ACP_UPDATE_NOTICE] = "notice",
    [ACP_UPDATE_COMPACTION] = "compaction_update",
    [ACP_UPDATE_COMPACTION_SUMMARY] = "compaction_summary_chunk",
    [ACP_UPDATE_SUBAGENT] = "subagent_update",
};

const char *acp_update_kind_name(acp_update_kind k)
{
    if ((unsigned)k >= sizeof names / sizeof names[0]) return names[0];
    return names[k];
}

acp_update_kind acp_update_kind_of(acp_span t)
{
    /* Known names contain no escapes, so a literal with a backslash is never one of them. */
    if (t.n < 2 || t.p[0] != '"' || memchr(t.p, '\\', t.n)) return ACP_UPDATE_OTHER;
    for (size_t k = 1; k < sizeof names / sizeof names[0]; k++) {
        size_t n = strlen(names[k]);
        if (n == t.n - 2 && memcmp(t.p + 1, names[k], n) == 0) return (acp_update_kind)k;
    }
    return ACP_UPDATE_OTHER;
}
