/* SPDX-License-Identifier: Apache-2.0 */
/* The NDJSON profile of a link (internal to net/): ACP's stdio framing on an accepted socket. */
#ifndef ACP_NET_NDJSON_H
#define ACP_NET_NDJSON_H

#include "net/limits.h"
#include "net/link.h"
#include "net/sock.h"

/* Takes s over as one ACP connection, with the bytes read so far (data, n: borrowed), and
 * hands its link to on_link at once. lim is borrowed for the socket's life (max_message bounds
 * a line). 0, or ACP_ENOMEM (s was aborted). */
int acp_ndjson_serve(acp_sock *s, const char *data, size_t n, const acp_net_limits *lim,
                     void (*on_link)(acp_link *l, void *user), void *user);

#endif
