/* SPDX-License-Identifier: Apache-2.0 */
/* elicitation/create (form and URL modes, in a turn, a session or an authenticate request) and
 * elicitation/complete. An accepted form's content is checked against the form the engine
 * sent, so the engine gets only values of the types and choices it asked for. */
#include <stdio.h>
#include <string.h>

#include "agent/internal.h"

/* A string among the choices a schema offers (enum, or the consts of oneOf / anyOf options),
 * when it offers any. */
static bool chosen(const json_t *schema, const json_t *v)
{
    const json_t *e = json_object_get(schema, "enum"), *o = json_object_get(schema, "oneOf");
    if (!o) o = json_object_get(schema, "anyOf");
    if (!json_is_array(e) && !json_is_array(o)) return true;
    size_t i;
    json_t *c;
    json_array_foreach(e, i, c)
    {
        if (json_equal(c, v)) return true;
    }
    json_array_foreach(o, i, c)
    {
        if (json_equal(json_object_get(c, "const"), v)) return true;
    }
    return false;
}

/* One value against its property's schema. Types of extensions (_x) take any value. */
static bool fits(const json_t *prop, const json_t *v)
{
    const char *type = json_string_value(json_object_get(prop, "type"));
    if (!type) return true;
    if (!strcmp(type, "string")) return json_is_string(v) && chosen(prop, v);
    if (!strcmp(type, "number")) return json_is_number(v);
    /* JSON Schema's integer is a number with no fraction: 3.0 is one (within the range where
     * a double holds every integer, so the cast is defined). */
    if (!strcmp(type, "integer")) {
        double d = json_real_value(v);
        return json_is_integer(v) ||
               (json_is_real(v) && d > -9e15 && d < 9e15 && d == (double)(long long)d);
    }
    if (!strcmp(type, "boolean")) return json_is_boolean(v);
    if (strcmp(type, "array")) return true;
    if (!json_is_array(v)) return false;
    size_t i;
    json_t *item;
    json_array_foreach(v, i, item)
    {
        if (!json_is_string(item) || !chosen(json_object_get(prop, "items"), item)) return false;
    }
    return true;
}

/* Whether content (an object, or NULL) answers form: only its properties, each fitting, every
 * required one present. Says why not in why. */
static bool answers(const json_t *form, const json_t *content, char *why, size_t n)
{
    json_t *props = json_object_get(form, "properties");
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)content, k, v)
    {
        json_t *prop = json_object_get(props, k);
        if (!prop || !fits(prop, v)) {
            snprintf(why, n, "the client's elicitation answer has %s field %s",
                     prop ? "a malformed" : "an unrequested", k);
            return false;
        }
    }
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(form, "required"), i, r)
    {
        if (json_is_string(r) && !json_object_get(content, json_string_value(r))) {
            snprintf(why, n, "the client's elicitation answer misses the required field %s",
                     json_string_value(r));
            return false;
        }
    }
    return true;
}

static void elicit_answer(pcall *p, int status, const json_t *result, const char *error)
{
    const char *action = NULL;
    const json_t *content = NULL;
    char why[512];
    if (!status) {
        const char *act = json_string_value(json_object_get(result, "action"));
        bool accept = act && !strcmp(act, "accept");
        /* Content belongs to an accept; what else an answer carries is ignored (the schema's
         * other actions allow extra members, and decoding is lenient). */
        content = accept ? json_object_get(result, "content") : NULL;
        if (json_is_null(content)) content = NULL;
        if (!act)
            error = "the client's elicitation/create answer has no string action";
        else if (content && !json_is_object(content))
            error = "the client's elicitation/create answer has content that is not an object";
        else if (accept && p->data && !answers(p->data, content, why, sizeof why))
            error = why;
        if (error) {
            status = ACP_EPROTO;
            content = NULL;
        } else {
            action = act;
        }
    }
    if (p->cb.elicit) p->cb.elicit(p->s, status, action, content, error, p->user);
}

static int elicit(acp_agent *a, acp_turn *t, acp_session *s, acp_auth *au, const acp_elicit *app,
                  char *id_out, acp_elicit_cb cb, void *user)
{
    if (id_out) id_out[0] = '\0';
    acp_elicit copy;
    const acp_elicit *e = &copy;
    int rc = acp_struct_read(&copy, sizeof copy, ACP_ELICIT_SIZE_1_0, app, "acp_elicit");
    if (rc) return rc;
    if (!e->message || !e->form == !e->url)
        return acp_error_set(ACP_EINVAL,
                             "an elicitation needs a message and exactly one of a form and a url");
    if (e->form && !json_is_object(e->form))
        return acp_error_set(ACP_EINVAL, "an elicitation form (requestedSchema) must be an object");
    if (e->tool_call && !s)
        return acp_error_set(ACP_EINVAL, "an elicitation outside a session has no tool call");
    json_t *params = json_pack("{ss ss}", "message", e->message, "mode", e->form ? "form" : "url");
    if (!params) return acp_error_set(ACP_EINVAL, "the elicitation message is not valid UTF-8");
    if (e->tool_call) json_object_set_new(params, "toolCallId", json_string(e->tool_call->id));
    /* The answer is checked against the form as sent, whatever the engine does with its own. */
    json_t *form = e->form ? json_deep_copy(e->form) : NULL;
    if (form) json_object_set(params, "requestedSchema", form);
    char id[48] = "";
    if (e->url) {
        if (acp_agent_new_id("elic_", id)) {
            json_decref(params);
            json_decref(form);
            return ACP_EIO; /* acp_agent_new_id said why */
        }
        if (json_object_set_new(params, "url", json_string(e->url))) {
            json_decref(params);
            return acp_error_set(ACP_EINVAL, "the elicitation url is not valid UTF-8");
        }
        json_object_set_new(params, "elicitationId", json_string(id));
    }
    if ((e->form && !form) || (e->url && !a->elicit_ids && !(a->elicit_ids = json_object()))) {
        json_decref(params);
        return acp_error_code(ACP_ENOMEM);
    }
    rc = pcall_start(&(pcall){.t = t,
                              .s = s,
                              .au = au,
                              .answer = elicit_answer,
                              .cb.elicit = cb,
                              .user = user,
                              .data = form,
                              .cancelled = "{\"action\":\"cancel\"}"},
                     "elicitation/create", params);
    if (rc || !e->url) return rc;
    /* Bound to this connection until completed; the session (if any) orders the complete. */
    json_object_set_new(a->elicit_ids, id, s ? json_string(s->id) : json_null());
    if (id_out) memcpy(id_out, id, strlen(id) + 1);
    return 0;
}

int acp_turn_elicit(acp_turn *t, const acp_elicit *e, char *id_out, acp_elicit_cb cb, void *user)
{
    return elicit(t->s->a, t, t->s, NULL, e, id_out, cb, user);
}

int acp_session_elicit(acp_session *s, const acp_elicit *e, char *id_out, acp_elicit_cb cb,
                       void *user)
{
    return elicit(s->a, NULL, s, NULL, e, id_out, cb, user);
}

int acp_auth_elicit(acp_auth *au, const acp_elicit *e, char *id_out, acp_elicit_cb cb, void *user)
{
    if (!au->req)
        return acp_error_set(ACP_ECLOSED, "the authenticate request was answered already");
    return elicit(au->a, NULL, NULL, au, e, id_out, cb, user);
}

int acp_agent_elicit_complete(acp_agent *a, const char *elicitation_id)
{
    json_t *sid = elicitation_id ? json_object_get(a->elicit_ids, elicitation_id) : NULL;
    if (!sid)
        return acp_error_set(ACP_ENOTFOUND, "no outstanding URL elicitation %s",
                             elicitation_id ? elicitation_id : "(null)");
    /* After what the session sent before (the tool call the elicitation is about, say). */
    acp_session *s = json_is_string(sid) ? session_find(a, json_string_value(sid)) : NULL;
    size_t before;
    bool held = call_hold(s, &before);
    int rc = acp_conn_notify(a->conn, "elicitation/complete",
                             json_pack("{ss}", "elicitationId", elicitation_id));
    if (held) call_unhold(s, before);
    if (!rc) json_object_del(a->elicit_ids, elicitation_id);
    return rc;
}
