/* SPDX-License-Identifier: Apache-2.0 */
/* Typed views of session/update, for applications that would rather not read JSON (a UI
 * showing tool calls, diffs, plans, usage and notices).
 *
 * acp_update (client.h) stays the zero-copy path: spans into the received line, no tree.
 * A view is built only when the application asks: acp_update_view_parse() parses the update's
 * text once with jansson, checks it against the stable schema (SessionUpdate and every type
 * it references) and fills a tagged struct. Every string and json_t in a view points into
 * that one tree, and every array lives in one block: all of it belongs to the view until
 * acp_update_view_free() (json_incref() a json_t to keep it longer). The view does not point
 * into the acp_update, so it may outlive the on_update callback.
 *
 * Two readings of the schema:
 * - strict, acp_update_view_parse(): every member the view reads must have its schema type;
 *   the first one that does not fails the parse with a sentence naming its JSON path, such
 *   as "update.entries[2].status must be one of pending, in_progress, completed".
 * - lenient, ACP_UPDATE_VIEW_LENIENT: what the official TypeScript SDK (2.4.0) does with
 *   the schema's x-deserialize-default-on-error and x-deserialize-skip-invalid-items
 *   hints: a malformed optional member reads as absent (an array the schema defaults as
 *   empty), a malformed array item is dropped, and only a broken required member fails.
 *   salvaged counts what was so repaired, for a UI that wants to log it. Use it to show what
 *   an agent meant; use strict to check an agent.
 *
 * Both accept what the schema leaves open: members the view does not read (later protocol
 * versions add some), `_meta` anywhere (exposed as json_t, never interpreted), sessionUpdate
 * kinds this library does not know (ACP_UPDATE_OTHER with the tree in raw, no error), and
 * unknown values of the open enums (notice severity, compaction status, config category),
 * kept as text beside an _OTHER value. Closed enums (tool kind and status, plan priority and
 * status) are checked.
 *
 * Limits of the C reading: strings are C strings, so one holding \u0000 is refused like a
 * malformed member; integers are jansson's (int64): a larger one anywhere in the update,
 * rawInput included, fails the parse as "update is not valid JSON".
 *
 * Errors: a negative ACP_E* status, with the sentence (naming the member's JSON path) in
 * acp_error_last() (acp/error.h). */
#ifndef ACP_UPDATE_H
#define ACP_UPDATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "acp/client.h"

#include "acp/api.h"

ACP_BEGIN_DECLS

/* Absent, null or a value, for the members whose null means something of its own:
 * session_info_update and compaction_update patch what the client keeps. */
typedef enum acp_patch {
    ACP_PATCH_KEEP = 0, /* absent: unchanged */
    ACP_PATCH_CLEAR,    /* null: cleared */
    ACP_PATCH_SET,      /* a value */
} acp_patch;

/* --- content blocks (ContentBlock) ------------------------------------------------------ */

typedef enum acp_content_type {
    ACP_CONTENT_TEXT = 1,
    ACP_CONTENT_IMAGE,
    ACP_CONTENT_AUDIO,
    ACP_CONTENT_RESOURCE_LINK,
    ACP_CONTENT_RESOURCE, /* an embedded resource: text, or data (its blob) */
} acp_content_type;

/* Bits of acp_content_view.audience (Annotations.audience). */
#define ACP_AUDIENCE_USER      1u
#define ACP_AUDIENCE_ASSISTANT 2u

/* One content block. Members a type does not have are NULL / 0. */
typedef struct acp_content_view {
    acp_content_type type;
    const char *text;        /* text; resource with text contents */
    const char *data;        /* image, audio: base64; resource with blob contents: the blob */
    const char *mime_type;   /* image, audio: always; resource_link, resource: or NULL */
    const char *uri;         /* resource_link, resource: always; image: or NULL */
    const char *name;        /* resource_link */
    const char *title;       /* resource_link, or NULL */
    const char *description; /* resource_link, or NULL */
    bool has_size;           /* resource_link: size (bytes) given */
    int64_t size;
    /* Annotations, any type, all optional. */
    unsigned audience;         /* ACP_AUDIENCE_* bits; 0 when not given */
    const char *last_modified; /* or NULL */
    bool has_priority;
    double priority;
    json_t *meta; /* the block's _meta; NULL when absent or null */
} acp_content_view;

/* --- tool calls (ToolCall, ToolCallUpdate) ------------------------------------------------ */

typedef enum acp_tool_kind {
    ACP_TOOL_KIND_UNSET = 0, /* tool_call_update: unchanged */
    ACP_TOOL_KIND_READ,
    ACP_TOOL_KIND_EDIT,
    ACP_TOOL_KIND_DELETE,
    ACP_TOOL_KIND_MOVE,
    ACP_TOOL_KIND_SEARCH,
    ACP_TOOL_KIND_EXECUTE,
    ACP_TOOL_KIND_THINK,
    ACP_TOOL_KIND_FETCH,
    ACP_TOOL_KIND_SWITCH_MODE,
    ACP_TOOL_KIND_OTHER, /* "other": a value the schema lists, not an unknown one */
} acp_tool_kind;

typedef enum acp_tool_status {
    ACP_TOOL_STATUS_UNSET = 0, /* tool_call_update: unchanged */
    ACP_TOOL_STATUS_PENDING,
    ACP_TOOL_STATUS_IN_PROGRESS,
    ACP_TOOL_STATUS_COMPLETED,
    ACP_TOOL_STATUS_FAILED,
} acp_tool_status;

typedef enum acp_tool_content_type {
    ACP_TOOL_CONTENT = 1, /* a content block */
    ACP_TOOL_DIFF,
    ACP_TOOL_TERMINAL, /* a terminal the agent created: show its output */
} acp_tool_content_type;

/* A file change (Diff). */
typedef struct acp_diff_view {
    const char *path;
    const char *old_text; /* NULL: a new file */
    const char *new_text;
} acp_diff_view;

/* One item of a tool call's content (ToolCallContent). */
typedef struct acp_tool_content_view {
    acp_tool_content_type type;
    union {
        acp_content_view content; /* ACP_TOOL_CONTENT */
        acp_diff_view diff;       /* ACP_TOOL_DIFF */
        const char *terminal_id;  /* ACP_TOOL_TERMINAL */
    };
    json_t *meta;
} acp_tool_content_view;

/* A file the tool touches (ToolCallLocation), for follow-along. */
typedef struct acp_tool_location_view {
    const char *path;
    bool has_line; /* line (1-based, 0 to UINT32_MAX) given */
    int64_t line;
    json_t *meta;
} acp_tool_location_view;

/* tool_call and tool_call_update. In a tool_call every member is set: absent kind and status
 * read as the schema's defaults (OTHER, PENDING), absent content and locations as empty. In a
 * tool_call_update only tool_call_id is sure; the rest say what changed, and null reads as
 * absent (unchanged), as in the reference SDKs. content and locations replace the call's
 * collections when given, empty ones included. */
typedef struct acp_tool_call_view {
    const char *tool_call_id;
    const char *title; /* NULL: unchanged (update) */
    const char *name;  /* the tool's programmatic name; NULL: none, or unchanged (update) */
    acp_tool_kind kind;
    acp_tool_status status;
    bool has_content;
    const acp_tool_content_view *content;
    size_t ncontent;
    bool has_locations;
    const acp_tool_location_view *locations;
    size_t nlocations;
    json_t *raw_input; /* NULL when absent; otherwise any JSON value, null included */
    json_t *raw_output;
} acp_tool_call_view;

/* --- plans (Plan) ----------------------------------------------------------------------- */

typedef enum acp_plan_priority {
    ACP_PLAN_PRIORITY_HIGH = 1,
    ACP_PLAN_PRIORITY_MEDIUM,
    ACP_PLAN_PRIORITY_LOW,
} acp_plan_priority;

typedef enum acp_plan_status {
    ACP_PLAN_STATUS_PENDING = 1,
    ACP_PLAN_STATUS_IN_PROGRESS,
    ACP_PLAN_STATUS_COMPLETED,
} acp_plan_status;

typedef struct acp_plan_entry_view {
    const char *content;
    acp_plan_priority priority;
    acp_plan_status status;
    json_t *meta;
} acp_plan_entry_view;

/* The whole plan, replacing the last one. */
typedef struct acp_plan_view {
    const acp_plan_entry_view *entries;
    size_t nentries;
} acp_plan_view;

/* --- slash commands (AvailableCommand) ---------------------------------------------------- */

typedef struct acp_command_view {
    const char *name; /* without the slash */
    const char *description;
    const char *input_hint; /* the command takes text after its name; NULL: no input */
    json_t *meta;
} acp_command_view;

/* The whole list. */
typedef struct acp_commands_view {
    const acp_command_view *commands;
    size_t ncommands;
} acp_commands_view;

/* --- config options (SessionConfigOption) ------------------------------------------------- */

typedef enum acp_config_category {
    ACP_CONFIG_CATEGORY_NONE = 0, /* not given */
    ACP_CONFIG_CATEGORY_MODE,
    ACP_CONFIG_CATEGORY_MODEL,
    ACP_CONFIG_CATEGORY_MODEL_CONFIG,
    ACP_CONFIG_CATEGORY_THOUGHT_LEVEL,
    ACP_CONFIG_CATEGORY_OTHER, /* a custom ("_...") or newer category: see category_text */
} acp_config_category;

/* A value of a select option. Grouped values (SessionConfigSelectGroup) are flattened in
 * order: consecutive values with the same group make one group named group_name; ungrouped
 * options have group and group_name NULL. */
typedef struct acp_config_value_view {
    const char *value; /* the id to pass to acp_client_session_set_config() */
    const char *name;
    const char *description; /* or NULL */
    const char *group;
    const char *group_name;
    json_t *meta;
} acp_config_value_view;

typedef struct acp_config_option_view {
    const char *id;
    const char *name;
    const char *description; /* or NULL */
    acp_config_category category;
    const char *category_text;           /* the category as sent; NULL when NONE */
    bool boolean;                        /* type "boolean": current_bool; else "select" */
    const char *current_value;           /* select: the current value's id */
    bool current_bool;                   /* boolean */
    const acp_config_value_view *values; /* select */
    size_t nvalues;
    json_t *meta;
} acp_config_option_view;

/* Every option, with its current value. */
typedef struct acp_config_view {
    const acp_config_option_view *options;
    size_t noptions;
} acp_config_view;

/* --- notices and compactions --------------------------------------------------------------- */

typedef enum acp_notice_severity {
    ACP_NOTICE_INFO = 1,
    ACP_NOTICE_WARNING,
    ACP_NOTICE_ERROR,
    ACP_NOTICE_OTHER, /* custom ("_...") or newer: see severity_text */
} acp_notice_severity;

/* For the user, not history. */
typedef struct acp_notice_view {
    acp_notice_severity severity;
    const char *severity_text;
    const char *title;       /* never empty */
    const char *description; /* or NULL */
} acp_notice_view;

typedef enum acp_compaction_status {
    ACP_COMPACTION_IN_PROGRESS = 1,
    ACP_COMPACTION_COMPLETED,
    ACP_COMPACTION_FAILED,
    ACP_COMPACTION_CANCELLED,
    ACP_COMPACTION_OTHER, /* custom ("_...") or newer: see status_text */
} acp_compaction_status;

/* compaction_update: an upsert by compaction_id, where summary, error and _meta patch. */
typedef struct acp_compaction_view {
    const char *compaction_id;
    acp_compaction_status status;
    const char *status_text;
    acp_patch summary_patch; /* SET with nsummary 0 clears too (the schema says so) */
    const acp_content_view *summary;
    size_t nsummary;
    acp_patch error_patch;
    const char *error;
    acp_patch meta_patch; /* the view's meta is the value when SET */
} acp_compaction_view;

/* compaction_summary_chunk: appends one block to the compaction's summary. */
typedef struct acp_compaction_chunk_view {
    const char *compaction_id;
    acp_content_view content;
} acp_compaction_chunk_view;

/* --- the other kinds -------------------------------------------------------------------------- */

/* user_message_chunk, agent_message_chunk, agent_thought_chunk. */
typedef struct acp_chunk_view {
    acp_content_view content;
    const char *message_id; /* chunks of one message share it; NULL when not given */
} acp_chunk_view;

typedef struct acp_mode_view {
    const char *current_mode_id;
} acp_mode_view;

/* session_info_update: a patch. */
typedef struct acp_session_info_view {
    acp_patch title_patch;
    const char *title; /* when SET */
    acp_patch updated_at_patch;
    const char *updated_at; /* ISO 8601, when SET */
} acp_session_info_view;

typedef struct acp_usage_view {
    int64_t used; /* tokens in context, >= 0 */
    int64_t size; /* the context window, >= 0 */
    bool has_cost;
    double cost_amount;        /* cumulative for the session */
    const char *cost_currency; /* ISO 4217 ("USD") or another unit ("credits") */
} acp_usage_view;

/* --- the view ------------------------------------------------------------------------------ */

/* One update, by kind: read the union member that kind names (none for ACP_UPDATE_OTHER).
 * Arrays are pointer + count (NULL, 0 when empty).
 *
 * Extensible (acp/api.h), as the application allocates it and the library fills it: start
 * from ACP_UPDATE_VIEW_INIT; acp_update_view_parse() writes only the first struct_size bytes.
 * A later release adds members at the end of this struct and of the union's views (so the
 * union, last, grows): a program built against 1.0 reads what 1.0 had. The views that are
 * array elements (acp_plan_entry_view, acp_tool_content_view, acp_tool_location_view,
 * acp_command_view, acp_config_option_view, acp_config_value_view, ...) are frozen in 1.0:
 * what the protocol adds to them is in `raw` until a later release adds a new view. */
typedef struct acp_update_view {
    size_t struct_size; /* sizeof(acp_update_view): ACP_UPDATE_VIEW_INIT sets it */
    /* From the parsed sessionUpdate, so an escaped name ("pl\u0061n") is known here even where
     * acp_update.kind, which compares the raw literal, says ACP_UPDATE_OTHER. */
    acp_update_kind kind;
    json_t *raw;     /* the whole update object, every kind (owned by the view) */
    json_t *meta;    /* update._meta; NULL when absent or null */
    size_t salvaged; /* lenient only: malformed members read as absent, items dropped */
    void *block;     /* private: the one allocation behind every array */
    union {
        acp_chunk_view chunk;                    /* the three *_CHUNK kinds */
        acp_tool_call_view tool_call;            /* TOOL_CALL, TOOL_CALL_UPDATE */
        acp_plan_view plan;                      /* PLAN */
        acp_commands_view commands;              /* AVAILABLE_COMMANDS */
        acp_mode_view mode;                      /* CURRENT_MODE */
        acp_config_view config;                  /* CONFIG_OPTION */
        acp_session_info_view info;              /* SESSION_INFO */
        acp_usage_view usage;                    /* USAGE */
        acp_notice_view notice;                  /* NOTICE */
        acp_compaction_view compaction;          /* COMPACTION */
        acp_compaction_chunk_view summary_chunk; /* COMPACTION_SUMMARY */
    };
} acp_update_view;
#define ACP_UPDATE_VIEW_INIT ACP_STRUCT_INIT(acp_update_view)

/* Flags for acp_update_view_parse_ext(). */
#define ACP_UPDATE_VIEW_LENIENT 1u /* the reference SDKs' reading (see the top of this file) */

/* Parses u->update (the only member read; a hand-made acp_update needs just that span)
 * strictly. *v is overwritten but for struct_size (set it first: ACP_UPDATE_VIEW_INIT; 0 or
 * too small is ACP_EINVAL): free a view before reusing it. On success *v is a view the
 * caller owns and releases with acp_update_view_free().
 * On failure *v is left empty (freeing it is harmless) and acp_error_last() has the sentence.
 * Returns 0, ACP_EPROTO (not
 * JSON, not an object, or a member breaking the schema: the sentence names its path),
 * ACP_EINVAL (u or v NULL), ACP_ENOMEM. */
int acp_update_view_parse(const acp_update *u, acp_update_view *v);
/* The same with flags (ACP_UPDATE_VIEW_LENIENT). */
int acp_update_view_parse_ext(const acp_update *u, unsigned flags, acp_update_view *v);
/* Releases the tree and the array block, and empties *v (struct_size kept, so it can be
 * parsed into again). NULL and empty views are ignored. */
void acp_update_view_free(acp_update_view *v);

/* Names as the schema spells them ("in_progress", "switch_mode", ...); "" for 0 (UNSET) or
 * out of range. The open enums need none: their text is in the view. */
const char *acp_tool_kind_name(acp_tool_kind k);
const char *acp_tool_status_name(acp_tool_status s);
const char *acp_plan_priority_name(acp_plan_priority p);
const char *acp_plan_status_name(acp_plan_status s);

ACP_END_DECLS
#endif
