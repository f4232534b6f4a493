/* acp-agent: the libacp session runtime with an engine (echo, or openai for a model server), ACP
 * on stdin/stdout. */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp/agent.h"
#include "acp/rt.h"
#include "acp/num.h"
#include "acp/version.h"
#include "engines/openai/openai.h"
#include "tools/acp-agent/echo.h"
#include "tools/acp-agent/memtrim.h"

static const char usage[] =
    "usage: acp-agent [--engine echo|openai] [--store PATH|URI] [--auth env:VAR]\n"
    "                 [--log-level quiet|info] [--help] [--version]\n"
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
    "near it). The model's tools: the session's MCP tools, and the client's file reads,\n"
    "writes and terminal when it offers them (writes and commands ask first; none in mode\n"
    "ask).\n";

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
            char why[ACP_NUM_WHY];
            uint64_t n;
            if (acp_parse_u64(v, 1, nums[i].max, &n, why, sizeof why)) {
                fprintf(stderr, "acp-agent: %s: %s\n", a, why);
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
    openai_opts oo = {0};
    bool openai_flag = false;
    struct prog prog = {.verbose = 1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int taken;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage, stdout);
            return 0;
        } else if (!strcmp(a, "--version")) {
            printf("acp-agent %s (ACP protocol %d)\n", ACP_VERSION_STRING, ACP_PROTOCOL_VERSION);
            return 0;
        } else if (!strcmp(a, "--store") && v) {
            where = argv[++i];
        } else if (!strncmp(a, "--store=", 8)) {
            where = a + 8;
        } else if (!strcmp(a, "--auth") && v) {
            const char *spec = argv[++i];
            if (strncmp(spec, "env:", 4) || !spec[4]) {
                fprintf(stderr, "acp-agent: --auth takes env:VAR, not '%s'\n", spec);
                return 2;
            }
            auth_env = spec + 4;
        } else if (!strcmp(a, "--log-level") && v) {
            const char *level = argv[++i];
            if (strcmp(level, "quiet") && strcmp(level, "info")) {
                fprintf(stderr, "acp-agent: --log-level takes quiet or info, not '%s'\n", level);
                return 2;
            }
            prog.verbose = !strcmp(level, "info");
        } else if (!strcmp(a, "--engine") && v) {
            engine = argv[++i];
            if (strcmp(engine, "echo") && strcmp(engine, "openai")) {
                fprintf(stderr, "acp-agent: --engine takes echo or openai, not '%s'\n", engine);
                return 2;
            }
        } else if ((taken = openai_arg(a, v, &oo, &key_env, &prompt_file))) {
            if (taken < 0) return 2;
            openai_flag = true;
            i++;
        } else {
            fprintf(stderr, "acp-agent: unknown argument '%s'\n%s", a, usage);
            return 2;
        }
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
    char *err = NULL;
    if (acp_store_open(where ? where : def, &store, &err)) {
        fprintf(stderr, "acp-agent: cannot open the session store: %s\n",
                err ? err : "out of memory");
        free(err);
        free(def);
        free(system_prompt);
        return 1;
    }
    free(def);

    uv_loop_t loop;
    uv_loop_init(&loop);
    openai *oa = NULL;
    if (!strcmp(engine, "openai")) {
        int orc = openai_new(&loop, &oo, &oa); /* the URL was checked: only memory can fail */
        free(system_prompt);
        if (orc) {
            fprintf(stderr, "acp-agent: cannot start: %s\n", acp_strerror(orc));
            uv_loop_close(&loop);
            acp_store_close(store);
            return 1;
        }
    }
    /* MCP servers' orphans (double-forked, setsid'd) come back to us, to die when we end. */
    acp_reaper *reaper = NULL;
    if (acp_reaper_start(&loop, &reaper) && prog.verbose)
        fprintf(stderr, "acp-agent: not a subreaper: orphans of MCP servers go to init\n");
    acp_engine eng;
    if (oa)
        openai_engine(oa, &eng);
    else
        echo_engine(&eng, auth_env);
    /* mcp/ speaks Streamable HTTP and the old SSE transport, so both are advertised. */
    acp_agent_opts opts = {
        .on_log = log_line, .on_done = on_done, .user = &prog, .mcp_http = true, .mcp_sse = true};
    acp_agent *a = NULL;
    int rc = acp_agent_new(&loop, store, &eng, &opts, &a);
    if (!rc && !oa) rc = echo_serve(a);
    bool models_in = false; /* main's: openai_start's callback may come after the wait */
    if (!rc && oa) {
        /* The model list belongs in the first session's result: wait for GET /models, but
         * not long (an unreachable server is told at the first prompt). */
        uv_timer_t wait;
        uv_timer_init(&loop, &wait);
        wait.data = &models_in;
        uv_timer_start(&wait, models_waited, 2000, 0);
        openai_start(oa, models_ready, &models_in);
        while (!models_in && uv_run(&loop, UV_RUN_ONCE)) continue;
        uv_close((uv_handle_t *)&wait, NULL);
    }
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
    if (oa) openai_free(oa, NULL, NULL);
    acp_reaper_close(reaper, NULL, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    acp_store_close(store);
    return rc ? 1 : 0;
}
