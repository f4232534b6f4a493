/* SPDX-License-Identifier: Apache-2.0 */
/* Typed views of session/update: the schema (SessionUpdate and what it references), read over
 * one jansson tree.
 *
 * The tree is read twice at most. The first pass checks everything and sizes the arrays; only
 * when there is an array does a second pass fill them into the one block the first sized. Both
 * passes make the same decisions, so only the first can fail, and the common updates (message
 * chunks) are read once. */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp/update.h"
#include "rpc/lasterr.h"

typedef acp_json_path at; /* a chain up to "update", rendered only on failure */

typedef struct ctx {
    bool lenient;
    bool nomem;
    char *block;     /* the array block; NULL in the sizing pass */
    size_t used;     /* bytes of the block taken (sizing pass: needed) */
    size_t salvaged; /* lenient: members and items read as absent or dropped */
    char err[512];
} ctx;

/* Every array item type, for a temporary of any of them. */
typedef union item {
    acp_content_view content;
    acp_tool_content_view tool_content;
    acp_tool_location_view location;
    acp_plan_entry_view entry;
    acp_command_view command;
    acp_config_option_view option;
    acp_config_value_view value;
} item;

typedef int (*read_fn)(ctx *c, json_t *j, const at *p, void *out);

/* Enum spellings: index i is enum value i; [0] is the unset value; NULL ends the list. */
static const char *const content_types[] = {"",         "text", "image", "audio", "resource_link",
                                            "resource", NULL};
static const char *const tool_kinds[] = {"",      "read",        "edit",    "delete",
                                         "move",  "search",      "execute", "think",
                                         "fetch", "switch_mode", "other",   NULL};
static const char *const tool_statuses[] = {"",          "pending", "in_progress",
                                            "completed", "failed",  NULL};
static const char *const tool_content_types[] = {"", "content", "diff", "terminal", NULL};
static const char *const plan_priorities[] = {"", "high", "medium", "low", NULL};
static const char *const plan_statuses[] = {"", "pending", "in_progress", "completed", NULL};
static const char *const roles[] = {"", "assistant", "user", NULL};
static const char *const config_types[] = {"", "select", "boolean", NULL};
/* Open enums: a value not listed is kept as text with the _OTHER value (the last + 1). */
static const char *const config_categories[] = {
    "", "mode", "model", "model_config", "thought_level", NULL};
static const char *const notice_severities[] = {"", "info", "warning", "error", NULL};
static const char *const compaction_statuses[] = {"",       "in_progress", "completed",
                                                  "failed", "cancelled",   NULL};

/* Records "<path> <what>" and returns -1. */
__attribute__((format(printf, 3, 4))) static int fail(ctx *c, const at *p, const char *fmt, ...)
{
    size_t n = acp_json_path_render(p, c->err, sizeof c->err);
    if (n + 1 < sizeof c->err) {
        c->err[n++] = ' ';
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err + n, sizeof c->err - n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* After a failure where the schema lets a reader go on (x-deserialize-default-on-error on a
 * member, x-deserialize-skip-invalid-items on an array): lenient reading does, strict fails. */
static bool salvage(ctx *c)
{
    if (!c->lenient) return false;
    c->salvaged++;
    return true;
}

/* n items of size bytes from the block, aligned for any of them. NULL for none and in the
 * sizing pass, which only counts. */
static void *take(ctx *c, size_t n, size_t size)
{
    const size_t align = _Alignof(max_align_t);
    if (n == 0) return NULL;
    if (n > (SIZE_MAX / 2 - c->used) / size) {
        c->nomem = true;
        return NULL;
    }
    size_t bytes = (n * size + align - 1) / align * align;
    void *p = c->block ? c->block + c->used : NULL;
    c->used += bytes;
    return p;
}

/* Whether s is the string name: compared with its length, as a NUL inside would cut it. */
static bool is(json_t *s, const char *name)
{
    return json_is_string(s) && json_string_length(s) == strlen(name) &&
           strcmp(json_string_value(s), name) == 0;
}

/* The index of string s in names, or 0. */
static int lookup(json_t *s, const char *const *names)
{
    for (int i = 1; names[i]; i++)
        if (is(s, names[i])) return i;
    return 0;
}

static int fail_enum(ctx *c, const at *p, const char *const *names, bool nullable)
{
    char list[256];
    size_t n = 0;
    list[0] = 0;
    for (int i = 1; names[i] && n < sizeof list; i++)
        n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i > 1 ? ", " : "", names[i]);
    return fail(c, p, "must be one of %s%s", list, nullable ? " or null" : "");
}

/* Enum value j (one of names) into *out. */
static int enum_value(ctx *c, json_t *j, const at *p, const char *const *names, int *out)
{
    *out = json_is_string(j) ? lookup(j, names) : 0;
    return *out ? 0 : fail_enum(c, p, names, false);
}

/* String j as a C string: one holding a NUL character would be cut short. */
static int str_value(ctx *c, json_t *j, const at *p, const char **out)
{
    if (strlen(json_string_value(j)) != json_string_length(j))
        return fail(c, p, "must not contain a NUL character");
    *out = json_string_value(j);
    return 0;
}

static int req_str(ctx *c, json_t *o, const at *p, const char *key, const char **out)
{
    at m = {p, key, 0};
    json_t *j = json_object_get(o, key);
    if (!j) return fail(c, &m, "is required");
    if (!json_is_string(j)) return fail(c, &m, "must be a string");
    return str_value(c, j, &m, out);
}

/* A string member that may be absent (KEEP) or null (CLEAR). */
static int patch_str(ctx *c, json_t *o, const at *p, const char *key, acp_patch *pt,
                     const char **out)
{
    at m = {p, key, 0};
    json_t *j = json_object_get(o, key);
    *out = NULL;
    *pt = !j ? ACP_PATCH_KEEP : json_is_null(j) ? ACP_PATCH_CLEAR : ACP_PATCH_SET;
    if (*pt != ACP_PATCH_SET) return 0;
    if (json_is_string(j) ? str_value(c, j, &m, out) == 0
                          : fail(c, &m, "must be a string or null") == 0)
        return 0;
    *out = NULL;
    *pt = ACP_PATCH_KEEP;
    return salvage(c) ? 0 : -1;
}

/* A string member that may be absent or null (both NULL). */
static int opt_str(ctx *c, json_t *o, const at *p, const char *key, const char **out)
{
    acp_patch pt;
    return patch_str(c, o, p, key, &pt, out);
}

/* An enum member that may be absent (0) or, when nullable, null (0). */
static int opt_enum(ctx *c, json_t *o, const at *p, const char *key, const char *const *names,
                    bool nullable, int *out)
{
    at m = {p, key, 0};
    json_t *j = json_object_get(o, key);
    *out = 0;
    if (!j || (nullable && json_is_null(j))) return 0;
    if (json_is_string(j) && (*out = lookup(j, names))) return 0;
    fail_enum(c, &m, names, nullable);
    return salvage(c) ? 0 : -1;
}

static int req_enum(ctx *c, json_t *o, const at *p, const char *key, const char *const *names,
                    int *out)
{
    at m = {p, key, 0};
    json_t *j = json_object_get(o, key);
    if (!j) return fail(c, &m, "is required");
    return enum_value(c, j, &m, names, out);
}

/* JSON Schema's integer: any number with no fraction, so 5.0 too (jansson reads it as a real;
 * a Python agent may well write it). */
static bool integer(json_t *j, int64_t *out)
{
    if (json_is_integer(j)) {
        *out = json_integer_value(j);
        return true;
    }
    double d = json_real_value(j); /* 0 for a non-real */
    if (!json_is_real(j) || !(d >= -0x1p63 && d < 0x1p63) || (double)(int64_t)d != d) return false;
    *out = (int64_t)d;
    return true;
}

/* An integer member in [min, max]; an optional one may be absent or null (*has false). */
static int int_member(ctx *c, json_t *o, const at *p, const char *key, bool required, int64_t min,
                      int64_t max, bool *has, int64_t *out)
{
    at m = {p, key, 0};
    json_t *j = json_object_get(o, key);
    *has = false;
    if (!j && required) return fail(c, &m, "is required");
    if (!j || (!required && json_is_null(j))) return 0;
    int64_t i;
    if (integer(j, &i) && i >= min && i <= max) {
        *has = true;
        *out = i;
        return 0;
    }
    if (min == INT64_MIN)
        fail(c, &m, "must be an integer%s", required ? "" : " or null");
    else
        fail(c, &m, "must be an integer from %lld to %lld%s", (long long)min, (long long)max,
             required ? "" : " or null");
    return !required && salvage(c) ? 0 : -1;
}

/* A number member; an optional one may be absent or null (*has false). */
static int num_member(ctx *c, json_t *o, const at *p, const char *key, bool required, bool *has,
                      double *out)
{
    at m = {p, key, 0};
    json_t *j = json_object_get(o, key);
    *has = false;
    if (!j && required) return fail(c, &m, "is required");
    if (!j || (!required && json_is_null(j))) return 0;
    if (json_is_number(j)) {
        *has = true;
        *out = json_number_value(j);
        return 0;
    }
    fail(c, &m, "must be a number%s", required ? "" : " or null");
    return !required && salvage(c) ? 0 : -1;
}

/* _meta: an object, or absent or null (NULL). */
static int meta(ctx *c, json_t *o, const at *p, json_t **out)
{
    at m = {p, "_meta", 0};
    json_t *j = json_object_get(o, "_meta");
    *out = json_is_object(j) ? j : NULL;
    if (!j || json_is_object(j) || json_is_null(j)) return 0;
    fail(c, &m, "must be an object or null");
    return salvage(c) ? 0 : -1;
}

/* An object member read by fn into out, that may be absent or null (*got false). Every such
 * member of the schema defaults on error: lenient reading drops a malformed one whole, so fn
 * writes into a temporary the caller copies when *got. */
static int opt_object(ctx *c, json_t *o, const at *p, const char *key, read_fn fn, void *out,
                      bool *got)
{
    at m = {p, key, 0};
    json_t *j = json_object_get(o, key);
    *got = false;
    if (!j || json_is_null(j)) return 0;
    if (json_is_object(j) ? fn(c, j, &m, out) == 0
                          : fail(c, &m, "must be an object or null") == 0) {
        *got = true;
        return 0;
    }
    return salvage(c) ? 0 : -1;
}

/* Array a's items, read by fn, into the block; skip: a malformed item is dropped when lenient
 * (x-deserialize-skip-invalid-items), else it fails the array. */
static int items(ctx *c, json_t *a, const at *p, read_fn fn, size_t size, bool skip, size_t *n,
                 const void **out)
{
    size_t len = json_array_size(a), k = 0;
    char *arr = take(c, len, size);
    for (size_t i = 0; i < len; i++) {
        item tmp;
        memset(&tmp, 0, sizeof tmp);
        at ip = {p, NULL, i};
        if (fn(c, json_array_get(a, i), &ip, &tmp)) {
            if (skip && salvage(c)) continue;
            return -1;
        }
        if (arr) memcpy(arr + k * size, &tmp, size);
        k++;
    }
    *n = k;
    *out = arr && k ? arr : NULL;
    return 0;
}

typedef enum demand { OPTIONAL, NULLABLE, REQUIRED } demand;

/* An array member of items read by fn: *pt KEEP when absent, CLEAR when null (NULLABLE), SET
 * otherwise. Every array member of the schema defaults on error and skips invalid items, so
 * lenient reading takes a malformed one as absent (KEEP, no items: empty where required). */
static int member_array(ctx *c, json_t *o, const at *p, const char *key, demand nd, read_fn fn,
                        size_t size, acp_patch *pt, size_t *n, const void **out)
{
    at m = {p, key, 0};
    json_t *j = json_object_get(o, key);
    *pt = ACP_PATCH_KEEP;
    *n = 0;
    *out = NULL;
    if (!j) return nd == REQUIRED ? fail(c, &m, "is required") : 0;
    if (nd == NULLABLE && json_is_null(j)) {
        *pt = ACP_PATCH_CLEAR;
        return 0;
    }
    if (!json_is_array(j)) {
        fail(c, &m, "must be an array%s", nd == NULLABLE ? " or null" : "");
        return salvage(c) ? 0 : -1;
    }
    *pt = ACP_PATCH_SET;
    return items(c, j, &m, fn, size, true, n, out);
}

/* --- content blocks ------------------------------------------------------------------------ */

typedef struct notes {
    unsigned audience;
    const char *last_modified;
    bool has_priority;
    double priority;
} notes;

static int annotations(ctx *c, json_t *j, const at *p, void *out)
{
    notes *a = out;
    at m = {p, "audience", 0};
    json_t *aud = json_object_get(j, "audience");
    json_t *ignored;
    if (aud && !json_is_null(aud) && !json_is_array(aud) &&
        (fail(c, &m, "must be an array or null"), !salvage(c)))
        return -1;
    for (size_t i = 0; i < json_array_size(aud); i++) {
        at ip = {&m, NULL, i};
        int r;
        if (enum_value(c, json_array_get(aud, i), &ip, roles, &r) == 0)
            a->audience |= r == 1 ? ACP_AUDIENCE_ASSISTANT : ACP_AUDIENCE_USER;
        else if (!salvage(c))
            return -1;
    }
    return opt_str(c, j, p, "lastModified", &a->last_modified) ||
                   num_member(c, j, p, "priority", false, &a->has_priority, &a->priority) ||
                   meta(c, j, p, &ignored)
               ? -1
               : 0;
}

/* EmbeddedResourceResource: text contents or blob contents, told apart by which they hold. */
static int resource(ctx *c, json_t *o, const at *p, acp_content_view *b)
{
    at m = {p, "resource", 0};
    json_t *r = json_object_get(o, "resource"), *ignored;
    if (!r) return fail(c, &m, "is required");
    if (!json_is_object(r)) return fail(c, &m, "must be an object");
    json_t *text = json_object_get(r, "text"), *blob = json_object_get(r, "blob");
    if (!text && !blob) return fail(c, &m, "must have text or blob");
    if (text && (json_is_string(text) || !blob) ? req_str(c, r, &m, "text", &b->text)
                                                : req_str(c, r, &m, "blob", &b->data))
        return -1;
    return req_str(c, r, &m, "uri", &b->uri) || opt_str(c, r, &m, "mimeType", &b->mime_type) ||
                   meta(c, r, &m, &ignored)
               ? -1
               : 0;
}

static int content_block(ctx *c, json_t *o, const at *p, void *out)
{
    acp_content_view *b = out;
    int type, rc = 0;
    if (!json_is_object(o)) return fail(c, p, "must be an object");
    if (req_enum(c, o, p, "type", content_types, &type)) return -1;
    b->type = (acp_content_type)type;
    switch (b->type) {
    case ACP_CONTENT_TEXT:
        rc = req_str(c, o, p, "text", &b->text);
        break;
    case ACP_CONTENT_IMAGE:
    case ACP_CONTENT_AUDIO:
        rc = req_str(c, o, p, "data", &b->data) || req_str(c, o, p, "mimeType", &b->mime_type) ||
             (b->type == ACP_CONTENT_IMAGE && opt_str(c, o, p, "uri", &b->uri));
        break;
    case ACP_CONTENT_RESOURCE_LINK:
        rc = req_str(c, o, p, "name", &b->name) || req_str(c, o, p, "uri", &b->uri) ||
             opt_str(c, o, p, "title", &b->title) ||
             opt_str(c, o, p, "description", &b->description) ||
             opt_str(c, o, p, "mimeType", &b->mime_type) ||
             int_member(c, o, p, "size", false, INT64_MIN, INT64_MAX, &b->has_size, &b->size);
        break;
    case ACP_CONTENT_RESOURCE:
        rc = resource(c, o, p, b);
        break;
    }
    notes a = {0};
    bool got;
    if (rc || opt_object(c, o, p, "annotations", annotations, &a, &got) || meta(c, o, p, &b->meta))
        return -1;
    if (got) {
        b->audience = a.audience;
        b->last_modified = a.last_modified;
        b->has_priority = a.has_priority;
        b->priority = a.priority;
    }
    return 0;
}

/* A required content block member. */
static int block_member(ctx *c, json_t *o, const at *p, const char *key, acp_content_view *b)
{
    at m = {p, key, 0};
    json_t *j = json_object_get(o, key);
    if (!j) return fail(c, &m, "is required");
    return content_block(c, j, &m, b);
}

/* --- tool calls ---------------------------------------------------------------------------- */

static int tool_content(ctx *c, json_t *o, const at *p, void *out)
{
    acp_tool_content_view *t = out;
    int type, rc;
    if (!json_is_object(o)) return fail(c, p, "must be an object");
    if (req_enum(c, o, p, "type", tool_content_types, &type)) return -1;
    t->type = (acp_tool_content_type)type;
    if (t->type == ACP_TOOL_CONTENT)
        rc = block_member(c, o, p, "content", &t->content);
    else if (t->type == ACP_TOOL_DIFF)
        rc = req_str(c, o, p, "path", &t->diff.path) ||
             opt_str(c, o, p, "oldText", &t->diff.old_text) ||
             req_str(c, o, p, "newText", &t->diff.new_text);
    else
        rc = req_str(c, o, p, "terminalId", &t->terminal_id);
    return rc || meta(c, o, p, &t->meta) ? -1 : 0;
}

static int location(ctx *c, json_t *o, const at *p, void *out)
{
    acp_tool_location_view *l = out;
    if (!json_is_object(o)) return fail(c, p, "must be an object");
    return req_str(c, o, p, "path", &l->path) ||
                   int_member(c, o, p, "line", false, 0, UINT32_MAX, &l->has_line, &l->line) ||
                   meta(c, o, p, &l->meta)
               ? -1
               : 0;
}

/* ToolCall, or ToolCallUpdate (every member but the id optional, and nullable). */
static int tool_call(ctx *c, json_t *o, const at *p, bool update, acp_tool_call_view *t)
{
    int kind, status;
    acp_patch content, locations;
    const void *a, *b;
    if (req_str(c, o, p, "toolCallId", &t->tool_call_id) ||
        (update ? opt_str(c, o, p, "title", &t->title) : req_str(c, o, p, "title", &t->title)) ||
        opt_str(c, o, p, "name", &t->name) ||
        opt_enum(c, o, p, "kind", tool_kinds, update, &kind) ||
        opt_enum(c, o, p, "status", tool_statuses, update, &status) ||
        member_array(c, o, p, "content", update ? NULLABLE : OPTIONAL, tool_content,
                     sizeof(acp_tool_content_view), &content, &t->ncontent, &a) ||
        member_array(c, o, p, "locations", update ? NULLABLE : OPTIONAL, location,
                     sizeof(acp_tool_location_view), &locations, &t->nlocations, &b))
        return -1;
    t->content = a;
    t->locations = b;
    /* A new call is whole: what it leaves out has the schema's defaults. */
    t->kind = kind ? (acp_tool_kind)kind : update ? ACP_TOOL_KIND_UNSET : ACP_TOOL_KIND_OTHER;
    t->status = status   ? (acp_tool_status)status
                : update ? ACP_TOOL_STATUS_UNSET
                         : ACP_TOOL_STATUS_PENDING;
    t->has_content = !update || content == ACP_PATCH_SET;
    t->has_locations = !update || locations == ACP_PATCH_SET;
    t->raw_input = json_object_get(o, "rawInput");
    t->raw_output = json_object_get(o, "rawOutput");
    return 0;
}

/* --- plans, commands, config options ---------------------------------------------------------- */

static int plan_entry(ctx *c, json_t *o, const at *p, void *out)
{
    acp_plan_entry_view *e = out;
    int priority, status;
    if (!json_is_object(o)) return fail(c, p, "must be an object");
    if (req_str(c, o, p, "content", &e->content) ||
        req_enum(c, o, p, "priority", plan_priorities, &priority) ||
        req_enum(c, o, p, "status", plan_statuses, &status) || meta(c, o, p, &e->meta))
        return -1;
    e->priority = (acp_plan_priority)priority;
    e->status = (acp_plan_status)status;
    return 0;
}

static int command_input(ctx *c, json_t *j, const at *p, void *out)
{
    json_t *ignored;
    return req_str(c, j, p, "hint", out) || meta(c, j, p, &ignored) ? -1 : 0;
}

static int command(ctx *c, json_t *o, const at *p, void *out)
{
    acp_command_view *x = out;
    const char *hint = NULL;
    bool got;
    if (!json_is_object(o)) return fail(c, p, "must be an object");
    if (req_str(c, o, p, "name", &x->name) || req_str(c, o, p, "description", &x->description) ||
        opt_object(c, o, p, "input", command_input, &hint, &got) || meta(c, o, p, &x->meta))
        return -1;
    x->input_hint = got ? hint : NULL;
    return 0;
}

static int config_value(ctx *c, json_t *o, const at *p, void *out)
{
    acp_config_value_view *x = out;
    if (!json_is_object(o)) return fail(c, p, "must be an object");
    return req_str(c, o, p, "value", &x->value) || req_str(c, o, p, "name", &x->name) ||
                   opt_str(c, o, p, "description", &x->description) || meta(c, o, p, &x->meta)
               ? -1
               : 0;
}

/* SessionConfigSelectOptions: values, or groups of values (never both: the first item says
 * which), flattened into one array. */
static int select_values(ctx *c, json_t *o, const at *p, acp_config_option_view *x)
{
    at m = {p, "options", 0};
    json_t *a = json_object_get(o, "options");
    const void *arr;
    if (!a) return fail(c, &m, "is required");
    if (!json_is_array(a)) return fail(c, &m, "must be an array");
    if (!json_object_get(json_array_get(a, 0), "group")) {
        if (items(c, a, &m, config_value, sizeof *x->values, false, &x->nvalues, &arr)) return -1;
        x->values = arr;
        return 0;
    }
    size_t total = 0, k = 0;
    for (size_t i = 0; i < json_array_size(a); i++)
        total += json_array_size(json_object_get(json_array_get(a, i), "options"));
    acp_config_value_view *vals = take(c, total, sizeof *vals);
    for (size_t i = 0; i < json_array_size(a); i++) {
        at gp = {&m, NULL, i}, om = {&gp, "options", 0};
        json_t *g = json_array_get(a, i), *opts, *ignored;
        const char *id, *name;
        if (!json_is_object(g)) return fail(c, &gp, "must be an object");
        if (req_str(c, g, &gp, "group", &id) || req_str(c, g, &gp, "name", &name) ||
            meta(c, g, &gp, &ignored))
            return -1;
        if (!(opts = json_object_get(g, "options"))) return fail(c, &om, "is required");
        if (!json_is_array(opts) && (fail(c, &om, "must be an array"), !salvage(c))) return -1;
        for (size_t j = 0; j < json_array_size(opts); j++) {
            at ip = {&om, NULL, j};
            acp_config_value_view v = {0};
            if (config_value(c, json_array_get(opts, j), &ip, &v)) {
                if (salvage(c)) continue;
                return -1;
            }
            v.group = id;
            v.group_name = name;
            if (vals) vals[k] = v;
            k++;
        }
    }
    x->values = vals && k ? vals : NULL;
    x->nvalues = k;
    return 0;
}

static int config_option(ctx *c, json_t *o, const at *p, void *out)
{
    acp_config_option_view *x = out;
    int type;
    if (!json_is_object(o)) return fail(c, p, "must be an object");
    if (req_str(c, o, p, "id", &x->id) || req_str(c, o, p, "name", &x->name) ||
        opt_str(c, o, p, "description", &x->description) ||
        opt_str(c, o, p, "category", &x->category_text) ||
        req_enum(c, o, p, "type", config_types, &type))
        return -1;
    if (x->category_text) {
        int k = lookup(json_object_get(o, "category"), config_categories);
        x->category = k ? (acp_config_category)k : ACP_CONFIG_CATEGORY_OTHER;
    }
    x->boolean = type == 2;
    if (!x->boolean) {
        if (req_str(c, o, p, "currentValue", &x->current_value) || select_values(c, o, p, x))
            return -1;
    } else {
        at m = {p, "currentValue", 0};
        json_t *j = json_object_get(o, "currentValue");
        if (!j) return fail(c, &m, "is required");
        if (!json_is_boolean(j)) return fail(c, &m, "must be a boolean");
        x->current_bool = json_is_true(j);
    }
    return meta(c, o, p, &x->meta);
}

/* --- the other kinds ------------------------------------------------------------------------- */

typedef struct cost {
    double amount;
    const char *currency;
} cost;

static int cost_of(ctx *c, json_t *j, const at *p, void *out)
{
    cost *x = out;
    bool has;
    json_t *ignored;
    return num_member(c, j, p, "amount", true, &has, &x->amount) ||
                   req_str(c, j, p, "currency", &x->currency) || meta(c, j, p, &ignored)
               ? -1
               : 0;
}

static int usage(ctx *c, json_t *o, const at *p, acp_update_view *v)
{
    bool has;
    cost x = {0};
    if (int_member(c, o, p, "used", true, 0, INT64_MAX, &has, &v->usage.used) ||
        int_member(c, o, p, "size", true, 0, INT64_MAX, &has, &v->usage.size) ||
        opt_object(c, o, p, "cost", cost_of, &x, &v->usage.has_cost))
        return -1;
    if (v->usage.has_cost) {
        v->usage.cost_amount = x.amount;
        v->usage.cost_currency = x.currency;
    }
    return 0;
}

static int notice(ctx *c, json_t *o, const at *p, acp_update_view *v)
{
    at t = {p, "title", 0};
    if (req_str(c, o, p, "severity", &v->notice.severity_text) ||
        req_str(c, o, p, "title", &v->notice.title) ||
        opt_str(c, o, p, "description", &v->notice.description))
        return -1;
    if (!*v->notice.title) return fail(c, &t, "must be a non-empty string");
    int k = lookup(json_object_get(o, "severity"), notice_severities);
    v->notice.severity = k ? (acp_notice_severity)k : ACP_NOTICE_OTHER;
    return 0;
}

static int compaction(ctx *c, json_t *o, const at *p, acp_update_view *v)
{
    const void *a;
    json_t *m = json_object_get(o, "_meta");
    if (req_str(c, o, p, "compactionId", &v->compaction.compaction_id) ||
        req_str(c, o, p, "status", &v->compaction.status_text) ||
        member_array(c, o, p, "summary", NULLABLE, content_block, sizeof(acp_content_view),
                     &v->compaction.summary_patch, &v->compaction.nsummary, &a) ||
        patch_str(c, o, p, "error", &v->compaction.error_patch, &v->compaction.error))
        return -1;
    v->compaction.summary = a;
    int k = lookup(json_object_get(o, "status"), compaction_statuses);
    v->compaction.status = k ? (acp_compaction_status)k : ACP_COMPACTION_OTHER;
    /* _meta was read with the update; here only whether it patches. A malformed one (lenient)
     * reads as absent. */
    v->compaction.meta_patch = v->meta           ? ACP_PATCH_SET
                               : json_is_null(m) ? ACP_PATCH_CLEAR
                                                 : ACP_PATCH_KEEP;
    return 0;
}

static acp_update_kind kind_of(json_t *s)
{
    /* The kinds this file reads; a kind client.h gains later is OTHER here until it is. */
    for (int k = ACP_UPDATE_OTHER + 1; k <= ACP_UPDATE_COMPACTION_SUMMARY; k++)
        if (is(s, acp_update_kind_name((acp_update_kind)k))) return (acp_update_kind)k;
    return ACP_UPDATE_OTHER;
}

static int view(ctx *c, json_t *o, acp_update_view *v)
{
    at p = {NULL, "update", 0}, k = {&p, "sessionUpdate", 0};
    const void *a;
    acp_patch pt;
    int rc;
    if (!json_is_object(o)) return fail(c, &p, "must be an object");
    json_t *s = json_object_get(o, "sessionUpdate");
    if (!s) return fail(c, &k, "is required");
    if (!json_is_string(s)) return fail(c, &k, "must be a string");
    v->kind = kind_of(s);
    if (v->kind == ACP_UPDATE_OTHER) {
        /* Nothing to check against: a newer or extension kind is the application's to read. */
        v->meta = json_is_object(json_object_get(o, "_meta")) ? json_object_get(o, "_meta") : NULL;
        return 0;
    }
    if (meta(c, o, &p, &v->meta)) return -1;
    switch (v->kind) {
    case ACP_UPDATE_USER_MESSAGE_CHUNK:
    case ACP_UPDATE_AGENT_MESSAGE_CHUNK:
    case ACP_UPDATE_AGENT_THOUGHT_CHUNK:
        return block_member(c, o, &p, "content", &v->chunk.content) ||
                       opt_str(c, o, &p, "messageId", &v->chunk.message_id)
                   ? -1
                   : 0;
    case ACP_UPDATE_TOOL_CALL:
    case ACP_UPDATE_TOOL_CALL_UPDATE:
        return tool_call(c, o, &p, v->kind == ACP_UPDATE_TOOL_CALL_UPDATE, &v->tool_call);
    case ACP_UPDATE_PLAN:
        rc = member_array(c, o, &p, "entries", REQUIRED, plan_entry, sizeof *v->plan.entries, &pt,
                          &v->plan.nentries, &a);
        v->plan.entries = a;
        return rc;
    case ACP_UPDATE_AVAILABLE_COMMANDS:
        rc = member_array(c, o, &p, "availableCommands", REQUIRED, command,
                          sizeof *v->commands.commands, &pt, &v->commands.ncommands, &a);
        v->commands.commands = a;
        return rc;
    case ACP_UPDATE_CURRENT_MODE:
        return req_str(c, o, &p, "currentModeId", &v->mode.current_mode_id);
    case ACP_UPDATE_CONFIG_OPTION:
        rc = member_array(c, o, &p, "configOptions", REQUIRED, config_option,
                          sizeof *v->config.options, &pt, &v->config.noptions, &a);
        v->config.options = a;
        return rc;
    case ACP_UPDATE_SESSION_INFO:
        return patch_str(c, o, &p, "title", &v->info.title_patch, &v->info.title) ||
                       patch_str(c, o, &p, "updatedAt", &v->info.updated_at_patch,
                                 &v->info.updated_at)
                   ? -1
                   : 0;
    case ACP_UPDATE_USAGE:
        return usage(c, o, &p, v);
    case ACP_UPDATE_NOTICE:
        return notice(c, o, &p, v);
    case ACP_UPDATE_COMPACTION:
        return compaction(c, o, &p, v);
    case ACP_UPDATE_COMPACTION_SUMMARY:
        return req_str(c, o, &p, "compactionId", &v->summary_chunk.compaction_id) ||
                       block_member(c, o, &p, "content", &v->summary_chunk.content)
                   ? -1
                   : 0;
    default:
        return 0;
    }
}

/* Into the library's own view v. */
static int parse(const acp_update *u, unsigned flags, acp_update_view *v)
{
    memset(v, 0, sizeof *v);
    if (!u) return acp_error_set(ACP_EINVAL, "acp_update_view_parse: no update");
    ctx c = {.lenient = flags & ACP_UPDATE_VIEW_LENIENT};
    json_error_t je;
    /* Duplicate keys are refused: the client routed the update by the first sessionUpdate
     * (acp_json_member), jansson would keep the last. NULs are allowed in the tree and refused
     * only in the strings the view hands out (str_value). */
    json_t *root = json_loadb(u->update.p ? u->update.p : "", u->update.n,
                              JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL | JSON_DECODE_ANY, &je);
    if (!root) {
        return acp_error_set(ACP_EPROTO, "update is not valid JSON: %s", je.text);
    }
    int rc = view(&c, root, v) ? ACP_EPROTO : 0;
    if (rc == 0 && c.used && !c.nomem) {
        size_t need = c.used;
        if (!(c.block = malloc(need))) {
            c.nomem = true;
        } else {
            memset(v, 0, sizeof *v);
            c.used = 0;
            c.salvaged = 0;
            rc = view(&c, root, v) ? ACP_EPROTO : 0;
            if (!rc && c.used != need) { /* the passes decide alike: a broken invariant */
                rc = ACP_EPROTO;
                snprintf(c.err, sizeof c.err, "internal error: the view's two passes disagree");
            }
        }
    }
    if (c.nomem) rc = ACP_ENOMEM;
    if (rc) {
        free(c.block);
        json_decref(root);
        memset(v, 0, sizeof *v);
        return rc == ACP_ENOMEM ? acp_error_set(rc, "out of memory building an update view")
                                : acp_error_set(rc, "%s", c.err);
    }
    v->raw = root;
    v->block = c.block;
    v->salvaged = c.salvaged;
    return 0;
}

/* The 1.0 size of the view (when it changes: rpc/lasterr.h). */
#define ACP_UPDATE_VIEW_SIZE_1_0 sizeof(acp_update_view)

/* Copies the library's view v over as much of the caller's as it holds (acp/api.h). */
static int view_write(acp_update_view *out, const acp_update_view *v)
{
    return acp_struct_write(out, sizeof *v, ACP_UPDATE_VIEW_SIZE_1_0, v, "acp_update_view");
}

int acp_update_view_parse_ext(const acp_update *u, unsigned flags, acp_update_view *out)
{
    if (!out) return acp_error_set(ACP_EINVAL, "acp_update_view_parse: no view");
    acp_update_view v = ACP_UPDATE_VIEW_INIT;
    int rc = view_write(out, &v); /* empties it, or refuses its struct_size */
    if (rc) return rc;
    rc = parse(u, flags, &v);
    view_write(out, &v);
    return rc;
}

int acp_update_view_parse(const acp_update *u, acp_update_view *v)
{
    return acp_update_view_parse_ext(u, 0, v);
}

void acp_update_view_free(acp_update_view *v)
{
    if (!v) return;
    json_decref(v->raw);
    free(v->block);
    acp_update_view empty = ACP_UPDATE_VIEW_INIT;
    if (v->struct_size) view_write(v, &empty);
}

static const char *name_of(const char *const *names, size_t n, int i)
{
    return i > 0 && (size_t)i < n - 1 ? names[i] : "";
}

#define NAME_OF(names, i) name_of(names, sizeof names / sizeof names[0], (int)(i))

const char *acp_tool_kind_name(acp_tool_kind k)
{
    return NAME_OF(tool_kinds, k);
}

const char *acp_tool_status_name(acp_tool_status s)
{
    return NAME_OF(tool_statuses, s);
}

const char *acp_plan_priority_name(acp_plan_priority p)
{
    return NAME_OF(plan_priorities, p);
}

const char *acp_plan_status_name(acp_plan_status s)
{
    return NAME_OF(plan_statuses, s);
}
