/* SPDX-License-Identifier: Apache-2.0 */
/* An incremental text/event-stream parser (the WHATWG "server-sent events" rules): feed it the
 * bytes of a response body as they arrive, in any pieces; it calls on_event for each complete
 * event. Lines end in LF, CR or CRLF (a CRLF split across two feeds is handled). Fields: event,
 * data (several data lines join with LF), id (kept across events and reconnections: it is the
 * Last-Event-ID to resume from), retry (the reconnection delay, cut to ACP_SSE_RETRY_MAX_MS).
 * Comments (":...") and unknown fields are ignored; an event with no data is not dispatched,
 * but its id still counts.
 *
 * Public (with acp/http.h) for the same reason: MCP's Streamable HTTP and SSE transports and
 * a model engine's streamed completions parse the same format. The struct is the caller's
 * (acp_sse_init() it); it owns its buffers until acp_sse_free(). Frozen in 1.0 (acp/api.h):
 * never grown; a later release adds a new struct instead.
 *
 * Errors: a negative ACP_E* status, with the sentence in acp_error_last() (acp/error.h). */
#ifndef ACP_SSE_H
#define ACP_SSE_H

#include <stdbool.h>
#include <stddef.h>

#include "acp/json.h"

#include "acp/api.h"

ACP_BEGIN_DECLS

#define ACP_SSE_RETRY_MAX_MS 60000 /* the longest reconnection delay a server may ask */

typedef struct acp_sse {
    acp_buf line;  /* the current, unterminated line */
    acp_buf data;  /* data of the event being built */
    acp_buf event; /* its event type */
    char *last_id; /* NULL until an id field arrives; owned */
    long retry_ms; /* -1 until a retry field arrives */
    bool after_cr; /* the last byte was CR: a following LF belongs to it */
    bool started;  /* past the optional leading BOM */
    size_t max;    /* largest line or event, in bytes (0: 16 MiB) */
    /* event is "message" when the stream named none; data is NUL-terminated (len n). A
     * non-zero return stops the feed and is returned from acp_sse_feed(). */
    int (*on_event)(void *user, const char *event, const char *data, size_t n);
    void *user;
} acp_sse;

/* Zero the struct, then set on_event/user (and max). */
void acp_sse_init(acp_sse *p, int (*on_event)(void *, const char *, const char *, size_t),
                  void *user);
/* 0, the callback's non-zero value, ACP_ETOOBIG (a line or event over max) or ACP_ENOMEM. */
int acp_sse_feed(acp_sse *p, const char *buf, size_t n);
/* A new connection of the same stream: drops any partial line or event, keeps last_id and
 * retry_ms. */
void acp_sse_restart(acp_sse *p);
void acp_sse_free(acp_sse *p);

ACP_END_DECLS
#endif
