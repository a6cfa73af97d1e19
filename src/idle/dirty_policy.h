/* How much unwritten data the background may have (docs/design/idle.md, Disk). Its write-back runs in
 * the kernel's flusher threads, at their I/O class and not the background's, up to 30 s after
 * the write: unbounded, a background that writes can fill the foreground's device queue long
 * after it was preempted. So its dirty data is bounded: above the bound it is held (frozen)
 * until write-back brings it to half; above a quarter specx idle starts that write-back itself,
 * from a thread of the idle class, so that what the flushers find left is small. Pure logic,
 * unit-tested; dirty_bound.c reads the counters and acts. */
#ifndef IDLE_DIRTY_POLICY_H
#define IDLE_DIRTY_POLICY_H

#include <stdbool.h>
#include <stdint.h>

/* The default bound: a fifth of a second of a disk's write-back, a tenth of a cloud disk's. */
#define IDLE_DIRTY_DEFAULT_BYTES (32ull << 20)
/* Samples while the background has little unwritten data, and while it has more. A writer
 * dirties memory at a gigabyte a second, so the bound holds to what it writes between two
 * samples and what the kernel's batched counters do not show yet (up to 60 MiB of such a
 * writer here, tests/test_idle.py). A sample is a wakeup of specx idle and a read of
 * memory.stat: at 10 ms, 1.3-1.6 % of a CPU, and 0.8-1.0 % of a foreground's time on the CPU
 * it shares (measured, docs/design/idle.md): so the bound rests when it can (below). */
#define IDLE_DIRTY_SLOW_NS 10000000ull
#define IDLE_DIRTY_FAST_NS 2000000ull
/* Without a bound the samples only feed the report's peak. */
#define IDLE_DIRTY_REPORT_NS 50000000ull

struct idle_dirty_step {
    bool hold;        /* the background must be (or stay) frozen */
    bool flush;       /* start write-back of its files now */
    /* Little unwritten data: the next sample waits for the memory control's own
     * (IDLE_SAMPLE_NS) instead of NEXT_NS, or, where the kernel can tell when the group's
     * memory use moves by idle_dirty_watch_window() (v1 usage thresholds), for that. New data
     * in the page cache is charged as it is written, so there a writer wakes the bound within
     * a few MiB; one rewriting pages already cached, or any writer on v2, is seen at the next
     * memory sample. */
    bool rest;
    uint64_t next_ns; /* the next sample, from now */
};

/* How long the background must have had little unwritten data before the bound rests.
 * Setting a watch (two thresholds) took the kernel 15-28 ms here (RCU grace periods), in which
 * specx idle samples nothing: a writer held and let go at every few samples would write that
 * long unseen at each. */
#define IDLE_DIRTY_CALM_NS 1000000000ull

/* How far the background's memory use may move while the bound rests: an eighth of BOUND,
 * so that a writer's first sample finds at most 3/8 of it unwritten, below half. */
static inline uint64_t idle_dirty_watch_window(uint64_t bound)
{
    return bound / 8;
}

/* One sample: DIRTY bytes unwritten (dirty or under write-back) against BOUND (0: none), the
 * background HELD since an earlier sample or not, and whether holding it brings that down
 * (FLUSHABLE, idle_dirty_hold_helps). */
struct idle_dirty_step idle_dirty_decide(bool held, uint64_t dirty, uint64_t bound,
                                         bool flushable);

/* Whether holding the background brings its unwritten data down. Before a hold: if the last
 * pass wrote back a file (LAST_PASS_WROTE: one it has open, or one it closed; true before the
 * first pass). During one: until a pass has run since it began (PASS_SINCE_HOLD), and then
 * while some of its data is being written back (WRITEBACK bytes). Data that only the kernel's
 * flushers will write (a file closed where closes cannot be seen, up to 30 s later) would hold
 * it that long for nothing: measured, a shell loop writing 512 files under a bound of 16 MiB
 * was held 30 s at a time while the file it had open was written back at every pass. */
bool idle_dirty_hold_helps(bool held, bool last_pass_wrote, bool pass_since_hold,
                           uint64_t writeback);

#endif
