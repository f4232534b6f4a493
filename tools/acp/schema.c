/* SPDX-License-Identifier: Apache-2.0 */
/* The built-in ACP schema and its validator (tools/acp/schema.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/acp/schema.h"

/* The two files, NUL-terminated, linked in whole (.incbin): acp needs no data directory. */
#define INCBIN(name, file)                                                                         \
    __asm__(".section .rodata\n.balign 16\n.global " #name "\n.type " #name ", @object\n" #name    \
            ":\n.incbin \"" ACP_SCHEMA_DIR "/" file "\"\n.byte 0\n.size " #name ", .-" #name       \
            "\n.previous\n");                                                                      \
    extern const char name[]
INCBIN(trace_schema_stable, "schema.json");
INCBIN(trace_schema_unstable, "schema.unstable.json");

typedef struct entry {
    const char *method, *side, *def; /* borrowed from the document */
    schema_kind kind;
    int doc; /* 0 stable, 1 unstable */
} entry;

struct acp_schemas {
    json_t *doc[2], *defs[2];
    entry *e;
    size_t n;
};

static void index_doc(acp_schemas *s, int d)
{
    const char *name;
    json_t *def;
    json_object_foreach(s->defs[d], name, def)
    {
        const char *method = json_string_value(json_object_get(def, "x-method"));
        const char *side = json_string_value(json_object_get(def, "x-side"));
        size_t n = strlen(name);
        schema_kind k;
        if (!method || !side) continue;
        if (n > 7 && !strcmp(name + n - 7, "Request"))
            k = SCHEMA_REQUEST;
        else if (n > 8 && !strcmp(name + n - 8, "Response"))
            k = SCHEMA_RESPONSE;
        else if (n > 12 && !strcmp(name + n - 12, "Notification"))
            k = SCHEMA_NOTIFICATION;
        else
            continue;
        bool known = false;
        for (size_t i = 0; i < s->n; i++)
            if (!strcmp(s->e[i].method, method) && s->e[i].kind == k && !strcmp(s->e[i].side, side))
                known = true;
        if (known) continue; /* the stable document's comes first */
        entry *grown = realloc(s->e, (s->n + 1) * sizeof *grown);
        if (!grown) continue;
        s->e = grown;
        s->e[s->n++] = (entry){method, side, name, k, d};
    }
}

acp_schemas *schemas_load(void)
{
    acp_schemas *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    const char *text[2] = {trace_schema_stable, trace_schema_unstable};
    for (int d = 0; d < 2; d++) {
        s->doc[d] = json_loads(text[d], 0, NULL);
        s->defs[d] = json_object_get(s->doc[d], "$defs");
        if (!s->defs[d]) {
            schemas_free(s);
            return NULL;
        }
    }
    index_doc(s, 0);
    index_doc(s, 1);
    return s;
}

void schemas_free(acp_schemas *s)
{
    if (!s) return;
    json_decref(s->doc[0]);
    json_decref(s->doc[1]);
    free(s->e);
    free(s);
}

static const entry *find(const acp_schemas *s, const char *method, schema_kind kind,
                         const char *side)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->e[i].kind == kind && !strcmp(s->e[i].method, method) &&
            (!side || !strcmp(s->e[i].side, side)))
            return &s->e[i];
    return NULL;
}

bool schemas_find(const acp_schemas *s, const char *method, schema_kind kind, const char **side,
                  bool *unstable)
{
    const entry *e = find(s, method, kind, *side);
    if (!e) e = find(s, method, kind, "protocol");
    if (!e) e = find(s, method, kind, NULL);
    if (!e) return false;
    *side = e->side;
    *unstable = e->doc == 1;
    return true;
}

/* --- the validator ------------------------------------------------------------------------ */

typedef struct vctx {
    json_t *defs;
    char path[512];
    size_t plen;
    char *err;
    size_t errlen;
} vctx;

static bool fail(vctx *c, const char *fmt, const char *a)
{
    char why[256];
    snprintf(why, sizeof why, fmt, a);
    snprintf(c->err, c->errlen, "%s: %s", c->plen ? c->path : "/", why);
    return false;
}

static size_t push(vctx *c, const char *seg)
{
    size_t was = c->plen, n = strlen(seg);
    if (was + 1 + n < sizeof c->path) {
        c->path[was] = '/';
        memcpy(c->path + was + 1, seg, n + 1);
        c->plen += 1 + n;
    }
    return was;
}

static void pop(vctx *c, size_t was)
{
    c->plen = was;
    c->path[was] = 0;
}

static bool type_is(const char *t, json_t *v)
{
    if (!strcmp(t, "object")) return json_is_object(v);
    if (!strcmp(t, "array")) return json_is_array(v);
    if (!strcmp(t, "string")) return json_is_string(v);
    if (!strcmp(t, "boolean")) return json_is_boolean(v);
    if (!strcmp(t, "null")) return json_is_null(v);
    if (!strcmp(t, "number")) return json_is_number(v);
    if (!strcmp(t, "integer")) {
        double d = json_number_value(v);
        return json_is_integer(v) ||
               (json_is_real(v) && d > -9e15 && d < 9e15 && d == (double)(long long)d);
    }
    return true;
}

static bool check(vctx *c, json_t *s, json_t *v, int depth);

/* An alternative that a tag rules out: one of its properties (its own or its $ref's) is a
 * string const that v has with another value ("sessionUpdate", "type"). Cheap, and it spares
 * the full check of every other member of a tagged union. */
static bool tagged_out(vctx *c, json_t *alt, json_t *v)
{
    for (int hop = 0; hop < 3 && json_is_object(alt); hop++) {
        const char *key;
        json_t *ps;
        json_object_foreach(json_object_get(alt, "properties"), key, ps)
        {
            const char *want = json_string_value(json_object_get(ps, "const"));
            const char *got = want ? json_string_value(json_object_get(v, key)) : NULL;
            if (got && strcmp(want, got)) return true;
        }
        const char *ref = json_string_value(json_object_get(alt, "$ref"));
        json_t *all = json_object_get(alt, "allOf");
        if (!ref && json_array_size(all) == 1)
            ref = json_string_value(json_object_get(json_array_get(all, 0), "$ref"));
        alt = ref && !strncmp(ref, "#/$defs/", 8) ? json_object_get(c->defs, ref + 8) : NULL;
    }
    return false;
}

/* anyOf / oneOf: one alternative that fits. Failing, the error of the one that got furthest
 * (the longest path): for a tagged union, the alternative the tag chose. */
static bool any_of(vctx *c, json_t *alts, json_t *v, int depth)
{
    char best[512] = "", mine[512];
    size_t i;
    json_t *alt;
    char *outer = c->err;
    size_t outer_len = c->errlen, was = c->plen;
    json_array_foreach(alts, i, alt)
    {
        if (json_is_object(v) && tagged_out(c, alt, v)) continue;
        c->err = mine;
        c->errlen = sizeof mine;
        mine[0] = 0;
        bool ok = check(c, alt, v, depth + 1);
        c->err = outer;
        c->errlen = outer_len;
        pop(c, was);
        if (ok) return true;
        if (strcspn(mine, ":") > strcspn(best, ":") || !best[0])
            snprintf(best, sizeof best, "%s", mine);
    }
    /* No alternative got past this value itself (a const or type of each): say so. */
    if (!best[0] || strcspn(best, ":") <= (c->plen ? c->plen : 1))
        return fail(c, "%snot one of the values or shapes allowed here", "");
    snprintf(c->err, c->errlen, "%s", best);
    return false;
}

static bool check(vctx *c, json_t *s, json_t *v, int depth)
{
    if (depth > 64) return true; /* the schema's own cycles through $ref: deep enough */
    if (json_is_true(s) || !json_is_object(s)) return true;
    if (json_is_false(s)) return fail(c, "%snot allowed here", "");
    /* One pass over the node's members (most are descriptions) rather than a hash lookup
     * per keyword: the validator runs on every message of a stream. */
    struct {
        json_t *ref, *type, *cnst, *en, *props, *req, *extra, *items, *min, *max, *fmt, *minlen,
            *all, *any, *one, *not_, *skip;
    } kw = {0};
    const char *key;
    json_t *m;
    json_object_foreach(s, key, m)
    {
        json_t **slot = NULL;
        switch (key[0]) {
        case '$':
            slot = !strcmp(key, "$ref") ? &kw.ref : NULL;
            break;
        case 't':
            slot = !strcmp(key, "type") ? &kw.type : NULL;
            break;
        case 'c':
            slot = !strcmp(key, "const") ? &kw.cnst : NULL;
            break;
        case 'e':
            slot = !strcmp(key, "enum") ? &kw.en : NULL;
            break;
        case 'p':
            slot = !strcmp(key, "properties") ? &kw.props : NULL;
            break;
        case 'r':
            slot = !strcmp(key, "required") ? &kw.req : NULL;
            break;
        case 'i':
            slot = !strcmp(key, "items") ? &kw.items : NULL;
            break;
        case 'f':
            slot = !strcmp(key, "format") ? &kw.fmt : NULL;
            break;
        case 'o':
            slot = !strcmp(key, "oneOf") ? &kw.one : NULL;
            break;
        case 'n':
            slot = !strcmp(key, "not") ? &kw.not_ : NULL;
            break;
        case 'a':
            slot = !strcmp(key, "additionalProperties") ? &kw.extra
                   : !strcmp(key, "allOf")              ? &kw.all
                   : !strcmp(key, "anyOf")              ? &kw.any
                                                        : NULL;
            break;
        case 'm':
            slot = !strcmp(key, "minimum")     ? &kw.min
                   : !strcmp(key, "maximum")   ? &kw.max
                   : !strcmp(key, "minLength") ? &kw.minlen
                                               : NULL;
            break;
        case 'x':
            /* A value the schema tells readers to replace by its default when bad: never a
             * violation. */
            if (!strcmp(key, "x-deserialize-default-on-error") && json_is_true(m)) return true;
            slot = !strcmp(key, "x-deserialize-skip-invalid-items") ? &kw.skip : NULL;
            break;
        }
        if (slot) *slot = m;
    }
    json_t *k;
    if ((k = kw.ref)) {
        const char *ref = json_string_value(k);
        if (ref && !strncmp(ref, "#/$defs/", 8)) {
            json_t *def = json_object_get(c->defs, ref + 8);
            if (def && !check(c, def, v, depth + 1)) return false;
        }
    }
    if ((k = kw.type)) {
        bool ok = false;
        if (json_is_string(k)) ok = type_is(json_string_value(k), v);
        size_t i;
        json_t *t;
        json_array_foreach(k, i, t) ok = ok || type_is(json_string_value(t), v);
        if (!ok)
            return fail(c, "not of type %s", json_is_string(k) ? json_string_value(k) : "listed");
    }
    if ((k = kw.cnst) && !json_equal(k, v)) {
        return fail(c, "not %s", json_is_string(k) ? json_string_value(k) : "the constant");
    }
    if ((k = kw.en)) {
        size_t i;
        json_t *e;
        bool ok = false;
        json_array_foreach(k, i, e) ok = ok || json_equal(e, v);
        if (!ok) return fail(c, "%snot one of the enum's values", "");
    }
    if (json_is_object(v)) {
        json_t *props = kw.props, *req = kw.req;
        size_t i;
        json_t *r;
        json_array_foreach(req, i, r)
        {
            if (json_is_string(r) && !json_object_get(v, json_string_value(r)))
                return fail(c, "lacks required %s", json_string_value(r));
        }
        json_t *extra = kw.extra;
        json_object_foreach(v, key, m)
        {
            json_t *ps = json_object_get(props, key);
            size_t was = push(c, key);
            bool ok = true;
            if (ps)
                ok = check(c, ps, m, depth + 1);
            else if (json_is_false(extra))
                ok = fail(c, "%snot a member this object may have", "");
            else if (json_is_object(extra))
                ok = check(c, extra, m, depth + 1);
            if (!ok) return false;
            pop(c, was);
        }
    }
    if (json_is_array(v) && (k = kw.items) && !json_is_true(kw.skip)) {
        size_t i;
        json_array_foreach(v, i, m)
        {
            char seg[24];
            snprintf(seg, sizeof seg, "%zu", i);
            size_t was = push(c, seg);
            if (!check(c, k, m, depth + 1)) return false;
            pop(c, was);
        }
    }
    if (json_is_number(v)) {
        if ((k = kw.min) && json_number_value(v) < json_number_value(k))
            return fail(c, "%sbelow the minimum", "");
        if ((k = kw.max) && json_number_value(v) > json_number_value(k))
            return fail(c, "%sabove the maximum", "");
        const char *f = json_string_value(kw.fmt);
        if (f && !strncmp(f, "uint", 4) && json_number_value(v) < 0)
            return fail(c, "negative for format %s", f);
    }
    if (json_is_string(v) && (k = kw.minlen) &&
        json_string_length(v) < (size_t)json_integer_value(k))
        return fail(c, "%sshorter than its minimum length", "");
    if ((k = kw.all)) {
        size_t i;
        json_t *alt;
        json_array_foreach(k, i, alt) if (!check(c, alt, v, depth + 1)) return false;
    }
    if ((k = kw.any) && !any_of(c, k, v, depth)) return false;
    /* oneOf as anyOf: the schema's oneOf alternatives overlap where readers do not care. */
    if ((k = kw.one) && !any_of(c, k, v, depth)) return false;
    if ((k = kw.not_)) {
        char scratch[512];
        char *outer = c->err;
        size_t outer_len = c->errlen, was = c->plen;
        c->err = scratch;
        c->errlen = sizeof scratch;
        bool matched = check(c, k, v, depth + 1);
        c->err = outer;
        c->errlen = outer_len;
        pop(c, was);
        if (matched) return fail(c, "%smatches what is excluded", "");
    }
    return true;
}

bool schemas_check(const acp_schemas *s, const char *method, schema_kind kind, const char *side,
                   json_t *v, char *err, size_t errlen)
{
    const entry *e = find(s, method, kind, side);
    if (!e) return true;
    vctx c = {.defs = s->defs[e->doc], .err = err, .errlen = errlen};
    err[0] = 0;
    json_t *none = v ? NULL : json_object(); /* params left out: as {} (JSON-RPC allows it) */
    bool ok = check(&c, json_object_get(s->defs[e->doc], e->def), v ? v : none, 0);
    json_decref(none);
    return ok;
}
