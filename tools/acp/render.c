/* Text rendering of session updates: reply text streamed as it comes, tool calls one line
 * each with their status and diffs, plans as checklists and usage (both redrawn in place on a
 * terminal), notices, mode and config changes; colours only when stdout is a terminal.
 * --json prints each notification's params exactly as received, one per line. */
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <wchar.h>

#include "tools/acp/render.h"

#define DIM    "\033[2m"
#define BOLD   "\033[1m"
#define GREEN  "\033[32m"
#define RED    "\033[31m"
#define YELLOW "\033[33m"
#define CYAN   "\033[36m"
#define RESET  "\033[0m"

#define DIFF_LINES 24 /* of one file's diff */
#define TEXT_LINES 6  /* of a command's output or a failure's reason */

void render_init(render *r, FILE *out, bool json)
{
    memset(r, 0, sizeof *r);
    r->out = out;
    r->json = json;
    r->tty = !json && isatty(fileno(out));
    r->color = r->tty;
    r->at_bol = true;
    r->tools = json_object();
    r->config = json_object();
}

void render_free(render *r)
{
    json_decref(r->tools);
    json_decref(r->config);
}

static const char *col(render *r, const char *c)
{
    return r->color ? c : "";
}

static const char *str(json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

void render_status(render *r, const char *msg)
{
    if (r->json || !isatty(STDERR_FILENO)) return;
    render_eol(r);
    fprintf(stderr, "\r\033[K" DIM "%s" RESET, msg);
    fflush(stderr);
    r->status = true;
}

void render_status_clear(render *r)
{
    if (!r->status) return;
    fputs("\r\033[K", stderr);
    fflush(stderr);
    r->status = false;
}

void render_eol(render *r)
{
    if (!r->at_bol) fputc('\n', r->out);
    r->at_bol = true;
    fflush(r->out);
}

void render_break(render *r)
{
    render_status_clear(r);
    render_eol(r);
    r->block = BLOCK_NONE;
}

/* Starts a block of whole lines; a block of the same kind printed last is drawn over. */
static void block_begin(render *r, enum render_block kind)
{
    render_status_clear(r);
    if (r->tty && r->block == kind && r->at_bol && r->block_lines > 0)
        fprintf(r->out, "\033[%dA\r\033[J", r->block_lines);
    else
        render_eol(r);
    r->block = kind;
    r->block_lines = 0;
}

static int columns(render *r)
{
    struct winsize ws;
    if (r->tty && ioctl(fileno(r->out), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 8) return ws.ws_col;
    return 0;
}

/* Bytes of s that fit in cols terminal columns (0: all): an entry of a redrawn block must stay
 * one line, or the redraw would miscount. */
static int fit(const char *s, int cols)
{
    size_t n = strlen(s);
    if (cols <= 0) return (int)n;
    mbstate_t st = {0};
    size_t i = 0;
    int used = 0;
    while (i < n) {
        wchar_t wc;
        size_t k = mbrtowc(&wc, s + i, n - i, &st);
        int w = 1;
        if (k == (size_t)-1 || k == (size_t)-2) {
            k = 1;
            memset(&st, 0, sizeof st);
        } else if (k == 0) {
            break;
        } else if ((w = wcwidth(wc)) < 0) {
            w = 1;
        }
        if (used + w > cols) break;
        used += w;
        i += k;
    }
    return (int)i;
}

static void block_line(render *r, const char *prefix, const char *text, const char *suffix)
{
    int cols = columns(r), room = 0; /* 0: not a terminal, no limit */
    if (cols) {
        room = cols - (int)strlen(prefix) - 1;
        if (room < 4) room = 4;
    }
    fprintf(r->out, "%s%.*s%s\n", prefix, fit(text, room), text, suffix);
    r->block_lines++;
}

/* A line of its own that no block may draw over. */
static void line_begin(render *r)
{
    render_status_clear(r);
    render_eol(r);
    r->block = BLOCK_NONE;
}

static void put_text(render *r, const char *s, size_t n)
{
    if (!n) return;
    fwrite(s, 1, n, r->out);
    r->at_bol = s[n - 1] == '\n';
    r->block = BLOCK_NONE;
}

static void content_text(render *r, json_t *content)
{
    const char *type = str(content, "type");
    if (type && strcmp(type, "text") == 0) {
        json_t *t = json_object_get(content, "text");
        put_text(r, json_string_value(t) ? json_string_value(t) : "", json_string_length(t));
    } else if (type && strcmp(type, "resource_link") == 0) {
        fprintf(r->out, "[%s]", str(content, "uri"));
        r->at_bol = false;
    } else if (type) {
        fprintf(r->out, "[%s]", type);
        r->at_bol = false;
    }
}

/* The first lines of a text, indented under its tool call. */
static void text_head(render *r, const char *text, int max)
{
    const char *p = text;
    for (int i = 0; *p && i < max; i++) {
        const char *nl = strchr(p, '\n');
        int len = nl ? (int)(nl - p) : (int)strlen(p);
        fprintf(r->out, "  %s│%s %.*s\n", col(r, DIM), col(r, RESET), len, p);
        p = nl ? nl + 1 : p + len;
    }
    if (*p) fprintf(r->out, "  %s│ …%s\n", col(r, DIM), col(r, RESET));
}

/* Diffs once per tool call and path; text for commands (kind execute) and failures. */
static void tool_content(render *r, json_t *tool, json_t *content, const char *status,
                         const char *kind)
{
    json_t *shown = json_object_get(tool, "shown");
    size_t i;
    json_t *c;
    json_array_foreach(content, i, c)
    {
        const char *type = str(c, "type");
        if (type && !strcmp(type, "diff")) {
            const char *path = str(c, "path");
            json_t *nt = json_object_get(c, "newText"), *ot = json_object_get(c, "oldText");
            if (!path || !json_is_string(nt) || json_object_get(shown, path)) continue;
            json_object_set_new(shown, path, json_true());
            render_diff(r->out, r->color, path, json_string_value(ot), json_string_length(ot),
                        json_string_value(nt), json_string_length(nt), DIFF_LINES);
        } else if (type && !strcmp(type, "content") && status &&
                   (!strcmp(status, "failed") ||
                    (kind && !strcmp(kind, "execute") && !strcmp(status, "completed")))) {
            const char *text = str(json_object_get(c, "content"), "text");
            if (text && *text) text_head(r, text, TEXT_LINES);
        }
    }
}

static void tool_call(render *r, json_t *u, bool first)
{
    const char *id = str(u, "toolCallId");
    if (!id) return;
    json_t *tool = json_object_get(r->tools, id);
    if (!tool) {
        tool = json_pack("{s:{}}", "shown");
        json_object_set_new(r->tools, id, tool);
    }
    /* kept for later updates, which may omit them, and for permission requests */
    for (const char *const *k = (const char *const[]){"title", "kind", "locations", NULL}; *k; k++)
        if (json_is_string(json_object_get(u, *k)) || json_is_array(json_object_get(u, *k)))
            json_object_set(tool, *k, json_object_get(u, *k));
    const char *title = str(tool, "title"), *kind = str(tool, "kind");
    const char *status = str(u, "status");
    json_t *content = json_object_get(u, "content");
    if (first || status) {
        const char *st = status ? status : "pending";
        const char *c = !strcmp(st, "completed") ? GREEN : !strcmp(st, "failed") ? RED : CYAN;
        line_begin(r);
        fprintf(r->out, "%s[tool]%s %s%s%s %s%s%s\n", col(r, DIM), col(r, RESET),
                title ? title : id, kind ? " · " : "", kind ? kind : "", col(r, c), st,
                col(r, RESET));
    }
    if (json_array_size(content)) {
        line_begin(r);
        tool_content(r, tool, content, status, kind);
    }
}

static void plan(render *r, json_t *u)
{
    block_begin(r, BLOCK_PLAN);
    fprintf(r->out, "%sPlan:%s\n", col(r, BOLD), col(r, RESET));
    r->block_lines++;
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(u, "entries"), i, e)
    {
        const char *st = str(e, "status");
        const char *mark = !st                              ? " "
                           : strcmp(st, "completed") == 0   ? "x"
                           : strcmp(st, "in_progress") == 0 ? "~"
                                                            : " ";
        char prefix[16];
        snprintf(prefix, sizeof prefix, "  [%s] ", mark);
        const char *content = str(e, "content");
        block_line(r, prefix, content ? content : "", "");
    }
    fflush(r->out);
}

static void usage(render *r, json_t *u)
{
    json_t *used = json_object_get(u, "used"), *size = json_object_get(u, "size");
    if (!json_is_integer(used) || !json_is_integer(size)) return;
    json_int_t n = json_integer_value(used), of = json_integer_value(size);
    char line[256];
    int k = snprintf(line, sizeof line, "%lld/%lld tokens", (long long)n, (long long)of);
    if (of > 0) k += snprintf(line + k, sizeof line - k, " (%lld%%)", (long long)(n * 100 / of));
    json_t *cost = json_object_get(u, "cost");
    json_t *amount = json_object_get(cost, "amount");
    if (json_is_number(amount))
        snprintf(line + k, sizeof line - k, ", %.2f %s", json_number_value(amount),
                 str(cost, "currency") ? str(cost, "currency") : "");
    block_begin(r, BLOCK_USAGE);
    char prefix[32];
    snprintf(prefix, sizeof prefix, "%s[usage]%s ", col(r, DIM), col(r, RESET));
    block_line(r, prefix, line, "");
    fflush(r->out);
}

static void notice(render *r, json_t *u)
{
    const char *sev = str(u, "severity"), *title = str(u, "title"), *desc = str(u, "description");
    const char *c = !sev ? "" : !strcmp(sev, "error") ? RED : !strcmp(sev, "warning") ? YELLOW : "";
    line_begin(r);
    fprintf(r->out, "%s[notice]%s %s%s%s %s%s%s\n", col(r, DIM), col(r, RESET), col(r, c),
            sev ? sev : "info", col(r, RESET), title ? title : "", desc && *desc ? ": " : "",
            desc && *desc ? desc : "");
}

/* A config option's current value as text ("true"/"false" for booleans). */
static const char *value_text(json_t *v, char *buf, size_t n)
{
    if (json_is_string(v)) return json_string_value(v);
    if (json_is_boolean(v)) return json_is_true(v) ? "true" : "false";
    char *d = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    snprintf(buf, n, "%s", d ? d : "?");
    free(d);
    return buf;
}

static void config_seed(render *r, json_t *options)
{
    json_object_clear(r->config);
    size_t i;
    json_t *o;
    json_array_foreach(options, i, o)
    {
        const char *id = str(o, "id");
        json_t *v = json_object_get(o, "currentValue");
        if (id && v) json_object_set(r->config, id, v);
    }
}

static void config_changed(render *r, json_t *u)
{
    json_t *options = json_object_get(u, "configOptions");
    size_t i;
    json_t *o;
    json_array_foreach(options, i, o)
    {
        const char *id = str(o, "id"), *cat = str(o, "category");
        json_t *v = json_object_get(o, "currentValue");
        if (!id || !v || json_equal(v, json_object_get(r->config, id))) continue;
        if (r->has_modes && cat && !strcmp(cat, "mode")) continue; /* [mode] says it */
        char buf[128];
        line_begin(r);
        fprintf(r->out, "%s[config]%s %s: %s\n", col(r, DIM), col(r, RESET), id,
                value_text(v, buf, sizeof buf));
    }
    config_seed(r, options);
}

void render_session(render *r, acp_client_session *s)
{
    r->has_modes = acp_client_session_modes(s) != NULL;
    config_seed(r, acp_client_session_config_options(s));
}

static void text_chunk(render *r, acp_update_kind k, json_t *j)
{
    /* A new message starts when the kind changes or the messageId does. */
    const char *mid = str(j, "messageId");
    bool new_msg = k != r->last || (mid && strcmp(mid, r->last_msg) != 0);
    snprintf(r->last_msg, sizeof r->last_msg, "%s", mid ? mid : "");
    render_status_clear(r);
    if (new_msg && k == r->last && k == ACP_UPDATE_USER_MESSAGE_CHUNK) {
        fputs(col(r, RESET), r->out);
        r->at_bol = false;
        render_eol(r);
        fprintf(r->out, "%s> ", col(r, BOLD));
    } else if (new_msg && k == r->last && k == ACP_UPDATE_AGENT_MESSAGE_CHUNK) {
        render_eol(r);
    } else if (k != r->last) {
        render_eol(r);
        if (k == ACP_UPDATE_USER_MESSAGE_CHUNK) fprintf(r->out, "%s> ", col(r, BOLD));
        if (r->last == ACP_UPDATE_USER_MESSAGE_CHUNK) fputc('\n', r->out);
    }
    if (k == ACP_UPDATE_AGENT_THOUGHT_CHUNK) fputs(col(r, DIM), r->out);
    content_text(r, json_object_get(j, "content"));
    if (k != ACP_UPDATE_AGENT_MESSAGE_CHUNK) fputs(col(r, RESET), r->out);
    r->block = BLOCK_NONE;
}

void render_update(render *r, const acp_update *u)
{
    if (r->skip_replay && u->replay) return;
    if (r->json) {
        render_status_clear(r);
        fwrite(u->params.p, 1, u->params.n, r->out);
        fputc('\n', r->out);
        return;
    }
    acp_update_kind k = u->kind;
    if (k == ACP_UPDATE_OTHER || k == ACP_UPDATE_AVAILABLE_COMMANDS || k == ACP_UPDATE_COMPACTION ||
        k == ACP_UPDATE_COMPACTION_SUMMARY)
        return; /* nothing for a person to read (chat completes the commands) */
    if (k == ACP_UPDATE_USER_MESSAGE_CHUNK && !r->show_user) return;
    if (k == ACP_UPDATE_AGENT_THOUGHT_CHUNK && !r->color) return;
    json_t *j = json_loadb(u->update.p, u->update.n, 0, NULL);
    if (!j) return;
    switch (k) {
    case ACP_UPDATE_USER_MESSAGE_CHUNK:
    case ACP_UPDATE_AGENT_MESSAGE_CHUNK:
    case ACP_UPDATE_AGENT_THOUGHT_CHUNK:
        text_chunk(r, k, j);
        break;
    case ACP_UPDATE_TOOL_CALL:
    case ACP_UPDATE_TOOL_CALL_UPDATE:
        tool_call(r, j, k == ACP_UPDATE_TOOL_CALL);
        break;
    case ACP_UPDATE_PLAN:
        plan(r, j);
        break;
    case ACP_UPDATE_USAGE:
        usage(r, j);
        break;
    case ACP_UPDATE_NOTICE:
        notice(r, j);
        break;
    case ACP_UPDATE_CURRENT_MODE:
        line_begin(r);
        fprintf(r->out, "%s[mode]%s %s\n", col(r, DIM), col(r, RESET),
                str(j, "currentModeId") ? str(j, "currentModeId") : "?");
        break;
    case ACP_UPDATE_CONFIG_OPTION:
        config_changed(r, j);
        break;
    case ACP_UPDATE_SESSION_INFO:
        if (str(j, "title")) {
            line_begin(r);
            fprintf(r->out, "%s[title]%s %s\n", col(r, DIM), col(r, RESET), str(j, "title"));
        }
        break;
    default:
        break;
    }
    r->last = k;
    json_decref(j);
    fflush(r->out); /* people read as it comes; --json stays block-buffered */
}

void render_result(render *r, json_t *obj)
{
    render_status_clear(r);
    char *s = json_dumps(obj, JSON_COMPACT);
    if (s) fprintf(r->out, "%s\n", s);
    free(s);
    json_decref(obj);
    fflush(r->out);
}
