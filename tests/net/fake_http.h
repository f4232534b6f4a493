/* SPDX-License-Identifier: Apache-2.0 */
/* A fake HTTP exchange (net/http.h) for sans-I/O tests of the profiles: the request is whatever
 * the test says, the response is recorded, and the test plays the client's side (reading what
 * is queued, resetting the stream). */
#ifndef ACP_TESTS_FAKE_HTTP_H
#define ACP_TESTS_FAKE_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "acp/json.h"
#include "net/http.h"

typedef struct fake_req {
    acp_http_req base; /* first */
    acp_http_field hdr[8];
    int status; /* 0 until res_start */
    acp_http_field *res_fields;
    size_t nres_fields;
    size_t body_len; /* as announced */
    acp_buf body;    /* everything written */
    size_t queued;   /* written and not yet "read" by the client */
    int writes;      /* acp_http_res_write calls */
    bool ended, aborted;
} fake_req;

/* A request: method, body (NULL for none; copied) and header pairs
 * name, value, ... ending with NULL. */
fake_req *fake_new(const char *method, const char *body, ...);
/* A response header by name (case-insensitive), or NULL. */
const char *fake_res_header(const fake_req *f, const char *name);
/* The client reads everything queued: on_drain fires when a watcher is there. */
void fake_read(fake_req *f);
/* The client goes away: on_abort fires (when the response has not ended). */
void fake_abort(fake_req *f);
void fake_free(fake_req *f);

#endif
