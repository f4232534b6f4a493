/* SPDX-License-Identifier: Apache-2.0 */
/* acp_roots: a session's root set [cwd, ...additionalDirectories], the directories that bound
 * its file access. The agent checks every file access of a session against it; the client
 * checks the fs requests (read, write) it serves. One code path serves both.
 *
 * Symlinks are resolved at the time of the access: a link inside a root that points outside is
 * outside; a link that stays inside the roots (relative or absolute, even into another root)
 * works. The kernel then holds the line against a process racing us: every file and directory
 * is opened with openat2(2) RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS
 * relative to an O_PATH descriptor of the root that contains the resolved path (without
 * openat2, before Linux 5.6 or behind a seccomp filter that refuses it, by an openat(2)
 * O_NOFOLLOW walk from that descriptor, one component at a time). A symlink swapped in after the
 * resolution is never followed: the access is retried a few times, then refused. ACP_ROOTS_COMPAT=1
 * in the environment forces the pre-5.6 way (no openat2, no O_TMPFILE), for tests.
 *
 * Only regular files are read or written: FIFOs, sockets and devices are refused, and nothing
 * here blocks waiting for a peer (files are opened O_NONBLOCK). An acp_roots is immutable
 * once built and may be used from several threads at once; no I/O until a path is resolved.
 *
 * Every function returning an int status sets the thread's last error (acp_error_last()) on
 * failure, a sentence naming the path and what is wrong. */
#ifndef ACP_ROOTS_H
#define ACP_ROOTS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "acp/error.h"

#include "acp/api.h"

ACP_BEGIN_DECLS

typedef struct acp_roots acp_roots;

/* The largest read acp_roots_read() does when told 0: 64 MiB. */
#define ACP_ROOTS_MAX_READ ((size_t)64 << 20)

/* Builds a root set from cwd and ndirs additional directories (strings copied). Each must be
 * non-empty and absolute, else ACP_EINVAL, the last error saying which in the protocol's
 * words: "cwd must be an absolute path: 'src'", "additionalDirectories[1] must be an absolute
 * path: 'src'". The directories need not exist. On success *out is owned by the caller
 * (acp_roots_free()). ACP_ENOMEM. */
int acp_roots_new(const char *cwd, const char *const *dirs, size_t ndirs, acp_roots **out);
void acp_roots_free(acp_roots *r);

/* The roots as given (not resolved). Index 0 is cwd; borrowed, valid while r lives. */
const char *acp_roots_cwd(const acp_roots *r);
size_t acp_roots_count(const acp_roots *r);
const char *acp_roots_at(const acp_roots *r, size_t i);

/* Resolves path (a relative path is taken against cwd), following every symlink, and checks
 * that the result lies inside one of the roots (each root resolved the same way, so a root
 * may itself be a symlink). The file need not exist (a write creates it): then the deepest
 * existing ancestor is resolved and the missing rest is appended; a dangling symlink is
 * followed to where the file would be created. "/tmp/ab" is not inside "/tmp/a". This is a
 * check for showing and comparing paths; to touch the file use the functions below, which
 * do the check again in the kernel.
 *
 * On success *out is the malloc'd absolute resolved path (caller frees). ACP_EINVAL for an
 * empty path, ACP_EACCES when the result is outside every root or the path cannot be resolved
 * safely (a missing directory followed by "..", a symlink loop, a non-directory in the
 * middle, a permission error), ACP_ENOMEM. */
int acp_roots_resolve(const acp_roots *r, const char *path, char **out);

/* Opens the regular file at path inside the roots (flags and mode as open(2)'s; O_CLOEXEC,
 * O_NOCTTY and O_NONBLOCK are added; O_CREAT may create the file but never a directory). On
 * success *fd is the caller's. Errors as acp_roots_resolve()'s, plus ACP_ENOTFOUND (no such
 * file, or a parent directory missing), ACP_EINVAL (not a regular file: a directory, FIFO,
 * socket or device, refused without waiting on it) and ACP_EIO (other open failures). */
int acp_roots_open(const acp_roots *r, const char *path, int flags, mode_t mode, int *fd);

/* Reads the text of the regular file at path: from the 1-based `line` (0 counts as 1), at
 * most `limit` lines (SIZE_MAX: to the end), applied while reading so that only what is
 * returned is held in memory. max bounds the bytes returned (0: ACP_ROOTS_MAX_READ): a read
 * that would return more fails with ACP_ETOOBIG, the last error saying the limit. On success
 * *text (NUL-terminated, *n bytes without the NUL) is the caller's to free(). Errors as
 * acp_roots_open()'s, plus ACP_ETOOBIG. Blocks for as long as the disk takes: run it off an
 * event loop (the client library runs it on libuv's thread pool). */
int acp_roots_read(const acp_roots *r, const char *path, size_t line, size_t limit, size_t max,
                   char **text, size_t *n);

/* Replaces the regular file at path (created when missing, its parent directory must exist)
 * with the n bytes at data, atomically: the bytes go to a temporary file in the same
 * directory (O_TMPFILE, or a random name), which is fsync'd and renamed over the target. A
 * reader sees the old file or the new one, never a mixture; a failed or killed write leaves
 * the old content whole and no temporary file (a kill with named temporaries, the pre-5.6
 * way, can leave one). The target's mode is kept, and its owner where allowed; when path is a
 * symlink inside the roots, the file it names is replaced. Errors as acp_roots_open()'s. */
int acp_roots_write(const acp_roots *r, const char *path, const void *data, size_t n);

ACP_END_DECLS
#endif
