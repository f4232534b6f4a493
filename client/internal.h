/* Private to client/: the structures the client's files share. */
#ifndef ACP_CLIENT_INTERNAL_H
#define ACP_CLIENT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "acp/client.h"
#include "acp/roots.h"
#include "acp/rpc.h"
#include "acp/rt.h"

typedef struct acp_term acp_term;

struct acp_client {
    uv_loop_t loop;
    uv_timer_t timer; /* the initialize deadline */
    acp_conn *conn;
    acp_proc *proc;
    acp_transport *tr;
    acp_client_opts opts; /* callbacks, user and the enabled capabilities */
    json_t *init;         /* initialize result */
    uint32_t caps;        /* bit per acp_agent_cap */
    bool gone;            /* the agent's output ended */
    int errcode;
    char err[1024];
    acp_client_session *sessions;
    acp_term *terms;
    uint64_t next_term;
};

struct acp_client_session {
    acp_client *c;
    acp_client_session *next;
    char *id;
    json_t *result;
    acp_roots *roots; /* bounds the fs requests for this session */
    void *user;
    bool loading;             /* a session/load is in flight: updates are replay */
    struct prompt_op *prompt; /* the session/prompt in flight, or NULL */
    acp_client_perm *perms;   /* pending permission requests */
};

struct acp_client_perm {
    acp_client *c;
    acp_client_session *s; /* NULL once the session handle is freed */
    acp_client_perm *next;
    acp_req *req; /* NULL once answered (by a cancel) */
};

/* Sets the message acp_client_errmsg() returns; returns status for `return seterr(...)`. */
int acp_client_seterr(acp_client *c, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Sends method(params: stolen) and runs the loop until the answer. On success *result (if
 * not NULL) is the parsed result, owned by the caller. An agent error is ACP_EPROTO with
 * errmsg/errcode set; ACP_ECLOSED when the agent went away. */
int acp_client_call(acp_client *c, const char *method, json_t *params, json_t **result);

/* The status of a received answer (setting errmsg/errcode on failure), and on success its
 * result (caller owns). */
int acp_client_answer(acp_client *c, const char *method, acp_msg *m, json_t **result);

acp_client_session *acp_client_find(acp_client *c, acp_span id_literal);
acp_client_session *acp_client_find_id(acp_client *c, const char *id);

/* Registration of the agent->client methods each file serves. */
void acp_client_session_register(acp_client *c);
void acp_client_perm_register(acp_client *c);
void acp_client_fs_register(acp_client *c);
void acp_client_terminal_register(acp_client *c);
/* Releases every terminal (kills its process) and waits for them; from acp_client_free(). */
void acp_client_terminals_free(acp_client *c);
/* Answers the session's pending permissions with `cancelled` and detaches them. */
void acp_client_perms_cancel(acp_client_session *s, bool detach);

/* A request's session, by its sessionId param; answers the request with an error and
 * returns NULL when missing or unknown. */
acp_client_session *acp_client_req_session(acp_client *c, acp_req *req);

#endif
