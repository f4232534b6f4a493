/* SPDX-License-Identifier: Apache-2.0 */
/* poll_client: libacp's client driven from a plain poll() loop, with no libuv loop at all
 * (ACP_CLIENT_MANUAL). The program owns the agent's pipes and moves the bytes; the client
 * parses, routes and keeps the calls' deadlines.
 *
 *   usage: poll_client AGENT [ARG...]      e.g. poll_client acp-agent --store demo.db
 *
 * It spawns the agent, initializes it, opens a session in the current directory, sends one
 * prompt and prints the agent's message text as it streams, then the stop reason. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "acp/client.h"

extern char **environ;

enum { RUNNING, DONE, FAILED };

struct app {
    int state;
    char *out; /* bytes for the agent not written yet */
    size_t len, off;
};

/* A call failed, or could not start: say why and stop. */
static void fail(struct app *app, const char *why)
{
    fprintf(stderr, "poll_client: %s\n", why);
    app->state = FAILED;
}

static void on_update(acp_client *c, acp_client_session *s, const acp_update *u, void *user)
{
    if (u->kind != ACP_UPDATE_AGENT_MESSAGE_CHUNK) return;
    json_t *up = json_loadb(u->update.p, u->update.n, 0, NULL);
    const char *text = json_string_value(json_object_get(json_object_get(up, "content"), "text"));
    if (text) fputs(text, stdout);
    fflush(stdout);
    json_decref(up);
}

/* The calls chain through their callbacks: initialize, then session/new, then the prompt. */
static void on_prompt(acp_client *c, const acp_client_reply *r, void *user)
{
    struct app *app = user;
    if (r->status) {
        fail(app, r->errmsg);
        return;
    }
    printf("\nstop: %s\n", r->stop);
    app->state = DONE;
}

static void on_session(acp_client *c, const acp_client_reply *r, void *user)
{
    struct app *app = user;
    if (r->status) {
        fail(app, r->errmsg);
        return;
    }
    /* r->session is ours now; acp_client_free() frees it with the client. */
    json_t *blocks = json_pack("[{s:s, s:s}]", "type", "text", "text", "Hello from a poll() loop");
    if (acp_client_session_prompt_start(r->session, blocks, on_prompt, app, NULL))
        fail(app, acp_error_last()->message);
    json_decref(blocks);
}

static void on_init(acp_client *c, const acp_client_reply *r, void *user)
{
    struct app *app = user;
    if (r->status)
        fail(app, r->errmsg);
    else if (acp_client_session_new_start(c, NULL, on_session, app, NULL))
        fail(app, acp_error_last()->message);
}

/* The agent with pipes on its stdin and stdout; our ends non-blocking. */
static pid_t spawn_agent(char **argv, int *to_agent, int *from_agent)
{
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC)) return -1;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(in[0]);
    close(out[1]);
    if (rc) {
        close(in[1]);
        close(out[0]);
        errno = rc;
        return -1;
    }
    fcntl(in[1], F_SETFL, O_NONBLOCK);
    fcntl(out[0], F_SETFL, O_NONBLOCK);
    *to_agent = in[1];
    *from_agent = out[0];
    return pid;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: poll_client AGENT [ARG...]\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN); /* a write to an agent that exited fails with EPIPE instead */
    int to_agent, from_agent;
    pid_t pid = spawn_agent(argv + 1, &to_agent, &from_agent);
    if (pid < 0) {
        fprintf(stderr, "poll_client: cannot run %s: %s\n", argv[1], strerror(errno));
        return 1;
    }

    struct app app = {.state = RUNNING};
    acp_client_opts o = ACP_CLIENT_OPTS_INIT;
    o.transport = ACP_CLIENT_MANUAL;
    o.on_update = on_update;
    o.user = &app;
    acp_client *c;
    if (acp_client_start(&o, on_init, &app, &c)) {
        fprintf(stderr, "poll_client: %s\n", acp_error_last()->message);
        return 1;
    }
    while (app.state == RUNNING) {
        /* Whatever the client wants sent joins the queue of bytes for the agent. */
        size_t n;
        char *bytes = acp_client_take(c, &n);
        if (bytes) {
            char *grown = realloc(app.out, app.len + n);
            if (!grown) abort();
            memcpy(grown + app.len, bytes, n);
            app.out = grown;
            app.len += n;
            free(bytes);
        }
        struct pollfd fds[2] = {{.fd = from_agent, .events = POLLIN},
                                {.fd = app.off < app.len ? to_agent : -1, .events = POLLOUT}};
        /* Sleep until the agent writes, it can take our bytes, or a deadline is due. */
        int ready = poll(fds, 2, acp_client_next_timeout(c));
        if (ready < 0 && errno != EINTR) break;
        if (acp_client_next_timeout(c) == 0) acp_client_tick(c); /* ends overdue calls */
        if (fds[1].revents) {
            ssize_t k = write(to_agent, app.out + app.off, app.len - app.off);
            if (k > 0) app.off += (size_t)k;
            if (app.off == app.len) app.off = app.len = 0;
            if (k < 0 && errno != EAGAIN && errno != EINTR) app.off = app.len = 0; /* gone */
        }
        if (fds[0].revents) {
            char buf[65536];
            ssize_t k = read(from_agent, buf, sizeof buf);
            if (k > 0)
                acp_client_feed(c, buf, (size_t)k); /* callbacks run from in here */
            else if (k == 0 || (errno != EAGAIN && errno != EINTR))
                acp_client_eof(c); /* pending calls end with ACP_ECLOSED */
        }
    }
    int ok = app.state == DONE;
    acp_client_free(c);
    free(app.out);
    close(to_agent); /* EOF: the agent exits */
    close(from_agent);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    return ok ? 0 : 1;
}
