/* SPDX-License-Identifier: Apache-2.0 */
/* acp serve: any stdio agent on WebSocket and Streamable HTTP, each connection its own agent
 * process (acp_server_listen_command, include/acp/server.h), with acp-agent --listen's server
 * options (tools/common/serve_cli.c). */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "acp/server.h"
#include "tools/acp/app.h"
#include "tools/common/serve_cli.h"
#include "tools/common/wiretrace.h"

typedef struct serving {
    app *a;
    acp_server *srv;
    uv_signal_t sigs[3]; /* SIGTERM, SIGINT, SIGHUP (the token file and certificate again) */
    const serve_cli *sc;
} serving;

static void serve_log(const char *line, void *user)
{
    serving *s = user;
    if (s->a->log_level >= LOG_WARN) fprintf(stderr, "acp: %s\n", line);
}

static void on_signal(uv_signal_t *h, int signum)
{
    serving *s = h->data;
    if (s->a->log_level >= LOG_INFO)
        fprintf(stderr, "acp: %s: closing %zu connection(s)\n",
                signum == SIGTERM ? "SIGTERM" : "SIGINT", acp_server_connections(s->srv));
    acp_server_shutdown(s->srv);
}

static void on_hup(uv_signal_t *h, int signum)
{
    serving *s = h->data;
    serve_cli_reload(s->sc, s->srv);
}

static void on_done(acp_server *srv, void *user)
{
    serving *s = user;
    for (int i = 0; i < 3; i++) uv_close((uv_handle_t *)&s->sigs[i], NULL);
}

int cmd_serve(app *a)
{
    serve_cli *sc = a->serve;
    if (!sc->listen) {
        fprintf(stderr, "acp: serve needs --listen HOST:PORT|unix:PATH; see 'acp serve --help'\n");
        return EXIT_USAGE;
    }
    if (a->dashdash < 0 || a->nargs == a->dashdash) {
        fprintf(stderr,
                "acp: serve needs the agent's command after '--'; see 'acp serve --help'\n");
        return EXIT_USAGE;
    }
    int rc = serve_cli_finish(sc);
    if (rc) return rc == 1 ? EXIT_AGENT : EXIT_USAGE;
    serving s = {.a = a, .sc = sc};
    uv_loop_t loop;
    uv_loop_init(&loop);
    /* What an agent leaves behind (a daemon it double-forked) comes back to us and dies. */
    acp_reaper *reaper = NULL;
    acp_reaper_start(&loop, &reaper);
    sc->so.on_done = on_done;
    sc->so.user = &s;
    rc = acp_server_listen_command(&loop, a->args + a->dashdash, &sc->so, serve_log, &s.srv);
    serve_cli_free(sc); /* the token wiped: the server keeps only a hash */
    int status = EXIT_OK;
    if (rc) {
        fprintf(stderr, "acp: %s\n", acp_error_last()->message);
        status = rc == ACP_EACCES ? EXIT_USAGE : EXIT_AGENT; /* not safe as asked: usage */
    } else if (!serve_cli_started(sc, s.srv, a->log_level >= LOG_INFO)) {
        status = EXIT_AGENT;
        acp_server_free(s.srv);
        s.srv = NULL;
    } else {
        int signums[3] = {SIGTERM, SIGINT, SIGHUP};
        for (int i = 0; i < 3; i++) {
            uv_signal_init(&loop, &s.sigs[i]);
            s.sigs[i].data = &s;
            uv_signal_start(&s.sigs[i], i < 2 ? on_signal : on_hup, signums[i]);
        }
        uv_run(&loop, UV_RUN_DEFAULT);
        acp_server_free(s.srv);
    }
    uv_run(&loop, UV_RUN_DEFAULT);
    acp_reaper_close(reaper, NULL, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    return status;
}
