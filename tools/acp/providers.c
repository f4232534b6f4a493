/* SPDX-License-Identifier: Apache-2.0 */
/* (unstable) The agent's LLM providers: `acp providers` lists them, `acp provider set ID URL`
 * and `acp provider disable ID` change one, and --provider ID=URL routes any command's
 * connection before it runs. A provider's route lasts for the connection (the RFD: never
 * persisted), so --provider is how a prompt uses one. Headers (--header 'Name: value') are
 * secrets: wiped from our argv, never printed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/acp/app.h"
#include "tools/acp/safe.h"

static const char *str(json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

int app_provider_apply(app *a, const char *id, const char *url)
{
    int rc = acp_client_provider_set(a->c, id, a->api_type, url, (const char *const *)a->headers);
    if (!rc) return 0;
    char what[300];
    snprintf(what, sizeof what, "cannot set provider %s", safe_line(id));
    return app_fail(a, what, rc);
}

int app_provider_option(app *a)
{
    if (!a->provider) return 0;
    const char *eq = strchr(a->provider, '=');
    char id[256];
    snprintf(id, sizeof id, "%.*s", (int)(eq - a->provider), a->provider);
    return app_provider_apply(a, id, eq + 1);
}

int cmd_providers(app *a)
{
    int rc = app_open(a);
    if (rc) return rc;
    json_t *res = NULL;
    if ((rc = acp_client_providers_list(a->c, &res)))
        return app_fail(a, "cannot list providers", rc);
    if (a->json) {
        render_result(&a->r, res);
        return 0;
    }
    json_t *list = json_object_get(res, "providers"), *p;
    size_t i;
    if (!json_array_size(list)) printf("no providers\n");
    json_array_foreach(list, i, p)
    {
        json_t *cur = json_object_get(p, "current"), *s;
        acp_buf sup = {0};
        size_t j;
        json_array_foreach(json_object_get(p, "supported"), j, s) acp_buf_printf(
            &sup, "%s%s", j ? "," : "", json_is_string(s) ? json_string_value(s) : "?");
        printf("%s  %s", safe_line(str(p, "providerId") ? str(p, "providerId") : "?"),
               json_is_object(cur) ? safe_line(str(cur, "apiType") ? str(cur, "apiType") : "?")
                                   : "disabled");
        if (json_is_object(cur))
            printf(" %s", safe_line(str(cur, "baseUrl") ? str(cur, "baseUrl") : "?"));
        printf("  (supports %s%s)\n", safe_line(acp_buf_cstr(&sup) ? sup.data : ""),
               json_is_true(json_object_get(p, "required")) ? "; required" : "");
        acp_buf_free(&sup);
    }
    json_decref(res);
    return 0;
}

int cmd_provider(app *a)
{
    const char *verb = a->args[0];
    bool set = !strcmp(verb, "set"), disable = !strcmp(verb, "disable");
    if ((!set && !disable) || a->nargs != (set ? 3 : 2)) {
        app_note(a, "usage: acp provider set ID URL [--header 'Name: value']... | "
                    "acp provider disable ID");
        return EXIT_USAGE;
    }
    int rc = app_open(a);
    if (rc) return rc;
    const char *id = a->args[1];
    if (set) {
        if ((rc = app_provider_apply(a, id, a->args[2]))) return rc;
    } else if ((rc = acp_client_provider_disable(a->c, id))) {
        char what[300];
        snprintf(what, sizeof what, "cannot disable provider %s", safe_line(id));
        return app_fail(a, what, rc);
    }
    if (a->json) {
        render_result(&a->r, json_pack("{s:s, s:s}", "providerId", id, "action", verb));
        return 0;
    }
    size_t n = 0;
    while (a->headers && a->headers[n]) n++;
    if (set)
        printf("provider %s: %s at %s (%zu header%s; for this connection)\n", safe_line(id),
               safe_line(a->api_type ? a->api_type : "openai"), safe_line(a->args[2]), n,
               n == 1 ? "" : "s");
    else
        printf("provider %s: disabled (for this connection)\n", safe_line(id));
    return 0;
}
