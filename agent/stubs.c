/* Temporary stand-ins while mcp/ and rt's transport are being written, so that the agent links
 * and runs today: no MCP server is accepted, and serve_stdio reports ACP_EIO. Compiled only
 * when the real layer is missing (see CMakeLists.txt); deleted once both have landed. */
#include <stdlib.h>
#include <string.h>

#include "acp/mcp.h"
#include "acp/rt.h"

#ifdef ACP_AGENT_STUB_MCP
struct acp_mcp_set {
    uv_timer_t timer;
    void (*cb)(void *user);
    void *user;
    void (*done)(void *user);
    void *done_user;
};

int acp_mcp_set_new(uv_loop_t *loop, const json_t *servers, const acp_mcp_opts *opts,
                    const char *const *roots, size_t nroots, acp_mcp_set **out, char **errmsg)
{
    if (json_array_size(servers)) {
        if (errmsg) *errmsg = strdup("mcpServers: MCP servers are not supported yet");
        return ACP_EINVAL;
    }
    acp_mcp_set *s = calloc(1, sizeof *s);
    if (!s) return ACP_ENOMEM;
    uv_timer_init(loop, &s->timer);
    s->timer.data = s;
    *out = s;
    return 0;
}

static void fire(uv_timer_t *t)
{
    acp_mcp_set *s = t->data;
    void (*cb)(void *) = s->cb;
    s->cb = NULL;
    if (cb) cb(s->user);
}

void acp_mcp_set_wait(acp_mcp_set *s, unsigned timeout_ms, void (*cb)(void *user), void *user)
{
    s->cb = cb;
    s->user = user;
    uv_timer_start(&s->timer, fire, 0, 0);
}

static void closed(uv_handle_t *h)
{
    acp_mcp_set *s = h->data;
    void (*done)(void *) = s->done;
    void *u = s->done_user;
    free(s);
    if (done) done(u);
}

void acp_mcp_set_close(acp_mcp_set *s, void (*done)(void *user), void *user)
{
    s->done = done;
    s->done_user = user;
    uv_close((uv_handle_t *)&s->timer, closed);
}

size_t acp_mcp_set_count(const acp_mcp_set *s)
{
    return 0;
}
const char *acp_mcp_status_name(enum acp_mcp_status st)
{
    return "failed";
}
const char *acp_mcp_server_name(const acp_mcp_set *s, size_t i)
{
    return "";
}
enum acp_mcp_status acp_mcp_server_status(const acp_mcp_set *s, size_t i, const char **reason)
{
    return ACP_MCP_FAILED;
}
size_t acp_mcp_tool_count(const acp_mcp_set *s, size_t i)
{
    return 0;
}
const char *acp_mcp_tool_name(const acp_mcp_set *s, size_t i, size_t t)
{
    return "";
}
int acp_mcp_call_tool(acp_mcp_set *s, const char *server, const char *tool, json_t *args,
                      const acp_mcp_call_cbs *cbs, void *user, acp_mcp_call **out)
{
    json_decref(args);
    return ACP_ENOTFOUND;
}
void acp_mcp_call_cancel(acp_mcp_call *c)
{
}
#endif

#ifdef ACP_AGENT_STUB_TRANSPORT
int acp_transport_open(uv_loop_t *loop, acp_conn *conn, int in_fd, int out_fd,
                       const acp_transport_opts *opts, acp_transport **out)
{
    return ACP_EIO;
}
bool acp_transport_writable(acp_transport *t)
{
    return true;
}
void acp_transport_flush(acp_transport *t)
{
}
void acp_transport_close(acp_transport *t, void (*done)(void *user), void *user)
{
}
#endif
