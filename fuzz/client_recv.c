/* libFuzzer target over the client's handling of what an agent sends: session/update routing
 * (span-based, no JSON tree), session/request_permission and fs/read_text_file, fed as bytes
 * into the client's connection. Any bytes must never crash, leak, or make the client write a
 * line that is not valid JSON; every update handed to the application must have spans that lie
 * inside the line and a kind whose name round-trips.
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
    c->opts = (acp_client_opts){.fs_read = true,
                                .max_message = 4096,
                                .on_update = on_update,
                                .on_permission = data[0] & 4 ? NULL : on_permission,
                                .on_elicit = on_elicit,
                                .elicitation_form = true,
                                .elicitation_url = !(data[0] & 4),
                                .on_ext_request = on_ext_request,
                                .on_ext_notify = on_ext_notify,
                                .user = &z};
    acp_conn_opts co = {.max_message = c->opts.max_message,
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
