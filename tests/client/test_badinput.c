/* SPDX-License-Identifier: Apache-2.0 */
/* What a client must survive from its agent (script-agent.mjs, which writes exact lines):
 * lines that are not JSON-RPC, malformed session/update notifications and updates for a
 * session we do not have open (dropped, with on_log), unknown kinds (delivered as
 * ACP_UPDATE_OTHER), fs requests outside the session's roots
 * (refused with an error to the agent and on_log; nothing read or written outside), requests
 * for sessions we do not have, responses to ids we never used, answers of the wrong shape, and
 * a line longer than max_message (dropped whole; the connection lives on). Nothing crashes or
 * leaks (ASan), and the connection answers a normal call afterwards every time. */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common.h"

typedef struct fixture {
    int fds; /* open before the test: the same must be open after */
    char root[64], outside[64];
    acp_client *c;
    acp_client_session *s;
    int updates, other, unrouted, asks, perms;
    size_t biggest;
    acp_buf texts; /* agent_message_chunk texts, one per line */
    acp_buf log;   /* on_log lines */
    int logs;
} fixture;

static void on_update(acp_client *c, acp_client_session *s, const acp_update *u, void *user)
{
    fixture *f = user;
    f->updates++;
    if (!s) f->unrouted++;
    if (u->kind == ACP_UPDATE_OTHER) f->other++;
    if (u->update.n > f->biggest) f->biggest = u->update.n;
    /* The raw text is all the client promises; the content may be anything. */
    chunk_text(u, &f->texts);
    if (u->kind == ACP_UPDATE_AGENT_MESSAGE_CHUNK) acp_buf_append(&f->texts, "\n", 1);
}

static void on_log(acp_client *c, const char *message, void *user)
{
    fixture *f = user;
    f->logs++;
    acp_buf_append(&f->log, message, strlen(message));
    acp_buf_append(&f->log, "\n", 1);
}

static void on_ask(acp_client *c, acp_client_session *s, acp_client_ask *a, const char *method,
                   json_t *params, void *user)
{
    ((fixture *)user)->asks++;
    acp_client_ask_reply(a, true);
}

static void on_permission(acp_client *c, acp_client_session *s, acp_client_perm *p, json_t *params,
                          void *user)
{
    ((fixture *)user)->perms++;
    acp_client_perm_reply(p, NULL);
}

static int open_client(fixture *f, size_t max_message)
{
    acp_client_opts o = {.struct_size = sizeof(acp_client_opts),
                         .argv = node_agent("script-agent.mjs"),
                         .fs_read = true,
                         .fs_write = true,
                         .max_message = max_message,
                         .on_update = on_update,
                         .on_permission = on_permission,
                         .on_ask = on_ask,
                         .on_log = on_log,
                         .user = f};
    int rc = acp_client_open(&o, &f->c);
    if (rc) fail_msg("open: %s", acp_error_last()->message);
    acp_session_opts so = {.struct_size = sizeof(acp_session_opts), .cwd = f->root};
    assert_int_equal(acp_client_session_new(f->c, &so, &f->s), 0);
    assert_string_equal(acp_client_session_id(f->s), "s1");
    return 0;
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->fds = count_fds();
    strcpy(f->root, "/tmp/acp-bad-root-XXXXXX");
    strcpy(f->outside, "/tmp/acp-bad-out-XXXXXX");
    make_roots(f->root, f->outside, "inside\n");
    open_client(f, 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    acp_client_free(f->c); /* the agent is stopped and reaped before this returns */
    assert_int_equal(count_fds(), f->fds);
    errno = 0;
    assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
    assert_int_equal(errno, ECHILD);
    acp_buf_free(&f->texts);
    acp_buf_free(&f->log);
    assert_true(rm_rf(f->root) && rm_rf(f->outside));
    free(f);
    return 0;
}

/* Copies a template with @R, @O and @N replaced by the root, the outside directory and the
 * outside directory's name. */
static char *fill(fixture *f, const char *tmpl)
{
    acp_buf b = {0};
    for (; *tmpl; tmpl++) {
        const char *rep = tmpl[0] == '@' && tmpl[1] == 'R'   ? f->root
                          : tmpl[0] == '@' && tmpl[1] == 'O' ? f->outside
                          : tmpl[0] == '@' && tmpl[1] == 'N' ? strrchr(f->outside, '/') + 1
                                                             : NULL;
        if (rep) {
            acp_buf_append(&b, rep, strlen(rep));
            tmpl++;
        } else {
            acp_buf_append(&b, tmpl, 1);
        }
    }
    acp_buf_cstr(&b);
    return b.data;
}

/* Has the agent write lines (templates, NULL-terminated; any bytes) and returns the answers
 * its requests among them got, by id (an object; caller owns). extra (stolen, may be NULL)
 * adds to the script. */
static json_t *script(fixture *f, const char *const *lines, json_t *extra)
{
    json_t *w = json_array();
    for (size_t i = 0; lines && lines[i]; i++) {
        char *l = fill(f, lines[i]);
        size_t n = strlen(l);
        char *hex = malloc(2 * n + 1);
        for (size_t k = 0; k < n; k++) sprintf(hex + 2 * k, "%02x", (unsigned char)l[k]);
        hex[2 * n] = 0;
        json_array_append_new(w, json_string(hex));
        free(hex);
        free(l);
    }
    json_t *p = extra ? extra : json_object();
    json_object_set_new(p, "hex", w);
    json_t *res = NULL;
    int rc = acp_client_call(f->c, "_test/script", p, &res);
    if (rc) fail_msg("script: %s", acp_error_last()->message);
    json_t *by_id = json_object();
    size_t i;
    json_t *a;
    json_array_foreach(json_object_get(res, "answers"), i, a)
    {
        json_t *id = json_object_get(a, "id");
        char key[64];
        if (json_is_string(id))
            snprintf(key, sizeof key, "%s", json_string_value(id));
        else
            snprintf(key, sizeof key, "%lld", (long long)json_integer_value(id));
        json_object_set(by_id, key, a);
    }
    json_decref(res);
    return by_id;
}

/* The answer to request `id` was an error with `code`. */
static void expect_error(json_t *answers, const char *id, int code)
{
    json_t *a = json_object_get(answers, id);
    if (!a) fail_msg("request %s was not answered", id);
    json_t *e = json_object_get(a, "error");
    if (!e) fail_msg("request %s succeeded; it should have failed %d", id, code);
    if (json_integer_value(json_object_get(e, "code")) != code)
        fail_msg("request %s failed %lld (%s); expected %d", id,
                 (long long)json_integer_value(json_object_get(e, "code")),
                 json_string_value(json_object_get(e, "message")), code);
}

static json_t *expect_result(json_t *answers, const char *id)
{
    json_t *a = json_object_get(answers, id);
    if (!a) fail_msg("request %s was not answered", id);
    if (!json_object_get(a, "result"))
        fail_msg("request %s failed: %s", id,
                 json_string_value(json_object_get(json_object_get(a, "error"), "message")));
    return json_object_get(a, "result");
}

/* The connection still works: a round trip through the agent. */
static void alive(fixture *f)
{
    json_t *r = script(f, NULL, NULL);
    json_decref(r);
    const char *stop;
    assert_int_equal(acp_client_session_prompt(f->s, "still here", &stop), 0);
    assert_string_equal(stop, "end_turn");
}

static int count(const acp_buf *b, const char *needle)
{
    int n = 0;
    if (!b->len) return 0;
    for (const char *p = b->data, *end = b->data + b->len;
         (p = memmem(p, (size_t)(end - p), needle, strlen(needle))); p++)
        n++;
    return n;
}

#define UPD(params) "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":" params "}"
#define CHUNK(sid, text)                                                                           \
    UPD("{\"sessionId\":" sid ",\"update\":{\"sessionUpdate\":\"agent_message_chunk\","            \
        "\"content\":{\"type\":\"text\",\"text\":\"" text "\"}}}")

/* --- malformed lines and updates ---------------------------------------------------------- */

static void test_malformed_updates(void **state)
{
    fixture *f = *state;
    static const char *const dropped[] = {
        UPD("[1,2]"),                                                    /* params not an object */
        UPD("{\"update\":{\"sessionUpdate\":\"agent_message_chunk\"}}"), /* no sessionId */
        UPD("{\"sessionId\":7,\"update\":{\"sessionUpdate\":\"plan\",\"entries\":[]}}"),
        UPD("{\"sessionId\":\"s1\"}"),                                    /* no update */
        UPD("{\"sessionId\":\"s1\",\"update\":\"agent_message_chunk\"}"), /* not an object */
        UPD("{\"sessionId\":\"s1\",\"update\":{\"content\":{}}}"),        /* no sessionUpdate */
        UPD("{\"sessionId\":\"s1\",\"update\":{\"sessionUpdate\":null}}"),
        UPD("{\"sessionId\":\"s1\",\"update\":{\"sessionUpdate\":[\"plan\"]}}"),
        UPD("null"),
        "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\"}", /* no params at all */
        NULL,
    };
    json_decref(script(f, dropped, NULL));
    assert_int_equal(f->updates, 0);
    /* A notification cannot be answered: on_log is the only trace, one line each. */
    assert_int_equal(count(&f->log, "dropped a session/update"), 10);

    static const char *const delivered[] = {
        CHUNK("\"s1\"", "ok"),
        /* Unknown kinds pass as ACP_UPDATE_OTHER, raw. */
        UPD("{\"sessionId\":\"s1\",\"update\":{\"sessionUpdate\":\"hologram_update\",\"x\":1}}"),
        /* The content of a known kind is not checked on the routing path: wrong types reach
         * the application raw, for it (or a typed view) to reject. */
        UPD("{\"sessionId\":\"s1\",\"update\":{\"sessionUpdate\":\"agent_message_chunk\","
            "\"content\":42}}"),
        UPD("{\"sessionId\":\"s1\",\"update\":{\"sessionUpdate\":\"plan\",\"entries\":\"no\"}}"),
        UPD("{\"sessionId\":\"s1\",\"update\":{\"sessionUpdate\":\"current_mode_update\","
            "\"currentModeId\":17}}"),
        UPD("{\"sessionId\":\"s1\",\"update\":{\"sessionUpdate\":\"config_option_update\","
            "\"configOptions\":{\"not\":\"an array\"}}}"),
        /* A session we have no handle for: dropped, and said (issue 20, item 8). */
        CHUNK("\"nope\"", "for nobody"),
        /* An escaped id is the same id. */
        CHUNK("\"\\u0073\\u0031\"", "escaped"),
        NULL,
    };
    json_decref(script(f, delivered, NULL));
    assert_int_equal(f->updates, 7);
    assert_int_equal(f->other, 1);
    assert_int_equal(f->unrouted, 0);
    assert_int_equal(count(&f->log, "dropped a session/update for session \"nope\""), 1);
    acp_buf_cstr(&f->texts);
    assert_string_equal(f->texts.data, "ok\n\nescaped\n");
    /* The bad mode and config updates did not corrupt the session's state (it had none). */
    assert_null(acp_client_session_mode(f->s));
    assert_null(acp_client_session_config_options(f->s));

    /* Lines that are not JSON-RPC at all: the agent is answered (it may be listening); the
     * client goes on. */
    int before = f->updates;
    static const char *const junk[] = {
        "this is not json",
        "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":\"s1\"",
        "[1,2,3]",
        "42",
        "\"a string\"",
        "{}",
        "{\"jsonrpc\":\"1.0\",\"method\":\"session/update\",\"params\":{}}",
        "{\"jsonrpc\":\"2.0\",\"method\":7}",
        /* Duplicate members, invalid UTF-8, a NUL escape, deep nesting. */
        UPD("{\"sessionId\":\"s1\",\"sessionId\":\"s2\",\"update\":{\"sessionUpdate\":\"plan\"}}"),
        UPD("{\"sessionId\":\"s1\",\"update\":{\"sessionUpdate\":\"agent_message_chunk\","
            "\"content\":{\"type\":\"text\",\"text\":\"\\u0000\"}}}"),
        "",
        "   ",
        NULL,
    };
    f->log.len = 0;
    json_decref(script(f, junk, NULL));
    assert_int_equal(count(&f->log, "refused a message from the peer"), 7);
    assert_int_equal(count(&f->log, "ignored"), 1); /* the notification with method 7 */
    alive(f);
    assert_true(f->updates - before <= 3); /* "still here", and at most the two odd ones */
}

/* Invalid UTF-8, overlong encodings, deep nesting. */
static void test_hostile_bytes(void **state)
{
    fixture *f = *state;
    /* 100 000 levels of nesting in an update: nothing may recurse that deep. */
    size_t depth = 100000;
    acp_buf deep = {0};
    const char *head =
        "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":"
        "\"s1\",\"update\":{\"sessionUpdate\":\"plan\",\"entries\":";
    acp_buf_append(&deep, head, strlen(head));
    for (size_t i = 0; i < depth; i++) acp_buf_append(&deep, "[", 1);
    for (size_t i = 0; i < depth; i++) acp_buf_append(&deep, "]", 1);
    acp_buf_append(&deep, "}}}", 3);
    acp_buf_cstr(&deep);
    /* Invalid UTF-8 inside a string (\xff) and an overlong encoding of '/'. */
    const char *const lines[] = {
        deep.data,
        CHUNK("\"s1\"", "bad \xff byte"),
        CHUNK("\"s\xc0\xaf\"", "overlong"),
        "{\"jsonrpc\":\"2.0\",\"id\":\"u1\",\"method\":\"fs/read_text_file\",\"params\":"
        "{\"sessionId\":\"s1\",\"path\":\"@R/a\xff.txt\"}}",
        NULL,
    };
    json_decref(script(f, lines, json_pack("{s:b}", "nowait", 1)));
    alive(f);
    /* None of them is JSON (the scanner bounds nesting): each answered -32700 with id null,
     * and said on on_log. */
    assert_int_equal(f->updates, 1); /* "still here" */
    assert_int_equal(count(&f->log, "refused a message from the peer: Parse error"), 4);
    json_t *rec = NULL;
    assert_int_equal(acp_client_call(f->c, "_test/received", NULL, &rec), 0);
    int parse_errors = 0;
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(rec, "received"), i, m)
    {
        json_t *e = json_object_get(m, "error");
        parse_errors += json_is_null(json_object_get(m, "id")) &&
                        json_integer_value(json_object_get(e, "code")) == ACP_RPC_PARSE_ERROR;
    }
    json_decref(rec);
    assert_int_equal(parse_errors, 4);
    acp_buf_free(&deep);
}

/* --- files outside the roots ---------------------------------------------------------------- */

static void test_fs_outside_roots(void **state)
{
    fixture *f = *state;
#define READ(id, path)                                                                             \
    "{\"jsonrpc\":\"2.0\",\"id\":\"" id "\",\"method\":\"fs/read_text_file\",\"params\":"          \
    "{\"sessionId\":\"s1\",\"path\":\"" path "\"}}"
#define WRITE(id, path)                                                                            \
    "{\"jsonrpc\":\"2.0\",\"id\":\"" id "\",\"method\":\"fs/write_text_file\",\"params\":"         \
    "{\"sessionId\":\"s1\",\"path\":\"" path "\",\"content\":\"pwned\"}}"
    static const char *const lines[] = {
        READ("r1", "@O/secret.txt"),
        READ("r2", "@R/../@N/secret.txt"),
        READ("r3", "@R/link"), /* a symlink to the outside file */
        READ("r4", "@R/dirlink/secret.txt"),
        READ("r5", "a.txt"), /* relative */
        READ("r6", "/etc/passwd"),
        READ("r7", "@R/a.txt\\u0000/../../etc/passwd"), /* a NUL inside */
        WRITE("w1", "@O/new.txt"),
        WRITE("w2", "@R/dirlink/new.txt"),
        WRITE("w3", "@R/link"), /* would truncate the outside file through the link */
        WRITE("w4", "relative.txt"),
        WRITE("w5", "@R/../escape.txt"),
        /* Controls: inside the roots, both work. */
        READ("ok1", "@R/a.txt"),
        WRITE("ok2", "@R/b.txt"),
        NULL,
    };
    json_t *a = script(f, lines, NULL);
    const char *refused[] = {"r1", "r2", "r3", "r4", "r5", "r6", "w1", "w2", "w3", "w4", "w5"};
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        json_t *e = json_object_get(json_object_get(a, refused[i]), "error");
        if (!e) fail_msg("%s was not refused", refused[i]);
        /* A clear error: a sentence, no file content. */
        const char *msg = json_string_value(json_object_get(e, "message"));
        assert_non_null(msg);
        assert_null(strstr(msg, "secret\n"));
    }
    expect_error(a, "r1", ACP_RPC_INVALID_PARAMS);
    expect_error(a, "w1", ACP_RPC_INVALID_PARAMS);
    expect_error(a, "r7", ACP_RPC_INVALID_PARAMS);
    json_t *r = expect_result(a, "ok1");
    assert_string_equal(json_string_value(json_object_get(r, "content")), "inside\n");
    expect_result(a, "ok2");
    json_decref(a);
    /* Every refusal of a request that reached the client is on on_log (r7's params never
     * parsed: the connection answered it). The user was asked about the one good write only. */
    assert_int_equal(count(&f->log, "refused the agent's fs/"), 11);
    assert_int_equal(f->asks, 1);
    /* Nothing outside changed, nothing escaped into the parent. */
    char p[256];
    snprintf(p, sizeof p, "%s/secret.txt", f->outside);
    FILE *fp = fopen(p, "r");
    char buf[64] = {0};
    assert_non_null(fp);
    assert_non_null(fgets(buf, sizeof buf, fp));
    fclose(fp);
    assert_string_equal(buf, "secret\n");
    snprintf(p, sizeof p, "%s/new.txt", f->outside);
    assert_int_equal(access(p, F_OK), -1);
    assert_int_equal(access("/tmp/escape.txt", F_OK), -1);
    int n = 0;
    DIR *d = opendir(f->outside);
    for (struct dirent *e; (e = readdir(d));) n += e->d_name[0] != '.';
    closedir(d);
    assert_int_equal(n, 1);
    alive(f);
#undef READ
#undef WRITE
}

/* --- requests for sessions and methods we do not have ------------------------------------ */

static void test_unknown_sessions(void **state)
{
    fixture *f = *state;
    static const char *const lines[] = {
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"session/request_permission\",\"params\":"
        "{\"sessionId\":\"nope\",\"toolCall\":{\"toolCallId\":\"t\"},\"options\":[]}}",
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/request_permission\",\"params\":"
        "{\"sessionId\":5,\"toolCall\":{\"toolCallId\":\"t\"},\"options\":[]}}",
        "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"session/request_permission\",\"params\":"
        "{\"sessionId\":\"s1\",\"toolCall\":{\"toolCallId\":\"t\"}}}", /* no options */
        "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"fs/read_text_file\",\"params\":"
        "{\"sessionId\":\"nope\",\"path\":\"@R/a.txt\"}}",
        "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"fs/write_text_file\",\"params\":"
        "{\"path\":\"@R/c.txt\",\"content\":\"x\"}}", /* no sessionId */
        "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"fs/write_text_file\",\"params\":"
        "{\"sessionId\":\"s1\",\"path\":\"@R/c.txt\",\"content\":7}}",
        "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"fs/read_text_file\",\"params\":"
        "{\"sessionId\":\"s1\",\"path\":\"@R/a.txt\",\"line\":-1}}",
        /* Not enabled, or not a method at all. */
        "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"terminal/create\",\"params\":"
        "{\"sessionId\":\"s1\",\"command\":\"true\"}}",
        "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"elicitation/create\",\"params\":"
        "{\"sessionId\":\"s1\",\"mode\":\"form\",\"message\":\"hi\",\"requestedSchema\":{}}}",
        "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"nope/nope\",\"params\":{}}",
        "{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"_vendor/thing\",\"params\":{}}",
        "{\"jsonrpc\":\"2.0\",\"id\":12,\"method\":\"session/update\",\"params\":{}}",
        "{\"jsonrpc\":\"2.0\",\"id\":13,\"method\":\"fs/read_text_file\",\"params\":\"x\"}",
        /* Notifications nobody handles are ignored. */
        "{\"jsonrpc\":\"2.0\",\"method\":\"nope/nope\",\"params\":{}}",
        "{\"jsonrpc\":\"2.0\",\"method\":\"_vendor/note\",\"params\":{}}",
        "{\"jsonrpc\":\"2.0\",\"method\":\"elicitation/complete\",\"params\":{}}",
        NULL,
    };
    json_t *a = script(f, lines, NULL);
    expect_error(a, "1", ACP_RPC_NOT_FOUND);
    expect_error(a, "2", ACP_RPC_INVALID_PARAMS);
    expect_error(a, "3", ACP_RPC_INVALID_PARAMS);
    expect_error(a, "4", ACP_RPC_NOT_FOUND);
    expect_error(a, "5", ACP_RPC_INVALID_PARAMS);
    expect_error(a, "6", ACP_RPC_INVALID_PARAMS);
    expect_error(a, "7", ACP_RPC_INVALID_PARAMS);
    expect_error(a, "8", ACP_RPC_METHOD_NOT_FOUND);
    expect_error(a, "9", ACP_RPC_INVALID_PARAMS); /* elicitation not advertised */
    expect_error(a, "10", ACP_RPC_METHOD_NOT_FOUND);
    expect_error(a, "11", ACP_RPC_METHOD_NOT_FOUND);
    expect_error(a, "12", ACP_RPC_METHOD_NOT_FOUND);
    expect_error(a, "13", ACP_RPC_INVALID_PARAMS);
    json_decref(a);
    assert_int_equal(f->perms, 0);
    assert_int_equal(f->asks, 0);
    assert_int_equal(count(&f->log, "unknown session"), 2);
    char p[256];
    snprintf(p, sizeof p, "%s/c.txt", f->root);
    assert_int_equal(access(p, F_OK), -1);
    alive(f);
}

/* --- answers we did not ask for, and answers of the wrong shape ----------------------------- */

static void test_unknown_ids(void **state)
{
    fixture *f = *state;
    static const char *const lines[] = {
        "{\"jsonrpc\":\"2.0\",\"id\":999999,\"result\":{}}",
        "{\"jsonrpc\":\"2.0\",\"id\":\"zzz\",\"result\":{}}",
        "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-1,\"message\":\"x\"}}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}", /* initialize's id: answered long ago */
        "{\"jsonrpc\":\"2.0\",\"id\":-3,\"result\":{}}",
        "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"result\":{}}",
        "{\"jsonrpc\":\"2.0\",\"id\":123456789012345678901234567890,\"result\":{}}",
        "{\"jsonrpc\":\"2.0\",\"id\":{\"a\":1},\"result\":{}}",
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{},\"error\":{\"code\":1,\"message\":\"x\"}}",
        "{\"jsonrpc\":\"2.0\",\"result\":{}}",
        NULL,
    };
    json_decref(script(f, lines, NULL));
    assert_true(count(&f->log, "unknown request id") >= 6);
    alive(f);
}

static void test_bad_answers(void **state)
{
    fixture *f = *state;
    const char *stop = NULL;
    /* Prompt answers without a known stopReason: ACP_EPROTO, and the session is free again. */
    static const char *const bad[] = {
        "{\"result\":\"{\\\"stopReason\\\":7}\"}",
        "{\"result\":\"{\\\"stopReason\\\":\\\"napping\\\"}\"}",
        "{\"result\":\"null\"}",
        "{\"result\":\"[]\"}",
        "{\"result\":\"\\\"end_turn\\\"\"}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(acp_client_session_prompt(f->s, bad[i], &stop), ACP_EPROTO);
        assert_string_equal(stop, "unknown");
        assert_non_null(strstr(acp_error_last()->message, "stopReason"));
    }
    /* A malformed error object still ends the call as an agent error. */
    assert_int_equal(
        acp_client_session_prompt(f->s, "{\"error\":\"{\\\"code\\\":\\\"x\\\"}\"}", &stop),
        ACP_EPROTO);
    assert_int_equal(acp_client_errcode(f->c), ACP_RPC_INTERNAL_ERROR);
    /* An agent's own error -32099 is its error, not the end of the connection. */
    json_t *res = NULL;
    int rc = acp_client_call(f->c, "_test/script",
                             json_pack("{s:s}", "error", "{\"code\":-32099,\"message\":\"mine\"}"),
                             &res);
    assert_int_equal(rc, ACP_EPROTO);
    assert_int_equal(acp_client_errcode(f->c), -32099);
    assert_non_null(strstr(acp_error_last()->message, "mine"));
    assert_false(acp_client_agent_gone(f->c));
    alive(f);
}

/* --- a line longer than max_message -------------------------------------------------------- */

static void test_oversized_line(void **state)
{
    fixture *f = *state;
    acp_client_free(f->c);
    f->c = NULL;
    open_client(f, 64 << 10);
    /* An update over the limit is dropped whole; the updates around it arrive. */
    static const char *const around[] = {CHUNK("\"s1\"", "before"), NULL};
    json_decref(
        script(f, around, json_pack("{s:{s:i}, s:s}", "big", "bytes", 100 << 10, "sid", "s1")));
    assert_int_equal(f->updates, 1);
    assert_int_equal(count(&f->log, "exceeds the limit"), 1);
    assert_true(f->biggest < 64 << 10);
    /* One just under the limit is delivered. */
    json_decref(
        script(f, NULL, json_pack("{s:{s:i}, s:s}", "big", "bytes", 60 << 10, "sid", "s1")));
    assert_int_equal(f->updates, 2);
    assert_true(f->biggest > 60 << 10);
    /* An answer to our call over the limit fails that call alone. */
    json_t *res = NULL;
    assert_int_equal(
        acp_client_call(f->c, "_test/script",
                        json_pack("{s:{s:i, s:b}}", "big", "bytes", 100 << 10, "id", 1), &res),
        ACP_EPROTO);
    assert_null(res);
    assert_int_equal(acp_client_errcode(f->c), ACP_RPC_INTERNAL_ERROR);
    assert_non_null(strstr(acp_error_last()->message, "exceeds the limit"));
    /* The same for a prompt: it ends, the session takes the next one. */
    const char *stop;
    assert_int_equal(
        acp_client_session_prompt(f->s, "{\"big\":{\"bytes\":102400,\"id\":true}}", &stop),
        ACP_EPROTO);
    assert_false(acp_client_agent_gone(f->c));
    alive(f);
}

int main(void)
{
    test_process_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_malformed_updates, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hostile_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fs_outside_roots, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unknown_sessions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unknown_ids, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_answers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_oversized_line, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
