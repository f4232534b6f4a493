/* SPDX-License-Identifier: Apache-2.0 */
/* Tool calls of a turn: tool_call, then tool_call_update patches, written with the streaming
 * writer and stored in history like every update; and the permission requests about them. */
#include <stdlib.h>
#include <string.h>

#include "agent/internal.h"

static const char *const kinds[] = {"read",  "edit",  "delete",      "move",  "search", "execute",
                                    "think", "fetch", "switch_mode", "other", NULL};
static const char *const statuses[] = {"pending", "in_progress", "completed", "failed", NULL};
static const char *const perm_kinds[] = {"allow_once", "allow_always", "reject_once",
                                         "reject_always", NULL};

static bool one_of(const char *s, const char *const *set)
{
    for (; *set; set++)
        if (!strcmp(s, *set)) return true;
    return false;
}

static bool absolute(const json_t *path)
{
    return json_is_string(path) && json_string_value(path)[0] == '/';
}

static bool finished(const char *status)
{
    return status && (!strcmp(status, "completed") || !strcmp(status, "failed"));
}

/* 0, or ACP_EINVAL saying what in `in` the schema would not take. */
static int check(acp_agent *a, const acp_tool_info *in)
{
    if (in->kind && !one_of(in->kind, kinds))
        return acp_error_set(ACP_EINVAL, "unknown tool kind: %s", in->kind);
    if (in->status && !one_of(in->status, statuses))
        return acp_error_set(ACP_EINVAL, "unknown tool call status: %s", in->status);
    if (in->content && !json_is_array(in->content))
        return acp_error_set(ACP_EINVAL, "a tool call's content must be an array");
    size_t i;
    json_t *c;
    json_array_foreach(in->content, i, c)
    {
        const char *type = json_string_value(json_object_get(c, "type"));
        json_t *block = json_object_get(c, "content");
        bool ok = type &&
                  ((!strcmp(type, "content") && json_is_string(json_object_get(block, "type"))) ||
                   (!strcmp(type, "diff") && absolute(json_object_get(c, "path")) &&
                    json_is_string(json_object_get(c, "newText"))) ||
                   (!strcmp(type, "terminal") && json_is_string(json_object_get(c, "terminalId"))));
        if (!ok)
            return acp_error_set(ACP_EINVAL,
                                 "content[%zu] is not a content block, a diff of an absolute path "
                                 "or a terminal",
                                 i);
    }
    if (in->locations && !json_is_array(in->locations))
        return acp_error_set(ACP_EINVAL, "a tool call's locations must be an array");
    json_array_foreach(in->locations, i, c)
    {
        if (!absolute(json_object_get(c, "path")))
            return acp_error_set(ACP_EINVAL, "locations[%zu] needs an absolute path", i);
    }
    if (in->path && in->path[0] != '/')
        return acp_error_set(ACP_EINVAL, "a tool call's location must be absolute: %s", in->path);
    if (in->terminal && !in->terminal->id)
        return acp_error_set(ACP_EINVAL, "the terminal has no id yet (terminal/create is not "
                                         "answered)");
    if (in->meta && !json_is_object(in->meta))
        return acp_error_set(ACP_EINVAL, "a tool call's _meta must be an object");
    return 0;
}

/* Sends (and stores) one tool_call or tool_call_update of tc with what `in` sets. */
static int emit(tool *tc, const char *kind, const acp_tool_info *in)
{
    acp_session *s = tc->t->s;
    acp_buf *b = &s->a->scratch;
    b->len = 0;
    acp_jw w;
    acp_jw_init(&w, b);
    acp_jw_obj(&w);
    acp_jw_kstr(&w, "sessionUpdate", kind);
    acp_jw_kstr(&w, "toolCallId", tc->id);
    if (in->title) acp_jw_kstr(&w, "title", in->title);
    if (in->name) acp_jw_kstr(&w, "name", in->name);
    if (in->kind) acp_jw_kstr(&w, "kind", in->kind);
    if (in->status) acp_jw_kstr(&w, "status", in->status);
    size_t i;
    json_t *v;
    if (in->content || in->text || in->terminal) {
        acp_jw_key(&w, "content");
        acp_jw_arr(&w);
        json_array_foreach(in->content, i, v) acp_jw_json(&w, v);
        if (in->text) {
            acp_jw_obj(&w);
            acp_jw_kstr(&w, "type", "content");
            acp_jw_key(&w, "content");
            acp_jw_obj(&w);
            acp_jw_kstr(&w, "type", "text");
            acp_jw_kstr(&w, "text", in->text);
            acp_jw_obj_end(&w);
            acp_jw_obj_end(&w);
        }
        if (in->terminal) {
            acp_jw_obj(&w);
            acp_jw_kstr(&w, "type", "terminal");
            acp_jw_kstr(&w, "terminalId", in->terminal->id);
            acp_jw_obj_end(&w);
        }
        acp_jw_arr_end(&w);
    }
    if (in->locations || in->path) {
        acp_jw_key(&w, "locations");
        acp_jw_arr(&w);
        json_array_foreach(in->locations, i, v) acp_jw_json(&w, v);
        if (in->path) {
            acp_jw_obj(&w);
            acp_jw_kstr(&w, "path", in->path);
            acp_jw_obj_end(&w);
        }
        acp_jw_arr_end(&w);
    }
    const struct {
        const char *key;
        const json_t *v;
    } raw[] = {{"rawInput", in->raw_input}, {"rawOutput", in->raw_output}, {"_meta", in->meta}};
    for (i = 0; i < sizeof raw / sizeof *raw; i++) {
        if (!raw[i].v) continue;
        acp_jw_key(&w, raw[i].key);
        acp_jw_json(&w, raw[i].v);
    }
    acp_jw_obj_end(&w);
    int rc = acp_jw_status(&w);
    if (!rc) rc = session_emit(s, b->data, b->len, true);
    b->len = 0;
    if (b->cap > 1024 * 1024) acp_buf_free(b);
    if (rc == ACP_EINVAL) return acp_error_set(rc, "a tool call's text is not valid UTF-8");
    return rc;
}

/* Keeps what a permission request about tc will say. */
static int remember(tool *tc, const acp_tool_info *in)
{
    char *title = in->title ? strdup(in->title) : NULL;
    char *kind = in->kind ? strdup(in->kind) : NULL;
    if ((in->title && !title) || (in->kind && !kind)) {
        free(title);
        free(kind);
        return acp_error_code(ACP_ENOMEM);
    }
    if (title) {
        free(tc->title);
        tc->title = title;
    }
    if (kind) {
        free(tc->kind);
        tc->kind = kind;
    }
    return 0;
}

/* The application's info into the runtime's copy (NULL: all unset). */
static int read_info(acp_tool_info *in, const acp_tool_info *info)
{
    return acp_struct_read(in, sizeof *in, ACP_TOOL_INFO_SIZE_1_0, info, "acp_tool_info");
}

int acp_tool_call_begin(acp_turn *t, const acp_tool_info *info, acp_tool_call **out)
{
    acp_agent *a = t->s->a;
    if (out) *out = NULL;
    acp_tool_info in;
    int rc = read_info(&in, info);
    if (rc) return rc;
    if (t->decided) return acp_error_set(ACP_ECLOSED, "the turn's response is decided already");
    if (!in.title) return acp_error_set(ACP_EINVAL, "a tool call needs a title");
    if ((rc = check(a, &in))) return rc;
    tool *tc = calloc(1, sizeof *tc);
    if (!tc || remember(tc, &in)) {
        free(tc);
        return acp_error_set(ACP_ENOMEM, "out of memory beginning a tool call");
    }
    tc->t = t;
    if (!in.status) in.status = "pending";
    rc = acp_agent_new_id("call_", tc->id);
    if (!rc) rc = emit(tc, "tool_call", &in);
    if (rc) {
        free(tc->title);
        free(tc->kind);
        free(tc);
        return rc;
    }
    tc->done = finished(in.status);
    tc->next = t->tools;
    t->tools = tc;
    if (out) *out = tc;
    return 0;
}

/* in: the runtime's copy. */
static int update(acp_tool_call *tc, const acp_tool_info *in)
{
    acp_agent *a = tc->t->s->a;
    if (tc->t->decided) return acp_error_set(ACP_ECLOSED, "the turn's response is decided already");
    if (tc->done)
        return acp_error_set(ACP_EINVAL, "tool call %s has completed or failed already", tc->id);
    int rc = check(a, in);
    if (!rc) rc = remember(tc, in);
    if (!rc) rc = emit(tc, "tool_call_update", in);
    if (!rc) tc->done = finished(in->status);
    return rc;
}

int acp_tool_call_update(acp_tool_call *tc, const acp_tool_info *info)
{
    acp_tool_info in;
    int rc = read_info(&in, info);
    return rc ? rc : update(tc, &in);
}

int acp_tool_call_complete(acp_tool_call *tc, const acp_tool_info *info)
{
    acp_tool_info in;
    int rc = read_info(&in, info);
    if (rc) return rc;
    in.status = "completed";
    return update(tc, &in);
}

int acp_tool_call_fail(acp_tool_call *tc, const char *message)
{
    return update(tc, &(acp_tool_info){.status = "failed", .text = message});
}

const char *acp_tool_call_id(const acp_tool_call *tc)
{
    return tc->id;
}

void tools_turn_ended(acp_turn *t)
{
    /* A stored call that never finishes would spin in every client that loads the session. */
    for (tool *tc = t->tools; tc; tc = tc->next) {
        if (tc->done) continue;
        tc->done = true;
        emit(tc, "tool_call_update", &(acp_tool_info){.status = "failed"});
    }
}

void tools_free(acp_turn *t)
{
    while (t->tools) {
        tool *tc = t->tools;
        t->tools = tc->next;
        free(tc->title);
        free(tc->kind);
        free(tc);
    }
}

/* --- session/request_permission --------------------------------------------------------------- */

static void perm_answer(pcall *p, int status, const json_t *result, const char *error)
{
    const char *id = NULL, *kind = NULL;
    if (!status) {
        json_t *o = json_object_get(result, "outcome");
        const char *outcome = json_string_value(json_object_get(o, "outcome"));
        const char *chosen = json_string_value(json_object_get(o, "optionId"));
        size_t i;
        json_t *opt;
        json_array_foreach(p->data, i, opt)
        {
            if (outcome && !strcmp(outcome, "selected") && chosen &&
                !strcmp(json_string_value(json_object_get(opt, "optionId")), chosen)) {
                id = json_string_value(json_object_get(opt, "optionId"));
                kind = json_string_value(json_object_get(opt, "kind"));
            }
        }
        if (!id && !(outcome && !strcmp(outcome, "cancelled"))) {
            status = ACP_EPROTO;
            error = "the client's session/request_permission answer is neither cancelled nor one "
                    "of the options offered";
        }
    }
    if (p->cb.perm) p->cb.perm(p->t, status, id, kind, error, p->user);
}

int acp_turn_request_permission(acp_turn *t, const acp_tool_call *tc, const acp_perm_option *opts,
                                size_t n, acp_perm_cb cb, void *user)
{
    if (!tc || tc->t != t)
        return acp_error_set(ACP_EINVAL, "a permission request is about a tool call of its turn");
    if (!n) return acp_error_set(ACP_EINVAL, "a permission request needs options");
    json_t *options = json_array();
    for (size_t i = 0; options && i < n; i++) {
        const acp_perm_option *o = &opts[i];
        if (!o->id || !o->name || !o->kind || !one_of(o->kind, perm_kinds)) {
            json_decref(options);
            return acp_error_set(ACP_EINVAL,
                                 "option %zu needs an id, a name and a kind (allow_once, "
                                 "allow_always, reject_once, reject_always)",
                                 i);
        }
        if (json_array_append_new(options, json_pack("{ss ss ss}", "optionId", o->id, "name",
                                                     o->name, "kind", o->kind))) {
            json_decref(options);
            return acp_error_set(ACP_EINVAL, "option %zu is not valid UTF-8", i);
        }
    }
    json_t *call = json_pack("{ss ss}", "toolCallId", tc->id, "title", tc->title);
    if (call && tc->kind) json_object_set_new(call, "kind", json_string(tc->kind));
    json_t *params =
        options && call ? json_pack("{sO sO}", "toolCall", call, "options", options) : NULL;
    json_decref(call);
    if (!params) {
        json_decref(options);
        return acp_error_code(ACP_ENOMEM);
    }
    return pcall_start(&(pcall){.t = t,
                                .answer = perm_answer,
                                .cb.perm = cb,
                                .user = user,
                                .data = options,
                                .cancelled = "{\"outcome\":{\"outcome\":\"cancelled\"}}"},
                       "session/request_permission", params);
}
