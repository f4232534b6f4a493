/* SPDX-License-Identifier: Apache-2.0 */
/* The ACP JSON Schemas (schema.json, the authority on stable wire shapes, and
 * schema.unstable.json for the unstable methods), built into the tools once, and the one
 * validator of the JSON Schema subset they use: $ref into $defs, type, const, enum,
 * properties, required, additionalProperties, items, allOf, anyOf, oneOf (as anyOf), not,
 * minimum, maximum, minLength, maxLength and the integer formats.
 *
 * Strict (`acp check`, `acp-agent --check-client`; like tests/interop-agent/schema.mjs): the
 * schema's x-deserialize-* leniency hints are ignored, what a peer writes must be valid as
 * written. Lenient (`acp trace`): where the schema says a reader tolerates a bad value
 * (x-deserialize-default-on-error, x-deserialize-skip-invalid-items), so does the validator.
 * $ACP_SCHEMA names another file to use as schema.json. */
#ifndef ACP_TOOLS_CHECK_SCHEMA_H
#define ACP_TOOLS_CHECK_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

typedef struct chk_schema chk_schema;

/* The built-in schemas (or $ACP_SCHEMA's file as the stable one), validating strictly or
 * leniently. NULL when there is none (*why says so). Caller frees with chk_schema_free(). */
chk_schema *chk_schema_load(bool strict, const char **why);
void chk_schema_free(chk_schema *s);

/* The stable $defs name of method's params (kind "Request" or "Notification") or result
 * ("Response"), found by the schema's x-method; NULL for methods it does not know. */
const char *chk_schema_def(const chk_schema *s, const char *method, const char *kind);

/* Validates v against the stable $defs[def]: NULL when valid, else "Def/PATH: why" (PATH a
 * JSON pointer; malloc'd). */
char *chk_schema_check(const chk_schema *s, const char *def, const json_t *v);

/* A whole message sent by one side: the JSON-RPC envelope, then a request's or a
 * notification's params by its method, a response's result by `method` (the request it
 * answers; NULL when unknown) or its error as Error. NULL when valid, else the problem. */
char *chk_schema_message(const chk_schema *s, const json_t *msg, const char *method);

/* Which message of a method: params of a request or of a notification, or a result. */
typedef enum { SCHEMA_REQUEST, SCHEMA_NOTIFICATION, SCHEMA_RESPONSE } schema_kind;

/* The method as either schema has it: *side is "agent" (the agent handles it: the client sends
 * requests and notifications, the agent answers), "client" or "protocol" (either way);
 * *unstable whether only schema.unstable.json has it. false: no such message in either. With no
 * schema (s NULL) every method is known and every message valid. */
bool chk_schema_find(const chk_schema *s, const char *method, schema_kind kind, const char **side,
                     bool *unstable);

/* Validates v as that message's params (or result; NULL params as {}). true: valid, or no such
 * method. false: err holds "PATH: why" (PATH a JSON pointer from the params or result). */
bool chk_schema_method_check(const chk_schema *s, const char *method, schema_kind kind,
                             const char *side, const json_t *v, char *err, size_t errlen);

#endif
