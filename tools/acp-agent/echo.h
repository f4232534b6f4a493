/* The echo engine: a test agent that exercises the protocol (like MCP's server-everything).
 * A prompt not starting with '/' is echoed back; slash commands stream, sleep, set the title,
 * send a plan, read and write files inside the root set, and use the session's MCP servers. */
#ifndef ACP_AGENT_ECHO_H
#define ACP_AGENT_ECHO_H

#include "acp/agent.h"

/* Fills *e with the echo engine (static strings; no allocation). */
void echo_engine(acp_engine *e);

#endif
