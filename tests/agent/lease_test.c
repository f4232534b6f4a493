/* SPDX-License-Identifier: Apache-2.0 */
/* Session leases in one process (issues 11 and 22): two acp_agent on one acp_store object, as
 * the network server runs one agent per connection. A session B has open but idle is taken
 * over by A's load or resume at once: B is fenced out (its next request is -32002 lease_lost,
 * every later one too until its client closes it, its renewal timer closes it even unasked,
 * and a live update its engine sends is refused). While B has a turn running, A is refused
 * -32010 with reason "turn_running" and a retry hint that holds: once the turn's answer is
 * out, the retry succeeds. A's lease lapses while A does not renew it (its loop did not run:
 * paused, blocked): B takes over, and A's next appends, made under the old fence, are stored
 * nowhere: A's prompt is answered -32002 lease_lost, its updates never reach its client, and A
 * closes the session. A store fault on the lease is answered as a store error and leaves
 * nothing open. */
#include <ctype.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "store/inject.h"

struct eng_state {
    int frees;
    int next_id;
    acp_turn *held;     /* a "wait" turn, kept running */
    acp_session *ready; /* the last session made ready */
};

static void engine_prompt(acp_turn *t, const json_t *prompt, void *user)
{
    const char *text = json_string_value(json_object_get(json_array_get(prompt, 0), "text"));
    int n = 0;
    char mid[48], c[16];
    acp_agent_new_id("msg_", mid);
    h *x = user;
    if (text && !strcmp(text, "wait")) {
        x->e->held = t;
        return;
    }
    if (text && sscanf(text, "emit %d", &n) == 1)
        for (int i = 0; i < n; i++) {
            snprintf(c, sizeof c, "c%d", i);
            acp_turn_text(t, NULL, mid, c, strlen(c));
        }
    acp_turn_end(t, "end_turn");
}

static void engine_free(acp_session *s, void *user)
{
    h *x = user;
    x->e->frees++;
    if (x->e->ready == s) x->e->ready = NULL;
}

static void engine_ready(acp_session *s, void *user)
{
    h *x = user;
    x->e->ready = s;
}

static h *agent(const char *tag, unsigned ttl_ms)
{
    h *x = h_new(tag, sizeof(eng_state));
    x->eng = (acp_engine){.struct_size = sizeof(acp_engine),
                          .name = "lease-engine",
                          .version = "1",
                          .prompt = engine_prompt,
                          .session_free = engine_free,
                          .session_ready = engine_ready,
                          .user = x};
    x->opts.lease_ttl_ms = ttl_ms;
    return x;
}

/* A and B: B runs on A's store object (B's own store, opened by h_new, is set aside). */
static int setup(void **state)
{
    h **ab = calloc(2, sizeof *ab);
    ab[0] = agent("leaseA", 60000);
    ab[1] = agent("leaseB", 60000);
    store_close(ab[1]);
    ab[1]->st = ab[0]->st;
    for (int i = 0; i < 2; i++) {
        agent_start(ab[i]);
        json_decref(request(ab[i], 1000, "initialize", "{\"protocolVersion\":1}"));
    }
    *state = ab;
    return 0;
}

static int teardown(void **state)
{
    h **ab = *state;
    agent_stop(ab[1]);
    store_open(ab[1]); /* its own again, for h_free to close */
    h_free(ab[1]);
    h_free(ab[0]);
    free(ab);
    return 0;
}

static int next_id(h *x)
{
    return ++x->e->next_id;
}

/* A fresh agent on the same store with another lease TTL. */
static void restart(h *x, unsigned ttl_ms)
{
    agent_stop(x);
    x->opts.lease_ttl_ms = ttl_ms;
    agent_start(x);
    json_decref(request(x, next_id(x), "initialize", "{\"protocolVersion\":1}"));
}

static json_t *on(h *x, const char *method, const char *sid, const char *more)
{
    char p[600];
    snprintf(p, sizeof p, "{\"sessionId\":\"%s\"%s}", sid, more);
    return request(x, next_id(x), method, p);
}

static json_t *open_(h *x, const char *method, const char *sid)
{
    char more[400];
    snprintf(more, sizeof more, ",\"cwd\":\"%s\",\"mcpServers\":[]", x->dir);
    return on(x, method, sid, more);
}

static json_t *prompt(h *x, const char *sid, const char *text)
{
    char more[200];
    snprintf(more, sizeof more, ",\"prompt\":[{\"type\":\"text\",\"text\":\"%s\"}]", text);
    return on(x, "session/prompt", sid, more);
}

static void new_session(h *x, char *id)
{
    char p[400];
    snprintf(p, sizeof p, "{\"cwd\":\"%s\",\"mcpServers\":[]}", x->dir);
    json_t *r = request(x, next_id(x), "session/new", p);
    assert_non_null(jstr(result_of(r), "sessionId"));
    snprintf(id, 80, "%s", jstr(result_of(r), "sessionId"));
    json_decref(r);
}

/* The refusal of a session with a turn running elsewhere: its honest retry hint. */
static void assert_busy(json_t *r, const char *sid)
{
    assert_int_equal(error_code(r), ACP_RPC_SESSION_BUSY);
    json_t *data = json_object_get(json_object_get(last(r), "error"), "data");
    assert_string_equal(jstr(data, "sessionId"), sid);
    assert_string_equal(jstr(data, "reason"), "turn_running");
    json_int_t wait = json_integer_value(json_object_get(data, "retryAfterMs"));
    assert_true(wait > 0 && wait <= 1000);       /* a poll, not the lease's TTL (60 s here) */
    assert_int_equal(count_updates(r, NULL), 0); /* nothing replayed */
    json_decref(r);
}

/* r is -32002 for sid with data.reason "lease_lost". */
static void assert_lost(json_t *r, const char *sid)
{
    assert_int_equal(error_code(r), ACP_RPC_NOT_FOUND);
    json_t *data = json_object_get(json_object_get(last(r), "error"), "data");
    assert_string_equal(jstr(data, "reason"), "lease_lost");
    assert_string_equal(jstr(data, "sessionId"), sid);
    assert_non_null(strstr(error_message(r), "taken over by another agent"));
    json_decref(r);
}

static void t_two_connections(void **state)
{
    h **ab = *state, *a = ab[0], *b = ab[1];
    char sid[80];
    new_session(b, sid);
    json_decref(prompt(b, sid, "emit 3"));
    /* B is idle: A's load takes the session over at once, B's lease is 60 s */
    json_t *r = open_(a, "session/load", sid);
    assert_non_null(result_of(r));
    assert_int_equal(count_updates(r, "agent_message_chunk"), 1); /* stored coalesced */
    json_decref(r);
    /* B's next request hears so, and every later one, until B's client closes it */
    assert_lost(prompt(b, sid, "emit 5"), sid);
    assert_int_equal(b->e->frees, 1); /* closed on B */
    assert_lost(prompt(b, sid, "emit 5"), sid);
    assert_lost(on(b, "session/close", sid, ""), sid);
    r = prompt(b, sid, "emit 5");
    assert_int_equal(error_code(r), ACP_RPC_NOT_FOUND);
    assert_non_null(strstr(error_message(r), "session not found"));
    json_decref(r);
    assert_int_equal(stored(a, sid), 2); /* nothing of B after the take-over */
    /* and back: B's resume takes it from A, A's prompt is refused */
    r = open_(b, "session/resume", sid);
    assert_non_null(result_of(r));
    json_decref(r);
    assert_lost(prompt(a, sid, "emit 2"), sid);
    /* B closes it: A opens it again, as before */
    json_decref(on(b, "session/close", sid, ""));
    r = open_(a, "session/load", sid);
    assert_non_null(result_of(r));
    json_decref(r);
    /* a load on the agent that has it open starts it afresh, lease and all */
    json_decref(prompt(a, sid, "emit 2"));
    r = open_(a, "session/load", sid);
    assert_non_null(result_of(r));
    json_decref(r);
    r = prompt(a, sid, "emit 1");
    assert_string_equal(stop_reason(last(r)), "end_turn");
    json_decref(r);
    assert_int_equal(stored(a, sid), 3 * 2); /* each turn: its prompt and one merged answer */
    /* delete needs no lease: B deletes what A holds; A's next write finds it gone */
    r = on(b, "session/delete", sid, "");
    assert_non_null(result_of(r));
    json_decref(r);
    r = prompt(a, sid, "emit 1");
    assert_int_equal(error_code(r), ACP_RPC_NOT_FOUND);
    assert_non_null(strstr(error_message(r), "deleted elsewhere"));
    json_decref(r);
}

/* B has a turn running: A is refused with a hint that holds; the turn ends, the retry after
 * the hint takes the session over. */
static void t_turn_running(void **state)
{
    h **ab = *state, *a = ab[0], *b = ab[1];
    char sid[80];
    new_session(b, sid);
    int pid = next_id(b);
    send_prompt(b, pid, sid, "wait");
    turn(b);
    assert_non_null(b->e->held);
    assert_busy(open_(a, "session/load", sid), sid);
    assert_busy(open_(a, "session/resume", sid), sid);
    assert_int_equal(acp_agent_session_count(a->a), 0);
    /* the held turn ends: once its answer is out, the lease is idle */
    acp_turn_end(b->e->held, "end_turn");
    b->e->held = NULL;
    json_t *r = take_response(b, pid);
    assert_string_equal(stop_reason(last(r)), "end_turn");
    json_decref(r);
    r = open_(a, "session/load", sid);
    assert_non_null(result_of(r));
    json_decref(r);
    assert_lost(prompt(b, sid, "emit 1"), sid);
    /* a turn that streamed (its answer held behind its commit) leaves it idle too */
    r = prompt(a, sid, "emit 40");
    assert_string_equal(stop_reason(last(r)), "end_turn");
    json_decref(r);
    r = open_(b, "session/load", sid);
    assert_non_null(result_of(r));
    json_decref(r);
}

/* Taken over while idle, B learns of it unasked: its renewal closes the session (the engine's
 * state goes), and a live update its engine sends meanwhile is refused, not sent. */
static void sleep_ms(long ms);
static void t_fenced_idle(void **state)
{
    h **ab = *state, *a = ab[0], *b = ab[1];
    char sid[80];
    restart(b, 300); /* renewed every 100 ms */
    new_session(b, sid);
    acp_session *bs = b->e->ready;
    assert_non_null(bs);
    json_t *r = open_(a, "session/load", sid);
    assert_non_null(result_of(r));
    json_decref(r);
    /* a live update (stored nowhere): checked against the lease first */
    json_t *u = json_pack("{ss}", "sessionUpdate", "available_commands_update");
    json_object_set_new(u, "availableCommands", json_array());
    sleep_ms(2);
    uv_update_time(&b->loop);
    assert_int_equal(acp_session_update(bs, u), ACP_ENOTFOUND);
    json_decref(u);
    turn(b);
    collect(b);
    assert_int_equal(count_updates(b->msgs, NULL), 0);
    assert_int_equal(b->e->frees, 1); /* closed on B: the check found it taken */
    /* closed there, B still answers lease_lost (from its set of lost ids) */
    r = prompt(b, sid, "emit 1");
    assert_lost(r, sid);
    json_decref(on(a, "session/close", sid, ""));
    r = open_(b, "session/load", sid);
    assert_non_null(result_of(r));
    json_decref(r);
    r = open_(a, "session/load", sid);
    assert_non_null(result_of(r));
    json_decref(r);
    /* taken over again, and B is never asked: its renewal alone finds the fence stale */
    int frees = b->e->frees;
    while (b->e->frees == frees) {
        sleep_ms(20);
        turn(b);
    }
    assert_int_equal(acp_agent_session_count(b->a), 0);
}

/* lease.c's "<boot id>.<pid namespace inode>", so the test can write holders of this machine. */
static void this_machine(char *buf, size_t n)
{
    char boot[64] = "", hex[40];
    struct stat ns;
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
    assert_non_null(f);
    assert_non_null(fgets(boot, sizeof boot, f));
    fclose(f);
    size_t k = 0;
    for (size_t i = 0; boot[i] && k < 32; i++)
        if (isxdigit((unsigned char)boot[i])) hex[k++] = boot[i];
    hex[k] = '\0';
    assert_int_equal(stat("/proc/self/ns/pid", &ns), 0);
    snprintf(buf, n, "%s.%lx", hex, (unsigned long)ns.st_ino);
}

/* A holder on this machine whose process is gone is taken over at once, even in a turn (it
 * will never end it); its pid field is read
 * checked (issue 13): "+PID", " PID", "-PID" or a number past any pid name no process, so such
 * a lease is waited out, never taken as a dead holder's. */
static void t_dead_holder_pid(void **state)
{
    h **ab = *state, *a = ab[0], *b = ab[1];
    char sid[80], m[64], holder[ACP_STORE_HOLDER_MAX + 1];
    new_session(a, sid);
    json_decref(on(a, "session/close", sid, ""));
    this_machine(m, sizeof m);
    pid_t dead = fork();
    if (!dead) _exit(0);
    assert_true(dead > 0);
    assert_int_equal(waitpid(dead, NULL, 0), dead);
    static const char *const bad[] = {"+%d", " %d", "-%d", "%d00000000000000000000", "%dx", ""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char pid[48];
        snprintf(pid, sizeof pid, bad[i], (int)dead);
        snprintf(holder, sizeof holder, "h/%s/%s/x", pid, m);
        int64_t fence;
        assert_int_equal(acp_store_lease_acquire(a->st, sid, holder, 60000, NULL, &fence, NULL), 0);
        assert_int_equal(acp_store_lease_mark(a->st, sid, fence, 60000, true), 0); /* in a turn */
        assert_busy(open_(b, "session/load", sid), sid);
        assert_int_equal(acp_store_lease_release(a->st, sid, fence), 0);
    }
    snprintf(holder, sizeof holder, "h/%d/%s/x", (int)dead, m);
    int64_t fence;
    assert_int_equal(acp_store_lease_acquire(a->st, sid, holder, 60000, NULL, &fence, NULL), 0);
    assert_int_equal(acp_store_lease_mark(a->st, sid, fence, 60000, true), 0);
    json_t *r = open_(b, "session/load", sid); /* the same pid, written plainly: taken over */
    assert_non_null(result_of(r));
    json_decref(r);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts)) {}
}

static void t_fenced_out(void **state)
{
    h **ab = *state, *a = ab[0], *b = ab[1];
    char sid[80];
    restart(a, 40);
    new_session(a, sid);
    json_decref(prompt(a, sid, "emit 2"));
    int pid = next_id(a);
    send_prompt(a, pid, sid, "wait"); /* a turn running: B may not take it over while fresh */
    turn(a);
    assert_non_null(a->e->held);
    /* A's loop stands still past its 40 ms lease: no renewal. B takes the session over. */
    json_t *r;
    for (;;) {
        sleep_ms(50);
        r = open_(b, "session/load", sid);
        if (result_of(r)) break;
        assert_int_equal(error_code(r), ACP_RPC_SESSION_BUSY); /* the DB clock lags ours */
        json_decref(r);
    }
    json_decref(r);
    int before = stored(a, sid);
    /* A's turn appends under its old fence: stored nowhere, shown nowhere, answered so */
    char mid[48];
    acp_agent_new_id("msg_", mid);
    acp_turn_text(a->e->held, NULL, mid, "late", 4);
    acp_turn_end(a->e->held, "end_turn");
    a->e->held = NULL;
    r = take_response(a, pid);
    assert_int_equal(count_updates(r, "agent_message_chunk"), 0);
    assert_lost(r, sid);
    assert_int_equal(stored(a, sid), before);
    assert_int_equal(a->e->frees, 1); /* closed on A */
    r = prompt(a, sid, "emit 1");
    assert_int_equal(error_code(r), ACP_RPC_NOT_FOUND);
    json_decref(r);
    /* B goes on; its lease was not disturbed by A's attempt */
    r = prompt(b, sid, "emit 1");
    assert_string_equal(stop_reason(last(r)), "end_turn");
    json_decref(r);
    assert_int_equal(stored(b, sid), before + 2);
}

/* Every step of the lease's store calls fails once: the open is answered with the store's
 * error (or goes through when the fault met nothing), and nothing half-open stays behind. */
/* Once shut down with its sessions closed, an agent leaves nothing running on the loop: the
 * renewal timer (a third of the TTL, here 20 minutes) would otherwise keep a program that runs
 * its loop until done (acp-agent) alive until the next tick. uv_run returns at once or the
 * test runs into ctest's timeout. */
static void t_shutdown_idle(void **state)
{
    h *x = ((h **)*state)[0];
    char id[80];
    restart(x, 3600000);
    new_session(x, id);
    acp_agent_shutdown(x->a);
    uv_run(&x->loop, UV_RUN_DEFAULT);
    assert_false(uv_loop_alive(&x->loop));
}

static void t_lease_faults(void **state)
{
    h **ab = *state, *a = ab[0], *b = ab[1];
    char sid[80];
    restart(a, 40);
    new_session(b, sid);
    json_t *r = on(b, "session/close", sid, "");
    json_decref(r);
    for (unsigned step = 1;; step++) {
        acp_store_fault f = {.ops = ACP_FAULT_LEASE, .step = step, .code = SQLITE_FULL};
        assert_int_equal(acp_store_inject(a->st, &f), 0);
        r = open_(a, "session/load", sid);
        unsigned fired = acp_store_inject_fired(a->st);
        acp_store_inject(a->st, NULL);
        if (!fired) {
            assert_non_null(result_of(r));
            json_decref(r);
            break;
        }
        assert_int_equal(error_code(r), ACP_RPC_INTERNAL_ERROR);
        assert_non_null(strstr(error_message(r), "session store unavailable"));
        json_decref(r);
        assert_int_equal(acp_agent_session_count(a->a), 0);
        /* nothing holds it: B opens and closes it at once */
        r = open_(b, "session/load", sid);
        assert_non_null(result_of(r));
        json_decref(r);
        json_decref(on(b, "session/close", sid, ""));
    }
    /* renewals that fail are not the end of the session, even past the TTL: nobody took it,
     * and the next renewal that goes through extends it */
    acp_store_fault f = {.ops = ACP_FAULT_LEASE, .times = 3, .code = SQLITE_FULL};
    assert_int_equal(acp_store_inject(a->st, &f), 0);
    while (acp_store_inject_fired(a->st) < 3) {
        sleep_ms(15);
        turn(a);
    }
    acp_store_inject(a->st, NULL);
    sleep_ms(15);
    turn(a);
    r = prompt(a, sid, "emit 1");
    assert_string_equal(stop_reason(last(r)), "end_turn");
    json_decref(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(t_two_connections, setup, teardown),
        cmocka_unit_test_setup_teardown(t_fenced_out, setup, teardown),
        cmocka_unit_test_setup_teardown(t_turn_running, setup, teardown),
        cmocka_unit_test_setup_teardown(t_fenced_idle, setup, teardown),
        cmocka_unit_test_setup_teardown(t_dead_holder_pid, setup, teardown),
        cmocka_unit_test_setup_teardown(t_lease_faults, setup, teardown),
        cmocka_unit_test_setup_teardown(t_shutdown_idle, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
