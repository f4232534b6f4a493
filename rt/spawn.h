/* SPDX-License-Identifier: Apache-2.0 */
/* Private to rt: fork + exec for acp_proc (why not uv_spawn: spawn.c). */
#ifndef ACP_RT_SPAWN_H
#define ACP_RT_SPAWN_H

typedef struct rt_spawn_req {
    const char *file;  /* searched in envp's PATH when it has no '/' */
    char *const *argv; /* NULL-terminated */
    char *const *envp; /* the child's whole environment */
    const char *cwd;   /* NULL: ours */
    int fd[3];         /* the child's stdin, stdout, stderr; -1: /dev/null */
} rt_spawn_req;

/* Starts the child in a new session, with PR_SET_PDEATHSIG SIGKILL tied to the calling thread,
 * and registers its pid (tree.h) before any other thread can see it. Returns 0 and *pid once
 * the exec succeeded, else a negative errno (exec's, chdir's, fork's); a child whose exec
 * failed has been reaped and unregistered. The caller's fds are left open. */
int rt_spawn(const rt_spawn_req *r, int *pid);

#endif
