/* Text rendering of session updates: reply text streamed as it comes, tool calls one line
 * each with their status, plans as checklists; colours only when stdout is a terminal.
 * --json prints each notification's params exactly as received, one per line. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/acp/render.h"

#define DIM   "\033[2m"
#define BOLD  "\033[1m"
#define GREEN "\033[32m"
#define RED   "\033[31m"
#define CYAN  "\033[36m"
#define RESET "\033[0m"

void render_init(render *r, FILE *out, bool json)
{
    memset(r, 0, sizeof *r);
    r->out = out;
    r->json = json;
    r->color = !json && isatty(fileno(out));
    r->at_bol = true;
    r->tools = json_object();
}

void render_free(render *r)
{
    json_decref(r->tools);
}

static const char *col(render *r, const char *c)
{
    return r->color ? c : "";
}

void render_status(render *r, const char *msg)
{
    if (r->json || !isatty(STDERR_FILENO)) return;
    render_eol(r);
    fprintf(stderr, "\033[2m%s\033[0m", msg);
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

static void put_text(render *r, const char *s, size_t n)
{
    if (!n) return;
    fwrite(s, 1, n, r->out);
    r->at_bol = s[n - 1] == '\n';
}

static void content_text(render *r, json_t *content)
{
    const char *type = json_string_value(json_object_get(content, "type"));
    if (type && strcmp(type, "text") == 0) {
        json_t *t = json_object_get(content, "text");
        put_text(r, json_string_value(t) ? json_string_value(t) : "", json_string_length(t));
    } else if (type && strcmp(type, "resource_link") == 0) {
        fprintf(r->out, "[%s]", json_string_value(json_object_get(content, "uri")));
        r->at_bol = false;
    } else if (type) {
        fprintf(r->out, "[%s]", type);
        r->at_bol = false;
    }
}

static void tool_line(render *r, json_t *u, bool first)
{
    const char *id = json_string_value(json_object_get(u, "toolCallId"));
    const char *title = json_string_value(json_object_get(u, "title"));
    const char *status = json_string_value(json_object_get(u, "status"));
    if (id && title) json_object_set_new(r->tools, id, json_string(title));
    if (!title && id) title = json_string_value(json_object_get(r->tools, id));
    if (!first && !status) return; /* content-only updates are not worth a line */
    if (!status) status = "pending";
    const char *c = strcmp(status, "completed") == 0 ? GREEN
                    : strcmp(status, "failed") == 0  ? RED
                                                     : CYAN;
    render_eol(r);
    const char *kind = json_string_value(json_object_get(u, "kind"));
    fprintf(r->out, "%s[tool]%s %s%s%s %s%s%s\n", col(r, DIM), col(r, RESET), title ? title : id,
            kind ? " · " : "", kind ? kind : "", col(r, c), status, col(r, RESET));
}

static void plan(render *r, json_t *u)
{
    render_eol(r);
    fprintf(r->out, "%sPlan:%s\n", col(r, BOLD), col(r, RESET));
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(u, "entries"), i, e)
    {
        const char *st = json_string_value(json_object_get(e, "status"));
        const char *mark = !st                              ? " "
                           : strcmp(st, "completed") == 0   ? "x"
                           : strcmp(st, "in_progress") == 0 ? "~"
                                                            : " ";
        fprintf(r->out, "  [%s] %s\n", mark, json_string_value(json_object_get(e, "content")));
    }
}

void render_update(render *r, const acp_update *u)
{
    if (r->skip_replay && u->replay) return;
    render_status_clear(r);
    if (r->json) {
        fwrite(u->params.p, 1, u->params.n, r->out);
        fputc('\n', r->out);
        return;
    }
    acp_update_kind k = u->kind;
    bool text_kind = k == ACP_UPDATE_AGENT_MESSAGE_CHUNK || k == ACP_UPDATE_USER_MESSAGE_CHUNK ||
                     k == ACP_UPDATE_AGENT_THOUGHT_CHUNK;
    if (!text_kind && k != ACP_UPDATE_TOOL_CALL && k != ACP_UPDATE_TOOL_CALL_UPDATE &&
        k != ACP_UPDATE_PLAN && k != ACP_UPDATE_SESSION_INFO)
        return; /* commands, usage, modes, unknown kinds: nothing for a person to read */
    if (k == ACP_UPDATE_USER_MESSAGE_CHUNK && !r->show_user) return;
    if (k == ACP_UPDATE_AGENT_THOUGHT_CHUNK && !r->color) return;
    json_error_t err;
    json_t *j = json_loadb(u->update.p, u->update.n, 0, &err);
    if (!j) return;
    if (text_kind) {
        /* A new message starts when the kind changes or the messageId does. */
        const char *mid = json_string_value(json_object_get(j, "messageId"));
        bool new_msg = k != r->last || (mid && strcmp(mid, r->last_msg) != 0);
        snprintf(r->last_msg, sizeof r->last_msg, "%s", mid ? mid : "");
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
        fflush(r->out);
    } else if (k == ACP_UPDATE_TOOL_CALL || k == ACP_UPDATE_TOOL_CALL_UPDATE) {
        tool_line(r, j, k == ACP_UPDATE_TOOL_CALL);
    } else if (k == ACP_UPDATE_PLAN) {
        plan(r, j);
    } else if (k == ACP_UPDATE_SESSION_INFO) {
        const char *title = json_string_value(json_object_get(j, "title"));
        if (title) {
            render_eol(r);
            fprintf(r->out, "%s[title]%s %s\n", col(r, DIM), col(r, RESET), title);
        }
    }
    r->last = k;
    json_decref(j);
    fflush(r->out); /* people read as it comes; --json stays block-buffered */
}

void render_result(render *r, json_t *obj)
{
    char *s = json_dumps(obj, JSON_COMPACT);
    if (s) fprintf(r->out, "%s\n", s);
    free(s);
    json_decref(obj);
    fflush(r->out);
}
