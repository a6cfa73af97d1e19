/* The background's memory yields to the foreground's (Eggert 2002 §2.3, preemptability): a
 * sample every IDLE_SAMPLE_NS of what says the foreground stalled on memory, and the
 * background frozen and reclaimed at once when it did (yield_policy.h decides how far). */
#ifndef IDLE_MEMORY_YIELD_H
#define IDLE_MEMORY_YIELD_H

#include <stdbool.h>
#include <stdint.h>

#include "idle/figures.h"
#include "idle/groups.h"
#include "idle/hold.h"
#include "idle/yield_policy.h"

/* 50 ms: the give-back bar is 0.5 s from the foreground's first stall, and a sample costs a
 * few small reads. */
#define IDLE_SAMPLE_NS 50000000ull

struct idle_memory {
    const struct idle_groups *groups;
    struct idle_hold *hold;     /* where it freezes the background */
    struct idle_yield_state state;
    bool enabled;
    /* What pressure is read from (docs/design/idle.md, Memory). */
    bool psi_usable;            /* PSI of the v2 group above the background's and of the
                                   background's own: the difference is time the foreground
                                   stalled while the background did not */
    struct specx_cgroup psi_domain;
    uint64_t psi_domain_us, psi_bg_us;
    uint64_t pgscan;            /* the machine's own reclaim */
    bool machine_psi;           /* the machine's PSI gates the read of pgscan */
    uint64_t machine_stall_us;
    struct specx_cgroup domain; /* the memory group the background's was made in */
    bool domain_limited;
    uint64_t domain_hits;
    uint64_t total_bytes;       /* what the background may grow back to */
    /* What it did, for the report. */
    unsigned shrinks, thaws, grows;
    uint64_t giveback_max_ns, giveback_sum_ns, given_back_bytes;
    uint64_t frozen_ns, frozen_since_ns;
    double first_giveback_at;   /* wall clock (s since the epoch) the first shrink ended; 0 */
    uint64_t peak_bytes;        /* the kernel's high-water mark, exact where samples are not */
};

/* Starts watching; the background's memory group has no limit yet. */
void idle_memory_start(struct idle_memory *m, const struct idle_groups *g, struct idle_hold *hold,
                       uint64_t now_ns);

/* One sample and what follows from it. */
void idle_memory_tick(struct idle_memory *m, uint64_t now_ns);

/* Stops yielding (the deadline, or the end): thawed, and no limit of ours left. */
void idle_memory_stop(struct idle_memory *m, uint64_t now_ns);

/* The run is over, the background's memory group not yet removed: reads what the report
 * needs of it. */
void idle_memory_end(struct idle_memory *m);

/* What the report tells of it (figures.h). */
struct idle_memory_figures idle_memory_figures(const struct idle_memory *m);

#endif
