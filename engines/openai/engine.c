/* SPDX-License-Identifier: Apache-2.0 */
/* The engine callbacks: a session's state is built from its stored history when it opens;
 * prompts and cancels go to turn.c; the model list (GET /models) and the session title. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "acp/version.h"
#include "engines/openai/internal.h"

#define MODELS_BODY_MAX (4u << 20)
#define TITLE_MAX       80

static const acp_mode modes[] = {
    {"ask", "Ask", "Answers and reads files; no writes or commands"},
    {"code", "Code", "Reads, writes files and runs commands, asking first"},
};
static const acp_config_value mode_values[] = {
    {.value = "ask",
     .name = "Ask",
     .description = "Answers and reads files; no writes or commands"},
    {.value = "code",
     .name = "Code",
     .description = "Reads, writes files and runs commands, asking first"},
};

static const char *const openai_protocols[] = {"openai", NULL};

static const char user_open[] = "{\"role\":\"user\",\"content\":\"";
static const char title_ask[] =
    "Propose a short title (at most six words) for a conversation that begins with the request "
    "below. Answer with the title only, without quotes.\n\n";

static void models_fetch(openai *oa);

/* --- sessions -----------------------------------------------------------------------------------
 */

static int feed(void *user, int64_t seq, const char *json, size_t n)
{
    return openai_history_feed(user, json, n);
}

static void session_setup(acp_session *s, void *user)
{
    openai *oa = user;
    oa_sess *os = calloc(1, sizeof *os);
    if (!os) return; /* prompts then answer "out of memory" */
    os->oa = oa;
    os->s = s;
    if ((os->next_s = oa->sessions)) os->next_s->prev_s = os;
    oa->sessions = os;
    acp_session_set_data(s, os);
    /* One tool result may take a quarter of the window (4 bytes a token): a whole log file
     * read once must not fill every later request, nor stop the summary that would fix it. */
    os->h.result_max = oa_window(os);
    /* The model's context is the stored history: a new session has none (or is not stored
     * yet: ACP_ENOTFOUND), a loaded or resumed one continues from it. */
    acp_agent *a = acp_session_agent(s);
    int64_t last = 0;
    bool done = false;
    acp_store *st = acp_agent_store(a);
    int rc = acp_store_replay(st, acp_session_id(s), 0, 0, feed, &os->h, &last, &done);
    /* A context cut short would let the model answer without what came before: its prompts
     * are refused instead, saying why. */
    if (rc && rc != ACP_ENOTFOUND &&
        asprintf(&os->broken, "cannot rebuild the model's context from the session store: %s",
                 rc == ACP_ENOMEM ? "out of memory" : acp_error_last()->message) < 0)
        os->broken = NULL;
    os->titled = openai_history_started(&os->h);
    if (oa->models)
        acp_session_set_config_options(s, oa->options, 2);
    else
        models_fetch(oa); /* the server was down at start, perhaps: the list comes as an update */
}

static void session_free(acp_session *s, void *user)
{
    openai *oa = user;
    oa_sess *os = acp_session_data(s);
    if (!os) { /* a subagent session (it closes before its parent): its exchange stops */
        for (oa_sess *p = oa->sessions; p; p = p->next_s) {
            if (p->child != s) continue;
            p->child = NULL;
            oa_call_stop(&p->sub);
        }
        return;
    }
    oa_turn_stop(os);
    oa_call_free(&os->chat);
    oa_call_free(&os->title);
    oa_call_free(&os->sub);
    openai_history_free(&os->h);
    openai_tools_free(&os->tools);
    free(os->broken);
    if (os->prev_s)
        os->prev_s->next_s = os->next_s;
    else
        oa->sessions = os->next_s;
    if (os->next_s) os->next_s->prev_s = os->prev_s;
    free(os);
    acp_session_set_data(s, NULL);
}

static void prompt(acp_turn *t, const json_t *blocks, void *user)
{
    oa_sess *os = acp_session_data(acp_turn_session(t));
    if (!os || os->broken) {
        acp_turn_fail(t, ACP_RPC_INTERNAL_ERROR, "%s", os ? os->broken : "out of memory");
        return;
    }
    oa_turn_prompt(os, t, blocks);
}

static void cancel(acp_turn *t, void *user)
{
    oa_sess *os = acp_session_data(acp_turn_session(t));
    if (os && os->t == t) oa_turn_stop(os); /* aborts the stream: its socket closes next turn */
    acp_turn_end(t, "cancelled");
}

/* --- the title
 * ------------------------------------------------------------------------------------ */

/* Whether the session has a title in the store: one the client set (session/set_title), or
 * one this engine proposed before. A generated title never replaces it (the schema's SHOULD
 * NOT). Asked of the store, not remembered: another connection may have set it. */
static bool has_title(oa_sess *os)
{
    acp_store_session row = ACP_STORE_SESSION_INIT;
    int rc = acp_store_get(acp_agent_store(acp_session_agent(os->s)), acp_session_id(os->s), &row);
    bool yes = rc || row.title; /* unreadable: no title is proposed either */
    acp_store_session_clear(&row);
    return yes;
}

void oa_title_propose(oa_sess *os)
{
    if (os->titled || os->oa->o.no_title) return;
    os->titled = true;
    if (has_title(os)) return;
    /* The first user message: a transcript of tool calls is not what a title needs, and some
     * servers refuse tool messages in a request that offers no tools. */
    acp_buf msgs = {0}, body = {0};
    acp_span all, item, role, content = {0};
    int rc = acp_buf_putc(&msgs, '[') || openai_history_render(&os->h, &msgs) ||
             acp_buf_putc(&msgs, ']');
    all = (acp_span){msgs.data, msgs.len};
    for (size_t pos = 0; !rc && !content.n && acp_json_item(all, &pos, &item);)
        if (acp_json_member(item, "role", &role) && acp_json_str_eq(role, "user"))
            acp_json_member(item, "content", &content);
    if (!rc && content.n > 2) {
        int sys = oa_body_begin(os, &body, NULL, false); /* a compaction summary, if any */
        rc = sys < 0 || (sys && acp_buf_putc(&body, ','));
        if (!rc) rc = acp_buf_append(&body, user_open, strlen(user_open));
        acp_buf esc = {0};
        if (!rc) rc = acp_json_escape(&esc, title_ask, strlen(title_ask));
        if (!rc) rc = acp_buf_append(&body, esc.data + 1, esc.len - 2);
        /* The request's first 4000 bytes are enough for a title. */
        char *text = acp_json_strdup(content);
        size_t n = text ? strlen(text) : 0;
        if (n > 4000) {
            n = 4000;
            while (n && ((unsigned char)text[n] & 0xC0) == 0x80) n--;
        }
        if (!rc && text) {
            acp_buf_free(&esc);
            rc = acp_json_escape(&esc, text, n) || acp_buf_append(&body, esc.data + 1, esc.len - 2);
        }
        free(text);
        acp_buf_free(&esc);
        if (!rc) rc = acp_buf_append(&body, "\"}", 2) || oa_body_end(os, &body, false, NULL);
        if (rc || oa_request(os, &os->title, OA_TITLE, &body)) acp_buf_free(&body);
    }
    acp_buf_free(&msgs);
}

static bool title_trim(char c)
{
    return c == ' ' || c == '\t' || c == '"' || c == '\'' || c == '*' || c == '#' || c == '`' ||
           c == '.';
}

void oa_title_answered(oa_sess *os, oa_call *c, int result, long status)
{
    if (result || status / 100 != 2 || c->st.error || !acp_buf_cstr(&c->text)) return;
    if (has_title(os)) return; /* set by the client while the model thought */
    char *p = c->text.data;
    while (*p == '\n' || *p == '\r' || title_trim(*p)) p++;
    if (!strncasecmp(p, "title:", 6)) p += 6;
    while (title_trim(*p)) p++;
    size_t n = strcspn(p, "\r\n");
    while (n && title_trim(p[n - 1])) n--;
    if (n > TITLE_MAX) { /* cut on a character boundary */
        n = TITLE_MAX;
        while (n && ((unsigned char)p[n] & 0xC0) == 0x80) n--;
    }
    if (!n) return;
    acp_buf u = {0};
    acp_jw w;
    acp_jw_init(&w, &u);
    acp_jw_obj(&w);
    acp_jw_kstr(&w, "sessionUpdate", "session_info_update");
    acp_jw_key(&w, "title");
    acp_jw_strn(&w, p, n);
    acp_jw_obj_end(&w);
    if (!acp_jw_status(&w)) acp_session_update_raw(os->s, u.data, u.len, true);
    acp_buf_free(&u);
}

/* --- models
 * --------------------------------------------------------------------------------------- */

static int models_data(acp_http *h, const char *p, size_t n, void *user)
{
    openai *oa = user;
    if (oa->models_body.len + n > MODELS_BODY_MAX) return 1;
    return acp_buf_append(&oa->models_body, p, n) ? 1 : 0;
}

/* The `model` option's values: the listed models, the one asked for (--model) first. */
/* A model's context window as some servers list it: vLLM's max_model_len, OpenRouter's and
 * LM Studio's context_length; 0 when it says none. */
static unsigned listed_window(const json_t *m)
{
    static const char *const keys[] = {"max_model_len", "context_length", "context_window"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        json_t *v = json_object_get(m, keys[i]);
        if (json_is_integer(v) && json_integer_value(v) > 0 && json_integer_value(v) <= 100000000)
            return (unsigned)json_integer_value(v);
    }
    return 0;
}

static int models_set(openai *oa, const json_t *data)
{
    size_t n = json_array_size(data), k = 0;
    acp_config_value *v = calloc(n + 1, sizeof *v);
    unsigned *windows = calloc(n + 1, sizeof *windows);
    char **ids = calloc(n + 1, sizeof *ids);
    if (!v || !windows || !ids) {
        free(v);
        free(windows);
        free(ids);
        return ACP_ENOMEM;
    }
    if (oa->o.model) v[k++] = (acp_config_value){.value = oa->o.model, .name = oa->o.model};
    size_t nid = 0;
    for (size_t i = 0; i < n; i++) {
        const json_t *m = json_array_get(data, i);
        const char *id = json_string_value(json_object_get(m, "id"));
        if (!id || !*id) continue;
        size_t j = 0;
        while (j < k && strcmp(v[j].value, id)) j++;
        if (j == k) { /* a new one */
            if (!(ids[nid] = strdup(id))) continue;
            v[k].value = v[k].name = ids[nid++];
            k++;
        }
        if (!windows[j]) windows[j] = listed_window(m);
    }
    if (!nid && !oa->o.model) k = 0;
    if (!k) {
        free(ids);
        free(v);
        free(windows);
        return 0;
    }
    oa->models = ids;
    oa->model_values = v;
    oa->model_windows = windows;
    oa->options[1].values = v;
    oa->options[1].nvalues = k;
    oa->options[1].default_value = v[0].value;
    return 0;
}

unsigned oa_window(const oa_sess *os)
{
    const openai *oa = os->oa;
    const char *model = acp_session_config(os->s, "model");
    for (size_t i = 0; !oa->window_given && model && oa->models && i < oa->options[1].nvalues; i++)
        if (!strcmp(oa->model_values[i].value, model) && oa->model_windows[i])
            return oa->model_windows[i];
    return oa->o.context_tokens;
}

static void models_done(acp_http *h, int result, long status, void *user)
{
    openai *oa = user;
    oa->models_req = NULL;
    json_t *j = NULL;
    if (!result && status / 100 == 2)
        j = json_loadb(oa->models_body.data, oa->models_body.len, 0, NULL);
    acp_buf_free(&oa->models_body);
    json_t *data = json_object_get(j, "data");
    if (!oa->models && json_is_array(data) && !models_set(oa, data))
        for (oa_sess *os = oa->sessions; os; os = os->next_s)
            acp_session_set_config_options(os->s, oa->options, 2);
    json_decref(j);
    void (*ready)(void *) = oa->ready;
    oa->ready = NULL;
    if (ready) ready(oa->ready_user);
}

static void models_fetch(openai *oa)
{
    if (oa->models_req || (!oa->http && !(oa->http = acp_http_client_new(oa->loop)))) return;
    char url[2048];
    const char **headers = NULL;
    /* The engine's own route: the model list is shared by every connection. */
    if (oa_route(oa, NULL, "/models", url, sizeof url, "Accept: application/json", &headers))
        return;
    static const acp_http_cbs cbs = {
        .struct_size = sizeof(acp_http_cbs), .on_data = models_data, .on_done = models_done};
    oa->models_req = acp_http_start(oa->http, "GET", url, headers, NULL, 0, &cbs, oa);
    oa_route_free(headers);
}

void openai_start(openai *oa, void (*ready)(void *user), void *user)
{
    oa->ready = ready;
    oa->ready_user = user;
    models_fetch(oa);
    if (!oa->models_req) {
        oa->ready = NULL;
        if (ready) ready(user);
    }
}

/* --- the engine
 * ----------------------------------------------------------------------------------- */

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

int openai_new(uv_loop_t *loop, const openai_opts *o, openai **out)
{
    const char *base = o->base_url ? o->base_url : "http://127.0.0.1:11434/v1";
    if (strncmp(base, "http://", 7) && strncmp(base, "https://", 8)) return ACP_EINVAL;
    openai *oa = calloc(1, sizeof *oa);
    if (!oa) return ACP_ENOMEM;
    oa->loop = loop;
    oa->o = *o;
    oa->o.base_url = strdup(base);
    oa->o.model = dup_or_null(o->model);
    oa->o.api_key = dup_or_null(o->api_key);
    oa->o.system_prompt = dup_or_null(o->system_prompt);
    if (!oa->o.max_turns) oa->o.max_turns = 25;
    oa->window_given = oa->o.context_tokens != 0; /* else a listed window wins over 32768 */
    if (!oa->o.context_tokens) oa->o.context_tokens = 32768;
    if (!oa->o.base_url || (o->model && !oa->o.model) || (o->api_key && !oa->o.api_key) ||
        (o->system_prompt && !oa->o.system_prompt)) {
        openai_free(oa, NULL, NULL);
        return ACP_ENOMEM;
    }
    char *b = (char *)oa->o.base_url;
    for (size_t n = strlen(b); n > 0 && b[n - 1] == '/'; n--) b[n - 1] = '\0';
    /* Until GET /models answers, the one model is the one asked for (or the server's own,
     * which llama-server uses whatever the name). */
    oa->default_model = (acp_config_value){.value = oa->o.model ? oa->o.model : "default",
                                           .name = oa->o.model ? oa->o.model : "Server default"};
    oa->options[0] = (acp_config_option){.id = "mode",
                                         .name = "Mode",
                                         .category = "mode",
                                         .values = mode_values,
                                         .nvalues = 2,
                                         .default_value = "code"};
    oa->options[1] = (acp_config_option){.id = "model",
                                         .name = "Model",
                                         .category = "model",
                                         .values = &oa->default_model,
                                         .nvalues = 1};
    /* The one provider, the endpoint given: a client may move it (providers/set) or switch
     * it off (providers/disable) for its own connection. */
    oa->provider = (acp_provider){.id = "openai",
                                  .supported = openai_protocols,
                                  .api_type = "openai",
                                  .base_url = oa->o.base_url};
    *out = oa;
    return 0;
}

/* --- provider and sign-in state (unstable) ----------------------------------------------- */

/* A loopback model server (llama-server, Ollama on this machine) needs no key. */
static bool loopback(const char *url)
{
    const char *h = strstr(url, "://");
    h = h ? h + 3 : url;
    static const char *const local[] = {"127.", "localhost", "[::1]"};
    for (size_t i = 0; i < sizeof local / sizeof *local; i++)
        if (!strncmp(h, local[i], strlen(local[i]))) return true;
    return false;
}

/* providers/set's veto: the HTTP client speaks http:// and https:// only, and a URL it would
 * refuse at the first prompt is better refused now. */
static int provider_set(acp_agent *a, const char *id, const char *api_type, const char *base_url,
                        const char *const *headers, char **message, void *user)
{
    if (!strncmp(base_url, "http://", 7) || !strncmp(base_url, "https://", 8)) return 0;
    *message = strdup("baseUrl must be an http:// or https:// URL");
    return ACP_RPC_INVALID_PARAMS;
}

static const char *auth_status(acp_agent *a, const char **account, void *user)
{
    openai *oa = user;
    const char *type = NULL, *base = NULL;
    const char *const *headers = NULL;
    if (acp_agent_provider(a, "openai", &type, &base, &headers) == 1) {
        if (!type || !base) return "unknown"; /* disabled: nothing is in effect */
        for (const char *const *h = headers; h && *h; h++)
            if (!strncasecmp(*h, "Authorization:", 14)) {
                *account = "Authorization header from the client";
                return "authenticated";
            }
        return loopback(base) ? "not_required" : "unknown";
    }
    if (oa->o.api_key) {
        *account = "API key";
        return "authenticated";
    }
    /* Without a key a remote server may still take us (a gateway on the network): unknown. */
    return loopback(oa->o.base_url) ? "not_required" : "unknown";
}

void openai_engine(openai *oa, acp_engine *e)
{
    *e = (acp_engine){.struct_size = sizeof(acp_engine),
                      .name = "acp-agent",
                      .title = "libacp agent (openai engine)",
                      .version = ACP_VERSION_STRING,
                      .embedded_context = true,
                      .modes = modes,
                      .nmodes = 2,
                      .default_mode = "code",
                      .config_options = oa->options,
                      .nconfig_options = 2,
                      .session_setup = session_setup,
                      .prompt = prompt,
                      .cancel = cancel,
                      .session_free = session_free,
                      .user = oa,
                      /* its system message is one string: the client's may replace it */
                      .system_prompt_override = true,
                      .providers = &oa->provider,
                      .nproviders = 1,
                      .provider_set = provider_set,
                      .auth_status = auth_status};
}

void openai_free(openai *oa, void (*done)(void *user), void *user)
{
    if (oa->models_req) acp_http_abort(oa->models_req);
    acp_buf_free(&oa->models_body);
    for (char **m = oa->models; m && *m; m++) free(*m);
    free(oa->models);
    free(oa->model_values);
    free(oa->model_windows);
    if (oa->o.api_key) explicit_bzero((char *)oa->o.api_key, strlen(oa->o.api_key));
    free((char *)oa->o.api_key);
    free((char *)oa->o.base_url);
    free((char *)oa->o.model);
    free((char *)oa->o.system_prompt);
    acp_http_client *http = oa->http;
    free(oa);
    if (http)
        acp_http_client_close(http, done, user);
    else if (done)
        done(user);
}
