/* SPDX-License-Identifier: Apache-2.0 */
/* Subagent sessions (unstable, the schema's SubagentUpdate): child sessions an engine creates
 * under a session and owns. The announcement is a history update of the parent, emitted
 * before the child exists for the client: the parent turns dirty first, and dirty sessions
 * are released in that order, so nothing of the child can overtake it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/internal.h"

static bool absolute(const json_t *v)
{
    return json_is_string(v) && json_string_value(v)[0] == '/';
}

static int bad(const char *what)
{
    return acp_error_set(ACP_EINVAL, "subagent update: %s", what);
}

/* The patch against the schema's SubagentUpdate, as far as a client would reject it. caps:
 * whether it sets capabilities, and then whether they grant cancel. */
static int check_patch(const acp_agent *a, const json_t *patch, bool *caps, bool *cancel)
{
    *caps = *cancel = false;
    if (!patch) return 0;
    if (!json_is_object(patch)) return bad("must be an object");
    if (json_object_get(patch, "sessionId") || json_object_get(patch, "sessionUpdate"))
        return bad("sessionId and sessionUpdate are the runtime's");
    static const char *const strings[] = {"title", "description"};
    for (size_t i = 0; i < 2; i++) {
        const json_t *v = json_object_get(patch, strings[i]);
        if (v && !json_is_string(v) && !json_is_null(v))
            return bad("title and description "
                       "must be strings or null");
    }
    const json_t *c = json_object_get(patch, "capabilities");
    if (c && !json_is_object(c) && !json_is_null(c)) return bad("capabilities must be an object");
    const json_t *cc = json_object_get(c, "cancel");
    if (cc && !json_is_object(cc) && !json_is_null(cc))
        return bad("capabilities.cancel must be an object");
    if (json_is_object(cc) && !a->eng.subagent_cancel)
        return bad("capabilities.cancel needs engine.subagent_cancel to deliver it");
    *caps = c != NULL;
    *cancel = json_is_object(cc);
    const json_t *st = json_object_get(patch, "state");
    if (st && !json_is_null(st) && !json_is_string(json_object_get(st, "state")))
        return bad("state must be null or an object with a string `state`");
    const json_t *cwd = json_object_get(patch, "cwd");
    if (cwd && !json_is_null(cwd) && !absolute(cwd)) return bad("cwd must be an absolute path");
    const json_t *dirs = json_object_get(patch, "additionalDirectories");
    if (dirs && !json_is_null(dirs) && !json_is_array(dirs))
        return bad("additionalDirectories must be an array");
    for (size_t i = 0; i < json_array_size(dirs); i++)
        if (!absolute(json_array_get(dirs, i)))
            return bad("additionalDirectories must hold absolute paths");
    const json_t *meta = json_object_get(patch, "_meta");
    if (meta && !json_is_object(meta) && !json_is_null(meta)) return bad("_meta must be an object");
    return 0;
}

/* The subagent_update for child with patch's members, sent and stored on its parent. */
static int announce(acp_session *child, const json_t *patch)
{
    json_t *u = json_pack("{ss ss}", "sessionUpdate", "subagent_update", "sessionId", child->id);
    if (!u || (patch && json_object_update(u, (json_t *)patch))) {
        json_decref(u);
        return acp_error_set(ACP_ENOMEM, "out of memory");
    }
    char *txt = json_dumps(u, JSON_COMPACT);
    json_decref(u);
    if (!txt) return acp_error_set(ACP_ENOMEM, "out of memory");
    int rc = session_emit(child->parent, txt, strlen(txt), true);
    free(txt);
    return rc;
}

/* The child's own state: an open session in the parent's roots, with no MCP servers. */
static int child_build(acp_session *p, const char *id, acp_session **out)
{
    acp_agent *a = p->a;
    acp_session *s = calloc(1, sizeof *s);
    size_t nr = acp_roots_count(p->roots);
    const char **rv = calloc(nr, sizeof *rv);
    acp_buf b = {0};
    int rc = ACP_ENOMEM;
    if (!s || !rv) goto out;
    s->a = a;
    if (!(s->id = strdup(id)) || !(s->add_dirs = strdup(p->add_dirs))) goto out;
    for (size_t i = 0; i < nr; i++) rv[i] = acp_roots_at(p->roots, i);
    if ((rc = acp_roots_new(rv[0], rv + 1, nr - 1, &s->roots))) goto out;
    rc = ACP_ENOMEM;
    if (acp_json_escape(&b, s->id, strlen(s->id)) || !acp_buf_cstr(&b)) goto out;
    s->id_json = b.data;
    b.data = NULL;
    if ((rc = cfg_init(s, NULL))) goto out;
    acp_mcp_opts mo = {.struct_size = sizeof mo, .user = a};
    rc = acp_mcp_set_new(a->loop, NULL, &mo, rv, nr, &s->mcp);
out:
    free(rv);
    acp_buf_free(&b);
    if (rc && s) session_free(s);
    *out = rc ? NULL : s;
    return rc == ACP_ENOMEM ? acp_error_set(rc, "out of memory") : rc;
}

int acp_session_subagent_new(acp_session *p, const json_t *patch, acp_session **out)
{
    acp_agent *a = p->a;
    *out = NULL;
    if (!agent_offers(a, ACP_UNSTABLE_SUBAGENTS))
        return acp_error_set(ACP_ENOTSUP, "subagent sessions are switched off on this agent");
    if (!acp_agent_client_has(a, "subagents"))
        return acp_error_set(ACP_ENOTSUP, "the client did not advertise subagents: no subagent "
                                          "sessions");
    if (p->state != SESS_READY) return acp_error_set(ACP_ECLOSED, "session %s is not open", p->id);
    if (p->gone) return session_gone_error(p);
    bool caps, cancel;
    char id[48];
    acp_session *s;
    int rc = check_patch(a, patch, &caps, &cancel);
    if (rc || (rc = acp_agent_new_id("sess_", id)) || (rc = child_build(p, id, &s))) return rc;
    acp_store_session row = {.struct_size = sizeof row,
                             .id = s->id,
                             .cwd = (char *)acp_roots_cwd(s->roots),
                             .add_dirs = s->add_dirs,
                             .parent = p->id};
    acp_store_now(row.created_at);
    memcpy(row.updated_at, row.created_at, sizeof row.updated_at);
    if ((rc = acp_store_create_leased(a->store, &row, a->holder, a->lease_ttl_ms, &s->fence))) {
        session_free(s);
        return rc;
    }
    s->parent = p;
    s->sibling = p->kids;
    p->kids = s;
    s->may_cancel = cancel;
    s->state = SESS_READY;
    s->ready_called = true; /* the engine hears session_free for it */
    session_activate(s);
    lease_renewing(a);
    if ((rc = announce(s, patch))) {
        /* Never announced: the client must never hear of it, the store must not keep it. */
        char why[256];
        snprintf(why, sizeof why, "%s", acp_error_last()->message);
        session_close(s);
        acp_store_delete(a->store, id);
        return acp_error_set(rc, "%s", why);
    }
    *out = s;
    return 0;
}

int acp_session_subagent_update(acp_session *s, const json_t *patch)
{
    if (s->state == SESS_CLOSED) return acp_error_set(ACP_ECLOSED, "session %s is closed", s->id);
    if (!s->parent)
        return acp_error_set(ACP_EINVAL, "session %s is not an open subagent session", s->id);
    bool caps, cancel;
    int rc = check_patch(s->a, patch, &caps, &cancel);
    if (!rc) rc = announce(s, patch);
    if (!rc && caps) s->may_cancel = cancel;
    return rc;
}

acp_session *acp_session_parent(const acp_session *s)
{
    return s->parent;
}

void subagent_close(acp_session *s)
{
    while (s->kids) session_close(s->kids); /* each unlinks itself */
    acp_session *p = s->parent;
    for (acp_session **k = p ? &p->kids : NULL; k && *k; k = &(*k)->sibling) {
        if (*k == s) {
            *k = s->sibling;
            break;
        }
    }
    s->parent = s->sibling = NULL;
}

bool subagent_row_unrestricted(acp_req *req, const char *id, const char *parent)
{
    if (!parent) return true;
    acp_req_error(req, ACP_RPC_INVALID_PARAMS,
                  json_pack("{ss ss}", "path", "params.sessionId", "parentSessionId", parent),
                  "session %s is a subagent session of %s: its parent drives it (a load of %s "
                  "replays it)",
                  id, parent, parent);
    return false;
}

bool subagent_unrestricted(acp_session *s, acp_req *req)
{
    return subagent_row_unrestricted(req, s->id, s->parent ? s->parent->id : NULL);
}

void subagent_cancel(acp_session *s)
{
    acp_agent *a = s->a;
    if (s->parent && s->may_cancel && a->eng.subagent_cancel)
        a->eng.subagent_cancel(s, a->eng.user);
}

bool subagent_replayed(const acp_agent *a)
{
    return agent_offers(a, ACP_UNSTABLE_SUBAGENTS) && acp_agent_client_has(a, "subagents");
}
