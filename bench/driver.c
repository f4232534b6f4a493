/* SPDX-License-Identifier: Apache-2.0 */
/* acp-bench-driver: one raw-NDJSON ACP client that drives any agent, so that the agent
 * benchmarks compare agents and nothing else (the same client, the same reads, the same
 * clock for build/acp-agent and the TypeScript-SDK peer).
 *
 *   acp-bench-driver MODE [-n N] [-b BYTES] [-s SESSION] [-k SERVERS] [-r REPEAT] [-p DEPTH]
 *                    [--cwd DIR] [--archived FILTER] [--mcp 'ABS_CMD ARG...'] [--ping] [--no-kill]
 *                    -- AGENT_CMD ARG...
 *
 * Modes (each prints one line of key=value figures on stdout):
 *   cold     spawn + initialize + session/new round trip, -r times, fresh process each time
 *   fill     one session with -n echo prompts of -b bytes each (2n messages); prints its id
 *   replay   session/load of -s: time from the request written to its response read
 *   stream   session/new, then "/stream N BYTES": updates reaching us per second
 *   memory   VmRSS after initialize + one session, then with -n more sessions open
 *   newmany  -n session/new requests, 64 in flight (to populate a store)
 *   list     session/list first page, -r times (--archived: the unstable filter)
 *   mcp      session/new with -k stdio MCP servers, then "/mcp" until all are ready
 *   config   session/new, then -r runs of -n session/set_config_option requests (`model`,
 *            alternating echo-large / echo-small, so every one is a change), -p in flight at a
 *            time (1, the default: each waits for the previous answer, so the figure is the
 *            round trip); every answer must carry the value just set as the model's
 *            currentValue. Round trips per second, median of the runs, and the agent's CPU per
 *            round trip. Then the agent is killed (SIGKILL) and a fresh one must give back the
 *            last value in its session/load result: the values were stored before the answers.
 *            --ping sends `_bench/ping` instead, which no agent knows: the -32601 round trip,
 *            the floor under any request (no load check then). --no-kill leaves the kill and
 *            the load check out: the agent ends at EOF, so a profiler around it (valgrind,
 *            bench/instructions.sh) writes its report.
 *
 *   acp-bench-driver canned
 * is the other way round: an agent on stdin/stdout that answers initialize and session/new
 * (sess_canned, then sess_canned.2, .3, ...) and answers "/stream N BYTES" with N prebuilt
 * agent_message_chunk lines (the same text acp-agent sends) written 1 MiB at a time, so that a
 * client's ingest rate is measured without an agent's own cost in the way. Prompts that are
 * running together stream interleaved, every session a share of each 1 MiB round. Every other
 * request gets -32601.
 *
 * It is deliberately minimal: it does not build or parse JSON trees. It finds top-level members
 * with a small scanner (jscan.h) that assumes well-formed input (the agents under test write it),
 * so its own cost per line is a memchr and a few comparisons. Not part of libacp. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "jscan.h"

typedef struct {
    pid_t pid;
    int in;  /* we write the agent's stdin */
    int out; /* we read the agent's stdout */
    char *buf;
    size_t len, cap, pos;
    int next_id;
} agent;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* This process's own CPU time: how much of a figure the driver itself costs. */
static double self_cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("acp-bench-driver: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

/* --- the agent process ----------------------------------------------------------- */

static void agent_spawn(agent *a, char **argv)
{
    int in[2], out[2];
    if (pipe(in) || pipe(out)) die("pipe: %s", strerror(errno));
    memset(a, 0, sizeof *a);
    a->pid = fork();
    if (a->pid < 0) die("fork: %s", strerror(errno));
    if (a->pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[0]);
        close(in[1]);
        close(out[0]);
        close(out[1]);
        execvp(argv[0], argv);
        fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    a->in = in[1];
    a->out = out[0];
    a->cap = 1 << 20;
    a->buf = malloc(a->cap);
    a->next_id = 1;
    if (!a->buf) die("out of memory");
}

static void agent_stop(agent *a)
{
    close(a->in);
    /* Drain until EOF so an agent blocked on a full pipe can see its stdin close. */
    char tmp[65536];
    double deadline = now_s() + 10;
    for (;;) {
        int st;
        pid_t r = waitpid(a->pid, &st, WNOHANG);
        if (r == a->pid) break;
        if (now_s() > deadline) {
            kill(a->pid, SIGKILL);
            waitpid(a->pid, &st, 0);
            break;
        }
        ssize_t n = read(a->out, tmp, sizeof tmp);
        if (n <= 0) usleep(1000);
    }
    close(a->out);
    free(a->buf);
}

static void agent_write(agent *a, const char *s, size_t n)
{
    while (n) {
        ssize_t w = write(a->in, s, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            die("write to agent: %s", strerror(errno));
        }
        s += w;
        n -= (size_t)w;
    }
}

/* Sends a request whose params are the JSON text `params`; returns its id. */
static int agent_call(agent *a, const char *method, const char *params)
{
    int id = a->next_id++;
    size_t n = strlen(params) + strlen(method) + 64;
    char *line = malloc(n);
    if (!line) die("out of memory");
    int len = snprintf(line, n, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"%s\",\"params\":%s}\n",
                       id, method, params);
    agent_write(a, line, (size_t)len);
    free(line);
    return id;
}

/* The next line from the agent (without its newline), valid until the next call. */
static span agent_line(agent *a)
{
    for (;;) {
        char *nl = memchr(a->buf + a->pos, '\n', a->len - a->pos);
        if (nl) {
            span s = {a->buf + a->pos, (size_t)(nl - (a->buf + a->pos))};
            a->pos = (size_t)(nl - a->buf) + 1;
            return s;
        }
        if (a->pos > 0) {
            memmove(a->buf, a->buf + a->pos, a->len - a->pos);
            a->len -= a->pos;
            a->pos = 0;
        }
        if (a->cap - a->len < 65536) {
            a->cap *= 2;
            a->buf = realloc(a->buf, a->cap);
            if (!a->buf) die("out of memory");
        }
        ssize_t r = read(a->out, a->buf + a->len, a->cap - a->len);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) die("agent closed its stdout (rc %zd)", r);
        a->len += (size_t)r;
    }
}

typedef struct {
    long updates;    /* session/update notifications seen */
    long bytes;      /* their bytes, newline included */
    long ready_hits; /* ": ready" occurrences inside them (the /mcp answer) */
    bool scan_ready; /* count ready_hits (only the mcp mode pays for that scan) */
} tally;

static bool is_result_ok(span line, span *result)
{
    span err;
    if (member(line, "error", &err)) {
        fprintf(stderr, "acp-bench-driver: agent error: %.*s\n", (int)line.n, line.p);
        return false;
    }
    return member(line, "result", result);
}

/* Reads lines until the response to `id`, counting session/update notifications on the way.
 * Agent requests (none expected here) are answered -32601. Returns the response line. */
static span agent_wait(agent *a, int id, tally *t)
{
    for (;;) {
        span line = agent_line(a), v;
        if (member(line, "method", &v)) {
            if (span_eq(v, "\"session/update\"")) {
                if (t) {
                    t->updates++;
                    t->bytes += (long)line.n + 1;
                    for (const char *p = line.p;
                         t->scan_ready &&
                         (p = memmem(p, (size_t)(line.p + line.n - p), ": ready", 7));
                         p += 7)
                        t->ready_hits++;
                }
                continue;
            }
            span rid;
            if (member(line, "id", &rid)) {
                char msg[160];
                int n = snprintf(msg, sizeof msg,
                                 "{\"jsonrpc\":\"2.0\",\"id\":%.*s,\"error\":{\"code\":-32601,"
                                 "\"message\":\"not supported\"}}\n",
                                 (int)rid.n, rid.p);
                agent_write(a, msg, (size_t)n);
            }
            continue;
        }
        span rid;
        if (member(line, "id", &rid) && span_int(rid) == id) return line;
    }
}

static span call_ok(agent *a, const char *method, const char *params, tally *t)
{
    int id = agent_call(a, method, params);
    span line = agent_wait(a, id, t), result;
    if (!is_result_ok(line, &result)) die("%s failed", method);
    return result;
}

static void initialize(agent *a)
{
    call_ok(a, "initialize",
            "{\"protocolVersion\":1,\"clientCapabilities\":{},"
            "\"clientInfo\":{\"name\":\"acp-bench-driver\",\"version\":\"0\"}}",
            NULL);
}

static const char *g_cwd = "/tmp";
static const char *g_mcp = NULL;
static const char *g_archived = NULL; /* list: session/list's (unstable) archived filter */

static char *new_session(agent *a, const char *mcp_servers)
{
    char params[65536];
    snprintf(params, sizeof params, "{\"cwd\":\"%s\",\"mcpServers\":%s}", g_cwd,
             mcp_servers ? mcp_servers : "[]");
    span result = call_ok(a, "session/new", params, NULL), sid;
    if (!member(result, "sessionId", &sid) || sid.n < 2) die("session/new: no sessionId");
    char *id = strndup(sid.p + 1, sid.n - 2);
    return id;
}

static tally prompt(agent *a, const char *sid, const char *text)
{
    size_t n = strlen(text) + strlen(sid) + 96;
    char *params = malloc(n);
    if (!params) die("out of memory");
    snprintf(params, n, "{\"sessionId\":\"%s\",\"prompt\":[{\"type\":\"text\",\"text\":\"%s\"}]}",
             sid, text);
    tally t = {.scan_ready = g_mcp != NULL};
    call_ok(a, "session/prompt", params, &t);
    free(params);
    return t;
}

static long vmrss_kb(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    long kb = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &kb) == 1) break;
    fclose(f);
    return kb;
}

/* The agent's user + system CPU time so far (all its threads: Node's GC and I/O threads too). */
static double proc_cpu_s(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')'); /* the command name may hold spaces */
    unsigned long ut = 0, st = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
        return 0;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* Builds the mcpServers array: k copies of g_mcp ("ABS_CMD ARG...") named s1..sk. */
static char *mcp_array(int k)
{
    char *cmd = strdup(g_mcp), *words[32];
    int nw = 0;
    for (char *w = strtok(cmd, " "); w && nw < 32; w = strtok(NULL, " ")) words[nw++] = w;
    size_t cap = 1024 + (size_t)k * (strlen(g_mcp) + 128);
    char *out = malloc(cap);
    size_t len = 0;
    len += (size_t)snprintf(out + len, cap - len, "[");
    for (int i = 0; i < k; i++) {
        len += (size_t)snprintf(out + len, cap - len,
                                "%s{\"name\":\"s%d\",\"command\":\"%s\",\"args\":[", i ? "," : "",
                                i + 1, words[0]);
        for (int j = 1; j < nw; j++)
            len += (size_t)snprintf(out + len, cap - len, "%s\"%s\"", j > 1 ? "," : "", words[j]);
        len += (size_t)snprintf(out + len, cap - len, "],\"env\":[]}");
    }
    snprintf(out + len, cap - len, "]");
    free(cmd);
    return out;
}

static void reply(agent *a, span id, const char *result)
{
    char msg[1024];
    int n = snprintf(msg, sizeof msg, "{\"jsonrpc\":\"2.0\",\"id\":%.*s,\"result\":%s}\n",
                     (int)id.n, id.p, result);
    agent_write(a, msg, (size_t)n);
}

/* One /stream in progress, its lines prebuilt for its session. */
typedef struct {
    char id[64];    /* the request id's text */
    char head[512]; /* a line up to its text */
    size_t hl, bytes, ll;
    char *block; /* `lines` complete lines */
    size_t lines;
    long left;
} canned_turn;

static void canned_start(canned_turn *t, span id, span sid, long n, long bytes)
{
    int hl = snprintf(t->head, sizeof t->head,
                      "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{"
                      "\"sessionId\":%.*s,\"update\":{\"sessionUpdate\":\"agent_message_chunk\","
                      "\"messageId\":\"msg_canned\",\"content\":{\"type\":\"text\",\"text\":\"",
                      (int)sid.n, sid.p);
    if (id.n >= sizeof t->id || hl < 0 || (size_t)hl >= sizeof t->head) die("request too long");
    memcpy(t->id, id.p, id.n);
    t->id[id.n] = 0;
    t->hl = (size_t)hl;
    t->bytes = (size_t)bytes;
    t->ll = t->hl + t->bytes + 6; /* the text's closing quote, "}}}}" and the newline */
    t->block = NULL;
    t->lines = 0;
    t->left = n;
}

/* Writes the next k lines of t (its block grown to k lines first). */
static void canned_write(agent *a, canned_turn *t, size_t k)
{
    if (t->lines < k) {
        if (!(t->block = realloc(t->block, k * t->ll))) die("out of memory");
        for (size_t i = t->lines; i < k; i++) {
            char *l = t->block + i * t->ll;
            memcpy(l, t->head, t->hl);
            memset(l + t->hl, 'x', t->bytes);
            memcpy(l + t->hl + t->bytes, "\"}}}}\n", 6);
        }
        t->lines = k;
    }
    agent_write(a, t->block, k * t->ll);
    t->left -= (long)k;
}

/* Reads what the client has sent without waiting; false at EOF. */
static bool canned_read(agent *a, bool wait)
{
    if (!wait) {
        struct pollfd pfd = {.fd = 0, .events = POLLIN};
        if (poll(&pfd, 1, 0) <= 0) return true;
    }
    if (a->pos > 0) {
        memmove(a->buf, a->buf + a->pos, a->len - a->pos);
        a->len -= a->pos;
        a->pos = 0;
    }
    if (a->len == a->cap && !(a->buf = realloc(a->buf, a->cap *= 2))) die("out of memory");
    ssize_t r;
    do r = read(0, a->buf + a->len, a->cap - a->len);
    while (r < 0 && errno == EINTR);
    if (r <= 0) return false;
    a->len += (size_t)r;
    return true;
}

static int canned(void)
{
    agent a = {.in = 1, .out = 0, .cap = 1 << 20};
    a.buf = malloc(a.cap);
    canned_turn *turns = NULL;
    size_t nturns = 0, cap = 0;
    long sessions = 0;
    if (!a.buf) die("out of memory");
    for (;;) {
        /* Every complete line first: prompts that arrive together stream together. */
        if (!memchr(a.buf + a.pos, '\n', a.len - a.pos)) {
            if (!canned_read(&a, nturns == 0)) return 0; /* the client closed our stdin */
            if (memchr(a.buf + a.pos, '\n', a.len - a.pos)) continue;
            /* Nothing new: one round of every stream, about 1 MiB in all (a lone stream
             * writes 1 MiB at a time). */
            for (size_t i = 0; i < nturns;) {
                canned_turn *t = &turns[i];
                size_t q = ((1u << 20) / t->ll + 1) / nturns;
                if (q < 1) q = 1;
                canned_write(&a, t, (size_t)t->left < q ? (size_t)t->left : q);
                if (t->left > 0) {
                    i++;
                    continue;
                }
                reply(&a, (span){t->id, strlen(t->id)}, "{\"stopReason\":\"end_turn\"}");
                free(t->block);
                turns[i] = turns[--nturns];
            }
            continue;
        }
        span line = agent_line(&a), id, method;
        if (!member(line, "id", &id) || !member(line, "method", &method))
            continue; /* notifications and responses: nothing to do */
        if (span_eq(method, "\"initialize\"")) {
            reply(&a, id,
                  "{\"protocolVersion\":1,\"agentInfo\":{\"name\":\"canned\",\"version\":\"0\"},"
                  "\"agentCapabilities\":{},\"authMethods\":[]}");
        } else if (span_eq(method, "\"session/new\"")) {
            char r[64];
            if (sessions++)
                snprintf(r, sizeof r, "{\"sessionId\":\"sess_canned.%ld\"}", sessions);
            else
                snprintf(r, sizeof r, "{\"sessionId\":\"sess_canned\"}");
            reply(&a, id, r);
        } else if (span_eq(method, "\"session/prompt\"")) {
            long n = 0, bytes = 0;
            span params, sid;
            const char *p = memmem(line.p, line.n, "/stream ", 8);
            if (p) sscanf(p, "/stream %ld %ld", &n, &bytes);
            if (!member(line, "params", &params) || !member(params, "sessionId", &sid))
                die("session/prompt without a sessionId");
            if (n <= 0) {
                reply(&a, id, "{\"stopReason\":\"end_turn\"}");
                continue;
            }
            if (nturns == cap &&
                !(turns = realloc(turns, (cap = cap ? 2 * cap : 16) * sizeof *turns)))
                die("out of memory");
            canned_start(&turns[nturns++], id, sid, n, bytes);
        } else {
            char msg[256];
            int k = snprintf(msg, sizeof msg,
                             "{\"jsonrpc\":\"2.0\",\"id\":%.*s,\"error\":{\"code\":-32601,"
                             "\"message\":\"not supported\"}}\n",
                             (int)id.n, id.p);
            agent_write(&a, msg, (size_t)k);
        }
    }
}

/* --- config: session/set_config_option round trips ------------------------------------- */

static const char *const config_values[] = {"echo-large", "echo-small"};

/* Sends request k of the config mode (k counts from 0 over all runs): set_config_option of the
 * model to config_values[k % 2], or the unknown _bench/ping. */
static int config_send(agent *a, const char *sid, long k, bool ping)
{
    char params[256];
    if (ping) {
        snprintf(params, sizeof params, "{\"sessionId\":\"%s\"}", sid);
        return agent_call(a, "_bench/ping", params);
    }
    snprintf(params, sizeof params,
             "{\"sessionId\":\"%s\",\"configId\":\"model\",\"value\":\"%s\"}", sid,
             config_values[k % 2]);
    return agent_call(a, "session/set_config_option", params);
}

/* Whether `text` (a result) says the model's currentValue is v: the answer is the complete
 * list, and only the model option can have an echo-* current value. */
static bool has_current(span text, const char *v)
{
    char needle[64];
    int n = snprintf(needle, sizeof needle, "\"currentValue\":\"%s\"", v);
    return memmem(text.p, text.n, needle, (size_t)n) != NULL;
}

/* Checks the answer to request k (see config_send); dies on a wrong one. */
static void config_check(span line, long k, bool ping)
{
    span v;
    if (ping) {
        if (!member(line, "error", &v) || !memmem(v.p, v.n, "-32601", 6))
            die("_bench/ping: expected a -32601 error, got %.*s", (int)line.n, line.p);
        return;
    }
    if (!is_result_ok(line, &v)) die("session/set_config_option failed");
    span opts;
    if (!member(v, "configOptions", &opts) || !has_current(opts, config_values[k % 2]))
        die("session/set_config_option: the answer lacks model=%s: %.*s", config_values[k % 2],
            (int)line.n, line.p);
}

/* One run: n requests from request number k0 on, at most depth in flight. */
static void config_run(agent *a, const char *sid, long k0, long n, long depth, bool ping)
{
    long sent = 0, done = 0;
    int first = a->next_id;
    while (done < n) {
        while (sent < n && sent - done < depth) config_send(a, sid, k0 + sent++, ping);
        span line = agent_line(a), v;
        if (member(line, "method", &v)) {
            /* a notification (the agent announces nothing for the client's own change, but
             * may send others); a request from the agent would get no answer here */
            if (member(line, "id", &v))
                die("config: unexpected agent request %.*s", (int)line.n, line.p);
            continue;
        }
        if (!member(line, "id", &v)) continue;
        long id = span_int(v);
        if (id < first || id >= first + sent) continue;
        config_check(line, k0 + (id - first), ping);
        done++;
    }
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    if (argc == 2 && !strcmp(argv[1], "canned")) return canned();
    if (argc < 2) die("usage: acp-bench-driver MODE [options] -- AGENT ARGS...");
    const char *mode = argv[1], *session = NULL;
    long n = 1000, bytes = 200, repeat = 10, k = 1, depth = 1;
    bool ping = false, nokill = false;
    int i = 2;
    for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (!strcmp(argv[i], "--ping")) {
            ping = true;
            continue;
        }
        if (!strcmp(argv[i], "--no-kill")) {
            nokill = true;
            continue;
        }
        if (i + 1 >= argc) die("option %s needs a value", argv[i]);
        if (!strcmp(argv[i], "-n"))
            n = atol(argv[++i]);
        else if (!strcmp(argv[i], "-b"))
            bytes = atol(argv[++i]);
        else if (!strcmp(argv[i], "-s"))
            session = argv[++i];
        else if (!strcmp(argv[i], "-r"))
            repeat = atol(argv[++i]);
        else if (!strcmp(argv[i], "-k"))
            k = atol(argv[++i]);
        else if (!strcmp(argv[i], "-p"))
            depth = atol(argv[++i]);
        else if (!strcmp(argv[i], "--cwd"))
            g_cwd = argv[++i];
        else if (!strcmp(argv[i], "--mcp"))
            g_mcp = argv[++i];
        else if (!strcmp(argv[i], "--archived"))
            g_archived = argv[++i];
        else
            die("unknown option %s", argv[i]);
    }
    if (i >= argc - 1) die("missing -- AGENT_CMD");
    char **cmd = argv + i + 1;
    signal(SIGPIPE, SIG_IGN);
    agent a;

    if (!strcmp(mode, "cold")) {
        double *t = calloc((size_t)repeat, sizeof *t), *ti = calloc((size_t)repeat, sizeof *ti);
        for (long r = 0; r < repeat; r++) {
            double t0 = now_s();
            agent_spawn(&a, cmd);
            initialize(&a);
            ti[r] = now_s() - t0;
            free(new_session(&a, NULL));
            t[r] = now_s() - t0;
            agent_stop(&a);
        }
        qsort(t, (size_t)repeat, sizeof *t, cmp_double);
        qsort(ti, (size_t)repeat, sizeof *ti, cmp_double);
        printf("cold_ms_median=%.3f cold_ms_min=%.3f init_ms_median=%.3f runs=%ld\n",
               t[repeat / 2] * 1e3, t[0] * 1e3, ti[repeat / 2] * 1e3, repeat);
        free(t);
        free(ti);
        return 0;
    }

    agent_spawn(&a, cmd);
    initialize(&a);

    if (!strcmp(mode, "fill")) {
        char *sid = new_session(&a, NULL);
        char *text = malloc((size_t)bytes + 1);
        memset(text, 'a', (size_t)bytes);
        text[bytes] = 0;
        for (long r = 0; r < n; r++) prompt(&a, sid, text);
        printf("session=%s\n", sid);
        free(text);
        free(sid);
    } else if (!strcmp(mode, "replay")) {
        if (!session) die("replay needs -s SESSION");
        char params[512];
        snprintf(params, sizeof params, "{\"sessionId\":\"%s\",\"cwd\":\"%s\",\"mcpServers\":[]}",
                 session, g_cwd);
        tally t = {0};
        double t0 = now_s(), c0 = self_cpu_s();
        call_ok(&a, "session/load", params, &t);
        double dt = now_s() - t0, dc = self_cpu_s() - c0;
        printf("replay_ms=%.3f updates=%ld bytes=%ld mb_per_s=%.1f driver_cpu_ms=%.1f\n", dt * 1e3,
               t.updates, t.bytes, (double)t.bytes / dt / 1e6, dc * 1e3);
    } else if (!strcmp(mode, "stream")) {
        char *sid = new_session(&a, NULL);
        char text[64];
        snprintf(text, sizeof text, "/stream %ld %ld", n, bytes);
        double w0 = wall_s(), t0 = now_s(), c0 = self_cpu_s();
        tally t = prompt(&a, sid, text);
        double dt = now_s() - t0, w1 = wall_s(), dc = self_cpu_s() - c0;
        if (t.updates < n) die("stream: %ld updates, expected %ld", t.updates, n);
        printf("stream_s=%.3f updates=%ld updates_per_s=%.0f mb_per_s=%.1f driver_cpu_ms=%.1f "
               "t0=%.6f t1=%.6f\n",
               dt, t.updates, (double)t.updates / dt, (double)t.bytes / dt / 1e6, dc * 1e3, w0, w1);
        free(sid);
    } else if (!strcmp(mode, "memory")) {
        free(new_session(&a, NULL));
        usleep(200000); /* let a lazily-growing heap settle; RSS is not a timing figure */
        long idle = vmrss_kb(a.pid);
        for (long r = 0; r < n; r++) free(new_session(&a, NULL));
        usleep(200000);
        long full = vmrss_kb(a.pid);
        printf("rss_idle_kb=%ld rss_kb=%ld sessions=%ld kb_per_session=%.1f\n", idle, full, n,
               (double)(full - idle) / (double)n);
    } else if (!strcmp(mode, "newmany")) {
        char params[1024];
        snprintf(params, sizeof params, "{\"cwd\":\"%s\",\"mcpServers\":[]}", g_cwd);
        long sent = 0, done = 0;
        int first = a.next_id;
        while (done < n) {
            while (sent < n && sent - done < 64) {
                agent_call(&a, "session/new", params);
                sent++;
            }
            span line = agent_line(&a), v;
            if (!member(line, "method", &v) && member(line, "id", &v) && span_int(v) >= first)
                done++;
        }
        printf("created=%ld\n", done);
    } else if (!strcmp(mode, "list")) {
        char params[1024], arch[64] = "";
        if (g_archived) snprintf(arch, sizeof arch, "\"archived\":\"%s\"", g_archived);
        if (*g_cwd) /* --cwd '' lists every session, unfiltered */
            snprintf(params, sizeof params, "{\"cwd\":\"%s\"%s%s}", g_cwd, *arch ? "," : "", arch);
        else
            snprintf(params, sizeof params, "{%s}", arch);
        double *t = calloc((size_t)repeat, sizeof *t);
        long count = 0;
        bool more = false;
        for (long r = 0; r < repeat; r++) {
            double t0 = now_s();
            span result = call_ok(&a, "session/list", params, NULL), v;
            t[r] = now_s() - t0;
            more = member(result, "nextCursor", &v) && !span_eq(v, "null");
            count = 0;
            if (member(result, "sessions", &v))
                for (const char *p = v.p;
                     (p = memmem(p, (size_t)(v.p + v.n - p), "\"sessionId\"", 11)); p += 11)
                    count++;
        }
        qsort(t, (size_t)repeat, sizeof *t, cmp_double);
        printf("list_ms_median=%.3f list_ms_min=%.3f first_call_ms=%.3f page=%ld next_cursor=%d\n",
               t[repeat / 2] * 1e3, t[0] * 1e3, t[repeat - 1] * 1e3, count, more);
        free(t);
    } else if (!strcmp(mode, "mcp")) {
        if (!g_mcp) die("mcp needs --mcp 'ABS_CMD ARGS'");
        char *servers = mcp_array((int)k);
        double t0 = now_s();
        char *sid = new_session(&a, servers);
        double t_new = now_s() - t0;
        long polls = 0;
        for (;;) {
            tally t = prompt(&a, sid, "/mcp");
            polls++;
            if (t.ready_hits >= k) break;
            if (now_s() - t0 > 120) die("mcp: not all %ld servers ready after 120 s", k);
            usleep(2000); /* polling interval: a 2 ms granularity on a 100+ ms figure */
        }
        double dt = now_s() - t0;
        free(servers);
        free(sid);
        /* CPU of the agent and of every server it reaped: on a small machine the servers'
         * own start-up CPU, divided by the cores, is the floor for starting them in parallel. */
        agent_stop(&a);
        struct rusage ru;
        getrusage(RUSAGE_CHILDREN, &ru);
        double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
                     (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
        printf("mcp_ready_ms=%.1f new_ms=%.1f servers=%ld polls=%ld children_cpu_ms=%.0f\n",
               dt * 1e3, t_new * 1e3, k, polls, cpu * 1e3);
        return 0;
    } else if (!strcmp(mode, "config")) {
        if (n < 1 || repeat < 1 || depth < 1) die("config needs -n, -r and -p of at least 1");
        char *sid = new_session(&a, NULL);
        double *rate = calloc((size_t)repeat, sizeof *rate);
        double cpu = 0, acpu = 0;
        for (long r = 0; r < repeat; r++) {
            double t0 = now_s(), c0 = self_cpu_s(), a0 = proc_cpu_s(a.pid);
            config_run(&a, sid, r * n, n, depth, ping);
            double dt = now_s() - t0;
            cpu += self_cpu_s() - c0;
            acpu += proc_cpu_s(a.pid) - a0;
            rate[r] = (double)n / dt;
        }
        long total = n * repeat;
        qsort(rate, (size_t)repeat, sizeof *rate, cmp_double);
        /* The durability check: no clean shutdown, a fresh process, the last value back. */
        const char *last = config_values[(total - 1) % 2];
        bool persisted = false;
        if (!ping && !nokill) {
            kill(a.pid, SIGKILL);
            agent_stop(&a);
            agent_spawn(&a, cmd);
            initialize(&a);
            char params[512];
            snprintf(params, sizeof params,
                     "{\"sessionId\":\"%s\",\"cwd\":\"%s\",\"mcpServers\":[]}", sid, g_cwd);
            span result = call_ok(&a, "session/load", params, NULL), opts;
            persisted = member(result, "configOptions", &opts) && has_current(opts, last);
            if (!persisted)
                die("config: after kill -9, session/load does not give back model=%s: %.*s", last,
                    (int)result.n, result.p);
        }
        printf("%s_rt_per_s=%.0f rt_per_s_min=%.0f rt_per_s_max=%.0f us_per_rt=%.1f depth=%ld "
               "runs=%ld n=%ld agent_cpu_us_per_rt=%.1f driver_cpu_us_per_rt=%.2f "
               "driver_cpu_ms=%.1f%s\n",
               ping ? "ping" : "config", rate[repeat / 2], rate[0], rate[repeat - 1],
               1e6 / rate[repeat / 2], depth, repeat, n, acpu * 1e6 / (double)total,
               cpu * 1e6 / (double)total, cpu * 1e3, ping ? "" : (persisted ? " persisted=1" : ""));
        free(rate);
        free(sid);
    } else {
        die("unknown mode %s", mode);
    }
    agent_stop(&a);
    return 0;
}
