/* SPDX-License-Identifier: Apache-2.0 */
/* acp_http: HTTP client exchanges on a libuv loop (libcurl's multi interface: curl says which
 * sockets to watch (uv_poll) and when to wake it (uv_timer); we tell it what happened).
 *
 * Public because MCP's HTTP transports and an engine talking to a model server need the same
 * thing: a streamed request on the agent's loop that can be aborted within one loop turn. It
 * lives in mcp/, the layer that loads libcurl on first use (mcp/libcurl_lazy.c): a program
 * that never makes an HTTP exchange never loads libcurl.
 *
 * A client drives any number of exchanges. An exchange (acp_http) streams its body to on_data
 * as it arrives and ends with exactly one on_done, unless it is aborted first. Aborting is
 * safe from anywhere, including from inside this exchange's own callbacks: the easy handle is
 * released later, from the loop, because curl forbids removing a handle from inside its
 * callbacks. An exchange starts from the loop too (never from inside acp_http_start), so its
 * callbacks never run inside the call that started it.
 *
 * Not thread-safe: use a client from its loop's thread.
 *
 * Errors: acp_http_client_new() and acp_http_start() return NULL with the reason in
 * acp_error_last() (acp/error.h); an exchange ends through on_done (acp_http_error()). */
#ifndef ACP_HTTP_H
#define ACP_HTTP_H

#include <stddef.h>
#include <uv.h>

#include "acp/api.h"

ACP_BEGIN_DECLS

typedef struct acp_http_client acp_http_client;
typedef struct acp_http acp_http;

/* Extensible (acp/api.h): start from ACP_HTTP_CBS_INIT. */
typedef struct acp_http_cbs {
    size_t struct_size; /* sizeof(acp_http_cbs): ACP_HTTP_CBS_INIT sets it */
    /* Body bytes (of any status: read acp_http_status() to tell an error body). Non-zero
     * aborts the exchange (no on_done then). */
    int (*on_data)(acp_http *h, const char *p, size_t n, void *user);
    /* The exchange ended: result is a CURLcode (0: complete), status the HTTP status (0 if
     * none arrived). The exchange is freed right after this returns. */
    void (*on_done)(acp_http *h, int result, long status, void *user);
} acp_http_cbs;
#define ACP_HTTP_CBS_INIT ACP_STRUCT_INIT(acp_http_cbs)

/* A client on `loop`. NULL when libcurl cannot be loaded or memory ran out. Owned by the
 * caller: acp_http_client_close(). */
acp_http_client *acp_http_client_new(uv_loop_t *loop);
/* Every exchange must have ended or been aborted. Closes every handle; done (may be NULL)
 * runs from the loop once they are closed, and the client is freed just before it. */
void acp_http_client_close(acp_http_client *c, void (*done)(void *user), void *user);

/* Starts an exchange. method "GET", "POST" or "DELETE"; url http:// or https://; headers are
 * full "Name: value" lines, NULL-terminated (copied); body (copied) may be NULL. The connect
 * phase is bounded (10 s), the transfer is not. The handle belongs to the client: valid until
 * on_done returns or acp_http_abort(). cbs is copied. NULL on failure (nothing started;
 * acp_error_last() says why when cbs was refused: struct_size, acp/api.h). */
acp_http *acp_http_start(acp_http_client *c, const char *method, const char *url,
                         const char *const *headers, const char *body, size_t n,
                         const acp_http_cbs *cbs, void *user);
/* No more callbacks; resources go back later, from the loop. Idempotent. */
void acp_http_abort(acp_http *h);
/* Response metadata, valid once body bytes or on_done arrived. NULL when absent. The
 * strings are borrowed until the next call on h. */
long acp_http_status(acp_http *h);
const char *acp_http_content_type(acp_http *h);
const char *acp_http_header(acp_http *h, const char *name);
/* The curl error text for a failed result (borrowed, until h is freed), or NULL. */
const char *acp_http_error(acp_http *h);

ACP_END_DECLS
#endif
