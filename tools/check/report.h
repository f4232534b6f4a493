/* SPDX-License-Identifier: Apache-2.0 */
/* The report of a conformance run (`acp check`, `acp-agent --check-client`): one entry per
 * check with its id, level (MUST, SHOULD, MAY), result (pass, fail, skip), a detail, the spec
 * sentence it is tied to, and what was sent and received. Text for people, or --json: one
 * object per line, {"id","level","result","detail","spec","sent"?,"received"?}. */
#ifndef ACP_TOOLS_CHECK_REPORT_H
#define ACP_TOOLS_CHECK_REPORT_H

#include <stdbool.h>
#include <stdio.h>

typedef enum chk_level { CHK_MUST, CHK_SHOULD, CHK_MAY } chk_level;
typedef enum chk_result { CHK_PASS, CHK_FAIL, CHK_SKIP } chk_result;

/* A spec sentence and where it is: "session-setup (seed 000)", quoted verbatim. */
typedef struct chk_spec {
    const char *where;
    const char *text;
} chk_spec;

typedef struct chk_report chk_report;

/* out borrowed; only: a glob (fnmatch) on check ids, NULL for all. */
chk_report *chk_report_new(FILE *out, bool json, const char *only);
/* True when a check id (or a glob of them, for a group) is wanted by --only. */
bool chk_wanted(const chk_report *r, const char *id_or_glob);
/* Records and prints one check. sent/received may be NULL (long ones are cut). */
void chk_add(chk_report *r, const char *id, chk_level lv, chk_result res, const chk_spec *spec,
             const char *sent, const char *received, const char *fmt, ...)
    __attribute__((format(printf, 8, 9)));
/* Prints the summary (text mode); returns 0 when no MUST check failed, else 1. Frees r. */
int chk_report_end(chk_report *r, const char *what);

#endif
