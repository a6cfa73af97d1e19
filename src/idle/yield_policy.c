/* See yield_policy.h. */
#include "idle/yield_policy.h"

enum idle_yield_action idle_yield_step(struct idle_yield_state *s, bool pressure,
                                       uint64_t now_ns, uint64_t usage, uint64_t unused,
                                       uint64_t total)
{
    if (pressure) {
        s->last_pressure_ns = now_ns;
        /* Half of what it holds at each step under pressure: the foreground's need is not
         * known, and halving reaches any amount in a few steps (a step is one sample). */
        uint64_t target = usage / 2 > IDLE_FLOOR_BYTES ? usage / 2 : IDLE_FLOOR_BYTES;
        if (s->frozen && s->limit && s->limit <= target)
            return YIELD_NOTHING;
        s->frozen = true;
        s->limit = target;
        s->last_change_ns = now_ns;
        return YIELD_SHRINK;
    }
    bool calm = now_ns - s->last_pressure_ns >= IDLE_CALM_NS &&
                now_ns - s->last_change_ns >= IDLE_CALM_NS;
    if (!calm)
        return YIELD_NOTHING;
    if (s->frozen) {
        s->frozen = false;
        s->last_change_ns = now_ns;
        return YIELD_THAW;
    }
    if (s->limit == 0)
        return YIELD_NOTHING;
    /* Only into memory nobody uses: calm means the foreground fits, not that it is gone, and
     * growing into what it holds would push it out again. Half of what is free at most, and
     * no limit at all once half of everything is free. */
    if (unused >= total / 2) {
        s->limit = 0;
    } else {
        uint64_t step = s->limit > IDLE_GROW_MIN_BYTES ? s->limit : IDLE_GROW_MIN_BYTES;
        if (step > unused / 2)
            step = unused / 2;
        if (step < IDLE_GROW_LEAST_BYTES)
            return YIELD_NOTHING;
        s->limit += step;
    }
    s->last_change_ns = now_ns;
    return YIELD_GROW;
}

bool idle_yield_may_grow(const struct idle_yield_state *s)
{
    return !s->frozen && s->limit != 0;
}
