/* SPDX-License-Identifier: Apache-2.0 */
/* A JSON Schema subset validator over jansson: enough of draft 2020-12 for ACP's schema.json.
 * The port of tests/interop-agent/schema.mjs, so the C tools and the JS tests agree. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/check/schema.h"

extern const unsigned char chk_schema_blob[];
extern const unsigned long chk_schema_blob_len;

struct chk_schema {
    json_t *root;
    json_t *defs; /* borrowed from root */
};

chk_schema *chk_schema_load(const char **why)
{
    const char *file = getenv("ACP_SCHEMA");
    json_error_t e;
    json_t *root = NULL;
    if (file && *file)
        root = json_load_file(file, 0, &e);
    else if (chk_schema_blob_len)
        root = json_loadb((const char *)chk_schema_blob, chk_schema_blob_len, 0, &e);
    json_t *defs = json_object_get(root, "$defs");
    if (!json_is_object(defs)) {
        json_decref(root);
        *why = file && *file ? "ACP_SCHEMA does not name a readable schema.json"
                             : "this build has no schema.json built in (set ACP_SCHEMA)";
        return NULL;
    }
    chk_schema *s = calloc(1, sizeof *s);
    s->root = root;
    s->defs = defs;
    return s;
}

void chk_schema_free(chk_schema *s)
{
    if (!s) return;
    json_decref(s->root);
    free(s);
}

const char *chk_schema_def(const chk_schema *s, const char *method, const char *kind)
{
    const char *name;
    json_t *d;
    size_t kl = strlen(kind);
    json_object_foreach(s->defs, name, d)
    {
        const char *m = json_string_value(json_object_get(d, "x-method"));
        size_t nl = strlen(name);
        if (m && !strcmp(m, method) && nl > kl && !strcmp(name + nl - kl, kind)) return name;
    }
    return NULL;
}

static char *say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *out = NULL;
    if (vasprintf(&out, fmt, ap) < 0) out = NULL;
    va_end(ap);
    return out ? out : strdup("?");
}

/* A value's text, cut short, for messages. */
static char *shown(const json_t *v)
{
    char *t = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    if (t && strlen(t) > 80) strcpy(t + 77, "...");
    return t ? t : strdup("?");
}

static bool type_ok(const char *t, const json_t *v)
{
    if (!strcmp(t, "null")) return json_is_null(v);
    if (!strcmp(t, "boolean")) return json_is_boolean(v);
    if (!strcmp(t, "string")) return json_is_string(v);
    if (!strcmp(t, "number")) return json_is_number(v);
    if (!strcmp(t, "integer"))
        return json_is_integer(v) ||
               (json_is_real(v) && json_real_value(v) == floor(json_real_value(v)));
    if (!strcmp(t, "array")) return json_is_array(v);
    if (!strcmp(t, "object")) return json_is_object(v);
    return true;
}

/* Code points, as the schema counts string lengths. */
static size_t u8len(const char *p, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += ((unsigned char)p[i] & 0xC0) != 0x80;
    return k;
}

static char *check(const chk_schema *s, const json_t *sc, const json_t *v, const char *path,
                   int depth);

static char *check_alts(const chk_schema *s, const json_t *alts, const json_t *v, const char *path,
                        int depth)
{
    size_t i, n = json_array_size(alts), picked = 0;
    bool have_pick = false;
    char **errs = calloc(n ? n : 1, sizeof *errs);
    const json_t *sub;
    json_array_foreach(alts, i, sub)
    {
        if (!(errs[i] = check(s, sub, v, path, depth + 1))) {
            for (size_t j = 0; j < i; j++) free(errs[j]);
            free(errs);
            return NULL;
        }
        /* the variant whose discriminator (a const property) the value carries */
        const char *k;
        const json_t *p;
        if (!have_pick && json_is_object(v))
            json_object_foreach((json_t *)json_object_get(sub, "properties"), k, p)
            {
                const json_t *c = json_object_get(p, "const");
                if (c && json_equal(c, json_object_get(v, k))) {
                    picked = i;
                    have_pick = true;
                }
            }
    }
    char *out = n ? errs[picked] : say("%s: no alternative", path);
    for (size_t j = 0; j < n; j++)
        if (j != picked) free(errs[j]);
    free(errs);
    return out;
}

static char *check(const chk_schema *s, const json_t *sc, const json_t *v, const char *path,
                   int depth)
{
    if (!sc || json_is_true(sc)) return NULL;
    if (json_is_false(sc)) return say("%s: not allowed", path);
    if (depth > 200) return NULL; /* the schema is not that deep; a cycle would be */
    char *r;
    const char *ref = json_string_value(json_object_get(sc, "$ref"));
    if (ref && !strncmp(ref, "#/$defs/", 8)) {
        if ((r = check(s, json_object_get(s->defs, ref + 8), v, path, depth + 1))) return r;
    }
    const json_t *type = json_object_get(sc, "type");
    if (type) {
        bool ok = false;
        if (json_is_string(type)) ok = type_ok(json_string_value(type), v);
        size_t i;
        const json_t *t;
        json_array_foreach(type, i, t) ok = ok || type_ok(json_string_value(t), v);
        if (!ok) {
            char *ts = shown(type), *vs = shown(v);
            r = say("%s: expected %s, got %s", path, ts, vs);
            free(ts);
            free(vs);
            return r;
        }
    }
    const json_t *c = json_object_get(sc, "const");
    if (c && !json_equal(c, v)) {
        char *cs = shown(c), *vs = shown(v);
        r = say("%s: expected %s, got %s", path, cs, vs);
        free(cs);
        free(vs);
        return r;
    }
    const json_t *en = json_object_get(sc, "enum");
    if (en) {
        bool in = false;
        size_t i;
        const json_t *e;
        json_array_foreach(en, i, e) in = in || json_equal(e, v);
        if (!in) {
            char *es = shown(en), *vs = shown(v);
            r = say("%s: %s not in %s", path, vs, es);
            free(es);
            free(vs);
            return r;
        }
    }
    if (json_is_string(v)) {
        size_t len = u8len(json_string_value(v), json_string_length(v));
        const json_t *mn = json_object_get(sc, "minLength"), *mx = json_object_get(sc, "maxLength");
        if (mn && (json_int_t)len < json_integer_value(mn))
            return say("%s: string shorter than %lld", path, (long long)json_integer_value(mn));
        if (mx && (json_int_t)len > json_integer_value(mx))
            return say("%s: string longer than %lld", path, (long long)json_integer_value(mx));
    }
    if (json_is_number(v)) {
        double x = json_number_value(v);
        const json_t *mn = json_object_get(sc, "minimum"), *mx = json_object_get(sc, "maximum");
        if (mn && x < json_number_value(mn))
            return say("%s: %g < minimum %g", path, x, json_number_value(mn));
        if (mx && x > json_number_value(mx))
            return say("%s: %g > maximum %g", path, x, json_number_value(mx));
        const char *f = json_string_value(json_object_get(sc, "format"));
        if (f && json_is_integer(v)) {
            json_int_t k = json_integer_value(v);
            bool ok = !strcmp(f, "int32")    ? k >= -2147483648LL && k <= 2147483647LL
                      : !strcmp(f, "uint32") ? k >= 0 && k <= 4294967295LL
                      : !strcmp(f, "uint16") ? k >= 0 && k <= 65535
                      : !strcmp(f, "uint64") ? k >= 0
                                             : true;
            if (!ok) return say("%s: %lld is not %s", path, (long long)k, f);
        }
    }
    if (json_is_object(v)) {
        size_t i;
        const json_t *k;
        json_array_foreach(json_object_get(sc, "required"), i, k)
        {
            if (!json_object_get(v, json_string_value(k)))
                return say("%s: missing required \"%s\"", path, json_string_value(k));
        }
        const json_t *props = json_object_get(sc, "properties");
        const char *key;
        const json_t *sub;
        json_object_foreach((json_t *)props, key, sub)
        {
            const json_t *x = json_object_get(v, key);
            if (!x) continue;
            char *p = say("%s.%s", path, key);
            r = check(s, sub, x, p, depth + 1);
            free(p);
            if (r) return r;
        }
        const json_t *ap = json_object_get(sc, "additionalProperties");
        if (ap && !json_is_true(ap)) {
            const json_t *x;
            json_object_foreach((json_t *)v, key, x)
            {
                if (json_object_get(props, key)) continue;
                char *p = say("%s.%s", path, key);
                r = check(s, ap, x, p, depth + 1);
                free(p);
                if (r) return r;
            }
        }
    }
    const json_t *items = json_object_get(sc, "items");
    if (json_is_array(v) && items) {
        size_t i;
        const json_t *x;
        json_array_foreach(v, i, x)
        {
            char *p = say("%s[%zu]", path, i);
            r = check(s, items, x, p, depth + 1);
            free(p);
            if (r) return r;
        }
    }
    size_t i;
    const json_t *sub;
    json_array_foreach(json_object_get(sc, "allOf"), i, sub)
    {
        if ((r = check(s, sub, v, path, depth + 1))) return r;
    }
    const json_t *any = json_object_get(sc, "anyOf"), *one = json_object_get(sc, "oneOf");
    if (any && (r = check_alts(s, any, v, path, depth))) return r;
    if (one && (r = check_alts(s, one, v, path, depth))) return r;
    const json_t *not = json_object_get(sc, "not");
    if (not ) {
        char *e = check(s, not, v, path, depth + 1);
        if (!e) return say("%s: matches a forbidden shape", path);
        free(e);
    }
    return NULL;
}

char *chk_schema_check(const chk_schema *s, const char *def, const json_t *v)
{
    const json_t *d = json_object_get(s->defs, def);
    if (!d) return say("the schema has no $defs.%s", def);
    return check(s, d, v, def, 0);
}

char *chk_schema_message(const chk_schema *s, const json_t *msg, const char *method)
{
    if (!json_is_object(msg)) return say("a message must be a JSON object");
    const json_t *jr = json_object_get(msg, "jsonrpc");
    if (!json_is_string(jr) || strcmp(json_string_value(jr), "2.0"))
        return say("\"jsonrpc\" must be \"2.0\"");
    const json_t *id = json_object_get(msg, "id");
    if (id && !json_is_null(id) && !json_is_string(id) && !json_is_integer(id))
        return say("\"id\" must be a string, an integer or null (RequestId)");
    const char *m = json_string_value(json_object_get(msg, "method"));
    const json_t *params = json_object_get(msg, "params");
    if (json_object_get(msg, "method")) {
        if (!m) return say("\"method\" must be a string");
        if (m[0] == '_' || (m[0] == '$' && m[1] == '/')) return NULL; /* extensions: free-form */
        const char *def = chk_schema_def(s, m, id ? "Request" : "Notification");
        if (!def) return say("unknown method \"%s\" (%s)", m, id ? "request" : "notification");
        return chk_schema_check(s, def, params ? params : json_null());
    }
    if (!id) return say("a response must have an \"id\"");
    const json_t *res = json_object_get(msg, "result"), *err = json_object_get(msg, "error");
    if (!!res == !!err) return say("a response has exactly one of \"result\" and \"error\"");
    if (err) return chk_schema_check(s, "Error", err);
    if (!method || method[0] == '_') return NULL;
    const char *def = chk_schema_def(s, method, "Response");
    return def ? chk_schema_check(s, def, res) : NULL;
}
