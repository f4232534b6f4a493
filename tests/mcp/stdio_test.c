/* SPDX-License-Identifier: Apache-2.0 */
/* MCP over stdio against real servers: @modelcontextprotocol/server-everything and
 * server-filesystem from npm, and tests/mcp/fake-server.mjs for what they cannot show. */
#include <errno.h>
#include <signal.h>
#include <sys/stat.h>

#include "harness.h"

#define EVERYTHING SRC_DIR "/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
#define FILESYSTEM SRC_DIR "/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
#define FAKE       SRC_DIR "/tests/mcp/fake-server.mjs"

static char *everything(const char *name, const char *env)
{
    return h_fmt("{\"name\":\"%s\",\"command\":\"%s\",\"args\":[\"%s\",\"stdio\"],\"env\":%s}",
                 name, NODE_BIN, EVERYTHING, env ? env : "[]");
}

static char *fake(const char *name, const char *mode, const char *env)
{
    return h_fmt("{\"name\":\"%s\",\"command\":\"%s\",\"args\":[\"%s\",\"%s\"],\"env\":%s}", name,
                 NODE_BIN, FAKE, mode, env ? env : "[]");
}

static size_t tool_index(acp_mcp_set *s, size_t srv, const char *name)
{
    for (size_t t = 0; t < acp_mcp_tool_count(s, srv); t++)
        if (!strcmp(acp_mcp_tool_name(s, srv, t), name)) return t;
    return (size_t)-1;
}

/* server-everything registers get-roots-list after initialize (clients with roots) and says
 * so with tools/list_changed: wait for the re-list through on_change. */
typedef struct change_wait {
    acp_mcp_set *set;
    const char *tool;
    bool seen;
} change_wait;

static void on_change(acp_mcp_set *s, size_t i, void *user)
{
    change_wait *w = user;
    if (w->tool && tool_index(s, i, w->tool) != (size_t)-1) w->seen = true;
}

static void everything_stdio(void **state)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    change_wait cw = {.tool = "get-roots-list"};
    acp_mcp_opts o = {.struct_size = sizeof(acp_mcp_opts), .on_change = on_change, .user = &cw};
    char *srv = everything("ev", "[{\"name\":\"MY_TOKEN\",\"value\":\"hunter2-secret\"}]");
    char *json = h_fmt("[%s]", srv);
    const char *roots[] = {"/tmp/a dir/é"};
    acp_mcp_set *s = h_open(&loop, json, &o, roots, 1);
    h_wait(&loop, s);
    const char *why = NULL;
    assert_int_equal(acp_mcp_server_status(s, 0, &why), ACP_MCP_READY);
    assert_string_equal(acp_mcp_status_name(ACP_MCP_READY), "ready");
    assert_string_equal(acp_mcp_server_protocol(s, 0), "2025-11-25");
    assert_string_equal(json_string_value(json_object_get(acp_mcp_server_info(s, 0), "name")),
                        "mcp-servers/everything");
    assert_string_equal(acp_mcp_server_transport(s, 0), "stdio");
    size_t echo = tool_index(s, 0, "echo");
    assert_true(echo != (size_t)-1);
    assert_non_null(acp_mcp_tool_description(s, 0, echo));
    assert_true(json_is_object(acp_mcp_tool_input_schema(s, 0, echo)));
    size_t si, ti;
    assert_int_equal(acp_mcp_tool_find(s, "ev.echo", &si, &ti), 0);
    assert_int_equal(ti, echo);
    assert_int_equal(acp_mcp_tool_find(s, "ev.nope", &si, &ti), ACP_ENOTFOUND);

    h_call c;
    const char *text = h_call_sync(&loop, s, "ev", "echo", "{\"message\":\"hi there\"}", &c);
    assert_int_equal(c.status, 0);
    assert_string_equal(text, "Echo: hi there");
    h_call_clear(&c);

    /* Exactly the given env on a minimal base, and rt's tag (include/acp/rt.h). */
    text = h_call_sync(&loop, s, "ev", "get-env", "{}", &c);
    assert_int_equal(c.status, 0);
    json_t *env = json_loads(text, 0, NULL);
    assert_non_null(env);
    assert_string_equal(json_string_value(json_object_get(env, "MY_TOKEN")), "hunter2-secret");
    assert_string_equal(json_string_value(json_object_get(env, "PATH")),
                        "/usr/local/bin:/usr/bin:/bin");
    const char *k;
    json_t *v;
    json_object_foreach(env, k, v)
    {
        bool allowed = !strcmp(k, "MY_TOKEN") || !strcmp(k, "PATH") || !strcmp(k, "HOME") ||
                       !strcmp(k, "LANG") || !strcmp(k, "ACP_PROC_TAG");
        if (!allowed) fail_msg("unexpected variable in the server's environment: %s", k);
    }
    json_decref(env);
    h_call_clear(&c);

    /* Roots, as percent-encoded file URIs. */
    if (tool_index(s, 0, "get-roots-list") == (size_t)-1) h_run_until(&loop, &cw.seen);
    text = h_call_sync(&loop, s, "ev", "get-roots-list", "{}", &c);
    assert_int_equal(c.status, 0);
    assert_non_null(strstr(text, "file:///tmp/a%20dir/%C3%A9"));
    h_call_clear(&c);

    /* A tool-level error is a result; an unknown tool is the server's error. */
    h_call_sync(&loop, s, "ev", "no-such-tool", "{}", &c);
    assert_true(c.status == 0 ? json_is_true(json_object_get(c.result, "isError"))
                              : c.status == ACP_EPROTO);
    h_call_clear(&c);

    assert_int_equal(acp_mcp_call_tool(s, "nope", "echo", NULL, &h_cbs, &c, NULL), ACP_ENOTFOUND);
    h_close(&loop, s);
    h_loop_end(&loop);
    free(srv);
    free(json);
}

static void cancel_first(h_call *c)
{
    acp_mcp_call_cancel(c->handle);
}

static void progress_and_cancel(void **state)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    char *srv = everything("ev", NULL);
    char *json = h_fmt("[%s]", srv);
    acp_mcp_set *s = h_open(&loop, json, NULL, NULL, 0);
    h_wait(&loop, s);
    assert_int_equal(acp_mcp_server_status(s, 0, NULL), ACP_MCP_READY);

    h_call c;
    const char *text = h_call_sync(&loop, s, "ev", "trigger-long-running-operation",
                                   "{\"duration\":0.3,\"steps\":3}", &c);
    assert_int_equal(c.status, 0);
    assert_int_equal(c.progress, 3);
    assert_true(c.last_total == 3);
    assert_non_null(strstr(text, "Long running operation completed"));
    h_call_clear(&c);

    /* Cancel at the first progress: on_done says cancelled, the server lives on. */
    memset(&c, 0, sizeof c);
    c.on_first_progress = cancel_first;
    h_call_start(s, "ev", "trigger-long-running-operation", "{\"duration\":60,\"steps\":600}", &c);
    h_run_until(&loop, &c.done);
    assert_int_equal(c.status, ACP_ECANCELLED);
    assert_int_equal(c.progress, 1);
    h_call_clear(&c);
    text = h_call_sync(&loop, s, "ev", "echo", "{\"message\":\"after\"}", &c);
    assert_string_equal(text, "Echo: after");
    h_call_clear(&c);

    h_close(&loop, s);
    h_loop_end(&loop);
    free(srv);
    free(json);
}

/* Pagination, requests from the server (ping, roots/list, an unknown one -> -32601),
 * list_changed, a JSON-RPC error, stderr bounded and scrubbed, roots/list_changed. */
typedef struct fk_ctx {
    h_log log; /* first: h_on_log takes the same user pointer */
    bool six;
} fk_ctx;

static void on_six(acp_mcp_set *s, size_t i, void *user)
{
    if (acp_mcp_tool_count(s, i) == 6) ((fk_ctx *)user)->six = true;
}

static void fake_protocol(void **state)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    fk_ctx ctx = {0};
    h_log log = {0};
    acp_mcp_opts o = {
        .struct_size = sizeof(acp_mcp_opts), .on_log = h_on_log, .on_change = on_six, .user = &ctx};
    char *srv = fake("fk", "paged",
                     "[{\"name\":\"FAKE_SECRET\",\"value\":\"s3cr3t-value\"},"
                     "{\"name\":\"FAKE_CHATTER\",\"value\":\"1\"}]");
    char *json = h_fmt("[%s]", srv);
    const char *roots[] = {"/work/x", "/srv/y"};
    acp_mcp_set *s = h_open(&loop, json, &o, roots, 2);
    h_wait(&loop, s);
    assert_int_equal(acp_mcp_server_status(s, 0, NULL), ACP_MCP_READY);
    assert_string_equal(acp_mcp_server_protocol(s, 0), "2025-06-18");
    assert_int_equal(acp_mcp_tool_count(s, 0), 5); /* three pages */
    assert_string_equal(acp_mcp_tool_name(s, 0, 4), "t5");

    const char *roots2[] = {"/work/z"};
    assert_int_equal(acp_mcp_set_roots(s, roots2, 1), 0);
    h_call c;
    const char *text = h_call_sync(&loop, s, "fk", "report", "{}", &c);
    assert_int_equal(c.status, 0);
    json_t *r = json_loads(text, 0, NULL);
    assert_non_null(r);
    assert_true(json_is_object(json_object_get(r, "ping")));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "unknown"), "code")),
                     -32601);
    json_t *rl = json_object_get(json_object_get(r, "roots"), "roots");
    assert_int_equal(json_array_size(rl), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(rl, 0), "uri")),
                        "file:///work/z");
    json_t *seen = json_object_get(r, "seen");
    assert_int_equal(json_integer_value(json_object_get(seen, "rootsChanged")), 1);
    json_t *init = json_object_get(seen, "initialize");
    assert_string_equal(json_string_value(json_object_get(init, "protocolVersion")), "2025-11-25");
    assert_true(json_is_true(json_object_get(
        json_object_get(json_object_get(init, "capabilities"), "roots"), "listChanged")));
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(init, "clientInfo"), "name")), "libacp");
    json_decref(r);
    h_call_clear(&c);

    h_call_sync(&loop, s, "fk", "fail", "{}", &c);
    assert_int_equal(c.status, ACP_EPROTO);
    assert_non_null(strstr(c.error, "bad arguments for fail"));
    h_call_clear(&c);
    /* A server that echoes a secret in its error: the error we pass on has it replaced. */
    h_call_sync(&loop, s, "fk", "leak", "{}", &c);
    assert_int_equal(c.status, ACP_EPROTO);
    assert_null(strstr(c.error, "s3cr3t-value"));
    assert_non_null(strstr(c.error, "cannot use ***"));
    h_call_clear(&c);

    /* list_changed: the new tool appears once the re-list is done. */
    h_call_sync(&loop, s, "fk", "change", "{}", &c);
    h_call_clear(&c);
    h_call_sync(&loop, s, "fk", "t1", "{}", &c); /* a round trip after the notification */
    h_call_clear(&c);
    h_run_until(&loop, &ctx.six);
    assert_string_equal(acp_mcp_tool_name(s, 0, 5), "t6");

    h_close(&loop, s);
    h_loop_end(&loop);
    log = ctx.log;
    /* stderr: passed on, bounded, with the secret value replaced. */
    assert_non_null(log.text);
    assert_null(strstr(log.text, "s3cr3t-value"));
    assert_non_null(strstr(log.text, "token is ***!"));
    assert_non_null(strstr(log.text, "chatter 10\n"));
    assert_null(strstr(log.text, "chatter 400\n"));
    assert_non_null(strstr(log.text, "more stderr lines not shown"));
    free(log.text);
    free(srv);
    free(json);
}

static void kill_on_first(h_call *c)
{
    int *pid = c->user;
    kill(*pid, SIGKILL);
}

/* A crash and a kill mid-call: the call fails, the server is failed, the set (and the other
 * server in it) lives on. */
static void crash_mid_call(void **state)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    char *a = fake("a", "paged", NULL), *b = everything("b", NULL), *c2 = fake("c", "paged", NULL);
    char *json = h_fmt("[%s,%s,%s]", a, b, c2);
    acp_mcp_set *s = h_open(&loop, json, NULL, NULL, 0);
    h_wait(&loop, s);
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(acp_mcp_server_status(s, i, NULL), ACP_MCP_READY);

    h_call c;
    h_call_sync(&loop, s, "a", "crash", "{}", &c);
    assert_int_equal(c.status, ACP_ECLOSED);
    assert_non_null(c.error);
    h_call_clear(&c);
    const char *why;
    assert_int_equal(acp_mcp_server_status(s, 0, &why), ACP_MCP_FAILED);
    assert_non_null(why);
    assert_int_equal(acp_mcp_call_tool(s, "a", "t1", NULL, &h_cbs, &c, NULL), ACP_ECLOSED);

    /* SIGKILL from outside while a progress-reporting call runs on b. */
    int pids[16];
    size_t n = h_children(pids, 16);
    assert_true(n >= 2);
    int target = 0;
    for (size_t i = 0; i < n; i++) {
        char path[64], cmd[4096] = {0};
        snprintf(path, sizeof path, "/proc/%d/cmdline", pids[i]);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        size_t k = fread(cmd, 1, sizeof cmd - 1, f);
        fclose(f);
        for (size_t j = 0; j < k; j++)
            if (!cmd[j]) cmd[j] = ' ';
        if (strstr(cmd, "server-everything")) target = pids[i];
    }
    assert_true(target > 0);
    memset(&c, 0, sizeof c);
    c.user = &target;
    c.on_first_progress = kill_on_first;
    h_call_start(s, "b", "trigger-long-running-operation", "{\"duration\":60,\"steps\":600}", &c);
    h_run_until(&loop, &c.done);
    assert_int_equal(c.status, ACP_ECLOSED);
    h_call_clear(&c);
    assert_int_equal(acp_mcp_server_status(s, 1, NULL), ACP_MCP_FAILED);

    const char *text = h_call_sync(&loop, s, "c", "t2", "{}", &c);
    assert_string_equal(text, "called t2");
    h_call_clear(&c);
    h_close(&loop, s);
    h_loop_end(&loop);
    free(a);
    free(b);
    free(c2);
    free(json);
}

/* Servers that cannot be used fail with a reason and never hold up the others. */
static void failing_servers(void **state)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    char *silent = fake("silent", "silent", NULL);
    char *ok = fake("ok", "paged", NULL);
    char *json = h_fmt("[%s,"
                       "{\"name\":\"missing\",\"command\":\"/nonexistent/mcp-server\",\"args\":[],"
                       "\"env\":[]},"
                       "{\"name\":\"relative\",\"command\":\"npx\",\"args\":null,\"env\":null},"
                       "%s]",
                       silent, ok);
    acp_mcp_opts o = {.struct_size = sizeof(acp_mcp_opts), .connect_timeout_ms = 700};
    acp_mcp_set *s = h_open(&loop, json, &o, NULL, 0);
    const char *why = NULL;
    /* Known at once: no process needed to tell. */
    assert_int_equal(acp_mcp_server_status(s, 2, &why), ACP_MCP_FAILED);
    assert_string_equal(why, "command must be an absolute path: 'npx'");
    assert_int_equal(acp_mcp_server_status(s, 1, &why), ACP_MCP_FAILED);
    assert_non_null(strstr(why, "/nonexistent/mcp-server"));
    assert_int_equal(acp_mcp_server_status(s, 0, NULL), ACP_MCP_CONNECTING);
    h_wait(&loop, s);
    assert_int_equal(acp_mcp_server_status(s, 0, &why), ACP_MCP_FAILED);
    assert_non_null(strstr(why, "initialize"));
    assert_int_equal(acp_mcp_server_status(s, 3, NULL), ACP_MCP_READY);
    h_close(&loop, s);
    h_loop_end(&loop);
    free(silent);
    free(ok);
    free(json);
}

/* A tools/call with no answer times out; the server stays usable. */
static void call_timeout(void **state)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    char *srv = fake("fk", "paged", NULL);
    char *json = h_fmt("[%s]", srv);
    acp_mcp_opts o = {.struct_size = sizeof(acp_mcp_opts), .call_timeout_ms = 300};
    acp_mcp_set *s = h_open(&loop, json, &o, NULL, 0);
    h_wait(&loop, s);
    h_call c;
    h_call_sync(&loop, s, "fk", "hang", "{}", &c);
    assert_int_equal(c.status, ACP_ETIMEDOUT);
    h_call_clear(&c);
    const char *text = h_call_sync(&loop, s, "fk", "report", "{}", &c);
    json_t *r = json_loads(text, 0, NULL);
    /* The timed-out request was cancelled on the wire. */
    assert_non_null(json_object_get(json_object_get(r, "seen"), "cancelled"));
    json_decref(r);
    h_call_clear(&c);
    h_close(&loop, s);
    h_loop_end(&loop);
    free(srv);
    free(json);
}

/* Close while calls run: they end with ECLOSED before close returns, every process of every
 * server's group is gone after done. */
static void teardown_no_process(void **state)
{
    int fds = h_fd_count();
    uv_loop_t loop;
    uv_loop_init(&loop);
    char *a = everything("a", NULL), *b = fake("b", "paged", NULL);
    char *json = h_fmt("[%s,%s]", a, b);
    h_log log = {0};
    acp_mcp_opts o = {.struct_size = sizeof(acp_mcp_opts),
                      .kill_grace_ms = 300,
                      .on_log = h_on_log,
                      .user = &log};
    acp_mcp_set *s = h_open(&loop, json, &o, NULL, 0);
    h_wait(&loop, s);
    int pids[16];
    size_t n = h_children(pids, 16);
    assert_int_equal(n, 2);
    h_call c1 = {0}, c2 = {0};
    h_call_start(s, "a", "trigger-long-running-operation", "{\"duration\":60,\"steps\":60}", &c1);
    h_call_start(s, "b", "hang", "{}", &c2);
    bool done = false;
    acp_mcp_set_close(s, h_set_flag, &done);
    assert_true(c1.done && c2.done);
    assert_int_equal(c1.status, ACP_ECLOSED);
    assert_int_equal(c2.status, ACP_ECLOSED);
    h_run_until(&loop, &done);
    for (size_t i = 0; i < n; i++) {
        assert_false(h_group_alive(pids[i])); /* own group: pgid == pid; no zombie either */
        assert_int_equal(kill(pids[i], 0), -1);
        assert_int_equal(errno, ESRCH);
    }
    h_loop_end(&loop);
    assert_int_equal(h_fd_count(), fds); /* pipes and loop fds all closed */
    /* The call in flight was cancelled on the wire before the server's stdin closed. */
    assert_non_null(log.text);
    assert_non_null(strstr(log.text, "b: stderr: cancelled request"));
    assert_non_null(strstr(c2.error, "closing"));
    free(log.text);
    h_call_clear(&c1);
    h_call_clear(&c2);
    free(a);
    free(b);
    free(json);
}

static void filesystem_roots(void **state)
{
    char tmpl[] = "/tmp/mcp fs XXXXXX";
    assert_non_null(mkdtemp(tmpl));
    char *d1 = h_fmt("%s/one", tmpl), *d2 = h_fmt("%s/two", tmpl);
    mkdir(d1, 0700);
    mkdir(d2, 0700);
    uv_loop_t loop;
    uv_loop_init(&loop);
    /* The command-line directory is replaced by our roots (roots protocol). */
    char *json =
        h_fmt("[{\"name\":\"fs\",\"command\":\"%s\",\"args\":[\"%s\",\"/usr\"],\"env\":[]}]",
              NODE_BIN, FILESYSTEM);
    const char *roots[] = {d1};
    acp_mcp_set *s = h_open(&loop, json, NULL, roots, 1);
    h_wait(&loop, s);
    assert_int_equal(acp_mcp_server_status(s, 0, NULL), ACP_MCP_READY);
    h_call c;
    const char *text = NULL;
    /* The server asks for roots after initialized; ask until it has applied them. */
    for (int i = 0; i < 200; i++) {
        text = h_call_sync(&loop, s, "fs", "list_allowed_directories", "{}", &c);
        if (text && strstr(text, d1)) break;
        h_call_clear(&c);
    }
    assert_non_null(strstr(text, d1));
    assert_null(strstr(text, "/usr"));
    h_call_clear(&c);

    const char *roots2[] = {d2};
    acp_mcp_set_roots(s, roots2, 1);
    for (int i = 0; i < 200; i++) {
        text = h_call_sync(&loop, s, "fs", "list_allowed_directories", "{}", &c);
        if (text && strstr(text, d2)) break;
        h_call_clear(&c);
    }
    assert_non_null(strstr(text, d2));
    assert_null(strstr(text, d1));
    h_call_clear(&c);
    h_close(&loop, s);
    h_loop_end(&loop);
    rmdir(d1);
    rmdir(d2);
    rmdir(tmpl);
    free(d1);
    free(d2);
    free(json);
}

/* A server that pages tools/list forever is cut off; the tools listed so far are kept. */
static void endless_paging(void **state)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    h_log log = {0};
    acp_mcp_opts o = {.struct_size = sizeof(acp_mcp_opts), .on_log = h_on_log, .user = &log};
    char *srv = fake("fk", "paged", "[{\"name\":\"FAKE_ENDLESS\",\"value\":\"1\"}]");
    char *json = h_fmt("[%s]", srv);
    acp_mcp_set *s = h_open(&loop, json, &o, NULL, 0);
    h_wait(&loop, s);
    assert_int_equal(acp_mcp_server_status(s, 0, NULL), ACP_MCP_READY);
    assert_int_equal(acp_mcp_tool_count(s, 0), 2000); /* 1000 pages of 2 */
    assert_non_null(strstr(log.text, "still paging after 1000 pages"));
    h_close(&loop, s);
    h_loop_end(&loop);
    free(log.text);
    free(srv);
    free(json);
}

/* A server answering initialize with a revision we do not speak fails (MCP lifecycle: the
 * client disconnects); "SERVER.TOOL" goes to the longest server name that matches, so a
 * server named "a" does not shadow one named "a.b". */
static void version_and_dotted_names(void **state)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    char *old = fake("old", "old", NULL);
    char *a = fake("a", "paged", NULL), *ab = fake("a.b", "paged", NULL);
    char *json = h_fmt("[%s,%s,%s]", old, a, ab);
    acp_mcp_set *s = h_open(&loop, json, NULL, NULL, 0);
    h_wait(&loop, s);
    const char *why = NULL;
    assert_int_equal(acp_mcp_server_status(s, 0, &why), ACP_MCP_FAILED);
    assert_non_null(strstr(why, "'2024-11-05', not one we support"));
    assert_int_equal(acp_mcp_server_status(s, 1, NULL), ACP_MCP_READY);
    assert_int_equal(acp_mcp_server_status(s, 2, NULL), ACP_MCP_READY);
    size_t si = 0, ti = 0;
    assert_int_equal(acp_mcp_tool_find(s, "a.b.t1", &si, &ti), 0);
    assert_int_equal(si, 2);
    assert_string_equal(acp_mcp_tool_name(s, si, ti), "t1");
    assert_int_equal(acp_mcp_tool_find(s, "a.t2", &si, &ti), 0);
    assert_int_equal(si, 1);
    h_close(&loop, s);
    h_loop_end(&loop);
    free(old);
    free(a);
    free(ab);
    free(json);
}

static void validation(void **state)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct {
        const char *json, *msg;
        int http;
    } cases[] = {
        {"{}", "mcpServers must be an array", 0},
        {"[1]", "mcpServers[0]: must be an object", 0},
        {"[{\"command\":\"/bin/true\",\"args\":[],\"env\":[]}]", "mcpServers[0]: name", 0},
        {"[{\"name\":\"a\",\"args\":[],\"env\":[]}]", "mcpServers[0]: command", 0},
        {"[{\"name\":\"a\",\"command\":\"/x\",\"args\":[1],\"env\":[]}]", "args[0]", 0},
        {"[{\"name\":\"a\",\"command\":\"/x\",\"args\":[],\"env\":[{\"name\":\"K\"}]}]", "env[0]",
         0},
        {"[{\"name\":\"a\",\"command\":\"/x\",\"args\":[],\"env\":[]},"
         "{\"name\":\"a\",\"command\":\"/y\",\"args\":[],\"env\":[]}]",
         "mcpServers[1]: duplicate server name 'a'", 0},
        {"[{\"type\":\"http\",\"name\":\"h\",\"url\":\"http://127.0.0.1:1/\",\"headers\":[]}]",
         "mcpServers[0]: type \"http\" is not supported by this agent", 0},
        {"[{\"type\":\"ws\",\"name\":\"h\",\"url\":\"ws://x\",\"headers\":[]}]", "type must be", 0},
        /* mcpCapabilities.sse false: the agent does not support SSE, as with http above. */
        {"[{\"type\":\"sse\",\"name\":\"s\",\"url\":\"http://127.0.0.1:1/sse\",\"headers\":[]}]",
         "mcpServers[0]: type \"sse\" is not supported by this agent", 1},
        {"[{\"type\":\"http\",\"name\":\"h\",\"url\":\"http://x/\","
         "\"headers\":[{\"name\":\"X A\",\"value\":\"secret\"}]}]",
         "headers[0].name is not an HTTP header name", 1},
        {"[{\"type\":\"http\",\"name\":\"h\",\"url\":\"http://x/\","
         "\"headers\":[{\"name\":\"X-A\",\"value\":\"secret\\r\\nX-B: 1\"}]}]",
         "headers[0].value contains a line break", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        json_t *j = json_loads(cases[i].json, 0, NULL);
        assert_non_null(j);
        acp_mcp_opts o = {.struct_size = sizeof(acp_mcp_opts), .http = cases[i].http};
        acp_mcp_set *s = (acp_mcp_set *)1;
        assert_int_equal(acp_mcp_set_new(&loop, j, &o, NULL, 0, &s), ACP_EINVAL);
        assert_null(s);
        if (!strstr(acp_error_last()->message, cases[i].msg))
            fail_msg("case %zu: %s", i, acp_error_last()->message);
        assert_null(strstr(acp_error_last()->message, "secret"));
        json_decref(j);
    }
    /* null is an empty set; it settles at once. */
    acp_mcp_set *s = NULL;
    assert_int_equal(acp_mcp_set_new(&loop, json_null(), NULL, NULL, 0, &s), 0);
    assert_int_equal(acp_mcp_set_count(s), 0);
    h_wait(&loop, s);
    h_close(&loop, s);
    /* Only http(s) URLs: libcurl would otherwise read file:// or speak other protocols. The
     * config is valid JSON-wise, so the server fails instead of the whole set. */
    json_t *j = json_loads("[{\"type\":\"http\",\"name\":\"f\",\"url\":\"file:///etc/passwd\","
                           "\"headers\":[]}]",
                           0, NULL);
    assert_non_null(j);
    acp_mcp_opts o = {.struct_size = sizeof(acp_mcp_opts), .http = true};
    assert_int_equal(acp_mcp_set_new(&loop, j, &o, NULL, 0, &s), 0);
    json_decref(j);
    h_wait(&loop, s);
    const char *why = NULL;
    assert_int_equal(acp_mcp_server_status(s, 0, &why), ACP_MCP_FAILED);
    assert_non_null(strstr(why, "url must start with http:// or https://"));
    h_close(&loop, s);
    h_loop_end(&loop);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    h_uv_warm_up();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(validation),
        cmocka_unit_test(everything_stdio),
        cmocka_unit_test(progress_and_cancel),
        cmocka_unit_test(fake_protocol),
        cmocka_unit_test(crash_mid_call),
        cmocka_unit_test(failing_servers),
        cmocka_unit_test(call_timeout),
        cmocka_unit_test(teardown_no_process),
        cmocka_unit_test(filesystem_roots),
        cmocka_unit_test(endless_paging),
        cmocka_unit_test(version_and_dotted_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
