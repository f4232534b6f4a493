/* SPDX-License-Identifier: Apache-2.0 */
/* acp_roots: a session's root set [cwd, ...additionalDirectories], the directories that bound
 * its file access. The agent checks every file access of a session against it; the client
 * checks the fs requests (read, write) it serves.
 *
 * The check happens after resolving symlinks, at the time of the access: a link inside a root
 * that points outside is outside. Immutable once built; no I/O until acp_roots_resolve(). */
#ifndef ACP_ROOTS_H
#define ACP_ROOTS_H

#include <stddef.h>
#include <sys/types.h>

#include "acp/error.h"

#include "acp/api.h"

ACP_BEGIN_DECLS

typedef struct acp_roots acp_roots;

/* Builds a root set from cwd and ndirs additional directories (strings copied). Each must be
 * non-empty and absolute, else ACP_EINVAL and *errmsg (if errmsg is not NULL; malloc'd, the
 * caller frees) says which, in the protocol's words: "cwd must be an absolute path: 'src'",
 * "additionalDirectories[1] must be an absolute path: 'src'". The directories need not exist.
 * On success *out is owned by the caller (acp_roots_free()). ACP_ENOMEM on allocation failure
 * (*errmsg then NULL). */
int acp_roots_new(const char *cwd, const char *const *dirs, size_t ndirs, acp_roots **out,
                  char **errmsg);
void acp_roots_free(acp_roots *r);

/* The roots as given (not resolved). Index 0 is cwd; borrowed, valid while r lives. */
const char *acp_roots_cwd(const acp_roots *r);
size_t acp_roots_count(const acp_roots *r);
const char *acp_roots_at(const acp_roots *r, size_t i);

/* Resolves path (a relative path is taken against cwd), following every symlink, and checks
 * that the result lies inside one of the roots (each root resolved the same way, so a root
 * may itself be a symlink). The file need not exist (a write creates it): then the deepest
 * existing ancestor is resolved and the missing rest is appended; a dangling symlink is
 * followed to where the file would be created. "/tmp/ab" is not inside "/tmp/a".
 *
 * On success *out is the malloc'd absolute resolved path (caller frees). Errors (with a
 * malloc'd *errmsg if errmsg is not NULL, caller frees): ACP_EINVAL for an empty path,
 * ACP_EACCES when the result is outside every root or the path cannot be resolved safely
 * (a missing directory followed by "..", a symlink loop, a non-directory in the middle, a
 * permission error), ACP_ENOMEM. */
int acp_roots_resolve(const acp_roots *r, const char *path, char **out, char **errmsg);

/* acp_roots_resolve() then open(2), closing the race between the check and the open: the
 * final component is opened with O_NOFOLLOW (a symlink swapped in meanwhile fails), and the
 * file actually opened is checked again through /proc/self/fd. flags and mode are open(2)'s
 * (O_CLOEXEC is added). Missing parent directories are not created. On success *fd is the
 * caller's and *real (if real is not NULL) the malloc'd resolved path. Errors as for
 * acp_roots_resolve(), plus ACP_ENOTFOUND (no such file, or a parent directory missing) and
 * ACP_EIO (other open failures), each with *errmsg. */
int acp_roots_open(const acp_roots *r, const char *path, int flags, mode_t mode, int *fd,
                   char **real, char **errmsg);

ACP_END_DECLS
#endif
