/* SPDX-License-Identifier: Apache-2.0 */
/* Text rendering of session updates: reply text streamed as it comes, tool calls one line
 * each with their status and diffs, plans as checklists and usage (both redrawn in place on a
 * terminal), notices, mode and config changes; colours only when stdout is a terminal.
 * --json prints each notification's params exactly as received, one per line; text is drawn
 * from libacp's typed views (acp/update.h), read leniently, as the reference SDKs do. Every
 * string of the agent's goes through safe.h on its way out: the escapes and colours on the
 * screen are ours alone. */
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <wchar.h>

#include "acp/update.h"
#include "tools/acp/render.h"
#include "tools/acp/safe.h"

#define DIM    "\033[2m"
#define BOLD   "\033[1m"
#define GREEN  "\033[32m"
#define RED    "\033[31m"
#define YELLOW "\033[33m"
#define CYAN   "\033[36m"
#define RESET  "\033[0m"

#define DIFF_LINES 24 /* of one file's diff */
#define TEXT_LINES 6  /* of a command's output or a failure's reason */

bool render_dumb(void)
{
    const char *term = getenv("TERM");
    return term && !strcmp(term, "dumb");
}

void render_init(render *r, FILE *out, bool json, int color)
{
    memset(r, 0, sizeof *r);
    r->out = out;
    r->json = json;
    r->tty = !json && isatty(fileno(out)) && !render_dumb();
    const char *no_color = getenv("NO_COLOR"); /* no-color.org: set and not empty */
    r->color = !json && (color > 0 || (color < 0 && r->tty && !(no_color && *no_color)));
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
    if (r->json || !isatty(STDERR_FILENO) || render_dumb()) return;
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

/* Starts a block of whole lines; a block of the same kind and speaker (the session or one
 * subagent) printed last is drawn over: a subagent's plan never replaces its parent's. */
static void block_begin(render *r, enum render_block kind)
{
    const char *label = r->label ? r->label : "";
    render_status_clear(r);
    if (r->tty && r->block == kind && !strcmp(r->block_label, label) && r->at_bol &&
        r->block_lines > 0)
        fprintf(r->out, "\033[%dA\r\033[J", r->block_lines);
    else
        render_eol(r);
    r->block = kind;
    snprintf(r->block_label, sizeof r->block_label, "%s", label);
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
    text = safe_line(text);          /* one line each, or the redraw would miscount */
    int cols = columns(r), room = 0; /* 0: not a terminal, no limit */
    if (cols) {
        room = cols - (int)strlen(prefix) - 1;
        if (room < 4) room = 4;
    }
    fprintf(r->out, "%s%.*s%s\n", prefix, fit(text, room), text, suffix);
    r->block_lines++;
}

/* The label of what a subagent session says, where its line starts ("" for the session). */
static const char *subagent_label(render *r, char *buf, size_t cap)
{
    buf[0] = 0;
    if (r->label)
        snprintf(buf, cap, "%s[subagent %s]%s ", col(r, DIM), safe_line(r->label), col(r, RESET));
    return buf;
}

static void subagent_tag(render *r)
{
    char tag[256];
    fputs(subagent_label(r, tag, sizeof tag), r->out);
}

static void line_begin(render *r)
{
    render_status_clear(r);
    render_eol(r);
    r->block = BLOCK_NONE;
}

static void put_text(render *r, const char *s, size_t n)
{
    if (!n) return;
    safe_write(r->out, s, n, SAFE_TEXT);
    r->at_bol = s[n - 1] == '\n';
    r->block = BLOCK_NONE;
}

static void content_text(render *r, const acp_content_view *c)
{
    switch (c->type) {
    case ACP_CONTENT_TEXT:
        put_text(r, c->text, strlen(c->text));
        break;
    case ACP_CONTENT_RESOURCE_LINK:
    case ACP_CONTENT_RESOURCE:
        fprintf(r->out, "[%s]", safe_line(c->uri));
        r->at_bol = false;
        break;
    case ACP_CONTENT_IMAGE:
        fprintf(r->out, "[image %s]", safe_line(c->mime_type));
        r->at_bol = false;
        break;
    case ACP_CONTENT_AUDIO:
        fprintf(r->out, "[audio %s]", safe_line(c->mime_type));
        r->at_bol = false;
        break;
    }
}

/* The first lines of a text, indented under its tool call. */
static void text_head(render *r, const char *text, int max)
{
    const char *p = text;
    for (int i = 0; *p && i < max; i++) {
        const char *nl = strchr(p, '\n');
        int len = nl ? (int)(nl - p) : (int)strlen(p);
        fprintf(r->out, "  %s│%s ", col(r, DIM), col(r, RESET));
        safe_write(r->out, p, (size_t)len, SAFE_LINE);
        fputc('\n', r->out);
        p = nl ? nl + 1 : p + len;
    }
    if (*p) fprintf(r->out, "  %s│ …%s\n", col(r, DIM), col(r, RESET));
}

/* Diffs once per tool call and path; text for commands (kind execute) and failures. */
static void tool_content(render *r, json_t *tool, const acp_tool_call_view *t, const char *kind)
{
    json_t *shown = json_object_get(tool, "shown");
    bool failed = t->status == ACP_TOOL_STATUS_FAILED;
    bool output = failed || (t->status == ACP_TOOL_STATUS_COMPLETED && kind &&
                             !strcmp(kind, acp_tool_kind_name(ACP_TOOL_KIND_EXECUTE)));
    for (size_t i = 0; i < t->ncontent; i++) {
        const acp_tool_content_view *c = &t->content[i];
        if (c->type == ACP_TOOL_DIFF && !json_object_get(shown, c->diff.path)) {
            json_object_set_new(shown, c->diff.path, json_true());
            render_diff(r->out, r->color, c->diff.path, c->diff.old_text,
                        c->diff.old_text ? strlen(c->diff.old_text) : 0, c->diff.new_text,
                        strlen(c->diff.new_text), DIFF_LINES);
        } else if (c->type == ACP_TOOL_CONTENT && output && c->content.type == ACP_CONTENT_TEXT &&
                   *c->content.text) {
            text_head(r, c->content.text, TEXT_LINES);
        }
    }
}

static void tool_call(render *r, const acp_tool_call_view *t, bool first)
{
    json_t *tool = json_object_get(r->tools, t->tool_call_id);
    if (!tool) {
        tool = json_pack("{s:{}}", "shown");
        json_object_set_new(r->tools, t->tool_call_id, tool);
    }
    /* kept for later updates, which may omit them, and for permission requests */
    if (t->title) json_object_set_new(tool, "title", json_string(t->title));
    if (t->kind) json_object_set_new(tool, "kind", json_string(acp_tool_kind_name(t->kind)));
    if (t->has_locations) {
        json_t *paths = json_array();
        for (size_t i = 0; i < t->nlocations; i++)
            json_array_append_new(paths, json_pack("{s:s}", "path", t->locations[i].path));
        json_object_set_new(tool, "locations", paths);
    }
    const char *title = str(tool, "title"), *kind = str(tool, "kind");
    if (first || t->status) {
        acp_tool_status st = t->status ? t->status : ACP_TOOL_STATUS_PENDING;
        const char *c = st == ACP_TOOL_STATUS_COMPLETED ? GREEN
                        : st == ACP_TOOL_STATUS_FAILED  ? RED
                                                        : CYAN;
        bool show_kind = kind && strcmp(kind, acp_tool_kind_name(ACP_TOOL_KIND_OTHER)) != 0;
        line_begin(r);
        subagent_tag(r);
        fprintf(r->out, "%s[tool]%s %s%s%s %s%s%s\n", col(r, DIM), col(r, RESET),
                safe_line(title ? title : t->tool_call_id), show_kind ? " · " : "",
                show_kind ? safe_line(kind) : "", col(r, c), acp_tool_status_name(st),
                col(r, RESET));
    }
    if (t->ncontent) {
        line_begin(r);
        tool_content(r, tool, t, kind);
    }
}

static void plan(render *r, const acp_plan_view *p)
{
    block_begin(r, BLOCK_PLAN);
    subagent_tag(r);
    fprintf(r->out, "%sPlan:%s\n", col(r, BOLD), col(r, RESET));
    r->block_lines++;
    for (size_t i = 0; i < p->nentries; i++) {
        acp_plan_status st = p->entries[i].status;
        const char *prefix = st == ACP_PLAN_STATUS_COMPLETED     ? "  [x] "
                             : st == ACP_PLAN_STATUS_IN_PROGRESS ? "  [~] "
                                                                 : "  [ ] ";
        block_line(r, prefix, p->entries[i].content, "");
    }
    fflush(r->out);
}

static void usage(render *r, const acp_usage_view *u)
{
    char line[256];
    int k = snprintf(line, sizeof line, "%lld/%lld tokens", (long long)u->used, (long long)u->size);
    if (u->size > 0)
        k += snprintf(line + k, sizeof line - k, " (%lld%%)", (long long)(u->used * 100 / u->size));
    if (u->has_cost)
        snprintf(line + k, sizeof line - k, ", %.2f %s", u->cost_amount,
                 u->cost_currency); /* the agent's: block_line makes the line safe */
    block_begin(r, BLOCK_USAGE);
    char tag[256], prefix[320];
    snprintf(prefix, sizeof prefix, "%s%s[usage]%s ", subagent_label(r, tag, sizeof tag),
             col(r, DIM), col(r, RESET));
    block_line(r, prefix, line, "");
    fflush(r->out);
}

static void notice(render *r, const acp_notice_view *n)
{
    const char *c = n->severity == ACP_NOTICE_ERROR     ? RED
                    : n->severity == ACP_NOTICE_WARNING ? YELLOW
                                                        : "";
    bool desc = n->description && *n->description;
    line_begin(r);
    subagent_tag(r);
    fprintf(r->out, "%s[notice]%s %s%s%s %s%s", col(r, DIM), col(r, RESET), col(r, c),
            safe_line(n->severity_text), col(r, RESET), safe_line(n->title), desc ? ": " : "");
    if (desc) safe_write(r->out, n->description, strlen(n->description), SAFE_TEXT);
    fputc('\n', r->out);
}

/* A config option's current value as text ("true"/"false" for booleans), from the JSON of a
 * new/load/resume result. */
static json_t *value_json(json_t *v)
{
    if (json_is_boolean(v)) return json_string(json_is_true(v) ? "true" : "false");
    return json_is_string(v) ? json_incref(v) : NULL;
}

static void config_changed(render *r, const acp_config_view *cv)
{
    json_t *now = json_object();
    for (size_t i = 0; i < cv->noptions; i++) {
        const acp_config_option_view *o = &cv->options[i];
        const char *v = o->boolean ? (o->current_bool ? "true" : "false") : o->current_value;
        json_object_set_new(now, o->id, json_string(v));
        const char *was = str(r->config, o->id);
        if (was && !strcmp(was, v)) continue;
        if (r->has_modes && o->category == ACP_CONFIG_CATEGORY_MODE) continue; /* [mode] says it */
        line_begin(r);
        fprintf(r->out, "%s[config]%s %s: %s\n", col(r, DIM), col(r, RESET), safe_line(o->id),
                safe_line(v));
    }
    json_decref(r->config);
    r->config = now;
}

void render_session(render *r, acp_client_session *s)
{
    r->has_modes = acp_client_session_modes(s) != NULL;
    json_object_clear(r->config);
    size_t i;
    json_t *o;
    json_array_foreach(acp_client_session_config_options(s), i, o)
    {
        json_t *v = value_json(json_object_get(o, "currentValue"));
        if (str(o, "id") && v)
            json_object_set_new(r->config, str(o, "id"), v);
        else
            json_decref(v);
    }
}

static void text_chunk(render *r, acp_update_kind k, const acp_chunk_view *c)
{
    /* Another speaker (a subagent, or back to the session) starts a message of its own. */
    const char *label = r->label ? r->label : "";
    if (strcmp(label, r->shown_label)) {
        snprintf(r->shown_label, sizeof r->shown_label, "%s", label);
        render_eol(r);
        r->last = ACP_UPDATE_OTHER;
    }
    /* A new message starts when the kind changes or the messageId does. */
    const char *mid = c->message_id;
    bool new_msg = k != r->last || (mid && strcmp(mid, r->last_msg) != 0);
    snprintf(r->last_msg, sizeof r->last_msg, "%s", mid ? mid : "");
    render_status_clear(r);
    if (new_msg && k == r->last && k == ACP_UPDATE_USER_MESSAGE_CHUNK) {
        fputs(col(r, RESET), r->out);
        r->at_bol = false;
        render_eol(r);
        subagent_tag(r);
        fprintf(r->out, "%s> ", col(r, BOLD));
    } else if (new_msg && k == r->last && k == ACP_UPDATE_AGENT_MESSAGE_CHUNK) {
        render_eol(r);
        subagent_tag(r);
    } else if (k != r->last) {
        render_eol(r);
        if (r->last == ACP_UPDATE_USER_MESSAGE_CHUNK) fputc('\n', r->out);
        subagent_tag(r);
        if (k == ACP_UPDATE_USER_MESSAGE_CHUNK) fprintf(r->out, "%s> ", col(r, BOLD));
    }
    if (k == ACP_UPDATE_AGENT_THOUGHT_CHUNK) fputs(col(r, DIM), r->out);
    content_text(r, &c->content);
    if (k != ACP_UPDATE_AGENT_MESSAGE_CHUNK) fputs(col(r, RESET), r->out);
    r->block = BLOCK_NONE;
}

void render_update(render *r, const acp_update *u, const acp_update_view *v)
{
    if (r->skip_replay && u->replay) return;
    if (r->json) {
        render_status_clear(r);
        fwrite(u->params.p, 1, u->params.n, r->out);
        fputc('\n', r->out);
        return;
    }
    if (!v) return; /* not an update the schema allows: nothing to show */
    acp_update_kind k = v->kind;
    if (k == ACP_UPDATE_USER_MESSAGE_CHUNK && !r->show_user) return;
    if (k == ACP_UPDATE_AGENT_THOUGHT_CHUNK && !r->color) return;
    switch (k) {
    case ACP_UPDATE_USER_MESSAGE_CHUNK:
    case ACP_UPDATE_AGENT_MESSAGE_CHUNK:
    case ACP_UPDATE_AGENT_THOUGHT_CHUNK:
        text_chunk(r, k, &v->chunk);
        break;
    case ACP_UPDATE_TOOL_CALL:
    case ACP_UPDATE_TOOL_CALL_UPDATE:
        tool_call(r, &v->tool_call, k == ACP_UPDATE_TOOL_CALL);
        break;
    case ACP_UPDATE_PLAN:
        plan(r, &v->plan);
        break;
    case ACP_UPDATE_USAGE:
        usage(r, &v->usage);
        break;
    case ACP_UPDATE_NOTICE:
        notice(r, &v->notice);
        break;
    case ACP_UPDATE_CURRENT_MODE:
        line_begin(r);
        fprintf(r->out, "%s[mode]%s %s\n", col(r, DIM), col(r, RESET),
                safe_line(v->mode.current_mode_id));
        break;
    case ACP_UPDATE_CONFIG_OPTION:
        config_changed(r, &v->config);
        break;
    case ACP_UPDATE_SESSION_INFO:
        if (v->info.title_patch == ACP_PATCH_SET) {
            line_begin(r);
            fprintf(r->out, "%s[title]%s %s\n", col(r, DIM), col(r, RESET),
                    safe_line(v->info.title));
        }
        break;
    default:
        return; /* commands (chat completes them), compaction, unknown kinds: not for reading */
    }
    r->last = k;
    fflush(r->out); /* people read as it comes; --json stays block-buffered */
}

void render_subagent(render *r, const char *label, const json_t *sub)
{
    if (r->json) return; /* the update itself went out raw */
    const json_t *st = json_object_get(sub, "state");
    const char *state = json_string_value(json_object_get(st, "state"));
    const char *why = json_string_value(json_object_get(st, "stopReason"));
    line_begin(r);
    fprintf(r->out, "%s[subagent %s]%s %s%s%s%s\n", col(r, DIM), safe_line(label), col(r, RESET),
            state ? safe_line(state) : "announced", why ? " (" : "", why ? safe_line(why) : "",
            why ? ")" : "");
    r->shown_label[0] = 0;
    r->last = ACP_UPDATE_OTHER;
    fflush(r->out);
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
