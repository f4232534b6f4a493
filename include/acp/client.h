/* SPDX-License-Identifier: Apache-2.0 */
/* acp_client: the client side of ACP. It connects to an agent (spawned, on file descriptors
 * the application already has, on a Unix socket, or through bytes the application moves
 * itself), initializes it, and offers typed calls for every agent method; it serves the
 * methods the agent may call back (fs, terminal, permission, elicitation, extensions), each
 * only when the application enables it.
 *
 * Capabilities are checked before anything is sent: a call the agent did not advertise
 * (session/load without loadSession, session/resume without sessionCapabilities.resume,
 * additionalDirectories, HTTP/SSE MCP servers, ...) fails with ACP_ENOTSUP and a message naming
 * the missing capability, and nothing goes on the wire.
 *
 * Asynchronous by design. Every call has a `_start` form that sends the request and returns at
 * once; its acp_client_cb runs from the loop when the answer arrives. Any number of calls may
 * be in flight, across sessions (one prompt per session, as the protocol has it). The loop is
 * the application's (acp_client_opts.loop), an editor's own libuv loop, or, for a loop that is
 * not libuv, none at all: see "Driving the client yourself" below.
 *
 * The synchronous calls (no `_start`) are thin wrappers for tools and tests: they run the loop
 * until their answer arrives, so they must not be called from a callback running on that loop
 * (libuv loops are not reentrant), and never in ACP_CLIENT_MANUAL mode.
 *
 * Callbacks run in the order the agent sent things. Any of them may start new calls, answer
 * pending requests, or cancel; none may call acp_client_free().
 *
 * Programs should ignore SIGPIPE (see rt.h): an agent that exits while we write would
 * otherwise kill the process. Not thread-safe; two clients in one process are independent.
 *
 * Errors: a call returns a negative ACP_E* status and acp_error_last() (acp/error.h) names
 * what to do; for agent errors, the agent's message with its code, and error.data's `details`
 * or `message` (or its short JSON). Asynchronous ends report through the callback
 * (acp_client_reply.errmsg), diagnostics through on_log. */
#ifndef ACP_CLIENT_H
#define ACP_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include <uv.h>

#include "acp/error.h"
#include "acp/json.h"
#include "acp/rpc.h"

#include "acp/api.h"

ACP_BEGIN_DECLS

typedef struct acp_client acp_client;
typedef struct acp_client_session acp_client_session;
typedef struct acp_client_perm acp_client_perm;

/* session/update kinds. Anything the client does not know (a newer agent, an extension)
 * arrives as ACP_UPDATE_OTHER with its raw text: nothing is dropped. */
typedef enum acp_update_kind {
    ACP_UPDATE_OTHER = 0,
    ACP_UPDATE_USER_MESSAGE_CHUNK,
    ACP_UPDATE_AGENT_MESSAGE_CHUNK,
    ACP_UPDATE_AGENT_THOUGHT_CHUNK,
    ACP_UPDATE_TOOL_CALL,
    ACP_UPDATE_TOOL_CALL_UPDATE,
    ACP_UPDATE_PLAN,
    ACP_UPDATE_AVAILABLE_COMMANDS,
    ACP_UPDATE_CURRENT_MODE,
    ACP_UPDATE_CONFIG_OPTION,
    ACP_UPDATE_SESSION_INFO,
    ACP_UPDATE_USAGE,
    ACP_UPDATE_NOTICE,             /* sent only when acp_client_opts.notices */
    ACP_UPDATE_COMPACTION,         /* compaction_update; only when .compaction */
    ACP_UPDATE_COMPACTION_SUMMARY, /* compaction_summary_chunk; likewise */
    ACP_UPDATE_SUBAGENT,           /* subagent_update (unstable); only when .subagents */
} acp_update_kind;

/* One session/update notification, as views into the received line (valid during the
 * callback only). The library's (acp/api.h): may grow at the end; acp_update_view_parse()
 * reads only `update` of one the application makes itself. No JSON tree is built to route it:
 * acp_update_view_parse() (acp/update.h) builds a typed view when you want one. */
typedef struct acp_update {
    acp_update_kind kind;
    acp_span kind_text;  /* the sessionUpdate string literal, quotes included */
    acp_span update;     /* the `update` object's text */
    acp_span params;     /* the whole params object's text (sessionId, update, _meta) */
    acp_span session_id; /* the sessionId string literal, quotes included */
    bool replay;         /* delivered while a session/load was in flight for the session */
} acp_update;

/* Capabilities the agent may advertise, for acp_client_supports(). */
typedef enum acp_agent_cap {
    ACP_CAP_LOAD_SESSION,    /* agentCapabilities.loadSession */
    ACP_CAP_RESUME,          /* sessionCapabilities.resume */
    ACP_CAP_CLOSE,           /* sessionCapabilities.close */
    ACP_CAP_LIST,            /* sessionCapabilities.list */
    ACP_CAP_DELETE,          /* sessionCapabilities.delete */
    ACP_CAP_ADDITIONAL_DIRS, /* sessionCapabilities.additionalDirectories */
    ACP_CAP_MCP_HTTP,        /* mcpCapabilities.http */
    ACP_CAP_MCP_SSE,         /* mcpCapabilities.sse */
    ACP_CAP_PROMPT_IMAGE,    /* promptCapabilities.image */
    ACP_CAP_PROMPT_AUDIO,    /* promptCapabilities.audio */
    ACP_CAP_PROMPT_RESOURCE, /* promptCapabilities.embeddedContext */
    ACP_CAP_LOGOUT,          /* auth.logout */
    /* Since 1.1, the unstable schema's (their wire shapes may change with it): */
    ACP_CAP_TITLE,                  /* sessionCapabilities.title: session/set_title */
    ACP_CAP_ARCHIVE,                /* sessionCapabilities.archive: archive, unarchive, filter */
    ACP_CAP_STATUS,                 /* sessionCapabilities.status: session/status */
    ACP_CAP_SYSTEM_PROMPT,          /* sessionCapabilities.systemPrompt (append mode) */
    ACP_CAP_SYSTEM_PROMPT_OVERRIDE, /* sessionCapabilities.systemPrompt.mode.override */
    ACP_CAP_MCP_ACP,                /* mcpCapabilities.acp (unstable: MCP over ACP) */
    ACP_CAP_PROVIDERS,              /* providers (unstable) */
    ACP_CAP_AUTH_STATUS,            /* auth.status (unstable) */
} acp_agent_cap;

typedef struct acp_client_op acp_client_op;         /* a request of ours in flight */
typedef struct acp_client_ask acp_client_ask;       /* an fs write or a command to approve */
typedef struct acp_client_elicit acp_client_elicit; /* an elicitation/create to answer */

/* How the client reaches its agent. */
typedef enum acp_client_transport {
    ACP_CLIENT_SPAWN = 0, /* run argv / command with pipes on its stdin and stdout */
    ACP_CLIENT_FDS,       /* read in_fd, write out_fd (a socket, a pty, an SSH channel...) */
    ACP_CLIENT_UNIX,      /* connect to the Unix socket at `path` */
    ACP_CLIENT_MANUAL,    /* no I/O: the application feeds and takes bytes (see below) */
    ACP_CLIENT_URL,       /* a remote agent at `url`: ws://, wss://, http://, https:// */
} acp_client_transport;

/* Extensible (acp/api.h): start from ACP_CLIENT_OPTS_INIT. */
typedef struct acp_client_opts {
    size_t struct_size; /* sizeof(acp_client_opts): ACP_CLIENT_OPTS_INIT sets it */
    acp_client_transport transport;
    /* The loop every handle lives on (borrowed; it must outlive the client). NULL: a private
     * loop the synchronous calls run. Ignored for ACP_CLIENT_MANUAL. */
    uv_loop_t *loop;

    /* ACP_CLIENT_SPAWN: argv (NULL-terminated; argv[0] searched in PATH) or, when argv is
     * NULL, a command line split like a shell does (quotes and backslashes; no expansion). */
    const char *const *argv;
    const char *command;
    /* Environment for the agent as "NAME=VALUE" strings, NULL-terminated; NULL inherits. */
    const char *const *env;
    /* ACP_CLIENT_FDS: borrowed, may be the same number; the client works on duplicates. */
    int in_fd, out_fd;
    /* ACP_CLIENT_UNIX: the socket's path. */
    const char *path;
    /* ACP_CLIENT_URL: the agent's endpoint (usually ending in /acp). ws:// and wss:// speak the
     * WebSocket profile, http:// and https:// Streamable HTTP: https:// offers h2 by ALPN
     * (HTTP/1.1 when the server declines); http:// is HTTP/1.1 unless http2 asks for h2c
     * with prior knowledge. Cookies the
     * server sets are sent back for the life of the connection. token: a bearer token for the
     * Authorization header, sent to that endpoint only and never logged or put in an error;
     * NULL: none. ca_file: trust anchors (PEM) for wss:// and https://; NULL: the system's.
     * Every string is copied. */
    const char *url;
    const char *token;
    const char *ca_file;
    bool http2;

    /* clientInfo. NULL name: {"name":"libacp","version":ACP_VERSION_STRING}. */
    const char *client_name;
    const char *client_title;   /* NULL: omitted */
    const char *client_version; /* NULL: ACP_VERSION_STRING */
    /* What we offer the agent. Each enables the matching agent->client methods; requests for
     * methods not enabled are answered -32601 and updates not enabled are still delivered. */
    bool fs_read;
    bool fs_write;
    bool terminal;             /* the terminal methods: need a loop (not ACP_CLIENT_MANUAL) */
    bool notices;              /* session.notices: the agent may send `notice` updates */
    bool compaction;           /* session.compaction */
    bool config_boolean;       /* session.configOptions.boolean: boolean config options */
    bool elicitation_form;     /* elicitation.form: needs on_elicit */
    bool elicitation_url;      /* elicitation.url: needs on_elicit */
    bool auth_terminal;        /* auth.terminal: the agent may list `terminal` auth methods */
    json_t *capabilities_meta; /* clientCapabilities._meta (borrowed, copied at initialize) */
    json_t *init_meta;         /* initialize's params._meta (borrowed, likewise) */

    /* Largest message accepted from the agent; 0 means 128 MiB (a 32 MiB update escaped). A
     * longer line is discarded whole; the connection keeps working. */
    size_t max_message;
    /* How long initialize may take before it fails with ACP_ETIMEDOUT: a program that is not
     * an ACP agent would otherwise hang us. 0 means 30 s. */
    unsigned init_timeout_ms;
    /* Deadline for every other call, unless acp_client_op_timeout() sets one: the call ends
     * with ACP_ETIMEDOUT and $/cancel_request is sent (for a prompt, session/cancel as
     * acp_client_op_timeout() says). 0: none (a prompt may take hours). */
    unsigned call_timeout_ms;

    /* Every session/update for a session this client has a handle for, in arrival order (s
     * is never NULL). Updates for any other session id (never created, loaded or resumed on
     * this connection, or already freed) are dropped and said to on_log, once for a run of
     * them about one id: a hostile agent cannot make them pass for the user's session. See
     * acp/update.h for typed views. */
    void (*on_update)(acp_client *c, acp_client_session *s, const acp_update *u, void *user);
    /* session/request_permission. params is the request's params (borrowed, valid during the
     * call). The application owns p until it calls acp_client_perm_reply() exactly once, now
     * or later. NULL: every request is answered with the first reject_once/reject_always
     * option (cancelled when there is none). */
    void (*on_permission)(acp_client *c, acp_client_session *s, acp_client_perm *p, json_t *params,
                          void *user);
    /* fs/write_text_file and terminal/create, after the request was checked (a write's path
     * inside the session's roots) and before anything is written or run: method names which, params
     * are the request's (borrowed, valid during the call). The application owns a until it calls
     * acp_client_ask_reply() exactly once, now or later. NULL: everything enabled is allowed. */
    void (*on_ask)(acp_client *c, acp_client_session *s, acp_client_ask *a, const char *method,
                   json_t *params, void *user);
    /* elicitation/create (form or url mode). s is NULL for a request-scoped elicitation (one
     * that belongs to a call of ours, e.g. authenticate). The application owns e until
     * acp_client_elicit_reply(). NULL: elicitation is not advertised. */
    void (*on_elicit)(acp_client *c, acp_client_session *s, acp_client_elicit *e, json_t *params,
                      void *user);
    /* elicitation/complete: the URL elicitation `elicitation_id` finished. Called once, and
     * only for a URL elicitation the application accepted: unknown, declined and repeated ids
     * are ignored (said to on_log), as the spec requires. */
    void (*on_elicit_complete)(acp_client *c, const char *elicitation_id, json_t *params,
                               void *user);
    /* Extension requests (methods starting with '_') from the agent: answer req with the
     * acp_req_* functions of acp/rpc.h, now or later. NULL: -32601. */
    void (*on_ext_request)(acp_client *c, acp_req *req, void *user);
    /* Extension notifications from the agent ('_' methods). params borrowed. NULL: ignored. */
    void (*on_ext_notify)(acp_client *c, const char *method, json_t *params, void *user);
    /* Diagnostics, one sentence each: a request of the agent's we refused (a path outside the
     * roots, an unknown session, bad params: the agent got the error too), a malformed line or
     * update we dropped. NULL: silent. */
    void (*on_log)(acp_client *c, const char *message, void *user);
    /* A permission, ask or elicitation handle the application holds was answered `cancelled`
     * for it: the turn was cancelled, its call ended (a request-scoped elicitation) or the
     * agent withdrew the request. handle is the acp_client_perm, acp_client_ask or
     * acp_client_elicit: close its dialog; it is still freed with its reply function. */
    void (*on_withdrawn)(acp_client *c, acp_client_session *s, const void *handle, void *user);
    /* The agent's connection ended (it exited or closed the socket; for ACP_CLIENT_URL the
     * network connection ended). acp_error_last() says why (ACP_ECLOSED) during the call, and
     * every later call fails with that reason. Every pending call has already ended with
     * ACP_ECLOSED. */
    void (*on_closed)(acp_client *c, void *user);
    void *user;
    /* ACP_CLIENT_SPAWN: the agent's stderr as it arrives (any bytes, cut anywhere; buf
     * borrowed for the call). Set, stderr is a pipe read on the loop, and all of it arrives
     * before the client's last handle closes (see acp_client_free()); NULL, the agent shares
     * our stderr, raw: its escape sequences then reach our terminal. */
    void (*on_stderr)(acp_client *c, const char *buf, size_t n, void *user);
    /* The most one fs/read_text_file returns (fs_read): a read that would return more is
     * refused with an error that says so. 0: ACP_ROOTS_MAX_READ (64 MiB). */
    size_t max_read;
    /* A tap for tracers and conformance tools (acp check): every message received from the
     * agent, whole, exactly as it arrived (one line without its line end; over a URL one
     * WebSocket message or SSE event / POST response body), before the client acts on it.
     * msg borrowed for the call. NULL: none. */
    void (*on_message)(acp_client *c, const char *msg, size_t n, void *user);
    /* (unstable) clientCapabilities.subagents: the agent may expose child sessions it owns
     * (subagent_update). Each child announced on a session of ours gets a handle of its own,
     * owned by its parent's (acp_client_session_child()), and its updates reach on_update with
     * that handle. */
    bool subagents;
    /* Since 1.1 (unstable) auth/status_update: the agent's sign-in state changed; params is the
     * notification's (state, accounts; borrowed, valid during the call). Treat a state you do
     * not know as "unknown". NULL: ignored. */
    void (*on_auth_status)(acp_client *c, json_t *params, void *user);
} acp_client_opts;
#define ACP_CLIENT_OPTS_INIT ACP_STRUCT_INIT(acp_client_opts)

/* The end of a call, reported through the callback (not acp_error_last(), which the loop's
 * other work may overwrite). Borrowed, valid during the callback only. The library's
 * (acp/api.h): may grow at the end. */
typedef struct acp_client_reply {
    int status; /* 0; ACP_EPROTO (agent error: code, message, data), ACP_ENOTSUP, ACP_ECLOSED,
                   ACP_ETIMEDOUT, ACP_ECANCELLED (its session handle was freed), ACP_ENOMEM */
    const char *errmsg; /* a sentence naming what to do; "" on success */
    int code;           /* the agent's JSON-RPC error code, else 0 */
    json_t *data;       /* the agent's error.data, or NULL */
    json_t *result;     /* the result on success (NULL for a call that has none) */
    /* session/new, load, resume: the new handle, owned by the caller from now on. Other
     * session calls: the session they were made on. */
    acp_client_session *session;
    const char *stop; /* session/prompt: the stop reason (static; "unknown" when not known) */
} acp_client_reply;

typedef void (*acp_client_cb)(acp_client *c, const acp_client_reply *r, void *user);

/* --- the connection -------------------------------------------------------------------- */

/* Connects (spawns the agent in its own process group, stderr as on_stderr says; attaches the
 * fds, or connects the socket) and sends `initialize` with clientInfo and the capabilities of
 * opts; cb runs when the agent answered (reply->result is the initialize result), with
 * ACP_EPROTO for an unsupported protocolVersion, ACP_EACCES when an agent URL refused our
 * credentials (HTTP 401 or 403). *out is the caller's (acp_client_free())
 * from now on, also when cb reports a failure. Returns ACP_EINVAL (bad options or command
 * line, or a struct_size refused: acp/api.h), ACP_ENOTSUP (options of a newer libacp that set
 * members this one does not know), ACP_ENOTFOUND / ACP_EACCES / ACP_EIO (could not spawn or
 * connect), ACP_ENOMEM; then *out is NULL, cb will not run, and acp_error_last() says why. */
int acp_client_start(const acp_client_opts *opts, acp_client_cb cb, void *user, acp_client **out);
/* acp_client_start() and the loop run until initialize is answered. On failure *out is NULL
 * and acp_error_last() says why (the agent's answer, or how it ended). Not for
 * ACP_CLIENT_MANUAL. */
int acp_client_open(const acp_client_opts *opts, acp_client **out);
/* Closes our side (the agent's stdin or the socket), waits for a spawned agent briefly (2 s),
 * then SIGTERM/SIGKILL to its group; releases every terminal (killing its command), ends every
 * pending call with ACP_ECANCELLED (their callbacks run now), frees every session handle.
 * Permission, ask and elicitation handles the application still holds were answered
 * `cancelled` and stay valid: their reply functions then only free them. With the client's
 * own loop this runs it until the agent is gone; with the application's loop the remaining
 * handles close on it later (run it until it is idle). NULL is ignored. */
void acp_client_free(acp_client *c);

/* The loop the client lives on (the application's or its own); NULL in ACP_CLIENT_MANUAL. */
uv_loop_t *acp_client_loop(acp_client *c);
/* The initialize result (borrowed; lives as long as c); NULL until it arrived. */
json_t *acp_client_init_result(const acp_client *c);
bool acp_client_supports(const acp_client *c, acp_agent_cap cap);
/* The agent's authMethods (borrowed JSON array; [] when none). */
json_t *acp_client_auth_methods(const acp_client *c);
/* The JSON-RPC error code of the last call the agent answered with an error, else 0: the
 * number beside the sentence in acp_error_last(), for the synchronous calls (a callback has
 * it in reply->code). */
int acp_client_errcode(const acp_client *c);
/* True once the agent closed its output (exited or crashed). */
bool acp_client_agent_gone(const acp_client *c);
/* The spawned agent's pid (0 for other transports or once it is reaped), and how it ended:
 * acp_client_agent_status() returns true once it exited, with *code or *sig set. */
int acp_client_agent_pid(const acp_client *c);
bool acp_client_agent_status(const acp_client *c, int64_t *code, int *sig);

/* Runs the loop once, waiting for something to happen (an update, an answer, a timer of the
 * application). ACP_ECLOSED when nothing is left that could happen. */
int acp_client_run_once(acp_client *c);

/* --- calls in flight -------------------------------------------------------------------- */

/* Every _start call may return its op (optional out parameter). The op is valid until its
 * callback returns. */
/* Sends $/cancel_request for the call; the agent decides (usually -32800, which ends the call
 * with ACP_EPROTO and code -32800). A prompt is cancelled the protocol's way instead:
 * acp_client_session_cancel(). */
int acp_client_op_cancel(acp_client_op *op);
/* Ends the call with ACP_ETIMEDOUT after ms (0: no deadline), and sends $/cancel_request (a
 * prompt: session/cancel, answering its pending requests as acp_client_session_cancel()). */
void acp_client_op_timeout(acp_client_op *op, unsigned ms);
/* The JSON-RPC id the call went out with (to match logs, $/cancel_request, elicitations). */
int64_t acp_client_op_id(const acp_client_op *op);

/* Any method, params stolen (NULL sends {}): for extension methods ("_vendor/x") and
 * anything this header has no typed call for. reply->result is the raw result. */
int acp_client_call_start(acp_client *c, const char *method, json_t *params, acp_client_cb cb,
                          void *user, acp_client_op **op);
/* Synchronous form: *result (optional) owned by the caller. */
int acp_client_call(acp_client *c, const char *method, json_t *params, json_t **result);
/* A notification to the agent (an extension's, usually); params stolen. */
int acp_client_notify(acp_client *c, const char *method, json_t *params);

/* Sends bytes exactly as given, past every check: one or more messages, each ending with a
 * line feed (a missing last one is added). Over a URL agent each line is one WebSocket message
 * or one POST. For conformance tools (acp check), which send what no typed call would (invalid
 * JSON, batches, foreign ids): answers to ids the client did not give are dropped (on_log) and
 * seen through on_message. ACP_ECLOSED once the agent is gone, ACP_ENOMEM. */
int acp_client_send_raw(acp_client *c, const char *bytes, size_t n);

/* authenticate with one of acp_client_auth_methods()'s ids (never a `terminal` method: the
 * spec has the client run those itself; ACP_EINVAL). logout needs agentCapabilities.auth.logout
 * (ACP_ENOTSUP otherwise). */
int acp_client_authenticate_start(acp_client *c, const char *method_id, acp_client_cb cb,
                                  void *user, acp_client_op **op);
int acp_client_authenticate(acp_client *c, const char *method_id);
int acp_client_logout_start(acp_client *c, acp_client_cb cb, void *user, acp_client_op **op);
int acp_client_logout(acp_client *c);

/* (unstable) The agent's LLM providers (rfds/custom-llm-endpoint.mdx; need
 * agentCapabilities.providers, else ACP_ENOTSUP): list (*result: the ListProvidersResponse,
 * the caller's), set (api_type NULL: "openai"; headers "Name: value", NULL-terminated, may be
 * NULL: an Authorization header is how a key is handed over; they are never logged), disable.
 * auth/status needs auth.status: *result is the AuthStatusResponse (state, accounts). */
int acp_client_providers_list_start(acp_client *c, acp_client_cb cb, void *user,
                                    acp_client_op **op);
int acp_client_providers_list(acp_client *c, json_t **result);
int acp_client_provider_set_start(acp_client *c, const char *provider_id, const char *api_type,
                                  const char *base_url, const char *const *headers,
                                  acp_client_cb cb, void *user, acp_client_op **op);
int acp_client_provider_set(acp_client *c, const char *provider_id, const char *api_type,
                            const char *base_url, const char *const *headers);
int acp_client_provider_disable_start(acp_client *c, const char *provider_id, acp_client_cb cb,
                                      void *user, acp_client_op **op);
int acp_client_provider_disable(acp_client *c, const char *provider_id);
int acp_client_auth_status_start(acp_client *c, acp_client_cb cb, void *user, acp_client_op **op);
int acp_client_auth_status(acp_client *c, json_t **result);

/* --- sessions ------------------------------------------------------------------------ */

/* Extensible (acp/api.h): start from ACP_SESSION_OPTS_INIT. NULL: all defaults. */
typedef struct acp_session_opts {
    size_t struct_size;          /* sizeof(acp_session_opts): ACP_SESSION_OPTS_INIT sets it */
    const char *cwd;             /* absolute; NULL: the process's working directory */
    const char *const *add_dirs; /* additionalDirectories, NULL-terminated; NULL: none */
    /* mcpServers as a JSON array (borrowed); NULL: []. Entries with "type":"http"/"sse" need
     * the matching mcpCapabilities. */
    json_t *mcp_servers;
    json_t *meta; /* params._meta (borrowed); NULL: none */
    /* Since 1.1 (unstable): params.systemPrompt, a SystemPrompt object ({"mode": "append" or
     * "override", "content": [text blocks]}, borrowed); NULL: none. Needs
     * ACP_CAP_SYSTEM_PROMPT (override: ACP_CAP_SYSTEM_PROMPT_OVERRIDE), else ACP_ENOTSUP. */
    json_t *system_prompt;
} acp_session_opts;
#define ACP_SESSION_OPTS_INIT ACP_STRUCT_INIT(acp_session_opts)

/* session/new, session/load (replay delivered to on_update before cb), and session/resume.
 * reply->session is the new handle, owned by the caller until acp_client_session_close() or
 * acp_client_session_free() (or acp_client_free()). ACP_ENOTSUP when the agent lacks the
 * capability; ACP_EPROTO (code, errmsg) when it refuses; ACP_EINVAL for an empty id. */
int acp_client_session_new_start(acp_client *c, const acp_session_opts *o, acp_client_cb cb,
                                 void *user, acp_client_op **op);
int acp_client_session_load_start(acp_client *c, const char *id, const acp_session_opts *o,
                                  acp_client_cb cb, void *user, acp_client_op **op);
int acp_client_session_resume_start(acp_client *c, const char *id, const acp_session_opts *o,
                                    acp_client_cb cb, void *user, acp_client_op **op);
int acp_client_session_new(acp_client *c, const acp_session_opts *o, acp_client_session **out);
int acp_client_session_load(acp_client *c, const char *id, const acp_session_opts *o,
                            acp_client_session **out);
int acp_client_session_resume(acp_client *c, const char *id, const acp_session_opts *o,
                              acp_client_session **out);

const char *acp_client_session_id(const acp_client_session *s);
/* The new/load/resume result (borrowed): modes, configOptions, _meta, as answered. */
json_t *acp_client_session_result(const acp_client_session *s);
/* The session's modes ({currentModeId, availableModes}) and configOptions (array), kept
 * current from current_mode_update, config_option_update and our own set_mode /
 * set_config_option answers. Borrowed; NULL when the agent gave none. */
json_t *acp_client_session_modes(const acp_client_session *s);
const char *acp_client_session_mode(const acp_client_session *s); /* currentModeId or NULL */
json_t *acp_client_session_config_options(const acp_client_session *s);
acp_client *acp_client_session_client(const acp_client_session *s);
void acp_client_session_set_user(acp_client_session *s, void *user);
void *acp_client_session_user(const acp_client_session *s);

/* session/prompt with `blocks` (a JSON array, borrowed). reply->stop is the stop reason.
 * ACP_EBUSY if a prompt is already running on s. If the handle is freed first, cb runs then
 * with ACP_ECANCELLED and the agent's answer is dropped. */
int acp_client_session_prompt_start(acp_client_session *s, json_t *blocks, acp_client_cb cb,
                                    void *user, acp_client_op **op);
/* Synchronous: one text block, or `blocks`; *stop (optional) receives the stop reason. */
int acp_client_session_prompt(acp_client_session *s, const char *text, const char **stop);
int acp_client_session_prompt_blocks(acp_client_session *s, json_t *blocks, const char **stop);
/* Sends session/cancel (without waiting) and answers every pending permission request, ask
 * and elicitation of the session with `cancelled`, as the spec requires. Safe from callbacks.
 * A no-op when no prompt is running. */
int acp_client_session_cancel(acp_client_session *s);
/* session/set_mode and session/set_config_option (a select option's value id, or a boolean
 * option's value). Gated by the agent having given modes / configOptions for the session
 * (ACP_ENOTSUP otherwise); a boolean value needs config_boolean. */
int acp_client_session_set_mode_start(acp_client_session *s, const char *mode_id, acp_client_cb cb,
                                      void *user, acp_client_op **op);
int acp_client_session_set_config_start(acp_client_session *s, const char *config_id,
                                        const char *value, acp_client_cb cb, void *user,
                                        acp_client_op **op);
int acp_client_session_set_config_bool_start(acp_client_session *s, const char *config_id,
                                             bool value, acp_client_cb cb, void *user,
                                             acp_client_op **op);
int acp_client_session_set_mode(acp_client_session *s, const char *mode_id);
int acp_client_session_set_config(acp_client_session *s, const char *config_id, const char *value);
int acp_client_session_set_config_bool(acp_client_session *s, const char *config_id, bool value);
/* session/close (needs sessionCapabilities.close), then frees the handle whatever the answer
 * (before cb runs; reply->session is NULL); ACP_ENOTSUP (handle kept) when not advertised. */
int acp_client_session_close_start(acp_client_session *s, acp_client_cb cb, void *user,
                                   acp_client_op **op);
int acp_client_session_close(acp_client_session *s);
/* Forgets the handle locally; nothing is sent. */
void acp_client_session_free(acp_client_session *s);

/* --- Subagent sessions (unstable; acp_client_opts.subagents) -------------------------------
 *
 * A child session the agent announced on a session of ours with subagent_update (delivered to
 * on_update as ACP_UPDATE_SUBAGENT on the parent, before any update of the child): the client
 * makes a handle for it, in the parent's root set (or where the update's cwd and
 * additionalDirectories place it), owned by the parent's handle: freed with it (freeing a
 * child's handle yourself just stops following it). Its updates reach on_update with the
 * child's handle; on a load of the parent they are replay too. A child cannot be prompted,
 * closed or have its mode or config set (ACP_EINVAL: its parent's agent drives it), and
 * acp_client_session_cancel() sends session/cancel for it only when its capabilities grant
 * `cancel` (else ACP_ENOTSUP). */

/* Children of s in the order they were announced; NULL past the last. Borrowed. */
size_t acp_client_session_child_count(const acp_client_session *s);
acp_client_session *acp_client_session_child(const acp_client_session *s, size_t i);
/* The session that owns s, or NULL for one of the application's own. */
acp_client_session *acp_client_session_parent(const acp_client_session *s);
/* The child's current metadata, every subagent_update merged in as the schema says (title,
 * description, capabilities, state, cwd, additionalDirectories, _meta; a null removes the
 * member): borrowed until the next update of it; NULL for a session that is no child. */
json_t *acp_client_session_subagent(const acp_client_session *s);

/* session/list, one page: cwd (filter) and cursor may be NULL. The result is the
 * ListSessionsResponse: sessions[] and maybe nextCursor (sync: *result, caller owns). */
int acp_client_list_start(acp_client *c, const char *cwd, const char *cursor, acp_client_cb cb,
                          void *user, acp_client_op **op);
int acp_client_list(acp_client *c, const char *cwd, const char *cursor, json_t **result);
/* session/delete (needs sessionCapabilities.delete). A handle for that session, if any, is
 * freed on success. */
int acp_client_delete_start(acp_client *c, const char *id, acp_client_cb cb, void *user,
                            acp_client_op **op);
int acp_client_delete(acp_client *c, const char *id);
/* session/close by id, for a session this process has no handle for. */
int acp_client_close_id_start(acp_client *c, const char *id, acp_client_cb cb, void *user,
                              acp_client_op **op);
int acp_client_close_id(acp_client *c, const char *id);

/* --- session metadata (unstable: schema.unstable.json of SDK 2.4.0) ------------------------
 * Each needs its capability, else ACP_ENOTSUP and nothing is sent; ACP_EINVAL for an empty id;
 * ACP_EPROTO with the agent's code (-32002 unknown session, -32602 refused) as every call. */

/* session/set_title (ACP_CAP_TITLE). The result is {"title": the title the agent stored}
 * (it may have normalised it: show that one). Sync: *result is the caller's. */
int acp_client_set_title_start(acp_client *c, const char *id, const char *title, acp_client_cb cb,
                               void *user, acp_client_op **op);
int acp_client_set_title(acp_client *c, const char *id, const char *title, json_t **result);
/* session/archive (archived true) or session/unarchive (ACP_CAP_ARCHIVE). Archiving closes
 * the session agent-side: a handle this process has for it is freed on success. */
int acp_client_archive_start(acp_client *c, const char *id, bool archived, acp_client_cb cb,
                             void *user, acp_client_op **op);
int acp_client_archive(acp_client *c, const char *id, bool archived);
/* session/status (ACP_CAP_STATUS): the result is {"status": "open" | "saved" | another value,
 * which the schema says to read as "saved"}. Sync: *result is the caller's. */
int acp_client_status_start(acp_client *c, const char *id, acp_client_cb cb, void *user,
                            acp_client_op **op);
int acp_client_status(acp_client *c, const char *id, json_t **result);
/* session/list with the archive filter: archived "exclude" (the agent's default), "include"
 * or "only" (needs ACP_CAP_ARCHIVE); NULL is acp_client_list(). Keep the same filter when
 * following nextCursor. */
int acp_client_list_archived_start(acp_client *c, const char *cwd, const char *archived,
                                   const char *cursor, acp_client_cb cb, void *user,
                                   acp_client_op **op);
int acp_client_list_archived(acp_client *c, const char *cwd, const char *archived,
                             const char *cursor, json_t **result);

/* --- requests from the agent ------------------------------------------------------------ */

/* Answers with the option id (copied) or, when option_id is NULL, with `cancelled`; frees p.
 * After acp_client_session_cancel() already answered it, this only frees p. */
int acp_client_perm_reply(acp_client_perm *p, const char *option_id);
/* True when the request was already answered `cancelled` by a cancel. */
bool acp_client_perm_cancelled(const acp_client_perm *p);

/* Allows (the write or the command goes ahead) or refuses (-32000 "denied by the user") an
 * on_ask request; frees a. After a cancel already refused it, this only frees a. */
int acp_client_ask_reply(acp_client_ask *a, bool allow);
/* True when the request was already answered (refused) by a cancel or a withdrawal. */
bool acp_client_ask_cancelled(const acp_client_ask *a);

/* Answers an elicitation: action "accept" (content: an object, stolen; form mode), "decline"
 * or "cancel"; frees e. After a cancel already answered it, this only frees e. */
int acp_client_elicit_reply(acp_client_elicit *e, const char *action, json_t *content);
/* True when the elicitation was already answered `cancel` for the application. */
bool acp_client_elicit_cancelled(const acp_client_elicit *e);
/* A request-scoped elicitation's call of ours (its params.requestId), e.g. an authenticate;
 * NULL for a session-scoped one or once that call ended (which answers it `cancel`). */
acp_client_op *acp_client_elicit_op(const acp_client_elicit *e);

/* A terminal this client runs for the agent (terminal/create), by the terminalId a tool call's
 * `terminal` content names: the output so far (borrowed until the loop runs again; not
 * NUL-terminated), whether it was cut to its byte limit, and, once the command exited, its
 * exit code or signal (*exited false until then). A UI shows it under the tool call.
 * ACP_ENOTFOUND for an unknown or released id. */
int acp_client_terminal_output(acp_client *c, const char *terminal_id, const char **out,
                               size_t *len, bool *truncated, bool *exited, int64_t *exit_code,
                               int *signal);

/* --- MCP servers in the application, over the ACP connection (unstable) -------------------
 *
 * MCP over ACP (SDK 2.4.0's McpServerAcp and mcp/message; needs mcpCapabilities.acp): the
 * application serves an MCP server itself, and the agent reaches it through `mcp/message`
 * requests on this connection, with no process or port. Register it under a serverId (unique
 * on the connection: a second registration of an id is refused), put its declaration
 * (acp_client_mcp_declaration) in acp_session_opts.mcp_servers of session/new, load or resume,
 * and answer what the agent asks. The agent speaks MCP 2026-07-28 (no initialize: every
 * request carries the protocol version in params._meta).
 *
 * Two ways to serve: tools as callbacks (acp_client_mcp_add_tool, handler NULL: the library
 * answers server/discover, tools/list and ping itself, and tools/call of an unknown tool), or
 * a handler that sees every MCP request raw and answers it. Binding failures are answered
 * for you: -33001 for a serverId nobody registered, -32602 for a malformed envelope or a
 * requestId already active, -32800 when the agent cancels a request (the application still
 * frees the request with its reply, which then sends nothing). */
typedef struct acp_client_mcp acp_client_mcp;         /* a registered MCP server */
typedef struct acp_client_mcp_req acp_client_mcp_req; /* one MCP request to answer */
/* Every MCP request for the server: method and params (the inner MCP params with their _meta;
 * NULL when none; borrowed for the call). The application owns r until it calls
 * acp_client_mcp_reply() or acp_client_mcp_error() exactly once, now or later. */
typedef void (*acp_client_mcp_handler)(acp_client_mcp *m, acp_client_mcp_req *r, const char *method,
                                       json_t *params, void *user);
/* A tool's tools/call: args is the arguments object (borrowed; {} when none). Answer with
 * acp_client_mcp_reply(r, CallToolResult) or acp_client_mcp_error(), now or later. */
typedef void (*acp_client_mcp_tool_cb)(acp_client_mcp *m, acp_client_mcp_req *r, json_t *args,
                                       void *user);
/* Registers an MCP server called name under server_id (NULL: "NAME-N", unique on this
 * client). handler NULL serves the tools added with acp_client_mcp_add_tool(). *out lives
 * until acp_client_mcp_unregister() or acp_client_free(). ACP_EINVAL for a server_id already
 * registered on this connection or an empty name. */
int acp_client_mcp_register(acp_client *c, const char *name, const char *server_id,
                            acp_client_mcp_handler handler, void *user, acp_client_mcp **out);
/* Adds a tool (name unique in the server; input_schema copied by reference, NULL:
 * {"type":"object"}; description may be NULL). Tools added after a session declared the
 * server appear to the agent when it lists the tools again. */
int acp_client_mcp_add_tool(acp_client_mcp *m, const char *name, const char *description,
                            const json_t *input_schema, acp_client_mcp_tool_cb cb, void *user);
/* {"type": "acp", "name", "serverId"}: a new reference, for acp_session_opts.mcp_servers. */
json_t *acp_client_mcp_declaration(const acp_client_mcp *m);
const char *acp_client_mcp_server_id(const acp_client_mcp *m);
/* Removes the server: later requests for its id get -33001; requests the application still
 * holds are answered -33001 now (their reply functions then only free them). NULL ignored. */
void acp_client_mcp_unregister(acp_client_mcp *m);
/* Answers the MCP request with its result (stolen; NULL sends {}), or with an MCP error (code,
 * message, data stolen and may be NULL); frees r. */
int acp_client_mcp_reply(acp_client_mcp_req *r, json_t *result);
int acp_client_mcp_error(acp_client_mcp_req *r, int code, const char *message, json_t *data);
/* An MCP notification about the request in flight (notifications/progress, usually): sent as
 * an mcp/message notification naming it; params stolen. ACP_ECLOSED once r was answered. */
int acp_client_mcp_notify(acp_client_mcp_req *r, const char *method, json_t *params);
/* True once the request is over for the agent (it cancelled it, or the server was removed). */
bool acp_client_mcp_req_cancelled(const acp_client_mcp_req *r);
/* cb runs once if the agent cancels the request ($/cancel_request) before it is answered. */
void acp_client_mcp_req_on_cancel(acp_client_mcp_req *r,
                                  void (*cb)(acp_client_mcp_req *r, void *user), void *user);

/* --- driving the client yourself (ACP_CLIENT_MANUAL) ------------------------------------ */

/* For a loop that is not libuv (poll(), GLib, a game's frame): the client does no I/O and
 * keeps no handles. Give it what you read from the agent, write what it wants sent, call
 * acp_client_tick() when the timeout you were given has passed, and tell it when the agent's
 * output ended. docs/client.md has a complete poll() example. */
/* Consumes bytes read from the agent (any amount, any split). ACP_ECLOSED once ended. */
int acp_client_feed(acp_client *c, const char *bytes, size_t n);
/* The bytes to write to the agent, in order (caller frees); NULL when none. */
char *acp_client_take(acp_client *c, size_t *n);
/* Milliseconds until the next deadline (a call timeout) needs acp_client_tick(); -1: none. */
int acp_client_next_timeout(const acp_client *c);
/* Ends the calls whose deadline has passed. */
void acp_client_tick(acp_client *c);
/* The agent's output ended: every pending call ends with ACP_ECLOSED. */
void acp_client_eof(acp_client *c);

/* --- command lines --------------------------------------------------------------------- */

/* Splits a command line into words the way a POSIX shell would (single and double quotes,
 * backslashes), without any expansion. On success *argv is a NULL-terminated array the caller
 * frees with acp_client_argv_free(). ACP_EINVAL for an empty line or an unclosed quote. */
int acp_client_split_command(const char *line, char ***argv);
void acp_client_argv_free(char **argv);

/* --- names ---------------------------------------------------------------------------- */

const char *acp_update_kind_name(acp_update_kind k); /* "agent_message_chunk", ...; "other" */
/* The kind for a sessionUpdate value (string literal text, quotes included). */
acp_update_kind acp_update_kind_of(acp_span kind_text);

ACP_END_DECLS
#endif
