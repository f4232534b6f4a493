/* SPDX-License-Identifier: Apache-2.0 */
/* Error codes shared by every libacp layer.
 *
 * Library calls return 0 on success or a negative ACP_E* code. JSON-RPC error codes (what goes
 * on the wire) are the ACP_RPC_* constants; they are a different space and never returned as
 * a library status.
 *
 * Errors: this header is the convention itself; every libacp header points here. */
#ifndef ACP_ERROR_H
#define ACP_ERROR_H

#include "acp/api.h"

ACP_BEGIN_DECLS

enum acp_status {
    ACP_OK = 0,
    ACP_ENOMEM = -1,     /* allocation failed */
    ACP_EINVAL = -2,     /* a bad argument (including invalid UTF-8 handed to the writer) */
    ACP_ENOTSUP = -3,    /* the peer did not advertise the capability this call needs */
    ACP_ECLOSED = -4,    /* the connection or object is closed; the peer went away */
    ACP_ENOTFOUND = -5,  /* no such session / object */
    ACP_EIO = -6,        /* an operating-system I/O error */
    ACP_ETOOBIG = -7,    /* over a configured size limit */
    ACP_ESTORE = -8,     /* the session store failed or is unavailable */
    ACP_ECANCELLED = -9, /* the operation was cancelled */
    ACP_ETIMEDOUT = -10, /* a timeout expired */
    ACP_EPROTO = -11,    /* the peer answered with an error or broke the protocol */
    ACP_EACCES = -12,    /* outside the session's root set, or permission denied */
    ACP_EBUSY = -13,     /* the object is busy (a prompt already running, a session leased
                          * by another holder, ...) */
    ACP_ESTALE = -14,    /* a session's lease moved to another holder: this one's writes are
                          * fenced out */
};

/* A static, human-readable name for an ACP_E* code. Never NULL. */
const char *acp_strerror(int status);

/* The detail of a failure: every libacp function that returns a negative ACP_E* status sets
 * this thread's last error before it returns, to that status and a sentence that names what
 * failed and, where there is one, what to do (e.g. "cannot open sessions.db: unable to open
 * database file"). A success leaves it as it was, so read it right after the failing call.
 * Functions that report through a callback instead (acp_client_reply, on_log) say so. */
typedef struct acp_error {
    int status;          /* the ACP_E* code; ACP_OK when nothing has failed on this thread */
    const char *message; /* never NULL; "" when nothing has failed */
} acp_error;

/* This thread's last error. Never NULL; valid until the next libacp call on this thread. */
const acp_error *acp_error_last(void);
/* Forget this thread's last error (acp_error_last() then says ACP_OK, ""). */
void acp_error_clear(void);

/* JSON-RPC 2.0 and ACP error codes (schema.json ErrorCode). */
#define ACP_RPC_PARSE_ERROR      (-32700)
#define ACP_RPC_INVALID_REQUEST  (-32600)
#define ACP_RPC_METHOD_NOT_FOUND (-32601)
#define ACP_RPC_INVALID_PARAMS   (-32602)
#define ACP_RPC_INTERNAL_ERROR   (-32603)
#define ACP_RPC_AUTH_REQUIRED    (-32000)
#define ACP_RPC_NOT_FOUND        (-32002)
#define ACP_RPC_CANCELLED        (-32800)
/* libacp's own, in the server-error range the schema leaves open (away from the low numbers
 * ACP assigns in order): session/load, resume (or new) refused because another agent (another
 * host, process or connection) holds the session's lease with a turn running (an idle holder
 * is taken over). error.data: sessionId, reason "turn_running", retryAfterMs (a poll: once the
 * turn has ended, a retry succeeds). */
#define ACP_RPC_SESSION_BUSY (-32010)
/* Never sent on the wire: a local error given to a pending call's callback when the peer
 * closed the connection, or when the caller abandoned the call (timeout). */
#define ACP_RPC_CONN_CLOSED (-32099)

ACP_END_DECLS
#endif
