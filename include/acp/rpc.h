/* SPDX-License-Identifier: Apache-2.0 */
/* acp_conn: a JSON-RPC 2.0 peer over newline-delimited JSON, with no I/O inside.
 *
 * Feed it the bytes you read (acp_conn_recv); it calls your handlers for requests and
 * notifications and resolves your pending calls' callbacks; everything it wants to send
 * accumulates in one ordered output buffer that you drain (acp_conn_out_take) and write.
 * Both sides may have any number of requests in flight at once.
 *
 * Not thread-safe: one connection is used from one thread. Callbacks may call any acp_conn
 * function except acp_conn_free(). Two connections in one process are independent.
 *
 * The same engine speaks MCP (which is JSON-RPC 2.0 too): only the cancellation method
 * differs, see acp_conn_opts.cancel_method.
 *
 * Errors: a negative ACP_E* status, with the sentence in acp_error_last() (acp/error.h); the
 * peer's errors arrive as messages (acp_msg_is_error), diagnostics through on_log. */
#ifndef ACP_RPC_H
#define ACP_RPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "acp/error.h"
#include "acp/json.h"

#include "acp/api.h"

ACP_BEGIN_DECLS

typedef struct acp_conn acp_conn;
typedef struct acp_req acp_req;   /* an incoming request waiting for our response */
typedef struct acp_call acp_call; /* an outgoing request waiting for the peer's response */
typedef struct acp_msg acp_msg;   /* a view of an incoming notification or response */

/* A request arrived. The handler owns `req` until it answers it with one of the acp_req_*
 * reply functions, now or later; answering frees it. A request still unanswered when the
 * connection is freed is freed with it (no response is sent). */
typedef void (*acp_request_cb)(acp_conn *c, acp_req *req, void *user);
/* A notification arrived. `m` and everything borrowed from it are valid during the call only. */
typedef void (*acp_notify_cb)(acp_conn *c, acp_msg *m, void *user);
/* The response to one of our calls arrived (or was synthesised: see ACP_RPC_CONN_CLOSED).
 * Called exactly once per call unless acp_conn_forget() was used. `m` is valid during the
 * call only; the acp_call handle is freed right after it returns. */
typedef void (*acp_response_cb)(acp_conn *c, acp_msg *m, void *user);

/* Extensible (acp/api.h): start from ACP_CONN_OPTS_INIT. */
typedef struct acp_conn_opts {
    size_t struct_size; /* sizeof(acp_conn_opts): ACP_CONN_OPTS_INIT sets it */
    /* Largest message accepted, in bytes, excluding the newline. 0 means 64 MiB. A longer
     * line is discarded whole and answered with -32600 (with the request's id when it can
     * be read from the line's first bytes); the connection keeps working. */
    size_t max_message;
    /* Method used for request cancellation in both directions. NULL means
     * "$/cancel_request" (ACP); MCP uses "notifications/cancelled". Its params carry the
     * target in "requestId" in both protocols. */
    const char *cancel_method;
    /* Called when the output buffer goes from empty to non-empty: schedule a flush. */
    void (*on_output)(acp_conn *c, void *user);
    /* Requests for methods with no registered handler. NULL: answered -32601. */
    acp_request_cb on_request;
    /* Notifications with no registered handler. NULL: ignored (the spec's rule). */
    acp_notify_cb on_notify;
    /* Diagnostics (a malformed line, a response to an unknown id). NULL: silent. Must not
     * write to the connection's output. */
    void (*on_log)(acp_conn *c, const char *message, void *user);
    void *user;
    /* A tap for tracers and conformance tools (acp check): every complete line received
     * (without its line end, blank lines skipped), exactly as the peer wrote it, before the
     * connection acts on it. Borrowed for the call. Must not free the connection. NULL: none. */
    void (*on_message)(acp_conn *c, const char *line, size_t n, void *user);
} acp_conn_opts;
#define ACP_CONN_OPTS_INIT ACP_STRUCT_INIT(acp_conn_opts)

/* Returns a new connection (caller owns; acp_conn_free()), or NULL on ENOMEM or opts refused
 * (struct_size: acp/api.h; acp_error_last() says which). opts may be NULL; it is copied, and
 * cancel_method must outlive the connection. */
acp_conn *acp_conn_new(const acp_conn_opts *opts);
/* Frees the connection, its pending requests and calls (whose callbacks are NOT called: use
 * acp_conn_eof() first to resolve them) and its unsent output. */
void acp_conn_free(acp_conn *c);
void *acp_conn_user(const acp_conn *c);

/* Registers handlers for one method (either may be NULL). A later registration for the same
 * method replaces the earlier one. The method string is copied. */
int acp_conn_on(acp_conn *c, const char *method, acp_request_cb on_request, acp_notify_cb on_notify,
                void *user);

/* Consumes len bytes read from the peer: any number of whole or partial lines. Returns 0, or
 * ACP_ENOMEM (the connection is then unusable), or ACP_ECLOSED after acp_conn_eof(). Bad
 * input is never an error here: it is answered on the wire. */
int acp_conn_recv(acp_conn *c, const char *bytes, size_t len);
/* The peer closed its side (our input). A final unterminated line is processed, then every
 * pending call resolves with a local ACP_RPC_CONN_CLOSED error, since no answer can arrive.
 * Replies and notifications are still produced: the peer may still be reading (a shell pipe
 * that closed its end after writing, say); new calls fail with ACP_ECLOSED. */
void acp_conn_eof(acp_conn *c);
bool acp_conn_closed(const acp_conn *c);

/* Output. The bytes are complete lines, in the order they were produced. */
size_t acp_conn_out_len(const acp_conn *c);
/* Takes the waiting bytes: the caller owns the returned buffer (free()); NULL when none. */
char *acp_conn_out_take(acp_conn *c, size_t *len);

/* Wire tracing, for debugging (acp and acp-agent --log-level debug): fn receives every message
 * of every acp_conn of this process (ACP, and MCP's), out = false as it is read (before it is
 * handled), true as it is taken for writing (acp_conn_out_take), one line without its line
 * end, borrowed for the call; c is NULL for a message relayed without an acp_conn
 * (acp_server_listen_command: out is then toward the remote client). fn must not call into c. The
 * messages are as on the wire, secrets included: redact before showing them. Process-wide; set it
 * before any connection carries messages, from the thread that runs them. NULL (the default): off,
 * at the cost of one test per line. */
typedef void (*acp_wire_trace_fn)(acp_conn *c, bool out, const char *msg, size_t len, void *user);
void acp_conn_trace_all(acp_wire_trace_fn fn, void *user);

/* Redirects everything the connection produces into dst (borrowed; NULL restores the normal
 * output buffer). The agent uses it to hold a session's messages until the updates among them
 * are committed to the store; it then hands them over with acp_conn_out_append(), or drops
 * them (calls whose request was dropped must then be abandoned by the caller). */
void acp_conn_redirect(acp_conn *c, acp_buf *dst);
/* Appends complete lines, produced earlier through a redirect, to the output. */
int acp_conn_out_append(acp_conn *c, const char *bytes, size_t n);

/* Number of incoming requests not yet answered and outgoing calls not yet resolved. */
size_t acp_conn_pending_requests(const acp_conn *c);
size_t acp_conn_pending_calls(const acp_conn *c);

/* --- Incoming requests --------------------------------------------------------------- */

const char *acp_req_method(const acp_req *r);
/* The id exactly as the peer wrote it (JSON text: a string with quotes, a number, null). */
acp_span acp_req_id(const acp_req *r);
/* The params, parsed (JSON_REJECT_DUPLICATES); an empty object when absent or null. Borrowed:
 * owned by the request. Never NULL: a request whose params do not parse is answered -32602 by
 * the connection and never reaches a handler. */
json_t *acp_req_params(const acp_req *r);
/* The raw params text (empty span when absent). Valid until the request is answered. */
acp_span acp_req_params_text(const acp_req *r);
acp_conn *acp_req_conn(const acp_req *r);

/* Cancellation: set when the peer sent cancel_method for this request. The handler decides
 * how to answer (-32800, or a partial result). on_cancel, if set, is called once when that
 * happens, while the request is still unanswered. */
bool acp_req_cancelled(const acp_req *r);
void acp_req_on_cancel(acp_req *r, void (*on_cancel)(acp_req *r, void *user), void *user);
void acp_req_set_user(acp_req *r, void *user);
void *acp_req_user(const acp_req *r);

/* Answers. Each one frees the request, also when it fails (ACP_ENOMEM, or ACP_EINVAL from
 * bad UTF-8 in a message). result is stolen (a jansson reference); NULL sends {}. */
int acp_req_reply(acp_req *r, json_t *result);
/* result is one valid JSON value as text, copied. */
int acp_req_reply_raw(acp_req *r, const char *json, size_t n);
/* Stream the result: write exactly one JSON value with the returned writer, then call
 * acp_req_reply_end(). Nothing else may be sent on the connection in between. begin returns
 * NULL when another message is being streamed; reply_end then still frees the request
 * (answering -32603 when it can) and returns ACP_EINVAL. */
acp_jw *acp_req_reply_begin(acp_req *r);
int acp_req_reply_end(acp_req *r);
/* An error response. data is stolen (may be NULL); message is printf-style and should be a
 * sentence a person can act on ("cwd must be an absolute path: 'src'"). */
int acp_req_error(acp_req *r, int code, json_t *data, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* --- Incoming notifications and responses (acp_msg views) ----------------------------- */

const char *acp_msg_method(const acp_msg *m); /* NULL for a response */
/* Params of a notification, parsed on first use and cached; an empty object when absent.
 * Borrowed from the view. NULL if they do not parse (duplicate keys, huge integers). */
json_t *acp_msg_params(acp_msg *m);
acp_span acp_msg_params_text(const acp_msg *m); /* raw text; empty span when absent */

bool acp_msg_is_error(const acp_msg *m);
/* A success response's result, parsed on first use; NULL if it does not parse. */
json_t *acp_msg_result(acp_msg *m);
acp_span acp_msg_result_text(const acp_msg *m);
int acp_msg_error_code(const acp_msg *m);
const char *acp_msg_error_message(const acp_msg *m); /* never NULL for an error */
json_t *acp_msg_error_data(acp_msg *m);              /* NULL when absent */

/* --- Outgoing ----------------------------------------------------------------------- */

/* Sends a request. params is stolen (NULL omits "params"). On success, *out (optional)
 * receives a handle valid until cb returns. On failure nothing was sent and cb will not be
 * called. After acp_conn_eof() this fails with ACP_ECLOSED.
 * cb NULL means no answer is wanted: the response is consumed silently whenever it comes,
 * *out is set to NULL, and the request is still written after acp_conn_eof() (a half-closed
 * peer may read on: the agent releases terminals so). */
int acp_conn_call(acp_conn *c, const char *method, json_t *params, acp_response_cb cb, void *user,
                  acp_call **out);
/* Same, streaming params: write one JSON value with the writer, then acp_conn_call_end(). */
acp_jw *acp_conn_call_begin(acp_conn *c, const char *method, acp_response_cb cb, void *user,
                            acp_call **out);
int acp_conn_call_end(acp_conn *c);
/* The id we gave the call (a decimal integer, unique on this connection). */
int64_t acp_call_id(const acp_call *call);

/* Asks the peer to cancel (sends cancel_method). The callback still fires with whatever the
 * peer answers. */
int acp_conn_cancel(acp_conn *c, acp_call *call);
/* The caller drops the call: cancel_method is sent and the callback will never be called. */
void acp_conn_forget(acp_conn *c, acp_call *call);
/* Resolves the call now with a local error (code, message) and sends cancel_method: for
 * timeouts. The callback runs before this returns; a late answer from the peer is ignored. */
void acp_conn_abandon(acp_conn *c, acp_call *call, int code, const char *message);

/* Sends a notification. params is stolen (NULL omits "params"). */
int acp_conn_notify(acp_conn *c, const char *method, json_t *params);
/* Params as JSON text (one valid value), copied. */
int acp_conn_notify_raw(acp_conn *c, const char *method, const char *params, size_t n);
/* Streaming params: write one JSON value, then acp_conn_notify_end(). */
acp_jw *acp_conn_notify_begin(acp_conn *c, const char *method);
int acp_conn_notify_end(acp_conn *c);

ACP_END_DECLS
#endif
