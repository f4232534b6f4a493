/* SPDX-License-Identifier: Apache-2.0 */
/* acp_conn: framing, ids, error codes, both directions at once, cancellation, EOF. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp/rpc.h"

/* --- helpers ------------------------------------------------------------------------------ */

/* Takes the connection's output and splits it into parsed lines (at most 64). */
typedef struct lines {
    json_t *v[64];
    char *raw[64];
    size_t n;
} lines;

static void lines_take(acp_conn *c, lines *l)
{
    memset(l, 0, sizeof *l);
    size_t len;
    char *out = acp_conn_out_take(c, &len);
    for (size_t i = 0; i < len;) {
        char *nl = memchr(out + i, '\n', len - i);
        assert_non_null(nl); /* every message ends with LF */
        assert_true(l->n < 64);
        size_t n = (size_t)(nl - (out + i));
        l->raw[l->n] = malloc(n + 1);
        memcpy(l->raw[l->n], out + i, n);
        l->raw[l->n][n] = '\0';
        assert_null(memchr(l->raw[l->n], '\n', strlen(l->raw[l->n])));
        json_error_t err;
        l->v[l->n] = json_loads(l->raw[l->n], JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
        assert_non_null(l->v[l->n]);
        l->n++;
        i = (size_t)(nl - out) + 1;
    }
    free(out);
}

static void lines_free(lines *l)
{
    for (size_t i = 0; i < l->n; i++) {
        json_decref(l->v[i]);
        free(l->raw[i]);
    }
    l->n = 0;
}

static int err_code(json_t *v)
{
    return (int)json_integer_value(json_object_get(json_object_get(v, "error"), "code"));
}

static void feed(acp_conn *c, const char *s)
{
    assert_int_equal(acp_conn_recv(c, s, strlen(s)), 0);
}

/* An echo server: replies with its params; "_fail" replies with the code in params.code. */
static int handled;
static void on_echo(acp_conn *c, acp_req *r, void *user)
{
    handled++;
    acp_req_reply(r, json_incref(acp_req_params(r)));
}

static void on_fail(acp_conn *c, acp_req *r, void *user)
{
    int code = (int)json_integer_value(json_object_get(acp_req_params(r), "code"));
    acp_req_error(r, code, json_pack("{s:s}", "why", "asked"), "failed as asked: %d", code);
}

static int notes;
static char last_note[64];
static void on_note(acp_conn *c, acp_msg *m, void *user)
{
    notes++;
    json_t *p = acp_msg_params(m);
    const char *s = json_string_value(json_object_get(p, "s"));
    snprintf(last_note, sizeof last_note, "%s", s ? s : "");
}

static acp_conn *server(void)
{
    acp_conn *c = acp_conn_new(NULL);
    assert_non_null(c);
    acp_conn_on(c, "echo", on_echo, NULL, NULL);
    acp_conn_on(c, "_fail", on_fail, NULL, NULL);
    acp_conn_on(c, "note", NULL, on_note, NULL);
    handled = notes = 0;
    return c;
}

/* Records what an error response to one of our calls carried. */
struct got_error {
    int code;
    char message[64], data_k[16];
    bool is_error;
};
static void on_got_error(acp_conn *c, acp_msg *m, void *user)
{
    struct got_error *g = user;
    g->is_error = acp_msg_is_error(m);
    g->code = acp_msg_error_code(m);
    snprintf(g->message, sizeof g->message, "%s", acp_msg_error_message(m));
    const char *k = json_string_value(json_object_get(acp_msg_error_data(m), "k"));
    snprintf(g->data_k, sizeof g->data_k, "%s", k ? k : "");
}

/* --- framing ------------------------------------------------------------------------------ */

static void split_at_every_offset(void **state)
{
    const char *msgs =
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"echo\",\"params\":{\"t\":\"é€😀\"}}\r\n"
        "\n   \r\n"
        "{\"jsonrpc\":\"2.0\",\"method\":\"note\",\"params\":{\"s\":\"hi\"}}\n"
        "{\"jsonrpc\":\"2.0\",\"id\":\"two\",\"method\":\"echo\",\"params\":[1]}\n";
    size_t n = strlen(msgs);
    for (size_t cut = 0; cut <= n; cut++) {
        for (size_t cut2 = cut; cut2 <= n; cut2 += 7) {
            acp_conn *c = server();
            acp_conn_recv(c, msgs, cut);
            acp_conn_recv(c, msgs + cut, cut2 - cut);
            acp_conn_recv(c, msgs + cut2, n - cut2);
            lines l;
            lines_take(c, &l);
            assert_int_equal(l.n, 2);
            assert_int_equal(handled, 2);
            assert_int_equal(notes, 1);
            assert_string_equal(l.raw[0],
                                "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"t\":\"é€😀\"}}");
            assert_string_equal(l.raw[1], "{\"jsonrpc\":\"2.0\",\"id\":\"two\",\"result\":[1]}");
            lines_free(&l);
            acp_conn_free(c);
        }
    }
}

static void byte_by_byte_and_unterminated_last_line(void **state)
{
    acp_conn *c = server();
    const char *m = "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"echo\"}";
    for (size_t i = 0; m[i]; i++) acp_conn_recv(c, m + i, 1);
    assert_int_equal(handled, 0); /* no LF yet */
    acp_conn_eof(c);              /* the last line needs no LF */
    assert_int_equal(handled, 1);
    lines l;
    lines_take(c, &l);
    /* the reply still goes out: the peer may be reading after closing its side */
    assert_int_equal(l.n, 1);
    assert_int_equal(json_integer_value(json_object_get(l.v[0], "id")), 7);
    lines_free(&l);
    acp_conn_free(c);
}

static void oversize_line_is_answered_and_connection_survives(void **state)
{
    acp_conn_opts o = {.struct_size = sizeof(acp_conn_opts), .max_message = 100};
    acp_conn *c = acp_conn_new(&o);
    acp_conn_on(c, "echo", on_echo, NULL, NULL);
    handled = 0;
    char big[400];
    snprintf(big, sizeof big,
             "{\"jsonrpc\":\"2.0\",\"id\":\"big-1\",\"method\":\"echo\",\"params\":{\"p\":\"%"
             "0250d\"}}\n",
             0);
    /* in pieces, so the limit is hit while buffering */
    acp_conn_recv(c, big, 30);
    acp_conn_recv(c, big + 30, strlen(big) - 30);
    /* and whole, in one piece */
    feed(c, big);
    feed(c, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"echo\",\"params\":{}}\n");
    lines l;
    lines_take(c, &l);
    assert_int_equal(l.n, 3);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(err_code(l.v[i]), ACP_RPC_INVALID_REQUEST);
        assert_string_equal(json_string_value(json_object_get(l.v[i], "id")), "big-1");
        assert_non_null(
            strstr(json_string_value(json_object_get(json_object_get(l.v[i], "error"), "message")),
                   "exceeds the limit"));
    }
    assert_int_equal(json_integer_value(json_object_get(l.v[2], "id")), 3);
    assert_int_equal(handled, 1);
    lines_free(&l);
    /* exactly at the limit is accepted */
    char exact[101];
    int k = snprintf(exact, sizeof exact,
                     "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"echo\",\"params\":{\"p\":\"");
    while (k < 97) exact[k++] = 'x';
    exact[k++] = '"';
    exact[k++] = '}';
    exact[k++] = '}';
    acp_conn_recv(c, exact, 100);
    acp_conn_recv(c, "\r\n", 2);
    lines_take(c, &l);
    assert_int_equal(l.n, 1);
    assert_non_null(json_object_get(l.v[0], "result"));
    lines_free(&l);
    acp_conn_free(c);
}

/* An answer to our own call that is over the limit fails that call (the peer gets no error
 * response: it sent a response, not a request), and the connection goes on. */
static void oversize_response_fails_its_call(void **state)
{
    acp_conn_opts o = {.struct_size = sizeof(acp_conn_opts), .max_message = 100};
    acp_conn *c = acp_conn_new(&o);
    struct got_error g = {0};
    acp_call *call;
    assert_int_equal(acp_conn_call(c, "x", NULL, on_got_error, &g, &call), 0);
    free(acp_conn_out_take(c, &(size_t){0}));
    char big[400];
    snprintf(big, sizeof big, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{\"p\":\"%0250d\"}}\n",
             (long long)acp_call_id(call), 0);
    acp_conn_recv(c, big, 40); /* the limit is hit while buffering */
    acp_conn_recv(c, big + 40, strlen(big) - 40);
    assert_true(g.is_error);
    assert_int_equal(g.code, ACP_RPC_INTERNAL_ERROR);
    assert_non_null(strstr(g.message, "exceeds the limit"));
    assert_int_equal(acp_conn_pending_calls(c), 0);
    assert_int_equal(acp_conn_out_len(c), 0);
    acp_conn_free(c);
}

/* --- ids ---------------------------------------------------------------------------------- */

static void ids_are_echoed_verbatim(void **state)
{
    acp_conn *c = server();
    feed(c, "{\"jsonrpc\":\"2.0\",\"id\":9007199254740993,\"method\":\"echo\"}\n"
            "{\"jsonrpc\":\"2.0\",\"id\":123456789012345678901234567890,\"method\":\"echo\"}\n"
            "{\"jsonrpc\":\"2.0\",\"id\":\"s\\u0041\",\"method\":\"echo\"}\n"
            "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"echo\"}\n"
            "{\"jsonrpc\":\"2.0\",\"id\":-5,\"method\":\"echo\"}\n"
            "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"echo\"}\n");
    size_t len;
    char *out = acp_conn_out_take(c, &len);
    assert_non_null(out);
    const char *want = "{\"jsonrpc\":\"2.0\",\"id\":9007199254740993,\"result\":{}}\n"
                       "{\"jsonrpc\":\"2.0\",\"id\":123456789012345678901234567890,\"result\":{}}\n"
                       "{\"jsonrpc\":\"2.0\",\"id\":\"s\\u0041\",\"result\":{}}\n"
                       "{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":{}}\n"
                       "{\"jsonrpc\":\"2.0\",\"id\":-5,\"result\":{}}\n"
                       "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"result\":{}}\n";
    assert_int_equal(len, strlen(want));
    assert_memory_equal(out, want, len);
    free(out);
    acp_conn_free(c);
}

/* A response's id is matched against our own (small, non-negative integers); any other
 * number, however large, is simply unknown: logged and ignored, never answered. */
static int logs, resolved;
static void count_log(acp_conn *c, const char *message, void *user)
{
    logs++;
}
static void count_resolved(acp_conn *c, acp_msg *m, void *user)
{
    resolved++;
}

static void responses_with_foreign_ids_are_ignored(void **state)
{
    acp_conn_opts o = {.struct_size = sizeof(acp_conn_opts), .on_log = count_log};
    acp_conn *c = acp_conn_new(&o);
    acp_conn_call(c, "x", NULL, count_resolved, NULL, NULL);
    free(acp_conn_out_take(c, &(size_t){0}));
    logs = resolved = 0;
    feed(c, "{\"jsonrpc\":\"2.0\",\"id\":9999999999999999999,\"result\":{}}\n"
            "{\"jsonrpc\":\"2.0\",\"id\":9223372036854775807,\"result\":{}}\n"
            "{\"jsonrpc\":\"2.0\",\"id\":123456789012345678901234567890,\"result\":{}}\n"
            "{\"jsonrpc\":\"2.0\",\"id\":-0,\"result\":{}}\n"
            "{\"jsonrpc\":\"2.0\",\"id\":0.0,\"result\":{}}\n"
            "{\"jsonrpc\":\"2.0\",\"id\":\"0\",\"result\":{}}\n");
    assert_int_equal(logs, 6);
    assert_int_equal(resolved, 0);
    assert_int_equal(acp_conn_pending_calls(c), 1);
    assert_int_equal(acp_conn_out_len(c), 0);
    acp_conn_eof(c);
    acp_conn_free(c);
}

static void bad_id_types_are_invalid_requests(void **state)
{
    acp_conn *c = server();
    feed(c, "{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"echo\"}\n"
            "{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"echo\"}\n"
            "{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"echo\"}\n");
    lines l;
    lines_take(c, &l);
    assert_int_equal(l.n, 3);
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(err_code(l.v[i]), ACP_RPC_INVALID_REQUEST);
        assert_true(json_is_null(json_object_get(l.v[i], "id")));
    }
    assert_int_equal(handled, 0);
    lines_free(&l);
    acp_conn_free(c);
}

/* --- error codes --------------------------------------------------------------------------- */

/* Params that are valid JSON but that jansson refuses (what a C string or an int64 cannot hold,
 * a name given twice) are answered in the connection's own words, naming the member by its
 * path in the message and in error.data.path: never the library's text. */
static void refused_params_are_named_by_their_path(void **state)
{
    static const struct {
        const char *params, *path, *message;
    } cases[] = {
        {"{\"sessionId\":\"a\\u0000b\"}", "params.sessionId",
         "params.sessionId must not contain a NUL character (\\u0000)"},
        {"{\"prompt\":[{\"type\":\"text\"},{\"text\":\"x\\u0000\",\"type\":\"text\"}]}",
         "params.prompt[1].text",
         "params.prompt[1].text must not contain a NUL character (\\u0000)"},
        {"{\"_meta\":{\"a\":{\"b\":1, \"b\" : 2}}}", "params._meta.a.b",
         "params._meta.a.b is given twice: member names must be unique"},
        {"{\"a\\u0000\":1}", "params[\"a\\u0000\"]",
         "params[\"a\\u0000\"] is a member name with a NUL character (\\u0000), which is not "
         "accepted"},
        {"{\"protocolVersion\":99999999999999999999}", "params.protocolVersion",
         "params.protocolVersion is a number out of range (an integer must fit in 64 bits, a real "
         "in a double)"},
        {"{\"x\":[1, 2, 1e999 ]}", "params.x[2]",
         "params.x[2] is a number out of range (an integer must fit in 64 bits, a real in a "
         "double)"},
        {"{\"the key\":\"\\ud800\"}", "params[\"the key\"]",
         "params[\"the key\"] holds an unpaired UTF-16 surrogate escape (\\uD800-\\uDFFF)"},
        {"[\"\\u0000\"]", "params[0]", "params[0] must not contain a NUL character (\\u0000)"},
    };
    const size_t n = sizeof cases / sizeof *cases;
    acp_conn *c = server();
    for (size_t i = 0; i < n; i++) {
        char line[256];
        snprintf(line, sizeof line,
                 "{\"jsonrpc\":\"2.0\",\"id\":%zu,\"method\":\"echo\",\"params\":%s}\n", i,
                 cases[i].params);
        feed(c, line);
    }
    lines l;
    lines_take(c, &l);
    assert_int_equal(l.n, n);
    for (size_t i = 0; i < n; i++) {
        json_t *err = json_object_get(l.v[i], "error");
        assert_int_equal(json_integer_value(json_object_get(l.v[i], "id")), i);
        assert_int_equal(err_code(l.v[i]), ACP_RPC_INVALID_PARAMS);
        assert_string_equal(json_string_value(json_object_get(err, "message")), cases[i].message);
        assert_string_equal(
            json_string_value(json_object_get(json_object_get(err, "data"), "path")),
            cases[i].path);
        assert_null(strstr(l.raw[i], "JSON_ALLOW_NUL"));
        assert_null(strstr(l.raw[i], "near '"));
    }
    assert_int_equal(handled, 0);
    lines_free(&l);
    acp_conn_free(c);
}

static void protocol_errors(void **state)
{
    acp_conn *c = server();
    feed(c, "{not json\n"                                            /* -32700 */
            "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"echo\"}]\n" /* batch */
            "{\"id\":2,\"method\":\"echo\"}\n"                       /* no jsonrpc */
            "{\"jsonrpc\":\"1.0\",\"id\":3,\"method\":\"echo\"}\n"   /* wrong version */
            "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"nope\"}\n"   /* -32601 */
            "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"_ext/x\"}\n" /* extension, -32601 */
            "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"echo\",\"params\":5}\n" /* -32602 */
            "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"echo\",\"params\":{\"a\":1,\"a\":2}}\n"
            "{\"jsonrpc\":\"2.0\",\"id\":8,\"id\":9,\"method\":\"echo\"}\n" /* duplicate member */
            "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":7}\n"
            "42\n"
            "{\"jsonrpc\":\"2.0\",\"method\":\"unknown/notification\"}\n" /* ignored */
            "{\"jsonrpc\":\"2.0\",\"method\":\"_unknown\"}\n"             /* ignored */
            "{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"echo\",\"params\":null}\n");
    lines l;
    lines_take(c, &l);
    int want[][2] = {
        {-1, ACP_RPC_PARSE_ERROR},     {-1, ACP_RPC_INVALID_REQUEST}, {2, ACP_RPC_INVALID_REQUEST},
        {3, ACP_RPC_INVALID_REQUEST},  {4, ACP_RPC_METHOD_NOT_FOUND}, {5, ACP_RPC_METHOD_NOT_FOUND},
        {6, ACP_RPC_INVALID_PARAMS},   {7, ACP_RPC_INVALID_PARAMS},   {-1, ACP_RPC_INVALID_REQUEST},
        {10, ACP_RPC_INVALID_REQUEST}, {-1, ACP_RPC_INVALID_REQUEST}};
    assert_int_equal(l.n, 12);
    for (size_t i = 0; i < 11; i++) {
        json_t *id = json_object_get(l.v[i], "id");
        if (want[i][0] < 0)
            assert_true(json_is_null(id));
        else
            assert_int_equal(json_integer_value(id), want[i][0]);
        assert_int_equal(err_code(l.v[i]), want[i][1]);
        const char *msg =
            json_string_value(json_object_get(json_object_get(l.v[i], "error"), "message"));
        assert_true(msg && strlen(msg) > 5);
    }
    /* null params are treated as {} */
    assert_int_equal(json_integer_value(json_object_get(l.v[11], "id")), 11);
    assert_true(json_is_object(json_object_get(l.v[11], "result")));
    lines_free(&l);
    acp_conn_free(c);
}

static void handler_error_codes_reach_the_wire(void **state)
{
    int codes[] = {ACP_RPC_INTERNAL_ERROR, ACP_RPC_AUTH_REQUIRED, ACP_RPC_NOT_FOUND,
                   ACP_RPC_CANCELLED, ACP_RPC_INVALID_PARAMS};
    acp_conn *c = server();
    for (size_t i = 0; i < 5; i++) {
        char line[128];
        snprintf(line, sizeof line,
                 "{\"jsonrpc\":\"2.0\",\"id\":%zu,\"method\":\"_fail\",\"params\":{\"code\":%d}}\n",
                 i, codes[i]);
        feed(c, line);
    }
    lines l;
    lines_take(c, &l);
    assert_int_equal(l.n, 5);
    for (size_t i = 0; i < 5; i++) {
        assert_int_equal(err_code(l.v[i]), codes[i]);
        json_t *e = json_object_get(l.v[i], "error");
        assert_string_equal(json_string_value(json_object_get(json_object_get(e, "data"), "why")),
                            "asked");
        assert_non_null(
            strstr(json_string_value(json_object_get(e, "message")), "failed as asked"));
    }
    lines_free(&l);
    acp_conn_free(c);
}

/* "Notifications never receive responses (success or error)": not for a method nobody
 * handles, one that only has a request handler, bad params or a method that is no string. */
static void notifications_are_never_answered(void **state)
{
    acp_conn *c = server();
    feed(c, "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":{}}\n"
            "{\"jsonrpc\":\"2.0\",\"method\":\"nope\"}\n"
            "{\"jsonrpc\":\"2.0\",\"method\":\"_ext/nope\",\"params\":{\"a\":1}}\n"
            "{\"jsonrpc\":\"2.0\",\"method\":\"note\",\"params\":5}\n"
            "{\"jsonrpc\":\"2.0\",\"method\":7}\n"
            "{\"jsonrpc\":\"2.0\",\"method\":\"note\",\"params\":{\"s\":\"yes\"}}\n");
    assert_int_equal(acp_conn_out_len(c), 0);
    assert_int_equal(handled, 0);
    assert_int_equal(notes, 1); /* the one good notification did arrive */
    assert_string_equal(last_note, "yes");
    acp_conn_free(c);
}

/* "Decoders MUST accept unknown codes": an error response reaches the caller with its code,
 * message and data as the peer sent them; one without a usable code and message still
 * resolves the call, as an internal error. */
static void error_responses_keep_unknown_codes(void **state)
{
    acp_conn *c = server();
    struct got_error a = {0}, b = {0};
    acp_call *ca, *cb;
    acp_conn_call(c, "x", NULL, on_got_error, &a, &ca);
    acp_conn_call(c, "y", NULL, on_got_error, &b, &cb);
    free(acp_conn_out_take(c, &(size_t){0}));
    char line[256];
    snprintf(line, sizeof line,
             "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"error\":{\"code\":4242,\"message\":"
             "\"custom\",\"data\":{\"k\":\"v\"}}}\n"
             "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"error\":{\"code\":\"x\"}}\n",
             (long long)acp_call_id(ca), (long long)acp_call_id(cb));
    feed(c, line);
    assert_int_equal(acp_conn_pending_calls(c), 0);
    assert_true(a.is_error);
    assert_int_equal(a.code, 4242);
    assert_string_equal(a.message, "custom");
    assert_string_equal(a.data_k, "v");
    assert_true(b.is_error);
    assert_int_equal(b.code, ACP_RPC_INTERNAL_ERROR);
    assert_true(strlen(b.message) > 5);
    assert_int_equal(acp_conn_out_len(c), 0); /* responses are never answered */
    acp_conn_free(c);
}

/* --- both directions ------------------------------------------------------------------------ */

/* Moves bytes between two connections until both are quiet. */
static void pump(acp_conn *a, acp_conn *b)
{
    for (int round = 0; round < 1000; round++) {
        size_t na, nb;
        char *oa = acp_conn_out_take(a, &na), *ob = acp_conn_out_take(b, &nb);
        if (!oa && !ob) return;
        if (oa) acp_conn_recv(b, oa, na);
        if (ob) acp_conn_recv(a, ob, nb);
        free(oa);
        free(ob);
    }
    fail_msg("connections never went quiet");
}

struct tally {
    int ok, err, last_code;
    int64_t sum;
};

static void on_resp(acp_conn *c, acp_msg *m, void *user)
{
    struct tally *t = user;
    if (acp_msg_is_error(m)) {
        t->err++;
        t->last_code = acp_msg_error_code(m);
        return;
    }
    t->ok++;
    t->sum += json_integer_value(json_object_get(acp_msg_result(m), "n"));
}

/* A handler that, before answering, calls back into the peer and answers when that returns. */
struct nested {
    acp_req *req;
};
static void on_nested_resp(acp_conn *c, acp_msg *m, void *user)
{
    acp_req *r = user;
    json_t *res = acp_msg_result(m);
    acp_req_reply(r, json_incref(res));
}
static void on_ask_back(acp_conn *c, acp_req *r, void *user)
{
    acp_conn_call(c, "echo", json_incref(acp_req_params(r)), on_nested_resp, r, NULL);
}

static void concurrent_requests_both_ways(void **state)
{
    acp_conn *a = server(), *b = server();
    acp_conn_on(a, "ask_back", on_ask_back, NULL, NULL);
    acp_conn_on(b, "ask_back", on_ask_back, NULL, NULL);
    struct tally ta = {0}, tb = {0};
    for (int i = 1; i <= 500; i++) {
        acp_conn_call(a, i % 2 ? "echo" : "ask_back", json_pack("{s:i}", "n", i), on_resp, &ta,
                      NULL);
        acp_conn_call(b, i % 3 ? "echo" : "ask_back", json_pack("{s:i}", "n", i), on_resp, &tb,
                      NULL);
        if (i % 50 == 0) pump(a, b);
    }
    assert_int_equal(acp_conn_pending_calls(a), 0);
    assert_int_equal(ta.ok, 500);
    assert_int_equal(tb.ok, 500);
    assert_int_equal(ta.sum, 500 * 501 / 2);
    assert_int_equal(tb.sum, 500 * 501 / 2);
    acp_conn_free(a);
    acp_conn_free(b);
}

/* --- cancellation ---------------------------------------------------------------------------- */

static acp_req *held;
static int cancel_seen;
static void on_cancel(acp_req *r, void *user)
{
    cancel_seen++;
    acp_req_error(r, ACP_RPC_CANCELLED, NULL, "cancelled by the peer");
    held = NULL;
}
static void on_hold(acp_conn *c, acp_req *r, void *user)
{
    held = r;
    acp_req_on_cancel(r, on_cancel, NULL);
}

static void cancel_both_directions(void **state)
{
    acp_conn *a = server(), *b = server();
    acp_conn_on(b, "hold", on_hold, NULL, NULL);
    struct tally t = {0};
    acp_call *call;
    acp_conn_call(a, "hold", NULL, on_resp, &t, &call);
    pump(a, b);
    assert_non_null(held);
    assert_false(acp_req_cancelled(held));
    acp_conn_cancel(a, call); /* outgoing $/cancel_request */
    pump(a, b);
    assert_int_equal(cancel_seen, 1);
    assert_int_equal(t.err, 1);
    assert_int_equal(t.last_code, ACP_RPC_CANCELLED);

    /* dropping a call sends the cancel and the callback never fires */
    cancel_seen = 0;
    acp_conn_call(a, "hold", NULL, on_resp, &t, &call);
    pump(a, b);
    acp_conn_forget(a, call);
    pump(a, b);
    assert_int_equal(cancel_seen, 1);
    assert_int_equal(t.err, 1);
    assert_int_equal(acp_conn_pending_calls(a), 0);

    /* a cancel for an unknown or finished request is ignored */
    feed(b,
         "{\"jsonrpc\":\"2.0\",\"method\":\"$/cancel_request\",\"params\":{\"requestId\":999}}\n");
    assert_int_equal(acp_conn_out_len(b), 0);

    /* abandon: resolved locally at once, the late answer is ignored */
    acp_conn_call(a, "hold", NULL, on_resp, &t, &call);
    pump(a, b);
    held = NULL;
    cancel_seen = 0;
    acp_conn_abandon(a, call, ACP_RPC_INTERNAL_ERROR, "timed out");
    assert_int_equal(t.err, 2);
    assert_int_equal(t.last_code, ACP_RPC_INTERNAL_ERROR);
    pump(a, b);
    assert_int_equal(t.err, 2);
    acp_conn_free(a);
    acp_conn_free(b);
}

static void the_peer_is_asked_to_cancel_once(void **state)
{
    acp_conn *c = server();
    struct tally t = {0};
    acp_call *call;
    acp_conn_call(c, "hold", NULL, on_resp, &t, &call);
    free(acp_conn_out_take(c, &(size_t){0}));
    acp_conn_cancel(c, call);
    acp_conn_cancel(c, call);
    acp_conn_forget(c, call); /* e.g. a turn that cancelled its calls, then ended */
    lines l;
    lines_take(c, &l);
    assert_int_equal(l.n, 1);
    assert_string_equal(json_string_value(json_object_get(l.v[0], "method")), "$/cancel_request");
    lines_free(&l);
    acp_conn_free(c);
}

static void cancel_method_is_configurable_for_mcp(void **state)
{
    acp_conn_opts o = {.struct_size = sizeof(acp_conn_opts),
                       .cancel_method = "notifications/cancelled"};
    acp_conn *c = acp_conn_new(&o);
    acp_conn_on(c, "hold", on_hold, NULL, NULL);
    cancel_seen = 0;
    feed(c, "{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":\"hold\"}\n"
            "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/"
            "cancelled\",\"params\":{\"requestId\":\"x\",\"reason\":\"r\"}}\n");
    assert_int_equal(cancel_seen, 1);
    lines l;
    lines_take(c, &l);
    assert_int_equal(l.n, 1);
    assert_int_equal(err_code(l.v[0]), ACP_RPC_CANCELLED);
    lines_free(&l);
    acp_conn_free(c);
}

/* A cancellation names its target by id value: a string id matches however either side
 * escaped it; a request already answered is not answered again. */
static void cancel_matches_ids_by_value(void **state)
{
    acp_conn *c = server();
    acp_conn_on(c, "hold", on_hold, NULL, NULL);
    cancel_seen = 0;
    feed(c, "{\"jsonrpc\":\"2.0\",\"id\":\"r\\u0031\",\"method\":\"hold\"}\n"
            "{\"jsonrpc\":\"2.0\",\"method\":\"$/cancel_request\",\"params\":{\"requestId\":1}}\n");
    assert_int_equal(cancel_seen, 0); /* the number 1 is not the string "r1" */
    feed(c, "{\"jsonrpc\":\"2.0\",\"method\":\"$/"
            "cancel_request\",\"params\":{\"requestId\":\"r1\"}}\n");
    assert_int_equal(cancel_seen, 1);
    lines l;
    lines_take(c, &l);
    assert_int_equal(l.n, 1);
    assert_int_equal(err_code(l.v[0]), ACP_RPC_CANCELLED);
    assert_string_equal(l.raw[0] + strlen("{\"jsonrpc\":\"2.0\",\"id\":"),
                        "\"r\\u0031\",\"error\":{\"code\":-32800,\"message\":\"cancelled by "
                        "the peer\"}}"); /* echoed as sent */
    lines_free(&l);
    /* finished before the cancel arrived: the normal answer stands, the cancel is ignored */
    feed(c, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"echo\"}\n"
            "{\"jsonrpc\":\"2.0\",\"method\":\"$/cancel_request\",\"params\":{\"requestId\":2}}\n");
    lines_take(c, &l);
    assert_int_equal(l.n, 1);
    assert_non_null(json_object_get(l.v[0], "result"));
    lines_free(&l);
    /* an id with U+0000 in it is a valid string id: served, cancellable, echoed as sent
     * (it was answered -32603 "out of memory"), and not the id without the NUL */
    cancel_seen = 0;
    feed(
        c,
        "{\"jsonrpc\":\"2.0\",\"id\":\"a\\u0000b\",\"method\":\"echo\"}\n"
        "{\"jsonrpc\":\"2.0\",\"id\":\"n\\u0000\",\"method\":\"hold\"}\n"
        "{\"jsonrpc\":\"2.0\",\"method\":\"$/cancel_request\",\"params\":{\"requestId\":\"n\"}}\n");
    assert_int_equal(cancel_seen, 0);
    feed(c, "{\"jsonrpc\":\"2.0\",\"method\":\"$/"
            "cancel_request\",\"params\":{\"requestId\":\"\\u006e\\u0000\"}}\n");
    assert_int_equal(cancel_seen, 1);
    lines_take(c, &l);
    assert_int_equal(l.n, 2);
    assert_non_null(json_object_get(l.v[0], "result"));
    assert_true(strstr(l.raw[0], "\"id\":\"a\\u0000b\"") != NULL);
    assert_int_equal(err_code(l.v[1]), ACP_RPC_CANCELLED);
    assert_true(strstr(l.raw[1], "\"id\":\"n\\u0000\"") != NULL);
    lines_free(&l);
    acp_conn_free(c);
}

/* --- EOF ------------------------------------------------------------------------------------- */

static void eof_resolves_pending_calls(void **state)
{
    acp_conn *c = server();
    struct tally t = {0};
    for (int i = 0; i < 100; i++) acp_conn_call(c, "x", NULL, on_resp, &t, NULL);
    acp_call *forgotten;
    acp_conn_call(c, "x", NULL, on_resp, &t, &forgotten);
    acp_conn_forget(c, forgotten);
    /* a held incoming request stays answerable (the answer is dropped) */
    acp_conn_on(c, "hold", on_hold, NULL, NULL);
    feed(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"hold\"}\n");
    acp_conn_eof(c);
    assert_int_equal(t.err, 100);
    assert_int_equal(t.last_code, ACP_RPC_CONN_CLOSED);
    assert_int_equal(acp_conn_pending_calls(c), 0);
    assert_true(acp_conn_closed(c));
    assert_int_equal(acp_conn_call(c, "x", NULL, on_resp, &t, NULL), ACP_ECLOSED);
    assert_int_equal(acp_conn_recv(c, "{}\n", 3), ACP_ECLOSED);
    assert_int_equal(acp_req_reply(held, NULL), 0);
    assert_int_equal(acp_conn_pending_requests(c), 0);
    acp_conn_free(c);
}

/* acp_conn_eof() promises that a callback it runs may abandon or forget other pending calls:
 * each call then resolves exactly once (a forgotten one never), and nothing is used after it
 * was freed (ASan would say). */
#define EOF_CALLS 40
struct eof_giveup {
    acp_call *call[EOF_CALLS];
    bool gone[EOF_CALLS]; /* resolved, or given up by the test */
    int fired[EOF_CALLS], closed_code;
    int first; /* the call whose callback gave up on the others */
    bool gave_up;
};
struct eof_slot {
    struct eof_giveup *g;
    int i;
};
static void on_eof_giveup(acp_conn *c, acp_msg *m, void *user)
{
    struct eof_slot *s = user;
    struct eof_giveup *g = s->g;
    g->fired[s->i]++;
    g->gone[s->i] = true;
    if (acp_msg_error_code(m) == ACP_RPC_CONN_CLOSED) g->closed_code++;
    if (g->gave_up) return;
    g->gave_up = true; /* the first callback gives up on every other call */
    g->first = s->i;
    for (int i = 0; i < EOF_CALLS; i++) {
        if (g->gone[i]) continue;
        g->gone[i] = true;
        if (i % 2)
            acp_conn_abandon(c, g->call[i], ACP_RPC_CANCELLED, "given up");
        else
            acp_conn_forget(c, g->call[i]);
    }
}

static void eof_callbacks_may_give_up_other_calls(void **state)
{
    acp_conn *c = server();
    struct eof_giveup g = {0};
    struct eof_slot slots[EOF_CALLS];
    for (int i = 0; i < EOF_CALLS; i++) {
        slots[i] = (struct eof_slot){&g, i};
        assert_int_equal(acp_conn_call(c, "x", NULL, on_eof_giveup, &slots[i], &g.call[i]), 0);
    }
    acp_conn_eof(c);
    assert_int_equal(acp_conn_pending_calls(c), 0);
    assert_int_equal(g.closed_code, 1); /* only the first resolved by the EOF itself */
    /* the first call by the EOF, the other odd ones abandoned, the even ones forgotten */
    for (int i = 0; i < EOF_CALLS; i++) assert_int_equal(g.fired[i], i == g.first || i % 2 ? 1 : 0);
    acp_conn_free(c);
}

static void unanswered_requests_are_freed_with_the_connection(void **state)
{
    acp_conn *c = server();
    acp_conn_on(c, "hold", on_hold, NULL, NULL);
    feed(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"hold\",\"params\":{\"big\":[1,2,3]}}\n");
    assert_int_equal(acp_conn_pending_requests(c), 1);
    acp_conn_free(c); /* LeakSanitizer checks the rest */
}

/* --- output paths ----------------------------------------------------------------------------- */

static void streamed_messages_and_redirect(void **state)
{
    acp_conn *c = server();
    acp_jw *w = acp_conn_notify_begin(c, "session/update");
    acp_jw_obj(w);
    acp_jw_kstr(w, "sessionId", "s1");
    acp_jw_key(w, "update");
    {
        const char *u = "{\"sessionUpdate\":\"plan\",\"entries\":[]}";
        acp_jw_raw(w, u, strlen(u));
    }
    acp_jw_obj_end(w);
    assert_int_equal(acp_conn_notify_end(c), 0);
    /* a failed stream leaves nothing behind */
    w = acp_conn_notify_begin(c, "session/update");
    acp_jw_str(w, "\xff");
    assert_int_equal(acp_conn_notify_end(c), ACP_EINVAL);
    /* redirect holds messages elsewhere until they are appended */
    acp_buf hold = {0};
    acp_conn_redirect(c, &hold);
    acp_conn_notify(c, "held", json_pack("{s:i}", "n", 1));
    acp_conn_redirect(c, NULL);
    acp_conn_notify(c, "direct", NULL);
    acp_conn_out_append(c, hold.data, hold.len);
    acp_buf_free(&hold);
    lines l;
    lines_take(c, &l);
    assert_int_equal(l.n, 3);
    assert_string_equal(l.raw[0], "{\"jsonrpc\":\"2.0\",\"method\":\"session/"
                                  "update\",\"params\":{\"sessionId\":\"s1\",\"update\":{"
                                  "\"sessionUpdate\":\"plan\",\"entries\":[]}}}");
    assert_string_equal(l.raw[1], "{\"jsonrpc\":\"2.0\",\"method\":\"direct\"}");
    assert_string_equal(l.raw[2], "{\"jsonrpc\":\"2.0\",\"method\":\"held\",\"params\":{\"n\":1}}");
    lines_free(&l);
    acp_conn_free(c);
}

/* Every message leaves whole or not at all: a method name that is not UTF-8 cannot be
 * written, so nothing is (no line with a hole where the method was), and no call is left
 * pending for a request that never left. */
static void a_method_that_is_not_utf8_sends_nothing(void **state)
{
    acp_conn *c = server();
    struct tally t = {0};
    const char *bad = "bad\xff";
    assert_int_equal(acp_conn_notify(c, bad, json_object()), ACP_EINVAL);
    assert_int_equal(acp_conn_notify(c, bad, NULL), ACP_EINVAL);
    assert_int_equal(acp_conn_notify_raw(c, bad, "{}", 2), ACP_EINVAL);
    assert_int_equal(acp_conn_call(c, bad, NULL, on_resp, &t, NULL), ACP_EINVAL);
    assert_null(acp_conn_call_begin(c, bad, on_resp, &t, NULL));
    acp_jw *w = acp_conn_notify_begin(c, bad);
    acp_jw_obj(w);
    acp_jw_obj_end(w);
    assert_int_equal(acp_conn_notify_end(c), ACP_EINVAL);
    assert_int_equal(acp_conn_out_len(c), 0);
    assert_int_equal(acp_conn_pending_calls(c), 0);
    /* and the connection goes on working */
    assert_int_equal(acp_conn_notify(c, "ok", NULL), 0);
    lines l;
    lines_take(c, &l);
    assert_int_equal(l.n, 1);
    assert_string_equal(l.raw[0], "{\"jsonrpc\":\"2.0\",\"method\":\"ok\"}");
    lines_free(&l);
    acp_conn_free(c);
}

/* Every answer frees the request, also a streamed one whose begin failed. */
static void reply_end_without_a_stream_still_answers(void **state)
{
    acp_conn *c = server();
    acp_conn_on(c, "hold", on_hold, NULL, NULL);
    feed(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"hold\"}\n");
    acp_req *r1 = held;
    feed(c, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"hold\"}\n");
    acp_req *r2 = held;
    acp_jw *w = acp_conn_notify_begin(c, "busy"); /* a message is being streamed */
    assert_null(acp_req_reply_begin(r1));
    assert_int_equal(acp_req_reply_end(r1), ACP_EINVAL); /* freed, nothing cut in */
    acp_jw_obj(w);
    acp_jw_obj_end(w);
    assert_int_equal(acp_conn_notify_end(c), 0);
    /* With no stream open, the request is answered. */
    assert_int_equal(acp_req_reply_end(r2), ACP_EINVAL);
    assert_int_equal(acp_conn_pending_requests(c), 0);
    lines l;
    lines_take(c, &l);
    assert_int_equal(l.n, 2); /* the streamed notification, whole; the error for id 2 */
    assert_string_equal(json_string_value(json_object_get(l.v[0], "method")), "busy");
    assert_int_equal(json_integer_value(json_object_get(l.v[1], "id")), 2);
    assert_int_equal(err_code(l.v[1]), ACP_RPC_INTERNAL_ERROR);
    lines_free(&l);
    acp_conn_free(c);
}

static void own_ids_are_unique(void **state)
{
    acp_conn *c = server();
    struct tally t = {0};
    int64_t seen[1000];
    for (int i = 0; i < 1000; i++) {
        acp_call *call;
        acp_conn_call(c, "x", NULL, on_resp, &t, &call);
        seen[i] = acp_call_id(call);
        for (int j = 0; j < i; j++) assert_true(seen[j] != seen[i]);
    }
    acp_conn_eof(c);
    acp_conn_free(c);
}

/* Every line the connection refuses itself (no handler will ever see it) reaches on_log, as
 * well as the peer: an application has no other trace of a peer that sends junk. */
static void refused_lines_are_logged(void **state)
{
    acp_conn_opts o = {
        .struct_size = sizeof(acp_conn_opts), .on_log = count_log, .max_message = 64};
    acp_conn *c = acp_conn_new(&o);
    logs = 0;
    feed(c, "not json\n"
            "[1]\n"
            "42\n"
            "{}\n"
            "{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"x\"}\n"
            "{\"jsonrpc\":\"2.0\",\"id\":2}\n"
            "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":7}\n"
            "{\"jsonrpc\":\"2.0\",\"method\":7}\n"
            "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"x\",\"params\":1}\n"
            "{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":1}\n"
            "{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":"
            "\"0123456789012345678901234567890123456789012345678901234567890123456789\"}\n"
            "\n");
    assert_int_equal(logs, 11);
    lines l;
    lines_take(c, &l);
    assert_int_equal(l.n, 9); /* all but the two notifications are answered */
    lines_free(&l);
    acp_conn_free(c);
}

/* A call without a callback wants no answer: its response is consumed without a word, and it
 * is still written after EOF (a half-closed peer reads on), where it leaves nothing pending. */
static void calls_without_a_callback(void **state)
{
    acp_conn_opts o = {.struct_size = sizeof(acp_conn_opts), .on_log = count_log};
    acp_conn *c = acp_conn_new(&o);
    acp_call *call = (acp_call *)1;
    assert_int_equal(
        acp_conn_call(c, "terminal/release", json_pack("{ss}", "t", "1"), NULL, NULL, &call), 0);
    assert_null(call);
    assert_int_equal(acp_conn_call(c, "terminal/release", NULL, NULL, NULL, NULL), 0);
    lines l;
    lines_take(c, &l);
    assert_int_equal(l.n, 2);
    json_int_t id0 = json_integer_value(json_object_get(l.v[0], "id"));
    json_int_t id1 = json_integer_value(json_object_get(l.v[1], "id"));
    assert_string_equal(json_string_value(json_object_get(l.v[0], "method")), "terminal/release");
    lines_free(&l);
    assert_int_equal(acp_conn_pending_calls(c), 2);
    logs = 0;
    char in[200];
    snprintf(in, sizeof in,
             "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{}}\n"
             "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"error\":{\"code\":-32603,\"message\":\"no\"}}\n",
             (long long)id0, (long long)id1);
    feed(c, in);
    assert_int_equal(logs, 0);
    assert_int_equal(acp_conn_pending_calls(c), 0);
    assert_int_equal(acp_conn_out_len(c), 0);

    /* One still open at EOF resolves silently too. */
    assert_int_equal(acp_conn_call(c, "x", NULL, NULL, NULL, NULL), 0);
    acp_conn_eof(c);
    assert_int_equal(acp_conn_pending_calls(c), 0);
    free(acp_conn_out_take(c, &(size_t){0}));
    /* After EOF: with a callback refused, without one written and not kept. */
    struct tally t = {0};
    assert_int_equal(acp_conn_call(c, "x", NULL, on_resp, &t, NULL), ACP_ECLOSED);
    assert_int_equal(acp_conn_out_len(c), 0);
    assert_int_equal(acp_conn_call(c, "terminal/release", json_pack("{ss}", "terminalId", "t1"),
                                   NULL, NULL, NULL),
                     0);
    lines_take(c, &l);
    assert_int_equal(l.n, 1);
    assert_string_equal(json_string_value(json_object_get(l.v[0], "method")), "terminal/release");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(l.v[0], "params"), "terminalId")), "t1");
    lines_free(&l);
    /* The streamed form, likewise. */
    assert_null(acp_conn_call_begin(c, "x", on_resp, &t, NULL));
    acp_jw *w = acp_conn_call_begin(c, "terminal/release", NULL, NULL, &call);
    assert_non_null(w);
    assert_null(call);
    acp_jw_obj(w);
    acp_jw_kstr(w, "terminalId", "t2");
    acp_jw_obj_end(w);
    assert_int_equal(acp_conn_call_end(c), 0);
    lines_take(c, &l);
    assert_int_equal(l.n, 1);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(l.v[0], "params"), "terminalId")), "t2");
    lines_free(&l);
    assert_int_equal(acp_conn_pending_calls(c), 0);
    assert_int_equal(logs, 0);
    acp_conn_free(c); /* LeakSanitizer checks nothing was kept */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(split_at_every_offset),
        cmocka_unit_test(byte_by_byte_and_unterminated_last_line),
        cmocka_unit_test(oversize_line_is_answered_and_connection_survives),
        cmocka_unit_test(oversize_response_fails_its_call),
        cmocka_unit_test(ids_are_echoed_verbatim),
        cmocka_unit_test(responses_with_foreign_ids_are_ignored),
        cmocka_unit_test(refused_lines_are_logged),
        cmocka_unit_test(bad_id_types_are_invalid_requests),
        cmocka_unit_test(protocol_errors),
        cmocka_unit_test(refused_params_are_named_by_their_path),
        cmocka_unit_test(handler_error_codes_reach_the_wire),
        cmocka_unit_test(notifications_are_never_answered),
        cmocka_unit_test(error_responses_keep_unknown_codes),
        cmocka_unit_test(concurrent_requests_both_ways),
        cmocka_unit_test(cancel_both_directions),
        cmocka_unit_test(the_peer_is_asked_to_cancel_once),
        cmocka_unit_test(cancel_method_is_configurable_for_mcp),
        cmocka_unit_test(cancel_matches_ids_by_value),
        cmocka_unit_test(eof_resolves_pending_calls),
        cmocka_unit_test(eof_callbacks_may_give_up_other_calls),
        cmocka_unit_test(unanswered_requests_are_freed_with_the_connection),
        cmocka_unit_test(streamed_messages_and_redirect),
        cmocka_unit_test(a_method_that_is_not_utf8_sends_nothing),
        cmocka_unit_test(reply_end_without_a_stream_still_answers),
        cmocka_unit_test(own_ids_are_unique),
        cmocka_unit_test(calls_without_a_callback),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
