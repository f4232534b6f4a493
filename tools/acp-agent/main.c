/* acp-agent: the libacp session runtime with the echo engine, ACP on stdin/stdout or, with
 * --listen, served over the network (WebSocket and Streamable HTTP, docs/remote.md). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acp/agent.h"
#include "acp/num.h"
#include "acp/rt.h"
#include "acp/server.h"
#include "acp/version.h"
#include "tools/acp-agent/echo.h"
#include "tools/acp-agent/memtrim.h"

static const char usage[] =
    "usage: acp-agent [--store PATH|URI] [--auth env:VAR] [--lease-ttl MS]\n"
    "                 [--log-level quiet|info] [--help] [--version]\n"
    "                 [--listen HOST:PORT|unix:/path [server options]]\n"
    "\n"
    "An ACP agent on stdin/stdout (logs on stderr) with the built-in echo engine.\n"
    "Sessions persist in the store: an SQLite file path (default\n"
    "$XDG_STATE_HOME/acp-agent/sessions.db, else ~/.local/state/acp-agent/sessions.db)\n"
    "or a postgresql:// URI. EOF on stdin, SIGTERM or SIGINT: running turns are cancelled,\n"
    "MCP servers stopped with whatever they started, everything committed; exit status 0.\n"
    "\n"
    "--lease-ttl MS: this agent holds a lease on each session it has open, so that no\n"
    "other agent on the store opens it meanwhile; MS (default 15000) is how long the\n"
    "lease outlives an agent that stopped renewing it (killed on another machine,\n"
    "paused, cut off from the store). Renewed every MS/3; given up on close and exit.\n"
    "\n"
    "--auth env:VAR: sessions need authentication first; the one method, echo-token,\n"
    "succeeds while VAR is set and non-empty in the agent's environment.\n"
    "\n"
    "Echo engine: a prompt is echoed back; commands: /stream N BYTES, /sleep MS,\n"
    "/title TEXT, /plan, /read PATH, /write PATH TEXT, /mcp, /call SERVER TOOL JSON,\n"
    "/notice TEXT, /compact, /usage, /mode MODE, /set OPTION VALUE, /term COMMAND, /ask,\n"
    "/elicit, /ext (the client's _acp-agent/ping); the client may call _acp-agent/echo.\n"
    "Modes ask and code; config options mode, model (echo-small, echo-large) and verbose.\n"
    "\n"
    "--listen HOST:PORT|unix:/path: serve ACP over the network instead of stdio, WebSocket\n"
    "and Streamable HTTP on the endpoint /acp (HTTP/1.1, and HTTP/2: h2 over TLS, h2c with\n"
    "prior knowledge), every connection its own ACP connection on the one store. Port 0\n"
    "picks a free port; the address is logged (\"listening on ...\") and, with\n"
    "--port-file FILE, the port is written to FILE. SIGTERM or SIGINT: stop accepting,\n"
    "cancel and answer running turns, commit, close every connection, exit 0.\n"
    "Server options (docs/remote.md):\n"
    "  --tls-cert FILE --tls-key FILE  TLS with this PEM certificate chain and key\n"
    "  --token-file FILE     every request must carry Authorization: Bearer <the file's\n"
    "                        first line>; others get 401 before any ACP byte is read\n"
    "  --max-connections N   sockets open at once, more get 503 (1024)\n"
    "  --max-message BYTES   one JSON-RPC message, larger gets 413 / close 1009 (64M)\n"
    "  --high-water BYTES    output queued per connection before its turns wait (4M)\n"
    "  --idle-timeout S      close a connection idle, or not reading, this long (300)\n"
    "  --header-timeout S    a request head (and TLS handshake) must arrive in (10)\n"
    "  --ping-interval S     WebSocket ping; two missed pongs close (30)\n"
    "  --close-timeout S     how long a close waits for a slow reader (5)\n"
    "  --port-file FILE      write the bound TCP port to FILE once listening\n"
    "Sizes take K, M or G; seconds may have decimals (0.5).\n";

struct prog {
    int verbose;
    acp_agent *agent;
    acp_server *server;
    uv_signal_t sigs[2]; /* SIGTERM, SIGINT */
    memtrim trim;
};

static void log_line(const char *line, void *user)
{
    if (((struct prog *)user)->verbose) fprintf(stderr, "acp-agent: %s\n", line);
}

/* SIGTERM / SIGINT end the agent like EOF does: turns cancelled, MCP servers stopped (no
 * orphans), everything committed and flushed. */
static void on_signal(uv_signal_t *h, int signum)
{
    struct prog *p = h->data;
    if (p->server) {
        if (p->verbose)
            fprintf(stderr, "acp-agent: %s: closing %zu connection(s)\n",
                    signum == SIGTERM ? "SIGTERM" : "SIGINT", acp_server_connections(p->server));
        acp_server_shutdown(p->server);
    } else {
        acp_agent_shutdown(p->agent);
    }
}

static void finished(struct prog *p)
{
    for (int i = 0; i < 2; i++) uv_close((uv_handle_t *)&p->sigs[i], NULL);
    memtrim_close(&p->trim);
}

static void on_done(acp_agent *a, void *user)
{
    finished(user);
}

static void on_server_done(acp_server *srv, void *user)
{
    finished(user);
}

static int on_agent(acp_agent *a, void *user)
{
    return echo_serve(a);
}

/* "64M", "4096", "1.5K": bytes. */
static bool parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    double mul = 1;
    if (*end == 'K' || *end == 'k')
        mul = 1024, end++;
    else if (*end == 'M' || *end == 'm')
        mul = 1024 * 1024, end++;
    else if (*end == 'G' || *end == 'g')
        mul = 1024.0 * 1024 * 1024, end++;
    v *= mul;
    if (errno || end == s || *end || !(v >= 1) || v > (double)(SIZE_MAX / 2)) return false;
    *out = (size_t)v;
    return true;
}

/* Seconds, decimals allowed, to milliseconds (at least 1). */
static bool parse_seconds(const char *s, unsigned *ms)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v > 0) || v > 4e6) return false;
    double m = v * 1000;
    *ms = m < 1 ? 1 : (unsigned)(m + 0.5);
    return true;
}

/* The token: the file's first line without its line end. Kept only in memory. */
static char *read_token(const char *path)
{
    FILE *f = fopen(path, "re");
    if (!f) {
        fprintf(stderr, "acp-agent: cannot read the token file '%s': %s\n", path, strerror(errno));
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
        fprintf(stderr, "acp-agent: the token file '%s' is empty\n", path);
        if (line) explicit_bzero(line, cap);
        free(line);
        return NULL;
    }
    return line;
}

/* The port, for scripts and tests that listen on port 0; written whole or not at all. */
static bool write_port(const char *path, int port)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "we");
    bool ok = f && fprintf(f, "%d\n", port) > 0;
    if (f && fclose(f)) ok = false;
    if (ok && rename(tmp, path)) ok = false;
    if (!ok) fprintf(stderr, "acp-agent: cannot write the port file '%s'\n", path);
    return ok;
}

static char *default_store(void)
{
    const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
    const char *base = xdg && *xdg == '/' ? xdg : NULL;
    char *out = NULL;
    int n;
    if (base)
        n = asprintf(&out, "%s/acp-agent/sessions.db", base);
    else if (home && *home)
        n = asprintf(&out, "%s/.local/state/acp-agent/sessions.db", home);
    else
        return NULL;
    return n < 0 ? NULL : out;
}

int main(int argc, char **argv)
{
    const char *where = NULL, *auth_env = NULL;
    const char *listen = NULL, *token_file = NULL, *port_file = NULL;
    acp_server_opts so = {0};
    uint64_t lease_ttl = 0;
    struct prog prog = {.verbose = 1};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage, stdout);
            return 0;
        } else if (!strcmp(argv[i], "--version")) {
            printf("acp-agent %s (ACP protocol %d)\n", ACP_VERSION_STRING, ACP_PROTOCOL_VERSION);
            return 0;
        } else if (!strcmp(argv[i], "--store") && i + 1 < argc) {
            where = argv[++i];
        } else if (!strncmp(argv[i], "--store=", 8)) {
            where = argv[i] + 8;
        } else if (!strcmp(argv[i], "--auth") && i + 1 < argc) {
            const char *spec = argv[++i];
            if (strncmp(spec, "env:", 4) || !spec[4]) {
                fprintf(stderr, "acp-agent: --auth takes env:VAR, not '%s'\n", spec);
                return 2;
            }
            auth_env = spec + 4;
        } else if (!strcmp(argv[i], "--listen") && i + 1 < argc) {
            listen = argv[++i];
        } else if (!strcmp(argv[i], "--tls-cert") && i + 1 < argc) {
            so.tls_cert = argv[++i];
        } else if (!strcmp(argv[i], "--tls-key") && i + 1 < argc) {
            so.tls_key = argv[++i];
        } else if (!strcmp(argv[i], "--token-file") && i + 1 < argc) {
            token_file = argv[++i];
        } else if (!strcmp(argv[i], "--port-file") && i + 1 < argc) {
            port_file = argv[++i];
        } else if (!strcmp(argv[i], "--max-connections") && i + 1 < argc) {
            size_t n;
            if (!parse_size(argv[++i], &n) || n > 1000000) {
                fprintf(stderr, "acp-agent: --max-connections takes a count, not '%s'\n", argv[i]);
                return 2;
            }
            so.max_connections = (unsigned)n;
        } else if ((!strcmp(argv[i], "--max-message") || !strcmp(argv[i], "--high-water")) &&
                   i + 1 < argc) {
            size_t *dst = !strcmp(argv[i], "--max-message") ? &so.max_message : &so.high_water;
            if (!parse_size(argv[i + 1], dst)) {
                fprintf(stderr, "acp-agent: %s takes a size (4096, 64M), not '%s'\n", argv[i],
                        argv[i + 1]);
                return 2;
            }
            i++;
        } else if ((!strcmp(argv[i], "--idle-timeout") || !strcmp(argv[i], "--header-timeout") ||
                    !strcmp(argv[i], "--ping-interval") || !strcmp(argv[i], "--close-timeout")) &&
                   i + 1 < argc) {
            unsigned *dst = !strcmp(argv[i], "--idle-timeout")     ? &so.idle_timeout_ms
                            : !strcmp(argv[i], "--header-timeout") ? &so.header_timeout_ms
                            : !strcmp(argv[i], "--ping-interval")  ? &so.ping_interval_ms
                                                                   : &so.close_timeout_ms;
            if (!parse_seconds(argv[i + 1], dst)) {
                fprintf(stderr, "acp-agent: %s takes seconds (10, 0.5), not '%s'\n", argv[i],
                        argv[i + 1]);
                return 2;
            }
            i++;
        } else if (!strcmp(argv[i], "--lease-ttl") && i + 1 < argc) {
            char why[ACP_NUM_WHY];
            if (acp_parse_u64(argv[++i], 1, 24 * 3600 * 1000, &lease_ttl, why, sizeof why)) {
                fprintf(stderr, "acp-agent: --lease-ttl takes milliseconds (1 to 86400000): %s\n",
                        why);
                return 2;
            }
        } else if (!strcmp(argv[i], "--log-level") && i + 1 < argc) {
            const char *level = argv[++i];
            if (strcmp(level, "quiet") && strcmp(level, "info")) {
                fprintf(stderr, "acp-agent: --log-level takes quiet or info, not '%s'\n", level);
                return 2;
            }
            prog.verbose = !strcmp(level, "info");
        } else {
            fprintf(stderr, "acp-agent: unknown argument '%s'\n%s", argv[i], usage);
            return 2;
        }
    }
    if (!listen && (so.tls_cert || so.tls_key || token_file || port_file || so.max_connections ||
                    so.max_message || so.high_water || so.idle_timeout_ms || so.header_timeout_ms ||
                    so.ping_interval_ms || so.close_timeout_ms)) {
        fprintf(stderr, "acp-agent: server options need --listen\n");
        return 2;
    }
    if (!so.tls_cert != !so.tls_key) {
        fprintf(stderr, "acp-agent: --tls-cert and --tls-key go together\n");
        return 2;
    }
    char *token = NULL;
    if (token_file && !(token = read_token(token_file))) return 1;
    signal(SIGPIPE, SIG_IGN);
    /* A bigger pipe to the client means fewer wake-ups per MB of replay or stream; best effort
     * (fails harmlessly on a non-pipe or above /proc/sys/fs/pipe-max-size). */
    fcntl(1, F_SETPIPE_SZ, 1 << 20);

    char *def = where ? NULL : default_store();
    if (!where && !def) {
        fprintf(stderr, "acp-agent: no --store given and neither XDG_STATE_HOME nor HOME set\n");
        return 1;
    }
    acp_store *store = NULL;
    char *err = NULL;
    if (acp_store_open(where ? where : def, &store, &err)) {
        fprintf(stderr, "acp-agent: cannot open the session store: %s\n",
                err ? err : "out of memory");
        free(err);
        free(def);
        if (token) explicit_bzero(token, strlen(token));
        free(token);
        return 1;
    }
    free(def);

    uv_loop_t loop;
    uv_loop_init(&loop);
    /* MCP servers' orphans (double-forked, setsid'd) come back to us, to die when we end. */
    acp_reaper *reaper = NULL;
    if (acp_reaper_start(&loop, &reaper) && prog.verbose)
        fprintf(stderr, "acp-agent: not a subreaper: orphans of MCP servers go to init\n");
    acp_engine eng;
    echo_engine(&eng, auth_env);
    /* mcp/ speaks Streamable HTTP and the old SSE transport, so both are advertised. */
    acp_agent_opts opts = {.on_log = log_line,
                           .on_done = on_done,
                           .user = &prog,
                           .mcp_http = true,
                           .mcp_sse = true,
                           .lease_ttl_ms = (unsigned)lease_ttl};
    acp_agent *a = NULL;
    int rc;
    if (listen) {
        so.listen = listen;
        so.token = token;
        so.on_agent = on_agent;
        so.on_done = on_server_done;
        so.user = &prog;
        char *serr = NULL;
        rc = acp_agent_serve_listen(&loop, store, &eng, &opts, &so, &prog.server, &serr);
        if (token) explicit_bzero(token, strlen(token)); /* the server keeps only a hash */
        free(token);
        if (rc) {
            fprintf(stderr, "acp-agent: %s\n", serr ? serr : acp_strerror(rc));
            free(serr);
        } else if (port_file && !write_port(port_file, acp_server_port(prog.server))) {
            rc = ACP_EIO;
        } else if (prog.verbose) {
            if (!strncmp(listen, "unix:", 5))
                fprintf(stderr, "acp-agent: listening on %s\n", listen);
            else
                fprintf(stderr, "acp-agent: listening on %.*s:%d%s\n",
                        (int)(strrchr(listen, ':') - listen), listen, acp_server_port(prog.server),
                        so.tls_cert ? " (TLS)" : "");
        }
    } else {
        rc = acp_agent_new(&loop, store, &eng, &opts, &a);
        if (!rc) rc = echo_serve(a);
        if (!rc) rc = acp_agent_serve_stdio(a, 0, 1);
        if (rc) fprintf(stderr, "acp-agent: cannot start: %s\n", acp_strerror(rc));
    }
    if (!rc) {
        prog.agent = a;
        int signums[2] = {SIGTERM, SIGINT};
        for (int i = 0; i < 2; i++) {
            uv_signal_init(&loop, &prog.sigs[i]);
            prog.sigs[i].data = &prog;
            uv_signal_start(&prog.sigs[i], on_signal, signums[i]);
        }
        memtrim_start(&loop, &prog.trim);
        uv_run(&loop, UV_RUN_DEFAULT);
    }
    if (a) acp_agent_free(a);
    if (prog.server) acp_server_free(prog.server);
    uv_run(&loop, UV_RUN_DEFAULT); /* the agent's handles close here */
    acp_reaper_close(reaper, NULL, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    acp_store_close(store);
    return rc ? 1 : 0;
}
