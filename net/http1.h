/* SPDX-License-Identifier: Apache-2.0 */
/* HTTP/1.1 (internal to net/): a sans-I/O request parser and the server wire that runs it on
 * an acp_sock and writes the responses of net/http.h.
 *
 * The parser takes bytes as they arrive, in any split, and stops at each event. It bounds the
 * head (431) and the body (413), decodes chunked bodies, and refuses what RFC 9112 says to
 * refuse rather than guess: obs-fold, whitespace before a colon, conflicting Content-Length,
 * Content-Length with Transfer-Encoding, a transfer coding other than chunked, bare CR,
 * control characters, an HTTP/1.1 request without Host. It allocates only what the request
 * it is parsing needs. */
#ifndef ACP_NET_HTTP1_H
#define ACP_NET_HTTP1_H

#include <stdbool.h>
#include <stddef.h>

#include "acp/json.h"
#include "net/http.h"
#include "net/limits.h"
#include "net/sock.h"
#include "net/wire.h"

enum {
    ACP_HTTP1_MORE = 0,    /* everything given was consumed; feed more */
    ACP_HTTP1_HEAD = 1,    /* the head is parsed, no body byte consumed yet */
    ACP_HTTP1_REQUEST = 2, /* a whole request: read it, then acp_http1_parser_reset() */
    ACP_HTTP1_ERROR = -1   /* p->status and p->error say what to answer; the connection ends */
};

typedef struct acp_http1_parser {
    size_t max_head, max_body;
    int state;
    acp_buf head; /* the head's bytes, then its parsed strings (NUL-separated) */
    size_t scan;  /* where the search for the head's end resumes */
    acp_buf strs; /* repeated fields' joined values */
    acp_buf body;
    size_t need;     /* body or chunk bytes still to come */
    unsigned digits; /* hex digits of the chunk size so far */
    size_t ext;      /* bytes of a chunk extension or the trailers so far */
    bool eol;        /* the last byte ended a line */
    bool chunked, has_length;
    /* The request, valid from ACP_HTTP1_HEAD until the reset. expect_continue: the client
     * waits for "100 Continue" before it sends the body. */
    const char *method, *target;
    acp_http_field *fields;
    size_t nfields;
    bool http10, keep_alive, upgrade, expect_continue;
    /* On ACP_HTTP1_ERROR: the status to answer (400, 408, 413, 417, 431, 501, 505) and why. */
    int status;
    const char *error;
} acp_http1_parser;

void acp_http1_parser_init(acp_http1_parser *p, size_t max_head, size_t max_body);
/* Consumes bytes from data up to the next event; *used says how many. Call again with the
 * rest until it returns ACP_HTTP1_MORE. After ACP_HTTP1_ERROR every call returns it again. */
int acp_http1_parse(acp_http1_parser *p, const char *data, size_t n, size_t *used);
/* A header of the parsed request by lower-case name, or NULL. */
const char *acp_http1_header(const acp_http1_parser *p, const char *name);
/* Ready for the next request (what the last one grew the buffers to is given back). */
void acp_http1_parser_reset(acp_http1_parser *p);
void acp_http1_parser_free(acp_http1_parser *p);

/* Serves HTTP/1.1 on s (the wire binds it), starting with data already read (n bytes,
 * borrowed). lim and cbs are borrowed for the connection's life. Requests are answered in
 * order, one at a time; the connection ends with the socket (keep-alive otherwise).
 * 0 or ACP_ENOMEM (s is then aborted). */
int acp_http1_serve(acp_sock *s, const char *data, size_t n, const acp_net_limits *lim,
                    const acp_wire_cbs *cbs, void *user);

/* Writes a whole error response (text/plain, Connection: close) and closes s: what a wire
 * answers before any exchange exists (the listener's 401 and 503 use it too). */
void acp_http1_refuse(acp_sock *s, int status, const char *text, const acp_http_field *fields,
                      size_t nfields);

/* The reason phrase of a status code ("Not Found"), "" when unknown. */
const char *acp_http_reason(int status);

#endif
