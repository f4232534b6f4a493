/* SPDX-License-Identifier: Apache-2.0 */
/* The streaming writer and the validating scanner. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp/error.h"
#include "acp/json.h"

static char *written(acp_buf *b)
{
    return (char *)acp_buf_cstr(b);
}

static void writer_builds_compact_json(void **state)
{
    acp_buf b = {0};
    acp_jw w;
    acp_jw_init(&w, &b);
    acp_jw_obj(&w);
    acp_jw_kstr(&w, "a", "x");
    acp_jw_kint(&w, "n", -42);
    acp_jw_key(&w, "arr");
    acp_jw_arr(&w);
    acp_jw_bool(&w, true);
    acp_jw_null(&w);
    acp_jw_uint(&w, UINT64_MAX);
    acp_jw_real(&w, 0.5);
    acp_jw_obj(&w);
    acp_jw_obj_end(&w);
    acp_jw_raw(&w, "[1,2]", 5);
    acp_jw_arr_end(&w);
    acp_jw_obj_end(&w);
    assert_int_equal(acp_jw_status(&w), 0);
    assert_string_equal(
        written(&b),
        "{\"a\":\"x\",\"n\":-42,\"arr\":[true,null,18446744073709551615,0.5,{},[1,2]]}");
    acp_buf_free(&b);
}

static void writer_escapes_exactly(void **state)
{
    acp_buf b = {0};
    const char in[] = "q\"b\\s/\b\f\n\r\t\x01\x1f\x7f é € 😀";
    assert_int_equal(acp_json_escape(&b, in, sizeof in - 1), 0);
    assert_string_equal(written(&b), "\"q\\\"b\\\\s/\\b\\f\\n\\r\\t\\u0001\\u001f\x7f é € 😀\"");
    /* and it round-trips through the scanner */
    acp_span v = {b.data, b.len};
    assert_int_equal(acp_json_validate(v.p, v.n, 8), 0);
    char *back = acp_json_strdup(v);
    assert_string_equal(back, in);
    free(back);
    acp_buf_free(&b);
}

/* The escaper copies plain runs a word at a time: every byte that needs escaping, and a UTF-8
 * sequence, at every offset of the first words is escaped exactly as one byte at a time would. */
static void writer_escapes_at_every_offset(void **state)
{
    static const char *const ins[] = {"\"",   "\\",   "\n",       "\x01",
                                      "\x1f", "\x7f", "\xc3\xa9", "\xe2\x82\xac"};
    static const char *const want[] = {"\\\"",    "\\\\", "\\n",      "\\u0001",
                                       "\\u001f", "\x7f", "\xc3\xa9", "\xe2\x82\xac"};
    char in[64], exp[96];
    for (size_t c = 0; c < sizeof ins / sizeof *ins; c++)
        for (size_t at = 0; at < 20; at++)
            for (size_t after = 0; after < 10; after++) {
                size_t n = 0, e = 0;
                exp[e++] = '"';
                for (size_t i = 0; i < at; i++) in[n++] = exp[e++] = 'a';
                memcpy(in + n, ins[c], strlen(ins[c]));
                n += strlen(ins[c]);
                memcpy(exp + e, want[c], strlen(want[c]));
                e += strlen(want[c]);
                for (size_t i = 0; i < after; i++) in[n++] = exp[e++] = 'b';
                exp[e++] = '"';
                acp_buf b = {0};
                assert_int_equal(acp_json_escape(&b, in, n), 0);
                assert_int_equal(b.len, e);
                assert_memory_equal(b.data, exp, e);
                acp_buf_free(&b);
            }
}

static void writer_rejects_invalid_utf8(void **state)
{
    static const char *bad[] = {"\x80",
                                "\xc0\xaf",
                                "\xe0\x80\xaf",
                                "\xed\xa0\x80",
                                "\xf4\x90\x80\x80",
                                "\xf5\x80\x80\x80",
                                "ok\xe2\x82",
                                "\xff"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        acp_buf b = {0};
        acp_jw w;
        acp_jw_init(&w, &b);
        acp_jw_obj(&w);
        acp_jw_kstr(&w, "k", bad[i]);
        acp_jw_obj_end(&w);
        assert_int_equal(acp_jw_status(&w), -2 /* ACP_EINVAL */);
        acp_buf_free(&b);
    }
}

static void writer_refuses_misuse(void **state)
{
    acp_buf b = {0};
    acp_jw w;
    acp_jw_init(&w, &b);
    acp_jw_obj_end(&w); /* nothing open */
    assert_int_not_equal(acp_jw_status(&w), 0);
    acp_jw_init(&w, &b);
    for (int i = 0; i < 70; i++) acp_jw_arr(&w);
    assert_int_not_equal(acp_jw_status(&w), 0);
    acp_jw_init(&w, &b);
    acp_jw_real(&w, 1.0 / 0.0);
    assert_int_not_equal(acp_jw_status(&w), 0);
    acp_buf_free(&b);
}

static void scanner_accepts_and_rejects(void **state)
{
    static const char *good[] = {"0",    "-0.5e+10", "\"\\u00e9\\ud83d\\ude00\"",
                                 "[]",   "{}",       " {\"a\" : [1, {\"b\":null}] } ",
                                 "true", "1E5",      "\"\\/\""};
    static const char *bad[] = {"",        "01",    "1.",         "-",       "[1,]",
                                "{\"a\"}", "{,}",   "\"\x01\"",   "\"\\x\"", "\"\\u12g4\"",
                                "nul",     "[1] 2", "{\"a\":1,}", "\"abc",   "\xef\xbb\xbf{}",
                                "+1",      ".5",    "[\"\xc3\"]"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        assert_int_equal(acp_json_validate(good[i], strlen(good[i]), 16), 0);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_not_equal(acp_json_validate(bad[i], strlen(bad[i]), 16), 0);
    assert_int_not_equal(acp_json_validate("[[[[1]]]]", 9, 3), 0); /* depth limit */
}

/* The string scan goes a word at a time and jumps to the first special byte of a word: each
 * kind of special byte at every offset of the first words, in strings of every length around
 * them, is found (a string ends at the right quote, a bad byte is refused, an escape or a
 * UTF-8 sequence is passed). */
static void scanner_finds_special_bytes_at_every_offset(void **state)
{
    static const struct {
        const char *ins; /* put at the offset */
        bool ok;
    } cases[] = {{"", true}, /* plain strings of every length: each ends at its quote */
                 {"\\n", true},   {"\\u00e9", true}, {"\xc3\xa9", true}, {"\xe2\x82\xac", true},
                 {"\x01", false}, {"\x1f", false},   {"\x7f", true},     {"\xff", false},
                 {"\\x", false},  {"\xc3", false},   {" ", true}};
    char buf[64], obj[96];
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
        for (size_t at = 0; at < 20; at++)
            for (size_t len = at; len < at + 10; len++) {
                /* "aaa<ins>aaa": len plain bytes with ins at offset at */
                size_t n = 0;
                for (size_t i = 0; i < at; i++) buf[n++] = 'a';
                size_t k = strlen(cases[c].ins);
                memcpy(buf + n, cases[c].ins, k);
                n += k;
                for (size_t i = at; i < len; i++) buf[n++] = 'b';
                int m = snprintf(obj, sizeof obj, "{\"k\":\"%.*s\",\"z\":1}", (int)n, buf);
                acp_span v[2];
                const char *keys[] = {"k", "z"};
                int rc = acp_json_members((acp_span){obj, (size_t)m}, keys, 2, v);
                if (!cases[c].ok) {
                    assert_int_equal(rc, ACP_EINVAL);
                    continue;
                }
                assert_int_equal(rc, 2);
                assert_int_equal(v[0].n, n + 2);
                assert_memory_equal(v[0].p + 1, buf, n);
                assert_int_equal(v[1].n, 1);
            }
}

static void scanner_finds_members(void **state)
{
    const char *obj = "{\"x\":{\"id\":1},\"i\\u0064\":\"hit\",\"id\":2}";
    acp_span v;
    assert_true(acp_json_member((acp_span){obj, strlen(obj)}, "id", &v));
    assert_int_equal(v.n, 5);
    assert_memory_equal(v.p, "\"hit\"", 5);
    assert_true(acp_json_str_eq(v, "hit"));
    assert_false(acp_json_member((acp_span){obj, strlen(obj)}, "nope", &v));
    assert_int_equal(acp_json_kind((acp_span){"null", 4}), 'z');
    char *s = acp_json_strdup((acp_span){"\"a\\u0000b\"", 10});
    assert_null(s); /* NUL inside a C string would truncate it silently */
}

static void scanner_finds_several_members(void **state)
{
    const char *obj = "{\"a\":1,\"b\":{\"a\":2},\"\\u0063\":\"x\",\"a\":3}";
    const char *keys[] = {"c", "a", "zz"};
    acp_span v[3];
    assert_int_equal(acp_json_members((acp_span){obj, strlen(obj)}, keys, 3, v), 2);
    assert_int_equal(v[0].n, 3);
    assert_memory_equal(v[0].p, "\"x\"", 3);
    assert_int_equal(v[1].n, 1); /* the first "a" */
    assert_memory_equal(v[1].p, "1", 1);
    assert_null(v[2].p);
    /* untrusted text is validated whole, past the members it found */
    const char *bad[] = {"{\"c\":1,\"a\":2,\"x\":[1,}", "{\"a\":1} x", "[1]", "{\"a\":\"\xff\"}",
                         "{\"a\":1,}"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_int_equal(acp_json_members((acp_span){bad[i], strlen(bad[i])}, keys, 3, v),
                         ACP_EINVAL);
}

static void scanner_walks_array_items(void **state)
{
    const char *arr = " [ {\"a\":[1,2]} , \"x,]\" ,3,[ ]]";
    acp_span a = {arr, strlen(arr)}, v;
    const char *want[] = {"{\"a\":[1,2]}", "\"x,]\"", "3", "[ ]"};
    size_t pos = 0, i = 0;
    while (acp_json_item(a, &pos, &v)) {
        assert_true(i < 4);
        assert_int_equal(v.n, strlen(want[i]));
        assert_memory_equal(v.p, want[i], v.n);
        i++;
    }
    assert_int_equal(i, 4);
    assert_false(acp_json_item(a, &pos, &v)); /* stays at the end */
    pos = 0;
    assert_false(acp_json_item((acp_span){"[]", 2}, &pos, &v));
    pos = 0;
    assert_false(acp_json_item((acp_span){"{}", 2}, &pos, &v)); /* not an array */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(writer_builds_compact_json),
        cmocka_unit_test(writer_escapes_exactly),
        cmocka_unit_test(writer_escapes_at_every_offset),
        cmocka_unit_test(writer_rejects_invalid_utf8),
        cmocka_unit_test(writer_refuses_misuse),
        cmocka_unit_test(scanner_accepts_and_rejects),
        cmocka_unit_test(scanner_finds_special_bytes_at_every_offset),
        cmocka_unit_test(scanner_finds_members),
        cmocka_unit_test(scanner_walks_array_items),
        cmocka_unit_test(scanner_finds_several_members),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
