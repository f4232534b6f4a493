/* SPDX-License-Identifier: Apache-2.0 */
/* A client's cookie jar for one remote agent, as the RFD asks of every HTTP-based transport:
 * keep what the server sets, send it back on every later request of the connection and on a
 * reconnect. Like the official SDK's MemoryAcpCookieStore it keeps name=value pairs only (a
 * jar serves one server; attributes such as Path, Domain and Expires are ignored), and a
 * later Set-Cookie of a name replaces the earlier value.
 *
 * Cookies carry session affinity and sometimes credentials: the jar lives in memory only and
 * nothing here logs its contents. Bounded: at most 64 cookies of 4 KiB each; more are dropped. */
#ifndef ACP_NET_COOKIE_H
#define ACP_NET_COOKIE_H

typedef struct acp_cookie_jar acp_cookie_jar;

/* A new empty jar, owned by the caller (acp_cookie_jar_free), or NULL without memory. */
acp_cookie_jar *acp_cookie_jar_new(void);
void acp_cookie_jar_free(acp_cookie_jar *j);

/* Keeps the cookie of one Set-Cookie header value ("name=value; Path=/; HttpOnly"). A value
 * without a name or '=' is ignored. 0, or ACP_ENOMEM. */
int acp_cookie_jar_store(acp_cookie_jar *j, const char *set_cookie);

/* The Cookie request header value ("a=1; b=2"), malloc'd and owned by the caller, or NULL
 * when the jar is empty (or without memory). */
char *acp_cookie_jar_header(const acp_cookie_jar *j);

/* Forgets every cookie (a client may drop them when its connection ends). */
void acp_cookie_jar_clear(acp_cookie_jar *j);

#endif
