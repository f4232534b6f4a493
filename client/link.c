/* The transports that carry a client's bytes: a spawned agent's pipes, file descriptors the
 * application already has, a Unix socket. Each ends as an acp_transport on the client's loop;
 * the remote transports (WebSocket, Streamable HTTP) plug in here as well, as anything that
 * feeds acp_conn_recv() and drains the connection's output. ACP_CLIENT_MANUAL has none. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "client/internal.h"

static void on_eof(acp_transport *t, void *user)
{
    acp_client_eof(user);
}

static void on_exit_(acp_proc *p, int64_t status, int sig, void *user)
{
    acp_client *c = user;
    c->exited = true;
    c->exit_code = status;
    c->exit_sig = sig;
}

static int spawn(acp_client *c, const acp_transport_opts *to)
{
    const acp_client_opts *o = &c->opts;
    char **split = NULL, *msg = NULL;
    const char *const *argv = o->argv;
    if (!argv) {
        int rc = o->command ? acp_client_split_command(o->command, &split) : ACP_EINVAL;
        if (rc)
            return acp_client_seterr(c, ACP_EINVAL,
                                     "the agent command line is empty or has an unclosed "
                                     "quote: '%s'",
                                     o->command ? o->command : "");
        argv = (const char *const *)split;
    }
    acp_proc_opts po = {.file = argv[0],
                        .argv = (char *const *)argv,
                        .env = (char *const *)o->env,
                        .pipe_stdin = true,
                        .pipe_stdout = true,
                        .inherit_stderr = true,
                        .on_exit = on_exit_,
                        .user = c};
    int rc = acp_proc_spawn(c->loop, &po, &c->proc, &msg);
    if (rc)
        acp_client_seterr(c, rc, "%s", msg ? msg : "cannot spawn the agent");
    else
        c->pid = acp_proc_pid(c->proc);
    free(msg);
    acp_client_argv_free(split);
    if (rc) return rc;
    rc = acp_transport_open_proc(c->loop, c->conn, c->proc, to, &c->tr);
    return rc ? acp_client_seterr(c, rc, "cannot connect to the agent's pipes: %s",
                                  acp_strerror(rc))
              : 0;
}

/* A blocking connect: a Unix socket answers at once or not at all. */
static int unix_connect(acp_client *c, const acp_transport_opts *to)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    const char *path = c->opts.path;
    if (!path || !*path || strlen(path) >= sizeof sa.sun_path)
        return acp_client_seterr(c, ACP_EINVAL, "a Unix socket path of 1 to %zu bytes is needed",
                                 sizeof sa.sun_path - 1);
    memcpy(sa.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return acp_client_seterr(c, ACP_EIO, "cannot make a socket: %s", strerror(errno));
    int r;
    do r = connect(fd, (struct sockaddr *)&sa, sizeof sa);
    while (r < 0 && errno == EINTR);
    if (r < 0) {
        int e = errno;
        close(fd);
        return acp_client_seterr(c,
                                 e == ENOENT   ? ACP_ENOTFOUND
                                 : e == EACCES ? ACP_EACCES
                                               : ACP_EIO,
                                 "cannot connect to the agent at unix:%s: %s", path, strerror(e));
    }
    int rc = acp_transport_open(c->loop, c->conn, fd, fd, to, &c->tr);
    close(fd); /* the transport works on its own duplicate */
    return rc ? acp_client_seterr(c, rc, "cannot use the socket unix:%s: %s", path,
                                  acp_strerror(rc))
              : 0;
}

int acp_client_link_open(acp_client *c)
{
    acp_transport_opts to = {.on_eof = on_eof, .user = c};
    switch (c->opts.transport) {
    case ACP_CLIENT_SPAWN:
        return spawn(c, &to);
    case ACP_CLIENT_UNIX:
        return unix_connect(c, &to);
    case ACP_CLIENT_FDS: {
        int rc = acp_transport_open(c->loop, c->conn, c->opts.in_fd, c->opts.out_fd, &to, &c->tr);
        return rc ? acp_client_seterr(c, rc, "cannot use fds %d and %d: %s", c->opts.in_fd,
                                      c->opts.out_fd, acp_strerror(rc))
                  : 0;
    }
    default:
        return acp_client_seterr(c, ACP_EINVAL, "unknown transport %d", c->opts.transport);
    }
}
