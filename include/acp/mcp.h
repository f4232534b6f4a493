/* SPDX-License-Identifier: Apache-2.0 */
/* acp_mcp_set: the MCP servers of one ACP session, as an MCP client (revision 2025-11-25;
 * servers that negotiate 2025-06-18 or 2025-03-26 are accepted too).
 *
 * A set is built from the `mcpServers` array of session/new, session/load or session/resume
 * (schema.json McpServer). Every server connects in parallel on the caller's libuv loop:
 *   - stdio: `command` (an absolute path) with `args`, in its own process group, with exactly
 *     the given `env` on top of a minimal base (PATH=/usr/local/bin:/usr/bin:/bin, HOME, LANG)
 *     and rt's ACP_PROC_TAG (acp_proc_spawn in rt.h: how what it starts is found at close);
 *     NDJSON over its stdin/stdout; its stderr goes to opts.on_log, bounded.
 *   - "http": MCP Streamable HTTP (POST, JSON or SSE answers, Mcp-Session-Id, the GET stream,
 *     Last-Event-ID resumption after the server's retry delay, DELETE at close). A READY server
 *     that answers 404 to our session id gets a new initialize (the calls in flight fail).
 *     The client's `headers` go on every request, except those the transport sets itself
 *     (Accept, Content-Type, Content-Length, Mcp-Session-Id, MCP-Protocol-Version,
 *     Last-Event-ID).
 *   - "sse": the deprecated HTTP+SSE transport (GET the stream, POST to its `endpoint`, which
 *     must be on the stream's origin).
 *   - "acp" (unstable: MCP over ACP): the server lives in the ACP client and its messages
 *     travel as `mcp/message` on the ACP connection (acp_mcp_opts.acp_peer), MCP 2026-07-28.
 * The handshake is initialize (capabilities: roots with listChanged) -> notifications/initialized
 * -> tools/list (every page, up to 1000 pages; skipped when the server has no tools
 * capability). After that the server is READY. A server that cannot start, times
 * out or breaks the protocol becomes FAILED with a reason; it never affects the other servers.
 *
 * Served to the MCP server: roots/list (the set's roots as file:// URIs) and ping. Any other
 * request gets -32601; notifications other than tools/list_changed (re-lists the tools),
 * progress and cancelled are ignored.
 *
 * Tool names for engines: a tool is addressed by (server name, tool name). Engines that need a
 * single flat name use "SERVER.TOOL" (server name, a dot, the tool name as the server gave it);
 * acp_mcp_tool_find() resolves such a name.
 *
 * Secrets: env values and header values never appear in logs, status reasons or error
 * messages; they are kept in memory only as long as the server needs them.
 *
 * Not thread-safe: use a set from its loop's thread. Callbacks run from the loop, never from
 * inside the call that registered them, except where a function says so.
 *
 * Errors: a negative ACP_E* status, with the sentence in acp_error_last() (acp/error.h); a
 * server's failure is its status and reason, a call's comes to on_done, diagnostics to on_log. */
#ifndef ACP_MCP_H
#define ACP_MCP_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>
#include <uv.h>

#include "acp/error.h"
#include "acp/rpc.h"

#include "acp/api.h"

ACP_BEGIN_DECLS

typedef struct acp_mcp_set acp_mcp_set;
typedef struct acp_mcp_call acp_mcp_call;

enum acp_mcp_status {
    ACP_MCP_CONNECTING, /* starting, initializing or listing tools */
    ACP_MCP_READY,      /* tools known; calls accepted */
    ACP_MCP_FAILED,     /* see the reason; the server is stopped */
    ACP_MCP_CLOSED,     /* the set is closing */
};

/* "connecting", "ready", "failed", "closed". Never NULL. */
const char *acp_mcp_status_name(enum acp_mcp_status st);

/* Extensible (acp/api.h): start from ACP_MCP_OPTS_INIT. */
typedef struct acp_mcp_opts {
    size_t struct_size; /* sizeof(acp_mcp_opts): ACP_MCP_OPTS_INIT sets it */
    bool http;          /* accept type "http" servers (advertise mcpCapabilities.http) */
    bool sse;           /* accept type "sse" servers (advertise mcpCapabilities.sse) */
    /* Timeouts, in milliseconds; 0 picks the default. */
    unsigned connect_timeout_ms; /* start + initialize + first tools/list: 10000 */
    unsigned request_timeout_ms; /* tools/list on list_changed and other requests: 30000 */
    unsigned call_timeout_ms;    /* one tools/call (reset by progress): 600000 */
    unsigned kill_grace_ms;      /* close: stdin closed -> SIGTERM -> SIGKILL steps: 2000 */
    /* A line of diagnostics about server `name`: its stderr ("stderr: ..." lines, bounded:
     * at most 4 KiB per line, a burst of 200 lines then 10 a second, the rest counted, not
     * passed; env values that appear in them are replaced by ***) and our own notes. Never
     * contains env or header values. NULL: written to our stderr as "mcp[NAME]: LINE". */
    void (*on_log)(const char *name, const char *line, void *user);
    /* Server `index` changed status or its tool list changed. May be NULL. */
    void (*on_change)(acp_mcp_set *s, size_t index, void *user);
    void *user;
    /* Stdio servers (a command line run on this host) are not started: each is FAILED with a
     * reason that says so, the others serve. For clients that must not run commands here. */
    bool no_stdio;
    /* MCP over ACP (unstable: ACP_UNSTABLE_MCP_ACP). Type "acp" servers ({"type": "acp",
     * "name", "serverId"}) are accepted only when this is set: the ACP connection to the client
     * that declared them (borrowed; it must outlive the set). The set sends that client an
     * `mcp/message` request per MCP request (MCP 2026-07-28: no initialize; the handshake is
     * server/discover, then tools/list; the protocol version and client capabilities go in
     * every request's params._meta), and is given the client's `mcp/message` notifications
     * with acp_mcp_set_acp_notify(). A cancelled or timed-out call sends $/cancel_request for
     * its mcp/message. An outer error, or an answer that is neither {"result"} nor {"error"}
     * or is larger than 16 MiB, fails that call only; the server fails when the connection
     * ends (or, as any server, when it does not answer its handshake in connect_timeout_ms). */
    acp_conn *acp_peer;
} acp_mcp_opts;
#define ACP_MCP_OPTS_INIT ACP_STRUCT_INIT(acp_mcp_opts)

/* Validates `servers` (a JSON array of McpServer; NULL or null means none) and starts
 * connecting every server. Malformed entries (a missing or mistyped field, a duplicate server
 * name, an unknown type) and types not enabled in opts give ACP_EINVAL, and acp_error_last()
 * names the entry ("mcpServers[1]: type \"sse\" is not supported"): the agent answers -32602
 * with it. A server that cannot start (relative
 * command, missing binary, dead URL) is NOT an error here: it becomes FAILED with a reason.
 * `roots` are absolute directory paths (copied). opts may be NULL (defaults; http and sse
 * off); it is copied. On success *out is owned by the caller: acp_mcp_set_close(). */
int acp_mcp_set_new(uv_loop_t *loop, const json_t *servers, const acp_mcp_opts *opts,
                    const char *const *roots, size_t nroots, acp_mcp_set **out);

/* Calls cb once every server is READY or FAILED, or when timeout_ms expires, whichever comes
 * first (servers still connecting then go on in the background; watch opts.on_change). cb
 * always runs from the loop, also when everything is already settled. One wait at a time: a
 * second call replaces the first (whose cb is then not called). acp_mcp_set_close() calls a
 * pending cb before it returns. */
void acp_mcp_set_wait(acp_mcp_set *s, unsigned timeout_ms, void (*cb)(void *user), void *user);

/* Replaces the roots (copied) and, when they differ, sends notifications/roots/list_changed to
 * every READY server. 0 or ACP_ENOMEM. */
int acp_mcp_set_roots(acp_mcp_set *s, const char *const *roots, size_t nroots);

/* Shuts every server down and frees the set. Calls in flight finish with ACP_ECLOSED (their
 * on_done runs before this returns). stdio: close its stdin, wait kill_grace_ms, SIGTERM the
 * process group and every process carrying the server's tag (those that left the group:
 * setsid, double fork), wait again, SIGKILL them: nothing of the server outlives
 * 2 * kill_grace_ms; the child is always reaped. http: DELETE the MCP
 * session (bounded by kill_grace_ms). `done` (may be NULL) runs from the loop when nothing is
 * left running and every handle is closed; the set is freed just before it. */
void acp_mcp_set_close(acp_mcp_set *s, void (*done)(void *user), void *user);

/* An `mcp/message` notification the ACP peer sent (its params: serverId, requestId, method,
 * params; borrowed), for one of this set's "acp" servers: handed to that server as the inner
 * notification (progress, mostly) of the request it names; dropped when that request has
 * ended. 0, or ACP_ENOTFOUND when no "acp" server of this set has that serverId (try the
 * peer's other sessions), or ACP_EINVAL for params that do not have that shape. (unstable) */
int acp_mcp_set_acp_notify(acp_mcp_set *s, const json_t *params);

/* --- Servers (by index, 0 .. count-1, in the order given) --------------------------------- */

size_t acp_mcp_set_count(const acp_mcp_set *s);
/* The index of the server called `name`, or ACP_ENOTFOUND. */
int acp_mcp_server_find(const acp_mcp_set *s, const char *name, size_t *index);
const char *acp_mcp_server_name(const acp_mcp_set *s, size_t i); /* borrowed, set lifetime */
/* "stdio", "http", "sse" or "acp". */
const char *acp_mcp_server_transport(const acp_mcp_set *s, size_t i);
/* Status, and with reason non-NULL, why it FAILED ("command must be an absolute path: 'npx'",
 * "no answer to initialize within 10000 ms", ...; NULL otherwise). The reason is borrowed until
 * the status changes. */
enum acp_mcp_status acp_mcp_server_status(const acp_mcp_set *s, size_t i, const char **reason);
/* The protocol revision the server agreed to and its serverInfo object; NULL until READY.
 * Borrowed until the status changes. */
const char *acp_mcp_server_protocol(const acp_mcp_set *s, size_t i);
const json_t *acp_mcp_server_info(const acp_mcp_set *s, size_t i);

/* --- Tools --------------------------------------------------------------------------------- */

/* Tools of server i (0 unless READY). Everything returned is borrowed and valid until the tool
 * list changes, which only happens from the loop: copy what you keep past your callback. */
size_t acp_mcp_tool_count(const acp_mcp_set *s, size_t i);
const char *acp_mcp_tool_name(const acp_mcp_set *s, size_t i, size_t t);
const char *acp_mcp_tool_description(const acp_mcp_set *s, size_t i, size_t t); /* or NULL */
const json_t *acp_mcp_tool_input_schema(const acp_mcp_set *s, size_t i, size_t t);
const json_t *acp_mcp_tool_json(const acp_mcp_set *s, size_t i, size_t t); /* the whole Tool */
/* Resolves "SERVER.TOOL" (server names may themselves contain dots: the longest server name
 * that matches wins). 0, or ACP_ENOTFOUND. */
int acp_mcp_tool_find(const acp_mcp_set *s, const char *qualified, size_t *server, size_t *tool);

/* --- Calls --------------------------------------------------------------------------------- */

/* Extensible (acp/api.h): start from ACP_MCP_CALL_CBS_INIT. */
typedef struct acp_mcp_call_cbs {
    size_t struct_size; /* sizeof(acp_mcp_call_cbs): ACP_MCP_CALL_CBS_INIT sets it */
    /* notifications/progress for this call. total < 0 when unknown; message may be NULL. */
    void (*on_progress)(acp_mcp_call *c, double progress, double total, const char *message,
                        void *user);
    /* Exactly once. status 0: `result` is the CallToolResult (borrowed for the call; it may
     * have isError: true, a tool-level failure). Otherwise result is NULL and status is
     * ACP_EPROTO (the server answered a JSON-RPC error, or nonsense), ACP_ETIMEDOUT,
     * ACP_ECANCELLED (acp_mcp_call_cancel) or ACP_ECLOSED (the server went away or the set is
     * closing); `error` is a sentence for a person. The handle is freed when this returns. */
    void (*on_done)(acp_mcp_call *c, int status, const json_t *result, const char *error,
                    void *user);
} acp_mcp_call_cbs;
#define ACP_MCP_CALL_CBS_INIT ACP_STRUCT_INIT(acp_mcp_call_cbs)

/* Calls tool `tool` of server `server` (a name) with `args` (an object, stolen; NULL sends {}),
 * asking for progress notifications. cbs is copied. Returns 0 and, with out non-NULL, a handle
 * valid until on_done returns; or ACP_ENOTFOUND (no such server), ACP_ECLOSED (the server is
 * not READY), ACP_ENOMEM. On failure no callback runs. The tool name is not checked against
 * the list: the server decides. */
int acp_mcp_call_tool(acp_mcp_set *s, const char *server, const char *tool, json_t *args,
                      const acp_mcp_call_cbs *cbs, void *user, acp_mcp_call **out);
/* Sends notifications/cancelled for the call and finishes it now: on_done runs with
 * ACP_ECANCELLED before this returns; a late answer is ignored. */
void acp_mcp_call_cancel(acp_mcp_call *c);

/* Any MCP request to READY server `server` (method and params as MCP has them; params stolen,
 * NULL sends none): for relays and methods this header has no call for. on_done as for
 * acp_mcp_call_tool(), with result any JSON value the server answered; a JSON-RPC error from
 * the server is ACP_EPROTO and acp_mcp_call_rpc_error() gives it. The timeout is
 * request_timeout_ms (call_timeout_ms for tools/call). Same returns as acp_mcp_call_tool(). */
int acp_mcp_request(acp_mcp_set *s, const char *server, const char *method, json_t *params,
                    const acp_mcp_call_cbs *cbs, void *user, acp_mcp_call **out);
/* During on_done with ACP_EPROTO: the server's JSON-RPC error object ({code, message, data})
 * when it answered one (borrowed for the callback), else NULL. */
const json_t *acp_mcp_call_rpc_error(const acp_mcp_call *c);

ACP_END_DECLS
#endif
