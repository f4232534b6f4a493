/* SPDX-License-Identifier: Apache-2.0 */
/* acp trace: a relay between a client and its agent that passes every byte through unchanged,
 * records each message (one JSON object per line: t, dir, msg) and checks it against the schema
 * and the protocol's ordering rules (findings: lines with a finding member, and stderr); and
 * acp trace show, which summarises a recording.
 *
 * Each direction is a thread of its own with plain blocking calls: no event loop stands between
 * the peers (an epoll-driven relay measurably slowed a /stream; bench/RESULTS.md), and the agent
 * gets real pipes, not libuv's socketpairs. On Linux the agent's bytes, the bulk of any trace,
 * are never copied on their way: tee(2) duplicates them into a holding pipe, where they wait for
 * the examiner, and splice(2) passes them on. The client's bytes are read, queued and written.
 * The examiner thread runs at idle priority and, while bytes are flowing, waits for a pause:
 * the checks never hold the relay up. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acp/json.h"
#include "tools/acp/app.h"
#include "tools/check/schema.h"

enum { CLIENT, AGENT }; /* who sent a message */
static const char *const who[2] = {"client", "agent"};

/* A request on its way: the other side owes the answer. */
typedef struct pending {
    char *id; /* the id's JSON text */
    char *method;
    char *session; /* params.sessionId, for session/prompt and load */
    double t;
    struct pending *next;
} pending;

struct tracer;

typedef struct side {
    /* its relay thread's */
    struct tracer *t;
    int from;    /* CLIENT or AGENT */
    int in, out; /* what this side writes (our stdin, the agent's stdout), where it goes */
    uv_thread_t relay;
    bool gone;         /* out's reader left: the bytes are still read and examined */
    bool copy;         /* out cannot take spliced bytes */
    struct hold *hold; /* where tee(2) puts the agent's bytes, and its write end */
    int hold_wr;
    /* the loop's */
    bool eof;
    /* the examiner thread's */
    acp_buf line;   /* this side's bytes since its last line end */
    pending *asked; /* its requests not answered yet */
} side;

/* On Linux the agent's bytes wait for the examiner in pipes of their own, a chain of them: tee(2)
 * puts them there without a copy, and the examiner reads them when it gets to them. Holding a
 * fast stream until the checks caught up cost the stream a third of its speed in fresh process
 * memory, and a tenth in a spool file: the copy was the cost (bench/RESULTS.md). */
typedef struct hold {
    int rd;   /* the read end; the relay's write end is closed once the pipe is full */
    int segs; /* segments still to be read from it */
    bool full;
} hold;

/* What was relayed, in the order it was read: queued before it is passed on, so a request is
 * examined before the answer it causes. */
typedef struct seg {
    struct seg *next;
    double t;
    size_t n;
    int from;
    bool eof;   /* the side's end: its last line, unterminated, is examined */
    hold *pipe; /* the bytes wait in this pipe; else in data */
    char data[];
} seg;

#define CHUNK      ((size_t)64 << 10)   /* one read */
#define HOLD_SIZE  (1 << 20)            /* a holding pipe's capacity, where the system allows it */
#define MAX_HOLDS  256                  /* then the agent's bytes are read and queued too */
#define QUEUE_MAX  ((size_t)256 << 20)  /* of bytes in memory: the relays wait beyond this */
#define DEFER_MIN  ((size_t)256 << 10)  /* a backlog this big is a flood: the checks wait */
#define DEFER_MAX  ((size_t)128 << 20)  /* beyond this the examiner no longer waits for a pause */
#define QUIET_NS   ((uint64_t)10000000) /* a pause: no read for 10 ms */
#define MAX_LAG_NS ((uint64_t)1000000000) /* the checks wait for a pause at most 1 s */
#define NAP_MS     5                      /* the examiner's, when it has caught up */

typedef struct tracer {
    uv_loop_t *loop;
    uv_process_t proc;
    side s[2];
    int wake[2];         /* written to end the relays: the agent is gone, the client's side too */
    uv_async_t ended[2]; /* a relay thread reached its side's end */
    uv_signal_t sigs[3];
    uv_timer_t linger; /* the client left and the agent does not exit */
    uint64_t start;
    FILE *out;
    chk_schema *schemas;              /* lenient; NULL: this build has none */
    json_t *agent_caps, *client_caps; /* from initialize */
    json_t *turns;                    /* sessionId -> number of prompts in flight */
    json_t *loading;                  /* sessionId -> number of loads / resumes in flight */
    json_t *answered;                 /* sessionId -> the id of its last answered prompt */
    bool exited;
    int64_t status;
    int term_signal;
    size_t findings;
    int closing;
    /* the queue and the examiner thread; mu guards what follows */
    uv_thread_t examiner;
    uv_mutex_t mu;
    uv_cond_t cv, room; /* the examiner's: something queued; the relays': there is room */
    seg *head, **tail;
    size_t queued;      /* bytes of the queue in memory */
    size_t chained;     /* bytes of the queue in holding pipes */
    int holds;          /* holding pipes open */
    bool asleep;        /* the examiner waits on cv */
    uint64_t last_read; /* uv_hrtime() of the relays' last read */
    bool stop;
    bool done;    /* the loop is ending: the relays' ended handles are closing */
    double seg_t; /* the time of the segment being examined */
} tracer;

static double now(tracer *t)
{
    return t->seg_t;
}

/* --- recording and findings ------------------------------------------------------------------ */

static void finding(tracer *t, int dir, const char *rule, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void finding(tracer *t, int dir, const char *rule, const char *fmt, ...)
{
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    t->findings++;
    json_t *j = json_pack("{s:f, s:s, s:s, s:s}", "t", now(t), "dir", who[dir], "rule", rule,
                          "finding", text);
    /* t to the microsecond, as the records have it, not jansson's 17 digits */
    char *line = j ? json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(12)) : NULL;
    if (line && t->out) fprintf(t->out, "%s\n", line);
    free(line);
    json_decref(j);
    fprintf(stderr, "acp trace: %s: %s\n", who[dir], text);
}

static void record(tracer *t, int dir, const char *msg, size_t n, bool json_ok)
{
    if (!t->out) return;
    fprintf(t->out, "{\"t\":%.6f,\"dir\":\"%s\",\"msg\":", now(t), who[dir]);
    if (json_ok) {
        fwrite(msg, 1, n, t->out);
    } else {
        /* Not JSON: kept as a string (its bytes, made valid UTF-8 and escaped). */
        json_t *s = json_stringn(msg, n);
        char *text = s ? json_dumps(s, JSON_ENCODE_ANY) : NULL;
        fputs(text ? text : "\"(not UTF-8)\"", t->out);
        free(text);
        json_decref(s);
    }
    fputs("}\n", t->out);
}

/* --- the protocol's rules -------------------------------------------------------------------- */

static pending *take(side *s, const char *id)
{
    for (pending **p = &s->asked; *p; p = &(*p)->next)
        if (!strcmp((*p)->id, id)) {
            pending *found = *p;
            *p = found->next;
            return found;
        }
    return NULL;
}

static void pending_free(pending *p)
{
    if (!p) return;
    free(p->id);
    free(p->method);
    free(p->session);
    free(p);
}

static void count(json_t *map, const char *key, int delta)
{
    if (!key) return;
    json_int_t n = json_integer_value(json_object_get(map, key)) + delta;
    json_object_set_new(map, key, json_integer(n > 0 ? n : 0));
}

static bool present(json_t *caps, const char *a, const char *b, const char *c)
{
    json_t *v = json_object_get(caps, a);
    if (b) v = json_object_get(v, b);
    if (c) v = json_object_get(v, c);
    return v && !json_is_null(v) && !json_is_false(v);
}

/* A method that needs the peer to have advertised a capability: true when it was not. */
static bool unadvertised(tracer *t, int dir, const char *m, const char **cap)
{
    static const struct {
        int dir;
        const char *method, *a, *b, *c;
    } gates[] = {
        {CLIENT, "session/load", "loadSession", NULL, NULL},
        {CLIENT, "session/list", "sessionCapabilities", "list", NULL},
        {CLIENT, "session/resume", "sessionCapabilities", "resume", NULL},
        {CLIENT, "session/close", "sessionCapabilities", "close", NULL},
        {CLIENT, "session/delete", "sessionCapabilities", "delete", NULL},
        {CLIENT, "session/fork", "sessionCapabilities", "fork", NULL},
        {CLIENT, "logout", "auth", "logout", NULL},
        {AGENT, "fs/read_text_file", "fs", "readTextFile", NULL},
        {AGENT, "fs/write_text_file", "fs", "writeTextFile", NULL},
        {AGENT, "terminal/create", "terminal", NULL, NULL},
        {AGENT, "terminal/output", "terminal", NULL, NULL},
        {AGENT, "terminal/release", "terminal", NULL, NULL},
        {AGENT, "terminal/wait_for_exit", "terminal", NULL, NULL},
        {AGENT, "terminal/kill", "terminal", NULL, NULL},
        {AGENT, "elicitation/create", "elicitation", NULL, NULL},
    };
    json_t *caps = dir == CLIENT ? t->agent_caps : t->client_caps;
    if (!caps) return false; /* before initialize: the schema check is all */
    for (size_t i = 0; i < sizeof gates / sizeof *gates; i++) {
        if (gates[i].dir != dir || strcmp(gates[i].method, m)) continue;
        *cap = gates[i].c ? gates[i].c : gates[i].b ? gates[i].b : gates[i].a;
        return !present(caps, gates[i].a, gates[i].b, gates[i].c);
    }
    return false;
}

/* The updates that belong to a prompt turn: they come before its answer (or in a load's replay). */
static bool turn_update(const char *kind)
{
    static const char *const kinds[] = {"agent_message_chunk", "agent_thought_chunk", "tool_call",
                                        "tool_call_update", "plan"};
    for (size_t i = 0; kind && i < sizeof kinds / sizeof *kinds; i++)
        if (!strcmp(kind, kinds[i])) return true;
    return false;
}

static void check_call(tracer *t, int dir, json_t *msg, const char *m, json_t *id)
{
    json_t *params = json_object_get(msg, "params");
    schema_kind kind = id ? SCHEMA_REQUEST : SCHEMA_NOTIFICATION;
    if (m[0] != '_') {
        const char *handler = dir == CLIENT ? "agent" : "client";
        bool unstable = false;
        if (!chk_schema_find(t->schemas, m, kind, &handler, &unstable)) {
            finding(t, dir, "method",
                    "%s '%s' is not a method of the protocol (extension methods start with '_')",
                    id ? "request" : "notification", m);
        } else if (strcmp(handler, "protocol") &&
                   strcmp(handler, dir == CLIENT ? "agent" : "client")) {
            finding(t, dir, "method", "'%s' is the %s's to send, not the %s's", m, who[!dir],
                    who[dir]);
        } else {
            char err[600];
            if (!chk_schema_method_check(t->schemas, m, kind, handler, params, err, sizeof err))
                finding(t, dir, "schema", "%s params%s: %s", m, unstable ? " (unstable)" : "", err);
        }
        const char *cap;
        if (unadvertised(t, dir, m, &cap))
            finding(t, dir, "capability", "%s was sent although the %s did not advertise %s", m,
                    who[!dir], cap);
    }
    const char *sid = json_string_value(json_object_get(params, "sessionId"));
    if (!strcmp(m, "session/update") && sid) {
        const char *k =
            json_string_value(json_object_get(json_object_get(params, "update"), "sessionUpdate"));
        json_t *last = json_object_get(t->answered, sid);
        if (turn_update(k) && last && !json_integer_value(json_object_get(t->turns, sid)) &&
            !json_integer_value(json_object_get(t->loading, sid))) {
            char *lid = json_dumps(last, JSON_ENCODE_ANY);
            finding(t, dir, "order",
                    "session/update (%s) for session %s after its prompt's answer (id %s)", k, sid,
                    lid ? lid : "?");
            free(lid);
        }
    }
    if (!id) return;
    char *idt = json_dumps(id, JSON_ENCODE_ANY | JSON_COMPACT);
    if (!idt) return;
    pending *dup = take(&t->s[dir], idt);
    if (dup) finding(t, dir, "id", "request id %s reused while %s is unanswered", idt, dup->method);
    pending_free(dup);
    pending *p = calloc(1, sizeof *p);
    if (!p) {
        free(idt);
        return;
    }
    *p = (pending){idt, strdup(m), sid ? strdup(sid) : NULL, now(t), t->s[dir].asked};
    t->s[dir].asked = p;
    if (!strcmp(m, "session/prompt")) count(t->turns, sid, 1);
    if (!strcmp(m, "session/load") || !strcmp(m, "session/resume")) count(t->loading, sid, 1);
    if (!strcmp(m, "initialize") && dir == CLIENT) {
        json_decref(t->client_caps);
        t->client_caps = json_deep_copy(json_object_get(params, "clientCapabilities"));
        if (!t->client_caps) t->client_caps = json_object();
    }
}

static void check_response(tracer *t, int dir, json_t *msg, json_t *id)
{
    char *idt = json_dumps(id, JSON_ENCODE_ANY | JSON_COMPACT);
    if (!idt) return;
    pending *p = take(&t->s[!dir], idt);
    json_t *result = json_object_get(msg, "result"), *error = json_object_get(msg, "error");
    if (!p) {
        if (!json_is_null(id)) finding(t, dir, "id", "a response to an unknown id %s", idt);
        free(idt);
        return;
    }
    free(idt);
    if (error) {
        if (!json_is_integer(json_object_get(error, "code")) ||
            !json_is_string(json_object_get(error, "message")))
            finding(t, dir, "schema", "the error answering %s lacks an integer code or a message",
                    p->method);
    } else if (p->method[0] != '_') {
        const char *handler = dir == AGENT ? "agent" : "client";
        bool unstable = false;
        char err[600];
        if (chk_schema_find(t->schemas, p->method, SCHEMA_RESPONSE, &handler, &unstable) &&
            !chk_schema_method_check(t->schemas, p->method, SCHEMA_RESPONSE, handler, result, err,
                                     sizeof err))
            finding(t, dir, "schema", "%s result%s: %s", p->method, unstable ? " (unstable)" : "",
                    err);
    }
    if (!strcmp(p->method, "session/prompt")) {
        count(t->turns, p->session, -1);
        if (p->session) json_object_set_new(t->answered, p->session, json_deep_copy(id));
    }
    if (!strcmp(p->method, "session/load") || !strcmp(p->method, "session/resume"))
        count(t->loading, p->session, -1);
    if (!strcmp(p->method, "initialize") && dir == AGENT && json_is_object(result)) {
        json_decref(t->agent_caps);
        t->agent_caps = json_deep_copy(json_object_get(result, "agentCapabilities"));
        if (!t->agent_caps) t->agent_caps = json_object();
    }
    pending_free(p);
}

static void examine(tracer *t, int dir, const char *line, size_t n)
{

    if (n && line[n - 1] == '\r') n--;
    size_t i = 0;
    while (i < n && (line[i] == ' ' || line[i] == '\t')) i++;
    if (i == n) return;
    json_error_t je;
    json_t *msg = json_loadb(line, n, JSON_DECODE_ANY, &je);
    record(t, dir, line, n, msg != NULL);
    if (!msg) {
        finding(t, dir, "malformed", "not JSON: %s", je.text);
        return;
    }
    json_t *id = json_object_get(msg, "id");
    const char *m = json_string_value(json_object_get(msg, "method"));
    json_t *v = json_object_get(msg, "jsonrpc");
    if (!json_is_object(msg) || !json_is_string(v) || strcmp(json_string_value(v), "2.0")) {
        finding(t, dir, "malformed", "%s",
                json_is_object(msg) ? "not JSON-RPC 2.0 (jsonrpc is not \"2.0\")"
                                    : "not a JSON-RPC message (an object)");
    } else if (id && !json_is_string(id) && !json_is_integer(id) && !json_is_null(id)) {
        finding(t, dir, "malformed", "an id that is neither a string, an integer nor null");
    } else if (m) {
        check_call(t, dir, msg, m, id);
    } else if (json_object_get(msg, "method")) {
        finding(t, dir, "malformed", "a method that is not a string");
    } else if (!id || !json_object_get(msg, "result") == !json_object_get(msg, "error")) {
        finding(t, dir, "malformed", "neither a request, a notification nor a response");
    } else {
        check_response(t, dir, msg, id);
    }
    json_decref(msg);
}

/* --- the queue and the examiner thread ---------------------------------------------------- */

/* Queues a segment whose bytes are in its holding pipe, or in memory (then waiting for room
 * beyond QUEUE_MAX). Under mu: segments are in the order they were read, times only grow. */
static void queue(tracer *t, seg *g)
{
    uv_mutex_lock(&t->mu);
    if (g->pipe) {
        g->pipe->segs++;
        t->chained += g->n;
    } else {
        while (t->queued > QUEUE_MAX && !t->stop) uv_cond_wait(&t->room, &t->mu);
        t->queued += g->n;
    }
    t->last_read = uv_hrtime();
    g->t = (double)(t->last_read - t->start) / 1e9;
    *t->tail = g;
    t->tail = &g->next;
    if (t->asleep) uv_cond_signal(&t->cv);
    uv_mutex_unlock(&t->mu);
}

/* Queues a copy of n bytes (and the side's end when eof). */
static void queue_copy(tracer *t, int from, bool eof, const char *p, size_t n)
{
    seg *g = malloc(sizeof *g + n);
    if (!g) return; /* the trace misses it; the relay does not */
    *g = (seg){.n = n, .from = from, .eof = eof};
    if (n) memcpy(g->data, p, n);
    queue(t, g);
}

static void hold_release(tracer *t, hold *l)
{
    if (l->segs || !l->full) return;
    close(l->rd);
    free(l);
    t->holds--;
    uv_cond_broadcast(&t->room);
}

static void examine_seg(tracer *t, const seg *g, const char *data)
{
    side *s = &t->s[g->from];
    t->seg_t = g->t;
    if (g->eof) {
        if (s->line.len) examine(t, g->from, s->line.data, s->line.len);
        s->line.len = 0;
        return;
    }
    const char *p = data, *e = p + g->n;
    while (p < e) {
        const char *nl = memchr(p, '\n', (size_t)(e - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(e - p);
        if (!nl || s->line.len) {
            acp_buf_append(&s->line, p, n);
            if (nl) {
                examine(t, g->from, s->line.data, s->line.len);
                s->line.len = 0;
                acp_buf_shrink(&s->line, ACP_BUF_KEEP);
            }
        } else {
            examine(t, g->from, p, n);
        }
        p += n + (nl ? 1 : 0);
    }
}

/* Takes the queue's first segment and examines it, with mu held (released meanwhile). */
static void examine_next(tracer *t, acp_buf *buf)
{
    seg *g = t->head;
    if (!(t->head = g->next)) t->tail = &t->head;
    uv_mutex_unlock(&t->mu);
    const char *data = g->data;
    if (g->pipe) { /* its bytes are the next g->n in its holding pipe */
        buf->len = 0;
        size_t got = 0;
        if (!acp_buf_reserve(buf, g->n))
            while (got < g->n) {
                ssize_t r = read(g->pipe->rd, buf->data + got, g->n - got);
                if (r < 0 && errno == EINTR) continue;
                if (r <= 0) break;
                got += (size_t)r;
            }
        data = got == g->n ? buf->data : NULL;
    }
    if (data) examine_seg(t, g, data);
    uv_mutex_lock(&t->mu);
    if (g->pipe) {
        t->chained -= g->n;
        g->pipe->segs--;
        hold_release(t, g->pipe);
    } else {
        t->queued -= g->n;
        uv_cond_broadcast(&t->room);
    }
    free(g);
}

static void examiner(void *arg)
{
    tracer *t = arg;
    /* Behind everything else for the CPU (SCHED_IDLE: it runs when a core would idle), and
     * while bytes are flowing it waits for a pause: the relay and the peers it stands between
     * are not slowed by the checks, which catch up when the stream pauses or ends. */
    struct sched_param idle = {0};
    if (sched_setscheduler((pid_t)gettid(), SCHED_IDLE, &idle))
        setpriority(PRIO_PROCESS, (id_t)gettid(), 19);
    acp_buf buf = {0};
    bool napped = false, behind = false; /* behind: deferred long enough, no more until caught up */
    uint64_t deferred = 0;               /* since when (uv_hrtime()) */
    uv_mutex_lock(&t->mu);
    while (!t->stop) { /* then the rest is the main thread's (run_trace) */
        if (!t->head) {
            /* Caught up: the file is made current, and then a nap in which the relays do not
             * wake us (woken for every read, this thread cost a /stream more than its checks
             * did). Once a nap brought nothing, it sleeps until the next read. */
            behind = false;
            deferred = 0;
            uv_mutex_unlock(&t->mu);
            if (t->out) fflush(t->out);
            if (!napped) uv_sleep(NAP_MS);
            uv_mutex_lock(&t->mu);
            t->asleep = napped;
            while (napped && !t->head && !t->stop) uv_cond_wait(&t->cv, &t->mu);
            t->asleep = false;
            napped = !napped;
            continue;
        }
        napped = false;
        uint64_t now_ns = uv_hrtime();
        if (!deferred) deferred = now_ns;
        size_t backlog = t->queued + t->chained;
        if (!behind && backlog >= DEFER_MIN && backlog < DEFER_MAX && t->holds < MAX_HOLDS / 2 &&
            now_ns - t->last_read < QUIET_NS) {
            /* A flood: the checks wait for a pause, for at most MAX_LAG_NS. A few messages
             * (a conversation, a model's tokens) are examined at once: the file is current
             * when the client stops, the way an editor stops its agent. */
            behind = now_ns - deferred > MAX_LAG_NS;
            uv_mutex_unlock(&t->mu);
            uv_sleep((unsigned)(QUIET_NS / 1000000));
            uv_mutex_lock(&t->mu);
            continue;
        }
        examine_next(t, &buf);
    }
    uv_mutex_unlock(&t->mu);
    acp_buf_free(&buf);
}

/* --- the relay ------------------------------------------------------------------------------- */

/* Until fd is ready for events: false when the relays are being ended instead. Blocking or
 * not, whatever the client gave us, every fd works the same. */
static bool ready(side *s, int fd, short events)
{
    struct pollfd p[2] = {{fd, events, 0}, {s->t->wake[0], POLLIN, 0}};
    while (poll(p, 2, -1) < 0)
        if (errno != EINTR) return false;
    return !p[1].revents;
}

static void write_on(side *s, const char *p, size_t n)
{
    while (n && !s->gone) {
        ssize_t w = write(s->out, p, n);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
        } else if (w < 0 && errno == EAGAIN) {
            if (!ready(s, s->out, POLLOUT)) return;
        } else if (w < 0 && errno != EINTR) {
            s->gone = true; /* EPIPE: the reader is gone; its peer is still heard to its end */
        }
    }
}

/* One read: queued (a copy), then written on. false at the side's end. */
static bool relay_read(side *s, char *buf)
{
    ssize_t n = read(s->in, buf, CHUNK);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
    if (n <= 0) return false;
    queue_copy(s->t, s->from, false, buf, (size_t)n);
    write_on(s, buf, (size_t)n);
    return true;
}

#ifdef __linux__
/* n bytes at the head of s->in go on to s->out: moved by splice(2), or read and written where
 * s->out cannot take spliced bytes (a terminal), or read and dropped when its reader left. */
static void pass_on(side *s, size_t n, char *buf)
{
    while (n) {
        ssize_t m;
        if (!s->gone && !s->copy) {
            m = splice(s->in, NULL, s->out, NULL, n, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
            int err = m < 0 ? errno : 0;
            if (err == EAGAIN && !ready(s, s->out, POLLOUT)) return;
            if (err == EINVAL) s->copy = true;
            if (err && err != EAGAIN && err != EINTR && err != EINVAL) s->gone = true; /* EPIPE */
            if (err) continue;
        } else {
            m = read(s->in, buf, n < CHUNK ? n : CHUNK);
            if (m < 0 && errno == EINTR) continue;
            if (m > 0) write_on(s, buf, (size_t)m);
        }
        if (m <= 0) return;
        n -= (size_t)m;
    }
}

/* The relay's holding pipe is full (or the relay is done): no more goes in. */
static void hold_retire(tracer *t, side *s)
{
    if (!s->hold) return;
    close(s->hold_wr);
    uv_mutex_lock(&t->mu);
    s->hold->full = true;
    hold_release(t, s->hold);
    uv_mutex_unlock(&t->mu);
    s->hold = NULL;
}

/* A new holding pipe for the relay, unless MAX_HOLDS are open or the system says no (file
 * descriptors, the user's pipe quota): then bytes are read and queued. */
static void hold_open(tracer *t, side *s)
{
    int fd[2];
    uv_mutex_lock(&t->mu);
    hold *l = t->holds < MAX_HOLDS ? calloc(1, sizeof *l) : NULL;
    bool ok = l && !pipe2(fd, O_CLOEXEC);
    /* Beyond the user's pipe quota a new pipe holds 8K and cannot grow: not worth keeping. */
    if (ok && fcntl(fd[1], F_SETPIPE_SZ, HOLD_SIZE) < 0 &&
        fcntl(fd[1], F_GETPIPE_SZ) < (int)CHUNK) {
        close(fd[0]);
        close(fd[1]);
        ok = false;
    }
    if (ok) {
        l->rd = fd[0];
        s->hold_wr = fd[1];
        s->hold = l;
        t->holds++;
    } else {
        free(l);
    }
    uv_mutex_unlock(&t->mu);
}

/* The agent's bytes: duplicated into a holding pipe by tee(2) and queued there, then passed on. */
static void relay_tee(side *s, char *buf)
{
    tracer *t = s->t;
    while (ready(s, s->in, POLLIN)) {
        if (!s->hold) hold_open(t, s);
        if (!s->hold) { /* no holding pipe to be had: a copy, until the examiner frees some */
            if (!relay_read(s, buf)) break;
            continue;
        }
        ssize_t n = tee(s->in, s->hold_wr, CHUNK, SPLICE_F_NONBLOCK);
        if (n < 0 &&
            errno == EAGAIN) { /* there are bytes to read (POLLIN): the holding pipe is full */
            hold_retire(t, s);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        seg *g = malloc(sizeof *g);
        if (g) {
            *g = (seg){.n = (size_t)n, .from = AGENT, .pipe = s->hold};
            queue(t, g);
        }
        pass_on(s, (size_t)n, buf);
        if (!g) { /* unqueued: its bytes would be read as the next one's: the pipe goes */
            hold_retire(t, s);
        }
    }
    hold_retire(t, s);
}
#endif

static void relay(void *arg)
{
    side *s = arg;
    tracer *t = s->t;
    char *buf = malloc(CHUNK);
#ifdef __linux__
    if (buf && s->from == AGENT)
        relay_tee(s, buf);
    else
#endif
        while (buf && ready(s, s->in, POLLIN) && relay_read(s, buf)) {}
    free(buf);
    /* The side's end: passed on as EOF (the agent's stdin, our stdout) and examined. */
    close(s->out);
    s->out = -1;
    queue_copy(t, s->from, true, NULL, 0);
    uv_mutex_lock(&t->mu);
    if (!t->done) uv_async_send(&t->ended[s->from]); /* after done, the handle is closing */
    uv_mutex_unlock(&t->mu);
}

static void closed(uv_handle_t *h)
{
}

static void maybe_end(tracer *t);

static void lingered(uv_timer_t *h)
{
    tracer *t = h->data;
    /* The client is gone and the agent did not take EOF as its cue: its group is ended. */
    if (!t->exited) uv_kill(-t->proc.pid, t->closing++ ? SIGKILL : SIGTERM);
    if (!t->exited) uv_timer_start(h, lingered, 2000, 0);
}

static void side_ended(uv_async_t *h)
{
    tracer *t = h->data;
    int from = h == &t->ended[CLIENT] ? CLIENT : AGENT;
    if (t->s[from].eof) return;
    t->s[from].eof = true;
    if (from == CLIENT) uv_timer_start(&t->linger, lingered, 10000, 0);
    maybe_end(t);
}

static void on_exit_cb(uv_process_t *p, int64_t status, int term_signal)
{
    tracer *t = p->data;
    t->exited = true;
    t->status = status;
    t->term_signal = term_signal;
    uv_kill(-p->pid, SIGKILL); /* what the agent left in its group goes with it */
    maybe_end(t);
}

static void maybe_end(tracer *t)
{
    /* Done when the agent has exited and its output is all relayed (its relay writes all it
     * read before it ends, so a slow client still gets the agent's last messages). */
    if (!t->exited || !t->s[AGENT].eof || t->closing < 0) return;
    t->closing = -1;
    uv_mutex_lock(&t->mu);
    t->done = true;
    uv_mutex_unlock(&t->mu);
    if (write(t->wake[1], "", 1) < 0) { /* ends the client's relay too */
    }
    uv_handle_t *hs[] = {(uv_handle_t *)&t->proc,     (uv_handle_t *)&t->linger,
                         (uv_handle_t *)&t->ended[0], (uv_handle_t *)&t->ended[1],
                         (uv_handle_t *)&t->sigs[0],  (uv_handle_t *)&t->sigs[1],
                         (uv_handle_t *)&t->sigs[2]};
    for (size_t i = 0; i < sizeof hs / sizeof *hs; i++)
        if (!uv_is_closing(hs[i])) uv_close(hs[i], closed);
}

static void on_signal(uv_signal_t *h, int signum)
{
    tracer *t = h->data;
    if (!t->exited) uv_kill(-t->proc.pid, signum); /* the agent decides; we relay to the end */
}

static void close_open(uv_handle_t *h, void *arg)
{
    if (!uv_is_closing(h)) uv_close(h, NULL);
}

static int run_trace(app *a)
{
    if (a->dashdash < 0 || a->nargs == a->dashdash || a->dashdash != 0) {
        fprintf(stderr, "acp: trace needs the agent's command after '--' (acp trace [--out FILE] "
                        "-- CMD ARGS...); see 'acp trace --help'\n");
        return EXIT_USAGE;
    }
    tracer t = {0};
    const char *path = a->trace_out ? a->trace_out : "acp-trace.jsonl";
    if (!(t.out = fopen(path, "ae"))) {
        fprintf(stderr, "acp: trace: cannot open '%s': %s\n", path, strerror(errno));
        return EXIT_USAGE;
    }
    setvbuf(t.out, NULL, _IOFBF, 1 << 16);
    const char *why_schema;
    if (!(t.schemas = chk_schema_load(false, &why_schema)))
        fprintf(stderr, "acp: trace: %s: messages are not checked against the schema\n",
                why_schema);

    t.turns = json_object();
    t.loading = json_object();
    t.answered = json_object();
    uv_loop_t loop;
    uv_loop_init(&loop);
    t.loop = &loop;
    t.start = uv_hrtime();
    uv_mutex_init(&t.mu);
    uv_cond_init(&t.cv);
    uv_cond_init(&t.room);
    t.tail = &t.head;
    uv_thread_create(&t.examiner, examiner, &t);
    /* The agent's stdin and stdout: pipes of our own (libuv would make socketpairs). */
    uv_file up[2] = {-1, -1}, down[2] = {-1, -1};
    int rc = uv_pipe(t.wake, 0, 0);
    if (!rc) rc = uv_pipe(up, 0, 0);
    if (!rc) rc = uv_pipe(down, 0, 0);
    uv_stdio_container_t io[3] = {{.flags = UV_INHERIT_FD, .data.fd = up[0]},
                                  {.flags = UV_INHERIT_FD, .data.fd = down[1]},
                                  {.flags = UV_INHERIT_FD, .data.fd = 2}};
    char **argv = a->args + a->dashdash;
    uv_process_options_t po = {.exit_cb = on_exit_cb,
                               .file = argv[0],
                               .args = argv,
                               .flags = UV_PROCESS_DETACHED, /* its own group, ended with it */
                               .stdio_count = 3,
                               .stdio = io};
    t.proc.data = &t;
    if (!rc) rc = uv_spawn(&loop, &t.proc, &po);
    close(up[0]); /* the agent's ends are its own now; ours go when the relays are done */
    close(down[1]);
    if (rc) {
        close(up[1]);
        close(down[0]);
    }
    int status = EXIT_OK;
    if (rc) {
        fprintf(stderr, "acp: trace: cannot run '%s': %s\n", argv[0], uv_strerror(rc));
        status = EXIT_GONE;
        uv_walk(&loop, close_open, NULL); /* the process handle too, as libuv asks */
    } else {
        t.s[CLIENT] = (side){.t = &t, .from = CLIENT, .in = 0, .out = up[1]};
        t.s[AGENT] = (side){.t = &t, .from = AGENT, .in = down[0], .out = 1};
        uv_timer_init(&loop, &t.linger);
        t.linger.data = &t;
        int signums[3] = {SIGTERM, SIGINT, SIGHUP};
        for (int i = 0; i < 3; i++) {
            uv_signal_init(&loop, &t.sigs[i]);
            t.sigs[i].data = &t;
            uv_signal_start(&t.sigs[i], on_signal, signums[i]);
        }
        /* Room for the holding pipes, each a file descriptor: raised after the spawn, so that
         * the agent keeps the limit it was given. */
        struct rlimit nofile;
        if (!getrlimit(RLIMIT_NOFILE, &nofile) && nofile.rlim_cur < nofile.rlim_max &&
            nofile.rlim_cur < 4 * MAX_HOLDS) {
            nofile.rlim_cur = nofile.rlim_max < 4 * MAX_HOLDS ? nofile.rlim_max : 4 * MAX_HOLDS;
            (void)setrlimit(RLIMIT_NOFILE, &nofile);
        }
        for (int d = 0; d < 2; d++) {
            uv_async_init(&loop, &t.ended[d], side_ended);
            t.ended[d].data = &t;
            uv_thread_create(&t.s[d].relay, relay, &t.s[d]);
        }
    }
    uv_run(&loop, UV_RUN_DEFAULT);
    if (!rc) {
        uv_thread_join(&t.s[CLIENT].relay);
        uv_thread_join(&t.s[AGENT].relay);
        close(down[0]);
    }
    for (int i = 0; i < 2; i++)
        if (t.wake[i] > 0) close(t.wake[i]);
    uv_loop_close(&loop);
    uv_mutex_lock(&t.mu);
    t.stop = true; /* everything relayed is queued: the examiner ends after its segment */
    uv_cond_broadcast(&t.cv);
    uv_cond_broadcast(&t.room);
    uv_mutex_unlock(&t.mu);
    uv_thread_join(&t.examiner);
    /* What is left is examined here, at our own priority: on a busy machine the idle-class
     * examiner could take long, and the client may be waiting for its agent to end. */
    acp_buf buf = {0};
    uv_mutex_lock(&t.mu);
    while (t.head) examine_next(&t, &buf);
    uv_mutex_unlock(&t.mu);
    acp_buf_free(&buf);
    uv_mutex_destroy(&t.mu);
    uv_cond_destroy(&t.cv);
    uv_cond_destroy(&t.room);
    if (!rc) status = t.term_signal ? 128 + t.term_signal : (int)t.status;
    for (int d = 0; d < 2; d++) {
        acp_buf_free(&t.s[d].line);
        for (pending *p = t.s[d].asked, *next; p; p = next) {
            next = p->next;
            pending_free(p);
        }
    }
    if (t.findings)
        fprintf(stderr, "acp trace: %zu finding(s), recorded in %s\n", t.findings, path);
    fclose(t.out);
    chk_schema_free(t.schemas);
    json_decref(t.agent_caps);
    json_decref(t.client_caps);
    json_decref(t.turns);
    json_decref(t.loading);
    json_decref(t.answered);
    return status;
}

/* --- acp trace show ----------------------------------------------------------------------------
 */

typedef struct mstat {
    char name[160]; /* "client session/prompt" */
    size_t calls, notes, errors;
    double *lat; /* seconds, of the answered calls */
    size_t nlat;
} mstat;

static int by_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static mstat *stat_of(mstat **v, size_t *n, const char *dir, const char *method)
{
    char name[160];
    snprintf(name, sizeof name, "%-6s %s", dir, method);
    for (size_t i = 0; i < *n; i++)
        if (!strcmp((*v)[i].name, name)) return &(*v)[i];
    mstat *grown = realloc(*v, (*n + 1) * sizeof *grown);
    if (!grown) return NULL;
    *v = grown;
    mstat *s = &grown[(*n)++];
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", name);
    return s;
}

static int show(const char *path)
{
    FILE *f = fopen(path, "re");
    if (!f) {
        fprintf(stderr, "acp: trace show: cannot open '%s': %s\n", path, strerror(errno));
        return EXIT_USAGE;
    }
    mstat *st = NULL;
    size_t nst = 0, msgs[2] = {0, 0}, nfind = 0, bad = 0;
    json_t *asked = json_object();  /* "dir id" -> [method, t] */
    json_t *errors = json_object(); /* "method code message" -> count */
    json_t *finds = json_array();
    double last = 0;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, f)) > 0) {
        json_t *rec = json_loadb(line, (size_t)n, 0, NULL);
        const char *dir = json_string_value(json_object_get(rec, "dir"));
        double t = json_number_value(json_object_get(rec, "t"));
        if (!rec || !dir) {
            bad++;
            json_decref(rec);
            continue;
        }
        int d = !strcmp(dir, "agent") ? AGENT : CLIENT;
        if (t > last) last = t;
        json_t *fd = json_object_get(rec, "finding");
        if (fd) {
            nfind++;
            json_array_append_new(finds,
                                  json_sprintf("%9.3f %-6s %s", t, dir, json_string_value(fd)));
            json_decref(rec);
            continue;
        }
        msgs[d]++;
        json_t *msg = json_object_get(rec, "msg"), *id = json_object_get(msg, "id");
        const char *m = json_string_value(json_object_get(msg, "method"));
        char *idt = id ? json_dumps(id, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
        char key[300];
        if (m) {
            mstat *s = stat_of(&st, &nst, dir, m);
            if (s && id) s->calls++;
            if (s && !id) s->notes++;
            if (idt) {
                snprintf(key, sizeof key, "%d %s", d, idt);
                json_object_set_new(asked, key, json_pack("[s, f]", m, t));
            }
        } else if (idt) {
            snprintf(key, sizeof key, "%d %s", !d, idt);
            json_t *q = json_object_get(asked, key);
            const char *qm = json_string_value(json_array_get(q, 0));
            if (qm) {
                mstat *s = stat_of(&st, &nst, who[!d], qm);
                json_t *err = json_object_get(msg, "error");
                if (s && err) {
                    s->errors++;
                    char ek[600];
                    snprintf(ek, sizeof ek, "%s %lld %s", qm,
                             (long long)json_integer_value(json_object_get(err, "code")),
                             json_string_value(json_object_get(err, "message"))
                                 ? json_string_value(json_object_get(err, "message"))
                                 : "");
                    count(errors, ek, 1);
                }
                double *grown = s ? realloc(s->lat, (s->nlat + 1) * sizeof *grown) : NULL;
                if (grown) {
                    s->lat = grown;
                    s->lat[s->nlat++] = t - json_number_value(json_array_get(q, 1));
                }
                json_object_del(asked, key);
            }
        }
        free(idt);
        json_decref(rec);
    }
    free(line);
    fclose(f);
    printf("%s: %zu messages (client %zu, agent %zu) over %.3f s\n", path, msgs[0] + msgs[1],
           msgs[0], msgs[1], last);
    if (bad) printf("%zu lines that are not trace records\n", bad);
    printf("\nmethods (sender, method: requests, notifications, errors; latency of the answers in "
           "ms: min, median, max)\n");
    for (size_t i = 0; i < nst; i++) {
        mstat *s = &st[i];
        printf("  %-40s %6zu %6zu %6zu", s->name, s->calls, s->notes, s->errors);
        if (s->nlat) {
            qsort(s->lat, s->nlat, sizeof *s->lat, by_double);
            printf("   %9.3f %9.3f %9.3f", s->lat[0] * 1e3, s->lat[s->nlat / 2] * 1e3,
                   s->lat[s->nlat - 1] * 1e3);
        }
        if (s->calls > s->nlat) printf("   (%zu unanswered)", s->calls - s->nlat);
        printf("\n");
        free(s->lat);
    }
    free(st);
    const char *k;
    json_t *v;
    printf("\nerrors: %s\n", json_object_size(errors) ? "" : "none");
    json_object_foreach(errors, k, v) printf("  %5lld x %s\n", (long long)json_integer_value(v), k);
    printf("\nfindings: %zu\n", nfind);
    size_t i;
    json_array_foreach(finds, i, v) printf("  %s\n", json_string_value(v));
    json_decref(asked);
    json_decref(errors);
    json_decref(finds);
    return nfind ? EXIT_AGENT : EXIT_OK;
}

int cmd_trace(app *a)
{
    if (a->dashdash != 0 && a->nargs >= 1 && !strcmp(a->args[0], "show")) {
        if (a->nargs != 2) {
            fprintf(stderr, "acp: usage: acp trace show FILE\n");
            return EXIT_USAGE;
        }
        return show(a->args[1]);
    }
    return run_trace(a);
}
