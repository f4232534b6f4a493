/* SPDX-License-Identifier: Apache-2.0 */
/* One HTTP request/response exchange as the server's profiles see it, whichever wire carried
 * it: an HTTP/1.1 request on a connection (net/http1.c) or an HTTP/2 stream (net/h2.c). The
 * Streamable HTTP profile (net/shttp.c) is written once against this and serves both.
 *
 * Lifetime: the wire creates the exchange when the request's head and whole body have arrived
 * (bodies are bounded by the server's max message size; larger gets 413 from the wire), hands
 * it to the server's router, and frees it after the response has ended and been written, or
 * after on_abort (the client reset the stream or closed the connection). Everything runs on
 * the loop's thread. */
#ifndef ACP_NET_HTTP_H
#define ACP_NET_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct acp_http_req acp_http_req;

typedef struct acp_http_field {
    const char *name; /* lower-case on input; as given on output */
    const char *value;
} acp_http_field;

/* --- The request (borrowed strings, valid until the exchange is freed) ----------------- */

const char *acp_http_req_method(const acp_http_req *r); /* "GET", "POST", ... */
const char *acp_http_req_path(const acp_http_req *r);   /* the path with its query */
/* A header by lower-case name, NULL when absent. Repeated headers arrive joined with ", "
 * (cookies with "; "), as RFC 9110 and RFC 9113 say a recipient may. */
const char *acp_http_req_header(const acp_http_req *r, const char *name);
const char *acp_http_req_body(const acp_http_req *r, size_t *len);
/* Is `websocket` among the protocols of the Upgrade field (RFC 9110 7.8)? */
bool acp_http_req_wants_websocket(const acp_http_req *r);
/* True for HTTP/2, false for HTTP/1.1. */
bool acp_http_req_is_h2(const acp_http_req *r);

/* --- The response ------------------------------------------------------------------------ */

#define ACP_HTTP_STREAMING ((size_t)-1)

/* Starts the response: status, extra header fields (copied), and the body's length, or
 * ACP_HTTP_STREAMING for an open-ended body (chunked in HTTP/1.1, DATA frames in HTTP/2) that
 * acp_http_res_end() finishes. 0 or ACP_EIO (the exchange was aborted). Call once. */
int acp_http_res_start(acp_http_req *r, int status, const acp_http_field *fields, size_t n,
                       size_t body_len);
/* Appends body bytes (copied). 0 or ACP_EIO. */
int acp_http_res_write(acp_http_req *r, const void *p, size_t n);
/* Ends the response; the wire frees the exchange once it is written. */
void acp_http_res_end(acp_http_req *r);
/* The whole response at once: start + write + end, with a Content-Type when ctype is set. */
int acp_http_res_send(acp_http_req *r, int status, const char *ctype, const void *body, size_t n,
                      const acp_http_field *fields, size_t nfields);
/* Response bytes accepted and not yet handed to the kernel (for back-pressure on streams). */
size_t acp_http_res_queued(const acp_http_req *r);

typedef struct acp_http_req_cbs {
    /* acp_http_res_queued() fell: HTTP/1.1 below half the socket's high-water mark after
     * reaching it, HTTP/2 each time the stream's queue halved, down to empty. A profile that
     * stopped at its own mark re-checks here; a drain it needs is never skipped. */
    void (*on_drain)(acp_http_req *r, void *user);
    /* The client went away before the response ended (stream reset, connection closed,
     * server shutdown). The exchange is freed right after this returns. */
    void (*on_abort)(acp_http_req *r, void *user);
} acp_http_req_cbs;

/* Who hears about a long-running exchange (an SSE stream). cbs copied, user borrowed. */
void acp_http_req_watch(acp_http_req *r, const acp_http_req_cbs *cbs, void *user);

/* --- For wires (implementations) only ---------------------------------------------------- */

typedef struct acp_http_req_ops {
    int (*start)(acp_http_req *r, int status, const acp_http_field *f, size_t n, size_t body_len);
    int (*write)(acp_http_req *r, const void *p, size_t n);
    void (*end)(acp_http_req *r);
    size_t (*queued)(const acp_http_req *r);
} acp_http_req_ops;

/* Embedded first in each wire's exchange struct; the wire fills the request side. */
struct acp_http_req {
    const acp_http_req_ops *ops;
    const char *method, *path;
    acp_http_field *headers; /* lower-case names */
    size_t nheaders;
    const char *body;
    size_t body_len;
    bool h2;
    uint64_t origin; /* the socket it came on (acp_sock_id), 0 when unknown */
    acp_http_req_cbs cbs;
    void *user;
};

#endif
