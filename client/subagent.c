/* SPDX-License-Identifier: Apache-2.0 */
/* Subagent sessions from the client's side (unstable): the child handles a subagent_update
 * makes, their merged metadata, and what a child refuses (acp/client.h). */
#include <stdlib.h>
#include <string.h>

#include "client/internal.h"

/* The child's root set: where the update placed it, each of cwd and additionalDirectories
 * inherited from the parent while unset (the schema's rule). NULL on a malformed value. */
static acp_roots *child_roots(const acp_client_session *p, const json_t *sub)
{
    if (!p->roots) return NULL;
    const json_t *cwd = json_object_get(sub, "cwd"),
                 *dirs = json_object_get(sub, "additionalDirectories");
    size_t n = json_is_array(dirs) ? json_array_size(dirs) : acp_roots_count(p->roots) - 1;
    const char **v = calloc(n + 1, sizeof *v);
    if (!v) return NULL;
    for (size_t i = 0; i < n; i++)
        v[i] = json_is_array(dirs) ? json_string_value(json_array_get(dirs, i))
                                   : acp_roots_at(p->roots, i + 1);
    acp_roots *r = NULL;
    bool ok = true;
    for (size_t i = 0; i < n; i++) ok &= v[i] != NULL;
    if (ok)
        acp_roots_new(json_is_string(cwd) ? json_string_value(cwd) : acp_roots_cwd(p->roots), v, n,
                      &r);
    free(v);
    return r;
}

void acp_client_subagent_track(acp_client_session *p, const acp_update *u)
{
    acp_client *c = p->c;
    json_t *up = json_loadb(u->update.p, u->update.n, JSON_REJECT_DUPLICATES, NULL);
    const char *id = json_string_value(json_object_get(up, "sessionId"));
    acp_client_session *s = id ? acp_client_find_id(c, id) : NULL;
    if (!id || !*id || (s && s->parent != p)) {
        /* Not a child of p's: never let an update re-parent a session we already have. */
        acp_client_log(c, "ignored a subagent_update on session %s naming %s, which is %s", p->id,
                       id ? id : "no session", id ? "not a child of it" : "not a string");
        json_decref(up);
        return;
    }
    if (!s) {
        if (!(s = acp_client_session_add(c, id, NULL)) || !(s->sub = json_object())) {
            acp_client_session_free(s);
            json_decref(up);
            return;
        }
        s->parent = p;
        acp_client_session **k = &p->kids;
        while (*k) k = &(*k)->sibling;
        *k = s;
    }
    /* Omitted keeps, null clears, a value replaces (a whole object, not merged into). */
    const char *key;
    json_t *v;
    json_object_foreach(up, key, v)
    {
        if (!strcmp(key, "sessionUpdate") || !strcmp(key, "sessionId")) continue;
        if (json_is_null(v))
            json_object_del(s->sub, key);
        else
            json_object_set(s->sub, key, v);
    }
    json_decref(up);
    acp_roots *r = child_roots(p, s->sub);
    if (r) {
        acp_roots_free(s->roots);
        s->roots = r;
    } else if (!s->roots) {
        s->roots = child_roots(p, NULL); /* a malformed place: the parent's roots */
    }
}

void acp_client_subagent_unlink(acp_client_session *s)
{
    while (s->kids) acp_client_session_free(s->kids); /* each unlinks itself */
    if (!s->parent) return;
    for (acp_client_session **k = &s->parent->kids; *k; k = &(*k)->sibling) {
        if (*k == s) {
            *k = s->sibling;
            break;
        }
    }
    s->parent = s->sibling = NULL;
}

int acp_client_subagent_refuse(const acp_client_session *s, const char *what)
{
    if (!s->parent) return 0;
    return acp_error_set(ACP_EINVAL,
                         "session %s is a subagent session of %s: it cannot be %s "
                         "(its parent's agent drives it)",
                         s->id, s->parent->id, what);
}

bool acp_client_subagent_may_cancel(const acp_client_session *s)
{
    return json_is_object(json_object_get(json_object_get(s->sub, "capabilities"), "cancel"));
}

size_t acp_client_session_child_count(const acp_client_session *s)
{
    size_t n = 0;
    for (const acp_client_session *k = s->kids; k; k = k->sibling) n++;
    return n;
}

acp_client_session *acp_client_session_child(const acp_client_session *s, size_t i)
{
    acp_client_session *k = s->kids;
    while (k && i--) k = k->sibling;
    return k;
}

acp_client_session *acp_client_session_parent(const acp_client_session *s)
{
    return s->parent;
}

json_t *acp_client_session_subagent(const acp_client_session *s)
{
    return s->parent ? s->sub : NULL;
}
