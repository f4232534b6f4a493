/* SPDX-License-Identifier: Apache-2.0 */
/* Private to agent/: the params of every request the agent serves, checked at the edge against
 * the schema's types (validate.c) as declared in per-method tables (params.c).
 *
 * A table says, per member, its JSON type, whether it is required, and how the schema's
 * decoding hints read it:
 *   x-deserialize-default-on-error    a malformed value is removed, so everything after the
 *                                      edge reads the member as absent (its default);
 *   x-deserialize-default-on-null     null is replaced by [];
 *   x-deserialize-skip-invalid-items  a malformed array item is removed.
 * That is what the official SDKs do (their decoders replace and drop the same values), so a
 * request one of them takes is taken here. Members a table does not name are kept as they
 * are: unknown fields and extensions pass. */
#ifndef ACP_AGENT_VALIDATE_H
#define ACP_AGENT_VALIDATE_H

#include <stdbool.h>
#include <stddef.h>

#include "acp/rpc.h"

enum vkind {
    V_STRING = 1,
    V_BOOL,
    V_U16,    /* an integer from 0 to 65535 (ProtocolVersion) */
    V_INT,    /* any integer */
    V_NUMBER, /* any number */
    V_ENUM,   /* one of the strings `of` lists */
    V_OBJECT, /* an object; with `of`, its members as that shape says */
    V_ARRAY,  /* an array of items as the field `of` says */
    V_TAGGED, /* an object whose variant a member names (vunion `of`) */
    V_ANYOF,  /* an object that is the first of several shapes it fits (vunion `of`) */
};

enum vflag {
    VF_REQ = 1,        /* required */
    VF_NULL = 2,       /* null is allowed (and means absent) */
    VF_NULL_EMPTY = 4, /* x-deserialize-default-on-null: null is read as [] */
    VF_LENIENT = 8,    /* x-deserialize-default-on-error */
    VF_SKIP = 16,      /* x-deserialize-skip-invalid-items */
};

typedef struct vfield {
    const char *key; /* NULL for an array's items */
    unsigned char kind, flags;
    const void *of; /* see enum vkind */
} vfield;

/* An object's members: n fields. */
typedef struct vshape {
    const vfield *fields;
    size_t n;
} vshape;

typedef struct vunion {
    const vshape *common; /* members every variant has (may be NULL) */
    /* V_TAGGED: the member naming the variant and its known values, one shape each in
     * variants; the shape for an absent tag and for any other value (NULL: an error).
     * V_ANYOF: the n shapes are tried in order and the first that fits wins. When none does,
     * the error reported is that of the variant the tag names (names[k]: variants[k]), else
     * that of variants[report]. */
    const char *tag;
    const char *const *names;
    const vshape *const *variants;
    size_t n, report;
    const vshape *absent, *other;
} vunion;

/* Why params did not fit: the path of the first bad member and the sentence naming it. */
typedef struct verr {
    char path[256];
    char msg[512];
    bool quiet; /* trying an anyOf variant whose failure is not reported: nothing rendered */
} verr;

/* Checks params against root (whose key is the path's start, "params"), removing the malformed
 * members the schema lets a reader drop and turning default-on-null nulls into []. true, or
 * false with e filled. Allocates nothing but such a replacement. */
bool params_check(json_t *params, const vfield *root, verr *e);

/* The agent's edge: params_check() on the request's params; false after answering -32602 with
 * e.msg as the message and {"path": e.path} as error.data. */
bool params_valid(acp_req *req, const vfield *root);

/* params.c: one root per method the agent serves. */
extern const vfield params_initialize, params_authenticate, params_logout, params_new, params_load,
    params_resume, params_close, params_list, params_delete, params_prompt, params_cancel,
    params_set_mode, params_set_config;
extern const vfield params_fork; /* session/fork (unstable) */

/* Every table by method name, for the tests that hold them against schema.json. */
typedef struct vmethod {
    const char *method;
    const char *schema; /* its params' name in the schema's $defs */
    const vfield *root;
} vmethod;
extern const vmethod params_methods[];
extern const size_t params_nmethods;

#endif
