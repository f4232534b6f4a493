/* SPDX-License-Identifier: Apache-2.0 */
/* The client's calls for a session's metadata beyond ACP v1 (the unstable schema of SDK
 * 2.4.0): session/set_title, archive, unarchive, status, list's archive filter, and the check
 * of a systemPrompt for new, load and resume. Each is gated on its capability as the stable
 * calls are. */
#include <stdlib.h>
#include <string.h>

#include "client/internal.h"

static int need_id(const char *id)
{
    return !id || !*id ? acp_error_set(ACP_EINVAL, "a session id cannot be empty") : 0;
}

int acp_client_system_prompt_check(acp_client *c, const json_t *sp)
{
    const char *mode = json_string_value(json_object_get(sp, "mode"));
    if (!json_is_object(sp) || !mode || !json_is_array(json_object_get(sp, "content")))
        return acp_error_set(ACP_EINVAL,
                             "a system prompt is an object with a mode and a content array");
    int rc = acp_client_need(c, ACP_CAP_SYSTEM_PROMPT, "sessionCapabilities.systemPrompt");
    if (!rc && strcmp(mode, "append"))
        rc =
            strcmp(mode, "override")
                ? acp_error_set(ACP_ENOTSUP, "system prompt mode '%s' is not one ACP defines", mode)
                : acp_client_need(c, ACP_CAP_SYSTEM_PROMPT_OVERRIDE,
                                  "sessionCapabilities.systemPrompt.mode.override");
    return rc;
}

/* An answer without the member the schema requires is the agent's fault. */
static void need_string(acp_client_op *op, acp_client_reply *r, const char *key)
{
    if (r->status == 0 && !json_is_string(json_object_get(r->result, key)))
        r->status =
            acp_error_set(ACP_EPROTO, "the agent's %s answer has no %s string", op->method, key);
}

static void title_finish(acp_client_op *op, acp_client_reply *r)
{
    need_string(op, r, "title");
}

int acp_client_set_title_start(acp_client *c, const char *id, const char *title, acp_client_cb cb,
                               void *user, acp_client_op **op)
{
    if (op) *op = NULL;
    int rc = acp_client_need(c, ACP_CAP_TITLE, "sessionCapabilities.title");
    if (!rc) rc = need_id(id);
    if (!rc && !title) rc = acp_error_set(ACP_EINVAL, "a title is required");
    return rc ? rc
              : acp_client_op_start(c, "session/set_title",
                                    json_pack("{s:s, s:s}", "sessionId", id, "title", title),
                                    title_finish, cb, user, op);
}

int acp_client_set_title(acp_client *c, const char *id, const char *title, json_t **result)
{
    acp_client_sync w = {0};
    return acp_client_sync_wait(
        c, acp_client_set_title_start(c, id, title, acp_client_sync_cb, &w, NULL), &w, result);
}

/* The agent closed the session as it archived it: a handle for it here is dead. */
static void archive_finish(acp_client_op *op, acp_client_reply *r)
{
    if (r->status == 0 && op->id && !strcmp(op->method, "session/archive"))
        acp_client_session_free(acp_client_find_id(op->c, op->id));
}

int acp_client_archive_start(acp_client *c, const char *id, bool archived, acp_client_cb cb,
                             void *user, acp_client_op **out)
{
    if (out) *out = NULL;
    int rc = acp_client_need(c, ACP_CAP_ARCHIVE, "sessionCapabilities.archive");
    if (!rc) rc = need_id(id);
    if (rc) return rc;
    acp_client_op *op;
    rc = acp_client_op_start(c, archived ? "session/archive" : "session/unarchive",
                             json_pack("{s:s}", "sessionId", id), archive_finish, cb, user, &op);
    if (rc) return rc;
    op->id = strdup(id); /* NULL (no memory): no handle is found, none freed */
    if (out) *out = op;
    return 0;
}

int acp_client_archive(acp_client *c, const char *id, bool archived)
{
    acp_client_sync w = {0};
    return acp_client_sync_wait(
        c, acp_client_archive_start(c, id, archived, acp_client_sync_cb, &w, NULL), &w, NULL);
}

static void status_finish(acp_client_op *op, acp_client_reply *r)
{
    need_string(op, r, "status");
}

int acp_client_status_start(acp_client *c, const char *id, acp_client_cb cb, void *user,
                            acp_client_op **op)
{
    if (op) *op = NULL;
    int rc = acp_client_need(c, ACP_CAP_STATUS, "sessionCapabilities.status");
    if (!rc) rc = need_id(id);
    return rc ? rc
              : acp_client_op_start(c, "session/status", json_pack("{s:s}", "sessionId", id),
                                    status_finish, cb, user, op);
}

int acp_client_status(acp_client *c, const char *id, json_t **result)
{
    acp_client_sync w = {0};
    return acp_client_sync_wait(c, acp_client_status_start(c, id, acp_client_sync_cb, &w, NULL), &w,
                                result);
}

static void list_finish(acp_client_op *op, acp_client_reply *r)
{
    if (r->status == 0 && !json_is_array(json_object_get(r->result, "sessions")))
        r->status =
            acp_error_set(ACP_EPROTO, "the agent's session/list answer has no sessions array");
}

int acp_client_list_archived_start(acp_client *c, const char *cwd, const char *archived,
                                   const char *cursor, acp_client_cb cb, void *user,
                                   acp_client_op **op)
{
    if (!archived) return acp_client_list_start(c, cwd, cursor, cb, user, op);
    if (op) *op = NULL;
    int rc = acp_client_need(c, ACP_CAP_LIST, "sessionCapabilities.list");
    if (!rc) rc = acp_client_need(c, ACP_CAP_ARCHIVE, "sessionCapabilities.archive");
    if (rc) return rc;
    json_t *p = json_pack("{s:s}", "archived", archived);
    if (cwd) json_object_set_new(p, "cwd", json_string(cwd));
    if (cursor) json_object_set_new(p, "cursor", json_string(cursor));
    return acp_client_op_start(c, "session/list", p, list_finish, cb, user, op);
}

int acp_client_list_archived(acp_client *c, const char *cwd, const char *archived,
                             const char *cursor, json_t **result)
{
    acp_client_sync w = {0};
    return acp_client_sync_wait(
        c, acp_client_list_archived_start(c, cwd, archived, cursor, acp_client_sync_cb, &w, NULL),
        &w, result);
}
