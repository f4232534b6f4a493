/* SPDX-License-Identifier: Apache-2.0 */
/* Checked numbers from untrusted text. Here in rpc/ because it is the layer every other one
 * (store/ included, which sits on rpc/ alone) and every program links; it does no I/O. */
#include <errno.h>
#include <locale.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp/error.h"
#include "acp/num.h"
#include "rpc/lasterr.h"

#define QUOTE_MAX 24 /* bytes of the text quoted in a sentence */

static bool digit(char c)
{
    return c >= '0' && c <= '9';
}

/* s as a sentence quotes it: printable ASCII kept, other bytes as \xNN, cut at QUOTE_MAX. */
static void quote(char *q, size_t qn, const char *s)
{
    size_t k = 0, i = 0;
    for (; s[i] && i < QUOTE_MAX && k + 5 < qn; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f)
            q[k++] = (char)c;
        else
            k += (size_t)snprintf(q + k, qn - k, "\\x%02x", c);
    }
    if (s[i] && k + 4 < qn) k += (size_t)snprintf(q + k, qn - k, "...");
    q[k] = '\0';
}

/* ACP_EINVAL, with the sentence for s, "'s' <what>", as the last error. */
static int refuse(const char *s, const char *what)
{
    if (!s || !*s) return acp_error_set(ACP_EINVAL, "no number given");
    char q[QUOTE_MAX * 4 + 8];
    quote(q, sizeof q, s);
    return acp_error_set(ACP_EINVAL, "'%s' %s", q, what);
}

/* The digits of s, all of it: 0 with *v, 1 when s is not only digits, 2 when they overflow. */
static int magnitude(const char *s, uint64_t *v)
{
    if (!digit(*s)) return 1;
    uint64_t x = 0;
    bool over = false;
    for (; *s; s++) {
        if (!digit(*s)) return 1; /* junk is said before size: "1e99" is not a number at all */
        unsigned d = (unsigned)(*s - '0');
        if (x > (UINT64_MAX - d) / 10)
            over = true;
        else
            x = x * 10 + d;
    }
    if (over) return 2;
    *v = x;
    return 0;
}

int acp_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    uint64_t v = 0;
    int m = s ? magnitude(s[0] == '-' ? s + 1 : s, &v) : 1;
    if (m == 1) return refuse(s, "is not a whole number");
    if (m == 0 && s[0] != '-' && v >= min && v <= max) {
        *out = v;
        return 0;
    }
    char what[80];
    snprintf(what, sizeof what, "is out of range: %llu to %llu", (unsigned long long)min,
             (unsigned long long)max);
    return refuse(s, what);
}

int acp_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out)
{
    uint64_t mag = 0;
    bool neg = s && s[0] == '-';
    int m = s ? magnitude(s + neg, &mag) : 1;
    if (m == 1) return refuse(s, "is not a whole number");
    bool fits = m == 0 && (neg ? mag <= (uint64_t)INT64_MAX + 1 : mag <= (uint64_t)INT64_MAX);
    if (fits) {
        /* -(2^63) is INT64_MIN: negate in unsigned arithmetic, where it cannot overflow. */
        int64_t v = neg ? (int64_t)(0 - mag) : (int64_t)mag;
        if (v >= min && v <= max) {
            *out = v;
            return 0;
        }
    }
    char what[80];
    snprintf(what, sizeof what, "is out of range: %lld to %lld", (long long)min, (long long)max);
    return refuse(s, what);
}

/* The grammar of acp_parse_double, checked before strtod sees the text (which would take
 * "inf", "nan", "0x1p3", leading spaces, and the locale's decimal point). */
static bool decimal(const char *s)
{
    if (*s == '-') s++;
    size_t before = 0, after = 0;
    while (digit(*s)) s++, before++;
    if (*s == '.')
        for (s++; digit(*s); s++) after++;
    if (!before && !after) return false;
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '+' || *s == '-') s++;
        if (!digit(*s)) return false;
        while (digit(*s)) s++;
    }
    return *s == '\0';
}

int acp_parse_double(const char *s, double min, double max, double *out)
{
    if (!s || !decimal(s)) return refuse(s, "is not a number");
    /* glibc hands out its static C locale for this call: nothing is allocated. */
    locale_t c = newlocale(LC_ALL_MASK, "C", (locale_t)0);
    if (!c) return acp_error_set(ACP_ENOMEM, "cannot have the C locale to read '%s'", s);
    errno = 0;
    double v = strtod_l(s, NULL, c);
    bool over = errno == ERANGE && (v > 1 || v < -1); /* underflow reads as (nearly) zero */
    freelocale(c);
    if (!over && v >= min && v <= max) {
        *out = v;
        return 0;
    }
    char what[80];
    snprintf(what, sizeof what, "is out of range: %.15g to %.15g", min, max);
    return refuse(s, what);
}
