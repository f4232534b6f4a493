/* SPDX-License-Identifier: Apache-2.0 */
/* The agent's stderr (issue 20, item 6). Agents write colours and progress there, and a
 * hostile one anything a terminal acts on: so it is shown as the agent's text is (safe.h),
 * a line at a time, with its colours (SGR sequences) dropped rather than shown as escapes.
 * --agent-log FILE keeps it raw in FILE instead, --quiet drops it. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tools/acp/app.h"
#include "tools/acp/safe.h"

/* A run this long without a line end is shown as a line of its own: memory stays bounded
 * and a progress display that never ends its line still shows. */
#define PIECE 4096
/* A line left unfinished this long (a prompt, a progress display) is shown as it is. */
#define IDLE_MS 1000

static void show(app *a, const char *s, size_t n);

static void idle(uv_timer_t *t)
{
    app *a = t->data;
    show(a, a->agent_line.data, a->agent_line.len);
    a->agent_line.len = 0;
}

int agent_stderr_open(app *a)
{
    uv_timer_init(&a->loop, &a->agent_idle);
    uv_unref((uv_handle_t *)&a->agent_idle); /* cosmetic: it keeps nothing waiting */
    a->agent_idle.data = a;
    a->agent_log_fd = -1;
    if (!a->agent_log) return 0;
    /* Appended, as logs are; private, as an agent may log what it was told in confidence. */
    a->agent_log_fd = open(a->agent_log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (a->agent_log_fd >= 0) return 0;
    fprintf(stderr, "acp: --agent-log: cannot open '%s': %s\n", a->agent_log, strerror(errno));
    return EXIT_USAGE;
}

/* s[0..n) without its SGR sequences (ESC [ digits ; : ... m), into b. */
static void strip_sgr(acp_buf *b, const char *s, size_t n)
{
    b->len = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\033' && i + 1 < n && s[i + 1] == '[') {
            size_t j = i + 2;
            while (j < n && (s[j] == ';' || s[j] == ':' || (s[j] >= '0' && s[j] <= '9'))) j++;
            if (j < n && s[j] == 'm') {
                i = j;
                continue;
            }
        }
        acp_buf_putc(b, s[i]);
    }
}

/* One line (without its LF) as a note that does not tear the output. */
static void show(app *a, const char *s, size_t n)
{
    if (n && s[n - 1] == '\r') n--; /* a CRLF line end */
    acp_buf b = {0};
    strip_sgr(&b, s, n);
    chat_output_begin(a);
    render_break(&a->r);
    safe_write(stderr, b.data ? b.data : "", b.len, SAFE_LINE);
    fputc('\n', stderr);
    chat_output_end(a);
    acp_buf_free(&b);
}

void agent_stderr(acp_client *c, const char *buf, size_t n, void *user)
{
    app *a = user;
    if (a->agent_log_fd >= 0) { /* with --quiet too: that silences the terminal only */
        for (size_t off = 0; off < n;) {
            ssize_t w = write(a->agent_log_fd, buf + off, n - off);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) break; /* a full disk loses log lines, never the session */
            off += (size_t)w;
        }
        return;
    }
    if (a->quiet) return;
    acp_buf *line = &a->agent_line;
    for (const char *end = buf + n; buf < end;) {
        const char *lf = memchr(buf, '\n', (size_t)(end - buf));
        size_t take = (size_t)((lf ? lf : end) - buf);
        if (take > PIECE - line->len) take = PIECE - line->len;
        acp_buf_append(line, buf, take);
        buf += take;
        bool eol = buf < end && *buf == '\n';
        if (eol || line->len == PIECE) {
            show(a, line->data, line->len);
            line->len = 0;
        }
        buf += eol;
    }
    /* Closed with the loop's other handles (app_close): then the end shows what is left. */
    if (line->len && !uv_is_closing((uv_handle_t *)&a->agent_idle))
        uv_timer_start(&a->agent_idle, idle, IDLE_MS, 0);
}

void agent_stderr_close(app *a)
{
    if (a->agent_line.len) show(a, a->agent_line.data, a->agent_line.len);
    acp_buf_free(&a->agent_line);
    if (a->agent_log_fd >= 0) close(a->agent_log_fd);
    a->agent_log_fd = -1;
}
