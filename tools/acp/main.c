/* SPDX-License-Identifier: Apache-2.0 */
/* acp: a command-line client for any ACP agent. Argument parsing, the commands, and their
 * output; everything protocol-specific lives in libacp's client (include/acp/client.h). */
#include <getopt.h>
#include <limits.h>
#include <locale.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acp/num.h"
#include "acp/version.h"
#include "tools/acp/app.h"
#include "tools/acp/safe.h"
#include "tools/common/serve_cli.h"
#include "tools/common/wiretrace.h"

static const char usage_main[] =
    "usage: acp [OPTIONS] COMMAND [ARGS]\n"
    "\n"
    "A command-line client for any ACP agent (default: acp-agent next to acp).\n"
    "\n"
    "commands:\n"
    "  info                      the agent's name, version, capabilities and auth methods\n"
    "  new                       create a session and print its id\n"
    "  prompt [-s ID] TEXT...    prompt a new session (or session ID), stream the reply\n"
    "  chat [-s ID]              interactive prompts, with history and command completion\n"
    "  sessions [--all-cwd] [--archived [include|only]]\n"
    "                            list sessions, newest first\n"
    "  history ID                load session ID and print its conversation\n"
    "  resume ID | close ID | delete ID\n"
    "  title ID TEXT             set session ID's title (unstable)\n"
    "  archive ID | unarchive ID hide session ID from 'acp sessions', or show it again\n"
    "                            (unstable)\n"
    "  status ID                 whether the agent has session ID open or saved (unstable)\n"
    "  modes [-s ID]             list the session's modes (* marks the current one)\n"
    "  mode -s ID MODE           switch session ID to MODE\n"
    "  config [-s ID] [OPTION VALUE]\n"
    "                            list the session's config options, or set one\n"
    "  auth [METHOD]             list the agent's auth methods, or sign in with one\n"
    "  logout                    sign out\n"
    "  check [--only PATTERN] [--no-prompt]\n"
    "                            check the agent against the ACP specification\n"
    "  trace [--out FILE] -- CMD ARGS...\n"
    "                            relay an agent for its client, recording and checking\n"
    "                            every message; 'acp trace show FILE' summarises\n"
    "  serve --listen ADDR [server options] -- CMD ARGS...\n"
    "                            put a stdio agent on WebSocket and Streamable HTTP\n"
    "  providers                 the agent's LLM providers (unstable)\n"
    "  provider set ID URL | provider disable ID\n"
    "                            route provider ID to URL, or switch it off (unstable)\n"
    "  agents [--registry FILE|URL]\n"
    "                            the agents of the ACP Registry (--agent ID runs one)\n"
    "\n";
/* Apart from usage_main: one literal may not pass C99's 4095 characters. */
static const char usage_opts[] =
    "options (before or after the command; '--' ends them):\n"
    "  --agent 'CMD ARGS'        the agent to run (split like a shell line)\n"
    "  --agent unix:PATH         connect to an agent listening on a Unix socket\n"
    "  --agent URL               a remote agent: ws://, wss://, http:// or https://HOST/acp\n"
    "  --agent ID                an agent of the ACP Registry by its id ('acp agents')\n"
    "  --registry FILE|URL       the registry (default: ACP_REGISTRY, else the public one)\n"
    "  --token TOKEN             bearer token for a remote agent (better: ACP_TOKEN)\n"
    "  --cacert FILE             trust anchors for wss:// and https://\n"
    "  --http2                   h2c (prior knowledge) over http:// (https:// offers h2 always)\n"
    "  --cwd DIR                 the session's working directory (default: the current one)\n"
    "  --color[=WHEN]            colours: auto (on a terminal, unless NO_COLOR is set or\n"
    "                            TERM=dumb), always or never\n"
    "  --json                    one JSON object per line: every update raw, then the result\n"
    "                            (on failure {\"error\":{code,message,data,exitStatus}})\n"
    "  --yes | --deny            allow | refuse what the agent asks (permissions, writes,\n"
    "                            commands); without either, ask on the terminal or refuse\n"
    "  --fs                      serve the agent's file reads and writes inside the roots\n"
    "  --max-read SIZE           refuse an fs read returning more (default 64M; K, M, G)\n"
    "  --terminal                run the agent's terminal commands\n"
    "  --auth METHOD             sign in with METHOD before the command\n"
    "  --timeout SECONDS         give up on any call the agent does not answer in time\n"
    "  --agent-log FILE          append the agent's stderr to FILE, raw (default: shown\n"
    "                            line by line, made safe for the terminal, colours dropped)\n"
    "  --quiet                   drop the agent's stderr\n"
    "  --log-level LEVEL         error, warn, info (the default) or debug: every JSON-RPC\n"
    "                            message each way on stderr, secrets redacted\n"
    "  -s, --session ID          the session (prompt, chat, modes, mode, config)\n"
    "  --provider ID=URL         route the agent's provider ID to URL for this run (unstable)\n"
    "  --header 'NAME: VALUE'    a header for --provider and 'provider set' (repeatable; an\n"
    "                            Authorization header hands over a key; never printed)\n"
    "  --api-type TYPE           the provider protocol for them (default openai)\n"
    "  --add-dir DIR, --mcp 'NAME=CMD ARGS', --mcp-http NAME=URL, --mcp-sse NAME=URL,\n"
    "  --mcp-local 'NAME=CMD ARGS' (unstable)\n"
    "                            session roots and MCP servers (see 'acp new --help')\n"
    "  --system-prompt FILE      the session's system prompt, appended to the agent's\n"
    "                            instructions (unstable; see 'acp new --help')\n"
    "  --help, --version\n"
    "\n"
    "exit status: 0 ok, 1 agent error, 2 usage error, 3 refused or denied (a capability\n"
    "missing, sign-in needed or refused, a request of the agent's denied, a remote\n"
    "agent's 401: pass --token or ACP_TOKEN), 4 the agent\n"
    "exited, 5 timed out, 130 cancelled.\n"
    "Run 'acp COMMAND --help' for a command; 'man acp' for more.\n";

static const char sess_opts_help[] =
    "  --add-dir DIR        an additional workspace root (needs the agent's\n"
    "                       sessionCapabilities.additionalDirectories)\n"
    "  --mcp 'NAME=CMD ARGS'  an MCP server over stdio (CMD looked up in PATH)\n"
    "  --mcp-http NAME=URL  an MCP server over Streamable HTTP (needs mcpCapabilities.http)\n"
    "  --mcp-sse NAME=URL   an MCP server over SSE (needs mcpCapabilities.sse)\n"
    "  --system-prompt FILE the text of FILE ('-': standard input) as the session's\n"
    "                       system prompt, appended to the agent's own instructions\n"
    "                       (unstable: needs sessionCapabilities.systemPrompt)\n"
    "  --mcp-local 'NAME=CMD ARGS'  (unstable) an MCP server acp runs here and hands to\n"
    "                       the agent over the ACP connection, remote agents too (needs\n"
    "                       mcpCapabilities.acp); it stops when acp does\n";

static const char turn_opts_help[] =
    "  --yes                allow every permission request, write and command\n"
    "  --deny               refuse them all (exit status 3 when one was refused)\n"
    "  --fs                 serve fs/read_text_file and fs/write_text_file inside the\n"
    "                       session's roots (--cwd and --add-dir)\n"
    "  --terminal           run the agent's commands (terminal/create)\n"
    "Without --yes/--deny, each is asked on the terminal (writes: 'write N bytes to\n"
    "PATH? [y/N]'), and refused when standard input is not a terminal.\n";

/* the command options a command takes */
enum { F_SID = 1, F_SESS = 2, F_ALL = 4, F_CHECK = 8, F_OUT = 16, F_SERVE = 32 };

typedef struct command {
    const char *name;
    int (*run)(app *a);
    unsigned flags;
    int min_args, max_args; /* positional arguments; -1: any number */
    const char *help;
} command;

static int cmd_info(app *a);
static int cmd_new(app *a);
static int cmd_prompt(app *a);
static int cmd_sessions(app *a);
/* "cannot VERB session ID: why"; an empty id has the library's own message. */
static int fail_id(app *a, const char *verb, const char *id, int rc)
{
    char what[300];
    snprintf(what, sizeof what, "cannot %s session %s", verb, id);
    return app_fail(a, *id ? what : NULL, rc);
}

static int cmd_history(app *a);
static int cmd_resume(app *a);
static int cmd_close(app *a);
static int cmd_delete(app *a);
static int cmd_title(app *a);
static int cmd_archive(app *a);
static int cmd_unarchive(app *a);
static int cmd_status(app *a);

static const command commands[] = {
    {"info", cmd_info, 0, 0, 0,
     "usage: acp info\n\n"
     "Starts the agent, runs initialize and prints the agent's name, version, protocol\n"
     "version, capabilities and auth methods (--json: the initialize result).\n"},
    {"new", cmd_new, F_SESS, 0, 0,
     "usage: acp new [--add-dir DIR]... [--mcp 'NAME=CMD ARGS']... [--mcp-http NAME=URL]...\n"
     "               [--mcp-sse NAME=URL]... [--mcp-local 'NAME=CMD ARGS']...\n\n"
     "Creates a session in --cwd and prints its id (--json: the session/new result).\n"},
    {"prompt", cmd_prompt, F_SID | F_SESS, 1, -1,
     "usage: acp prompt [-s ID] [--yes|--deny] [--fs] [--terminal] [new's options] TEXT...\n\n"
     "Sends TEXT (the words joined by spaces; '-' reads standard input) to a new\n"
     "session, or to session ID: resumed when the agent supports session/resume,\n"
     "else loaded (the replayed history is not printed; see 'acp history').\n"
     "The reply streams to stdout; the stop reason is printed when it is not end_turn.\n"
     "Ctrl-C cancels the turn (exit status 130), a second Ctrl-C exits at once.\n"
     "  -s, --session ID     continue session ID\n"},
    {"chat", cmd_chat, F_SID | F_SESS, 0, 0,
     "usage: acp chat [-s ID] [--yes|--deny] [--fs] [--terminal] [new's options]\n\n"
     "Interactive: one prompt per line, each reply streamed. On a terminal the line is\n"
     "edited (emacs keys, or vi and more through ~/.editrc), Up and Down walk the\n"
     "history ($XDG_STATE_HOME/acp/history; ACP_HISTFILE names another file, empty for\n"
     "none), Tab completes the agent's slash commands. Ctrl-C during a reply cancels\n"
     "the turn (a second Ctrl-C exits); at the prompt it clears the line, and exits\n"
     "(status 130) when the line is empty; Ctrl-D exits (status 0).\n"
     "  -s, --session ID     continue session ID\n"},
    {"sessions", cmd_sessions, F_ALL, 0, 1,
     "usage: acp sessions [--all-cwd] [--archived [include|only]]\n\n"
     "Lists the agent's sessions for --cwd (every page), newest first: id, updated,\n"
     "title, cwd. --all-cwd lists sessions of every directory.\n"
     "--archived (unstable; needs sessionCapabilities.archive): 'only' (the default)\n"
     "lists the archived sessions alone, 'include' them with the others (an ARCHIVED\n"
     "column then); without it the agent leaves archived sessions out.\n"
     "--json prints {\"sessions\":[...]} with every page merged.\n"},
    {"history", cmd_history, F_SESS, 1, 1,
     "usage: acp history [new's options] ID\n\n"
     "Loads session ID (session/load) and prints its conversation as replayed by the\n"
     "agent: user messages as '> text', replies, tool calls and plans.\n"},
    {"resume", cmd_resume, F_SESS, 1, 1,
     "usage: acp resume [new's options] ID\n\n"
     "Resumes session ID (session/resume) and prints its id; fails when the agent does\n"
     "not advertise sessionCapabilities.resume.\n"},
    {"close", cmd_close, F_SESS, 1, 1,
     "usage: acp close [new's options] ID\n\n"
     "Makes session ID active in a fresh agent process (resume, else load) and closes\n"
     "it with session/close (needs sessionCapabilities.close).\n"},
    {"delete", cmd_delete, 0, 1, 1,
     "usage: acp delete ID\n\n"
     "Deletes session ID (session/delete): it no longer appears in 'acp sessions'.\n"},
    {"title", cmd_title, 0, 2, -1,
     "usage: acp title ID TEXT...\n\n"
     "Sets the title of session ID (session/set_title; unstable: needs\n"
     "sessionCapabilities.title) to TEXT, the words joined by spaces, and prints the\n"
     "title the agent stored (it may trim it). The agent no longer titles it itself.\n"},
    {"archive", cmd_archive, 0, 1, 1,
     "usage: acp archive ID\n\n"
     "Archives session ID (session/archive; unstable: needs sessionCapabilities.archive):\n"
     "the agent closes it if it is active and leaves it out of 'acp sessions' (see\n"
     "--archived); its history is kept. Archiving an archived session succeeds.\n"},
    {"unarchive", cmd_unarchive, 0, 1, 1,
     "usage: acp unarchive ID\n\n"
     "Unarchives session ID (session/unarchive; unstable: needs\n"
     "sessionCapabilities.archive): it is listed again. It is not loaded.\n"},
    {"status", cmd_status, 0, 1, 1,
     "usage: acp status ID\n\n"
     "Prints whether the agent has session ID in memory ('open') or only stored\n"
     "('saved') (session/status; unstable: needs sessionCapabilities.status). Nothing\n"
     "is loaded or changed. --json: the result, {\"status\": ...}.\n"},
    {"modes", cmd_modes, F_SID | F_SESS, 0, 0,
     "usage: acp modes [-s ID] [new's options]\n\n"
     "Lists the modes of session ID (without -s: of a new session, closed and deleted\n"
     "afterwards where the agent can); '*' marks the\n"
     "current one. --json: {\"sessionId\", \"currentModeId\", \"availableModes\"}.\n"
     "  -s, --session ID     the session\n"},
    {"mode", cmd_mode, F_SID | F_SESS, 1, 1,
     "usage: acp mode -s ID [new's options] MODE\n\n"
     "Switches session ID to MODE (session/set_mode); MODE must be one the agent\n"
     "offers ('acp modes').\n"
     "  -s, --session ID     the session (required)\n"},
    {"config", cmd_config, F_SID | F_SESS, 0, 2,
     "usage: acp config [-s ID] [new's options] [OPTION VALUE]\n\n"
     "Without OPTION: lists the config options of session ID (without -s: of a new\n"
     "session, closed and deleted afterwards where the agent can) with their current\n"
     "values and choices. With OPTION VALUE: sets it\n"
     "(session/set_config_option; -s required): VALUE is one of a select option's value\n"
     "ids, or true/false for a boolean option.\n"
     "--json: {\"sessionId\", \"configOptions\"} (after the change).\n"
     "  -s, --session ID     the session\n"},
    {"auth", cmd_auth, 0, 0, 1,
     "usage: acp auth [METHOD]\n\n"
     "Without METHOD: lists the agent's auth methods: id, type, name, description;\n"
     "for env_var and api-key methods the variables and whether they are set; for\n"
     "terminal methods the arguments. With METHOD: signs in with it. An agent or\n"
     "env_var method is passed to authenticate; a terminal method runs the agent's\n"
     "command line with the method's arguments on this terminal (exit status 0 means\n"
     "signed in; without a terminal it is refused, exit status 3).\n"
     "A sign-in through authenticate lasts for the connection: agents that keep\n"
     "credentials remember it, others need it again each run (--auth METHOD). acp signs\n"
     "in by itself with an env_var method whose variables are all set, or an agent\n"
     "method with _meta[\"api-key\"] whose provider's variable is (openai: OPENAI_API_KEY,\n"
     "google: GEMINI_API_KEY, any other: PROVIDER_API_KEY).\n"},
    {"logout", cmd_logout, 0, 0, 0,
     "usage: acp logout\n\n"
     "Signs out (logout; needs the agent's auth.logout capability).\n"},
    {"check", cmd_check, F_CHECK, 0, 0,
     "usage: acp check [--agent CMD|unix:PATH|URL] [--json] [--only PATTERN] [--no-prompt]\n\n"
     "Checks the agent against the ACP specification: initialize, the session layer (new,\n"
     "load replay before its answer, resume without replay, close, list filter, paging and\n"
     "cursors, delete, persistence across a SIGKILL of the agent), prompt turns and cancel,\n"
     "and JSON-RPC hygiene (errors, ids of every kind echoed exactly, batches, bad UTF-8,\n"
     "deep nesting, _meta); every message received is validated against schema.json.\n"
     "Each check names its spec sentence, its level (MUST, SHOULD, MAY) and its result\n"
     "(pass, fail, or skip with why). The agent is started as often as needed, in a fresh\n"
     "temporary directory; the sessions made are deleted at the end where it can.\n"
     "--json: one object per check: id, level, result, detail, spec, sent, received.\n"
     "Exit status 0 when no MUST check failed, else 1.\n"
     "  --only PATTERN       run only the checks whose id matches the glob (e.g. 'list.*')\n"
     "  --no-prompt          skip what costs model tokens (prompt turns)\n"},
    {"trace", cmd_trace, F_OUT, 1, -1,
     "usage: acp trace [--out FILE] -- CMD ARGS...\n"
     "       acp trace show FILE\n\n"
     "A relay for debugging an agent or its client: point the client's agent command at\n"
     "'acp trace --out FILE -- CMD ARGS...'. Every message passes unchanged both ways\n"
     "(stdin to the agent CMD, its stdout to ours; its stderr is ours) and is written to\n"
     "FILE (default: acp-trace.jsonl), one JSON object per line: t (seconds since the\n"
     "start), dir (\"client\" or \"agent\": who sent it) and msg. Each message is checked\n"
     "as it passes, against the schema's shapes and the protocol's rules: a malformed\n"
     "message, a response to an id never sent, a method the peer did not advertise, an\n"
     "update of a prompt after its answer; each violation is a line with a finding member\n"
     "(also said on stderr). The exit status is the agent's.\n"
     "'acp trace show FILE' summarises a trace: methods with counts and latencies,\n"
     "errors, findings.\n"
     "  --out FILE           the trace file (appended to)\n"},
    {"serve", cmd_serve, F_SERVE, 1, -1,
     "usage: acp serve --listen HOST:PORT|unix:PATH [server options] -- CMD ARGS...\n\n"
     "Puts a stdio ACP agent on WebSocket and Streamable HTTP (the remote profiles; acp\n"
     "--agent ws://HOST:PORT/acp, or the SDKs' clients). Each connection gets its own\n"
     "process of CMD ARGS: a stdio agent has one client, and connections multiplexed on\n"
     "one process would mix their JSON-RPC ids and sessions. Messages pass unchanged;\n"
     "the server options are acp-agent --listen's (acp-agent --help, docs/remote.md): TLS,\n"
     "a bearer token, allowed origins, limits, loopback safety, roots and the stdio MCP\n"
     "policy (applied to the client's session requests). A connection's end gives its\n"
     "agent EOF, then SIGTERM and SIGKILL to its whole process tree after\n"
     "--close-timeout each. SIGTERM or SIGINT: stop accepting, EOF to every agent, relay\n"
     "what they still write, close every connection, exit 0.\n"},
    {"providers", cmd_providers, 0, 0, 0,
     "usage: acp providers\n\n"
     "(unstable) Lists the agent's LLM providers (providers/list; needs its providers\n"
     "capability): id, protocol and base URL in effect (or disabled), the protocols it\n"
     "supports, and whether it is required. --json: the providers/list result.\n"},
    {"provider", cmd_provider, 0, 2, 3,
     "usage: acp provider set ID URL [--api-type TYPE] [--header 'NAME: VALUE']...\n"
     "       acp provider disable ID\n\n"
     "(unstable) Routes the agent's provider ID to the OpenAI-compatible (or TYPE) endpoint\n"
     "URL with these headers (providers/set: they replace the agent's own credentials), or\n"
     "switches it off (providers/disable). The agent keeps a route for the connection\n"
     "only: to prompt through one, give --provider ID=URL (and --header) to that command.\n"},
    {"agents", cmd_agents, 0, 0, 0,
     "usage: acp agents [--registry FILE|URL]\n\n"
     "Lists the agents of the ACP Registry: id, version, name, how it runs (npx, binary\n"
     "for this platform), description. The registry is --registry, else $ACP_REGISTRY,\n"
     "else https://cdn.agentclientprotocol.com/registry/v1/latest/registry.json; a URL's\n"
     "copy is kept in $XDG_CACHE_HOME/acp and serves when the network does not.\n"
     "'acp --agent ID COMMAND' runs agent ID: npx -y PACKAGE ARGS with its env, or its\n"
     "binary, downloaded once into $XDG_CACHE_HOME/acp/agents (sha256 checked when\n"
     "given) and unpacked there. --json: the registry's agents array.\n"},
};

#define NCOMMANDS (sizeof commands / sizeof commands[0])

static const command *find_command(const char *name)
{
    for (size_t i = 0; name && i < NCOMMANDS; i++)
        if (!strcmp(commands[i].name, name)) return &commands[i];
    return NULL;
}

static int print_help(const command *cmd)
{
    if (!cmd) {
        fputs(usage_main, stdout);
        fputs(usage_opts, stdout);
        return 0;
    }
    fputs(cmd->help, stdout);
    if (cmd->flags & F_SESS) fputs(sess_opts_help, stdout);
    if (cmd->flags & F_SERVE) fputs(serve_cli_usage, stdout);
    if (cmd->run == cmd_prompt || cmd->run == cmd_chat) fputs(turn_opts_help, stdout);
    printf("\nGlobal options ('acp --help') go before or after the command.\n");
    return 0;
}

/* "acp: ..." on stderr for a bad command line, kept for --json's error line. */
static int usage(app *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int usage(app *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->said, sizeof a->said, fmt, ap);
    va_end(ap);
    fprintf(stderr, "acp: %s\n", a->said);
    return EXIT_USAGE;
}

static int usage_error(app *a, const char *fmt, const char *arg)
{
    char msg[600];
    /* the user's text, but perhaps pasted from anywhere */
    snprintf(msg, sizeof msg, fmt, safe_line(arg));
    return usage(a, "%s; see 'acp --help'", msg);
}

/* --- session options --------------------------------------------------------------------- */

/* Resolves an MCP command to an absolute path (the protocol wants one). */
static char *which(const char *cmd)
{
    if (strchr(cmd, '/')) return realpath(cmd, NULL);
    const char *path = getenv("PATH");
    if (!path) path = "/usr/bin:/bin";
    char *dup = strdup(path), *save = NULL, *out = NULL;
    for (char *d = strtok_r(dup, ":", &save); d && !out; d = strtok_r(NULL, ":", &save)) {
        char buf[PATH_MAX];
        snprintf(buf, sizeof buf, "%s/%s", *d ? d : ".", cmd);
        if (access(buf, X_OK) == 0) out = realpath(buf, NULL);
    }
    free(dup);
    return out;
}

/* An --mcp value: NAME=CMD ARGS, the command line split like --agent's. */
static json_t *mcp_stdio(const char *spec)
{
    const char *eq = strchr(spec, '=');
    char **words = NULL;
    if (!eq || eq == spec || acp_client_split_command(eq + 1, &words)) return NULL;
    char *abs = which(words[0]);
    json_t *srv = NULL, *args = json_array();
    for (size_t i = 1; words[i]; i++) json_array_append_new(args, json_string(words[i]));
    if (abs)
        srv = json_pack("{s:s%, s:s, s:o, s:[]}", "name", spec, (size_t)(eq - spec), "command", abs,
                        "args", args, "env");
    else
        json_decref(args);
    free(abs);
    acp_client_argv_free(words);
    return srv;
}

static json_t *mcp_url(const char *type, const char *spec)
{
    const char *eq = strchr(spec, '=');
    if (!eq || eq == spec || !eq[1]) return NULL;
    return json_pack("{s:s, s:s%, s:s, s:[]}", "type", type, "name", spec, (size_t)(eq - spec),
                     "url", eq + 1, "headers");
}

/* A --system-prompt FILE ('-': standard input) as a SystemPrompt in append mode: its text in
 * one block. NULL when it cannot be read, is empty or is not UTF-8 text. */
static json_t *system_prompt_from(const char *path)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f) return NULL;
    acp_buf b = {0};
    char tmp[65536];
    size_t n;
    while ((n = fread(tmp, 1, sizeof tmp, f)) > 0 && b.len < (1u << 20)) acp_buf_append(&b, tmp, n);
    bool bad = ferror(f) || b.len >= (1u << 20);
    if (f != stdin) fclose(f);
    json_t *text = !bad && acp_buf_cstr(&b) && b.len ? json_stringn(b.data, b.len) : NULL;
    acp_buf_free(&b);
    if (!text) return NULL; /* json_stringn refuses what is not UTF-8 */
    return json_pack("{s:s, s:[{s:s, s:o}]}", "mode", "append", "content", "type", "text", "text",
                     text);
}

/* --- the command line ---------------------------------------------------------------------- */

enum {
    O_AGENT = 256,
    O_TOKEN,
    O_CACERT,
    O_HTTP2,
    O_JSON,
    O_CWD,
    O_YES,
    O_DENY,
    O_FS,
    O_MAX_READ,
    O_TERMINAL,
    O_AUTH,
    O_TIMEOUT,
    O_HELP,
    O_VERSION,
    O_ADD,
    O_MCP,
    O_HTTP,
    O_SSE,
    O_MCP_LOCAL,
    O_ALL,
    O_COLOR,
    O_AGENT_LOG,
    O_QUIET,
    O_ARCHIVED,
    O_SYSTEM_PROMPT,
    O_ONLY,
    O_NO_PROMPT,
    O_LOG_LEVEL,
    O_OUT,
    O_PROVIDER,
    O_HEADER,
    O_API_TYPE,
    O_REGISTRY,
};

typedef struct cmdline {
    const command *cmd;
    bool help, version;
    unsigned used;     /* F_* command options given */
    const char *first; /* the first command option given, for the error */
    char *cwd_abs;
} cmdline;

static void word(app *a, const char **cmdname, char *w)
{
    if (!*cmdname)
        *cmdname = w;
    else
        a->args[a->nargs++] = w;
}

static int parse(app *a, cmdline *cl, int argc, char **argv)
{
    static const struct option opts[] = {
        {"agent", required_argument, NULL, O_AGENT},
        {"token", required_argument, NULL, O_TOKEN},
        {"cacert", required_argument, NULL, O_CACERT},
        {"http2", no_argument, NULL, O_HTTP2},
        {"json", no_argument, NULL, O_JSON},
        {"cwd", required_argument, NULL, O_CWD},
        {"yes", no_argument, NULL, O_YES},
        {"deny", no_argument, NULL, O_DENY},
        {"fs", no_argument, NULL, O_FS},
        {"max-read", required_argument, NULL, O_MAX_READ},
        {"terminal", no_argument, NULL, O_TERMINAL},
        {"auth", required_argument, NULL, O_AUTH},
        {"timeout", required_argument, NULL, O_TIMEOUT},
        {"help", no_argument, NULL, O_HELP},
        {"version", no_argument, NULL, O_VERSION},
        {"session", required_argument, NULL, 's'},
        {"add-dir", required_argument, NULL, O_ADD},
        {"mcp", required_argument, NULL, O_MCP},
        {"mcp-http", required_argument, NULL, O_HTTP},
        {"mcp-sse", required_argument, NULL, O_SSE},
        {"mcp-local", required_argument, NULL, O_MCP_LOCAL},
        {"all-cwd", no_argument, NULL, O_ALL},
        {"color", optional_argument, NULL, O_COLOR},
        {"agent-log", required_argument, NULL, O_AGENT_LOG},
        {"quiet", no_argument, NULL, O_QUIET},
        {"archived", optional_argument, NULL, O_ARCHIVED},
        {"system-prompt", required_argument, NULL, O_SYSTEM_PROMPT},
        {"only", required_argument, NULL, O_ONLY},
        {"no-prompt", no_argument, NULL, O_NO_PROMPT},
        {"log-level", required_argument, NULL, O_LOG_LEVEL},
        {"out", required_argument, NULL, O_OUT},
        SERVE_CLI_LONGOPTS,
        {"provider", required_argument, NULL, O_PROVIDER},
        {"header", required_argument, NULL, O_HEADER},
        {"api-type", required_argument, NULL, O_API_TYPE},
        {"registry", required_argument, NULL, O_REGISTRY},
        {NULL, 0, NULL, 0}};
    a->args = calloc((size_t)argc + 1, sizeof *a->args);
    a->mcp = json_array();
    a->mcp_local = json_array();
    const char *cmdname = NULL;
    int ch;
    opterr = 0; /* our own one-line messages */
    /* '-': options anywhere (global ones before or after the command), the words in order;
     * ':': a missing argument is told apart from an unknown option. */
    while ((ch = getopt_long(argc, argv, "-:s:h", opts, NULL)) != -1) {
        json_t *srv = NULL;
        unsigned flag = 0;
        switch (ch) {
        case 1: /* a word: the command, then its arguments */
            word(a, &cmdname, optarg);
            break;
        case O_AGENT:
            a->agent = optarg;
            break;
        case O_TOKEN:
            /* Kept from here on, and wiped from our argv so ps shows no token. */
            free(a->token);
            a->token = strdup(optarg);
            memset(optarg, 'x', strlen(optarg));
            break;
        case O_CACERT:
            a->ca_file = optarg;
            break;
        case O_HTTP2:
            a->http2 = true;
            break;
        case O_JSON:
            a->json = true;
            break;
        case O_CWD:
            free(cl->cwd_abs);
            if (!(cl->cwd_abs = realpath(optarg, NULL)))
                return usage_error(a, "--cwd: no such directory: '%s'", optarg);
            a->cwd = cl->cwd_abs;
            break;
        case O_YES:
        case O_DENY:
            if (a->perm && a->perm != (ch == O_YES ? 1 : -1))
                return usage_error(a, "--yes and --deny contradict each other%s", "");
            a->perm = ch == O_YES ? 1 : -1;
            break;
        case O_FS:
            a->fs = true;
            break;
        case O_TERMINAL:
            a->terminal = true;
            break;
        case O_AUTH:
            if (!*optarg) return usage_error(a, "--auth wants a METHOD id%s", "");
            a->auth = optarg;
            break;
        case O_MAX_READ: {
            uint64_t n;
            if (acp_parse_size(optarg, 1, SIZE_MAX, &n))
                return usage_error(a, "--max-read wants a SIZE in bytes (or with K, M, G): %s",
                                   acp_error_last()->message);
            a->max_read = (size_t)n;
            break;
        }
        case O_TIMEOUT: {
            /* a millisecond to 46 days: timeout_ms stays within 32 bits */
            double s;
            if (acp_parse_double(optarg, 0.001, 4e6, &s))
                return usage_error(a, "--timeout wants a number of SECONDS: %s",
                                   acp_error_last()->message);
            a->timeout_ms = (unsigned)(s * 1000 + 0.5);
            break;
        }
        case O_AGENT_LOG:
            a->agent_log = optarg;
            break;
        case O_QUIET:
            a->quiet = true;
            break;
        case O_LOG_LEVEL: {
            enum log_level l;
            if (log_level_parse(optarg, &l) || !strcmp(optarg, "quiet"))
                return usage_error(a, "--log-level wants error, warn, info or debug, not '%s'",
                                   optarg);
            a->log_level = (int)l;
            break;
        }
        case O_PROVIDER:
            if (!strchr(optarg, '=') || *optarg == '=' || !strchr(optarg, '=')[1])
                return usage_error(a, "--provider wants ID=URL, not '%s'", optarg);
            a->provider = optarg;
            break;
        case O_HEADER: {
            const char *colon = strchr(optarg, ':');
            if (!colon || colon == optarg)
                return usage_error(a, "--header wants 'NAME: VALUE'%s", "");
            /* Kept, and wiped from our argv: the value may be a key (ps shows argv). */
            char **h = realloc(a->headers, (a->nheaders + 2) * sizeof *h);
            if (!h || !(h[a->nheaders] = strdup(optarg))) {
                a->headers = h;
                return usage_error(a, "out of memory%s", "");
            }
            a->headers = h;
            h[++a->nheaders] = NULL;
            memset(optarg, 'x', strlen(optarg));
            break;
        }
        case O_API_TYPE:
            a->api_type = optarg;
            break;
        case O_REGISTRY:
            a->registry = optarg;
            break;
        case 'h':
        case O_HELP:
            cl->help = true;
            break;
        case O_VERSION:
            cl->version = true;
            break;
        case 's':
            a->sid = optarg;
            a->sid_given = true;
            flag = F_SID;
            break;
        case O_ADD:
            flag = F_SESS;
            if (a->ndirs == MAX_DIRS) return usage_error(a, "too many --add-dir%s", "");
            if (optarg[0] != '/') {
                char *abs = realpath(optarg, NULL);
                if (!abs) return usage_error(a, "--add-dir: no such directory: '%s'", optarg);
                a->dirs[a->ndirs++] = a->owned[a->nowned++] = abs;
            } else {
                a->dirs[a->ndirs++] = optarg;
            }
            break;
        case O_MCP:
            flag = F_SESS;
            if (!(srv = mcp_stdio(optarg)))
                return usage_error(a, "--mcp wants NAME=CMD ARGS (CMD in PATH), not '%s'", optarg);
            break;
        case O_MCP_LOCAL: {
            flag = F_SESS;
            json_t *local = mcp_stdio(optarg);
            if (!local)
                return usage_error(a, "--mcp-local wants NAME=CMD ARGS (CMD in PATH), not '%s'",
                                   optarg);
            json_array_append_new(a->mcp_local, local);
            break;
        }
        case O_HTTP:
        case O_SSE:
            flag = F_SESS;
            if (!(srv = mcp_url(ch == O_HTTP ? "http" : "sse", optarg)))
                return usage_error(a, "--mcp-http/--mcp-sse want NAME=URL, not '%s'", optarg);
            break;
        case O_COLOR: /* --color alone is --color=always, as in ls and grep */
            if (!optarg || !strcmp(optarg, "always"))
                a->color = 1;
            else if (!strcmp(optarg, "never"))
                a->color = 0;
            else if (!strcmp(optarg, "auto"))
                a->color = -1;
            else
                return usage_error(a, "--color wants auto, always or never, not '%s'", optarg);
            break;
        case O_ONLY:
            a->only = optarg;
            flag = F_CHECK;
            break;
        case O_NO_PROMPT:
            a->no_prompt = true;
            flag = F_CHECK;
            break;
        case O_ALL:
            a->all_cwd = true;
            flag = F_ALL;
            break;
        case O_ARCHIVED: /* bare: "only"; "--archived WORD" is taken apart after parsing */
            if (optarg && strcmp(optarg, "include") && strcmp(optarg, "only"))
                return usage_error(a, "--archived wants include or only, not '%s'", optarg);
            a->archived = optarg ? optarg : "";
            flag = F_ALL;
            break;
        case O_SYSTEM_PROMPT:
            flag = F_SESS;
            json_decref(a->system_prompt);
            if (!(a->system_prompt = system_prompt_from(optarg)))
                return usage_error(a, "--system-prompt: cannot read a text file '%s'", optarg);
            break;
        case O_OUT:
            a->trace_out = optarg;
            flag = F_OUT;
            break;
        case ':':
            return usage_error(a, "%s wants an argument", argv[optind - 1]);
        default:
            if (ch >= SERVE_OPT_LISTEN && ch < SERVE_OPT_END) {
                if (serve_cli_take(a->serve, ch, optarg)) return EXIT_USAGE;
                flag = F_SERVE;
                break;
            }
            return usage_error(a, "unknown option '%s'", argv[optind - 1]);
        }
        if (srv) json_array_append_new(a->mcp, srv);
        if (flag && !cl->first) cl->first = argv[optind - 1];
        cl->used |= flag;
    }
    /* after "--": the rest are words (trace's and serve's agent command line) */
    a->dashdash = optind < argc && !strcmp(argv[optind - 1], "--") ? a->nargs : -1;
    if (optind < argc && !cmdname) a->dashdash = -1; /* the command itself came after it */
    for (; optind < argc; optind++) word(a, &cmdname, argv[optind]);
    /* The token is for the remote agent only: no process we start (a terminal command, an
     * MCP server) inherits it. */
    if (a->token && !app_remote(a))
        return usage_error(a,
                           "--token is for an agent URL (--agent http://HOST:PORT/acp, "
                           "ws://...)%s",
                           "");
    const char *env_token = getenv("ACP_TOKEN");
    if (env_token && *env_token && !a->token && app_remote(a)) a->token = strdup(env_token);
    unsetenv("ACP_TOKEN");
    if (cl->help || cl->version) {
        cl->cmd =
            find_command(cmdname && !strcmp(cmdname, "help") && a->nargs ? a->args[0] : cmdname);
        return 0;
    }
    if (!cmdname) return usage_error(a, "a COMMAND is required%s", "");
    if (!strcmp(cmdname, "help")) {
        cl->help = true;
        cl->cmd = find_command(a->nargs ? a->args[0] : NULL);
        return 0;
    }
    const command *cmd = cl->cmd = find_command(cmdname);
    if (!cmd) return usage_error(a, "unknown command '%s'", cmdname);
    if (cl->used & ~cmd->flags) {
        return usage(a, "'%s' takes no %s; see 'acp %s --help'", cmd->name,
                     cl->first ? cl->first : "such option", cmd->name);
    }
    /* sessions --archived include: the filter's word came apart from the option */
    if (cmd->run == cmd_sessions && a->nargs == 1 && a->archived && !*a->archived &&
        (!strcmp(a->args[0], "include") || !strcmp(a->args[0], "only")))
        a->archived = a->args[--a->nargs];
    if (a->archived && !*a->archived) a->archived = "only";
    if (cmd->run == cmd_sessions && a->nargs)
        return usage(a, "wrong arguments for 'sessions' (--archived wants include or only); see "
                        "'acp sessions --help'");
    if (a->nargs < cmd->min_args || (cmd->max_args >= 0 && a->nargs > cmd->max_args) ||
        (cmd->run == cmd_config && a->nargs == 1)) {
        return usage(a, "wrong arguments for '%s'; see 'acp %s --help'", cmd->name, cmd->name);
    }
    if ((cmd->run == cmd_mode || (cmd->run == cmd_config && a->nargs)) && !a->sid_given) {
        return usage(a, "'%s' needs -s ID: the session to change", cmd->name);
    }
    return 0;
}

/* --- commands ------------------------------------------------------------------------------ */

static const char * or (const char *s, const char *dflt)
{
    return s ? s : dflt;
}

/* The member at a dotted path of o, or NULL. */
static json_t *cap_at(json_t *o, const char *path)
{
    char key[128];
    while (o && *path) {
        size_t n = strcspn(path, ".");
        snprintf(key, sizeof key, "%.*s", (int)n, path);
        o = json_object_get(o, key);
        path += n + (path[n] == '.');
    }
    return o;
}

/* One line per advertised member, by its dotted path: booleans yes/no, an object (a marker)
 * yes and then its own members, _meta and anything else as its JSON text. */
static void show_caps(json_t *o, const char *prefix)
{
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v)
    {
        char path[512];
        snprintf(path, sizeof path, "%s%s%s", prefix, *prefix ? "." : "", k);
        if (json_is_object(v) && strcmp(k, "_meta")) {
            printf("  %-42s yes\n", safe_line(path));
            show_caps(v, path);
        } else if (json_is_boolean(v) || json_is_null(v)) {
            printf("  %-42s %s\n", safe_line(path), json_is_true(v) ? "yes" : "no");
        } else {
            char *t = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
            printf("  %-42s %s\n", safe_line(path), safe_line(t ? t : "?"));
            free(t);
        }
    }
}

static int cmd_info(app *a)
{
    int rc = app_open(a);
    if (rc) return rc;
    json_t *init = acp_client_init_result(a->c);
    if (a->json) {
        render_result(&a->r, json_incref(init));
        return 0;
    }
    json_t *info = json_object_get(init, "agentInfo");
    printf("agent:    %s %s\n",
           safe_line(or (json_string_value(json_object_get(info, "name")), "(unnamed)")),
           safe_line(or (json_string_value(json_object_get(info, "version")), "")));
    printf("protocol: %lld\n",
           (long long)json_integer_value(json_object_get(init, "protocolVersion")));
    /* Everything the agent advertises, known to this acp or not (unknown members, _meta,
     * providers, the unstable ones), then the known ones it leaves out. */
    json_t *caps = json_object_get(init, "agentCapabilities");
    printf("capabilities:\n");
    show_caps(caps, "");
    static const char *const known[] = {"loadSession",
                                        "sessionCapabilities.resume",
                                        "sessionCapabilities.close",
                                        "sessionCapabilities.list",
                                        "sessionCapabilities.delete",
                                        "sessionCapabilities.additionalDirectories",
                                        "sessionCapabilities.fork",
                                        "sessionCapabilities.title",
                                        "sessionCapabilities.archive",
                                        "sessionCapabilities.status",
                                        "sessionCapabilities.systemPrompt",
                                        "mcpCapabilities.http",
                                        "mcpCapabilities.sse",
                                        "mcpCapabilities.acp",
                                        "promptCapabilities.image",
                                        "promptCapabilities.audio",
                                        "promptCapabilities.embeddedContext",
                                        "auth.logout",
                                        "auth.status",
                                        "providers"};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (!cap_at(caps, known[i])) printf("  %-42s no\n", known[i]);
    json_t *methods = acp_client_auth_methods(a->c);
    printf("auth methods:%s", json_array_size(methods) ? "" : " none");
    size_t i;
    json_t *m;
    json_array_foreach(methods, i, m) printf(
        "%s %s (%s)", i ? "," : "",
        safe_line(or (json_string_value(json_object_get(m, "id")), "?")), safe_line(auth_type(m)));
    printf("\n");
    json_t *st = NULL; /* (unstable) auth/status, where the agent tells it */
    if (acp_client_supports(a->c, ACP_CAP_AUTH_STATUS) && !acp_client_auth_status(a->c, &st)) {
        json_t *acct = json_array_get(json_object_get(st, "accounts"), 0);
        const char *label = json_string_value(json_object_get(acct, "label"));
        printf("auth status: %s%s%s%s\n",
               safe_line(or (json_string_value(json_object_get(st, "state")), "unknown")),
               label ? " (" : "", label ? safe_line(label) : "", label ? ")" : "");
    }
    json_decref(st);
    return 0;
}

static int cmd_new(app *a)
{
    int rc = app_open(a);
    if (!rc) rc = app_session(a, "continue");
    if (rc) return rc;
    if (a->json)
        render_result(&a->r, json_deep_copy(acp_client_session_result(a->s)));
    else
        printf("%s\n", safe_line(acp_client_session_id(a->s)));
    return 0;
}

static char *read_stdin(void)
{
    acp_buf b = {0};
    char tmp[65536];
    size_t n;
    while ((n = fread(tmp, 1, sizeof tmp, stdin)) > 0) acp_buf_append(&b, tmp, n);
    if (!acp_buf_cstr(&b)) return NULL;
    return b.data;
}

static int cmd_prompt(app *a)
{
    char *text;
    if (a->nargs == 1 && !strcmp(a->args[0], "-")) {
        text = read_stdin();
    } else {
        acp_buf b = {0};
        for (int i = 0; i < a->nargs; i++) acp_buf_printf(&b, "%s%s", i ? " " : "", a->args[i]);
        acp_buf_cstr(&b);
        text = b.data;
    }
    int rc = app_open(a);
    if (!rc) rc = app_session(a, "continue");
    if (!rc && !a->json && !a->sid && isatty(STDERR_FILENO))
        fprintf(stderr, "session %s\n", safe_line(acp_client_session_id(a->s)));
    if (!rc) rc = app_turn(a, text ? text : "");
    free(text);
    return rc;
}

/* The agent, signed in when it should be: for commands that use no session. */
static int open_signed_in(app *a)
{
    int rc = app_open(a);
    return rc ? rc : app_sign_in(a);
}

static int by_updated_desc(const void *x, const void *y)
{
    json_t *const *p = x, *const *q = y;
    const char *ua = json_string_value(json_object_get(*p, "updatedAt"));
    const char *ub = json_string_value(json_object_get(*q, "updatedAt"));
    return strcmp(ub ? ub : "", ua ? ua : "");
}

static int cmd_sessions(app *a)
{
    int rc = open_signed_in(a);
    if (rc) return rc;
    char here[PATH_MAX];
    const char *cwd = a->all_cwd ? NULL : a->cwd ? a->cwd : getcwd(here, sizeof here);
    json_t *all = json_array();
    char *cursor = NULL;
    for (int page = 0; page < 100000; page++) {
        json_t *res;
        if ((rc = acp_client_list_archived(a->c, cwd, a->archived, cursor, &res))) {
            free(cursor);
            json_decref(all);
            return app_fail(a, "cannot list sessions", rc);
        }
        json_array_extend(all, json_object_get(res, "sessions"));
        free(cursor);
        const char *next = json_string_value(json_object_get(res, "nextCursor"));
        cursor = next ? strdup(next) : NULL;
        json_decref(res);
        if (!cursor) break;
    }
    free(cursor);
    size_t n = json_array_size(all);
    json_t **v = calloc(n + 1, sizeof *v);
    for (size_t i = 0; i < n; i++) v[i] = json_array_get(all, i);
    qsort(v, n, sizeof *v, by_updated_desc);
    if (a->json) {
        json_t *sorted = json_array();
        for (size_t i = 0; i < n; i++) json_array_append(sorted, v[i]);
        render_result(&a->r, json_pack("{s:o}", "sessions", sorted));
    } else if (n == 0) {
        printf("no %ssessions%s%s\n",
               a->archived && !strcmp(a->archived, "only") ? "archived " : "", cwd ? " in " : "",
               cwd ? safe_line(cwd) : "");
    } else {
        bool flag = a->archived && !strcmp(a->archived, "include");
        printf("%-38s  %-24s  %s%-30s  %s\n", "ID", "UPDATED", flag ? "ARCHIVED  " : "", "TITLE",
               "CWD");
        for (size_t i = 0; i < n; i++) {
            const char *t = json_string_value(json_object_get(v[i], "title"));
            printf("%-38s  %-24s  %s%-30.30s  %s\n",
                   safe_line(or (json_string_value(json_object_get(v[i], "sessionId")), "?")),
                   safe_line(or (json_string_value(json_object_get(v[i], "updatedAt")), "-")),
                   !flag                                             ? ""
                   : json_is_true(json_object_get(v[i], "archived")) ? "yes       "
                                                                     : "no        ",
                   safe_line(t ? t : "-"),
                   safe_line(or (json_string_value(json_object_get(v[i], "cwd")), "")));
        }
    }
    free(v);
    json_decref(all);
    return 0;
}

static int cmd_history(app *a)
{
    int rc = open_signed_in(a);
    if (rc) return rc;
    a->r.show_user = true;
    acp_session_opts so;
    app_session_opts(a, &so);
    const char *id = a->args[0];
    if ((rc = acp_client_session_load(a->c, id, &so, &a->s))) return fail_id(a, "load", id, rc);
    if (a->json)
        render_result(&a->r, json_pack("{s:s}", "sessionId", id));
    else
        render_eol(&a->r);
    return 0;
}

/* The result line of resume, close and delete. */
static void done(app *a, const char *verb, const char *id)
{
    if (!a->json) {
        printf("%s %s\n", verb, id);
        return;
    }
    json_t *res = a->s ? json_deep_copy(acp_client_session_result(a->s)) : NULL;
    if (!json_is_object(res)) {
        json_decref(res);
        res = json_object();
    }
    json_object_set_new(res, "sessionId", json_string(id));
    render_result(&a->r, res);
}

static int cmd_resume(app *a)
{
    int rc = open_signed_in(a);
    if (rc) return rc;
    acp_session_opts so;
    app_session_opts(a, &so);
    const char *id = a->args[0];
    if ((rc = acp_client_session_resume(a->c, id, &so, &a->s))) return fail_id(a, "resume", id, rc);
    done(a, "resumed", id);
    return 0;
}

static int cmd_close(app *a)
{
    const char *id = a->sid = a->args[0];
    int rc = app_open(a);
    if (rc) return rc;
    char what[300];
    snprintf(what, sizeof what, "cannot close session %s", id);
    if (!acp_client_supports(a->c, ACP_CAP_CLOSE)) {
        app_note(a, "%s: the agent does not advertise sessionCapabilities.close", what);
        return EXIT_REFUSED;
    }
    /* A fresh agent process has no active sessions: make it active, then close it. */
    if ((rc = app_session(a, "close"))) return rc;
    rc = acp_client_session_close(a->s);
    a->s = NULL;                          /* freed whatever the answer */
    if (rc) return app_fail(a, NULL, rc); /* the library's message names the close */
    done(a, "closed", id);
    return 0;
}

static int cmd_delete(app *a)
{
    int rc = open_signed_in(a);
    if (rc) return rc;
    const char *id = a->args[0];
    if ((rc = acp_client_delete(a->c, id))) return fail_id(a, "delete", id, rc);
    done(a, "deleted", id);
    return 0;
}

static int cmd_title(app *a)
{
    int rc = open_signed_in(a);
    if (rc) return rc;
    const char *id = a->args[0];
    acp_buf b = {0};
    for (int i = 1; i < a->nargs; i++) acp_buf_printf(&b, "%s%s", i > 1 ? " " : "", a->args[i]);
    json_t *res = NULL;
    rc = acp_buf_cstr(&b) ? acp_client_set_title(a->c, id, b.data, &res) : ACP_ENOMEM;
    acp_buf_free(&b);
    if (rc) return fail_id(a, "retitle", id, rc);
    if (a->json) {
        json_object_set_new(res, "sessionId", json_string(id));
        render_result(&a->r, res);
        return 0;
    }
    printf("%s\n", safe_line(or (json_string_value(json_object_get(res, "title")), "")));
    json_decref(res);
    return 0;
}

static int archive(app *a, bool on)
{
    int rc = open_signed_in(a);
    if (rc) return rc;
    const char *id = a->args[0];
    if ((rc = acp_client_archive(a->c, id, on)))
        return fail_id(a, on ? "archive" : "unarchive", id, rc);
    done(a, on ? "archived" : "unarchived", id);
    return 0;
}

static int cmd_archive(app *a)
{
    return archive(a, true);
}

static int cmd_unarchive(app *a)
{
    return archive(a, false);
}

static int cmd_status(app *a)
{
    int rc = open_signed_in(a);
    if (rc) return rc;
    const char *id = a->args[0];
    json_t *res = NULL;
    if ((rc = acp_client_status(a->c, id, &res))) return fail_id(a, "check", id, rc);
    if (a->json) {
        json_object_set_new(res, "sessionId", json_string(id));
        render_result(&a->r, res);
        return 0;
    }
    const char *st = json_string_value(json_object_get(res, "status"));
    /* the schema: a value we do not know reads as saved */
    printf("%s\n", st && !strcmp(st, "open") ? "open" : "saved");
    json_decref(res);
    return 0;
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    setlocale(LC_CTYPE, ""); /* the line editor and display widths speak the user's UTF-8 */
    serve_cli sc;
    serve_cli_init(&sc, "acp");
    app a = {.color = -1, .log_level = LOG_INFO, .serve = &sc, .dashdash = -1};
    cmdline cl = {0};
    int rc = parse(&a, &cl, argc, argv);
    if (rc && a.json) app_json_error(&a, rc);
    if (!rc && cl.help) {
        print_help(cl.cmd);
    } else if (!rc && cl.version) {
        printf("acp %s (ACP protocol %d)\n", ACP_VERSION_STRING, ACP_PROTOCOL_VERSION);
    } else if (!rc) {
        /* stdout is often a pipe to a script: big buffered writes, flushed at line ends we
         * choose (render_eol, results). */
        setvbuf(stdout, NULL, _IOFBF, 1 << 20);
        render_init(&a.r, stdout, a.json, a.color);
        if (a.log_level == LOG_DEBUG) wire_trace_start("acp");
        rc = cl.cmd->run == cmd_agents ? 0 : registry_resolve(&a);
        if (!rc) rc = cl.cmd->run(&a);
        a.finished = true;
        /* check's status 1 is its verdict (a MUST failed), told by its own lines */
        if (rc && a.json && cl.cmd->run != cmd_check) app_json_error(&a, rc);
        fflush(stdout);
        app_close(&a);
        render_free(&a.r);
        safe_free();
    }
    if (a.token) explicit_bzero(a.token, strlen(a.token));
    free(a.token);
    for (size_t i = 0; i < a.nheaders; i++) {
        explicit_bzero(a.headers[i], strlen(a.headers[i]));
        free(a.headers[i]);
    }
    free(a.headers);
    free(a.agent_cmd);
    json_decref(a.mcp);
    json_decref(a.system_prompt);
    json_decref(a.mcp_local);
    for (size_t i = 0; i < a.nowned; i++) free(a.owned[i]);
    free(a.args);
    free(cl.cwd_abs);
    serve_cli_free(&sc);
    return rc;
}
