/* SPDX-License-Identifier: Apache-2.0 */
/* What a session appends to its stored history. Every history update goes to the store batch
 * in the order it was sent, except that consecutive text chunks of one message (same kind,
 * same messageId) become one stored update: /stream sends one notification per chunk but
 * stores one row per loop turn, and session/load may replay a message coalesced (issue 3).
 *
 * The merged update is kept whole in s->pend: the first chunk's text, with the escaped text of
 * each following chunk spliced in before its tail. Every byte of it was written by acp_jw for
 * the live notifications, so storing it needs neither a second escaping nor any parsing. It
 * reaches the batch before any other update of the session (order), before the commit in
 * acp_agent_flush (what the client sees is stored), and before it would grow past
 * AGENT_COALESCE_MAX (replayed updates stay a reasonable size). */
#include <string.h>

#include "agent/internal.h"

int history_settle(acp_session *s)
{
    acp_buf *p = &s->pend;
    if (s->gone) p->len = 0; /* its appends could only come back ACP_ENOTFOUND */
    if (p->len) {
        if (acp_store_append(s->a->store, s->id, s->fence, p->data, p->len))
            return acp_error_code(ACP_ENOMEM);
        p->len = 0;
    }
    /* A streaming turn reuses its buffer (a merged text stays under AGENT_COALESCE_MAX), but
     * not one huge chunk's; an idle session should not pin a megabyte. */
    acp_buf_shrink(p, s->turn ? 2 * AGENT_COALESCE_MAX : 64 * 1024);
    return 0;
}

int history_append(acp_session *s, const char *json, size_t n)
{
    if (s->gone) return acp_error_code(ACP_ENOTFOUND);
    if (history_settle(s) || acp_store_append(s->a->store, s->id, s->fence, json, n))
        return acp_error_code(ACP_ENOMEM);
    agent_mark_dirty(s->a, s);
    return 0;
}

int history_append_text(acp_session *s, const char *json, size_t n, size_t body, size_t end)
{
    acp_buf *p = &s->pend;
    size_t add = end - body, tail = n - end;
    if (s->gone) return acp_error_code(ACP_ENOTFOUND);
    /* Same bytes before the text means same kind and messageId; same tail, same closing. */
    if (p->len && body == s->pend_body && tail == s->pend_tail &&
        p->len - tail + add - body <= AGENT_COALESCE_MAX && !memcmp(p->data, json, body) &&
        !memcmp(p->data + p->len - tail, json + end, tail)) {
        if (acp_buf_reserve(p, add)) return acp_error_code(ACP_ENOMEM);
        p->len -= tail;
        memcpy(p->data + p->len, json + body, add);
        p->len += add;
        memcpy(p->data + p->len, json + end, tail);
        p->len += tail;
        return 0;
    }
    if (history_settle(s) || acp_buf_append(p, json, n)) return acp_error_code(ACP_ENOMEM);
    s->pend_body = body;
    s->pend_tail = tail;
    agent_mark_dirty(s->a, s);
    return 0;
}
