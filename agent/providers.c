/* SPDX-License-Identifier: Apache-2.0 */
/* (unstable) providers/list, set and disable (rfds/custom-llm-endpoint.mdx): the engine lists
 * its LLM providers (acp_engine.providers), the runtime keeps this connection's changes.
 *
 * A client's route lives with its connection, not the process: on a listener each connection
 * is a different client, and one client's Authorization header must never carry another's
 * prompts. The headers are secrets (a key, a gateway token): kept in memory only, wiped when
 * replaced, never stored, logged or listed (the list says apiType and baseUrl only). */
#include <stdlib.h>
#include <string.h>

#include "agent/internal.h"

/* The schema's SetProviderRequest / DisableProviderRequest / ListProvidersRequest. headers is
 * an object of strings, checked below (the tables have no "map of strings"). */
static const vfield f_meta = {"_meta", V_OBJECT, VF_NULL | VF_LENIENT, NULL};
static const vfield list_fields[] = {f_meta};
static const vshape list_shape = {list_fields, 1};
static const vfield p_list = {"params", V_OBJECT, 0, &list_shape};
static const vfield set_fields[] = {{"providerId", V_STRING, VF_REQ, NULL},
                                    {"apiType", V_STRING, VF_REQ, NULL},
                                    {"baseUrl", V_STRING, VF_REQ, NULL},
                                    {"headers", V_OBJECT, 0, NULL},
                                    f_meta};
static const vshape set_shape = {set_fields, 5};
static const vfield p_set = {"params", V_OBJECT, 0, &set_shape};
static const vfield disable_fields[] = {{"providerId", V_STRING, VF_REQ, NULL}, f_meta};
static const vshape disable_shape = {disable_fields, 2};
static const vfield p_disable = {"params", V_OBJECT, 0, &disable_shape};

static void wipe(char *s)
{
    if (s) explicit_bzero(s, strlen(s));
    free(s);
}

static void route_clear(agent_route *r)
{
    for (char **h = r->headers; h && *h; h++) wipe(*h);
    free(r->headers);
    free(r->api_type);
    free(r->base_url);
    *r = (agent_route){0};
}

void providers_free(acp_agent *a)
{
    for (size_t i = 0; a->routes && i < a->eng.nproviders; i++) route_clear(&a->routes[i]);
    free(a->routes);
    a->routes = NULL;
}

static size_t provider_index(const acp_agent *a, const char *id)
{
    for (size_t i = 0; id && i < a->eng.nproviders; i++)
        if (!strcmp(a->eng.providers[i].id, id)) return i;
    return a->eng.nproviders;
}

int acp_agent_provider(const acp_agent *a, const char *provider_id, const char **api_type,
                       const char **base_url, const char *const **headers)
{
    size_t i = provider_index(a, provider_id);
    if (i == a->eng.nproviders)
        return acp_error_set(ACP_ENOTFOUND, "the engine has no provider '%s'",
                             provider_id ? provider_id : "(null)");
    const acp_provider *p = &a->eng.providers[i];
    const agent_route *r = a->routes ? &a->routes[i] : NULL;
    bool client = r && r->set;
    if (api_type) *api_type = client ? r->api_type : p->api_type;
    if (base_url) *base_url = client ? r->base_url : p->base_url;
    if (headers) *headers = client ? (const char *const *)r->headers : NULL;
    return client;
}

static bool routes_ready(acp_agent *a, acp_req *req)
{
    if (a->routes || (a->routes = calloc(a->eng.nproviders, sizeof *a->routes))) return true;
    acp_req_error(req, ACP_RPC_INTERNAL_ERROR, NULL, "out of memory");
    return false;
}

static void h_list(acp_conn *c, acp_req *req, void *user)
{
    acp_agent *a = user;
    if (!agent_accept(a, req, &p_list, false)) return;
    acp_jw *w = acp_req_reply_begin(req);
    if (!w) return;
    acp_jw_obj(w);
    acp_jw_key(w, "providers");
    acp_jw_arr(w);
    for (size_t i = 0; i < a->eng.nproviders; i++) {
        const acp_provider *p = &a->eng.providers[i];
        const char *type, *url;
        acp_agent_provider(a, p->id, &type, &url, NULL);
        acp_jw_obj(w);
        acp_jw_kstr(w, "providerId", p->id);
        acp_jw_key(w, "supported");
        acp_jw_arr(w);
        for (const char *const *s = p->supported; s && *s; s++) acp_jw_str(w, *s);
        acp_jw_arr_end(w);
        acp_jw_kbool(w, "required", p->required);
        acp_jw_key(w, "current");
        if (type && url) {
            acp_jw_obj(w);
            acp_jw_kstr(w, "apiType", type);
            acp_jw_kstr(w, "baseUrl", url);
            acp_jw_obj_end(w);
        } else {
            acp_jw_null(w);
        }
        acp_jw_obj_end(w);
    }
    acp_jw_arr_end(w);
    acp_jw_obj_end(w);
    acp_req_reply_end(req);
}

/* A header an HTTP request can carry as given: a token name, a value without CR, LF or NUL
 * (anything else would let a client write a second header, or a second request). */
static bool header_ok(const char *name, const char *value)
{
    if (!*name) return false;
    for (const char *p = name; *p; p++)
        if (*p <= ' ' || *p >= 127 || strchr("()<>@,;:\\\"/[]?={}", *p)) return false;
    return !strpbrk(value, "\r\n");
}

static void h_set(acp_conn *c, acp_req *req, void *user)
{
    acp_agent *a = user;
    if (!agent_accept(a, req, &p_set, false)) return;
    json_t *p = acp_req_params(req);
    const char *id = json_string_value(json_object_get(p, "providerId"));
    const char *type = json_string_value(json_object_get(p, "apiType"));
    const char *url = json_string_value(json_object_get(p, "baseUrl"));
    json_t *hdrs = json_object_get(p, "headers");
    size_t i = provider_index(a, id);
    if (i == a->eng.nproviders) {
        acp_req_error(req, ACP_RPC_INVALID_PARAMS, json_pack("{ss}", "path", "params.providerId"),
                      "unknown provider '%s': providers/list names them", id);
        return;
    }
    const acp_provider *pv = &a->eng.providers[i];
    const char *const *s = pv->supported;
    while (s && *s && strcmp(*s, type)) s++;
    if (!s || !*s) {
        acp_req_error(req, ACP_RPC_INVALID_PARAMS, json_pack("{ss}", "path", "params.apiType"),
                      "provider '%s' does not speak '%s'", id, type);
        return;
    }
    /* The new headers, "Name: value" as HTTP clients take them; checked before anything
     * changes. Never quoted in an error: a value may be a key. */
    size_t n = json_object_size(hdrs), k = 0;
    char **list = calloc(n + 1, sizeof *list);
    const char *name;
    json_t *v;
    int bad = 0;
    if (!list) bad = 2;
    json_object_foreach(hdrs, name, v)
    {
        if (bad) break;
        if (!json_is_string(v) || !header_ok(name, json_string_value(v))) {
            bad = 1;
            acp_req_error(req, ACP_RPC_INVALID_PARAMS, json_pack("{ss}", "path", "params.headers"),
                          "header '%s': a header name is a token and its value a string "
                          "without line breaks",
                          header_ok(name, "") ? name : "(not a token)");
        } else if (asprintf(&list[k++], "%s: %s", name, json_string_value(v)) < 0) {
            list[--k] = NULL;
            bad = 2;
        }
    }
    char *msg = NULL;
    int code = 0;
    if (!bad && a->eng.provider_set)
        code = a->eng.provider_set(a, id, type, url, (const char *const *)list, &msg, a->eng.user);
    agent_route nr = {.set = true, .headers = list};
    if (!bad && !code && (!(nr.api_type = strdup(type)) || !(nr.base_url = strdup(url)))) bad = 2;
    if (bad == 2) acp_req_error(req, ACP_RPC_INTERNAL_ERROR, NULL, "out of memory");
    if (!bad && code)
        acp_req_error(req, code, NULL, "%s", msg ? msg : "the agent refused the provider");
    free(msg);
    if (bad || code || !routes_ready(a, req)) {
        route_clear(&nr);
        return;
    }
    route_clear(&a->routes[i]);
    a->routes[i] = nr;
    /* Neither the URL (it may hold userinfo) nor the headers: only what changed. */
    agent_log(a, "provider '%s' set by the client (%s, %zu header%s)", id, type, k,
              k == 1 ? "" : "s");
    acp_req_reply(req, NULL);
    acp_agent_auth_changed(a); /* an Authorization header may sign the agent in or out */
}

static void h_disable(acp_conn *c, acp_req *req, void *user)
{
    acp_agent *a = user;
    if (!agent_accept(a, req, &p_disable, false)) return;
    const char *id = json_string_value(json_object_get(acp_req_params(req), "providerId"));
    size_t i = provider_index(a, id);
    if (i == a->eng.nproviders) { /* the RFD: disabling an unknown id succeeds */
        acp_req_reply(req, NULL);
        return;
    }
    if (a->eng.providers[i].required) {
        acp_req_error(req, ACP_RPC_INVALID_PARAMS, json_pack("{ss}", "path", "params.providerId"),
                      "provider '%s' is required: it cannot be disabled", id);
        return;
    }
    if (!routes_ready(a, req)) return;
    route_clear(&a->routes[i]);
    a->routes[i].set = true; /* set, to nothing: disabled */
    agent_log(a, "provider '%s' disabled", id);
    acp_req_reply(req, NULL);
    acp_agent_auth_changed(a);
}

bool providers_offered(const acp_agent *a)
{
    return a->eng.nproviders && agent_offers(a, ACP_UNSTABLE_PROVIDERS);
}

void providers_register(acp_agent *a)
{
    if (!providers_offered(a)) return; /* unknown, -32601 */
    acp_conn_on(a->conn, "providers/list", h_list, NULL, a);
    acp_conn_on(a->conn, "providers/set", h_set, NULL, a);
    acp_conn_on(a->conn, "providers/disable", h_disable, NULL, a);
}

int providers_check_engine(const acp_agent *a)
{
    if (a->eng.nproviders && !a->eng.providers)
        return acp_error_set(ACP_EINVAL, "providers missing");
    for (size_t i = 0; i < a->eng.nproviders; i++) {
        const acp_provider *p = &a->eng.providers[i];
        if (!p->id || !*p->id || !p->supported || !p->supported[0])
            return acp_error_set(ACP_EINVAL, "a provider needs an id and a supported protocol");
        if (provider_index(a, p->id) < i)
            return acp_error_set(ACP_EINVAL, "provider '%s' twice", p->id);
        if (!p->api_type != !p->base_url)
            return acp_error_set(ACP_EINVAL, "provider '%s': api_type and base_url go together",
                                 p->id);
    }
    return 0;
}
