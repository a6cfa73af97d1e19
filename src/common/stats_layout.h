/* Layout of the statistics file shared by every process of a `specx run` and by specx-run,
 * which creates it, passes its path in SPECX_STATS, and reads it when the command ends.
 * Each process claims one page-sized slot by atomic increment and maps only that page
 * MAP_SHARED, so counters are live: they survive a process killed without warning.
 * The figures are those of Fraser & Chang 2003, Table 2. */
#ifndef SPECX_STATS_LAYOUT_H
#define SPECX_STATS_LAYOUT_H

#include <stdint.h>

#define SPECX_STATS_MAGIC 0x3174617473786570ULL /* "pexstat1" */
#define SPECX_STATS_PAGE 4096u
#define SPECX_STATS_MAX_SLOTS 1023u
#define SPECX_STATS_FILE_SIZE ((SPECX_STATS_MAX_SLOTS + 1u) * SPECX_STATS_PAGE)

/* Every counter, once: name (JSON key) and meaning. Updated with relaxed atomic adds by the
 * normal process and, for the spec_* counters, by its speculative process. */
#define SPECX_COUNTERS(X) \
    X(reads,             "read calls on regular files checked for residency") \
    X(residency_denied,  "reads not checked: the kernel hides the file's page cache (EPERM)") \
    X(stalls,            "I/O stalls: reads of data that was not in memory") \
    X(stall_ns,          "time blocked in those reads, including synchronization") \
    X(inflight_waits,    "reads of data in memory but still arriving (took > 0.5 ms)") \
    X(inflight_wait_ns,  "time blocked in those reads") \
    X(spec_prefetches,   "speculative prefetches issued") \
    X(spec_bytes,        "bytes covered by speculative prefetches") \
    X(spec_used,         "speculative prefetches the program read while still in memory") \
    X(spec_complete,     "of those, prefetches complete when the program asked") \
    X(spec_used_pages,   "pages of the program's reads and faults that speculative prefetches served") \
    X(spec_evicted,      "speculative prefetches evicted before the program read them") \
    X(sync_attempts,     "synchronizations started (program stalled on data not prefetched)") \
    X(sync_completed,    "synchronizations that produced a running speculative process") \
    X(sync_ns,           "time spent synchronizing (hidden inside the stall)") \
    X(spec_created,      "speculative processes created") \
    X(spec_ended,        "speculative processes ended") \
    X(spec_failed,       "speculative processes that could not enter the sandbox") \
    X(spec_idle_ended,   "speculative processes that ended themselves, idle (copy_idle.h)") \
    X(spec_stuck_ended,  "speculative processes that ended themselves, stuck waiting (copy_idle.h)") \
    X(spec_dry,          "of those created, dry ones: they only predict (trust.h, §6.1)") \
    X(spec_judged_useful, "speculative processes the program read a prediction of (backoff.h)") \
    X(spec_predictions,  "would-be prefetches dry speculative processes logged, not issued") \
    X(fadv_random,       "descriptors switched to POSIX_FADV_RANDOM") \
    X(fadv_normal,       "descriptors switched back to POSIX_FADV_NORMAL") \
    X(minflt,            "minor page faults of the program (getrusage; includes copy-on-write)") \
    X(majflt,            "major page faults of the program (getrusage): its page-fault stalls") \
    X(fault_prefetches,  "page-fault prefetches: chunks of file mappings prefetched (fault_speculation.h)") \
    X(fault_bytes,       "bytes covered by page-fault prefetches") \
    X(fault_used,        "page-fault prefetches the program touched afterwards (its pagemap)") \
    X(fault_predictions, "would-be page-fault prefetches dry speculative processes logged") \
    X(refork_attempts,   "reforks started at a stall: speculative clones, first ones included (Table 3)") \
    X(refork_completed,  "of those, reforks whose new copy was sandboxed before the program went on") \
    X(refork_ns,         "time the program spent reforking: killing the old copy, cloning (Table 3)") \
    X(refork_wait_ns,    "time it then waited for the new copy to enter its sandbox (preemptible)") \
    X(refork_fast,       "reforks that left the large anonymous regions out (--refork=fast)") \
    X(lazy_pulled,       "pages fast-reforked copies pulled from the program (lazy_memory.h)") \
    X(lazy_zero,         "pages they mapped as zeros: absent in the program (never touched)") \
    X(lazy_swap_prefetches, "swapped-out program pages they read into the swap cache, then pulled") \
    X(lazy_dropped,      "pulled pages they dropped again to bound their footprint") \
    X(memctl_intervals,  "memory control intervals ended (fraser-chang-2003 §6.1, Table 5)") \
    X(memctl_disabled,   "times it stopped speculation: its overhead crossed the threshold") \
    X(memctl_reenabled,  "times it let speculation run again, the overhead decayed") \
    X(memctl_added,      "stalls speculation added: refaults while memory was full (memory_control.h)") \
    X(memctl_removed,    "stalls speculation removed: reads served by its prefetches") \
    X(memctl_giveback_ns, "longest time from the start of the interval that stopped speculation to the copy's memory given back") \
    X(copy_peak_kb,      "largest private memory of a copy, KiB (its smaps_rollup)") \
    X(stream_copies,     "copies made for a thread beside another thread's copy, which does not predict its reads (copy.c)") \
    X(copies_peak,       "most copies a process had at once, one per stream of reads (the total: the largest of any process)")

/* What the runtime noted about a process: why speculation was off, how it ran (slot flags). */
enum specx_slot_flag {
    SPECX_SLOT_NO_SPEC = 1u << 0,      /* --no-spec or SPECX_DISABLE=1 */
    SPECX_SLOT_THREADED = 1u << 1,     /* a copy was made of one thread of several */
    SPECX_SLOT_SANDBOX_FAILED = 1u << 2, /* the sandbox could not be entered */
    SPECX_SLOT_NO_CACHESTAT = 1u << 3, /* residency through mincore (kernel without cachestat) */
    SPECX_SLOT_ENDED = 1u << 4,        /* the program image ended (exit or exec) normally */
    SPECX_SLOT_NEVER_PREDICTED = 1u << 5, /* copies in a row predicted no read: none made since */
    SPECX_SLOT_SECCOMP = 1u << 6,      /* a seccomp filter or strict mode: specx stands aside */
    SPECX_SLOT_OOM_GROUP = 1u << 7,    /* memory.oom.group set: no copy made */
    SPECX_SLOT_PIDS_MAX = 1u << 8,     /* a copy would have come too close to pids.max: none made */
};

/* CPU time (user and system) a copy may spend without reaching I/O before it ends itself
 * (spec_idle_ended; src/run/runtime/running/copy_idle.h says why). */
#define SPECX_COPY_IDLE_CPU_NS (100ull * 1000000ull)

/* Wall time a copy may wait without reaching I/O, outside its horizon, before it ends itself
 * (spec_stuck_ended; src/run/runtime/running/copy_idle.h says why). */
#define SPECX_COPY_STUCK_NS (1000ull * 1000000ull)

/* How many copies in a row must predict no read of the program before a process makes no
 * more (SPECX_SLOT_NEVER_PREDICTED; src/run/runtime/policy/backoff.h says why). */
#define SPECX_RETIRE_AFTER 8u

struct specx_stats_header {
    uint64_t magic;
    uint32_t max_slots;
    uint32_t claimed; /* slots handed out so far (may exceed max_slots: overflow) */
};

struct specx_stats_slot {
    int32_t pid;
    int32_t ppid;
    uint32_t flags;
    uint32_t horizon;
    uint64_t start_ns; /* CLOCK_MONOTONIC when this program image started */
    uint64_t end_ns;   /* ... and ended; 0 if it was killed */
    char argv0[128];
#define SPECX_COUNTER_FIELD(name, doc) uint64_t name;
    SPECX_COUNTERS(SPECX_COUNTER_FIELD)
#undef SPECX_COUNTER_FIELD
};

_Static_assert(sizeof(struct specx_stats_header) <= SPECX_STATS_PAGE, "header fits a page");
_Static_assert(sizeof(struct specx_stats_slot) <= SPECX_STATS_PAGE, "slot fits a page");

#endif
