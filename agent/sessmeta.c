/* SPDX-License-Identifier: Apache-2.0 */
/* A session's metadata beyond ACP v1 (the unstable schema of SDK 2.4.0): session/set_title,
 * session/archive and unarchive (with session/list's `archived` filter), session/status, and
 * the client's systemPrompt on new, load, resume and fork. Each is one acp_unstable bit:
 * advertised, served and read only when the agent offers it (agent_offers). Their params
 * tables are here, not in params.c, because schema.json (the stable one, which
 * tests/agent/validate_test.c holds params.c's tables against) does not have them. */
#include <stdlib.h>
#include <string.h>

#include "agent/internal.h"
#include "agent/serve.h"

/* clang-format off */
#define N(a) (sizeof(a) / sizeof *(a))
#define SHAPE(name, ...)                                                                           \
    static const vfield name##_fields[] = {__VA_ARGS__};                                           \
    static const vshape name = {name##_fields, N(name##_fields)}
#define META {"_meta", V_OBJECT, VF_NULL | VF_LENIENT, NULL}
SHAPE(set_title, {"sessionId", V_STRING, VF_REQ, NULL}, {"title", V_STRING, VF_REQ, NULL}, META);
SHAPE(session_only, {"sessionId", V_STRING, VF_REQ, NULL}, META);
/* SystemPrompt {mode, content[]}: each block's kind is judged below (text only, the one kind
 * the schema lets a client send), then its shape, a TextContent's {type, text}. */
SHAPE(text_block, {"type", V_STRING, VF_REQ, NULL}, {"text", V_STRING, VF_REQ, NULL}, META);
static const vfield a_block = {NULL, V_OBJECT, 0, NULL};
SHAPE(system_prompt, {"mode", V_STRING, VF_REQ, NULL}, {"content", V_ARRAY, VF_REQ, &a_block},
      META);
/* clang-format on */
static const vfield params_set_title = {"params", V_OBJECT, 0, &set_title};
static const vfield params_session = {"params", V_OBJECT, 0, &session_only};
static const vfield sp_root = {"params.systemPrompt", V_OBJECT, 0, &system_prompt};
static const vfield sp_text = {"", V_OBJECT, 0, &text_block};

/* The longest title stored (bytes, cut on a character boundary): a title is a line in a list. */
#define TITLE_MAX 256

static bool archive_on(const acp_agent *a)
{
    /* The schema: an agent that advertises archive MUST also advertise list. */
    return agent_offers(a, ACP_UNSTABLE_ARCHIVE) && !(a->eng.disable & ACP_DISABLE_LIST);
}

bool sessmeta_archive_on(const acp_agent *a)
{
    return archive_on(a);
}

static void marker(acp_jw *w, const char *key)
{
    acp_jw_key(w, key);
    acp_jw_obj(w);
    acp_jw_obj_end(w);
}

void sessmeta_write_caps(acp_agent *a, acp_jw *w)
{
    if (agent_offers(a, ACP_UNSTABLE_TITLE)) marker(w, "title");
    if (archive_on(a)) marker(w, "archive");
    if (agent_offers(a, ACP_UNSTABLE_STATUS)) marker(w, "status");
    if (agent_offers(a, ACP_UNSTABLE_SYSTEM_PROMPT)) {
        acp_jw_key(w, "systemPrompt");
        acp_jw_obj(w);
        if (a->eng.system_prompt_override) {
            acp_jw_key(w, "mode");
            acp_jw_obj(w);
            marker(w, "override");
            acp_jw_obj_end(w);
        }
        acp_jw_obj_end(w);
    }
}

/* --- systemPrompt ------------------------------------------------------------------------ */

bool agent_system_prompt(acp_agent *a, acp_req *req, const json_t *params, char **out)
{
    *out = NULL;
    json_t *sp = json_object_get(params, "systemPrompt");
    /* Not offered: the member means nothing to this agent, as to a peer without it. */
    if (!agent_offers(a, ACP_UNSTABLE_SYSTEM_PROMPT) || !sp || json_is_null(sp)) return true;
    verr e;
    json_t *copy = json_deep_copy(sp); /* params_check may drop a malformed _meta */
    if (!copy) {
        acp_req_error(req, ACP_RPC_INTERNAL_ERROR, NULL, "out of memory");
        return false;
    }
    bool ok = params_check(copy, &sp_root, &e);
    const char *mode = json_string_value(json_object_get(copy, "mode"));
    json_t *content = json_object_get(copy, "content");
    if (ok && strcmp(mode, "append") &&
        !(a->eng.system_prompt_override && !strcmp(mode, "override"))) {
        snprintf(e.path, sizeof e.path, "params.systemPrompt.mode");
        snprintf(e.msg, sizeof e.msg,
                 "systemPrompt mode '%.200s' is not supported (sessionCapabilities.systemPrompt "
                 "offers %s)",
                 mode, a->eng.system_prompt_override ? "append and override" : "append only");
        ok = false;
    }
    if (ok && !json_array_size(content)) {
        snprintf(e.path, sizeof e.path, "params.systemPrompt.content");
        snprintf(e.msg, sizeof e.msg, "systemPrompt.content must not be empty");
        ok = false;
    }
    for (size_t i = 0; ok && i < json_array_size(content); i++) {
        json_t *b = json_array_get(content, i);
        const char *type = json_string_value(json_object_get(b, "type"));
        snprintf(e.path, sizeof e.path, "params.systemPrompt.content[%zu]", i);
        if (!type || strcmp(type, "text")) {
            snprintf(e.msg, sizeof e.msg,
                     "systemPrompt.content[%zu]: only text blocks are supported, not '%.100s'", i,
                     type ? type : "(no type)");
            ok = false;
        } else if (!params_check(b, &sp_text, &e)) {
            snprintf(e.path, sizeof e.path, "params.systemPrompt.content[%zu].text", i);
            snprintf(e.msg, sizeof e.msg, "systemPrompt.content[%zu].text must be a string", i);
            ok = false;
        }
    }
    if (ok && !(*out = json_dumps(copy, JSON_COMPACT))) {
        json_decref(copy);
        acp_req_error(req, ACP_RPC_INTERNAL_ERROR, NULL, "out of memory");
        return false;
    }
    json_decref(copy);
    if (!ok)
        acp_req_error(req, ACP_RPC_INVALID_PARAMS, json_pack("{ss}", "path", e.path), "%s", e.msg);
    return ok;
}

int session_set_system_prompt(acp_session *s, char *json)
{
    free(s->sp_text);
    s->sp_text = NULL;
    free(s->system_prompt);
    s->system_prompt = json;
    if (!json) return 0;
    json_t *sp = json_loads(json, 0, NULL);
    const char *mode = json_string_value(json_object_get(sp, "mode"));
    s->sp_override = mode && !strcmp(mode, "override");
    /* The text blocks joined by blank lines: what a model's system message takes. */
    acp_buf b = {0};
    json_t *content = json_object_get(sp, "content");
    int rc = 0;
    for (size_t i = 0; !rc && i < json_array_size(content); i++) {
        const char *t = json_string_value(json_object_get(json_array_get(content, i), "text"));
        if (!t) continue;
        if (b.len) rc = acp_buf_append(&b, "\n\n", 2);
        if (!rc) rc = acp_buf_append(&b, t, strlen(t));
    }
    json_decref(sp);
    if (!rc && acp_buf_cstr(&b)) {
        s->sp_text = b.data;
        return 0;
    }
    acp_buf_free(&b);
    return acp_error_code(ACP_ENOMEM);
}

const char *acp_session_system_prompt(const acp_session *s, bool *override)
{
    if (override) *override = s->sp_text && s->sp_override;
    return s->sp_text;
}

/* --- session/set_title ------------------------------------------------------------------- */

/* Control characters become spaces, runs of spaces one, none at either end, at most TITLE_MAX
 * bytes (cut on a character boundary): a title is one line. Into a malloc'd string. */
static char *normalize_title(const char *in)
{
    size_t n = strlen(in);
    char *t = malloc(n + 1), *o = t;
    if (!t) return NULL;
    for (const unsigned char *p = (const unsigned char *)in; *p; p++) {
        bool space = *p < 0x20 || *p == 0x7f || *p == ' ';
        if (space) {
            if (o > t && o[-1] != ' ') *o++ = ' ';
        } else
            *o++ = (char)*p;
    }
    while (o > t && o[-1] == ' ') o--;
    size_t len = (size_t)(o - t);
    if (len > TITLE_MAX) {
        len = TITLE_MAX;
        while (len && ((unsigned char)t[len] & 0xC0) == 0x80) len--;
        while (len && t[len - 1] == ' ') len--;
    }
    t[len] = '\0';
    return t;
}

/* The session_info_update an open session's client gets for a title it did not set itself
 * (a set_title of another connection reaches only this one's own sessions: best effort). */
static void tell_title(acp_session *s, const char *title)
{
    acp_buf b = {0};
    acp_jw w;
    acp_jw_init(&w, &b);
    acp_jw_obj(&w);
    acp_jw_kstr(&w, "sessionUpdate", "session_info_update");
    acp_jw_kstr(&w, "title", title);
    acp_jw_obj_end(&w);
    if (!acp_jw_status(&w)) session_send(s, b.data, b.len);
    acp_buf_free(&b);
}

static void reply_store(acp_agent *a, acp_req *req, const char *id, int rc)
{
    if (rc == ACP_ENOTFOUND)
        agent_reply_not_found(req, id);
    else if (rc == ACP_ESTORE)
        agent_reply_store_error(a, req);
    else
        acp_req_error(req, ACP_RPC_INTERNAL_ERROR, NULL, "%s", acp_error_last()->message);
}

static void h_set_title(acp_conn *c, acp_req *req, void *user)
{
    acp_agent *a = user;
    if (!agent_accept(a, req, &params_set_title, true)) return;
    const char *id = session_id_param(req);
    char *title = normalize_title(json_string_value(json_object_get(acp_req_params(req), "title")));
    if (!title) {
        acp_req_error(req, ACP_RPC_INTERNAL_ERROR, NULL, "out of memory");
        return;
    }
    if (!*title) {
        free(title);
        acp_req_error(req, ACP_RPC_INVALID_PARAMS, json_pack("{ss}", "path", "params.title"),
                      "title is empty (after trimming whitespace and control characters)");
        return;
    }
    /* Unfenced: the session need not be open anywhere, and a title is not history. Stored
     * before the answer; the engine (the openai one) never titles a session that has one. */
    int rc = acp_store_set_info(a->store, id, 0, true, title, NULL);
    if (rc) {
        free(title);
        reply_store(a, req, id, rc);
        return;
    }
    acp_session *s = session_find(a, id);
    /* Not to a client whose session was taken over by another agent (lease.c). */
    if (s && s->state == SESS_READY && !s->gone) lease_still_ours(s);
    if (s && s->state == SESS_READY && !s->gone) tell_title(s, title);
    session_reply(s && s->state != SESS_CLOSED ? s : NULL, req, json_pack("{ss}", "title", title));
    free(title);
}

/* --- session/archive, unarchive ---------------------------------------------------------- */

static void archive(acp_agent *a, acp_req *req, bool on)
{
    if (!agent_accept(a, req, &params_session, true)) return;
    const char *id = session_id_param(req);
    /* Known first: an unknown id must not close a session (there is none) nor answer {}. */
    int rc = agent_stored(a, id);
    if (rc) {
        reply_store(a, req, id, rc);
        return;
    }
    /* Archiving an active session closes it first, as session/close would: its cancelled
     * turn's last updates and response go out (committed) before the answer. Also where
     * another connection of the same server has it; one active in another process is not
     * reached (it stays open there until closed). */
    acp_session *s = on ? session_find(a, id) : NULL;
    if (s && session_close(s)) acp_agent_flush(a);
    if (on && a->bounds && a->bounds->session_close) a->bounds->session_close(a->bounds, a, id);
    if ((rc = acp_store_set_archived(a->store, id, on))) {
        reply_store(a, req, id, rc);
        return;
    }
    acp_req_reply(req, NULL);
}

static void h_archive(acp_conn *c, acp_req *req, void *user)
{
    archive(user, req, true);
}

static void h_unarchive(acp_conn *c, acp_req *req, void *user)
{
    archive(user, req, false);
}

/* --- session/status ---------------------------------------------------------------------- */

/* No side effect: nothing is loaded, leased or attached. "open": in memory in this agent, or
 * in another connection's agent of the same server; "saved": stored only. */
static void h_status(acp_conn *c, acp_req *req, void *user)
{
    acp_agent *a = user;
    if (!agent_accept(a, req, &params_session, true)) return;
    const char *id = session_id_param(req);
    acp_session *s = session_find(a, id);
    if (s && !s->gone) lease_still_ours(s); /* taken over by another agent: not open here */
    bool open = (s && !s->gone) ||
                (a->bounds && a->bounds->session_open && a->bounds->session_open(a->bounds, id));
    int rc = open ? 0 : agent_stored(a, id);
    if (rc) {
        reply_store(a, req, id, rc);
        return;
    }
    acp_req_reply(req, json_pack("{ss}", "status", open ? "open" : "saved"));
}

/* --- session/list's filter ------------------------------------------------------------------ */

int sessmeta_list_filter(acp_agent *a, acp_req *req)
{
    if (!archive_on(a)) return ACP_STORE_ARCHIVED_INCLUDE; /* as before the feature */
    json_t *v = json_object_get(acp_req_params(req), "archived");
    if (!v || json_is_null(v)) return ACP_STORE_ARCHIVED_EXCLUDE;
    const char *s = json_string_value(v);
    static const char *const names[] = {"exclude", "include", "only"};
    for (int i = 0; s && i < 3; i++)
        if (!strcmp(s, names[i])) return i; /* the acp_store_archived_filter values */
    acp_req_error(req, ACP_RPC_INVALID_PARAMS, json_pack("{ss}", "path", "params.archived"),
                  s ? "archived filter '%.200s' is not supported (exclude, include or only)"
                    : "params.archived must be a string%s",
                  s ? s : "");
    return -1;
}

void sessmeta_register(acp_agent *a)
{
    acp_conn *c = a->conn;
    if (agent_offers(a, ACP_UNSTABLE_TITLE))
        acp_conn_on(c, "session/set_title", h_set_title, NULL, a);
    if (archive_on(a)) {
        acp_conn_on(c, "session/archive", h_archive, NULL, a);
        acp_conn_on(c, "session/unarchive", h_unarchive, NULL, a);
    }
    if (agent_offers(a, ACP_UNSTABLE_STATUS)) acp_conn_on(c, "session/status", h_status, NULL, a);
}
