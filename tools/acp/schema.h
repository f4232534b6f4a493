/* SPDX-License-Identifier: Apache-2.0 */
/* The ACP schema (tools/acp/schema/schema.json, and schema.unstable.json for the unstable
 * methods), built into acp, and a compact validator of the JSON Schema subset it uses: $ref
 * into $defs, type, const, enum, properties, required, additionalProperties, items, anyOf,
 * oneOf, allOf, not, minimum, maximum, minLength and the uint formats. Annotations are
 * ignored except x-deserialize-default-on-error and x-deserialize-skip-invalid-items: where
 * the schema says a reader tolerates a bad value, so does the validator. For acp trace. */
#ifndef ACP_TOOL_SCHEMA_H
#define ACP_TOOL_SCHEMA_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct acp_schemas acp_schemas;

/* Which message of a method: params of a request or of a notification, or a result. */
typedef enum { SCHEMA_REQUEST, SCHEMA_NOTIFICATION, SCHEMA_RESPONSE } schema_kind;

/* Parses the built-in schemas: NULL only when out of memory. Owned by the caller. */
acp_schemas *schemas_load(void);
void schemas_free(acp_schemas *s);

/* The method as the schema has it: *side is "agent" (the agent handles it: the client sends
 * requests and notifications, the agent answers), "client" or "protocol" (either way);
 * *unstable whether only schema.unstable.json has it. false: no such message in either. */
bool schemas_find(const acp_schemas *s, const char *method, schema_kind kind, const char **side,
                  bool *unstable);

/* Validates v as that message's params (or result). true: valid, or no such method. false:
 * err holds "PATH: why" (PATH a JSON pointer from the params or result). */
bool schemas_check(const acp_schemas *s, const char *method, schema_kind kind, const char *side,
                   json_t *v, char *err, size_t errlen);

#endif
