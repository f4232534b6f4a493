#include "stub_sock.h"

#include <stdlib.h>
#include <string.h>

#include "acp/error.h"

#define STUB_HIGH_WATER ((size_t)1 << 20)

struct acp_sock {
    uv_stream_t *st;
    acp_sock_cbs cbs;
    void *user;
    size_t queued;
    bool full, closing, paused, reading;
    const char *reason;
};

typedef struct wreq {
    uv_write_t w;
    acp_sock *s;
    size_t n;
    char data[];
} wreq;

static void on_closed(uv_handle_t *hd)
{
    acp_sock *s = hd->data;
    if (s->cbs.on_close) s->cbs.on_close(s, s->reason ? s->reason : "closed", s->user);
    free(hd);
    free(s);
}

static void sock_end(acp_sock *s, const char *reason)
{
    if (uv_is_closing((uv_handle_t *)s->st)) return;
    s->closing = true;
    s->reason = reason;
    uv_close((uv_handle_t *)s->st, on_closed);
}

static void on_alloc(uv_handle_t *h, size_t want, uv_buf_t *b)
{
    static char buf[65536]; /* one loop thread; consumed within on_read */
    *b = uv_buf_init(buf, sizeof buf);
}

static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *b)
{
    acp_sock *s = st->data;
    if (n < 0) {
        sock_end(s, n == UV_EOF ? "peer closed" : "read error");
        return;
    }
    if (n > 0 && s->cbs.on_read && !s->closing) s->cbs.on_read(s, b->base, (size_t)n, s->user);
}

static void resume(acp_sock *s)
{
    bool want = !s->paused && !s->closing;
    if (want && !s->reading) uv_read_start(s->st, on_alloc, on_read);
    if (!want && s->reading) uv_read_stop(s->st);
    s->reading = want;
}

acp_sock *stub_sock_wrap(uv_stream_t *st)
{
    acp_sock *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->st = st;
    st->data = s;
    return s;
}

void acp_sock_bind(acp_sock *s, const acp_sock_cbs *cbs, void *user)
{
    s->cbs = *cbs;
    s->user = user;
    resume(s);
}

static void on_written(uv_write_t *w, int status)
{
    wreq *r = (wreq *)w;
    acp_sock *s = r->s;
    s->queued -= r->n;
    free(r);
    if (status < 0) {
        sock_end(s, "write error");
        return;
    }
    if (s->full && s->queued < STUB_HIGH_WATER / 2) {
        s->full = false;
        if (s->cbs.on_drain && !s->closing) s->cbs.on_drain(s, s->user);
    }
    if (s->closing && s->queued == 0 && !s->reason) sock_end(s, "closed");
}

int acp_sock_write(acp_sock *s, const void *p, size_t n)
{
    if (s->closing) return ACP_EIO;
    wreq *r = malloc(sizeof *r + n);
    if (!r) return ACP_ENOMEM;
    memcpy(r->data, p, n);
    r->s = s;
    r->n = n;
    uv_buf_t b = uv_buf_init(r->data, (unsigned)n);
    if (uv_write(&r->w, s->st, &b, 1, on_written) != 0) {
        free(r);
        return ACP_EIO;
    }
    s->queued += n;
    if (s->queued >= STUB_HIGH_WATER) s->full = true;
    return 0;
}

size_t acp_sock_queued(const acp_sock *s)
{
    return s->queued;
}

size_t acp_sock_high_water(const acp_sock *s)
{
    return STUB_HIGH_WATER;
}

void acp_sock_pause(acp_sock *s, bool paused)
{
    s->paused = paused;
    resume(s);
}

const char *acp_sock_alpn(const acp_sock *s)
{
    return NULL;
}

void acp_sock_close(acp_sock *s)
{
    if (s->closing) return;
    s->closing = true;
    resume(s);
    if (s->queued == 0) sock_end(s, "closed");
}

void acp_sock_abort(acp_sock *s)
{
    sock_end(s, "aborted");
}
