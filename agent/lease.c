/* Session leases (acp/store.h, "Leases"): an agent holds the lease of every session it has
 * open, renews them all on one timer, and gives each up when the session is freed, so that
 * another agent (host, process or connection) can open it at once. A renewal that finds the
 * lease taken (the agent was paused or cut off past the TTL) or the session deleted closes the
 * session here, as a write that found so would: the store's fences, not this timer, are what
 * keeps two holders from interleaving; the timer only keeps a live holder's lease fresh. */
#include <stdio.h>
#include <string.h>

#include "agent/internal.h"

void agent_reply_busy(acp_req *req, const char *id, int64_t wait_ms)
{
    acp_req_error(req, ACP_RPC_SESSION_BUSY,
                  json_pack("{sssI}", "sessionId", id, "retryAfterMs", (json_int_t)wait_ms),
                  "session %s is open on another agent (another host, process or connection), "
                  "which holds its lease; retry after %lld ms, or once it is closed there",
                  id, (long long)wait_ms);
}

bool lease_take(acp_agent *a, acp_req *req, const char *id, int64_t *fence)
{
    int64_t wait = 0;
    int rc = acp_store_lease_acquire(a->store, id, a->holder, a->lease_ttl_ms, fence, &wait);
    if (!rc) {
        lease_renewing(a);
        return true;
    }
    if (rc == ACP_EBUSY)
        agent_reply_busy(req, id, wait);
    else if (rc == ACP_ENOTFOUND)
        agent_reply_not_found(req, id);
    else if (rc == ACP_ESTORE)
        agent_reply_store_error(a, req);
    else
        acp_req_error(req, ACP_RPC_INTERNAL_ERROR, NULL, "cannot take the lease of session %s: %s",
                      id, acp_strerror(rc));
    return false;
}

void lease_give_up(acp_session *s)
{
    /* Gone: deleted (nothing to give) or fenced out (not ours to give). */
    if (!s->fence || s->gone || s->keep_lease) return;
    acp_agent *a = s->a;
    int rc = acp_store_lease_release(a->store, s->id, s->fence);
    if (rc)
        agent_log(a,
                  "session %s: its lease could not be released (%s); another agent can "
                  "open it once the lease expires",
                  s->id, acp_store_errmsg(a->store));
    s->fence = 0;
}

static void renew(uv_timer_t *h)
{
    acp_agent *a = h->data;
    bool any = false;
    for (acp_session *s = a->sessions; s; s = s->next) {
        if (!s->fence || s->gone) continue;
        any = true;
        int rc = acp_store_lease_renew(a->store, s->id, s->fence, a->lease_ttl_ms);
        if (rc == ACP_ENOTFOUND || rc == ACP_ESTALE) {
            session_gone(s, rc == ACP_ESTALE);
        } else if (rc && !a->lease_warned) {
            /* Not fatal yet: the lease lasts its TTL, and a holder that took it meanwhile
             * fences our writes out; the next tick tries again. */
            agent_log(a, "session %s: its lease could not be renewed: %s", s->id,
                      acp_store_errmsg(a->store));
            a->lease_warned = true;
        } else if (!rc) {
            a->lease_warned = false;
        }
    }
    if (!any) uv_timer_stop(h); /* an idle agent is not woken for nothing */
}

void lease_renewing(acp_agent *a)
{
    if (a->freeing || uv_is_active((uv_handle_t *)&a->renewer)) return;
    /* A third of the TTL: two renewals can fail (a store restarting) before it lapses. */
    uint64_t every = a->lease_ttl_ms / 3 ? a->lease_ttl_ms / 3 : 1;
    uv_timer_start(&a->renewer, renew, every, every);
}

const char *acp_agent_lease_holder(const acp_agent *a)
{
    return a->holder;
}
