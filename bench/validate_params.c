/* SPDX-License-Identifier: Apache-2.0 */
/* What checking a request's params at the edge costs (issue 13): params_check() over the tree
 * the connection parsed, for session/prompt params as clients send them, beside the jansson
 * parse every request already pays for the same bytes.
 *
 *   validate_params [N]    N checks per run (default 2,000,000), five runs, the median reported
 *
 * Output, one line per prompt shape:
 *   shape=text1 bytes=... validate_ns=... parse_ns=... share=...%
 * validate_ns: one params_check() of the parsed params; parse_ns: one json_loadb() of the same
 * params text (what rpc/conn.c does before any handler runs); share: validate / parse. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/validate.h"

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median5(double *v)
{
    qsort(v, 5, sizeof *v, cmp);
    return v[2];
}

static volatile size_t sink;

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 2000000;
    if (n <= 0) {
        fprintf(stderr, "usage: %s [N]\n", argv[0]);
        return 2;
    }
    static const struct {
        const char *name, *params;
    } shapes[] = {
        /* the common turn: one text block, as Zed and the SDK client send it */
        {"text1", "{\"sessionId\":\"sess_0123456789abcdef0123456789abcdef\",\"prompt\":[{\"type\":"
                  "\"text\",\"text\":\"Explain what the function parse_config in src/config.c "
                  "does, and whether it leaks on the error path.\"}]}"},
        /* text with context: a resource link, an embedded resource, annotations, _meta */
        {"mixed5",
         "{\"sessionId\":\"sess_0123456789abcdef0123456789abcdef\",\"prompt\":[{\"type\":\"text\","
         "\"text\":\"Fix the bug in these "
         "files.\"},{\"type\":\"resource_link\",\"name\":\"config.c\","
         "\"uri\":\"file:///home/u/src/config.c\",\"mimeType\":\"text/x-c\",\"size\":12034},"
         "{\"type\":\"resource\",\"resource\":{\"uri\":\"file:///home/u/src/"
         "config.h\",\"mimeType\":"
         "\"text/x-c\",\"text\":\"#pragma once\\nint parse_config(const char *path);\\n\"},"
         "\"annotations\":{\"audience\":[\"assistant\"],\"priority\":0.8}},{\"type\":\"text\","
         "\"text\":\"Keep the public API.\"},{\"type\":\"resource_link\",\"name\":\"README.md\","
         "\"uri\":\"file:///home/u/README.md\"}],\"_meta\":{\"zed.dev\":{\"thread\":\"t1\"}}}"},
    };
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        const char *text = shapes[s].params;
        size_t len = strlen(text);
        json_t *p = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
        verr e;
        if (!p || !params_check(p, &params_prompt, &e)) {
            fprintf(stderr, "validate_params: %s does not pass: %s\n", shapes[s].name,
                    p ? e.msg : "does not parse");
            return 1;
        }
        double v[5], q[5];
        for (int run = 0; run < 5; run++) {
            double t0 = now_ns();
            for (long i = 0; i < n; i++) sink += params_check(p, &params_prompt, &e);
            v[run] = (now_ns() - t0) / (double)n;
            long m = n / 10 ? n / 10 : 1; /* parsing is slower: fewer rounds suffice */
            t0 = now_ns();
            for (long i = 0; i < m; i++) {
                json_t *t = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
                sink += json_object_size(t);
                json_decref(t);
            }
            q[run] = (now_ns() - t0) / (double)m;
        }
        json_decref(p);
        double vm = median5(v), qm = median5(q);
        printf("shape=%s bytes=%zu validate_ns=%.0f parse_ns=%.0f share=%.1f%%\n", shapes[s].name,
               len, vm, qm, 100 * vm / qm);
    }
    return 0;
}
