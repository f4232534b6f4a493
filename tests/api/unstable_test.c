/* SPDX-License-Identifier: Apache-2.0 */
/* The unstable features' names (acp_unstable_name, acp_unstable_parse): one name per bit, the
 * list acp-agent's --unstable-off takes, and an unknown name refused with the last error. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "acp/agent.h"
#include "acp/error.h"

static void test_names(void **state)
{
    (void)state;
    unsigned seen = 0, bits = 0;
    for (unsigned f = 1; f & ACP_UNSTABLE_ALL; f <<= 1) {
        const char *name = acp_unstable_name(f);
        assert_non_null(name);
        assert_int_equal(acp_unstable_parse(name, &bits), 0);
        assert_int_equal(bits, f); /* the name parses back to its bit */
        seen |= f;
    }
    assert_int_equal(seen, ACP_UNSTABLE_ALL);
    assert_null(acp_unstable_name(0));
    assert_null(acp_unstable_name(ACP_UNSTABLE_FORK | ACP_UNSTABLE_TITLE));
    assert_null(acp_unstable_name(ACP_UNSTABLE_ALL + 1));
}

static void test_lists(void **state)
{
    (void)state;
    unsigned bits = 0;
    assert_int_equal(acp_unstable_parse("fork,system-prompt,mcp-acp", &bits), 0);
    assert_int_equal(bits, ACP_UNSTABLE_FORK | ACP_UNSTABLE_SYSTEM_PROMPT | ACP_UNSTABLE_MCP_ACP);
    assert_int_equal(acp_unstable_parse("all", &bits), 0);
    assert_int_equal(bits, ACP_UNSTABLE_ALL);
    assert_int_equal(acp_unstable_parse("", &bits), 0);
    assert_int_equal(bits, 0);
    bits = 7;
    assert_int_equal(acp_unstable_parse("fork,forks", &bits), ACP_EINVAL);
    assert_int_equal(bits, 7); /* untouched on failure */
    assert_non_null(strstr(acp_error_last()->message, "'forks'"));
    assert_int_equal(acp_unstable_parse("for", &bits), ACP_EINVAL); /* no prefix matching */
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_names), cmocka_unit_test(test_lists)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
