/* SPDX-License-Identifier: Apache-2.0 */
/* Terminals: terminal/create, output, wait_for_exit, kill, release. The spec says the agent
 * MUST release what the client created: the engine does, or the runtime when the terminal's
 * owner goes away, or, for a terminal released before the client answered terminal/create
 * (an orphan), as soon as that answer brings its id. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/internal.h"

static acp_terminal **term_list(acp_terminal *term)
{
    return term->t ? &term->t->terms : term->s ? &term->s->terms : &term->a->orphans;
}

static void term_unlink(acp_terminal *term)
{
    for (acp_terminal **q = term_list(term); *q; q = &(*q)->next) {
        if (*q == term) {
            *q = term->next;
            return;
        }
    }
}

static void term_free(acp_terminal *term)
{
    free(term->sid);
    free(term->id);
    free(term);
}

/* No callback wants its answer, so it is written after EOF too (a half-closed client reads
 * on). s: the session to wait behind, NULL when it is gone. */
static void send_release(acp_agent *a, acp_session *s, const char *sid, const char *id)
{
    json_t *params = json_pack("{ss ss}", "sessionId", sid, "terminalId", id);
    if (!params || call_send(a, s, NULL, "terminal/release", params, NULL, NULL, NULL))
        agent_log(a, "terminal %s: terminal/release could not be sent (out of memory)", id);
}

static void on_created(acp_conn *c, acp_msg *m, void *user)
{
    acp_terminal *term = user;
    acp_agent *a = term->a;
    term->create = NULL;
    const json_t *result;
    const char *error;
    int st = call_status(c, m, &result, &error);
    const char *id = json_string_value(json_object_get(result, "terminalId"));
    if (!st && !id) {
        st = ACP_EPROTO;
        error = "the client's terminal/create answer has no string terminalId";
    } else if (!st && !(term->id = strdup(id))) {
        send_release(a, term->s, term->sid, id); /* it cannot be kept: let it go now */
        st = ACP_ENOMEM;
        error = "out of memory";
    }
    if (!term->t && !term->s) { /* an orphan: released already */
        term_unlink(term);
        if (!st) send_release(a, NULL, term->sid, term->id);
        term_free(term);
        return;
    }
    if (!st) {
        if (term->cb) term->cb(term, 0, NULL, term->user);
        return;
    }
    /* Nothing to release: the handle goes right after its callback. */
    term_unlink(term);
    term->failing = true;
    if (term->cb) term->cb(term, st, error, term->user);
    term_free(term);
}

/* terminal/create's params from o into *out, or why not (cwd outside the roots, a malformed
 * environment, ...) through acp_error_set(). */
static int create_params(acp_session *s, const acp_terminal_opts *o, json_t **out)
{
    if (!o || !o->command || !*o->command)
        return acp_error_set(ACP_EINVAL, "terminal/create needs a command");
    json_t *p = json_pack("{ss}", "command", o->command);
    json_t *args = o->args ? json_array() : NULL, *env = o->env ? json_array() : NULL;
    int rc = p && (args || !o->args) && (env || !o->env) ? 0 : ACP_ENOMEM;
    if (!p) rc = acp_error_set(ACP_EINVAL, "a terminal's command is not valid UTF-8");
    for (const char *const *v = o->args; !rc && v && *v; v++)
        if (json_array_append_new(args, json_string(*v)))
            rc = acp_error_set(ACP_EINVAL, "a terminal argument is not valid UTF-8");
    for (const char *const *v = o->env; !rc && v && *v; v++) {
        const char *eq = strchr(*v, '=');
        if (!eq || eq == *v)
            rc = acp_error_set(ACP_EINVAL, "a terminal's environment entry is not NAME=value: %s",
                               *v);
        else if (json_array_append_new(
                     env, json_pack("{ss% ss}", "name", *v, (size_t)(eq - *v), "value", eq + 1)))
            rc = acp_error_set(ACP_EINVAL, "a terminal's environment is not valid UTF-8");
    }
    if (!rc && args) json_object_set(p, "args", args);
    if (!rc && env) json_object_set(p, "env", env);
    json_decref(args);
    json_decref(env);
    if (!rc && o->cwd) {
        char *real = NULL;
        if (o->cwd[0] != '/')
            rc = acp_error_set(ACP_EINVAL, "a terminal's cwd must be absolute: %s", o->cwd);
        else if ((rc = acp_session_resolve_path(s, o->cwd, &real)) == ACP_EACCES)
            rc = acp_error_set(rc, "a terminal's cwd is outside the session's roots: %s", o->cwd);
        else if (rc)
            rc = acp_error_set(rc, "%s: %s", o->cwd, acp_strerror(rc));
        else if (json_object_set_new(p, "cwd", json_string(real)))
            rc = acp_error_set(ACP_EINVAL, "a terminal's cwd is not valid UTF-8");
        free(real);
    }
    if (!rc && o->output_byte_limit) {
        uint64_t n = o->output_byte_limit > INT64_MAX ? INT64_MAX : o->output_byte_limit;
        json_object_set_new(p, "outputByteLimit", json_integer((json_int_t)n));
    }
    if (rc) json_decref(p);
    *out = rc ? NULL : p;
    return rc;
}

static int create(acp_turn *t, acp_session *s, const acp_terminal_opts *opts, acp_terminal_cb cb,
                  void *user, acp_terminal **out)
{
    acp_agent *a = s->a;
    json_t *params = NULL;
    *out = NULL;
    acp_terminal_opts o;
    int rc = acp_struct_read(&o, sizeof o, ACP_TERMINAL_OPTS_SIZE_1_0, opts, "acp_terminal_opts");
    if (!rc) rc = call_check(a, t, s, NULL, "terminal/create", NULL);
    if (!rc) rc = create_params(s, opts ? &o : NULL, &params);
    if (rc) return rc;
    acp_terminal *term = calloc(1, sizeof *term);
    char *sid = strdup(s->id);
    if (!term || !sid) {
        free(term);
        free(sid);
        json_decref(params);
        return acp_error_code(ACP_ENOMEM);
    }
    *term = (acp_terminal){.a = a, .t = t, .s = s, .sid = sid, .cb = cb, .user = user};
    rc = call_send(a, s, NULL, "terminal/create", params, on_created, term, &term->create);
    if (rc) {
        term_free(term);
        return rc;
    }
    acp_terminal **head = term_list(term);
    term->next = *head;
    *head = term;
    *out = term;
    return 0;
}

int acp_turn_terminal_create(acp_turn *t, const acp_terminal_opts *o, acp_terminal_cb cb,
                             void *user, acp_terminal **out)
{
    return create(t, t->s, o, cb, user, out);
}

int acp_session_terminal_create(acp_session *s, const acp_terminal_opts *o, acp_terminal_cb cb,
                                void *user, acp_terminal **out)
{
    return create(NULL, s, o, cb, user, out);
}

const char *acp_terminal_id(const acp_terminal *term)
{
    return term->id;
}

acp_session *acp_terminal_session(const acp_terminal *term)
{
    return term->s;
}

/* --- output, wait_for_exit, kill ------------------------------------------------------------- */

/* An exit status from obj's exitCode (uint32 or null) and signal (string or null), both
 * optional: false when malformed. */
static bool exit_of(const json_t *obj, acp_terminal_exit *e)
{
    json_t *code = json_object_get(obj, "exitCode"), *sig = json_object_get(obj, "signal");
    e->exited = true;
    e->exit_code = json_is_integer(code) ? (long)json_integer_value(code) : -1;
    e->signal = json_string_value(sig);
    return (!code || json_is_null(code) ||
            (json_is_integer(code) && json_integer_value(code) >= 0 &&
             json_integer_value(code) <= UINT32_MAX)) &&
           (!sig || json_is_null(sig) || json_is_string(sig));
}

static void output_answer(pcall *p, int status, const json_t *result, const char *error)
{
    json_t *out = json_object_get(result, "output"), *trunc = json_object_get(result, "truncated");
    json_t *es = json_object_get(result, "exitStatus");
    acp_terminal_exit e = {.exit_code = -1};
    if (!status && (!json_is_string(out) || !json_is_boolean(trunc) ||
                    (es && !json_is_null(es) && (!json_is_object(es) || !exit_of(es, &e))))) {
        status = ACP_EPROTO;
        error = "the client's terminal/output answer needs a string output, a boolean truncated "
                "and, if any, a valid exitStatus";
        e = (acp_terminal_exit){.exit_code = -1};
    }
    if (p->cb.output)
        p->cb.output(p->term, status, status ? NULL : json_string_value(out),
                     status ? 0 : json_string_length(out), !status && json_is_true(trunc), &e,
                     error, p->user);
}

static void wait_answer(pcall *p, int status, const json_t *result, const char *error)
{
    acp_terminal_exit e = {.exit_code = -1};
    if (!status && (!json_is_object(result) || !exit_of(result, &e))) {
        status = ACP_EPROTO;
        error = "the client's terminal/wait_for_exit answer needs an exitCode (a uint32 or null) "
                "and a signal (a string or null)";
        e = (acp_terminal_exit){.exit_code = -1};
    }
    if (p->cb.exit) p->cb.exit(p->term, status, &e, error, p->user);
}

static void done_answer(pcall *p, int status, const json_t *result, const char *error)
{
    if (!status && !json_is_object(result) && !json_is_null(result)) {
        status = ACP_EPROTO;
        error = "the client's terminal/kill answer is not an object";
    }
    if (p->cb.term) p->cb.term(p->term, status, error, p->user);
}

/* A request about the created terminal, owned like it. */
static int op(acp_terminal *term, const char *method, pcall tmpl)
{
    if (!term->id)
        return acp_error_set(ACP_EINVAL,
                             "%s needs the terminal's id: terminal/create is "
                             "not answered yet",
                             method);
    json_t *params = json_pack("{ss}", "terminalId", term->id);
    if (!params) return acp_error_code(ACP_ENOMEM);
    tmpl.t = term->t;
    tmpl.s = term->s;
    tmpl.term = term;
    return pcall_start(&tmpl, method, params);
}

int acp_terminal_output(acp_terminal *term, acp_terminal_output_cb cb, void *user)
{
    return op(term, "terminal/output",
              (pcall){.answer = output_answer, .cb.output = cb, .user = user});
}

int acp_terminal_wait_for_exit(acp_terminal *term, acp_terminal_exit_cb cb, void *user)
{
    return op(term, "terminal/wait_for_exit",
              (pcall){.answer = wait_answer, .cb.exit = cb, .user = user});
}

int acp_terminal_kill(acp_terminal *term, acp_terminal_cb cb, void *user)
{
    return op(term, "terminal/kill", (pcall){.answer = done_answer, .cb.term = cb, .user = user});
}

/* --- release --------------------------------------------------------------------------------- */

void acp_terminal_release(acp_terminal *term)
{
    if (!term || term->failing) return; /* a failed create's handle goes after its callback */
    /* No callback of the handle runs any more: its pending calls are forgotten. */
    for (pcall *p = term->t ? term->t->calls : term->s->calls, *next; p; p = next) {
        next = p->next;
        if (p->term == term) pcall_forget(p);
    }
    term_unlink(term);
    if (term->id) {
        send_release(term->a, term->s, term->sid, term->id);
        term_free(term);
        return;
    }
    /* The create is not answered: the terminal waits for its id as an orphan of the agent's,
     * outside any session (nothing can show a terminal whose id is unknown). */
    term->t = NULL;
    term->s = NULL;
    term->next = term->a->orphans;
    term->a->orphans = term;
}

void terminals_agent_free(acp_agent *a)
{
    while (a->orphans) {
        acp_terminal *term = a->orphans;
        a->orphans = term->next;
        acp_conn_forget(a->conn, term->create); /* the connection goes next: no answer comes */
        term_free(term);
    }
}
