/* SPDX-License-Identifier: Apache-2.0 */
/* acp_server: agents serving ACP over the network (docs/remote.md).
 *
 * One listening endpoint serves both remote profiles of ACP (WebSocket and Streamable HTTP,
 * over HTTP/1.1 and HTTP/2, with TLS or without). Every ACP connection that arrives gets its
 * own acp_agent, made like acp_agent_new() makes one, on the same loop, store and engine: all
 * of them share the store, so a session made on one connection (or on another host using the
 * same PostgreSQL store) can be loaded on another.
 *
 * Everything runs on one libuv loop thread.
 *
 * Errors: a negative ACP_E* status, with the sentence in acp_error_last() (acp/error.h); a
 * connection's trouble goes to the agents' on_log. */
#ifndef ACP_SERVER_H
#define ACP_SERVER_H

#include <stddef.h>
#include <uv.h>

#include "acp/agent.h"

#include "acp/api.h"

ACP_BEGIN_DECLS

typedef struct acp_server acp_server;

/* acp_server_opts.stdio_mcp. */
typedef enum acp_server_stdio_mcp {
    ACP_SERVER_STDIO_MCP_DEFAULT = 0, /* refused when non-loopback or with roots */
    ACP_SERVER_STDIO_MCP_ALLOW,
    ACP_SERVER_STDIO_MCP_REFUSE,
} acp_server_stdio_mcp;

/* Extensible (acp/api.h): start from ACP_SERVER_OPTS_INIT. */
typedef struct acp_server_opts {
    size_t struct_size; /* sizeof(acp_server_opts): ACP_SERVER_OPTS_INIT sets it */
    /* Where to listen: "HOST:PORT" (a name or an address, "[::1]:PORT" for IPv6; port 0
     * picks a free one, see acp_server_port) or "unix:/path"; or "systemd": the sockets a
     * service manager passed to this process (socket activation, sd_listen_fds(3)'s
     * LISTEN_PID, LISTEN_FDS, LISTEN_FDNAMES; read without libsystemd, and removed from the
     * environment), every one served; loopback when each is a Unix socket or bound to a
     * loopback address. */
    const char *listen;
    /* TLS: PEM certificate chain and key files, both or neither. ALPN offers h2 and
     * http/1.1. Without them the server speaks cleartext (HTTP/1.1, and h2c with prior
     * knowledge), for loopback and for TLS-terminating proxies. */
    const char *tls_cert, *tls_key;
    /* The bearer token every request must carry (Authorization: Bearer <token>); anything
     * else is answered 401 before a byte of its body is read. Compared in constant time.
     * Copied, kept only in memory, and never logged. NULL: no authentication. */
    const char *token;
    /* Web pages allowed to connect: a request carrying an Origin header (every browser's
     * WebSocket and fetch do; the official SDK in Node, curl and acp_client do not) is
     * answered 403 unless its Origin equals one of these exactly ("*" allows any), whether
     * or not it has a valid token (docs/remote.md). Copied. NULL/0: no web page may. */
    const char *const *allow_origins;
    size_t n_allow_origins;

    /* Limits; 0 means the default in brackets. */
    size_t max_message;         /* one JSON-RPC message; larger: 413 / WebSocket 1009 [64 MiB] */
    size_t high_water;          /* output queued per connection before its turns wait [4 MiB] */
    unsigned max_connections;   /* sockets open at once; more are answered 503 [1024] */
    unsigned idle_timeout_ms;   /* a connection with nothing to do, and a client that has
                                 * not read its output, are closed after this [300000] */
    unsigned ping_interval_ms;  /* WebSocket keep-alive ping [30000] */
    unsigned close_timeout_ms;  /* how long a close waits for a slow reader [5000] */
    unsigned header_timeout_ms; /* a request head (and a TLS handshake) must arrive in [10000] */

    /* Each new connection's agent, made and not yet serving (register extension methods
     * here: acp_agent_on_ext). Return 0, or non-zero to refuse the connection. NULL: none. */
    int (*on_agent)(acp_agent *a, void *user);
    /* Called once after acp_server_shutdown() has finished: every connection's turns
     * answered, every session closed and committed, every connection closed. NULL: nothing. */
    void (*on_done)(acp_server *srv, void *user);
    void *user;

    /* Safety on the network (docs/remote.md, "Threat model"). A listener is loopback when
     * `listen` is unix:..., localhost, an address in 127.0.0.0/8 or ::1 (read from the text:
     * no name is resolved) and `exposed` is false; any other is non-loopback. */
    bool exposed; /* non-loopback whatever the address: a proxy on this host forwards to it */
    /* A non-loopback listener without a token is refused (ACP_EACCES): whoever reaches it
     * could run commands and read and write files as this user. true: allowed, and said as a
     * warning on agent_opts->on_log at start. */
    bool insecure_no_auth;
    /* Directories sessions may use: session/new, load and resume are answered -32602 unless
     * cwd and every additionalDirectories entry lie inside one of these, symlinks resolved
     * at the time of the request. Absolute paths, copied. NULL/0: anywhere. */
    const char *const *roots;
    size_t n_roots;
    /* Stdio mcpServers entries (command lines the agent would run on this host). The
     * default refuses them on a non-loopback listener, or when roots are set (a command
     * reaches past any root); refused, the session opens without that server, which its MCP
     * status shows FAILED with the reason. */
    acp_server_stdio_mcp stdio_mcp;
} acp_server_opts;
#define ACP_SERVER_OPTS_INIT ACP_STRUCT_INIT(acp_server_opts)

/* Starts serving: binds opts->listen and accepts from the next loop turn. store is borrowed
 * (it must outlive the server); engine and agent_opts are copied as acp_agent_new() copies
 * them, for every connection's agent (agent_opts may be NULL; its on_done is the server's and
 * ignored; its on_log also receives the server's own lines). *out is owned by the caller:
 * acp_server_free(). 0, or ACP_EINVAL (a malformed address, an engine acp_agent_new refuses,
 * TLS files that cannot be loaded, a relative root) / ACP_EIO (the address cannot be bound) /
 * ACP_EACCES (a non-loopback listener without a token or insecure_no_auth), with the sentence
 * in acp_error_last(), or ACP_ENOMEM. */
int acp_agent_serve_listen(uv_loop_t *loop, acp_store *store, const acp_engine *engine,
                           const acp_agent_opts *agent_opts, const acp_server_opts *opts,
                           acp_server **out);

/* Serves a stdio ACP agent program over the network (acp serve): every ACP connection that
 * arrives starts its own process of argv (argv[0] searched in PATH; stderr shared with ours),
 * in its own process group, and every message passes through unchanged both ways: one line of
 * the agent's stdout is one message to the client. A process per connection because a stdio
 * agent has one client: connections multiplexed on one process would share its JSON-RPC ids and
 * its sessions, and each would send its own initialize. The options are acp_agent_serve_listen's
 * (TLS, token, origins, limits, loopback safety) except on_agent, which is not called; roots
 * and the stdio MCP policy apply to the client's session/new, load, resume and fork (a
 * directory outside the roots is answered -32602 by the server, a refused stdio MCP server is
 * left out of the request). A connection's end gives the agent EOF on its stdin, then after
 * close_timeout_ms SIGTERM, and as long again SIGKILL, to its whole process tree; the agent's
 * exit (its stdout's end) ends the connection. acp_server_shutdown() does the same to every
 * connection, relaying what the agents still write. on_log (NULL: silent) receives the server's
 * and connections' lines with opts->user. argv is copied. Errors as acp_agent_serve_listen(). */
int acp_server_listen_command(uv_loop_t *loop, char *const *argv, const acp_server_opts *opts,
                              void (*on_log)(const char *line, void *user), acp_server **out);

/* Re-reads what an operator rotates (SIGHUP in acp-agent): the bearer token (NULL: kept) and
 * the TLS certificate chain and key files (both NULL: kept; a cleartext server cannot get
 * TLS). New connections get them; open ones are not dropped and go on as they were. All or
 * nothing: a file that cannot be loaded changes nothing. 0, or ACP_EINVAL with the sentence in
 * acp_error_last(). */
int acp_server_reload(acp_server *srv, const char *token, const char *tls_cert,
                      const char *tls_key);

/* The TCP port the server listens on (the one picked for port 0; with systemd's sockets, the
 * first TCP one's); 0 for a Unix socket. */
int acp_server_port(const acp_server *srv);
/* Number of ACP connections (agents) being served. */
size_t acp_server_connections(const acp_server *srv);

/* Orderly shutdown (SIGTERM): stops accepting, then every connection's agent shuts down as
 * on EOF (running turns are cancelled and answered, everything is committed, output is
 * written), then every connection is closed; then opts.on_done. Idempotent. */
void acp_server_shutdown(acp_server *srv);
/* Frees at once: agents freed (acp_agent_free), connections closed. The memory is released
 * from libuv callbacks: run the loop until it returns. No callback runs after this call.
 * Prefer acp_server_shutdown() and free from on_done. */
void acp_server_free(acp_server *srv);

ACP_END_DECLS
#endif
