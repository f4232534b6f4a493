/* SPDX-License-Identifier: Apache-2.0 */
/* The requests of the agent's that wait for the application's answer (permissions, asks,
 * elicitations) share one life, kept here: held on c->pending, answered for the application
 * when the agent withdraws one, its session's turn is cancelled or the call of ours it belongs
 * to ends, and let go of (detached) when its session or the client goes, while the
 * application still holds the handle until its reply function frees it. */
#include "client/internal.h"

/* Tells on_withdrawn that p, still the application's, was answered for it. Called last: the
 * application may free p from inside. */
static void withdrawn(acp_client *c, acp_client_session *s, acp_pending *p)
{
    if (c->opts.on_withdrawn) c->opts.on_withdrawn(c, s, p, c->opts.user);
}

/* The agent withdrew the request ($/cancel_request). */
static void on_cancel(acp_req *req, void *user)
{
    acp_pending *p = user;
    if (!p->req) return;
    p->req = NULL;
    p->answer(req, true);
    withdrawn(p->c, p->s, p);
}

void acp_client_pending_hold(acp_client *c, acp_pending *p, acp_client_session *s, acp_req *req,
                             acp_client_op *op, void (*answer)(acp_req *req, bool withdrawn))
{
    *p = (acp_pending){.c = c,
                       .s = s,
                       .req = req,
                       .attached = true,
                       .op = op,
                       .answer = answer,
                       .next = c->pending};
    c->pending = p;
    acp_req_on_cancel(req, on_cancel, p);
}

acp_req *acp_client_pending_release(acp_pending *p)
{
    if (p->attached) {
        for (acp_pending **pp = &p->c->pending; *pp; pp = &(*pp)->next) {
            if (*pp == p) {
                *pp = p->next;
                break;
            }
        }
    }
    if (p->req) acp_req_on_cancel(p->req, NULL, NULL);
    return p->req;
}

/* Answers p for the application; true when it had still to be answered. */
static bool answer_for_app(acp_pending *p)
{
    acp_req *req = p->req;
    p->op = NULL;
    if (!req) return false;
    p->req = NULL;
    acp_req_on_cancel(req, NULL, NULL);
    p->answer(req, false);
    return true;
}

void acp_client_pending_cancel(acp_client *c, acp_client_session *s, bool detach)
{
    for (acp_pending **pp = &c->pending; *pp;) {
        acp_pending *p = *pp;
        if (s && p->s != s) {
            pp = &p->next;
            continue;
        }
        acp_client_session *ps = p->s;
        bool told = answer_for_app(p);
        if (detach) {
            *pp = p->next;
            *p = (acp_pending){.c = p->c}; /* the application's until its reply frees it */
        }
        if (told) {
            withdrawn(c, ps, p); /* may free p: walk again from the head (p is answered now) */
            pp = &c->pending;
        } else if (!detach) {
            pp = &p->next;
        }
    }
}

void acp_client_pending_op_ended(acp_client *c, acp_client_op *op)
{
    for (acp_pending *p = c->pending; p;) {
        if (p->op != op || !answer_for_app(p)) {
            p = p->next;
            continue;
        }
        withdrawn(c, p->s, p);
        p = c->pending; /* as above */
    }
}
