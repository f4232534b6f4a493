/* SPDX-License-Identifier: Apache-2.0 */
/* acp-agent: the libacp session runtime with an engine (echo, or openai for a model server), ACP
 * on stdin/stdout or, with --listen, served over the network (WebSocket and Streamable HTTP,
 * docs/remote.md). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acp/agent.h"
#include "acp/num.h"
#include "acp/rt.h"
#include "acp/server.h"
#include "acp/version.h"
#include "engines/openai/openai.h"
#include "engines/echo/echo.h"
#include "tools/acp-agent/memtrim.h"

static const char usage[] =
    "usage: acp-agent [--engine echo|openai] [--store PATH|URI] [--auth env:VAR]\n"
    "                 [--lease-ttl MS] [--max-read SIZE] [--log-level quiet|info]\n"
    "                 [--unstable-off all|FEATURE,...]\n"
    "                 [--help] [--version]\n"
    "                 [--listen HOST:PORT|unix:/path|systemd [server options]]\n"
    "       acp-agent --engine openai [--base-url URL] [--model NAME] [--api-key-env VAR]\n"
    "                 [--system-prompt FILE] [--max-tokens N] [--max-turns N]\n"
    "                 [--context-tokens N] [--store PATH|URI] ...\n"
    "\n"
    "An ACP agent on stdin/stdout (logs on stderr) with a built-in engine: echo (the\n"
    "default, a test engine) or openai (a model on any OpenAI-compatible server).\n"
    "Sessions persist in the store: an SQLite file path (default\n"
    "$XDG_STATE_HOME/acp-agent/sessions.db, else ~/.local/state/acp-agent/sessions.db)\n"
    "or a postgresql:// URI. EOF on stdin, SIGTERM or SIGINT: running turns are cancelled,\n"
    "MCP servers stopped with whatever they started, everything committed; exit status 0.\n"
    "\n"
    "--lease-ttl MS: this agent holds a lease on each session it has open, so that no\n"
    "other agent on the store writes it meanwhile; a load elsewhere takes it over while\n"
    "no turn runs here (this agent's client then gets -32002 lease_lost), and waits for\n"
    "a running turn. MS (default 15000) is how long the lease outlives an agent that\n"
    "stopped renewing it (killed on another machine, paused, cut off from the store).\n"
    "Renewed every MS/3; given up on close and exit.\n"
    "\n"
    "--max-read SIZE: the most one file read of the engine returns (64M).\n"
    "\n"
    "Unstable features (the SDK's unstable schema; their wire shapes may still change):\n"
    "fork, title, archive, status, system-prompt, subagents, mcp-acp, providers,\n"
    "auth-status. All are offered by default; --unstable-off LIST (comma-separated, or\n"
    "all) neither advertises nor answers the ones named.\n"
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
    "Openai engine: POST URL/chat/completions (streamed) and GET URL/models on\n"
    "llama-server, Ollama, vLLM, LM Studio, OpenAI or a gateway. --base-url (default\n"
    "http://127.0.0.1:11434/v1, Ollama's), --model (default: the first the server lists),\n"
    "--api-key-env VAR (the key is read from that variable, never from the command line),\n"
    "--system-prompt FILE, --max-tokens N (per answer; default: the server's),\n"
    "--max-turns N (tool rounds per prompt, default 25), --context-tokens N (the window;\n"
    "default: what the server lists for the model, else 32768; older turns are summarised\n"
    "near it). An answer is cut at 64M of text and tool-call arguments (16M in one call, 256\n"
    "calls); while the client does not read, the model's stream waits. The model's tools:\n"
    "the session's MCP tools, and the client's file reads,\n"
    "writes and terminal when it offers them (writes and commands ask first; none in mode\n"
    "ask).\n"
    "\n";
/* The server's part (a second string: C17 promises string literals up to 4095 bytes). */
static const char usage_listen[] =
    "--listen HOST:PORT|unix:/path|systemd: serve ACP over the network instead of stdio,\n"
    "WebSocket and Streamable HTTP on the endpoint /acp (HTTP/1.1, and HTTP/2: h2 over\n"
    "TLS, h2c with prior knowledge), every connection its own ACP connection on the one\n"
    "store. Port 0\n"
    "picks a free port; the address is logged (\"listening on ...\") and, with\n"
    "--port-file FILE, the port is written to FILE. SIGTERM or SIGINT: stop accepting,\n"
    "cancel and answer running turns, commit, close every connection, exit 0.\n"
    "systemd: the sockets a socket unit passed (LISTEN_FDS; docs/acp-agent.socket).\n"
    "SIGHUP: re-read the token file and the TLS certificate and key for new connections;\n"
    "open connections go on (a file that cannot be read keeps the old ones).\n"
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

struct prog {
    int verbose;
    bool echo; /* the echo engine, whose extension methods each agent registers */
    acp_agent *agent;
    acp_server *server;
    uv_signal_t sigs[3];                         /* SIGTERM, SIGINT, SIGHUP (a server's reload) */
    const char *token_file, *tls_cert, *tls_key; /* what SIGHUP re-reads */
    uv_timer_t wait; /* for GET /models; here, not in a block: it lives until its close ends */
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

static char *read_token(const char *path);

/* SIGHUP: what an operator rotates, re-read for the connections to come. */
static void on_hup(uv_signal_t *h, int signum)
{
    struct prog *p = h->data;
    char *token = p->token_file ? read_token(p->token_file) : NULL; /* it says why not */
    int rc = p->token_file && !token ? ACP_EINVAL
                                     : acp_server_reload(p->server, token, p->tls_cert, p->tls_key);
    if (token) explicit_bzero(token, strlen(token));
    free(token);
    if (rc && p->token_file && !token)
        fprintf(stderr, "acp-agent: SIGHUP: keeping the old token and certificate\n");
    else if (rc)
        fprintf(stderr, "acp-agent: SIGHUP: %s; keeping the old token and certificate\n",
                acp_error_last()->message);
    else
        fprintf(stderr, "acp-agent: SIGHUP: reloaded%s%s for new connections\n",
                p->token_file ? " the token file" : "", p->tls_cert ? " the TLS certificate" : "");
}

static void finished(struct prog *p)
{
    for (int i = 0; i < 3; i++) uv_close((uv_handle_t *)&p->sigs[i], NULL);
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
    return ((struct prog *)user)->echo ? echo_serve(a) : 0;
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

/* A whole file (the system prompt), NUL-terminated; NULL with errno set. */
static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    acp_buf b = {0};
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        if (b.len + n > (1u << 20) || acp_buf_append(&b, chunk, n)) {
            errno = EFBIG;
            break;
        }
    bool bad = ferror(f) || errno == EFBIG;
    fclose(f);
    if (bad || !acp_buf_cstr(&b)) {
        acp_buf_free(&b);
        return NULL;
    }
    return b.data;
}

/* The openai engine's options (each takes a value v): 1 taken, -1 taken but bad (said on
 * stderr), 0 not one of them. */
static int openai_arg(const char *a, const char *v, openai_opts *o, const char **key_env,
                      const char **prompt_file)
{
    static const struct {
        const char *name;
        size_t offset;
        uint64_t max;
    } nums[] = {{"--max-tokens", offsetof(openai_opts, max_tokens), 100000000},
                {"--max-turns", offsetof(openai_opts, max_turns), 100000},
                {"--context-tokens", offsetof(openai_opts, context_tokens), 100000000}};
    if (!v) return 0;
    if (!strcmp(a, "--base-url"))
        o->base_url = v;
    else if (!strcmp(a, "--model"))
        o->model = v;
    else if (!strcmp(a, "--api-key-env"))
        *key_env = v;
    else if (!strcmp(a, "--system-prompt"))
        *prompt_file = v;
    else {
        for (size_t i = 0; i < sizeof nums / sizeof *nums; i++) {
            if (strcmp(a, nums[i].name)) continue;
            uint64_t n;
            if (acp_parse_u64(v, 1, nums[i].max, &n)) {
                fprintf(stderr, "acp-agent: %s: %s\n", a, acp_error_last()->message);
                return -1;
            }
            *(unsigned *)((char *)o + nums[i].offset) = (unsigned)n;
            return 1;
        }
        return 0;
    }
    return 1;
}

static void models_ready(void *user)
{
    *(bool *)user = true;
}

static void models_waited(uv_timer_t *t)
{
    models_ready(t->data);
}

int main(int argc, char **argv)
{
    const char *where = NULL, *auth_env = NULL, *engine = "echo", *key_env = NULL,
               *prompt_file = NULL;
    const char *listen = NULL, *token_file = NULL, *port_file = NULL;
    unsigned unstable_off = 0;
    acp_server_opts so = ACP_SERVER_OPTS_INIT;
    const char *origins[64]; /* --allow-origin values (argv strings) */
    const char *roots[64];   /* --root values, resolved */
    openai_opts oo = {0};
    bool openai_flag = false;
    uint64_t lease_ttl = 0;
    size_t max_read = 0;
    struct prog prog = {.verbose = 1};
    for (int i = 1; i < argc; i++) {
        int taken;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("%s%s", usage, usage_listen);
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
        } else if (!strcmp(argv[i], "--lease-ttl") && i + 1 < argc) {
            if (acp_parse_u64(argv[++i], 1, 24 * 3600 * 1000, &lease_ttl)) {
                fprintf(stderr, "acp-agent: --lease-ttl takes milliseconds (1 to 86400000): %s\n",
                        acp_error_last()->message);
                return 2;
            }
        } else if (!strcmp(argv[i], "--max-read") && i + 1 < argc) {
            if (!parse_size(argv[++i], &max_read)) {
                fprintf(stderr, "acp-agent: --max-read takes a size (4096, 64M), not '%s'\n",
                        argv[i]);
                return 2;
            }
        } else if (!strcmp(argv[i], "--listen") && i + 1 < argc) {
            listen = argv[++i];
        } else if (!strcmp(argv[i], "--tls-cert") && i + 1 < argc) {
            so.tls_cert = argv[++i];
        } else if (!strcmp(argv[i], "--tls-key") && i + 1 < argc) {
            so.tls_key = argv[++i];
        } else if (!strcmp(argv[i], "--token-file") && i + 1 < argc) {
            token_file = argv[++i];
        } else if (!strcmp(argv[i], "--allow-origin") && i + 1 < argc) {
            if (so.n_allow_origins == sizeof origins / sizeof *origins || !argv[i + 1][0]) {
                fprintf(stderr, "acp-agent: --allow-origin: %s\n",
                        argv[i + 1][0] ? "at most 64" : "empty origin");
                return 2;
            }
            origins[so.n_allow_origins++] = argv[++i];
            so.allow_origins = origins;
        } else if (!strcmp(argv[i], "--root") && i + 1 < argc) {
            static char real[64][PATH_MAX];
            const char *dir = argv[++i];
            if (so.n_roots == 64 || !realpath(dir, real[so.n_roots])) {
                fprintf(stderr, "acp-agent: --root '%s': %s\n", dir,
                        so.n_roots == 64 ? "at most 64 roots" : strerror(errno));
                return 2;
            }
            roots[so.n_roots] = real[so.n_roots];
            so.n_roots++;
            so.roots = roots;
        } else if (!strcmp(argv[i], "--exposed")) {
            so.exposed = true;
        } else if (!strcmp(argv[i], "--insecure-no-auth")) {
            so.insecure_no_auth = true;
        } else if (!strcmp(argv[i], "--allow-stdio-mcp")) {
            so.stdio_mcp = ACP_SERVER_STDIO_MCP_ALLOW;
        } else if (!strcmp(argv[i], "--no-stdio-mcp")) {
            so.stdio_mcp = ACP_SERVER_STDIO_MCP_REFUSE;
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
        } else if (!strcmp(argv[i], "--log-level") && i + 1 < argc) {
            const char *level = argv[++i];
            if (strcmp(level, "quiet") && strcmp(level, "info")) {
                fprintf(stderr, "acp-agent: --log-level takes quiet or info, not '%s'\n", level);
                return 2;
            }
            prog.verbose = !strcmp(level, "info");
        } else if (!strcmp(argv[i], "--unstable-off") && i + 1 < argc) {
            if (acp_unstable_parse(argv[++i], &unstable_off)) {
                fprintf(stderr, "acp-agent: --unstable-off: %s\n", acp_error_last()->message);
                return 2;
            }
        } else if (!strcmp(argv[i], "--engine") && i + 1 < argc) {
            engine = argv[++i];
            if (strcmp(engine, "echo") && strcmp(engine, "openai")) {
                fprintf(stderr, "acp-agent: --engine takes echo or openai, not '%s'\n", engine);
                return 2;
            }
        } else if ((taken = openai_arg(argv[i], i + 1 < argc ? argv[i + 1] : NULL, &oo, &key_env,
                                       &prompt_file))) {
            if (taken < 0) return 2;
            openai_flag = true;
            i++;
        } else {
            fprintf(stderr, "acp-agent: unknown argument '%s'\n%s%s", argv[i], usage, usage_listen);
            return 2;
        }
    }
    if (!listen && (so.tls_cert || so.tls_key || token_file || port_file || so.n_allow_origins ||
                    so.n_roots || so.stdio_mcp || so.exposed || so.insecure_no_auth ||
                    so.max_connections || so.max_message || so.high_water || so.idle_timeout_ms ||
                    so.header_timeout_ms || so.ping_interval_ms || so.close_timeout_ms)) {
        fprintf(stderr, "acp-agent: server options need --listen\n");
        return 2;
    }
    if (!so.tls_cert != !so.tls_key) {
        fprintf(stderr, "acp-agent: --tls-cert and --tls-key go together\n");
        return 2;
    }
    if (openai_flag && strcmp(engine, "openai")) {
        fprintf(stderr, "acp-agent: --base-url, --model, --api-key-env, --system-prompt, "
                        "--max-tokens, --max-turns and --context-tokens need --engine openai\n");
        return 2;
    }
    if (oo.base_url && strncmp(oo.base_url, "http://", 7) && strncmp(oo.base_url, "https://", 8)) {
        fprintf(stderr, "acp-agent: --base-url must start with http:// or https://, not '%s'\n",
                oo.base_url);
        return 2;
    }
    /* The key comes from the environment only: a command line is visible to every user (ps). */
    if (key_env && !(oo.api_key = getenv(key_env))) {
        fprintf(stderr, "acp-agent: --api-key-env: %s is not set\n", key_env);
        return 2;
    }
    char *system_prompt = NULL;
    if (prompt_file && !(oo.system_prompt = system_prompt = read_file(prompt_file))) {
        fprintf(stderr, "acp-agent: --system-prompt: cannot read '%s': %s\n", prompt_file,
                strerror(errno));
        return 2;
    }
    char *token = NULL;
    if (token_file && !(token = read_token(token_file))) {
        free(system_prompt);
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    /* A bigger pipe to the client means fewer wake-ups per MB of replay or stream; best effort
     * (fails harmlessly on a non-pipe or above /proc/sys/fs/pipe-max-size). */
    fcntl(1, F_SETPIPE_SZ, 1 << 20);

    char *def = where ? NULL : default_store();
    if (!where && !def) {
        fprintf(stderr, "acp-agent: no --store given and neither XDG_STATE_HOME nor HOME set\n");
        free(system_prompt);
        return 1;
    }
    acp_store *store = NULL;
    if (acp_store_open(where ? where : def, &store)) {
        fprintf(stderr, "acp-agent: cannot open the session store: %s\n",
                acp_error_last()->message);
        free(def);
        if (token) explicit_bzero(token, strlen(token));
        free(token);
        free(system_prompt);
        return 1;
    }
    free(def);

    uv_loop_t loop;
    uv_loop_init(&loop);
    openai *oa = NULL;
    if (!strcmp(engine, "openai")) {
        int orc = openai_new(&loop, &oo, &oa); /* the URL was checked: only memory can fail */
        if (orc) {
            fprintf(stderr, "acp-agent: cannot start: %s\n", acp_strerror(orc));
            if (token) explicit_bzero(token, strlen(token));
            free(token);
            free(system_prompt);
            uv_loop_close(&loop);
            acp_store_close(store);
            return 1;
        }
    }
    free(system_prompt); /* openai_new copied it */
    /* MCP servers' orphans (double-forked, setsid'd) come back to us, to die when we end. */
    acp_reaper *reaper = NULL;
    if (acp_reaper_start(&loop, &reaper) && prog.verbose)
        fprintf(stderr, "acp-agent: not a subreaper: orphans of MCP servers go to init\n");
    acp_engine eng;
    prog.echo = !oa;
    if (oa)
        openai_engine(oa, &eng);
    else
        echo_engine(&eng, auth_env);
    bool models_in = false; /* main's: openai_start's callback may come after the wait */
    if (oa) {
        /* The model list belongs in the first session's result: wait for GET /models, but
         * not long (an unreachable server is told at the first prompt). */
        uv_timer_init(&loop, &prog.wait);
        prog.wait.data = &models_in;
        uv_timer_start(&prog.wait, models_waited, 2000, 0);
        openai_start(oa, models_ready, &models_in);
        while (!models_in && uv_run(&loop, UV_RUN_ONCE)) continue;
        uv_close((uv_handle_t *)&prog.wait, NULL);
    }
    /* mcp/ speaks Streamable HTTP and the old SSE transport, so both are advertised. */
    acp_agent_opts opts = {.struct_size = sizeof(acp_agent_opts),
                           .on_log = log_line,
                           .on_done = on_done,
                           .user = &prog,
                           .mcp_http = true,
                           .mcp_sse = true,
                           .lease_ttl_ms = (unsigned)lease_ttl,
                           .max_read = max_read,
                           .unstable_off = unstable_off};
    acp_agent *a = NULL;
    int rc;
    bool exit_usage = false;
    if (listen) {
        so.listen = listen;
        so.token = token;
        so.on_agent = on_agent;
        so.on_done = on_server_done;
        so.user = &prog;
        rc = acp_agent_serve_listen(&loop, store, &eng, &opts, &so, &prog.server);
        if (token) explicit_bzero(token, strlen(token)); /* the server keeps only a hash */
        free(token);
        if (rc) {
            fprintf(stderr, "acp-agent: %s\n", acp_error_last()->message);
            if (rc == ACP_EACCES) exit_usage = true; /* not safe as asked: a usage error */
        } else if (port_file && !write_port(port_file, acp_server_port(prog.server))) {
            rc = ACP_EIO;
        } else if (prog.verbose) {
            if (!strcmp(listen, "systemd"))
                fprintf(stderr, "acp-agent: listening on the sockets systemd passed%s\n",
                        so.tls_cert ? " (TLS)" : "");
            else if (!strncmp(listen, "unix:", 5))
                fprintf(stderr, "acp-agent: listening on %s\n", listen);
            else
                fprintf(stderr, "acp-agent: listening on %.*s:%d%s\n",
                        (int)(strrchr(listen, ':') - listen), listen, acp_server_port(prog.server),
                        so.tls_cert ? " (TLS)" : "");
        }
    } else {
        rc = acp_agent_new(&loop, store, &eng, &opts, &a);
        if (!rc) rc = on_agent(a, &prog);
        if (!rc) rc = acp_agent_serve_stdio(a, 0, 1);
        if (rc) fprintf(stderr, "acp-agent: cannot start: %s\n", acp_strerror(rc));
    }
    if (!rc) {
        prog.agent = a;
        int signums[3] = {SIGTERM, SIGINT, SIGHUP};
        for (int i = 0; i < 3; i++) {
            uv_signal_init(&loop, &prog.sigs[i]);
            prog.sigs[i].data = &prog;
            /* SIGHUP keeps its default for the stdio agent: its terminal hung up. */
            if (i < 2) uv_signal_start(&prog.sigs[i], on_signal, signums[i]);
        }
        prog.token_file = token_file;
        prog.tls_cert = so.tls_cert;
        prog.tls_key = so.tls_key;
        if (prog.server) uv_signal_start(&prog.sigs[2], on_hup, SIGHUP);
        memtrim_start(&loop, &prog.trim);
        uv_run(&loop, UV_RUN_DEFAULT);
    }
    if (a) acp_agent_free(a);
    if (prog.server) acp_server_free(prog.server);
    uv_run(&loop, UV_RUN_DEFAULT); /* the agent's handles close here */
    if (oa) openai_free(oa, NULL, NULL);
    acp_reaper_close(reaper, NULL, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    acp_store_close(store);
    return exit_usage ? 2 : rc ? 1 : 0;
}
