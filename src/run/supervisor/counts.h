/* What the supervisor did, in figures: kept by the supervisor as it runs, read by specx run's
 * report (run/figures.h) without the supervisor's insides. */
#ifndef SPECX_SUPERVISOR_COUNTS_H
#define SPECX_SUPERVISOR_COUNTS_H

#include <stdbool.h>
#include <stdint.h>

/* Of serving its copies' calls (serve.h). */
struct serve_counts {
    uint64_t calls;        /* notified calls answered */
    uint64_t opens;        /* files opened for copies */
    uint64_t prefetches;   /* prefetch requests issued (live copies) */
    uint64_t bytes;        /* bytes they asked for */
    uint64_t predictions;  /* the same, only logged (dry copies) */
};

struct supervisor_counts {
    uint64_t copies;            /* copies made */
    uint64_t live;              /* of which prefetching (the rest only predicted, dry) */
    uint64_t not_made;          /* stalls at which making one failed (the thread gone too) */
    uint64_t shared_memory;     /* stalls at which the program mapped shared memory */
    uint64_t traced;            /* stalls at which another tracer held the thread */
    uint64_t seccomp;           /* stalls at which the thread had a seccomp filter or strict mode */
    uint64_t oom_group;         /* stalls at which the program's memory.oom.group was set */
    uint64_t pids_max;          /* stalls at which a copy would have come close to pids.max */
    uint64_t stalls_predicted;  /* stalls on data a copy had prefetched or predicted */
    uint64_t stalls_unpredicted;/* stalls no copy foresaw (a new copy, unless backing off) */
    uint64_t backed_off;        /* of those, passed without a copy (policy/backoff.h) */
    uint64_t stuck_ended;       /* copies ended after 1 s without a read */
    uint64_t memory_ended;      /* copies ended, or not made, for the program's memory */
    uint64_t held_ns;           /* time the program's threads were held stopped, in all */
    uint64_t held_max_ns;       /* the longest single hold */
    struct serve_counts served;
    bool retired;               /* copies stopped for good (policy/backoff.h) */
    bool enabled;               /* false: the copies' filter could not be compiled */
};

#endif
