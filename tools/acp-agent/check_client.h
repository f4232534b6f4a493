/* SPDX-License-Identifier: Apache-2.0 */
/* acp-agent --check-client: an engine that checks the client connected to it (see
 * check_client.c) and reports like `acp check`. */
#ifndef ACP_TOOLS_AGENT_CHECK_CLIENT_H
#define ACP_TOOLS_AGENT_CHECK_CLIENT_H

#include <stdbool.h>

#include "acp/agent.h"

typedef struct check_client check_client;

/* report_path (borrowed; NULL: stderr) is appended to after each prompt's checks; json: one
 * object per check. Freed with check_client_free() after the agent. */
check_client *check_client_new(const char *report_path, bool json);
/* The engine (eng filled; its user is cc). */
void check_client_engine(check_client *cc, acp_engine *eng);
void check_client_free(check_client *cc);

#endif
