/* SPDX-License-Identifier: Apache-2.0 */
/* acp_buf: the byte buffer every output path writes into. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp/error.h"
#include "acp/json.h"
#include "rpc/lasterr.h"

int acp_buf_reserve(acp_buf *b, size_t extra)
{
    if (b->cap - b->len >= extra) return 0;
    if (extra > SIZE_MAX / 2 - b->len)
        return acp_error_set(ACP_ENOMEM, "a buffer cannot grow by %zu bytes", extra);
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->len < extra) cap *= 2;
    char *p = realloc(b->data, cap);
    if (!p) return acp_error_set(ACP_ENOMEM, "out of memory growing a buffer to %zu bytes", cap);
    b->data = p;
    b->cap = cap;
    return 0;
}

int acp_buf_append(acp_buf *b, const void *p, size_t n)
{
    if (n == 0) return 0;
    if (acp_buf_reserve(b, n)) return ACP_ENOMEM;
    memcpy(b->data + b->len, p, n);
    b->len += n;
    return 0;
}

int acp_buf_putc(acp_buf *b, char c)
{
    if (b->len == b->cap && acp_buf_reserve(b, 1)) return ACP_ENOMEM;
    b->data[b->len++] = c;
    return 0;
}

int acp_buf_printf(acp_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) return acp_error_set(ACP_EINVAL, "acp_buf_printf: a bad format '%s'", fmt);
    if ((size_t)n < sizeof small) return acp_buf_append(b, small, (size_t)n);
    if (acp_buf_reserve(b, (size_t)n + 1)) return ACP_ENOMEM;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return 0;
}

const char *acp_buf_cstr(acp_buf *b)
{
    if (acp_buf_reserve(b, 1)) return NULL;
    b->data[b->len] = '\0';
    return b->data;
}

char *acp_buf_take(acp_buf *b, size_t *len)
{
    char *p = b->data;
    if (len) *len = b->len;
    b->data = NULL;
    b->len = b->cap = 0;
    return p;
}

void acp_buf_shrink(acp_buf *b, size_t keep)
{
    if (b->cap <= keep) return;
    if (b->len == 0) {
        acp_buf_free(b);
        return;
    }
    char *p = realloc(b->data, b->len);
    if (!p) return; /* the bigger block stays: still correct */
    b->data = p;
    b->cap = b->len;
}

void acp_buf_free(acp_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}
