/* SPDX-License-Identifier: Apache-2.0 */
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
 * fails, the held history updates are dropped (live ones, such as the runtime's
 * current_mode_update, and requests to the client still go out) and the running prompt is
 * answered -32603 "session store unavailable: <reason>".
 *
 * Several processes (and several agents in one process) may share one store. When one deletes a
 * session another has open, the other learns it from its next write for the session (the commit
 * of its updates, a title, a mode or config change: ACP_ENOTFOUND from the store) or lease
 * renewal; so it does when another agent took the session's lease over (ACP_ESTALE). It then
 * drops what it held of the session, answers the request that wrote (and a prompt running in
 * the session) -32002 with data.sessionId, "... was deleted elsewhere ..." (or "... taken over
 * by another agent ...", data.reason "lease_lost"), refuses further updates (ACP_ENOTFOUND)
 * and, at the next flush, closes the session as session/close would (engine.cancel, then
 * session_free; MCP servers, terminals and client calls released).
 *
 * Where the spec leaves a choice, the runtime decides so:
 *   - a second session/prompt while one runs in the same session: -32600 (the first goes on);
 *   - requests before initialize: -32600 "ACP connection must be initialized before '<m>'",
 *     as the official SDK does; a second initialize is answered again (capabilities replaced);
 *   - then every request's params are checked against the schema's types, before the auth
 *     gate and anything else: -32602 naming the first bad member by its JSON path (in the
 *     message and in error.data.path). What the schema lets a decoder salvage is read as the
 *     official SDK reads it: a malformed x-deserialize-default-on-error member is removed (so
 *     engines never see a _meta, clientCapabilities or clientInfo of the wrong type) and a
 *     null x-deserialize-default-on-null array becomes []; unknown members stay. A malformed
 *     session/cancel is dropped and logged (docs/agent.md, "Request validation");
 *   - session/load of a session already open on this connection closes the open one first (its
 *     prompt answers cancelled), then loads it afresh; load/resume accept any absolute cwd and
 *     record it with the additional directories as the session's roots;
 *   - session/close and session/prompt of a session that is not open: -32002 with
 *     data.sessionId; session/cancel of one is ignored (a notification);
 *   - a session is open in one agent at a time: each agent holds a lease on the sessions it
 *     has open (acp/store.h "Leases"; opts.lease_ttl_ms); session/load or resume of one another
 *     agent holds takes it over when that agent is idle (no turn running), and is answered
 *     ACP_RPC_SESSION_BUSY (-32010) with data.sessionId, data.reason "turn_running" and
 *     data.retryAfterMs while a turn runs there; an agent whose lease was taken over (idle, or
 *     it stopped renewing past the TTL) treats the session as deleted elsewhere, with
 *     data.reason "lease_lost" and the message "taken over by another agent", for its next
 *     request and every later one (docs/agent.md, "Several processes on one store");
 *   - a delete by another process during a session/load's replay stops it: the load is
 *     answered -32002 (what was replayed is void) and nothing stays open;
 *   - a prompt block type not advertised in promptCapabilities, or an unknown one: -32602;
 *   - a session/load's replay ends with a session_info_update carrying the stored title and
 *     updatedAt, before the response (a session/resume sends nothing: it restores silently);
 *   - compaction updates are history (replayed in place) but never reach a client without
 *     session.compaction, also not on a load; notices are live only;
 *   - session/set_mode and set_config_option: an unknown session -32002, one still opening
 *     -32600, an unknown mode / option / value or a value of the wrong type -32602 (the state
 *     unchanged), the store failing -32603; the client's own change is not echoed back as an
 *     update, a dependent change (the "mode" option and the mode) is;
 *   - with engine.auth_required, session/new, load, resume, prompt, list, delete, set_mode and
 *     set_config_option get -32000 until authenticate succeeds; close and cancel always work
 *     (freeing resources must never need a sign-in);
 *   - authenticate with an unknown id or a terminal method's id: -32602; a pending one is
 *     answered -32800 on $/cancel_request and at shutdown.
 *
 * Everything runs on one libuv loop thread. Engine callbacks are never called re-entrantly
 * from inside an acp_turn_* / acp_session_* call made by the engine, unless stated.
 *
 * Errors: a negative ACP_E* status, with the sentence in acp_error_last() (acp/error.h); calls
 * to the client report their answers through their callbacks, diagnostics go to on_log. */
#ifndef ACP_AGENT_H
#define ACP_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include <uv.h>

#include "acp/error.h"
#include "acp/mcp.h"
#include "acp/rpc.h"
#include "acp/store.h"

#include "acp/api.h"

ACP_BEGIN_DECLS

typedef struct acp_agent acp_agent;
typedef struct acp_session acp_session;
typedef struct acp_turn acp_turn;
typedef struct acp_terminal acp_terminal;

/* --- What the engine describes (copied by acp_agent_new unless stated) ----------------------
 *
 * acp_mode, acp_config_value, acp_config_option, acp_auth_method and acp_perm_option are
 * array elements, written as static tables: frozen in 1.0 (acp/api.h), they never grow; a
 * later release adds a new struct (and a member of acp_engine pointing at an array of it). */

/* A session mode (SessionMode). description may be NULL. */
typedef struct acp_mode {
    const char *id, *name, *description;
} acp_mode;

/* One value of a select config option (SessionConfigSelectOption). description may be NULL.
 * Grouped values (SessionConfigSelectGroup): consecutive values with the same group id form
 * one group named group_name; either every value of an option has a group or none has. */
typedef struct acp_config_value {
    const char *value, *name, *description;
    const char *group, *group_name;
} acp_config_value;

/* A session config option (SessionConfigOption). description and category may be NULL
 * (category: "mode", "model", "model_config", "thought_level", or "_custom"). A select option
 * has values[0..nvalues) and starts at default_value (NULL: the first); a boolean option starts
 * at default_bool. Boolean options reach only clients that advertised
 * session.configOptions.boolean; others see the option as a select of "true" / "false" (the
 * spec's fallback), and the engine sees a boolean either way. An option with category "mode"
 * whose values are the mode ids is kept in step with the session mode. */
typedef struct acp_config_option {
    const char *id, *name, *description, *category;
    bool boolean;
    const acp_config_value *values;
    size_t nvalues;
    const char *default_value;
    bool default_bool;
} acp_config_option;

/* An authentication method (AuthMethod). description may be NULL. A `terminal` method (the
 * client runs the agent program itself with args appended and env set, then reconnects) is
 * advertised only to clients whose auth.terminal is true and can never be passed to
 * authenticate; any other is an `agent` method, answered by engine.authenticate. args and env
 * ("NAME=value") are NULL-terminated arrays, each may be NULL. (The env_var type of
 * rfds/auth-methods.mdx is in neither the stable nor the unstable schema: not offered.) */
typedef struct acp_auth_method {
    const char *id, *name, *description;
    bool terminal;
    const char *const *args;
    const char *const *env;
} acp_auth_method;

/* One authenticate request, answered by the engine exactly once with acp_auth_accept() or
 * acp_auth_refuse(), now or later (a browser sign-in may take minutes). */
typedef struct acp_auth acp_auth;

/* (unstable) A configurable LLM provider (ProviderInfo): an array element, frozen as
 * acp_mode is. supported: the LlmProtocol ids it speaks ("openai", "anthropic", ...),
 * NULL-terminated. api_type and base_url: where it sends requests until a client changes it
 * (api_type NULL: disabled). required: providers/disable is refused. */
typedef struct acp_provider {
    const char *id;
    const char *const *supported;
    bool required;
    const char *api_type, *base_url;
} acp_provider;

/* Lifecycle capabilities an engine can switch off (acp_engine.disable): they are not
 * advertised, and their methods answer -32601 as the spec lets a client expect. */
enum acp_engine_disable {
    ACP_DISABLE_LOAD = 1 << 0,    /* loadSession: the engine cannot rebuild its own state */
    ACP_DISABLE_RESUME = 1 << 1,  /* sessionCapabilities.resume */
    ACP_DISABLE_LIST = 1 << 2,    /* sessionCapabilities.list */
    ACP_DISABLE_DELETE = 1 << 3,  /* sessionCapabilities.delete */
    ACP_DISABLE_CLOSE = 1 << 4,   /* sessionCapabilities.close */
    ACP_DISABLE_ADD_DIRS = 1 << 5 /* additionalDirectories (a non-empty list is -32602) */
};

/* The engine: what an agent author provides. Strings, arrays and JSON values are borrowed for
 * the agent's lifetime. Every callback may be NULL except prompt. Extensible (acp/api.h):
 * start from ACP_ENGINE_INIT. */
typedef struct acp_engine {
    size_t struct_size;                  /* sizeof(acp_engine): ACP_ENGINE_INIT sets it */
    const char *name, *title, *version;  /* agentInfo (title may be NULL) */
    bool image, audio, embedded_context; /* promptCapabilities: block types accepted */
    unsigned disable;                    /* acp_engine_disable bits */
    /* _meta of the initialize result and of agentCapabilities (where the spec says to
     * advertise extensions). NULL: none. */
    const json_t *meta, *caps_meta;

    /* Modes and config options every session starts with (see acp_config_option). The
     * runtime answers session/set_mode and session/set_config_option (after asking the hooks
     * below), stores the current values with the session, and returns them in the new, load
     * and resume results. nmodes 0: the session has no modes; default_mode NULL: modes[0]. */
    const acp_mode *modes;
    size_t nmodes;
    const char *default_mode;
    const acp_config_option *config_options;
    size_t nconfig_options;
    /* Vetoes for a client's change, asked after the value was checked against the options
     * and before it is stored: return 0 to accept, or a JSON-RPC error code to refuse, with
     * an optional malloc'd sentence in *message (the runtime frees it). Read the current
     * values with acp_session_mode() / acp_session_config*(), not from these calls: a change
     * the store cannot record is answered with an error and not made. For a boolean option
     * value is NULL and on holds the value. */
    int (*set_mode)(acp_session *s, const char *mode_id, char **message, void *user);
    int (*set_config)(acp_session *s, const char *config_id, const char *value, bool on,
                      char **message, void *user);

    /* Authentication. auth_required: session/new, load, resume, prompt, list, delete,
     * set_mode and set_config_option answer -32000 until an authenticate succeeded on this
     * connection (or acp_agent_set_authenticated()). authenticate gets each request for an
     * advertised agent-type method (unknown and terminal ids are refused -32602 first).
     * logout, when set, is advertised as agentCapabilities.auth.logout; return 0 or a JSON-RPC
     * error code as the vetoes above. After a logout the connection is unauthenticated again
     * (sessions already open stay open; their prompts get -32000). */
    const acp_auth_method *auth_methods;
    size_t nauth_methods;
    bool auth_required;
    void (*authenticate)(acp_auth *au, const char *method_id, void *user);
    int (*logout)(acp_agent *a, char **message, void *user);

    /* The session is about to be answered (new, load after its replay, resume): its modes and
     * config values are already restored from the store. The engine may adjust them
     * (acp_session_set_config_options(), acp_session_set_mode()) and set the result's _meta
     * (acp_session_set_meta()); nothing it sends here is history. */
    void (*session_setup)(acp_session *s, void *user);
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
    /* The session is going away (close, delete, shutdown, or deleted from the store by
     * another process): release the engine's per-session state (acp_session_data) and stop
     * its timers. No turn is running any more. */
    void (*session_free)(acp_session *s, void *user);
    void *user;
    /* Since 1.1: the engine can replace its own instructions with the client's system prompt
     * (the unstable systemPrompt's "override" mode, advertised only then); "append" needs
     * nothing of the engine but reading acp_session_system_prompt(). */
    bool system_prompt_override;
    /* (unstable: subagent sessions) The client sent session/cancel for a child session the
     * engine made (acp_session_subagent_new) and granted `capabilities.cancel`: stop its
     * current work without ending the session. NULL: no child may grant cancel. */
    void (*subagent_cancel)(acp_session *child, void *user);

    /* Since 1.1 (unstable: ACP_UNSTABLE_PROVIDERS): the LLM providers a client may re-route
     * (agentCapabilities.providers, providers/list, set, disable; rfds/custom-llm-endpoint.mdx).
     * providers[0..nproviders) are the engine's defaults; the runtime keeps each connection's
     * changes (in memory only, never stored or logged: the headers are secrets) and answers
     * the three methods itself: an unknown providerId or an apiType the provider does not list
     * is -32602 on set, disabling a required one -32602, an unknown one succeeds. provider_set
     * (may be NULL) is asked before a set is taken, as the vetoes above (0, or a JSON-RPC error
     * code and a malloc'd *message): base_url and the "Name: value" headers are borrowed for
     * the call. The engine reads the route in effect with acp_agent_provider() for every
     * request it makes. Advertised only when nproviders is non-zero. */
    const acp_provider *providers;
    size_t nproviders;
    int (*provider_set)(acp_agent *a, const char *provider_id, const char *api_type,
                        const char *base_url, const char *const *headers, char **message,
                        void *user);
    /* (unstable: ACP_UNSTABLE_AUTH_STATUS) auth/status: the agent's sign-in state, one of
     * "authenticated", "unauthenticated", "not_required", "unknown" (static storage), and in
     * *account (NULL: none) a display label of the credential in effect (static, or valid
     * until the next call). Advertised as agentCapabilities.auth.status when set. The runtime
     * asks again after authenticate, logout and providers/set, and whenever the engine calls
     * acp_agent_auth_changed(), and sends auth/status_update when the answer differs from the
     * last one the client was told. */
    const char *(*auth_status)(acp_agent *a, const char **account, void *user);
} acp_engine;
#define ACP_ENGINE_INIT ACP_STRUCT_INIT(acp_engine)

/* The unstable features (the SDK's schema.unstable.json, not part of ACP v1 yet: their wire
 * shapes may change with the schema, and so may these names). The agent offers every one it
 * has by default; acp_agent_opts.unstable_off turns them off one by one, and then the agent
 * neither advertises the feature nor answers its methods (-32601) or fields (ignored or
 * refused as a peer without it would). */
typedef enum acp_unstable {
    ACP_UNSTABLE_FORK = 1u << 0,          /* session/fork, sessionCapabilities.fork */
    ACP_UNSTABLE_TITLE = 1u << 1,         /* session/set_title */
    ACP_UNSTABLE_ARCHIVE = 1u << 2,       /* session/archive, unarchive, list's `archived` */
    ACP_UNSTABLE_STATUS = 1u << 3,        /* session/status */
    ACP_UNSTABLE_SYSTEM_PROMPT = 1u << 4, /* systemPrompt on new, load, resume and fork */
    ACP_UNSTABLE_SUBAGENTS = 1u << 5,     /* subagent sessions and subagent_update */
    ACP_UNSTABLE_MCP_ACP = 1u << 6,       /* MCP servers over the ACP connection (mcp/message) */
    ACP_UNSTABLE_PROVIDERS = 1u << 7,     /* providers/list, set, disable */
    ACP_UNSTABLE_AUTH_STATUS = 1u << 8,   /* auth/status, auth/status_update */
    ACP_UNSTABLE_ALL = (1u << 9) - 1,
} acp_unstable;

/* The feature's name as acp-agent's --unstable-off takes it ("fork", "title", "archive",
 * "status", "system-prompt", "subagents", "mcp-acp", "providers", "auth-status"); NULL for
 * anything but one ACP_UNSTABLE_* bit. Static storage. */
const char *acp_unstable_name(unsigned feature);
/* Parses a comma-separated list of those names (or "all") into ACP_UNSTABLE_* bits in *out.
 * 0, or ACP_EINVAL for an unknown name (the last error names it). */
int acp_unstable_parse(const char *list, unsigned *out);

/* Extensible (acp/api.h): start from ACP_AGENT_OPTS_INIT. */
typedef struct acp_agent_opts {
    size_t struct_size; /* sizeof(acp_agent_opts): ACP_AGENT_OPTS_INIT sets it */
    /* Diagnostics for the operator (stderr in acp-agent). NULL: silent. Never gets secrets. */
    void (*on_log)(const char *line, void *user);
    /* Called once after acp_agent_shutdown() (or EOF on the stdio transport) has finished:
     * every session closed, the store committed, the output flushed. NULL: nothing. */
    void (*on_done)(acp_agent *a, void *user);
    void *user;
    /* MCP transports beyond stdio to accept and advertise (true only when mcp/ has them). */
    bool mcp_http, mcp_sse;
    unsigned mcp_connect_timeout_ms; /* how long new/load/resume wait for servers; 0: 10000 */
    /* The lease on each open session (acp/store.h "Leases"): how long it outlives this agent
     * if it stops renewing (killed, paused, cut off from the store), which is how long another
     * agent must wait to take the session over. Renewed every third of it. 0: 15000; at most
     * a day (longer: ACP_EINVAL from acp_agent_new). */
    unsigned lease_ttl_ms;
    /* The most acp_turn_read_local_file() returns from one read; 0: ACP_ROOTS_MAX_READ
     * (64 MiB). */
    size_t max_read;
    /* ACP_UNSTABLE_* bits: the unstable features this agent does not offer. 0: all offered. */
    unsigned unstable_off;
} acp_agent_opts;
#define ACP_AGENT_OPTS_INIT ACP_STRUCT_INIT(acp_agent_opts)

/* Creates an agent on `loop` using `store` (borrowed; must outlive the agent; several agents
 * may share one) and the engine (copied). opts may be NULL (defaults); it is copied. The agent
 * owns one acp_conn (acp_agent_conn) and is one lease holder, with an id of its own
 * (acp_agent_lease_holder). *out is owned by the caller: acp_agent_free(). 0, ACP_EINVAL (the
 * engine's modes, config options or auth methods are malformed: duplicate or missing ids, a
 * default that is not a value; or lease_ttl_ms over a day; the reason goes to opts.on_log; or
 * a struct_size 0 or too small), ACP_ENOTSUP (a struct from a newer libacp that sets members
 * this one does not know) or ACP_ENOMEM. */
int acp_agent_new(uv_loop_t *loop, acp_store *store, const acp_engine *engine,
                  const acp_agent_opts *opts, acp_agent **out);
/* Closes every session (running turns answer `cancelled`), commits, starts shutting the MCP
 * servers down and closes the transport. The memory is released from libuv callbacks: run
 * the loop afterwards (uv_run) until it returns. No engine or on_done callback runs after this
 * call. Prefer acp_agent_shutdown() and free from on_done. acp_agent_run_stdio() does all of
 * this for an agent on stdio. */
void acp_agent_free(acp_agent *a);

/* Serves the connection over two file descriptors (ACP on in_fd, responses to out_fd) with an
 * rt transport: commits run in the transport's before-flush hook; EOF on in_fd starts
 * acp_agent_shutdown(). The fds are borrowed (not closed). 0, ACP_EIO or ACP_ENOMEM. */
int acp_agent_serve_stdio(acp_agent *a, int in_fd, int out_fd);

/* A whole stdio agent in one call: acp_agent_new() on a loop of its own, served on fds 0 and 1
 * until EOF on stdin, SIGTERM or SIGINT (then acp_agent_shutdown(): turns answered `cancelled`,
 * MCP servers stopped, everything committed and flushed), then freed with every handle closed
 * and the loop closed, so nothing is left allocated when it returns. store is borrowed, engine
 * and opts as for acp_agent_new() (opts.on_done, if set, runs at the end and must not free the
 * agent). It ignores SIGPIPE unless the program set its own disposition (a client that goes
 * away is EOF, not death). For a loop of your own (other handles, an engine that needs the
 * loop), use acp_agent_new() + acp_agent_serve_stdio() and free as acp_agent_free() says.
 * Returns 0 when the client closed or a signal stopped it, else the error of acp_agent_new()
 * or acp_agent_serve_stdio() (the last error says why). */
int acp_agent_run_stdio(acp_store *store, const acp_engine *engine, const acp_agent_opts *opts);

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
/* This agent's lease holder id, as the store records it ("<host>/<pid>/<random>"; borrowed
 * for the agent's life): what an operator sees in acp_sessions.lease_holder. */
const char *acp_agent_lease_holder(const acp_agent *a);
acp_store *acp_agent_store(const acp_agent *a);
/* The client's initialize params.clientCapabilities (borrowed; an empty object before
 * initialize). */
const json_t *acp_agent_client_caps(const acp_agent *a);
/* True when the client advertised the capability at a dotted path: one of the boolean ones
 * that is true ("fs.readTextFile", "fs.writeTextFile", "terminal", "auth.terminal"), or any
 * other that is a marker object ("elicitation.form", "session.notices", extensions). Omitted
 * and null are unsupported (the spec's rule), and so is a value of the wrong type. */
bool acp_agent_client_has(const acp_agent *a, const char *path);
/* Number of active (open) sessions. */
size_t acp_agent_session_count(const acp_agent *a);
/* The client's whole initialize params (clientInfo, _meta, ...; borrowed; an empty object
 * before initialize). */
const json_t *acp_agent_init_params(const acp_agent *a);
/* --- Authentication --------------------------------------------------------------------- */

/* Whether the connection is authenticated (engine.auth_required gates on it). An engine that
 * finds valid credentials at start (say, written by a terminal login) sets it itself. */
bool acp_agent_authenticated(const acp_agent *a);
void acp_agent_set_authenticated(acp_agent *a, bool yes);

acp_agent *acp_auth_agent(const acp_auth *au);
const char *acp_auth_method_id(const acp_auth *au); /* the advertised method id (borrowed) */
const json_t *acp_auth_params(const acp_auth *au);  /* the request's params (_meta, ...) */
/* True once the client cancelled the request ($/cancel_request) or the connection shut down:
 * it was then answered -32800 already, and accept/refuse only free the handle. */
bool acp_auth_cancelled(const acp_auth *au);
/* Answers {} and marks the connection authenticated. The handle is freed. */
void acp_auth_accept(acp_auth *au);
/* Answers a JSON-RPC error (code 0: -32000 auth_required). The handle is freed. */
void acp_auth_refuse(acp_auth *au, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* (unstable) The route in effect for a provider of the engine on this connection: *api_type
 * (NULL when disabled) and *base_url, borrowed until the next providers/set or disable; and
 * *headers (NULL-terminated "Name: value" strings, secrets: never log or store them) when the
 * client set the route. Returns 1 when the client set it (send its headers and none of the
 * engine's own credentials), 0 for the engine's default (*headers NULL), ACP_ENOTFOUND for
 * an id the engine does not list. Any pointer may be NULL. */
int acp_agent_provider(const acp_agent *a, const char *provider_id, const char **api_type,
                       const char **base_url, const char *const **headers);
/* (unstable) The engine's sign-in state may have changed (engine.auth_status): the runtime asks
 * it and sends auth/status_update when the client has not been told that state yet. */
void acp_agent_auth_changed(acp_agent *a);

/* --- Extension methods -------------------------------------------------------------------- */

/* Registers handlers for an extension method of the client (a name starting with '_', else
 * ACP_EINVAL), as acp_conn_on() does: the request handler owns req and answers it with the
 * acp_req_* functions. Requests before initialize are refused -32600 like every method; a
 * method nobody registered gets -32601 and an unknown notification is ignored (the spec's
 * rules). A later registration replaces an earlier one. 0, ACP_EINVAL or ACP_ENOMEM. */
int acp_agent_on_ext(acp_agent *a, const char *method, acp_request_cb on_request,
                     acp_notify_cb on_notify, void *user);
/* Extension requests and notifications to the client ('_' names only, ACP_EINVAL
 * otherwise). Session updates held for the store go out first, so an extension message never
 * overtakes an update sent before it. params is stolen (NULL: omitted). Calls as
 * acp_conn_call(); 0, ACP_EINVAL, ACP_ECLOSED or ACP_ENOMEM. */
int acp_agent_ext_call(acp_agent *a, const char *method, json_t *params, acp_response_cb cb,
                       void *user, acp_call **out);
int acp_agent_ext_notify(acp_agent *a, const char *method, json_t *params);

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
/* The client's system prompt for the session (the unstable systemPrompt of session/new, load,
 * resume or fork, or the one stored with the session when a load or resume gave none): its
 * text blocks joined by blank lines, borrowed until the session is freed; NULL: none.
 * *override (may be NULL) is true for "override" mode (replace the engine's own
 * instructions), false for "append" (add to them). Set before engine.session_setup. */
const char *acp_session_system_prompt(const acp_session *s, bool *override);

/* Resolves `path` (absolute, or relative to cwd) following symlinks, and refuses anything that
 * is not inside the root set. A file that does not exist yet is resolved through its parent
 * directory. *out is malloc'd (caller frees) on success. ACP_EACCES outside the roots,
 * ACP_ENOTFOUND / ACP_EIO when resolution fails, ACP_ENOMEM. */
int acp_session_resolve_path(const acp_session *s, const char *path, char **out);
/* open(2) of a regular file inside the session's root set, confined by the kernel
 * (acp_roots_open in acp/roots.h says how; flags and mode as open's). *fd is the caller's.
 * ACP_EACCES outside the roots, ACP_ENOTFOUND, ACP_EINVAL (not a regular file), ACP_EIO,
 * ACP_ENOMEM; acp_error_last() says which path and why. It blocks on the disk: for reading
 * and writing whole files use acp_turn_read_local_file() / acp_turn_write_local_file(). */
int acp_session_open_path(const acp_session *s, const char *path, int flags, mode_t mode, int *fd);

/* Sends one session/update with `update` (a SessionUpdate object, borrowed). History kinds
 * (user_message_chunk, agent_message_chunk, agent_thought_chunk, tool_call, tool_call_update,
 * plan, compaction_update, compaction_summary_chunk) are appended to the store and held until
 * committed, and session/load replays them in the order they were sent; session_info_update is
 * recorded with acp_store_set_info (title, updatedAt) before it is sent; other kinds (notice,
 * usage_update, available_commands_update, ...) are only sent.
 * The runtime gates what the client must have opted into, so engines need not:
 *   - notice needs session.notices: ACP_ENOTSUP otherwise (acp_error_last() names the
 *     capability); send what matters as an agent message instead (the schema's advice);
 *   - compaction_* reach only clients with session.compaction, but are stored either way and
 *     return 0: the history must keep the compaction (an engine rebuilds its context from it
 *     on load; a client that opted in sees it replayed). For a client without it, tell the
 *     user with an agent message if it matters (what agents did before compaction updates);
 *   - current_mode_update and config_option_update are the runtime's: ACP_EINVAL, use
 *     acp_session_set_mode() / acp_session_set_config*().
 * 0, ACP_EINVAL (not an object with a sessionUpdate string, or bad UTF-8), ACP_ENOTSUP,
 * ACP_ESTORE, ACP_ENOTFOUND (the session was deleted from the store by another process:
 * nothing is sent any more, and the runtime closes it), ACP_ECLOSED (session closed),
 * ACP_ENOMEM. */
int acp_session_update(acp_session *s, const json_t *update);
/* The same with the update object as JSON text (validated unless trusted is true: only pass
 * true for text you produced yourself). The text is copied. */
int acp_session_update_raw(acp_session *s, const char *json, size_t n, bool trusted);

/* --- Subagent sessions (unstable: ACP_UNSTABLE_SUBAGENTS) ----------------------------------
 *
 * A child session the engine creates under a session and owns (the schema's SubagentUpdate):
 * announced to the client on the parent with a `subagent_update` before anything of the child
 * is sent, then streamed into like any session (acp_session_update on the child: its updates
 * carry the child's sessionId and are the child's history). Only for a client that advertised
 * clientCapabilities.subagents. The child is stored with its parent's id (acp/store.h,
 * `parent`); the runtime sends and stores every subagent_update on the parent, so a
 * session/load of the parent replays its own history (announcements included) and then each
 * child's history, oldest child first, children of children after their parent's. The client
 * may not prompt, close, load, resume, delete, set the mode or config of a child (-32602 naming
 * the parent); it may send session/cancel when the child's capabilities grant `cancel`
 * (engine.subagent_cancel hears it). A child closes when its parent closes (the engine gets
 * session_free for it, never session_ready) and is deleted with its parent. After a load the
 * children are history: the engine makes new ones for new work. */

/* Creates a child of `parent` (open, in the parent's roots, without MCP servers) and
 * announces it: patch (borrowed, NULL: {}) holds the SubagentUpdate members besides
 * sessionId: title, description, capabilities, state, cwd, additionalDirectories, _meta.
 * *out belongs to the runtime (valid until engine.session_free for it). 0, ACP_ENOTSUP
 * (the feature is off, or the client did not advertise subagents: acp_error_last() says
 * which; nothing is created), ACP_EINVAL (patch malformed or naming sessionId or
 * sessionUpdate; a capabilities.cancel without engine.subagent_cancel), ACP_ECLOSED (the
 * parent is not open), ACP_ENOTFOUND (the parent was deleted elsewhere), ACP_ESTORE,
 * ACP_ENOMEM. */
int acp_session_subagent_new(acp_session *parent, const json_t *patch, acp_session **out);
/* Sends (and stores, on the parent) a subagent_update for child with the members of patch
 * (borrowed; as above: omitted keeps, null clears), e.g. {"state":{"state":"idle",
 * "stopReason":"end_turn"}}. 0, ACP_EINVAL (not a child, or a malformed patch), ACP_ECLOSED,
 * ACP_ENOTFOUND, ACP_ENOMEM. */
int acp_session_subagent_update(acp_session *child, const json_t *patch);
/* The session that owns s, or NULL for a top-level session (or a child whose parent closed). */
acp_session *acp_session_parent(const acp_session *s);

/* --- Modes and config options of a session ------------------------------------------------ */

/* The current mode id (borrowed until it changes), or NULL when the session has no modes. */
const char *acp_session_mode(const acp_session *s);
/* The current value of a select option (borrowed until it changes); NULL when there is no
 * such select option. */
const char *acp_session_config(const acp_session *s, const char *config_id);
/* The current value of a boolean option: 0, or ACP_ENOTFOUND. */
int acp_session_config_bool(const acp_session *s, const char *config_id, bool *on);
/* Changes made by the engine itself: stored, then announced with current_mode_update /
 * config_option_update (once the session is open; before that they go in the result).
 * 0, ACP_EINVAL (unknown id or value), ACP_ESTORE, ACP_ENOTFOUND (the session was deleted
 * from the store, by another process say), ACP_ECLOSED, ACP_ENOMEM; on failure nothing
 * changed. */
int acp_session_set_mode(acp_session *s, const char *mode_id);
int acp_session_set_config(acp_session *s, const char *config_id, const char *value);
int acp_session_set_config_bool(acp_session *s, const char *config_id, bool on);
/* Replaces the session's config options (copied; say, a model list that arrived later).
 * Current values are kept where the option still has them, else the new default. Announced
 * with config_option_update once the session is open. 0, ACP_EINVAL (a malformed option:
 * see acp_error_last()), ACP_ESTORE, ACP_ENOTFOUND, ACP_ECLOSED, ACP_ENOMEM; on failure
 * nothing changed. */
int acp_session_set_config_options(acp_session *s, const acp_config_option *opts, size_t n);
/* _meta for the new/load/resume result (copied; NULL clears). Meant for session_setup. */
int acp_session_set_meta(acp_session *s, const json_t *meta);
/* The params of the request that opened the session (its _meta, ...). Borrowed: valid in
 * session_setup only, NULL elsewhere. */
const json_t *acp_session_open_params(const acp_session *s);

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
 * coalesced, as the spec allows; chunks without a message id are never merged. 0,
 * ACP_ECLOSED, ACP_ENOTFOUND (deleted elsewhere, as acp_session_update), ACP_ENOMEM. */
int acp_turn_text(acp_turn *t, const char *kind, const char *message_id, const char *text,
                  size_t n);
/* A fresh id: prefix + 32 hex digits of 128 random bits, into buf (at least strlen(prefix)+33
 * bytes). For messageId and toolCallId values. 0, or ACP_EIO when the system has no random
 * bytes to give (buf is then ""; an id is never made guessable). */
int acp_agent_new_id(const char *prefix, char *buf);

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

/* The prompt request's _meta (borrowed for the turn), or NULL. */
const json_t *acp_turn_meta(const acp_turn *t);

/* --- Calling the client --------------------------------------------------------------------
 *
 * Every agent->client request belongs to a turn (acp_turn_*: when the turn is cancelled it
 * gets $/cancel_request; once the turn has ended, by any means, it is forgotten and its
 * callback never runs) or to a session (acp_session_*: forgotten when the session closes), as
 * the engine chooses. Methods gated by a client capability fail with ACP_ENOTSUP when it was
 * not advertised, and nothing is sent: fs/read_text_file (fs.readTextFile),
 * fs/write_text_file (fs.writeTextFile), terminal/... (terminal), elicitation/create
 * (elicitation.form / elicitation.url for its mode). Requests wait behind the session's
 * uncommitted updates, so they never overtake what explains them. Callbacks get status 0, or
 * ACP_EPROTO with the client's error message or a sentence saying how its answer is malformed
 * (only that call fails), or ACP_ECLOSED (the connection ended). A session's calls are refused
 * with ACP_ECLOSED before it is open (in session_setup). */

/* Any method, with sessionId added to params (an object, stolen; NULL means {}). result is
 * borrowed for the callback. */
typedef void (*acp_turn_call_cb)(acp_turn *t, int status, const json_t *result, const char *error,
                                 void *user);
int acp_turn_call(acp_turn *t, const char *method, json_t *params, acp_turn_call_cb cb, void *user);
typedef void (*acp_session_call_cb)(acp_session *s, int status, const json_t *result,
                                    const char *error, void *user);
int acp_session_call(acp_session *s, const char *method, json_t *params, acp_session_call_cb cb,
                     void *user);

/* Tool calls of a turn (tool_call, then tool_call_update patches), stored in history like
 * every update. The handle belongs to the turn: a tool call still pending or in progress when
 * the turn ends is reported `failed` before the prompt's response (the history must not keep
 * a call that never finishes), and the handle is freed then. */
typedef struct acp_tool_call acp_tool_call;
/* What to report. Every member may be NULL: begin needs title; in an update only what is set
 * is sent. kind is a ToolKind ("read", "edit", "delete", "move", "search", "execute", "think",
 * "fetch", "switch_mode", "other"); status a ToolCallStatus ("pending", "in_progress",
 * "completed", "failed"). content (ToolCallContent[]) and locations (ToolCallLocation[]) are
 * borrowed JSON arrays and replace the client's collections; text appends one text content
 * item and terminal a terminal item (its output shown by the client, also after release) to
 * that content; path adds one location. */
typedef struct acp_tool_info {
    size_t struct_size; /* extensible (acp/api.h): ACP_TOOL_INFO_INIT */
    const char *title, *name, *kind, *status;
    const json_t *content, *locations, *raw_input, *raw_output, *meta;
    const char *text;
    const acp_terminal *terminal;
    const char *path;
} acp_tool_info;
#define ACP_TOOL_INFO_INIT ACP_STRUCT_INIT(acp_tool_info)
/* Sends tool_call with a fresh toolCallId (status pending unless info->status says
 * otherwise). *out belongs to the turn. 0, ACP_EINVAL (no title, unknown kind or status,
 * malformed content or locations, a relative path: see acp_error_last()), ACP_ECLOSED (the
 * turn's response is decided), ACP_ESTORE, ACP_ENOMEM. */
int acp_tool_call_begin(acp_turn *t, const acp_tool_info *info, acp_tool_call **out);
/* A tool_call_update with what info sets. After completed or failed: ACP_EINVAL. */
int acp_tool_call_update(acp_tool_call *tc, const acp_tool_info *info);
/* Status completed with info's content (info may be NULL), or failed with message as a text
 * content item (message may be NULL). */
int acp_tool_call_complete(acp_tool_call *tc, const acp_tool_info *info);
int acp_tool_call_fail(acp_tool_call *tc, const char *message);
const char *acp_tool_call_id(const acp_tool_call *tc); /* borrowed, the handle's lifetime */

/* session/request_permission for a tool call of the turn (its id, title and kind are sent).
 * opts[0..n) are copied: id, name, kind ("allow_once", "allow_always", "reject_once",
 * "reject_always"). cb gets option_id (borrowed, one of opts) and its kind, or option_id NULL
 * when the outcome is `cancelled`: the client's answer, or the turn's cancellation (then cb
 * runs at once, without waiting for the client, and $/cancel_request goes out; "at once" is
 * right after engine.cancel returned, unless that ended the turn). An answer naming no offered
 * option is ACP_EPROTO. 0, ACP_EINVAL, ACP_ECLOSED, ACP_ENOMEM. acp_perm_option is an array
 * element: frozen in 1.0 (see acp_mode). */
typedef struct acp_perm_option {
    const char *id, *name, *kind;
} acp_perm_option;
typedef void (*acp_perm_cb)(acp_turn *t, int status, const char *option_id, const char *kind,
                            const char *error, void *user);
int acp_turn_request_permission(acp_turn *t, const acp_tool_call *tc, const acp_perm_option *opts,
                                size_t n, acp_perm_cb cb, void *user);

/* fs/read_text_file (line and limit: 0 for none; line is 1-based) and fs/write_text_file.
 * path is resolved against cwd and must be inside the session's root set (checked after
 * resolving symlinks): ACP_EACCES otherwise, and nothing is sent. The read's text is borrowed
 * for the callback. */
typedef void (*acp_fs_read_cb)(acp_session *s, int status, const char *text, size_t n,
                               const char *error, void *user);
typedef void (*acp_done_cb)(acp_session *s, int status, const char *error, void *user);
int acp_turn_read_text_file(acp_turn *t, const char *path, unsigned line, unsigned limit,
                            acp_fs_read_cb cb, void *user);
int acp_session_read_text_file(acp_session *s, const char *path, unsigned line, unsigned limit,
                               acp_fs_read_cb cb, void *user);
int acp_turn_write_text_file(acp_turn *t, const char *path, const char *text, size_t n,
                             acp_done_cb cb, void *user);
int acp_session_write_text_file(acp_session *s, const char *path, const char *text, size_t n,
                                acp_done_cb cb, void *user);

/* The engine's own disk, for an engine that reads and writes files itself (the client offers
 * no fs): the same confinement, regular-files-only rule and atomic replace as the client
 * library's fs handlers (acp_roots_read and acp_roots_write in acp/roots.h), run on libuv's
 * thread pool so that the loop never waits on a disk. read: from the 1-based `line` (0: 1), at
 * most `limit` lines (SIZE_MAX: all), at most acp_agent_opts.max_read bytes (ACP_ETOOBIG
 * past it). write: the n bytes at data (copied) replace the file atomically. cb runs later on
 * the loop with status 0, or an ACP_E* status and a sentence (outside the roots, not a
 * regular file, missing, too big); never when the turn has ended first. 0 when started,
 * ACP_ENOMEM. */
int acp_turn_read_local_file(acp_turn *t, const char *path, size_t line, size_t limit,
                             acp_fs_read_cb cb, void *user);
int acp_turn_write_local_file(acp_turn *t, const char *path, const void *data, size_t n,
                              acp_done_cb cb, void *user);

/* Terminals (terminal/create ... release). The handle is the engine's until it calls
 * acp_terminal_release(); the runtime releases it itself when its owner goes away: the turn
 * ends (a turn's terminal), the session closes (a session's terminal), the agent shuts down.
 * The spec says the agent MUST release: with this API it always does, also when the client
 * has not yet answered terminal/create (the release follows the answer), also after the
 * client closed our input (the release is still written: a half-closed client reads on).
 * After a release the handle is invalid and no callback of it runs. */
typedef struct acp_terminal_opts {
    size_t struct_size;         /* extensible (acp/api.h): ACP_TERMINAL_OPTS_INIT */
    const char *command;        /* required */
    const char *const *args;    /* NULL-terminated; NULL: none */
    const char *const *env;     /* "NAME=value", NULL-terminated; NULL: none */
    const char *cwd;            /* absolute, inside the roots; NULL: the client's choice */
    uint64_t output_byte_limit; /* 0: none */
} acp_terminal_opts;
#define ACP_TERMINAL_OPTS_INIT ACP_STRUCT_INIT(acp_terminal_opts)
/* The library's (acp/api.h), handed to the callbacks below: may grow at the end. */
typedef struct acp_terminal_exit {
    bool exited;        /* false: still running (terminal/output only) */
    long exit_code;     /* -1: none (killed by a signal) */
    const char *signal; /* borrowed, NULL: none */
} acp_terminal_exit;
typedef void (*acp_terminal_cb)(acp_terminal *term, int status, const char *error, void *user);
typedef void (*acp_terminal_output_cb)(acp_terminal *term, int status, const char *output, size_t n,
                                       bool truncated, const acp_terminal_exit *exit,
                                       const char *error, void *user);
typedef void (*acp_terminal_exit_cb)(acp_terminal *term, int status, const acp_terminal_exit *exit,
                                     const char *error, void *user);
/* Sends terminal/create; cb runs once the client answered (status 0: acp_terminal_id() is
 * set). On failure of the call itself nothing is sent and *out is NULL; when cb reports a
 * failure the handle is freed right after cb returns. */
int acp_turn_terminal_create(acp_turn *t, const acp_terminal_opts *o, acp_terminal_cb cb,
                             void *user, acp_terminal **out);
int acp_session_terminal_create(acp_session *s, const acp_terminal_opts *o, acp_terminal_cb cb,
                                void *user, acp_terminal **out);
const char *acp_terminal_id(const acp_terminal *term); /* NULL until created */
acp_session *acp_terminal_session(const acp_terminal *term);
/* terminal/output, terminal/wait_for_exit and terminal/kill (the terminal stays valid after a
 * kill: read its output, then release it). ACP_EINVAL before the id is known. */
int acp_terminal_output(acp_terminal *term, acp_terminal_output_cb cb, void *user);
int acp_terminal_wait_for_exit(acp_terminal *term, acp_terminal_exit_cb cb, void *user);
int acp_terminal_kill(acp_terminal *term, acp_terminal_cb cb, void *user);
void acp_terminal_release(acp_terminal *term);

/* elicitation/create. Form mode when form is set (requestedSchema, borrowed; the answer's
 * content is checked against it: the properties' types, enums and required names), URL mode
 * when url is set: the runtime makes the elicitationId (unique on the connection) and returns
 * it in id_out (at least 48 bytes) for acp_agent_elicit_complete(). The spec forbids form
 * mode for secrets: use URL mode, and never fall back to a form when the client has no URL
 * mode. tool_call (optional) ties a session elicitation to a tool call. cb gets the action
 * ("accept", "decline", "cancel", or another string the client sent) and, for accept, the
 * content (borrowed; NULL when none). When a turn's elicitation is cancelled with the turn, cb
 * runs at once (as a permission's) with "cancel" and $/cancel_request goes out. */
typedef struct acp_elicit {
    size_t struct_size; /* extensible (acp/api.h): ACP_ELICIT_INIT */
    const char *message;
    const json_t *form;
    const char *url;
    const acp_tool_call *tool_call;
} acp_elicit;
#define ACP_ELICIT_INIT ACP_STRUCT_INIT(acp_elicit)
typedef void (*acp_elicit_cb)(acp_session *s, int status, const char *action, const json_t *content,
                              const char *error, void *user);
int acp_turn_elicit(acp_turn *t, const acp_elicit *e, char *id_out, acp_elicit_cb cb, void *user);
int acp_session_elicit(acp_session *s, const acp_elicit *e, char *id_out, acp_elicit_cb cb,
                       void *user);
/* A request-scoped elicitation during an authenticate request (the scope the schema gives
 * to sign-in flows outside a session): cb gets s NULL. */
int acp_auth_elicit(acp_auth *au, const acp_elicit *e, char *id_out, acp_elicit_cb cb, void *user);
/* elicitation/complete for a URL elicitation of this connection still outstanding (its
 * external interaction finished). ACP_ENOTFOUND for an id the client was never sent or that
 * was completed already. */
int acp_agent_elicit_complete(acp_agent *a, const char *elicitation_id);

ACP_END_DECLS
#endif
