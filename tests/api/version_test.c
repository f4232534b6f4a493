/* SPDX-License-Identifier: Apache-2.0 */
/* acp_version(): the run-time version is the one the headers name, each part and the string. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <cmocka.h>

#include "acp/version.h"

static void test_version(void **state)
{
    (void)state;
    int major = -1, minor = -1, patch = -1;
    const char *v = acp_version(&major, &minor, &patch);
    assert_int_equal(major, ACP_VERSION_MAJOR);
    assert_int_equal(minor, ACP_VERSION_MINOR);
    assert_int_equal(patch, ACP_VERSION_PATCH);
    char want[64];
    snprintf(want, sizeof want, "%d.%d.%d", major, minor, patch);
    assert_string_equal(v, want);
    assert_string_equal(acp_version(NULL, NULL, NULL), ACP_VERSION_STRING);
    assert_int_equal(major, 1); /* libacp 1.x: the ABI promise of docs/abi.md */
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_version)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
