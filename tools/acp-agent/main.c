/* SPDX-License-Identifier: Apache-2.0 */
/* acp-agent: the libacp session runtime with an engine (echo, or openai for a model server), ACP
 * on stdin/stdout or, with --listen, served over the network (WebSocket and Streamable HTTP,
 * docs/remote.md). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
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
#include "tools/acp-agent/check_client.h"
#include "tools/acp-agent/memtrim.h"
#include "tools/common/serve_cli.h"
#include "tools/common/wiretrace.h"

static const char usage[] =
    "usage: acp-agent [--engine echo|openai] [--store PATH|URI] [--auth env:VAR]\n"
    "                 [--lease-ttl MS] [--max-read SIZE]\n"
    "                 [--log-level error|warn|info|debug]\n"
    "                 [--unstable-off all|FEATURE,...]\n"
    "                 [--check-client [--check-report FILE] [--check-json]]\n"
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
    "--lease-ttl MS: this agent holds a lease on each session it has open; a load\n"
    "elsewhere takes an idle one over and waits for a running turn. MS (default\n"
    "15000): how long the lease outlives an agent that stopped renewing it (killed,\n"
    "paused, cut off). Renewed every MS/3; given up on close and exit.\n"
    "\n"
    "--max-read SIZE: the most one file read of the engine returns (64M).\n"
    "\n"
    "--log-level LEVEL: error (only what stops acp-agent; quiet is the same), warn (and\n"
    "the connections' and sessions' trouble), info (the default: and listening, shutdown),\n"
    "debug (and every JSON-RPC message each way, ACP and MCP, on stderr: '<-' read, '->'\n"
    "written; values of env and headers and credential-like members redacted).\n"
    "\n"
    "Unstable features (the SDK's unstable schema; their wire shapes may still change):\n"
    "fork, title, archive, status, system-prompt, subagents, mcp-acp, providers,\n"
    "auth-status. All are offered by default; --unstable-off LIST (comma-separated, or\n"
    "all) neither advertises nor answers the ones named. title: session/set_title (the\n"
    "engine no longer titles the session itself); archive: session/archive, unarchive,\n"
    "session/list's archived filter; status: session/status (open or saved);\n"
    "system-prompt: systemPrompt on session/new, load, resume (stored with the session;\n"
    "the openai engine appends it to its instructions, or replaces them: override);\n"
    "subagents: child sessions of a session for clients that take them (echo's /subagent,\n"
    "the openai engine's delegate_task tool);\n"
    "providers: the openai engine's endpoint is the provider 'openai', which a client may\n"
    "move to another endpoint with its own headers, for its connection only;\n"
    "auth-status: both engines answer auth/status and send auth/status_update;\n"
    "fork: session/fork (a new session with a copy of the source's history).\n"
    "\n"
    "--check-client: instead of an engine, each prompt checks the client connected to us\n"
    "(an editor under test): every kind of update, a permission request, fs reads and\n"
    "writes (a probe file in the session's cwd, removed after), a terminal (output, exit,\n"
    "truncation), a form elicitation, an unknown extension method; each answer validated\n"
    "against schema.json. The report (like acp check's; --check-json: one object per\n"
    "check) is appended to --check-report FILE (default: stderr); the turn answers with\n"
    "its summary.\n"
    "\n";
/* A second string: C99 compilers need not take a literal over 4095 bytes (-Woverlength-strings). */
static const char usage_engines[] =
    "--auth env:VAR: sessions need authentication first; the one method, echo-token,\n"
    "succeeds while VAR is set and non-empty in the agent's environment.\n"
    "\n"
    "Echo engine: a prompt is echoed back; commands: /stream N BYTES, /sleep MS,\n"
    "/title TEXT, /plan, /read PATH, /write PATH TEXT, /mcp, /call SERVER TOOL JSON,\n"
    "/notice TEXT, /compact, /usage, /mode MODE, /set OPTION VALUE, /term COMMAND, /ask,\n"
    "/elicit, /ext (the client's _acp-agent/ping), /system (the session's system prompt,\n"
    "unstable), /subagent TEXT (a subagent session echoing TEXT, unstable); the client may\n"
    "call _acp-agent/echo.\n"
    "Modes ask and code; config options mode, model (echo-small, echo-large) and verbose.\n"
    "\n";
/* Its own array: one string literal may not pass 4095 bytes (ISO C, -Woverlength-strings). */
static const char usage_openai[] =
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

struct prog {
    enum log_level level; /* --log-level */
    bool echo;            /* the echo engine, whose extension methods each agent registers */
    acp_agent *agent;
    acp_server *server;
    uv_signal_t sigs[3]; /* SIGTERM, SIGINT, SIGHUP (a server's reload) */
    const serve_cli *sc; /* the server options, for SIGHUP */
    uv_timer_t wait;     /* for GET /models; here, not in a block: it lives until its close ends */
    memtrim trim;
};

static void log_line(const char *line, void *user)
{
    /* The agent's and server's lines are trouble (a peer's bad message, a failed commit). */
    if (((struct prog *)user)->level >= LOG_WARN) fprintf(stderr, "acp-agent: %s\n", line);
}

/* SIGTERM / SIGINT end the agent like EOF does: turns cancelled, MCP servers stopped (no
 * orphans), everything committed and flushed. */
static void on_signal(uv_signal_t *h, int signum)
{
    struct prog *p = h->data;
    if (p->server) {
        if (p->level >= LOG_INFO)
            fprintf(stderr, "acp-agent: %s: closing %zu connection(s)\n",
                    signum == SIGTERM ? "SIGTERM" : "SIGINT", acp_server_connections(p->server));
        acp_server_shutdown(p->server);
    } else {
        acp_agent_shutdown(p->agent);
    }
}

/* SIGHUP: the token file and the TLS certificate re-read for the connections to come. */
static void on_hup(uv_signal_t *h, int signum)
{
    struct prog *p = h->data;
    serve_cli_reload(p->sc, p->server);
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

/* acp-agent's own options (getopt_long values); the server's are SERVE_OPT_* (serve_cli.h). */
enum {
    O_HELP = 'h',
    O_VERSION = 256,
    O_STORE,
    O_AUTH,
    O_LEASE_TTL,
    O_MAX_READ,
    O_LOG_LEVEL,
    O_UNSTABLE_OFF,
    O_ENGINE,
    O_BASE_URL, /* the openai engine's, O_BASE_URL..O_CONTEXT_TOKENS */
    O_MODEL,
    O_API_KEY_ENV,
    O_SYSTEM_PROMPT,
    O_MAX_TOKENS,
    O_MAX_TURNS,
    O_CONTEXT_TOKENS,
    O_CHECK_CLIENT,
    O_CHECK_REPORT,
    O_CHECK_JSON,
};

static const struct option longopts[] = {
    {"help", no_argument, NULL, O_HELP},
    {"version", no_argument, NULL, O_VERSION},
    {"store", required_argument, NULL, O_STORE},
    {"auth", required_argument, NULL, O_AUTH},
    {"lease-ttl", required_argument, NULL, O_LEASE_TTL},
    {"max-read", required_argument, NULL, O_MAX_READ},
    {"log-level", required_argument, NULL, O_LOG_LEVEL},
    {"unstable-off", required_argument, NULL, O_UNSTABLE_OFF},
    {"engine", required_argument, NULL, O_ENGINE},
    {"check-client", no_argument, NULL, O_CHECK_CLIENT},
    {"check-report", required_argument, NULL, O_CHECK_REPORT},
    {"check-json", no_argument, NULL, O_CHECK_JSON},
    {"base-url", required_argument, NULL, O_BASE_URL},
    {"model", required_argument, NULL, O_MODEL},
    {"api-key-env", required_argument, NULL, O_API_KEY_ENV},
    {"system-prompt", required_argument, NULL, O_SYSTEM_PROMPT},
    {"max-tokens", required_argument, NULL, O_MAX_TOKENS},
    {"max-turns", required_argument, NULL, O_MAX_TURNS},
    {"context-tokens", required_argument, NULL, O_CONTEXT_TOKENS},
    SERVE_CLI_LONGOPTS,
    {NULL, 0, NULL, 0}};

/* One of the openai engine's options (O_BASE_URL..O_CONTEXT_TOKENS) with its value v: 0, or
 * -1 when v is bad (said on stderr). */
static int openai_arg(int opt, const char *v, openai_opts *o, const char **key_env,
                      const char **prompt_file)
{
    static const struct {
        const char *name;
        size_t offset;
        uint64_t max;
    } nums[] = {{"--max-tokens", offsetof(openai_opts, max_tokens), 100000000},
                {"--max-turns", offsetof(openai_opts, max_turns), 100000},
                {"--context-tokens", offsetof(openai_opts, context_tokens), 100000000}};
    if (opt == O_BASE_URL)
        o->base_url = v;
    else if (opt == O_MODEL)
        o->model = v;
    else if (opt == O_API_KEY_ENV)
        *key_env = v;
    else if (opt == O_SYSTEM_PROMPT)
        *prompt_file = v;
    else {
        size_t i = (size_t)(opt - O_MAX_TOKENS);
        uint64_t n;
        if (acp_parse_u64(v, 1, nums[i].max, &n)) {
            fprintf(stderr, "acp-agent: %s: %s\n", nums[i].name, acp_error_last()->message);
            return -1;
        }
        *(unsigned *)((char *)o + nums[i].offset) = (unsigned)n;
    }
    return 0;
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
    unsigned unstable_off = 0;
    bool check = false, check_json = false;
    const char *check_report = NULL;
    serve_cli sc;
    serve_cli_init(&sc, "acp-agent");
    openai_opts oo = {0};
    bool openai_flag = false;
    uint64_t lease_ttl = 0;
    size_t max_read = 0;
    struct prog prog = {.level = LOG_INFO};
    int ch, status = 0;
    opterr = 0; /* our own one-line messages */
    /* '+': no argument is an operand (any is refused below); ':': a missing value is told
     * apart from an unknown option. --opt=value and --opt value both work for every option. */
    while (!status && (ch = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
        switch (ch) {
        case O_HELP:
            printf("%s%s%s%s", usage, usage_engines, usage_openai, serve_cli_usage);
            serve_cli_free(&sc);
            return 0;
        case O_VERSION:
            printf("acp-agent %s (ACP protocol %d)\n", ACP_VERSION_STRING, ACP_PROTOCOL_VERSION);
            serve_cli_free(&sc);
            return 0;
        case O_STORE:
            where = optarg;
            break;
        case O_AUTH:
            if (strncmp(optarg, "env:", 4) || !optarg[4]) {
                fprintf(stderr, "acp-agent: --auth takes env:VAR, not '%s'\n", optarg);
                status = 2;
            }
            auth_env = optarg + 4;
            break;
        case O_LEASE_TTL:
            if (acp_parse_u64(optarg, 1, 24 * 3600 * 1000, &lease_ttl)) {
                fprintf(stderr, "acp-agent: --lease-ttl takes milliseconds (1 to 86400000): %s\n",
                        acp_error_last()->message);
                status = 2;
            }
            break;
        case O_MAX_READ:
            if (!parse_size(optarg, &max_read)) {
                fprintf(stderr, "acp-agent: --max-read takes a size (4096, 64M), not '%s'\n",
                        optarg);
                status = 2;
            }
            break;
        case O_LOG_LEVEL:
            if (log_level_parse(optarg, &prog.level)) {
                fprintf(stderr,
                        "acp-agent: --log-level takes error, warn, info or debug, not '%s'\n",
                        optarg);
                status = 2;
            }
            break;
        case O_UNSTABLE_OFF:
            if (acp_unstable_parse(optarg, &unstable_off)) {
                fprintf(stderr, "acp-agent: --unstable-off: %s\n", acp_error_last()->message);
                status = 2;
            }
            break;
        case O_CHECK_CLIENT:
            check = true;
            break;
        case O_CHECK_REPORT:
            check_report = optarg;
            break;
        case O_CHECK_JSON:
            check_json = true;
            break;
        case O_ENGINE:
            engine = optarg;
            if (strcmp(engine, "echo") && strcmp(engine, "openai")) {
                fprintf(stderr, "acp-agent: --engine takes echo or openai, not '%s'\n", engine);
                status = 2;
            }
            break;
        case ':':
            fprintf(stderr, "acp-agent: %s needs a value\n%s%s%s%s", argv[optind - 1], usage,
                    usage_engines, usage_openai, serve_cli_usage);
            status = 2;
            break;
        case '?':
            fprintf(stderr, "acp-agent: unknown argument '%s'\n%s%s%s%s", argv[optind - 1], usage,
                    usage_engines, usage_openai, serve_cli_usage);
            status = 2;
            break;
        default:
            if (ch >= O_BASE_URL && ch <= O_CONTEXT_TOKENS) {
                openai_flag = true;
                if (openai_arg(ch, optarg, &oo, &key_env, &prompt_file)) status = 2;
            } else {
                status = serve_cli_take(&sc, ch, optarg);
            }
        }
    }
    if (!status && optind < argc) {
        fprintf(stderr, "acp-agent: unknown argument '%s'\n%s%s%s%s", argv[optind], usage,
                usage_engines, usage_openai, serve_cli_usage);
        status = 2;
    }
    if (!status && !sc.listen && sc.given) {
        fprintf(stderr, "acp-agent: server options need --listen\n");
        status = 2;
    }
    if (!status && openai_flag && strcmp(engine, "openai")) {
        fprintf(stderr, "acp-agent: --base-url, --model, --api-key-env, --system-prompt, "
                        "--max-tokens, --max-turns and --context-tokens need --engine openai\n");
        status = 2;
    }
    if (!status && oo.base_url && strncmp(oo.base_url, "http://", 7) &&
        strncmp(oo.base_url, "https://", 8)) {
        fprintf(stderr, "acp-agent: --base-url must start with http:// or https://, not '%s'\n",
                oo.base_url);
        status = 2;
    }
    /* The key comes from the environment only: a command line is visible to every user (ps). */
    if (!status && key_env && !(oo.api_key = getenv(key_env))) {
        fprintf(stderr, "acp-agent: --api-key-env: %s is not set\n", key_env);
        status = 2;
    }
    char *system_prompt = NULL;
    if (!status && prompt_file && !(oo.system_prompt = system_prompt = read_file(prompt_file))) {
        fprintf(stderr, "acp-agent: --system-prompt: cannot read '%s': %s\n", prompt_file,
                strerror(errno));
        status = 2;
    }
    if (!status && sc.listen) status = serve_cli_finish(&sc);
    if (status) {
        free(system_prompt);
        serve_cli_free(&sc);
        return status;
    }
    if (prog.level == LOG_DEBUG) wire_trace_start("acp-agent");
    signal(SIGPIPE, SIG_IGN);
    /* A bigger pipe to the client means fewer wake-ups per MB of replay or stream; best effort
     * (fails harmlessly on a non-pipe or above /proc/sys/fs/pipe-max-size). */
    fcntl(1, F_SETPIPE_SZ, 1 << 20);

    char *def = where ? NULL : default_store();
    if (!where && !def) {
        fprintf(stderr, "acp-agent: no --store given and neither XDG_STATE_HOME nor HOME set\n");
        serve_cli_free(&sc);
        free(system_prompt);
        return 1;
    }
    acp_store *store = NULL;
    if (acp_store_open(where ? where : def, &store)) {
        fprintf(stderr, "acp-agent: cannot open the session store: %s\n",
                acp_error_last()->message);
        free(def);
        serve_cli_free(&sc);
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
            serve_cli_free(&sc);
            free(system_prompt);
            uv_loop_close(&loop);
            acp_store_close(store);
            return 1;
        }
    }
    free(system_prompt); /* openai_new copied it */
    /* MCP servers' orphans (double-forked, setsid'd) come back to us, to die when we end. */
    acp_reaper *reaper = NULL;
    if (acp_reaper_start(&loop, &reaper) && prog.level >= LOG_WARN)
        fprintf(stderr, "acp-agent: not a subreaper: orphans of MCP servers go to init\n");
    acp_engine eng;
    prog.echo = !oa && !check;
    check_client *cc = check ? check_client_new(check_report, check_json) : NULL;
    if (cc)
        check_client_engine(cc, &eng);
    else if (oa)
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
    if (sc.listen) {
        sc.so.on_agent = on_agent;
        sc.so.on_done = on_server_done;
        sc.so.user = &prog;
        rc = acp_agent_serve_listen(&loop, store, &eng, &opts, &sc.so, &prog.server);
        serve_cli_free(&sc); /* the token wiped: the server keeps only a hash */
        if (rc) {
            fprintf(stderr, "acp-agent: %s\n", acp_error_last()->message);
            if (rc == ACP_EACCES) exit_usage = true; /* not safe as asked: a usage error */
        } else if (!serve_cli_started(&sc, prog.server, prog.level >= LOG_INFO)) {
            rc = ACP_EIO;
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
        prog.sc = &sc;
        if (prog.server) uv_signal_start(&prog.sigs[2], on_hup, SIGHUP);
        memtrim_start(&loop, &prog.trim);
        uv_run(&loop, UV_RUN_DEFAULT);
    }
    if (a) acp_agent_free(a);
    if (prog.server) acp_server_free(prog.server);
    uv_run(&loop, UV_RUN_DEFAULT); /* the agent's handles close here */
    if (oa) openai_free(oa, NULL, NULL);
    check_client_free(cc);
    acp_reaper_close(reaper, NULL, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    acp_store_close(store);
    return exit_usage ? 2 : rc ? 1 : 0;
}
