/* SPDX-License-Identifier: Apache-2.0 */
#include "acp/sse.h"

#include <stdlib.h>
#include <string.h>

#include "acp/error.h"
#include "acp/num.h"
#include "mcp/internal.h"

void acp_sse_init(acp_sse *p, int (*on_event)(void *, const char *, const char *, size_t),
                  void *user)
{
    memset(p, 0, sizeof *p);
    p->retry_ms = -1;
    p->on_event = on_event;
    p->user = user;
}

static size_t limit(const acp_sse *p)
{
    return p->max ? p->max : (size_t)16 << 20;
}

static int dispatch(acp_sse *p)
{
    int rc = 0;
    if (p->data.len > 0) {
        p->data.len--; /* the LF after the last data line is not part of the data */
        const char *ev = p->event.len ? acp_buf_cstr(&p->event) : "message";
        const char *data = acp_buf_cstr(&p->data);
        if (!ev || !data) return ACP_ENOMEM;
        rc = p->on_event(p->user, ev, data, p->data.len);
    }
    p->data.len = 0;
    p->event.len = 0;
    acp_buf_shrink(&p->data, ACP_BUF_KEEP); /* a stream lives long; one huge event passes */
    return rc;
}

/* One complete line, without its terminator. */
static int field(acp_sse *p, const char *s, size_t n)
{
    if (!p->started) { /* a UTF-8 BOM may open the stream */
        p->started = true;
        if (n >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0) s += 3, n -= 3;
    }
    if (n == 0) return dispatch(p);
    if (s[0] == ':') return 0;
    const char *colon = memchr(s, ':', n);
    size_t nlen = colon ? (size_t)(colon - s) : n;
    const char *v = colon ? colon + 1 : s + n;
    size_t vlen = (size_t)(s + n - v);
    if (vlen > 0 && v[0] == ' ') v++, vlen--;

    if (nlen == 4 && memcmp(s, "data", 4) == 0) {
        if (p->data.len + vlen + 1 > limit(p)) return ACP_ETOOBIG;
        if (acp_buf_append(&p->data, v, vlen) || acp_buf_putc(&p->data, '\n')) return ACP_ENOMEM;
    } else if (nlen == 5 && memcmp(s, "event", 5) == 0) {
        p->event.len = 0;
        if (acp_buf_append(&p->event, v, vlen)) return ACP_ENOMEM;
    } else if (nlen == 2 && memcmp(s, "id", 2) == 0) {
        if (memchr(v, '\0', vlen)) return 0; /* the standard ignores such ids */
        char *id = mcp_memdup(v, vlen);
        if (!id) return ACP_ENOMEM;
        free(p->last_id);
        p->last_id = id;
    } else if (nlen == 5 && memcmp(s, "retry", 5) == 0) {
        /* ASCII digits only, else the field is ignored (the standard's rule); a delay beyond
         * ACP_SSE_RETRY_MAX_MS is cut to it: a server must not park a call for days. */
        char num[24];
        uint64_t ms = ACP_SSE_RETRY_MAX_MS;
        for (size_t i = 0; i < vlen; i++)
            if (v[i] < '0' || v[i] > '9') return 0;
        if (vlen == 0) return 0;
        if (vlen < sizeof num) {
            memcpy(num, v, vlen);
            num[vlen] = '\0';
            if (acp_parse_u64(num, 0, ACP_SSE_RETRY_MAX_MS, &ms)) ms = ACP_SSE_RETRY_MAX_MS;
        }
        p->retry_ms = (long)ms;
    }
    return 0;
}

static int feed(acp_sse *p, const char *buf, size_t n)
{
    size_t i = 0;
    while (i < n) {
        if (p->after_cr && buf[i] == '\n') {
            p->after_cr = false;
            i++;
            continue;
        }
        p->after_cr = false;
        /* The line's end: the first LF or CR, found with memchr (a model's token stream is
         * hundreds of short lines a millisecond; a byte loop here was most of the parse). */
        const char *lf = memchr(buf + i, '\n', n - i);
        size_t j = lf ? (size_t)(lf - buf) : n;
        const char *cr = memchr(buf + i, '\r', j - i);
        if (cr) j = (size_t)(cr - buf);
        if (j == n) { /* no terminator yet: keep the piece */
            if (p->line.len + (n - i) > limit(p)) return ACP_ETOOBIG;
            return acp_buf_append(&p->line, buf + i, n - i) ? ACP_ENOMEM : 0;
        }
        int rc;
        if (p->line.len) {
            if (p->line.len + (j - i) > limit(p)) return ACP_ETOOBIG;
            if (acp_buf_append(&p->line, buf + i, j - i)) return ACP_ENOMEM;
            rc = field(p, p->line.data, p->line.len);
            p->line.len = 0;
            acp_buf_shrink(&p->line, ACP_BUF_KEEP);
        } else {
            rc = field(p, buf + i, j - i);
        }
        if (rc) return rc;
        p->after_cr = buf[j] == '\r';
        i = j + 1;
    }
    return 0;
}

int acp_sse_feed(acp_sse *p, const char *buf, size_t n)
{
    unsigned mark = acp_error_mark();
    int rc = feed(p, buf, n);
    if (rc == ACP_ETOOBIG)
        return acp_error_set(rc, "server-sent events: a line or event over %zu bytes", limit(p));
    return acp_error_since(mark, rc);
}

void acp_sse_restart(acp_sse *p)
{
    p->line.len = 0;
    p->data.len = 0;
    p->event.len = 0;
    acp_buf_shrink(&p->line, ACP_BUF_KEEP);
    acp_buf_shrink(&p->data, ACP_BUF_KEEP);
    p->after_cr = false;
    p->started = false;
}

void acp_sse_free(acp_sse *p)
{
    acp_buf_free(&p->line);
    acp_buf_free(&p->data);
    acp_buf_free(&p->event);
    free(p->last_id);
    p->last_id = NULL;
}
