/* SPDX-License-Identifier: Apache-2.0 */
/* tools/acp/safe.c: what a terminal would act on is shown visibly, byte by byte (issue 13,
 * item 5). End to end against a hostile agent: acp-hostile.test.mjs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "tools/acp/safe.h"

static void made(const char *in, size_t n, safe_mode mode, const char *want)
{
    acp_buf b = {0};
    assert_int_equal(safe_append(&b, in, n, mode), 0);
    assert_non_null(acp_buf_cstr(&b));
    assert_string_equal(b.data, want);
    /* the escapes are printable ASCII: made safe twice is made safe once */
    acp_buf again = {0};
    assert_int_equal(safe_append(&again, b.data, b.len, mode), 0);
    assert_non_null(acp_buf_cstr(&again));
    assert_string_equal(again.data, want);
    acp_buf_free(&again);
    acp_buf_free(&b);
}
#define MADE(in, mode, want) made(in, sizeof in - 1, mode, want)

static void plain_text_passes(void **state)
{
    MADE("", SAFE_TEXT, "");
    MADE("hello, wörld 🌍 ~", SAFE_TEXT, "hello, wörld 🌍 ~");
    MADE("a\tb\nc\r\nd", SAFE_TEXT, "a\tb\nc\r\nd");
    MADE("\xe2\x80\x8f\xe2\x80\x8e\xd8\x9c", SAFE_TEXT,
         "\xe2\x80\x8f\xe2\x80\x8e\xd8\x9c"); /* marks */
    MADE("back\\slash \\x1b", SAFE_TEXT, "back\\slash \\x1b");
}

static void controls_are_shown(void **state)
{
    MADE("\x1b]0;title\x07\x1b[2J", SAFE_TEXT, "\\x1b]0;title\\x07\\x1b[2J");
    MADE("\x1b]52;c;aGk=\x07", SAFE_TEXT, "\\x1b]52;c;aGk=\\x07");
    MADE("x\0y", SAFE_TEXT, "x\\x00y");
    MADE("a\rb\x7f\x08", SAFE_TEXT, "a\\rb\\x7f\\x08");
    MADE("end\r", SAFE_TEXT, "end\\r"); /* a CR without its LF */
    MADE("\xc2\x9b"
         "31m\xc2\x9d\xc2\x80\xc2\x9f\xc2\xa0",
         SAFE_TEXT, "\\u009b31m\\u009d\\u0080\\u009f\xc2\xa0"); /* C1; U+00A0 passes */
    MADE("\xe2\x80\xaa\xe2\x80\xae\xe2\x81\xa6\xe2\x81\xa9\xe2\x80\xa9", SAFE_TEXT,
         "\\u202a\\u202e\\u2066\\u2069\xe2\x80\xa9"); /* bidi; U+2029 passes */
}

static void a_line_stays_one_line(void **state)
{
    MADE("a\nb\r\nc\td", SAFE_LINE, "a\\nb\\r\\nc\td");
}

static void bytes_that_are_not_utf8_are_shown(void **state)
{
    MADE("\xff\xfe", SAFE_TEXT, "\\xff\\xfe");
    MADE("\xc0\xaf", SAFE_TEXT, "\\xc0\\xaf");                   /* overlong '/' */
    MADE("\xed\xa0\x80", SAFE_TEXT, "\\xed\\xa0\\x80");          /* a surrogate */
    MADE("\xf4\x90\x80\x80", SAFE_TEXT, "\\xf4\\x90\\x80\\x80"); /* past U+10FFFF */
    MADE("\xe2\x80", SAFE_TEXT, "\\xe2\\x80");                   /* cut short */
    MADE("\xc2", SAFE_TEXT, "\\xc2");
    MADE("\x9b", SAFE_TEXT, "\\x9b"); /* a lone 8-bit CSI */
}

static void safe_line_rotates_its_buffers(void **state)
{
    const char *a = safe_line("one\x1b");
    const char *b = safe_line("two\n");
    assert_string_equal(a, "one\\x1b");
    assert_string_equal(b, "two\\n");
    assert_null(safe_line(NULL));
    for (int i = 0; i < SAFE_SLOTS - 3; i++) safe_line("x");
    assert_string_equal(a, "one\\x1b"); /* its slot comes back only at the ninth call */
    safe_free();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(plain_text_passes),
        cmocka_unit_test(controls_are_shown),
        cmocka_unit_test(a_line_stays_one_line),
        cmocka_unit_test(bytes_that_are_not_utf8_are_shown),
        cmocka_unit_test(safe_line_rotates_its_buffers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
