/* SPDX-License-Identifier: Apache-2.0 */
/* The store's one timestamp format: fixed width, UTC, so comparing the text compares time
 * (both backends keep and index it as text). */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "store/store_impl.h"

void acp_store_now(char *buf)
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    char tmp[64]; /* roomy: the compiler cannot prove the fields' widths */
    snprintf(tmp, sizeof tmp, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", (tm.tm_year + 1900) % 10000,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
             (int)(ts.tv_nsec / 1000000));
    memcpy(buf, tmp, ACP_STORE_TIME_LEN + 1);
}

static bool digits(const char *s, int n, int lo, int hi)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return false;
        v = v * 10 + (s[i] - '0');
    }
    return v >= lo && v <= hi;
}

bool acp_store_time_valid(const char *s)
{
    /* 0123456789012345678901234
     * YYYY-MM-DDTHH:MM:SS.mmmZ */
    return s && digits(s, 4, 0, 9999) && s[4] == '-' && digits(s + 5, 2, 1, 12) && s[7] == '-' &&
           digits(s + 8, 2, 1, 31) && s[10] == 'T' && digits(s + 11, 2, 0, 23) && s[13] == ':' &&
           digits(s + 14, 2, 0, 59) && s[16] == ':' && digits(s + 17, 2, 0, 60) && s[19] == '.' &&
           digits(s + 20, 3, 0, 999) && s[23] == 'Z' && s[24] == '\0';
}
