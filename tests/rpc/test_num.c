/* SPDX-License-Identifier: Apache-2.0 */
/* acp_parse_u64/i64/double: range, sign, overflow, trailing junk, empty, and the sentences. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <locale.h>
#include <string.h>

#include "acp/error.h"
#include "acp/num.h"

/* s is refused with exactly the sentence want; *out is left alone. */
static void u64_refused(const char *s, uint64_t min, uint64_t max, const char *want)
{
    uint64_t v = 77;
    assert_int_equal(acp_parse_u64(s, min, max, &v), ACP_EINVAL);
    assert_int_equal(v, 77);
    assert_string_equal(acp_error_last()->message, want);
    assert_int_equal(acp_error_last()->status, ACP_EINVAL);
}

static void i64_refused(const char *s, int64_t min, int64_t max, const char *want)
{
    int64_t v = 77;
    assert_int_equal(acp_parse_i64(s, min, max, &v), ACP_EINVAL);
    assert_int_equal(v, 77);
    assert_string_equal(acp_error_last()->message, want);
    assert_int_equal(acp_error_last()->status, ACP_EINVAL);
}

static void dbl_refused(const char *s, double min, double max, const char *want)
{
    double v = 77;
    assert_int_equal(acp_parse_double(s, min, max, &v), ACP_EINVAL);
    assert_true(v == 77);
    assert_string_equal(acp_error_last()->message, want);
    assert_int_equal(acp_error_last()->status, ACP_EINVAL);
}

static void u64_reads_whole_numbers_in_range(void **state)
{
    uint64_t v;
    assert_int_equal(acp_parse_u64("0", 0, 10, &v), 0);
    assert_int_equal(v, 0);
    assert_int_equal(acp_parse_u64("10", 0, 10, &v), 0);
    assert_int_equal(v, 10);
    assert_int_equal(acp_parse_u64("007", 0, 10, &v), 0);
    assert_int_equal(v, 7);
    assert_int_equal(acp_parse_u64("18446744073709551615", 0, UINT64_MAX, &v), 0);
    assert_true(v == UINT64_MAX);
}

static void u64_refuses_sign_overflow_junk_and_empty(void **state)
{
    /* the numbers: a wrap to a huge count, and one beyond 64 bits */
    u64_refused("-1", 0, 10000000, "'-1' is out of range: 0 to 10000000");
    u64_refused("-0", 0, 10, "'-0' is out of range: 0 to 10");
    u64_refused("99999999999999999999", 0, 10000000,
                "'99999999999999999999' is out of range: 0 to 10000000");
    u64_refused("18446744073709551616", 0, UINT64_MAX,
                "'18446744073709551616' is out of range: 0 to 18446744073709551615");
    u64_refused("11", 0, 10, "'11' is out of range: 0 to 10");
    u64_refused("0", 1, 10, "'0' is out of range: 1 to 10");
    u64_refused("10x", 0, 100, "'10x' is not a whole number");
    u64_refused("1.5", 0, 100, "'1.5' is not a whole number");
    u64_refused("1e3", 0, 10000, "'1e3' is not a whole number");
    u64_refused("0x10", 0, 100, "'0x10' is not a whole number");
    u64_refused(" 5", 0, 100, "' 5' is not a whole number");
    u64_refused("5 ", 0, 100, "'5 ' is not a whole number");
    u64_refused("+5", 0, 100, "'+5' is not a whole number");
    u64_refused("--5", 0, 100, "'--5' is not a whole number");
    u64_refused("-", 0, 100, "'-' is not a whole number");
    u64_refused("", 0, 100, "no number given");
    u64_refused(NULL, 0, 100, "no number given");
    /* junk is named before size: it is not a number at all */
    u64_refused("99999999999999999999x", 0, 100, "'99999999999999999999x' is not a whole number");
}

static void i64_reads_signed_numbers(void **state)
{
    int64_t v;
    assert_int_equal(acp_parse_i64("-5", -10, 10, &v), 0);
    assert_int_equal(v, -5);
    assert_int_equal(acp_parse_i64("-0", -10, 10, &v), 0);
    assert_int_equal(v, 0);
    assert_int_equal(acp_parse_i64("9223372036854775807", INT64_MIN, INT64_MAX, &v), 0);
    assert_true(v == INT64_MAX);
    assert_int_equal(acp_parse_i64("-9223372036854775808", INT64_MIN, INT64_MAX, &v), 0);
    assert_true(v == INT64_MIN);
    i64_refused("9223372036854775808", INT64_MIN, INT64_MAX,
                "'9223372036854775808' is out of range: -9223372036854775808 to "
                "9223372036854775807");
    i64_refused("-9223372036854775809", INT64_MIN, INT64_MAX,
                "'-9223372036854775809' is out of range: -9223372036854775808 to "
                "9223372036854775807");
    i64_refused("-5", 0, 86400000, "'-5' is out of range: 0 to 86400000");
    i64_refused("11", -10, 10, "'11' is out of range: -10 to 10");
    i64_refused("-11", -10, 10, "'-11' is out of range: -10 to 10");
    i64_refused("-5x", -10, 10, "'-5x' is not a whole number");
    i64_refused("--5", -10, 10, "'--5' is not a whole number");
    i64_refused("", -10, 10, "no number given");
}

static void double_reads_decimals_in_any_locale(void **state)
{
    double v;
    assert_int_equal(acp_parse_double("2", 0.001, 10, &v), 0);
    assert_true(v == 2);
    assert_int_equal(acp_parse_double("0.5", 0.001, 10, &v), 0);
    assert_true(v == 0.5);
    assert_int_equal(acp_parse_double(".25", 0, 10, &v), 0);
    assert_true(v == 0.25);
    assert_int_equal(acp_parse_double("3.", 0, 10, &v), 0);
    assert_true(v == 3);
    assert_int_equal(acp_parse_double("-1.5e3", -2000, 0, &v), 0);
    assert_true(v == -1500);
    assert_int_equal(acp_parse_double("1E-3", 0, 1, &v), 0);
    assert_true(v == 0.001);
    assert_int_equal(acp_parse_double("1e-400", 0, 1, &v), 0); /* underflow: zero */
    assert_true(v < 1e-300);
    /* A locale with a decimal comma changes nothing, when the system has one. */
    if (setlocale(LC_NUMERIC, "de_DE.UTF-8") || setlocale(LC_NUMERIC, "fr_FR.UTF-8")) {
        assert_int_equal(acp_parse_double("0.5", 0, 1, &v), 0);
        assert_true(v == 0.5);
        dbl_refused("0,5", 0, 1, "'0,5' is not a number");
        setlocale(LC_NUMERIC, "C");
    }
}

static void double_refuses_what_strtod_would_take(void **state)
{
    dbl_refused("inf", 0, 1e9, "'inf' is not a number");
    dbl_refused("nan", 0, 1e9, "'nan' is not a number");
    dbl_refused("0x10", 0, 1e9, "'0x10' is not a number");
    dbl_refused(" 1", 0, 1e9, "' 1' is not a number");
    dbl_refused("1s", 0, 1e9, "'1s' is not a number");
    dbl_refused("1e", 0, 1e9, "'1e' is not a number");
    dbl_refused(".", 0, 1e9, "'.' is not a number");
    dbl_refused("1.2.3", 0, 1e9, "'1.2.3' is not a number");
    dbl_refused("+1", 0, 1e9, "'+1' is not a number");
    dbl_refused("", 0, 1e9, "no number given");
    dbl_refused("-1", 0.001, 4e6, "'-1' is out of range: 0.001 to 4000000");
    dbl_refused("0", 0.001, 4e6, "'0' is out of range: 0.001 to 4000000");
    dbl_refused("1e999", 0, 1e300, "'1e999' is out of range: 0 to 1e+300");
    dbl_refused("5000000", 0.001, 4e6, "'5000000' is out of range: 0.001 to 4000000");
}

static void sentences_quote_safely_and_fit(void **state)
{
    /* Control bytes and non-ASCII are shown as \xNN: the sentence is safe on a terminal. */
    u64_refused("1\x1b]52;c;aGk=\x07", 0, 9, "'1\\x1b]52;c;aGk=\\x07' is not a whole number");
    u64_refused("5\xc2\x9b", 0, 9, "'5\\xc2\\x9b' is not a whole number");
    /* Long text is cut after 24 bytes. */
    u64_refused("1234567890123456789012345678901234567890", 0, 9,
                "'123456789012345678901234...' is out of range: 0 to 9");
    /* The worst case fits ACP_NUM_WHY whole. */
    char worst[64];
    memset(worst, 0x1b, sizeof worst - 1);
    worst[sizeof worst - 1] = 0;
    int64_t v;
    assert_int_equal(acp_parse_i64(worst, INT64_MIN, INT64_MAX, &v), ACP_EINVAL);
    assert_non_null(strstr(acp_error_last()->message, "...' is not a whole number"));
    assert_true(strlen(acp_error_last()->message) < ACP_NUM_WHY);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(u64_reads_whole_numbers_in_range),
        cmocka_unit_test(u64_refuses_sign_overflow_junk_and_empty),
        cmocka_unit_test(i64_reads_signed_numbers),
        cmocka_unit_test(double_reads_decimals_in_any_locale),
        cmocka_unit_test(double_refuses_what_strtod_would_take),
        cmocka_unit_test(sentences_quote_safely_and_fit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
