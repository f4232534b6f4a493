/* SPDX-License-Identifier: Apache-2.0 */
/* --log-level and the debug wire trace (tools/common/wiretrace.h). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp/rpc.h"
#include "tools/common/wiretrace.h"

static const char redacted[] = "<redacted>";

int log_level_parse(const char *name, enum log_level *out)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    for (int i = 0; i < 4; i++)
        if (!strcmp(name, names[i])) {
            *out = (enum log_level)i;
            return 0;
        }
    if (strcmp(name, "quiet")) return -1;
    *out = LOG_ERROR;
    return 0;
}

/* A member name that says credential: compared lower-case without '-' and '_'. */
static bool secret_name(const char *key)
{
    static const char *const words[] = {"authorization", "token",  "apikey",     "password",
                                        "secret",        "cookie", "credential", "bearer"};
    char k[64];
    size_t n = 0;
    for (; *key && n < sizeof k - 1; key++)
        if (*key != '-' && *key != '_') k[n++] = (char)tolower((unsigned char)*key);
    k[n] = 0;
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (strstr(k, words[i])) return true;
    return false;
}

/* Every value of an env / headers member: {"K": "v"} or [{"name": "K", "value": "v"}]. */
static void redact_values(json_t *v)
{
    const char *key;
    json_t *m;
    size_t i;
    if (json_is_object(v)) {
        json_object_foreach(v, key, m) json_object_set_new(v, key, json_string(redacted));
    } else if (json_is_array(v)) {
        json_array_foreach(v, i, m)
        {
            if (json_is_object(m) && json_object_get(m, "value"))
                json_object_set_new(m, "value", json_string(redacted));
            else if (json_is_string(m))
                json_array_set_new(v, i, json_string(redacted));
        }
    }
}

void wire_redact(json_t *msg)
{
    const char *key;
    json_t *m;
    size_t i;
    if (json_is_array(msg)) {
        json_array_foreach(msg, i, m) wire_redact(m);
        return;
    }
    if (!json_is_object(msg)) return;
    json_object_foreach(msg, key, m)
    {
        if (!strcmp(key, "env") || !strcmp(key, "headers"))
            redact_values(m);
        else if (json_is_string(m) && secret_name(key))
            json_object_set_new(msg, key, json_string(redacted));
        else
            wire_redact(m);
    }
}

static void trace(acp_conn *c, bool out, const char *msg, size_t len, void *user)
{
    json_t *j = json_loadb(msg, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    if (!j) {
        /* Not JSON: its bytes may hold anything, so only its size is told. */
        fprintf(stderr, "%s: debug: %s (%zu bytes that are not JSON)\n", (const char *)user,
                out ? "->" : "<-", len);
        return;
    }
    wire_redact(j);
    char *text = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
    fprintf(stderr, "%s: debug: %s %s\n", (const char *)user, out ? "->" : "<-",
            text ? text : "(out of memory)");
    free(text);
    json_decref(j);
}

void wire_trace_start(const char *prog)
{
    acp_conn_trace_all(trace, (void *)prog);
}
