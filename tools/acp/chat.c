/* SPDX-License-Identifier: Apache-2.0 */
/* `acp chat`: one prompt per line. On a terminal the line is edited with libedit (BSD
 * editline: emacs or vi keys, ~/.editrc, history search), driven by the loop through
 * EL_UNBUFFERED and a uv_poll on stdin, so updates that arrive between turns are shown (the
 * line is redrawn under them). History is kept in memory and in
 * $XDG_STATE_HOME/acp/history (ACP_HISTFILE overrides; empty: none); Tab completes the
 * agent's slash commands. Ctrl-C cancels a turn; at the prompt it clears the line, or exits
 * when the line is empty; Ctrl-D exits. Without a terminal, lines are read plainly. */
#include <errno.h>
#include <histedit.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/acp/app.h"
#include "tools/acp/safe.h"

#define HISTORY_SIZE 1000

struct chat {
    EditLine *el;
    History *hist;
    HistEvent ev;
    uv_poll_t in;
    bool in_inited;
    bool editing; /* a line is being edited: raw terminal, stdin polled */
    bool done;
    int status;
    char *line; /* a finished line, waiting for the loop to return */
    char *histfile;
    int hidden;  /* nesting of chat_output_begin() while editing */
    bool paused; /* editing stopped for a question of the agent's between turns */
};

static char *prompt(EditLine *el)
{
    return "> ";
}

/* --- the editor on the loop ------------------------------------------------------------ */

static void on_input(uv_poll_t *h, int status, int events)
{
    app *a = h->data;
    chat *ch = a->chat;
    int count = 0;
    const char *buf = el_gets(ch->el, &count);
    /* EL_UNBUFFERED: one character per call; the line is done at its newline. Ctrl-D on an
     * empty line is end of input. */
    if (!buf || count <= 0 || (count == 1 && buf[0] == 4)) {
        fputc('\n', stderr);
        ch->done = true;
        return;
    }
    if (buf[count - 1] != '\n') return;
    ch->line = strndup(buf, (size_t)count - 1);
    uv_poll_stop(&ch->in);
    el_set(ch->el, EL_UNBUFFERED, 0); /* the terminal is cooked again during the turn */
    ch->editing = false;
}

static void edit(app *a)
{
    chat *ch = a->chat;
    render_break(&a->r);
    fflush(stdout);
    app_busy(a, false);
    el_set(ch->el, EL_UNBUFFERED, 1); /* raw terminal, prompt shown */
    uv_poll_start(&ch->in, UV_READABLE, on_input);
    ch->editing = true;
}

static void stop_editing(chat *ch)
{
    if (!ch->editing) return;
    uv_poll_stop(&ch->in);
    el_set(ch->el, EL_UNBUFFERED, 0);
    ch->editing = false;
}

void chat_pause(app *a, bool pause)
{
    chat *ch = a->chat;
    if (!ch) return;
    if (pause && ch->editing) { /* the answer is read from the terminal, not by the editor */
        fputs("\r\033[K", stderr);
        stop_editing(ch);
        ch->paused = true;
    } else if (!pause && ch->paused) {
        ch->paused = false;
        edit(a);
    }
}

void chat_restore(app *a)
{
    if (a->chat) stop_editing(a->chat);
}

bool chat_interrupt(app *a)
{
    chat *ch = a->chat;
    if (!ch || !ch->editing) return false;
    const LineInfo *li = el_line(ch->el);
    if (li->lastchar == li->buffer) { /* an empty line: leave */
        fputc('\n', stderr);
        stop_editing(ch);
        ch->done = true;
        ch->status = EXIT_CANCELLED;
        return true;
    }
    /* A line with text: drop it and start over, as shells do. */
    el_cursor(ch->el, (int)(li->lastchar - li->cursor));
    el_deletestr(ch->el, (int)(li->lastchar - li->buffer));
    fputs("^C\n", stderr);
    el_set(ch->el, EL_REFRESH);
    return true;
}

void chat_output_begin(app *a)
{
    chat *ch = a->chat;
    if (!ch || !ch->editing || ch->hidden++) return;
    fputs("\r\033[K", stderr); /* the prompt line goes; it is drawn again below the output */
}

void chat_output_end(app *a)
{
    chat *ch = a->chat;
    if (!ch || !ch->editing || !ch->hidden || --ch->hidden) return;
    render_eol(&a->r);
    el_set(ch->el, EL_REFRESH);
}

/* Tab: completes a slash command from the agent's available_commands_update; several
 * matches are completed to their common prefix, then listed. */
static unsigned char complete(EditLine *el, int key)
{
    app *a = NULL;
    el_get(el, EL_CLIENTDATA, &a);
    const LineInfo *li = el_line(el);
    size_t n = (size_t)(li->cursor - li->buffer);
    if (!a || !n || li->buffer[0] != '/' || memchr(li->buffer, ' ', n)) return CC_ERROR;
    const char *typed = li->buffer + 1;
    size_t tn = n - 1, nmatch = 0, common = 0;
    const char *first = NULL;
    size_t i;
    json_t *name;
    json_array_foreach(a->commands, i, name)
    {
        const char *s = json_string_value(name);
        if (strncmp(s, typed, tn) != 0) continue;
        if (!nmatch++) {
            first = s;
            common = strlen(s);
        } else {
            size_t k = 0;
            while (k < common && s[k] == first[k]) k++;
            common = k;
        }
    }
    if (!nmatch) return CC_ERROR;
    if (common > tn) {
        char add[256];
        snprintf(add, sizeof add, "%.*s%s", (int)(common - tn), first + tn, nmatch == 1 ? " " : "");
        el_insertstr(el, add);
        return CC_REFRESH;
    }
    fputc('\n', stderr);
    json_array_foreach(a->commands, i, name) if (!strncmp(json_string_value(name), typed, tn))
        fprintf(stderr, "/%s  ", safe_line(json_string_value(name)));
    fputc('\n', stderr);
    return CC_REDISPLAY;
}

/* --- history --------------------------------------------------------------------------- */

static char *history_path(void)
{
    const char *env = getenv("ACP_HISTFILE");
    if (env) return *env ? strdup(env) : NULL;
    const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
    char *p = NULL;
    if (xdg && *xdg == '/') {
        if (asprintf(&p, "%s/acp/history", xdg) < 0) p = NULL;
    } else if (home && *home) {
        if (asprintf(&p, "%s/.local/state/acp/history", home) < 0) p = NULL;
    }
    return p;
}

/* mkdir -p of the file's directory, private: prompts may hold anything. */
static void make_parent(const char *file)
{
    char *d = strdup(file);
    if (!d) return;
    for (char *s = d + 1; *s; s++) {
        if (*s != '/') continue;
        *s = 0;
        if (mkdir(d, 0700) && errno != EEXIST) break;
        *s = '/';
    }
    free(d);
}

static int editor_open(app *a)
{
    chat *ch = a->chat;
    ch->el = el_init("acp", stdin, stderr, stderr);
    ch->hist = history_init();
    if (!ch->el || !ch->hist) return -1;
    history(ch->hist, &ch->ev, H_SETSIZE, HISTORY_SIZE);
    history(ch->hist, &ch->ev, H_SETUNIQUE, 1);
    ch->histfile = history_path();
    if (ch->histfile) history(ch->hist, &ch->ev, H_LOAD, ch->histfile);
    el_set(ch->el, EL_CLIENTDATA, a);
    el_set(ch->el, EL_EDITOR, "emacs");
    el_set(ch->el, EL_PROMPT, prompt);
    el_set(ch->el, EL_HIST, history, ch->hist);
    el_set(ch->el, EL_SIGNAL, 0); /* SIGINT is the loop's (uv_signal) */
    /* wide strings: libedit keeps the pointers (the narrow form leaks its copies) */
    el_wset(ch->el, EL_ADDFN, L"acp-complete", L"complete a slash command", complete);
    el_set(ch->el, EL_BIND, "^I", "acp-complete", NULL);
    el_source(ch->el, NULL); /* ~/.editrc */
    uv_poll_init(&a->loop, &ch->in, STDIN_FILENO);
    ch->in.data = a;
    ch->in_inited = true;
    return 0;
}

static void editor_close(app *a)
{
    chat *ch = a->chat;
    stop_editing(ch);
    if (ch->hist && ch->histfile) {
        make_parent(ch->histfile);
        history(ch->hist, &ch->ev, H_SAVE, ch->histfile);
    }
    if (ch->el) el_end(ch->el);
    if (ch->hist) history_end(ch->hist);
    if (ch->in_inited) {
        uv_close((uv_handle_t *)&ch->in, NULL);
        uv_run(&a->loop, UV_RUN_NOWAIT); /* ch lives on cmd_chat's stack: closed before it goes */
    }
    free(ch->histfile);
}

/* --- the conversation ---------------------------------------------------------------- */

/* A chat lives long and a turn may have carried a huge message: what libacp freed after it
 * goes back to the system now (glibc keeps freed memory in its heap), not at exit. Between
 * turns, at a person's pace, the walk over the heap costs nothing that shows. */
static void turn_done(void)
{
#ifdef __GLIBC__
    malloc_trim(0);
#endif
}

/* A turn's status that ends the chat: the agent is gone. Others are said and the chat goes
 * on. */
static bool fatal(int rc)
{
    return rc == EXIT_GONE;
}

static int plain(app *a)
{
    char *line = NULL;
    size_t cap = 0;
    int rc = 0;
    ssize_t n;
    while (!rc && (n = getline(&line, &cap, stdin)) >= 0) {
        if (n && line[n - 1] == '\n') line[--n] = 0;
        if (!n) continue;
        int st = app_turn(a, line);
        if (fatal(st)) rc = st;
        if (cap > ACP_BUF_KEEP) { /* getline keeps the longest line's size otherwise */
            free(line);
            line = NULL;
            cap = 0;
        }
        turn_done();
    }
    free(line);
    return rc;
}

static int edited(app *a)
{
    chat *ch = a->chat;
    if (editor_open(a)) {
        app_note(a, "cannot start the line editor");
        return EXIT_AGENT;
    }
    fprintf(stderr, "session %s; Ctrl-C cancels a reply, Ctrl-D exits\n",
            safe_line(acp_client_session_id(a->s)));
    edit(a);
    while (!ch->done) {
        if (ch->line) {
            char *line = ch->line;
            ch->line = NULL;
            if (*line) {
                history(ch->hist, &ch->ev, H_ENTER, line);
                int st = app_turn(a, line); /* outside any callback: the loop is ours */
                if (fatal(st)) {
                    ch->status = st;
                    ch->done = true;
                }
            }
            free(line);
            turn_done();
            if (!ch->done) edit(a);
            continue;
        }
        uv_run(&a->loop, UV_RUN_ONCE);
        if (!ch->done && acp_client_agent_gone(a->c)) {
            stop_editing(ch);
            ch->status = app_fail(a, "the chat ended", ACP_ECLOSED);
            ch->done = true;
        }
    }
    int rc = ch->status;
    editor_close(a);
    return rc;
}

int cmd_chat(app *a)
{
    chat ch = {0};
    a->commands = json_array(); /* before the session: the agent sends them right away */
    int rc = app_open(a);
    if (!rc) rc = app_session(a, "continue");
    if (!rc) {
        if (isatty(STDIN_FILENO)) {
            a->chat = &ch;
            rc = edited(a);
        } else {
            rc = plain(a);
        }
    }
    a->chat = NULL;
    free(ch.line);
    json_decref(a->commands);
    a->commands = NULL;
    return rc;
}
