/* SPDX-License-Identifier: Apache-2.0 */
/* --log-level of acp and acp-agent: the level names, and the `debug` level's wire trace on
 * stderr (every JSON-RPC message each way, secrets redacted). */
#ifndef ACP_TOOLS_WIRETRACE_H
#define ACP_TOOLS_WIRETRACE_H

#include <jansson.h>
#include <stdbool.h>

enum log_level { LOG_ERROR, LOG_WARN, LOG_INFO, LOG_DEBUG };

/* "error", "warn", "info", "debug" (and "quiet", acp-agent's older name for error): 0 and
 * *out, or -1. */
int log_level_parse(const char *name, enum log_level *out);

/* From now on every message of every connection of this process goes to stderr as
 * "PROG: debug: <- MSG" (read) or "PROG: debug: -> MSG" (written), redacted. prog is kept. */
void wire_trace_start(const char *prog);

/* Secrets out of a message, in place: the values of every "env" and "headers" member (an
 * object's members, or the "value" of each {name, value} of an array: MCP servers' env and
 * HTTP headers, providers' headers), and string values of members named like a credential
 * (authorization, token, apiKey, password, secret, ...). */
void wire_redact(json_t *msg);

#endif
