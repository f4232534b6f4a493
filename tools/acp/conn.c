/* SPDX-License-Identifier: Apache-2.0 */
/* The agent connection as `acp` uses it: opening it (spawned, or a Unix socket), signing in,
 * starting or continuing the session, and turning a failed call into one line on stderr and
 * the documented exit status. */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include "acp/version.h"
#include "tools/acp/app.h"
#include "tools/acp/safe.h"
#include "tools/common/wiretrace.h"

#define WAIT_MS   3000 /* quiet this long during a call: say we are waiting */
#define SETTLE_MS 2000 /* the agent's moment to answer the cancel of a turn given up on */
#define END_MS    100  /* an agent done with (no turn) is ended after this */

/* Notes carry the agent's words (its error messages and data, titles, stop reasons, the
 * library's messages quoting them): the whole line is made safe, and stays one line. */
void app_note(app *a, const char *fmt, ...)
{
    chat_output_begin(a);
    render_break(&a->r);
    va_list ap;
    va_start(ap, fmt);
    char *line = NULL;
    int n = vasprintf(&line, fmt, ap);
    va_end(ap);
    fputs("acp: ", stderr);
    if (n >= 0)
        safe_write(stderr, line, (size_t)n, SAFE_LINE);
    else
        fputs("(out of memory)", stderr);
    fputc('\n', stderr);
    snprintf(a->said, sizeof a->said, "%s", n >= 0 ? line : "out of memory");
    free(line);
    chat_output_end(a);
}

void app_json_error(app *a, int status)
{
    static const struct {
        int status;
        const char *what;
    } dflt[] = {{EXIT_AGENT, "the agent answered an error"},
                {EXIT_USAGE, "a bad command line"},
                {EXIT_REFUSED, "refused or denied"},
                {EXIT_GONE, "the agent exited"},
                {EXIT_TIMEOUT, "timed out"},
                {EXIT_CANCELLED, "the turn was cancelled"}};
    const char *msg = a->said;
    for (size_t i = 0; !*msg && i < sizeof dflt / sizeof dflt[0]; i++)
        if (dflt[i].status == status) msg = dflt[i].what;
    json_t *e = json_pack("{s:{s:o, s:s, s:n, s:i}}", "error", "code",
                          a->err_code ? json_integer(a->err_code) : json_null(), "message",
                          *msg ? msg : "failed", "data", "exitStatus", status);
    char *line = e ? json_dumps(e, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
    if (line) printf("%s\n", line);
    fflush(stdout);
    free(line);
    json_decref(e);
}

/* --- the waiting line ------------------------------------------------------------------ */

static void wait_tick(uv_timer_t *t)
{
    app *a = t->data;
    uint64_t now = uv_now(&a->loop);
    if (now - a->quiet_since < WAIT_MS || ask_pending(a) || !a->r.at_bol) {
        render_status_clear(&a->r);
        return;
    }
    char line[128];
    snprintf(line, sizeof line, "waiting for the agent… %llu s (Ctrl-C cancels)",
             (unsigned long long)((now - a->quiet_since) / 1000));
    render_status(&a->r, line);
}

void app_busy(app *a, bool on)
{
    if (on) {
        uv_update_time(&a->loop);
        a->quiet_since = uv_now(&a->loop);
        uv_timer_start(&a->wait, wait_tick, 1000, 1000);
    } else {
        uv_timer_stop(&a->wait);
        render_status_clear(&a->r);
    }
}

void app_heard(app *a)
{
    a->quiet_since = uv_now(&a->loop);
}

/* --- callbacks ------------------------------------------------------------------------- */

/* (unstable) How a subagent session is called: the title its parent gave it, else its id. */
static const char *subagent_label(acp_client_session *s)
{
    if (!s) return NULL;
    const char *t = json_string_value(json_object_get(acp_client_session_subagent(s), "title"));
    return t && *t ? t : acp_client_session_id(s);
}

/* The child a subagent_update on s is about (the library made or updated its handle). */
static acp_client_session *subagent_of(acp_client_session *s, const acp_update *u)
{
    acp_span id;
    if (u->kind != ACP_UPDATE_SUBAGENT || !acp_json_member(u->update, "sessionId", &id))
        return NULL;
    for (size_t i = 0, n = acp_client_session_child_count(s); i < n; i++) {
        acp_client_session *k = acp_client_session_child(s, i);
        if (acp_json_str_eq(id, acp_client_session_id(k))) return k;
    }
    return NULL;
}

static void on_update(acp_client *c, acp_client_session *s, const acp_update *u, void *user)
{
    app *a = user;
    app_heard(a);
    /* Parsed once, only when something reads it: text output, or chat's command list. */
    bool commands = a->commands && u->kind == ACP_UPDATE_AVAILABLE_COMMANDS;
    acp_update_view v = ACP_UPDATE_VIEW_INIT;
    int vrc =
        (!a->r.json || commands) ? acp_update_view_parse_ext(u, ACP_UPDATE_VIEW_LENIENT, &v) : 1;
    bool parsed = vrc == 0;
    if (vrc < 0 && vrc != ACP_ENOMEM && !a->finished && !(a->r.skip_replay && u->replay))
        app_note(a, "dropped a session/update the schema does not allow (%s): %s",
                 acp_update_kind_name(u->kind), acp_error_last()->message);
    if (parsed && a->commands && v.kind == ACP_UPDATE_AVAILABLE_COMMANDS) {
        json_array_clear(a->commands);
        for (size_t i = 0; i < v.commands.ncommands; i++)
            json_array_append_new(a->commands, json_string(v.commands.commands[i].name));
    }
    if (!a->finished) { /* the result line stays the last one */
        chat_output_begin(a);
        acp_client_session *child = subagent_of(s, u);
        a->r.label = subagent_label(acp_client_session_parent(s) ? s : NULL);
        render_update(&a->r, u, parsed ? &v : NULL);
        a->r.label = NULL;
        if (child && !(a->r.skip_replay && u->replay))
            render_subagent(&a->r, subagent_label(child), acp_client_session_subagent(child));
        chat_output_end(a);
    }
    acp_update_view_free(&v);
}

static void on_log(acp_client *c, const char *message, void *user)
{
    app *a = user;
    if (a->settling) { /* the late answer to a prompt given up on, or its like: expected */
        a->settled = true;
        return;
    }
    if (a->log_level >= LOG_WARN) app_note(a, "%s", message); /* the library's trouble */
}

/* Leaving now (a second Ctrl-C, SIGTERM, SIGHUP): the agent runs in its own session and
 * process group, where no terminal signal reaches it, and some agents ignore the end of their
 * input while they retry (gemini-cli): stop its group ourselves, then go. */
void app_exit_now(app *a, int status)
{
    chat_restore(a);
    render_break(&a->r);
    fflush(stdout);
    int pid = a->c ? acp_client_agent_pid(a->c) : 0;
    if (pid > 0 && kill(-pid, SIGTERM) == 0) {
        for (int i = 0; i < 50 && waitpid(pid, NULL, WNOHANG) != pid; i++) usleep(20000);
        kill(-pid, SIGKILL);
    }
    _exit(status);
}

static void on_signal(uv_signal_t *h, int signum)
{
    app *a = h->data;
    if (signum != SIGINT) app_exit_now(a, 128 + signum);
    if (chat_interrupt(a)) return;
    if (a->prompting && a->s && a->interrupts++ == 0) {
        acp_client_session_cancel(a->s);
        ask_cancel_all(a);
        app_note(a, "cancelling (Ctrl-C again to exit)");
        return;
    }
    app_exit_now(a, EXIT_CANCELLED); /* nothing to cancel politely */
}

/* --- opening --------------------------------------------------------------------------- */

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

char *app_agent_command(const app *a)
{
    return a->agent ? strdup(a->agent) : default_agent();
}

bool app_remote(const app *a)
{
    static const char *const schemes[] = {"ws://", "wss://", "http://", "https://"};
    for (size_t i = 0; a->agent && i < 4; i++)
        if (!strncasecmp(a->agent, schemes[i], strlen(schemes[i]))) return true;
    return false;
}

bool app_spawns(const app *a)
{
    return !a->agent || (strncmp(a->agent, "unix:", 5) != 0 && !app_remote(a));
}

static int fail_with(app *a, const char *what, int rc, const char *sentence);

typedef struct waiter {
    bool done;
    int status;
    char errmsg[1024]; /* the reply's: an answer's failure is not the thread's last error */
} waiter;

static void started(acp_client *c, const acp_client_reply *r, void *user)
{
    waiter *w = user;
    w->done = true;
    w->status = r->status;
    snprintf(w->errmsg, sizeof w->errmsg, "%s", r->errmsg);
}

int app_open(app *a)
{
    uv_loop_init(&a->loop);
    a->loop_ready = true;
    acp_reaper_start(&a->loop, &a->reaper);
    static const int signums[] = {SIGINT, SIGTERM, SIGHUP};
    for (int i = 0; i < 3; i++) {
        uv_signal_init(&a->loop, &a->sigs[i]);
        a->sigs[i].data = a;
        uv_signal_start(&a->sigs[i], on_signal, signums[i]);
    }
    uv_timer_init(&a->loop, &a->wait);
    a->wait.data = a;
    ask_init(a);
    int rc = agent_stderr_open(a);
    if (rc) return rc;

    bool spawn = app_spawns(a);
    char *def = a->agent ? NULL : default_agent();
    json_t *meta = spawn ? json_pack("{s:b}", "terminal-auth", 1) : NULL;
    bool remote = app_remote(a);
    acp_client_opts o = {
        .struct_size = sizeof(acp_client_opts),
        .transport = spawn    ? ACP_CLIENT_SPAWN
                     : remote ? ACP_CLIENT_URL
                              : ACP_CLIENT_UNIX,
        .loop = &a->loop,
        .command = spawn ? (a->agent ? a->agent : def) : NULL,
        .path = spawn || remote ? NULL : a->agent + 5,
        .url = remote ? a->agent : NULL,
        .token = a->token,
        .ca_file = a->ca_file,
        .http2 = a->http2,
        .client_name = "acp",
        .client_title = "acp (libacp command-line client)",
        .fs_read = a->fs,
        .fs_write = a->fs,
        .max_read = a->max_read,
        .terminal = a->terminal,
        .notices = true,
        .config_boolean = true,
        .subagents = true, /* (unstable) children are shown, labelled */
        /* a terminal sign-in runs the agent's own command line: only when we have one; the
         * _meta flag is the older convention some agents still key on (opencode) */
        .auth_terminal = spawn,
        .capabilities_meta = meta,
        .init_timeout_ms = a->timeout_ms,
        .call_timeout_ms = a->timeout_ms,
        .on_update = on_update,
        .on_permission = on_permission,
        .on_ask = on_ask,
        .on_log = on_log,
        .on_stderr = spawn ? agent_stderr : NULL,
        .user = a,
    };
    waiter w = {0};
    app_busy(a, true);
    rc = acp_client_start(&o, started, &w, &a->c);
    free(def);
    json_decref(meta); /* copied into initialize */
    if (rc) {
        app_busy(a, false);
        app_note(a, "cannot %s the agent: %s; check --agent", spawn ? "start" : "connect to",
                 acp_error_last()->message);
        return EXIT_AGENT;
    }
    /* The waiting line stays armed while the command runs its calls; chat turns it off
     * while a line is edited, questions while they wait for an answer. */
    while (!w.done) uv_run(&a->loop, UV_RUN_ONCE);
    /* the library's message names the step */
    return w.status ? fail_with(a, NULL, w.status, w.errmsg) : app_provider_option(a);
}

static void end_agent(uv_timer_t *t)
{
    kill(-*(int *)t->data, SIGTERM);
}

void app_close(app *a)
{
    if (!a->loop_ready) return;
    app_busy(a, false);
    ask_free(a);
    if (a->s) acp_client_session_free(a->s);
    a->s = NULL;
    int pid = a->c ? acp_client_agent_pid(a->c) : 0;
    mcplocal_stop(a);      /* its servers go with the session, before the client that relays them */
    acp_client_free(a->c); /* on our loop: its handles close below, the agent is stopped */
    a->c = NULL;
    for (int i = 0; i < 3; i++) uv_close((uv_handle_t *)&a->sigs[i], NULL);
    uv_close((uv_handle_t *)&a->wait, NULL);
    /* The library gives the agent 2 s to leave after the end of its input: a turn may still be
     * committing. Without a turn there is nothing to commit, and agents that ignore the end of
     * their input (codex-acp) would cost every command those 2 s: their group is ended once
     * the usual prompt exit has had its moment. Unreferenced: it waits only while the agent
     * keeps the loop alive. */
    uv_timer_t end;
    uv_timer_init(&a->loop, &end);
    end.data = &pid;
    if (pid > 0 && !a->turned) {
        uv_timer_start(&end, end_agent, END_MS, 0);
        uv_unref((uv_handle_t *)&end);
    }
    uv_close((uv_handle_t *)&a->agent_idle, NULL);
    uv_run(&a->loop, UV_RUN_DEFAULT);
    uv_close((uv_handle_t *)&end, NULL);
    acp_reaper_close(a->reaper, NULL, NULL); /* what terminal commands left: killed */
    a->reaper = NULL;
    uv_run(&a->loop, UV_RUN_DEFAULT);
    uv_loop_close(&a->loop);
    a->loop_ready = false;
    agent_stderr_close(a); /* after the loop: all the agent wrote has arrived */
}

/* --- failures -------------------------------------------------------------------------- */

static void waited(uv_timer_t *t)
{
    *(bool *)t->data = true;
}

/* How the agent ended; waits up to 2 s for it to be reaped (its output may close first). */
static bool agent_ended(app *a, int64_t *code, int *sig)
{
    if (!app_spawns(a)) return false;
    bool late = false;
    uv_timer_t t;
    uv_timer_init(&a->loop, &t);
    t.data = &late;
    uv_timer_start(&t, waited, 2000, 0);
    while (!acp_client_agent_status(a->c, code, sig) && !late) uv_run(&a->loop, UV_RUN_ONCE);
    uv_close((uv_handle_t *)&t, NULL);
    uv_run(&a->loop, UV_RUN_NOWAIT);
    return acp_client_agent_status(a->c, code, sig);
}

int app_fail(app *a, const char *what, int rc)
{
    /* The library's sentence for the call that just failed with rc (a stale one of another
     * failure has another status). */
    const acp_error *e = acp_error_last();
    return fail_with(a, what, rc, a->c && e->status == rc ? e->message : "");
}

static int fail_with(app *a, const char *what, int rc, const char *sentence)
{
    a->err_code = rc == ACP_EPROTO && a->c ? acp_client_errcode(a->c) : 0;
    /* Copied: waiting for the agent below runs the loop, where other calls may fail. */
    char said[1024];
    snprintf(said, sizeof said, "%s", sentence);
    const char *msg = *said ? said : acp_strerror(rc);
    int64_t code = 0;
    int sig = 0;
    char hint[512] = "", why[1200];
    int status;
    switch (rc) {
    case ACP_ECLOSED:
        if (a->c && agent_ended(a, &code, &sig)) {
            if (sig)
                snprintf(why, sizeof why,
                         "the agent was killed by signal %d (%s); see its messages above", sig,
                         strsignal(sig));
            else
                snprintf(why, sizeof why,
                         "the agent exited with status %lld; see its messages "
                         "above",
                         (long long)code);
            msg = why;
        } else if (!app_spawns(a) && !app_remote(a)) {
            msg = "the agent closed the connection";
        }
        status = EXIT_GONE;
        break;
    case ACP_ETIMEDOUT:
        snprintf(why, sizeof why, "%s (--timeout %g s)", msg,
                 a->timeout_ms ? a->timeout_ms / 1000.0 : 30.0);
        msg = why;
        status = EXIT_TIMEOUT;
        break;
    case ACP_EACCES: /* a remote agent refused our bearer token (HTTP 401 or 403) */
        if (app_remote(a))
            snprintf(hint, sizeof hint, "; pass --token TOKEN or set ACP_TOKEN%s",
                     a->token ? " (the one given was refused)" : "");
        status = EXIT_REFUSED;
        break;
    case ACP_ENOTSUP:
        status = EXIT_REFUSED;
        break;
    case ACP_EINVAL:
        status = EXIT_USAGE;
        break;
    case ACP_ECANCELLED:
        status = EXIT_CANCELLED;
        break;
    case ACP_EPROTO:
        if (acp_client_errcode(a->c) == ACP_RPC_AUTH_REQUIRED) {
            auth_hint(a, hint, sizeof hint);
            status = EXIT_REFUSED;
            break;
        }
        /* fall through */
    default:
        status = EXIT_AGENT;
    }
    /* "...required.; sign in": the agent's own stop gives way to the hint's. */
    size_t len = strlen(msg);
    int keep = (int)len - (*hint && len > 1 && msg[len - 1] == '.' && msg[len - 2] != '.');
    if (what)
        app_note(a, "%s: %.*s%s", what, keep, msg, hint);
    else
        app_note(a, "%.*s%s", keep, msg, hint);
    return status;
}

int app_turn_status(app *a, const char *stop)
{
    bool cancelled = !strcmp(stop, "cancelled");
    /* Some agents answer end_turn to a cancel (opencode): the turn was cancelled all the same. */
    if (a->interrupts && !cancelled)
        app_note(a, "turn ended: %s, after the cancel", stop);
    else if (strcmp(stop, "end_turn") != 0 && !a->json)
        app_note(a, "turn ended: %s", stop);
    if (cancelled || a->interrupts) return EXIT_CANCELLED;
    return a->denied ? EXIT_REFUSED : EXIT_OK;
}

/* A turn given up on (--timeout) was cancelled: the agent answers the cancel, then writes
 * whatever else it has. Gone at once, we would close the pipe under that answer (agents die
 * of EPIPE: claude-agent-acp): wait for it (the library logs it as an answer to an unknown
 * call), at most SETTLE_MS, showing nothing more. */
static void settle(app *a)
{
    bool late = false, finished = a->finished;
    uv_timer_t t;
    uv_timer_init(&a->loop, &t);
    t.data = &late;
    uv_timer_start(&t, waited, SETTLE_MS, 0);
    a->settling = a->finished = true;
    a->settled = false;
    while (!a->settled && !late && !acp_client_agent_gone(a->c)) uv_run(&a->loop, UV_RUN_ONCE);
    a->settling = false;
    a->finished = finished;
    uv_close((uv_handle_t *)&t, NULL);
    uv_run(&a->loop, UV_RUN_NOWAIT);
}

/* One turn: streams the reply, then prints the result (--json) and says how it ended. */
int app_turn(app *a, const char *text)
{
    const char *stop = NULL;
    a->interrupts = 0;
    a->denied = 0;
    a->prompting = a->turned = true;
    app_busy(a, true);
    int rc = acp_client_session_prompt(a->s, text, &stop);
    a->prompting = false;
    app_busy(a, false);
    render_break(&a->r);
    if (rc == ACP_ETIMEDOUT) {
        rc = app_fail(a, "prompt failed", rc);
        settle(a);
        return rc;
    }
    if (rc) return app_fail(a, "prompt failed", rc);
    if (a->json)
        render_result(&a->r, json_pack("{s:s, s:s}", "sessionId", acp_client_session_id(a->s),
                                       "stopReason", stop));
    return app_turn_status(a, stop);
}

/* --- sessions -------------------------------------------------------------------------- */

void app_session_opts(app *a, acp_session_opts *so)
{
    a->dirs[a->ndirs] = NULL;
    *so = (acp_session_opts){.struct_size = sizeof(acp_session_opts),
                             .cwd = a->cwd,
                             .add_dirs = a->ndirs ? a->dirs : NULL,
                             .mcp_servers = a->mcp,
                             .system_prompt = a->system_prompt};
}

/* Continues session a->sid: resume when advertised (a -32601 answer falls back to load when
 * loadSession is advertised: some agents advertise resume without implementing it), else
 * load without showing the replay. */
static int attach(app *a, const char *verb)
{
    char what[300];
    snprintf(what, sizeof what, "cannot %s session %s", verb, a->sid);
    acp_session_opts so;
    app_session_opts(a, &so);
    bool resume = acp_client_supports(a->c, ACP_CAP_RESUME);
    bool load = acp_client_supports(a->c, ACP_CAP_LOAD_SESSION);
    if (!resume && !load) {
        app_note(a,
                 "%s: the agent advertises neither sessionCapabilities.resume nor "
                 "loadSession; run without -s",
                 what);
        return EXIT_REFUSED;
    }
    int rc = 0;
    if (resume) {
        rc = acp_client_session_resume(a->c, a->sid, &so, &a->s);
        if (rc == ACP_EPROTO && acp_client_errcode(a->c) == ACP_RPC_METHOD_NOT_FOUND && load) {
            app_note(a, "the agent advertises session/resume but answered -32601 (method not "
                        "found); loading the session instead");
            resume = false;
        }
    }
    if (!resume) {
        a->r.skip_replay = true;
        rc = acp_client_session_load(a->c, a->sid, &so, &a->s);
        a->r.skip_replay = false;
    }
    return rc ? app_fail(a, *a->sid ? what : NULL, rc) : 0; /* "" has its own message */
}

int app_session(app *a, const char *verb)
{
    int rc = app_sign_in(a);
    if (!rc) rc = mcplocal_start(a);
    if (rc) return rc;
    if (a->sid) {
        rc = attach(a, verb);
    } else {
        acp_session_opts so;
        app_session_opts(a, &so);
        rc = acp_client_session_new(a->c, &so, &a->s);
        if (rc) rc = app_fail(a, "cannot start a session", rc);
    }
    if (!rc) render_session(&a->r, a->s);
    return rc;
}

/* --- signing in ------------------------------------------------------------------------ */

int app_authenticate(app *a, const char *method)
{
    int rc = acp_client_authenticate(a->c, method);
    if (!rc) return 0;
    char what[300];
    snprintf(what, sizeof what, "cannot sign in with '%s'", method);
    rc = app_fail(a, what, rc);
    return rc == EXIT_AGENT ? EXIT_REFUSED : rc; /* the agent said no */
}

int app_sign_in(app *a)
{
    if (a->auth) return app_authenticate(a, a->auth);
    /* An env_var method (or an api-key agent method) reads its variables from the agent's
     * environment, which a spawned agent inherits from ours: when they are all set, sign in
     * before anything else. */
    if (!app_spawns(a)) return 0;
    size_t i;
    json_t *m;
    json_array_foreach(acp_client_auth_methods(a->c), i, m)
    {
        char vars[256];
        const char *id = json_string_value(json_object_get(m, "id"));
        if (!id || !auth_env_ready(m, vars, sizeof vars)) continue;
        app_note(a, "signing in with '%s' (%s set in the environment)", id, vars);
        return app_authenticate(a, id);
    }
    return 0;
}
