/* Authentication: authMethods, authenticate, logout and the per-connection state. (Being written.)
 */
#include "agent/internal.h"

void auth_free_all(acp_agent *a)
{
}
