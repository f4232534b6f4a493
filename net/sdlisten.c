/* SPDX-License-Identifier: Apache-2.0 */
/* systemd socket activation without libsystemd (net/sdlisten.h). */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "acp/error.h"
#include "acp/num.h"
#include "net/sdlisten.h"

static char *sentence(const char *what, const char *value)
{
    char *s = NULL;
    if (asprintf(&s, "--listen systemd: %s%s%s", what, value ? ": " : "", value ? value : "") < 0)
        s = NULL;
    return s;
}

/* A Unix socket, or one bound to 127.0.0.0/8 or ::1 (an IPv4-mapped loopback too). */
static bool fd_loopback(int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &len)) return false;
    if (ss.ss_family == AF_UNIX) return true;
    if (ss.ss_family == AF_INET)
        return (ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr) >> 24) == 127;
    if (ss.ss_family != AF_INET6) return false;
    const struct in6_addr *a = &((struct sockaddr_in6 *)&ss)->sin6_addr;
    return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
}

int acp_sd_listen_fds(acp_sd_fds *out, char **err)
{
    memset(out, 0, sizeof *out);
    *err = NULL;
    const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
    uint64_t p, n;
    if (!pid || !fds) {
        *err = sentence("no sockets were passed (LISTEN_PID and LISTEN_FDS are not set: start "
                        "it from a systemd socket unit, see docs/remote.md)",
                        NULL);
        return ACP_EINVAL;
    }
    if (acp_parse_u64(pid, 1, UINT32_MAX, &p) || p != (uint64_t)getpid()) {
        *err = sentence("the sockets are for another process (LISTEN_PID)", pid);
        return ACP_EINVAL;
    }
    if (acp_parse_u64(fds, 1, ACP_SD_LISTEN_MAX, &n)) {
        *err = sentence("LISTEN_FDS must be a number from 1 to 64", fds);
        return ACP_EINVAL;
    }
    const char *names = getenv("LISTEN_FDNAMES");
    out->loopback = true;
    for (size_t i = 0; i < n; i++) {
        int fd = ACP_SD_LISTEN_FDS_START + (int)i;
        int fl = fcntl(fd, F_GETFD);
        if (fl < 0) {
            acp_sd_fds_clear(out);
            *err = sentence("a descriptor LISTEN_FDS counts is not open", NULL);
            return ACP_EINVAL;
        }
        fcntl(fd, F_SETFD, fl | FD_CLOEXEC); /* MCP servers and terminals must not inherit it */
        size_t len = names ? strcspn(names, ":") : 0;
        out->names[i] = len ? strndup(names, len) : strdup("unnamed");
        if (names) names = names[len] ? names + len + 1 : NULL;
        if (!out->names[i]) {
            acp_sd_fds_clear(out);
            *err = sentence("out of memory", NULL);
            return ACP_ENOMEM;
        }
        out->fds[i] = fd;
        out->n = i + 1;
        out->loopback = out->loopback && fd_loopback(fd);
    }
    unsetenv("LISTEN_PID");
    unsetenv("LISTEN_FDS");
    unsetenv("LISTEN_FDNAMES");
    return 0;
}

void acp_sd_fds_clear(acp_sd_fds *f)
{
    for (size_t i = 0; i < f->n; i++) free(f->names[i]);
    memset(f, 0, sizeof *f);
}
