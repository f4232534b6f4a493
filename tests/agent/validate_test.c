/* SPDX-License-Identifier: Apache-2.0 */
/* Request params checked at the edge (agent/validate.h, agent/params.c):
 *   - the tables are schema.json's, member by member (required, type, null, the decoding hints,
 *     every variant of every union), both ways: a schema update that changes a request fails
 *     here first;
 *   - a table of wrong types per method: -32602's path and sentence, and how the malformed
 *     optional members the schema lets a decoder drop are dropped;
 *   - through the agent: the order of the gates, error.data.path, unknown fields and _meta
 *     kept, null read as [] where the schema says so, a malformed session/cancel logged. */
#include "agent/validate.h"
#include "harness.h"

/* --- the tables against schema.json ----------------------------------------------------------- */

static json_t *defs;
static int problems;

__attribute__((format(printf, 2, 3))) static void problem(const char *where, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", where);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    problems++;
}

static bool is_null_type(const json_t *n)
{
    const char *t = json_string_value(json_object_get(n, "type"));
    return t && !strcmp(t, "null");
}

/* Follows $ref, a lone allOf and anyOf [X, null] down to the node that says what X is. */
static const json_t *resolve(const json_t *n, bool *nullable)
{
    for (;;) {
        const char *ref = json_string_value(json_object_get(n, "$ref"));
        const json_t *all = json_object_get(n, "allOf"), *any = json_object_get(n, "anyOf");
        if (ref) {
            n = json_object_get(defs, strrchr(ref, '/') + 1);
            assert_non_null(n);
        } else if (json_array_size(all) == 1 && !json_object_get(n, "type") &&
                   !json_object_get(n, "properties")) {
            n = json_array_get(all, 0);
        } else if (json_array_size(any) == 2 && is_null_type(json_array_get(any, 1))) {
            *nullable = true;
            n = json_array_get(any, 0);
        } else {
            return n;
        }
    }
}

/* The node's JSON type other than null ("string", ...; NULL for a union), noting null. */
static const char *type_of(const json_t *n, bool *nullable)
{
    const json_t *t = json_object_get(n, "type");
    if (json_is_string(t)) return json_string_value(t);
    const char *one = NULL;
    size_t i;
    json_t *e;
    json_array_foreach(t, i, e)
    {
        if (!strcmp(json_string_value(e), "null"))
            *nullable = true;
        else
            one = json_string_value(e);
    }
    return one;
}

static bool flag(const json_t *prop, const char *hint)
{
    return json_is_true(json_object_get(prop, hint));
}

static void match_field(const json_t *prop, const vfield *f, const char *where);
static void match_shape(const json_t *def, const vshape *sh, const char *where,
                        const char *skip_tag);

static size_t name_index(const char *const *names, const char *s)
{
    for (size_t i = 0; names && names[i]; i++)
        if (!strcmp(names[i], s)) return i;
    return SIZE_MAX;
}

/* An enum: oneOf [{const}...], enum [...] or a lone const, the same strings as names. */
static void match_enum(const json_t *n, const char *const *names, const char *where)
{
    size_t count = 0, want = 0;
    while (names[want]) want++;
    const json_t *c = json_object_get(n, "const"), *list = json_object_get(n, "enum");
    const json_t *one = json_object_get(n, "oneOf");
    size_t i;
    json_t *e;
    if (c) {
        count = 1;
        if (name_index(names, json_string_value(c)) == SIZE_MAX)
            problem(where, "const %s is not in the table", json_string_value(c));
    }
    json_array_foreach(list, i, e)
    {
        count++;
        if (name_index(names, json_string_value(e)) == SIZE_MAX)
            problem(where, "enum value %s is not in the table", json_string_value(e));
    }
    json_array_foreach(one, i, e)
    {
        count++;
        const char *v = json_string_value(json_object_get(e, "const"));
        if (!v || name_index(names, v) == SIZE_MAX)
            problem(where, "oneOf value %s is not in the table", v ? v : "(no const)");
    }
    if (count != want) problem(where, "%zu values in the schema, %zu in the table", count, want);
}

/* A tagged union: each anyOf/oneOf entry names its tag by a const (its variant, the shape of its
 * allOf) or has none (the variant for an absent tag). */
static void match_tagged(const json_t *n, const vunion *u, const char *where)
{
    const json_t *entries = json_object_get(n, "anyOf");
    if (!entries) entries = json_object_get(n, "oneOf");
    if (!json_array_size(entries)) {
        problem(where, "the table has a union, the schema none");
        return;
    }
    size_t i, known = 0;
    json_t *e;
    json_array_foreach(entries, i, e)
    {
        const json_t *tag = json_object_get(json_object_get(e, "properties"), u->tag);
        const char *v = json_string_value(json_object_get(tag, "const"));
        char at[300];
        bool nul = false;
        if (!v) {
            snprintf(at, sizeof at, "%s (%s absent)", where, u->tag);
            if (!u->absent)
                problem(where, "the schema has a variant without %s, the table none", u->tag);
            else
                match_shape(resolve(e, &nul), u->absent, at, NULL);
            continue;
        }
        known++;
        snprintf(at, sizeof at, "%s (%s %s)", where, u->tag, v);
        size_t k = name_index(u->names, v);
        if (k == SIZE_MAX) {
            problem(where, "variant %s is not in the table", v);
            continue;
        }
        const json_t *req = json_object_get(e, "required");
        bool tag_required = false;
        size_t j;
        json_t *r;
        json_array_foreach(req, j, r) tag_required |= !strcmp(json_string_value(r), u->tag);
        if (!tag_required) problem(at, "the tag is not required");
        const json_t *body = json_object_get(e, "allOf");
        match_shape(resolve(json_array_get(body, 0), &nul), u->variants[k], at, NULL);
    }
    /* Variants of unstable features are in schema.unstable.json only (McpServerAcp). */
    static const char *const unstable[] = {"acp", NULL};
    size_t want = 0;
    for (size_t k = 0; u->names[k]; k++) want += name_index(unstable, u->names[k]) == SIZE_MAX;
    if (known != want) problem(where, "%zu tagged variants, %zu in the table", known, want);
}

/* An anyOf of object shapes (after the members they share), in the schema's order. */
static void match_anyof(const json_t *n, const vunion *u, const char *where)
{
    if (u->common) match_shape(n, u->common, where, NULL);
    const json_t *entries = json_object_get(n, "anyOf");
    if (json_array_size(entries) != u->n) {
        problem(where, "%zu variants in the schema, %zu in the table", json_array_size(entries),
                u->n);
        return;
    }
    for (size_t i = 0; i < u->n; i++) {
        char at[300];
        bool nul = false;
        snprintf(at, sizeof at, "%s (variant %zu)", where, i);
        match_shape(resolve(json_array_get(entries, i), &nul), u->variants[i], at, NULL);
    }
}

static void match_field(const json_t *prop, const vfield *f, const char *where)
{
    bool nullable = false;
    const json_t *n = resolve(prop, &nullable);
    const char *t = type_of(n, &nullable);
    const char *want = NULL;
    switch (f->kind) {
    case V_STRING:
        want = "string";
        break;
    case V_BOOL:
        want = "boolean";
        break;
    case V_U16:
        want = "integer";
        if (json_integer_value(json_object_get(n, "minimum")) != 0 ||
            json_integer_value(json_object_get(n, "maximum")) != 65535)
            problem(where, "not a uint16 in the schema");
        break;
    case V_INT:
        want = "integer";
        break;
    case V_NUMBER:
        want = "number";
        break;
    case V_ENUM:
        match_enum(n, f->of, where);
        break;
    case V_OBJECT:
        want = "object";
        if (f->of)
            match_shape(n, f->of, where, NULL);
        else if (json_object_size(json_object_get(n, "properties")))
            problem(where, "the schema has members, the table any object");
        break;
    case V_ARRAY: {
        want = "array";
        char at[300];
        snprintf(at, sizeof at, "%s[]", where);
        match_field(json_object_get(n, "items"), f->of, at);
        break;
    }
    case V_TAGGED:
        match_tagged(n, f->of, where);
        break;
    case V_ANYOF: /* the schema's params have "type": "object", EmbeddedResourceResource none */
        want = t ? "object" : NULL;
        match_anyof(n, f->of, where);
        break;
    }
    if (want && (!t || strcmp(t, want)))
        problem(where, "the schema says %s, the table %s", t ? t : "(no type)", want);
    if (nullable != !!(f->flags & VF_NULL))
        problem(where, "null is %sallowed by the schema", nullable ? "" : "not ");
    if (!f->key) return; /* an array's items: the hints are on the member */
    if (flag(prop, "x-deserialize-default-on-error") != !!(f->flags & VF_LENIENT))
        problem(where, "x-deserialize-default-on-error differs");
    if (flag(prop, "x-deserialize-default-on-null") != !!(f->flags & VF_NULL_EMPTY))
        problem(where, "x-deserialize-default-on-null differs");
    if (flag(prop, "x-deserialize-skip-invalid-items") != !!(f->flags & VF_SKIP))
        problem(where, "x-deserialize-skip-invalid-items differs");
}

static void match_shape(const json_t *def, const vshape *sh, const char *where,
                        const char *skip_tag)
{
    const json_t *props = json_object_get(def, "properties"),
                 *req = json_object_get(def, "required");
    for (size_t i = 0; i < sh->n; i++) {
        const vfield *f = &sh->fields[i];
        char at[300];
        snprintf(at, sizeof at, "%s.%s", where, f->key);
        const json_t *prop = json_object_get(props, f->key);
        if (!prop) {
            problem(at, "in the table, not in the schema");
            continue;
        }
        bool required = false;
        size_t j;
        json_t *r;
        json_array_foreach(req, j, r) required |= !strcmp(json_string_value(r), f->key);
        if (required != !!(f->flags & VF_REQ))
            problem(at, "%srequired in the schema", required ? "" : "not ");
        match_field(prop, f, at);
    }
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)props, k, v)
    {
        bool listed = skip_tag && !strcmp(k, skip_tag);
        for (size_t i = 0; i < sh->n; i++) listed |= !strcmp(sh->fields[i].key, k);
        if (!listed) problem(where, "member %s is in the schema, not in the table", k);
    }
}

static void tables_are_the_schema(void **state)
{
    json_error_t err;
    json_t *schema = json_load_file(ACP_SCHEMA_JSON, 0, &err);
    if (!schema) {
        fprintf(stderr, "%s: %s (npm ci installs it)\n", ACP_SCHEMA_JSON, err.text);
        skip();
    }
    defs = json_object_get(schema, "$defs");
    problems = 0;
    for (size_t i = 0; i < params_nmethods; i++) {
        const vmethod *m = &params_methods[i];
        const json_t *def = json_object_get(defs, m->schema);
        assert_non_null(def);
        assert_string_equal(json_string_value(json_object_get(def, "x-method")), m->method);
        match_field(def, m->root, m->schema);
    }
    /* and every request and notification the agent serves has its table */
    const char *k;
    json_t *d;
    json_object_foreach(defs, k, d)
    {
        const char *side = json_string_value(json_object_get(d, "x-side"));
        size_t n = strlen(k);
        bool incoming = (n > 7 && !strcmp(k + n - 7, "Request")) ||
                        (n > 12 && !strcmp(k + n - 12, "Notification"));
        if (!side || strcmp(side, "agent") || !incoming) continue;
        bool found = false;
        for (size_t i = 0; i < params_nmethods; i++) found |= !strcmp(params_methods[i].schema, k);
        if (!found) problem(k, "the agent serves it and no table checks it");
    }
    json_decref(schema);
    assert_int_equal(problems, 0);
}

/* --- a table of wrong types per method ---------------------------------------------------------
 */

typedef struct vcase {
    const vfield *root;
    const char *params; /* single quotes for double */
    const char *msg;    /* the sentence (its path is the part before " must" / " is"), or NULL:
                           accepted */
    const char *after;  /* accepted: the params as read, when not the same */
} vcase;

#define OK(r, p)                                                                                   \
    {                                                                                              \
        &params_##r, p, NULL, NULL                                                                 \
    }
#define READ(r, p, a)                                                                              \
    {                                                                                              \
        &params_##r, p, NULL, a                                                                    \
    }
#define BAD(r, p, m)                                                                               \
    {                                                                                              \
        &params_##r, p, m, NULL                                                                    \
    }
#define STDIO           "'name':'a','command':'/x'"
#define NEW(servers)    "{'cwd':'/a','mcpServers':" servers "}"
#define PROMPT(blocks)  "{'sessionId':'s','prompt':[" blocks "]}"
#define CONFIG(members) "{'sessionId':'s','configId':'c'" members "}"

static const vcase cases[] = {
    /* initialize */
    BAD(initialize, "{}", "params.protocolVersion is required"),
    BAD(initialize, "{'protocolVersion':'1'}",
        "params.protocolVersion must be an integer from 0 to 65535"),
    BAD(initialize, "{'protocolVersion':[1]}",
        "params.protocolVersion must be an integer from 0 to 65535"),
    BAD(initialize, "{'protocolVersion':true}",
        "params.protocolVersion must be an integer from 0 to 65535"),
    BAD(initialize, "{'protocolVersion':null}",
        "params.protocolVersion must be an integer from 0 to 65535"),
    BAD(initialize, "{'protocolVersion':-1}",
        "params.protocolVersion must be an integer from 0 to 65535"),
    BAD(initialize, "{'protocolVersion':65536}",
        "params.protocolVersion must be an integer from 0 to 65535"),
    BAD(initialize, "{'protocolVersion':1.5}",
        "params.protocolVersion must be an integer from 0 to 65535"),
    BAD(initialize, "[1]", "params must be an object"),
    OK(initialize, "{'protocolVersion':1.0}"),
    OK(initialize, "{'protocolVersion':65535,'_meta':null,'future':{'x':1}}"),
    /* default-on-error, at every depth: malformed capabilities read as their defaults */
    READ(initialize,
         "{'protocolVersion':1,'clientCapabilities':'all','clientInfo':{'name':5},'_meta':'x',"
         "'future':1}",
         "{'protocolVersion':1,'future':1}"),
    READ(initialize,
         "{'protocolVersion':1,'clientCapabilities':{'fs':true,'terminal':'yes','auth':"
         "{'terminal':1},'session':{'notices':{},'compaction':3,'configOptions':{'boolean':[]}},"
         "'elicitation':{'form':{},'url':[]},'_meta':{'a':1},'x':2}}",
         "{'protocolVersion':1,'clientCapabilities':{'auth':{},'session':{'notices':{},"
         "'configOptions':{}},'elicitation':{'form':{}},'_meta':{'a':1},'x':2}}"),
    READ(initialize,
         "{'protocolVersion':1,'clientInfo':{'name':'c','version':'1','title':5,'_meta':[]}}",
         "{'protocolVersion':1,'clientInfo':{'name':'c','version':'1'}}"),
    /* authenticate, logout */
    BAD(authenticate, "{}", "params.methodId is required"),
    BAD(authenticate, "{'methodId':1}", "params.methodId must be a string"),
    OK(authenticate, "{'methodId':'m','_meta':{'k':1}}"),
    READ(logout, "{'_meta':5}", "{}"),
    /* session/new */
    BAD(new, "{}", "params.cwd is required"),
    BAD(new, "{'cwd':5,'mcpServers':[]}", "params.cwd must be a string"),
    BAD(new, "{'cwd':'/a'}", "params.mcpServers is required"),
    BAD(new, NEW("{}"), "params.mcpServers must be an array"),
    BAD(new, NEW("'none'"), "params.mcpServers must be an array"),
    BAD(new, "{'cwd':'/a','mcpServers':[],'additionalDirectories':'/tmp'}",
        "params.additionalDirectories must be an array"),
    BAD(new, "{'cwd':'/a','mcpServers':[],'additionalDirectories':[5]}",
        "params.additionalDirectories[0] must be a string"),
    BAD(new, "{'cwd':'/a','mcpServers':[],'additionalDirectories':['/b',null]}",
        "params.additionalDirectories[1] must be a string"),
    /* x-deserialize-default-on-null: null is [] (the SDKs' reading, the issue notwithstanding) */
    READ(new, "{'cwd':'/a','mcpServers':null,'additionalDirectories':null}",
         "{'cwd':'/a','mcpServers':[],'additionalDirectories':[]}"),
    BAD(new, NEW("[5]"), "params.mcpServers[0] must be an object"),
    OK(new, NEW("[{" STDIO ",'args':[],'env':[]}]")),
    BAD(new, NEW("[{" STDIO ",'env':[]}]"), "params.mcpServers[0].args is required"),
    BAD(new, NEW("[{" STDIO ",'args':[]}]"), "params.mcpServers[0].env is required"),
    READ(new, NEW("[{" STDIO ",'args':null,'env':null,'_meta':'x'}]"),
         NEW("[{" STDIO ",'args':[],'env':[]}]")),
    BAD(new, NEW("[{" STDIO ",'args':[1],'env':[]}]"),
        "params.mcpServers[0].args[0] must be a string"),
    BAD(new, NEW("[{" STDIO ",'args':'-v','env':[]}]"),
        "params.mcpServers[0].args must be an array"),
    BAD(new, NEW("[{" STDIO ",'args':[],'env':'A=1'}]"),
        "params.mcpServers[0].env must be an array"),
    BAD(new, NEW("[{" STDIO ",'args':[],'env':[{'name':'A'}]}]"),
        "params.mcpServers[0].env[0].value is required"),
    BAD(new, NEW("[{" STDIO ",'args':[],'env':[{'name':'A','value':1}]}]"),
        "params.mcpServers[0].env[0].value must be a string"),
    BAD(new, NEW("[{'name':'a','command':5,'args':[],'env':[]}]"),
        "params.mcpServers[0].command must be a string"),
    BAD(new, NEW("[{'command':'/x','args':[],'env':[]}]"), "params.mcpServers[0].name is required"),
    OK(new, NEW("[{'type':'http','name':'h','url':'u','headers':[]}]")),
    OK(new, NEW("[{'type':'sse','name':'h','url':'u','headers':[{'name':'A','value':'b'}]}]")),
    BAD(new, NEW("[{'type':'http','name':'h','url':'u'}]"),
        "params.mcpServers[0].headers is required"),
    BAD(new, NEW("[{'type':'sse','name':'h','url':5,'headers':[]}]"),
        "params.mcpServers[0].url must be a string"),
    BAD(new, NEW("[{'type':'http','name':'h','url':'u','headers':[{'name':'A','value':1}]}]"),
        "params.mcpServers[0].headers[0].value must be a string"),
    BAD(new, NEW("[{'type':'ws'," STDIO ",'args':[],'env':[]}]"),
        "params.mcpServers[0].type must be one of http, sse, acp (or absent)"),
    BAD(new, NEW("[{'type':5,'name':'h','url':'u','headers':[]}]"),
        "params.mcpServers[0].type must be one of http, sse, acp (or absent)"),
    /* load, resume */
    BAD(load, "{'cwd':'/a','mcpServers':[]}", "params.sessionId is required"),
    BAD(load, "{'sessionId':3,'cwd':'/a','mcpServers':[]}", "params.sessionId must be a string"),
    BAD(load, "{'sessionId':'s','cwd':'/a'}", "params.mcpServers is required"),
    BAD(load, "{'sessionId':'s','mcpServers':[]}", "params.cwd is required"),
    READ(load, "{'sessionId':'s','cwd':'/a','mcpServers':null}",
         "{'sessionId':'s','cwd':'/a','mcpServers':[]}"),
    OK(resume, "{'sessionId':'s','cwd':'/a'}"),
    BAD(resume, "{'sessionId':'s','cwd':'/a','mcpServers':'x'}",
        "params.mcpServers must be an array"),
    BAD(resume, "{'sessionId':'s','cwd':['/a']}", "params.cwd must be a string"),
    /* close, delete, list, cancel */
    BAD(close, "{}", "params.sessionId is required"),
    BAD(close, "{'sessionId':null}", "params.sessionId must be a string"),
    BAD(delete, "{'sessionId':['s']}", "params.sessionId must be a string"),
    OK(delete, "{'sessionId':'s','_meta':null,'why':'done'}"),
    OK(list, "{'cwd':null,'cursor':null}"),
    BAD(list, "{'cwd':5}", "params.cwd must be a string or null"),
    BAD(list, "{'cursor':7}", "params.cursor must be a string or null"),
    BAD(cancel, "{}", "params.sessionId is required"),
    BAD(cancel, "{'sessionId':5}", "params.sessionId must be a string"),
    /* session/prompt */
    BAD(prompt, "{'sessionId':'s'}", "params.prompt is required"),
    BAD(prompt, "{'prompt':[]}", "params.sessionId is required"),
    BAD(prompt, "{'sessionId':'s','prompt':'text'}", "params.prompt must be an array"),
    BAD(prompt, PROMPT("5"), "params.prompt[0] must be an object"),
    BAD(prompt, PROMPT("{}"), "params.prompt[0].type is required"),
    BAD(prompt, PROMPT("{'type':'text','text':'a'},{'type':'video'}"),
        "params.prompt[1].type must be one of text, image, audio, resource_link, resource"),
    BAD(prompt, PROMPT("{'type':'text'}"), "params.prompt[0].text is required"),
    BAD(prompt, PROMPT("{'type':'text','text':5}"), "params.prompt[0].text must be a string"),
    BAD(prompt, PROMPT("{'type':'image','data':'AA=='}"), "params.prompt[0].mimeType is required"),
    BAD(prompt, PROMPT("{'type':'audio','mimeType':'audio/wav','data':1}"),
        "params.prompt[0].data must be a string"),
    BAD(prompt, PROMPT("{'type':'resource_link','name':'n'}"), "params.prompt[0].uri is required"),
    BAD(prompt, PROMPT("{'type':'resource_link','name':5,'uri':'u'}"),
        "params.prompt[0].name must be a string"),
    READ(prompt, PROMPT("{'type':'resource_link','name':'n','uri':'u','size':'big','title':5}"),
         PROMPT("{'type':'resource_link','name':'n','uri':'u'}")),
    OK(prompt, PROMPT("{'type':'resource_link','name':'n','uri':'u','size':1.0,'title':null}")),
    BAD(prompt, PROMPT("{'type':'resource'}"), "params.prompt[0].resource is required"),
    BAD(prompt, PROMPT("{'type':'resource','resource':'x'}"),
        "params.prompt[0].resource must be an object"),
    BAD(prompt, PROMPT("{'type':'resource','resource':{'uri':'u'}}"),
        "params.prompt[0].resource.text is required"),
    BAD(prompt, PROMPT("{'type':'resource','resource':{'uri':5,'text':'t'}}"),
        "params.prompt[0].resource.uri must be a string"),
    OK(prompt, PROMPT("{'type':'resource','resource':{'uri':'u','blob':'AA=='}}")),
    OK(prompt, PROMPT("{'type':'resource','resource':{'uri':'u','text':5,'blob':'AA=='}}")),
    /* annotations: default-on-error, audience skipping invalid items */
    READ(prompt,
         PROMPT("{'type':'text','text':'t','annotations':{'audience':['user','bot',3,'assistant'],"
                "'priority':'high','lastModified':5,'_meta':1}}"),
         PROMPT("{'type':'text','text':'t','annotations':{'audience':['user','assistant']}}")),
    READ(prompt, PROMPT("{'type':'text','text':'t','annotations':'x'}"),
         PROMPT("{'type':'text','text':'t'}")),
    OK(prompt, "{'sessionId':'s','prompt':[{'type':'text','text':'t','future':[1]}],'_meta':{'a':"
               "1},'x':true}"),
    OK(prompt, "{'sessionId':'','prompt':[]}"),
    /* set_mode, set_config_option */
    BAD(set_mode, "{'sessionId':'s'}", "params.modeId is required"),
    BAD(set_mode, "{'sessionId':'s','modeId':1}", "params.modeId must be a string"),
    BAD(set_config, "{'sessionId':'s','value':'v'}", "params.configId is required"),
    BAD(set_config, "{'sessionId':'s','configId':1,'value':'v'}",
        "params.configId must be a string"),
    BAD(set_config, CONFIG(""), "params.value is required"),
    BAD(set_config, CONFIG(",'value':3"), "params.value must be a string"),
    BAD(set_config, CONFIG(",'type':'boolean','value':1"), "params.value must be a boolean"),
    BAD(set_config, CONFIG(",'type':'boolean'"), "params.value is required"),
    BAD(set_config, CONFIG(",'type':'select','value':true"), "params.value must be a string"),
    OK(set_config, CONFIG(",'type':'boolean','value':true")),
    OK(set_config, CONFIG(",'value':'v'")),
    /* the schema's anyOf: "boolean" with a string is the value id variant, as the SDK reads it */
    OK(set_config, CONFIG(",'type':'boolean','value':'v'")),
    OK(set_config, CONFIG(",'type':'future','value':'v'")),
};

static void wrong_types_per_method(void **state)
{
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const vcase *c = &cases[i];
        json_t *p = J("%s", c->params);
        verr e;
        bool ok = params_check(p, c->root, &e);
        if (ok != !c->msg || (c->msg && strcmp(e.msg, c->msg)))
            fprintf(stderr, "case %zu %s: got %s\n", i, c->params, ok ? "accepted" : e.msg);
        assert_int_equal(ok, !c->msg);
        if (c->msg) {
            assert_string_equal(e.msg, c->msg);
            /* the path is the sentence's subject */
            size_t n = strlen(e.path);
            assert_memory_equal(e.msg, e.path, n);
            assert_int_equal(e.msg[n], ' ');
        } else {
            assert_json(p, J("%s", c->after ? c->after : c->params));
        }
        json_decref(p);
    }
}

/* --- through the agent ---------------------------------------------------------------------- */

struct eng_state {
    char log[4096];
    const json_t *prompt; /* the last prompt the engine was given, as it read it */
    char prompt_text[512];
    bool had_meta;
};

static void on_log(const char *line, void *user)
{
    h *x = user;
    size_t n = strlen(x->e->log);
    snprintf(x->e->log + n, sizeof x->e->log - n, "%s\n", line);
}

static void engine_prompt(acp_turn *t, const json_t *prompt, void *user)
{
    h *x = user;
    char *s = json_dumps(prompt, JSON_COMPACT | JSON_SORT_KEYS);
    snprintf(x->e->prompt_text, sizeof x->e->prompt_text, "%s", s);
    free(s);
    x->e->had_meta = acp_turn_meta(t) != NULL;
    acp_turn_end(t, "end_turn");
}

static int setup(void **state)
{
    h *x = h_new("validate", sizeof(eng_state));
    x->eng = (acp_engine){.struct_size = sizeof(acp_engine),
                          .name = "validate",
                          .version = "1",
                          .prompt = engine_prompt,
                          .user = x};
    x->opts.on_log = on_log;
    x->opts.user = x;
    agent_start(x);
    *state = x;
    return 0;
}

static int teardown(void **state)
{
    h_free(*state);
    return 0;
}

static json_t *call(h *x, int id, const char *method, const char *params)
{
    char *p = strdup(params);
    for (char *q = p; *q; q++)
        if (*q == '\'') *q = '"';
    json_t *r = request(x, id, method, p);
    free(p);
    return r;
}

/* Asserts msgs ends with -32602 whose message is msg and whose data is {"path": path}. */
static void refused(json_t *msgs, const char *msg, const char *path)
{
    assert_int_equal(error_code(msgs), ACP_RPC_INVALID_PARAMS);
    assert_string_equal(error_message(msgs), msg);
    json_t *data = json_object_get(json_object_get(last(msgs), "error"), "data");
    assert_json(data, J("{'path':'%s'}", path));
    json_decref(msgs);
}

/* The SDK's agent has the same gates in the same order: initialize first (-32600), then the
 * params (-32602), then what the method does (authentication: -32000). A refused initialize
 * changes nothing. */
static void test_gates_in_order(void **state)
{
    h *x = *state;
    static const acp_auth_method m = {.id = "token", .name = "Token"};
    agent_stop(x);
    x->eng.auth_methods = &m;
    x->eng.nauth_methods = 1;
    x->eng.auth_required = true;
    agent_start(x);
    json_t *r = call(x, 1, "session/new", "{'cwd':5}");
    assert_int_equal(error_code(r), ACP_RPC_INVALID_REQUEST);
    json_decref(r);
    refused(call(x, 2, "initialize", "{'protocolVersion':'1'}"),
            "params.protocolVersion must be an integer from 0 to 65535", "params.protocolVersion");
    r = call(x, 3, "session/list", "{}");
    assert_int_equal(error_code(r), ACP_RPC_INVALID_REQUEST); /* still not initialized */
    json_decref(r);
    json_decref(call(x, 4, "initialize", "{'protocolVersion':1}"));
    refused(call(x, 5, "session/new", "{'cwd':5}"), "params.cwd must be a string", "params.cwd");
    r = call(x, 6, "session/new", "{'cwd':'/','mcpServers':[]}");
    assert_int_equal(error_code(r), ACP_RPC_AUTH_REQUIRED);
    json_decref(r);
    refused(call(x, 7, "authenticate", "{'methodId':7}"), "params.methodId must be a string",
            "params.methodId");
}

/* Each bad shape of the issue, through the agent: -32602 naming the member, in our words. */
static void test_bad_shapes(void **state)
{
    h *x = *state;
    static const struct {
        const char *method, *params, *msg, *path;
    } bad[] = {
        {"initialize", "{'protocolVersion':'1'}",
         "params.protocolVersion must be an integer from 0 to 65535", "params.protocolVersion"},
        {"initialize", "{'protocolVersion':[1]}",
         "params.protocolVersion must be an integer from 0 to 65535", "params.protocolVersion"},
        {"initialize", "{'protocolVersion':false}",
         "params.protocolVersion must be an integer from 0 to 65535", "params.protocolVersion"},
        {"initialize", "{'protocolVersion':99999999999999999999}",
         "params.protocolVersion is a number out of range (an integer must fit in 64 bits, a real "
         "in a double)",
         "params.protocolVersion"},
        {"session/new", "{'cwd':'/','mcpServers':'none'}", "params.mcpServers must be an array",
         "params.mcpServers"},
        {"session/load", "{'sessionId':'s','cwd':'/','mcpServers':[],'additionalDirectories':{}}",
         "params.additionalDirectories must be an array", "params.additionalDirectories"},
        {"session/resume", "{'sessionId':'a\\u0000b','cwd':'/'}",
         "params.sessionId must not contain a NUL character (\\u0000)", "params.sessionId"},
        {"session/close", "{'sessionId':'a\\u0000'}",
         "params.sessionId must not contain a NUL character (\\u0000)", "params.sessionId"},
        {"session/prompt", "{'sessionId':'s','prompt':[{'type':'text','text':'a','text':'b'}]}",
         "params.prompt[0].text is given twice: member names must be unique",
         "params.prompt[0].text"},
        {"session/prompt", "{'sessionId':'s','prompt':[{'type':'image','data':'','mimeType':1}]}",
         "params.prompt[0].mimeType must be a string", "params.prompt[0].mimeType"},
        {"session/set_mode", "{'sessionId':'s','modeId':null}", "params.modeId must be a string",
         "params.modeId"},
        {"session/set_config_option", "{'sessionId':'s','configId':'c','value':{}}",
         "params.value must be a string", "params.value"},
        {"session/list", "{'cursor':[]}", "params.cursor must be a string or null",
         "params.cursor"},
        {"session/delete", "{}", "params.sessionId is required", "params.sessionId"},
        {"logout", "[]", "params must be an object", "params"},
    };
    json_decref(call(x, 1, "initialize", "{'protocolVersion':1}"));
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        refused(call(x, (int)i + 10, bad[i].method, bad[i].params), bad[i].msg, bad[i].path);
    /* nothing was opened by any of them */
    json_t *r = call(x, 2, "session/list", "{}");
    assert_int_equal(json_array_size(json_object_get(result_of(r), "sessions")), 0);
    json_decref(r);
}

/* What the schema lets a decoder take is taken: unknown members, _meta as an object, null or
 * malformed (then absent), null mcpServers and additionalDirectories read as [], malformed
 * optional members dropped before the engine sees them. */
static void test_lenient_reading(void **state)
{
    h *x = *state;
    json_t *r = call(x, 1, "initialize",
                     "{'protocolVersion':1,'clientCapabilities':'all','clientInfo':{'name':1},"
                     "'_meta':'x','future':true}");
    assert_non_null(result_of(r));
    json_decref(r);
    assert_json(acp_agent_client_caps(x->a), J("{}"));
    assert_json(acp_agent_init_params(x->a), J("{'protocolVersion':1,'future':true}"));
    r = call(x, 2, "session/new",
             "{'cwd':'/','mcpServers':null,'additionalDirectories':null,'_meta':{'k':1},'x':1}");
    const char *sid = jstr(result_of(r), "sessionId");
    assert_non_null(sid);
    char id[64];
    snprintf(id, sizeof id, "%s", sid);
    json_decref(r);
    r = call(x, 3, "session/list", "{'cwd':null,'cursor':null,'_meta':null}");
    json_t *s = json_array_get(json_object_get(result_of(r), "sessions"), 0);
    assert_json(json_object_get(s, "additionalDirectories"), J("[]"));
    json_decref(r);
    char p[512];
    snprintf(p, sizeof p,
             "{'sessionId':'%s','prompt':[{'type':'text','text':'hi','annotations':{'audience':"
             "['user',1],'priority':'x'},'future':1}],'_meta':'x'}",
             id);
    r = call(x, 4, "session/prompt", p);
    assert_string_equal(stop_reason(last(r)), "end_turn");
    json_decref(r);
    assert_string_equal(x->e->prompt_text, "[{\"annotations\":{\"audience\":[\"user\"]},"
                                           "\"future\":1,\"text\":\"hi\",\"type\":\"text\"}]");
    assert_false(x->e->had_meta);
    snprintf(p, sizeof p, "{'sessionId':'%s','prompt':[],'_meta':{'trace':'t'}}", id);
    r = call(x, 5, "session/prompt", p);
    assert_string_equal(stop_reason(last(r)), "end_turn");
    json_decref(r);
    assert_true(x->e->had_meta);
    snprintf(p, sizeof p, "{'sessionId':'%s','cwd':'/','mcpServers':null}", id);
    r = call(x, 6, "session/load", p);
    assert_non_null(result_of(r));
    json_decref(r);
}

/* A session/cancel has no answer: a malformed one is dropped and logged, in our words. */
static void test_cancel_dropped(void **state)
{
    h *x = *state;
    json_decref(call(x, 1, "initialize", "{'protocolVersion':1}"));
    send_line(x,
              "{\"jsonrpc\":\"2.0\",\"method\":\"session/cancel\",\"params\":{\"sessionId\":5}}");
    send_line(x, "{\"jsonrpc\":\"2.0\",\"method\":\"session/cancel\",\"params\":{\"sessionId\":"
                 "\"a\\u0000\"}}");
    send_line(x, "{\"jsonrpc\":\"2.0\",\"method\":\"session/cancel\",\"params\":{\"sessionId\":"
                 "\"nope\",\"_meta\":7}}");
    turn(x);
    collect(x);
    assert_int_equal(json_array_size(x->msgs), 0);
    assert_string_equal(x->e->log,
                        "session/cancel dropped: params.sessionId must be a string\n"
                        "session/cancel dropped: its params cannot be read (a NUL character, a "
                        "member given twice or a number out of range)\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tables_are_the_schema),
        cmocka_unit_test(wrong_types_per_method),
        cmocka_unit_test_setup_teardown(test_gates_in_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_shapes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lenient_reading, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_dropped, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
