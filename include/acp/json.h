/* SPDX-License-Identifier: Apache-2.0 */
/* JSON helpers for the hot paths: a growable byte buffer, a streaming writer, and a validating
 * scanner that finds members in JSON text without building a tree.
 *
 * Trees (parsing requests, building rare messages) use jansson; these exist because emitting
 * session/update notifications and replaying stored history must not build or parse trees.
 *
 * Errors: a negative ACP_E* status (a writer's through acp_jw_status()), with the sentence in
 * acp_error_last() (acp/error.h). */
#ifndef ACP_JSON_H
#define ACP_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "acp/api.h"

ACP_BEGIN_DECLS

/* acp_buf, acp_span, acp_jw and acp_json_path are plain values the caller allocates: frozen in
 * 1.0 (acp/api.h), never grown; a later release adds a new struct instead.
 *
 * A growable byte buffer. Zero-initialise it ({0}); the buffer owns data; acp_buf_free()
 * releases it. data is not NUL-terminated unless acp_buf_cstr() is called. */
typedef struct acp_buf {
    char *data;
    size_t len;
    size_t cap;
} acp_buf;

int acp_buf_reserve(acp_buf *b, size_t extra); /* room for extra more bytes: 0 or ACP_ENOMEM */
int acp_buf_append(acp_buf *b, const void *p, size_t n);
int acp_buf_putc(acp_buf *b, char c);
int acp_buf_printf(acp_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *acp_buf_cstr(acp_buf *b); /* NUL-terminates (not counted in len); NULL on ENOMEM */
/* Hands the bytes to the caller (free() them) and leaves the buffer empty. */
char *acp_buf_take(acp_buf *b, size_t *len);
void acp_buf_free(acp_buf *b);
/* Gives back what one huge message left behind: when the capacity is over keep, the buffer is
 * cut to its length (freed when empty). Call it once a message is done, so a buffer reused
 * across messages keeps up to keep bytes (no malloc churn for ordinary traffic) and a 60 MB
 * prompt does not pin 64 MB for the life of the connection. */
void acp_buf_shrink(acp_buf *b, size_t keep);
/* The keep libacp uses for its own buffers that live across messages. */
#define ACP_BUF_KEEP ((size_t)1 << 20)

/* A span of JSON text inside some buffer the caller keeps alive. */
typedef struct acp_span {
    const char *p;
    size_t n;
} acp_span;

/* Streaming writer into an acp_buf. It inserts commas and validates every string it is given:
 * invalid UTF-8 makes acp_jw_status() return ACP_EINVAL (what was written is then garbage and
 * must be discarded). Nesting deeper than 64 levels is ACP_EINVAL too. Allocation failure is
 * ACP_ENOMEM. Once in error the writer ignores further calls. */
typedef struct acp_jw {
    acp_buf *out;
    uint64_t has_item; /* bit d: a value was already written at depth d */
    int depth;
    bool after_key;
    int status;
} acp_jw;

void acp_jw_init(acp_jw *w, acp_buf *out);
int acp_jw_status(const acp_jw *w);

void acp_jw_obj(acp_jw *w);
void acp_jw_obj_end(acp_jw *w);
void acp_jw_arr(acp_jw *w);
void acp_jw_arr_end(acp_jw *w);
void acp_jw_key(acp_jw *w, const char *key);
void acp_jw_str(acp_jw *w, const char *s);
void acp_jw_strn(acp_jw *w, const char *s, size_t n);
void acp_jw_int(acp_jw *w, int64_t v);
void acp_jw_uint(acp_jw *w, uint64_t v);
void acp_jw_real(acp_jw *w, double v); /* non-finite values are ACP_EINVAL */
void acp_jw_bool(acp_jw *w, bool v);
void acp_jw_null(acp_jw *w);
/* A value that is already JSON text. The caller guarantees it is one valid JSON value (use
 * acp_json_validate() if it came from outside); it is copied as is. */
void acp_jw_raw(acp_jw *w, const char *json, size_t n);
/* A jansson value, serialised compactly. NULL writes null. */
void acp_jw_json(acp_jw *w, const json_t *v);

/* key + value shorthands */
void acp_jw_kstr(acp_jw *w, const char *key, const char *s);
void acp_jw_kint(acp_jw *w, const char *key, int64_t v);
void acp_jw_kbool(acp_jw *w, const char *key, bool v);

/* Appends s as a JSON string literal (quotes included) to b. ACP_EINVAL on invalid UTF-8. */
int acp_json_escape(acp_buf *b, const char *s, size_t n);

/* Where a member is, for messages: a chain of frames on the stack while a tree is walked, the
 * root's key naming the whole ("params", "update"); key NULL marks an array item at index.
 * Rendered only when something is wrong, so walking costs one frame per level. */
typedef struct acp_json_path {
    const struct acp_json_path *up;
    const char *key;
    size_t index;
} acp_json_path;
/* Writes "params.mcpServers[0].args" into buf (cap bytes, NUL-terminated, cut to fit) and
 * returns the length the whole path needs. */
size_t acp_json_path_render(const acp_json_path *p, char *buf, size_t cap);

/* Scanner. Every function takes text that may be untrusted unless it says otherwise. */

/* 0 if s[0..n) is exactly one JSON value (RFC 8259: UTF-8, no trailing garbage, whitespace
 * around it allowed) nested at most `max_depth` deep; ACP_EINVAL otherwise. */
int acp_json_validate(const char *s, size_t n, int max_depth);

/* In `obj`, which must be validated JSON text of an object, finds the first member `key` and
 * sets *val to the exact text of its value. Keys are compared after unescaping. Returns true
 * when found. Runs in time linear in the object's text, without allocating. */
bool acp_json_member(acp_span obj, const char *key, acp_span *val);

/* Several members of `obj` in the one pass that also validates it: obj may be untrusted text,
 * checked as acp_json_validate() checks it (nesting up to 256). vals[i] is set to the text of
 * the first member keys[i], or {NULL, 0} when there is none (n at most 64; keys past it are not
 * looked for). Returns how many keys were found, or ACP_EINVAL when obj is not exactly one
 * valid JSON object (vals then mean nothing). For text read on a hot path, where validating
 * and then walking once per key would cost more than the rest of the work. */
int acp_json_members(acp_span obj, const char *const *keys, size_t n, acp_span *vals);

/* Iterates the items of `arr`, which must be validated JSON text of an array: start with
 * *pos = 0; each call sets *val to the exact text of the next item and returns true, or
 * returns false past the last one (or when arr is not an array). Linear in the array's text
 * over the whole iteration, without allocating. */
bool acp_json_item(acp_span arr, size_t *pos, acp_span *val);

/* The JSON type of validated value text: 'o' object, 'a' array, 's' string, 'n' number,
 * 't' true, 'f' false, 'z' null, 0 for empty. */
char acp_json_kind(acp_span v);

/* Decodes validated string text (with quotes) into a malloc'd NUL-terminated string, owned by
 * the caller. NULL if v is not a string, on ENOMEM, or if it holds a NUL character. */
char *acp_json_strdup(acp_span v);

/* Compares validated string text with the C string s after unescaping. */
bool acp_json_str_eq(acp_span v, const char *s);

ACP_END_DECLS
#endif
