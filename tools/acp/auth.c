/* SPDX-License-Identifier: Apache-2.0 */
/* Signing in: `acp auth` lists the agent's auth methods in every shape real agents send
 * (tests/real-agents/RESULTS.md): the schema's agent and terminal types, env_var from the
 * auth-methods RFD (in no schema yet; codex-acp), and terminal logins told in _meta instead
 * (qwen-code's _meta.type and _meta.args, opencode's and claude's _meta["terminal-auth"]
 * with a command). `acp auth METHOD` signs in with one, `acp logout` signs out. */
#include <ctype.h>
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tools/acp/app.h"
#include "tools/acp/safe.h"

extern char **environ;

static const char *str(json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

static json_t *meta_login(json_t *m)
{
    json_t *t = json_object_get(json_object_get(m, "_meta"), "terminal-auth");
    return json_is_object(t) ? t : NULL;
}

/* The method's type: its `type`; else a terminal login told in _meta; else the schema's
 * default, "agent". */
static const char *type_of(json_t *m)
{
    const char *t = str(m, "type");
    if (t) return t;
    t = str(json_object_get(m, "_meta"), "type");
    if (t) return t;
    return meta_login(m) ? "terminal" : "agent";
}

const char *auth_type(json_t *method)
{
    return type_of(method);
}

/* The command line of a terminal method (caller frees with acp_client_argv_free()): the
 * agent's own with the method's args (the schema's terminal type; qwen's _meta.args), or the
 * command and args of _meta["terminal-auth"] (opencode). NULL when there is none. */
static char **login_argv(app *a, json_t *m)
{
    json_t *login = meta_login(m), *args = json_object_get(m, "args");
    const char *command = NULL;
    if (!str(m, "type") && login && str(login, "command")) {
        command = str(login, "command");
        args = json_object_get(login, "args");
    } else if (!str(m, "type")) {
        args = json_object_get(json_object_get(m, "_meta"), "args");
    }
    char **words = NULL;
    if (command) {
        words = calloc(2, sizeof *words);
        if (words && !(words[0] = strdup(command))) {
            free(words);
            words = NULL;
        }
    } else {
        char *line = app_spawns(a) ? app_agent_command(a) : NULL;
        if (line) acp_client_split_command(line, &words);
        free(line);
    }
    if (!words) return NULL;
    size_t n = 0, na = json_array_size(args);
    while (words[n]) n++;
    char **v = realloc(words, (n + na + 1) * sizeof *v);
    if (!v) {
        acp_client_argv_free(words);
        return NULL;
    }
    for (size_t i = 0; i < na; i++) {
        const char *arg = json_string_value(json_array_get(args, i));
        v[n++] = strdup(arg ? arg : "");
    }
    v[n] = NULL;
    return v;
}

/* The conventional variable of an API-key provider: an `agent` method with
 * _meta["api-key"].provider (gemini-cli, codex-acp 2.x) reads the key from the agent's
 * environment, as an env_var method does. google's is GEMINI_API_KEY, as gemini-cli reads it;
 * every other provider's is PROVIDER_API_KEY (OPENAI_API_KEY, ANTHROPIC_API_KEY, ...). */
static const char *provider_var(json_t *m, char *buf, size_t len)
{
    const char *p = str(json_object_get(json_object_get(m, "_meta"), "api-key"), "provider");
    if (!p || !*p || strcmp(type_of(m), "agent") != 0) return NULL;
    if (!strcasecmp(p, "google")) return "GEMINI_API_KEY";
    size_t k = 0;
    for (; p[k] && k + sizeof "_API_KEY" < len; k++)
        buf[k] = isalnum((unsigned char)p[k]) ? (char)toupper((unsigned char)p[k]) : '_';
    snprintf(buf + k, len - k, "_API_KEY");
    return buf;
}

/* The variables of an env_var method, in order: vars[] entries ({"name"}, or plain strings)
 * as the RFD has them, or the single varName of its earlier draft; for an api-key `agent`
 * method, its provider's variable (spelt in buf). */
static size_t env_names(json_t *m, const char **names, bool *optional, size_t max, char *buf,
                        size_t len)
{
    const char *pv = provider_var(m, buf, len);
    if (pv && max) {
        names[0] = pv;
        optional[0] = false;
        return 1;
    }
    if (strcmp(type_of(m), "env_var") != 0) return 0;
    size_t n = 0;
    if (str(m, "varName") && max) {
        names[n] = str(m, "varName");
        optional[n++] = false;
    }
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(m, "vars"), i, v)
    {
        const char *name = json_is_string(v) ? json_string_value(v) : str(v, "name");
        if (!name || n == max) continue;
        names[n] = name;
        optional[n++] = json_is_true(json_object_get(v, "optional"));
    }
    return n;
}

bool auth_env_ready(json_t *m, char *vars, size_t len)
{
    const char *names[16];
    bool optional[16];
    char buf[80];
    size_t n = env_names(m, names, optional, 16, buf, sizeof buf), required = 0;
    vars[0] = 0;
    for (size_t i = 0; i < n; i++) {
        if (optional[i]) continue;
        const char *v = getenv(names[i]);
        if (!v || !*v) return false;
        size_t k = strlen(vars);
        snprintf(vars + k, len - k, "%s%s", k ? ", " : "", names[i]);
        required++;
    }
    return required > 0;
}

/* "OPENAI_API_KEY (set), OTHER (not set)" */
static void env_state(json_t *m, char *out, size_t len)
{
    const char *names[16];
    bool optional[16];
    char buf[80];
    size_t n = env_names(m, names, optional, 16, buf, sizeof buf);
    out[0] = 0;
    for (size_t i = 0; i < n; i++) {
        const char *v = getenv(names[i]);
        size_t k = strlen(out);
        snprintf(out + k, len - k, "%s%s (%s%s)", i ? ", " : "", names[i],
                 v && *v ? "set" : "not set", optional[i] ? ", optional" : "");
    }
}

void auth_hint(app *a, char *out, size_t len)
{
    json_t *methods = acp_client_auth_methods(a->c);
    if (!json_array_size(methods)) {
        snprintf(out, len, "; the agent lists no auth methods");
        return;
    }
    size_t k = (size_t)snprintf(out, len,
                                "; sign in with 'acp auth METHOD' or --auth METHOD; "
                                "methods:");
    size_t i;
    json_t *m;
    json_array_foreach(methods, i, m)
    {
        if (k >= len) break;
        char vars[200];
        env_state(m, vars, sizeof vars);
        k += (size_t)snprintf(out + k, len - k, "%s %s (%s%s%s)", i ? "," : "",
                              str(m, "id") ? str(m, "id") : "?", type_of(m), *vars ? ": " : "",
                              vars);
    }
}

static void list(app *a, json_t *methods)
{
    if (a->json) {
        render_result(&a->r, json_pack("{s:O}", "authMethods", methods));
        return;
    }
    if (!json_array_size(methods)) {
        printf("the agent lists no auth methods\n");
        return;
    }
    printf("%-24s  %-8s  %s\n", "ID", "TYPE", "NAME");
    size_t i;
    json_t *m;
    json_array_foreach(methods, i, m)
    {
        const char *type = type_of(m), *desc = str(m, "description");
        printf("%-24s  %-8s  %s\n", safe_line(str(m, "id") ? str(m, "id") : "?"), safe_line(type),
               safe_line(str(m, "name") ? str(m, "name") : ""));
        if (desc && *desc) printf("%-24s  %-8s  %s\n", "", "", safe_line(desc));
        char extra[512];
        env_state(m, extra, sizeof extra);
        if (!strcmp(type, "terminal")) {
            char **argv = login_argv(a, m);
            size_t k = (size_t)snprintf(extra, sizeof extra, "runs:");
            for (size_t j = 0; argv && argv[j] && k < sizeof extra; j++)
                k += (size_t)snprintf(extra + k, sizeof extra - k, " %s", argv[j]);
            if (!argv) snprintf(extra, sizeof extra, "runs the agent's command (not known here)");
            acp_client_argv_free(argv);
        }
        if (*extra) printf("%-24s  %-8s  %s\n", "", "", safe_line(extra));
    }
    printf("\nlogout: %s\n",
           acp_client_supports(a->c, ACP_CAP_LOGOUT) ? "supported" : "not advertised");
}

/* A terminal method: the spec has the client run the agent's own command line with the
 * method's args and env, interactively; exit status 0 means signed in. */
static int terminal_sign_in(app *a, json_t *m)
{
    char **argv = login_argv(a, m);
    if (!argv) {
        app_note(a, "cannot run a terminal sign-in for an agent acp did not start (--agent "
                    "unix:...): run the agent's login yourself");
        return EXIT_USAGE;
    }
    json_t *env = json_object_get(m, "env");
    if (!json_is_object(env)) env = json_object_get(meta_login(m), "env");
    size_t ne = 0;
    while (environ[ne]) ne++;
    char **envp = calloc(ne + json_object_size(env) + 1, sizeof *envp);
    char **owned = calloc(json_object_size(env) + 1, sizeof *owned);
    size_t k = 0, no = 0;
    /* The method's variables override ours of the same name. */
    for (size_t i = 0; envp && i < ne; i++) {
        const char *eq = strchr(environ[i], '=');
        char name[256];
        snprintf(name, sizeof name, "%.*s", eq ? (int)(eq - environ[i]) : 0, environ[i]);
        if (!json_object_get(env, name)) envp[k++] = environ[i];
    }
    const char *key;
    json_t *val;
    json_object_foreach(env, key, val)
    {
        if (envp && owned && json_is_string(val) &&
            asprintf(&owned[no], "%s=%s", key, json_string_value(val)) >= 0)
            envp[k++] = owned[no++];
    }
    app_note(a, "running the agent's sign-in: %s", str(m, "name") ? str(m, "name") : "");
    fflush(stdout);
    pid_t pid;
    int rc = envp ? posix_spawnp(&pid, argv[0], NULL, NULL, argv, envp) : ENOMEM, status = 0;
    /* --timeout bounds the sign-in too: past it, the login is ended (TERM, then KILL). */
    bool late = false;
    for (unsigned waited = 0; !rc && waitpid(pid, &status, a->timeout_ms ? WNOHANG : 0) != pid;
         waited += 20) {
        if (a->timeout_ms && waited >= a->timeout_ms) {
            late = true;
            kill(pid, waited >= a->timeout_ms + 1000 ? SIGKILL : SIGTERM);
        }
        if (a->timeout_ms) usleep(20000);
    }
    for (size_t i = 0; i < no; i++) free(owned[i]);
    free(owned);
    free(envp);
    acp_client_argv_free(argv);
    if (rc) {
        app_note(a, "cannot run the agent's sign-in: %s", strerror(rc));
        return EXIT_AGENT;
    }
    if (late) {
        app_note(a, "the sign-in did not finish within --timeout %g s", a->timeout_ms / 1000.0);
        return EXIT_TIMEOUT;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        if (WIFSIGNALED(status))
            app_note(a, "the sign-in was killed by signal %d", WTERMSIG(status));
        else
            app_note(a, "the sign-in failed: exit status %d", WEXITSTATUS(status));
        return EXIT_REFUSED;
    }
    return 0;
}

int cmd_auth(app *a)
{
    int rc = app_open(a);
    if (rc) return rc;
    json_t *methods = acp_client_auth_methods(a->c);
    if (!a->nargs) {
        list(a, methods);
        return 0;
    }
    const char *id = a->args[0];
    json_t *m = NULL, *x;
    size_t i;
    json_array_foreach(methods, i, x) if (str(x, "id") && !strcmp(str(x, "id"), id)) m = x;
    if (!m) {
        char hint[512];
        auth_hint(a, hint, sizeof hint);
        app_note(a, "the agent offers no auth method '%s'%s", id, hint);
        return EXIT_USAGE;
    }
    if (!strcmp(type_of(m), "terminal")) {
        /* The login talks to a person: without one it would wait for ever. */
        if (!isatty(STDIN_FILENO)) {
            app_note(a,
                     "'%s' is a terminal sign-in and standard input is not a terminal: run "
                     "'acp auth %s' in one",
                     id, id);
            return EXIT_REFUSED;
        }
        rc = terminal_sign_in(a, m);
        /* A login told in _meta is an agent method to the schema: the agent expects
         * authenticate once its login ran (as Zed does); a terminal-typed one must not get it. */
        if (!rc && !str(m, "type")) rc = app_authenticate(a, id);
    } else {
        rc = app_authenticate(a, id);
    }
    if (rc) return rc;
    if (a->json)
        render_result(&a->r, json_pack("{s:s}", "methodId", id));
    else
        printf("signed in with %s\n", id);
    return 0;
}

int cmd_logout(app *a)
{
    int rc = app_open(a);
    if (!rc && (rc = acp_client_logout(a->c))) return app_fail(a, "cannot sign out", rc);
    if (rc) return rc;
    if (a->json)
        render_result(&a->r, json_object());
    else
        printf("signed out\n");
    return 0;
}
