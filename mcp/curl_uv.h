/* libcurl's multi interface driven from a libuv loop: curl tells us which sockets to watch
 * (uv_poll) and when to wake it (uv_timer); we tell it what happened
 * (curl_multi_socket_action). One driver per MCP set, for all its HTTP exchanges.
 *
 * An exchange (mcp_http) streams its body to on_data as it arrives and ends with exactly one
 * on_done, unless it is aborted first. Aborting is safe from anywhere, including from inside
 * this exchange's own callbacks: the easy handle is released later, from the loop, because
 * curl forbids removing a handle from inside its callbacks. */
#ifndef ACP_MCP_CURL_UV_H
#define ACP_MCP_CURL_UV_H

#include <stddef.h>
#include <uv.h>

typedef struct mcp_curl mcp_curl;
typedef struct mcp_http mcp_http;

typedef struct mcp_http_cbs {
    /* Body bytes. Non-zero aborts the exchange (no on_done then). */
    int (*on_data)(mcp_http *h, const char *p, size_t n, void *user);
    /* The exchange ended: result is a CURLcode (0: complete), status the HTTP status (0 if
     * none arrived). The exchange is freed right after this returns. */
    void (*on_done)(mcp_http *h, int result, long status, void *user);
} mcp_http_cbs;

mcp_curl *mcp_curl_new(uv_loop_t *loop);
/* Every exchange must have ended or been aborted. Closes every handle; done runs from the
 * loop. */
void mcp_curl_close(mcp_curl *c, void (*done)(void *user), void *user);

/* Starts an exchange. method "GET", "POST" or "DELETE"; headers are full "Name: value" lines
 * (copied); body (copied) may be NULL. NULL on failure. */
mcp_http *mcp_http_start(mcp_curl *c, const char *method, const char *url,
                         const char *const *headers, const char *body, size_t n,
                         const mcp_http_cbs *cbs, void *user);
/* No more callbacks; resources go back later. Idempotent. */
void mcp_http_abort(mcp_http *h);
/* Response metadata, valid once body bytes or on_done arrived. NULL when absent. The
 * strings are borrowed until the next call on h. */
long mcp_http_status(mcp_http *h);
const char *mcp_http_content_type(mcp_http *h);
const char *mcp_http_header(mcp_http *h, const char *name);
/* The curl error text for a failed result (borrowed, until h is freed). */
const char *mcp_http_error(mcp_http *h);
/* The exchange's CURL easy handle, for options beyond the ones set here (HTTP version, trust
 * anchors) right after mcp_http_start(), and for reading every value of a repeated response
 * header (curl_easy_header). Borrowed; valid as long as h. */
void *mcp_http_easy(mcp_http *h);

#endif
