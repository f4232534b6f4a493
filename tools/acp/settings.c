/* SPDX-License-Identifier: Apache-2.0 */
/* A session's modes and config options: `acp modes`, `acp mode`, `acp config`. Values are
 * checked against what the agent offered before anything is sent, so a typo is a usage error
 * that names the choices. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/acp/app.h"
#include "tools/acp/safe.h"

static const char *str(json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

/* Opens the agent and the session: -s ID, or a new one made only for a listing. */
static int open_session(app *a)
{
    int rc = app_open(a);
    return rc ? rc : app_session(a, "continue");
}

/* A session made only for a listing (no -s) is not left behind on agents that keep their
 * sessions (opencode): closed and deleted where the agent can, quietly: the listing is
 * what was asked for. */
static int listed(app *a)
{
    if (a->sid || !a->s) return 0;
    char *id = strdup(acp_client_session_id(a->s));
    if (acp_client_supports(a->c, ACP_CAP_CLOSE)) {
        acp_client_session_close(a->s);
        a->s = NULL; /* freed whatever the answer */
    }
    if (id && acp_client_supports(a->c, ACP_CAP_DELETE)) acp_client_delete(a->c, id);
    free(id);
    return 0;
}

static json_t *find(json_t *array, const char *key, const char *id)
{
    size_t i;
    json_t *x;
    json_array_foreach(array, i, x) if (str(x, key) && !strcmp(str(x, key), id)) return x;
    return NULL;
}

/* "a, b, c" of the key of each element; in a select's values, groups are flattened. */
static void names(json_t *array, const char *key, char *out, size_t n)
{
    size_t i, k = strlen(out);
    json_t *x;
    json_array_foreach(array, i, x)
    {
        if (!strcmp(key, "value") && json_is_array(json_object_get(x, "options"))) {
            names(json_object_get(x, "options"), key, out, n); /* a group of values */
            k = strlen(out);
            continue;
        }
        if (k < n && str(x, key))
            k += (size_t)snprintf(out + k, n - k, "%s%s", k ? ", " : "", str(x, key));
    }
}

static bool has_value(json_t *values, const char *v)
{
    size_t i;
    json_t *x;
    json_array_foreach(values, i, x)
    {
        if (json_is_array(json_object_get(x, "options"))) {
            if (has_value(json_object_get(x, "options"), v)) return true;
        } else if (str(x, "value") && !strcmp(str(x, "value"), v)) {
            return true;
        }
    }
    return false;
}

int cmd_modes(app *a)
{
    int rc = open_session(a);
    if (rc) return rc;
    json_t *modes = acp_client_session_modes(a->s);
    const char *sid = acp_client_session_id(a->s), *cur = acp_client_session_mode(a->s);
    json_t *avail = json_object_get(modes, "availableModes");
    if (a->json) {
        json_t *res = json_pack("{s:s, s:o}", "sessionId", sid, "availableModes",
                                avail ? json_incref(avail) : json_array());
        if (cur) json_object_set_new(res, "currentModeId", json_string(cur));
        render_result(&a->r, res);
        return listed(a);
    }
    if (!json_array_size(avail)) {
        printf("the agent offers no modes%s%s\n", a->sid ? " for session " : "",
               a->sid ? safe_line(sid) : "");
        return listed(a);
    }
    size_t i;
    json_t *m;
    json_array_foreach(avail, i, m)
    {
        const char *id = str(m, "id"), *desc = str(m, "description");
        printf("%s %-12s  %-16s  %s\n", cur && id && !strcmp(cur, id) ? "*" : " ",
               safe_line(id ? id : "?"), safe_line(str(m, "name") ? str(m, "name") : ""),
               safe_line(desc ? desc : ""));
    }
    return listed(a);
}

int cmd_mode(app *a)
{
    int rc = open_session(a);
    if (rc) return rc;
    const char *mode = a->args[0];
    json_t *avail = json_object_get(acp_client_session_modes(a->s), "availableModes");
    if (avail && !find(avail, "id", mode)) {
        char list[512] = "";
        names(avail, "id", list, sizeof list);
        app_note(a, "session %s has no mode '%s' (modes: %s)", acp_client_session_id(a->s), mode,
                 list);
        return EXIT_USAGE;
    }
    if ((rc = acp_client_session_set_mode(a->s, mode)))
        return app_fail(a, "cannot set the mode", rc);
    if (a->json)
        render_result(&a->r, json_pack("{s:s, s:s}", "sessionId", acp_client_session_id(a->s),
                                       "currentModeId", mode));
    else
        printf("mode: %s\n", mode);
    return 0;
}

static const char *value_text(json_t *o)
{
    json_t *v = json_object_get(o, "currentValue");
    if (json_is_boolean(v)) return json_is_true(v) ? "true" : "false";
    return json_string_value(v) ? json_string_value(v) : "?";
}

static void list_config(app *a, json_t *options)
{
    if (a->json) {
        render_result(&a->r,
                      json_pack("{s:s, s:o}", "sessionId", acp_client_session_id(a->s),
                                "configOptions", options ? json_incref(options) : json_array()));
        return;
    }
    if (!json_array_size(options)) {
        printf("the agent offers no config options%s%s\n", a->sid ? " for session " : "",
               a->sid ? safe_line(acp_client_session_id(a->s)) : "");
        return;
    }
    printf("%-16s  %-16s  %-16s  %s\n", "ID", "NAME", "VALUE", "CHOICES");
    size_t i;
    json_t *o;
    json_array_foreach(options, i, o)
    {
        char choices[512] = "";
        if (!strcmp(str(o, "type") ? str(o, "type") : "", "boolean"))
            snprintf(choices, sizeof choices, "true, false");
        else
            names(json_object_get(o, "options"), "value", choices, sizeof choices);
        printf("%-16s  %-16s  %-16s  %s\n", safe_line(str(o, "id") ? str(o, "id") : "?"),
               safe_line(str(o, "name") ? str(o, "name") : ""), safe_line(value_text(o)),
               safe_line(choices));
    }
}

static int parse_bool(const char *s, bool *v)
{
    static const char *const yes[] = {"true", "on", "yes", "1"}, *const no[] = {"false", "off",
                                                                                "no", "0"};
    for (size_t i = 0; i < 4; i++) {
        if (!strcmp(s, yes[i])) return *v = true, 0;
        if (!strcmp(s, no[i])) return *v = false, 0;
    }
    return -1;
}

int cmd_config(app *a)
{
    int rc = open_session(a);
    if (rc) return rc;
    json_t *options = acp_client_session_config_options(a->s);
    if (!a->nargs) {
        list_config(a, options);
        return listed(a);
    }
    const char *id = a->args[0], *value = a->args[1], *sid = acp_client_session_id(a->s);
    json_t *o = find(options, "id", id);
    char list[512] = "";
    if (options && !o) {
        names(options, "id", list, sizeof list);
        app_note(a, "session %s has no config option '%s' (options: %s)", sid, id, list);
        return EXIT_USAGE;
    }
    if (o && !strcmp(str(o, "type") ? str(o, "type") : "", "boolean")) {
        bool v;
        if (parse_bool(value, &v)) {
            app_note(a, "config option '%s' is a boolean: true or false, not '%s'", id, value);
            return EXIT_USAGE;
        }
        rc = acp_client_session_set_config_bool(a->s, id, v);
        value = v ? "true" : "false";
    } else {
        if (o && !has_value(json_object_get(o, "options"), value)) {
            names(json_object_get(o, "options"), "value", list, sizeof list);
            app_note(a, "config option '%s' has no value '%s' (values: %s)", id, value, list);
            return EXIT_USAGE;
        }
        rc = acp_client_session_set_config(a->s, id, value);
    }
    if (rc) return app_fail(a, "cannot set the config option", rc);
    if (a->json)
        list_config(a, acp_client_session_config_options(a->s));
    else
        printf("%s: %s\n", id, value);
    return 0;
}
