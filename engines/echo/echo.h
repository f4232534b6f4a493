/* SPDX-License-Identifier: Apache-2.0 */
/* The echo engine: a test agent that exercises the protocol (like MCP's server-everything).
 * A prompt not starting with '/' is echoed back; slash commands stream, sleep, set the title,
 * send a plan, read and write files inside the root set, use the session's MCP servers, and
 * exercise the rest of ACP v1: notices, compaction, usage, modes and config options from the
 * agent's side, terminals, permissions and elicitation. Modes `ask` (no writes or terminal
 * commands) and `code`; config options `mode` (the modes again, kept in step by the runtime),
 * `model` (echo-small, echo-large: the echo twice) and `verbose` (a thought naming the mode and
 * model before each reply). */
#ifndef ACP_ENGINE_ECHO_H
#define ACP_ENGINE_ECHO_H

#include "acp/agent.h"

/* Fills *e with the echo engine (static strings; no allocation). auth_env non-NULL: the one
 * auth method "echo-token" is required, and authenticate succeeds only while that environment
 * variable is set and non-empty (borrowed: must outlive the agent). */
void echo_engine(acp_engine *e, const char *auth_env);
/* Registers the engine's extension method (_acp-agent/echo) on the agent: 0 or ACP_ENOMEM. */
int echo_serve(acp_agent *a);

#endif
