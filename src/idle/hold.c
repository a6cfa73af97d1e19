/* See hold.h. */
#include "idle/hold.h"

#include "kernel/freezer.h"

void idle_hold_set(struct idle_hold *h, enum idle_hold_reason reason, bool held)
{
    unsigned before = h->reasons;
    h->reasons = held ? before | reason : before & ~(unsigned)reason;
    if (h->freeze && (before == 0) != (h->reasons == 0))
        specx_freezer_set(h->freeze, h->reasons != 0);
}
