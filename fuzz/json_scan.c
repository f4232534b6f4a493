/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target over the hand-written JSON scanner (rpc/scan.c) that vets untrusted text
 * before it is routed by spans, and the string escaper, against jansson as the reference:
 *
 *  - acp_json_validate accepts exactly what jansson accepts, except where jansson is narrower
 *    by design (integers beyond int64, reals beyond double, lone surrogate escapes) or the
 *    nesting is deeper than the limit;
 *  - acp_json_kind names the value's type; strings decode (acp_json_strdup, acp_json_str_eq)
 *    to jansson's string;
 *  - in an object without duplicate keys, acp_json_member finds every key, and the value text
 *    it gives parses to the same value;
 *  - acp_json_item walks an array's items, each parsing to jansson's item;
 *  - acp_json_members (which validates as it walks) accepts exactly the objects
 *    acp_json_validate accepts, and finds what acp_json_member finds;
 *  - acp_json_escape of the raw input succeeds exactly when it is UTF-8, and the literal it
 *    writes is valid and decodes back to the input. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "acp/json.h"

#define DEPTH 64

static int depth(const json_t *v)
{
    int d = 0;
    if (json_is_object(v)) {
        const char *k;
        json_t *m;
        json_object_foreach((json_t *)v, k, m)
        {
            int e = depth(m);
            if (e > d) d = e;
        }
        return d + 1;
    }
    if (json_is_array(v)) {
        size_t i;
        json_t *m;
        json_array_foreach(v, i, m)
        {
            int e = depth(m);
            if (e > d) d = e;
        }
        return d + 1;
    }
    return 0;
}

static char kind_of(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return 'o';
    case JSON_ARRAY:
        return 'a';
    case JSON_STRING:
        return 's';
    case JSON_INTEGER:
    case JSON_REAL:
        return 'n';
    case JSON_TRUE:
        return 't';
    case JSON_FALSE:
        return 'f';
    default:
        return 'z';
    }
}

/* Leading/trailing whitespace off, so the span is the value's own text. */
static acp_span trim(const char *s, size_t n)
{
    while (n && strchr(" \t\r\n", s[0]) && s[0]) s++, n--;
    while (n && strchr(" \t\r\n", s[n - 1]) && s[n - 1]) n--;
    return (acp_span){s, n};
}

static void check_value(acp_span t, const json_t *v)
{
    if (acp_json_kind(t) != kind_of(v)) abort();
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        size_t n = json_string_length(v);
        char *d = acp_json_strdup(t);
        if (memchr(s, '\0', n)) { /* an escaped NUL: strdup refuses it */
            if (d) abort();
        } else {
            if (!d || strcmp(d, s) || !acp_json_str_eq(t, s)) abort();
        }
        free(d);
    }
    if (json_is_object(v)) {
        const char *k;
        json_t *m;
        json_object_foreach((json_t *)v, k, m)
        {
            acp_span val;
            if (!acp_json_member(t, k, &val)) abort();
            json_t *again = json_loadb(val.p, val.n, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
            if (!again || !json_equal(again, m)) abort();
            json_decref(again);
        }
        acp_span none;
        if (acp_json_member(t, "\x01 not a key here", &none) &&
            !json_object_get(v, "\x01 not a key here"))
            abort();
    }
    if (json_is_array(v)) {
        size_t pos = 0, i = 0;
        acp_span item;
        while (acp_json_item(t, &pos, &item)) {
            json_t *again = json_loadb(item.p, item.n, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
            if (!again || !json_equal(again, json_array_get(v, i++))) abort();
            json_decref(again);
        }
        if (i != json_array_size(v)) abort();
    }
}

/* acp_json_members on untrusted text: valid exactly when the validator says it is an object,
 * and then the same members acp_json_member finds. */
static void check_members(const char *s, size_t n)
{
    static const char *const keys[] = {"a", "choices", "delta", "", "id"};
    acp_span t = trim(s, n), vals[5], one;
    int found = acp_json_members((acp_span){s, n}, keys, 5, vals);
    bool object = !acp_json_validate(s, n, 256) && acp_json_kind(t) == 'o';
    if ((found >= 0) != object) abort();
    if (found < 0) return;
    int count = 0;
    for (int i = 0; i < 5; i++) {
        bool has = acp_json_member(t, keys[i], &one);
        if (has != (vals[i].p != NULL) || (has && (one.p != vals[i].p || one.n != vals[i].n)))
            abort();
        count += has;
    }
    if (count != found) abort();
}

/* jansson refusals that are not syntax errors. */
static bool narrower(const json_error_t *e)
{
    return strstr(e->text, "too big") || strstr(e->text, "overflow") ||
           strstr(e->text, "Unicode") || strstr(e->text, "surrogate") || strstr(e->text, "depth") ||
           strstr(e->text, "NUL");
}

static void check_escape(const char *s, size_t n)
{
    json_t *ref = json_stringn(s, n); /* NULL exactly when s is not UTF-8 */
    acp_buf b = {0};
    int rc = acp_json_escape(&b, s, n);
    if ((rc == 0) != (ref != NULL)) abort();
    if (rc == 0) {
        if (acp_json_validate(b.data, b.len, 1)) abort();
        json_t *back = json_loadb(b.data, b.len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
        if (!back || !json_equal(back, ref)) abort();
        json_decref(back);
    }
    json_decref(ref);
    acp_buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    int ours = acp_json_validate(s, size, DEPTH);
    /* A raw NUL byte is never valid JSON text; jansson takes it as the end of the input. */
    check_members(s, size);
    if (memchr(s, '\0', size)) {
        if (ours == 0) abort();
        check_escape(s, size);
        return 0;
    }
    json_error_t e;
    json_t *ref =
        json_loadb(s, size, JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES, &e);
    bool dup = false;
    if (!ref) { /* a duplicate key is valid JSON; compare with jansson's default then */
        dup = strstr(e.text, "duplicate") != NULL;
        if (dup) ref = json_loadb(s, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
    }
    if (ref) {
        bool deep = depth(ref) > DEPTH;
        if ((ours == 0) == deep) abort(); /* both accept unless too deep for us */
        if (!deep && !dup) check_value(trim(s, size), ref);
        json_decref(ref);
    } else if (ours == 0 && !narrower(&e)) {
        abort(); /* we accept what jansson calls a syntax error */
    }
    check_escape(s, size);
    return 0;
}
