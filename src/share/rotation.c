/* See rotation.h. */
#include "share/rotation.h"

/* The first runnable job after CURRENT in cyclic order (CURRENT itself last) whose level is
 * LEVEL, or any level if ANY_LEVEL. */
static size_t next_in_level(const struct share_slot *slots, size_t n, size_t current,
                            unsigned level, bool any_level)
{
    size_t start = current == SIZE_MAX ? 0 : current + 1;
    for (size_t k = 0; k < n; k++) {
        size_t i = (start + k) % n;
        if (slots[i].runnable && (any_level || slots[i].level == level))
            return i;
    }
    return SIZE_MAX;
}

size_t share_next_job(enum share_scheduler s, const struct share_slot *slots, size_t n,
                      size_t current)
{
    if (s == SCHEDULER_RR)
        return next_in_level(slots, n, current, 0, true);
    for (unsigned level = 0; level < SHARE_MLFQ_LEVELS; level++) {
        size_t i = next_in_level(slots, n, current, level, false);
        if (i != SIZE_MAX)
            return i;
    }
    return SIZE_MAX;
}

uint64_t share_turn_ns(enum share_scheduler s, uint64_t quantum_ns, unsigned level)
{
    return s == SCHEDULER_MLFQ ? quantum_ns << level : quantum_ns;
}

void share_after_turn(enum share_scheduler s, struct share_slot *slot, bool used_whole_turn)
{
    if (s == SCHEDULER_MLFQ && used_whole_turn && slot->level + 1 < SHARE_MLFQ_LEVELS)
        slot->level++;
}
