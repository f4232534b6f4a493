/* Placeholder until the PostgreSQL backend lands (its engineer owns this file): links the
 * dispatch in store.c and says clearly that this build cannot reach PostgreSQL. */
#include "store/backends.h"
#include "store/store_impl.h"

int acp_store_pg_open(const char *conninfo, acp_store **out, char **errmsg)
{
    (void)conninfo;
    *out = NULL;
    return acp_store_open_fail(errmsg, ACP_ESTORE, "postgresql: backend not built yet");
}
