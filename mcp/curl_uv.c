/* SPDX-License-Identifier: Apache-2.0 */
#include "acp/http.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <curl/curl.h>

#include "acp/error.h"
#include "rpc/lasterr.h"

/* The 1.0 size of the callbacks (when it changes: rpc/lasterr.h). */
#define ACP_HTTP_CBS_SIZE_1_0 ACP_STRUCT_SIZE_AT(acp_http_cbs, on_done)

struct acp_http_client {
    uv_loop_t *loop;
    CURLM *multi;
    uv_timer_t timer;  /* curl's timeout */
    uv_idle_t now;     /* curl's timeout of 0: once, in the next loop turn (see on_curl_timer) */
    uv_timer_t reaper; /* adds new and releases aborted exchanges outside curl's callbacks */
    uv_idle_t again;   /* HTTP/2 sockets to read again in the next loop turn (see read_again) */
    acp_http *dead;    /* aborted, waiting for the reaper */
    acp_http *fresh;   /* started, waiting for the reaper to add them, oldest first */
    acp_http **fresh_tail;
    struct sock_watch *watches;
    int handles; /* open uv handles: timer, now, reaper, again and one per watched socket */
    bool closing;
    void (*done)(void *user);
    void *done_user;
};

struct acp_http {
    acp_http_client *c;
    CURL *easy;
    struct curl_slist *headers;
    char *body;
    acp_http_cbs cbs;
    void *user;
    bool aborted, added, paused;
    acp_http *next_dead;
    acp_http *next_fresh;
    char err[CURL_ERROR_SIZE];
};

typedef struct sock_watch {
    uv_poll_t poll;
    acp_http_client *c;
    curl_socket_t fd;
    bool again, due; /* read_again: marked, and taken in this turn */
    struct sock_watch *prev, *next;
} sock_watch;

static void check_done(acp_http_client *c);

static void on_handle_closed(uv_handle_t *h)
{
    acp_http_client *c = h->data;
    if (h->type == UV_POLL) free(h);
    if (--c->handles == 0) {
        void (*done)(void *) = c->done;
        void *user = c->done_user;
        free(c);
        curl_global_cleanup();
        if (done) done(user);
    }
}

static void on_poll(uv_poll_t *p, int status, int events)
{
    sock_watch *w = (sock_watch *)p;
    acp_http_client *c = w->c;
    int flags = status < 0 ? CURL_CSELECT_ERR : 0;
    if (events & UV_READABLE) flags |= CURL_CSELECT_IN;
    if (events & UV_WRITABLE) flags |= CURL_CSELECT_OUT;
    int running;
    curl_multi_socket_action(c->multi, w->fd, flags, &running);
    check_done(c);
}

static void unwatch(acp_http_client *c, sock_watch *w)
{
    if (w->prev)
        w->prev->next = w->next;
    else
        c->watches = w->next;
    if (w->next) w->next->prev = w->prev;
    uv_poll_stop(&w->poll);
    w->poll.data = c;
    uv_close((uv_handle_t *)&w->poll, on_handle_closed);
}

static int on_socket(CURL *e, curl_socket_t fd, int what, void *userp, void *socketp)
{
    acp_http_client *c = userp;
    sock_watch *w = socketp;
    if (what == CURL_POLL_REMOVE) {
        if (w) {
            unwatch(c, w);
            curl_multi_assign(c->multi, fd, NULL);
        }
        return 0;
    }
    if (!w) {
        if (!(w = calloc(1, sizeof *w))) return -1;
        w->c = c;
        w->fd = fd;
        if (uv_poll_init_socket(c->loop, &w->poll, fd)) {
            free(w);
            return -1;
        }
        c->handles++;
        w->next = c->watches;
        if (w->next) w->next->prev = w;
        c->watches = w;
        curl_multi_assign(c->multi, fd, w);
    }
    int ev = 0;
    if (what & CURL_POLL_IN) ev |= UV_READABLE;
    if (what & CURL_POLL_OUT) ev |= UV_WRITABLE;
    uv_poll_start(&w->poll, ev, on_poll);
    return 0;
}

static void on_timer(uv_timer_t *t)
{
    acp_http_client *c = t->data;
    int running;
    curl_multi_socket_action(c->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    check_done(c);
}

static void on_now(uv_idle_t *i)
{
    acp_http_client *c = i->data;
    int running;
    uv_idle_stop(i);
    curl_multi_socket_action(c->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    check_done(c);
}

/* A timeout of 0 is what curl asks after reading its fill of a socket that has more: "call me
 * again now". On a libuv timer that restarts from its own callback (libuv before 1.45 runs a
 * timer due again at once, in the same phase), a server streaming faster than we take it kept
 * the loop in curl until the socket ran dry: nothing was flushed, committed or read from the
 * client (a cancel) meanwhile, and a whole 100,000-token answer was held in memory. An idle
 * handle runs once a loop turn and keeps that turn's poll from blocking, so every turn reads
 * a bounded amount and then does the rest of the loop's work. */
static int on_curl_timer(CURLM *m, long ms, void *userp)
{
    acp_http_client *c = userp;
    uv_timer_stop(&c->timer);
    uv_idle_stop(&c->now);
    if (ms == 0)
        uv_idle_start(&c->now, on_now);
    else if (ms > 0)
        uv_timer_start(&c->timer, on_timer, (uint64_t)ms, 0);
    return 0;
}

static void on_reaper(uv_timer_t *t);

static void http_free(acp_http *h)
{
    if (h->added) curl_multi_remove_handle(h->c->multi, h->easy);
    curl_easy_cleanup(h->easy);
    curl_slist_free_all(h->headers);
    free(h->body);
    free(h);
}

/* Onto the dead list, for the reaper to release from the loop. h->aborted is already set. */
static void bury(acp_http *h)
{
    h->next_dead = h->c->dead;
    h->c->dead = h;
    uv_timer_start(&h->c->reaper, on_reaper, 0, 0);
}

static void reap(acp_http_client *c)
{
    while (c->dead) {
        acp_http *h = c->dead;
        c->dead = h->next_dead;
        http_free(h);
    }
}

/* curl does not let a handle be added from inside its callbacks, where MCP messages are
 * handled (and new requests made): new exchanges start from here. */
static void on_reaper(uv_timer_t *t)
{
    acp_http_client *c = t->data;
    /* The fresh list first: one aborted before it was added is on the dead list too, and the
     * reap frees it (reaping first made this walk read freed exchanges). */
    while (c->fresh) {
        acp_http *h = c->fresh;
        c->fresh = h->next_fresh;
        if (h->aborted) continue; /* on the dead list */
        if (curl_multi_add_handle(c->multi, h->easy) == CURLM_OK) {
            h->added = true;
        } else {
            h->aborted = true;
            if (h->cbs.on_done) h->cbs.on_done(h, CURLE_OUT_OF_MEMORY, 0, h->user);
            bury(h);
        }
    }
    reap(c);
}

static void check_done(acp_http_client *c)
{
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(c->multi, &left))) {
        if (msg->msg != CURLMSG_DONE) continue;
        acp_http *h = NULL;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&h);
        CURLcode rc = msg->data.result;
        if (!h || h->aborted) continue; /* the reaper releases it */
        curl_multi_remove_handle(c->multi, h->easy);
        h->added = false;
        h->aborted = true; /* no callback after on_done, whatever it does */
        if (h->cbs.on_done) h->cbs.on_done(h, (int)rc, acp_http_status(h), h->user);
        bury(h);
    }
}

static void on_again(uv_idle_t *i)
{
    acp_http_client *c = i->data;
    uv_idle_stop(i);
    for (sock_watch *w = c->watches; w; w = w->next) {
        w->due = w->again; /* marks made from here on wait for the next turn */
        w->again = false;
    }
    for (;;) { /* an action may add and remove watches: the walk starts over after each */
        sock_watch *w = c->watches;
        while (w && !w->due) w = w->next;
        if (!w || c->closing) return;
        w->due = false;
        int running;
        curl_multi_socket_action(c->multi, w->fd, CURL_CSELECT_IN, &running);
        check_done(c);
    }
}

/* libcurl 7.88 (Debian 12) can keep HTTP/2 bytes it has read from the socket without handing
 * them on or asking to be called again: when a DATA frame does not fit the transfer's buffer,
 * nghttp2 is paused; the rest of the frame goes out on the next call, and the frames read
 * behind it stay in curl's connection buffer, which its data-pending test does not see (it
 * compares the wrong way round, lib/http2.c's cf_h2_data_pending). The socket is empty, no
 * timer is set: the transfer waits for the next bytes from the server or for an unrelated timer
 * of curl's (a connection's 10 s connect timeout), which is how a stream's end came 10 s late
 * (issue 25). curl 8.1 rewrote that path (its bufq buffers). So each time an HTTP/2 transfer
 * hands us data, the sockets are read once more in the next loop turn, as if readable, until
 * a turn hands nothing: one extra recv() that finds the socket empty at the end of a burst.
 * Every watched socket: curl does not say which is the transfer's (CURLINFO_ACTIVESOCKET knows
 * it only once the transfer is done), and they are few. */
static void read_again(acp_http *h)
{
    long version = 0;
    if (curl_easy_getinfo(h->easy, CURLINFO_HTTP_VERSION, &version) != CURLE_OK ||
        version != CURL_HTTP_VERSION_2_0)
        return;
    for (sock_watch *w = h->c->watches; w; w = w->next) w->again = true;
    uv_idle_start(&h->c->again, on_again);
}

static size_t on_write(char *p, size_t size, size_t n, void *user)
{
    acp_http *h = user;
    if (h->aborted) return 0;
    if (h->paused) return CURL_WRITEFUNC_PAUSE; /* curl keeps these bytes for the resume */
    read_again(h);
    if (h->cbs.on_data && h->cbs.on_data(h, p, n, h->user)) {
        acp_http_abort(h);
        return 0;
    }
    return h->aborted ? 0 : n;
}

acp_http_client *acp_http_client_new(uv_loop_t *loop)
{
    /* Reference-counted by libcurl, and thread-safe in the versions we build against. */
    if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
        acp_error_set(ACP_ENOTSUP, "HTTP: libcurl cannot be loaded or initialised");
        return NULL;
    }
    acp_http_client *c = calloc(1, sizeof *c);
    if (!c || !(c->multi = curl_multi_init())) {
        free(c);
        curl_global_cleanup();
        acp_error_set(ACP_ENOMEM, "HTTP: out of memory making a client");
        return NULL;
    }
    c->loop = loop;
    uv_timer_init(loop, &c->timer);
    uv_idle_init(loop, &c->now);
    uv_timer_init(loop, &c->reaper);
    uv_idle_init(loop, &c->again);
    c->timer.data = c->now.data = c->reaper.data = c->again.data = c;
    c->handles = 4;
    curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
    curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
    curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, on_curl_timer);
    curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
    return c;
}

void acp_http_client_close(acp_http_client *c, void (*done)(void *user), void *user)
{
    c->closing = true;
    c->done = done;
    c->done_user = user;
    while (c->fresh) { /* aborted ones are on the dead list too: the reap below frees them */
        acp_http *h = c->fresh;
        c->fresh = h->next_fresh;
        if (!h->aborted) http_free(h);
    }
    reap(c);
    /* Watched sockets are released through on_socket(CURL_POLL_REMOVE) during cleanup. */
    curl_multi_cleanup(c->multi);
    c->multi = NULL;
    while (c->watches) unwatch(c, c->watches); /* sockets cleanup did not report */
    uv_close((uv_handle_t *)&c->timer, on_handle_closed);
    uv_close((uv_handle_t *)&c->now, on_handle_closed);
    uv_close((uv_handle_t *)&c->reaper, on_handle_closed);
    uv_close((uv_handle_t *)&c->again, on_handle_closed);
}

acp_http *acp_http_start(acp_http_client *c, const char *method, const char *url,
                         const char *const *headers, const char *body, size_t n,
                         const acp_http_cbs *cbs, void *user)
{
    acp_http_cbs cb;
    if (acp_struct_read(&cb, sizeof cb, ACP_HTTP_CBS_SIZE_1_0, cbs, "acp_http_cbs")) return NULL;
    acp_http *h = calloc(1, sizeof *h);
    if (!h || !(h->easy = curl_easy_init())) {
        free(h);
        acp_error_set(ACP_ENOMEM, "HTTP: out of memory starting %s %s", method, url);
        return NULL;
    }
    h->c = c;
    h->cbs = cb;
    h->user = user;
    bool ok = true;
    for (const char *const *p = headers; p && *p && ok; p++) {
        struct curl_slist *l = curl_slist_append(h->headers, *p);
        if (l)
            h->headers = l;
        else
            ok = false;
    }
    if (body && ok) {
        ok = (h->body = malloc(n ? n : 1)) != NULL;
        if (ok) memcpy(h->body, body, n);
    }
    CURL *e = h->easy;
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_PRIVATE, h);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, h->err);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, h);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h->headers);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, ""); /* what curl can decode */
    if (!strcmp(method, "POST")) {
        curl_easy_setopt(e, CURLOPT_POST, 1L);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, h->body ? h->body : "");
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(h->body ? n : 0));
    } else if (strcmp(method, "GET")) {
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
    }
    if (!ok) {
        http_free(h);
        acp_error_set(ACP_ENOMEM, "HTTP: out of memory starting %s %s", method, url);
        return NULL;
    }
    h->next_fresh = NULL;
    if (!c->fresh) c->fresh_tail = &c->fresh;
    *c->fresh_tail = h;
    c->fresh_tail = &h->next_fresh;
    uv_timer_start(&c->reaper, on_reaper, 0, 0);
    return h;
}

void acp_http_abort(acp_http *h)
{
    if (h->aborted) return;
    h->aborted = true;
    bury(h);
}

void acp_http_pause(acp_http *h, bool pause)
{
    if (h->aborted || h->paused == pause) return;
    h->paused = pause;
    /* Pausing only takes the flag: the next bytes are refused with CURL_WRITEFUNC_PAUSE, which
     * pauses the transfer (calling curl_easy_pause from the loop would need the handle added).
     * Resuming must tell curl, which delivers what it kept, then reads on. */
    if (!pause && h->added) curl_easy_pause(h->easy, CURLPAUSE_CONT);
}

long acp_http_status(acp_http *h)
{
    long status = 0;
    curl_easy_getinfo(h->easy, CURLINFO_RESPONSE_CODE, &status);
    return status;
}

const char *acp_http_content_type(acp_http *h)
{
    char *ct = NULL;
    curl_easy_getinfo(h->easy, CURLINFO_CONTENT_TYPE, &ct);
    return ct;
}

const char *acp_http_header(acp_http *h, const char *name)
{
    struct curl_header *hd = NULL;
    if (curl_easy_header(h->easy, name, 0, CURLH_HEADER, -1, &hd) != CURLHE_OK) return NULL;
    return hd->value;
}

const char *acp_http_error(acp_http *h)
{
    return h->err[0] ? h->err : NULL;
}

#include "mcp/http_easy.h" /* the private accessor net/shttp_client.c uses */

void *acp_http_easy(acp_http *h)
{
    return h->easy;
}
