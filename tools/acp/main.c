/* acp: a command-line client for any ACP agent. Argument parsing, output and the terminal;
 * everything protocol-specific lives in libacp's client (include/acp/client.h). */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acp/client.h"
#include "acp/version.h"
#include "tools/acp/render.h"

#define EXIT_AGENT 1
#define EXIT_USAGE 2
#define HELP_SHOWN 100 /* not an exit status: stops a command after its --help */

static const char usage_main[] =
    "usage: acp [--agent 'CMD ARGS'] [--json] [--cwd DIR] COMMAND [ARGS]\n"
    "\n"
    "A command-line client for any ACP agent (default: acp-agent next to acp).\n"
    "\n"
    "commands:\n"
    "  info                          agent name, version, protocol version, capabilities\n"
    "  new [--add-dir DIR]... [--mcp 'NAME=CMD ARGS'] [--mcp-http NAME=URL] [--mcp-sse NAME=URL]\n"
    "                                create a session and print its id\n"
    "  prompt [-s ID] [--yes|--deny] TEXT\n"
    "                                prompt a new session (or session ID) and stream the reply\n"
    "  sessions [--all-cwd]          list sessions, newest first\n"
    "  history ID                    load session ID and print its conversation\n"
    "  resume ID | close ID | delete ID\n"
    "  chat [-s ID] [--yes|--deny]   interactive; Ctrl-C cancels the turn, twice exits\n"
    "\n"
    "options:\n"
    "  --agent 'CMD ARGS'   the agent to run (split like a shell line)\n"
    "  --json               one JSON object per line: every update raw, then the result\n"
    "  --cwd DIR            the session's working directory (default: the current one)\n"
    "  --help, --version\n"
    "\n"
    "Run 'acp COMMAND --help' for a command's options; 'man acp' for examples.\n"
    "Exit status: 0 ok, 1 agent or protocol error, 2 usage error.\n";

typedef struct cmd_help {
    const char *name, *text;
} cmd_help;

static const cmd_help helps[] = {
    {"info", "usage: acp info\n\nStarts the agent, runs initialize and prints the agent's name, "
             "version,\nprotocol version and capabilities (--json: the initialize result).\n"},
    {"new",
     "usage: acp new [--add-dir DIR]... [--mcp 'NAME=CMD ARGS']... [--mcp-http NAME=URL]...\n"
     "               [--mcp-sse NAME=URL]...\n\n"
     "Creates a session in --cwd and prints its id.\n"
     "  --add-dir DIR        an additional workspace root (needs the agent's\n"
     "                       sessionCapabilities.additionalDirectories)\n"
     "  --mcp 'NAME=CMD ARGS'  an MCP server over stdio (CMD looked up in PATH)\n"
     "  --mcp-http NAME=URL  an MCP server over Streamable HTTP (needs mcpCapabilities.http)\n"
     "  --mcp-sse NAME=URL   an MCP server over SSE (needs mcpCapabilities.sse)\n"},
    {"prompt", "usage: acp prompt [-s ID] [--yes|--deny] [new's options] TEXT...\n\n"
               "Sends TEXT (the words joined by spaces; '-' reads standard input) to a new\n"
               "session, or to session ID: resumed when the agent supports session/resume,\n"
               "else loaded (the replayed history is not printed; see 'acp history').\n"
               "The reply streams to stdout; Ctrl-C cancels the turn, a second Ctrl-C exits.\n"
               "  -s, --session ID     continue session ID\n"
               "  --yes                allow every permission request\n"
               "  --deny               deny every permission request\n"
               "Without --yes/--deny, permission requests are asked on the terminal, and\n"
               "denied when there is none.\n"},
    {"sessions", "usage: acp sessions [--all-cwd]\n\n"
                 "Lists the agent's sessions for --cwd (every page), newest first: id, updated,\n"
                 "title, cwd. --all-cwd lists sessions of every directory.\n"
                 "--json prints {\"sessions\":[...]} with every page merged.\n"},
    {"history", "usage: acp history ID\n\nLoads session ID (session/load) and prints its "
                "conversation as replayed by the agent.\n"},
    {"resume", "usage: acp resume ID\n\nResumes session ID (session/resume) and prints its id; "
               "fails when the agent does not\nadvertise sessionCapabilities.resume.\n"},
    {"close", "usage: acp close ID\n\nMakes session ID active in a fresh agent process (resume, "
              "else load) and closes\nit with session/close (needs sessionCapabilities.close).\n"},
    {"delete", "usage: acp delete ID\n\nDeletes session ID (session/delete): it no longer "
               "appears in 'acp sessions'.\n"},
    {"chat", "usage: acp chat [-s ID] [--yes|--deny]\n\n"
             "Interactive: reads a prompt per line, streams each reply. Ctrl-C during a reply\n"
             "cancels the turn (a second Ctrl-C exits); Ctrl-D or Ctrl-C at the prompt exits.\n"},
};

typedef struct app {
    const char *agent;
    const char *cwd;
    bool json;
    int perm; /* 1 allow, -1 deny, 0 ask (or deny without a terminal) */
    render r;
    acp_client *c;
    acp_client_session *s;
    uv_signal_t sigint;
    int interrupts;
    bool finished; /* the command printed its result: later updates are not shown */
} app;

static const char * or (const char *s, const char *dflt)
{
    return s ? s : dflt;
}

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "acp: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "; see 'acp --help'\n");
    return EXIT_USAGE;
}

static int print_help(const char *cmd)
{
    for (size_t i = 0; i < sizeof helps / sizeof helps[0]; i++) {
        if (strcmp(helps[i].name, cmd) == 0) {
            fputs(helps[i].text, stdout);
            return 0;
        }
    }
    fputs(usage_main, stdout);
    return 0;
}

/* --- callbacks -------------------------------------------------------------------------- */

static void on_update(acp_client *c, acp_client_session *s, const acp_update *u, void *user)
{
    app *a = user;
    if (!a->finished) render_update(&a->r, u); /* the result line stays the last one */
}

static const char *pick(json_t *options, const char *prefix)
{
    size_t i;
    json_t *o;
    json_array_foreach(options, i, o)
    {
        const char *kind = json_string_value(json_object_get(o, "kind"));
        if (kind && strncmp(kind, prefix, strlen(prefix)) == 0)
            return json_string_value(json_object_get(o, "optionId"));
    }
    return NULL;
}

/* Asks on /dev/tty; NULL when there is no terminal or the answer is not an option. */
static const char *ask(json_t *params)
{
    fflush(stdout); /* what led to the question comes first */
    FILE *tty = fopen("/dev/tty", "r+");
    if (!tty) return NULL;
    json_t *options = json_object_get(params, "options");
    const char *title =
        json_string_value(json_object_get(json_object_get(params, "toolCall"), "title"));
    fprintf(tty, "\nThe agent asks permission: %s\n", title ? title : "(a tool call)");
    size_t i;
    json_t *o;
    json_array_foreach(options, i, o)
        fprintf(tty, "  %zu) %s\n", i + 1, json_string_value(json_object_get(o, "name")));
    fprintf(tty, "choose 1-%zu (anything else denies): ", json_array_size(options));
    fflush(tty);
    char line[64];
    const char *id = NULL;
    if (fgets(line, sizeof line, tty)) {
        long n = strtol(line, NULL, 10);
        if (n >= 1 && (size_t)n <= json_array_size(options))
            id = json_string_value(
                json_object_get(json_array_get(options, (size_t)n - 1), "optionId"));
    }
    fclose(tty);
    return id;
}

static void on_permission(acp_client *c, acp_client_session *s, acp_client_perm *p, json_t *params,
                          void *user)
{
    app *a = user;
    json_t *options = json_object_get(params, "options");
    const char *id = NULL;
    render_status_clear(&a->r);
    if (a->perm > 0) {
        id = pick(options, "allow");
    } else if (a->perm == 0 && isatty(STDIN_FILENO)) {
        id = ask(params);
    }
    if (!id) {
        id = pick(options, "reject");
        if (a->perm == 0 && !isatty(STDIN_FILENO)) {
            const char *title =
                json_string_value(json_object_get(json_object_get(params, "toolCall"), "title"));
            render_eol(&a->r);
            fprintf(stderr, "acp: permission denied (no terminal): %s; pass --yes to allow\n",
                    title ? title : "a tool call");
        }
    }
    acp_client_perm_reply(p, id); /* NULL: cancelled */
}

static void on_sigint(uv_signal_t *h, int signum)
{
    app *a = h->data;
    if (++a->interrupts > 1 || !a->s) _exit(130); /* the agent sees EOF and exits */
    acp_client_session_cancel(a->s);
    render_status_clear(&a->r);
    render_eol(&a->r);
    fprintf(stderr, "acp: cancelling (Ctrl-C again to exit)\n");
}

/* --- helpers ----------------------------------------------------------------------------- */

static int agent_error(app *a, const char *what)
{
    render_eol(&a->r);
    fprintf(stderr, "acp: %s: %s\n", what, acp_client_errmsg(a->c));
    return EXIT_AGENT;
}

static char *default_agent(void)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return strdup("acp-agent");
    self[n] = 0;
    char *slash = strrchr(self, '/');
    *slash = 0;
    char *out;
    /* Quoted for the shell-like split: the build path may contain spaces. */
    if (asprintf(&out, "'%s/acp-agent'", self) < 0) return NULL;
    return out;
}

static int open_client(app *a)
{
    char *def = a->agent ? NULL : default_agent();
    acp_client_opts o = {.command = a->agent ? a->agent : def,
                         .on_update = on_update,
                         .on_permission = on_permission,
                         .user = a};
    char *err = NULL;
    int rc = acp_client_open(&o, &a->c, &err);
    free(def);
    if (rc) {
        fprintf(stderr, "acp: cannot start the agent: %s; check --agent\n",
                err ? err : acp_strerror(rc));
        free(err);
        return EXIT_AGENT;
    }
    uv_signal_init(acp_client_loop(a->c), &a->sigint);
    a->sigint.data = a;
    return 0;
}

static void close_client(app *a)
{
    if (!a->c) return;
    uv_close((uv_handle_t *)&a->sigint, NULL);
    acp_client_free(a->c);
    a->c = NULL;
}

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

typedef struct sess_args {
    const char *id;
    const char *dirs[64];
    size_t ndirs;
    char *owned[64]; /* dirs made absolute here */
    size_t nowned;
    json_t *mcp;
    char **words;
    int nwords;
} sess_args;

static void sess_free(sess_args *sa)
{
    json_decref(sa->mcp);
    for (size_t i = 0; i < sa->nowned; i++) free(sa->owned[i]);
}

/* Options shared by new, prompt, chat, history, resume, close, delete. */
static int parse_sess(app *a, const char *cmd, int argc, char **argv, sess_args *sa, bool want_id,
                      bool want_text)
{
    enum { O_ADD = 256, O_MCP, O_HTTP, O_SSE, O_YES, O_DENY, O_HELP };
    static const struct option opts[] = {{"session", required_argument, NULL, 's'},
                                         {"add-dir", required_argument, NULL, O_ADD},
                                         {"mcp", required_argument, NULL, O_MCP},
                                         {"mcp-http", required_argument, NULL, O_HTTP},
                                         {"mcp-sse", required_argument, NULL, O_SSE},
                                         {"yes", no_argument, NULL, O_YES},
                                         {"deny", no_argument, NULL, O_DENY},
                                         {"help", no_argument, NULL, O_HELP},
                                         {NULL, 0, NULL, 0}};
    sa->mcp = json_array();
    optind = 1;
    int ch;
    while ((ch = getopt_long(argc, argv, "+s:", opts, NULL)) != -1) {
        json_t *srv = NULL;
        switch (ch) {
        case 's':
            sa->id = optarg;
            break;
        case O_ADD:
            if (sa->ndirs == 64) return usage_error("too many --add-dir%s", "");
            if (optarg[0] != '/') {
                char *abs = realpath(optarg, NULL);
                if (!abs) return usage_error("--add-dir: no such directory: '%s'", optarg);
                sa->dirs[sa->ndirs++] = sa->owned[sa->nowned++] = abs;
            } else {
                sa->dirs[sa->ndirs++] = optarg;
            }
            break;
        case O_MCP:
            if (!(srv = mcp_stdio(optarg)))
                return usage_error("--mcp wants NAME=CMD ARGS (CMD in PATH), not '%s'", optarg);
            break;
        case O_HTTP:
        case O_SSE:
            if (!(srv = mcp_url(ch == O_HTTP ? "http" : "sse", optarg)))
                return usage_error("--mcp-http/--mcp-sse want NAME=URL, not '%s'", optarg);
            break;
        case O_YES:
            a->perm = 1;
            break;
        case O_DENY:
            a->perm = -1;
            break;
        case O_HELP:
            print_help(cmd);
            exit(0);
        default:
            return usage_error("bad option for '%s'", cmd);
        }
        if (srv) json_array_append_new(sa->mcp, srv);
    }
    sa->words = argv + optind;
    sa->nwords = argc - optind;
    if (want_id) {
        if (sa->nwords != 1) return usage_error("'%s' wants exactly one session ID", cmd);
        sa->id = sa->words[0];
    } else if (want_text) {
        if (sa->nwords < 1) return usage_error("'%s' wants the prompt TEXT", cmd);
    } else if (sa->nwords) {
        return usage_error("unexpected argument '%s'", sa->words[0]);
    }
    return 0;
}

static void sess_opts(app *a, sess_args *sa, acp_session_opts *so)
{
    sa->dirs[sa->ndirs] = NULL;
    *so = (acp_session_opts){0};
    so->cwd = a->cwd;
    so->add_dirs = sa->ndirs ? sa->dirs : NULL;
    so->mcp_servers = sa->mcp;
}

/* Continue session ID: resume when the agent supports it, else load without showing the
 * replay (history prints it). */
static int attach(app *a, sess_args *sa)
{
    acp_session_opts so;
    sess_opts(a, sa, &so);
    int rc;
    if (!acp_client_supports(a->c, ACP_CAP_RESUME) &&
        !acp_client_supports(a->c, ACP_CAP_LOAD_SESSION)) {
        fprintf(stderr,
                "acp: cannot continue session %s: agent does not advertise "
                "sessionCapabilities.resume or loadSession; run without -s\n",
                sa->id);
        return EXIT_AGENT;
    }
    if (acp_client_supports(a->c, ACP_CAP_RESUME)) {
        rc = acp_client_session_resume(a->c, sa->id, &so, &a->s);
    } else {
        a->r.skip_replay = true;
        rc = acp_client_session_load(a->c, sa->id, &so, &a->s);
        a->r.skip_replay = false;
    }
    if (rc) return agent_error(a, "cannot continue the session");
    return 0;
}

static int start_session(app *a, sess_args *sa)
{
    if (sa->id) return attach(a, sa);
    acp_session_opts so;
    sess_opts(a, sa, &so);
    if (acp_client_session_new(a->c, &so, &a->s)) return agent_error(a, "session/new failed");
    return 0;
}

static int run_prompt(app *a, const char *text)
{
    const char *stop = NULL;
    a->interrupts = 0;
    uv_signal_start(&a->sigint, on_sigint, SIGINT);
    render_status(&a->r, "working… (Ctrl-C cancels)");
    int rc = acp_client_session_prompt(a->s, text, &stop);
    uv_signal_stop(&a->sigint);
    render_status_clear(&a->r);
    if (rc) return agent_error(a, "prompt failed");
    if (a->json) {
        render_result(&a->r, json_pack("{s:s, s:s}", "sessionId", acp_client_session_id(a->s),
                                       "stopReason", stop));
    } else {
        render_eol(&a->r);
        if (strcmp(stop, "end_turn") != 0) fprintf(stderr, "acp: turn ended: %s\n", stop);
    }
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

/* --- commands ---------------------------------------------------------------------------- */

static int cmd_info(app *a, int argc, char **argv)
{
    if (argc > 1)
        return strcmp(argv[1], "--help") == 0 ? print_help("info")
                                              : usage_error("unexpected '%s'", argv[1]);
    int rc = open_client(a);
    if (rc) return rc;
    json_t *init = acp_client_init_result(a->c);
    if (a->json) {
        render_result(&a->r, json_incref(init));
        return 0;
    }
    json_t *info = json_object_get(init, "agentInfo");
    printf("agent:    %s %s\n", or (json_string_value(json_object_get(info, "name")), "(unnamed)"),
           or (json_string_value(json_object_get(info, "version")), ""));
    printf("protocol: %lld\n",
           (long long)json_integer_value(json_object_get(init, "protocolVersion")));
    static const struct {
        acp_agent_cap cap;
        const char *name;
    } caps[] = {{ACP_CAP_LOAD_SESSION, "loadSession"},
                {ACP_CAP_RESUME, "sessionCapabilities.resume"},
                {ACP_CAP_CLOSE, "sessionCapabilities.close"},
                {ACP_CAP_LIST, "sessionCapabilities.list"},
                {ACP_CAP_DELETE, "sessionCapabilities.delete"},
                {ACP_CAP_ADDITIONAL_DIRS, "sessionCapabilities.additionalDirectories"},
                {ACP_CAP_MCP_HTTP, "mcpCapabilities.http"},
                {ACP_CAP_MCP_SSE, "mcpCapabilities.sse"},
                {ACP_CAP_PROMPT_IMAGE, "promptCapabilities.image"},
                {ACP_CAP_PROMPT_AUDIO, "promptCapabilities.audio"},
                {ACP_CAP_PROMPT_RESOURCE, "promptCapabilities.embeddedContext"}};
    printf("capabilities:\n");
    for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++)
        printf("  %-42s %s\n", caps[i].name, acp_client_supports(a->c, caps[i].cap) ? "yes" : "no");
    return 0;
}

static int cmd_new(app *a, int argc, char **argv)
{
    sess_args sa = {0};
    int rc = parse_sess(a, "new", argc, argv, &sa, false, false);
    if (!rc && sa.id) rc = usage_error("'new' takes no -s%s", "");
    if (!rc) rc = open_client(a);
    if (!rc) rc = start_session(a, &sa);
    if (!rc) {
        if (a->json) {
            json_t *res = json_deep_copy(acp_client_session_result(a->s));
            render_result(&a->r, res);
        } else {
            printf("%s\n", acp_client_session_id(a->s));
        }
    }
    sess_free(&sa);
    return rc;
}

static int cmd_prompt(app *a, int argc, char **argv)
{
    sess_args sa = {0};
    int rc = parse_sess(a, "prompt", argc, argv, &sa, false, true);
    char *text = NULL;
    if (!rc) {
        if (sa.nwords == 1 && strcmp(sa.words[0], "-") == 0) {
            text = read_stdin();
        } else {
            acp_buf b = {0};
            for (int i = 0; i < sa.nwords; i++)
                acp_buf_printf(&b, "%s%s", i ? " " : "", sa.words[i]);
            acp_buf_cstr(&b);
            text = b.data;
        }
    }
    if (!rc) rc = open_client(a);
    if (!rc) rc = start_session(a, &sa);
    if (!rc && !a->json && !sa.id && isatty(STDERR_FILENO))
        fprintf(stderr, "session %s\n", acp_client_session_id(a->s));
    if (!rc) rc = run_prompt(a, text ? text : "");
    free(text);
    sess_free(&sa);
    return rc;
}

static int by_updated_desc(const void *x, const void *y)
{
    json_t *const *a = x, *const *b = y;
    const char *ua = json_string_value(json_object_get(*a, "updatedAt"));
    const char *ub = json_string_value(json_object_get(*b, "updatedAt"));
    return strcmp(ub ? ub : "", ua ? ua : "");
}

static int cmd_sessions(app *a, int argc, char **argv)
{
    bool all = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--all-cwd") == 0)
            all = true;
        else if (strcmp(argv[i], "--help") == 0)
            return print_help("sessions");
        else
            return usage_error("unexpected '%s' for sessions", argv[i]);
    }
    int rc = open_client(a);
    if (rc) return rc;
    char here[PATH_MAX];
    const char *cwd = all ? NULL : a->cwd ? a->cwd : getcwd(here, sizeof here);
    json_t *all_s = json_array();
    char *cursor = NULL;
    for (int page = 0; page < 100000; page++) {
        json_t *res;
        if (acp_client_list(a->c, cwd, cursor, &res)) {
            free(cursor);
            json_decref(all_s);
            return agent_error(a, "cannot list sessions");
        }
        json_array_extend(all_s, json_object_get(res, "sessions"));
        free(cursor);
        const char *next = json_string_value(json_object_get(res, "nextCursor"));
        cursor = next ? strdup(next) : NULL;
        json_decref(res);
        if (!cursor) break;
    }
    free(cursor);
    size_t n = json_array_size(all_s);
    json_t **v = calloc(n + 1, sizeof *v);
    for (size_t i = 0; i < n; i++) v[i] = json_array_get(all_s, i);
    qsort(v, n, sizeof *v, by_updated_desc);
    if (a->json) {
        json_t *sorted = json_array();
        for (size_t i = 0; i < n; i++) json_array_append(sorted, v[i]);
        render_result(&a->r, json_pack("{s:o}", "sessions", sorted));
    } else if (n == 0) {
        printf("no sessions%s%s\n", cwd ? " in " : "", cwd ? cwd : "");
    } else {
        printf("%-38s  %-24s  %-30s  %s\n", "ID", "UPDATED", "TITLE", "CWD");
        for (size_t i = 0; i < n; i++) {
            const char *t = json_string_value(json_object_get(v[i], "title"));
            printf("%-38s  %-24s  %-30.30s  %s\n",
                   or (json_string_value(json_object_get(v[i], "sessionId")), "?"),
                   or (json_string_value(json_object_get(v[i], "updatedAt")), "-"), t ? t : "-",
                   or (json_string_value(json_object_get(v[i], "cwd")), ""));
        }
    }
    free(v);
    json_decref(all_s);
    return 0;
}

static int cmd_history(app *a, int argc, char **argv)
{
    sess_args sa = {0};
    int rc = parse_sess(a, "history", argc, argv, &sa, true, false);
    if (!rc) rc = open_client(a);
    if (!rc) {
        a->r.show_user = true;
        acp_session_opts so;
        sess_opts(a, &sa, &so);
        if (acp_client_session_load(a->c, sa.id, &so, &a->s))
            rc = agent_error(a, "cannot load the session");
        else if (a->json)
            render_result(&a->r, json_pack("{s:s}", "sessionId", sa.id));
        else
            render_eol(&a->r);
    }
    sess_free(&sa);
    return rc;
}

/* resume, close and delete */
static int cmd_id(app *a, const char *cmd, int argc, char **argv)
{
    sess_args sa = {0};
    int rc = parse_sess(a, cmd, argc, argv, &sa, true, false);
    if (!rc) rc = open_client(a);
    const char *done = NULL;
    if (!rc && strcmp(cmd, "resume") == 0) {
        acp_session_opts so;
        sess_opts(a, &sa, &so);
        if (acp_client_session_resume(a->c, sa.id, &so, &a->s))
            rc = agent_error(a, "cannot resume the session");
        done = "resumed";
    } else if (!rc && strcmp(cmd, "close") == 0) {
        /* A fresh agent process has no active sessions: make it active, then close it. */
        if (!acp_client_supports(a->c, ACP_CAP_CLOSE)) {
            fprintf(stderr, "acp: agent does not advertise sessionCapabilities.close\n");
            rc = EXIT_AGENT;
        } else if (!(rc = attach(a, &sa))) {
            if (acp_client_session_close(a->s)) rc = agent_error(a, "cannot close the session");
            a->s = NULL;
        }
        done = "closed";
    } else if (!rc) {
        if (acp_client_delete(a->c, sa.id)) rc = agent_error(a, "cannot delete the session");
        done = "deleted";
    }
    if (!rc) {
        if (a->json) {
            json_t *res = a->s ? json_deep_copy(acp_client_session_result(a->s)) : json_object();
            if (!json_is_object(res)) {
                json_decref(res);
                res = json_object();
            }
            json_object_set_new(res, "sessionId", json_string(sa.id));
            render_result(&a->r, res);
        } else {
            printf("%s %s\n", done, sa.id);
        }
    }
    sess_free(&sa);
    return rc;
}

static int cmd_chat(app *a, int argc, char **argv)
{
    sess_args sa = {0};
    int rc = parse_sess(a, "chat", argc, argv, &sa, false, false);
    if (!rc) rc = open_client(a);
    if (!rc) rc = start_session(a, &sa);
    bool tty = isatty(STDIN_FILENO);
    if (!rc && tty)
        fprintf(stderr, "session %s; Ctrl-C cancels a reply, Ctrl-D exits\n",
                acp_client_session_id(a->s));
    char *line = NULL;
    size_t cap = 0;
    while (!rc) {
        if (tty) {
            fputs("> ", stderr);
            fflush(stderr);
        }
        /* The default SIGINT disposition while reading: Ctrl-C at the prompt exits. */
        ssize_t n = getline(&line, &cap, stdin);
        if (n < 0) break;
        if (n && line[n - 1] == '\n') line[--n] = 0;
        if (!n) continue;
        rc = run_prompt(a, line);
    }
    free(line);
    sess_free(&sa);
    return rc;
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    app a = {0};
    enum { O_AGENT = 256, O_JSON, O_CWD, O_HELP, O_VERSION };
    static const struct option opts[] = {
        {"agent", required_argument, NULL, O_AGENT}, {"json", no_argument, NULL, O_JSON},
        {"cwd", required_argument, NULL, O_CWD},     {"help", no_argument, NULL, O_HELP},
        {"version", no_argument, NULL, O_VERSION},   {NULL, 0, NULL, 0}};
    int ch;
    char *cwd_abs = NULL;
    opterr = 0; /* our own one-line messages */
    while ((ch = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
        switch (ch) {
        case O_AGENT:
            a.agent = optarg;
            break;
        case O_JSON:
            a.json = true;
            break;
        case O_CWD:
            free(cwd_abs);
            if (!(cwd_abs = realpath(optarg, NULL)))
                return usage_error("--cwd: no such directory: '%s'", optarg);
            a.cwd = cwd_abs;
            break;
        case 'h':
        case O_HELP:
            free(cwd_abs);
            fputs(usage_main, stdout);
            return 0;
        case O_VERSION:
            free(cwd_abs);
            printf("acp %s (ACP protocol %d)\n", ACP_VERSION_STRING, ACP_PROTOCOL_VERSION);
            return 0;
        default:
            free(cwd_abs);
            return usage_error("unknown option %s (command options go after the COMMAND)",
                               argv[optind - 1]);
        }
    }
    if (optind >= argc) {
        free(cwd_abs);
        return usage_error("a COMMAND is required%s", "");
    }
    /* stdout is often a pipe to a script: big buffered writes, flushed at line ends we
     * choose (render_eol, results). */
    setvbuf(stdout, NULL, _IOFBF, 1 << 20);
    render_init(&a.r, stdout, a.json);
    const char *cmd = argv[optind];
    int cargc = argc - optind;
    char **cargv = argv + optind;
    int rc;
    if (strcmp(cmd, "info") == 0)
        rc = cmd_info(&a, cargc, cargv);
    else if (strcmp(cmd, "new") == 0)
        rc = cmd_new(&a, cargc, cargv);
    else if (strcmp(cmd, "prompt") == 0)
        rc = cmd_prompt(&a, cargc, cargv);
    else if (strcmp(cmd, "sessions") == 0)
        rc = cmd_sessions(&a, cargc, cargv);
    else if (strcmp(cmd, "history") == 0)
        rc = cmd_history(&a, cargc, cargv);
    else if (strcmp(cmd, "resume") == 0 || strcmp(cmd, "close") == 0 || strcmp(cmd, "delete") == 0)
        rc = cmd_id(&a, cmd, cargc, cargv);
    else if (strcmp(cmd, "chat") == 0)
        rc = cmd_chat(&a, cargc, cargv);
    else if (strcmp(cmd, "help") == 0)
        rc = print_help(cargc > 1 ? cargv[1] : "");
    else
        rc = usage_error("unknown command '%s'", cmd);
    if (rc == HELP_SHOWN) rc = 0;
    a.finished = true;
    fflush(stdout);
    if (a.s) acp_client_session_free(a.s);
    close_client(&a);
    render_free(&a.r);
    free(cwd_abs);
    return rc;
}
