/* SPDX-License-Identifier: Apache-2.0 */
/* A scanner for well-formed JSON text, shared by the benchmark clients (driver.c, remote.c):
 * it finds top-level members without building a tree, so a client's cost per message is a few
 * comparisons. It assumes the input is well formed (the agents under test write it) and key
 * names without escapes. Not part of libacp. */
#ifndef ACP_BENCH_JSCAN_H
#define ACP_BENCH_JSCAN_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *p;
    size_t n;
} span;

static inline const char *skip_ws(const char *p, const char *e)
{
    while (p < e && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')) p++;
    return p;
}

static inline const char *skip_str(const char *p, const char *e) /* p at the opening quote */
{
    for (p++; p < e; p++) {
        if (*p == '\\')
            p++;
        else if (*p == '"')
            return p + 1;
    }
    return e;
}

static inline const char *skip_val(const char *p, const char *e)
{
    if (p >= e) return e;
    if (*p == '"') return skip_str(p, e);
    if (*p == '{' || *p == '[') {
        int depth = 0;
        for (; p < e; p++) {
            if (*p == '"') {
                p = skip_str(p, e) - 1;
            } else if (*p == '{' || *p == '[') {
                depth++;
            } else if (*p == '}' || *p == ']') {
                if (--depth == 0) return p + 1;
            }
        }
        return e;
    }
    while (p < e && *p != ',' && *p != '}' && *p != ']' && *p != ' ') p++;
    return p;
}

/* The value text of member `key` of the object `obj` (no escapes in key names assumed). */
static inline bool member(span obj, const char *key, span *val)
{
    const char *p = obj.p, *e = obj.p + obj.n;
    size_t kl = strlen(key);
    p = skip_ws(p, e);
    if (p >= e || *p != '{') return false;
    p++;
    for (;;) {
        p = skip_ws(p, e);
        if (p >= e || *p != '"') return false;
        const char *k = p + 1, *ke = skip_str(p, e) - 1;
        p = skip_ws(ke + 1, e);
        if (p >= e || *p != ':') return false;
        p = skip_ws(p + 1, e);
        const char *v = p;
        p = skip_val(p, e);
        if ((size_t)(ke - k) == kl && memcmp(k, key, kl) == 0) {
            val->p = v;
            val->n = (size_t)(p - v);
            return true;
        }
        p = skip_ws(p, e);
        if (p >= e || *p != ',') return false;
        p++;
    }
}

static inline bool span_eq(span s, const char *lit)
{
    return s.n == strlen(lit) && memcmp(s.p, lit, s.n) == 0;
}

static inline long span_int(span s)
{
    char tmp[32];
    if (s.n == 0 || s.n >= sizeof tmp) return -1;
    memcpy(tmp, s.p, s.n);
    tmp[s.n] = 0;
    return strtol(tmp, NULL, 10);
}

#endif
