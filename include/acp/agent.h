/* acp_agent: the agent side of ACP with the whole session lifecycle built in.
 *
 * An agent author writes an engine (a prompt handler that streams updates and can be
 * cancelled); the runtime answers initialize, session/new, load (with history replay), resume,
 * close, list, delete, prompt and cancel, persists every session and its history in an
 * acp_store, connects each session's MCP servers (acp_mcp_set) and bounds file access to the
 * session's root set.
 *
 * Durability: an update is committed to the store before the client can see it. Updates of
 * one loop turn are appended to the store's batch and their messages held per session; once
 * per loop turn, before bytes leave, acp_agent_flush() commits the batch and releases the held
 * messages. A prompt's response leaves only after its updates are committed; if a commit
 * fails, the held messages are dropped and the running prompt is answered -32603
 * "session store unavailable: <reason>".
 *
 * Where the spec leaves a choice, the runtime decides so:
 *   - a second session/prompt while one runs in the same session: -32600 (the first goes on);
 *   - requests before initialize: -32600 "ACP connection must be initialized before '<m>'",
 *     as the official SDK does; a second initialize is answered again (capabilities replaced);
 *   - session/load of a session already open on this connection closes the open one first (its
 *     prompt answers cancelled), then loads it afresh; load/resume accept any absolute cwd and
 *     record it with the additional directories as the session's roots;
 *   - session/close and session/prompt of a session that is not open: -32002 with
 *     data.sessionId; session/cancel of one is ignored (a notification);
 *   - a prompt block type not advertised in promptCapabilities, or an unknown one: -32602.
 *
 * Everything runs on one libuv loop thread. Engine callbacks are never called re-entrantly
 * from inside an acp_turn_* / acp_session_* call made by the engine, unless stated. */
#ifndef ACP_AGENT_H
#define ACP_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>
#include <uv.h>

#include "acp/error.h"
#include "acp/mcp.h"
#include "acp/rpc.h"
#include "acp/store.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct acp_agent acp_agent;
typedef struct acp_session acp_session;
typedef struct acp_turn acp_turn;

/* The engine: what an agent author provides. Strings are borrowed for the agent's lifetime.
 * Every callback may be NULL except prompt. */
typedef struct acp_engine {
    const char *name, *title, *version;  /* agentInfo (title may be NULL) */
    bool image, audio, embedded_context; /* promptCapabilities: block types accepted */
    /* An active session exists: after session/new, load or resume was answered (the engine
     * typically sends available_commands_update here). */
    void (*session_ready)(acp_session *s, void *user);
    /* A turn starts. prompt is the ContentBlock[] (validated against the prompt capabilities;
     * borrowed until acp_turn_end/acp_turn_fail). The engine streams updates and ends the turn
     * exactly once, now or later, with acp_turn_end() or acp_turn_fail(). */
    void (*prompt)(acp_turn *t, const json_t *prompt, void *user);
    /* session/cancel, session/close, session/delete or shutdown: stop as soon as possible and
     * end the turn (the response is `cancelled` whatever the engine ends it with). For close,
     * delete and shutdown the runtime ends the turn itself right after this returns if the
     * engine has not: the engine must then drop every reference to the turn. */
    void (*cancel)(acp_turn *t, void *user);
    /* The session is going away (close, delete, shutdown): release the engine's per-session
     * state (acp_session_data) and stop its timers. No turn is running any more. */
    void (*session_free)(acp_session *s, void *user);
    void *user;
} acp_engine;

typedef struct acp_agent_opts {
    /* Diagnostics for the operator (stderr in acp-agent). NULL: silent. Never gets secrets. */
    void (*on_log)(const char *line, void *user);
    /* Called once after acp_agent_shutdown() (or EOF on the stdio transport) has finished:
     * every session closed, the store committed, the output flushed. NULL: nothing. */
    void (*on_done)(acp_agent *a, void *user);
    void *user;
    /* MCP transports beyond stdio to accept and advertise (true only when mcp/ has them). */
    bool mcp_http, mcp_sse;
    unsigned mcp_connect_timeout_ms; /* how long new/load/resume wait for servers; 0: 10000 */
} acp_agent_opts;

/* Creates an agent on `loop` using `store` (borrowed; must outlive the agent) and the engine
 * (copied). opts may be NULL. The agent owns one acp_conn (acp_agent_conn). *out is owned by
 * the caller: acp_agent_free(). 0 or ACP_ENOMEM. */
int acp_agent_new(uv_loop_t *loop, acp_store *store, const acp_engine *engine,
                  const acp_agent_opts *opts, acp_agent **out);
/* Closes every session (running turns answer `cancelled`), commits, starts shutting the MCP
 * servers down and closes the transport. The memory is released from libuv callbacks: run
 * the loop afterwards (uv_run) until it returns. No engine or on_done callback runs after this
 * call. Prefer acp_agent_shutdown() and free from on_done. */
void acp_agent_free(acp_agent *a);

/* Serves the connection over two file descriptors (ACP on in_fd, responses to out_fd) with an
 * rt transport: commits run in the transport's before-flush hook; EOF on in_fd starts
 * acp_agent_shutdown(). The fds are borrowed (not closed). 0, ACP_EIO or ACP_ENOMEM. */
int acp_agent_serve_stdio(acp_agent *a, int in_fd, int out_fd);

/* Without a transport (tests, embedding in another loop): feed bytes to acp_agent_conn() with
 * acp_conn_recv(), call acp_agent_flush() once per loop turn before taking the output with
 * acp_conn_out_take(). The connection is borrowed from the agent. */
acp_conn *acp_agent_conn(acp_agent *a);
/* Commits the store batch and releases held messages (or fails the affected turns). Returns
 * 0 or the commit's error (already handled: nothing for the caller to do but log). */
int acp_agent_flush(acp_agent *a);
/* Cancels every turn, closes every session (their MCP servers shut down), commits, and when
 * everything is closed calls opts.on_done. Idempotent. */
void acp_agent_shutdown(acp_agent *a);

uv_loop_t *acp_agent_loop(const acp_agent *a);
acp_store *acp_agent_store(const acp_agent *a);
/* The client's initialize params.clientCapabilities (borrowed; an empty object before
 * initialize). */
const json_t *acp_agent_client_caps(const acp_agent *a);
/* True when the client advertised the capability at a dotted path: a boolean that is true
 * ("fs.readTextFile", "fs.writeTextFile", "terminal") or a marker object ("elicitation.form",
 * "session.notices"). Omitted and null are unsupported (the spec's rule). */
bool acp_agent_client_has(const acp_agent *a, const char *path);
/* Number of active (open) sessions. */
size_t acp_agent_session_count(const acp_agent *a);

/* --- Sessions ----------------------------------------------------------------------------- */

acp_agent *acp_session_agent(const acp_session *s);
const char *acp_session_id(const acp_session *s);  /* borrowed, session lifetime */
const char *acp_session_cwd(const acp_session *s); /* the primary root, as the client sent it */
/* The active root set [cwd, ...additionalDirectories] as given by the request that opened the
 * session (borrowed, session lifetime). */
size_t acp_session_root_count(const acp_session *s);
const char *acp_session_root(const acp_session *s, size_t i);
/* The session's MCP servers (borrowed; never NULL while the session is active). */
acp_mcp_set *acp_session_mcp(const acp_session *s);
/* Engine per-session data (not freed by the runtime: free it in engine.session_free). */
void acp_session_set_data(acp_session *s, void *data);
void *acp_session_data(const acp_session *s);
/* The turn running in the session, or NULL. */
acp_turn *acp_session_turn(const acp_session *s);

/* Resolves `path` (absolute, or relative to cwd) following symlinks, and refuses anything that
 * is not inside the root set. A file that does not exist yet is resolved through its parent
 * directory. *out is malloc'd (caller frees) on success. ACP_EACCES outside the roots,
 * ACP_ENOTFOUND / ACP_EIO when resolution fails, ACP_ENOMEM. */
int acp_session_resolve_path(const acp_session *s, const char *path, char **out);
/* Resolves `path` as above and open(2)s it (flags and mode as open's, O_CLOEXEC added) with no
 * race between the check and the open (acp_roots_open). On success *fd is the caller's. Errors
 * as acp_roots_open(), with a malloc'd reason in *errmsg (caller frees; may be NULL on ENOMEM). */
int acp_session_open_path(const acp_session *s, const char *path, int flags, mode_t mode, int *fd,
                          char **errmsg);

/* Sends one session/update with `update` (a SessionUpdate object, borrowed). History kinds
 * (user_message_chunk, agent_message_chunk, agent_thought_chunk, tool_call, tool_call_update,
 * plan) are appended to the store and held until committed; session_info_update is recorded
 * with acp_store_set_info (title, updatedAt) before it is sent; other kinds are only sent.
 * 0, ACP_EINVAL (not an object with a sessionUpdate string, or bad UTF-8), ACP_ESTORE,
 * ACP_ECLOSED (session closed), ACP_ENOMEM. */
int acp_session_update(acp_session *s, const json_t *update);
/* The same with the update object as JSON text (validated unless trusted is true: only pass
 * true for text you produced yourself). The text is copied. */
int acp_session_update_raw(acp_session *s, const char *json, size_t n, bool trusted);

/* --- Turns (one session/prompt) ----------------------------------------------------------- */

acp_session *acp_turn_session(const acp_turn *t);
/* True once session/cancel (or close/delete/shutdown) reached this turn. */
bool acp_turn_cancelled(const acp_turn *t);
/* Updates during the turn: as acp_session_update*, but ACP_ECLOSED once the turn's response
 * has been decided (ended, failed, or answered because the store failed). */
int acp_turn_update(acp_turn *t, const json_t *update);
int acp_turn_update_raw(acp_turn *t, const char *json, size_t n, bool trusted);
/* A text content chunk of `kind` ("agent_message_chunk" or "agent_thought_chunk"; NULL means
 * agent_message_chunk) with message id `message_id` (NULL: none). text must be UTF-8.
 * Live, every call is its own notification. In the store, consecutive chunks of one kind and
 * message id are kept as one update (up to 1 MiB of text), so session/load replays them
 * coalesced, as the spec allows; chunks without a message id are never merged. */
int acp_turn_text(acp_turn *t, const char *kind, const char *message_id, const char *text,
                  size_t n);
/* A fresh id: prefix + 32 hex digits of 128 random bits, into buf (at least strlen(prefix)+33
 * bytes). For messageId and toolCallId values. */
void acp_agent_new_id(const char *prefix, char *buf);

/* Ends the turn with a StopReason ("end_turn", "max_tokens", "max_turn_requests", "refusal",
 * "cancelled"). After cancel the response is "cancelled" whatever is given. The turn handle is
 * invalid after this call. 0 or ACP_EINVAL (unknown stop reason: ends with an error). */
int acp_turn_end(acp_turn *t, const char *stop_reason);
/* Ends the turn with a JSON-RPC error (code, message) — or `cancelled` after cancel. */
int acp_turn_fail(acp_turn *t, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Back-pressure: false while the connection's unsent output is above a high-water mark. */
bool acp_turn_writable(const acp_turn *t);
/* Calls cb once, from the loop (never from inside this call), when the connection is
 * writable; at most one per turn (a second call replaces the first). Not called after the
 * turn ended or was force-ended. */
void acp_turn_on_writable(acp_turn *t, void (*cb)(acp_turn *t, void *user), void *user);

/* Client calls on behalf of the turn. sessionId is added to params (an object, stolen; NULL
 * means {}). Methods gated by a client capability (fs/read_text_file: fs.readTextFile,
 * fs/write_text_file: fs.writeTextFile, terminal methods: terminal, elicitation/create:
 * elicitation.<mode>) fail with ACP_ENOTSUP when it was not advertised; nothing is sent.
 * cb gets status 0 and the result (borrowed for the call), or ACP_EPROTO with the client's
 * error message, or ACP_ECLOSED (the connection ended). When the turn is cancelled, each call
 * still outstanding gets $/cancel_request and cb runs with whatever the client answers; once
 * the turn has ended (by any means) its outstanding calls are forgotten and cb never runs. */
typedef void (*acp_turn_call_cb)(acp_turn *t, int status, const json_t *result, const char *error,
                                 void *user);
int acp_turn_call(acp_turn *t, const char *method, json_t *params, acp_turn_call_cb cb, void *user);

#ifdef __cplusplus
}
#endif
#endif
