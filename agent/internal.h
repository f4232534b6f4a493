/* Private to agent/: the objects behind acp_agent, acp_session and acp_turn. */
#ifndef ACP_AGENT_INTERNAL_H
#define ACP_AGENT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "acp/agent.h"
#include "acp/roots.h"
#include "acp/rt.h"

/* Output queued above this makes a turn unwritable (when no transport reports its own). */
#define AGENT_HIGH_WATER (4u << 20)
/* Bytes of stored history replayed per loop turn and session. */
#define AGENT_REPLAY_STEP (2u << 20)
#define AGENT_LIST_PAGE   50
/* The longest text (escaped bytes) one stored update of coalesced chunks holds. */
#define AGENT_COALESCE_MAX (1u << 20)

/* A response that must wait until the session's held messages were released. */
typedef struct deferred {
    acp_req *req;
    json_t *result; /* NULL with code != 0: an error */
    int code;
    char *message;
    bool prompt; /* a prompt's response: becomes the store error if the commit fails */
} deferred;

/* An agent -> client request of a turn. */
typedef struct pcall {
    acp_turn *t;
    acp_call *call;
    acp_turn_call_cb cb;
    void *user;
    struct pcall *next;
} pcall;

enum sess_state {
    SESS_OPENING, /* new/load/resume not answered yet */
    SESS_READY,
    SESS_CLOSED, /* gone from the active list; freed once its held output is released */
};

struct acp_turn {
    acp_session *s;
    acp_req *req;         /* the session/prompt request; NULL once answered */
    const json_t *prompt; /* borrowed from req's params */
    bool cancelled;
    bool decided; /* the response is fixed (answered or deferred): updates refused */
    pcall *calls;
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

    /* Opening (new/load/resume): the request, and what it still waits for. */
    acp_req *open_req;
    bool want_replay, replay_done, mcp_settled, is_new;
    int64_t replay_seq;
    acp_session *rnext; /* in the agent's replay list */
    bool replaying;
};

struct acp_agent {
    uv_loop_t *loop;
    acp_store *store;
    acp_engine eng;
    acp_agent_opts opts;
    acp_conn *conn;
    acp_transport *tr;
    bool initialized;
    json_t *client_caps;

    acp_session *sessions; /* active (opening or ready) */
    size_t nsessions;
    acp_session *dirty;
    acp_session *replays; /* sessions replaying history */
    acp_turn *waiters;    /* turns waiting for writability */
    acp_turn *running;    /* waiters being called back in this loop turn */

    uv_idle_t pump;       /* runs waiters and replays while the output has room */
    uv_prepare_t flusher; /* commits once per loop turn when something is held */
    bool pump_on, flusher_on;
    int handles_open;

    size_t held;     /* bytes in every session's hold buffer */
    acp_buf scratch; /* for building one update */
    acp_buf line;    /* one envelope, or a replay step */

    bool shutting_down, done_called, freeing;
    int closing_mcp; /* MCP sets still shutting down */
    bool transport_closing;
};

/* agent.c */
void agent_log(acp_agent *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool agent_writable(const acp_agent *a);
void agent_pump_start(acp_agent *a);
void agent_mark_dirty(acp_agent *a, acp_session *s);
void agent_reply_store_error(acp_agent *a, acp_req *req); /* the store's own last error */
void agent_store_error(acp_req *req, const char *errmsg); /* -32603 with that sentence */
/* -32002 for a session id that is neither open nor stored, the id in error.data.sessionId. */
void agent_reply_not_found(acp_req *req, const char *id);
/* "session store unavailable: <errmsg>", the prefix once: errmsg itself or buf (n bytes). */
const char *agent_store_sentence(const char *errmsg, char *buf, size_t n);
bool agent_check_init(acp_agent *a, acp_req *req);
void agent_maybe_done(acp_agent *a);
void agent_maybe_free(acp_agent *a);

/* session.c */
acp_session *session_find(acp_agent *a, const char *id);
/* Validates cwd / additionalDirectories / mcpServers, checks (must_exist) that the session is
 * stored, and builds an opening session with its MCP servers starting (not yet in the active
 * list). On an error answers req and returns NULL. */
acp_session *session_open(acp_agent *a, acp_req *req, const char *id, bool mcp_required,
                          bool must_exist);
void session_activate(acp_session *s);
void session_close(acp_session *s); /* cancel, force-end, free engine state, MCP; maybe free */
void session_free(acp_session *s);  /* also stops the MCP servers of one never activated */
/* Sends (or holds) a session/update whose update object is json[0..n), storing it first when
 * persist is true. */
int session_emit(acp_session *s, const char *json, size_t n, bool persist);
/* Sends (or holds) it without storing it. */
int session_send(acp_session *s, const char *json, size_t n);
/* Appends to b one session/update line for the session whose id is the JSON string
 * id_json[0..idn), with update object json[0..n): 0 or ACP_ENOMEM (b unchanged). */
int session_envelope(acp_buf *b, const char *id_json, size_t idn, const char *json, size_t n);
int session_defer(acp_session *s, acp_req *req, json_t *result, int code, const char *message,
                  bool prompt);
void session_release(acp_session *s, int commit_rc, const char *errmsg);
void session_opened_step(acp_session *s); /* answers the open request when all is settled */

/* history.c: every store append of a session goes through these (0 or ACP_ENOMEM). */
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
void turn_store_failed(acp_turn *t, const char *errmsg);
void turn_writable_run(acp_agent *a);

/* replay.c */
void replay_start(acp_session *s);
void replay_run(acp_agent *a);
void replay_stop(acp_session *s);
/* Runs the rest of a replay now, without waiting for the output to drain (shutdown). */
void replay_finish(acp_session *s);

/* methods.c */
void methods_register(acp_agent *a);

#endif
