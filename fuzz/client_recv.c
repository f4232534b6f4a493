/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target over the client's handling of what an agent sends: session/update routing
 * (span-based, no JSON tree), session/request_permission and fs/read_text_file, fed as bytes
 * into the client's connection. Any bytes must never crash, leak, or make the client write a
 * line that is not valid JSON; every update handed to the application must have spans that lie
 * inside the line and a kind whose name round-trips. Every update is also read as a typed view
 * (acp/update.h), strictly and leniently: the two agree (strict succeeds exactly when lenient
 * succeeds with nothing salvaged), and every string and array of a view can be read.
 *
 * acp_client_open() needs a real agent process (it spawns and initializes one), so this
 * target builds the client from client/internal.h instead: a client with no process and no
 * transport, two session handles made by hand (one of them loading), and the same handler
 * registration acp_client_open() does, and a prompt running on s1 (ids 0, 1, 2 in turn, so
 * the input can answer them). fs/write_text_file and terminals stay disabled, so
 * nothing is written and nothing is started; reads are bounded by a root set in a private
 * temporary directory made once per process (removed at exit).
 *
 * Input: byte 0 picks how permission requests are answered and the piece size; the rest is
 * the agent's output, where "@@" stands for the temporary directory (its name is random). */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "acp/update.h"
#include "client/internal.h"
#include "fuzz/check_output.h"
#include "tests/store/tmpdir.h"

static char base[256]; /* the temporary directory, made once per process */

static void cleanup(void)
{
    tmpdir_remove(base);
}

static void setup(void)
{
    if (tmpdir_make(base, sizeof base, "fuzz-client")) abort();
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/a.txt", base);
    FILE *f = fopen(p, "w");
    if (!f || fputs("one\ntwo\nthree\n", f) < 0 || fclose(f)) abort();
    snprintf(p, sizeof p, "%s/bin", base);
    f = fopen(p, "w");
    if (!f || fwrite("\xff\xfe\0x", 1, 4, f) != 4 || fclose(f)) abort();
    snprintf(p, sizeof p, "%s/out", base);
    if (symlink("/etc/hostname", p)) abort();
    atexit(cleanup);
}

typedef struct fz {
    int mode;                  /* 0: reply with the first option, 1: cancelled, 2: hold */
    acp_client_perm *held[16]; /* requests kept pending until the end */
    size_t nheld;
    acp_client_elicit *elicit[16]; /* elicitations held until the end */
    size_t nelicit;
    size_t updates;
    int prompts; /* session/prompt calls made (ids 0, 1, 2: the input may answer them) */
} fz;

static void prompt(acp_client_session *s, fz *z);

static void on_prompt_done(acp_client *c, const acp_client_reply *r, void *user)
{
    fz *z = user;
    if (!r->stop || !r->errmsg || (r->status == 0 && !*r->stop) || (r->status && !*r->errmsg))
        abort();
    if (r->status != ACP_ECANCELLED) prompt(r->session, z); /* the next one, if any is left */
}

static void prompt(acp_client_session *s, fz *z)
{
    if (z->prompts >= 3) return;
    json_t *blocks = json_pack("[{ss ss}]", "type", "text", "text", "hi");
    if (acp_client_session_prompt_start(s, blocks, on_prompt_done, z, NULL) == 0) z->prompts++;
    json_decref(blocks);
}

static bool inside(acp_span outer, acp_span s)
{
    return s.n == 0 || (s.p >= outer.p && s.p + s.n <= outer.p + outer.n);
}

/* Reads a string the view may leave NULL (ASan sees a pointer outside the view's tree). */
static size_t str(const char *s)
{
    return s ? strlen(s) : 0;
}

static size_t read_block(const acp_content_view *b)
{
    const char *const s[] = {b->text, b->data,  b->mime_type,   b->uri,
                             b->name, b->title, b->description, b->last_modified};
    size_t n = 0;
    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++) n += str(s[i]);
    if (b->type < ACP_CONTENT_TEXT || b->type > ACP_CONTENT_RESOURCE) abort();
    return n;
}

/* An array's pointer is NULL exactly when it is empty. */
static void check_array(const void *p, size_t n)
{
    if (!p != !n) abort();
}

static size_t read_view(const acp_update_view *v)
{
    size_t n = 0;
    const acp_tool_call_view *t = &v->tool_call;
    switch (v->kind) {
    case ACP_UPDATE_USER_MESSAGE_CHUNK:
    case ACP_UPDATE_AGENT_MESSAGE_CHUNK:
    case ACP_UPDATE_AGENT_THOUGHT_CHUNK:
        return read_block(&v->chunk.content) + str(v->chunk.message_id);
    case ACP_UPDATE_TOOL_CALL:
    case ACP_UPDATE_TOOL_CALL_UPDATE:
        check_array(t->content, t->ncontent);
        check_array(t->locations, t->nlocations);
        n = strlen(t->tool_call_id) + str(t->title) + str(t->name) +
            strlen(acp_tool_kind_name(t->kind)) + strlen(acp_tool_status_name(t->status));
        for (size_t i = 0; i < t->ncontent; i++)
            n += t->content[i].type == ACP_TOOL_CONTENT ? read_block(&t->content[i].content)
                 : t->content[i].type == ACP_TOOL_DIFF
                     ? strlen(t->content[i].diff.path) + str(t->content[i].diff.old_text) +
                           strlen(t->content[i].diff.new_text)
                     : strlen(t->content[i].terminal_id);
        for (size_t i = 0; i < t->nlocations; i++) n += strlen(t->locations[i].path);
        return n;
    case ACP_UPDATE_PLAN:
        check_array(v->plan.entries, v->plan.nentries);
        for (size_t i = 0; i < v->plan.nentries; i++)
            n += strlen(v->plan.entries[i].content) +
                 strlen(acp_plan_priority_name(v->plan.entries[i].priority)) +
                 strlen(acp_plan_status_name(v->plan.entries[i].status));
        return n;
    case ACP_UPDATE_AVAILABLE_COMMANDS:
        check_array(v->commands.commands, v->commands.ncommands);
        for (size_t i = 0; i < v->commands.ncommands; i++)
            n += strlen(v->commands.commands[i].name) +
                 strlen(v->commands.commands[i].description) +
                 str(v->commands.commands[i].input_hint);
        return n;
    case ACP_UPDATE_CONFIG_OPTION:
        check_array(v->config.options, v->config.noptions);
        for (size_t i = 0; i < v->config.noptions; i++) {
            const acp_config_option_view *o = &v->config.options[i];
            check_array(o->values, o->nvalues);
            n += strlen(o->id) + strlen(o->name) + str(o->description) + str(o->category_text) +
                 (o->boolean ? 0 : strlen(o->current_value));
            for (size_t j = 0; j < o->nvalues; j++)
                n += strlen(o->values[j].value) + strlen(o->values[j].name) +
                     str(o->values[j].description) + str(o->values[j].group) +
                     str(o->values[j].group_name);
        }
        return n;
    case ACP_UPDATE_COMPACTION:
        check_array(v->compaction.summary, v->compaction.nsummary);
        for (size_t i = 0; i < v->compaction.nsummary; i++)
            n += read_block(&v->compaction.summary[i]);
        return n + strlen(v->compaction.compaction_id) + strlen(v->compaction.status_text) +
               str(v->compaction.error);
    case ACP_UPDATE_COMPACTION_SUMMARY:
        return strlen(v->summary_chunk.compaction_id) + read_block(&v->summary_chunk.content);
    case ACP_UPDATE_CURRENT_MODE:
        return strlen(v->mode.current_mode_id);
    case ACP_UPDATE_SESSION_INFO:
        return str(v->info.title) + str(v->info.updated_at);
    case ACP_UPDATE_USAGE:
        if (v->usage.used < 0 || v->usage.size < 0) abort();
        return str(v->usage.cost_currency);
    case ACP_UPDATE_NOTICE:
        if (!*v->notice.title) abort();
        return strlen(v->notice.severity_text) + str(v->notice.description);
    default:
        return 0;
    }
}

/* The typed views of u, strict and lenient: they agree, and can be read whole. */
static void check_views(const acp_update *u)
{
    acp_update_view strict = ACP_UPDATE_VIEW_INIT, lenient = ACP_UPDATE_VIEW_INIT;
    int rs = acp_update_view_parse(u, &strict);
    if (rs && (rs != ACP_EPROTO || !*acp_error_last()->message)) abort();
    int rl = acp_update_view_parse_ext(u, ACP_UPDATE_VIEW_LENIENT, &lenient);
    if (rl && rl != ACP_EPROTO) abort();
    if ((rs == 0) != (rl == 0 && lenient.salvaged == 0)) abort();
    if (rs == 0 && (strict.kind != lenient.kind || read_view(&strict) != read_view(&lenient)))
        abort();
    if (rl == 0) read_view(&lenient);
    acp_update_view_free(&strict);
    acp_update_view_free(&lenient);
}

static void on_update(acp_client *c, acp_client_session *s, const acp_update *u, void *user)
{
    fz *z = user;
    if (!inside(u->params, u->update) || !inside(u->params, u->session_id) ||
        !inside(u->update, u->kind_text))
        abort();
    if (acp_json_validate(u->update.p, u->update.n, 512)) abort();
    /* A known kind's name, quoted, is the literal that gives that kind. */
    if (u->kind != ACP_UPDATE_OTHER) {
        char lit[64];
        int n = snprintf(lit, sizeof lit, "\"%s\"", acp_update_kind_name(u->kind));
        if (n <= 2 || (size_t)n >= sizeof lit ||
            acp_update_kind_of((acp_span){.p = lit, .n = (size_t)n}) != u->kind)
            abort();
    }
    check_views(u);
    z->updates++;
    if (getenv("ACP_FUZZ_TRACE"))
        fprintf(stderr, "update %s %s%s\n", acp_update_kind_name(u->kind), s ? s->id : "-",
                u->replay ? " (replay)" : "");
}

static void on_permission(acp_client *c, acp_client_session *s, acp_client_perm *p, json_t *params,
                          void *user)
{
    fz *z = user;
    if (z->mode == 2 && z->nheld < sizeof z->held / sizeof *z->held) {
        z->held[z->nheld++] = p;
        return;
    }
    const char *opt = json_string_value(
        json_object_get(json_array_get(json_object_get(params, "options"), 0), "optionId"));
    acp_client_perm_reply(p, z->mode == 0 ? opt : NULL);
}

/* Elicitations and extension requests, answered like permissions: at once (accept / an
 * answer), cancelled / an error, or held until the end. */
static void on_elicit(acp_client *c, acp_client_session *s, acp_client_elicit *e, json_t *params,
                      void *user)
{
    fz *z = user;
    if (z->mode == 2 && z->nelicit < sizeof z->elicit / sizeof *z->elicit) {
        z->elicit[z->nelicit++] = e;
        return;
    }
    acp_client_elicit_reply(e, z->mode == 0 ? "accept" : "decline",
                            z->mode == 0 ? json_pack("{s:s}", "name", "x") : NULL);
}

static void on_ext_request(acp_client *c, acp_req *req, void *user)
{
    fz *z = user;
    if (z->mode == 0)
        acp_req_reply(req, json_incref(acp_req_params(req)));
    else
        acp_req_error(req, -32000, NULL, "no");
}

static void on_ext_notify(acp_client *c, const char *method, json_t *params, void *user)
{
    if (method[0] != '_' || !params) abort(); /* params may be any JSON-RPC params: an array too */
}

static void add_session(acp_client *c, const char *id, bool loading)
{
    acp_client_session *s = calloc(1, sizeof *s);
    if (!s || !(s->id = strdup(id))) abort();
    s->c = c;
    s->loading = loading;
    if (acp_roots_new(base, NULL, 0, &s->roots, NULL)) abort();
    s->next = c->sessions;
    c->sessions = s;
}

static void drain(acp_client *c)
{
    fuzz_check_output(c->conn);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!base[0]) setup();
    if (size == 0) return 0;
    fz z = {.mode = data[0] % 3};
    acp_client *c = calloc(1, sizeof *c);
    if (!c) abort(); /* no loop: the application-driven mode, as acp_client_start() makes it */
    c->opts = (acp_client_opts){.struct_size = sizeof(acp_client_opts),
                                .fs_read = true,
                                .max_message = 4096,
                                .on_update = on_update,
                                .on_permission = data[0] & 4 ? NULL : on_permission,
                                .on_elicit = on_elicit,
                                .elicitation_form = true,
                                .elicitation_url = !(data[0] & 4),
                                .on_ext_request = on_ext_request,
                                .on_ext_notify = on_ext_notify,
                                .user = &z};
    acp_conn_opts co = {.struct_size = sizeof(acp_conn_opts),
                        .max_message = c->opts.max_message,
                        .on_request = acp_client_ext_request,
                        .on_notify = acp_client_ext_notify,
                        .user = c};
    if (!(c->conn = acp_conn_new(&co))) abort();
    acp_client_session_register(c);
    acp_client_perm_register(c);
    acp_client_fs_register(c);
    acp_client_elicit_register(c);
    add_session(c, "s1", false);
    add_session(c, "s2", true);
    prompt(acp_client_find_id(c, "s1"), &z);
    prompt(acp_client_find_id(c, "s1"), &z); /* busy: refused, nothing sent */

    acp_buf in = {0};
    for (size_t i = 1; i < size; i++) {
        bool at = data[i] == '@' && i + 1 < size && data[i + 1] == '@';
        if (at ? acp_buf_append(&in, base, strlen(base)) : acp_buf_putc(&in, (char)data[i]))
            abort();
        i += at;
    }
    size_t piece = (size_t)(data[0] >> 3) % 31 + 1;
    for (size_t i = 0; i < in.len; i += piece) {
        acp_conn_recv(c->conn, in.data + i, in.len - i < piece ? in.len - i : piece);
        drain(c);
    }
    acp_buf_free(&in);
    /* The prompt is cancelled: pending permissions are answered `cancelled`. */
    acp_client_session_cancel(acp_client_find_id(c, "s1"));
    drain(c);
    acp_conn_eof(c->conn);
    drain(c);
    for (size_t i = 0; i < z.nheld; i++) acp_client_perm_reply(z.held[i], NULL);
    for (size_t i = 0; i < z.nelicit; i++) acp_client_elicit_reply(z.elicit[i], "cancel", NULL);
    drain(c);
    acp_client_free(c);
    return 0;
}
