/* Client calls of turns, sessions and authenticate requests. (Being written.) */
#include "agent/internal.h"

void calls_turn_cancelled(acp_turn *t)
{
}
void calls_turn_ended(acp_turn *t)
{
}
void calls_session_closed(acp_session *s)
{
}
void calls_auth_ended(acp_auth *au)
{
}
void calls_agent_free(acp_agent *a)
{
}
