/* SPDX-License-Identifier: Apache-2.0 */
/* relay: a network ACP connection served by its own stdio agent process (agent/relay.h).
 * Messages pass through as they are, one link message per line of the agent's stdout and one
 * line of its stdin per link message; only the server's bounds (roots, stdio MCP) look inside
 * the client's session requests. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp/error.h"
#include "acp/json.h"
#include "acp/roots.h"
#include "agent/relay.h"
#include "rpc/lasterr.h"
#include "rt/proc_stdio.h"

/* The longest line of the agent's that is relayed (the network's own limit on a message is
 * the server's max_message, applied by the client's side of the link). */
#define LINE_MAX_BYTES ((size_t)256 << 20)
/* What the client may have queued for an agent that does not read its stdin. */
#define IN_MAX_BYTES ((size_t)64 << 20)

struct relay {
    relay_opts o;
    acp_link *l;           /* NULL once the link ended */
    acp_proc *p;           /* NULL once stopped */
    uv_stream_t *in, *out; /* the agent's stdin and stdout; NULL once closing */
    uv_timer_t stall;      /* the client not reading */
    int handles;           /* in, out, stall not yet closed */
    acp_buf line;          /* the agent's output since its last line end */
    bool ending, freeing, paused, done;
};

static void rlog(relay *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void rlog(relay *r, const char *fmt, ...)
{
    if (!r->o.on_log || r->freeing) return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    r->o.on_log(line, r->o.user);
}

static void maybe_finish(relay *r)
{
    if (r->l || r->p || r->handles || r->done) return;
    r->done = true;
    acp_buf_free(&r->line);
    if (!r->freeing && r->o.on_done) r->o.on_done(r, r->o.user);
    free(r);
}

static void pipe_closed(uv_handle_t *h)
{
    relay *r = h->data;
    free(h); /* the proc's allocation, ours since acp_proc_take_stdio */
    r->handles--;
    maybe_finish(r);
}

static void timer_closed(uv_handle_t *h)
{
    relay *r = h->data;
    r->handles--;
    maybe_finish(r);
}

static void close_pipe(relay *r, uv_stream_t **s)
{
    if (!*s) return;
    (*s)->data = r;
    uv_close((uv_handle_t *)*s, pipe_closed);
    *s = NULL;
}

static void proc_stopped(void *user)
{
    relay *r = user;
    r->p = NULL;
    uv_close((uv_handle_t *)&r->stall, timer_closed);
    maybe_finish(r);
}

/* EOF to the agent, then SIGTERM and SIGKILL to its whole tree if it lingers (acp_proc_stop). */
static void end(relay *r)
{
    if (r->ending) return;
    r->ending = true;
    close_pipe(r, &r->in);
    acp_proc_stop(r->p, r->o.grace_ms, proc_stopped, r);
}

/* --- the client's messages to the agent ----------------------------------------------------- */

typedef struct wreq {
    uv_write_t req;
    char data[];
} wreq;

static void written(uv_write_t *w, int status)
{
    free(w);
}

static void to_agent(relay *r, const char *msg, size_t len)
{
    if (!r->in) return;
    if (uv_stream_get_write_queue_size(r->in) > IN_MAX_BYTES) {
        rlog(r, "the agent does not read its input: closing the connection");
        acp_link_close(r->l);
        return;
    }
    wreq *w = malloc(sizeof *w + len + 1);
    if (!w) {
        rlog(r, "out of memory relaying a client message: closing the connection");
        acp_link_close(r->l);
        return;
    }
    memcpy(w->data, msg, len);
    /* Raw CR and LF can only be whitespace in valid JSON: spaces keep it one line. */
    for (size_t i = 0; i < len; i++)
        if (w->data[i] == '\n' || w->data[i] == '\r') w->data[i] = ' ';
    w->data[len] = '\n';
    uv_buf_t b = uv_buf_init(w->data, (unsigned)len + 1);
    if (uv_write(&w->req, r->in, &b, 1, written)) free(w);
}

/* Answers the client's request id itself with -32602 (the agent never sees it). */
static void refuse(relay *r, json_t *id, const char *path, const char *fmt, const char *what)
{
    char message[4400];
    snprintf(message, sizeof message, fmt, what);
    json_t *e = json_pack("{s:s, s:O, s:{s:i, s:s, s:{s:s}}}", "jsonrpc", "2.0", "id",
                          id ? id : json_null(), "error", "code", ACP_RPC_INVALID_PARAMS, "message",
                          message, "data", "path", path);
    char *text = e ? json_dumps(e, JSON_COMPACT) : NULL;
    if (text) acp_link_send(r->l, text, strlen(text));
    free(text);
    json_decref(e);
}

/* The server's bounds on a session request (as acp-agent --listen applies them): cwd and every
 * additional directory inside a root, else -32602; stdio MCP servers, when refused, left out
 * (the session opens without them). 1: pass msg as it is; 0: pass *out (malloc'd) instead;
 * -1: answered here. */
static int police(relay *r, const char *msg, size_t len, char **out)
{
    const agent_bounds *b = r->o.bounds;
    if (!b || (!b->roots && !b->no_stdio_mcp) || !memmem(msg, len, "session/", 8)) return 1;
    json_t *j = json_loadb(msg, len, 0, NULL);
    const char *m = json_string_value(json_object_get(j, "method"));
    json_t *params = json_object_get(j, "params");
    int verdict = 1;
    if (!m || !json_is_object(params) ||
        (strcmp(m, "session/new") && strcmp(m, "session/load") && strcmp(m, "session/resume") &&
         strcmp(m, "session/fork"))) {
        json_decref(j);
        return 1;
    }
    json_t *id = json_object_get(j, "id");
    json_t *dirs = json_object_get(params, "additionalDirectories");
    for (size_t i = 0; b->roots && i <= json_array_size(dirs); i++) {
        const char *path =
            json_string_value(i ? json_array_get(dirs, i - 1) : json_object_get(params, "cwd"));
        char *real = NULL, where[64] = "params.cwd";
        if (!path) continue; /* the agent judges a malformed request */
        int rc = acp_roots_resolve(b->roots, path, &real);
        free(real);
        if (!rc) continue;
        if (i) snprintf(where, sizeof where, "params.additionalDirectories[%zu]", i - 1);
        refuse(r, id, where,
               "a session's directories must lie inside a directory this server allows "
               "(symlinks resolved): '%s'",
               path);
        json_decref(j);
        return -1;
    }
    json_t *servers = json_object_get(params, "mcpServers");
    for (size_t i = 0; b->no_stdio_mcp && i < json_array_size(servers);) {
        json_t *s = json_array_get(servers, i);
        const char *type = json_string_value(json_object_get(s, "type"));
        if (type && strcmp(type, "stdio")) {
            i++;
            continue;
        }
        rlog(r, "%s: stdio MCP server '%s' left out (this server refuses them)", m,
             json_string_value(json_object_get(s, "name"))
                 ? json_string_value(json_object_get(s, "name"))
                 : "?");
        json_array_remove(servers, i);
        verdict = 0;
    }
    if (!verdict && !(*out = json_dumps(j, JSON_COMPACT))) verdict = 1;
    json_decref(j);
    return verdict;
}

static void link_message(acp_link *l, const char *msg, size_t len, void *user)
{
    relay *r = user;
    char *rewritten = NULL;
    int v = police(r, msg, len, &rewritten);
    if (v > 0) to_agent(r, msg, len);
    if (!v) to_agent(r, rewritten, strlen(rewritten));
    free(rewritten);
}

/* --- the agent's messages to the client ----------------------------------------------------- */

static void stalled(uv_timer_t *t)
{
    relay *r = t->data;
    rlog(r, "the client has not read its output for %u ms: closing its connection", r->o.stall_ms);
    if (r->l) acp_link_close(r->l);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    static char chunk[65536]; /* one loop thread; each read is consumed before the next */
    *buf = uv_buf_init(chunk, sizeof chunk);
}

static void send_line(relay *r, const char *p, size_t n)
{
    if (n && p[n - 1] == '\r') n--;
    size_t i = 0;
    while (i < n && (p[i] == ' ' || p[i] == '\t')) i++;
    if (i == n || !r->l) return;
    if (acp_link_send(r->l, p, n) == ACP_ENOMEM) {
        rlog(r, "out of memory sending to the client: closing its connection");
        acp_link_close(r->l);
    }
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    relay *r = s->data;
    if (nread < 0) {
        /* The agent's output is over (it exited or closed stdout): so is the connection. */
        if (r->line.len) send_line(r, r->line.data, r->line.len);
        r->line.len = 0;
        close_pipe(r, &r->out);
        if (r->l) acp_link_close(r->l);
        return;
    }
    const char *p = buf->base, *e = p + nread;
    while (p < e) {
        const char *nl = memchr(p, '\n', (size_t)(e - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(e - p);
        if (!nl || r->line.len) {
            if (r->line.len + n > LINE_MAX_BYTES || acp_buf_append(&r->line, p, n)) {
                rlog(r, "the agent wrote a line over %zu bytes: closing the connection",
                     LINE_MAX_BYTES);
                r->line.len = 0;
                if (r->l) acp_link_close(r->l);
                end(r);
                return;
            }
            if (nl) {
                send_line(r, r->line.data, r->line.len);
                r->line.len = 0;
                acp_buf_shrink(&r->line, ACP_BUF_KEEP);
            }
        } else {
            send_line(r, p, n); /* the common case: a whole line in the chunk, no copy */
        }
        p += n + (nl ? 1 : 0);
    }
    if (!r->l) return;
    acp_link_flush(r->l);
    if (!r->paused && acp_link_queued(r->l) >= acp_link_high_water(r->l)) {
        r->paused = true;
        uv_read_stop(s);
        if (r->o.stall_ms) uv_timer_start(&r->stall, stalled, r->o.stall_ms, 0);
    }
}

static void link_drained(acp_link *l, void *user)
{
    relay *r = user;
    if (!r->paused) return;
    r->paused = false;
    uv_timer_stop(&r->stall);
    if (r->out) uv_read_start(r->out, on_alloc, on_read);
}

static void link_closed(acp_link *l, const char *reason, void *user)
{
    relay *r = user;
    r->l = NULL;
    if (!r->ending) rlog(r, "client connection ended: %s", reason);
    if (r->out && r->paused) uv_read_start(r->out, on_alloc, on_read); /* drained to nowhere */
    r->paused = false;
    uv_timer_stop(&r->stall);
    end(r);
    maybe_finish(r);
}

static void link_logged(acp_link *l, const char *line, void *user)
{
    rlog(user, "client connection: %s", line);
}

static void proc_exited(acp_proc *p, int64_t status, int sig, void *user)
{
    relay *r = user;
    if (sig)
        rlog(r, "the agent was ended by signal %d", sig);
    else if (status)
        rlog(r, "the agent exited with status %lld", (long long)status);
}

int relay_start(uv_loop_t *loop, acp_link *l, const relay_opts *o, relay **out)
{
    *out = NULL;
    relay *r = calloc(1, sizeof *r);
    if (!r) {
        acp_link_close(l);
        return acp_error_set(ACP_ENOMEM, "out of memory starting an agent");
    }
    r->o = *o;
    acp_proc_opts po = ACP_PROC_OPTS_INIT;
    po.file = o->argv[0];
    po.argv = o->argv;
    po.pipe_stdin = po.pipe_stdout = po.inherit_stderr = true;
    po.on_exit = proc_exited;
    po.user = r;
    int rc = acp_proc_spawn(loop, &po, &r->p);
    if (!rc && (rc = acp_proc_take_stdio(r->p, &r->in, &r->out))) {
        acp_proc_stop(r->p, 0, NULL, NULL); /* not reached: both were piped */
        rc = acp_error_set(rc, "cannot take the agent's pipes");
    }
    if (rc) {
        acp_link_cbs none = {0};
        acp_link_bind(l, &none, NULL);
        acp_link_close(l);
        free(r);
        return rc;
    }
    uv_timer_init(loop, &r->stall);
    r->stall.data = r->out->data = r;
    r->handles = 3;
    r->l = l;
    uv_read_start(r->out, on_alloc, on_read);
    acp_link_cbs cbs = {link_message, link_drained, link_closed, link_logged};
    acp_link_bind(l, &cbs, r);
    *out = r;
    return 0;
}

void relay_shutdown(relay *r)
{
    end(r);
}

void relay_free(relay *r)
{
    r->freeing = true;
    if (!r->ending) r->o.grace_ms = 0;
    end(r);
    close_pipe(r, &r->out);
    if (r->l) acp_link_close(r->l);
}
