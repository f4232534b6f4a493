/* SPDX-License-Identifier: Apache-2.0 */
/* The envelope scanner: one validating pass over a line that finds the JSON-RPC members. */
#ifndef ACP_RPC_SCAN_H
#define ACP_RPC_SCAN_H

#include "acp/json.h"

/* Deepest nesting accepted in a message (jansson's own limit is 2048; ACP needs < 20). */
#define ACP_SCAN_MAX_DEPTH 256

enum acp_env_kind {
    ACP_ENV_INVALID, /* not JSON */
    ACP_ENV_ARRAY,   /* a batch: ACP has none */
    ACP_ENV_SCALAR,  /* valid JSON, not an object */
    ACP_ENV_OBJECT,
};

typedef struct acp_envelope {
    enum acp_env_kind kind;
    bool duplicate; /* a top-level member appeared twice */
    acp_span jsonrpc, id, method, params, result, error;
} acp_envelope;

/* Validates line[0..n) and fills env. Spans point into line. */
void acp_scan_envelope(const char *line, size_t n, acp_envelope *env);

/* For oversized lines: looks for a top-level "id" (and whether "method" came before it or
 * after) in a prefix of the line, without requiring the rest. True when a complete id value
 * was found. */
bool acp_scan_prefix_id(const char *p, size_t n, acp_span *id, bool *has_method);

/* For text that passed acp_json_validate(): writes into buf (cap bytes) the path, from root
 * ("params.mcpServers[0].env", a name that is not plain as ["na me"]), of the first member
 * name or scalar value whose text ends at or after byte offset `at`, which is where jansson
 * reports what it refused. Returns true when that is a member name (the path ends with it). */
bool acp_scan_path_at(const char *text, size_t n, size_t at, const char *root, char *buf,
                      size_t cap);

/* A string id as a C string key (the caller frees it): decoded, so ids that differ only in
 * their escapes meet, and with each U+0000 written as the overlong pair C0 80, which decoded
 * (valid UTF-8) text never holds: an id with \u0000 in it is a valid id, not a failure. NULL
 * only when out of memory (or v is not a string). */
char *acp_json_key_dup(acp_span v);

#endif
