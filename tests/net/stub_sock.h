/* A stand-in for net-core's acp_sock (net/sock.h) over an accepted libuv stream, without TLS,
 * so the HTTP/2 wire can be tested before the real one is merged. */
#ifndef ACP_TESTS_STUB_SOCK_H
#define ACP_TESTS_STUB_SOCK_H

#include "net/sock.h"

/* Takes over an accepted, initialised stream (freed with the socket). NULL on ENOMEM. */
acp_sock *stub_sock_wrap(uv_stream_t *st);

#endif
