/* client_ingest: updates per second the libacp client library consumes (issue 5's benchmark).
 *
 *   client_ingest N BYTES AGENT_CMD...
 *
 * Opens the agent with acp_client, creates a session and prompts "/stream N BYTES"; a counting
 * on_update callback is all the application does. Prints one line of key=value figures; the
 * rate runs from the prompt call to its return. Not part of libacp. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "acp/client.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

typedef struct {
    long chunks;
    size_t bytes;
} counts;

static void on_update(acp_client *c, acp_client_session *s, const acp_update *u, void *user)
{
    counts *k = user;
    if (u->kind == ACP_UPDATE_AGENT_MESSAGE_CHUNK) {
        k->chunks++;
        k->bytes += u->update.n;
    }
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: client_ingest N BYTES AGENT_CMD...\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    long n = atol(argv[1]);
    counts k = {0};
    acp_client_opts o = {.argv = (const char *const *)argv + 3, .on_update = on_update, .user = &k};
    acp_client *c;
    char *err = NULL;
    if (acp_client_open(&o, &c, &err) != 0) {
        fprintf(stderr, "client_ingest: %s\n", err ? err : "open failed");
        free(err);
        return 1;
    }
    acp_session_opts so = {.cwd = "/tmp"};
    acp_client_session *s;
    if (acp_client_session_new(c, &so, &s) != 0) {
        fprintf(stderr, "client_ingest: session/new: %s\n", acp_client_errmsg(c));
        acp_client_free(c);
        return 1;
    }
    char text[64];
    snprintf(text, sizeof text, "/stream %ld %s", n, argv[2]);
    const char *stop = NULL;
    double t0 = now_s();
    int rc = acp_client_session_prompt(s, text, &stop);
    double dt = now_s() - t0;
    if (rc != 0 || k.chunks != n) {
        fprintf(stderr, "client_ingest: prompt: rc %d, %ld chunks of %ld: %s\n", rc, k.chunks, n,
                acp_client_errmsg(c));
        acp_client_free(c);
        return 1;
    }
    printf("updates=%ld updates_per_s=%.0f stop=%s\n", k.chunks, (double)k.chunks / dt, stop);
    acp_client_free(c);
    return 0;
}
