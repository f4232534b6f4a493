/* SPDX-License-Identifier: Apache-2.0 */
/* acp_agent_run_stdio: a whole stdio agent in one call, on a loop of its own. It exists so that
 * the teardown (free the agent, then run the loop until its handles and MCP servers are gone,
 * then close the loop) is written once, here, rather than by every program that embeds an
 * agent: the first version of the README's agent skipped the second run and leaked. */
#include <signal.h>
#include <uv.h>

#include "acp/agent.h"
#include "rpc/lasterr.h"

static void on_signal(uv_signal_t *h, int signum)
{
    acp_agent_shutdown(h->data);
}

int acp_agent_run_stdio(acp_store *store, const acp_engine *engine, const acp_agent_opts *opts)
{
    /* A client that goes away while we write must be EOF, not death; a program that chose its
     * own SIGPIPE disposition keeps it. */
    struct sigaction sa;
    if (sigaction(SIGPIPE, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL) signal(SIGPIPE, SIG_IGN);
    uv_loop_t loop;
    int rc = uv_loop_init(&loop);
    if (rc) return acp_error_set(ACP_EIO, "cannot make an event loop: %s", uv_strerror(rc));
    acp_agent *a = NULL;
    rc = acp_agent_new(&loop, store, engine, opts, &a);
    if (!rc) rc = acp_agent_serve_stdio(a, 0, 1);
    /* The signal handles do not keep the loop alive: it ends when the agent's transport has
     * closed, after EOF or a signal's shutdown has answered, committed and flushed. */
    uv_signal_t sigs[2];
    int signums[2] = {SIGTERM, SIGINT};
    for (int i = 0; i < 2; i++) {
        uv_signal_init(&loop, &sigs[i]);
        sigs[i].data = a;
        if (!rc) uv_signal_start(&sigs[i], on_signal, signums[i]);
        uv_unref((uv_handle_t *)&sigs[i]);
    }
    if (!rc) uv_run(&loop, UV_RUN_DEFAULT);
    acp_agent_free(a);
    for (int i = 0; i < 2; i++) uv_close((uv_handle_t *)&sigs[i], NULL);
    uv_run(&loop, UV_RUN_DEFAULT); /* the agent's memory goes from these close callbacks */
    uv_loop_close(&loop);
    return rc;
}
