/* SPDX-License-Identifier: Apache-2.0 */
/* Strict validation of ACP messages against the stable v1 JSON Schema (schema.json, the
 * authority on wire shapes), for `acp check` and `acp-agent --check-client`. The schema is
 * built into the programs (from the pinned SDK's copy); ACP_SCHEMA names another file.
 *
 * Like tests/interop-agent/schema.mjs it ignores the schema's x-deserialize-* leniency hints:
 * what a peer writes must be valid as written. Keywords: $ref, type, const, enum, properties,
 * required, additionalProperties, items, allOf, anyOf, oneOf (as anyOf), not, minimum,
 * maximum, minLength, maxLength and the integer formats. */
#ifndef ACP_TOOLS_CHECK_SCHEMA_H
#define ACP_TOOLS_CHECK_SCHEMA_H

#include <stdbool.h>
#include <jansson.h>

typedef struct chk_schema chk_schema;

/* The built-in schema, or $ACP_SCHEMA's file. NULL when there is none (*why says so). Caller
 * frees with chk_schema_free(). */
chk_schema *chk_schema_load(const char **why);
void chk_schema_free(chk_schema *s);

/* The $defs name of method's params (kind "Request" or "Notification") or result
 * ("Response"), found by the schema's x-method; NULL for methods it does not know. */
const char *chk_schema_def(const chk_schema *s, const char *method, const char *kind);

/* Validates v against $defs[def]: NULL when valid, else the first problem (malloc'd). */
char *chk_schema_check(const chk_schema *s, const char *def, const json_t *v);

/* A whole message sent by one side: the JSON-RPC envelope, then a request's or a
 * notification's params by its method, a response's result by `method` (the request it
 * answers; NULL when unknown) or its error as Error. NULL when valid, else the problem. */
char *chk_schema_message(const chk_schema *s, const json_t *msg, const char *method);

#endif
