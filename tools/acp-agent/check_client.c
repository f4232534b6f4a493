/* SPDX-License-Identifier: Apache-2.0 */
/* acp-agent --check-client: an agent that checks the client (an editor under test) instead of
 * answering. Each prompt runs the checks once, in order, each call's answer validated against
 * schema.json: what the client sent (initialize, session/new, the prompt), every kind of
 * session/update it must take, a permission request, the fs methods (a probe file in the
 * session's cwd, removed afterwards), a terminal (output, exit status, truncation at a
 * character boundary), a form and a URL elicitation (and its elicitation/complete), an unknown
 * extension method. Only what the client advertised is called (the runtime gates the rest):
 * the others are skipped and say so. The report (acp check's format) goes to --check-report
 * FILE or stderr, and its summary is the turn's answer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/acp-agent/check_client.h"
#include "tools/check/report.h"
#include "tools/check/schema.h"

struct check_client {
    const char *report_path; /* NULL: stderr */
    bool json;
    chk_schema *schema;
    const char *why_schema;
};

typedef struct run {
    check_client *cc;
    acp_turn *t;
    acp_session *s;
    FILE *out;
    chk_report *r;
    int step;
    char probe[4096], created[4096];
    char term_id[256];
    char elicit_id[64]; /* the URL elicitation's, for its elicitation/complete */
    unsigned npass, nfail;
} run;

static const chk_spec
    S_INFO = {"initialization (v1)", "Both Clients and Agents SHOULD provide information about "
                                     "their implementation in the clientInfo and agentInfo "
                                     "fields respectively."},
    S_VERSION = {"initialization (v1)",
                 "The initialize request MUST include the latest protocol version the Client "
                 "supports."},
    S_SCHEMA = {"schema/schema.json (README: the authority on wire shapes)",
                "schema.json is the authority for stable wire shapes"},
    S_TEXT = {"prompt-turn (v1)", "Clients MUST restrict types of content according to the "
                                  "Prompt Capabilities established during initialization."},
    S_UPDATES = {"prompt-turn (v1)",
                 "The Agent MAY send session/update notifications with content or tool call "
                 "updates"},
    S_PERM = {"tool-calls (v1)", "The Agent MAY request permission from the user before executing "
                                 "a tool call by calling the session/request_permission method"},
    S_READ = {"file-system (v1)", "Reads content from a text file in the client's file system."},
    S_READ_LINE = {"file-system (v1)", "line: Line number to start reading from (1-based) ... "
                                       "limit: Maximum number of lines to read"},
    S_WRITE = {"file-system (v1)", "The Client MUST create the file if it doesn't exist."},
    S_TERM = {"terminals (v1)", "terminal/create: Executes a command in a new terminal"},
    S_TRUNC = {"terminals (v1)", "The Client MUST ensure truncation happens at a character "
                                 "boundary to maintain valid string output, even if this means "
                                 "the retained output is slightly less than the specified "
                                 "limit."},
    S_ELICIT = {"elicitation (v1)", "Clients MUST clearly identify the Agent requesting "
                                    "information, respect user privacy, and provide clear decline "
                                    "and cancel controls."},
    S_ELICIT_URL = {"elicitation (v1)",
                    "The Client responds with one of three actions: accept: the user submitted or "
                    "consented to the interaction. decline: the user explicitly declined. cancel: "
                    "the user dismissed the interaction without choosing."},
    S_EXT = {"extensibility (v1)", "If the receiving end doesn't recognize the custom method "
                                   "name, it should respond with the standard \"Method not "
                                   "found\" error"},
    S_GATE = {"initialization (v1)",
              "Clients and Agents MUST treat all capabilities omitted in the initialize request "
              "as UNSUPPORTED."};

static void next(run *u);

static void add(run *u, const char *id, chk_level lv, chk_result res, const chk_spec *spec,
                const char *received, const char *fmt, const char *detail)
{
    chk_add(u->r, id, lv, res, spec, NULL, received, fmt, detail);
    u->npass += res == CHK_PASS;
    u->nfail += res == CHK_FAIL;
}

/* The client's answer against the schema's response def for method: true when valid. */
static bool valid(run *u, const char *id, const char *method, const json_t *result)
{
    if (!u->cc->schema) return true;
    const char *def = chk_schema_def(u->cc->schema, method, "Response");
    char *bad = def ? chk_schema_check(u->cc->schema, def, result) : NULL;
    if (!bad) return true;
    char *t = json_dumps(result, JSON_COMPACT | JSON_ENCODE_ANY);
    char sid[128];
    snprintf(sid, sizeof sid, "%s.schema", id);
    add(u, sid, CHK_MUST, CHK_FAIL, &S_SCHEMA, t, "the answer breaks schema.json: %s", bad);
    free(t);
    free(bad);
    return false;
}

static bool gated(run *u, const char *id, const char *cap)
{
    if (acp_agent_client_has(acp_session_agent(u->s), cap)) return false;
    char why[160];
    snprintf(why, sizeof why, "%s is not advertised: not called", cap);
    add(u, id, CHK_MUST, CHK_SKIP, &S_GATE, NULL, "%s", why);
    return true;
}

/* --- the client's own messages ------------------------------------------------------------- */

static void own_messages(run *u, const json_t *prompt)
{
    acp_agent *a = acp_session_agent(u->s);
    const json_t *init = acp_agent_init_params(a);
    const json_t *info = json_object_get(init, "clientInfo");
    bool named = json_is_string(json_object_get(info, "name")) &&
                 json_is_string(json_object_get(info, "version"));
    add(u, "client.init.client_info", CHK_SHOULD, named ? CHK_PASS : CHK_FAIL, &S_INFO, NULL, "%s",
        named ? json_string_value(json_object_get(info, "name"))
              : "clientInfo name/version missing");
    const json_t *v = json_object_get(init, "protocolVersion");
    add(u, "client.init.version", CHK_MUST,
        json_is_integer(v) && json_integer_value(v) >= 1 ? CHK_PASS : CHK_FAIL, &S_VERSION, NULL,
        "%s", json_is_integer(v) ? "an integer protocolVersion" : "no integer protocolVersion");
    if (!u->cc->schema) {
        add(u, "client.schema", CHK_MUST, CHK_SKIP, &S_SCHEMA, NULL, "%s", u->cc->why_schema);
        return;
    }
    static const struct {
        const char *id, *def;
    } mine[] = {{"client.schema.initialize", "InitializeRequest"},
                {"client.schema.session_open", NULL}};
    for (size_t i = 0; i < 2; i++) {
        const json_t *params = i ? acp_session_open_params(u->s) : init;
        /* session/new, load or resume: new's shape when it has mcpServers and no sessionId */
        const char *def = mine[i].def                            ? mine[i].def
                          : json_object_get(params, "sessionId") ? NULL
                                                                 : "NewSessionRequest";
        if (!def || !params) continue;
        char *bad = chk_schema_check(u->cc->schema, def, params);
        char *t = bad ? json_dumps(params, JSON_COMPACT) : NULL;
        add(u, mine[i].id, CHK_MUST, bad ? CHK_FAIL : CHK_PASS, &S_SCHEMA, t, "%s",
            bad ? bad : "valid");
        free(bad);
        free(t);
    }
    size_t i;
    const json_t *b;
    char *bad = NULL;
    json_array_foreach(prompt, i, b) if (!bad) bad =
        chk_schema_check(u->cc->schema, "ContentBlock", b);
    add(u, "client.schema.prompt", CHK_MUST, bad ? CHK_FAIL : CHK_PASS, &S_TEXT, NULL, "%s",
        bad ? bad : "every ContentBlock valid");
    free(bad);
}

/* --- every kind of update ----------------------------------------------------------------- */

static void updates(run *u)
{
    acp_turn *t = u->t;
    int rc = 0;
    rc |= acp_turn_text(t, "agent_message_chunk", NULL, "acp check: the client under test\n", 33);
    rc |= acp_turn_text(t, "agent_thought_chunk", NULL, "checking every update kind", 26);
    json_t *ups[] = {
        json_pack("{s:s, s:[{s:s, s:s, s:s}]}", "sessionUpdate", "plan", "entries", "content",
                  "check the client", "priority", "high", "status", "in_progress"),
        json_pack("{s:s, s:[{s:s, s:s}]}", "sessionUpdate", "available_commands_update",
                  "availableCommands", "name", "check", "description", "run the client checks"),
        json_pack("{s:s, s:s}", "sessionUpdate", "session_info_update", "title",
                  "acp check of the client"),
        json_pack("{s:s, s:i, s:i}", "sessionUpdate", "usage_update", "used", 1000, "size", 100000),
    };
    for (size_t i = 0; i < sizeof ups / sizeof ups[0]; i++) {
        rc |= acp_turn_update(t, ups[i]);
        json_decref(ups[i]);
    }
    acp_tool_info ti = ACP_TOOL_INFO_INIT;
    ti.title = "acp check: a tool call";
    ti.kind = "other";
    acp_tool_call *tc = NULL;
    rc |= acp_tool_call_begin(t, &ti, &tc);
    if (tc) {
        acp_tool_info up = ACP_TOOL_INFO_INIT;
        up.status = "in_progress";
        up.text = "working";
        rc |= acp_tool_call_update(tc, &up);
        rc |= acp_tool_call_complete(tc, NULL);
    }
    rc |= acp_session_set_mode(u->s, "check-b");
    rc |= acp_session_set_config(u->s, "level", "high");
    add(u, "client.updates.sent", CHK_MUST, rc ? CHK_FAIL : CHK_PASS, &S_UPDATES, NULL, "%s",
        rc ? "an update could not be sent"
           : "agent_message_chunk, agent_thought_chunk, plan, available_commands_update, "
             "session_info_update, usage_update, tool_call, tool_call_update, "
             "current_mode_update, config_option_update sent (the next answer shows the client "
             "took them)");
}

static void updates_step(run *u)
{
    updates(u);
    next(u);
}

/* --- requests ------------------------------------------------------------------------------ */

static void on_perm(acp_turn *t, int status, const json_t *result, const char *error, void *user)
{
    run *u = user;
    const json_t *o = json_object_get(result, "outcome");
    const char *kind = json_string_value(json_object_get(o, "outcome"));
    const char *opt = json_string_value(json_object_get(o, "optionId"));
    bool ok = !status && kind &&
              (!strcmp(kind, "cancelled") ||
               (!strcmp(kind, "selected") && opt && !strncmp(opt, "chk-", 4)));
    char *txt = json_dumps(result, JSON_COMPACT);
    add(u, "client.permission", CHK_MUST, ok ? CHK_PASS : CHK_FAIL, &S_PERM, txt, "answered %s",
        status ? (error ? error : "an error")
        : kind ? kind
               : "without an outcome");
    free(txt);
    if (!status) valid(u, "client.permission", "session/request_permission", result);
    add(u, "client.updates.accepted", CHK_MUST, status == ACP_ECLOSED ? CHK_FAIL : CHK_PASS,
        &S_UPDATES, NULL, "%s",
        status == ACP_ECLOSED ? "the client went away after the updates"
                              : "the client still answers after every kind of update");
    next(u);
}

static void permission(run *u)
{
    json_t *p = json_pack(
        "{s:{s:s, s:s, s:s}, s:[{s:s, s:s, s:s}, {s:s, s:s, s:s}, {s:s, s:s, s:s}, {s:s, s:s, "
        "s:s}]}",
        "toolCall", "toolCallId", "chk-tool", "title", "acp check: may I?", "kind", "other",
        "options", "optionId", "chk-allow-once", "name", "Allow once", "kind", "allow_once",
        "optionId", "chk-allow-always", "name", "Allow always", "kind", "allow_always", "optionId",
        "chk-reject-once", "name", "Reject once", "kind", "reject_once", "optionId",
        "chk-reject-always", "name", "Reject always", "kind", "reject_always");
    if (acp_turn_call(u->t, "session/request_permission", p, on_perm, u)) next(u);
}

static void on_read_missing(acp_turn *t, int status, const json_t *result, const char *error,
                            void *user)
{
    run *u = user;
    add(u, "client.fs.read_missing", CHK_SHOULD, status ? CHK_PASS : CHK_FAIL, &S_READ, NULL,
        "a file that does not exist: %s", status ? "refused" : "answered as if it existed");
    next(u);
}

static void on_read_line(acp_turn *t, int status, const json_t *result, const char *error,
                         void *user)
{
    run *u = user;
    const char *c = json_string_value(json_object_get(result, "content"));
    bool ok =
        !status && c && !strncmp(c, "line 2", 6) && !strstr(c, "line 1") && !strstr(c, "line 3");
    add(u, "client.fs.read_line_limit", CHK_MUST, ok ? CHK_PASS : CHK_FAIL, &S_READ_LINE, c,
        "line 2, limit 1: %s",
        ok       ? "line 2 alone"
        : status ? "refused"
                 : "another slice");
    char missing[4200];
    snprintf(missing, sizeof missing, "%s.missing", u->probe);
    if (acp_turn_call(u->t, "fs/read_text_file", json_pack("{s:s}", "path", missing),
                      on_read_missing, u))
        next(u);
}

static void on_read(acp_turn *t, int status, const json_t *result, const char *error, void *user)
{
    run *u = user;
    const char *c = json_string_value(json_object_get(result, "content"));
    bool ok = !status && c && !strcmp(c, "line 1\nline 2\nline 3\n");
    add(u, "client.fs.read", CHK_MUST, ok ? CHK_PASS : CHK_FAIL, &S_READ, c ? c : error,
        "the probe file: %s",
        ok       ? "read whole"
        : status ? "refused"
                 : "other content");
    if (!status) valid(u, "client.fs.read", "fs/read_text_file", result);
    if (acp_turn_call(u->t, "fs/read_text_file",
                      json_pack("{s:s, s:i, s:i}", "path", u->probe, "line", 2, "limit", 1),
                      on_read_line, u))
        next(u);
}

static void fs_read(run *u)
{
    if (gated(u, "client.fs.read", "fs.readTextFile")) {
        next(u);
        return;
    }
    snprintf(u->probe, sizeof u->probe, "%s/.acp-check-client-%ld.txt", acp_session_cwd(u->s),
             (long)getpid());
    FILE *f = fopen(u->probe, "w");
    if (!f) {
        add(u, "client.fs.read", CHK_MUST, CHK_SKIP, &S_READ, NULL, "%s",
            "the session's cwd is not writable on the agent's machine: no probe file");
        u->probe[0] = 0;
        next(u);
        return;
    }
    fputs("line 1\nline 2\nline 3\n", f);
    fclose(f);
    if (acp_turn_call(u->t, "fs/read_text_file", json_pack("{s:s}", "path", u->probe), on_read, u))
        next(u);
}

static void on_write(acp_turn *t, int status, const json_t *result, const char *error, void *user)
{
    run *u = user;
    char got[128] = "";
    FILE *f = fopen(u->created, "r");
    if (f) {
        size_t n = fread(got, 1, sizeof got - 1, f);
        got[n] = 0;
        fclose(f);
    }
    bool ok = !status && !strcmp(got, "written by acp check\n");
    add(u, "client.fs.write_creates", CHK_MUST, ok ? CHK_PASS : CHK_FAIL, &S_WRITE, error,
        "a write to a new file: %s",
        status ? "refused"
        : ok   ? "created with the text"
               : "not there as written");
    if (!status) valid(u, "client.fs.write_creates", "fs/write_text_file", result);
    unlink(u->created);
    next(u);
}

static void fs_write(run *u)
{
    if (gated(u, "client.fs.write_creates", "fs.writeTextFile")) {
        next(u);
        return;
    }
    snprintf(u->created, sizeof u->created, "%s/.acp-check-client-%ld-new.txt",
             acp_session_cwd(u->s), (long)getpid());
    unlink(u->created);
    if (acp_turn_call(
            u->t, "fs/write_text_file",
            json_pack("{s:s, s:s}", "path", u->created, "content", "written by acp check\n"),
            on_write, u))
        next(u);
}

/* terminal: create, wait, output, release; then a truncated one */
static void on_released(acp_turn *t, int status, const json_t *result, const char *error,
                        void *user)
{
    next(user);
}

static void release(run *u)
{
    if (acp_turn_call(u->t, "terminal/release", json_pack("{s:s}", "terminalId", u->term_id),
                      on_released, u))
        next(u);
}

static bool utf8_ok(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        int k = *p < 0x80 ? 1 : (*p >> 5) == 6 ? 2 : (*p >> 4) == 14 ? 3 : (*p >> 3) == 30 ? 4 : 0;
        if (!k) return false;
        for (int j = 1; j < k; j++)
            if ((p[j] & 0xC0) != 0x80) return false;
        p += k;
    }
    return true;
}

static void on_trunc_output(acp_turn *t, int status, const json_t *result, const char *error,
                            void *user)
{
    run *u = user;
    const char *o = json_string_value(json_object_get(result, "output"));
    bool ok = !status && o && strlen(o) <= 5 && utf8_ok(o);
    add(u, "client.terminal.truncation", CHK_MUST, ok ? CHK_PASS : CHK_FAIL, &S_TRUNC,
        o ? o : error, "outputByteLimit 5 over two-byte characters: %s",
        ok       ? "cut at a character boundary"
        : status ? "refused"
                 : "longer or cut inside a character");
    release(u);
}

static void on_trunc_exit(acp_turn *t, int status, const json_t *result, const char *error,
                          void *user)
{
    run *u = user;
    if (acp_turn_call(u->t, "terminal/output", json_pack("{s:s}", "terminalId", u->term_id),
                      on_trunc_output, u))
        release(u);
}

static void on_trunc_created(acp_turn *t, int status, const json_t *result, const char *error,
                             void *user)
{
    run *u = user;
    const char *id = json_string_value(json_object_get(result, "terminalId"));
    if (status || !id) {
        add(u, "client.terminal.truncation", CHK_MUST, CHK_FAIL, &S_TRUNC, error, "%s",
            "terminal/create refused");
        next(u);
        return;
    }
    snprintf(u->term_id, sizeof u->term_id, "%s", id);
    if (acp_turn_call(u->t, "terminal/wait_for_exit", json_pack("{s:s}", "terminalId", id),
                      on_trunc_exit, u))
        release(u);
}

static void terminal_trunc(run *u)
{
    /* "ééééé": 10 bytes; a 5-byte limit keeps at most two characters (4 bytes) */
    json_t *p = json_pack("{s:s, s:[s, s], s:i}", "command", "printf", "args", "%s",
                          "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", "outputByteLimit", 5);
    if (acp_turn_call(u->t, "terminal/create", p, on_trunc_created, u)) next(u);
}

static void on_output(acp_turn *t, int status, const json_t *result, const char *error, void *user)
{
    run *u = user;
    const char *o = json_string_value(json_object_get(result, "output"));
    bool ok = !status && o && strstr(o, "acp-check-output");
    add(u, "client.terminal.output", CHK_MUST, ok ? CHK_PASS : CHK_FAIL, &S_TERM, o ? o : error,
        "the command's output: %s",
        ok       ? "as printed"
        : status ? "refused"
                 : "not as printed");
    if (!status) valid(u, "client.terminal.output", "terminal/output", result);
    release(u);
}

static void on_exit_(acp_turn *t, int status, const json_t *result, const char *error, void *user)
{
    run *u = user;
    const json_t *code = json_object_get(result, "exitCode");
    bool ok = !status && json_is_integer(code) && json_integer_value(code) == 0;
    char *txt = result ? json_dumps(result, JSON_COMPACT) : NULL;
    add(u, "client.terminal.wait_for_exit", CHK_MUST, ok ? CHK_PASS : CHK_FAIL, &S_TERM,
        txt ? txt : error, "echo's exit: %s",
        ok       ? "exitCode 0"
        : status ? "refused"
                 : "not 0");
    free(txt);
    if (!status) valid(u, "client.terminal.wait_for_exit", "terminal/wait_for_exit", result);
    if (acp_turn_call(u->t, "terminal/output", json_pack("{s:s}", "terminalId", u->term_id),
                      on_output, u))
        release(u);
}

static void on_created(acp_turn *t, int status, const json_t *result, const char *error, void *user)
{
    run *u = user;
    const char *id = json_string_value(json_object_get(result, "terminalId"));
    add(u, "client.terminal.create", CHK_MUST, !status && id ? CHK_PASS : CHK_FAIL, &S_TERM, error,
        "terminal/create of echo: %s", !status && id ? "a terminalId" : "refused");
    if (status || !id) {
        u->step++; /* no truncation check either */
        next(u);
        return;
    }
    valid(u, "client.terminal.create", "terminal/create", result);
    snprintf(u->term_id, sizeof u->term_id, "%s", id);
    if (acp_turn_call(u->t, "terminal/wait_for_exit", json_pack("{s:s}", "terminalId", id),
                      on_exit_, u))
        release(u);
}

static void terminal(run *u)
{
    if (gated(u, "client.terminal.create", "terminal")) {
        u->step++;
        next(u);
        return;
    }
    json_t *p = json_pack("{s:s, s:[s]}", "command", "echo", "args", "acp-check-output");
    if (acp_turn_call(u->t, "terminal/create", p, on_created, u)) next(u);
}

/* An elicitation's answer: one of the three actions, whatever the mode. */
static void elicit_answered(run *u, const char *id, const chk_spec *spec, const char *what,
                            int status, const char *action, const char *error)
{
    bool ok =
        !status && action &&
        (!strcmp(action, "accept") || !strcmp(action, "decline") || !strcmp(action, "cancel"));
    char detail[256];
    snprintf(detail, sizeof detail, "%s: %s", what,
             ok       ? action
             : status ? "refused"
                      : "an unknown action");
    add(u, id, CHK_MUST, ok ? CHK_PASS : CHK_FAIL, spec, error, "%s", detail);
}

static void on_elicit(acp_turn *t, int status, const json_t *result, const char *error, void *user)
{
    run *u = user;
    elicit_answered(u, "client.elicitation.form", &S_ELICIT, "a form elicitation", status,
                    json_string_value(json_object_get(result, "action")), error);
    if (!status) valid(u, "client.elicitation.form", "elicitation/create", result);
    next(u);
}

static void elicit(run *u)
{
    if (!acp_agent_client_has(acp_session_agent(u->s), "elicitation.form")) {
        add(u, "client.elicitation.form", CHK_MUST, CHK_SKIP, &S_GATE, NULL, "%s",
            "elicitation.form is not advertised: not called");
        next(u);
        return;
    }
    json_t *p =
        json_pack("{s:s, s:s, s:{s:s, s:{s:{s:s, s:s}}}}", "mode", "form", "message",
                  "acp check: your name, please (any answer passes)", "requestedSchema", "type",
                  "object", "properties", "name", "type", "string", "title", "Name");
    if (acp_turn_call(u->t, "elicitation/create", p, on_elicit, u)) next(u);
}

static void on_elicit_url(acp_session *s, int status, const char *action, const json_t *content,
                          const char *error, void *user)
{
    run *u = user;
    elicit_answered(u, "client.elicitation.url", &S_ELICIT_URL,
                    "a URL elicitation (https://example.invalid/, never to be opened without "
                    "consent)",
                    status, action, error);
    /* The interaction is over either way: the client is told, as URL mode has it, and must
     * take the notification quietly (the next step's call shows the connection lives on). */
    if (u->elicit_id[0]) acp_agent_elicit_complete(acp_session_agent(s), u->elicit_id);
    next(u);
}

static void elicit_url(run *u)
{
    if (!acp_agent_client_has(acp_session_agent(u->s), "elicitation.url")) {
        add(u, "client.elicitation.url", CHK_MUST, CHK_SKIP, &S_GATE, NULL, "%s",
            "elicitation.url is not advertised: not called");
        next(u);
        return;
    }
    acp_elicit e = ACP_ELICIT_INIT;
    e.message = "acp check: a URL elicitation (example.invalid does not exist; any answer passes)";
    e.url = "https://example.invalid/acp-check";
    if (acp_turn_elicit(u->t, &e, u->elicit_id, on_elicit_url, u)) {
        add(u, "client.elicitation.url", CHK_MUST, CHK_SKIP, &S_GATE, NULL, "not sent: %s",
            acp_error_last()->message);
        next(u);
    }
}

static void on_ext(acp_turn *t, int status, const json_t *result, const char *error, void *user)
{
    run *u = user;
    add(u, "client.ext.unknown_method", CHK_SHOULD, status ? CHK_PASS : CHK_FAIL, &S_EXT, error,
        "an unknown extension method: %s", status ? "refused" : "answered with a result");
    next(u);
}

static void ext(run *u)
{
    if (acp_turn_call(u->t, "_acp-check/no_such_method", json_object(), on_ext, u)) next(u);
}

static void finish(run *u)
{
    if (u->probe[0]) unlink(u->probe);
    unsigned fails = u->nfail;
    int rc = chk_report_end(u->r, "acp-agent --check-client");
    if (u->out != stderr) fclose(u->out);
    char msg[256];
    snprintf(msg, sizeof msg, "\nacp check of the client: %u passed, %u failed%s (report: %s)\n",
             u->npass, fails, rc ? ", a MUST failed" : "",
             u->cc->report_path ? u->cc->report_path : "stderr");
    acp_turn_text(u->t, "agent_message_chunk", NULL, msg, strlen(msg));
    acp_turn_end(u->t, "end_turn");
    free(u);
}

static void next(run *u)
{
    /* each step calls next() once it is done (or at once when it has nothing to do) */
    static void (*const steps[])(run * u) = {updates_step, permission, fs_read,
                                             fs_write,     terminal,   terminal_trunc,
                                             elicit,       elicit_url, ext};
    int i = u->step++;
    if (i < (int)(sizeof steps / sizeof steps[0]))
        steps[i](u);
    else
        finish(u);
}

/* --- the engine ---------------------------------------------------------------------------- */

static void on_prompt(acp_turn *t, const json_t *prompt, void *user)
{
    check_client *cc = user;
    run *u = calloc(1, sizeof *u);
    u->cc = cc;
    u->t = t;
    u->s = acp_turn_session(t);
    u->out = cc->report_path ? fopen(cc->report_path, "a") : stderr;
    if (!u->out) u->out = stderr;
    u->r = chk_report_new(u->out, cc->json, NULL);
    own_messages(u, prompt);
    next(u);
}

static void on_cancel(acp_turn *t, void *user)
{
    /* the runtime answers cancelled; the pending calls' callbacks never run, so the run's
     * memory stays with the turn: freed by finish only. A cancelled check run is rare (a
     * person pressed stop) and leaks one small struct in a test agent. */
}

static const acp_mode modes[] = {{"check-a", "Check A", NULL}, {"check-b", "Check B", NULL}};
static const acp_config_value levels[] = {{"low", "Low", NULL, NULL, NULL},
                                          {"high", "High", NULL, NULL, NULL}};
static const acp_config_option options[] = {
    {"level", "Level", NULL, NULL, false, levels, 2, "low", false}};

check_client *check_client_new(const char *report_path, bool json)
{
    check_client *cc = calloc(1, sizeof *cc);
    cc->report_path = report_path;
    cc->json = json;
    cc->schema = chk_schema_load(true, &cc->why_schema);
    return cc;
}

void check_client_engine(check_client *cc, acp_engine *eng)
{
    *eng = (acp_engine)ACP_ENGINE_INIT;
    eng->name = "acp-agent-check-client";
    eng->title = "acp-agent --check-client (checks the client)";
    eng->version = "1";
    eng->embedded_context = true;
    eng->modes = modes;
    eng->nmodes = 2;
    eng->config_options = options;
    eng->nconfig_options = 1;
    eng->prompt = on_prompt;
    eng->cancel = on_cancel;
    eng->user = cc;
}

void check_client_free(check_client *cc)
{
    if (!cc) return;
    chk_schema_free(cc->schema);
    free(cc);
}
