/* SPDX-License-Identifier: Apache-2.0 */
/* The model's tool calls of one round. All of them are reported (tool_call) before the first
 * runs, so the stored history holds them as the one assistant message the model sent; then
 * they run one after another, each ending completed or failed with the text the model gets
 * back (history.h derives it from the stored content, so a load sees the same). A call the
 * model got wrong (a tool we did not offer, arguments that are not a JSON object) fails with a
 * sentence saying so, and the model can try again in the next round. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engines/openai/internal.h"

#define OUTPUT_LIMIT (256u * 1024) /* terminal output kept for the model */

static void next(oa_sess *os);

static json_t *text_item(const char *text, size_t n)
{
    json_t *t = json_stringn(text, n);
    if (!t) t = json_string("(output that is not UTF-8)");
    return json_pack("{ss s{ss so}}", "type", "content", "content", "type", "text", "text", t);
}

/* Ends the current call with content (stolen; text items are what the model reads) and goes
 * on with the next. A terminal is embedded in the content, then released. */
static void done(oa_sess *os, bool failed, json_t *content, const json_t *raw_output,
                 acp_terminal *term)
{
    oa_tool *x = &os->calls[os->next];
    acp_tool_info info = {.struct_size = sizeof(acp_tool_info),
                          .status = failed ? "failed" : "completed",
                          .content = content,
                          .raw_output = raw_output,
                          .terminal = term};
    int rc = acp_tool_call_update(x->tc, &info);
    if (term) { /* the client keeps showing its output after the release */
        acp_terminal_release(term);
        os->term = NULL;
    }
    char *text = json_dumps(content, JSON_COMPACT);
    if (!rc && text)
        openai_history_result(&os->h, acp_tool_call_id(x->tc), failed,
                              (acp_span){text, strlen(text)});
    free(text);
    json_decref(content);
    if (rc) { /* the turn's response is decided (the store failed): nothing more to do */
        oa_turn_end(os, "end_turn");
        return;
    }
    os->next++;
    next(os);
}

static void fail(oa_sess *os, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(oa_sess *os, const char *fmt, ...)
{
    char *msg = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&msg, fmt, ap);
    va_end(ap);
    json_t *content = json_array();
    json_array_append_new(content, text_item(n < 0 ? "failed" : msg, n < 0 ? 6 : (size_t)n));
    free(msg);
    done(os, true, content, NULL, NULL);
}

/* --- read_text_file, write_text_file ------------------------------------------------------- */

static void read_done(acp_session *s, int status, const char *text, size_t n, const char *error,
                      void *user)
{
    oa_sess *os = user;
    if (status) {
        fail(os, "Could not read the file: %s", error ? error : acp_strerror(status));
        return;
    }
    json_t *content = json_array();
    json_array_append_new(content, text_item(text, n));
    done(os, false, content, NULL, NULL);
}

static void write_done(acp_session *s, int status, const char *error, void *user)
{
    oa_sess *os = user;
    oa_tool *x = &os->calls[os->next];
    if (status) {
        fail(os, "Could not write the file: %s", error ? error : acp_strerror(status));
        return;
    }
    const char *text = json_string_value(json_object_get(x->args, "content"));
    char line[64];
    snprintf(line, sizeof line, "Wrote %zu bytes.", strlen(text));
    json_t *content = json_array();
    json_array_append_new(
        content, json_pack("{ss ss ss}", "type", "diff", "path", x->path, "newText", text));
    json_array_append_new(content, text_item(line, strlen(line)));
    done(os, false, content, NULL, NULL);
}

/* --- delegate_task (unstable) -------------------------------------------------------------- */

static const char subagent_system[] =
    "You are a subagent of a coding assistant. Do the task you are given as well as you can "
    "without tools, and answer with the result only.";

/* The child's state: idle, with why its work stopped (an error's message when it failed). */
static void subagent_idle(acp_session *child, const char *why, const char *error)
{
    json_t *patch =
        error ? json_pack("{s{ss ss s{si ss}}}", "state", "state", "idle", "stopReason", "error",
                          "error", "code", ACP_RPC_INTERNAL_ERROR, "message", error)
              : json_pack("{s{ss ss}}", "state", "state", "idle", "stopReason", why);
    acp_session_subagent_update(child, patch);
    json_decref(patch);
}

static void subagent_start(oa_sess *os, oa_tool *x)
{
    const char *task = json_string_value(json_object_get(x->args, "task"));
    const char *title = json_string_value(json_object_get(x->args, "title"));
    json_t *patch = json_pack("{ss ss s{ss}}", "title", title && *title ? title : "subagent",
                              "description", task, "state", "state", "running");
    acp_session *child = NULL;
    int rc = acp_session_subagent_new(os->s, patch, &child);
    json_decref(patch);
    if (rc) {
        fail(os, "Could not start a subagent: %s", acp_error_last()->message);
        return;
    }
    json_t *u = json_pack("{ss s{ss ss}}", "sessionUpdate", "user_message_chunk", "content", "type",
                          "text", "text", task);
    acp_session_update(child, u);
    json_decref(u);
    acp_agent_new_id("msg_", os->child_mid);
    acp_buf body = {0};
    /* Its own system message, not the session's (nor its compaction summary). */
    rc = oa_body_begin(os, &body, NULL, false) < 0 ||
         acp_buf_append(&body, "{\"role\":\"system\",\"content\":", 27) ||
         acp_json_escape(&body, subagent_system, strlen(subagent_system)) ||
         acp_buf_append(&body, "},{\"role\":\"user\",\"content\":", 27) ||
         acp_json_escape(&body, task, strlen(task)) || acp_buf_putc(&body, '}') ||
         oa_body_end(os, &body, false, NULL);
    acp_buf_free(&os->sub.text);
    os->child = child;
    if (rc || oa_request(os, &os->sub, OA_SUBAGENT, &body)) {
        acp_buf_free(&body);
        os->child = NULL;
        subagent_idle(child, NULL, "the model could not be asked");
        fail(os, "Could not ask the model for the subagent's answer.");
    }
}

int oa_subagent_text(oa_sess *os, oa_call *c, bool reasoning, const char *text, size_t n)
{
    if (reasoning || !os->child) return 0;
    acp_buf u = {0};
    acp_jw w;
    acp_jw_init(&w, &u);
    acp_jw_obj(&w);
    acp_jw_kstr(&w, "sessionUpdate", "agent_message_chunk");
    acp_jw_kstr(&w, "messageId", os->child_mid);
    acp_jw_key(&w, "content");
    acp_jw_obj(&w);
    acp_jw_kstr(&w, "type", "text");
    acp_jw_key(&w, "text");
    acp_jw_strn(&w, text, n);
    acp_jw_obj_end(&w);
    acp_jw_obj_end(&w);
    int rc = acp_jw_status(&w);
    if (!rc) rc = acp_session_update_raw(os->child, u.data, u.len, true);
    acp_buf_free(&u);
    return rc ? rc : acp_buf_append(&c->text, text, n);
}

void oa_subagent_answered(oa_sess *os, oa_call *c, int result, long status)
{
    acp_session *child = os->child;
    os->child = NULL;
    if (!child || !os->t) return;
    bool ok = !result && status / 100 == 2 && !c->st.error;
    char why[256];
    snprintf(why, sizeof why, "%s", c->st.error ? c->st.error : "the model server failed");
    subagent_idle(child, "end_turn", ok ? NULL : why);
    if (!ok) {
        fail(os, "The subagent failed: %s.", why);
        return;
    }
    json_t *content = json_array();
    json_array_append_new(content, text_item(c->text.data ? c->text.data : "", c->text.len));
    acp_buf_free(&c->text);
    done(os, false, content, NULL, NULL);
}

/* --- run_command ----------------------------------------------------------------------------- */

static void term_output(acp_terminal *term, int status, const char *output, size_t n,
                        bool truncated, const acp_terminal_exit *ex, const char *error, void *user)
{
    oa_sess *os = user;
    if (status) {
        fail(os, "Could not read the command's output: %s", error ? error : acp_strerror(status));
        return;
    }
    acp_buf b = {0};
    if (ex && ex->signal)
        acp_buf_printf(&b, "Killed by %s.", ex->signal);
    else if (ex && ex->exited)
        acp_buf_printf(&b, "Exit status %ld.", ex->exit_code);
    if (truncated) acp_buf_printf(&b, " (Output truncated to its end.)");
    acp_buf_printf(&b, "\n");
    acp_buf_append(&b, output, n);
    json_t *content = json_array();
    json_array_append_new(content, text_item(b.data ? b.data : "", b.len));
    acp_buf_free(&b);
    json_t *raw = json_pack("{sb}", "truncated", truncated);
    if (ex && ex->exited && ex->exit_code >= 0)
        json_object_set_new(raw, "exitCode", json_integer(ex->exit_code));
    done(os, false, content, raw, term);
    json_decref(raw);
}

static void term_exited(acp_terminal *term, int status, const acp_terminal_exit *ex,
                        const char *error, void *user)
{
    oa_sess *os = user;
    if (status) {
        fail(os, "The command failed: %s", error ? error : acp_strerror(status));
    } else if (acp_terminal_output(term, term_output, os)) {
        fail(os, "Could not read the command's output.");
    }
}

static void term_created(acp_terminal *term, int status, const char *error, void *user)
{
    oa_sess *os = user;
    if (status) {
        os->term = NULL; /* a failed create frees the handle */
        fail(os, "Could not start the command: %s", error ? error : acp_strerror(status));
        return;
    }
    oa_tool *x = &os->calls[os->next];
    acp_tool_call_update(x->tc, &(acp_tool_info){.struct_size = sizeof(acp_tool_info),
                                                 .status = "in_progress",
                                                 .terminal = term});
    if (acp_terminal_wait_for_exit(term, term_exited, os))
        fail(os, "Could not wait for the command.");
}

/* --- permissions ------------------------------------------------------------------------------ */

/* A write or a command the user allowed: do it. */
static void allowed(oa_sess *os)
{
    oa_tool *x = &os->calls[os->next];
    acp_tool_call_update(
        x->tc, &(acp_tool_info){.struct_size = sizeof(acp_tool_info), .status = "in_progress"});
    if (x->def->kind == OPENAI_TOOL_WRITE) {
        const char *text = json_string_value(json_object_get(x->args, "content"));
        if (acp_turn_write_text_file(os->t, x->path, text, strlen(text), write_done, os))
            fail(os, "Could not write the file: %s", acp_error_last()->message);
        return;
    }
    const char *argv[] = {"-c", json_string_value(json_object_get(x->args, "command")), NULL};
    acp_terminal_opts o = {.struct_size = sizeof(acp_terminal_opts),
                           .command = "/bin/sh",
                           .args = argv,
                           .cwd = acp_session_cwd(os->s),
                           .output_byte_limit = OUTPUT_LIMIT};
    if (acp_turn_terminal_create(os->t, &o, term_created, os, &os->term))
        fail(os, "Could not start the command: %s", acp_error_last()->message);
}

static void permitted(acp_turn *t, int status, const char *option, const char *kind,
                      const char *error, void *user)
{
    oa_sess *os = user;
    oa_tool *x = &os->calls[os->next];
    if (status) {
        fail(os, "The permission request failed: %s", error ? error : acp_strerror(status));
        return;
    }
    if (!kind || strncmp(kind, "allow_", 6)) {
        fail(os, "Permission denied: the user rejected this.");
        return;
    }
    /* "Always" holds for the rest of the session, for that kind of tool (writes, or
     * commands); a restart asks again. */
    if (!strcmp(kind, "allow_always")) os->always[x->def->kind] = true;
    allowed(os);
}

/* --- MCP ----------------------------------------------------------------------------------------
 */

static void mcp_done(acp_mcp_call *c, int status, const json_t *result, const char *error,
                     void *user)
{
    oa_sess *os = user;
    if (os->mcp != c) return; /* cancelled with the turn */
    os->mcp = NULL;
    if (status) {
        fail(os, "The MCP tool failed: %s", error ? error : acp_strerror(status));
        return;
    }
    /* Text items as the model reads them; other content (images, resources) as their JSON. */
    json_t *content = json_array(), *v;
    size_t i;
    json_array_foreach(json_object_get(result, "content"), i, v)
    {
        const char *type = json_string_value(json_object_get(v, "type"));
        json_t *text = json_object_get(v, "text");
        if (type && !strcmp(type, "text") && json_is_string(text)) {
            json_array_append_new(content,
                                  text_item(json_string_value(text), json_string_length(text)));
        } else {
            char *s = json_dumps(v, JSON_COMPACT);
            if (s) json_array_append_new(content, text_item(s, strlen(s)));
            free(s);
        }
    }
    done(os, json_is_true(json_object_get(result, "isError")), content, result, NULL);
}

/* --- the round ----------------------------------------------------------------------------------
 */

static const acp_perm_option allow_opts[] = {{"allow", "Allow", "allow_once"},
                                             {"always", "Always allow", "allow_always"},
                                             {"reject", "Reject", "reject_once"}};

static void next(oa_sess *os)
{
    if (!os->t) return;
    if (os->next == os->ncalls) {
        oa_exec_clear(os);
        oa_turn_next_round(os);
        return;
    }
    oa_tool *x = &os->calls[os->next];
    if (!x->def) {
        fail(os, "Unknown tool '%s': no such tool is offered; use one of the tools listed.", x->fn);
        return;
    }
    if (x->bad_args) {
        fail(os, "%s", x->bad_args);
        return;
    }
    switch (x->def->kind) {
    case OPENAI_TOOL_READ: {
        json_t *line = json_object_get(x->args, "line"), *limit = json_object_get(x->args, "limit");
        json_int_t l = json_is_integer(line) ? json_integer_value(line) : 0;
        json_int_t k = json_is_integer(limit) ? json_integer_value(limit) : 0;
        int rc = acp_turn_read_text_file(os->t, x->path, l > 0 && l < 1u << 31 ? (unsigned)l : 0,
                                         k > 0 && k < 1u << 31 ? (unsigned)k : 0, read_done, os);
        if (rc) fail(os, "Could not read the file: %s", acp_error_last()->message);
        return;
    }
    case OPENAI_TOOL_WRITE:
    case OPENAI_TOOL_RUN:
        if (os->always[x->def->kind])
            allowed(os);
        else if (acp_turn_request_permission(os->t, x->tc, allow_opts, 3, permitted, os))
            fail(os, "Could not ask for permission: %s", acp_error_last()->message);
        return;
    case OPENAI_TOOL_SUBAGENT:
        subagent_start(os, x);
        return;
    case OPENAI_TOOL_MCP: {
        json_t *args = x->args;
        x->args = NULL; /* stolen by the call */
        acp_mcp_call_cbs cbs = {.struct_size = sizeof(acp_mcp_call_cbs), .on_done = mcp_done};
        acp_mcp_call *c = NULL;
        int rc = acp_mcp_call_tool(acp_session_mcp(os->s), x->def->server, x->def->tool, args, &cbs,
                                   os, &c);
        if (rc)
            fail(os, "The MCP server '%s' is %s.", x->def->server,
                 rc == ACP_ECLOSED ? "not ready" : "not available");
        else
            os->mcp = c;
        return;
    }
    }
}

/* Title, kind and location of call x; its checks (a path or command given). */
static void describe(oa_sess *os, oa_tool *x, acp_tool_info *info, char *title, size_t cap)
{
    info->kind = "other";
    if (!x->def) {
        snprintf(title, cap, "Unknown tool %s", x->fn);
        return;
    }
    const char *path = json_string_value(json_object_get(x->args, "path"));
    const char *cmd = json_string_value(json_object_get(x->args, "command"));
    switch (x->def->kind) {
    case OPENAI_TOOL_READ:
    case OPENAI_TOOL_WRITE:
        info->kind = x->def->kind == OPENAI_TOOL_READ ? "read" : "edit";
        if (!x->bad_args && (!path || !*path))
            x->bad_args = strdup("The argument 'path' (a string) is required.");
        else if (!x->bad_args && x->def->kind == OPENAI_TOOL_WRITE &&
                 !json_is_string(json_object_get(x->args, "content")))
            x->bad_args = strdup("The argument 'content' (a string) is required.");
        if (path && *path) {
            if (path[0] == '/' ? !(x->path = strdup(path))
                               : asprintf(&x->path, "%s/%s", acp_session_cwd(os->s), path) < 0)
                x->path = NULL;
            info->path = x->path;
        }
        snprintf(title, cap, "%s %s", x->def->kind == OPENAI_TOOL_READ ? "Read" : "Write",
                 path ? path : "");
        return;
    case OPENAI_TOOL_RUN:
        info->kind = "execute";
        if (!x->bad_args && (!cmd || !*cmd))
            x->bad_args = strdup("The argument 'command' (a string) is required.");
        snprintf(title, cap, "Run %.200s", cmd ? cmd : "");
        return;
    case OPENAI_TOOL_SUBAGENT: {
        const char *task = json_string_value(json_object_get(x->args, "task"));
        const char *name = json_string_value(json_object_get(x->args, "title"));
        if (!x->bad_args && (!task || !*task))
            x->bad_args = strdup("The argument 'task' (a string) is required.");
        snprintf(title, cap, "Subagent: %.200s", name && *name ? name : task ? task : "");
        return;
    }
    case OPENAI_TOOL_MCP:
        snprintf(title, cap, "%s: %s", x->def->server, x->def->tool);
        return;
    }
}

void oa_exec_begin(oa_sess *os)
{
    openai_stream *st = &os->chat.st;
    /* A model gone wrong may stream any number of calls: the first OA_CALLS_MAX run, the rest
     * are dropped (from the context too, which stays a message the model could have sent). */
    size_t n = st->ncalls < OA_CALLS_MAX ? st->ncalls : OA_CALLS_MAX;
    if (!(os->calls = calloc(n, sizeof *os->calls))) {
        oa_turn_say(os, "Out of memory.");
        oa_turn_end(os, "end_turn");
        return;
    }
    os->ncalls = n;
    os->next = 0;
    for (size_t i = 0; i < n; i++) {
        oa_tool *x = &os->calls[i];
        const openai_call *c = &st->calls[i];
        x->fn = strdup(c->name ? c->name : "");
        x->def = c->name ? openai_tools_find(&os->tools, c->name) : NULL;
        json_error_t err;
        const char *args = c->args.len ? c->args.data : "{}";
        size_t alen = c->args.len ? c->args.len : 2;
        x->args = json_loadb(args, alen, JSON_REJECT_DUPLICATES, &err);
        json_t *raw = x->args;
        if (!json_is_object(x->args)) {
            json_decref(x->args);
            x->args = NULL;
            if (asprintf(&x->bad_args,
                         "The arguments are not a JSON object (%s). Call the tool again with "
                         "valid JSON arguments.",
                         raw ? "another JSON value" : err.text) < 0)
                x->bad_args = NULL;
            raw = json_stringn(args, alen); /* shown as sent (NULL when not UTF-8) */
        } else {
            json_incref(raw);
        }
        /* The model's own id goes back to it with the result (stored, for a load too). */
        json_t *meta = c->id ? json_pack("{s{ss}}", "openai", "toolCallId", c->id) : NULL;
        char title[512];
        acp_tool_info info = {.struct_size = sizeof(acp_tool_info),
                              .title = title,
                              .name = x->fn,
                              .raw_input = raw,
                              .meta = meta};
        describe(os, x, &info, title, sizeof title);
        int rc = acp_tool_call_begin(os->t, &info, &x->tc);
        json_decref(meta);
        char *text = raw ? json_dumps(raw, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
        json_decref(raw);
        if (rc) {
            free(text);
            oa_turn_say(os, "Could not report a tool call: %s", acp_error_last()->message);
            oa_turn_end(os, "end_turn");
            return;
        }
        acp_span in = text ? (acp_span){text, strlen(text)} : (acp_span){"{}", 2};
        openai_history_call(&os->h, acp_tool_call_id(x->tc), c->id, x->fn, in);
        free(text);
    }
    next(os);
}

void oa_exec_clear(oa_sess *os)
{
    /* Calls the turn ends before they finished are stored failed by the runtime, without
     * content: the context says the same now as a load will. */
    for (size_t i = os->next; i < os->ncalls; i++)
        if (os->calls[i].tc)
            openai_history_result(&os->h, acp_tool_call_id(os->calls[i].tc), true,
                                  (acp_span){"[]", 2});
    if (os->mcp) {
        acp_mcp_call *c = os->mcp;
        os->mcp = NULL; /* its on_done, run from inside the cancel, sees it is not wanted */
        acp_mcp_call_cancel(c);
    }
    if (os->term) acp_terminal_release(os->term);
    os->term = NULL;
    if (os->child) { /* a delegated task cut short (cancel): the child stops too */
        oa_call_stop(&os->sub);
        subagent_idle(os->child, "cancelled", NULL);
        os->child = NULL;
    }
    acp_buf_free(&os->sub.text);
    for (size_t i = 0; i < os->ncalls; i++) {
        free(os->calls[i].fn);
        json_decref(os->calls[i].args);
        free(os->calls[i].bad_args);
        free(os->calls[i].path);
    }
    free(os->calls);
    os->calls = NULL;
    os->ncalls = os->next = 0;
}
