/* SPDX-License-Identifier: Apache-2.0 */
/* on_ask: the application approves an fs write or a terminal command before it happens (an
 * editor shows a dialog; `acp` asks on the TTY). The request waits, unanswered, meanwhile. */
#include <stdlib.h>
#include <string.h>

#include "client/internal.h"

struct acp_client_ask {
    acp_pending p;
    void (*run)(acp_client *c, acp_req *req);
};

static void refuse(acp_req *req, const char *why)
{
    acp_req_error(req, ACP_RPC_INTERNAL_ERROR, json_pack("{s:s}", "reason", why), "%s by the user",
                  why);
}

/* Withdrawn by the agent ($/cancel_request), or refused with the cancelled turn. */
static void answer(acp_req *req, bool withdrawn)
{
    if (withdrawn)
        acp_req_error(req, ACP_RPC_CANCELLED, NULL, "the request was cancelled");
    else
        refuse(req, "cancelled");
}

bool acp_client_ask_cancelled(const acp_client_ask *a)
{
    return !a->p.req;
}

void acp_client_ask_app(acp_client *c, acp_client_session *s, acp_req *req, const char *method,
                        void (*run)(acp_client *c, acp_req *req))
{
    if (!c->opts.on_ask) {
        run(c, req);
        return;
    }
    acp_client_ask *a = calloc(1, sizeof *a);
    if (!a) {
        acp_req_error(req, ACP_RPC_INTERNAL_ERROR, NULL, "out of memory");
        return;
    }
    acp_client_pending_hold(c, &a->p, s, req, NULL, answer);
    a->run = run;
    c->opts.on_ask(c, s, a, method, acp_req_params(req), c->opts.user);
}

int acp_client_ask_reply(acp_client_ask *a, bool allow)
{
    acp_client *c = a->p.c;
    void (*run)(acp_client *, acp_req *) = a->run;
    acp_req *req = acp_client_pending_release(&a->p); /* NULL once answered: c may be gone */
    free(a);
    if (!req) return 0;
    if (allow)
        run(c, req);
    else
        refuse(req, "denied");
    return 0;
}
