/* Shared by the client tests: opening a client on a Node agent from tests/client, and
 * collecting what the application sees. */
#ifndef ACP_TEST_CLIENT_COMMON_H
#define ACP_TEST_CLIENT_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp/client.h"

typedef struct seen {
    int updates;
    int other;          /* ACP_UPDATE_OTHER updates */
    int replayed;       /* updates flagged replay */
    size_t biggest;     /* largest update text */
    acp_buf text;       /* agent_message_chunk texts, concatenated */
    char last_kind[64]; /* the last sessionUpdate literal */
    int perm_mode;      /* tests choose what on_permission does */
    acp_client_perm *held;
} seen;

static inline void seen_update(acp_client *c, acp_client_session *s, const acp_update *u,
                               void *user)
{
    seen *k = user;
    k->updates++;
    /* Per-session counts, for tests that set an int as the session's user pointer; the
     * update must be the handle's own. */
    if (s && acp_client_session_user(s)) {
        if (!acp_json_str_eq(u->session_id, acp_client_session_id(s))) abort();
        ++*(int *)acp_client_session_user(s);
    }
    if (u->kind == ACP_UPDATE_OTHER) k->other++;
    if (u->replay) k->replayed++;
    if (u->update.n > k->biggest) k->biggest = u->update.n;
    size_t n = u->kind_text.n < sizeof k->last_kind - 1 ? u->kind_text.n : sizeof k->last_kind - 1;
    memcpy(k->last_kind, u->kind_text.p, n);
    k->last_kind[n] = 0;
    if (u->kind == ACP_UPDATE_AGENT_MESSAGE_CHUNK) {
        json_t *j = json_loadb(u->update.p, u->update.n, 0, NULL);
        json_t *t = json_object_get(json_object_get(j, "content"), "text");
        if (json_is_string(t))
            acp_buf_append(&k->text, json_string_value(t), json_string_length(t));
        json_decref(j);
    }
}

/* argv for `node tests/client/<script>` (static storage). */
static inline const char *const *node_agent(const char *script)
{
    static char path[4096];
    static const char *argv[3];
    snprintf(path, sizeof path, "%s/tests/client/%s", getenv("ACP_SOURCE"), script);
    argv[0] = ACP_NODE;
    argv[1] = path;
    argv[2] = NULL;
    return argv;
}

#endif
