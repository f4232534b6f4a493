/* SPDX-License-Identifier: Apache-2.0 */
/* Session leases (acp/store.h, "Leases"): an agent holds the lease of every session it has
 * open, renews them all on one timer, and gives each up when the session is freed, so that
 * another agent (host, process or connection) can open it at once. A renewal that finds the
 * lease taken (the agent was paused or cut off past the TTL) or the session deleted closes the
 * session here, as a write that found so would: the store's fences, not this timer, are what
 * keeps two holders from interleaving; the timer only keeps a live holder's lease fresh.
 *
 * Taking over (issue 22: sessions shared between clients). A client that keeps its agent
 * running (all day, in an editor) must not lock its sessions for every other client: a
 * session/load or resume elsewhere takes the lease over (acp_store_lease_take) from a holder
 * that is alive but idle, and waits only for one with a turn running. "Idle" lives in the
 * store, as a mark on the lease, because the taker may be on another host: this agent marks
 * the lease busy as a prompt starts (before the engine hears of it) and idle again once the
 * turn's last updates are committed, before its response goes out, so a client that retries
 * when it sees the response finds the lease idle. The mark and the grant are each one
 * statement on the row: either the prompt marked first (the taker is refused, with a retry
 * hint of at most LEASE_RETRY_MS) or the mark finds its fence stale (the prompt is answered
 * -32002 lease_lost and the engine never hears of it).
 *
 * How the old holder learns it was taken over, with nothing it sends interleaving:
 * - its writes are fenced in the store at once (a commit, a state or info write is
 *   ACP_ESTALE): nothing of it is stored, and held output of a failed commit never goes out;
 * - each request about the session checks the lease before it acts (lease_check, one read; a
 *   prompt's busy mark, a write it needs anyway, is that check), so its next request is
 *   answered -32002 with data.reason "lease_lost"; so is every later one (the id is kept in
 *   a->lost once the session is closed here, until the client opens or closes it);
 * - a live update the engine sends outside a turn (stored nowhere, so no fence stops it) is
 *   sent only after a check (at most one per session and loop turn);
 * - the renewal timer (a third of the TTL) finds the fence stale and closes the session here,
 *   so the engine's state and MCP servers go even when the client never asks again.
 * Checking the epoch on each request costs one read per request (a prompt: the two writes of
 * its marks); polling alone would leave a window of a third of the TTL in which the old client
 * could still be answered as if it held the session. */
#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "acp/num.h"
#include "agent/internal.h"

/* The longest retry hint of a refusal: the turn that holds the session may end any moment
 * (and then the retry succeeds), so the hint is a poll interval, not the lease's remaining
 * time, which the holder's renewals keep extending while it lives. */
#define LEASE_RETRY_MS 1000

void agent_reply_busy(acp_req *req, const char *id, int64_t wait_ms)
{
    if (wait_ms > LEASE_RETRY_MS) wait_ms = LEASE_RETRY_MS;
    acp_req_error(req, ACP_RPC_SESSION_BUSY,
                  json_pack("{sssIss}", "sessionId", id, "retryAfterMs", (json_int_t)wait_ms,
                            "reason", "turn_running"),
                  "session %s has a turn running on another agent (another host, process or "
                  "connection), which keeps it until the turn ends; retry after %lld ms: it is "
                  "taken over once that turn has ended",
                  id, (long long)wait_ms);
}

/* "<boot id>.<pid namespace inode>": two processes with the same one see each other's pids. */
static void machine(char *buf, size_t n)
{
    char boot[64] = "";
    struct stat ns;
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
    if (f) {
        if (!fgets(boot, sizeof boot, f)) boot[0] = '\0';
        fclose(f);
    }
    size_t k = 0; /* the uuid's hex digits only */
    for (size_t i = 0; boot[i]; i++)
        if (isxdigit((unsigned char)boot[i])) boot[k++] = boot[i];
    boot[k] = '\0';
    if (k != 32 || stat("/proc/self/ns/pid", &ns))
        snprintf(buf, n, "-");
    else
        snprintf(buf, n, "%s.%lx", boot, (unsigned long)ns.st_ino);
}

int lease_make_holder(acp_agent *a)
{
    char host[41] = "", m[64], rnd[40];
    gethostname(host, sizeof host - 1);
    for (char *c = host; *c; c++)
        if (*c == '/') *c = '_'; /* the separator */
    machine(m, sizeof m);
    if (acp_agent_new_id("", rnd)) return ACP_EIO; /* it said why */
    rnd[16] = '\0'; /* 64 random bits: unique enough among the agents of one store */
    /* 40 + 20 + 44 + 16 and the slashes: within ACP_STORE_HOLDER_MAX */
    snprintf(a->holder, sizeof a->holder, "%.40s/%ld/%.44s/%.16s", host, (long)getpid(), m, rnd);
    return 0;
}

/* True when holder h is another process on this machine (same boot, same PID namespace) that
 * no longer exists: its lease is free to take at once, not after its TTL. A reused pid reads
 * as alive (the TTL is waited out); any doubt does. */
static bool holder_dead(const char *h)
{
    char m[64], mine[64];
    const char *r = strrchr(h, '/'), *end = r;
    if (!r) return false;
    while (end > h && end[-1] != '/') end--; /* the machine field: [end, r) */
    if (end == h || (size_t)(r - end) >= sizeof m) return false;
    memcpy(m, end, (size_t)(r - end));
    m[r - end] = '\0';
    machine(mine, sizeof mine);
    if (!strcmp(m, "-") || strcmp(m, mine)) return false;
    const char *p = end - 1; /* the '/' before it; the pid field ends there */
    while (p > h && p[-1] != '/') p--;
    /* The holder comes from the store, written by whoever shares it: "+5", " 5" or a number
     * past pid_t must not name a process. 4194304 is Linux's PID_MAX_LIMIT. */
    char ps[16];
    uint64_t pid;
    if ((size_t)(end - 1 - p) >= sizeof ps) return false;
    memcpy(ps, p, (size_t)(end - 1 - p));
    ps[end - 1 - p] = '\0';
    if (acp_parse_u64(ps, 2, 4194304, &pid) || pid == (uint64_t)getpid()) return false;
    return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

bool lease_take(acp_agent *a, acp_req *req, const char *id, int64_t *fence)
{
    acp_store_lease_busy busy;
    int rc = acp_store_lease_take(a->store, id, a->holder, a->lease_ttl_ms, NULL, fence, &busy);
    if (rc == ACP_EBUSY && holder_dead(busy.holder)) {
        char dead[sizeof busy.holder];
        memcpy(dead, busy.holder, sizeof dead); /* busy is written again */
        agent_log(a, "session %s: its lease holder %s is gone: taking the session over", id, dead);
        rc = acp_store_lease_take(a->store, id, a->holder, a->lease_ttl_ms, dead, fence, &busy);
    }
    if (!rc) {
        lease_forget_lost(a, id);
        lease_renewing(a);
        return true;
    }
    if (rc == ACP_EBUSY)
        agent_reply_busy(req, id, busy.wait_ms);
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
                  s->id, acp_error_last()->message);
    s->fence = 0;
}

/* What a mark or a check of s's lease found: deleted or taken over marks s gone. */
static int learned(acp_session *s, int rc)
{
    s->checked_at = uv_now(s->a->loop);
    if (rc == ACP_ENOTFOUND || rc == ACP_ESTALE) session_gone(s, rc == ACP_ESTALE);
    return rc;
}

int lease_mark(acp_session *s, bool busy)
{
    acp_agent *a = s->a;
    if (!s->fence || s->gone) return 0;
    /* ACP_ESTORE: the renewal timer marks it again (it marks what s->turn says). */
    return learned(s, acp_store_lease_mark(a->store, s->id, s->fence, a->lease_ttl_ms, busy));
}

int lease_still_ours(acp_session *s)
{
    if (!s->fence || s->gone) return 0;
    return learned(s, acp_store_lease_check(s->a->store, s->id, s->fence));
}

bool lease_check(acp_session *s, acp_req *req)
{
    int rc = lease_still_ours(s);
    if (!s->gone) {
        if (rc != ACP_ESTORE) return true;
        agent_reply_store_error(s->a, req);
        return false;
    }
    session_reply_gone(s, req);
    return false;
}

void lease_lost(acp_session *s)
{
    acp_agent *a = s->a;
    if (!a->lost && !(a->lost = json_object())) return;
    json_object_set_new(a->lost, s->id, json_true());
}

void lease_forget_lost(acp_agent *a, const char *id)
{
    if (a->lost) json_object_del(a->lost, id);
}

void agent_reply_unknown(acp_agent *a, acp_req *req, const char *id, bool forget)
{
    bool lost = a->lost && json_object_get(a->lost, id);
    if (lost && forget) json_object_del(a->lost, id); /* (id goes with the answer) */
    if (lost)
        agent_reply_gone(req, id, true);
    else
        agent_reply_not_found(req, id);
}

static void renew(uv_timer_t *h)
{
    acp_agent *a = h->data;
    bool any = false;
    for (acp_session *s = a->sessions; s; s = s->next) {
        if (!s->fence || s->gone) continue;
        any = true;
        /* The mark again: one that failed to be written (ACP_ESTORE) is set right here. */
        int rc = acp_store_lease_mark(a->store, s->id, s->fence, a->lease_ttl_ms, s->turn != NULL);
        if (rc == ACP_ENOTFOUND || rc == ACP_ESTALE) {
            session_gone(s, rc == ACP_ESTALE);
        } else if (rc && !a->lease_warned) {
            /* Not fatal yet: the lease lasts its TTL, and a holder that took it meanwhile
             * fences our writes out; the next tick tries again. */
            agent_log(a, "session %s: its lease could not be renewed: %s", s->id,
                      acp_error_last()->message);
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
