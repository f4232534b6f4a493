/* SPDX-License-Identifier: Apache-2.0 */
#ifndef ACP_MCP_LIBCURL_LAZY_H
#define ACP_MCP_LIBCURL_LAZY_H

/* libcurl is loaded on first use (libcurl_lazy.c). NULL once it is loaded; otherwise why it
 * cannot be ("HTTP MCP servers need libcurl.so.4: <dlerror>"), a static string. Tries to load
 * it if no call has yet. */
const char *mcp_libcurl_error(void);

#endif
