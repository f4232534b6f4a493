/* SPDX-License-Identifier: Apache-2.0 */
#include "engines/openai/tools.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp/error.h"

static const struct {
    const char *name, *description, *parameters;
} builtins[] = {
    [OPENAI_TOOL_READ] = {"read_text_file",
                          "Read a text file of the project. Paths are absolute or relative to "
                          "the project directory.",
                          "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"
                          "\"line\":{\"type\":\"integer\",\"description\":\"first line, 1-based\"},"
                          "\"limit\":{\"type\":\"integer\",\"description\":\"lines to read\"}},"
                          "\"required\":[\"path\"]}"},
    [OPENAI_TOOL_WRITE] = {"write_text_file",
                           "Write (create or replace) a text file of the project with the whole "
                           "new content. The user is asked first.",
                           "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"
                           "\"content\":{\"type\":\"string\"}},\"required\":[\"path\","
                           "\"content\"]}"},
    [OPENAI_TOOL_RUN] = {"run_command",
                         "Run a shell command in the project directory and get its output and "
                         "exit status. The user is asked first.",
                         "{\"type\":\"object\",\"properties\":{\"command\":{\"type\":\"string\"}},"
                         "\"required\":[\"command\"]}"},
    [OPENAI_TOOL_SUBAGENT] = {"delegate_task",
                              "Hand a self-contained task (research, a draft, a plan) to a "
                              "subagent: a fresh assistant without this conversation or any "
                              "tools. The user sees its work; you get its answer back.",
                              "{\"type\":\"object\",\"properties\":{\"task\":{\"type\":"
                              "\"string\",\"description\":\"everything the subagent needs to "
                              "know\"},\"title\":{\"type\":\"string\",\"description\":\"a "
                              "short name for it\"}},\"required\":[\"task\"]}"},
};

static openai_tool *grow(openai_tools *ts)
{
    if (ts->n == ts->cap) {
        size_t cap = ts->cap ? ts->cap * 2 : 8;
        openai_tool *v = realloc(ts->v, cap * sizeof *v);
        if (!v) return NULL;
        ts->v = v;
        ts->cap = cap;
    }
    openai_tool *t = &ts->v[ts->n];
    memset(t, 0, sizeof *t);
    return t;
}

int openai_tools_add_builtin(openai_tools *ts, enum openai_tool_kind kind)
{
    openai_tool *t = grow(ts);
    if (!t) return ACP_ENOMEM;
    t->kind = kind;
    snprintf(t->name, sizeof t->name, "%s", builtins[kind].name);
    ts->n++;
    return 0;
}

const openai_tool *openai_tools_find(const openai_tools *ts, const char *name)
{
    for (size_t i = 0; i < ts->n; i++)
        if (!strcmp(ts->v[i].name, name)) return &ts->v[i];
    return NULL;
}

static bool name_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
}

/* FNV-1a over server, a NUL, tool and the salt. */
static uint32_t hash(const char *server, const char *tool, uint32_t salt)
{
    uint32_t h = 2166136261u;
    for (const char *p = server; *p; p++) h = (h ^ (unsigned char)*p) * 16777619u;
    h *= 16777619u;
    for (const char *p = tool; *p; p++) h = (h ^ (unsigned char)*p) * 16777619u;
    for (int i = 0; i < 4; i++) h = (h ^ ((salt >> (8 * i)) & 0xFF)) * 16777619u;
    return h;
}

int openai_tools_add_mcp(openai_tools *ts, const char *server, const char *tool)
{
    char base[256];
    size_t n = 0;
    for (const char *p = server; *p && n < sizeof base - 1; p++)
        base[n++] = name_char((unsigned char)*p) ? *p : '_';
    for (const char *p = "__"; *p && n < sizeof base - 1; p++) base[n++] = *p;
    for (const char *p = tool; *p && n < sizeof base - 1; p++)
        base[n++] = name_char((unsigned char)*p) ? *p : '_';
    base[n] = '\0';
    char name[OPENAI_TOOL_NAME_MAX + 1];
    bool fits = n <= OPENAI_TOOL_NAME_MAX;
    if (fits) memcpy(name, base, n + 1);
    for (uint32_t salt = 0; !fits || openai_tools_find(ts, name); salt++) {
        /* 55 + '_' + 8 = 64 */
        snprintf(name, sizeof name, "%.55s_%08x", base, (unsigned)hash(server, tool, salt));
        fits = true;
    }
    openai_tool *t = grow(ts);
    if (!t) return ACP_ENOMEM;
    t->kind = OPENAI_TOOL_MCP;
    memcpy(t->name, name, sizeof name);
    t->server = strdup(server);
    t->tool = strdup(tool);
    if (!t->server || !t->tool) {
        free(t->server);
        free(t->tool);
        return ACP_ENOMEM;
    }
    ts->n++;
    return 0;
}

int openai_tools_add_set(openai_tools *ts, const acp_mcp_set *set)
{
    for (size_t i = 0; set && i < acp_mcp_set_count(set); i++) {
        if (acp_mcp_server_status(set, i, NULL) != ACP_MCP_READY) continue;
        for (size_t t = 0; t < acp_mcp_tool_count(set, i); t++)
            if (openai_tools_add_mcp(ts, acp_mcp_server_name(set, i), acp_mcp_tool_name(set, i, t)))
                return ACP_ENOMEM;
    }
    return 0;
}

/* The MCP tool's index in set, or false when it went away. */
static bool mcp_lookup(const acp_mcp_set *set, const openai_tool *t, size_t *srv, size_t *tool)
{
    if (!set || acp_mcp_server_find(set, t->server, srv)) return false;
    for (size_t i = 0; i < acp_mcp_tool_count(set, *srv); i++)
        if (!strcmp(acp_mcp_tool_name(set, *srv, i), t->tool)) return *tool = i, true;
    return false;
}

int openai_tools_json(openai_tools *ts, const acp_mcp_set *set)
{
    ts->json.len = 0;
    acp_jw w;
    acp_jw_init(&w, &ts->json);
    acp_jw_arr(&w);
    for (size_t i = 0; i < ts->n; i++) {
        const openai_tool *t = &ts->v[i];
        size_t srv = 0, tool = 0;
        if (t->kind == OPENAI_TOOL_MCP && !mcp_lookup(set, t, &srv, &tool)) continue;
        acp_jw_obj(&w);
        acp_jw_kstr(&w, "type", "function");
        acp_jw_key(&w, "function");
        acp_jw_obj(&w);
        acp_jw_kstr(&w, "name", t->name);
        if (t->kind != OPENAI_TOOL_MCP) {
            acp_jw_kstr(&w, "description", builtins[t->kind].description);
            acp_jw_key(&w, "parameters");
            acp_jw_raw(&w, builtins[t->kind].parameters, strlen(builtins[t->kind].parameters));
        } else {
            const char *d = acp_mcp_tool_description(set, srv, tool);
            const json_t *schema = acp_mcp_tool_input_schema(set, srv, tool);
            acp_jw_kstr(&w, "description", d ? d : t->tool);
            acp_jw_key(&w, "parameters");
            if (json_is_object(schema))
                acp_jw_json(&w, schema);
            else
                acp_jw_raw(&w, "{\"type\":\"object\"}", 17);
        }
        acp_jw_obj_end(&w);
        acp_jw_obj_end(&w);
    }
    acp_jw_arr_end(&w);
    return acp_jw_status(&w);
}

void openai_tools_free(openai_tools *ts)
{
    for (size_t i = 0; i < ts->n; i++) {
        free(ts->v[i].server);
        free(ts->v[i].tool);
    }
    free(ts->v);
    acp_buf_free(&ts->json);
    memset(ts, 0, sizeof *ts);
}
