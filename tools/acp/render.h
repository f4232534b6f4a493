/* How `acp` shows session updates: text for people, or raw JSON lines for scripts. */
#ifndef ACP_TOOL_RENDER_H
#define ACP_TOOL_RENDER_H

#include <stdbool.h>
#include <stdio.h>

#include "acp/client.h"

typedef struct render {
    FILE *out;
    bool json;
    bool color;
    bool at_bol;      /* the cursor is at the start of a line */
    bool show_user;   /* print user messages (history) */
    bool skip_replay; /* drop updates that are session/load replay */
    acp_update_kind last;
    char last_msg[128]; /* messageId of the last message chunk, "" when none */
    json_t *tools;      /* toolCallId -> title */
    bool status;        /* a status line is showing on stderr (a TTY) */
} render;

void render_init(render *r, FILE *out, bool json);
void render_free(render *r);
void render_update(render *r, const acp_update *u);
/* A transient status line on stderr when it is a terminal (cleared by the next output). */
void render_status(render *r, const char *msg);
void render_status_clear(render *r);
/* Ends a streamed reply on a line of its own. */
void render_eol(render *r);
/* A JSON result line (--json): the object is printed compactly and released. */
void render_result(render *r, json_t *obj);

#endif
