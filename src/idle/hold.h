/* The background frozen for any of several reasons at once: the memory control holds it while
 * the foreground is short of memory, the dirty-data bound while its write-back catches up, the
 * receive side while the foreground receives on a full link.
 * Frozen while one reason holds it, thawed when none does. */
#ifndef IDLE_HOLD_H
#define IDLE_HOLD_H

#include <stdbool.h>

#include "kernel/cgroup.h"

enum idle_hold_reason {
    IDLE_HOLD_MEMORY = 1u << 0,
    IDLE_HOLD_DIRTY = 1u << 1,
    IDLE_HOLD_NET = 1u << 2,
};

struct idle_hold {
    const struct specx_cgroup *freeze; /* NULL: no freezer, nothing is ever frozen */
    unsigned reasons;
};

/* REASON holds the background (HELD) or lets it go; freezes or thaws on the first or the
 * last reason. */
void idle_hold_set(struct idle_hold *h, enum idle_hold_reason reason, bool held);

#endif
