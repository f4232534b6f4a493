/* SPDX-License-Identifier: Apache-2.0 */
/* The list cursor codec both backends share (store/store_impl.h): exact round trips, and a
 * strict decoder: whatever it accepts is the one encoding of what it returns. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "store/store_impl.h"

static void t_round_trip(void **state)
{
    (void)state;
    char id[300], at[ACP_STORE_TIME_LEN + 1];
    uint32_t x = 12345;
    for (int len = 1; len < 290; len++) {
        for (int i = 0; i < len; i++) {
            x = x * 1103515245u + 12345u;
            id[i] = (char)(1 + (x >> 16) % 255); /* every byte but NUL, '|' included */
        }
        id[len] = '\0';
        char *c = NULL, *back = NULL;
        assert_int_equal(acp_store_cursor_encode("2026-12-02T13:44:52.123Z", id, &c), 0);
        assert_null(strpbrk(c, "+/=")); /* URL-safe, unpadded */
        assert_int_equal(acp_store_cursor_decode(c, at, &back), 0);
        assert_string_equal(at, "2026-12-02T13:44:52.123Z");
        assert_string_equal(back, id);
        free(c);
        free(back);
    }
}

/* Every single-character change of a valid cursor is either rejected or decodes to values
 * that encode back to exactly the changed string. */
static void t_mutations(void **state)
{
    (void)state;
    char *c = NULL;
    assert_int_equal(acp_store_cursor_encode("2026-01-02T03:04:05.678Z", "sess-1", &c), 0);
    size_t n = strlen(c);
    const char alphabet[] = "AZaz09-_+/=.!~ \x01\xff";
    int accepted = 0, rejected = 0;
    for (size_t i = 0; i < n; i++) {
        for (const char *a = alphabet; *a; a++) {
            char *m = strdup(c);
            m[i] = *a;
            char at[ACP_STORE_TIME_LEN + 1], *id = NULL, *again = NULL;
            int rc = acp_store_cursor_decode(m, at, &id);
            if (rc == 0) {
                assert_true(acp_store_time_valid(at));
                assert_int_equal(acp_store_cursor_encode(at, id, &again), 0);
                assert_string_equal(again, m);
                accepted++;
            } else {
                assert_int_equal(rc, ACP_EINVAL);
                assert_null(id);
                rejected++;
            }
            free(id);
            free(again);
            free(m);
        }
    }
    assert_true(rejected > accepted); /* most damage is caught */
    /* every truncation is rejected */
    for (size_t k = 0; k < n; k++) {
        char *m = strndup(c, k);
        char at[ACP_STORE_TIME_LEN + 1], *id = NULL;
        int rc = acp_store_cursor_decode(m, at, &id);
        assert_int_equal(rc, ACP_EINVAL);
        assert_null(id);
        free(id);
        free(m);
    }
    free(c);
}

static void t_limits(void **state)
{
    (void)state;
    char at[ACP_STORE_TIME_LEN + 1], *id = (char *)"x";
    assert_int_equal(acp_store_cursor_decode(NULL, at, &id), ACP_EINVAL);
    assert_null(id);
    assert_int_equal(acp_store_cursor_decode("", at, &id), ACP_EINVAL);
    char *huge = malloc(10001);
    memset(huge, 'A', 10000);
    huge[10000] = '\0';
    assert_int_equal(acp_store_cursor_decode(huge, at, &id), ACP_EINVAL);
    free(huge);
    assert_true(acp_store_time_valid("2026-12-02T13:44:52.123Z"));
    const char *bad[] = {
        "2026-12-02T13:44:52.123",  "2026-12-02T13:44:52.123Zx", "2026-12-02 13:44:52.123Z",
        "2026-00-02T13:44:52.123Z", "2026-12-32T13:44:52.123Z",  "2026-12-02T24:44:52.123Z",
        "+026-12-02T13:44:52.123Z", "2026-12-02T13:44:52,123Z",  ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_false(acp_store_time_valid(bad[i]));
    char now[ACP_STORE_TIME_LEN + 1];
    acp_store_now(now);
    assert_true(acp_store_time_valid(now));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(t_round_trip),
        cmocka_unit_test(t_mutations),
        cmocka_unit_test(t_limits),
    };
    return cmocka_run_group_tests_name("store_cursor", tests, NULL, NULL);
}
