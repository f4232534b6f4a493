/* SPDX-License-Identifier: Apache-2.0 */
/* Checking a request's params against its table (validate.h): one walk over the jansson tree
 * the connection already parsed, a hash lookup per member the table names, nothing allocated
 * unless something is wrong. The path of a member is a chain on the stack, rendered only when
 * a message needs it. */
#include <stdint.h>
#include <float.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "agent/validate.h"

typedef acp_json_path at;

/* Records "<path> <what>" and returns false. A lenient member above may still swallow it: the
 * last failure recorded is the one reported. */
__attribute__((format(printf, 3, 4))) static bool fail(verr *e, const at *p, const char *fmt, ...)
{
    if (e->quiet) return false;
    acp_json_path_render(p, e->path, sizeof e->path);
    int n = snprintf(e->msg, sizeof e->msg, "%s ", e->path);
    if (n > 0 && (size_t)n < sizeof e->msg) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->msg + n, sizeof e->msg - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return false;
}

static bool check_value(verr *e, json_t *v, const vfield *f, const at *p);

static bool check_shape(verr *e, json_t *obj, const vshape *sh, const at *up)
{
    for (size_t i = 0; i < sh->n; i++) {
        const vfield *f = &sh->fields[i];
        json_t *v = json_object_get(obj, f->key);
        at here = {up, f->key, 0};
        if (!v) {
            if (f->flags & VF_REQ) return fail(e, &here, "is required");
            continue;
        }
        if (json_is_null(v) && (f->flags & (VF_NULL | VF_NULL_EMPTY))) {
            /* Read as [] by what follows; the replacement says so to the engine too. */
            if ((f->flags & VF_NULL_EMPTY) && json_object_set_new(obj, f->key, json_array()))
                return fail(e, &here, "cannot be read (out of memory)");
            continue;
        }
        if (check_value(e, v, f, &here)) continue;
        if (!(f->flags & VF_LENIENT)) return false;
        json_object_del(obj, f->key); /* read as its default, as the SDKs do */
    }
    return true;
}

/* The type a field must have, for messages: "a string", "an array or null". */
static void describe(const vfield *f, char *buf, size_t cap)
{
    const char *what = "";
    switch (f->kind) {
    case V_STRING:
        what = "a string";
        break;
    case V_BOOL:
        what = "a boolean";
        break;
    case V_U16:
        what = "an integer from 0 to 65535";
        break;
    case V_INT:
        what = "an integer";
        break;
    case V_NUMBER:
        what = "a number";
        break;
    case V_ARRAY:
        what = "an array";
        break;
    case V_ENUM: {
        size_t n = (size_t)snprintf(buf, cap, "one of ");
        for (const char *const *s = f->of; *s && n < cap; s++)
            n += (size_t)snprintf(buf + n, cap - n, "%s%s", s == f->of ? "" : ", ", *s);
        if (n < cap && (f->flags & VF_NULL)) snprintf(buf + n, cap - n, " or null");
        return;
    }
    default:
        what = "an object";
    }
    snprintf(buf, cap, "%s%s", what, (f->flags & VF_NULL) ? " or null" : "");
}

static bool wrong_type(verr *e, const vfield *f, const at *p)
{
    if (e->quiet) return false;
    char want[160];
    describe(f, want, sizeof want);
    return fail(e, p, "must be %s", want);
}

/* An integer, also when written as a real without a fraction (1.0): JSON has one number type
 * and the SDKs read such a value as the integer. */
static bool integral(const json_t *v, double lo, double hi)
{
    if (json_is_integer(v)) {
        json_int_t i = json_integer_value(v);
        return (double)i >= lo && (double)i <= hi;
    }
    if (!json_is_real(v)) return false;
    double d = json_real_value(v);
    /* Beyond 2^53 every double is an integer; below it, one survives the round trip. */
    return d >= lo && d <= hi && (d > 9e15 || d < -9e15 || d == (double)(int64_t)d);
}

static bool one_of(const json_t *v, const char *const *names, size_t *index)
{
    if (!json_is_string(v)) return false;
    const char *s = json_string_value(v);
    for (size_t i = 0; names[i]; i++) {
        if (!strcmp(s, names[i])) {
            if (index) *index = i;
            return true;
        }
    }
    return false;
}

static bool check_array(verr *e, json_t *arr, const vfield *f, const at *p)
{
    const vfield *item = f->of;
    for (size_t i = 0; i < json_array_size(arr);) {
        at here = {p, NULL, i};
        if (check_value(e, json_array_get(arr, i), item, &here)) {
            i++;
            continue;
        }
        if (!(f->flags & VF_SKIP)) return false;
        json_array_remove(arr, i);
    }
    return true;
}

static bool check_tagged(verr *e, json_t *obj, const vunion *u, const at *p)
{
    if (u->common && !check_shape(e, obj, u->common, p)) return false;
    json_t *tag = json_object_get(obj, u->tag);
    at here = {p, u->tag, 0};
    const vshape *sh = NULL;
    size_t i;
    if (!tag)
        sh = u->absent;
    else if (one_of(tag, u->names, &i))
        sh = u->variants[i];
    else
        sh = u->other;
    if (sh) return check_shape(e, obj, sh, p);
    if (!tag) return fail(e, &here, "is required");
    if (e->quiet) return false;
    vfield names = {.kind = V_ENUM, .of = u->names};
    char want[160];
    describe(&names, want, sizeof want);
    return fail(e, &here, "must be %s%s", want, u->absent ? " (or absent)" : "");
}

static bool check_anyof(verr *e, json_t *obj, const vunion *u, const at *p)
{
    if (u->common && !check_shape(e, obj, u->common, p)) return false;
    size_t pick = u->report;
    if (u->tag) one_of(json_object_get(obj, u->tag), u->names, &pick);
    /* Only the picked variant's failure can be reported: the others are tried quietly (a
     * set_config_option with a value id failed the boolean variant first, and rendering
     * that message was most of what checking the request cost). */
    bool quiet = e->quiet, ok = false;
    verr why;
    for (size_t i = 0; i < u->n && !ok; i++) {
        e->quiet = quiet || i != pick;
        ok = check_shape(e, obj, u->variants[i], p);
        if (!ok && i == pick) why = *e;
    }
    if (!ok) *e = why;
    e->quiet = quiet;
    return ok;
}

static bool check_value(verr *e, json_t *v, const vfield *f, const at *p)
{
    bool ok = false;
    switch (f->kind) {
    case V_STRING:
        ok = json_is_string(v);
        break;
    case V_BOOL:
        ok = json_is_boolean(v);
        break;
    case V_U16:
        ok = integral(v, 0, 65535);
        break;
    case V_INT:
        ok = integral(v, -DBL_MAX, DBL_MAX);
        break;
    case V_NUMBER:
        ok = json_is_number(v);
        break;
    case V_ENUM:
        ok = one_of(v, f->of, NULL);
        break;
    case V_ARRAY:
        if (!json_is_array(v)) break;
        return check_array(e, v, f, p);
    case V_OBJECT:
        if (!json_is_object(v)) break;
        return !f->of || check_shape(e, v, f->of, p);
    case V_TAGGED:
        if (!json_is_object(v)) break;
        return check_tagged(e, v, f->of, p);
    case V_ANYOF:
        if (!json_is_object(v)) break;
        return check_anyof(e, v, f->of, p);
    }
    return ok || wrong_type(e, f, p);
}

bool params_check(json_t *params, const vfield *root, verr *e)
{
    at top = {NULL, root->key, 0};
    e->quiet = false;
    return check_value(e, params, root, &top);
}

bool params_valid(acp_req *req, const vfield *root)
{
    verr e;
    if (params_check(acp_req_params(req), root, &e)) return true;
    acp_req_error(req, ACP_RPC_INVALID_PARAMS, json_pack("{ss}", "path", e.path), "%s", e.msg);
    return false;
}
