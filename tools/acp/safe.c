/* SPDX-License-Identifier: Apache-2.0 */
/* Agent text made harmless for a terminal: the rules are in safe.h. One scan, runs of plain
 * bytes written as they are, so a long reply costs one pass and a few writes. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "acp/error.h"
#include "tools/acp/safe.h"

/* Length of the well-formed UTF-8 sequence at s[0..n) (RFC 3629: no overlongs, surrogates
 * or code points past U+10FFFF), 0 when there is none. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF; /* the second byte's range */
    if (c >= 0xC2 && c <= 0xDF)
        len = 2;
    else if (c >= 0xE0 && c <= 0xEF)
        len = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    else if (c >= 0xF0 && c <= 0xF4)
        len = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    else
        return 0;
    if (n < len || s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < len; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    return len;
}

static uint32_t code_point(const unsigned char *s, size_t len)
{
    uint32_t cp = s[0] & (0x7F >> len);
    for (size_t i = 1; i < len; i++) cp = cp << 6 | (s[i] & 0x3F);
    return cp;
}

static bool shown_escaped(uint32_t cp)
{
    return (cp >= 0x80 && cp <= 0x9F) || (cp >= 0x202A && cp <= 0x202E) ||
           (cp >= 0x2066 && cp <= 0x2069);
}

typedef int (*sink)(void *to, const char *s, size_t n);

static int scan(const char *text, size_t n, safe_mode mode, sink put, void *to)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t i = 0, plain = 0; /* s[plain..i) is waiting to be written as it is */
    int rc = 0;
    while (i < n && !rc) {
        unsigned char c = s[i];
        size_t len = 1;
        char esc[12];
        if ((c >= 0x20 && c < 0x7F) || c == '\t' || (c == '\n' && mode == SAFE_TEXT)) {
            i++;
            continue;
        }
        if (c == '\r' && mode == SAFE_TEXT && i + 1 < n && s[i + 1] == '\n') {
            i += 2; /* CRLF: the CR only returns to a column the LF leaves anyway */
            continue;
        }
        if (c >= 0x80 && (len = utf8_len(s + i, n - i)) > 0) {
            uint32_t cp = code_point(s + i, len);
            if (!shown_escaped(cp)) {
                i += len;
                continue;
            }
            snprintf(esc, sizeof esc, "\\u%04x", (unsigned)cp);
        } else {
            len = 1;
            if (c == '\n' || c == '\r')
                snprintf(esc, sizeof esc, "\\%c", c == '\n' ? 'n' : 'r');
            else
                snprintf(esc, sizeof esc, "\\x%02x", c);
        }
        if (i > plain) rc = put(to, text + plain, i - plain);
        if (!rc) rc = put(to, esc, strlen(esc));
        i += len;
        plain = i;
    }
    if (!rc && i > plain) rc = put(to, text + plain, i - plain);
    return rc;
}

static int to_buf(void *to, const char *s, size_t n)
{
    return acp_buf_append(to, s, n);
}

static int to_file(void *to, const char *s, size_t n)
{
    fwrite(s, 1, n, to);
    return 0;
}

int safe_append(acp_buf *b, const char *s, size_t n, safe_mode mode)
{
    return scan(s, n, mode, to_buf, b);
}

void safe_write(FILE *f, const char *s, size_t n, safe_mode mode)
{
    scan(s, n, mode, to_file, f);
}

static acp_buf slots[SAFE_SLOTS];
static size_t next_slot;

const char *safe_line(const char *s)
{
    if (!s) return NULL;
    acp_buf *b = &slots[next_slot];
    next_slot = (next_slot + 1) % SAFE_SLOTS;
    b->len = 0;
    if (safe_append(b, s, strlen(s), SAFE_LINE) || !acp_buf_cstr(b)) return "?";
    return b->data;
}

void safe_free(void)
{
    for (size_t i = 0; i < SAFE_SLOTS; i++) acp_buf_free(&slots[i]);
}
