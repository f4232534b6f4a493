/* SPDX-License-Identifier: Apache-2.0 */
/* UTF-8 validation shared by the writer and the scanner (one definition of "valid"). */
#ifndef ACP_RPC_UTF8_H
#define ACP_RPC_UTF8_H

#include <stddef.h>

/* Length of the valid UTF-8 sequence starting at s (whose first byte is >= 0x80), or 0 when
 * it is invalid: truncated, overlong, a surrogate, or above U+10FFFF (RFC 3629). */
static inline size_t acp_utf8_seq(const unsigned char *s, size_t avail)
{
    unsigned char c = s[0];
    size_t n;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else {
        return 0;
    }
    if (avail < n) return 0;
    if (s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < n; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    return n;
}

#endif
