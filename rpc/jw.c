/* SPDX-License-Identifier: Apache-2.0 */
/* The streaming JSON writer: what every hot output path (updates, replay envelopes) uses
 * instead of building jansson trees. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "acp/error.h"
#include "acp/json.h"
#include "rpc/lasterr.h"
#include "rpc/plain.h"
#include "rpc/utf8.h"

#define MAX_DEPTH 64

/* 0: copy as is; 1: escape; 2: start of a multi-byte UTF-8 sequence (validate). */
static const unsigned char char_class[256] = {
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
};

int acp_json_escape(acp_buf *b, const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    /* Worst case is 6 bytes per input byte (\u00XX); reserve the common case up front. */
    if (acp_buf_reserve(b, n + 2)) return ACP_ENOMEM; /* the buffer said so */
    size_t start = b->len;
    b->data[b->len++] = '"';
    size_t i = 0;
    while (i < n) {
        size_t run = (size_t)(acp_json_plain_run(s + i, s + n) - s);
        if (run > i) {
            if (acp_buf_append(b, s + i, run - i)) goto nomem;
            i = run;
            if (i == n) break;
        }
        unsigned char c = s[i];
        if (char_class[c] == 2) {
            size_t len = acp_utf8_seq(s + i, n - i);
            if (!len) {
                b->len = start;
                return acp_error_set(ACP_EINVAL, "invalid UTF-8 at byte %zu of a string", i);
            }
            if (acp_buf_append(b, s + i, len)) goto nomem;
            i += len;
            continue;
        }
        char esc[7];
        size_t elen = 2;
        esc[0] = '\\';
        switch (c) {
        case '"':
            esc[1] = '"';
            break;
        case '\\':
            esc[1] = '\\';
            break;
        case '\b':
            esc[1] = 'b';
            break;
        case '\f':
            esc[1] = 'f';
            break;
        case '\n':
            esc[1] = 'n';
            break;
        case '\r':
            esc[1] = 'r';
            break;
        case '\t':
            esc[1] = 't';
            break;
        default:
            snprintf(esc, sizeof esc, "\\u%04x", c);
            elen = 6;
        }
        if (acp_buf_append(b, esc, elen)) goto nomem;
        i++;
    }
    if (acp_buf_putc(b, '"')) goto nomem;
    return 0;
nomem:
    b->len = start;
    return ACP_ENOMEM; /* the buffer said so */
}

void acp_jw_init(acp_jw *w, acp_buf *out)
{
    memset(w, 0, sizeof *w);
    w->out = out;
}

int acp_jw_status(const acp_jw *w)
{
    return w->status;
}

/* The first failure sticks, and says what it was in the last error: acp_jw_status() returns
 * the status later, when the sentence is still the writer's unless another call failed since. */
static void fail(acp_jw *w, int status, const char *why)
{
    if (w->status) return;
    w->status = status;
    acp_error_set(status, "JSON writer: %s", why);
}

/* Writes the separator a new value needs at the current depth. False if the writer failed. */
static bool begin_value(acp_jw *w)
{
    if (w->status) return false;
    if (w->after_key) {
        w->after_key = false;
        return true;
    }
    uint64_t bit = 1ull << w->depth;
    if (w->has_item & bit) {
        if (acp_buf_putc(w->out, ',')) {
            fail(w, ACP_ENOMEM, "out of memory");
            return false;
        }
    }
    w->has_item |= bit;
    return true;
}

static void put(acp_jw *w, const char *s, size_t n)
{
    if (acp_buf_append(w->out, s, n)) fail(w, ACP_ENOMEM, "out of memory");
}

static void open_container(acp_jw *w, char c)
{
    if (!begin_value(w)) return;
    if (w->depth + 1 >= MAX_DEPTH) {
        fail(w, ACP_EINVAL, "nested deeper than 64 levels");
        return;
    }
    put(w, &c, 1);
    w->depth++;
    w->has_item &= ~(1ull << w->depth);
}

static void close_container(acp_jw *w, char c)
{
    if (w->status) return;
    if (w->depth == 0 || w->after_key) {
        fail(w, ACP_EINVAL, "a container closed that is not open, or after a key");
        return;
    }
    w->depth--;
    put(w, &c, 1);
}

void acp_jw_obj(acp_jw *w)
{
    open_container(w, '{');
}

void acp_jw_obj_end(acp_jw *w)
{
    close_container(w, '}');
}

void acp_jw_arr(acp_jw *w)
{
    open_container(w, '[');
}

void acp_jw_arr_end(acp_jw *w)
{
    close_container(w, ']');
}

void acp_jw_key(acp_jw *w, const char *key)
{
    if (!begin_value(w)) return;
    int rc = acp_json_escape(w->out, key, strlen(key));
    if (rc) {
        fail(w, rc, acp_error_last()->message);
        return;
    }
    put(w, ":", 1);
    w->after_key = true;
}

void acp_jw_strn(acp_jw *w, const char *s, size_t n)
{
    if (!begin_value(w)) return;
    int rc = acp_json_escape(w->out, s, n);
    if (rc) fail(w, rc, acp_error_last()->message);
}

void acp_jw_str(acp_jw *w, const char *s)
{
    acp_jw_strn(w, s, strlen(s));
}

void acp_jw_int(acp_jw *w, int64_t v)
{
    if (!begin_value(w)) return;
    char tmp[24];
    int n = snprintf(tmp, sizeof tmp, "%lld", (long long)v);
    put(w, tmp, (size_t)n);
}

void acp_jw_uint(acp_jw *w, uint64_t v)
{
    if (!begin_value(w)) return;
    char tmp[24];
    int n = snprintf(tmp, sizeof tmp, "%llu", (unsigned long long)v);
    put(w, tmp, (size_t)n);
}

void acp_jw_real(acp_jw *w, double v)
{
    if (!isfinite(v)) {
        fail(w, ACP_EINVAL, "a number that is not finite");
        return;
    }
    if (!begin_value(w)) return;
    char tmp[32];
    int n = snprintf(tmp, sizeof tmp, "%.17g", v);
    put(w, tmp, (size_t)n);
}

void acp_jw_bool(acp_jw *w, bool v)
{
    if (!begin_value(w)) return;
    put(w, v ? "true" : "false", v ? 4 : 5);
}

void acp_jw_null(acp_jw *w)
{
    if (!begin_value(w)) return;
    put(w, "null", 4);
}

void acp_jw_raw(acp_jw *w, const char *json, size_t n)
{
    if (!begin_value(w)) return;
    put(w, json, n);
}

static int dump_cb(const char *buf, size_t size, void *data)
{
    return acp_buf_append(data, buf, size) ? -1 : 0;
}

void acp_jw_json(acp_jw *w, const json_t *v)
{
    if (!v) {
        acp_jw_null(w);
        return;
    }
    if (!begin_value(w)) return;
    if (json_dump_callback(v, dump_cb, w->out, JSON_COMPACT | JSON_ENCODE_ANY))
        fail(w, ACP_ENOMEM, "out of memory");
}

void acp_jw_kstr(acp_jw *w, const char *key, const char *s)
{
    acp_jw_key(w, key);
    acp_jw_str(w, s);
}

void acp_jw_kint(acp_jw *w, const char *key, int64_t v)
{
    acp_jw_key(w, key);
    acp_jw_int(w, v);
}

void acp_jw_kbool(acp_jw *w, const char *key, bool v)
{
    acp_jw_key(w, key);
    acp_jw_bool(w, v);
}
