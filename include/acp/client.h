/* acp_client: the client side of ACP. It spawns an agent, initializes it, and offers typed
 * calls for every agent method; it serves the methods the agent may call back (fs, terminal,
 * permission), each only when the application enables it.
 *
 * Capabilities are checked before anything is sent: a call the agent did not advertise
 * (session/load without loadSession, session/resume without sessionCapabilities.resume,
 * additionalDirectories, HTTP/SSE MCP servers, ...) fails with ACP_ENOTSUP and a message naming
 * the missing capability, and nothing goes on the wire.
 *
 * Calls are synchronous: they run the client's libuv loop until their answer arrives, and the
 * application's callbacks (updates, permission requests) run from inside them, in the order
 * the agent sent things. Callbacks may call acp_client_session_cancel() and
 * acp_client_perm_reply() but no other blocking call (libuv loops are not reentrant).
 * Timers, signals and other handles the application puts on acp_client_loop() run during
 * calls too: that is how the `acp` tool turns Ctrl-C into session/cancel.
 *
 * Programs should ignore SIGPIPE (see rt.h): an agent that exits while we write would
 * otherwise kill the process. Not thread-safe; two clients in one process are independent. */
#ifndef ACP_CLIENT_H
#define ACP_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>
#include <uv.h>

#include "acp/error.h"
#include "acp/json.h"

#ifdef __cplusplus
extern "C" {
#endif

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
} acp_update_kind;

/* One session/update notification, as views into the received line (valid during the
 * callback only). No JSON tree is built to route it: parse `update` yourself if you need it. */
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
} acp_agent_cap;

typedef struct acp_client_opts {
    /* The agent: argv (NULL-terminated; argv[0] searched in PATH) or, when argv is NULL, a
     * command line split like a shell does (quotes and backslashes; no expansion). */
    const char *const *argv;
    const char *command;
    /* Environment for the agent as "NAME=VALUE" strings, NULL-terminated; NULL inherits. */
    const char *const *env;
    /* What we offer the agent. Each enables the matching agent->client methods; requests for
     * methods not enabled are answered -32601. */
    bool fs_read;
    bool fs_write;
    bool terminal;
    /* Largest message accepted from the agent; 0 means 128 MiB (a 32 MiB update escaped). */
    size_t max_message;
    /* How long initialize may take before acp_client_open() gives up (ACP_ETIMEDOUT): a
     * program that is not an ACP agent would otherwise hang us. 0 means 30 s. */
    unsigned init_timeout_ms;
    /* Every session/update, in arrival order. s is NULL for a session this client has no
     * handle for (the agent may talk about any session). */
    void (*on_update)(acp_client *c, acp_client_session *s, const acp_update *u, void *user);
    /* session/request_permission. params is the request's params (borrowed, valid during the
     * call). The application owns p until it calls acp_client_perm_reply() exactly once, now
     * or later. NULL: every request is answered with the first reject_once/reject_always
     * option (cancelled when there is none). */
    void (*on_permission)(acp_client *c, acp_client_session *s, acp_client_perm *p, json_t *params,
                          void *user);
    void *user;
} acp_client_opts;

/* Spawns the agent (its own process group; stderr inherited) and runs `initialize` with our
 * clientInfo {"name":"libacp","version":ACP_VERSION} and the enabled capabilities. On success
 * *out is owned by the caller (acp_client_free()). On failure *out is NULL and, if errmsg is
 * non-NULL, *errmsg is a malloc'd sentence the caller frees. Returns ACP_EINVAL (bad command
 * line), ACP_EIO (spawn failed), ACP_ECLOSED (the agent exited), ACP_EPROTO (initialize
 * failed or an unsupported protocolVersion), ACP_ETIMEDOUT, ACP_ENOMEM. */
int acp_client_open(const acp_client_opts *opts, acp_client **out, char **errmsg);
/* Closes the agent's stdin, waits for it briefly (2 s), then SIGTERM/SIGKILL to its group;
 * releases every terminal (killing its command), frees every session handle. Permission handles
 * the application still holds were answered `cancelled` and stay valid: acp_client_perm_reply()
 * then only frees them. Close your own handles on acp_client_loop() first: this runs the loop
 * until it is empty. NULL is ignored. */
void acp_client_free(acp_client *c);

uv_loop_t *acp_client_loop(acp_client *c);
/* The initialize result (borrowed; lives as long as c). */
json_t *acp_client_init_result(const acp_client *c);
bool acp_client_supports(const acp_client *c, acp_agent_cap cap);
/* The last failed call's message, a sentence naming what to do (borrowed until the next call;
 * "" when none). For agent errors, the agent's own message with its code. */
const char *acp_client_errmsg(const acp_client *c);
/* The JSON-RPC error code of the last failure answered by the agent, else 0. */
int acp_client_errcode(const acp_client *c);
/* True once the agent closed its output (exited or crashed). */
bool acp_client_agent_gone(const acp_client *c);

/* --- sessions ------------------------------------------------------------------------ */

typedef struct acp_session_opts {
    const char *cwd;             /* absolute; NULL: the process's working directory */
    const char *const *add_dirs; /* additionalDirectories, NULL-terminated; NULL: none */
    /* mcpServers as a JSON array (borrowed); NULL: []. Entries with "type":"http"/"sse" need
     * the matching mcpCapabilities. */
    json_t *mcp_servers;
} acp_session_opts;

/* session/new, session/load (replay delivered to on_update before this returns), and
 * session/resume. On success *out is a handle owned by the caller until acp_client_session_
 * close() or acp_client_session_free() (or acp_client_free()). ACP_ENOTSUP when the agent
 * lacks the capability; ACP_EPROTO (see acp_client_errmsg/errcode) when it refuses. */
int acp_client_session_new(acp_client *c, const acp_session_opts *o, acp_client_session **out);
int acp_client_session_load(acp_client *c, const char *id, const acp_session_opts *o,
                            acp_client_session **out);
int acp_client_session_resume(acp_client *c, const char *id, const acp_session_opts *o,
                              acp_client_session **out);

const char *acp_client_session_id(const acp_client_session *s);
/* The new/load/resume result (borrowed): modes, configOptions, _meta. */
json_t *acp_client_session_result(const acp_client_session *s);
acp_client *acp_client_session_client(const acp_client_session *s);
void acp_client_session_set_user(acp_client_session *s, void *user);
void *acp_client_session_user(const acp_client_session *s);

/* session/prompt with one text block, or with `blocks` (a JSON array, borrowed). Returns when
 * the turn ends; *stop (optional) receives the stop reason ("end_turn", "cancelled", ...;
 * static storage, "unknown" for a value we do not know). ACP_EBUSY if a prompt is already
 * running on s. */
int acp_client_session_prompt(acp_client_session *s, const char *text, const char **stop);
int acp_client_session_prompt_blocks(acp_client_session *s, json_t *blocks, const char **stop);
/* The same without waiting: cb runs (from the loop, during any blocking call or
 * acp_client_run_once()) when the turn ends, with the status and stop reason as above. Prompts
 * on different sessions may run at the same time. If the handle is freed first, cb runs then
 * with ACP_ECANCELLED (s still valid during the call) and the agent's answer is dropped. */
typedef void (*acp_client_prompt_cb)(acp_client_session *s, int status, const char *stop,
                                     void *user);
int acp_client_session_prompt_start(acp_client_session *s, json_t *blocks, acp_client_prompt_cb cb,
                                    void *user);
/* Runs the loop once, waiting for something to happen (an update, an answer, a timer of the
 * application). ACP_ECLOSED when nothing is left that could happen. */
int acp_client_run_once(acp_client *c);
/* Sends session/cancel (without waiting) and answers every pending permission request of the
 * session with the `cancelled` outcome, as the spec requires. Safe from callbacks and from
 * handles on the loop. A no-op when no prompt is running. */
int acp_client_session_cancel(acp_client_session *s);
/* session/set_mode and session/set_config_option (a select option's value id). Gated by the
 * agent having returned modes / configOptions for the session (ACP_ENOTSUP otherwise). */
int acp_client_session_set_mode(acp_client_session *s, const char *mode_id);
int acp_client_session_set_config(acp_client_session *s, const char *config_id, const char *value);
/* session/close (needs sessionCapabilities.close), then frees the handle whatever the answer;
 * ACP_ENOTSUP (handle kept) when not advertised. */
int acp_client_session_close(acp_client_session *s);
/* Forgets the handle locally; nothing is sent. */
void acp_client_session_free(acp_client_session *s);

/* session/list, one page: cwd (filter) and cursor may be NULL. *result (caller owns,
 * json_decref) is the ListSessionsResponse: sessions[] and maybe nextCursor. */
int acp_client_list(acp_client *c, const char *cwd, const char *cursor, json_t **result);
/* session/delete (needs sessionCapabilities.delete). A handle for that session, if any, is
 * freed on success. */
int acp_client_delete(acp_client *c, const char *id);
/* session/close by id, for a session this process has no handle for. */
int acp_client_close_id(acp_client *c, const char *id);

/* --- permission requests -------------------------------------------------------------- */

/* Answers with the option id (copied) or, when option_id is NULL, with `cancelled`; frees p.
 * After acp_client_session_cancel() already answered it, this only frees p. */
int acp_client_perm_reply(acp_client_perm *p, const char *option_id);
/* True when the request was already answered `cancelled` by a cancel. */
bool acp_client_perm_cancelled(const acp_client_perm *p);

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

#ifdef __cplusplus
}
#endif
#endif
