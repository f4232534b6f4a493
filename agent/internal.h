/* SPDX-License-Identifier: Apache-2.0 */
/* Private to agent/: the objects behind acp_agent, acp_session and acp_turn. */
#ifndef ACP_AGENT_INTERNAL_H
#define ACP_AGENT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "acp/agent.h"
#include "acp/roots.h"
#include "acp/rt.h"
#include "rpc/lasterr.h"
#include "agent/validate.h"
#include "rpc/lasterr.h"

/* Output queued above this makes a turn unwritable (when no transport reports its own). */
#define AGENT_HIGH_WATER (4u << 20)
/* Bytes of stored history replayed per loop turn and session. */
#define AGENT_REPLAY_STEP (2u << 20)
#define AGENT_LIST_PAGE   50
/* The longest text (escaped bytes) one stored update of coalesced chunks holds. */
#define AGENT_COALESCE_MAX (1u << 20)

/* The 1.0 sizes of the structs an engine hands the runtime (when they change: rpc/lasterr.h). */
#define ACP_ENGINE_SIZE_1_0        ACP_STRUCT_SIZE_AT(acp_engine, user)
#define ACP_AGENT_OPTS_SIZE_1_0    ACP_STRUCT_SIZE_AT(acp_agent_opts, max_read)
#define ACP_TOOL_INFO_SIZE_1_0     ACP_STRUCT_SIZE_AT(acp_tool_info, path)
#define ACP_TERMINAL_OPTS_SIZE_1_0 ACP_STRUCT_SIZE_AT(acp_terminal_opts, output_byte_limit)
#define ACP_ELICIT_SIZE_1_0        ACP_STRUCT_SIZE_AT(acp_elicit, tool_call)

/* A response that must wait until the session's held messages were released. */
typedef struct deferred {
    acp_req *req;
    json_t *result; /* NULL with code != 0: an error */
    int code;
    char *message;
    bool prompt; /* a prompt's response: becomes the store error if the commit fails */
    bool gone;   /* answered agent_reply_gone() (the session was deleted elsewhere) */
} deferred;

/* An agent -> client request (call.c). It belongs to one owner, in whose `calls` list it
 * sits until the answer came: a turn (t), else a session (s), else an authenticate request
 * (au). When the owner goes away it is forgotten: $/cancel_request goes out, the callback never
 * runs. */
typedef struct pcall pcall;
typedef struct lfs_job lfs_job;
/* Checks the client's answer and calls the engine back: status 0 with the result, or
 * ACP_EPROTO / ACP_ECLOSED with error (a sentence). */
typedef void (*pcall_answer)(pcall *p, int status, const json_t *result, const char *error);
struct pcall {
    acp_agent *a;
    acp_turn *t;
    acp_session *s; /* the session it is about (also for a turn's); NULL for an au's */
    acp_auth *au;
    pcall *next;
    acp_call *call;
    pcall_answer answer;
    union { /* the engine's callback, as the method's answer gives it (may be NULL) */
        acp_turn_call_cb turn;
        acp_session_call_cb session;
        acp_perm_cb perm;
        acp_fs_read_cb read;
        acp_done_cb done;
        acp_elicit_cb elicit;
        acp_terminal_cb term;
        acp_terminal_output_cb output;
        acp_terminal_exit_cb exit;
    } cb;
    void *user;
    json_t *data;          /* what the answer is checked against (options, form); owned */
    acp_terminal *term;    /* terminal/output, wait_for_exit, kill: forgotten with its release */
    const char *cancelled; /* permission, elicitation: the answer a turn's cancel gives at once */
    bool cancelling;       /* the turn's cancel reached it (calls made after it wait) */
};
/* A tool call of a turn (tool.c): the handle behind acp_tool_call, freed with the turn. */
typedef struct acp_tool_call {
    acp_turn *t;
    struct acp_tool_call *next;
    char id[48];
    char *title, *kind; /* as last reported: a permission request describes the call by them */
    bool done;          /* completed or failed: no more updates */
} tool;

/* A terminal (terminal.c). It belongs to a turn (t), else a session (s), until released; one
 * released before terminal/create was answered is an orphan on a->orphans (t and s NULL),
 * whose release follows the answer. */
struct acp_terminal {
    acp_agent *a;
    acp_turn *t;
    acp_session *s;
    acp_terminal *next; /* in t->terms, s->terms or a->orphans */
    char *sid;          /* the session's id, for an orphan's release */
    char *id;           /* the client's terminalId: NULL until created */
    acp_call *create;   /* terminal/create, until answered */
    acp_terminal_cb cb; /* for the create */
    void *user;
    bool failing; /* in the callback of a failed create: freed right after it */
};

/* A session's modes and config options with their current values (config.c). */
typedef struct cfg {
    const acp_config_option *opts; /* the engine's, or `own` after acp_session_set_config_options */
    size_t nopts;
    void *own;      /* one allocation holding a deep copy of replaced options, or NULL */
    size_t *val;    /* per option: the index of its current value, or a boolean's 0 / 1 */
    size_t mode;    /* index into engine modes (when the engine has any) */
    json_t *stored; /* the state the store held when the session opened (values to restore) */
} cfg;

enum sess_state {
    SESS_OPENING, /* new/load/resume not answered yet */
    SESS_READY,
    SESS_CLOSED, /* gone from the active list; freed once its held output is released */
};

struct acp_turn {
    acp_session *s;
    acp_req *req;         /* the session/prompt request; NULL once answered */
    const json_t *prompt; /* borrowed from req's params */
    json_t *meta;         /* the prompt's params._meta (a reference: req goes when answered) */
    bool cancelled;
    bool decided; /* the response is fixed (answered or deferred): updates refused */
    pcall *calls;
    tool *tools;         /* tool calls begun in this turn (tool.c) */
    acp_terminal *terms; /* terminals created for this turn (terminal.c) */
    lfs_job *files;      /* local file reads and writes on the thread pool (localfs.c) */
    void (*on_writable)(acp_turn *t, void *user);
    void *writable_user;
    acp_turn *wnext; /* in the agent's writable-waiters list */
    bool waiting;
};

struct acp_session {
    acp_agent *a;
    acp_session *prev, *next; /* active list */
    acp_session *dnext;       /* dirty list */
    bool dirty;               /* has appends not yet committed: its output is held */
    enum sess_state state;
    /* Deleted from the store by another process or connection (a write for it was
     * ACP_ENOTFOUND), or fenced out (`fenced`: its lease was taken by another holder, a write
     * or renewal was ACP_ESTALE): nothing more of it is sent or stored, and the next flush
     * answers what is pending -32002 and closes it (session_gone). */
    bool gone, fenced;
    /* The epoch of this agent's lease on the session (0: none yet): every write carries it,
     * and it is released when the session is freed, unless keep_lease (a load on this agent
     * took the session over, lease and all). */
    int64_t fence;
    bool keep_lease;
    uint64_t checked_at; /* uv_now() of the last check of the lease (lease_mark) */
    char *id;
    char *id_json; /* the id as a JSON string literal, for envelopes */
    acp_roots *roots;
    char *add_dirs; /* additionalDirectories as JSON array text */
    acp_mcp_set *mcp;
    void *data;
    acp_turn *turn;
    acp_buf hold;
    /* Consecutive text chunks of one message, merged into one stored update (history.c). */
    acp_buf pend;
    size_t pend_body; /* where the escaped content.text starts in pend */
    size_t pend_tail; /* bytes after it: the closing quote and braces */
    bool pend_failed; /* it could not join the commit: the held output must not go out */
    deferred *defs;
    size_t ndefs, defs_cap;
    bool ready_called;
    pcall *calls;        /* session-scoped client calls (call.c) */
    acp_terminal *terms; /* session-scoped terminals (terminal.c) */
    cfg cfg;
    json_t *meta;              /* _meta of the new/load/resume result */
    const json_t *open_params; /* during session_setup only */
    /* From the stored row while opening (load: sent as session_info_update after the
     * replay); freed once the session is answered. */
    char *title;
    char updated_at[ACP_STORE_TIME_LEN + 1];

    /* Opening (new/load/resume): the request, and what it still waits for. */
    acp_req *open_req;
    bool want_replay, replay_done, mcp_settled, is_new;
    int64_t replay_seq;
    acp_session *rnext; /* in the agent's replay list */
    bool replaying;

    /* Subagent sessions (subagent.c, unstable). A child is owned by its parent (NULL for a
     * top-level session): it closes with it. kids/sibling: the parent's open children. */
    acp_session *parent, *kids, *sibling;
    bool may_cancel; /* the child's capabilities grant the client session/cancel */
    /* A load's replay goes into a child's history right after the update that announced it
     * (replay.c): rid / rid_json is the session being replayed (s->id, or a child's: then
     * owned in rid_own / rid_json_own), rstack the sessions whose replay waits for a child's
     * to end, rseen the children replayed (a JSON object used as a set), rchild the child the
     * last replayed row announced. */
    const char *rid, *rid_json;
    char *rid_own, *rid_json_own, *rchild;
    struct replay_frame *rstack;
    size_t rdepth;
    json_t *rseen;
    /* The client's systemPrompt (sessmeta.c): the SystemPrompt object as JSON text, as
     * stored; its text blocks joined (what acp_session_system_prompt gives) and its mode. */
    char *system_prompt, *sp_text;
    bool sp_override;
    char *fork_src; /* session/fork: the source's id, until freed (fork.c) */
};

/* One authenticate request the engine has not answered yet (auth.c). */
struct acp_auth {
    acp_agent *a;
    acp_req *req; /* NULL once answered (cancelled or shut down): the handle waits for the engine */
    const char *method;
    pcall *calls; /* request-scoped elicitations */
    acp_auth *next;
};

/* A registered extension method (ext.c). */
typedef struct ext_handler {
    acp_agent *a;
    acp_request_cb on_request;
    acp_notify_cb on_notify;
    void *user;
    struct ext_handler *next;
} ext_handler;

/* Where the connection's output goes: the stdio transport (agent.c) or a network link
 * (serve.c). The agent commits before any of it leaves (acp_agent_flush), asks writable()
 * before producing more, and calls close() once at the end of its shutdown; the
 * implementation then calls agent_out_closed() (from the loop, never from inside close()). */
typedef struct agent_out {
    /* Each gets the agent's out_ctx. */
    bool (*writable)(void *ctx); /* false once full: agent_out_drained() follows */
    size_t (*queued)(void *ctx); /* bytes produced and not yet handed to the kernel */
    void (*flush)(void *ctx);    /* write what the connection has now */
    void (*soon)(void *ctx);     /* the connection's output went non-empty (may be NULL) */
    void (*close)(void *ctx);    /* write what is left, then close */
} agent_out;

/* Whether the agent offers the unstable feature (an ACP_UNSTABLE_* bit): every method,
 * capability and field of one is gated on this (unstable.c). */
bool agent_offers(const acp_agent *a, unsigned feature);
/* mcp_acp.c: serves the client's mcp/message notifications when MCP over ACP is offered. */
void mcp_acp_register(acp_agent *a);

/* A client's route for one of the engine's providers (providers.c). */
typedef struct agent_route {
    bool set;                  /* the client's (else the engine's default) */
    char *api_type, *base_url; /* NULL: disabled */
    char **headers;            /* "Name: value", NULL-terminated; secrets, wiped when dropped */
} agent_route;

struct acp_agent {
    uv_loop_t *loop;
    acp_store *store;
    acp_engine eng;
    acp_agent_opts opts;
    acp_conn *conn;
    const agent_out *out; /* NULL: none (embedded), or closed */
    void *out_ctx;        /* the implementation's: an acp_transport, a link's state */
    bool initialized;
    json_t *client_caps;
    json_t *init_params;
    bool authenticated;
    acp_auth *auths; /* authenticate requests the engine still holds */
    ext_handler *exts;
    acp_terminal *orphans; /* terminals whose owner went away before terminal/create answered */
    json_t *elicit_ids;    /* outstanding URL elicitation ids (object used as a set; call.c) */
    json_t *lost; /* ids of sessions taken over from this agent and closed here (a set; lease.c) */
    const struct agent_bounds *bounds; /* a server's bounds on sessions (serve.h); NULL: none */

    acp_session *sessions; /* active (opening or ready) */
    size_t nsessions;
    acp_session *dirty;
    acp_session *replays; /* sessions replaying history */
    acp_turn *waiters;    /* turns waiting for writability */
    acp_turn *running;    /* waiters being called back in this loop turn */

    uv_idle_t pump;       /* runs waiters and replays while the output has room */
    uv_prepare_t flusher; /* commits once per loop turn when something is held */
    uv_timer_t renewer;   /* renews the leases of the open sessions (lease.c) */
    bool pump_on, flusher_on;
    char holder[ACP_STORE_HOLDER_MAX + 1]; /* this agent's lease holder id */
    unsigned lease_ttl_ms;
    bool lease_warned; /* a renewal failed (ESTORE): said once until one succeeds */
    int handles_open;

    size_t held;     /* bytes in every session's hold buffer */
    acp_buf scratch; /* for building one update */
    acp_buf line;    /* one envelope, or a replay step */

    bool shutting_down, done_called, freeing;
    int closing_mcp; /* MCP sets still shutting down */
    bool out_closing;
    agent_route *routes; /* per engine provider, NULL until a client changed one */
    char *auth_told;     /* the auth/status last sent in an update or answer (auth.c) */
};

/* agent.c */
/* Attaches an output (out static, ctx owned by the implementation). */
void agent_out_attach(acp_agent *a, const agent_out *out, void *ctx);
/* The output's queue fell below half after writable() said no. */
void agent_out_drained(acp_agent *a);
/* The output is closed (after close(), or when the peer went away and the agent's shutdown
 * ran to its end): the agent finishes (on_done, or the free acp_agent_free started). */
void agent_out_closed(acp_agent *a);
void agent_log(acp_agent *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool agent_writable(const acp_agent *a);
void agent_pump_start(acp_agent *a);
void agent_mark_dirty(acp_agent *a, acp_session *s);
void agent_reply_store_error(acp_agent *a, acp_req *req); /* the store's own last error */
void agent_store_error(acp_req *req, const char *errmsg); /* -32603 with that sentence */
/* Whether the store has session id: 0, ACP_ENOTFOUND, or the store's error (said). */
int agent_stored(acp_agent *a, const char *id);
/* -32002 for a session id that is neither open nor stored, the id in error.data.sessionId. */
void agent_reply_not_found(acp_req *req, const char *id);
/* -32002 for an open session that was deleted from the store elsewhere, or (fenced) taken
 * over by another lease holder (data.sessionId, and data.reason "lease_lost" then). */
void agent_reply_gone(acp_req *req, const char *id, bool fenced);
/* ACP_RPC_SESSION_BUSY for a session leased by another holder for wait_ms more. */
void agent_reply_busy(acp_req *req, const char *id, int64_t wait_ms);
/* "session store unavailable: <errmsg>", the prefix once: errmsg itself or buf (n bytes). */
const char *agent_store_sentence(const char *errmsg, char *buf, size_t n);
bool agent_check_init(acp_agent *a, acp_req *req);
/* Every request the agent serves starts here: agent_check_init(), the params against their
 * table (-32602 naming the member, validate.h), then with auth agent_check_auth(). False after
 * answering req. */
bool agent_accept(acp_agent *a, acp_req *req, const vfield *params, bool auth);
/* The index of the first of arr[0..n) named id, else n (also for id NULL). The elements are
 * `size` bytes and start with their id string: acp_mode, acp_config_option, acp_config_value
 * and acp_auth_method all do, so one lookup serves them all. */
size_t agent_index_of(const void *arr, size_t n, size_t size, const char *id);
#define AGENT_INDEX(arr, n, id) agent_index_of((arr), (n), sizeof *(arr), (id))
void agent_maybe_done(acp_agent *a);
void agent_maybe_free(acp_agent *a);

/* session.c */
acp_session *session_find(acp_agent *a, const char *id);
/* The open, ready session id that a client request (prompt, set_mode, set_config_option)
 * names, or NULL after answering why not: unknown here (-32002), a subagent's child the
 * client may not drive, still opening, or found deleted. The lease is the caller's to check
 * (a prompt's busy mark checks it as it writes). */
acp_session *session_target(acp_agent *a, acp_req *req, const char *id);
/* For params that passed the edge (validate.h): checks that cwd and additionalDirectories are
 * absolute and the MCP servers usable, checks (must_exist) that the session is stored, and
 * builds an opening session with its MCP servers starting (not yet in the active list). On an
 * error answers req and returns NULL. */
acp_session *session_open(acp_agent *a, acp_req *req, const char *id, bool must_exist);
/* session/new's and session/fork's start: the request's systemPrompt checked (into *sp,
 * malloc'd, NULL: none), a fresh id (into id) and session_open(); *row filled for the store
 * (borrowing id, s's cwd and roots, and *sp) with created_at = updated_at = now. On an error
 * answers req and returns NULL (*sp freed). */
acp_session *session_open_fresh(acp_agent *a, acp_req *req, char id[48], char **sp,
                                acp_store_session *row);
void session_activate(acp_session *s);
/* Cancels its turn (force-ending it), frees the engine's state, stops the MCP servers. True
 * when s stays until its held output (the turn's last updates and response, say) is released:
 * an answer about it must follow that output (session_reply). False: s was freed. */
bool session_close(acp_session *s);
void session_free(acp_session *s); /* also stops the MCP servers of one never activated */
/* Sends (or holds) a session/update whose update object is json[0..n), storing it first when
 * persist is true. */
int session_emit(acp_session *s, const char *json, size_t n, bool persist);
/* Sends (or holds) it without storing it. */
int session_send(acp_session *s, const char *json, size_t n);
/* Whose held output s's output joins: the topmost of its owners (subagent sessions) that
 * holds output, else s. A child's lines then keep their place among its parent's (the
 * announcement first, the parent's next update and prompt response after), and the flush
 * releases them after the commit as it releases the parent's. */
acp_session *session_holder(acp_session *s);
/* The client capability an update kind (a JSON string) needs ("session.notices", ...), or
 * NULL: the one table the runtime's gate and the replay filter both read. */
const char *session_kind_needs(acp_span kind);
/* Whether the client lacks any capability of that table (else nothing needs checking). */
bool session_kinds_gated(const acp_agent *a);
/* Appends to b one session/update line for the session whose id is the JSON string
 * id_json[0..idn), with update object json[0..n): 0 or ACP_ENOMEM (b unchanged). */
int session_envelope(acp_buf *b, const char *id_json, size_t idn, const char *json, size_t n);
int session_defer(acp_session *s, acp_req *req, json_t *result, int code, const char *message,
                  bool prompt);
/* A write for s was ACP_ENOTFOUND: the session was deleted from the store elsewhere; or
 * ACP_ESTALE (fenced): another holder took its lease. Marks it gone and dirty, so the next
 * flush (never this call: the engine may be on the stack) drops its held history, answers its
 * prompt and pending replies -32002 and closes it. */
void session_gone(acp_session *s, bool fenced);
/* For a write for s that returned rc: ACP_ENOTFOUND and ACP_ESTALE mark s gone (above) and
 * become ACP_ENOTFOUND with acp_error_last() saying which; anything else is returned. */
int session_write_failed(acp_session *s, int rc);
/* ACP_ENOTFOUND for a gone session, acp_error_last() saying why. */
int session_gone_error(acp_session *s);
/* Answers req -32002 for a gone session s, after its held output. */
void session_reply_gone(acp_session *s, acp_req *req);
/* Answers a request about session s (result stolen; NULL: {}), or the JSON text json[0..n),
 * after the session's held output, if any, went out. */
void session_reply(acp_session *s, acp_req *req, json_t *result);
void session_reply_raw(acp_session *s, acp_req *req, const char *json, size_t n);
void session_release(acp_session *s, int commit_rc, const char *errmsg);
void session_opened_step(acp_session *s); /* answers the open request when all is settled */

/* history.c: every store append of a session goes through these (0, ACP_ENOMEM, or
 * ACP_ENOTFOUND for a gone session: nothing is appended). */
/* Appends the history update json[0..n) after the session's pending merged text. */
int history_append(acp_session *s, const char *json, size_t n);
/* Appends a text chunk json[0..n) whose content.text is the last string in it, with its
 * escaped characters at json[body..end): merged into the pending text when the bytes before
 * and after them match (same kind and messageId). */
int history_append_text(acp_session *s, const char *json, size_t n, size_t body, size_t end);
/* Puts the pending merged text into the store batch (before a commit). */
int history_settle(acp_session *s);

/* turn.c */
void turn_start(acp_session *s, acp_req *req, const json_t *prompt);
void turn_cancel(acp_turn *t);
void turn_force_end(acp_turn *t);
/* The turn's updates could not be stored: answered -32603 with errmsg (-32002 when the
 * session is gone), the engine told through cancel. */
void turn_store_failed(acp_turn *t, const char *errmsg);
void turn_writable_run(acp_agent *a);

/* lease.c: every open session holds its lease (acp/store.h) while it is open here. */
/* Fills a->holder: "<host>/<pid>/<machine>/<random>", where machine names this boot of this
 * machine and PID namespace ("-" when unknown): unique among every agent on the store (the
 * random part), telling an operator who holds a session, and telling another agent on the
 * same machine whether the holder's process is gone. */
int lease_make_holder(acp_agent *a); /* 0, or ACP_EIO with no entropy */
/* Takes the lease of session id for this agent into *fence. On failure answers req (busy:
 * ACP_RPC_SESSION_BUSY with the retry hint; gone: -32002; store: -32603) and returns false. */
bool lease_take(acp_agent *a, acp_req *req, const char *id, int64_t *fence);
/* Marks s's lease busy (a turn running: no take-over) or idle, renewing it; 0 or the store's
 * status. ACP_ESTALE or ACP_ENOTFOUND mark s gone (session_gone). */
int lease_mark(acp_session *s, bool busy);
/* Whether s's lease is still this agent's: one read (acp_store_lease_check); 0 or the store's
 * status, ACP_ESTALE or ACP_ENOTFOUND marking s gone. */
int lease_still_ours(acp_session *s);
/* Before serving a request about s: its lease is still this agent's (lease_still_ours), else
 * req is answered (-32002 lease_lost after s's held output, or the store's error) and false. */
bool lease_check(acp_session *s, acp_req *req);
/* s was fenced out here: its id answers -32002 lease_lost after it is closed, until it is
 * opened here again (lease_forget_lost). */
void lease_lost(acp_session *s);
void lease_forget_lost(acp_agent *a, const char *id);
/* -32002 for an id that is not open here: lease_lost when it was taken over from this agent
 * (and, with forget, no more after this answer). */
void agent_reply_unknown(acp_agent *a, acp_req *req, const char *id, bool forget);
/* Gives s's lease up (session_free): another holder may take it at once. */
void lease_give_up(acp_session *s);
/* Keeps the renewal timer running while some session holds a lease. */
void lease_renewing(acp_agent *a);

/* subagent.c (unstable: subagent sessions) */
/* Closes s's open children (before s itself closes) and unlinks s from its parent. */
void subagent_close(acp_session *s);
/* A child refuses what only its owner may do (prompt, close, delete, set_mode, set_config):
 * false after answering req -32602 naming the parent. */
bool subagent_unrestricted(acp_session *s, acp_req *req);
/* Answers req -32602 when the stored session row names a parent (load, resume, delete of a
 * child that is not open here): false then. */
bool subagent_row_unrestricted(acp_req *req, const char *id, const char *parent);
/* session/cancel of a child: the engine's subagent_cancel, when the child grants it. */
void subagent_cancel(acp_session *s);
/* Whether a load replays s's children too (the client takes subagent updates). */
bool subagent_replayed(const acp_agent *a);

/* replay.c */
void replay_start(acp_session *s);
void replay_run(acp_agent *a);
void replay_stop(acp_session *s);
/* Runs the rest of a replay now, without waiting for the output to drain (shutdown). */
void replay_finish(acp_session *s);

/* sessmeta.c: session/set_title, archive, unarchive, status, list's archived filter and the
 * systemPrompt of new, load, resume and fork (the unstable features TITLE, ARCHIVE, STATUS,
 * SYSTEM_PROMPT). */
void sessmeta_register(acp_agent *a);
/* The sessionCapabilities members of the features offered, into the object w is writing. */
void sessmeta_write_caps(acp_agent *a, acp_jw *w);
/* Whether session/archive is offered (it needs session/list too): SessionInfo.archived then. */
bool sessmeta_archive_on(const acp_agent *a);
/* session/list's params.archived as an acp_store_archived_filter (INCLUDE when archive is not
 * offered: the member is then ignored), or -1 after answering req -32602. */
int sessmeta_list_filter(acp_agent *a, acp_req *req);
/* params.systemPrompt of session/new, load, resume or fork (params: the request's params
 * object), checked as schema.unstable.json says: an object with a string mode, "append" or,
 * when the engine offers it (engine.system_prompt_override), "override", and content a
 * non-empty array of text blocks. *out receives it as compact JSON text (malloc'd: the
 * caller's), or NULL when it is omitted or null, or the feature is not offered (the member is
 * then ignored). False after answering req -32602 naming the member (or -32603): the session
 * must then not be created, loaded, resumed or forked. */
bool agent_system_prompt(acp_agent *a, acp_req *req, const json_t *params, char **out);
/* Gives s the system prompt json (stolen; NULL: none) for the engine to read. 0 or
 * ACP_ENOMEM (json is s's either way). */
int session_set_system_prompt(acp_session *s, char *json);

/* methods.c */
void methods_register(acp_agent *a);
/* Waits for the opening session's MCP servers, then session_opened_step(). */
void open_wait(acp_session *s);
/* The params' sessionId (a string after the edge), or NULL after answering -32602. */
const char *session_id_param(acp_req *req);

/* config.c: modes and config options. */
/* Sets the session's options from the engine and the stored state (JSON text or NULL). */
int cfg_init(acp_session *s, const char *stored);
int cfg_check_engine(acp_agent *a); /* ACP_EINVAL (acp_error_last() says why) or 0 */
void cfg_free(acp_session *s);
/* Writes the "modes" and "configOptions" members (when the session has them) into the
 * object being written by w. */
void cfg_write_result(acp_session *s, acp_jw *w);
void cfg_register(acp_agent *a); /* session/set_mode, session/set_config_option */

/* auth.c */
void auth_register(acp_agent *a);                 /* authenticate, logout */
void auth_write_methods(acp_agent *a, acp_jw *w); /* the authMethods array */
/* agent_check_init(), then false after answering -32000 when the engine requires
 * authentication and the connection has none: the gate of every session method. */
bool agent_check_auth(acp_agent *a, acp_req *req);
void auth_shutdown(acp_agent *a); /* answers pending authenticate requests -32800 */
/* (unstable) agentCapabilities.auth.status is advertised: the engine knows its state. */
bool auth_status_offered(const acp_agent *a);

/* providers.c (unstable): providers/list, set, disable. */
bool providers_offered(const acp_agent *a);
void providers_register(acp_agent *a);
int providers_check_engine(const acp_agent *a);
void providers_free(acp_agent *a);
void auth_free_all(acp_agent *a);
int auth_check_engine(acp_agent *a); /* ACP_EINVAL (acp_error_last() says why) or 0 */

/* fork.c: session/fork (ACP_UNSTABLE_FORK). */
bool fork_offered(const acp_agent *a); /* advertised and served */
void fork_register(acp_agent *a);
/* A fork's engine setup: engine.session_fork, else session_setup (as a load's). */
void fork_setup(acp_session *s);

/* ext.c */
void ext_free_all(acp_agent *a);

/* call.c, tool.c, terminal.c: the client calls of turns, sessions and authenticate requests.
 * The owner hooks below are called by turn.c, session.c and auth.c. */
/* After the engine heard of the cancel (and if the turn still runs): $/cancel_request for each
 * of the turn's calls; permission and elicitation calls resolve as cancelled at once. */
void calls_turn_cancelled(acp_turn *t);
/* Before the turn's response is fixed: its calls are forgotten and, unless the response was
 * decided already (the store failed: nothing more of the turn can be stored), its open tool
 * calls are reported failed and its terminals released. */
void calls_turn_ended(acp_turn *t);
/* The turn is freed: terminals still held (after a store failure) are released, the tool
 * call handles freed. */
void calls_turn_free(acp_turn *t);
/* The turn ends: its local file jobs finish without calling anybody back. */
void localfs_turn_free(acp_turn *t);
void calls_session_closed(acp_session *s); /* forget calls, release terminals */
void calls_auth_ended(acp_auth *au);       /* forget its elicitations */
void calls_agent_free(acp_agent *a);       /* orphan terminals, elicitation ids */

/* Output about session s (NULL: none) waits behind its uncommitted updates: while it has
 * some, the connection writes into s->hold from call_hold (true) to call_unhold. */
bool call_hold(acp_session *s, size_t *before);
void call_unhold(acp_session *s, size_t before);
/* Sends method about session s (sessionId first) or authenticate request au (requestId, the
 * request's id as received), then the members of params (an object or NULL; stolen), behind
 * s's held updates. As acp_conn_call: cb NULL wants no answer, and is sent after EOF too. */
int call_send(acp_agent *a, acp_session *s, acp_auth *au, const char *method, json_t *params,
              acp_response_cb cb, void *user, acp_call **out);
/* The status a response gives a call: 0 and *result, or ACP_EPROTO / ACP_ECLOSED and *error. */
int call_status(acp_conn *c, acp_msg *m, const json_t **result, const char **error);
/* Whether method may be called now by owner t, else s, else au: ACP_ECLOSED when the owner
 * takes no more calls, ACP_EINVAL for params that are not an object, ACP_ENOTSUP (saying which
 * capability) when the client did not advertise what method needs. Every call is checked so. */
int call_check(acp_agent *a, acp_turn *t, acp_session *s, acp_auth *au, const char *method,
               const json_t *params);
/* Starts a call like *tmpl (owner t, else s, else au; answer, cb, user, data, term,
 * cancelled; s and a are filled in): refused when the owner can take no more calls or the
 * capability is missing, else sent (params as call_send) and linked to its owner. params and
 * tmpl->data are stolen, also on failure. 0, ACP_ECLOSED, ACP_ENOTSUP, ACP_EINVAL, ACP_ENOMEM. */
int pcall_start(const pcall *tmpl, const char *method, json_t *params);
/* Unlinks p from its owner, sends $/cancel_request, frees it: its callback never runs. */
void pcall_forget(pcall *p);

/* tool.c */
void tools_turn_ended(acp_turn *t); /* open tool calls are reported failed */
void tools_free(acp_turn *t);

/* terminal.c */
void terminals_agent_free(acp_agent *a); /* orphans still waiting for terminal/create */

#endif
