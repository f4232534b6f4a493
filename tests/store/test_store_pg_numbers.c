/* SPDX-License-Identifier: Apache-2.0 */
/* The numbers of a PostgreSQL connection string, and of the PG* variables libpq reads in
 * their place, are checked before any connection is tried (issue 13, item 2): libpq reads
 * connect_timeout=0 or -5 as "wait for ever". No server needed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "acp/error.h"
#include "acp/store.h"

/* where is refused with a message holding want, and never the password "hunter2". */
static void refused(const char *where, const char *want)
{
    acp_store *st = (acp_store *)1;
    assert_int_equal(acp_store_open(where, &st), ACP_ESTORE);
    assert_null(st);
    assert_true(*acp_error_last()->message);
    if (!strstr(acp_error_last()->message, want))
        fail_msg("%s: got '%s', want '%s'", where, acp_error_last()->message, want);
    assert_null(strstr(acp_error_last()->message, "hunter2"));
}

static void bad_numbers_in_the_string(void **state)
{
    refused("postgresql://me:hunter2@localhost:99999/db",
            "invalid PostgreSQL connection parameter: port: '99999' is out of range: 1 to 65535");
    refused("postgresql://me:hunter2@localhost:5x/db", "port: '5x' is not a whole number");
    refused("host=a,b,c port=5432,,70000 password=hunter2",
            "port: '70000' is out of range: 1 to 65535");
    refused("dbname=x port=-1", "port: '-1' is out of range: 1 to 65535");
    refused("dbname=x connect_timeout=0", "connect_timeout: '0' is out of range: 1 to 3600");
    refused("dbname=x connect_timeout=-5", "connect_timeout: '-5' is out of range: 1 to 3600");
    refused("dbname=x connect_timeout=5s", "connect_timeout: '5s' is not a whole number");
    refused("dbname=x connect_timeout=99999999999999999999",
            "connect_timeout: '99999999999999999999' is out of range: 1 to 3600");
    refused("dbname=x connect_timeout=", "connect_timeout: no number given");
    refused("postgresql:///x?keepalives=2", "keepalives: '2' is out of range: 0 to 1");
    refused("dbname=x keepalives_idle=-1", "keepalives_idle: '-1' is out of range");
    refused("dbname=x keepalives_count=1e3", "keepalives_count: '1e3' is not a whole number");
    refused("dbname=x tcp_user_timeout=4294967296",
            "tcp_user_timeout: '4294967296' is out of range: 0 to 2147483647");
}

static void bad_numbers_in_the_environment(void **state)
{
    setenv("PGHOST", "/nonexistent-acp-test", 1); /* a try to connect fails at once */
    setenv("PGCONNECT_TIMEOUT", "-5", 1);
    refused("dbname=x", "PGCONNECT_TIMEOUT: '-5' is out of range: 1 to 3600");
    /* the string's own value wins, as in libpq: the variable is not read */
    acp_store *st = NULL;
    assert_int_equal(acp_store_open("dbname=x connect_timeout=3", &st), ACP_ESTORE);
    assert_null(strstr(acp_error_last()->message, "PGCONNECT_TIMEOUT"));
    unsetenv("PGCONNECT_TIMEOUT");
    setenv("PGPORT", "0", 1);
    refused("dbname=x", "PGPORT: '0' is out of range: 1 to 65535");
    unsetenv("PGPORT");
    unsetenv("PGHOST");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bad_numbers_in_the_string),
        cmocka_unit_test(bad_numbers_in_the_environment),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
