/* SPDX-License-Identifier: Apache-2.0 */
/* A minimal ACP client over acp_ws_connect, for tests against servers we did not write:
 *   ws_probe URL [TOKEN [CA_FILE]]   (TOKEN "" for none; WS_PROBE_UNIX=PATH: over that socket)
 * Twice (the second time with the cookies the first kept, as a reconnect does): connects,
 * sends initialize, session/new and one session/prompt ("hello"), each after the previous
 * answer, then closes. Every message received is printed on stdout as one line; the
 * connection's events as {"event": ...} lines. Exit 0 when both rounds ended cleanly, 2
 * when a handshake failed (the line says why), 1 on anything else. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp/error.h"
#include "net/ws.h"

typedef struct probe {
    acp_link *l;
    int step, round, rc;
    bool done;
} probe;

static const char *const script[] = {
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1,"
    "\"clientCapabilities\":{}}}",
    "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/new\",\"params\":{\"cwd\":\"/tmp\","
    "\"mcpServers\":[]}}",
    "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"session/prompt\",\"params\":{\"sessionId\":"
    "\"%s\",\"prompt\":[{\"type\":\"text\",\"text\":\"hello\"}]}}",
};

static char session[256];

static void next(probe *p)
{
    if (p->step == 3) {
        acp_link_close(p->l);
        return;
    }
    char m[512];
    snprintf(m, sizeof m, script[p->step], session);
    p->step++;
    if (acp_link_send(p->l, m, strlen(m))) p->rc = 1;
}

static void on_open(acp_link *l, int status, const char *detail, void *u)
{
    probe *p = u;
    printf("{\"event\":\"open\",\"status\":%d,\"detail\":\"%s\",\"connectionId\":\"%s\"}\n", status,
           detail, status ? "" : acp_ws_connection_id(l));
    if (status) {
        p->rc = 2;
        return;
    }
    next(p);
}

static void on_message(acp_link *l, const char *m, size_t n, void *u)
{
    probe *p = u;
    printf("%.*s\n", (int)n, m);
    /* Crude but enough for a test peer: the answer to our request carries its id. */
    char id[16];
    snprintf(id, sizeof id, "\"id\":%d", p->step);
    if (!memmem(m, n, "\"method\"", 8) && memmem(m, n, id, strlen(id))) {
        const char *s = memmem(m, n, "\"sessionId\":\"", 13);
        if (s && p->step == 2) sscanf(s + 13, "%255[^\"]", session);
        next(p);
    }
}

static void on_close(acp_link *l, const char *reason, void *u)
{
    probe *p = u;
    printf("{\"event\":\"close\",\"reason\":\"%s\",\"code\":%u}\n", reason, acp_ws_close_code(l));
    if (p->step != 3 && !p->rc) p->rc = 1;
    p->done = true;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: ws_probe URL [TOKEN [CA_FILE]]\n");
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    setvbuf(stdout, NULL, _IOLBF, 0);
    uv_loop_t loop;
    uv_loop_init(&loop);
    acp_cookie_jar *jar = acp_cookie_jar_new();
    int rc = 0;
    for (int round = 0; round < 2 && !rc; round++) {
        probe p = {.round = round};
        acp_ws_connect_opts o = {.url = argv[1],
                                 .token = argc > 2 && *argv[2] ? argv[2] : NULL,
                                 .cookies = jar,
                                 .ca_file = argc > 3 ? argv[3] : NULL,
                                 .unix_path = getenv("WS_PROBE_UNIX")};
        if (acp_ws_connect(&loop, &o, on_open, &p, &p.l)) return 1;
        static const acp_link_cbs cbs = {on_message, NULL, on_close, NULL};
        acp_link_bind(p.l, &cbs, &p);
        while (!p.done) uv_run(&loop, UV_RUN_ONCE);
        rc = p.rc;
        char *h = acp_cookie_jar_header(jar);
        printf("{\"event\":\"cookies\",\"jar\":\"%s\"}\n", h ? h : "");
        free(h);
    }
    uv_run(&loop, UV_RUN_DEFAULT);
    acp_cookie_jar_free(jar);
    return uv_loop_close(&loop) ? 1 : rc;
}
