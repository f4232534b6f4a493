/* SPDX-License-Identifier: Apache-2.0 */
#include "engines/openai/stream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp/error.h"
#include "acp/num.h"

static int on_event(void *user, const char *event, const char *data, size_t n);

void openai_stream_init(openai_stream *st, int (*on_text)(void *, bool, const char *, size_t),
                        void *user)
{
    memset(st, 0, sizeof *st);
    acp_sse_init(&st->sse, on_event, st);
    st->on_text = on_text;
    st->user = user;
}

void openai_stream_free(openai_stream *st)
{
    for (size_t i = 0; i < st->ncalls; i++) {
        free(st->calls[i].id);
        free(st->calls[i].name);
        acp_buf_free(&st->calls[i].args);
    }
    free(st->calls);
    free(st->error);
    acp_sse_free(&st->sse);
    memset(st, 0, sizeof *st);
}

int openai_stream_feed(openai_stream *st, const char *p, size_t n)
{
    return acp_sse_feed(&st->sse, p, n);
}

static int fail(openai_stream *st, const char *what)
{
    if (!st->error) st->error = strdup(what);
    return ACP_EPROTO;
}

/* A whole number member (a token count, an index); false when absent or not one. */
static bool member_u64(acp_span obj, const char *key, uint64_t *out)
{
    acp_span v;
    if (!acp_json_member(obj, key, &v) || acp_json_kind(v) != 'n' || v.n > 20) return false;
    char num[24];
    memcpy(num, v.p, v.n);
    num[v.n] = '\0';
    return acp_parse_u64(num, 0, UINT64_MAX, out) == 0;
}

/* Passes a JSON string's text to on_text: straight from the chunk when it has no escapes (the
 * usual token), decoded otherwise. */
static int text(openai_stream *st, bool reasoning, acp_span v)
{
    if (acp_json_kind(v) != 's' || v.n <= 2 || !st->on_text) return 0;
    if (!memchr(v.p, '\\', v.n)) return st->on_text(st->user, reasoning, v.p + 1, v.n - 2);
    char *s = acp_json_strdup(v);
    if (!s) return fail(st, "a text delta holds a NUL character");
    int rc = st->on_text(st->user, reasoning, s, strlen(s));
    free(s);
    return rc;
}

static char *dup_string(acp_span v)
{
    return acp_json_kind(v) == 's' ? acp_json_strdup(v) : NULL;
}

/* One tool_calls[] fragment. Without an index (some servers send each call whole), a fragment
 * with a new id starts a call and one without continues the last. */
static int call_fragment(openai_stream *st, acp_span frag)
{
    if (acp_json_kind(frag) != 'o') return 0;
    uint64_t index;
    bool has_index = member_u64(frag, "index", &index);
    acp_span id = {0}, fn = {0}, v;
    acp_json_member(frag, "id", &id);
    openai_call *c = NULL;
    for (size_t i = 0; i < st->ncalls && !c; i++)
        if (has_index                  ? st->calls[i].index == (int64_t)index
            : acp_json_kind(id) == 's' ? st->calls[i].id && acp_json_str_eq(id, st->calls[i].id)
                                       : i + 1 == st->ncalls)
            c = &st->calls[i];
    if (!c) {
        if (st->ncalls == st->cap) {
            size_t cap = st->cap ? st->cap * 2 : 4;
            openai_call *v2 = realloc(st->calls, cap * sizeof *v2);
            if (!v2) return ACP_ENOMEM;
            st->calls = v2;
            st->cap = cap;
        }
        c = &st->calls[st->ncalls++];
        memset(c, 0, sizeof *c);
        c->index = has_index ? (int64_t)index : (int64_t)st->ncalls - 1;
    }
    if (acp_json_kind(id) == 's' && id.n > 2) {
        char *s = dup_string(id);
        if (!s) return ACP_ENOMEM;
        free(c->id);
        c->id = s;
    }
    if (acp_json_member(frag, "function", &fn) && acp_json_kind(fn) == 'o') {
        if (acp_json_member(fn, "name", &v) && acp_json_kind(v) == 's' && v.n > 2) {
            char *s = dup_string(v);
            if (!s) return ACP_ENOMEM;
            free(c->name);
            c->name = s;
        }
        if (acp_json_member(fn, "arguments", &v)) {
            if (acp_json_kind(v) == 's') {
                if (memchr(v.p, '\\', v.n)) {
                    char *s = acp_json_strdup(v);
                    if (!s) return fail(st, "tool call arguments hold a NUL character");
                    int rc = acp_buf_append(&c->args, s, strlen(s));
                    free(s);
                    if (rc) return ACP_ENOMEM;
                } else if (acp_buf_append(&c->args, v.p + 1, v.n - 2)) {
                    return ACP_ENOMEM;
                }
            } else if (acp_json_kind(v) == 'o') { /* Ollama's native shape: an object */
                if (acp_buf_append(&c->args, v.p, v.n)) return ACP_ENOMEM;
            }
        }
    }
    return 0;
}

static int on_event(void *user, const char *event, const char *data, size_t n)
{
    openai_stream *st = user;
    if (n == 6 && !memcmp(data, "[DONE]", 6)) {
        st->done = true;
        return 0;
    }
    /* One walk per level: a chunk is mostly members we skip (id, model, fingerprints...). */
    static const char *const top_keys[] = {"choices", "usage", "error"};
    static const char *const choice_keys[] = {"delta", "finish_reason"};
    static const char *const delta_keys[] = {"content", "reasoning_content", "reasoning",
                                             "tool_calls"};
    acp_span chunk = {data, n}, top[3], ch[2], d[4], choice, v;
    if (acp_json_members(chunk, top_keys, 3, top) < 0) /* validates the chunk as it goes */
        return fail(st, "the model server sent an event that is not a JSON object");
    if (top[2].p && acp_json_kind(top[2]) != 'z') {
        acp_span msg;
        free(st->error);
        st->error = NULL;
        if (acp_json_kind(top[2]) == 'o' && acp_json_member(top[2], "message", &msg))
            st->error = dup_string(msg);
        else if (acp_json_kind(top[2]) == 's')
            st->error = dup_string(top[2]);
        if (!st->error) st->error = strdup("the model server reported an error");
        return 0;
    }
    if (top[1].p && acp_json_kind(top[1]) == 'o') {
        st->has_usage = true;
        member_u64(top[1], "prompt_tokens", &st->prompt_tokens);
        member_u64(top[1], "completion_tokens", &st->completion_tokens);
        if (!member_u64(top[1], "total_tokens", &st->total_tokens))
            st->total_tokens = st->prompt_tokens + st->completion_tokens;
    }
    size_t pos = 0;
    if (!top[0].p || acp_json_kind(top[0]) != 'a' || !acp_json_item(top[0], &pos, &choice) ||
        acp_json_kind(choice) != 'o')
        return 0; /* the usage chunk has choices: [] */
    acp_json_members(choice, choice_keys, 2, ch);
    v = ch[1];
    if (v.p && acp_json_kind(v) == 's' && v.n - 2 < sizeof st->finish) {
        char *s = acp_json_strdup(v);
        if (s) snprintf(st->finish, sizeof st->finish, "%s", s);
        free(s);
    }
    if (!ch[0].p || acp_json_kind(ch[0]) != 'o') return 0;
    acp_json_members(ch[0], delta_keys, 4, d);
    int rc;
    if (d[1].p && (rc = text(st, true, d[1]))) return rc;
    if (d[2].p && (rc = text(st, true, d[2]))) return rc;
    if (d[0].p && (rc = text(st, false, d[0]))) return rc;
    v = d[3];
    if (v.p && acp_json_kind(v) == 'a') {
        acp_span frag;
        pos = 0;
        while (acp_json_item(v, &pos, &frag))
            if ((rc = call_fragment(st, frag))) return rc;
    }
    return 0;
}
