/* SPDX-License-Identifier: Apache-2.0 */
#include "harness.h"

#include "tests/store/tmpdir.h"

const acp_store_ops *real_ops;

h *h_new(const char *tag, size_t esize)
{
    h *x = calloc(1, sizeof *x);
    assert_int_equal(tmpdir_make(x->dir, sizeof x->dir, tag), 0);
    assert_non_null(realpath(x->dir, x->real));
    snprintf(x->db, sizeof x->db, "%s/s.db", x->dir);
    uv_loop_init(&x->loop);
    store_open(x);
    x->ops = *real_ops; /* nothing ran through the empty x->ops in between */
    x->msgs = json_array();
    x->e = calloc(1, esize);
    x->opts = (acp_agent_opts)ACP_AGENT_OPTS_INIT; /* test files set members of it */
    return x;
}

void h_free(h *x)
{
    if (x->a) agent_stop(x);
    store_close(x);
    assert_int_equal(uv_loop_close(&x->loop), 0);
    json_decref(x->msgs);
    tmpdir_remove(x->dir);
    free(x->e);
    free(x);
}

void store_open(h *x)
{
    assert_int_equal(acp_store_open(x->db, &x->st), 0);
    real_ops = x->st->ops;
    x->st->ops = &x->ops;
}

void store_close(h *x)
{
    x->st->ops = real_ops;
    acp_store_close(x->st);
    x->st = NULL;
}

void agent_start(h *x)
{
    assert_int_equal(acp_agent_new(&x->loop, x->st, &x->eng, &x->opts, &x->a), 0);
}

void agent_stop(h *x)
{
    acp_agent_free(x->a);
    x->a = NULL;
    uv_run(&x->loop, UV_RUN_DEFAULT);
    json_array_clear(x->msgs);
}

void collect(h *x)
{
    size_t n;
    char *out = acp_conn_out_take(acp_agent_conn(x->a), &n);
    for (char *p = out, *e; p && p < out + n; p = e + 1) {
        e = memchr(p, '\n', (size_t)(out + n - p));
        assert_non_null(e);
        json_t *m = json_loadb(p, (size_t)(e - p), 0, NULL);
        if (!m) fail_msg("unparsable output line: %.*s", (int)(e - p), p);
        json_array_append_new(x->msgs, m);
    }
    free(out);
}

void turn(h *x)
{
    uv_run(&x->loop, UV_RUN_NOWAIT);
    acp_agent_flush(x->a);
    collect(x);
}

void send_line(h *x, const char *fmt, ...)
{
    char *line, *full;
    va_list ap;
    va_start(ap, fmt);
    assert_true(vasprintf(&line, fmt, ap) > 0);
    va_end(ap);
    assert_true(asprintf(&full, "%s\n", line) > 0);
    acp_conn_recv(acp_agent_conn(x->a), full, strlen(full));
    free(full);
    free(line);
}

void send_prompt(h *x, int id, const char *sid, const char *text)
{
    send_line(x,
              "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"session/prompt\",\"params\":"
              "{\"sessionId\":\"%s\",\"prompt\":[{\"type\":\"text\",\"text\":\"%s\"}]}}",
              id, sid, text);
}

json_t *request(h *x, int id, const char *method, const char *params)
{
    send_line(x, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"%s\",\"params\":%s}", id, method,
              params);
    return take_response(x, id);
}

int wait_response(h *x, json_int_t id)
{
    int at = -1;
    for (int i = 0; i < 1000 && (at = find_response(x, id)) < 0; i++) turn(x);
    assert_true(at >= 0);
    return at;
}

json_t *take_response(h *x, json_int_t id)
{
    int at = wait_response(x, id);
    json_t *got = json_array();
    for (int i = 0; i <= at; i++) {
        json_array_append(got, json_array_get(x->msgs, 0));
        json_array_remove(x->msgs, 0);
    }
    return got;
}

int find_in(const json_t *msgs, json_int_t id)
{
    for (size_t i = 0; i < json_array_size(msgs); i++) {
        const json_t *m = json_array_get(msgs, i);
        if (!method_of(m) && id_of(m) == id) return (int)i;
    }
    return -1;
}

int find_response(h *x, json_int_t id)
{
    return find_in(x->msgs, id);
}

int find_method(const json_t *msgs, const char *method, int from)
{
    for (size_t i = (size_t)from; i < json_array_size(msgs); i++) {
        const char *m = method_of(json_array_get(msgs, i));
        if (m && !strcmp(m, method)) return (int)i;
    }
    return -1;
}

int find_cancel(const json_t *msgs, json_int_t call_id)
{
    for (int i = 0; (i = find_method(msgs, "$/cancel_request", i)) >= 0; i++)
        if (json_integer_value(json_object_get(params_of(json_array_get(msgs, (size_t)i)),
                                               "requestId")) == call_id)
            return i;
    return -1;
}

json_t *last(const json_t *msgs)
{
    return json_array_get(msgs, json_array_size(msgs) - 1);
}

const char *jstr(const json_t *obj, const char *key)
{
    return json_string_value(json_object_get(obj, key));
}

const char *method_of(const json_t *m)
{
    return jstr(m, "method");
}

json_t *params_of(const json_t *m)
{
    return json_object_get(m, "params");
}

json_int_t id_of(const json_t *m)
{
    return json_integer_value(json_object_get(m, "id"));
}

json_t *result_of(const json_t *msgs)
{
    return json_object_get(last(msgs), "result");
}

int error_code(const json_t *msgs)
{
    return (int)json_integer_value(json_object_get(json_object_get(last(msgs), "error"), "code"));
}

const char *error_message(const json_t *msgs)
{
    return jstr(json_object_get(last(msgs), "error"), "message");
}

const char *stop_reason(const json_t *response)
{
    return jstr(json_object_get(response, "result"), "stopReason");
}

json_t *update_at(const json_t *msgs, size_t i)
{
    return json_object_get(params_of(json_array_get(msgs, i)), "update");
}

json_t *updates_of(const json_t *msgs)
{
    json_t *out = json_array();
    for (size_t i = 0; i < json_array_size(msgs); i++)
        if (update_at(msgs, i)) json_array_append(out, update_at(msgs, i));
    return out;
}

size_t count_updates(const json_t *msgs, const char *kind)
{
    size_t n = 0;
    for (size_t i = 0; i < json_array_size(msgs); i++) {
        const char *k = jstr(update_at(msgs, i), "sessionUpdate");
        if (k && (!kind || !strcmp(k, kind))) n++;
    }
    return n;
}

static int collect_stored(void *user, int64_t seq, const char *json, size_t n)
{
    json_t *u = json_loadb(json, n, 0, NULL);
    assert_non_null(u);
    json_array_append_new(user, u);
    return 0;
}

json_t *history(h *x, const char *id)
{
    json_t *all = json_array();
    int64_t last_seq;
    bool done;
    assert_int_equal(acp_store_replay(x->st, id, 0, 0, collect_stored, all, &last_seq, &done), 0);
    return all;
}

int stored(h *x, const char *id)
{
    json_t *all = history(x, id);
    int n = (int)json_array_size(all);
    json_decref(all);
    return n;
}

void assert_errmsg(h *x, const char *part)
{
    if (!strstr(acp_error_last()->message, part))
        fail_msg("errmsg \"%s\" lacks \"%s\"", acp_error_last()->message, part);
}

char *vquote(const char *fmt, va_list ap)
{
    char *s;
    assert_true(vasprintf(&s, fmt, ap) >= 0);
    for (char *p = s; *p; p++)
        if (*p == '\'') *p = '"';
    return s;
}

json_t *J(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = vquote(fmt, ap);
    va_end(ap);
    json_error_t err;
    json_t *v = json_loads(s, JSON_DECODE_ANY, &err);
    if (!v) fprintf(stderr, "bad expected JSON (%s): %s\n", err.text, s);
    assert_non_null(v);
    free(s);
    return v;
}

void assert_json_(const json_t *got, json_t *want, const char *file, int line)
{
    if (!json_equal(got, want)) {
        char *g = got ? json_dumps(got, JSON_SORT_KEYS | JSON_ENCODE_ANY) : NULL;
        char *w = json_dumps(want, JSON_SORT_KEYS | JSON_ENCODE_ANY);
        fprintf(stderr, "JSON differs\n  got:  %s\n  want: %s\n", g ? g : "(null)", w);
        free(g);
        free(w);
        json_decref(want);
        _fail(file, line);
    }
    json_decref(want);
}
