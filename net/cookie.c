/* SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>
#include <string.h>

#include "acp/error.h"
#include "net/cookie.h"

#define MAX_COOKIES 64
#define MAX_COOKIE  4096

struct acp_cookie_jar {
    char *pair[MAX_COOKIES]; /* "name=value", in the order first set */
    size_t n;
};

acp_cookie_jar *acp_cookie_jar_new(void)
{
    return calloc(1, sizeof(acp_cookie_jar));
}

void acp_cookie_jar_clear(acp_cookie_jar *j)
{
    if (!j) return;
    for (size_t i = 0; i < j->n; i++) free(j->pair[i]);
    j->n = 0;
}

void acp_cookie_jar_free(acp_cookie_jar *j)
{
    acp_cookie_jar_clear(j);
    free(j);
}

static size_t trim(const char **p, size_t n)
{
    while (n && (**p == ' ' || **p == '\t')) (*p)++, n--;
    while (n && ((*p)[n - 1] == ' ' || (*p)[n - 1] == '\t')) n--;
    return n;
}

int acp_cookie_jar_store(acp_cookie_jar *j, const char *set_cookie)
{
    const char *pair = set_cookie;
    size_t len = trim(&pair, strcspn(set_cookie, ";"));
    const char *eq = memchr(pair, '=', len);
    if (!eq) return 0;
    const char *name = pair, *value = eq + 1;
    size_t nlen = trim(&name, (size_t)(eq - pair));
    size_t vlen = trim(&value, len - (size_t)(value - pair));
    /* Control characters would split the Cookie header we send later. */
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)pair[i] < 0x20 || pair[i] == 0x7f) return 0;
    if (!nlen || nlen + vlen + 2 > MAX_COOKIE) return 0;
    char *c = malloc(nlen + vlen + 2);
    if (!c) return ACP_ENOMEM;
    memcpy(c, name, nlen);
    c[nlen] = '=';
    memcpy(c + nlen + 1, value, vlen);
    c[nlen + 1 + vlen] = '\0';
    for (size_t i = 0; i < j->n; i++) {
        if (strncmp(j->pair[i], c, nlen + 1) == 0) {
            free(j->pair[i]);
            j->pair[i] = c;
            return 0;
        }
    }
    if (j->n == MAX_COOKIES) {
        free(c);
        return 0;
    }
    j->pair[j->n++] = c;
    return 0;
}

char *acp_cookie_jar_header(const acp_cookie_jar *j)
{
    if (!j || !j->n) return NULL;
    size_t len = 0;
    for (size_t i = 0; i < j->n; i++) len += strlen(j->pair[i]) + 2;
    char *h = malloc(len + 1), *p = h;
    if (!h) return NULL;
    for (size_t i = 0; i < j->n; i++) {
        if (i) *p++ = ';', *p++ = ' ';
        size_t k = strlen(j->pair[i]);
        memcpy(p, j->pair[i], k);
        p += k;
    }
    *p = '\0';
    return h;
}
