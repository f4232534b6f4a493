/* SPDX-License-Identifier: Apache-2.0 */
/* What the files of `acp` share: the parsed command line, the client, the loop, and the exit
 * statuses. Everything protocol-specific is libacp's (include/acp/client.h). */
#ifndef ACP_TOOL_APP_H
#define ACP_TOOL_APP_H

#include <stdbool.h>
#include <uv.h>

#include "acp/client.h"
#include "acp/mcp.h"
#include "acp/rt.h"
#include "tools/acp/render.h"

/* Exit statuses, documented in --help and acp(1). */
enum {
    EXIT_OK = 0,
    EXIT_AGENT = 1, /* the agent answered an error, could not start, or broke the protocol */
    EXIT_USAGE = 2, /* a bad command line */
    EXIT_REFUSED =
        3,         /* a capability is missing, sign-in required or refused, or a request denied */
    EXIT_GONE = 4, /* the agent exited (or closed the connection) */
    EXIT_TIMEOUT = 5,     /* a call outlived --timeout */
    EXIT_CANCELLED = 130, /* the turn was cancelled (Ctrl-C, or the agent's stop reason) */
};

#define MAX_DIRS 64

typedef struct asker asker;
typedef struct chat chat;

typedef struct app {
    /* global options */
    const char *agent;   /* --agent: a command line, unix:PATH, or a URL */
    char *token;         /* --token or ACP_TOKEN, for a URL agent; scrubbed at exit */
    const char *ca_file; /* --cacert */
    bool http2;          /* --http2 */
    const char *cwd;     /* --cwd, absolute; NULL: the current directory */
    bool json, fs, terminal;
    int color;        /* --color: 1 always, 0 never, -1 auto (the default) */
    int perm;         /* 1 --yes, -1 --deny, 0 ask on the terminal (deny without one) */
    const char *auth; /* --auth METHOD */
    unsigned timeout_ms;
    const char *agent_log;   /* --agent-log: the agent's stderr, raw, appended here */
    bool quiet;              /* --quiet: the agent's stderr dropped */
    size_t max_read;         /* --max-read: the most one fs read returns; 0: the library's 64 MiB */
    const char *only;        /* check --only PATTERN */
    bool no_prompt;          /* check --no-prompt */
    int log_level;           /* --log-level (enum log_level, tools/common/wiretrace.h) */
    struct serve_cli *serve; /* acp serve's server options (tools/common/serve_cli.h) */
    const char *trace_out;   /* acp trace --out FILE */
    int dashdash;            /* args[dashdash...] came after "--"; -1: no "--" */
    const char *provider;    /* --provider ID=URL (unstable) */
    char **headers;          /* --header 'NAME: VALUE', NULL-terminated; secrets, wiped at exit */
    size_t nheaders;
    const char *api_type; /* --api-type; NULL: openai */
    const char *registry; /* --registry FILE|URL */
    char *agent_cmd;      /* --agent ID of the registry: the command that runs it (owned) */
    /* command options */
    const char *sid; /* -s */
    bool sid_given;
    const char *dirs[MAX_DIRS + 1];
    size_t ndirs;
    char *owned[MAX_DIRS]; /* dirs made absolute here */
    size_t nowned;
    json_t *mcp; /* mcpServers */
    bool all_cwd;
    const char *archived;  /* sessions --archived: "include", "only" (unstable) */
    json_t *system_prompt; /* --system-prompt FILE: the SystemPrompt object (unstable) */
    char **args;           /* the command's positional arguments */
    int nargs;

    uv_loop_t loop;
    bool loop_ready;
    acp_reaper *reaper; /* orphans of terminal commands come back to us; NULL if refused */
    render r;
    acp_client *c;
    acp_client_session *s;
    uv_signal_t sigs[3];  /* SIGINT, SIGTERM, SIGHUP */
    uv_timer_t wait;      /* the "waiting for the agent" line */
    uint64_t quiet_since; /* loop time of the last thing heard from the agent */
    bool prompting;       /* a session/prompt is in flight on s */
    bool turned;          /* a session/prompt was sent: the agent may be committing it */
    bool settling;        /* waiting for the answer to a cancelled turn's prompt */
    bool settled;         /* it came (or something else the library logged) */
    int interrupts;       /* Ctrl-C during this turn */
    int denied;           /* requests of the agent's refused (permissions, writes, commands) */
    bool finished;        /* the result is printed: later updates are not shown */
    json_t *approved;     /* paths the user allowed through a permission request: {path: always} */
    json_t *commands;     /* available_commands_update names, for chat's completion */
    asker *ask;
    chat *chat;
    /* --json's error line: the last thing said on stderr, and the agent's JSON-RPC code */
    char said[1024];
    int err_code;
    int agent_log_fd;      /* --agent-log's file, else -1 */
    acp_buf agent_line;    /* the agent's stderr since its last line end */
    uv_timer_t agent_idle; /* shows that much once the agent has said nothing more for a while */
    /* --mcp-local (mcplocal.c): the stdio servers acp runs and relays over ACP */
    json_t *mcp_local;    /* their McpServerStdio entries */
    acp_mcp_set *mcp_set; /* running, once the session is being set up */
    void *relays;         /* one per server */
    size_t nrelays;
    bool mcp_stopping;
} app;

/* mcplocal.c: --mcp-local. start: runs the servers and declares them in a->mcp (before a
 * session request; 0 or an exit status, said); stop: stops them (before the client goes). */
int mcplocal_start(app *a);
void mcplocal_stop(app *a);
/* conn.c: the connection, sign-in, sessions, failures */
int app_open(app *a);
bool app_spawns(const app *a);         /* --agent is a command line (not unix:PATH, not a URL) */
bool app_remote(const app *a);         /* --agent is a ws://, wss://, http:// or https:// URL */
char *app_agent_command(const app *a); /* --agent, or acp-agent next to acp (malloc'd) */
void app_close(app *a);
/* authenticate with method; a refusal is said and is EXIT_REFUSED. */
int app_authenticate(app *a, const char *method);
/* Signs in when asked to (--auth) or when an env_var method's variables (an api-key agent
 * method's provider variable) are all set. */
int app_sign_in(app *a);
/* A new session, or -s ID continued (resume, else load; resume answered -32601 falls back). */
int app_session(app *a, const char *verb);
void app_session_opts(app *a, acp_session_opts *so);
/* Prints "acp: WHAT: reason" (what NULL: the reason alone) for a failed call, and returns
 * its exit status. */
int app_fail(app *a, const char *what, int rc);
/* One session/prompt turn on a->s with text: its exit status. */
int app_turn(app *a, const char *text);
/* Status for a turn that ended with stop (prints the stop reason when it is not end_turn). */
int app_turn_status(app *a, const char *stop);
/* The "waiting for the agent" line: a call begins, something arrived, the call ended. */
void app_busy(app *a, bool on);
void app_heard(app *a);
/* Exits at once with status, the agent's process group stopped (TERM, then KILL). */
void app_exit_now(app *a, int status) __attribute__((noreturn));
/* --json: the failure's line, {"error": {code, message, data, exitStatus}}, the last on stdout. */
void app_json_error(app *a, int status);
/* stderr line that does not tear the output: "acp: ...". */
void app_note(app *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* serve.c, trace.c: the commands that run an agent command line (args after "--") */
int cmd_serve(app *a);
int cmd_trace(app *a);

/* agent_stderr.c: the agent's stderr, shown made safe line by line, logged raw, or dropped */
/* With the loop: 0, or EXIT_USAGE when --agent-log cannot be opened (said). */
int agent_stderr_open(app *a);
void agent_stderr(acp_client *c, const char *buf, size_t n, void *user);
void agent_stderr_close(app *a); /* shows what is left of a line; closes the log */

/* ask.c: permission requests, writes and commands; questions on the terminal */
void ask_init(app *a);
void ask_free(app *a);
void ask_cancel_all(app *a); /* the turn was cancelled: drop pending questions */
bool ask_pending(app *a);
void on_permission(acp_client *c, acp_client_session *s, acp_client_perm *p, json_t *params,
                   void *user);
void on_ask(acp_client *c, acp_client_session *s, acp_client_ask *k, const char *method,
            json_t *params, void *user);

/* auth.c */
int cmd_auth(app *a);
int cmd_logout(app *a);
/* " (methods: id (type), ...; sign in with 'acp auth METHOD' or --auth METHOD)" for errors. */
void auth_hint(app *a, char *out, size_t n);
/* An env_var method whose required variables are all set and non-empty, or an agent method
 * with _meta["api-key"] whose provider's conventional variable is: true, with their names in
 * vars ("A, B"). */
bool auth_env_ready(json_t *method, char *vars, size_t n);
/* A method's type as 'acp auth' shows it: `type`, else _meta.type, else "terminal" for a
 * _meta["terminal-auth"] login, else "agent". */
const char *auth_type(json_t *method);

/* check.c: acp check, conformance of any agent */
int cmd_check(app *a);
/* providers.c (unstable) */
int cmd_providers(app *a);
int cmd_provider(app *a);
/* After initialize: --provider ID=URL applied (providers/set with --header): 0 or the exit
 * status of its failure (said). */
int app_provider_option(app *a);
int app_provider_apply(app *a, const char *id, const char *url);

/* registry.c: the ACP Registry */
int cmd_agents(app *a);
/* --agent ID of a registry agent (a single word that names no program in PATH): rewritten to
 * the command that runs it (npx or the unpacked binary), its env set in ours. 0 (also when
 * --agent is something else), or the exit status of a failure (said). */
int registry_resolve(app *a);

/* settings.c */
int cmd_modes(app *a);
int cmd_mode(app *a);
int cmd_config(app *a);

/* chat.c */
int cmd_chat(app *a);
bool chat_interrupt(app *a); /* Ctrl-C while chat edits a line: handled */
void chat_restore(app *a);   /* the terminal as it was, before an abrupt exit */
/* A question of the agent's between turns: the line editor steps aside, then comes back. */
void chat_pause(app *a, bool pause);
void chat_output_begin(app *a);
void chat_output_end(app *a);

#endif
