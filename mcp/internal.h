/* SPDX-License-Identifier: Apache-2.0 */
/* What the MCP session logic (set.c) and the transports (stdio.c, http.c, legacy_sse.c)
 * share. A transport moves JSON-RPC messages between the server's acp_conn and the peer; the
 * protocol (handshake, tools, calls, roots) lives in set.c only. */
#ifndef ACP_MCP_INTERNAL_H
#define ACP_MCP_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include <uv.h>

#include "acp/mcp.h"
#include "acp/rpc.h"
#include "rpc/lasterr.h"

typedef struct mcp_server mcp_server;
typedef struct acp_http_client acp_http_client;

enum mcp_kind { MCP_STDIO, MCP_HTTP, MCP_SSE, MCP_ACP };

typedef struct mcp_transport_ops {
    /* Starts connecting. Failures are reported with mcp_server_fail(), possibly before this
     * returns. When the transport can carry messages it calls mcp_server_open(). */
    void (*start)(mcp_server *s);
    /* The conn has output waiting (HTTP transports send it; stdio's transport flushes itself).
     * May be NULL. */
    void (*on_output)(mcp_server *s);
    /* The handshake finished (initialized was sent): HTTP opens its GET stream. May be NULL. */
    void (*on_initialized)(mcp_server *s);
    /* Stops everything; calls mcp_server_stopped() once nothing of the transport is left
     * running (from the loop, or from inside stop when nothing had started). Called once. */
    void (*stop)(mcp_server *s);
} mcp_transport_ops;

extern const mcp_transport_ops mcp_stdio_ops;
extern const mcp_transport_ops mcp_http_ops;
extern const mcp_transport_ops mcp_sse_ops;
extern const mcp_transport_ops mcp_acp_ops; /* acp.c: MCP over ACP (unstable) */

struct mcp_server {
    acp_mcp_set *set;
    size_t index;
    uv_loop_t *loop;
    char *name;
    enum mcp_kind kind;
    const mcp_transport_ops *ops;
    void *tp; /* the transport's state */

    /* Configuration. env and header strings are secrets: never logged. */
    char *command;
    char **argv;    /* NULL-terminated, argv[0] = command */
    char **env;     /* "K=V", NULL-terminated: base + given */
    char **secrets; /* the given env / header values, for scrubbing stderr; NULL-terminated */
    char *url;
    char **headers;  /* "Name: value", NULL-terminated */
    char *server_id; /* MCP_ACP: the serverId the client declared */
    acp_conn *peer;  /* MCP_ACP: the ACP connection to that client (borrowed) */

    enum acp_mcp_status status;
    char *reason;
    acp_conn *conn;
    char *protocol; /* negotiated revision */
    json_t *info;   /* serverInfo */
    json_t *caps;   /* server capabilities */
    json_t *tools;  /* array of Tool objects */
    json_t *paging; /* tools being collected across tools/list pages */
    bool listing, relist;
    int pages; /* of the tools/list under way */
    bool initialized;
    bool stopping, stopped;
    bool restarting; /* inside mcp_server_reinit(): answers resolving now are not failures */
    uv_timer_t connect_timer;
    struct acp_mcp_call *rpcs; /* requests in flight */
    int64_t next_token;
};

/* n bytes (not NUL-terminated: not strndup, which may read past them) as a C string. */
static inline char *mcp_memdup(const char *p, size_t n)
{
    char *s = malloc(n + 1);
    if (!s) return NULL;
    memcpy(s, p, n);
    s[n] = '\0';
    return s;
}

/* For transports that send each message on its own (HTTP): takes the conn's output and
 * hands send() one message at a time (a line, without its LF) with id set to the JSON id
 * text when it is a request (else empty), until the output ends or the server stops. */
void mcp_server_drain(mcp_server *s,
                      void (*send)(mcp_server *s, const char *msg, size_t n, acp_span id));
/* Frees a NULL-terminated array of strings and the strings; NULL is fine. */
static inline void mcp_strv_free(char **v)
{
    for (char **p = v; p && *p; p++) free(*p);
    free(v);
}

/* The transport is ready for messages: set.c starts the handshake. */
void mcp_server_open(mcp_server *s);
/* The transport failed (can't start, peer gone, protocol broken): status FAILED with reason
 * (printf-style; it must not contain secrets), pending requests fail, the transport stops. */
void mcp_server_fail(mcp_server *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A FAILED server's reason is replaced by a more precise one (the exit status that followed
 * the end of its output). No effect otherwise. */
void mcp_server_amend(mcp_server *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The server forgot our MCP session (Streamable HTTP: 404 to a request carrying its id): the
 * requests in flight fail and the handshake starts again on a fresh connection; the transport
 * has already dropped the session id. A server that was not READY fails instead. */
void mcp_server_reinit(mcp_server *s, const char *why);
/* One complete JSON-RPC message text from the peer (no newline needed). */
void mcp_server_recv(mcp_server *s, const char *msg, size_t n);
/* A request we sent can no longer be answered (its HTTP exchange failed): id is its JSON id
 * text. The call fails with message. */
void mcp_server_request_failed(mcp_server *s, acp_span id, const char *message);
/* Whether a request we sent (id: its JSON id text) still waits for its answer. */
bool mcp_server_awaits(const mcp_server *s, acp_span id);
/* The transport's teardown finished. */
void mcp_server_stopped(mcp_server *s);
/* A diagnostic line for opts.on_log; secret values in it are replaced (server text may echo
 * them), as they are in fail reasons and call errors. */
void mcp_server_log(mcp_server *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Replaces every secret value inside line with "***" (in place; may shorten it). */
void mcp_server_scrub(const mcp_server *s, char *line);
unsigned mcp_server_grace_ms(const mcp_server *s);
/* The set's curl driver, created on first use. NULL on failure, and then the server has
 * failed with the reason (mcp_server_fail). */
acp_http_client *mcp_server_curl(mcp_server *s);
/* MCP_ACP: an mcp/message notification from the client for the inner request request_id
 * (acp.c); dropped when that request is no longer ours. */
void mcp_acp_notify(mcp_server *s, const char *request_id, const char *method,
                    const json_t *params);

#endif
