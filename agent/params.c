/* SPDX-License-Identifier: Apache-2.0 */
/* The params of every request the agent serves, as schema.json (ACP v1, SDK 2.4.0) types them:
 * one table per $defs entry they reach, written in the schema's order. validate.h says how a
 * table reads; tests/agent/validate_test.c holds every table against schema.json, member by
 * member, so a schema update that changes them fails there first.
 *
 * Where the schema leaves a choice, the official SDK's decoder decided it: an McpServer with an
 * unknown "type" is refused (the SDK could only read it as stdio, which it is not). */
#include "agent/validate.h"

/* Left as written: clang-format would spread each one-line initializer over four lines. */
/* clang-format off */
#define N(a) (sizeof(a) / sizeof *(a))
#define SHAPE(name, ...)                                                                           \
    static const vfield name##_fields[] = {__VA_ARGS__};                                           \
    static const vshape name = {name##_fields, N(name##_fields)}

/* Every object of the protocol has it: an object or null, dropped when malformed. */
#define META {"_meta", V_OBJECT, VF_NULL | VF_LENIENT, NULL}
/* A required string; a lenient optional string or null; a lenient optional object or null. */
#define STR(k) {k, V_STRING, VF_REQ, NULL}
#define OPT_STR(k) {k, V_STRING, VF_NULL | VF_LENIENT, NULL}
#define OPT_OBJ(k, shape) {k, V_OBJECT, VF_NULL | VF_LENIENT, shape}
#define SESSION_ID STR("sessionId")
#define PAIRS(k) {k, V_ARRAY, VF_REQ | VF_NULL_EMPTY, &a_name_value}
#define MCP_SERVERS(req) {"mcpServers", V_ARRAY, (req) | VF_NULL_EMPTY, &a_mcp_server}
#define ADD_DIRS {"additionalDirectories", V_ARRAY, VF_NULL_EMPTY, &a_string}
#define ANNOTATIONS OPT_OBJ("annotations", &annotations)
/* clang-format on */

static const vfield a_string = {NULL, V_STRING, 0, NULL};

/* --- initialize ------------------------------------------------------------------------------ */

SHAPE(marker, META); /* ElicitationFormCapabilities, ...: a marker object */
SHAPE(fs_caps, {"readTextFile", V_BOOL, VF_LENIENT, NULL},
      {"writeTextFile", V_BOOL, VF_LENIENT, NULL}, META);
SHAPE(auth_caps, {"terminal", V_BOOL, VF_LENIENT, NULL}, META);
SHAPE(elicitation_caps, OPT_OBJ("form", &marker), OPT_OBJ("url", &marker), META);
SHAPE(config_caps, OPT_OBJ("boolean", &marker), META);
/* CompactionCapabilities and NoticeCapabilities declare no members: any object. */
SHAPE(session_caps, OPT_OBJ("compaction", NULL), OPT_OBJ("configOptions", &config_caps),
      OPT_OBJ("notices", NULL), META);
SHAPE(client_caps, {"fs", V_OBJECT, VF_LENIENT, &fs_caps}, {"terminal", V_BOOL, VF_LENIENT, NULL},
      OPT_OBJ("session", &session_caps), {"auth", V_OBJECT, VF_LENIENT, &auth_caps},
      OPT_OBJ("elicitation", &elicitation_caps), META);
SHAPE(implementation, STR("name"), OPT_STR("title"), STR("version"), META);
SHAPE(initialize, {"protocolVersion", V_U16, VF_REQ, NULL},
      {"clientCapabilities", V_OBJECT, VF_LENIENT, &client_caps},
      OPT_OBJ("clientInfo", &implementation), META);
const vfield params_initialize = {"params", V_OBJECT, 0, &initialize};

/* --- authenticate, logout -------------------------------------------------------------------- */

SHAPE(authenticate, STR("methodId"), META);
const vfield params_authenticate = {"params", V_OBJECT, 0, &authenticate};
SHAPE(logout, META);
const vfield params_logout = {"params", V_OBJECT, 0, &logout};

/* --- session/new, load, resume --------------------------------------------------------------- */

SHAPE(name_value, STR("name"), STR("value"), META); /* EnvVariable, HttpHeader */
static const vfield a_name_value = {NULL, V_OBJECT, 0, &name_value};
SHAPE(mcp_stdio, STR("name"), STR("command"), {"args", V_ARRAY, VF_REQ | VF_NULL_EMPTY, &a_string},
      PAIRS("env"), META);
SHAPE(mcp_http, STR("name"), STR("url"), PAIRS("headers"), META); /* McpServerHttp and Sse */
SHAPE(mcp_acp, STR("name"), STR("serverId"), META);               /* McpServerAcp (unstable) */
static const char *const mcp_types[] = {"http", "sse", "acp", NULL};
static const vshape *const mcp_variants[] = {&mcp_http, &mcp_http, &mcp_acp};
/* "type" names http and sse; stdio has none (an unknown one is an error, not stdio). */
static const vunion mcp_server = {
    .tag = "type", .names = mcp_types, .variants = mcp_variants, .absent = &mcp_stdio};
static const vfield a_mcp_server = {NULL, V_TAGGED, 0, &mcp_server};

SHAPE(new_session, STR("cwd"), ADD_DIRS, MCP_SERVERS(VF_REQ), META);
const vfield params_new = {"params", V_OBJECT, 0, &new_session};
SHAPE(load_session, MCP_SERVERS(VF_REQ), STR("cwd"), ADD_DIRS, SESSION_ID, META);
const vfield params_load = {"params", V_OBJECT, 0, &load_session};
SHAPE(resume_session, SESSION_ID, STR("cwd"), ADD_DIRS, MCP_SERVERS(0), META);
const vfield params_resume = {"params", V_OBJECT, 0, &resume_session};

/* --- close, list, delete --------------------------------------------------------------------- */

SHAPE(session_only, SESSION_ID, META); /* CloseSessionRequest, DeleteSessionRequest, cancel */
const vfield params_close = {"params", V_OBJECT, 0, &session_only};
const vfield params_delete = {"params", V_OBJECT, 0, &session_only};
SHAPE(list_sessions, {"cwd", V_STRING, VF_NULL, NULL}, {"cursor", V_STRING, VF_NULL, NULL}, META);
const vfield params_list = {"params", V_OBJECT, 0, &list_sessions};

/* --- session/prompt, session/cancel ---------------------------------------------------------- */

static const char *const roles[] = {"assistant", "user", NULL};
static const vfield a_role = {NULL, V_ENUM, 0, roles};
SHAPE(annotations, {"audience", V_ARRAY, VF_NULL | VF_LENIENT | VF_SKIP, &a_role},
      OPT_STR("lastModified"), {"priority", V_NUMBER, VF_NULL | VF_LENIENT, NULL}, META);
SHAPE(text_content, ANNOTATIONS, STR("text"), META);
SHAPE(image_content, ANNOTATIONS, STR("data"), STR("mimeType"), OPT_STR("uri"), META);
SHAPE(audio_content, ANNOTATIONS, STR("data"), STR("mimeType"), META);
SHAPE(resource_link, ANNOTATIONS, OPT_STR("description"), OPT_STR("mimeType"), STR("name"),
      {"size", V_INT, VF_NULL | VF_LENIENT, NULL}, OPT_STR("title"), STR("uri"), META);
SHAPE(text_resource, OPT_STR("mimeType"), STR("text"), STR("uri"), META);
SHAPE(blob_resource, STR("blob"), OPT_STR("mimeType"), STR("uri"), META);
static const vshape *const resource_variants[] = {&text_resource, &blob_resource};
static const vunion resource = {.variants = resource_variants, .n = 2};
SHAPE(embedded_resource, ANNOTATIONS, {"resource", V_ANYOF, VF_REQ, &resource}, META);
static const char *const content_types[] = {"text",          "image",    "audio",
                                            "resource_link", "resource", NULL};
static const vshape *const content_variants[] = {&text_content, &image_content, &audio_content,
                                                 &resource_link, &embedded_resource};
static const vunion content_block = {
    .tag = "type", .names = content_types, .variants = content_variants};
static const vfield a_content_block = {NULL, V_TAGGED, 0, &content_block};
SHAPE(prompt, SESSION_ID, {"prompt", V_ARRAY, VF_REQ, &a_content_block}, META);
const vfield params_prompt = {"params", V_OBJECT, 0, &prompt};
const vfield params_cancel = {"params", V_OBJECT, 0, &session_only};

/* --- session/set_mode, session/set_config_option --------------------------------------------- */

SHAPE(set_mode, SESSION_ID, STR("modeId"), META);
const vfield params_set_mode = {"params", V_OBJECT, 0, &set_mode};
SHAPE(set_config_common, SESSION_ID, STR("configId"), META);
static const char *const boolean_type[] = {"boolean", NULL};
SHAPE(boolean_value, {"type", V_ENUM, VF_REQ, boolean_type}, {"value", V_BOOL, VF_REQ, NULL});
SHAPE(value_id, STR("value"));
static const vshape *const config_variants[] = {&boolean_value, &value_id};
/* anyOf, as the schema has it: {"type": "boolean", "value": <boolean>}, else a value id (no
 * type, an unknown one, or even "boolean" with a string: the SDK reads that as a value id). */
static const vunion set_config = {.common = &set_config_common,
                                  .tag = "type",
                                  .names = boolean_type,
                                  .variants = config_variants,
                                  .n = 2,
                                  .report = 1};
const vfield params_set_config = {"params", V_ANYOF, 0, &set_config};

const vmethod params_methods[] = {
    {"initialize", "InitializeRequest", &params_initialize},
    {"authenticate", "AuthenticateRequest", &params_authenticate},
    {"logout", "LogoutRequest", &params_logout},
    {"session/new", "NewSessionRequest", &params_new},
    {"session/load", "LoadSessionRequest", &params_load},
    {"session/resume", "ResumeSessionRequest", &params_resume},
    {"session/close", "CloseSessionRequest", &params_close},
    {"session/list", "ListSessionsRequest", &params_list},
    {"session/delete", "DeleteSessionRequest", &params_delete},
    {"session/prompt", "PromptRequest", &params_prompt},
    {"session/cancel", "CancelNotification", &params_cancel},
    {"session/set_mode", "SetSessionModeRequest", &params_set_mode},
    {"session/set_config_option", "SetSessionConfigOptionRequest", &params_set_config},
};
const size_t params_nmethods = N(params_methods);
