/* on_ask: the application approves an fs write or a terminal command before it happens (an
 * editor shows a dialog; `acp` asks on the TTY). The request waits, unanswered, meanwhile. */
#include <stdlib.h>
#include <string.h>

#include "client/internal.h"

struct acp_client_ask {
    acp_client *c;
    acp_client_session *s; /* NULL once detached */
    acp_client_ask *next;
    acp_req *req; /* NULL once answered */
    void (*run)(acp_client *c, acp_req *req);
};

static void unlink_ask(acp_client_ask *a)
{
    for (acp_client_ask **pp = &a->c->asks; *pp; pp = &(*pp)->next) {
        if (*pp == a) {
            *pp = a->next;
            return;
        }
    }
}

static void refuse(acp_req *req, const char *why)
{
    acp_req_error(req, ACP_RPC_INTERNAL_ERROR, json_pack("{s:s}", "reason", why), "%s by the user",
                  why);
}

/* The agent withdrew its request ($/cancel_request). */
static void on_withdrawn(acp_req *req, void *user)
{
    acp_client_ask *a = user;
    if (!a->req) return;
    acp_req_error(a->req, ACP_RPC_CANCELLED, NULL, "the request was cancelled");
    a->req = NULL;
    acp_client_withdrawn(a->c, a->s, a);
}

bool acp_client_ask_cancelled(const acp_client_ask *a)
{
    return !a->req;
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
    *a = (acp_client_ask){.c = c, .s = s, .req = req, .run = run, .next = c->asks};
    c->asks = a;
    acp_req_on_cancel(req, on_withdrawn, a);
    c->opts.on_ask(c, s, a, method, acp_req_params(req), c->opts.user);
}

int acp_client_ask_reply(acp_client_ask *a, bool allow)
{
    acp_req *req = a->req;
    acp_client *c = a->c;
    if (a->s) unlink_ask(a); /* a detached one is off the list, and c may be gone */
    void (*run)(acp_client *, acp_req *) = a->run;
    bool live = a->s != NULL;
    free(a);
    if (!req) return 0;
    acp_req_on_cancel(req, NULL, NULL);
    if (allow && live)
        run(c, req);
    else
        refuse(req, "denied");
    return 0;
}

void acp_client_asks_cancel(acp_client *c, acp_client_session *s, bool detach)
{
    for (acp_client_ask **pp = &c->asks; *pp;) {
        acp_client_ask *a = *pp;
        if (s && a->s != s) {
            pp = &a->next;
            continue;
        }
        if (a->req) {
            acp_req_on_cancel(a->req, NULL, NULL);
            refuse(a->req, "cancelled");
            a->req = NULL;
            acp_client_withdrawn(c, a->s, a);
        }
        if (detach) {
            *pp = a->next; /* still the application's to free with acp_client_ask_reply() */
            a->s = NULL;
            a->next = NULL;
        } else {
            pp = &a->next;
        }
    }
}
