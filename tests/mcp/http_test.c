/* SPDX-License-Identifier: Apache-2.0 */
/* MCP over Streamable HTTP and the legacy SSE transport against server-everything from npm,
 * each started by the test on a free 127.0.0.1 port (tests/mcp/localhost.mjs pins the host:
 * the server itself listens on every interface). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>

#include "acp/rt.h"
#include "harness.h"

#define EVERYTHING SRC_DIR "/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
#define LOCALHOST  SRC_DIR "/tests/mcp/localhost.mjs"
#define SECRET     "hdr-secret-value-42"

typedef struct server {
    acp_proc *proc;
    int port;
    char out[65536]; /* what it printed, both streams */
    size_t len;
    const char *awaited;
    bool found, exited;
} server;

static void on_output(acp_proc *p, const char *buf, size_t n, void *user)
{
    server *s = user;
    if (s->len + n >= sizeof s->out) n = sizeof s->out - s->len - 1;
    memcpy(s->out + s->len, buf, n);
    s->len += n;
    s->out[s->len] = 0;
    if (s->awaited && strstr(s->out, s->awaited)) s->found = true;
}

static void on_exit_cb(acp_proc *p, int64_t status, int sig, void *user)
{
    server *s = user;
    s->exited = s->found = true; /* wake any wait; the caller checks exited */
}

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    return ntohs(a.sin_port);
}

static void await_output(uv_loop_t *loop, server *s, const char *text)
{
    s->awaited = text;
    s->found = strstr(s->out, text) != NULL;
    h_run_until(loop, &s->found);
    if (s->exited && !strstr(s->out, text)) fail_msg("server exited:\n%s", s->out);
}

/* Runs argv with its stderr collected in s->out (s was zeroed by the caller). */
static void spawn(uv_loop_t *loop, server *s, char **argv, char **env)
{
    acp_proc_opts o = {.struct_size = sizeof(acp_proc_opts),
                       .file = argv[0],
                       .argv = argv,
                       .env = env,
                       .pipe_stderr = true,
                       .on_stderr = on_output,
                       .on_exit = on_exit_cb,
                       .user = s};
    if (acp_proc_spawn(loop, &o, &s->proc)) fail_msg("spawn: %s", acp_error_last()->message);
}

/* stdout and stderr both go to on_output: streamableHttp logs with console.log. */
static void start_server(uv_loop_t *loop, server *s, const char *mode, const char *ready)
{
    memset(s, 0, sizeof *s);
    s->port = free_port();
    char port[32];
    snprintf(port, sizeof port, "PORT=%d", s->port);
    /* console.log goes to stdout, which acp_proc does not deliver: send it to stderr. */
    char *argv[] = {"/bin/sh",  "-c",         "exec \"$0\" \"$@\" 1>&2",
                    NODE_BIN,   "--import",   LOCALHOST,
                    EVERYTHING, (char *)mode, NULL};
    char *env[] = {port, "PATH=/usr/bin:/bin", NULL};
    spawn(loop, s, argv, env);
    await_output(loop, s, ready);
}

/* tests/mcp/http-fake.mjs picks its own port and prints it. */
static void start_fake(uv_loop_t *loop, server *s, const char *mode)
{
    memset(s, 0, sizeof *s);
    char *argv[] = {NODE_BIN, SRC_DIR "/tests/mcp/http-fake.mjs", (char *)mode, NULL};
    char *env[] = {"PATH=/usr/bin:/bin", NULL};
    spawn(loop, s, argv, env);
    await_output(loop, s, "\n");
    assert_int_equal(sscanf(s->out, "listening on %d", &s->port), 1);
}

static void stop_server(uv_loop_t *loop, server *s)
{
    bool done = false;
    acp_proc_stop(s->proc, 200, h_set_flag, &done); /* our server: no need to wait long */
    h_run_until(loop, &done);
}

typedef struct ctx {
    h_log log; /* first: h_on_log takes the same user pointer */
    bool roots_tool;
} ctx;

/* get-roots-list is registered after initialize and announced with list_changed (on the GET
 * stream, or the SSE stream): the re-list shows it. */
static void on_change(acp_mcp_set *s, size_t i, void *user)
{
    for (size_t t = 0; t < acp_mcp_tool_count(s, i); t++)
        if (!strcmp(acp_mcp_tool_name(s, i, t), "get-roots-list")) ((ctx *)user)->roots_tool = true;
}

static void exercise(uv_loop_t *loop, acp_mcp_set *set, const char *name, ctx *cx)
{
    h_call c;
    /* A request from the server (roots/list) answered over HTTP. */
    h_run_until(loop, &cx->roots_tool);
    const char *roots = h_call_sync(loop, set, name, "get-roots-list", "{}", &c);
    assert_int_equal(c.status, 0);
    assert_non_null(strstr(roots, "file:///srv/proj%20one"));
    h_call_clear(&c);

    const char *text = h_call_sync(loop, set, name, "echo", "{\"message\":\"over http\"}", &c);
    assert_int_equal(c.status, 0);
    assert_string_equal(text, "Echo: over http");
    h_call_clear(&c);

    text = h_call_sync(loop, set, name, "trigger-long-running-operation",
                       "{\"duration\":0.3,\"steps\":3}", &c);
    assert_int_equal(c.status, 0);
    assert_int_equal(c.progress, 3);
    assert_non_null(strstr(text, "completed"));
    h_call_clear(&c);
}

static void streamable_http(void **state)
{
    int fds = h_fd_count();
    uv_loop_t loop;
    uv_loop_init(&loop);
    server srv;
    start_server(&loop, &srv, "streamableHttp", "listening on port");
    ctx cx = {0};
    acp_mcp_opts o = {.struct_size = sizeof(acp_mcp_opts),
                      .http = true,
                      .on_log = h_on_log,
                      .on_change = on_change,
                      .user = &cx};
    const char *roots[] = {"/srv/proj one"};
    char *json = h_fmt("[{\"type\":\"http\",\"name\":\"web\",\"url\":\"http://127.0.0.1:%d/mcp\","
                       "\"headers\":[{\"name\":\"X-Api-Key\",\"value\":\"" SECRET "\"}]},"
                       "{\"type\":\"http\",\"name\":\"dead\",\"url\":\"http://127.0.0.1:1/mcp\","
                       "\"headers\":[]}]",
                       srv.port);
    acp_mcp_set *set = h_open(&loop, json, &o, roots, 1);
    h_wait(&loop, set);
    const char *why = NULL;
    assert_int_equal(acp_mcp_server_status(set, 0, &why), ACP_MCP_READY);
    assert_string_equal(acp_mcp_server_transport(set, 0), "http");
    assert_string_equal(acp_mcp_server_protocol(set, 0), "2025-11-25");
    assert_true(acp_mcp_tool_count(set, 0) > 5);
    assert_int_equal(acp_mcp_server_status(set, 1, &why), ACP_MCP_FAILED);
    assert_non_null(strstr(why, "initialize failed"));
    exercise(&loop, set, "web", &cx);
    /* The GET stream was opened with the session id. */
    if (!strstr(srv.out, "Establishing new SSE stream for session")) fail_msg("%s", srv.out);

    /* Cancel mid-stream; the session goes on. */
    h_call c = {0};
    c.cancel_on_progress = true;
    h_call_start(set, "web", "trigger-long-running-operation", "{\"duration\":30,\"steps\":300}",
                 &c);
    h_run_until(&loop, &c.done);
    assert_int_equal(c.status, ACP_ECANCELLED);
    h_call_clear(&c);
    const char *text = h_call_sync(&loop, set, "web", "echo", "{\"message\":\"again\"}", &c);
    assert_string_equal(text, "Echo: again");
    h_call_clear(&c);

    h_close(&loop, set);
    /* DELETE ended the MCP session on the server. */
    await_output(&loop, &srv, "Received session termination request");
    stop_server(&loop, &srv);
    h_loop_end(&loop);
    assert_int_equal(h_fd_count(), fds); /* sockets, pipes and loop fds all closed */
    assert_true(cx.log.text == NULL || strstr(cx.log.text, SECRET) == NULL);
    free(cx.log.text);
    free(json);
}

static void legacy_sse(void **state)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    server srv;
    start_server(&loop, &srv, "sse", "Server is running on port");
    ctx cx = {0};
    acp_mcp_opts o = {.struct_size = sizeof(acp_mcp_opts),
                      .sse = true,
                      .on_log = h_on_log,
                      .on_change = on_change,
                      .user = &cx};
    const char *roots[] = {"/srv/proj one"};
    char *json =
        h_fmt("[{\"type\":\"sse\",\"name\":\"old\",\"url\":\"http://127.0.0.1:%d/sse\","
              "\"headers\":[{\"name\":\"Authorization\",\"value\":\"Bearer " SECRET "\"}]}]",
              srv.port);
    acp_mcp_set *set = h_open(&loop, json, &o, roots, 1);
    h_wait(&loop, set);
    const char *why = NULL;
    assert_int_equal(acp_mcp_server_status(set, 0, &why), ACP_MCP_READY);
    assert_string_equal(acp_mcp_server_transport(set, 0), "sse");
    exercise(&loop, set, "old", &cx);
    h_close(&loop, set);
    /* Closing the event stream ends the server's session. */
    await_output(&loop, &srv, "Client Disconnected");
    stop_server(&loop, &srv);
    h_loop_end(&loop);
    assert_true(cx.log.text == NULL || strstr(cx.log.text, SECRET) == NULL);
    free(cx.log.text);
    free(json);
}

typedef struct ready_wait {
    bool ready;
} ready_wait;

static void on_ready(acp_mcp_set *s, size_t i, void *user)
{
    if (acp_mcp_server_status(s, i, NULL) == ACP_MCP_READY) ((ready_wait *)user)->ready = true;
}

/* The server forgets the MCP session (404 to its id): the call in flight fails, a new
 * session is initialized, and calls work again. */
static void session_expiry(void **state)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    server srv;
    start_fake(&loop, &srv, "session");
    ready_wait rw = {0};
    acp_mcp_opts o = {
        .struct_size = sizeof(acp_mcp_opts), .http = true, .on_change = on_ready, .user = &rw};
    char *json = h_fmt("[{\"type\":\"http\",\"name\":\"f\",\"url\":\"http://127.0.0.1:%d/mcp\","
                       "\"headers\":[{\"name\":\"Content-Type\",\"value\":\"text/plain\"}]}]",
                       srv.port);
    acp_mcp_set *set = h_open(&loop, json, &o, NULL, 0);
    h_wait(&loop, set);
    assert_int_equal(acp_mcp_server_status(set, 0, NULL), ACP_MCP_READY);
    h_call c;
    /* A client Content-Type would clash with the transport's own: it is not sent. */
    assert_string_equal(h_call_sync(&loop, set, "f", "echo", "{\"message\":\"one\"}", &c),
                        "one (session 1)");
    h_call_clear(&c);
    assert_string_equal(h_call_sync(&loop, set, "f", "forget", "{}", &c), "forgotten");
    h_call_clear(&c);
    rw.ready = false;
    h_call_sync(&loop, set, "f", "echo", "{\"message\":\"lost\"}", &c);
    assert_int_equal(c.status, ACP_ECLOSED);
    assert_non_null(strstr(c.error, "HTTP 404"));
    h_call_clear(&c);
    h_run_until(&loop, &rw.ready);
    assert_string_equal(h_call_sync(&loop, set, "f", "echo", "{\"message\":\"two\"}", &c),
                        "two (session 2)");
    h_call_clear(&c);
    h_close(&loop, set);
    /* The new session was ended with DELETE at close. */
    await_output(&loop, &srv, "DELETE session-2");
    stop_server(&loop, &srv);
    h_loop_end(&loop);
    free(json);
}

/* The legacy transport's endpoint must stay on the stream's origin: our messages, and the
 * client's headers with them, never go where a server points. */
static void sse_foreign_endpoint(void **state)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    server srv;
    start_fake(&loop, &srv, "evil-endpoint");
    acp_mcp_opts o = {.struct_size = sizeof(acp_mcp_opts), .sse = true};
    char *json = h_fmt("[{\"type\":\"sse\",\"name\":\"evil\",\"url\":\"http://127.0.0.1:%d/sse\","
                       "\"headers\":[]}]",
                       srv.port);
    acp_mcp_set *set = h_open(&loop, json, &o, NULL, 0);
    h_wait(&loop, set);
    const char *why = NULL;
    assert_int_equal(acp_mcp_server_status(set, 0, &why), ACP_MCP_FAILED);
    assert_non_null(strstr(why, "origin"));
    h_close(&loop, set);
    stop_server(&loop, &srv);
    h_loop_end(&loop);
    assert_null(strstr(srv.out, "POST")); /* nothing was sent anywhere */
    free(json);
}

/* POSTs the legacy server refuses: during initialize the server fails, later only the call. */
static void sse_post_refused(void **state)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    server a, b;
    start_fake(&loop, &a, "sse-init-500");
    start_fake(&loop, &b, "sse-call-500");
    acp_mcp_opts o = {.struct_size = sizeof(acp_mcp_opts), .sse = true};
    char *json = h_fmt("[{\"type\":\"sse\",\"name\":\"a\",\"url\":\"http://127.0.0.1:%d/sse\","
                       "\"headers\":[]},"
                       "{\"type\":\"sse\",\"name\":\"b\",\"url\":\"http://127.0.0.1:%d/sse\","
                       "\"headers\":[]}]",
                       a.port, b.port);
    acp_mcp_set *set = h_open(&loop, json, &o, NULL, 0);
    h_wait(&loop, set);
    const char *why = NULL;
    assert_int_equal(acp_mcp_server_status(set, 0, &why), ACP_MCP_FAILED);
    assert_non_null(strstr(why, "initialize failed: POST answered HTTP 500"));
    assert_int_equal(acp_mcp_server_status(set, 1, NULL), ACP_MCP_READY);
    h_call c;
    h_call_sync(&loop, set, "b", "echo", "{}", &c);
    assert_int_equal(c.status, ACP_ECLOSED);
    assert_non_null(strstr(c.error, "HTTP 500"));
    h_call_clear(&c);
    assert_int_equal(acp_mcp_server_status(set, 1, NULL), ACP_MCP_READY);
    h_close(&loop, set);
    stop_server(&loop, &a);
    stop_server(&loop, &b);
    h_loop_end(&loop);
    free(json);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    h_uv_warm_up();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(streamable_http), cmocka_unit_test(legacy_sse),
        cmocka_unit_test(session_expiry), cmocka_unit_test(sse_foreign_endpoint),
        cmocka_unit_test(sse_post_refused)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
