/* SPDX-License-Identifier: Apache-2.0 */
/* session/list cursors: opaque to clients, identical across backends and processes, and
 * decoded strictly so that a forged or damaged cursor is an error rather than a wrong page. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_impl.h"

#define PREFIX     "v1|"
#define PREFIX_LEN 3
/* Cursors come from clients: bound the work and memory a hostile one can cause. */
#define CURSOR_MAX 4096

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static int b64val(unsigned char c)
{
    const char *p = c ? strchr(b64, c) : NULL;
    return p ? (int)(p - b64) : -1;
}

int acp_store_cursor_encode(const char *updated_at, const char *id, char **out)
{
    size_t tl = strlen(updated_at), il = strlen(id);
    char len[24];
    int ll = snprintf(len, sizeof len, "%zu|", il);
    size_t n = PREFIX_LEN + tl + 1 + (size_t)ll + il;
    unsigned char *raw = malloc(n);
    char *enc = malloc((n + 2) / 3 * 4 + 1);
    if (!raw || !enc) {
        free(raw);
        free(enc);
        return ACP_ENOMEM;
    }
    memcpy(raw, PREFIX, PREFIX_LEN);
    memcpy(raw + PREFIX_LEN, updated_at, tl);
    raw[PREFIX_LEN + tl] = '|';
    memcpy(raw + PREFIX_LEN + tl + 1, len, (size_t)ll);
    memcpy(raw + PREFIX_LEN + tl + 1 + ll, id, il);
    char *o = enc;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)raw[i] << 16;
        if (i + 1 < n) v |= (unsigned)raw[i + 1] << 8;
        if (i + 2 < n) v |= raw[i + 2];
        *o++ = b64[v >> 18 & 63];
        *o++ = b64[v >> 12 & 63];
        if (i + 1 < n) *o++ = b64[v >> 6 & 63];
        if (i + 2 < n) *o++ = b64[v & 63];
    }
    *o = '\0';
    free(raw);
    *out = enc;
    return 0;
}

/* Decodes unpadded base64url; rejects bad characters, impossible lengths and non-zero
 * leftover bits, so each byte string has exactly one accepted encoding. */
static int b64_decode(const char *s, size_t len, unsigned char *out, size_t *outlen)
{
    if (len % 4 == 1) return ACP_EINVAL;
    size_t o = 0;
    unsigned acc = 0;
    int bits = 0;
    for (size_t i = 0; i < len; i++) {
        int v = b64val((unsigned char)s[i]);
        if (v < 0) return ACP_EINVAL;
        acc = (acc << 6 | (unsigned)v) & 0xffffff;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (unsigned char)(acc >> bits);
        }
    }
    if (acc & ((1u << bits) - 1)) return ACP_EINVAL;
    *outlen = o;
    return 0;
}

int acp_store_cursor_decode(const char *cursor, char updated_at[ACP_STORE_TIME_LEN + 1], char **id)
{
    *id = NULL;
    size_t len = cursor ? strnlen(cursor, CURSOR_MAX + 1) : 0;
    if (len == 0 || len > CURSOR_MAX) return ACP_EINVAL;
    unsigned char raw[CURSOR_MAX];
    size_t n;
    if (b64_decode(cursor, len, raw, &n)) return ACP_EINVAL;
    size_t head = PREFIX_LEN + ACP_STORE_TIME_LEN + 1;
    if (n <= head || memcmp(raw, PREFIX, PREFIX_LEN) != 0 || raw[head - 1] != '|')
        return ACP_EINVAL;
    memcpy(updated_at, raw + PREFIX_LEN, ACP_STORE_TIME_LEN);
    updated_at[ACP_STORE_TIME_LEN] = '\0';
    if (!acp_store_time_valid(updated_at)) return ACP_EINVAL;
    /* The id's length, in canonical decimal: a truncated cursor no longer matches it. */
    size_t il = 0, p = head;
    if (p < n && raw[p] == '0') return ACP_EINVAL;
    for (; p < n && raw[p] >= '0' && raw[p] <= '9' && p - head < 5; p++)
        il = il * 10 + (size_t)(raw[p] - '0');
    if (p == head || p >= n || raw[p] != '|' || il == 0 || il != n - p - 1) return ACP_EINVAL;
    head = p + 1;
    if (memchr(raw + head, '\0', n - head)) return ACP_EINVAL;
    char *s = malloc(n - head + 1);
    if (!s) return ACP_ENOMEM;
    memcpy(s, raw + head, n - head);
    s[n - head] = '\0';
    *id = s;
    return 0;
}
