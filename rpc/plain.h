/* SPDX-License-Identifier: Apache-2.0 */
/* The bytes a JSON string holds as themselves: 0x20 to 0x7f but the quote (0x22) and the
 * backslash (0x5c). Runs of them are most of every message, read by the scanner and written
 * by the writer alike, so finding a run's end is shared here and done a word at a time. */
#ifndef ACP_RPC_PLAIN_H
#define ACP_RPC_PLAIN_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* 1 for a plain byte: a table, as the tail of a run is read a byte at a time. */
static const unsigned char acp_json_plain_tab[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
};

static inline bool acp_json_plain(unsigned char c)
{
    return acp_json_plain_tab[c];
}

/* The end of the run of plain bytes at p (at most end): eight at a time while no byte of the
 * word can be special (below 0x20, a quote, a backslash, or 0x80 and up: the classic has-zero
 * / has-less bit tricks, which never miss one and at worst flag a false one above a true one),
 * then byte by byte. On a little-endian machine the lowest flagged byte is the first special
 * one (a false flag only comes from a borrow out of a true one below it), so the word that
 * holds the closing quote jumps straight to it: most strings are keys and short values,
 * shorter than a word, and a byte loop over them was most of the work. Locals, because through
 * a struct every byte read could alias its pointer and force a reload. */
static inline const unsigned char *acp_json_plain_run(const unsigned char *p,
                                                      const unsigned char *end)
{
    const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
    while (end - p >= 8) {
        uint64_t x, q, b, m;
        memcpy(&x, p, 8);
        q = x ^ (ones * '"');
        b = x ^ (ones * '\\');
        m = (((x - ones * 0x20) & ~x) | ((q - ones) & ~q) | ((b - ones) & ~b) | x) & highs;
        if (m) {
#if defined(__GNUC__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            return p + (__builtin_ctzll(m) >> 3);
#else
            break;
#endif
        }
        p += 8;
    }
    while (p < end && acp_json_plain(*p)) p++;
    return p;
}

#endif
