/* See dirty_policy.h. */
#include "idle/dirty_policy.h"

struct idle_dirty_step idle_dirty_decide(bool held, uint64_t dirty, uint64_t bound,
                                         bool flushable)
{
    struct idle_dirty_step step = { .next_ns = IDLE_DIRTY_SLOW_NS };
    if (bound == 0) {
        step.next_ns = IDLE_DIRTY_REPORT_NS;
        return step;
    }
    /* Held until half the bound, so that it is not frozen and thawed at every sample. */
    step.hold = flushable && (held ? dirty > bound / 2 : dirty > bound);
    step.flush = dirty > bound / 4;
    if (step.flush)
        step.next_ns = IDLE_DIRTY_FAST_NS;
    step.rest = !step.hold && !step.flush;
    return step;
}

bool idle_dirty_hold_helps(bool held, bool last_pass_wrote, bool pass_since_hold,
                           uint64_t writeback)
{
    return held ? !pass_since_hold || writeback > 0 : last_pass_wrote;
}
