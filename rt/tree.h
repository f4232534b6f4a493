/* SPDX-License-Identifier: Apache-2.0 */
/* Private to rt: which processes belong to whom, so that none escapes teardown.
 *
 * Three facts the kernel gives us, and how rt uses them:
 *   - A process group is killed as a whole, but a descendant leaves it with setsid() or
 *     setpgid(). So every acp_proc child also carries a tag in its environment, which its
 *     descendants inherit through fork and exec whatever group or session they move to, and
 *     which /proc/PID/environ shows. A sweep signals every process carrying the tag.
 *   - Only a parent can reap its child, and waitpid() on a pid that is someone else's to wait
 *     for steals its status (libuv's, or an acp_proc's). The registry below lists the pids
 *     acp_procs wait for themselves; the reaper (reaper.c) leaves those and libuv's alone.
 *   - A child subreaper gets the orphans of its descendants, so they stay in its tree. */
#ifndef ACP_RT_TREE_H
#define ACP_RT_TREE_H

#include <stdbool.h>

/* The environment variable: a space-separated list of tags (an acp_proc started inside another
 * one's tree carries both), each 32 hex digits from the kernel's random pool. */
#define RT_TAG_VAR "ACP_PROC_TAG"
#define RT_TAG_LEN 32

/* A fresh tag, NUL-terminated. 0 or ACP_EIO. */
int rt_tag_new(char tag[RT_TAG_LEN + 1]);

/* Sends sig to every other process whose environment, as it was exec'd, lists tag in
 * RT_TAG_VAR. Processes may fork while /proc is read: with SIGKILL the scan repeats until a
 * round finds nobody new (at most a few rounds). Returns how many processes were signalled.
 * Reads /proc synchronously: a few microseconds per process on the host. */
int rt_sweep(const char *tag, int sig);

/* The registry of pids that an acp_proc waits for itself. Hold the lock from before fork()
 * until the pid is added (so a reaper never sees the child unregistered), and around a
 * reaper's check-then-waitpid. rt_children_reserve() makes the next add unable to fail. */
void rt_children_lock(void);
void rt_children_unlock(void);
int rt_children_reserve(void); /* lock held; 0 or ACP_ENOMEM */
void rt_children_add(int pid); /* lock held */
bool rt_children_has(int pid); /* lock held */
void rt_children_remove(int pid);

/* The pids whose parent is this process: malloc'd into *out (the caller frees it), count
 * returned; 0 and NULL when there are none or /proc cannot be read. */
int rt_list_children(int **out);

#endif
