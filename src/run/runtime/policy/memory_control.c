/* The §6.1 control's arithmetic: see memory_control.h. */
#include "run/runtime/policy/memory_control.h"

void specx_memctl_init(struct specx_memctl *m)
{
    *m = (struct specx_memctl){ 0 };
}

double specx_memctl_overhead(const struct specx_memctl *m)
{
    if (!m->disabled)
        return m->cost - m->benefit;
    uint64_t stopped = m->interval - m->disabled_since;
    return (m->cost - m->benefit) / (double)(stopped ? stopped : 1);
}

static double decayed(double old, uint64_t fresh)
{
    return (1.0 - SPECX_MEMCTL_ALPHA) * old + SPECX_MEMCTL_ALPHA * (double)fresh;
}

enum specx_memctl_change specx_memctl_end_interval(struct specx_memctl *m, uint64_t added,
                                                   uint64_t removed)
{
    m->interval++;
    m->added += added;
    m->removed += removed;
    if (!m->disabled) {
        m->cost = decayed(m->cost, added);
        m->benefit = decayed(m->benefit, removed);
        if (specx_memctl_overhead(m) <= SPECX_MEMCTL_THRESHOLD)
            return SPECX_MEMCTL_SAME;
        m->disabled = true;
        m->disabled_since = m->interval;
        m->crossings++;
        return SPECX_MEMCTL_DISABLE;
    }
    m->cost += (double)added;
    m->benefit += (double)removed;
    if (specx_memctl_overhead(m) > SPECX_MEMCTL_THRESHOLD)
        return SPECX_MEMCTL_SAME;
    /* Enabled again from no history: the sums describe the whole time speculation was off,
     * not what the next interval will cost, and kept they would disable it again at once. */
    m->disabled = false;
    m->cost = m->benefit = 0;
    m->reenabled++;
    return SPECX_MEMCTL_ENABLE;
}

uint64_t specx_memctl_added(uint64_t refaults, bool pressure, uint64_t speculative_pages)
{
    if (!pressure)
        return 0;
    return refaults < speculative_pages ? refaults : speculative_pages;
}
