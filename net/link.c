/* SPDX-License-Identifier: Apache-2.0 */
/* acp_link: the owner-facing calls dispatch to the profile; the profile-facing ones to the
 * owner's callbacks. Nothing is delivered before the owner bound itself (link.h). */
#include "net/link.h"

#include "acp/error.h"

#define DEFAULT_HIGH_WATER (4u << 20)

void acp_link_bind(acp_link *l, const acp_link_cbs *cbs, void *user)
{
    l->cbs = *cbs;
    l->user = user;
    l->bound = true;
}

int acp_link_send(acp_link *l, const char *msg, size_t len)
{
    return l->ops->send(l, msg, len);
}

void acp_link_flush(acp_link *l)
{
    if (l->ops->flush) l->ops->flush(l);
}

size_t acp_link_queued(const acp_link *l)
{
    return l->ops->queued(l);
}

size_t acp_link_high_water(const acp_link *l)
{
    return l->high_water ? l->high_water : DEFAULT_HIGH_WATER;
}

void acp_link_close(acp_link *l)
{
    l->ops->close(l);
}

void acp_link_deliver(acp_link *l, const char *msg, size_t len)
{
    if (l->bound && l->cbs.on_message) l->cbs.on_message(l, msg, len, l->user);
}

void acp_link_drained(acp_link *l)
{
    if (l->bound && l->cbs.on_drain) l->cbs.on_drain(l, l->user);
}

void acp_link_ended(acp_link *l, const char *reason)
{
    if (l->bound && l->cbs.on_close) l->cbs.on_close(l, reason, l->user);
    l->bound = false;
}

void acp_link_log(acp_link *l, const char *line)
{
    if (l->bound && l->cbs.on_log) l->cbs.on_log(l, line, l->user);
}
