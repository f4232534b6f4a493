/* Extension methods. (Being written.) */
#include "agent/internal.h"

void ext_free_all(acp_agent *a)
{
}
