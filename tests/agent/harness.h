/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the agent tests: the runtime driven in-process. Bytes go into the agent's acp_conn,
 * the loop is turned by hand, acp_agent_flush() is called where the transport would call it, and
 * the output is parsed back into messages. A real SQLite store in a temporary directory. */
#ifndef ACP_TESTS_AGENT_HARNESS_H
#define ACP_TESTS_AGENT_HARNESS_H

#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "acp/agent.h"
#include "store/store_impl.h"

/* A test file's own state: what its engine records and the switches it reads. Defined there. */
typedef struct eng_state eng_state;

/* The fixture: the engine, its opts and their user pointers are the test file's to set. */
typedef struct h {
    uv_loop_t loop;
    char dir[256], db[300];
    char real[PATH_MAX]; /* dir with symlinks resolved (TMPDIR may itself be one) */
    acp_store *st;
    acp_store_ops ops; /* what st runs: the backend's, with what the test replaced */
    acp_engine eng;    /* agent_start() makes an agent of these two */
    acp_agent_opts opts;
    acp_agent *a;
    json_t *msgs; /* every message received and not yet consumed, in order */
    eng_state *e; /* h_new's esize zeroed bytes, freed with x */
} h;

/* The backend's own operations: a test's replacement in x->ops calls through to them (a store
 * operation gets no user pointer to find them by). */
extern const acp_store_ops *real_ops;

/* The store opened in a new temporary directory (named after tag), x->ops the backend's; no
 * agent yet. */
h *h_new(const char *tag, size_t esize);
/* Frees the agent if there is one, closes the store and the loop (which must have nothing left
 * open), removes the directory. */
void h_free(h *x);
/* Reopening keeps x->ops: the same replacements run. */
void store_open(h *x);
void store_close(h *x);
void agent_start(h *x);
/* Frees the agent and runs its loop dry; what it wrote and was not consumed goes with it. */
void agent_stop(h *x);

/* Moves the connection's output into x->msgs, one parsed message per line. */
void collect(h *x);
/* One loop turn as the transport would run it: callbacks, then commit-and-release. */
void turn(h *x);
/* Feeds one line (printf-style, the newline added) to the agent. */
void send_line(h *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Sends session/prompt with one text block (text needing no JSON escaping); does not wait. */
void send_prompt(h *x, int id, const char *sid, const char *text);
/* Sends a request (params as JSON text) and waits for its response, as take_response(). */
json_t *request(h *x, int id, const char *method, const char *params);
/* Turns the loop until the response to our request id came; returns its index in x->msgs. */
int wait_response(h *x, json_int_t id);
/* As wait_response(), then takes every message up to and including the response out of
 * x->msgs (caller decrefs). */
json_t *take_response(h *x, json_int_t id);

/* Where in msgs the response to our request id is, or -1. */
int find_in(const json_t *msgs, json_int_t id);
int find_response(h *x, json_int_t id);
/* Where in msgs the first message with this method is (from index from), or -1. */
int find_method(const json_t *msgs, const char *method, int from);
/* Where in msgs the $/cancel_request for our call id is, or -1. */
int find_cancel(const json_t *msgs, json_int_t call_id);

json_t *last(const json_t *msgs);
const char *jstr(const json_t *obj, const char *key);
const char *method_of(const json_t *m);
json_t *params_of(const json_t *m);
json_int_t id_of(const json_t *m);
/* Of the last of msgs: its result, its error's code and message. */
json_t *result_of(const json_t *msgs);
int error_code(const json_t *msgs);
const char *error_message(const json_t *msgs);
/* The stopReason of a prompt's response message. */
const char *stop_reason(const json_t *response);
/* The update object of the message at index i of msgs, or NULL. */
json_t *update_at(const json_t *msgs, size_t i);
/* The session/update objects among msgs (new references in a new array). */
json_t *updates_of(const json_t *msgs);
/* How many updates of kind (NULL: any) msgs carry. */
size_t count_updates(const json_t *msgs, const char *kind);

/* How many updates of a session are stored; the stored history, parsed (caller decrefs). */
int stored(h *x, const char *id);
json_t *history(h *x, const char *id);

void assert_errmsg(h *x, const char *part);

/* printf into a new string (caller frees) with single quotes turned into double quotes:
 * JSON written without escapes. */
char *vquote(const char *fmt, va_list ap);
/* Parses JSON written so (printf-style). */
json_t *J(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Compares got with want (stolen) exactly, printing both when they differ. */
void assert_json_(const json_t *got, json_t *want, const char *file, int line);
#define assert_json(got, want) assert_json_((got), (want), __FILE__, __LINE__)

#endif
