/* SPDX-License-Identifier: Apache-2.0 */
/* How `acp` shows session updates: text for people, or raw JSON lines for scripts. */
#ifndef ACP_TOOL_RENDER_H
#define ACP_TOOL_RENDER_H

#include <stdbool.h>
#include <stdio.h>

#include "acp/client.h"
#include "acp/update.h"

/* The last thing printed, when it may be drawn again in place (plans and usage on a TTY). */
enum render_block { BLOCK_NONE, BLOCK_PLAN, BLOCK_USAGE };

typedef struct render {
    FILE *out;
    bool json;
    bool tty;         /* out is a terminal: blocks are redrawn in place */
    bool color;       /* colours (a terminal, no --json) */
    bool at_bol;      /* the cursor is at the start of a line */
    bool show_user;   /* print user messages (history) */
    bool skip_replay; /* drop updates that are session/load replay */
    acp_update_kind last;
    char last_msg[128]; /* messageId of the last message chunk, "" when none */
    json_t *tools;      /* toolCallId -> {title, kind, locations, shown: {path: true}} */
    json_t *config;     /* config option id -> current value ("true" for booleans) */
    bool has_modes;     /* the session has modes: "mode" config options are said as [mode] */
    bool status;        /* a status line is showing on stderr (a TTY) */
    enum render_block block;
    int block_lines;
    char block_label[128]; /* whose block it is: a subagent's label, "" the session's */
    /* (unstable) The subagent session an update comes from, as shown ("kid" or its id), set
     * around render_update by the caller; NULL: the session itself. Its text is labelled. */
    const char *label;
    char shown_label[128]; /* the label of the text last shown ("" none) */
} render;

/* color: 1 always, 0 never, -1 auto: on a terminal (not TERM=dumb) unless NO_COLOR is set.
 * On TERM=dumb nothing is redrawn in place either. */
void render_init(render *r, FILE *out, bool json, int color);
/* TERM=dumb: a terminal that understands no escape sequences. */
bool render_dumb(void);
void render_free(render *r);
/* One update: its raw params with --json, else its view (NULL: it broke the schema even read
 * leniently, and is not shown). */
void render_update(render *r, const acp_update *u, const acp_update_view *v);
/* The session's modes and config options as new/load/resume gave them: later changes are
 * said against these. */
void render_session(render *r, acp_client_session *s);
/* A transient status line on stderr when it is a terminal (cleared by the next output). */
void render_status(render *r, const char *msg);
void render_status_clear(render *r);
/* Ends a streamed reply on a line of its own. */
void render_eol(render *r);
/* Before anything else writes to the terminal: ends the line, clears the status line, and
 * forgets the block (it cannot be redrawn in place once something follows it). */
void render_break(render *r);
/* (unstable) A subagent_update of the session: the child's label and its current state
 * (sub: its merged metadata, acp_client_session_subagent). */
void render_subagent(render *r, const char *label, const json_t *sub);
/* A JSON result line (--json): the object is printed compactly and released. */
void render_result(render *r, json_t *obj);

/* diff.c: a short unified diff of old -> new (old NULL: a new file), indented, at most
 * max_lines lines of changes and context. */
void render_diff(FILE *out, bool color, const char *path, const char *old_text, size_t old_n,
                 const char *new_text, size_t new_n, int max_lines);

#endif
