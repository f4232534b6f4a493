/* SPDX-License-Identifier: Apache-2.0 */
/* A program with its own libcurl, linked with libacp.a (issue 19, item 2).
 *
 * libacp loads libcurl lazily through shims (mcp/libcurl_lazy.c) that define curl_easy_init &
 * co. When libacp.a exported them, this program's own curl calls silently went to our shims.
 * Here the program's curl_easy_init must be libcurl's own, an HTTP exchange through it must
 * work, and an acp_http exchange (which reaches libacp's lazily loaded libcurl) must work in
 * the same process. It also defines names libacp uses internally (session_open, ws_new): with
 * internal names global in libacp.a the link fails with a multiple definition.
 *
 * The peer is a tiny HTTP server on 127.0.0.1 in a thread: it answers each request with its
 * sequence number, so each side sees that its own request was answered. */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "acp/http.h"

#define EXCHANGES 2

/* Names that libacp uses for its own insides: this program may have them too. */
int session_open(void);
int ws_new(void);
int session_open(void)
{
    return 11;
}
int ws_new(void)
{
    return 12;
}

static int fail(const char *what)
{
    fprintf(stderr, "own_curl: %s\n", what);
    return 1;
}

/* ---- the loopback server: EXCHANGES connections, one request each, then it returns ---- */

static void *serve(void *arg)
{
    int lfd = *(int *)arg;
    for (int i = 0; i < EXCHANGES; i++) {
        int fd = accept(lfd, NULL, NULL);
        if (fd < 0) break;
        char req[4096];
        size_t got = 0;
        ssize_t n;
        while (got < sizeof req - 1 && (n = read(fd, req + got, sizeof req - 1 - got)) > 0) {
            got += (size_t)n;
            req[got] = 0;
            if (strstr(req, "\r\n\r\n")) break;
        }
        char resp[128];
        int len = snprintf(resp, sizeof resp,
                           "HTTP/1.1 200 OK\r\nContent-Length: 8\r\nConnection: close\r\n\r\n"
                           "answer %d",
                           i);
        if (write(fd, resp, (size_t)len) != len) perror("own_curl: write");
        close(fd);
    }
    return NULL;
}

/* ---- the program's own libcurl ---- */

static size_t collect(char *p, size_t size, size_t n, void *user)
{
    strncat(user, p, size * n < 63 - strlen(user) ? size * n : 63 - strlen(user));
    return size * n;
}

static int own_exchange(const char *url)
{
    /* The address this program calls must be libcurl's definition, not a copy in libacp.a. */
    void *lib = dlopen("libcurl.so.4", RTLD_NOW | RTLD_NOLOAD);
    if (!lib) return fail("libcurl.so.4 is not loaded: the program does not use its own libcurl");
    CURL *(*real)(void);
    *(void **)&real = dlsym(lib, "curl_easy_init"); /* POSIX's way to get a function */
    dlclose(lib);
    if (curl_easy_init != real) return fail("curl_easy_init is not libcurl's own");
    printf("own libcurl: %s\n", curl_version());

    char body[64] = "";
    CURL *e = curl_easy_init();
    if (!e) return fail("curl_easy_init");
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, (void *)body);
    CURLcode rc = curl_easy_perform(e);
    curl_easy_cleanup(e);
    if (rc != CURLE_OK) return fail(curl_easy_strerror(rc));
    printf("own libcurl got: %s\n", body);
    return strcmp(body, "answer 0") ? fail("own libcurl: wrong body") : 0;
}

/* ---- libacp's lazily loaded libcurl ---- */

struct acp_side {
    char body[64];
    int result;
    long status;
    int done;
};

static int on_data(acp_http *h, const char *p, size_t n, void *user)
{
    struct acp_side *s = user;
    strncat(s->body, p, n < 63 - strlen(s->body) ? n : 63 - strlen(s->body));
    return 0;
}

static void on_done(acp_http *h, int result, long status, void *user)
{
    struct acp_side *s = user;
    s->result = result;
    s->status = status;
    s->done = 1;
}

static int acp_exchange(const char *url)
{
    uv_loop_t loop;
    if (uv_loop_init(&loop)) return fail("uv_loop_init");
    struct acp_side s = {0};
    acp_http_client *c = acp_http_client_new(&loop);
    if (!c) return fail("acp_http_client_new");
    static const acp_http_cbs cbs = {
        .struct_size = sizeof(acp_http_cbs), .on_data = on_data, .on_done = on_done};
    if (!acp_http_start(c, "GET", url, NULL, NULL, 0, &cbs, &s)) return fail("acp_http_start");
    while (!s.done && uv_run(&loop, UV_RUN_ONCE)) {}
    acp_http_client_close(c, NULL, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&loop)) return fail("uv_loop_close: handles left open");
    printf("acp_http got: %s (result %d, status %ld)\n", s.body, s.result, s.status);
    return s.done && s.result == 0 && s.status == 200 && !strcmp(s.body, "answer 1")
               ? 0
               : fail("acp_http: wrong answer");
}

int main(void)
{
    if (session_open() != 11 || ws_new() != 12) return fail("our own session_open/ws_new");

    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof a) || listen(lfd, 4) ||
        getsockname(lfd, (struct sockaddr *)&a, &alen))
        return fail("loopback listener");
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/", ntohs(a.sin_port));
    pthread_t t;
    if (pthread_create(&t, NULL, serve, &lfd)) return fail("pthread_create");

    if (curl_global_init(CURL_GLOBAL_DEFAULT)) return fail("curl_global_init");
    int bad = own_exchange(url);
    if (!bad) bad = acp_exchange(url);
    curl_global_cleanup();

    /* On failure the server may still wait for a connection: wake it and let it end. */
    shutdown(lfd, SHUT_RDWR);
    pthread_join(t, NULL);
    close(lfd);
    return bad;
}
