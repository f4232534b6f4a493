/* SPDX-License-Identifier: Apache-2.0 */
/* Why the hot paths have a writer of their own (issue 2: "if that measures clearly faster"):
 * the same session/update notification built with acp_jw and with jansson's json_pack +
 * json_dumps, CPU time per message.
 *   build/bench/writer_vs_jansson [N] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "acp/rpc.h"

static double cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static const char sid[] = "sess_0123456789abcdef0123456789abcdef";

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 1000000;
    char text[121];
    memset(text, 'x', 120);
    text[120] = '\0';
    size_t total = 0, len = 0;

    /* What the agent does: the connection writes the envelope, the writer the params. */
    acp_conn *c = acp_conn_new(NULL);
    double t0 = cpu_s();
    for (int i = 0; i < n; i++) {
        acp_jw *w = acp_conn_notify_begin(c, "session/update");
        acp_jw_obj(w);
        acp_jw_kstr(w, "sessionId", sid);
        acp_jw_key(w, "update");
        acp_jw_obj(w);
        acp_jw_kstr(w, "sessionUpdate", "agent_message_chunk");
        acp_jw_kstr(w, "messageId", "msg_1");
        acp_jw_key(w, "content");
        acp_jw_obj(w);
        acp_jw_kstr(w, "type", "text");
        acp_jw_kstr(w, "text", text);
        acp_jw_obj_end(w);
        acp_jw_obj_end(w);
        acp_jw_obj_end(w);
        acp_conn_notify_end(c);
        if (i % 1024 == 1023 || i == n - 1) {
            size_t got;
            free(acp_conn_out_take(c, &got));
            total += got;
            len = got / (i % 1024 + 1);
        }
    }
    double t1 = cpu_s();
    acp_conn_free(c);
    for (int i = 0; i < n; i++) {
        json_t *m = json_pack("{s:s,s:s,s:{s:s,s:{s:s,s:s,s:{s:s,s:s}}}}", "jsonrpc", "2.0",
                              "method", "session/update", "params", "sessionId", sid, "update",
                              "sessionUpdate", "agent_message_chunk", "messageId", "msg_1",
                              "content", "type", "text", "text", text);
        char *s = json_dumps(m, JSON_COMPACT | JSON_PRESERVE_ORDER);
        total += strlen(s);
        free(s);
        json_decref(m);
    }
    double t2 = cpu_s();
    printf("message_bytes=%zu acp_jw_us=%.3f jansson_us=%.3f ratio=%.1fx checksum=%zu\n", len,
           (t1 - t0) / n * 1e6, (t2 - t1) / n * 1e6, (t2 - t1) / (t1 - t0), total);
    return 0;
}
