/* SPDX-License-Identifier: Apache-2.0 */
/* acp trace: a relay between a client and its agent that passes every byte through unchanged,
 * records each message (one JSON object per line: t, dir, msg) and checks it against the schema
 * and the protocol's ordering rules (findings: lines with a finding member, and stderr); and
 * acp trace show, which summarises a recording. The bytes are forwarded before they are looked
 * at, so the checks cost the relayed stream no latency. */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acp/json.h"
#include "tools/acp/app.h"
#include "tools/check/schema.h"

#define HIGH_WATER ((size_t)4 << 20) /* queued toward one side before reading the other stops */

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

typedef struct side {
    uv_pipe_t in;    /* what this side writes: our stdin (client), the agent's stdout */
    uv_stream_t *to; /* where it goes: the agent's stdin, our stdout */
    bool paused, eof;
    /* the examiner thread's */
    acp_buf line;   /* this side's bytes since its last line end */
    pending *asked; /* its requests not answered yet */
} side;

/* What was relayed, handed to the examiner thread: the relay never waits for the checks. */
typedef struct chunk {
    struct chunk *next;
    int dir;
    bool eof; /* the side's end: its last line, unterminated, is examined */
    double t;
    size_t n;
    char data[];
} chunk;

#define QUEUE_MAX ((size_t)256 << 20) /* the relay waits beyond this: the examiner is behind */

typedef struct tracer {
    uv_loop_t *loop;
    uv_process_t proc;
    uv_pipe_t child_in, our_out;
    side s[2];
    uv_signal_t sigs[3];
    uv_timer_t linger; /* the client left and the agent does not exit */
    uint64_t start;
    FILE *out;
    chk_schema *schemas;              /* lenient; NULL: this build has none */
    json_t *agent_caps, *client_caps; /* from initialize */
    json_t *turns;                    /* sessionId -> number of prompts in flight */
    json_t *loading;                  /* sessionId -> number of loads / resumes in flight */
    json_t *answered;                 /* sessionId -> the id of its last answered prompt */
    bool exited, out_flushed;
    int64_t status;
    int term_signal;
    size_t findings;
    int closing;
    /* the examiner thread and its queue */
    uv_thread_t examiner;
    uv_mutex_t mu;
    uv_cond_t cv;
    chunk *head, **tail;
    size_t queued;
    bool stop;
    double chunk_t; /* the time of the chunk being examined */
} tracer;

static double now(tracer *t)
{
    return t->chunk_t;
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
    char *line = j ? json_dumps(j, JSON_COMPACT) : NULL;
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

/* --- the examiner thread ------------------------------------------------------------------- */

static void enqueue(tracer *t, int dir, bool eof, const char *p, size_t n)
{
    chunk *c = malloc(sizeof *c + n);
    if (!c) return; /* the trace misses it; the relay does not */
    *c = (chunk){NULL, dir, eof, (double)(uv_hrtime() - t->start) / 1e9, n};
    if (n) memcpy(c->data, p, n);
    uv_mutex_lock(&t->mu);
    while (t->queued > QUEUE_MAX && !t->stop) uv_cond_wait(&t->cv, &t->mu);
    *t->tail = c;
    t->tail = &c->next;
    t->queued += n;
    uv_cond_broadcast(&t->cv);
    uv_mutex_unlock(&t->mu);
}

static void examine_chunk(tracer *t, chunk *c)
{
    side *s = &t->s[c->dir];
    t->chunk_t = c->t;
    if (c->eof) {
        if (s->line.len) examine(t, c->dir, s->line.data, s->line.len);
        s->line.len = 0;
        return;
    }
    const char *p = c->data, *e = p + c->n;
    while (p < e) {
        const char *nl = memchr(p, '\n', (size_t)(e - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(e - p);
        if (!nl || s->line.len) {
            acp_buf_append(&s->line, p, n);
            if (nl) {
                examine(t, c->dir, s->line.data, s->line.len);
                s->line.len = 0;
                acp_buf_shrink(&s->line, ACP_BUF_KEEP);
            }
        } else {
            examine(t, c->dir, p, n);
        }
        p += n + (nl ? 1 : 0);
    }
}

static void examiner(void *arg)
{
    tracer *t = arg;
    /* Behind everything else for the CPU (SCHED_IDLE: it runs when a core would idle): the
     * relay and the peers it stands between are never slowed by the checks, which catch up
     * when the stream pauses or ends. */
    struct sched_param idle = {0};
    if (sched_setscheduler((pid_t)gettid(), SCHED_IDLE, &idle))
        setpriority(PRIO_PROCESS, (id_t)gettid(), 19);
    uv_mutex_lock(&t->mu);
    for (;;) {
        while (!t->head && !t->stop) uv_cond_wait(&t->cv, &t->mu);
        chunk *c = t->head;
        if (!c || t->stop) break; /* the rest is the main thread's (run_trace) */
        if (!(t->head = c->next)) t->tail = &t->head;
        t->queued -= c->n;
        uv_cond_broadcast(&t->cv);
        uv_mutex_unlock(&t->mu);
        examine_chunk(t, c);
        free(c);
        uv_mutex_lock(&t->mu);
        if (!t->head && t->out) fflush(t->out); /* caught up: the file is current */
    }
    uv_mutex_unlock(&t->mu);
}

/* --- the relay ------------------------------------------------------------------------------- */

typedef struct wreq {
    uv_write_t req;
    tracer *t;
    int from;
    char data[];
} wreq;

static void on_read(uv_stream_t *h, ssize_t nread, const uv_buf_t *buf);

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    static char bytes[65536]; /* consumed (copied) before the next read */
    *buf = uv_buf_init(bytes, sizeof bytes);
}

static void maybe_end(tracer *t);

static void written(uv_write_t *w, int status)
{
    wreq *r = (wreq *)w;
    side *s = &r->t->s[r->from];
    if (s->paused && !s->eof && s->to && uv_stream_get_write_queue_size(s->to) < HIGH_WATER / 4) {
        s->paused = false;
        uv_read_start((uv_stream_t *)&s->in, on_alloc, on_read);
    }
    free(r);
}

static void closed(uv_handle_t *h)
{
}

/* EOF passed on. Our stdout's, once all that was queued is written: then it may close. */
static void shut(uv_shutdown_t *req, int status)
{
    tracer *t = req->handle->data;
    if (req->handle == (uv_stream_t *)&t->our_out) {
        t->out_flushed = true;
        if (t->closing < 0 && !uv_is_closing((uv_handle_t *)&t->our_out))
            uv_close((uv_handle_t *)&t->our_out, closed);
    }
    free(req);
}

static void lingered(uv_timer_t *h)
{
    tracer *t = h->data;
    /* The client is gone and the agent did not take EOF as its cue: its group is ended. */
    if (!t->exited) uv_kill(-t->proc.pid, t->closing++ ? SIGKILL : SIGTERM);
    if (!t->exited) uv_timer_start(h, lingered, 2000, 0);
}

static void side_eof(tracer *t, int from)
{
    side *s = &t->s[from];
    if (s->eof) return;
    s->eof = true;
    uv_read_stop((uv_stream_t *)&s->in);
    enqueue(t, from, true, NULL, 0);
    if (s->to && !uv_is_closing((uv_handle_t *)s->to)) {
        uv_shutdown_t *req = malloc(sizeof *req);
        if (!req || uv_shutdown(req, s->to, shut)) { /* EOF to the other side */
            free(req);
            if (s->to == (uv_stream_t *)&t->our_out) t->out_flushed = true;
        }
    }
    if (from == CLIENT) uv_timer_start(&t->linger, lingered, 10000, 0);
    maybe_end(t);
}

static void on_read(uv_stream_t *h, ssize_t nread, const uv_buf_t *buf)
{
    tracer *t = h->data;
    int from = h == (uv_stream_t *)&t->s[CLIENT].in ? CLIENT : AGENT;
    side *s = &t->s[from];
    if (nread < 0) {
        side_eof(t, from);
        return;
    }
    if (!nread) return;
    /* First the bytes go on, as they came. */
    wreq *w = malloc(sizeof *w + (size_t)nread);
    if (w) {
        memcpy(w->data, buf->base, (size_t)nread);
        w->t = t;
        w->from = from;
        uv_buf_t b = uv_buf_init(w->data, (unsigned)nread);
        if (uv_write(&w->req, s->to, &b, 1, written)) free(w);
        if (uv_stream_get_write_queue_size(s->to) >= HIGH_WATER) {
            s->paused = true;
            uv_read_stop(h);
        }
    }
    /* Then they are looked at, by the examiner thread. */
    enqueue(t, from, false, buf->base, (size_t)nread);
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
    /* Done when the agent has exited and its output is all relayed. */
    if (!t->exited || !t->s[AGENT].eof || t->closing < 0) return;
    t->closing = -1;
    uv_handle_t *hs[] = {(uv_handle_t *)&t->s[CLIENT].in, (uv_handle_t *)&t->child_in,
                         (uv_handle_t *)&t->s[AGENT].in,  (uv_handle_t *)&t->proc,
                         (uv_handle_t *)&t->linger,       (uv_handle_t *)&t->sigs[0],
                         (uv_handle_t *)&t->sigs[1],      (uv_handle_t *)&t->sigs[2]};
    for (size_t i = 0; i < sizeof hs / sizeof *hs; i++)
        if (!uv_is_closing(hs[i])) uv_close(hs[i], closed);
    /* Our stdout once what is queued is written: closing it now would drop the agent's last
     * messages to a slow client. shut() closes it when its shutdown is done. */
    if (t->out_flushed && !uv_is_closing((uv_handle_t *)&t->our_out))
        uv_close((uv_handle_t *)&t->our_out, closed);
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
    /* A client talks to its agent over pipes (or a socket): a file or a terminal cannot be
     * polled, and a trace of a terminal session has no client to relay for. */
    int rc = uv_guess_handle(0) != UV_NAMED_PIPE || uv_guess_handle(1) != UV_NAMED_PIPE
                 ? UV_EINVAL
                 : uv_pipe_init(&loop, &t.s[CLIENT].in, 0);
    if (!rc) rc = uv_pipe_open(&t.s[CLIENT].in, 0);
    if (!rc) rc = uv_pipe_init(&loop, &t.our_out, 0);
    if (!rc) rc = uv_pipe_open(&t.our_out, 1);
    if (rc) {
        fprintf(stderr, "acp: trace: standard input and output must be pipes (the client's): %s\n",
                uv_strerror(rc));
        fclose(t.out);
        chk_schema_free(t.schemas);
        json_decref(t.turns);
        json_decref(t.loading);
        json_decref(t.answered);
        uv_walk(&loop, close_open, NULL);
        uv_run(&loop, UV_RUN_DEFAULT);
        uv_loop_close(&loop);
        return EXIT_USAGE;
    }
    t.tail = &t.head;
    uv_mutex_init(&t.mu);
    uv_cond_init(&t.cv);
    uv_thread_create(&t.examiner, examiner, &t);
    uv_pipe_init(&loop, &t.child_in, 0);
    uv_pipe_init(&loop, &t.s[AGENT].in, 0);
    uv_stdio_container_t io[3] = {
        {.flags = UV_CREATE_PIPE | UV_READABLE_PIPE, .data.stream = (uv_stream_t *)&t.child_in},
        {.flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE, .data.stream = (uv_stream_t *)&t.s[AGENT].in},
        {.flags = UV_INHERIT_FD, .data.fd = 2}};
    char **argv = a->args + a->dashdash;
    uv_process_options_t po = {.exit_cb = on_exit_cb,
                               .file = argv[0],
                               .args = argv,
                               .flags = UV_PROCESS_DETACHED, /* its own group, ended with it */
                               .stdio_count = 3,
                               .stdio = io};
    t.proc.data = &t;
    rc = uv_spawn(&loop, &t.proc, &po);
    int status = EXIT_OK;
    if (rc) {
        fprintf(stderr, "acp: trace: cannot run '%s': %s\n", argv[0], uv_strerror(rc));
        status = EXIT_GONE;
        uv_walk(&loop, close_open, NULL); /* the process handle too, as libuv asks */
    } else {
        t.s[CLIENT].to = (uv_stream_t *)&t.child_in;
        t.s[AGENT].to = (uv_stream_t *)&t.our_out;
        t.s[CLIENT].in.data = t.s[AGENT].in.data = t.our_out.data = t.child_in.data = &t;
        uv_timer_init(&loop, &t.linger);
        t.linger.data = &t;
        int signums[3] = {SIGTERM, SIGINT, SIGHUP};
        for (int i = 0; i < 3; i++) {
            uv_signal_init(&loop, &t.sigs[i]);
            t.sigs[i].data = &t;
            uv_signal_start(&t.sigs[i], on_signal, signums[i]);
        }
        uv_read_start((uv_stream_t *)&t.s[CLIENT].in, on_alloc, on_read);
        uv_read_start((uv_stream_t *)&t.s[AGENT].in, on_alloc, on_read);
    }
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    uv_mutex_lock(&t.mu);
    t.stop = true; /* everything relayed is queued: the examiner ends after its chunk */
    uv_cond_broadcast(&t.cv);
    uv_mutex_unlock(&t.mu);
    uv_thread_join(&t.examiner);
    /* What is left is examined here, at our own priority: on a busy machine the idle-class
     * examiner could take long, and the client may be waiting for its agent to end. */
    for (chunk *c = t.head, *next; c; c = next) {
        next = c->next;
        examine_chunk(&t, c);
        free(c);
    }
    t.head = NULL;
    uv_mutex_destroy(&t.mu);
    uv_cond_destroy(&t.cv);
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
