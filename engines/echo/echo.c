/* SPDX-License-Identifier: Apache-2.0 */
/* The echo engine. One turn at a time per session (the runtime guarantees it), so the state of
 * the running command lives in the session's engine data. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "acp/num.h"
#include "acp/version.h"
#include "engines/echo/echo.h"

#define ECHO_CHUNK       (64 * 1024) /* echo: bytes per agent_message_chunk */
#define STREAM_BATCH     4096        /* /stream: chunks per loop turn at most */
#define STREAM_BATCH_MAX (1u << 20)  /* /stream: bytes per loop turn at most */
/* What one /stream or /sleep may ask: every turn ends, and in reasonable time. */
#define STREAM_N_MAX     10000000u    /* /stream: chunks */
#define STREAM_BYTES_MAX (64u << 20)  /* /stream: bytes per chunk */
#define STREAM_TOTAL_MAX (1ull << 30) /* /stream: N x BYTES */
#define SLEEP_MS_MAX     86400000u    /* /sleep: a day */

enum job { JOB_NONE, JOB_SLEEP, JOB_STREAM, JOB_CLIENT, JOB_MCP };

typedef struct echo_sess {
    acp_session *s;
    uv_timer_t *timer; /* allocated: its close callback frees it after the session is gone */
    acp_turn *t;
    enum job job;
    char mid[48];      /* message id of the current reply */
    acp_tool_call *tc; /* the current tool call (the turn's: gone when it ends) */
    /* /stream */
    unsigned long long left;
    size_t bytes;
    char *chunk;
    /* /write */
    char *path, *text;
    /* /call */
    acp_mcp_call *call;
    /* /term (the turn's: the runtime releases it if we do not) */
    acp_terminal *term;
    char *command;
    unsigned long long used; /* /usage: tokens (about 4 bytes each) this session has seen */
} echo_sess;

static const struct {
    const char *name, *description, *hint;
} commands[] = {
    {"stream", "Stream N chunks of BYTES bytes each as one message", "N BYTES"},
    {"sleep", "Wait MS milliseconds (cancellable)", "MS"},
    {"title", "Set the session title", "TEXT"},
    {"plan", "Send a plan with three entries", NULL},
    {"read", "Read a file inside the session's roots", "PATH"},
    {"write", "Write a file inside the session's roots (asks permission)", "PATH TEXT"},
    {"mcp", "List the session's MCP servers and their tools", NULL},
    {"call", "Call an MCP tool", "SERVER TOOL JSON"},
    {"notice", "Send a notice (an agent message when the client takes no notices)", "TEXT"},
    {"compact", "Compact the context: a compaction entry kept in the history", NULL},
    {"usage", "Report the context window usage", NULL},
    {"mode", "Switch the session mode from the agent's side", "MODE"},
    {"set", "Set a config option from the agent's side", "OPTION VALUE"},
    {"term", "Run a shell command in a client terminal (asks permission)", "COMMAND"},
    {"ask", "Ask for permission and say which option was chosen", NULL},
    {"elicit", "Ask the user for a name and a count (a form elicitation)", NULL},
    {"ext", "Call the client's extension method _acp-agent/ping and say what it answered", NULL},
    {"system", "Say the session's system prompt (the client's, unstable), or that it has none",
     NULL},
    {"subagent",
     "Start a subagent session that echoes TEXT (unstable: the client must take "
     "subagents)",
     "TEXT"},
};

/* Extensions, advertised under agentCapabilities._meta as the spec asks: the client may call
 * _acp-agent/echo (its params come back as the result); /ext calls the client's
 * _acp-agent/ping. */
static const char caps_meta_text[] =
    "{\"acp-agent\":{\"methods\":[\"_acp-agent/echo\"],\"clientMethods\":[\"_acp-agent/ping\"]}}";

/* --- modes, config options, authentication ------------------------------------------------- */

static const acp_mode modes[] = {
    {"ask", "Ask", "Answers and reads files; no writes or terminal commands"},
    {"code", "Code", "Reads, writes and runs commands, asking first"},
};

static const acp_config_value models[] = {
    {.value = "echo-small", .name = "Echo small", .description = "Echoes the prompt once"},
    {.value = "echo-large", .name = "Echo large", .description = "Echoes the prompt twice"},
};

/* The mode as a config option too: the spec asks agents with modes to offer both while clients
 * move to config options, and the runtime keeps the two in step. */
static const acp_config_value mode_values[] = {
    {.value = "ask",
     .name = "Ask",
     .description = "Answers and reads files; no writes or terminal commands"},
    {.value = "code",
     .name = "Code",
     .description = "Reads, writes and runs commands, asking first"},
};

static const acp_config_option options[] = {
    {.id = "mode",
     .name = "Mode",
     .category = "mode",
     .values = mode_values,
     .nvalues = 2,
     .default_value = "code"},
    {.id = "model",
     .name = "Model",
     .category = "model",
     .values = models,
     .nvalues = 2,
     .default_value = "echo-small"},
    {.id = "verbose",
     .name = "Verbose",
     .description = "Start each reply with a thought naming the mode and model",
     .boolean = true},
};

static const acp_auth_method auth_methods[] = {
    {.id = "echo-token",
     .name = "Echo token",
     .description = "Succeeds when the agent's environment holds the token variable"},
};

static void authenticate(acp_auth *au, const char *method_id, void *user)
{
    const char *var = user, *val = getenv(var);
    if (val && *val)
        acp_auth_accept(au);
    else
        acp_auth_refuse(au, ACP_RPC_AUTH_REQUIRED, "%s is not set in the agent's environment", var);
}

/* auth/status (unstable): with --auth, signed in once authenticate succeeded on this
 * connection; without it there is nothing to sign in to. */
static const char *auth_status(acp_agent *a, const char **account, void *user)
{
    if (!user) return "not_required";
    if (!acp_agent_authenticated(a)) return "unauthenticated";
    *account = "Echo token";
    return "authenticated";
}

static int logout(acp_agent *a, char **message, void *user)
{
    return 0; /* the runtime forgets the connection's sign-in; nothing of ours to drop */
}

/* --- helpers --------------------------------------------------------------------------------- */

static void job_clear(echo_sess *es)
{
    if (es->timer) uv_timer_stop(es->timer);
    if (es->call) {
        acp_mcp_call *c = es->call;
        es->call = NULL; /* on_done, run from inside the cancel, sees it is not wanted */
        acp_mcp_call_cancel(c);
    }
    if (es->term) acp_terminal_release(es->term);
    es->term = NULL;
    free(es->chunk);
    free(es->path);
    free(es->text);
    free(es->command);
    es->chunk = es->path = es->text = es->command = NULL;
    es->job = JOB_NONE;
    es->t = NULL;
    es->tc = NULL;
}

static void finish(echo_sess *es, const char *reason)
{
    acp_turn *t = es->t;
    job_clear(es);
    if (t) acp_turn_end(t, reason);
}

static void say(acp_turn *t, const char *text)
{
    char mid[48];
    acp_agent_new_id("msg_", mid);
    acp_turn_text(t, NULL, mid, text, strlen(text));
}

/* Length of the longest prefix of s[0..n) not longer than max that ends on a UTF-8 boundary. */
static size_t utf8_cut(const char *s, size_t n, size_t max)
{
    if (n <= max) return n;
    size_t k = max;
    while (k > 0 && ((unsigned char)s[k] & 0xC0) == 0x80) k--;
    return k ? k : max;
}

static json_t *text_block(const char *text)
{
    return json_pack("{ss ss}", "type", "text", "text", text);
}

static json_t *content_item(json_t *block)
{
    return json_pack("{ss so}", "type", "content", "content", block);
}

/* Begins es's tool call, or says why it cannot and ends the turn: false then. */
static bool tool_begin(acp_turn *t, echo_sess *es, const acp_tool_info *info)
{
    es->t = t;
    if (!acp_tool_call_begin(t, info, &es->tc)) return true;
    say(t, acp_error_last()->message);
    finish(es, "end_turn");
    return false;
}

/* Reports the current tool call failed and ends the turn. */
static void tool_failed(echo_sess *es, const char *message)
{
    acp_tool_call_fail(es->tc, message);
    finish(es, "end_turn");
}

/* The same with the sentence of the last libacp error (copied first: failing the tool call
 * is a libacp call too). */
static void tool_failed_last(echo_sess *es)
{
    char why[1024];
    snprintf(why, sizeof why, "%s", acp_error_last()->message);
    tool_failed(es, why);
}

/* --- echo, /stream ------------------------------------------------------------------------------
 */

static void echo_text(acp_turn *t, const char *text, size_t n)
{
    acp_session *s = acp_turn_session(t);
    echo_sess *es = acp_session_data(s);
    bool verbose = false;
    acp_session_config_bool(s, "verbose", &verbose);
    if (verbose) {
        char line[160];
        snprintf(line, sizeof line, "mode: %s, model: %s", acp_session_mode(s),
                 acp_session_config(s, "model"));
        acp_turn_text(t, "agent_thought_chunk", NULL, line, strlen(line));
    }
    /* echo-large answers with the text twice: a config change shows in the very next reply */
    int times = !strcmp(acp_session_config(s, "model"), "echo-large") ? 2 : 1;
    char mid[48];
    acp_agent_new_id("msg_", mid);
    for (int i = 0; i < times; i++) {
        const char *p = text;
        for (size_t left = n; left;) {
            size_t k = utf8_cut(p, left, ECHO_CHUNK);
            acp_turn_text(t, NULL, mid, p, k);
            p += k;
            left -= k;
        }
    }
    if (es) es->used += 2 * n / 4;
    acp_turn_end(t, "end_turn");
}

static void stream_more(acp_turn *t, void *user)
{
    echo_sess *es = user;
    size_t sent = 0, bytes = 0;
    while (es->left && sent < STREAM_BATCH && bytes < STREAM_BATCH_MAX) {
        if (acp_turn_text(t, NULL, es->mid, es->chunk, es->bytes)) {
            finish(es, "end_turn"); /* the turn was answered already (store failure) */
            return;
        }
        es->left--;
        sent++;
        bytes += es->bytes + 128;
    }
    if (!es->left)
        finish(es, "end_turn");
    else
        acp_turn_on_writable(t, stream_more, es);
}

/* A command's arguments as words (at blanks) in a copy of args: exactly n of them, else false
 * (the usage line was said and the turn ended). The caller frees *copy either way. */
static bool words(acp_turn *t, const char *args, char **copy, char **w, int n, const char *usage)
{
    int k = 0;
    char *save = NULL, *x;
    *copy = strdup(args);
    for (x = *copy ? strtok_r(*copy, " \t\n", &save) : NULL; x && k <= n;
         x = strtok_r(NULL, " \t\n", &save))
        if (k++ < n) w[k - 1] = x;
    if (!*copy) {
        acp_turn_fail(t, ACP_RPC_INTERNAL_ERROR, "out of memory");
        return false;
    }
    if (k == n) return true;
    say(t, usage);
    acp_turn_end(t, "end_turn");
    return false;
}

/* Argument NAME of /CMD as a number from 0 to max; a bad one is said ("/sleep: MS: '-5' is
 * out of range: 0 to 86400000") and ends the turn: false then. */
static bool number(acp_turn *t, const char *cmd, const char *name, const char *s, uint64_t max,
                   uint64_t *out)
{
    char line[ACP_NUM_WHY + 64];
    if (!acp_parse_u64(s, 0, max, out)) return true;
    snprintf(line, sizeof line, "/%s: %s: %s", cmd, name, acp_error_last()->message);
    say(t, line);
    acp_turn_end(t, "end_turn");
    return false;
}

static void cmd_stream(acp_turn *t, echo_sess *es, const char *args)
{
    char *copy, *w[2];
    uint64_t n = 0, bytes = 0;
    bool ok = words(t, args, &copy, w, 2, "usage: /stream N BYTES") &&
              number(t, "stream", "N", w[0], STREAM_N_MAX, &n) &&
              number(t, "stream", "BYTES", w[1], STREAM_BYTES_MAX, &bytes);
    free(copy);
    if (!ok) return;
    if (n * bytes > STREAM_TOTAL_MAX) { /* both bounded: the product cannot wrap */
        char line[160];
        snprintf(line, sizeof line,
                 "/stream: N x BYTES is %llu bytes, over the %llu a stream may send",
                 (unsigned long long)(n * bytes), (unsigned long long)STREAM_TOTAL_MAX);
        say(t, line);
        acp_turn_end(t, "end_turn");
        return;
    }
    es->chunk = malloc(bytes + 1);
    if (!es->chunk) {
        acp_turn_fail(t, ACP_RPC_INTERNAL_ERROR, "out of memory");
        return;
    }
    for (size_t i = 0; i < bytes; i++) es->chunk[i] = (char)('a' + i % 26);
    es->bytes = bytes;
    es->left = n;
    es->t = t;
    es->job = JOB_STREAM;
    acp_agent_new_id("msg_", es->mid);
    acp_turn_on_writable(t, stream_more, es);
}

/* --- /sleep, /title, /plan ------------------------------------------------------------------- */

static void slept(uv_timer_t *h)
{
    echo_sess *es = h->data;
    finish(es, "end_turn");
}

static void cmd_sleep(acp_turn *t, echo_sess *es, const char *args)
{
    char *copy, *w[1];
    uint64_t ms = 0;
    bool ok = words(t, args, &copy, w, 1, "usage: /sleep MS") &&
              number(t, "sleep", "MS", w[0], SLEEP_MS_MAX, &ms);
    free(copy);
    if (!ok) return;
    es->t = t;
    es->job = JOB_SLEEP;
    uv_timer_start(es->timer, slept, ms, 0);
}

static void cmd_title(acp_turn *t, const char *args)
{
    char now[ACP_STORE_TIME_LEN + 1];
    acp_store_now(now);
    json_t *u = json_pack("{ss ss ss}", "sessionUpdate", "session_info_update", "title", args,
                          "updatedAt", now);
    int rc = acp_turn_update(t, u);
    json_decref(u);
    if (rc == ACP_ESTORE)
        acp_turn_fail(t, ACP_RPC_INTERNAL_ERROR, "session store unavailable: %s",
                      acp_error_last()->message);
    else if (rc && rc != ACP_ECLOSED)
        acp_turn_fail(t, ACP_RPC_INTERNAL_ERROR, "%s", acp_strerror(rc));
    else
        acp_turn_end(t, "end_turn");
}

/* /system: what the engine was handed, so a client (and the tests) can see it arrived. */
static void cmd_system(acp_turn *t)
{
    bool override = false;
    const char *sp = acp_session_system_prompt(acp_turn_session(t), &override);
    char *line = NULL;
    if (!sp || asprintf(&line, "system prompt (%s): %s", override ? "override" : "append", sp) < 0)
        line = NULL;
    say(t, line ? line : "no system prompt");
    free(line);
    acp_turn_end(t, "end_turn");
}

static void cmd_plan(acp_turn *t)
{
    json_t *u =
        json_pack("{ss s[{ss ss ss} {ss ss ss} {ss ss ss}]}", "sessionUpdate", "plan", "entries",
                  "content", "Understand the request", "priority", "high", "status", "completed",
                  "content", "Write the code", "priority", "medium", "status", "in_progress",
                  "content", "Test it", "priority", "low", "status", "pending");
    acp_turn_update(t, u);
    json_decref(u);
    acp_turn_end(t, "end_turn");
}

/* --- /subagent (unstable) ----------------------------------------------------------------------
 */

/* A child session announced on this one, TEXT as its prompt and its echo as its answer, then
 * idle: what a model engine's delegated task looks like to the client. */
static void cmd_subagent(acp_turn *t, const char *args)
{
    acp_session *s = acp_turn_session(t), *child = NULL;
    json_t *patch = json_pack("{ss ss s{ss}}", "title", "echo subagent", "description", args,
                              "state", "state", "running");
    int rc = acp_session_subagent_new(s, patch, &child);
    json_decref(patch);
    if (rc) {
        char line[512];
        snprintf(line, sizeof line, "/subagent: %s", acp_error_last()->message);
        say(t, line);
        acp_turn_end(t, "end_turn");
        return;
    }
    const char *kinds[] = {"user_message_chunk", "agent_message_chunk"};
    for (size_t i = 0; i < 2; i++) {
        json_t *u = json_pack("{ss s{ss ss}}", "sessionUpdate", kinds[i], "content", "type", "text",
                              "text", args);
        acp_session_update(child, u);
        json_decref(u);
    }
    patch = json_pack("{s{ss ss}}", "state", "state", "idle", "stopReason", "end_turn");
    acp_session_subagent_update(child, patch);
    json_decref(patch);
    char line[128];
    snprintf(line, sizeof line, "subagent %s answered", acp_session_id(child));
    say(t, line);
    acp_turn_end(t, "end_turn");
}

/* --- /read, /write ------------------------------------------------------------------------------
 */

/* Begins the tool call about path, resolved inside the roots: the resolved path (malloc'd),
 * or NULL after reporting the call failed and ending the turn. */
static char *file_tool(acp_turn *t, echo_sess *es, const char *verb, const char *kind,
                       const char *status, const char *path)
{
    char title[512], msg[600];
    snprintf(title, sizeof title, "%s %s", verb, path);
    char *real = NULL;
    int rc = acp_session_resolve_path(acp_turn_session(t), path, &real);
    if (!tool_begin(t, es,
                    &(acp_tool_info){.struct_size = sizeof(acp_tool_info),
                                     .title = title,
                                     .kind = kind,
                                     .status = status,
                                     .path = real})) {
        free(real);
        return NULL;
    }
    if (!rc) return real;
    snprintf(msg, sizeof msg, "%s: %s", path,
             rc == ACP_EACCES ? "outside the session's roots" : acp_strerror(rc));
    tool_failed(es, msg);
    return NULL;
}

static void read_done(acp_session *s, int status, const char *text, size_t n, const char *error,
                      void *user)
{
    echo_sess *es = user;
    if (status) {
        tool_failed(es, error);
        return;
    }
    acp_turn *t = es->t;
    acp_tool_call_complete(es->tc,
                           &(acp_tool_info){.struct_size = sizeof(acp_tool_info), .text = text});
    job_clear(es);
    echo_text(t, text, n); /* ends the turn */
}

static void cmd_read(acp_turn *t, echo_sess *es, const char *args)
{
    acp_session *s = acp_turn_session(t);
    char *real = file_tool(t, es, "Read", "read", "in_progress", args);
    if (!real) return;
    /* Through the client when it offers fs, else from our own disk (on the thread pool). */
    bool client = acp_agent_client_has(acp_session_agent(s), "fs.readTextFile");
    es->job = JOB_CLIENT;
    int rc = client ? acp_turn_read_text_file(t, real, 0, 0, read_done, es)
                    : acp_turn_read_local_file(t, real, 1, SIZE_MAX, read_done, es);
    free(real);
    if (rc && client)
        tool_failed(es, acp_error_last()->message);
    else if (rc)
        tool_failed_last(es);
}

static void write_done(acp_session *s, int status, const char *error, void *user)
{
    echo_sess *es = user;
    if (status) {
        tool_failed(es, error);
        return;
    }
    acp_tool_call_complete(
        es->tc, &(acp_tool_info){.struct_size = sizeof(acp_tool_info), .text = "written"});
    finish(es, "end_turn");
}

/* The answer to an allow/reject question about es's tool call (/write, /term): true to go
 * on; else the tool call failed and the turn ended (cancelled when the answer was). */
static bool allowed(echo_sess *es, int status, const char *option, const char *error)
{
    if (status)
        tool_failed(es, error);
    else if (!option) {
        acp_tool_call_fail(es->tc, "permission request cancelled");
        finish(es, "cancelled");
    } else if (strcmp(option, "allow"))
        tool_failed(es, "permission denied");
    return !status && option && !strcmp(option, "allow");
}

static void permitted(acp_turn *t, int status, const char *option, const char *kind,
                      const char *error, void *user)
{
    echo_sess *es = user;
    if (!allowed(es, status, option, error)) return;
    acp_tool_call_update(
        es->tc, &(acp_tool_info){.struct_size = sizeof(acp_tool_info), .status = "in_progress"});
    acp_session *s = acp_turn_session(t);
    acp_agent *a = acp_session_agent(s);
    bool client = acp_agent_client_has(a, "fs.writeTextFile");
    int rc =
        client ? acp_turn_write_text_file(t, es->path, es->text, strlen(es->text), write_done, es)
               : acp_turn_write_local_file(t, es->path, es->text, strlen(es->text), write_done, es);
    if (rc && client)
        tool_failed(es, acp_error_last()->message);
    else if (rc)
        tool_failed_last(es);
}

static void cmd_write(acp_turn *t, echo_sess *es, const char *args)
{
    static const acp_perm_option opts[] = {{"allow", "Allow", "allow_once"},
                                           {"reject", "Reject", "reject_once"}};
    size_t pl = strcspn(args, " \t");
    char *path = strndup(args, pl);
    const char *text = args + pl + (args[pl] != '\0');
    if (!path || !*path) {
        free(path);
        say(t, "usage: /write PATH TEXT");
        acp_turn_end(t, "end_turn");
        return;
    }
    es->path = file_tool(t, es, "Write", "edit", "pending", path);
    free(path);
    if (!es->path) return;
    es->text = strdup(text);
    es->job = JOB_CLIENT;
    if (!es->text || acp_turn_request_permission(t, es->tc, opts, 2, permitted, es))
        tool_failed(es, "could not ask for permission");
}

/* --- /mcp, /call -------------------------------------------------------------------------------
 */

static void cmd_mcp(acp_turn *t)
{
    acp_mcp_set *m = acp_session_mcp(acp_turn_session(t));
    size_t n = m ? acp_mcp_set_count(m) : 0;
    acp_buf b = {0};
    if (!n) acp_buf_printf(&b, "no MCP servers");
    for (size_t i = 0; i < n; i++) {
        const char *reason = NULL;
        enum acp_mcp_status st = acp_mcp_server_status(m, i, &reason);
        size_t nt = acp_mcp_tool_count(m, i);
        acp_buf_printf(&b, "%s%s: %s", i ? "\n" : "", acp_mcp_server_name(m, i),
                       acp_mcp_status_name(st));
        if (reason) acp_buf_printf(&b, ": %s", reason);
        acp_buf_printf(&b, " (%zu tools%s", nt, nt ? ": " : "");
        for (size_t k = 0; k < nt; k++)
            acp_buf_printf(&b, "%s%s", k ? ", " : "", acp_mcp_tool_name(m, i, k));
        acp_buf_printf(&b, ")");
    }
    acp_buf_cstr(&b);
    say(t, b.data ? b.data : "");
    acp_buf_free(&b);
    acp_turn_end(t, "end_turn");
}

/* Copies the listed members of src that exist into dst. */
static void pick(json_t *dst, const json_t *src, const char *const *keys)
{
    for (; *keys; keys++) {
        json_t *v = json_object_get(src, *keys);
        if (v) json_object_set(dst, *keys, v);
    }
}

/* MCP content (a tools/call result item) to an ACP content block. The shapes agree type by
 * type, but only the members ACP defines are carried over: ACP forbids extra root fields, and
 * MCP has some (icons, structured extras). Unknown types become their JSON as text. */
static json_t *map_content(const json_t *c)
{
    static const char *const text[] = {"text", "annotations", "_meta", NULL};
    static const char *const image[] = {"data", "mimeType", "uri", "annotations", "_meta", NULL};
    static const char *const audio[] = {"data", "mimeType", "annotations", "_meta", NULL};
    static const char *const link[] = {"uri",  "name",        "mimeType", "title", "description",
                                       "size", "annotations", "_meta",    NULL};
    static const char *const res[] = {"uri", "text", "blob", "mimeType", "_meta", NULL};
    const char *type = json_string_value(json_object_get(c, "type"));
    const char *const *keys = NULL;
    if (!type) type = "";
    if (!strcmp(type, "text"))
        keys = text;
    else if (!strcmp(type, "image"))
        keys = image;
    else if (!strcmp(type, "audio"))
        keys = audio;
    else if (!strcmp(type, "resource_link"))
        keys = link;
    json_t *b = json_pack("{ss}", "type", type);
    if (keys) {
        pick(b, c, keys);
    } else if (!strcmp(type, "resource") && json_is_object(json_object_get(c, "resource"))) {
        json_t *r = json_object();
        pick(r, json_object_get(c, "resource"), res);
        json_object_set_new(b, "resource", r);
        pick(b, c, (const char *const[]){"annotations", "_meta", NULL});
    } else {
        json_decref(b);
        char *s = json_dumps(c, JSON_COMPACT);
        b = text_block(s ? s : "");
        free(s);
    }
    return b;
}

static void call_progress(acp_mcp_call *c, double progress, double total, const char *message,
                          void *user)
{
    echo_sess *es = user;
    if (!es->t || es->call != c) return;
    char line[512];
    if (total >= 0)
        snprintf(line, sizeof line, "progress %g/%g%s%s", progress, total, message ? ": " : "",
                 message ? message : "");
    else
        snprintf(line, sizeof line, "progress %g%s%s", progress, message ? ": " : "",
                 message ? message : "");
    acp_tool_call_update(es->tc, &(acp_tool_info){.struct_size = sizeof(acp_tool_info),
                                                  .status = "in_progress",
                                                  .text = line});
}

static void call_done(acp_mcp_call *c, int status, const json_t *result, const char *error,
                      void *user)
{
    echo_sess *es = user;
    if (es->call != c) return; /* cancelled by us: the turn is handled there */
    es->call = NULL;
    if (status) {
        acp_tool_call_fail(es->tc, error ? error : acp_strerror(status));
        finish(es, status == ACP_ECANCELLED ? "cancelled" : "end_turn");
        return;
    }
    json_t *content = json_array();
    json_t *mc = json_object_get(result, "content");
    size_t i;
    json_t *v;
    json_array_foreach(mc, i, v)
    {
        json_t *b = map_content(v);
        if (b) json_array_append_new(content, content_item(b));
    }
    bool failed = json_is_true(json_object_get(result, "isError"));
    acp_tool_call_update(es->tc, &(acp_tool_info){.struct_size = sizeof(acp_tool_info),
                                                  .status = failed ? "failed" : "completed",
                                                  .content = content,
                                                  .raw_output = result});
    json_decref(content);
    finish(es, "end_turn");
}

static void cmd_call(acp_turn *t, echo_sess *es, const char *args)
{
    char server[256], tool[256];
    int off = 0;
    if (sscanf(args, "%255s %255s %n", server, tool, &off) != 2) {
        say(t, "usage: /call SERVER TOOL JSON");
        acp_turn_end(t, "end_turn");
        return;
    }
    const char *js = args + off;
    json_error_t jerr;
    json_t *input = *js ? json_loads(js, 0, &jerr) : json_object();
    if (!json_is_object(input)) {
        json_decref(input);
        say(t, "/call: JSON arguments must be an object");
        acp_turn_end(t, "end_turn");
        return;
    }
    char title[600];
    snprintf(title, sizeof title, "%s.%s", server, tool);
    if (!tool_begin(t, es,
                    &(acp_tool_info){.struct_size = sizeof(acp_tool_info),
                                     .title = title,
                                     .kind = "other",
                                     .status = "in_progress",
                                     .raw_input = input})) {
        json_decref(input);
        return;
    }
    acp_mcp_set *m = acp_session_mcp(acp_turn_session(t));
    acp_mcp_call_cbs cbs = {.struct_size = sizeof(acp_mcp_call_cbs),
                            .on_progress = call_progress,
                            .on_done = call_done};
    es->job = JOB_MCP;
    acp_mcp_call *c = NULL;
    int rc = m ? acp_mcp_call_tool(m, server, tool, input, &cbs, es, &c) : ACP_ENOTFOUND;
    if (!m) json_decref(input);
    if (rc) {
        char msg[600];
        snprintf(msg, sizeof msg, "%s: %s", server,
                 rc == ACP_ENOTFOUND ? "no such MCP server"
                 : rc == ACP_ECLOSED ? "the MCP server is not ready"
                                     : acp_strerror(rc));
        tool_failed(es, msg);
        return;
    }
    es->call = c;
}

/* --- /notice, /compact, /usage, /mode, /set ------------------------------------------------- */

/* What the runtime refuses for lack of a client capability is said as an agent message
 * instead, as the schema advises for notices. */
static void cmd_notice(acp_turn *t, const char *args)
{
    json_t *u = json_pack("{ss ss ss}", "sessionUpdate", "notice", "severity", "info", "title",
                          *args ? args : "notice");
    int rc = acp_turn_update(t, u);
    json_decref(u);
    if (rc == ACP_ENOTSUP) {
        char line[600];
        snprintf(line, sizeof line, "notice: %s", *args ? args : "notice");
        say(t, line);
    }
    acp_turn_end(t, "end_turn");
}

static void cmd_compact(acp_turn *t, echo_sess *es)
{
    char cid[48], summary[160];
    acp_agent_new_id("cmp_", cid);
    snprintf(summary, sizeof summary,
             "The echo engine compacted this session's context (%llu tokens so far).", es->used);
    json_t *u = json_pack("{ss ss ss}", "sessionUpdate", "compaction_update", "compactionId", cid,
                          "status", "in_progress");
    acp_turn_update(t, u);
    json_decref(u);
    u = json_pack("{ss ss s{ss ss}}", "sessionUpdate", "compaction_summary_chunk", "compactionId",
                  cid, "content", "type", "text", "text", summary);
    acp_turn_update(t, u);
    json_decref(u);
    u = json_pack("{ss ss ss}", "sessionUpdate", "compaction_update", "compactionId", cid, "status",
                  "completed");
    acp_turn_update(t, u);
    json_decref(u);
    /* Stored either way; a client that takes no compaction updates is told as agents did
     * before they existed. */
    if (!acp_agent_client_has(acp_session_agent(acp_turn_session(t)), "session.compaction"))
        say(t, "Context compacted (the client takes no compaction updates).");
    es->used /= 4;
    acp_turn_end(t, "end_turn");
}

static void cmd_usage(acp_turn *t, echo_sess *es)
{
    json_t *u = json_pack("{ss sI sI s{sf ss}}", "sessionUpdate", "usage_update", "used",
                          (json_int_t)es->used, "size", (json_int_t)128000, "cost", "amount", 0.0,
                          "currency", "USD");
    acp_turn_update(t, u);
    json_decref(u);
    acp_turn_end(t, "end_turn");
}

/* Changes made from the agent's side: the runtime stores them and tells the client. */
static void cmd_mode(acp_turn *t, const char *args)
{
    acp_session *s = acp_turn_session(t);
    if (acp_session_set_mode(s, args)) say(t, acp_error_last()->message);
    acp_turn_end(t, "end_turn");
}

static void cmd_set(acp_turn *t, const char *args)
{
    acp_session *s = acp_turn_session(t);
    char id[64], value[128];
    int rc;
    if (sscanf(args, "%63s %127s", id, value) != 2) {
        say(t, "usage: /set OPTION VALUE");
        acp_turn_end(t, "end_turn");
        return;
    }
    bool on = false;
    if (!acp_session_config_bool(s, id, &on))
        rc = acp_session_set_config_bool(s, id, !strcmp(value, "true") || !strcmp(value, "on"));
    else
        rc = acp_session_set_config(s, id, value);
    if (rc) say(t, acp_error_last()->message);
    acp_turn_end(t, "end_turn");
}

/* --- /term, /ask, /elicit -------------------------------------------------------------------- */

/* The command's output ends the tool call: the terminal stays embedded (the client keeps
 * showing it after the release), the text is the output we read. */
static void term_output(acp_terminal *term, int status, const char *output, size_t n,
                        bool truncated, const acp_terminal_exit *exit, const char *error,
                        void *user)
{
    echo_sess *es = user;
    if (status) {
        tool_failed(es, error);
        return;
    }
    json_t *raw = json_pack("{sb}", "truncated", truncated);
    if (exit && exit->exited && exit->exit_code >= 0)
        json_object_set_new(raw, "exitCode", json_integer(exit->exit_code));
    if (exit && exit->signal) json_object_set_new(raw, "signal", json_string(exit->signal));
    char *text = strndup(output, n);
    acp_tool_info info = {.struct_size = sizeof(acp_tool_info),
                          .status =
                              exit && exit->exited && exit->exit_code == 0 ? "completed" : "failed",
                          .terminal = term,
                          .text = text ? text : "",
                          .raw_output = raw};
    acp_tool_call_update(es->tc, &info);
    free(text);
    json_decref(raw);
    finish(es, "end_turn"); /* releases the terminal */
}

static void term_exited(acp_terminal *term, int status, const acp_terminal_exit *exit,
                        const char *error, void *user)
{
    echo_sess *es = user;
    if (status || acp_terminal_output(term, term_output, es)) tool_failed(es, error);
}

static void term_created(acp_terminal *term, int status, const char *error, void *user)
{
    echo_sess *es = user;
    if (status) {
        es->term = NULL; /* a failed create frees the handle */
        tool_failed(es, error);
        return;
    }
    acp_tool_call_update(es->tc, &(acp_tool_info){.struct_size = sizeof(acp_tool_info),
                                                  .status = "in_progress",
                                                  .terminal = term});
    if (acp_terminal_wait_for_exit(term, term_exited, es))
        tool_failed(es, acp_error_last()->message);
}

static void term_permitted(acp_turn *t, int status, const char *option, const char *kind,
                           const char *error, void *user)
{
    echo_sess *es = user;
    if (!allowed(es, status, option, error)) return;
    const char *argv[] = {"-c", es->command, NULL};
    acp_terminal_opts o = {.struct_size = sizeof(acp_terminal_opts),
                           .command = "/bin/sh",
                           .args = argv,
                           .cwd = acp_session_cwd(acp_turn_session(t))};
    if (acp_turn_terminal_create(t, &o, term_created, es, &es->term))
        tool_failed(es, acp_error_last()->message);
}

static void cmd_term(acp_turn *t, echo_sess *es, const char *args)
{
    static const acp_perm_option opts[] = {{"allow", "Run it", "allow_once"},
                                           {"reject", "Don't run it", "reject_once"}};
    if (!*args) {
        say(t, "usage: /term COMMAND");
        acp_turn_end(t, "end_turn");
        return;
    }
    char title[600];
    snprintf(title, sizeof title, "Run: %s", args);
    json_t *input = json_pack("{ss}", "command", args);
    bool ok = tool_begin(t, es,
                         &(acp_tool_info){.struct_size = sizeof(acp_tool_info),
                                          .title = title,
                                          .kind = "execute",
                                          .raw_input = input});
    json_decref(input);
    if (!ok) return;
    es->job = JOB_CLIENT;
    if (!acp_agent_client_has(acp_session_agent(acp_turn_session(t)), "terminal")) {
        tool_failed(es, "the client offers no terminal (clientCapabilities.terminal)");
        return;
    }
    es->command = strdup(args);
    if (!es->command || acp_turn_request_permission(t, es->tc, opts, 2, term_permitted, es))
        tool_failed(es, "could not ask for permission");
}

static void asked(acp_turn *t, int status, const char *option, const char *kind, const char *error,
                  void *user)
{
    echo_sess *es = user;
    char line[300];
    if (status) {
        tool_failed(es, error);
        return;
    }
    snprintf(line, sizeof line, "permission: %s%s", option ? "selected " : "cancelled",
             option ? option : "");
    if (option)
        acp_tool_call_complete(
            es->tc, &(acp_tool_info){.struct_size = sizeof(acp_tool_info), .text = line});
    else
        acp_tool_call_fail(es->tc, "permission request cancelled");
    say(t, line);
    finish(es, option ? "end_turn" : "cancelled");
}

static void cmd_ask(acp_turn *t, echo_sess *es)
{
    static const acp_perm_option opts[] = {{"allow_once", "Allow once", "allow_once"},
                                           {"allow_always", "Allow always", "allow_always"},
                                           {"reject_once", "Reject once", "reject_once"},
                                           {"reject_always", "Reject always", "reject_always"}};
    if (!tool_begin(t, es,
                    &(acp_tool_info){.struct_size = sizeof(acp_tool_info),
                                     .title = "Ask for permission",
                                     .kind = "other"}))
        return;
    es->job = JOB_CLIENT;
    if (acp_turn_request_permission(t, es->tc, opts, 4, asked, es))
        tool_failed(es, acp_error_last()->message);
}

static void elicited(acp_session *s, int status, const char *action, const json_t *content,
                     const char *error, void *user)
{
    echo_sess *es = user;
    char line[700];
    char *js = content ? json_dumps(content, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    if (status)
        snprintf(line, sizeof line, "elicitation failed: %s", error ? error : acp_strerror(status));
    else
        snprintf(line, sizeof line, "elicitation: %s%s%s", action, js ? " " : "", js ? js : "");
    free(js);
    say(es->t, line);
    finish(es, "end_turn");
}

static void cmd_elicit(acp_turn *t, echo_sess *es)
{
    acp_agent *a = acp_session_agent(acp_turn_session(t));
    if (!acp_agent_client_has(a, "elicitation.form")) {
        say(t, "The client does not support form elicitation (elicitation.form): nothing asked.");
        acp_turn_end(t, "end_turn");
        return;
    }
    json_t *form = json_pack("{ss s{s{ss ss} s{ss ss}} s[s]}", "type", "object", "properties",
                             "name", "type", "string", "title", "Name", "count", "type", "integer",
                             "title", "Count", "required", "name");
    es->t = t;
    es->job = JOB_CLIENT;
    acp_elicit e = {.struct_size = sizeof(acp_elicit),
                    .message = "Tell the echo agent your name and a count",
                    .form = form};
    int rc = acp_turn_elicit(t, &e, NULL, elicited, es);
    json_decref(form);
    if (rc) {
        say(t, acp_error_last()->message);
        finish(es, "end_turn");
    }
}

/* --- extensions --------------------------------------------------------------------------------
 */

static void pinged(acp_turn *t, int status, const json_t *result, const char *error, void *user)
{
    echo_sess *es = user;
    char *js = result ? json_dumps(result, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    char line[600];
    snprintf(line, sizeof line, "ext: %s%s", js ? js : "error: ", js ? "" : error ? error : "");
    free(js);
    say(t, line);
    finish(es, "end_turn");
}

static void cmd_ext(acp_turn *t, echo_sess *es)
{
    /* Called only on a client that says it has it (clientCapabilities._meta["acp-agent"]). */
    if (!acp_agent_client_has(acp_session_agent(acp_turn_session(t)), "_meta.acp-agent")) {
        say(t, "ext: the client did not advertise _meta.acp-agent: no _acp-agent/ping sent");
        acp_turn_end(t, "end_turn");
        return;
    }
    es->t = t;
    es->job = JOB_CLIENT;
    if (acp_turn_call(t, "_acp-agent/ping", json_pack("{ss}", "from", "acp-agent"), pinged, es)) {
        say(t, acp_error_last()->message);
        finish(es, "end_turn");
    }
}

static void ext_echo(acp_conn *c, acp_req *req, void *user)
{
    acp_req_reply(req, json_incref(acp_req_params(req)));
}

int echo_serve(acp_agent *a)
{
    return acp_agent_on_ext(a, "_acp-agent/echo", ext_echo, NULL, NULL);
}

/* --- engine callbacks ------------------------------------------------------------------------ */

static void session_ready(acp_session *s, void *user)
{
    echo_sess *es = calloc(1, sizeof *es);
    uv_timer_t *timer = malloc(sizeof *timer);
    if (!es || !timer) {
        free(es);
        free(timer);
        return;
    }
    es->s = s;
    es->timer = timer;
    uv_timer_init(acp_agent_loop(acp_session_agent(s)), timer);
    timer->data = es;
    acp_session_set_data(s, es);

    json_t *cmds = json_array();
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++) {
        json_t *c =
            json_pack("{ss ss}", "name", commands[i].name, "description", commands[i].description);
        if (commands[i].hint)
            json_object_set_new(c, "input", json_pack("{ss}", "hint", commands[i].hint));
        json_array_append_new(cmds, c);
    }
    json_t *u = json_pack("{ss so}", "sessionUpdate", "available_commands_update",
                          "availableCommands", cmds);
    acp_session_update(s, u);
    json_decref(u);
}

static void close_free(uv_handle_t *h)
{
    free(h);
}

static void session_gone(acp_session *s, void *user)
{
    echo_sess *es = acp_session_data(s);
    if (!es) return;
    job_clear(es);
    uv_close((uv_handle_t *)es->timer, close_free);
    free(es);
    acp_session_set_data(s, NULL);
}

static void cancel(acp_turn *t, void *user)
{
    echo_sess *es = acp_session_data(acp_turn_session(t));
    if (es && es->t == t) job_clear(es);
    acp_turn_end(t, "cancelled");
}

static void prompt(acp_turn *t, const json_t *blocks, void *user)
{
    echo_sess *es = acp_session_data(acp_turn_session(t));
    acp_buf text = {0};
    size_t i;
    json_t *b;
    json_array_foreach(blocks, i, b)
    {
        json_t *tx = json_object_get(b, "text");
        if (json_is_string(tx))
            acp_buf_append(&text, json_string_value(tx), json_string_length(tx));
    }
    if (!acp_buf_cstr(&text) || !es) {
        acp_buf_free(&text);
        acp_turn_fail(t, ACP_RPC_INTERNAL_ERROR, "out of memory");
        return;
    }
    const char *p = text.data;
    es->used += text.len / 4;
    if (p[0] != '/') {
        echo_text(t, p, text.len);
        acp_buf_free(&text);
        return;
    }
    size_t cl = strcspn(p + 1, " \t\n");
    const char *args = p + 1 + cl;
    while (*args == ' ' || *args == '\t' || *args == '\n') args++;
#define IS(name) (cl == strlen(name) && !strncmp(p + 1, name, cl))
    /* The ask mode's promise: nothing is written and no command runs. */
    if ((IS("write") || IS("term")) && !strcmp(acp_session_mode(acp_turn_session(t)), "ask")) {
        char line[64];
        snprintf(line, sizeof line, "/%.*s is not allowed in ask mode", (int)cl, p + 1);
        say(t, line);
        acp_turn_end(t, "end_turn");
    } else if (IS("stream"))
        cmd_stream(t, es, args);
    else if (IS("sleep"))
        cmd_sleep(t, es, args);
    else if (IS("title"))
        cmd_title(t, args);
    else if (IS("plan"))
        cmd_plan(t);
    else if (IS("system"))
        cmd_system(t);
    else if (IS("read"))
        cmd_read(t, es, args);
    else if (IS("write"))
        cmd_write(t, es, args);
    else if (IS("mcp"))
        cmd_mcp(t);
    else if (IS("call"))
        cmd_call(t, es, args);
    else if (IS("notice"))
        cmd_notice(t, args);
    else if (IS("compact"))
        cmd_compact(t, es);
    else if (IS("usage"))
        cmd_usage(t, es);
    else if (IS("mode"))
        cmd_mode(t, args);
    else if (IS("set"))
        cmd_set(t, args);
    else if (IS("term"))
        cmd_term(t, es, args);
    else if (IS("ask"))
        cmd_ask(t, es);
    else if (IS("elicit"))
        cmd_elicit(t, es);
    else if (IS("ext"))
        cmd_ext(t, es);
    else if (IS("subagent"))
        cmd_subagent(t, args);
    else
        echo_text(t, p, text.len); /* not a command of ours: echo it like any text */
#undef IS
    acp_buf_free(&text);
}

void echo_engine(acp_engine *e, const char *auth_env)
{
    /* Parsed once, kept for the process (the engine borrows it for the agent's lifetime). */
    static json_t *caps_meta;
    if (!caps_meta) caps_meta = json_loads(caps_meta_text, 0, NULL);
    *e = (acp_engine){.struct_size = sizeof(acp_engine),
                      .name = "acp-agent",
                      .title = "libacp echo agent",
                      .version = ACP_VERSION_STRING,
                      /* image and audio stay off, so clients can see -32602 for them */
                      .embedded_context = true,
                      .modes = modes,
                      .nmodes = 2,
                      .default_mode = "code",
                      .config_options = options,
                      .nconfig_options = 3,
                      .session_ready = session_ready,
                      .prompt = prompt,
                      .cancel = cancel,
                      .session_free = session_gone,
                      .caps_meta = caps_meta,
                      .auth_status = auth_status};
    if (auth_env) {
        e->auth_methods = auth_methods;
        e->nauth_methods = 1;
        e->auth_required = true;
        e->authenticate = authenticate;
        e->logout = logout;
        e->user = (void *)auth_env;
    }
}
