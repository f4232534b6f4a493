/* SPDX-License-Identifier: Apache-2.0 */
/* (unstable) providers/list, set, disable and auth/status, with auth/status_update handed to
 * the application: the client's side of rfds/custom-llm-endpoint.mdx and auth/status. Each
 * call needs the agent's capability (agentCapabilities.providers, auth.status): without it,
 * ACP_ENOTSUP and nothing is sent. */
#include <string.h>

#include "client/internal.h"

int acp_client_providers_list_start(acp_client *c, acp_client_cb cb, void *user, acp_client_op **op)
{
    if (op) *op = NULL;
    int rc = acp_client_need(c, ACP_CAP_PROVIDERS, "providers (unstable)");
    return rc ? rc : acp_client_op_start(c, "providers/list", json_object(), NULL, cb, user, op);
}

int acp_client_providers_list(acp_client *c, json_t **result)
{
    acp_client_sync w = {0};
    return acp_client_sync_wait(c, acp_client_providers_list_start(c, acp_client_sync_cb, &w, NULL),
                                &w, result);
}

/* {"Name": "value", ...} from "Name: value" lines; NULL after setting the last error. */
static json_t *headers_object(const char *const *headers)
{
    json_t *o = json_object();
    for (const char *const *h = headers; o && h && *h; h++) {
        const char *colon = strchr(*h, ':');
        if (!colon || colon == *h) {
            json_decref(o);
            acp_error_set(ACP_EINVAL, "a header is 'Name: value'; one has no name");
            return NULL; /* the header itself is not quoted: it may hold a key */
        }
        const char *v = colon + 1;
        while (*v == ' ' || *v == '\t') v++;
        char name[256];
        size_t n = (size_t)(colon - *h);
        if (n >= sizeof name) n = sizeof name - 1;
        memcpy(name, *h, n);
        name[n] = '\0';
        if (json_object_set_new(o, name, json_string(v))) {
            json_decref(o);
            acp_error_set(ACP_EINVAL, "header '%s': its value is not UTF-8", name);
            return NULL;
        }
    }
    if (!o) acp_error_code(ACP_ENOMEM);
    return o;
}

int acp_client_provider_set_start(acp_client *c, const char *provider_id, const char *api_type,
                                  const char *base_url, const char *const *headers,
                                  acp_client_cb cb, void *user, acp_client_op **op)
{
    if (op) *op = NULL;
    int rc = acp_client_need(c, ACP_CAP_PROVIDERS, "providers (unstable)");
    if (rc) return rc;
    if (!provider_id || !base_url)
        return acp_error_set(ACP_EINVAL, "a provider id and a base URL are needed");
    json_t *h = headers_object(headers);
    if (!h) return acp_error_last()->status;
    json_t *p = json_pack("{s:s, s:s, s:s, s:O}", "providerId", provider_id, "apiType",
                          api_type ? api_type : "openai", "baseUrl", base_url, "headers", h);
    rc = p ? acp_client_op_start(c, "providers/set", p, NULL, cb, user, op)
           : acp_error_set(ACP_EINVAL, "the provider id, type and URL must be UTF-8");
    /* Sent (or not): our copies of the values are wiped, as they may be keys. */
    const char *k;
    json_t *v;
    json_object_foreach(h, k, v)
        explicit_bzero((char *)json_string_value(v), json_string_length(v));
    json_decref(h);
    return rc;
}

int acp_client_provider_set(acp_client *c, const char *provider_id, const char *api_type,
                            const char *base_url, const char *const *headers)
{
    acp_client_sync w = {0};
    return acp_client_sync_wait(c,
                                acp_client_provider_set_start(c, provider_id, api_type, base_url,
                                                              headers, acp_client_sync_cb, &w,
                                                              NULL),
                                &w, NULL);
}

int acp_client_provider_disable_start(acp_client *c, const char *provider_id, acp_client_cb cb,
                                      void *user, acp_client_op **op)
{
    if (op) *op = NULL;
    int rc = acp_client_need(c, ACP_CAP_PROVIDERS, "providers (unstable)");
    if (rc) return rc;
    json_t *p = provider_id ? json_pack("{s:s}", "providerId", provider_id) : NULL;
    if (!p) return acp_error_set(ACP_EINVAL, "a provider id (UTF-8) is needed");
    return acp_client_op_start(c, "providers/disable", p, NULL, cb, user, op);
}

int acp_client_provider_disable(acp_client *c, const char *provider_id)
{
    acp_client_sync w = {0};
    return acp_client_sync_wait(
        c, acp_client_provider_disable_start(c, provider_id, acp_client_sync_cb, &w, NULL), &w,
        NULL);
}

int acp_client_auth_status_start(acp_client *c, acp_client_cb cb, void *user, acp_client_op **op)
{
    if (op) *op = NULL;
    int rc = acp_client_need(c, ACP_CAP_AUTH_STATUS, "auth.status (unstable)");
    return rc ? rc : acp_client_op_start(c, "auth/status", json_object(), NULL, cb, user, op);
}

int acp_client_auth_status(acp_client *c, json_t **result)
{
    acp_client_sync w = {0};
    return acp_client_sync_wait(c, acp_client_auth_status_start(c, acp_client_sync_cb, &w, NULL),
                                &w, result);
}

static void on_status_update(acp_conn *conn, acp_msg *m, void *user)
{
    acp_client *c = user;
    json_t *p = acp_msg_params(m);
    if (!json_is_string(json_object_get(p, "state"))) {
        acp_client_log(c, "ignored an auth/status_update without a state string");
        return;
    }
    if (c->opts.on_auth_status) c->opts.on_auth_status(c, p, c->opts.user);
}

void acp_client_providers_register(acp_client *c)
{
    acp_conn_on(c->conn, "auth/status_update", NULL, on_status_update, c);
}
