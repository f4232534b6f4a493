/* SPDX-License-Identifier: Apache-2.0 */
/* session/fork (unstable: schema.unstable.json, rfds/session-fork.mdx): a new session whose
 * history is the source's up to now.
 *
 * The store gives the fork the source's history (acp_store_fork: shared on SQLite, copied on
 * PostgreSQL), and nothing that happens to either afterwards reaches the other: a delete of
 * either leaves the other whole, and a load of the fork replays the whole inherited
 * conversation. The fork is opened as session/new opens a session (the same params parsing:
 * cwd, additionalDirectories, mcpServers, bounds), under this agent's lease; the source needs no
 * lease (the fork only reads it), so a session open elsewhere, or open here with a turn
 * running, can be forked too: what the fork gets is what is committed, and whatever the client
 * has seen of the source is (an update is committed before the client can see it; the source's
 * held updates are committed first). The engine forks its own state in engine.session_fork
 * (acp/agent.h), else its session_setup rebuilds it from the fork's stored history as a load would.
 */
#include <stdlib.h>
#include <string.h>

#include "agent/internal.h"

static void h_fork(acp_conn *c, acp_req *req, void *user)
{
    acp_agent *a = user;
    if (!agent_accept(a, req, &params_fork, true)) return;
    const char *src = session_id_param(req);
    if (!src) return;
    /* systemPrompt (ACP_UNSTABLE_SYSTEM_PROMPT), checked as on session/new: stored with the
     * fork; omitted, the fork keeps the one the source stored (the store copies it). */
    char id[48], *sp;
    acp_store_session row;
    acp_session *s = session_open_fresh(a, req, id, &sp, &row);
    if (!s) return;
    /* What the client has seen of a source open here is committed: the copy includes it. */
    acp_session *from = session_find(a, src);
    if (from && from->dirty) acp_agent_flush(a);
    int rc = acp_store_fork(a->store, src, &row, a->holder, a->lease_ttl_ms, &s->fence);
    free(sp);
    acp_store_session got = ACP_STORE_SESSION_INIT;
    /* The modes and config values the source had are the fork's (its state was copied), and
     * so is its system prompt unless the request gave one: the engine reads it from s. */
    if (!rc && !(rc = acp_store_get(a->store, id, &got))) {
        cfg_free(s);
        if (cfg_init(s, got.state)) rc = acp_error_set(ACP_ENOMEM, "out of memory");
    }
    if (!rc && session_set_system_prompt(s, got.system_prompt))
        rc = acp_error_set(ACP_ENOMEM, "out of memory");
    got.system_prompt = NULL; /* s's now, whatever the answer */
    acp_store_session_clear(&got);
    if (!rc && !(s->fork_src = strdup(src))) rc = acp_error_set(ACP_ENOMEM, "out of memory");
    if (rc) {
        if (rc == ACP_ENOTFOUND)
            agent_reply_not_found(req, src);
        else if (rc == ACP_ESTORE)
            agent_reply_store_error(a, req);
        else
            acp_req_error(req, ACP_RPC_INTERNAL_ERROR, NULL, "cannot fork session %s: %s", src,
                          acp_error_last()->message);
        if (s->fence) acp_store_delete(a->store, id); /* made, then failed: not left behind */
        s->fence = 0;
        session_free(s);
        return;
    }
    lease_renewing(a);
    s->is_new = true; /* the answer carries the new id */
    s->open_req = req;
    session_activate(s);
    open_wait(s);
}

bool fork_offered(const acp_agent *a)
{
    /* An engine that cannot rebuild its state from the store (no load) can fork only with a
     * hook of its own. */
    return agent_offers(a, ACP_UNSTABLE_FORK) &&
           (!(a->eng.disable & ACP_DISABLE_LOAD) || a->eng.session_fork);
}

void fork_register(acp_agent *a)
{
    if (fork_offered(a)) acp_conn_on(a->conn, "session/fork", h_fork, NULL, a);
}

void fork_setup(acp_session *s)
{
    acp_agent *a = s->a;
    if (!a->eng.session_fork) {
        if (a->eng.session_setup) a->eng.session_setup(s, a->eng.user);
        return;
    }
    acp_session *from = session_find(a, s->fork_src);
    if (from && from->state != SESS_READY) from = NULL;
    a->eng.session_fork(s, from, s->fork_src, a->eng.user);
}
