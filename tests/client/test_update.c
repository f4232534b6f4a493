/* SPDX-License-Identifier: Apache-2.0 */
/* Typed update views (acp/update.h): every session/update kind read from JSON text the way
 * the client hands it over (an acp_update of spans into the line), valid shapes field by
 * field, and malformed ones with the exact path of the first bad member, strictly and with
 * the reference SDKs' lenient reading. Test JSON is written with ' for " (see text()). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "acp/update.h"

/* The JSON text with ' turned into ", owned by the caller. */
static char *text(const char *s)
{
    char *t = strdup(s);
    for (char *p = t; *p; p++)
        if (*p == '\'') *p = '"';
    return t;
}

/* An acp_update as the client builds it: spans into the line, the kind from the literal. */
static acp_update update_of(const char *t)
{
    acp_update u = {.update = {t, strlen(t)}};
    if (acp_json_validate(t, strlen(t), 64) == 0 && acp_json_kind(u.update) == 'o' &&
        acp_json_member(u.update, "sessionUpdate", &u.kind_text))
        u.kind = acp_update_kind_of(u.kind_text);
    return u;
}

/* Parses json (with ' for ") into v, which must succeed; the text is overwritten and freed
 * before returning, so every view below also proves the view owns what it points to. */
static void parse_ok(const char *json, unsigned flags, acp_update_view *v)
{
    char *t = text(json);
    acp_update u = update_of(t);
    int rc = acp_update_view_parse_ext(&u, flags, v);
    if (rc) fail_msg("%s: %d %s", json, rc, acp_error_last()->message);
    if (u.kind != ACP_UPDATE_OTHER) assert_int_equal(v->kind, u.kind);
    assert_non_null(v->raw);
    memset(t, 'x', strlen(t));
    free(t);
}

static void ok(const char *json, acp_update_view *v)
{
    parse_ok(json, 0, v);
    assert_int_equal(v->salvaged, 0);
}

/* Strict reading fails with exactly msg and leaves v empty. */
static void fails(const char *json, unsigned flags, const char *msg)
{
    char *t = text(json);
    acp_update u = update_of(t);
    acp_update_view v = ACP_UPDATE_VIEW_INIT;
    memset(&v, 0xa5, sizeof v);
    acp_error_clear();
    int rc = acp_update_view_parse_ext(&u, flags, &v);
    const char *err = acp_error_last()->message;
    if (rc != ACP_EPROTO || acp_error_last()->status != rc || strcmp(err, msg) != 0)
        fail_msg("%s\n  want: %s\n  got:  %d %s", json, msg, rc, err);
    assert_null(v.raw);
    assert_null(v.block);
    assert_int_equal(v.kind, ACP_UPDATE_OTHER);
    acp_update_view_free(&v); /* harmless on a failed parse */
    free(t);
}

/* A malformed update: strict reading names msg; lenient reading repairs `salvaged` members or
 * items (the schema lets it), or fails alike when salvaged is -1 (a broken required member). */
typedef struct bad {
    const char *json;
    const char *msg;
    int salvaged;
} bad;

static void check_bad(const bad *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        fails(b[i].json, 0, b[i].msg);
        if (b[i].salvaged < 0) {
            fails(b[i].json, ACP_UPDATE_VIEW_LENIENT, b[i].msg);
            continue;
        }
        acp_update_view v = ACP_UPDATE_VIEW_INIT;
        parse_ok(b[i].json, ACP_UPDATE_VIEW_LENIENT, &v);
        if (v.salvaged != (size_t)b[i].salvaged)
            fail_msg("%s: lenient salvaged %zu, want %d", b[i].json, v.salvaged, b[i].salvaged);
        acp_update_view_free(&v);
    }
}

#define CHECK_BAD(b) check_bad(b, sizeof b / sizeof b[0])

/* --- content chunks ---------------------------------------------------------------------- */

static void chunks(void **state)
{
    acp_update_view v = ACP_UPDATE_VIEW_INIT;
    ok("{'sessionUpdate':'agent_message_chunk','messageId':'m1','content':{'type':'text',"
       "'text':'hi','_meta':{'k':1}},'_meta':{'trace':'t'},'futureField':[1]}",
       &v);
    assert_int_equal(v.kind, ACP_UPDATE_AGENT_MESSAGE_CHUNK);
    assert_int_equal(v.chunk.content.type, ACP_CONTENT_TEXT);
    assert_string_equal(v.chunk.content.text, "hi");
    assert_string_equal(v.chunk.message_id, "m1");
    assert_int_equal(json_integer_value(json_object_get(v.chunk.content.meta, "k")), 1);
    assert_string_equal(json_string_value(json_object_get(v.meta, "trace")), "t");
    assert_true(json_is_array(json_object_get(v.raw, "futureField")));
    acp_update_view_free(&v);
    acp_update_view_free(&v); /* twice is harmless */

    ok("{'sessionUpdate':'user_message_chunk','messageId':null,'content':{'type':'image',"
       "'data':'iVBO','mimeType':'image/png','uri':'file:///a.png','annotations':null}}",
       &v);
    assert_int_equal(v.kind, ACP_UPDATE_USER_MESSAGE_CHUNK);
    assert_null(v.chunk.message_id);
    assert_int_equal(v.chunk.content.type, ACP_CONTENT_IMAGE);
    assert_string_equal(v.chunk.content.data, "iVBO");
    assert_string_equal(v.chunk.content.mime_type, "image/png");
    assert_string_equal(v.chunk.content.uri, "file:///a.png");
    assert_int_equal(v.chunk.content.audience, 0);
    assert_null(v.meta);
    acp_update_view_free(&v);

    ok("{'sessionUpdate':'agent_thought_chunk','content':{'type':'audio','data':'UklG',"
       "'mimeType':'audio/wav','annotations':{'audience':['user','assistant'],'priority':0.5,"
       "'lastModified':'2025-01-01T00:00:00Z'}}}",
       &v);
    assert_int_equal(v.kind, ACP_UPDATE_AGENT_THOUGHT_CHUNK);
    assert_int_equal(v.chunk.content.type, ACP_CONTENT_AUDIO);
    assert_string_equal(v.chunk.content.data, "UklG");
    assert_null(v.chunk.content.uri);
    assert_int_equal(v.chunk.content.audience, ACP_AUDIENCE_USER | ACP_AUDIENCE_ASSISTANT);
    assert_true(v.chunk.content.has_priority);
    assert_true(v.chunk.content.priority == 0.5);
    assert_string_equal(v.chunk.content.last_modified, "2025-01-01T00:00:00Z");
    acp_update_view_free(&v);

    ok("{'sessionUpdate':'agent_message_chunk','content':{'type':'resource_link','name':'a.c',"
       "'uri':'file:///a.c','title':'A','description':'the file','mimeType':'text/x-c',"
       "'size':-1}}",
       &v);
    acp_content_view *link = &v.chunk.content;
    assert_int_equal(link->type, ACP_CONTENT_RESOURCE_LINK);
    assert_string_equal(link->name, "a.c");
    assert_string_equal(link->uri, "file:///a.c");
    assert_string_equal(link->title, "A");
    assert_string_equal(link->description, "the file");
    assert_string_equal(link->mime_type, "text/x-c");
    assert_true(link->has_size); /* int64 in the schema: no minimum */
    assert_int_equal(link->size, -1);
    acp_update_view_free(&v);

    ok("{'sessionUpdate':'agent_message_chunk','content':{'type':'resource_link','name':'a',"
       "'uri':'u','size':null,'title':null}}",
       &v);
    assert_false(v.chunk.content.has_size);
    assert_null(v.chunk.content.title);
    acp_update_view_free(&v);

    ok("{'sessionUpdate':'agent_message_chunk','content':{'type':'resource','resource':"
       "{'uri':'file:///a.txt','text':'one\\ntwo','mimeType':'text/plain'}}}",
       &v);
    assert_int_equal(v.chunk.content.type, ACP_CONTENT_RESOURCE);
    assert_string_equal(v.chunk.content.text, "one\ntwo");
    assert_null(v.chunk.content.data);
    assert_string_equal(v.chunk.content.uri, "file:///a.txt");
    assert_string_equal(v.chunk.content.mime_type, "text/plain");
    acp_update_view_free(&v);

    ok("{'sessionUpdate':'agent_message_chunk','content':{'type':'resource','resource':"
       "{'uri':'file:///a.bin','blob':'AAEC'}}}",
       &v);
    assert_null(v.chunk.content.text);
    assert_string_equal(v.chunk.content.data, "AAEC");
    assert_null(v.chunk.content.mime_type);
    acp_update_view_free(&v);

    static const bad b[] = {
        {"{'sessionUpdate':'agent_message_chunk'}", "update.content is required", -1},
        {"{'sessionUpdate':'agent_message_chunk','content':'hi'}",
         "update.content must be an object", -1},
        {"{'sessionUpdate':'agent_message_chunk','content':{'text':'hi'}}",
         "update.content.type is required", -1},
        {"{'sessionUpdate':'agent_message_chunk','content':{'type':'video','text':'hi'}}",
         "update.content.type must be one of text, image, audio, resource_link, resource", -1},
        {"{'sessionUpdate':'agent_message_chunk','content':{'type':'text'}}",
         "update.content.text is required", -1},
        {"{'sessionUpdate':'agent_message_chunk','content':{'type':'text','text':7}}",
         "update.content.text must be a string", -1},
        {"{'sessionUpdate':'agent_message_chunk','content':{'type':'text','text':'a\\u0000b'}}",
         "update.content.text must not contain a NUL character", -1},
        {"{'sessionUpdate':'agent_message_chunk','content':{'type':'image','data':'x'}}",
         "update.content.mimeType is required", -1},
        {"{'sessionUpdate':'agent_message_chunk','content':{'type':'audio','mimeType':'a/b'}}",
         "update.content.data is required", -1},
        {"{'sessionUpdate':'agent_message_chunk','content':{'type':'resource_link','uri':'u'}}",
         "update.content.name is required", -1},
        {"{'sessionUpdate':'agent_message_chunk','content':{'type':'resource_link','name':'n',"
         "'uri':'u','size':'big'}}",
         "update.content.size must be an integer or null", 1},
        {"{'sessionUpdate':'agent_message_chunk','content':{'type':'resource'}}",
         "update.content.resource is required", -1},
        {"{'sessionUpdate':'agent_message_chunk','content':{'type':'resource','resource':"
         "{'uri':'u'}}}",
         "update.content.resource must have text or blob", -1},
        {"{'sessionUpdate':'agent_message_chunk','content':{'type':'resource','resource':"
         "{'text':'t'}}}",
         "update.content.resource.uri is required", -1},
        {"{'sessionUpdate':'agent_message_chunk','content':{'type':'resource','resource':"
         "{'blob':5,'uri':'u'}}}",
         "update.content.resource.blob must be a string", -1},
        {"{'sessionUpdate':'agent_message_chunk','content':{'type':'resource','resource':"
         "{'text':'t','uri':'u','mimeType':1}}}",
         "update.content.resource.mimeType must be a string or null", 1},
        {"{'sessionUpdate':'agent_message_chunk','messageId':5,'content':{'type':'text',"
         "'text':'hi'}}",
         "update.messageId must be a string or null", 1},
        {"{'sessionUpdate':'agent_message_chunk','content':{'type':'text','text':'hi',"
         "'annotations':{'audience':['user','robot']}}}",
         "update.content.annotations.audience[1] must be one of assistant, user", 1},
        {"{'sessionUpdate':'agent_message_chunk','content':{'type':'text','text':'hi',"
         "'annotations':{'audience':'user','priority':'high'}}}",
         "update.content.annotations.audience must be an array or null", 2},
        {"{'sessionUpdate':'agent_message_chunk','content':{'type':'text','text':'hi',"
         "'annotations':[]}}",
         "update.content.annotations must be an object or null", 1},
        {"{'sessionUpdate':'agent_message_chunk','content':{'type':'text','text':'hi',"
         "'_meta':[]}}",
         "update.content._meta must be an object or null", 1},
        {"{'sessionUpdate':'agent_message_chunk','_meta':'m','content':{'type':'text',"
         "'text':'hi'}}",
         "update._meta must be an object or null", 1},
    };
    CHECK_BAD(b);

    /* Lenient: what was malformed is absent, what was not stays. */
    parse_ok("{'sessionUpdate':'agent_message_chunk','messageId':5,'content':{'type':'text',"
             "'text':'hi','annotations':{'audience':['robot','user'],'priority':1}}}",
             ACP_UPDATE_VIEW_LENIENT, &v);
    assert_int_equal(v.salvaged, 2);
    assert_null(v.chunk.message_id);
    assert_string_equal(v.chunk.content.text, "hi");
    assert_int_equal(v.chunk.content.audience, ACP_AUDIENCE_USER);
    assert_true(v.chunk.content.has_priority);
    acp_update_view_free(&v);
}

/* --- tool calls ------------------------------------------------------------------------------ */

/* What a tool call view says about its kind, status and collections: content and locations
 * are their counts, or -1 for "not given" (has_content / has_locations false). */
static void expect_call(const acp_tool_call_view *t, acp_tool_kind kind, acp_tool_status status,
                        int content, int locations)
{
    assert_int_equal(t->kind, kind);
    assert_int_equal(t->status, status);
    assert_int_equal(t->has_content, content >= 0);
    assert_int_equal(t->ncontent, content < 0 ? 0 : content);
    assert_int_equal(t->content == NULL, content <= 0);
    assert_int_equal(t->has_locations, locations >= 0);
    assert_int_equal(t->nlocations, locations < 0 ? 0 : locations);
    assert_int_equal(t->locations == NULL, locations <= 0);
}

static void tool_calls(void **state)
{
    acp_update_view v = ACP_UPDATE_VIEW_INIT;
    ok("{'sessionUpdate':'tool_call','toolCallId':'t1','title':'Edit a.c','name':'edit_file',"
       "'kind':'edit','status':'in_progress','content':["
       "{'type':'content','content':{'type':'text','text':'working'}},"
       "{'type':'diff','path':'/w/a.c','oldText':null,'newText':'int x;'},"
       "{'type':'diff','path':'/w/b.c','oldText':'a','newText':'b','_meta':{'d':1}},"
       "{'type':'terminal','terminalId':'term-1'}],"
       "'locations':[{'path':'/w/a.c','line':12},{'path':'/w/b.c','line':null}],"
       "'rawInput':{'path':'/w/a.c'},'rawOutput':'done'}",
       &v);
    acp_tool_call_view *t = &v.tool_call;
    assert_int_equal(v.kind, ACP_UPDATE_TOOL_CALL);
    assert_string_equal(t->tool_call_id, "t1");
    assert_string_equal(t->title, "Edit a.c");
    assert_string_equal(t->name, "edit_file");
    expect_call(t, ACP_TOOL_KIND_EDIT, ACP_TOOL_STATUS_IN_PROGRESS, 4, 2);
    assert_int_equal(t->content[0].type, ACP_TOOL_CONTENT);
    assert_string_equal(t->content[0].content.text, "working");
    assert_int_equal(t->content[1].type, ACP_TOOL_DIFF);
    assert_string_equal(t->content[1].diff.path, "/w/a.c");
    assert_null(t->content[1].diff.old_text);
    assert_string_equal(t->content[1].diff.new_text, "int x;");
    assert_string_equal(t->content[2].diff.old_text, "a");
    assert_non_null(t->content[2].meta);
    assert_int_equal(t->content[3].type, ACP_TOOL_TERMINAL);
    assert_string_equal(t->content[3].terminal_id, "term-1");
    assert_string_equal(t->locations[0].path, "/w/a.c");
    assert_true(t->locations[0].has_line);
    assert_int_equal(t->locations[0].line, 12);
    assert_false(t->locations[1].has_line);
    assert_string_equal(json_string_value(json_object_get(t->raw_input, "path")), "/w/a.c");
    assert_string_equal(json_string_value(t->raw_output), "done");
    acp_update_view_free(&v);

    /* A new call leaves out what has a default: kind other, status pending, no content. */
    ok("{'sessionUpdate':'tool_call','toolCallId':'t2','title':'Think','locations':[]}", &v);
    t = &v.tool_call;
    expect_call(t, ACP_TOOL_KIND_OTHER, ACP_TOOL_STATUS_PENDING, 0, 0);
    assert_null(t->name);
    assert_null(t->raw_input);
    assert_null(t->raw_output);
    acp_update_view_free(&v);

    /* The line bound is uint32's. */
    ok("{'sessionUpdate':'tool_call','toolCallId':'t','title':'x','locations':[{'path':'/a',"
       "'line':4294967295}]}",
       &v);
    assert_int_equal(v.tool_call.locations[0].line, 4294967295);
    acp_update_view_free(&v);

    static const bad b[] = {
        {"{'sessionUpdate':'tool_call','title':'x'}", "update.toolCallId is required", -1},
        {"{'sessionUpdate':'tool_call','toolCallId':1,'title':'x'}",
         "update.toolCallId must be a string", -1},
        {"{'sessionUpdate':'tool_call','toolCallId':'t'}", "update.title is required", -1},
        {"{'sessionUpdate':'tool_call','toolCallId':'t','title':null}",
         "update.title must be a string", -1},
        {"{'sessionUpdate':'tool_call','toolCallId':'t','title':'x','name':3}",
         "update.name must be a string or null", 1},
        {"{'sessionUpdate':'tool_call','toolCallId':'t','title':'x','kind':'browse'}",
         "update.kind must be one of read, edit, delete, move, search, execute, think, fetch, "
         "switch_mode, other",
         1},
        {"{'sessionUpdate':'tool_call','toolCallId':'t','title':'x','kind':null}",
         "update.kind must be one of read, edit, delete, move, search, execute, think, fetch, "
         "switch_mode, other",
         1},
        {"{'sessionUpdate':'tool_call','toolCallId':'t','title':'x','status':'done'}",
         "update.status must be one of pending, in_progress, completed, failed", 1},
        {"{'sessionUpdate':'tool_call','toolCallId':'t','title':'x','content':null}",
         "update.content must be an array", 1},
        {"{'sessionUpdate':'tool_call','toolCallId':'t','title':'x','content':[{'type':'diff',"
         "'path':'/a','newText':'n'},{'type':'image'}]}",
         "update.content[1].type must be one of content, diff, terminal", 1},
        {"{'sessionUpdate':'tool_call','toolCallId':'t','title':'x','content':[{'type':'diff',"
         "'path':'/a'}]}",
         "update.content[0].newText is required", 1},
        {"{'sessionUpdate':'tool_call','toolCallId':'t','title':'x','content':[{'type':'diff',"
         "'path':'/a','newText':'n','oldText':false}]}",
         "update.content[0].oldText must be a string or null", 1},
        {"{'sessionUpdate':'tool_call','toolCallId':'t','title':'x','content':[{'type':"
         "'content','content':{'type':'text'}}]}",
         "update.content[0].content.text is required", 1},
        {"{'sessionUpdate':'tool_call','toolCallId':'t','title':'x','content':[{'type':"
         "'terminal'}]}",
         "update.content[0].terminalId is required", 1},
        {"{'sessionUpdate':'tool_call','toolCallId':'t','title':'x','content':['text']}",
         "update.content[0] must be an object", 1},
        {"{'sessionUpdate':'tool_call','toolCallId':'t','title':'x','locations':[{'path':'/a'},"
         "{'line':3}]}",
         "update.locations[1].path is required", 1},
        {"{'sessionUpdate':'tool_call','toolCallId':'t','title':'x','locations':[{'path':'/a',"
         "'line':-1}]}",
         "update.locations[0].line must be an integer from 0 to 4294967295 or null", 1},
        {"{'sessionUpdate':'tool_call','toolCallId':'t','title':'x','locations':[{'path':'/a',"
         "'line':4294967296}]}",
         "update.locations[0].line must be an integer from 0 to 4294967295 or null", 1},
        {"{'sessionUpdate':'tool_call','toolCallId':'t','title':'x','locations':[{'path':'/a',"
         "'line':1.5}]}",
         "update.locations[0].line must be an integer from 0 to 4294967295 or null", 1},
        {"{'sessionUpdate':'tool_call','toolCallId':'t','title':'x','locations':{}}",
         "update.locations must be an array", 1},
    };
    CHECK_BAD(b);

    /* Lenient: a bad kind is the default, bad items are dropped, the rest stays in order. */
    parse_ok("{'sessionUpdate':'tool_call','toolCallId':'t','title':'x','kind':'browse',"
             "'content':[{'type':'image'},{'type':'terminal','terminalId':'a'},5,"
             "{'type':'terminal','terminalId':'b'}],'locations':[{'path':'/a','line':-3}]}",
             ACP_UPDATE_VIEW_LENIENT, &v);
    t = &v.tool_call;
    assert_int_equal(v.salvaged, 4);
    expect_call(t, ACP_TOOL_KIND_OTHER, ACP_TOOL_STATUS_PENDING, 2, 1);
    assert_string_equal(t->content[0].terminal_id, "a");
    assert_string_equal(t->content[1].terminal_id, "b");
    assert_false(t->locations[0].has_line);
    acp_update_view_free(&v);
}

static void tool_call_updates(void **state)
{
    acp_update_view v = ACP_UPDATE_VIEW_INIT;
    /* Only the id: nothing changes. */
    ok("{'sessionUpdate':'tool_call_update','toolCallId':'t1'}", &v);
    acp_tool_call_view *t = &v.tool_call;
    assert_int_equal(v.kind, ACP_UPDATE_TOOL_CALL_UPDATE);
    assert_string_equal(t->tool_call_id, "t1");
    assert_null(t->title);
    expect_call(t, ACP_TOOL_KIND_UNSET, ACP_TOOL_STATUS_UNSET, -1, -1);
    assert_null(t->raw_input);
    acp_update_view_free(&v);

    /* null reads as unchanged; [] replaces with nothing; rawOutput null is a value. */
    ok("{'sessionUpdate':'tool_call_update','toolCallId':'t1','title':null,'kind':null,"
       "'status':'completed','content':[],'locations':null,'rawOutput':null}",
       &v);
    t = &v.tool_call;
    assert_null(t->title);
    expect_call(t, ACP_TOOL_KIND_UNSET, ACP_TOOL_STATUS_COMPLETED, 0, -1);
    assert_non_null(t->raw_output);
    assert_true(json_is_null(t->raw_output));
    acp_update_view_free(&v);

    ok("{'sessionUpdate':'tool_call_update','toolCallId':'t1','title':'Ran it','kind':'execute',"
       "'status':'failed','content':[{'type':'content','content':{'type':'text','text':'boom'}}],"
       "'locations':[{'path':'/w'}]}",
       &v);
    t = &v.tool_call;
    assert_string_equal(t->title, "Ran it");
    expect_call(t, ACP_TOOL_KIND_EXECUTE, ACP_TOOL_STATUS_FAILED, 1, 1);
    assert_string_equal(t->content[0].content.text, "boom");
    acp_update_view_free(&v);

    static const bad b[] = {
        {"{'sessionUpdate':'tool_call_update','status':'completed'}",
         "update.toolCallId is required", -1},
        {"{'sessionUpdate':'tool_call_update','toolCallId':'t','status':'done'}",
         "update.status must be one of pending, in_progress, completed, failed or null", 1},
        {"{'sessionUpdate':'tool_call_update','toolCallId':'t','kind':7}",
         "update.kind must be one of read, edit, delete, move, search, execute, think, fetch, "
         "switch_mode, other or null",
         1},
        {"{'sessionUpdate':'tool_call_update','toolCallId':'t','title':['x']}",
         "update.title must be a string or null", 1},
        {"{'sessionUpdate':'tool_call_update','toolCallId':'t','content':'x'}",
         "update.content must be an array or null", 1},
        {"{'sessionUpdate':'tool_call_update','toolCallId':'t','content':[{'type':'diff',"
         "'newText':'n'}]}",
         "update.content[0].path is required", 1},
        {"{'sessionUpdate':'tool_call_update','toolCallId':'t','locations':[{'path':7}]}",
         "update.locations[0].path must be a string", 1},
    };
    CHECK_BAD(b);

    /* Lenient: a malformed collection is unchanged, not emptied. */
    parse_ok("{'sessionUpdate':'tool_call_update','toolCallId':'t','content':'x','status':'done'}",
             ACP_UPDATE_VIEW_LENIENT, &v);
    expect_call(&v.tool_call, ACP_TOOL_KIND_UNSET, ACP_TOOL_STATUS_UNSET, -1, -1);
    acp_update_view_free(&v);
}

/* --- plans, commands, modes, config options ----------------------------------------------------
 */

static void plans(void **state)
{
    acp_update_view v = ACP_UPDATE_VIEW_INIT;
    ok("{'sessionUpdate':'plan','entries':[{'content':'Read','priority':'high','status':"
       "'completed'},{'content':'Edit','priority':'medium','status':'in_progress','_meta':{}},"
       "{'content':'Test','priority':'low','status':'pending'}]}",
       &v);
    assert_int_equal(v.kind, ACP_UPDATE_PLAN);
    assert_int_equal(v.plan.nentries, 3);
    assert_string_equal(v.plan.entries[0].content, "Read");
    assert_int_equal(v.plan.entries[0].priority, ACP_PLAN_PRIORITY_HIGH);
    assert_int_equal(v.plan.entries[0].status, ACP_PLAN_STATUS_COMPLETED);
    assert_int_equal(v.plan.entries[1].priority, ACP_PLAN_PRIORITY_MEDIUM);
    assert_int_equal(v.plan.entries[1].status, ACP_PLAN_STATUS_IN_PROGRESS);
    assert_non_null(v.plan.entries[1].meta);
    assert_null(v.plan.entries[0].meta);
    assert_int_equal(v.plan.entries[2].priority, ACP_PLAN_PRIORITY_LOW);
    assert_int_equal(v.plan.entries[2].status, ACP_PLAN_STATUS_PENDING);
    acp_update_view_free(&v);

    ok("{'sessionUpdate':'plan','entries':[]}", &v); /* the plan is now empty */
    assert_int_equal(v.plan.nentries, 0);
    assert_null(v.plan.entries);
    assert_null(v.block);
    acp_update_view_free(&v);

    static const bad b[] = {
        {"{'sessionUpdate':'plan'}", "update.entries is required", -1},
        {"{'sessionUpdate':'plan','entries':null}", "update.entries must be an array", 1},
        {"{'sessionUpdate':'plan','entries':[{'content':'a','priority':'high','status':'pending'},"
         "{'content':'b','priority':'high','status':'pending'},"
         "{'content':'c','priority':'high','status':'done'}]}",
         "update.entries[2].status must be one of pending, in_progress, completed", 1},
        {"{'sessionUpdate':'plan','entries':[{'content':'a','status':'pending'}]}",
         "update.entries[0].priority is required", 1},
        {"{'sessionUpdate':'plan','entries':[{'content':'a','priority':'urgent','status':"
         "'pending'}]}",
         "update.entries[0].priority must be one of high, medium, low", 1},
        {"{'sessionUpdate':'plan','entries':[{'content':1,'priority':'low','status':'pending'}]}",
         "update.entries[0].content must be a string", 1},
        {"{'sessionUpdate':'plan','entries':[{'content':'a','priority':'low','status':'pending'},"
         "[]]}",
         "update.entries[1] must be an object", 1},
    };
    CHECK_BAD(b);

    parse_ok("{'sessionUpdate':'plan','entries':[{'content':'a','priority':'high','status':"
             "'pending'},{'content':'b'},{'content':'c','priority':'low','status':'completed'}]}",
             ACP_UPDATE_VIEW_LENIENT, &v);
    assert_int_equal(v.salvaged, 1);
    assert_int_equal(v.plan.nentries, 2);
    assert_string_equal(v.plan.entries[0].content, "a");
    assert_string_equal(v.plan.entries[1].content, "c");
    acp_update_view_free(&v);
}

static void commands(void **state)
{
    acp_update_view v = ACP_UPDATE_VIEW_INIT;
    ok("{'sessionUpdate':'available_commands_update','availableCommands':["
       "{'name':'web','description':'Search the web','input':{'hint':'query'}},"
       "{'name':'clear','description':'Clear','input':null,'_meta':{'x':true}}]}",
       &v);
    assert_int_equal(v.kind, ACP_UPDATE_AVAILABLE_COMMANDS);
    assert_int_equal(v.commands.ncommands, 2);
    assert_string_equal(v.commands.commands[0].name, "web");
    assert_string_equal(v.commands.commands[0].description, "Search the web");
    assert_string_equal(v.commands.commands[0].input_hint, "query");
    assert_null(v.commands.commands[1].input_hint);
    assert_non_null(v.commands.commands[1].meta);
    acp_update_view_free(&v);

    static const bad b[] = {
        {"{'sessionUpdate':'available_commands_update'}", "update.availableCommands is required",
         -1},
        {"{'sessionUpdate':'available_commands_update','availableCommands':{}}",
         "update.availableCommands must be an array", 1},
        {"{'sessionUpdate':'available_commands_update','availableCommands':[{'name':'a'}]}",
         "update.availableCommands[0].description is required", 1},
        {"{'sessionUpdate':'available_commands_update','availableCommands':[{'name':'a',"
         "'description':'d','input':{}}]}",
         "update.availableCommands[0].input.hint is required", 1},
        {"{'sessionUpdate':'available_commands_update','availableCommands':[{'name':'a',"
         "'description':'d'},{'name':'b','description':'d','input':'text'}]}",
         "update.availableCommands[1].input must be an object or null", 1},
    };
    CHECK_BAD(b);

    /* Lenient: a malformed input is no input; the command stays. */
    parse_ok("{'sessionUpdate':'available_commands_update','availableCommands':[{'name':'a',"
             "'description':'d','input':{'hint':5}},{'name':7}]}",
             ACP_UPDATE_VIEW_LENIENT, &v);
    assert_int_equal(v.salvaged, 2);
    assert_int_equal(v.commands.ncommands, 1);
    assert_string_equal(v.commands.commands[0].name, "a");
    assert_null(v.commands.commands[0].input_hint);
    acp_update_view_free(&v);
}

static void modes(void **state)
{
    acp_update_view v = ACP_UPDATE_VIEW_INIT;
    ok("{'sessionUpdate':'current_mode_update','currentModeId':'architect'}", &v);
    assert_int_equal(v.kind, ACP_UPDATE_CURRENT_MODE);
    assert_string_equal(v.mode.current_mode_id, "architect");
    acp_update_view_free(&v);

    static const bad b[] = {
        {"{'sessionUpdate':'current_mode_update'}", "update.currentModeId is required", -1},
        {"{'sessionUpdate':'current_mode_update','currentModeId':null}",
         "update.currentModeId must be a string", -1},
    };
    CHECK_BAD(b);
}

static void config_options(void **state)
{
    acp_update_view v = ACP_UPDATE_VIEW_INIT;
    ok("{'sessionUpdate':'config_option_update','configOptions':["
       "{'id':'mode','name':'Mode','description':'How to work','category':'mode','type':'select',"
       "'currentValue':'ask','options':[{'value':'ask','name':'Ask'},"
       "{'value':'code','name':'Code','description':'Writes code'}]},"
       "{'id':'model','name':'Model','category':'model','type':'select','currentValue':'m2',"
       "'options':[{'group':'local','name':'Local','options':[{'value':'m1','name':'M1'}]},"
       "{'group':'cloud','name':'Cloud','options':[{'value':'m2','name':'M2'},"
       "{'value':'m3','name':'M3'}]}]},"
       "{'id':'fast','name':'Fast','type':'boolean','currentValue':true,'category':null},"
       "{'id':'x','name':'X','type':'boolean','currentValue':false,'category':'_acme_speed'},"
       "{'id':'y','name':'Y','type':'select','currentValue':'a','options':[],"
       "'category':'thought_level'}]}",
       &v);
    assert_int_equal(v.kind, ACP_UPDATE_CONFIG_OPTION);
    assert_int_equal(v.config.noptions, 5);
    const acp_config_option_view *o = v.config.options;
    assert_string_equal(o[0].id, "mode");
    assert_string_equal(o[0].name, "Mode");
    assert_string_equal(o[0].description, "How to work");
    assert_int_equal(o[0].category, ACP_CONFIG_CATEGORY_MODE);
    assert_string_equal(o[0].category_text, "mode");
    assert_false(o[0].boolean);
    assert_string_equal(o[0].current_value, "ask");
    assert_int_equal(o[0].nvalues, 2);
    assert_string_equal(o[0].values[1].value, "code");
    assert_string_equal(o[0].values[1].name, "Code");
    assert_string_equal(o[0].values[1].description, "Writes code");
    assert_null(o[0].values[0].description);
    assert_null(o[0].values[0].group);

    assert_int_equal(o[1].category, ACP_CONFIG_CATEGORY_MODEL);
    assert_null(o[1].description);
    assert_int_equal(o[1].nvalues, 3); /* groups flattened in order */
    assert_string_equal(o[1].values[0].value, "m1");
    assert_string_equal(o[1].values[0].group, "local");
    assert_string_equal(o[1].values[0].group_name, "Local");
    assert_string_equal(o[1].values[1].value, "m2");
    assert_string_equal(o[1].values[1].group, "cloud");
    assert_string_equal(o[1].values[2].value, "m3");
    assert_string_equal(o[1].values[2].group_name, "Cloud");

    assert_true(o[2].boolean);
    assert_true(o[2].current_bool);
    assert_null(o[2].current_value);
    assert_int_equal(o[2].nvalues, 0);
    assert_int_equal(o[2].category, ACP_CONFIG_CATEGORY_NONE);
    assert_null(o[2].category_text);
    assert_true(o[3].boolean);
    assert_false(o[3].current_bool);
    assert_int_equal(o[3].category, ACP_CONFIG_CATEGORY_OTHER); /* a custom category is kept */
    assert_string_equal(o[3].category_text, "_acme_speed");
    assert_int_equal(o[4].category, ACP_CONFIG_CATEGORY_THOUGHT_LEVEL);
    assert_int_equal(o[4].nvalues, 0);
    assert_null(o[4].values);
    acp_update_view_free(&v);

    ok("{'sessionUpdate':'config_option_update','configOptions':[{'id':'a','name':'A','type':"
       "'boolean','currentValue':true,'category':'reasoning'}]}",
       &v); /* a category newer than this library */
    assert_int_equal(v.config.options[0].category, ACP_CONFIG_CATEGORY_OTHER);
    assert_string_equal(v.config.options[0].category_text, "reasoning");
    acp_update_view_free(&v);

    static const bad b[] = {
        {"{'sessionUpdate':'config_option_update'}", "update.configOptions is required", -1},
        {"{'sessionUpdate':'config_option_update','configOptions':[{'name':'A','type':'boolean',"
         "'currentValue':true}]}",
         "update.configOptions[0].id is required", 1},
        {"{'sessionUpdate':'config_option_update','configOptions':[{'id':'a','name':'A','type':"
         "'multi','currentValue':true}]}",
         "update.configOptions[0].type must be one of select, boolean", 1},
        {"{'sessionUpdate':'config_option_update','configOptions':[{'id':'a','name':'A',"
         "'currentValue':true}]}",
         "update.configOptions[0].type is required", 1},
        {"{'sessionUpdate':'config_option_update','configOptions':[{'id':'a','name':'A','type':"
         "'boolean','currentValue':'true'}]}",
         "update.configOptions[0].currentValue must be a boolean", 1},
        {"{'sessionUpdate':'config_option_update','configOptions':[{'id':'a','name':'A','type':"
         "'select','options':[]}]}",
         "update.configOptions[0].currentValue is required", 1},
        {"{'sessionUpdate':'config_option_update','configOptions':[{'id':'a','name':'A','type':"
         "'select','currentValue':'v'}]}",
         "update.configOptions[0].options is required", 1},
        {"{'sessionUpdate':'config_option_update','configOptions':[{'id':'a','name':'A','type':"
         "'select','currentValue':'v','options':[{'value':'v','name':'V'},{'value':'w'}]}]}",
         "update.configOptions[0].options[1].name is required", 1},
        {"{'sessionUpdate':'config_option_update','configOptions':[{'id':'a','name':'A','type':"
         "'select','currentValue':'v','options':[{'group':'g','name':'G','options':[]},"
         "{'group':'h','name':'H','options':[{'name':'V'}]}]}]}",
         "update.configOptions[0].options[1].options[0].value is required", 1},
        {"{'sessionUpdate':'config_option_update','configOptions':[{'id':'a','name':'A','type':"
         "'select','currentValue':'v','options':[{'group':'g','options':[]}]}]}",
         "update.configOptions[0].options[0].name is required", 1},
        {"{'sessionUpdate':'config_option_update','configOptions':[{'id':'a','name':'A','type':"
         "'select','currentValue':'v','options':[{'group':'g','name':'G','options':{}}]}]}",
         "update.configOptions[0].options[0].options must be an array", 1},
        {"{'sessionUpdate':'config_option_update','configOptions':[{'id':'a','name':'A','type':"
         "'boolean','currentValue':true,'category':5}]}",
         "update.configOptions[0].category must be a string or null", 1},
    };
    CHECK_BAD(b);

    /* Lenient: an ungrouped bad value drops its option (the schema does not skip there); a
     * grouped one drops only itself. */
    parse_ok("{'sessionUpdate':'config_option_update','configOptions':["
             "{'id':'a','name':'A','type':'select','currentValue':'v','options':[{'value':'v',"
             "'name':'V'},{'value':'w'}]},"
             "{'id':'b','name':'B','type':'select','currentValue':'v','options':[{'group':'g',"
             "'name':'G','options':[{'value':'v','name':'V'},{'name':'W'}]}]},"
             "{'id':'c','name':'C','type':'boolean','currentValue':false,'category':5}]}",
             ACP_UPDATE_VIEW_LENIENT, &v);
    assert_int_equal(v.salvaged, 3);
    assert_int_equal(v.config.noptions, 2);
    assert_string_equal(v.config.options[0].id, "b");
    assert_int_equal(v.config.options[0].nvalues, 1);
    assert_string_equal(v.config.options[0].values[0].value, "v");
    assert_string_equal(v.config.options[1].id, "c");
    assert_int_equal(v.config.options[1].category, ACP_CONFIG_CATEGORY_NONE);
    acp_update_view_free(&v);
}

/* --- session info, usage, notices, compactions ---------------------------------------------------
 */

static void session_info(void **state)
{
    acp_update_view v = ACP_UPDATE_VIEW_INIT;
    ok("{'sessionUpdate':'session_info_update'}", &v);
    assert_int_equal(v.kind, ACP_UPDATE_SESSION_INFO);
    assert_int_equal(v.info.title_patch, ACP_PATCH_KEEP);
    assert_int_equal(v.info.updated_at_patch, ACP_PATCH_KEEP);
    acp_update_view_free(&v);

    ok("{'sessionUpdate':'session_info_update','title':null,'updatedAt':'2025-06-01T10:00:00Z'}",
       &v);
    assert_int_equal(v.info.title_patch, ACP_PATCH_CLEAR);
    assert_null(v.info.title);
    assert_int_equal(v.info.updated_at_patch, ACP_PATCH_SET);
    assert_string_equal(v.info.updated_at, "2025-06-01T10:00:00Z");
    acp_update_view_free(&v);

    ok("{'sessionUpdate':'session_info_update','title':'Fix the build','updatedAt':null,"
       "'_meta':{'pinned':true}}",
       &v);
    assert_int_equal(v.info.title_patch, ACP_PATCH_SET);
    assert_string_equal(v.info.title, "Fix the build");
    assert_int_equal(v.info.updated_at_patch, ACP_PATCH_CLEAR);
    assert_true(json_is_true(json_object_get(v.meta, "pinned")));
    acp_update_view_free(&v);

    static const bad b[] = {
        {"{'sessionUpdate':'session_info_update','title':5}",
         "update.title must be a string or null", 1},
        {"{'sessionUpdate':'session_info_update','updatedAt':{}}",
         "update.updatedAt must be a string or null", 1},
    };
    CHECK_BAD(b);

    /* Lenient: a malformed title leaves the title as it was (absent), not cleared. */
    parse_ok("{'sessionUpdate':'session_info_update','title':5,'updatedAt':null}",
             ACP_UPDATE_VIEW_LENIENT, &v);
    assert_int_equal(v.info.title_patch, ACP_PATCH_KEEP);
    assert_int_equal(v.info.updated_at_patch, ACP_PATCH_CLEAR);
    acp_update_view_free(&v);
}

static void usage(void **state)
{
    acp_update_view v = ACP_UPDATE_VIEW_INIT;
    ok("{'sessionUpdate':'usage_update','used':53000,'size':200000,'cost':{'amount':0.045,"
       "'currency':'USD'}}",
       &v);
    assert_int_equal(v.kind, ACP_UPDATE_USAGE);
    assert_int_equal(v.usage.used, 53000);
    assert_int_equal(v.usage.size, 200000);
    assert_true(v.usage.has_cost);
    assert_true(v.usage.cost_amount == 0.045);
    assert_string_equal(v.usage.cost_currency, "USD");
    acp_update_view_free(&v);

    ok("{'sessionUpdate':'usage_update','used':0,'size':9223372036854775807,'cost':null}", &v);
    assert_int_equal(v.usage.used, 0);
    assert_true(v.usage.size == INT64_MAX);
    assert_false(v.usage.has_cost);
    assert_null(v.usage.cost_currency);
    acp_update_view_free(&v);

    ok("{'sessionUpdate':'usage_update','used':5.0,'size':2e3}", &v); /* integers to JSON Schema */
    assert_int_equal(v.usage.used, 5);
    assert_int_equal(v.usage.size, 2000);
    acp_update_view_free(&v);

    ok("{'sessionUpdate':'usage_update','used':1,'size':2,'cost':{'amount':3,'currency':"
       "'credits'}}",
       &v); /* an integer amount is a number */
    assert_true(v.usage.cost_amount == 3.0);
    acp_update_view_free(&v);

    static const bad b[] = {
        {"{'sessionUpdate':'usage_update','size':1}", "update.used is required", -1},
        {"{'sessionUpdate':'usage_update','used':1}", "update.size is required", -1},
        {"{'sessionUpdate':'usage_update','used':-1,'size':1}",
         "update.used must be an integer from 0 to 9223372036854775807", -1},
        {"{'sessionUpdate':'usage_update','used':1.5,'size':1}",
         "update.used must be an integer from 0 to 9223372036854775807", -1},
        {"{'sessionUpdate':'usage_update','used':1,'size':9.3e18}",
         "update.size must be an integer from 0 to 9223372036854775807", -1},
        {"{'sessionUpdate':'usage_update','used':-0.5,'size':1}",
         "update.used must be an integer from 0 to 9223372036854775807", -1},
        {"{'sessionUpdate':'usage_update','used':1,'size':'big'}",
         "update.size must be an integer from 0 to 9223372036854775807", -1},
        {"{'sessionUpdate':'usage_update','used':1,'size':null}",
         "update.size must be an integer from 0 to 9223372036854775807", -1},
        {"{'sessionUpdate':'usage_update','used':1,'size':2,'cost':{'amount':1}}",
         "update.cost.currency is required", 1},
        {"{'sessionUpdate':'usage_update','used':1,'size':2,'cost':{'amount':'1','currency':"
         "'USD'}}",
         "update.cost.amount must be a number", 1},
        {"{'sessionUpdate':'usage_update','used':1,'size':2,'cost':0.5}",
         "update.cost must be an object or null", 1},
    };
    CHECK_BAD(b);

    /* Beyond int64 jansson cannot read the update at all. */
    char *t = text("{'sessionUpdate':'usage_update','used':9223372036854775808,'size':1}");
    acp_update u = update_of(t);
    assert_int_equal(acp_update_view_parse(&u, &v), ACP_EPROTO);
    assert_non_null(strstr(acp_error_last()->message, "update is not valid JSON: "));
    free(t);
}

static void notices(void **state)
{
    static const struct {
        const char *severity;
        acp_notice_severity want;
    } sev[] = {{"info", ACP_NOTICE_INFO},
               {"warning", ACP_NOTICE_WARNING},
               {"error", ACP_NOTICE_ERROR},
               {"_acme_debug", ACP_NOTICE_OTHER},
               {"critical", ACP_NOTICE_OTHER}};
    for (size_t i = 0; i < sizeof sev / sizeof sev[0]; i++) {
        char json[256];
        snprintf(json, sizeof json,
                 "{'sessionUpdate':'notice','severity':'%s','title':'Rate limited',"
                 "'description':'Retrying in 5 s'}",
                 sev[i].severity);
        acp_update_view v = ACP_UPDATE_VIEW_INIT;
        ok(json, &v);
        assert_int_equal(v.kind, ACP_UPDATE_NOTICE);
        assert_int_equal(v.notice.severity, sev[i].want);
        assert_string_equal(v.notice.severity_text, sev[i].severity);
        assert_string_equal(v.notice.title, "Rate limited");
        assert_string_equal(v.notice.description, "Retrying in 5 s");
        acp_update_view_free(&v);
    }
    acp_update_view v = ACP_UPDATE_VIEW_INIT;
    ok("{'sessionUpdate':'notice','severity':'info','title':'T','description':null}", &v);
    assert_null(v.notice.description);
    acp_update_view_free(&v);

    static const bad b[] = {
        {"{'sessionUpdate':'notice','title':'T'}", "update.severity is required", -1},
        {"{'sessionUpdate':'notice','severity':3,'title':'T'}", "update.severity must be a string",
         -1},
        {"{'sessionUpdate':'notice','severity':'info'}", "update.title is required", -1},
        {"{'sessionUpdate':'notice','severity':'info','title':''}",
         "update.title must be a non-empty string", -1},
        {"{'sessionUpdate':'notice','severity':'info','title':'T','description':1}",
         "update.description must be a string or null", 1},
    };
    CHECK_BAD(b);
}

static void compactions(void **state)
{
    acp_update_view v = ACP_UPDATE_VIEW_INIT;
    ok("{'sessionUpdate':'compaction_update','compactionId':'c1','status':'in_progress'}", &v);
    assert_int_equal(v.kind, ACP_UPDATE_COMPACTION);
    assert_string_equal(v.compaction.compaction_id, "c1");
    assert_int_equal(v.compaction.status, ACP_COMPACTION_IN_PROGRESS);
    assert_string_equal(v.compaction.status_text, "in_progress");
    assert_int_equal(v.compaction.summary_patch, ACP_PATCH_KEEP);
    assert_int_equal(v.compaction.error_patch, ACP_PATCH_KEEP);
    assert_int_equal(v.compaction.meta_patch, ACP_PATCH_KEEP);
    acp_update_view_free(&v);

    ok("{'sessionUpdate':'compaction_update','compactionId':'c1','status':'completed','summary':"
       "[{'type':'text','text':'We fixed'},{'type':'text','text':' the build.'}],'error':null,"
       "'_meta':{'tokens':100}}",
       &v);
    assert_int_equal(v.compaction.status, ACP_COMPACTION_COMPLETED);
    assert_int_equal(v.compaction.summary_patch, ACP_PATCH_SET);
    assert_int_equal(v.compaction.nsummary, 2);
    assert_string_equal(v.compaction.summary[1].text, " the build.");
    assert_int_equal(v.compaction.error_patch, ACP_PATCH_CLEAR);
    assert_int_equal(v.compaction.meta_patch, ACP_PATCH_SET);
    assert_non_null(v.meta);
    acp_update_view_free(&v);

    ok("{'sessionUpdate':'compaction_update','compactionId':'c1','status':'failed','summary':null,"
       "'error':'out of tokens','_meta':null}",
       &v);
    assert_int_equal(v.compaction.status, ACP_COMPACTION_FAILED);
    assert_int_equal(v.compaction.summary_patch, ACP_PATCH_CLEAR);
    assert_int_equal(v.compaction.error_patch, ACP_PATCH_SET);
    assert_string_equal(v.compaction.error, "out of tokens");
    assert_int_equal(v.compaction.meta_patch, ACP_PATCH_CLEAR);
    assert_null(v.meta);
    acp_update_view_free(&v);

    ok("{'sessionUpdate':'compaction_update','compactionId':'c1','status':'cancelled','summary':"
       "[]}",
       &v);
    assert_int_equal(v.compaction.status, ACP_COMPACTION_CANCELLED);
    assert_int_equal(v.compaction.summary_patch, ACP_PATCH_SET); /* [] clears, too */
    assert_int_equal(v.compaction.nsummary, 0);
    acp_update_view_free(&v);

    ok("{'sessionUpdate':'compaction_update','compactionId':'c1','status':'_acme_paused'}", &v);
    assert_int_equal(v.compaction.status, ACP_COMPACTION_OTHER);
    assert_string_equal(v.compaction.status_text, "_acme_paused");
    acp_update_view_free(&v);

    ok("{'sessionUpdate':'compaction_summary_chunk','compactionId':'c1','content':{'type':'text',"
       "'text':'More.'}}",
       &v);
    assert_int_equal(v.kind, ACP_UPDATE_COMPACTION_SUMMARY);
    assert_string_equal(v.summary_chunk.compaction_id, "c1");
    assert_int_equal(v.summary_chunk.content.type, ACP_CONTENT_TEXT);
    assert_string_equal(v.summary_chunk.content.text, "More.");
    acp_update_view_free(&v);

    static const bad b[] = {
        {"{'sessionUpdate':'compaction_update','status':'completed'}",
         "update.compactionId is required", -1},
        {"{'sessionUpdate':'compaction_update','compactionId':'c'}", "update.status is required",
         -1},
        {"{'sessionUpdate':'compaction_update','compactionId':'c','status':2}",
         "update.status must be a string", -1},
        {"{'sessionUpdate':'compaction_update','compactionId':'c','status':'completed','summary':"
         "'done'}",
         "update.summary must be an array or null", 1},
        {"{'sessionUpdate':'compaction_update','compactionId':'c','status':'completed','summary':"
         "[{'type':'text','text':'a'},{'type':'html','text':'b'}]}",
         "update.summary[1].type must be one of text, image, audio, resource_link, resource", 1},
        {"{'sessionUpdate':'compaction_update','compactionId':'c','status':'failed','error':5}",
         "update.error must be a string or null", 1},
        {"{'sessionUpdate':'compaction_summary_chunk','content':{'type':'text','text':'a'}}",
         "update.compactionId is required", -1},
        {"{'sessionUpdate':'compaction_summary_chunk','compactionId':'c'}",
         "update.content is required", -1},
        {"{'sessionUpdate':'compaction_summary_chunk','compactionId':'c','content':{'type':'text',"
         "'text':null}}",
         "update.content.text must be a string", -1},
    };
    CHECK_BAD(b);

    /* Lenient: a malformed summary leaves the summary as it was; a bad block is dropped. */
    parse_ok("{'sessionUpdate':'compaction_update','compactionId':'c','status':'completed',"
             "'summary':[{'type':'html'},{'type':'text','text':'ok'}],'_meta':5}",
             ACP_UPDATE_VIEW_LENIENT, &v);
    assert_int_equal(v.salvaged, 2);
    assert_int_equal(v.compaction.summary_patch, ACP_PATCH_SET);
    assert_int_equal(v.compaction.nsummary, 1);
    assert_string_equal(v.compaction.summary[0].text, "ok");
    assert_int_equal(v.compaction.meta_patch, ACP_PATCH_KEEP);
    acp_update_view_free(&v);
}

/* --- what is not a known kind, and what is not an update
 * ------------------------------------------ */

static void unknown_kinds(void **state)
{
    acp_update_view v = ACP_UPDATE_VIEW_INIT;
    /* Nothing is checked in a kind we do not know: its members are the application's. */
    ok("{'sessionUpdate':'_acme_progress','percent':'half','_meta':{'k':1}}", &v);
    assert_int_equal(v.kind, ACP_UPDATE_OTHER);
    assert_string_equal(json_string_value(json_object_get(v.raw, "percent")), "half");
    assert_non_null(v.meta);
    acp_update_view_free(&v);

    ok("{'sessionUpdate':'future_kind','_meta':7}", &v);
    assert_int_equal(v.kind, ACP_UPDATE_OTHER);
    assert_null(v.meta);
    acp_update_view_free(&v);

    /* An escaped name is the kind it spells, though routing by the raw literal missed it. */
    char *t = text("{'sessionUpdate':'pl\\u0061n','entries':[]}");
    acp_update u = update_of(t);
    assert_int_equal(u.kind, ACP_UPDATE_OTHER);
    assert_int_equal(acp_update_view_parse(&u, &v), 0);
    assert_int_equal(v.kind, ACP_UPDATE_PLAN);
    acp_update_view_free(&v);
    free(t);

    /* A name with a NUL in it is no known name. */
    ok("{'sessionUpdate':'plan\\u0000x','entries':5}", &v);
    assert_int_equal(v.kind, ACP_UPDATE_OTHER);
    acp_update_view_free(&v);

    fails("{'update':'plan'}", 0, "update.sessionUpdate is required");
    fails("{'sessionUpdate':null}", 0, "update.sessionUpdate must be a string");
    fails("{'sessionUpdate':['plan']}", ACP_UPDATE_VIEW_LENIENT,
          "update.sessionUpdate must be a string");
}

static void not_updates(void **state)
{
    fails("[1,2]", 0, "update must be an object");
    fails("'plan'", ACP_UPDATE_VIEW_LENIENT, "update must be an object");
    static const char *const broken[] = {
        "", "{", "{'sessionUpdate':'plan',}", "{'sessionUpdate':'plan','entries':[]} x",
        /* The client routes by the first sessionUpdate; jansson would keep the last. */
        "{'sessionUpdate':'plan','sessionUpdate':'notice','entries':[]}",
        "{'sessionUpdate':'plan','entries':[],'entries':[]}"};
    for (size_t i = 0; i < sizeof broken / sizeof broken[0]; i++) {
        char *t = text(broken[i]);
        acp_update u = {.update = {t, strlen(t)}};
        acp_update_view v = ACP_UPDATE_VIEW_INIT;
        assert_int_equal(acp_update_view_parse(&u, &v), ACP_EPROTO);
        if (strncmp(acp_error_last()->message, "update is not valid JSON: ", 26) != 0)
            fail_msg("%s: %s", t, acp_error_last()->message);
        assert_null(v.raw);
        free(t);
    }

    /* Misuse, and an errmsg nobody wants. */
    acp_update_view v = ACP_UPDATE_VIEW_INIT;
    acp_update u = {.update = {NULL, 0}};
    assert_int_equal(acp_update_view_parse(&u, &v), ACP_EPROTO);
    assert_int_equal(acp_update_view_parse(NULL, &v), ACP_EINVAL);
    assert_true(*acp_error_last()->message);
    assert_int_equal(acp_update_view_parse(&u, NULL), ACP_EINVAL);
    acp_update_view_free(NULL);
}

/* The view reads the update only through u->update: a span into a longer line, as the client
 * hands it over, works the same. */
static void spans_in_a_line(void **state)
{
    char *line = text("{'jsonrpc':'2.0','method':'session/update','params':{'sessionId':'s1',"
                      "'update':{'sessionUpdate':'tool_call_update','toolCallId':'t9','status':"
                      "'completed'}}}");
    acp_span params, upd;
    acp_update u = {0};
    assert_true(acp_json_member((acp_span){line, strlen(line)}, "params", &params));
    assert_true(acp_json_member(params, "update", &upd));
    u.update = upd;
    u.params = params;
    assert_true(acp_json_member(upd, "sessionUpdate", &u.kind_text));
    u.kind = acp_update_kind_of(u.kind_text);
    acp_update_view v = ACP_UPDATE_VIEW_INIT;
    assert_int_equal(acp_update_view_parse(&u, &v), 0);
    free(line); /* the view keeps nothing of the line */
    assert_int_equal(v.kind, ACP_UPDATE_TOOL_CALL_UPDATE);
    assert_string_equal(v.tool_call.tool_call_id, "t9");
    assert_int_equal(v.tool_call.status, ACP_TOOL_STATUS_COMPLETED);
    acp_update_view_free(&v);
}

static void names(void **state)
{
    assert_string_equal(acp_tool_kind_name(ACP_TOOL_KIND_SWITCH_MODE), "switch_mode");
    assert_string_equal(acp_tool_kind_name(ACP_TOOL_KIND_OTHER), "other");
    assert_string_equal(acp_tool_kind_name(ACP_TOOL_KIND_UNSET), "");
    assert_string_equal(acp_tool_kind_name((acp_tool_kind)99), "");
    assert_string_equal(acp_tool_status_name(ACP_TOOL_STATUS_IN_PROGRESS), "in_progress");
    assert_string_equal(acp_tool_status_name(ACP_TOOL_STATUS_FAILED), "failed");
    assert_string_equal(acp_plan_priority_name(ACP_PLAN_PRIORITY_LOW), "low");
    assert_string_equal(acp_plan_status_name(ACP_PLAN_STATUS_COMPLETED), "completed");
    assert_string_equal(acp_plan_status_name((acp_plan_status)-1), "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(chunks),
        cmocka_unit_test(tool_calls),
        cmocka_unit_test(tool_call_updates),
        cmocka_unit_test(plans),
        cmocka_unit_test(commands),
        cmocka_unit_test(modes),
        cmocka_unit_test(config_options),
        cmocka_unit_test(session_info),
        cmocka_unit_test(usage),
        cmocka_unit_test(notices),
        cmocka_unit_test(compactions),
        cmocka_unit_test(unknown_kinds),
        cmocka_unit_test(not_updates),
        cmocka_unit_test(spans_in_a_line),
        cmocka_unit_test(names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
