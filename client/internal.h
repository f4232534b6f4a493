/* SPDX-License-Identifier: Apache-2.0 */
/* Private to client/: the structures the client's files share. */
#ifndef ACP_CLIENT_INTERNAL_H
#define ACP_CLIENT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "acp/client.h"
#include "acp/roots.h"
#include "acp/rpc.h"
#include "acp/rt.h"
#include "rpc/lasterr.h"

/* The 1.0 sizes of the options the application hands us (when they change: rpc/lasterr.h). */
#define ACP_CLIENT_OPTS_SIZE_1_0  ACP_STRUCT_SIZE_AT(acp_client_opts, max_read)
#define ACP_SESSION_OPTS_SIZE_1_0 ACP_STRUCT_SIZE_AT(acp_session_opts, meta)

typedef struct acp_term acp_term;
typedef struct acp_client_net acp_client_net;
typedef struct acp_pending acp_pending;

struct acp_client {
    uv_loop_t own_loop; /* used when opts.loop is NULL */
    uv_loop_t *loop;    /* NULL in ACP_CLIENT_MANUAL */
    uv_timer_t timer;   /* the next call deadline (not in manual mode) */
    acp_conn *conn;
    acp_proc *proc;
    acp_transport *tr;
    acp_client_net *net;  /* ACP_CLIENT_URL: the link to the remote agent */
    bool net_refused;     /* the server refused our credentials (HTTP 401 or 403) */
    char net_err[600];    /* why that link ended ("" while it is up) */
    acp_client_opts opts; /* callbacks, user and the enabled capabilities */
    json_t *init;         /* initialize result */
    json_t *no_methods;   /* [], acp_client_auth_methods() when the agent lists none */
    uint32_t caps;        /* bit per acp_agent_cap */
    bool gone;            /* the agent's output ended */
    bool exited;          /* the spawned agent was reaped: exit_code / exit_sig */
    int64_t exit_code;
    int exit_sig;
    int pid;
    int closing; /* acp_client_free(): handles still closing on the application's loop */
    acp_client_cb start_cb;
    void *start_user;
    int errcode;
    char err[1024];     /* the errmsg of the reply being delivered */
    acp_client_op *ops; /* calls in flight */
    acp_client_session *sessions;
    acp_client_session *found; /* acp_client_find()'s last answer: an agent streams in runs */
    char dropped[81]; /* the sessionId (JSON text, cut) last said dropped: a run is said once */
    acp_term *terms;
    uint64_t next_term;
    acp_pending *pending; /* requests of the agent's waiting for the application's answer */
    json_t *url_open;     /* elicitationId -> true: URL elicitations accepted, not yet completed */
    struct fs_job *fs_jobs; /* fs requests running on the thread pool */
    acp_client_mcp *mcps;   /* MCP servers served over the connection (mcp.c) */
    unsigned next_mcp;      /* for generated serverIds */
};

struct acp_client_session {
    acp_client *c;
    acp_client_session *next;
    char *id;
    size_t idlen;
    json_t *result;
    json_t *modes;    /* current SessionModeState, or NULL */
    json_t *config;   /* current configOptions, or NULL */
    acp_roots *roots; /* bounds the fs requests for this session */
    void *user;
    bool loading;          /* a session/load is in flight: updates are replay */
    acp_client_op *prompt; /* the session/prompt in flight, or NULL */
    /* Subagent sessions (subagent.c): the owner of a child, its children (kids, oldest
     * first, linked by sibling), and a child's merged SubagentUpdate metadata. */
    acp_client_session *parent, *kids, *sibling;
    json_t *sub;
};

/* A request of the agent's held for the application's answer: a permission, an ask or an
 * elicitation, each of which starts with this. They share a life: on c->pending until the
 * application replies or they are detached; answered for the application (on_withdrawn) by a
 * cancel of their session's turn, by the agent withdrawing them ($/cancel_request), or by the
 * end of the call of ours they belong to; freed only by their reply function. */
struct acp_pending {
    acp_client *c;
    acp_client_session *s; /* NULL: request-scoped (an elicitation), or detached */
    acp_pending *next;
    acp_req *req;      /* NULL once answered */
    bool attached;     /* on c->pending; once detached, c may be gone */
    acp_client_op *op; /* request-scoped: the call of ours it belongs to, until that ends */
    /* Answers req for the application: withdrawn by the agent, or cancelled with the turn. */
    void (*answer)(acp_req *req, bool withdrawn);
};

struct acp_client_perm {
    acp_pending p;
};

/* What a call does with its answer before the application hears of it: the kind-specific
 * part of a typed call. It may change r (status, session, stop) and must set the last error
 * (acp_error_set) when it turns success into failure: it becomes the reply's errmsg. */
typedef void (*acp_op_finish)(acp_client_op *op, acp_client_reply *r);

struct acp_client_op {
    acp_client *c;
    acp_client_op *next;
    char *method;
    acp_call *call;
    acp_client_cb cb;
    void *user;
    acp_op_finish finish;
    uint64_t deadline; /* uv_hrtime() ms; 0: none */
    bool timed_out;
    acp_client_session *s; /* the session the call is about, if any */
    acp_roots *roots;      /* session/new: the root set for the handle to come */
    char *id;              /* session/delete: the id */
};

/* Answers req with an error and tells on_log about it ("refused fs/read_text_file: ..."). */
void acp_client_refuse(acp_client *c, acp_req *req, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void acp_client_log(acp_client *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* ACP_ENOTSUP with "agent does not advertise NAME" unless the agent advertised cap. */
int acp_client_need(acp_client *c, acp_agent_cap cap, const char *name);

/* Sends method(params: stolen) as a call that ends in cb (finish first, when not NULL). On
 * failure nothing was sent, cb will not run, the last error says why. *out (optional) is the op. */
int acp_client_op_start(acp_client *c, const char *method, json_t *params, acp_op_finish finish,
                        acp_client_cb cb, void *user, acp_client_op **out);
/* The result of a synchronous call, filled by acp_client_sync_cb. */
typedef struct acp_client_sync {
    bool done;
    int status;
    json_t *result; /* owned */
    acp_client_session *session;
    const char *stop;
    char err[1024]; /* the reply's errmsg: the last error the synchronous call sets */
} acp_client_sync;
void acp_client_sync_cb(acp_client *c, const acp_client_reply *r, void *user);
/* providers.c (unstable): auth/status_update to opts.on_auth_status. */
void acp_client_providers_register(acp_client *c);
/* Runs the loop until w is done (rc, the _start's status, is returned at once when non-zero),
 * and returns w's status; on success *result (optional) takes w's result. */
int acp_client_sync_wait(acp_client *c, int rc, acp_client_sync *w, json_t **result);
/* Ends every call in flight about s (or, s NULL, every call) with ACP_ECANCELLED. */
void acp_client_ops_cancel(acp_client *c, acp_client_session *s);
/* (Re)arms the deadline timer after a deadline changed. */
void acp_client_deadlines(acp_client *c);

/* Connects opts' transport (not manual) on c->loop. */
int acp_client_link_open(acp_client *c);
/* ACP_CLIENT_URL: sends what the connection has queued now; closes the link (done runs from
 * the loop once it ended). */
void acp_client_net_flush(acp_client *c);
void acp_client_net_close(acp_client *c, void (*done)(void *user), void *user);
/* Why the agent is out of reach, for messages: the remote link's end, else `fallback`. */
const char *acp_client_gone_why(const acp_client *c, const char *fallback);

acp_client_session *acp_client_find(acp_client *c, acp_span id_literal);
acp_client_session *acp_client_find_id(acp_client *c, const char *id);
/* sessmeta.c: a SystemPrompt for new/load/resume: an object whose mode the agent advertises
 * (append: systemPrompt; override: its mode.override); 0, ACP_EINVAL or ACP_ENOTSUP. */
int acp_client_system_prompt_check(acp_client *c, const json_t *sp);
/* A new handle (ids copied, roots taken), linked into the client; NULL on ENOMEM. */
acp_client_session *acp_client_session_add(acp_client *c, const char *id, acp_roots *roots);
/* Adopts a new/load/resume result: modes and configOptions become the session's state. */
void acp_client_session_adopt(acp_client_session *s, json_t *result);

/* subagent.c (unstable): a subagent_update on session s makes or updates a child handle. */
void acp_client_subagent_track(acp_client_session *s, const acp_update *u);
/* Frees s's children and unlinks s from its parent (from acp_client_session_free). */
void acp_client_subagent_unlink(acp_client_session *s);
/* ACP_EINVAL naming what, for a child (its parent's agent drives it); else 0. */
int acp_client_subagent_refuse(const acp_client_session *s, const char *what);
/* Whether s is a child whose capabilities grant session/cancel. */
bool acp_client_subagent_may_cancel(const acp_client_session *s);

/* Registration of the agent->client methods each file serves. */
void acp_client_session_register(acp_client *c);
void acp_client_perm_register(acp_client *c);
void acp_client_fs_register(acp_client *c);
void acp_client_terminal_register(acp_client *c);
void acp_client_elicit_register(acp_client *c);
/* mcp.c: serves mcp/message; frees every registered MCP server (acp_client_free). */
void acp_client_mcp_register_method(acp_client *c);
void acp_client_mcps_free(acp_client *c);
/* The connection's fallbacks: '_' methods go to the application's extension handlers. */
void acp_client_ext_request(acp_conn *conn, acp_req *req, void *user);
void acp_client_ext_notify(acp_conn *conn, acp_msg *m, void *user);
/* Lets go of the fs requests still on the thread pool: they finish and answer nothing. From
 * acp_client_free(). */
void acp_client_fs_orphan(acp_client *c);
/* Releases every terminal (kills its process); from acp_client_free(). */
void acp_client_terminals_free(acp_client *c);
/* Holds req in p (zeroed but for what follows acp_pending in its struct) until the
 * application replies; answer says how it is answered for the application. */
void acp_client_pending_hold(acp_client *c, acp_pending *p, acp_client_session *s, acp_req *req,
                             acp_client_op *op, void (*answer)(acp_req *req, bool withdrawn));
/* The reply side: lets go of p and returns its request to answer, or NULL when it was already
 * answered for the application. p is the caller's to free. */
acp_req *acp_client_pending_release(acp_pending *p);
/* Answers s's pending requests (s NULL: every one) for the application and, when detach, lets
 * go of them (the application still holds them). */
void acp_client_pending_cancel(acp_client *c, acp_client_session *s, bool detach);
/* The call op ended: the requests that belong to it are answered for the application. */
void acp_client_pending_op_ended(acp_client *c, acp_client_op *op);

/* Asks the application (on_ask) before running method for s; run(c, req) goes ahead, now or
 * after acp_client_ask_reply(). The request is refused when the application says no. */
void acp_client_ask_app(acp_client *c, acp_client_session *s, acp_req *req, const char *method,
                        void (*run)(acp_client *c, acp_req *req));

/* A request's session, by its sessionId param; answers the request with an error and
 * returns NULL when missing or unknown. */
acp_client_session *acp_client_req_session(acp_client *c, acp_req *req);

#endif
