/* SPDX-License-Identifier: Apache-2.0 */
#include "engines/openai/history.h"

#include <stdlib.h>
#include <string.h>

#include "acp/error.h"

/* Plain text appended as escaped JSON string content (no quotes). */
static int put_plain(acp_buf *b, const char *s, size_t n)
{
    size_t at = b->len;
    if (acp_json_escape(b, s, n)) return ACP_ENOMEM; /* invalid UTF-8 too: never stored so */
    memmove(b->data + at, b->data + at + 1, b->len - at - 2);
    b->len -= 2;
    return 0;
}

/* A validated JSON string literal's content, still escaped. */
static int put_lit(acp_buf *b, acp_span lit)
{
    return acp_buf_append(b, lit.p + 1, lit.n - 2);
}

static int put_str(acp_buf *b, const char *s)
{
    return acp_buf_append(b, s, strlen(s));
}

/* The message being built, rendered onto out (nothing for an empty assistant message). */
static int render_cur(const openai_history *h, acp_buf *out, bool *wrote)
{
    int rc = 0;
    *wrote = false;
    if (h->cur == OPENAI_MSG_USER) {
        rc |= put_str(out, "{\"role\":\"user\",\"content\":\"");
        rc |= acp_buf_append(out, h->content.data, h->content.len);
        rc |= put_str(out, "\"}");
        *wrote = true;
    } else if (h->cur == OPENAI_MSG_ASSISTANT && (h->content.len || h->nres)) {
        rc |= put_str(out, "{\"role\":\"assistant\",\"content\":");
        if (h->content.len) {
            rc |= acp_buf_putc(out, '"');
            rc |= acp_buf_append(out, h->content.data, h->content.len);
            rc |= acp_buf_putc(out, '"');
        } else {
            rc |= put_str(out, "null");
        }
        if (h->nres) {
            rc |= put_str(out, ",\"tool_calls\":[");
            rc |= acp_buf_append(out, h->calls.data, h->calls.len);
            rc |= acp_buf_putc(out, ']');
        }
        rc |= acp_buf_putc(out, '}');
        for (size_t i = 0; i < h->nres; i++) {
            rc |= put_str(out, ",{\"role\":\"tool\",\"tool_call_id\":");
            rc |= acp_json_escape(out, h->res[i].wire_id, strlen(h->res[i].wire_id));
            rc |= put_str(out, ",\"content\":\"");
            if (h->res[i].has)
                rc |= acp_buf_append(out, h->res[i].text.data, h->res[i].text.len);
            else
                rc |= put_str(out, "(no result)");
            rc |= put_str(out, "\"}");
        }
        *wrote = true;
    }
    return rc ? ACP_ENOMEM : 0;
}

static void clear_cur(openai_history *h)
{
    for (size_t i = 0; i < h->nres; i++) {
        free(h->res[i].id);
        free(h->res[i].wire_id);
        acp_buf_free(&h->res[i].text);
    }
    h->nres = 0;
    free(h->user_mid);
    h->user_mid = NULL;
    h->content.len = 0;
    h->calls.len = 0;
    h->cur = OPENAI_MSG_NONE;
}

/* Moves the message being built to the finished ones. */
static int flush(openai_history *h)
{
    size_t at = h->done.len;
    if (h->ndone && acp_buf_putc(&h->done, ',')) return ACP_ENOMEM;
    bool wrote;
    if (render_cur(h, &h->done, &wrote)) return ACP_ENOMEM;
    if (wrote)
        h->ndone++;
    else
        h->done.len = at;
    clear_cur(h);
    return 0;
}

static int begin(openai_history *h, enum openai_msg kind)
{
    if (h->cur != OPENAI_MSG_NONE && flush(h)) return ACP_ENOMEM;
    h->cur = kind;
    return 0;
}

int openai_history_user_block(openai_history *h, const char *mid, acp_span block)
{
    bool same = h->cur == OPENAI_MSG_USER && mid && h->user_mid && !strcmp(mid, h->user_mid);
    if (!same) {
        if (begin(h, OPENAI_MSG_USER)) return ACP_ENOMEM;
        if (mid && !(h->user_mid = strdup(mid))) return ACP_ENOMEM;
    } else if (acp_buf_append(&h->content, "\\n", 2)) {
        return ACP_ENOMEM;
    }
    acp_span type, v, res;
    if (acp_json_kind(block) != 'o' || !acp_json_member(block, "type", &type)) return 0;
    int rc = 0;
    if (acp_json_str_eq(type, "text")) {
        if (acp_json_member(block, "text", &v) && acp_json_kind(v) == 's')
            rc = put_lit(&h->content, v);
    } else if (acp_json_str_eq(type, "resource")) {
        if (acp_json_member(block, "resource", &res) && acp_json_kind(res) == 'o') {
            if (acp_json_member(res, "uri", &v) && acp_json_kind(v) == 's') {
                rc |= put_str(&h->content, "[resource ");
                rc |= put_lit(&h->content, v);
                rc |= put_str(&h->content, "]\\n");
            }
            if (acp_json_member(res, "text", &v) && acp_json_kind(v) == 's')
                rc |= put_lit(&h->content, v);
        }
    } else if (acp_json_str_eq(type, "resource_link")) {
        rc |= put_str(&h->content, "[resource");
        if (acp_json_member(block, "name", &v) && acp_json_kind(v) == 's') {
            rc |= acp_buf_putc(&h->content, ' ');
            rc |= put_lit(&h->content, v);
        }
        if (acp_json_member(block, "uri", &v) && acp_json_kind(v) == 's') {
            rc |= acp_buf_putc(&h->content, ' ');
            rc |= put_lit(&h->content, v);
        }
        rc |= acp_buf_putc(&h->content, ']');
    } else if (acp_json_kind(type) == 's' && type.n < 32) {
        rc |= acp_buf_putc(&h->content, '[');
        rc |= put_lit(&h->content, type);
        rc |= acp_buf_putc(&h->content, ']');
    }
    return rc ? ACP_ENOMEM : 0;
}

/* The assistant message to add to: a new one after a message of another kind, or after one
 * whose tool calls got results (text after those is the model's next message). */
static int assistant(openai_history *h)
{
    bool answered = false;
    for (size_t i = 0; i < h->nres; i++) answered |= h->res[i].has;
    if (h->cur == OPENAI_MSG_ASSISTANT && !answered) return 0;
    return begin(h, OPENAI_MSG_ASSISTANT);
}

int openai_history_assistant_text(openai_history *h, const char *text, size_t n)
{
    if (!n) return 0;
    if (assistant(h)) return ACP_ENOMEM;
    return put_plain(&h->content, text, n);
}

int openai_history_call(openai_history *h, const char *id, const char *wire_id, const char *name,
                        acp_span raw_input)
{
    if (assistant(h)) return ACP_ENOMEM;
    if (h->nres == h->capres) {
        size_t cap = h->capres ? h->capres * 2 : 4;
        openai_result *v = realloc(h->res, cap * sizeof *v);
        if (!v) return ACP_ENOMEM;
        h->res = v;
        h->capres = cap;
    }
    openai_result *r = &h->res[h->nres];
    memset(r, 0, sizeof *r);
    if (!wire_id || !*wire_id) wire_id = id;
    if (!(r->id = strdup(id)) || !(r->wire_id = strdup(wire_id))) {
        free(r->id);
        return ACP_ENOMEM;
    }
    h->nres++;
    int rc = 0;
    if (h->calls.len) rc |= acp_buf_putc(&h->calls, ',');
    rc |= put_str(&h->calls, "{\"id\":");
    rc |= acp_json_escape(&h->calls, wire_id, strlen(wire_id));
    rc |= put_str(&h->calls, ",\"type\":\"function\",\"function\":{\"name\":");
    rc |= acp_json_escape(&h->calls, name, strlen(name));
    rc |= put_str(&h->calls, ",\"arguments\":");
    if (acp_json_kind(raw_input) == 's')
        rc |= acp_buf_append(&h->calls, raw_input.p, raw_input.n);
    else if (raw_input.n)
        rc |= acp_json_escape(&h->calls, raw_input.p, raw_input.n);
    else
        rc |= put_str(&h->calls, "\"{}\"");
    rc |= put_str(&h->calls, "}}");
    return rc ? ACP_ENOMEM : 0;
}

/* The longest prefix of escaped JSON string content s, at most max bytes, that is still valid
 * content: not inside an escape sequence (a backslash run of odd length, or \uXXXX) nor inside
 * a UTF-8 sequence. */
static size_t escaped_cut(const char *s, size_t max)
{
    size_t k = max;
    while (k > 0 && ((unsigned char)s[k] & 0xC0) == 0x80) k--;
    for (size_t back = 1; back <= 5 && back <= k; back++) /* \uXXXX cut after its backslash */
        if (s[k - back] == '\\' && s[k - back + 1] == 'u') {
            size_t run = 0;
            while (run < k - back && s[k - back - 1 - run] == '\\') run++;
            if (run % 2 == 0) k -= back;
            break;
        }
    size_t run = 0;
    while (run < k && s[k - 1 - run] == '\\') run++;
    return run % 2 ? k - 1 : k;
}

int openai_history_result(openai_history *h, const char *id, bool failed, acp_span content)
{
    if (h->cur != OPENAI_MSG_ASSISTANT) return 0;
    openai_result *r = NULL;
    for (size_t i = 0; i < h->nres && !r; i++)
        if (!strcmp(h->res[i].id, id)) r = &h->res[i];
    if (!r) return 0;
    r->text.len = 0;
    r->has = true;
    int rc = failed ? put_str(&r->text, "Error: ") : 0;
    size_t at = r->text.len, pos = 0;
    acp_span item, type, block, v;
    while (acp_json_kind(content) == 'a' && acp_json_item(content, &pos, &item)) {
        if (acp_json_kind(item) != 'o' || !acp_json_member(item, "type", &type) ||
            !acp_json_str_eq(type, "content") || !acp_json_member(item, "content", &block) ||
            acp_json_kind(block) != 'o' || !acp_json_member(block, "type", &type) ||
            !acp_json_str_eq(type, "text") || !acp_json_member(block, "text", &v) ||
            acp_json_kind(v) != 's')
            continue;
        if (r->text.len > at) rc |= put_str(&r->text, "\\n");
        rc |= put_lit(&r->text, v);
    }
    if (r->text.len == at) rc |= put_str(&r->text, failed ? "failed" : "(no output)");
    if (!rc && h->result_max && r->text.len > h->result_max) {
        size_t cut = escaped_cut(r->text.data, h->result_max), n = r->text.len - cut;
        r->text.len = cut;
        rc |= acp_buf_printf(&r->text, "\\n[... %zu more bytes not shown]", n);
    }
    return rc ? ACP_ENOMEM : 0;
}

/* Forgets what a compaction summarised: every message before it but the prompt that
 * triggered it (the one being built, if it is the user's). */
static void summarised(openai_history *h)
{
    if (h->cur != OPENAI_MSG_USER) clear_cur(h);
    h->done.len = 0;
    h->ndone = 0;
    h->summary.len = 0;
}

int openai_history_compacted(openai_history *h, const char *summary, size_t n)
{
    summarised(h);
    return put_plain(&h->summary, summary, n);
}

static char *member_str(acp_span obj, const char *key)
{
    acp_span v;
    return acp_json_member(obj, key, &v) && acp_json_kind(v) == 's' ? acp_json_strdup(v) : NULL;
}

static int feed_compaction(openai_history *h, acp_span u, bool chunk)
{
    char *id = member_str(u, "compactionId");
    if (!id) return 0;
    if (!h->cmp_id || strcmp(h->cmp_id, id)) { /* a new compaction */
        free(h->cmp_id);
        h->cmp_id = id;
        h->cmp_text.len = 0;
    } else {
        free(id);
    }
    acp_span v, t;
    if (chunk) {
        if (acp_json_member(u, "content", &v) && acp_json_kind(v) == 'o' &&
            acp_json_member(v, "text", &t) && acp_json_kind(t) == 's')
            return put_lit(&h->cmp_text, t) ? ACP_ENOMEM : 0; /* kept escaped, as the summary */
        return 0;
    }
    if (!acp_json_member(u, "status", &v) || !acp_json_str_eq(v, "completed")) return 0;
    summarised(h);
    int rc = acp_buf_append(&h->summary, h->cmp_text.data, h->cmp_text.len);
    h->cmp_text.len = 0;
    return rc ? ACP_ENOMEM : 0;
}

int openai_history_feed(openai_history *h, const char *json, size_t n)
{
    acp_span u = {json, n}, kind, v, w;
    if (acp_json_validate(json, n, 128) || acp_json_kind(u) != 'o' ||
        !acp_json_member(u, "sessionUpdate", &kind))
        return 0;
    if (acp_json_str_eq(kind, "agent_message_chunk")) {
        if (!acp_json_member(u, "content", &v) || acp_json_kind(v) != 'o' ||
            !acp_json_member(v, "text", &w) || acp_json_kind(w) != 's' || w.n <= 2)
            return 0;
        if (assistant(h)) return ACP_ENOMEM;
        return put_lit(&h->content, w) ? ACP_ENOMEM : 0;
    }
    if (acp_json_str_eq(kind, "user_message_chunk")) {
        if (!acp_json_member(u, "content", &v)) return 0;
        char *mid = member_str(u, "messageId");
        int rc = openai_history_user_block(h, mid, v);
        free(mid);
        return rc;
    }
    if (acp_json_str_eq(kind, "tool_call")) {
        char *id = member_str(u, "toolCallId"), *name = member_str(u, "name"), *wire = NULL;
        acp_span raw = {0}, meta, ours;
        acp_json_member(u, "rawInput", &raw);
        if (acp_json_member(u, "_meta", &meta) && acp_json_kind(meta) == 'o' &&
            acp_json_member(meta, "openai", &ours) && acp_json_kind(ours) == 'o')
            wire = member_str(ours, "toolCallId");
        int rc = id && name ? openai_history_call(h, id, wire, name, raw) : 0;
        free(id);
        free(name);
        free(wire);
        return rc;
    }
    if (acp_json_str_eq(kind, "tool_call_update")) {
        if (!acp_json_member(u, "status", &v)) return 0;
        bool failed = acp_json_str_eq(v, "failed");
        if (!failed && !acp_json_str_eq(v, "completed")) return 0;
        char *id = member_str(u, "toolCallId");
        acp_span content = {"[]", 2};
        acp_json_member(u, "content", &content);
        int rc = id ? openai_history_result(h, id, failed, content) : 0;
        free(id);
        return rc;
    }
    if (acp_json_str_eq(kind, "compaction_update")) return feed_compaction(h, u, false);
    if (acp_json_str_eq(kind, "compaction_summary_chunk")) return feed_compaction(h, u, true);
    return 0;
}

int openai_history_render_done(const openai_history *h, acp_buf *out)
{
    int rc = 0;
    if (h->summary.len) {
        rc |= put_str(out, "{\"role\":\"user\",\"content\":\"");
        rc |= acp_buf_append(out, h->summary.data, h->summary.len);
        rc |= put_str(out, "\"}");
        if (h->ndone) rc |= acp_buf_putc(out, ',');
    }
    rc |= acp_buf_append(out, h->done.data, h->done.len);
    return rc ? ACP_ENOMEM : 0;
}

int openai_history_render(const openai_history *h, acp_buf *out)
{
    if (openai_history_render_done(h, out)) return ACP_ENOMEM;
    size_t at = out->len;
    if ((h->ndone || h->summary.len) && acp_buf_putc(out, ',')) return ACP_ENOMEM;
    bool wrote;
    if (render_cur(h, out, &wrote)) return ACP_ENOMEM;
    if (!wrote) out->len = at;
    return 0;
}

int openai_history_render_system(const openai_history *h, const char *system, acp_buf *out)
{
    bool sys = system && *system;
    if (!sys) return 0;
    int rc = put_str(out, "{\"role\":\"system\",\"content\":\"");
    rc |= put_plain(out, system, strlen(system));
    if (h->summary.len)
        rc |= put_str(out, "\\n\\nThe first message condenses the earlier part of this "
                           "conversation.");
    rc |= put_str(out, "\"}");
    return rc ? ACP_ENOMEM : 1;
}

size_t openai_history_bytes(const openai_history *h)
{
    size_t n = h->done.len + h->summary.len + h->content.len + h->calls.len;
    for (size_t i = 0; i < h->nres; i++) n += h->res[i].text.len;
    return n;
}

bool openai_history_started(const openai_history *h)
{
    return h->ndone > 0 || h->cur != OPENAI_MSG_NONE || h->summary.len > 0;
}

static int buf_copy(acp_buf *dst, const acp_buf *src)
{
    return src->len ? acp_buf_append(dst, src->data, src->len) : 0;
}

static int str_copy(char **dst, const char *src)
{
    return src && !(*dst = strdup(src)) ? ACP_ENOMEM : 0;
}

int openai_history_copy(openai_history *dst, const openai_history *src)
{
    memset(dst, 0, sizeof *dst);
    dst->result_max = src->result_max;
    dst->ndone = src->ndone;
    dst->cur = src->cur;
    int rc = buf_copy(&dst->done, &src->done) || buf_copy(&dst->summary, &src->summary) ||
             buf_copy(&dst->content, &src->content) || buf_copy(&dst->calls, &src->calls) ||
             buf_copy(&dst->cmp_text, &src->cmp_text) || str_copy(&dst->user_mid, src->user_mid) ||
             str_copy(&dst->cmp_id, src->cmp_id);
    if (!rc && src->nres && !(dst->res = calloc(src->nres, sizeof *dst->res))) rc = ACP_ENOMEM;
    for (size_t i = 0; !rc && i < src->nres; i++) {
        dst->nres = dst->capres = i + 1;
        openai_result *d = &dst->res[i];
        const openai_result *r = &src->res[i];
        d->has = r->has;
        rc = str_copy(&d->id, r->id) || str_copy(&d->wire_id, r->wire_id) ||
             buf_copy(&d->text, &r->text);
    }
    if (!rc) return 0;
    openai_history_free(dst);
    return ACP_ENOMEM;
}

void openai_history_free(openai_history *h)
{
    clear_cur(h);
    free(h->res);
    acp_buf_free(&h->done);
    acp_buf_free(&h->summary);
    acp_buf_free(&h->content);
    acp_buf_free(&h->calls);
    free(h->cmp_id);
    acp_buf_free(&h->cmp_text);
    memset(h, 0, sizeof *h);
}
