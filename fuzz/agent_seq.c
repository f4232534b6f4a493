/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: whole request sequences into the agent runtime, as a client (or two) would
 * send them, not the JSON syntax of one (rpc_recv, agent_recv cover that). The input is decoded
 * as a program: each step sends one message on one of two connections, both agents in process
 * on one loop, each with its own handle on one temporary SQLite file, as two acp-agent
 * processes sharing a store would be; so a session made on one is loaded, prompted, deleted on
 * the other, in any order. The engine is the acp-agent program's own (engines/echo/echo.c):
 * prompts are its slash commands, with paths inside a private temporary root set.
 *
 * Checked besides crashes, leaks and UBSan:
 *   - every request is answered exactly once, with its id as sent (integer, string, beyond
 *     2^53), by the time its agent has shut down, whether the client closed its input first or
 *     not; a response is a result or an error, never both; no response answers an id never
 *     sent;
 *   - every output line is valid JSON;
 *   - no session/update (nor a request of the agent, but terminal/release: the agent MUST
 *     release a terminal whose create it learns of late) names a session that connection did
 *     not open, or has closed or deleted, or was told is not found (-32002), unless a load,
 *     resume, close or delete of it is being answered: nothing leaks between connections;
 *   - the agent's requests to the client have ids unique among those not answered;
 *   - session/new answers a sessionId, session/prompt a valid stopReason;
 *   - shutdown finishes, with no libuv handle left open;
 *   - no stored history keeps a tool call that never finished (unless a store error was
 *     injected).
 *
 * Input: a variant byte (auth required with a token present or absent, lifecycle methods
 * disabled), then steps. A step is an op byte (bit 7: the second connection; bit 6: no loop
 * turn after it, so that the next messages arrive in the same turn; the rest picks the kind)
 * and a fixed number of bytes for its params, each an index into a small dictionary: session
 * ids made so far (deleted ones too) or bad ones (unknown, empty, wrong type, a NUL, absent),
 * cwds inside and outside the roots, MCP servers (a stdio one fails to spawn: rt_spawn is
 * wrapped), prompt texts, answers to the agent's own requests (permissions, fs, terminals,
 * elicitations, extensions; errors and malformed ones too). Other steps close a connection's
 * input (EOF), replace its agent by a fresh one on a fresh store handle (a restarted process),
 * run the loop, or arm a store fault (store/inject.h): an SQLite error at the Kth database step
 * of the Nth next call of an operation, or, at that step, a third handle deleting a session
 * (another process, at the worst moment). Past the end every byte reads 0.
 * fuzz/agent_seq_seeds.py writes the hand-made seeds.
 *
 * Side effects stay in a private temporary directory (removed at exit): the store and the
 * root set the prompts read and write in. */
#include <ftw.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "acp/agent.h"
#include "acp/json.h"
#include "fuzz/agent_harness.h"
#include "store/inject.h"
#include "engines/echo/echo.h"

#define NCONN     2
#define MAX_STEPS 256

/* --- the private directory ------------------------------------------------------------------ */

static char dir[PATH_MAX - 64];
static char root[PATH_MAX], other[PATH_MAX], sub[PATH_MAX], dbpath[PATH_MAX];

static void put_file(const char *rel, const char *text)
{
    char p[PATH_MAX + 64];
    snprintf(p, sizeof p, "%s/%s", dir, rel);
    FILE *f = fopen(p, "w");
    if (!f || fputs(text, f) < 0 || fclose(f)) abort();
}

static int rm_one(const char *p, const struct stat *sb, int type, struct FTW *ftw)
{
    return remove(p);
}

static void rm_dir(void)
{
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* root/ (a.txt, sub/b.txt, link -> ../outside.txt), other/ (x.txt), outside.txt. */
static void make_dir(void)
{
    /* Memory-backed when it can be: SQLite's fsyncs on a disk would cost most of the time. */
    const char *tmp = getenv("TMPDIR");
    struct stat sb;
    if (!tmp || !*tmp) tmp = !stat("/dev/shm", &sb) && S_ISDIR(sb.st_mode) ? "/dev/shm" : "/tmp";
    snprintf(dir, sizeof dir, "%s/acp-fuzz-seq-XXXXXX", tmp);
    if (!mkdtemp(dir)) abort();
    atexit(rm_dir);
    snprintf(root, sizeof root, "%s/root", dir);
    snprintf(other, sizeof other, "%s/other", dir);
    snprintf(sub, sizeof sub, "%s/root/sub", dir);
    snprintf(dbpath, sizeof dbpath, "%s/store.db", dir);
    char link[PATH_MAX + 8];
    snprintf(link, sizeof link, "%s/link", root);
    if (mkdir(root, 0700) || mkdir(other, 0700) || mkdir(sub, 0700) ||
        symlink("../outside.txt", link))
        abort();
    put_file("outside.txt", "not yours\n");
}

/* Every input starts from the same files and an empty store. */
static void reset_dir(void)
{
    put_file("root/a.txt", "alpha\n");
    put_file("root/sub/b.txt", "beta\n");
    put_file("other/x.txt", "ex\n");
    char p[PATH_MAX + 16];
    snprintf(p, sizeof p, "%s/new.txt", root);
    unlink(p);
    static const char *const suffix[] = {"", "-wal", "-shm", "-journal"};
    for (int i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s%s", dbpath, suffix[i]);
        unlink(p);
    }
}

/* --- the state of one input ----------------------------------------------------------------- */

typedef struct seq seq;

typedef struct conn {
    seq *q;
    int no;
    acp_store *st;
    bool armed_error; /* the fault armed on st (store/inject.h) is an error */
    acp_agent *a;
    bool ended;       /* its input closed (EOF): nothing more is sent */
    bool done;        /* on_done ran */
    long long next;   /* request ids: 1, 2, ... in three forms */
    json_t *sent;     /* key of a request id -> {"m": method, "sid": session id, "n": answers} */
    json_t *asked;    /* the agent's requests not answered yet (whole messages) */
    json_t *answered; /* ids of the agent's requests answered, to answer again */
    json_t *open;     /* session ids open on this connection -> true */
    json_t *pending;  /* session id -> its load, resume, close, delete not answered yet */
    char *cursor;     /* the last session/list nextCursor */
} conn;

struct seq {
    uv_loop_t loop;
    acp_engine e;
    conn c[NCONN];
    json_t *ids;       /* every sessionId session/new answered (array) */
    acp_store *killer; /* a third process: deletes a session inside another's store call */
    char *victim;      /* the session it deletes */
    bool faulted;      /* a store error was injected: history may be cut */
};

static bool tracing;

/* --- reading the input ------------------------------------------------------------------------ */

typedef struct rd {
    const uint8_t *p;
    size_t n;
} rd;

static unsigned byte(rd *r)
{
    if (!r->n) return 0;
    r->n--;
    return *r->p++;
}

/* --- the connection's view of what it sent and saw -------------------------------------------- */

/* A request id as a key: "i" and the integer, "s" and the string; NULL for anything else. */
static const char *id_key(const json_t *id, char *buf, size_t n)
{
    if (json_is_integer(id))
        snprintf(buf, n, "i%lld", (long long)json_integer_value(id));
    else if (json_is_string(id))
        snprintf(buf, n, "s%s", json_string_value(id));
    else
        return NULL;
    return buf;
}

static void add(json_t *counts, const char *key, int d)
{
    json_int_t v = json_integer_value(json_object_get(counts, key)) + d;
    if (v < 0) abort();
    json_object_set_new(counts, key, json_integer(v));
}

static bool is(const char *a, const char *b)
{
    return a && b && !strcmp(a, b);
}

/* Whether the connection may hear of session sid: open on it, or being loaded or resumed
 * (replay comes before the answer), or closed or deleted (what the turn that it ends says
 * comes before the answer, also after another request was told the session is not found). */
static bool allowed(const conn *c, const char *sid)
{
    return json_object_get(c->open, sid) ||
           json_integer_value(json_object_get(c->pending, sid)) > 0;
}

/* The requests that open or close a session. */
static bool about_open(const char *method)
{
    return is(method, "session/load") || is(method, "session/resume") ||
           is(method, "session/close") || is(method, "session/delete");
}

static void check_session(const conn *c, const char *sid)
{
    if (sid && !allowed(c, sid)) {
        fprintf(stderr, "agent_seq: connection %d was sent something of session %s\n", c->no, sid);
        abort();
    }
}

static void remember_id(seq *q, const char *sid)
{
    size_t i;
    json_t *v;
    json_array_foreach(q->ids, i, v) if (is(json_string_value(v), sid)) return;
    json_array_append_new(q->ids, json_string(sid));
}

static void response(conn *c, json_t *m)
{
    char buf[1100];
    const char *key = id_key(json_object_get(m, "id"), buf, sizeof buf);
    json_t *r = key ? json_object_get(c->sent, key) : NULL;
    if (!r || json_integer_value(json_object_get(r, "n"))) {
        fprintf(stderr, "agent_seq: connection %d: %s\n", c->no,
                r ? "a request answered twice" : "a response to no request sent");
        abort();
    }
    json_object_set_new(r, "n", json_integer(1));
    json_t *res = json_object_get(m, "result"), *err = json_object_get(m, "error");
    if (!res == !err) abort();
    if (err && (!json_is_integer(json_object_get(err, "code")) ||
                !json_is_string(json_object_get(err, "message"))))
        abort();
    const char *method = json_string_value(json_object_get(r, "m"));
    const char *sid = json_string_value(json_object_get(r, "sid"));
    bool opens = is(method, "session/load") || is(method, "session/resume");
    if (about_open(method) && sid) add(c->pending, sid, -1);
    /* Not open (any more): never opened, closed, or found deleted by another connection. */
    if (err && sid && json_integer_value(json_object_get(err, "code")) == -32002)
        json_object_del(c->open, sid);
    if (err) return;
    if (is(method, "session/new")) {
        const char *id = json_string_value(json_object_get(res, "sessionId"));
        if (!id) abort();
        json_object_set_new(c->open, id, json_true());
        remember_id(c->q, id);
    } else if (opens && sid) {
        json_object_set_new(c->open, sid, json_true());
    } else if ((is(method, "session/close") || is(method, "session/delete")) && sid) {
        json_object_del(c->open, sid);
    } else if (is(method, "session/prompt")) {
        static const char *const reasons[] = {"end_turn", "max_tokens", "max_turn_requests",
                                              "refusal", "cancelled"};
        const char *why = json_string_value(json_object_get(res, "stopReason"));
        size_t i = 0;
        while (i < 5 && !is(why, reasons[i])) i++;
        if (i == 5) abort();
    } else if (is(method, "session/list")) {
        const char *next = json_string_value(json_object_get(res, "nextCursor"));
        if (next) {
            free(c->cursor);
            c->cursor = strdup(next);
        }
    }
}

/* One line the agent wrote (valid JSON already). */
static void on_line(const char *line, size_t n, void *user)
{
    conn *c = user;
    acp_span msg = {line, n}, v, p;
    /* The bulk of the output: read without a tree. */
    if (acp_json_member(msg, "method", &v) && acp_json_str_eq(v, "session/update")) {
        char *sid = NULL;
        if (!acp_json_member(msg, "params", &p) || !acp_json_member(p, "sessionId", &v) ||
            !(sid = acp_json_strdup(v)))
            abort();
        check_session(c, sid);
        free(sid);
        return;
    }
    json_error_t e;
    json_t *m = json_loadb(line, n, JSON_ALLOW_NUL, &e);
    if (!json_is_object(m)) {
        fprintf(stderr, "agent_seq: unreadable line: %s\n", e.text);
        abort();
    }
    const char *method = json_string_value(json_object_get(m, "method"));
    json_t *id = json_object_get(m, "id");
    if (!method) {
        response(c, m);
    } else if (id) { /* a request to us */
        char a[1100], b[1100];
        const char *key = id_key(id, a, sizeof a);
        size_t i;
        json_t *q;
        if (!key) abort();
        json_array_foreach(c->asked, i,
                           q) if (is(id_key(json_object_get(q, "id"), b, sizeof b), key)) abort();
        if (!is(method, "terminal/release"))
            check_session(
                c, json_string_value(json_object_get(json_object_get(m, "params"), "sessionId")));
        json_array_append(c->asked, m);
    }
    json_decref(m);
}

/* --- sending ---------------------------------------------------------------------------------- */

static void feed(conn *c, json_t *m)
{
    char *s = json_dumps(m, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!s) abort();
    if (tracing) fprintf(stderr, "c%d> %s\n", c->no, s);
    size_t n = strlen(s);
    s[n] = '\n';
    acp_conn_recv(acp_agent_conn(c->a), s, n + 1);
    free(s);
    json_decref(m);
}

/* A request (params stolen; NULL: omitted) about session sid (NULL: none), with the next id in
 * one of three forms: integer, string, integer beyond 2^53. */
static void request(conn *c, const char *method, json_t *params, const json_t *sid)
{
    long long n = ++c->next;
    json_t *id = n % 3 == 0   ? json_integer((1LL << 60) + n)
                 : n % 3 == 1 ? json_integer(n)
                              : json_sprintf("r%lld", n);
    char buf[64];
    json_t *r = json_pack("{ss si}", "m", method, "n", 0);
    if (json_is_string(sid)) {
        json_object_set(r, "sid", (json_t *)sid);
        if (about_open(method)) add(c->pending, json_string_value(sid), 1);
    }
    json_object_set_new(c->sent, id_key(id, buf, sizeof buf), r);
    json_t *m = json_pack("{ss so ss}", "jsonrpc", "2.0", "id", id, "method", method);
    if (params) json_object_set_new(m, "params", params);
    feed(c, m);
}

static void notify(conn *c, const char *method, json_t *params)
{
    json_t *m = json_pack("{ss ss}", "jsonrpc", "2.0", "method", method);
    if (params) json_object_set_new(m, "params", params);
    feed(c, m);
}

/* Sets key to v (stolen) unless v is NULL: the member is then absent. */
static void put(json_t *o, const char *key, json_t *v)
{
    if (v) json_object_set_new(o, key, v);
}

/* --- the dictionaries ---------------------------------------------------------------------------
 */

/* A session id: one made so far (3 in 4), else a bad one. NULL: absent. */
static json_t *pick_sid(seq *q, unsigned b)
{
    size_t n = json_array_size(q->ids);
    if (n && b < 192) return json_incref(json_array_get(q->ids, b % n));
    switch (b % 7) {
    case 0:
        return json_string("sess_ffffffffffffffffffffffffffffffff");
    case 1:
        return json_string("");
    case 2:
        return json_integer(42);
    case 3:
        return json_null();
    case 4:
        return json_stringn("sess_\0x", 7);
    case 5: {
        char *s = malloc(1100);
        memset(s, 'x', 1099);
        s[1099] = 0;
        json_t *v = json_string(s);
        free(s);
        return v;
    }
    default:
        return NULL;
    }
}

static json_t *pick_cwd(unsigned b)
{
    switch (b % 8) {
    case 0:
    case 1:
        return json_string(root);
    case 2:
        return json_string(other);
    case 3:
        return json_string(sub);
    case 4:
        return json_string("/nonexistent-acp-fuzz-dir");
    case 5:
        return json_string("relative/dir");
    case 6:
        return json_integer(7);
    default:
        return NULL;
    }
}

static json_t *pick_dirs(unsigned b)
{
    switch (b % 8) {
    case 0:
    case 1:
        return NULL;
    case 2:
        return json_array();
    case 3:
        return json_pack("[s]", other);
    case 4:
        return json_pack("[ss]", root, sub);
    case 5:
        return json_pack("[ss]", other, "relative");
    case 6:
        return json_null();
    default:
        return json_pack("[i]", 5);
    }
}

static json_t *pick_mcp(unsigned b)
{
    switch (b % 8) {
    case 0:
    case 1:
    case 2:
        return json_array();
    case 3: /* fails to start: rt_spawn is wrapped */
        return json_pack("[{ss ss s[s] s[{ss ss}]}]", "name", "s", "command", "/bin/false", "args",
                         "-x", "env", "name", "TOKEN", "value", "secret");
    case 4: /* not offered: -32602 */
        return json_pack("[{ss ss ss s[]}]", "type", "http", "name", "h", "url",
                         "http://127.0.0.1:9/mcp", "headers");
    case 5:
        return json_null();
    case 6:
        return json_pack("[{ss}]", "type", "weird");
    default:
        return NULL;
    }
}

/* The echo engine's commands (engines/echo/echo.c), with paths relative to a cwd of the
 * root, and what a careless client would type. */
static const char *const texts[] = {
    "hello",
    "/stream 3 5",
    "/stream 0 1",
    "/stream 2 99999999999",
    "/sleep 0",
    "/sleep 3600000",
    "/sleep -5",
    "/title Fuzzed",
    "/title",
    "/plan",
    "/read a.txt",
    "/read sub/b.txt",
    "/read link",
    "/read /etc/hostname",
    "/read ../other/x.txt",
    "/read missing.txt",
    "/write new.txt fresh",
    "/write a.txt changed",
    "/write ../other/x.txt there",
    "/write /etc/acp-fuzz-seq no",
    "/write",
    "/mcp",
    "/call s echo {}",
    "/call s echo [1]",
    "/call",
    "/notice careful",
    "/compact",
    "/usage",
    "/mode ask",
    "/mode code",
    "/mode nope",
    "/set model echo-large",
    "/set verbose on",
    "/set mode ask",
    "/set nope x",
    "/term echo hi",
    "/term",
    "/ask",
    "/elicit",
    "/ext",
    "/unknown",
    "",
    "h\xc3\xa9llo w\xc3\xb6rld",
    "/stream 5 1000000", /* a history that session/load replays in more than one step */
};
#define NTEXTS (sizeof texts / sizeof *texts)

static json_t *pick_prompt(unsigned text, unsigned shape)
{
    json_t *t = json_pack("{ss ss}", "type", "text", "text", texts[text % NTEXTS]);
    switch (shape % 8) {
    case 4:
        return json_pack("[o {ss ss ss}]", t, "type", "resource_link", "uri", "file:///x", "name",
                         "x");
    case 5:
        return json_pack("[o {ss s{ss ss}}]", t, "type", "resource", "resource", "uri", "file:///r",
                         "text", " embedded");
    case 6: /* not advertised: -32602 */
        json_decref(t);
        return json_pack("[{ss ss ss}]", "type", "image", "data", "AAAA", "mimeType", "image/png");
    case 7:
        json_decref(t);
        return shape & 8 ? json_array() : json_string("not blocks");
    default:
        return json_pack("[o]", t);
    }
}

static json_t *pick_caps(unsigned b)
{
    if (b == 0xff) return json_string("not an object");
    json_t *caps = json_object();
    if (b & 3)
        json_object_set_new(caps, "fs",
                            json_pack("{sb sb}", "readTextFile", b & 1, "writeTextFile", b & 2));
    if (b & 4) json_object_set_new(caps, "terminal", json_true());
    if (b & 8) json_object_set_new(caps, "elicitation", json_pack("{s{} s{}}", "form", "url"));
    if (b & 16)
        json_object_set_new(caps, "session", json_pack("{s{} s{}}", "notices", "compaction"));
    if (b & 32)
        json_object_set_new(caps, "session", json_pack("{s{s{}}}", "configOptions", "boolean"));
    if (b & 64) json_object_set_new(caps, "auth", json_pack("{sb}", "terminal", 1));
    if (b & 128) json_object_set_new(caps, "_meta", json_pack("{s{}}", "acp-agent"));
    return caps;
}

/* An answer to the agent's request m, picked by k: what a client would say, or not. */
static json_t *answer_for(conn *c, const json_t *m, unsigned k)
{
    const char *method = json_string_value(json_object_get(m, "method"));
    const json_t *params = json_object_get(m, "params");
    if (is(method, "session/request_permission")) {
        const json_t *opts = json_object_get(params, "options");
        size_t n = json_array_size(opts);
        const char *opt =
            json_string_value(json_object_get(json_array_get(opts, n ? k / 4 % n : 0), "optionId"));
        switch (k % 4) {
        case 2:
            return json_pack("{s{ss}}", "outcome", "outcome", "cancelled");
        case 3:
            opt = "bogus";
            break;
        }
        return json_pack("{s{ss ss}}", "outcome", "outcome", "selected", "optionId",
                         opt ? opt : "none");
    }
    if (is(method, "fs/read_text_file"))
        return k % 3 == 0   ? json_pack("{ss}", "content", "from the client\n")
               : k % 3 == 1 ? json_pack("{si}", "content", 5)
                            : json_object();
    if (is(method, "terminal/create"))
        return k % 3 == 0   ? json_pack("{ss}", "terminalId", k / 3 % 2 ? "term_2" : "term_1")
               : k % 3 == 1 ? json_object()
                            : json_pack("{si}", "terminalId", 5);
    if (is(method, "terminal/output"))
        return k % 3 == 0   ? json_pack("{ss sb s{si sn}}", "output", "hi\n", "truncated", 0,
                                        "exitStatus", "exitCode", 0, "signal")
               : k % 3 == 1 ? json_pack("{ss sb}", "output", "part", "truncated", 1)
                            : json_pack("{si}", "output", 5);
    if (is(method, "terminal/wait_for_exit"))
        return k % 3 == 0   ? json_pack("{si sn}", "exitCode", 0, "signal")
               : k % 3 == 1 ? json_pack("{sn ss}", "exitCode", "signal", "SIGKILL")
                            : json_pack("{ss}", "exitCode", "x");
    if (is(method, "elicitation/create")) {
        switch (k % 5) {
        case 0:
            return json_pack("{ss s{ss si}}", "action", "accept", "content", "name", "Ada", "count",
                             3);
        case 1:
            return json_pack("{ss}", "action", "decline");
        case 2:
            return json_pack("{ss}", "action", "cancel");
        case 3:
            return json_pack("{ss s{ss}}", "action", "accept", "content", "count", "x");
        default:
            return json_pack("{si}", "action", 5);
        }
    }
    if (is(method, "fs/write_text_file") || is(method, "terminal/kill") ||
        is(method, "terminal/release"))
        return k & 1 ? json_null() : json_object();
    return json_pack("{sb}", "pong", 1);
}

/* --- the steps ----------------------------------------------------------------------------------
 */

enum kind {
    K_INIT,
    K_AUTH,
    K_LOGOUT,
    K_NEW,
    K_LOAD,
    K_RESUME,
    K_LIST,
    K_CLOSE,
    K_DELETE,
    K_PROMPT,
    K_CANCEL,
    K_SET_MODE,
    K_SET_CONFIG,
    K_CANCEL_REQ,
    K_ANSWER,
    K_EXT,
    K_FAULT,
    K_TICK,
    K_EOF,
    K_RESTART,
};

/* The op byte's low six bits index this (modulo its length): what matters most comes often. */
static const uint8_t kinds[] = {
    K_INIT,     K_AUTH,       K_LOGOUT,     K_NEW,     K_NEW,    K_LOAD,   K_RESUME,
    K_LIST,     K_CLOSE,      K_DELETE,     K_PROMPT,  K_PROMPT, K_PROMPT, K_CANCEL,
    K_SET_MODE, K_SET_CONFIG, K_CANCEL_REQ, K_ANSWER,  K_ANSWER, K_ANSWER, K_EXT,
    K_FAULT,    K_TICK,       K_EOF,        K_RESTART,
};

/* The params of session/new, load and resume. */
static json_t *open_params(seq *q, rd *r, json_t **sid, bool with_sid)
{
    json_t *p = json_object();
    if (with_sid) {
        *sid = pick_sid(q, byte(r));
        put(p, "sessionId", json_incref(*sid));
    }
    put(p, "cwd", pick_cwd(byte(r)));
    put(p, "additionalDirectories", pick_dirs(byte(r)));
    put(p, "mcpServers", pick_mcp(byte(r)));
    return p;
}

/* A request with params {sessionId} and more: the session id is the step's first byte. */
static void session_request(conn *c, rd *r, const char *method, json_t *more)
{
    json_t *sid = pick_sid(c->q, byte(r));
    json_t *p = more ? more : json_object();
    put(p, "sessionId", json_incref(sid));
    request(c, method, p, sid);
    json_decref(sid);
}

static void do_answer(conn *c, rd *r)
{
    unsigned pick = byte(r), how = byte(r);
    size_t n = json_array_size(c->asked);
    json_t *id, *m = NULL;
    if (how % 16 == 15 || !n) { /* an id answered already (or never asked): ignored */
        size_t na = json_array_size(c->answered);
        id = na ? json_incref(json_array_get(c->answered, pick % na)) : json_integer(987654);
    } else {
        m = json_incref(json_array_get(c->asked, pick % n));
        json_array_remove(c->asked, pick % n);
        id = json_incref(json_object_get(m, "id"));
        if (json_array_size(c->answered) < 8) json_array_append(c->answered, id);
    }
    json_t *msg = json_pack("{ss so}", "jsonrpc", "2.0", "id", id);
    if (how % 16 == 14)
        json_object_set_new(msg, "error",
                            json_pack("{si ss}", "code", -32000, "message", "the client refused"));
    else if (how % 16 == 13)
        json_object_set_new(msg, "result", json_string("junk"));
    else
        json_object_set_new(msg, "result", m ? answer_for(c, m, how / 16) : json_object());
    json_decref(m);
    feed(c, msg);
}

static void do_ext(conn *c, unsigned b)
{
    switch (b % 5) {
    case 0:
        request(c, "_acp-agent/echo", json_pack("{si}", "x", 1), NULL);
        break;
    case 1:
        request(c, "_nope", NULL, NULL);
        break;
    case 2:
        request(c, "session/bogus", json_object(), NULL);
        break;
    case 3:
        notify(c, "_note", json_object());
        break;
    default: /* a request's method as a notification: nothing to answer */
        notify(c, "session/new", json_object());
        break;
    }
}

/* The fault armed on c's store handle, and whether it made anything fail. */
static void disarm(seq *q, conn *c)
{
    if (c->armed_error && acp_store_inject_fired(c->st)) q->faulted = true;
    acp_store_inject(c->st, NULL);
    c->armed_error = false;
}

static void delete_victim(acp_store *st, void *user)
{
    seq *q = user;
    if (q->victim) acp_store_delete(q->killer, q->victim); /* may meet the lock: BUSY then */
}

/* Arms a fault on c's store handle (store/inject.h), replacing the one before: the nth next
 * call of an operation meets SQLITE_BUSY, SQLITE_FULL or SQLITE_IOERR at its kth database step
 * (0: at every one), or, at that step, the killer handle deletes a session. b3 0xff disarms. */
static void do_fault(seq *q, conn *c, unsigned b1, unsigned b2, unsigned b3)
{
    static const unsigned ops[] = {
        ACP_FAULT_CREATE,    ACP_FAULT_GET,    ACP_FAULT_SET_INFO, ACP_FAULT_SET_ROOTS,
        ACP_FAULT_SET_STATE, ACP_FAULT_APPEND, ACP_FAULT_COMMIT,   ACP_FAULT_REPLAY,
        ACP_FAULT_LIST,      ACP_FAULT_DELETE, ACP_FAULT_WRITES,   ACP_FAULT_ALL,
    };
    static const int codes[] = {SQLITE_BUSY, SQLITE_FULL, SQLITE_IOERR};
    disarm(q, c);
    if (b3 == 0xff) return;
    unsigned how = b1 / 12 % 4;
    acp_store_fault f = {.ops = ops[b1 % 12],
                         .nth = 1 + b2 / 4 % 3,
                         .times = b2 >= 0xf0 ? UINT_MAX : 1, /* a disk that stays full */
                         .step = b2 % 4,
                         .kind = how == 3 ? ACP_FAULT_CALL : ACP_FAULT_ERROR,
                         .code = codes[how % 3],
                         .call = delete_victim,
                         .user = q};
    if (how == 3) {
        json_t *sid = pick_sid(q, b3);
        free(q->victim);
        q->victim = json_is_string(sid) ? strdup(json_string_value(sid)) : NULL;
        json_decref(sid);
    }
    if (acp_store_inject(c->st, &f)) abort();
    c->armed_error = how != 3;
}

static void on_log(const char *line, void *user)
{
    if (tracing) fprintf(stderr, "log: %s\n", line);
}

static void on_done(acp_agent *a, void *user)
{
    conn *c = user;
    c->done = true;
}

static void conn_start(seq *q, conn *c)
{
    if (acp_store_open(dbpath, &c->st)) {
        fprintf(stderr, "agent_seq: %s\n", acp_error_last()->message);
        abort();
    }
    c->armed_error = false;
    acp_agent_opts o = {.struct_size = sizeof(acp_agent_opts),
                        .on_log = on_log,
                        .on_done = on_done,
                        .user = c,
                        .mcp_connect_timeout_ms = 60000};
    if (acp_agent_new(&q->loop, c->st, &q->e, &o, &c->a) || echo_serve(c->a)) abort();
    c->ended = c->done = false;
    c->sent = json_object();
    c->asked = json_array();
    c->answered = json_array();
    c->open = json_object();
    c->pending = json_object();
}

static void drain(seq *q)
{
    for (int i = 0; i < NCONN; i++)
        if (q->c[i].a) fuzz_agent_drain(q->c[i].a, on_line, &q->c[i]);
}

static void turn(seq *q)
{
    uv_run(&q->loop, UV_RUN_NOWAIT);
    drain(q);
}

/* Every request the connection sent was answered (once: checked as they came). */
static void check_answered(conn *c)
{
    const char *key;
    json_t *r;
    json_object_foreach(c->sent, key, r)
    {
        if (json_integer_value(json_object_get(r, "n")) != 1) {
            fprintf(stderr, "agent_seq: connection %d never answered %s (%s)\n", c->no, key,
                    json_string_value(json_object_get(r, "m")));
            abort();
        }
    }
}

/* After the agent is done: checks, frees, and closes its store handle. */
static void conn_free(seq *q, conn *c)
{
    drain(q);
    check_answered(c);
    acp_agent_free(c->a);
    c->a = NULL;
    for (int i = 0; i < 4; i++) turn(q); /* the agent's handles close */
    disarm(q, c);
    acp_store_close(c->st);
    c->st = NULL;
    json_decref(c->sent);
    json_decref(c->asked);
    json_decref(c->answered);
    json_decref(c->open);
    json_decref(c->pending);
    free(c->cursor);
    c->cursor = NULL;
}

/* A new process in place of connection c: the old one shuts down (the other runs on). */
static void conn_restart(seq *q, conn *c)
{
    acp_agent_shutdown(c->a);
    for (int i = 0; i < 100 && !c->done; i++) turn(q);
    if (!c->done) abort(); /* shutdown must finish */
    conn_free(q, c);
    conn_start(q, c);
}

static void step(seq *q, rd *r)
{
    unsigned op = byte(r);
    conn *c = &q->c[op >> 7];
    enum kind k = kinds[(op & 0x3f) % sizeof kinds];
    if (c->ended && k != K_RESTART) return; /* its bytes are still read: steps stay aligned */
    json_t *p, *sid = NULL;
    unsigned b;
    switch (k) {
    case K_INIT:
        b = byte(r);
        p = json_object();
        put(p, "protocolVersion",
            b % 6 == 0   ? json_integer(1)
            : b % 6 == 1 ? json_integer(0)
            : b % 6 == 2 ? json_integer(70000)
            : b % 6 == 3 ? json_string("1")
            : b % 6 == 4 ? json_integer(2)
                         : NULL);
        put(p, "clientCapabilities", pick_caps(byte(r)));
        if (b & 8) put(p, "clientInfo", json_pack("{ss ss}", "name", "fuzz", "version", "1"));
        request(c, "initialize", p, NULL);
        break;
    case K_AUTH:
        b = byte(r);
        p = json_object();
        put(p, "methodId",
            b % 4 == 0   ? json_string("echo-token")
            : b % 4 == 1 ? json_string("nope")
            : b % 4 == 2 ? json_integer(5)
                         : NULL);
        request(c, "authenticate", p, NULL);
        break;
    case K_LOGOUT:
        request(c, "logout", json_object(), NULL);
        break;
    case K_NEW:
        request(c, "session/new", open_params(q, r, NULL, false), NULL);
        break;
    case K_LOAD:
    case K_RESUME:
        p = open_params(q, r, &sid, true);
        request(c, k == K_LOAD ? "session/load" : "session/resume", p, sid);
        json_decref(sid);
        break;
    case K_LIST:
        p = json_object();
        put(p, "cwd", (b = byte(r)) % 4 == 3 ? json_null() : b % 4 == 2 ? NULL : pick_cwd(b / 4));
        b = byte(r);
        put(p, "cursor",
            b % 4 == 0 && c->cursor ? json_string(c->cursor)
            : b % 4 == 1            ? json_string("bogus")
            : b % 4 == 2            ? json_null()
                                    : NULL);
        request(c, "session/list", p, NULL);
        break;
    case K_CLOSE:
        session_request(c, r, "session/close", NULL);
        break;
    case K_DELETE:
        session_request(c, r, "session/delete", NULL);
        break;
    case K_PROMPT:
        sid = pick_sid(q, byte(r));
        b = byte(r);
        p = json_pack("{so}", "prompt", pick_prompt(b, byte(r)));
        put(p, "sessionId", json_incref(sid));
        request(c, "session/prompt", p, sid);
        json_decref(sid);
        break;
    case K_CANCEL:
        p = json_object();
        put(p, "sessionId", pick_sid(q, byte(r)));
        notify(c, "session/cancel", p);
        break;
    case K_SET_MODE:
        b = byte(r);
        session_request(c, r, "session/set_mode",
                        json_pack("{so}", "modeId",
                                  b % 4 == 0   ? json_string("ask")
                                  : b % 4 == 1 ? json_string("code")
                                  : b % 4 == 2 ? json_string("nope")
                                               : json_integer(3)));
        break;
    case K_SET_CONFIG: {
        static const char *const cfg[][2] = {
            {"model", "echo-large"}, {"model", "echo-small"}, {"model", "nope"}, {"mode", "ask"},
            {"mode", "code"},        {"verbose", "true"},     {"nope", "x"},
        };
        b = byte(r);
        if (b % 10 < 7)
            p = json_pack("{ss ss}", "configId", cfg[b % 10][0], "value", cfg[b % 10][1]);
        else if (b % 10 < 9)
            p = json_pack("{ss ss sb}", "configId", "verbose", "type", "boolean", "value",
                          b % 10 == 7);
        else
            p = json_pack("{ss si}", "configId", "model", "value", 5);
        session_request(c, r, "session/set_config_option", p);
        break;
    }
    case K_CANCEL_REQ: {
        b = byte(r);
        const char *key;
        json_t *v, *id = NULL;
        size_t i = 0, n = json_object_size(c->sent);
        /* One of ours by its position in the request table, else one never sent. */
        json_object_foreach(c->sent, key, v)
        {
            if (n && i++ == b % n) {
                id =
                    key[0] == 'i' ? json_integer(strtoll(key + 1, NULL, 10)) : json_string(key + 1);
                break;
            }
        }
        notify(c, "$/cancel_request",
               json_pack("{so}", "requestId", id ? id : json_integer(123456789)));
        break;
    }
    case K_ANSWER:
        do_answer(c, r);
        break;
    case K_EXT:
        do_ext(c, byte(r));
        break;
    case K_FAULT: {
        unsigned b1 = byte(r), b2 = byte(r);
        do_fault(q, c, b1, b2, byte(r));
        break;
    }
    case K_TICK:
        for (b = byte(r) % 8; b > 0; b--) turn(q);
        break;
    case K_EOF: /* as the stdio transport does: the input ends, the agent shuts down */
        acp_conn_eof(acp_agent_conn(c->a));
        acp_agent_shutdown(c->a);
        c->ended = true;
        break;
    case K_RESTART:
        conn_restart(q, c);
        break;
    }
    if (!(op & 0x40)) turn(q);
}

/* --- what the store keeps ------------------------------------------------------------------------
 */

typedef struct tools {
    json_t *status; /* toolCallId -> last status */
} tools;

static int history_line(void *user, int64_t at, const char *json, size_t n)
{
    tools *t = user;
    json_t *u = json_loadb(json, n, JSON_ALLOW_NUL, NULL);
    if (!json_is_string(json_object_get(u, "sessionUpdate"))) abort();
    const char *id = json_string_value(json_object_get(u, "toolCallId"));
    json_t *st = json_object_get(u, "status");
    if (id && (st || !json_object_get(t->status, id)))
        json_object_set_new(t->status, id, st ? json_incref(st) : json_string("pending"));
    json_decref(u);
    return 0;
}

/* No stored history keeps a tool call of the engine's that never finished (agent.h: one still
 * open when its turn ends is reported failed), unless a store error was injected (a failed
 * commit loses what it held). */
static void check_history(seq *q)
{
    acp_store *st = q->killer;
    size_t i;
    json_t *v;
    json_array_foreach(q->ids, i, v)
    {
        tools t = {json_object()};
        int64_t last;
        bool done;
        int rc = acp_store_replay(st, json_string_value(v), 0, 0, history_line, &t, &last, &done);
        if (rc && rc != ACP_ENOTFOUND) abort();
        const char *id;
        json_t *s;
        json_object_foreach(t.status, id, s)
        {
            if (!q->faulted && !is(json_string_value(s), "completed") &&
                !is(json_string_value(s), "failed")) {
                fprintf(stderr, "agent_seq: tool call %s stored %s\n", id, json_string_value(s));
                abort();
            }
        }
        json_decref(t.status);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool ready;
    if (!ready) {
        make_dir();
        setenv("ACP_FUZZ_SEQ_TOKEN", "1", 1);
        unsetenv("ACP_FUZZ_SEQ_NO_TOKEN");
        tracing = getenv("ACP_FUZZ_TRACE") != NULL;
        ready = true;
    }
    reset_dir();
    fuzz_ids_reset();
    rd r = {data, size};
    seq q = {.ids = json_array()};
    if (uv_loop_init(&q.loop)) abort();

    /* The variant: bit 0 auth required, bit 1 with no token to find (authenticate fails),
     * bits 2 and 3 lifecycle methods disabled. */
    unsigned v = byte(&r);
    echo_engine(&q.e, !(v & 1) ? NULL : v & 2 ? "ACP_FUZZ_SEQ_NO_TOKEN" : "ACP_FUZZ_SEQ_TOKEN");
    q.e.disable = (v & 4 ? ACP_DISABLE_LOAD | ACP_DISABLE_LIST | ACP_DISABLE_ADD_DIRS : 0) |
                  (v & 8 ? ACP_DISABLE_RESUME | ACP_DISABLE_CLOSE | ACP_DISABLE_DELETE : 0);
    /* Its lock waits are short: it runs inside another handle's call, on the same thread. */
    if (acp_store_open(dbpath, &q.killer) || acp_store_inject_busy_timeout(q.killer, 1)) abort();
    for (int i = 0; i < NCONN; i++) {
        q.c[i] = (conn){.q = &q, .no = i};
        conn_start(&q, &q.c[i]);
    }

    for (int i = 0; i < MAX_STEPS && r.n; i++) step(&q, &r);
    for (int i = 0; i < 4; i++) turn(&q);

    for (int i = 0; i < NCONN; i++) acp_agent_shutdown(q.c[i].a);
    for (int i = 0; i < 1000 && !(q.c[0].done && q.c[1].done); i++) {
        uv_run(&q.loop, UV_RUN_ONCE);
        drain(&q);
    }
    if (!q.c[0].done || !q.c[1].done) abort(); /* shutdown must finish */
    for (int i = 0; i < NCONN; i++) conn_free(&q, &q.c[i]);
    uv_run(&q.loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&q.loop)) abort(); /* a handle left open */
    check_history(&q);
    acp_store_close(q.killer);
    free(q.victim);
    json_decref(q.ids);
    return 0;
}
