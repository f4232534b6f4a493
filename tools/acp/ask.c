/* SPDX-License-Identifier: Apache-2.0 */
/* What the agent asks of us: permission requests, file writes (--fs) and commands
 * (--terminal). --yes allows, --deny refuses; otherwise each is a question on the terminal
 * when standard input is one, and refused when it is not. Questions are read from /dev/tty
 * through the loop, one at a time, so updates keep flowing and Ctrl-C cancels the turn while
 * one is open. A write to a file the user already allowed in a permission request is not
 * asked again. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "acp/num.h"
#include "tools/acp/app.h"
#include "tools/acp/safe.h"

typedef struct question {
    struct question *next;
    acp_client_perm *p; /* a permission request, or */
    acp_client_ask *k;  /* a write or a command to allow */
    json_t *options;    /* the permission's options */
    json_t *locations;  /* the permission's toolCall.locations */
    char *text;
} question;

struct asker {
    int fd; /* /dev/tty; -1 before the first question, -2 when there is none */
    uv_poll_t poll;
    bool polling, inited;
    question *head;
    bool showing; /* the head question is on the terminal */
    char line[256];
    size_t len;
};

static const char *str(json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

void ask_init(app *a)
{
    a->ask = calloc(1, sizeof *a->ask);
    if (a->ask) a->ask->fd = -1;
    a->approved = json_object();
}

bool ask_pending(app *a)
{
    return a->ask && a->ask->head;
}

static void q_free(question *q)
{
    json_decref(q->options);
    json_decref(q->locations);
    free(q->text);
    free(q);
}

static void stop(asker *k)
{
    if (k->polling) uv_poll_stop(&k->poll);
    k->polling = false;
    k->showing = false;
    k->len = 0;
}

static void freed(uv_handle_t *h)
{
    free(h->data);
}

void ask_free(app *a)
{
    asker *k = a->ask;
    if (!k) return;
    while (k->head) { /* unanswered at exit: cancelled */
        question *q = k->head;
        k->head = q->next;
        if (q->p) acp_client_perm_reply(q->p, NULL);
        if (q->k) acp_client_ask_reply(q->k, false);
        q_free(q);
    }
    stop(k);
    if (k->fd >= 0) close(k->fd);
    a->ask = NULL;
    json_decref(a->approved);
    a->approved = NULL;
    if (k->inited) {
        k->poll.data = k;
        uv_close((uv_handle_t *)&k->poll, freed);
    } else {
        free(k);
    }
}

static bool can_ask(app *a)
{
    asker *k = a->ask;
    if (!k || a->perm || !isatty(STDIN_FILENO)) return false;
    if (k->fd == -1) {
        k->fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
        if (k->fd < 0) k->fd = -2;
    }
    return k->fd >= 0;
}

static const char *pick(json_t *options, const char *prefix)
{
    size_t i;
    json_t *o;
    json_array_foreach(options, i, o)
    {
        const char *kind = str(o, "kind");
        if (kind && !strncmp(kind, prefix, strlen(prefix))) return str(o, "optionId");
    }
    return NULL;
}

/* The tool call's title made safe (a safe_line() slot: use it before eight more calls). */
static const char *tool_title(app *a, json_t *params)
{
    json_t *tc = json_object_get(params, "toolCall");
    const char *t = str(tc, "title"), *id = str(tc, "toolCallId");
    if (!t && id) t = str(json_object_get(a->r.tools, id), "title");
    return t ? safe_line(t) : "a tool call";
}

/* Files named by an allowed permission request: their next write is not asked again
 * (every one, for allow_always). */
static void approve(app *a, json_t *locations, bool always)
{
    size_t i;
    json_t *l;
    json_array_foreach(locations, i, l) if (str(l, "path"))
        json_object_set_new(a->approved, str(l, "path"), json_boolean(always));
}

/* --- questions on the terminal ----------------------------------------------------------- */

static void show_next(app *a);

static void answer(app *a, question *q, const char *line, bool eof)
{
    if (q->p) {
        const char *id = NULL, *kind = NULL;
        /* the number of an option, blanks around it allowed; anything else denies */
        const char *b = eof ? "" : line;
        b += strspn(b, " \t");
        size_t len = strcspn(b, "\r\n");
        while (len && (b[len - 1] == ' ' || b[len - 1] == '\t')) len--;
        char *pick_text = strndup(b, len);
        uint64_t n = 0;
        size_t count = json_array_size(q->options);
        json_t *o = pick_text && count && !acp_parse_u64(pick_text, 1, count, &n)
                        ? json_array_get(q->options, (size_t)n - 1)
                        : NULL;
        free(pick_text);
        if (o) {
            id = str(o, "optionId");
            kind = str(o, "kind");
        }
        if (!id || (kind && !strncmp(kind, "reject", 6))) {
            a->denied++;
            if (!id) id = pick(q->options, "reject");
        } else if (kind && !strncmp(kind, "allow", 5)) {
            approve(a, q->locations, !strcmp(kind, "allow_always"));
        }
        acp_client_perm_reply(q->p, id);
    } else {
        bool yes = !eof && (line[0] == 'y' || line[0] == 'Y');
        if (!yes) a->denied++;
        acp_client_ask_reply(q->k, yes);
    }
}

static void on_tty(uv_poll_t *h, int status, int events)
{
    app *a = h->data;
    asker *k = a->ask;
    question *q = k->head;
    if (!q) {
        stop(k);
        return;
    }
    bool eof = false;
    for (;;) {
        ssize_t n = read(k->fd, k->line + k->len, sizeof k->line - 1 - k->len);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) return;
        if (n <= 0) {
            eof = true;
            break;
        }
        k->len += (size_t)n;
        k->line[k->len] = 0;
        if (memchr(k->line, '\n', k->len) || k->len == sizeof k->line - 1) break;
    }
    k->head = q->next;
    stop(k);
    answer(a, q, k->line, eof);
    q_free(q);
    app_heard(a); /* the wait for the agent starts again now */
    show_next(a);
}

static void show_next(app *a)
{
    asker *k = a->ask;
    if (!k->head) chat_pause(a, false);
    if (!k->head || k->showing) return;
    chat_pause(a, true);
    render_break(&a->r);
    fflush(stdout);
    tcflush(k->fd, TCIFLUSH); /* keys typed before the question are not its answer */
    if (write(k->fd, k->head->text, strlen(k->head->text)) < 0) {}
    if (!k->inited) {
        uv_poll_init(&a->loop, &k->poll, k->fd);
        k->poll.data = a;
        k->inited = true;
    }
    uv_poll_start(&k->poll, UV_READABLE, on_tty);
    k->polling = k->showing = true;
}

static void enqueue(app *a, question *q)
{
    question **pp = &a->ask->head;
    while (*pp) pp = &(*pp)->next;
    *pp = q;
    show_next(a);
}

void ask_cancel_all(app *a)
{
    asker *k = a->ask;
    if (!k || !k->head) return;
    if (k->showing && write(k->fd, "cancelled\n", 10) < 0) {}
    stop(k);
    while (k->head) { /* the cancel answered them already: this frees them */
        question *q = k->head;
        k->head = q->next;
        if (q->p) acp_client_perm_reply(q->p, NULL);
        if (q->k) acp_client_ask_reply(q->k, false);
        q_free(q);
    }
}

/* --- the requests -------------------------------------------------------------------------- */

void on_permission(acp_client *c, acp_client_session *s, acp_client_perm *p, json_t *params,
                   void *user)
{
    app *a = user;
    json_t *options = json_object_get(params, "options");
    const char *title = tool_title(a, params);
    if (a->perm > 0) {
        const char *id = pick(options, "allow");
        acp_client_perm_reply(p, id ? id : pick(options, "reject"));
        return;
    }
    if (!can_ask(a)) {
        a->denied++;
        if (a->perm < 0)
            app_note(a, "permission denied (--deny): %s", title);
        else
            app_note(a, "permission denied (no terminal): %s; pass --yes to allow", title);
        acp_client_perm_reply(p, pick(options, "reject")); /* NULL: cancelled */
        return;
    }
    question *q = calloc(1, sizeof *q);
    acp_buf b = {0};
    acp_buf_printf(&b, "\nThe agent asks permission: %s\n", title);
    size_t i;
    json_t *o;
    json_array_foreach(options, i, o)
        acp_buf_printf(&b, "  %zu) %s\n", i + 1, safe_line(str(o, "name") ? str(o, "name") : "?"));
    acp_buf_printf(&b, "choose 1-%zu (anything else denies): ", json_array_size(options));
    acp_buf_cstr(&b);
    if (!q || !b.data) {
        free(q);
        acp_buf_free(&b);
        acp_client_perm_reply(p, pick(options, "reject"));
        return;
    }
    q->p = p;
    q->options = json_incref(options);
    json_t *tc = json_object_get(params, "toolCall");
    json_t *loc = json_object_get(tc, "locations");
    if (!loc && str(tc, "toolCallId"))
        loc = json_object_get(json_object_get(a->r.tools, str(tc, "toolCallId")), "locations");
    q->locations = json_incref(loc);
    q->text = b.data;
    enqueue(a, q);
}

/* "sh -c 'ls -l'": the command and its arguments, quoted where a shell would need it. */
static void command_line(json_t *params, acp_buf *b)
{
    acp_buf_printf(b, "%s", safe_line(str(params, "command") ? str(params, "command") : "?"));
    size_t i;
    json_t *arg;
    json_array_foreach(json_object_get(params, "args"), i, arg)
    {
        const char *s = json_string_value(arg);
        if (!s) continue;
        if (*s && !s[strcspn(s, " \t\n'\"\\$`*?[]{}()<>|&;#~")])
            acp_buf_printf(b, " %s", safe_line(s));
        else
            acp_buf_printf(b, " '%s'", safe_line(s)); /* shown, not run: a quote stays visible */
    }
}

void on_ask(acp_client *c, acp_client_session *s, acp_client_ask *k, const char *method,
            json_t *params, void *user)
{
    app *a = user;
    bool write = !strcmp(method, "fs/write_text_file");
    const char *path = str(params, "path");
    acp_buf what = {0};
    if (write) {
        acp_buf_printf(&what, "write %zu bytes to %s",
                       json_string_length(json_object_get(params, "content")),
                       safe_line(path ? path : "?"));
    } else {
        acp_buf_printf(&what, "run ");
        command_line(params, &what);
        const char *cwd = str(params, "cwd");
        if (cwd) acp_buf_printf(&what, " in %s", safe_line(cwd));
    }
    acp_buf_cstr(&what);
    const char *w = what.data ? what.data : method;
    json_t *ok = write && path ? json_object_get(a->approved, path) : NULL;
    if (a->perm > 0 || (a->perm == 0 && ok)) {
        if (ok && !json_is_true(ok)) json_object_del(a->approved, path); /* allowed once */
        acp_client_ask_reply(k, true);
    } else if (!can_ask(a)) {
        a->denied++;
        app_note(a, "refused to %s (%s)%s", w, a->perm < 0 ? "--deny" : "no terminal",
                 a->perm < 0 ? "" : "; pass --yes to allow");
        acp_client_ask_reply(k, false);
    } else {
        question *q = calloc(1, sizeof *q);
        if (!q || asprintf(&q->text, "\n%s? [y/N] ", w) < 0) {
            free(q);
            acp_client_ask_reply(k, false);
        } else {
            q->k = k;
            enqueue(a, q);
        }
    }
    acp_buf_free(&what);
}
