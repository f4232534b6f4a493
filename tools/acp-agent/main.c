/* acp-agent: the libacp session runtime with the echo engine, ACP on stdin/stdout. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp/agent.h"
#include "acp/num.h"
#include "acp/rt.h"
#include "acp/version.h"
#include "tools/acp-agent/echo.h"
#include "tools/acp-agent/memtrim.h"

static const char usage[] =
    "usage: acp-agent [--store PATH|URI] [--auth env:VAR] [--lease-ttl MS]\n"
    "                 [--log-level quiet|info] [--help] [--version]\n"
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
    "Modes ask and code; config options mode, model (echo-small, echo-large) and verbose.\n";

struct prog {
    int verbose;
    acp_agent *agent;
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
    acp_agent_shutdown(p->agent);
}

static void on_done(acp_agent *a, void *user)
{
    struct prog *p = user;
    for (int i = 0; i < 2; i++) uv_close((uv_handle_t *)&p->sigs[i], NULL);
    memtrim_close(&p->trim);
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
    int rc = acp_agent_new(&loop, store, &eng, &opts, &a);
    if (!rc) rc = echo_serve(a);
    if (!rc) rc = acp_agent_serve_stdio(a, 0, 1);
    if (rc) {
        fprintf(stderr, "acp-agent: cannot start: %s\n", acp_strerror(rc));
    } else {
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
    uv_run(&loop, UV_RUN_DEFAULT); /* the agent's handles close here */
    acp_reaper_close(reaper, NULL, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    acp_store_close(store);
    return rc ? 1 : 0;
}
