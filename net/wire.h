/* SPDX-License-Identifier: Apache-2.0 */
/* A server wire: what carries HTTP requests on an accepted socket, HTTP/1.1 (net/http1.c) or
 * HTTP/2 (net/h2.c), and what it tells the router (net/listen.c). Internal to net/. */
#ifndef ACP_NET_WIRE_H
#define ACP_NET_WIRE_H

#include <stdbool.h>
#include <stddef.h>

#include "net/http.h"
#include "net/limits.h"
#include "net/sock.h"

/* What a wire tells the router; user borrowed. */
typedef struct acp_wire_cbs {
    /* A request's head arrived and no byte of its body was read: return true to go on, or
     * answer r (acp_http_res_send) and return false: the body is never read (bearer-token
     * auth answers 401 here, before any ACP byte). r has no body yet. */
    bool (*on_head)(acp_http_req *r, void *user);
    /* The whole request. s is the socket (NULL on HTTP/2) and leftover/n the bytes already
     * read after the request (an upgrade's first frames). Return true when the router took the
     * socket over (a WebSocket upgrade answered 101): the wire then frees the request (so
     * copy from it what outlives the call) and forgets the socket. Otherwise the router
     * answers r, now or later. */
    bool (*on_request)(acp_http_req *r, acp_sock *s, const char *leftover, size_t n, void *user);
} acp_wire_cbs;

#endif
