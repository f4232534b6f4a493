/* SPDX-License-Identifier: Apache-2.0 */
/* A service manager's socket activation, as small as a test needs (sd_listen_fds(3)'s side that
 * systemd plays): binds a TCP socket on 127.0.0.1 (port 0) and a Unix socket, both listening,
 * passes them as descriptors 3 and 4 with LISTEN_FDS=2, LISTEN_FDNAMES=web:local and
 * LISTEN_PID=its own pid (which the program it execs keeps), writes the TCP port to PORTFILE,
 * then execs the command.
 *   sdlaunch [--pid N] PORTFILE SOCKPATH COMMAND ARGS...   (--pid: a wrong LISTEN_PID) */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static void die(const char *what)
{
    perror(what);
    exit(127);
}

/* The socket moved to descriptor `to`, inheritable (no close-on-exec). */
static void place(int fd, int to)
{
    int high = fcntl(fd, F_DUPFD, 20); /* out of the way of 3 and 4 */
    if (high < 0) die("fcntl");
    close(fd);
    if (dup2(high, to) < 0) die("dup2");
    close(high);
}

int main(int argc, char **argv)
{
    int a = 1;
    const char *pid = NULL;
    if (argc > 2 && !strcmp(argv[1], "--pid")) {
        pid = argv[2];
        a = 3;
    }
    if (argc - a < 3) {
        fprintf(stderr, "usage: sdlaunch [--pid N] PORTFILE SOCKPATH COMMAND ARGS...\n");
        return 2;
    }
    int t = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in in = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof in;
    if (t < 0 || bind(t, (struct sockaddr *)&in, sizeof in) || listen(t, 16) ||
        getsockname(t, (struct sockaddr *)&in, &len))
        die("tcp");
    int u = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un un = {.sun_family = AF_UNIX};
    if (strlen(argv[a + 1]) >= sizeof un.sun_path) return 2;
    strcpy(un.sun_path, argv[a + 1]);
    if (u < 0 || bind(u, (struct sockaddr *)&un, sizeof un) || listen(u, 16)) die("unix");
    place(t, 3);
    place(u, 4);
    FILE *f = fopen(argv[a], "w");
    if (!f || fprintf(f, "%d\n", ntohs(in.sin_port)) < 0 || fclose(f)) die("port file");
    char mine[32];
    snprintf(mine, sizeof mine, "%ld", (long)getpid());
    setenv("LISTEN_PID", pid ? pid : mine, 1);
    setenv("LISTEN_FDS", "2", 1);
    setenv("LISTEN_FDNAMES", "web:local", 1);
    execv(argv[a + 2], argv + a + 2);
    die("exec");
}
