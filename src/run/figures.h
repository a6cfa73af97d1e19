/* What specx run's report tells (run_report.h) besides the runtime's statistics (run_stats.h):
 * figures the launcher's mechanisms hand over when the command is done, without their insides. */
#ifndef SPECX_RUN_FIGURES_H
#define SPECX_RUN_FIGURES_H

#include <stdbool.h>
#include <stdint.h>

#include "run/supervisor/counts.h"

/* The sampling period. A read shorter than it may be missed: the figures are lower bounds for
 * a fast device, and within a period per read for a slow one. On a busy machine the sampler
 * (nice 19) wakes late: a late sample counts the whole gap as blocked, so the time stays near
 * right while reads are missed (measured beside a test suite: 29-46 of 300 reads seen, 3.46-3.73
 * s blocked, against 304 and 3.72 s on an idle machine). */
#define RUN_SAMPLE_PERIOD_NS 1000000ull

/* What the sampler saw from outside a command the runtime cannot enter (run_sampler.h). */
struct outside_view {
    bool sampled;           /* a sampler ran */
    uint64_t samples;
    uint64_t blocked_reads; /* times a thread was found blocked in a read it was not in before */
    uint64_t blocked_ns;    /* sampled time threads spent blocked in such reads, summed */
};

#endif
