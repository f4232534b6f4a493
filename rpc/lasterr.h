/* SPDX-License-Identifier: Apache-2.0 */
/* Setting this thread's last error (acp_error_last() in <acp/error.h>). Internal to libacp. */
#ifndef ACP_RPC_LASTERR_H
#define ACP_RPC_LASTERR_H

#include <stddef.h>

/* Sets the last error to status and the formatted sentence (cut at 1 KiB), and returns status,
 * so a failure path reads `return acp_error_set(ACP_EINVAL, "bad %s", what);`. Never allocates. */
int acp_error_set(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Sets the last error to status and its acp_strerror() name; returns status. */
int acp_error_code(int status);
/* For a public function whose failures come from several layers below it: take a mark on
 * entry, and return acp_error_since(mark, rc). A failure (rc < 0) that set no sentence of its
 * own since the mark then gets acp_error_code(rc); one that did keeps it; rc >= 0 leaves the
 * last error alone. */
unsigned acp_error_mark(void);
int acp_error_since(unsigned mark, int status);

/* For work done from the loop on no call of the application's (an answer that arrives, and
 * whose failure goes to a callback): save the last error first and restore it after, so the
 * application's own last error is not overwritten behind its back. */
typedef struct acp_error_saved {
    int status;
    unsigned sets;
    char text[1024];
} acp_error_saved;
void acp_error_save(acp_error_saved *s);
void acp_error_restore(const acp_error_saved *s);

/* Reads an application's extensible struct (include/acp/api.h) into the library's own: copies
 * min(its struct_size, size) bytes into dst and zeroes the rest. src NULL: dst all zero, 0.
 * Refuses (last error set, naming `what`): struct_size 0 or below min_size, ACP_EINVAL; larger
 * than size with a non-zero byte past size, ACP_ENOTSUP. */
int acp_struct_read(void *dst, size_t size, size_t min_size, const void *src, const char *what);
/* The other direction, for an application-allocated struct the library fills in: checks dst's
 * struct_size as acp_struct_read() checks src's, then copies the first min(struct_size, size)
 * bytes of src (the library's own struct) over dst, dst's struct_size kept. */
int acp_struct_write(void *dst, size_t size, size_t min_size, const void *src, const char *what);

/* min_size: each reader passes the size of the struct as 1.0 shipped it, through a define
 * beside the code that reads it, naming the struct's last 1.0 member:
 *     #define ACP_AGENT_OPTS_SIZE_1_0 ACP_STRUCT_SIZE_AT(acp_agent_opts, max_read)
 * so that members appended later leave it alone and programs built against 1.0 (whose
 * struct_size is that size) stay accepted. A member appended to a struct whose 1.0 layout ends
 * in padding must start at or past the 1.0 size: an explicit reserved member fills the padding
 * first, because a 1.0 program's struct_size covers its tail padding, whose bytes C does not
 * promise to be zero. */
#define ACP_STRUCT_SIZE_AT(T, last)                                                                \
    ((offsetof(T, last) + sizeof(((T *)0)->last) + _Alignof(T) - 1) / _Alignof(T) * _Alignof(T))

#endif
