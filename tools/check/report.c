/* SPDX-License-Identifier: Apache-2.0 */
#include <fnmatch.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tools/check/report.h"

#define SHOWN_MAX 600 /* bytes of a sent or received message shown in a report */

struct chk_report {
    FILE *out;
    bool json;
    const char *only;
    unsigned n[3][3]; /* [level][result] */
};

static const char *const level_names[] = {"MUST", "SHOULD", "MAY"};
static const char *const result_names[] = {"pass", "fail", "skip"};

chk_report *chk_report_new(FILE *out, bool json, const char *only)
{
    chk_report *r = calloc(1, sizeof *r);
    r->out = out;
    r->json = json;
    r->only = only;
    return r;
}

bool chk_wanted(const chk_report *r, const char *id)
{
    if (!r->only) return true;
    /* a group glob ("list.*") is wanted when --only could match one of its checks */
    return !fnmatch(r->only, id, 0) || !fnmatch(id, r->only, 0);
}

/* A message cut to SHOWN_MAX bytes, control bytes shown as \xNN: for the terminal. */
static char *cut(const char *s)
{
    size_t n = strlen(s), k = n > SHOWN_MAX ? SHOWN_MAX : n;
    char *o = malloc(k * 4 + 32), *p = o;
    for (size_t i = 0; i < k; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch < 0x20 || ch == 0x7f)
            p += sprintf(p, "\\x%02x", ch);
        else
            *p++ = (char)ch;
    }
    if (k < n) p += sprintf(p, "... (%zu bytes)", n);
    *p = 0;
    return o;
}

/* Valid UTF-8 for JSON: bytes of broken sequences become "\\xNN" text. */
static char *utf8_safe(const char *s)
{
    size_t n = strlen(s);
    char *o = malloc(n * 4 + 1), *p = o;
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        size_t k = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        bool ok = k && i + k <= n;
        for (size_t j = 1; ok && j < k; j++) ok = ((unsigned char)s[i + j] & 0xC0) == 0x80;
        if (ok && k > 1) {
            memcpy(p, s + i, k);
            p += k;
            i += k;
        } else if (ok) {
            *p++ = s[i++];
        } else {
            p += sprintf(p, "\\x%02x", c);
            i++;
        }
    }
    *p = 0;
    return o;
}

void chk_add(chk_report *r, const char *id, chk_level lv, chk_result res, const chk_spec *spec,
             const char *sent, const char *received, const char *fmt, ...)
{
    if (r->only && fnmatch(r->only, id, 0)) return;
    char detail[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    r->n[lv][res]++;
    char specs[1024];
    snprintf(specs, sizeof specs, "%s: \"%s\"", spec->where, spec->text);
    if (r->json) {
        json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s}", "id", id, "level", level_names[lv],
                              "result", result_names[res], "detail", detail, "spec", specs);
        const char *const keys[] = {"sent", "received"}, *vals[] = {sent, received};
        for (int i = 0; i < 2; i++) {
            if (!vals[i]) continue;
            char *v = utf8_safe(vals[i]);
            json_object_set_new(o, keys[i], json_string(v));
            free(v);
        }
        char *t = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
        fprintf(r->out, "%s\n", t ? t : "{}");
        free(t);
        json_decref(o);
    } else {
        fprintf(r->out, "%-4s  %-6s  %s: %s\n", res == CHK_PASS ? "ok" : result_names[res],
                level_names[lv], id, detail);
        if (res == CHK_FAIL) {
            fprintf(r->out, "      spec: %s\n", specs);
            if (sent) {
                char *c = cut(sent);
                fprintf(r->out, "      sent: %s\n", c);
                free(c);
            }
            if (received) {
                char *c = cut(received);
                fprintf(r->out, "      received: %s\n", c);
                free(c);
            }
        }
    }
    fflush(r->out);
}

int chk_report_end(chk_report *r, const char *what)
{
    unsigned pass = 0, fail = 0, skip = 0;
    for (int l = 0; l < 3; l++) {
        pass += r->n[l][CHK_PASS];
        fail += r->n[l][CHK_FAIL];
        skip += r->n[l][CHK_SKIP];
    }
    int rc = r->n[CHK_MUST][CHK_FAIL] ? 1 : 0;
    if (!r->json)
        fprintf(r->out, "\n%s: %u passed, %u failed (%u MUST, %u SHOULD, %u MAY), %u skipped: %s\n",
                what, pass, fail, r->n[CHK_MUST][CHK_FAIL], r->n[CHK_SHOULD][CHK_FAIL],
                r->n[CHK_MAY][CHK_FAIL], skip,
                rc ? "NOT conformant (a MUST failed)" : "no MUST failed");
    fflush(r->out);
    free(r);
    return rc;
}
