/* When the background gives memory back, and when it may take it again (Eggert 2002 §2.3:
 * memory is spatially shared, so preempting it means shrinking the background, not only
 * stopping it). Pure logic, unit-tested; memory_yield.c reads the signals and acts. */
#ifndef IDLE_YIELD_POLICY_H
#define IDLE_YIELD_POLICY_H

#include <stdbool.h>
#include <stdint.h>

/* A pressure-free second before a frozen background runs again, and between two steps of
 * its limit's growth: long enough that a foreground working in bursts is not fought over
 * every burst, short enough that idle memory is used within seconds. */
#define IDLE_CALM_NS 1000000000ull
/* The least a background is shrunk to: below it there is nothing worth taking. */
#define IDLE_FLOOR_BYTES (4ull << 20)
/* What a growth step adds at least when there is that much free, so that a small limit grows
 * back in a few steps; and below what free memory allows no step is worth making. */
#define IDLE_GROW_MIN_BYTES (64ull << 20)
#define IDLE_GROW_LEAST_BYTES (1ull << 20)

enum idle_yield_action {
    YIELD_NOTHING,
    YIELD_SHRINK,  /* freeze the background and reclaim it down to the new limit */
    YIELD_THAW,    /* pressure is over: let it run again within its limit */
    YIELD_GROW,    /* raise its limit (0: remove it) */
};

struct idle_yield_state {
    bool frozen;
    uint64_t limit;            /* bytes; 0: none */
    uint64_t last_pressure_ns; /* 0: never */
    uint64_t last_change_ns;   /* last shrink, thaw or growth */
};

/* One step: PRESSURE says whether the foreground stalled on memory since the last step, USAGE
 * is the background's memory now, UNUSED what nobody uses of TOTAL, all the memory there is to
 * share (the limit of the group we run in, or the machine's). Updates S and returns what to
 * do; for SHRINK and GROW the new limit is S->limit (0: none). */
enum idle_yield_action idle_yield_step(struct idle_yield_state *s, bool pressure,
                                       uint64_t now_ns, uint64_t usage, uint64_t unused,
                                       uint64_t total);

/* Whether the next step could grow the limit, and so needs UNUSED (a read of /proc/meminfo or
 * of the group we run in): only a thawed background that has a limit grows. At rest, no
 * limit and no pressure, a sample does without it. */
bool idle_yield_may_grow(const struct idle_yield_state *s);

#endif
