/* SPDX-License-Identifier: Apache-2.0 */
/* terminal/create, output, wait_for_exit, kill, release: commands run with acp_proc in their
 * own process group; stdout and stderr feed one buffer (as on a terminal), kept within the
 * output byte limit by dropping from the beginning at a UTF-8 character boundary. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/internal.h"

/* Without outputByteLimit a terminal still keeps at most this much: memory stays bounded. */
#define DEFAULT_LIMIT (16u << 20)

struct acp_term {
    acp_client *c;
    acp_term *next;
    char id[32];
    char *session_id;
    acp_proc *proc;
    acp_buf out;
    size_t limit;
    bool truncated;
    bool exited;
    int64_t code;
    int sig;
    acp_req **waiters;
    size_t nwait;
};

static void term_unlink(acp_term *t)
{
    for (acp_term **pp = &t->c->terms; *pp; pp = &(*pp)->next) {
        if (*pp == t) {
            *pp = t->next;
            return;
        }
    }
}

static void on_output(acp_proc *p, const char *buf, size_t n, void *user)
{
    acp_term *t = user;
    if (n >= t->limit) { /* only the tail survives */
        buf += n - t->limit;
        n = t->limit;
        t->out.len = 0;
        t->truncated = true;
    }
    if (t->out.len + n > t->limit) {
        size_t drop = t->out.len + n - t->limit;
        t->truncated = true;
        memmove(t->out.data, t->out.data + drop, t->out.len - drop);
        t->out.len -= drop;
    }
    if (acp_buf_append(&t->out, buf, n)) return;
    /* Never start inside a character: drop continuation bytes left at the front. */
    size_t skip = 0;
    while (skip < t->out.len && ((unsigned char)t->out.data[skip] & 0xC0) == 0x80) skip++;
    if (skip) {
        memmove(t->out.data, t->out.data + skip, t->out.len - skip);
        t->out.len -= skip;
    }
}

static void write_status(acp_jw *w, const acp_term *t)
{
    acp_jw_key(w, "exitCode");
    if (t->sig)
        acp_jw_null(w);
    else
        acp_jw_int(w, t->code);
    acp_jw_key(w, "signal");
    if (t->sig) {
        char name[32];
        const char *abbr = sigabbrev_np(t->sig);
        if (abbr)
            snprintf(name, sizeof name, "SIG%s", abbr);
        else
            snprintf(name, sizeof name, "%d", t->sig);
        acp_jw_str(w, name);
    } else {
        acp_jw_null(w);
    }
}

static void reply_exit(acp_req *req, const acp_term *t)
{
    acp_jw *w = acp_req_reply_begin(req);
    acp_jw_obj(w);
    write_status(w, t);
    acp_jw_obj_end(w);
    acp_req_reply_end(req);
}

static void on_exit_(acp_proc *p, int64_t status, int sig, void *user)
{
    acp_term *t = user;
    t->exited = true;
    t->code = status;
    t->sig = sig;
    for (size_t i = 0; i < t->nwait; i++) reply_exit(t->waiters[i], t);
    t->nwait = 0;
}

static void term_done(void *user)
{
    acp_term *t = user;
    acp_buf_free(&t->out);
    free(t->waiters);
    free(t->session_id);
    free(t);
}

/* Kill the group now (a command that ignores SIGTERM must not hold the release up), then
 * let acp_proc reap it and free everything. */
static void term_release(acp_term *t)
{
    term_unlink(t);
    if (!t->exited) kill(-acp_proc_pid(t->proc), SIGKILL);
    acp_proc_stop(t->proc, 1000, term_done, t);
}

int acp_client_terminal_output(acp_client *c, const char *terminal_id, const char **out,
                               size_t *len, bool *truncated, bool *exited, int64_t *exit_code,
                               int *signal)
{
    for (acp_term *t = c->terms; t && terminal_id; t = t->next) {
        if (strcmp(t->id, terminal_id) != 0) continue;
        if (out) *out = t->out.data ? t->out.data : "";
        if (len) *len = t->out.len;
        if (truncated) *truncated = t->truncated;
        if (exited) *exited = t->exited;
        if (exit_code) *exit_code = t->sig ? -1 : t->code;
        if (signal) *signal = t->sig;
        return 0;
    }
    return acp_error_set(ACP_ENOTFOUND, "no terminal '%s' (never created, or released)",
                         terminal_id ? terminal_id : "");
}

void acp_client_terminals_free(acp_client *c)
{
    while (c->terms) {
        c->terms->nwait = 0; /* their requests go with the connection */
        term_release(c->terms);
    }
}

static acp_term *find(acp_client *c, acp_req *req)
{
    acp_client_session *s = acp_client_req_session(c, req);
    if (!s) return NULL;
    const char *id = json_string_value(json_object_get(acp_req_params(req), "terminalId"));
    for (acp_term *t = c->terms; id && t; t = t->next)
        if (strcmp(t->id, id) == 0 && strcmp(t->session_id, s->id) == 0) return t;
    acp_client_refuse(c, req, ACP_RPC_NOT_FOUND,
                      "unknown terminalId '%s' (never created, or already released)", id ? id : "");
    return NULL;
}

/* Our environment plus the request's env entries (which win). */
static char **make_env(json_t *env)
{
    size_t n = 0, m = json_array_size(env);
    while (environ[n]) n++;
    char **v = calloc(n + m + 1, sizeof *v);
    if (!v) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < m; i++) {
        json_t *e = json_array_get(env, i);
        const char *name = json_string_value(json_object_get(e, "name"));
        const char *val = json_string_value(json_object_get(e, "value"));
        if (!name || !val || !*name || strchr(name, '=')) continue;
        if (asprintf(&v[k], "%s=%s", name, val) < 0) goto nomem;
        k++;
    }
    for (size_t i = 0; i < n; i++) {
        bool overridden = false;
        for (size_t j = 0; j < k && !overridden; j++) {
            size_t len = strcspn(v[j], "=");
            overridden = strncmp(environ[i], v[j], len + 1) == 0;
        }
        if (!overridden && !(v[k++] = strdup(environ[i]))) goto nomem;
    }
    return v;
nomem:
    /* v[k] is undefined after a failed asprintf and NULL after a failed strdup: stop before it. */
    v[k] = NULL;
    acp_client_argv_free(v);
    return NULL;
}

/* The checks, made before the application is asked and again (the session may have gone,
 * a directory may have been swapped for a link meanwhile) when the command runs. On success
 * *cwd is the resolved working directory inside the session's roots (caller frees); on failure
 * the request is answered and NULL returned. */
static acp_client_session *checked(acp_client *c, acp_req *req, char **cwd)
{
    *cwd = NULL;
    acp_client_session *s = acp_client_req_session(c, req);
    if (!s) return NULL;
    json_t *params = acp_req_params(req);
    const char *command = json_string_value(json_object_get(params, "command"));
    json_t *args = json_object_get(params, "args");
    json_t *cwdj = json_object_get(params, "cwd");
    json_t *lim = json_object_get(params, "outputByteLimit");
    bool ok = command && *command && (!args || json_is_null(args) || json_is_array(args)) &&
              (!lim || json_is_null(lim) || (json_is_integer(lim) && json_integer_value(lim) >= 0));
    for (size_t i = 0; ok && i < json_array_size(args); i++)
        ok = json_is_string(json_array_get(args, i));
    if (!ok) {
        acp_client_refuse(c, req, ACP_RPC_INVALID_PARAMS,
                          "terminal/create needs a command, args as an array of strings and a "
                          "non-negative outputByteLimit");
        return NULL;
    }
    /* The schema makes cwd an absolute path: a relative one is refused, not guessed at. */
    const char *want = json_is_string(cwdj) ? json_string_value(cwdj) : acp_roots_cwd(s->roots);
    if (want[0] != '/') {
        acp_client_refuse(c, req, ACP_RPC_INVALID_PARAMS, "cwd must be an absolute path: '%s'",
                          want);
        return NULL;
    }
    /* A command run elsewhere reads and writes there: the roots bound it as they bound fs. */
    char *msg = NULL;
    int rc = acp_roots_resolve(s->roots, want, cwd, &msg);
    if (rc) {
        acp_client_refuse(c, req, ACP_RPC_INVALID_PARAMS,
                          "a terminal's cwd must lie inside the session's directories: %s",
                          msg ? msg : acp_strerror(rc));
        free(msg);
        return NULL;
    }
    return s;
}

static void do_create(acp_client *c, acp_req *req)
{
    char *cwd;
    acp_client_session *s = checked(c, req, &cwd);
    if (!s) return;
    json_t *params = acp_req_params(req);
    const char *command = json_string_value(json_object_get(params, "command"));
    json_t *args = json_object_get(params, "args");
    json_t *env = json_object_get(params, "env");
    json_t *lim = json_object_get(params, "outputByteLimit");
    size_t nargs = json_array_size(args);
    char **argv = calloc(nargs + 2, sizeof *argv);
    char **envv = make_env(env);
    acp_term *t = calloc(1, sizeof *t);
    if (!argv || !envv || !t || !(t->session_id = strdup(s->id))) goto nomem;
    size_t k = 0;
    argv[k++] = (char *)command;
    for (size_t i = 0; i < nargs; i++) {
        argv[k++] = (char *)json_string_value(json_array_get(args, i)); /* checked() */
    }
    t->c = c;
    t->limit = json_is_integer(lim) ? (size_t)json_integer_value(lim) : DEFAULT_LIMIT;
    snprintf(t->id, sizeof t->id, "term-%llu", (unsigned long long)++c->next_term);
    acp_proc_opts po = {.struct_size = sizeof(acp_proc_opts),
                        .file = argv[0],
                        .argv = argv,
                        .env = envv,
                        .cwd = cwd,
                        .pipe_stdout = true,
                        .pipe_stderr = true,
                        .on_stdout = on_output, /* one stream, as on a terminal */
                        .on_stderr = on_output,
                        .on_exit = on_exit_,
                        .user = t};
    int rc = acp_proc_spawn(c->loop, &po, &t->proc);
    if (rc) {
        acp_client_refuse(c, req, ACP_RPC_INTERNAL_ERROR, "%s", acp_error_last()->message);
        goto fail;
    }
    t->next = c->terms;
    c->terms = t;
    acp_jw *w = acp_req_reply_begin(req);
    acp_jw_obj(w);
    acp_jw_kstr(w, "terminalId", t->id);
    acp_jw_obj_end(w);
    acp_req_reply_end(req);
    t = NULL;
    goto done;
nomem:
    acp_client_refuse(c, req, ACP_RPC_INTERNAL_ERROR, "out of memory");
fail:
    if (t) free(t->session_id);
    free(t);
done:
    free(argv);
    free(cwd);
    acp_client_argv_free(envv);
}

static void on_create(acp_conn *conn, acp_req *req, void *user)
{
    acp_client *c = user;
    char *cwd;
    acp_client_session *s = checked(c, req, &cwd);
    free(cwd);
    if (s) acp_client_ask_app(c, s, req, "terminal/create", do_create);
}

/* Output as valid UTF-8: bytes that are not (a program may print anything) become U+FFFD. */
static void write_utf8(acp_jw *w, const char *s, size_t n)
{
    acp_buf b = {0};
    for (size_t i = 0; i < n;) {
        unsigned char ch = (unsigned char)s[i];
        size_t len = ch < 0x80         ? 1
                     : (ch >> 5) == 6  ? 2
                     : (ch >> 4) == 14 ? 3
                     : (ch >> 3) == 30 ? 4
                                       : 0;
        bool ok = len && i + len <= n;
        for (size_t j = 1; ok && j < len; j++) ok = ((unsigned char)s[i + j] & 0xC0) == 0x80;
        if (ok && len > 1) { /* overlongs, surrogates and > U+10FFFF */
            unsigned char c1 = (unsigned char)s[i + 1];
            ok = !(ch == 0xC0 || ch == 0xC1 || (ch == 0xE0 && c1 < 0xA0) ||
                   (ch == 0xED && c1 >= 0xA0) || (ch == 0xF0 && c1 < 0x90) ||
                   (ch == 0xF4 && c1 >= 0x90) || ch > 0xF4);
        }
        if (ok) {
            acp_buf_append(&b, s + i, len);
            i += len;
        } else {
            acp_buf_append(&b, "\xEF\xBF\xBD", 3);
            i++;
        }
    }
    acp_jw_strn(w, b.data ? b.data : "", b.len);
    acp_buf_free(&b);
}

static void on_output_req(acp_conn *conn, acp_req *req, void *user)
{
    acp_term *t = find(user, req);
    if (!t) return;
    acp_jw *w = acp_req_reply_begin(req);
    acp_jw_obj(w);
    acp_jw_key(w, "output");
    write_utf8(w, t->out.data, t->out.len);
    acp_jw_kbool(w, "truncated", t->truncated);
    if (t->exited) {
        acp_jw_key(w, "exitStatus");
        acp_jw_obj(w);
        write_status(w, t);
        acp_jw_obj_end(w);
    }
    acp_jw_obj_end(w);
    acp_req_reply_end(req);
}

static void on_wait_cancel(acp_req *req, void *user)
{
    acp_term *t = user;
    for (size_t i = 0; i < t->nwait; i++) {
        if (t->waiters[i] == req) {
            t->waiters[i] = t->waiters[--t->nwait];
            acp_req_error(req, ACP_RPC_CANCELLED, NULL, "wait_for_exit cancelled");
            return;
        }
    }
}

static void on_wait(acp_conn *conn, acp_req *req, void *user)
{
    acp_term *t = find(user, req);
    if (!t) return;
    if (t->exited) {
        reply_exit(req, t);
        return;
    }
    acp_req **v = realloc(t->waiters, (t->nwait + 1) * sizeof *v);
    if (!v) {
        acp_client_refuse(t->c, req, ACP_RPC_INTERNAL_ERROR, "out of memory");
        return;
    }
    t->waiters = v;
    t->waiters[t->nwait++] = req;
    acp_req_on_cancel(req, on_wait_cancel, t);
}

static void on_kill(acp_conn *conn, acp_req *req, void *user)
{
    acp_term *t = find(user, req);
    if (!t) return;
    /* SIGKILL to the whole group: the terminal stays valid for output and wait_for_exit. */
    if (!t->exited) kill(-acp_proc_pid(t->proc), SIGKILL);
    acp_req_reply(req, NULL);
}

static void on_release(acp_conn *conn, acp_req *req, void *user)
{
    acp_term *t = find(user, req);
    if (!t) return;
    term_release(t);
    acp_req_reply(req, NULL);
}

void acp_client_terminal_register(acp_client *c)
{
    acp_conn_on(c->conn, "terminal/create", on_create, NULL, c);
    acp_conn_on(c->conn, "terminal/output", on_output_req, NULL, c);
    acp_conn_on(c->conn, "terminal/wait_for_exit", on_wait, NULL, c);
    acp_conn_on(c->conn, "terminal/kill", on_kill, NULL, c);
    acp_conn_on(c->conn, "terminal/release", on_release, NULL, c);
}
