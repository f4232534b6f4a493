/* SPDX-License-Identifier: Apache-2.0 */
/* The server options of acp-agent --listen and acp serve (tools/common/serve_cli.h). */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp/num.h"
#include "tools/common/serve_cli.h"

const char serve_cli_usage[] =
    "--listen HOST:PORT|unix:/path: serve ACP over the network instead of stdio, WebSocket\n"
    "and Streamable HTTP on the endpoint /acp (HTTP/1.1, and HTTP/2: h2 over TLS, h2c with\n"
    "prior knowledge), every connection its own ACP connection. Port 0\n"
    "picks a free port; the address is logged (\"listening on ...\") and, with\n"
    "--port-file FILE, the port is written to FILE. SIGTERM or SIGINT: stop accepting,\n"
    "cancel and answer running turns, commit, close every connection, exit 0.\n"
    "Server options (docs/remote.md):\n"
    "  --tls-cert FILE --tls-key FILE  TLS with this PEM certificate chain and key\n"
    "  --token-file FILE     every request must carry Authorization: Bearer <the file's\n"
    "                        first line>; others get 401 before any ACP byte is read\n"
    "  --allow-origin ORIGIN a web page that may connect (repeatable; exact, or *);\n"
    "                        other Origins get 403, token or not\n"
    "  --max-connections N   sockets open at once, more get 503 (1024); also Streamable\n"
    "                        HTTP connections (at most 32 made by one socket)\n"
    "  --max-message BYTES   one JSON-RPC message, larger gets 413 / close 1009 (64M);\n"
    "                        also the unfinished bodies of one HTTP/2 connection together\n"
    "  --high-water BYTES    output queued per connection before its turns wait (4M)\n"
    "  --idle-timeout S      close a connection idle, or not reading, this long (300)\n"
    "  --header-timeout S    a request head (and TLS handshake) must arrive in (10);\n"
    "                        a body must bring 1K (or its end) in each such period\n"
    "  --ping-interval S     WebSocket ping; two missed pongs close (30)\n"
    "  --close-timeout S     how long a close waits for a slow reader (5)\n"
    "  --port-file FILE      write the bound TCP port to FILE once listening\n"
    "Safety (docs/remote.md, threat model). Loopback means unix:, localhost, 127.x, ::1:\n"
    "  --insecure-no-auth    listen on a non-loopback address without --token-file (else\n"
    "                        refused, exit 2): anyone who reaches it runs commands here\n"
    "  --exposed             treat a loopback address as non-loopback (a proxy forwards)\n"
    "  --root DIR            sessions' cwd and additionalDirectories must lie inside DIR\n"
    "                        (symlinks resolved; repeatable; else -32602)\n"
    "  --allow-stdio-mcp     let clients start stdio MCP servers (commands on this host);\n"
    "                        refused by default when non-loopback or with --root\n"
    "  --no-stdio-mcp        refuse them on loopback too\n"
    "Sizes take K, M or G; seconds may have decimals (0.5).\n";

void serve_cli_init(serve_cli *c, const char *prog)
{
    memset(c, 0, sizeof *c);
    c->prog = prog;
    c->so = (acp_server_opts)ACP_SERVER_OPTS_INIT;
}

/* "64M", "4096", "1.5K": bytes, read with the one checked number parser (issue 13). */
static bool parse_size(const char *s, size_t *out)
{
    uint64_t v;
    if (acp_parse_size(s, 1, SIZE_MAX / 2, &v)) return false;
    *out = (size_t)v;
    return true;
}

/* Seconds, decimals allowed, to milliseconds (at least 1). */
static bool parse_seconds(const char *s, unsigned *ms)
{
    double v;
    if (acp_parse_double(s, 0.000001, 4e6, &v)) return false;
    double m = v * 1000;
    *ms = m < 1 ? 1 : (unsigned)(m + 0.5);
    return true;
}

static int bad(const serve_cli *c, const char *fmt, const char *a, const char *b)
{
    fprintf(stderr, "%s: ", c->prog);
    fprintf(stderr, fmt, a, b);
    fputc('\n', stderr);
    return 2;
}

int serve_cli_take(serve_cli *c, int opt, const char *arg)
{
    acp_server_opts *so = &c->so;
    if (opt != SERVE_OPT_LISTEN) c->given = true;
    switch (opt) {
    case SERVE_OPT_LISTEN:
        c->listen = arg;
        return 0;
    case SERVE_OPT_TLS_CERT:
        so->tls_cert = arg;
        return 0;
    case SERVE_OPT_TLS_KEY:
        so->tls_key = arg;
        return 0;
    case SERVE_OPT_TOKEN_FILE:
        c->token_file = arg;
        return 0;
    case SERVE_OPT_PORT_FILE:
        c->port_file = arg;
        return 0;
    case SERVE_OPT_ALLOW_ORIGIN:
        if (so->n_allow_origins == SERVE_CLI_MAX || !arg[0])
            return bad(c, "--allow-origin: %s%s", arg[0] ? "at most 64" : "empty origin", "");
        c->origins[so->n_allow_origins++] = arg;
        so->allow_origins = c->origins;
        return 0;
    case SERVE_OPT_ROOT:
        if (so->n_roots == SERVE_CLI_MAX) return bad(c, "--root '%s': %s", arg, "at most 64 roots");
        if (!(c->roots[so->n_roots] = realpath(arg, NULL)))
            return bad(c, "--root '%s': %s", arg, strerror(errno));
        so->n_roots++;
        so->roots = (const char *const *)c->roots;
        return 0;
    case SERVE_OPT_EXPOSED:
        so->exposed = true;
        return 0;
    case SERVE_OPT_INSECURE_NO_AUTH:
        so->insecure_no_auth = true;
        return 0;
    case SERVE_OPT_ALLOW_STDIO_MCP:
        so->stdio_mcp = ACP_SERVER_STDIO_MCP_ALLOW;
        return 0;
    case SERVE_OPT_NO_STDIO_MCP:
        so->stdio_mcp = ACP_SERVER_STDIO_MCP_REFUSE;
        return 0;
    case SERVE_OPT_MAX_CONNECTIONS: {
        size_t n;
        if (!parse_size(arg, &n) || n > 1000000)
            return bad(c, "--max-connections takes a count, not '%s'%s", arg, "");
        so->max_connections = (unsigned)n;
        return 0;
    }
    case SERVE_OPT_MAX_MESSAGE:
    case SERVE_OPT_HIGH_WATER:
        if (!parse_size(arg, opt == SERVE_OPT_MAX_MESSAGE ? &so->max_message : &so->high_water))
            return bad(c, "%s takes a size (4096, 64M), not '%s'",
                       opt == SERVE_OPT_MAX_MESSAGE ? "--max-message" : "--high-water", arg);
        return 0;
    default: {
        static const char *const names[] = {"--idle-timeout", "--header-timeout", "--ping-interval",
                                            "--close-timeout"};
        unsigned *dst = opt == SERVE_OPT_IDLE_TIMEOUT     ? &so->idle_timeout_ms
                        : opt == SERVE_OPT_HEADER_TIMEOUT ? &so->header_timeout_ms
                        : opt == SERVE_OPT_PING_INTERVAL  ? &so->ping_interval_ms
                        : opt == SERVE_OPT_CLOSE_TIMEOUT  ? &so->close_timeout_ms
                                                          : NULL;
        if (!dst) return bad(c, "not a server option%s%s", "", "");
        if (!parse_seconds(arg, dst))
            return bad(c, "%s takes seconds (10, 0.5), not '%s'",
                       names[opt - SERVE_OPT_IDLE_TIMEOUT], arg);
        return 0;
    }
    }
}

/* The token: the file's first line without its line end. Kept only in memory. */
static char *read_token(const serve_cli *c, const char *path)
{
    FILE *f = fopen(path, "re");
    if (!f) {
        fprintf(stderr, "%s: cannot read the token file '%s': %s\n", c->prog, path,
                strerror(errno));
        return NULL;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n = getline(&line, &cap, f);
    fclose(f);
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r' || line[n - 1] == ' ' ||
                     line[n - 1] == '\t'))
        line[--n] = '\0';
    if (n <= 0) {
        fprintf(stderr, "%s: the token file '%s' is empty\n", c->prog, path);
        if (line) explicit_bzero(line, cap);
        free(line);
        return NULL;
    }
    return line;
}

int serve_cli_finish(serve_cli *c)
{
    if (!c->so.tls_cert != !c->so.tls_key)
        return bad(c, "--tls-cert and --tls-key go together%s%s", "", "");
    if (c->token_file && !(c->token = read_token(c, c->token_file))) return 1;
    c->so.listen = c->listen;
    c->so.token = c->token;
    return 0;
}

/* The port, for scripts and tests that listen on port 0; written whole or not at all. */
static bool write_port(const serve_cli *c, int port)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", c->port_file);
    FILE *f = fopen(tmp, "we");
    bool ok = f && fprintf(f, "%d\n", port) > 0;
    if (f && fclose(f)) ok = false;
    if (ok && rename(tmp, c->port_file)) ok = false;
    if (!ok) fprintf(stderr, "%s: cannot write the port file '%s'\n", c->prog, c->port_file);
    return ok;
}

bool serve_cli_started(const serve_cli *c, const acp_server *srv, bool verbose)
{
    if (c->port_file && !write_port(c, acp_server_port(srv))) return false;
    if (!verbose) return true;
    if (!strncmp(c->listen, "unix:", 5))
        fprintf(stderr, "%s: listening on %s\n", c->prog, c->listen);
    else
        fprintf(stderr, "%s: listening on %.*s:%d%s\n", c->prog,
                (int)(strrchr(c->listen, ':') - c->listen), c->listen, acp_server_port(srv),
                c->so.tls_cert ? " (TLS)" : "");
    return true;
}

void serve_cli_free(serve_cli *c)
{
    if (c->token) explicit_bzero(c->token, strlen(c->token));
    free(c->token);
    c->token = NULL;
    c->so.token = NULL;
    for (size_t i = 0; i < c->so.n_roots; i++) free(c->roots[i]);
    c->so.n_roots = 0;
}
