/* Reactive cost-benefit control of speculation's memory overhead (Fraser & Chang 2003 §6.1),
 * as pure arithmetic over intervals. The caller (running/memory_watch.c) measures, per interval,
 * the stalls speculation added to the program (pages of the program pushed out by speculative
 * pages and read again) and those it removed (program reads served by speculative prefetches),
 * and stops or allows speculation as this says.
 *
 * While speculation is enabled, cost and benefit are exponentially decayed estimates:
 *     Cost(t) = (1 - a) Cost(t-1) + a Added(t-1),  Benefit(t) likewise with Removed,
 * and its overhead is Cost - Benefit. Once the overhead is non-negligible (above the
 * threshold) speculation is disabled: the copy is stopped and its memory reclaimed. While
 * disabled, stalls are added, not decayed, and the overhead is spread over the intervals since
 * it was disabled, (Cost - Benefit) / (t - s): it decays with time, and speculation is enabled
 * again once it falls to the threshold. The paper's conservatism: a disabled process is not
 * run "dry" to learn earlier whether it would pay (end of §6.1). */
#ifndef SPECX_POLICY_MEMORY_CONTROL_H
#define SPECX_POLICY_MEMORY_CONTROL_H

#include <stdbool.h>
#include <stdint.h>

/* Weight of the newest interval (the paper's alpha). */
#define SPECX_MEMCTL_ALPHA 0.5
/* Net added stalls per interval, in pages, that count as a non-negligible overhead: one
 * 128 KiB chunk, what the kernel reads ahead at a miss and a copy prefetches at once. Stalls
 * are weighed as equal, the paper's "average stall time" assumption (§6.2); the added ones are
 * an upper bound (specx_memctl_added), which a smaller threshold would turn into stops of
 * speculation that did no harm. */
#define SPECX_MEMCTL_THRESHOLD 32.0

struct specx_memctl {
    double cost, benefit;
    bool disabled;
    uint64_t interval;       /* t: intervals ended so far */
    uint64_t disabled_since; /* s: the interval in which speculation was last disabled */
    /* What the report's Table 5 shows. */
    uint64_t crossings;      /* times the overhead crossed the threshold: disabled */
    uint64_t reenabled;
    uint64_t added, removed; /* stalls added and removed, over the whole run */
};

/* What an interval's end did to speculation. */
enum specx_memctl_change { SPECX_MEMCTL_SAME, SPECX_MEMCTL_DISABLE, SPECX_MEMCTL_ENABLE };

/* A fresh control: enabled, no history. */
void specx_memctl_init(struct specx_memctl *m);

/* Ends the current interval, in which speculation added ADDED and removed REMOVED stalls. */
enum specx_memctl_change specx_memctl_end_interval(struct specx_memctl *m, uint64_t added,
                                                   uint64_t removed);

/* The overhead estimate now (stalls per interval; negative: speculation pays). */
double specx_memctl_overhead(const struct specx_memctl *m);

/* The stalls speculation added in an interval, in pages (as the stalls it removed are: the
 * pages of the program's reads that its prefetches served), from what the kernel counts for
 * the program's memory: REFAULTS (evicted pages read again: the kernel's shadow entries are the paper's
 * eviction list, without its split by cause) count only if the memory was full (PRESSURE: the
 * group hit its limit, or the machine stalled on memory) and only up to SPECULATIVE_PAGES, the
 * pages speculation brought in during the interval: each can have pushed out at most one page
 * of the program. An upper bound, so the control errs towards stopping speculation. */
uint64_t specx_memctl_added(uint64_t refaults, bool pressure, uint64_t speculative_pages);

#endif
