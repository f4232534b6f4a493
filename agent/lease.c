/* SPDX-License-Identifier: Apache-2.0 */
/* Session leases (acp/store.h, "Leases"): an agent holds the lease of every session it has
 * open, renews them all on one timer, and gives each up when the session is freed, so that
 * another agent (host, process or connection) can open it at once. A renewal that finds the
 * lease taken (the agent was paused or cut off past the TTL) or the session deleted closes the
 * session here, as a write that found so would: the store's fences, not this timer, are what
 * keeps two holders from interleaving; the timer only keeps a live holder's lease fresh. */
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

void agent_reply_busy(acp_req *req, const char *id, int64_t wait_ms)
{
    acp_req_error(req, ACP_RPC_SESSION_BUSY,
                  json_pack("{sssI}", "sessionId", id, "retryAfterMs", (json_int_t)wait_ms),
                  "session %s is open on another agent (another host, process or connection), "
                  "which holds its lease; retry after %lld ms, or once it is closed there",
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
    int rc = acp_store_lease_acquire(a->store, id, a->holder, a->lease_ttl_ms, NULL, fence, &busy);
    if (rc == ACP_EBUSY && holder_dead(busy.holder)) {
        char dead[sizeof busy.holder];
        memcpy(dead, busy.holder, sizeof dead); /* busy is written again */
        agent_log(a, "session %s: its lease holder %s is gone: taking the session over", id, dead);
        rc = acp_store_lease_acquire(a->store, id, a->holder, a->lease_ttl_ms, dead, fence, &busy);
    }
    if (!rc) {
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
