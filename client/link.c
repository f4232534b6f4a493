/* SPDX-License-Identifier: Apache-2.0 */
/* The transports that carry a client's bytes: a spawned agent's pipes, file descriptors the
 * application already has, a Unix socket, each an acp_transport on the client's loop; and a
 * remote agent by URL, an acp_link (net/link.h) whose whole messages feed acp_conn_recv() and
 * which takes the connection's output line by line, once per loop turn. ACP_CLIENT_MANUAL has
 * none. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "client/internal.h"
#include "net/cookie.h"
#include "net/link.h"
#include "net/shttp_client.h"
#include "net/ws.h"

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

static void on_stderr(acp_proc *p, const char *buf, size_t n, void *user)
{
    acp_client *c = user;
    c->opts.on_stderr(c, buf, n, c->opts.user);
}

static int spawn(acp_client *c, const acp_transport_opts *to)
{
    const acp_client_opts *o = &c->opts;
    char **split = NULL;
    const char *const *argv = o->argv;
    if (!argv) {
        int rc = o->command ? acp_client_split_command(o->command, &split) : ACP_EINVAL;
        if (rc)
            return acp_error_set(ACP_EINVAL,
                                 "the agent command line is empty or has an unclosed "
                                 "quote: '%s'",
                                 o->command ? o->command : "");
        argv = (const char *const *)split;
    }
    acp_proc_opts po = {.struct_size = sizeof(acp_proc_opts),
                        .file = argv[0],
                        .argv = (char *const *)argv,
                        .env = (char *const *)o->env,
                        .pipe_stdin = true,
                        .pipe_stdout = true,
                        .pipe_stderr = o->on_stderr != NULL,
                        .inherit_stderr = true,
                        .on_stderr = o->on_stderr ? on_stderr : NULL,
                        .on_exit = on_exit_,
                        .user = c};
    int rc = acp_proc_spawn(c->loop, &po, &c->proc);
    if (!rc) c->pid = acp_proc_pid(c->proc);
    acp_client_argv_free(split);
    if (rc) return rc;
    rc = acp_transport_open_proc(c->loop, c->conn, c->proc, to, &c->tr);
    return rc ? acp_error_set(rc, "cannot connect to the agent's pipes: %s", acp_strerror(rc)) : 0;
}

/* A blocking connect: a Unix socket answers at once or not at all. */
static int unix_connect(acp_client *c, const acp_transport_opts *to)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    const char *path = c->opts.path;
    if (!path || !*path || strlen(path) >= sizeof sa.sun_path)
        return acp_error_set(ACP_EINVAL, "a Unix socket path of 1 to %zu bytes is needed",
                             sizeof sa.sun_path - 1);
    memcpy(sa.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return acp_error_set(ACP_EIO, "cannot make a socket: %s", strerror(errno));
    int r;
    do r = connect(fd, (struct sockaddr *)&sa, sizeof sa);
    while (r < 0 && errno == EINTR);
    if (r < 0) {
        int e = errno;
        close(fd);
        return acp_error_set(e == ENOENT   ? ACP_ENOTFOUND
                             : e == EACCES ? ACP_EACCES
                                           : ACP_EIO,
                             "cannot connect to the agent at unix:%s: %s", path, strerror(e));
    }
    int rc = acp_transport_open(c->loop, c->conn, fd, fd, to, &c->tr);
    close(fd); /* the transport works on its own duplicate */
    return rc ? acp_error_set(rc, "cannot use the socket unix:%s: %s", path, acp_strerror(rc)) : 0;
}

/* --- a remote agent by URL ------------------------------------------------------------- */

struct acp_client_net {
    acp_client *c;
    acp_link *link; /* NULL once it ended */
    uv_prepare_t prep;
    int open;            /* the link and the prepare handle, until each is closed */
    acp_cookie_jar *jar; /* the server's cookies, for the link's life */
    void (*done)(void *user);
    void *done_user;
};

static void net_release(acp_client_net *n)
{
    if (--n->open) return;
    void (*done)(void *) = n->done;
    void *user = n->done_user;
    acp_cookie_jar_free(n->jar);
    free(n);
    if (done) done(user);
}

static void net_on_message(acp_link *l, const char *msg, size_t len, void *user)
{
    acp_client_net *n = user;
    /* One message, one line: the link's messages hold no line break. */
    if (!acp_conn_recv(n->c->conn, msg, len)) acp_conn_recv(n->c->conn, "\n", 1);
}

static void net_on_close(acp_link *l, const char *reason, void *user)
{
    acp_client_net *n = user;
    n->link = NULL;
    acp_client *c = n->c;
    c->net_refused = l->refused;
    if (!n->done) {         /* not our close: the agent is out of reach */
        if (!c->net_err[0]) /* on_ws_open may have said it better */
            snprintf(c->net_err, sizeof c->net_err, "%s", reason && *reason ? reason : "closed");
        acp_client_eof(c);
    }
    net_release(n);
}

static void net_on_log(acp_link *l, const char *line, void *user)
{
    acp_client_net *n = user;
    acp_client_log(n->c, "the agent's connection: %s", line);
}

void acp_client_net_flush(acp_client *c)
{
    acp_client_net *n = c->net;
    if (!n || !n->link || !acp_conn_out_len(c->conn)) return;
    size_t len;
    char *out = acp_conn_out_take(c->conn, &len);
    for (char *p = out, *end = out + len; p < end;) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t k = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (k) acp_link_send(n->link, p, k); /* ACP_EIO: the link is ending; on_close says so */
        p += k + 1;
    }
    free(out);
}

static void net_on_prepare(uv_prepare_t *h)
{
    acp_client_net *n = h->data;
    acp_client_net_flush(n->c);
}

static void net_prep_closed(uv_handle_t *h)
{
    net_release(h->data);
}

void acp_client_net_close(acp_client *c, void (*done)(void *user), void *user)
{
    acp_client_net *n = c->net;
    acp_client_net_flush(c); /* a last session/cancel, a permission's answer */
    c->net = NULL;
    n->done = done;
    n->done_user = user;
    uv_close((uv_handle_t *)&n->prep, net_prep_closed);
    if (n->link) acp_link_close(n->link); /* on_close follows from the loop */
}

const char *acp_client_gone_why(const acp_client *c, const char *fallback)
{
    return c->net_err[0] ? c->net_err : fallback;
}

static void on_ws_open(acp_link *l, int status, const char *detail, void *user)
{
    acp_client_net *n = user;
    if (status) /* on_close follows */
        snprintf(n->c->net_err, sizeof n->c->net_err, "cannot open a WebSocket to %s: %s%s",
                 n->c->opts.url, detail && *detail ? detail : acp_strerror(status),
                 status == ACP_EACCES ? " (the bearer token is missing or wrong)" : "");
}

static int url_connect(acp_client *c)
{
    const acp_client_opts *o = &c->opts;
    const char *url = o->url ? o->url : "";
    acp_client_net *n = calloc(1, sizeof *n);
    if (!n) return acp_error_code(ACP_ENOMEM);
    n->c = c;
    if (!(n->jar = acp_cookie_jar_new())) {
        free(n);
        return acp_error_code(ACP_ENOMEM);
    }
    char *msg = NULL;
    int rc;
    if (!strncasecmp(url, "http://", 7) || !strncasecmp(url, "https://", 8)) {
        acp_shttp_client_opts so = {.url = url,
                                    .token = o->token,
                                    .ca_file = o->ca_file,
                                    .http2 = o->http2,
                                    .max_message = o->max_message,
                                    .cookies = n->jar};
        rc = acp_shttp_connect(c->loop, &so, &n->link, &msg);
    } else if (!strncasecmp(url, "ws://", 5) || !strncasecmp(url, "wss://", 6)) {
        acp_net_limits lim = {.max_message = o->max_message};
        acp_ws_connect_opts wo = {
            .url = url, .token = o->token, .cookies = n->jar, .ca_file = o->ca_file, .lim = &lim};
        rc = acp_ws_connect(c->loop, &wo, on_ws_open, n, &n->link);
        if (rc == ACP_EINVAL) msg = strdup("not a valid ws:// or wss:// URL");
    } else {
        rc = ACP_EINVAL;
        msg = strdup("an agent URL starts with ws://, wss://, http:// or https://");
    }
    if (rc) {
        acp_error_set(rc, "cannot connect to the agent at %s: %s", url,
                      msg ? msg : acp_strerror(rc));
        free(msg);
        acp_cookie_jar_free(n->jar);
        free(n);
        return rc;
    }
    static const acp_link_cbs cbs = {
        .on_message = net_on_message, .on_close = net_on_close, .on_log = net_on_log};
    acp_link_bind(n->link, &cbs, n);
    uv_prepare_init(c->loop, &n->prep);
    n->prep.data = n;
    uv_prepare_start(&n->prep, net_on_prepare);
    n->open = 2;
    c->net = n;
    return 0;
}

int acp_client_link_open(acp_client *c)
{
    acp_transport_opts to = {
        .struct_size = sizeof(acp_transport_opts), .on_eof = on_eof, .user = c};
    switch (c->opts.transport) {
    case ACP_CLIENT_SPAWN:
        return spawn(c, &to);
    case ACP_CLIENT_UNIX:
        return unix_connect(c, &to);
    case ACP_CLIENT_FDS: {
        int rc = acp_transport_open(c->loop, c->conn, c->opts.in_fd, c->opts.out_fd, &to, &c->tr);
        return rc ? acp_error_set(rc, "cannot use fds %d and %d: %s", c->opts.in_fd, c->opts.out_fd,
                                  acp_strerror(rc))
                  : 0;
    }
    case ACP_CLIENT_URL:
        return url_connect(c);
    default:
        return acp_error_set(ACP_EINVAL, "unknown transport %d", c->opts.transport);
    }
}
