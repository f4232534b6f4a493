/* SPDX-License-Identifier: Apache-2.0 */
/* A validating JSON scanner (RFC 8259) that records where values are without building them.
 * It is what lets the connection route a message, keep ids of any size verbatim and replay
 * stored text, while jansson only ever parses params that a handler actually reads. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp/error.h"
#include "acp/json.h"
#include "rpc/plain.h"
#include "rpc/lasterr.h"
#include "rpc/scan.h"
#include "rpc/utf8.h"

typedef struct scanner {
    const unsigned char *p, *end;
    int depth, max_depth;
    bool trusted; /* the text was validated before: values are skipped, not checked again */
} scanner;

static void skip_ws(scanner *s)
{
    /* Compact text (nearly all) has none: one compare says so, as every whitespace byte is
     * below '!'. */
    while (s->p < s->end && *s->p <= ' ' &&
           (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
        s->p++;
}

static bool is_hex(unsigned char c)
{
    return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
}

static bool scan_string(scanner *s)
{
    s->p++; /* opening quote */
    while (s->p < s->end) {
        const unsigned char *p = acp_json_plain_run(s->p, s->end), *end = s->end;
        s->p = p;
        if (p >= end) break;
        unsigned char c = *s->p;
        if (c == '"') {
            s->p++;
            return true;
        }
        if (c < 0x20) return false;
        if (c == '\\') {
            if (s->end - s->p < 2) return false;
            unsigned char e = s->p[1];
            if (e == 'u') {
                if (s->end - s->p < 6) return false;
                for (int i = 2; i < 6; i++)
                    if (!is_hex(s->p[i])) return false;
                s->p += 6;
            } else if (strchr("\"\\/bfnrt", e) && e) {
                s->p += 2;
            } else {
                return false;
            }
        } else if (c >= 0x80) {
            size_t n = acp_utf8_seq(s->p, (size_t)(s->end - s->p));
            if (!n) return false;
            s->p += n;
        } else {
            s->p++;
        }
    }
    return false;
}

static bool digits(scanner *s)
{
    const unsigned char *start = s->p;
    while (s->p < s->end && *s->p >= '0' && *s->p <= '9') s->p++;
    return s->p > start;
}

static bool scan_number(scanner *s)
{
    if (*s->p == '-') s->p++;
    if (s->p >= s->end) return false;
    if (*s->p == '0') {
        s->p++;
    } else if (!digits(s)) {
        return false;
    }
    if (s->p < s->end && *s->p == '.') {
        s->p++;
        if (!digits(s)) return false;
    }
    if (s->p < s->end && (*s->p == 'e' || *s->p == 'E')) {
        s->p++;
        if (s->p < s->end && (*s->p == '+' || *s->p == '-')) s->p++;
        if (!digits(s)) return false;
    }
    return true;
}

static bool scan_literal(scanner *s, const char *lit, size_t n)
{
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, lit, n) != 0) return false;
    s->p += n;
    return true;
}

static bool scan_value(scanner *s);

static bool scan_container(scanner *s, unsigned char close, bool object)
{
    if (++s->depth > s->max_depth) return false;
    s->p++;
    skip_ws(s);
    if (s->p < s->end && *s->p == close) {
        s->p++;
        s->depth--;
        return true;
    }
    for (;;) {
        if (object) {
            if (s->p >= s->end || *s->p != '"' || !scan_string(s)) return false;
            skip_ws(s);
            if (s->p >= s->end || *s->p != ':') return false;
            s->p++;
            skip_ws(s);
        }
        if (!scan_value(s)) return false;
        skip_ws(s);
        if (s->p >= s->end) return false;
        if (*s->p == ',') {
            s->p++;
            skip_ws(s);
            continue;
        }
        if (*s->p != close) return false;
        s->p++;
        s->depth--;
        return true;
    }
}

static bool scan_value(scanner *s)
{
    if (s->p >= s->end) return false;
    switch (*s->p) {
    case '{':
        return scan_container(s, '}', true);
    case '[':
        return scan_container(s, ']', false);
    case '"':
        return scan_string(s);
    case 't':
        return scan_literal(s, "true", 4);
    case 'f':
        return scan_literal(s, "false", 5);
    case 'n':
        return scan_literal(s, "null", 4);
    default:
        if (*s->p == '-' || (*s->p >= '0' && *s->p <= '9')) return scan_number(s);
        return false;
    }
}

/* ACP_EINVAL, saying where the text stopped being JSON (the scanner stops at the fault). */
static int invalid(const char *str, size_t n, const unsigned char *at)
{
    return acp_error_set(ACP_EINVAL, "not valid JSON (a %zu-byte text, wrong at byte %zu)", n,
                         (size_t)((const char *)at - str));
}

int acp_json_validate(const char *str, size_t n, int max_depth)
{
    scanner s = {(const unsigned char *)str, (const unsigned char *)str + n, 0, max_depth, false};
    skip_ws(&s);
    bool ok = scan_value(&s);
    if (ok) skip_ws(&s);
    return ok && s.p == s.end ? 0 : invalid(str, n, s.p);
}

static unsigned hex4(const unsigned char *p)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned char c = p[i];
        v = v * 16 + (c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
    }
    return v;
}

static size_t put_utf8(unsigned char *o, unsigned cp)
{
    if (cp < 0x80) {
        o[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (unsigned char)(0xC0 | (cp >> 6));
        o[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (unsigned char)(0xE0 | (cp >> 12));
        o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (unsigned char)(0xF0 | (cp >> 18));
    o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Unescapes validated string text (with quotes) into out, which has room for v.n bytes (the
 * decoded form is never longer). Returns the decoded length. A lone surrogate decodes to
 * U+FFFD, as jansson rejects it and we must not produce invalid UTF-8. */
static size_t decode_string(acp_span v, unsigned char *out, bool *has_nul)
{
    const unsigned char *p = (const unsigned char *)v.p + 1,
                        *end = (const unsigned char *)v.p + v.n - 1;
    size_t o = 0;
    *has_nul = false;
    while (p < end) {
        if (*p != '\\') {
            out[o++] = *p++;
            continue;
        }
        unsigned char e = p[1];
        p += 2;
        switch (e) {
        case 'b':
            out[o++] = '\b';
            break;
        case 'f':
            out[o++] = '\f';
            break;
        case 'n':
            out[o++] = '\n';
            break;
        case 'r':
            out[o++] = '\r';
            break;
        case 't':
            out[o++] = '\t';
            break;
        case 'u': {
            unsigned cp = hex4(p);
            p += 4;
            if (cp >= 0xD800 && cp <= 0xDBFF && end - p >= 6 && p[0] == '\\' && p[1] == 'u') {
                unsigned lo = hex4(p + 2);
                if (lo >= 0xDC00 && lo <= 0xDFFF) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    p += 6;
                }
            }
            if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xFFFD;
            if (cp == 0) *has_nul = true;
            o += put_utf8(out + o, cp);
            break;
        }
        default:
            out[o++] = e; /* " \ / */
        }
    }
    return o;
}

char *acp_json_strdup(acp_span v)
{
    if (acp_json_kind(v) != 's') return NULL;
    unsigned char *out = malloc(v.n);
    if (!out) return NULL;
    bool nul;
    size_t n = decode_string(v, out, &nul);
    if (nul) {
        free(out);
        return NULL;
    }
    out[n] = '\0';
    return (char *)out;
}

char *acp_json_key_dup(acp_span v)
{
    if (acp_json_kind(v) != 's') return NULL;
    unsigned char *out = malloc(v.n);
    if (!out) return NULL;
    bool nul;
    size_t n = decode_string(v, out, &nul), nuls = 0;
    for (size_t i = 0; nul && i < n; i++) nuls += !out[i];
    if (nuls) { /* each \u0000 took 6 bytes of v and becomes 2: it fits, but grow for the NUL */
        unsigned char *w = malloc(n + nuls + 1);
        if (!w) {
            free(out);
            return NULL;
        }
        size_t j = 0;
        for (size_t i = 0; i < n; i++) {
            if (out[i]) {
                w[j++] = out[i];
            } else {
                w[j++] = 0xC0;
                w[j++] = 0x80;
            }
        }
        free(out);
        out = w;
        n = j;
    }
    out[n] = '\0';
    return (char *)out;
}

bool acp_json_str_eq(acp_span v, const char *s)
{
    if (acp_json_kind(v) != 's') return false;
    size_t slen = strlen(s);
    if (!memchr(v.p, '\\', v.n)) return v.n - 2 == slen && memcmp(v.p + 1, s, slen) == 0;
    unsigned char small[256];
    unsigned char *buf = v.n <= sizeof small ? small : malloc(v.n);
    if (!buf) return false;
    bool nul;
    size_t n = decode_string(v, buf, &nul);
    bool eq = !nul && n == slen && memcmp(buf, s, n) == 0;
    if (buf != small) free(buf);
    return eq;
}

char acp_json_kind(acp_span v)
{
    if (!v.n) return 0;
    switch (v.p[0]) {
    case '{':
        return 'o';
    case '[':
        return 'a';
    case '"':
        return 's';
    case 't':
        return 't';
    case 'f':
        return 'f';
    case 'n':
        return 'z';
    default:
        return 'n';
    }
}

/* Trusted text: a string ends at the first quote after an even run of backslashes, which
 * memchr finds at memory speed. Bounded by s->end whatever the text: text that was not valid
 * after all gives a wrong answer, never a read outside it. */
static bool skip_string(scanner *s)
{
    const unsigned char *start = s->p + 1, *from = start;
    for (;;) {
        const unsigned char *q = memchr(from, '"', (size_t)(s->end - from));
        if (!q) return false;
        const unsigned char *b = q;
        while (b > start && b[-1] == '\\') b--;
        if (((q - b) & 1) == 0) {
            s->p = q + 1;
            return true;
        }
        from = q + 1;
    }
}

/* Trusted text: the end of the value at s->p, counting brackets outside strings. */
static bool skip_value(scanner *s)
{
    if (s->p >= s->end) return false;
    unsigned char c = *s->p;
    if (c == '"') return skip_string(s);
    if (c != '{' && c != '[') { /* a number or a literal: up to the next delimiter */
        while (s->p < s->end && (c = *s->p) != ',' && c != '}' && c != ']' && c != ' ' &&
               c != '\t' && c != '\n' && c != '\r')
            s->p++;
        return true;
    }
    int depth = 0;
    while (s->p < s->end) {
        c = *s->p;
        if (c == '"') {
            if (!skip_string(s)) return false;
            continue;
        }
        if (c == '{' || c == '[') {
            depth++;
        } else if ((c == '}' || c == ']') && --depth == 0) {
            s->p++;
            return true;
        }
        s->p++;
    }
    return false;
}

/* Walks the members of the object at s->p, calling fn(key, value) for each until it returns
 * true (*stopped). Returns whether the text walked so far is valid; when not stopped, s->p is
 * left just past the closing brace. */
static bool walk_object(scanner *s, bool (*fn)(acp_span key, acp_span val, void *ctx), void *ctx,
                        bool *stopped)
{
    *stopped = false;
    if (s->p >= s->end || *s->p != '{') return false;
    s->p++;
    skip_ws(s);
    if (s->p < s->end && *s->p == '}') {
        s->p++;
        return true;
    }
    for (;;) {
        const unsigned char *k = s->p;
        if (s->p >= s->end || *s->p != '"' || !(s->trusted ? skip_string(s) : scan_string(s)))
            return false;
        acp_span key = {(const char *)k, (size_t)(s->p - k)};
        skip_ws(s);
        if (s->p >= s->end || *s->p != ':') return false;
        s->p++;
        skip_ws(s);
        const unsigned char *v = s->p;
        s->depth = 1;
        if (!(s->trusted ? skip_value(s) : scan_value(s))) return false;
        acp_span val = {(const char *)v, (size_t)(s->p - v)};
        if (fn(key, val, ctx)) {
            *stopped = true;
            return true;
        }
        skip_ws(s);
        if (s->p >= s->end) return false;
        if (*s->p == ',') {
            s->p++;
            skip_ws(s);
            continue;
        }
        if (*s->p != '}') return false;
        s->p++;
        return true;
    }
}

struct find_ctx {
    const char *key;
    acp_span *val;
};

static bool find_fn(acp_span key, acp_span val, void *ctx)
{
    struct find_ctx *f = ctx;
    if (!acp_json_str_eq(key, f->key)) return false;
    *f->val = val;
    return true;
}

bool acp_json_member(acp_span obj, const char *key, acp_span *val)
{
    struct find_ctx f = {key, val};
    /* Validated text, by contract: the walk skips values instead of checking them again. */
    scanner s = {(const unsigned char *)obj.p, (const unsigned char *)obj.p + obj.n, 0,
                 ACP_SCAN_MAX_DEPTH, true};
    skip_ws(&s);
    bool stopped;
    return walk_object(&s, find_fn, &f, &stopped) && stopped;
}

struct members_ctx {
    const char *const *keys;
    size_t n, found;
    acp_span *vals;
};

/* Whether the n bytes at raw spell the C string k. Stops at k's end: raw, the inside of a
 * validated key, holds no NUL byte. */
static bool key_is(const char *raw, size_t n, const char *k)
{
    for (size_t i = 0; i < n; i++)
        if (raw[i] != k[i]) return false;
    return k[n] == '\0';
}

static bool members_fn(acp_span key, acp_span val, void *ctx)
{
    struct members_ctx *m = ctx;
    /* A key written plainly (nearly all) is compared as it stands, mostly told apart from a
     * wanted one by its first byte, without decoding. */
    bool plain = !memchr(key.p, '\\', key.n);
    for (size_t i = 0; i < m->n; i++)
        if (!m->vals[i].p &&
            (plain ? key_is(key.p + 1, key.n - 2, m->keys[i]) : acp_json_str_eq(key, m->keys[i]))) {
            m->vals[i] = val;
            m->found++;
            break;
        }
    return false; /* the whole object is walked: that walk is its validation */
}

int acp_json_members(acp_span obj, const char *const *keys, size_t n, acp_span *vals)
{
    struct members_ctx m = {keys, n < 64 ? n : 64, 0, vals};
    for (size_t i = 0; i < n; i++) vals[i] = (acp_span){NULL, 0};
    scanner s = {(const unsigned char *)obj.p, (const unsigned char *)obj.p + obj.n, 0,
                 ACP_SCAN_MAX_DEPTH, false};
    skip_ws(&s);
    bool stopped;
    bool ok = walk_object(&s, members_fn, &m, &stopped);
    if (ok) skip_ws(&s);
    return ok && s.p == s.end ? (int)m.found : invalid(obj.p, obj.n, s.p);
}

bool acp_json_item(acp_span arr, size_t *pos, acp_span *val)
{
    const unsigned char *start = (const unsigned char *)arr.p;
    scanner s = {start + *pos, start + arr.n, 0, ACP_SCAN_MAX_DEPTH, true};
    if (s.p > s.end) return false;
    skip_ws(&s);
    if (*pos == 0) { /* the opening bracket */
        if (s.p >= s.end || *s.p != '[') return false;
        s.p++;
        skip_ws(&s);
    } else if (s.p < s.end && *s.p == ',') {
        s.p++;
        skip_ws(&s);
    }
    if (s.p >= s.end || *s.p == ']') return false;
    const unsigned char *v = s.p;
    if (!skip_value(&s)) return false;
    *val = (acp_span){(const char *)v, (size_t)(s.p - v)};
    *pos = (size_t)(s.p - start);
    return true;
}

static bool env_fn(acp_span key, acp_span val, void *ctx)
{
    acp_envelope *env = ctx;
    static const struct {
        const char *name;
        size_t off;
    } members[] = {
        {"jsonrpc", offsetof(acp_envelope, jsonrpc)}, {"id", offsetof(acp_envelope, id)},
        {"method", offsetof(acp_envelope, method)},   {"params", offsetof(acp_envelope, params)},
        {"result", offsetof(acp_envelope, result)},   {"error", offsetof(acp_envelope, error)},
    };
    for (size_t i = 0; i < sizeof members / sizeof members[0]; i++) {
        if (!acp_json_str_eq(key, members[i].name)) continue;
        acp_span *slot = (acp_span *)((char *)env + members[i].off);
        if (slot->p) env->duplicate = true;
        *slot = val;
        break;
    }
    return false;
}

void acp_scan_envelope(const char *line, size_t n, acp_envelope *env)
{
    memset(env, 0, sizeof *env);
    scanner s = {(const unsigned char *)line, (const unsigned char *)line + n, 0,
                 ACP_SCAN_MAX_DEPTH, false};
    skip_ws(&s);
    if (s.p < s.end && *s.p == '{') {
        bool stopped;
        bool ok = walk_object(&s, env_fn, env, &stopped);
        skip_ws(&s);
        if (ok && s.p == s.end) {
            env->kind = ACP_ENV_OBJECT;
            return;
        }
        memset(env, 0, sizeof *env);
        env->kind = ACP_ENV_INVALID;
        return;
    }
    bool array = s.p < s.end && *s.p == '[';
    env->kind = acp_json_validate(line, n, ACP_SCAN_MAX_DEPTH) ? ACP_ENV_INVALID
                : array                                        ? ACP_ENV_ARRAY
                                                               : ACP_ENV_SCALAR;
}

struct prefix_ctx {
    const char *end; /* of the prefix */
    acp_span *id;
    bool *has_method, found;
};

static bool prefix_fn(acp_span key, acp_span val, void *ctx)
{
    struct prefix_ctx *f = ctx;
    /* A number cut at the end of the prefix would look complete: require a delimiter. */
    scanner after = {(const unsigned char *)val.p + val.n, (const unsigned char *)f->end, 0, 0,
                     false};
    skip_ws(&after);
    if (after.p == after.end) return true;
    if (acp_json_str_eq(key, "id") && !f->found) {
        *f->id = val;
        f->found = true;
    } else if (acp_json_str_eq(key, "method")) {
        *f->has_method = true;
    }
    return false;
}

bool acp_scan_prefix_id(const char *p, size_t n, acp_span *id, bool *has_method)
{
    scanner s = {(const unsigned char *)p, (const unsigned char *)p + n, 0, ACP_SCAN_MAX_DEPTH,
                 false};
    struct prefix_ctx f = {p + n, id, has_method, false};
    *has_method = false;
    skip_ws(&s);
    bool stopped;
    walk_object(&s, prefix_fn, &f, &stopped); /* the prefix ends mid-object: what it found */
    return f.found;
}

/* --- the path of a member, for messages ------------------------------------------------------ */

typedef struct seg {
    const unsigned char *key; /* its text with the quotes; NULL: an array item */
    size_t n, index;
} seg;

typedef struct finder {
    scanner s;
    const unsigned char *base;
    size_t at;
    seg segs[ACP_SCAN_MAX_DEPTH + 1];
    int nseg;
    bool done, on_key;
} finder;

/* A key or scalar that ends at or after the offset sought is the one: the walk stops there. */
static bool reached(finder *f, bool key)
{
    if ((size_t)(f->s.p - f->base) < f->at) return false;
    f->done = true;
    f->on_key = key;
    return true;
}

static void find_in(finder *f)
{
    scanner *s = &f->s;
    if (s->p >= s->end) goto bad;
    unsigned char c = *s->p;
    if (c != '{' && c != '[') {
        if (!scan_value(s)) goto bad;
        reached(f, false);
        return;
    }
    if (f->nseg > ACP_SCAN_MAX_DEPTH) goto bad;
    int me = f->nseg++;
    unsigned char close = c == '{' ? '}' : ']';
    s->p++;
    skip_ws(s);
    for (size_t i = 0; s->p < s->end && *s->p != close; i++) {
        if (close == '}') {
            const unsigned char *k = s->p;
            if (*k != '"' || !scan_string(s)) goto bad;
            f->segs[me] = (seg){k, (size_t)(s->p - k), 0};
            if (reached(f, true)) return;
            skip_ws(s);
            if (s->p >= s->end || *s->p != ':') goto bad;
            s->p++;
            skip_ws(s);
        } else {
            f->segs[me] = (seg){NULL, 0, i};
        }
        find_in(f);
        if (f->done) return;
        skip_ws(s);
        if (s->p < s->end && *s->p == ',') {
            s->p++;
            skip_ws(s);
        }
    }
    if (s->p >= s->end) goto bad;
    s->p++;
    f->nseg--;
    return;
bad: /* not valid text after all: the path so far is the best there is */
    f->done = true;
}

/* A key that reads well after a dot: letters, digits, '_', '$', '-', no escapes. */
static bool plain_key(const unsigned char *k, size_t n)
{
    if (n < 3) return false;
    for (size_t i = 1; i + 1 < n; i++) {
        unsigned char c = k[i];
        if (!((c | 0x20) >= 'a' && (c | 0x20) <= 'z') && !(c >= '0' && c <= '9') && c != '_' &&
            c != '$' && c != '-')
            return false;
    }
    return true;
}

bool acp_scan_path_at(const char *text, size_t n, size_t at, const char *root, char *buf,
                      size_t cap)
{
    finder *f = calloc(1, sizeof *f);
    if (!f) {
        snprintf(buf, cap, "%s", root);
        return false;
    }
    f->s = (scanner){(const unsigned char *)text, (const unsigned char *)text + n, 0,
                     ACP_SCAN_MAX_DEPTH, false};
    f->base = f->s.p;
    f->at = at;
    skip_ws(&f->s);
    find_in(f);
    size_t o = (size_t)snprintf(buf, cap, "%s", root);
    for (int i = 0; i < f->nseg && o < cap; i++) {
        const seg *g = &f->segs[i];
        int k = !g->key ? snprintf(buf + o, cap - o, "[%zu]", g->index)
                : plain_key(g->key, g->n)
                    ? snprintf(buf + o, cap - o, ".%.*s", (int)(g->n - 2), (const char *)g->key + 1)
                    : snprintf(buf + o, cap - o, "[%.*s]", (int)g->n, (const char *)g->key);
        if (k < 0) break;
        o += (size_t)k;
    }
    bool key = f->on_key;
    free(f);
    return key;
}
