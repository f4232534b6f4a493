/* libFuzzer target over the whole agent runtime in process: any bytes from a client, in any
 * pieces, must never crash or leak the agent, leave a handle open, or make it write a line that
 * is not valid JSON. A fresh agent on a private loop with an in-memory SQLite store per input,
 * so every input replays the same way.
 *
 * Side-effect free: the engine below touches no file, HTTP/SSE MCP servers are not enabled
 * (rejected as invalid params), and uv_spawn is wrapped at link time (-Wl,--wrap=uv_spawn) so a
 * stdio MCP server with any command fails before fork(): the fuzzer can reach every MCP
 * validation and failure path without starting a process. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp/agent.h"
#include "fuzz/check_output.h"
#include "store/store_impl.h"

/* --- no processes ------------------------------------------------------------------------- */

int __real_uv_spawn(uv_loop_t *loop, uv_process_t *h, const uv_process_options_t *o);

/* libuv initialises the handle first and checks the stdio containers before it forks; an
 * inherited fd of -1 fails that check (UV_EINVAL), so the caller gets a real, initialised
 * handle to close, exactly as after any failed spawn, and no child ever exists. */
int __wrap_uv_spawn(uv_loop_t *loop, uv_process_t *h, const uv_process_options_t *o)
{
    uv_stdio_container_t bad = {.flags = UV_INHERIT_FD, .data.fd = -1};
    uv_process_options_t po = *o;
    po.stdio = &bad;
    po.stdio_count = 1;
    return __real_uv_spawn(loop, h, &po);
}

/* --- a minimal engine: the prompt's first text picks what the turn does ------------------- */

typedef struct fz {
    acp_turn *held;     /* a "wait" turn, ended by cancel */
    acp_turn *stubborn; /* a "stubborn" turn: ignores cancel, the runtime force-ends it */
    acp_turn *stream;   /* a "stream N" turn, one chunk per writable callback */
    int left;           /* chunks the stream still owes */
    bool done;          /* on_done ran */
    bool fail_commit;   /* "storefail": the next commit fails */
    const acp_store_ops *real;
    acp_store_ops ops; /* the store's ops with a commit that can be made to fail */
} fz;

/* The input being run (one at a time): the failing commit finds its switch here. */
static fz *cur;

static int commit(acp_store *st, const char *now)
{
    if (cur->fail_commit) {
        cur->fail_commit = false;
        return acp_store_fail(st, ACP_ESTORE, "disk I/O error (injected)");
    }
    return cur->real->commit(st, now);
}

static const char *first_text(const json_t *prompt)
{
    const char *s = json_string_value(json_object_get(json_array_get(prompt, 0), "text"));
    return s ? s : "";
}

static void call_done(acp_turn *t, int status, const json_t *result, const char *error, void *user)
{
    if (status == 0) {
        const char *c = json_string_value(json_object_get(result, "content"));
        if (c) acp_turn_text(t, NULL, NULL, c, strlen(c));
    } else if (error) {
        acp_turn_text(t, "agent_thought_chunk", NULL, error, strlen(error));
    }
    acp_turn_end(t, "end_turn");
}

static void stream_more(acp_turn *t, void *user)
{
    fz *z = user;
    if (z->left-- > 0 && !acp_turn_cancelled(t)) {
        if (acp_turn_writable(t)) acp_turn_text(t, NULL, NULL, "chunk", 5);
        acp_turn_on_writable(t, stream_more, z);
        return;
    }
    z->stream = NULL;
    acp_turn_end(t, "end_turn");
}

static void engine_prompt(acp_turn *t, const json_t *prompt, void *user)
{
    fz *z = user;
    const char *text = first_text(prompt);
    acp_session *s = acp_turn_session(t);
    if (!strcmp(text, "wait")) {
        acp_turn_text(t, NULL, NULL, "waiting", 7);
        z->held = t;
        return;
    }
    if (!strcmp(text, "stubborn")) {
        acp_turn_text(t, NULL, NULL, "not stopping", 12);
        z->stubborn = t;
        return;
    }
    if (!strcmp(text, "storefail")) {
        z->fail_commit = true;
        acp_turn_text(t, NULL, NULL, "lost", 4);
        return; /* the runtime answers the turn when the commit fails */
    }
    int n;
    if (sscanf(text, "stream %d", &n) == 1 && !z->stream) {
        z->stream = t;
        z->left = n < 0 ? 0 : n > 50 ? 50 : n;
        acp_turn_on_writable(t, stream_more, z);
        return;
    }
    if (!strcmp(text, "fail")) {
        acp_turn_fail(t, ACP_RPC_INTERNAL_ERROR, "engine failed: %s", text);
        return;
    }
    if (!strncmp(text, "stop ", 5)) { /* any stop reason, valid or not */
        acp_turn_end(t, text + 5);
        return;
    }
    if (!strncmp(text, "raw ", 4)) { /* an update as untrusted JSON text */
        acp_turn_update_raw(t, text + 4, strlen(text + 4), false);
        acp_session_update_raw(s, text + 4, strlen(text + 4), false);
        acp_turn_end(t, "end_turn");
        return;
    }
    if (!strncmp(text, "title ", 6)) {
        json_t *u = json_pack("{ss ss}", "sessionUpdate", "session_info_update", "title", text + 6);
        if (u) acp_session_update(s, u);
        json_decref(u);
        acp_turn_end(t, "end_turn");
        return;
    }
    if (!strcmp(text, "read") || !strcmp(text, "write") || !strcmp(text, "perm")) {
        /* The fuzzer answers these: the corpus knows our outgoing ids count from 0. */
        json_t *p =
            !strcmp(text, "read") ? json_pack("{ss}", "path", "/fuzz/a.txt")
            : !strcmp(text, "write")
                ? json_pack("{ss ss}", "path", "/fuzz/a.txt", "content", "x")
                : json_pack("{s{ss} s[{ss ss ss}]}", "toolCall", "toolCallId", "tc_1", "options",
                            "optionId", "ok", "name", "Allow", "kind", "allow_once");
        const char *m = !strcmp(text, "read")    ? "fs/read_text_file"
                        : !strcmp(text, "write") ? "fs/write_text_file"
                                                 : "session/request_permission";
        if (acp_turn_call(t, m, p, call_done, z)) acp_turn_end(t, "end_turn");
        return;
    }
    /* Echo every block back, with a tool call and a plan, so history has every kind. */
    char mid[48];
    acp_agent_new_id("msg_", mid);
    size_t i;
    json_t *b;
    json_array_foreach(prompt, i, b)
    {
        const char *bt = json_string_value(json_object_get(b, "text"));
        if (bt) acp_turn_text(t, NULL, mid, bt, strlen(bt));
    }
    json_t *u = json_pack("{ss ss ss ss}", "sessionUpdate", "tool_call", "toolCallId", "tc_1",
                          "title", "echo", "status", "completed");
    if (u) acp_turn_update(t, u);
    json_decref(u);
    u = json_pack("{ss s[{ss ss ss}]}", "sessionUpdate", "plan", "entries", "content", text,
                  "priority", "low", "status", "pending");
    if (u) acp_turn_update(t, u);
    json_decref(u);
    acp_turn_end(t, "end_turn");
}

static void engine_cancel(acp_turn *t, void *user)
{
    fz *z = user;
    if (z->stubborn == t) { /* never ends it: close, delete or shutdown force-end it */
        z->stubborn = NULL;
        return;
    }
    if (z->held == t) z->held = NULL;
    if (z->stream == t) z->stream = NULL;
    acp_turn_end(t, "cancelled");
}

static void engine_session_free(acp_session *s, void *user)
{
    fz *z = user;
    if (z->held && acp_turn_session(z->held) == s) z->held = NULL;
    if (z->stubborn && acp_turn_session(z->stubborn) == s) z->stubborn = NULL;
    if (z->stream && acp_turn_session(z->stream) == s) z->stream = NULL;
}

static void on_log(const char *line, void *user)
{
    if (getenv("ACP_FUZZ_TRACE")) fprintf(stderr, "log: %s\n", line);
}

static void on_done(acp_agent *a, void *user)
{
    ((fz *)user)->done = true;
}

/* --- driving it ---------------------------------------------------------------------------- */

/* Every output line must be one valid JSON value. */
static void drain(acp_agent *a)
{
    acp_agent_flush(a);
    fuzz_check_output(acp_agent_conn(a));
}

static void turn(uv_loop_t *loop, acp_agent *a)
{
    uv_run(loop, UV_RUN_NOWAIT);
    drain(a);
}

/* A stored session "s1" with some history, so load, resume, list, delete and prompts have
 * something to work on without knowing the random ids session/new makes. */
static acp_store *store_with_session(void)
{
    acp_store *st;
    if (acp_store_open(":memory:", &st, NULL)) abort();
    acp_store_session s = {.id = "s1", .cwd = "/fuzz", .add_dirs = "[\"/fuzz2\"]"};
    acp_store_now(s.created_at);
    memcpy(s.updated_at, s.created_at, sizeof s.updated_at);
    static const char *const h[] = {
        "{\"sessionUpdate\":\"user_message_chunk\",\"content\":{\"type\":\"text\",\"text\":\"hi\"}"
        "}",
        "{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{\"type\":\"text\",\"text\":\"hi\"}"
        "}",
        "{\"sessionUpdate\":\"tool_call\",\"toolCallId\":\"tc_0\",\"title\":\"t\"}"};
    if (acp_store_create(st, &s)) abort();
    for (int i = 0; i < 3; i++)
        if (acp_store_append(st, "s1", h[i], strlen(h[i]))) abort();
    if (acp_store_commit(st, NULL)) abort();
    return st;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uv_loop_t loop;
    if (uv_loop_init(&loop)) abort();
    acp_store *st = store_with_session();
    fz z = {.real = st->ops};
    z.ops = *st->ops;
    z.ops.commit = commit;
    st->ops = &z.ops;
    cur = &z;
    acp_engine e = {.name = "fuzz",
                    .version = "1",
                    .image = true,
                    .embedded_context = true,
                    .prompt = engine_prompt,
                    .cancel = engine_cancel,
                    .session_free = engine_session_free,
                    .user = &z};
    /* The MCP connect wait is a timer that never fires under NOWAIT; spawns fail at once. */
    acp_agent_opts o = {
        .on_log = on_log, .on_done = on_done, .user = &z, .mcp_connect_timeout_ms = 60000};
    acp_agent *a;
    if (acp_agent_new(&loop, st, &e, &o, &a)) abort();

    /* The first byte picks the piece size, so lines split at odd offsets are explored too. */
    size_t piece = size ? (size_t)data[0] % 61 + 1 : 1;
    for (size_t i = 0; i < size; i += piece) {
        acp_conn_recv(acp_agent_conn(a), (const char *)data + i,
                      size - i < piece ? size - i : piece);
        turn(&loop, a);
    }
    for (int i = 0; i < 4; i++) turn(&loop, a);

    acp_agent_shutdown(a);
    for (int i = 0; i < 1000 && !z.done; i++) {
        uv_run(&loop, UV_RUN_ONCE);
        drain(a);
    }
    if (!z.done) abort(); /* shutdown must finish */
    drain(a);
    acp_agent_free(a);
    uv_run(&loop, UV_RUN_DEFAULT);
    st->ops = z.real;
    acp_store_close(st);
    if (uv_loop_close(&loop)) abort(); /* a handle left open */
    return 0;
}
