/* SPDX-License-Identifier: Apache-2.0 */
/* systemd socket activation (internal to libacp): the sockets a service manager passed in, by
 * the protocol of sd_listen_fds(3), read without libsystemd. A socket unit's ListenStream=
 * sockets arrive as descriptors 3, 4, ... (SD_LISTEN_FDS_START), LISTEN_FDS says how many,
 * LISTEN_PID names the process they are for (a child that inherited the environment must not
 * take them), and LISTEN_FDNAMES their FileDescriptorName= values, colon-separated. */
#ifndef ACP_NET_SDLISTEN_H
#define ACP_NET_SDLISTEN_H

#include <stdbool.h>
#include <stddef.h>

#define ACP_SD_LISTEN_FDS_START 3
#define ACP_SD_LISTEN_MAX       64

typedef struct acp_sd_fds {
    int fds[ACP_SD_LISTEN_MAX];
    char *names[ACP_SD_LISTEN_MAX]; /* malloc'd: "unnamed" when LISTEN_FDNAMES says nothing */
    size_t n;
    bool loopback; /* every socket is a Unix one or bound to a loopback address */
} acp_sd_fds;

/* Takes the sockets passed to this process: 0 with out filled (the descriptors made
 * close-on-exec, LISTEN_PID, LISTEN_FDS and LISTEN_FDNAMES removed from the environment so
 * that no child takes them), or ACP_EINVAL with a malloc'd sentence in *err (none passed, or
 * not for this process). The caller owns the descriptors; acp_sd_fds_clear() frees the names. */
int acp_sd_listen_fds(acp_sd_fds *out, char **err);
void acp_sd_fds_clear(acp_sd_fds *f);

#endif
