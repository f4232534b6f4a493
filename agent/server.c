/* SPDX-License-Identifier: Apache-2.0 */
/* acp_server: a listener whose every new link gets its own acp_agent (include/acp/server.h). */
#include <arpa/inet.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "acp/server.h"
#include "agent/internal.h"
#include "agent/relay.h"
#include "agent/serve.h"
#include "rpc/lasterr.h"
#include "net/listen.h"
#include "net/sdlisten.h"

/* The 1.0 size of the options (when it changes: rpc/lasterr.h). */
#define ACP_SERVER_OPTS_SIZE_1_0 ACP_STRUCT_SIZE_AT(acp_server_opts, stdio_mcp)

typedef struct sconn sconn;

struct acp_server {
    uv_loop_t *loop;
    acp_store *store;
    acp_engine eng;
    acp_agent_opts aopts;
    acp_server_opts o;
    acp_listener *L;
    agent_bounds bounds; /* every connection's agent borrows it */
    sconn *conns;
    size_t nconns;
    unsigned stall_ms;
    char **argv; /* acp_server_listen_command: each connection a process of it; else NULL */
    unsigned long next_id;
    bool shutting_down, closing_listener, freeing, done_called;
};

struct sconn {
    acp_server *srv;
    acp_agent *a;     /* an agent of ours, or */
    relay *r;         /* a process of argv's */
    unsigned long id; /* for the log */
    sconn *next, *prev;
};

/* agent_bounds.session_open: the bounds are the server's own member. */
static bool any_open(const agent_bounds *b, const char *id)
{
    const acp_server *srv = (const acp_server *)((const char *)b - offsetof(acp_server, bounds));
    for (const sconn *c = srv->conns; c; c = c->next) {
        const acp_session *s = c->a ? session_find(c->a, id) : NULL;
        if (s && !s->gone) return true;
    }
    return false;
}

/* agent_bounds.session_close: the archive of a session another connection has active. */
static void close_elsewhere(const agent_bounds *b, acp_agent *self, const char *id)
{
    const acp_server *srv = (const acp_server *)((const char *)b - offsetof(acp_server, bounds));
    for (const sconn *c = srv->conns; c; c = c->next) {
        acp_session *s = c->a && c->a != self ? session_find(c->a, id) : NULL;
        if (s && session_close(s)) acp_agent_flush(c->a);
    }
}

static void slog(acp_server *srv, const char *line)
{
    if (srv->aopts.on_log) srv->aopts.on_log(line, srv->aopts.user);
}

static void listener_log(const char *line, void *user)
{
    slog(user, line);
}

/* An agent's line, prefixed with its connection's number. */
static void conn_log(const char *line, void *user)
{
    sconn *c = user;
    char buf[1100];
    snprintf(buf, sizeof buf, "connection %lu: %s", c->id, line);
    slog(c->srv, buf);
}

static void unlink_conn(sconn *c)
{
    acp_server *srv = c->srv;
    if (c->prev)
        c->prev->next = c->next;
    else
        srv->conns = c->next;
    if (c->next) c->next->prev = c->prev;
    srv->nconns--;
}

static void release(acp_server *srv)
{
    for (size_t i = 0; srv->argv && srv->argv[i]; i++) free(srv->argv[i]);
    free(srv->argv);
    acp_roots_free(srv->bounds.roots);
    free(srv);
}

static void listener_closed(void *user)
{
    acp_server *srv = user;
    srv->L = NULL;
    if (srv->freeing) {
        release(srv);
        return;
    }
    srv->done_called = true;
    if (srv->o.on_done) srv->o.on_done(srv, srv->o.user);
}

/* Every agent is done: close what is left (sockets between requests, streams). */
static void maybe_close_listener(acp_server *srv)
{
    if (!srv->shutting_down || srv->nconns || srv->closing_listener) return;
    srv->closing_listener = true;
    acp_listener_close(srv->L, listener_closed, srv);
}

/* A connection's agent or relay is done with it: it goes, and perhaps the listener with it. */
static void conn_done(sconn *c)
{
    acp_server *srv = c->srv;
    unlink_conn(c);
    free(c);
    maybe_close_listener(srv);
}

static void agent_done(acp_agent *a, void *user)
{
    /* From the output's close callback: the agent's memory goes from libuv callbacks. */
    acp_agent_free(a);
    conn_done(user);
}

static void add_conn(acp_server *srv, sconn *c)
{
    c->next = srv->conns;
    if (srv->conns) srv->conns->prev = c;
    srv->conns = c;
    srv->nconns++;
}

static void relay_done(relay *r, void *user)
{
    conn_done(user);
}

static void conn_log_relay(const char *line, void *user)
{
    conn_log(line, user);
}

/* acp_server_listen_command: the connection gets its own process of the agent program. */
static void on_link_command(acp_server *srv, sconn *c, acp_link *l)
{
    char line[300];
    relay_opts ro = {.argv = srv->argv,
                     .bounds = &srv->bounds,
                     .stall_ms = srv->stall_ms,
                     .grace_ms = srv->o.close_timeout_ms ? srv->o.close_timeout_ms : 5000,
                     .on_log = srv->aopts.on_log ? conn_log_relay : NULL,
                     .on_done = relay_done,
                     .user = c};
    if (!c || srv->shutting_down) {
        free(c);
        acp_link_cbs none = {0};
        acp_link_bind(l, &none, NULL);
        acp_link_close(l);
        return;
    }
    if (relay_start(srv->loop, l, &ro, &c->r)) {
        snprintf(line, sizeof line, "connection %lu: %s", c->id, acp_error_last()->message);
        slog(srv, line);
        free(c);
        return;
    }
    add_conn(srv, c);
}

static void on_link(acp_link *l, void *user)
{
    acp_server *srv = user;
    sconn *c = calloc(1, sizeof *c);
    if (c) {
        c->srv = srv;
        c->id = ++srv->next_id;
    }
    if (srv->argv) {
        on_link_command(srv, c, l);
        return;
    }
    acp_agent_opts ao = srv->aopts;
    ao.on_done = agent_done;
    ao.user = c;
    ao.on_log = srv->aopts.on_log ? conn_log : NULL;
    int rc = c ? 0 : ACP_ENOMEM;
    if (!rc && srv->shutting_down) rc = ACP_ECLOSED;
    if (!rc) rc = acp_agent_new(srv->loop, srv->store, &srv->eng, &ao, &c->a);
    if (!rc) agent_set_bounds(c->a, &srv->bounds);
    if (!rc && srv->o.on_agent && srv->o.on_agent(c->a, srv->o.user)) rc = ACP_EINVAL;
    if (rc) {
        if (c && c->a) acp_agent_free(c->a);
        free(c);
        /* Bound to nobody: the link closes and tells no one. */
        acp_link_cbs none = {0};
        acp_link_bind(l, &none, NULL);
        acp_link_close(l);
        return;
    }
    add_conn(srv, c);
    acp_agent_serve_link(c->a, l, srv->stall_ms);
}

/* Loopback by its text (include/acp/server.h): "unix:...", localhost, 127.0.0.0/8, ::1. */
static bool loopback(const char *where)
{
    if (!strncmp(where, "unix:", 5)) return true;
    const char *colon = strrchr(where, ':');
    size_t n = colon ? (size_t)(colon - where) : strlen(where);
    if (n >= 2 && where[0] == '[' && where[n - 1] == ']') where++, n -= 2;
    char host[64];
    if (n >= sizeof host) return false;
    memcpy(host, where, n);
    host[n] = 0;
    unsigned char addr[16];
    if (inet_pton(AF_INET, host, addr) == 1) return addr[0] == 127;
    if (inet_pton(AF_INET6, host, addr) == 1)
        return !memcmp(addr, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\1", 16);
    return !strcasecmp(host, "localhost");
}

/* What the network may do (acp_server_opts, "Safety on the network"): a listener others can
 * reach needs a token unless the operator says otherwise; the roots and the stdio MCP policy
 * every connection's agent follows. */
static int bound(acp_server *srv, const acp_server_opts *o, const acp_sd_fds *sd)
{
    bool local = sd->n ? sd->loopback : o->listen && loopback(o->listen); /* none: EINVAL below */
    bool remote = o->exposed || !local;
    if (remote && !o->token && !o->insecure_no_auth)
        return acp_error_set(ACP_EACCES,
                             "refusing to listen on %s without a token: anyone who can "
                             "reach it could run commands and read and write files as "
                             "this user; give a token (acp-agent --token-file FILE), or "
                             "accept that (--insecure-no-auth)",
                             o->listen);
    if (remote && !o->token) {
        char line[512];
        snprintf(line, sizeof line,
                 "WARNING: listening on %s without a token (insecure_no_auth): anyone who can "
                 "reach it can run commands and read and write files as this user",
                 o->listen);
        slog(srv, line);
    }
    for (size_t i = 0; i < o->n_roots; i++)
        if (!o->roots[i] || o->roots[i][0] != '/')
            return acp_error_set(ACP_EINVAL, "a root must be an absolute path: '%s'",
                                 o->roots[i] ? o->roots[i] : "");
    if (o->n_roots && acp_roots_new(o->roots[0], o->roots + 1, o->n_roots - 1, &srv->bounds.roots))
        return acp_error_code(ACP_ENOMEM); /* the paths were checked */
    srv->bounds.session_open = any_open;
    srv->bounds.session_close = close_elsewhere;
    srv->bounds.no_stdio_mcp =
        o->stdio_mcp == ACP_SERVER_STDIO_MCP_REFUSE ||
        (o->stdio_mcp == ACP_SERVER_STDIO_MCP_DEFAULT && (remote || o->n_roots));
    return 0;
}

/* What both kinds of server share: the listener with the options' TLS, token, origins and
 * limits, and the bounds every connection follows. srv is freed on failure. */
static int start(uv_loop_t *loop, acp_server *srv, const acp_server_opts *opts, acp_server **out)
{
    srv->loop = loop;
    srv->o = *opts;
    srv->o.listen = srv->o.tls_cert = srv->o.tls_key = srv->o.token = NULL; /* not kept */
    srv->o.allow_origins = NULL;
    acp_listener_opts lo = {.where = opts->listen,
                            .tls_cert = opts->tls_cert,
                            .tls_key = opts->tls_key,
                            .token = opts->token,
                            .origins = opts->allow_origins,
                            .norigins = opts->n_allow_origins,
                            .limits = {.max_message = opts->max_message,
                                       .high_water = opts->high_water,
                                       .max_connections = opts->max_connections,
                                       .idle_timeout_ms = opts->idle_timeout_ms,
                                       .ping_interval_ms = opts->ping_interval_ms,
                                       .close_timeout_ms = opts->close_timeout_ms,
                                       .header_timeout_ms = opts->header_timeout_ms},
                            .on_link = on_link,
                            .on_log = listener_log,
                            .user = srv};
    srv->stall_ms = acp_net_limits_resolve(&lo.limits).idle_timeout_ms;
    int rc = 0;
    acp_sd_fds sd = {0};
    if (opts->listen && !strcmp(opts->listen, "systemd")) {
        char *err = NULL;
        rc = acp_sd_listen_fds(&sd, &err);
        if (rc) acp_error_set(rc, "%s", err ? err : acp_strerror(rc));
        free(err);
        lo.fds = sd.fds;
        lo.fd_names = (const char *const *)sd.names;
        lo.nfds = sd.n;
        for (size_t i = 0; i < sd.n; i++) {
            char line[300];
            snprintf(line, sizeof line, "serving socket %d (%s) from systemd", sd.fds[i],
                     sd.names[i]);
            slog(srv, line);
        }
    }
    if (!rc) rc = bound(srv, opts, &sd);
    if (rc) /* the sockets are ours: closed with the server that never started */
        for (size_t i = 0; i < sd.n; i++) close(sd.fds[i]);
    if (!rc) {
        char *err = NULL; /* net's listener hands its sentence back malloc'd */
        rc = acp_listener_open(loop, &lo, &srv->L, &err);
        if (rc) acp_error_set(rc, "%s", err ? err : acp_strerror(rc));
        free(err);
    }
    acp_sd_fds_clear(&sd);
    if (rc) {
        release(srv);
        return rc;
    }
    *out = srv;
    return 0;
}

int acp_agent_serve_listen(uv_loop_t *loop, acp_store *store, const acp_engine *engine,
                           const acp_agent_opts *agent_opts, const acp_server_opts *opts,
                           acp_server **out)
{
    *out = NULL;
    acp_server_opts o;
    acp_agent_opts ao;
    acp_engine eng;
    int rc = acp_struct_read(&o, sizeof o, ACP_SERVER_OPTS_SIZE_1_0, opts, "acp_server_opts");
    if (!rc)
        rc = acp_struct_read(&ao, sizeof ao, ACP_AGENT_OPTS_SIZE_1_0, agent_opts, "acp_agent_opts");
    if (!rc && !engine)
        rc = acp_error_set(ACP_EINVAL, "acp_agent_serve_listen: the engine is NULL");
    if (!rc) rc = acp_struct_read(&eng, sizeof eng, ACP_ENGINE_SIZE_1_0, engine, "acp_engine");
    if (rc) return rc;
    /* The engine is checked once here, not at the first connection. */
    acp_agent *probe = NULL;
    rc = acp_agent_new(loop, store, &eng, NULL, &probe);
    if (rc) return acp_error_set(rc, "invalid engine: %s", acp_error_last()->message);
    acp_agent_free(probe);
    acp_server *srv = calloc(1, sizeof *srv);
    if (!srv) return acp_error_set(ACP_ENOMEM, "out of memory starting a server");
    srv->store = store;
    srv->eng = eng;
    srv->aopts = ao;
    srv->aopts.on_done = NULL;
    return start(loop, srv, &o, out);
}

int acp_server_listen_command(uv_loop_t *loop, char *const *argv, const acp_server_opts *opts,
                              void (*on_log)(const char *line, void *user), acp_server **out)
{
    *out = NULL;
    acp_server_opts o;
    int rc = acp_struct_read(&o, sizeof o, ACP_SERVER_OPTS_SIZE_1_0, opts, "acp_server_opts");
    if (rc) return rc;
    if (!argv || !argv[0] || !argv[0][0])
        return acp_error_set(ACP_EINVAL, "acp_server_listen_command: no command");
    acp_server *srv = calloc(1, sizeof *srv);
    size_t n = 0;
    while (argv[n]) n++;
    if (srv) srv->argv = calloc(n + 1, sizeof *srv->argv);
    for (size_t i = 0; srv && srv->argv && i < n; i++)
        if (!(srv->argv[i] = strdup(argv[i]))) {
            release(srv);
            srv = NULL;
        }
    if (!srv || !srv->argv) {
        if (srv) release(srv);
        return acp_error_set(ACP_ENOMEM, "out of memory starting a server");
    }
    srv->aopts.on_log = on_log;
    srv->aopts.user = o.user;
    return start(loop, srv, &o, out);
}

int acp_server_reload(acp_server *srv, const char *token, const char *tls_cert, const char *tls_key)
{
    unsigned mark = acp_error_mark();
    if (!srv || !srv->L || srv->shutting_down)
        return acp_error_set(ACP_EINVAL, "acp_server_reload: the server is not listening");
    char *err = NULL;
    int rc = acp_listener_reload(srv->L, token, tls_cert, tls_key, &err);
    if (rc) acp_error_set(rc, "%s", err ? err : acp_strerror(rc));
    free(err);
    return acp_error_since(mark, rc);
}

int acp_server_port(const acp_server *srv)
{
    return srv->L ? acp_listener_port(srv->L) : 0;
}

size_t acp_server_connections(const acp_server *srv)
{
    return srv->nconns;
}

void acp_server_shutdown(acp_server *srv)
{
    if (srv->shutting_down) return;
    srv->shutting_down = true;
    acp_listener_stop(srv->L);
    /* An agent's shutdown may finish at once and unlink itself: walk a snapshot. */
    for (sconn *c = srv->conns, *next; c; c = next) {
        next = c->next;
        if (c->r)
            relay_shutdown(c->r);
        else
            acp_agent_shutdown(c->a);
    }
    maybe_close_listener(srv);
}

void acp_server_free(acp_server *srv)
{
    if (!srv) return;
    srv->freeing = true;
    srv->shutting_down = true;
    while (srv->conns) {
        sconn *c = srv->conns;
        unlink_conn(c);
        if (c->r)
            relay_free(c->r);
        else
            acp_agent_free(c->a);
        free(c);
    }
    if (!srv->L) {
        release(srv);
        return;
    }
    if (!srv->closing_listener) {
        srv->closing_listener = true;
        acp_listener_close(srv->L, listener_closed, srv);
    }
}
