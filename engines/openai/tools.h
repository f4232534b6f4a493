/* SPDX-License-Identifier: Apache-2.0 */
/* openai_tools: the tools a model may call in one turn, under names the chat completions API
 * accepts (^[A-Za-z0-9_-]{1,64}$), each mapping back to exactly one tool.
 *
 * Built-in tools come first, under fixed names: read_text_file (the client's fs/read_text_file),
 * write_text_file (fs/write_text_file), run_command (the terminal methods). Then every tool of
 * every READY MCP server, named SERVER__TOOL with each byte outside [A-Za-z0-9_-] replaced by '_'.
 * A name that would be longer than 64 bytes, or that is already taken (two servers "a.b" and
 * "a_b", or a server called "read_text_file"), is cut to 55 bytes and followed by '_' and 8 hex
 * digits of a hash of (server, tool) (the hash salted until the name is free), so the same
 * tools always get the same names and no name is ever ambiguous: openai_tools_find() looks it
 * up, it never parses it. */
#ifndef ACP_ENGINES_OPENAI_TOOLS_H
#define ACP_ENGINES_OPENAI_TOOLS_H

#include <stdbool.h>
#include <stddef.h>

#include "acp/json.h"
#include "acp/mcp.h"

#define OPENAI_TOOL_NAME_MAX 64

/* OPENAI_TOOL_SUBAGENT (unstable): delegate_task, a task run by the model in a subagent session
 * of the client's (clientCapabilities.subagents). */
enum openai_tool_kind {
    OPENAI_TOOL_READ,
    OPENAI_TOOL_WRITE,
    OPENAI_TOOL_RUN,
    OPENAI_TOOL_SUBAGENT,
    OPENAI_TOOL_MCP
};

typedef struct openai_tool {
    enum openai_tool_kind kind;
    char name[OPENAI_TOOL_NAME_MAX + 1];
    char *server, *tool; /* OPENAI_TOOL_MCP: the MCP server's name and the tool's (owned) */
} openai_tool;

typedef struct openai_tools {
    openai_tool *v;
    size_t n, cap;
    acp_buf json; /* the request's "tools" array, built by openai_tools_json() */
} openai_tools;

/* Adds a built-in tool (every kind but MCP). 0 or ACP_ENOMEM. */
int openai_tools_add_builtin(openai_tools *ts, enum openai_tool_kind kind);
/* Adds MCP tool (server, tool) under a fresh name (see above); the strings are copied.
 * 0 or ACP_ENOMEM. */
int openai_tools_add_mcp(openai_tools *ts, const char *server, const char *tool);
/* Every tool of every READY server of `set`, in server then tool order. 0 or ACP_ENOMEM. */
int openai_tools_add_set(openai_tools *ts, const acp_mcp_set *set);
/* The tool called `name`, or NULL (borrowed until the next add or free). */
const openai_tool *openai_tools_find(const openai_tools *ts, const char *name);
/* Builds ts->json: [{"type":"function","function":{name, description, parameters}}...], the
 * MCP tools' descriptions and input schemas taken from set (which may be NULL when there are
 * none). 0, ACP_EINVAL (a schema that does not serialise) or ACP_ENOMEM. */
int openai_tools_json(openai_tools *ts, const acp_mcp_set *set);
void openai_tools_free(openai_tools *ts);

#endif
