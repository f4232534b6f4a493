/* SPDX-License-Identifier: Apache-2.0 */
/* Private to libacp: the CURL easy handle behind an exchange, for the one caller that needs
 * options the driver does not set (net/shttp_client.c: the HTTP version, trust anchors, a
 * header callback, reuse rules) and every value of a repeated response header
 * (curl_easy_header on Set-Cookie). Set options right after the exchange starts: it is added to
 * curl from the loop, later. Borrowed; valid as long as the exchange. Kept out of
 * include/acp/http.h, the public contract. */
#ifndef ACP_MCP_HTTP_EASY_H
#define ACP_MCP_HTTP_EASY_H

#include "acp/http.h"

void *acp_http_easy(acp_http *h);

#endif
