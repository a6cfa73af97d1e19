/* What specx idle's report tells (report.h), as figures: when the run is over each mechanism
 * hands a snapshot of what it did, and the report reads these, never the mechanisms' state. */
#ifndef IDLE_FIGURES_H
#define IDLE_FIGURES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "idle/options.h" /* IDLE_MAX_ISOLATE */

/* The memory control (memory_yield.h). */
struct idle_memory_figures {
    bool psi_usable;            /* PSI is among the signals it yields to */
    unsigned shrinks, thaws, grows;
    uint64_t giveback_max_ns, giveback_sum_ns, given_back_bytes;
    uint64_t frozen_ns;
    double first_giveback_at;   /* wall clock (s since the epoch) the first shrink ended; 0 */
    uint64_t peak_bytes;        /* the kernel's high-water mark */
};

/* The bound on unwritten data (dirty_bound.h). */
struct idle_dirty_figures {
    uint64_t bound;             /* bytes; 0: none */
    uint64_t peak_bytes, holds, held_ns, samples;
    uint64_t files_flushed;     /* files written back by specx idle */
    uint64_t closed_flushed;    /* of those, after their close */
    uint64_t closed_dropped;    /* closes seen but not kept (closed_files.h) */
    bool closed_watched;        /* closes were seen (else left to the flushers) */
    const char *closed_unwatched; /* why not (closed_files.h), with the bound on; NULL */
};

/* An interface whose queue put the command's packets behind the foreground's (net_queue.h). */
struct idle_link_figures {
    const char *name;
    uint64_t rate_bps;
};

/* The network: the command's sockets' class, its queues, its receive side (net_class.h,
 * net_queue.h, net_receive.h). */
struct idle_network_figures {
    bool classified;
    const char *why;            /* why the sockets were not classified */
    const struct idle_link_figures *links;
    size_t nlinks;
    const char *left_alone;     /* interfaces left alone, and why ("" if none) */
    uint64_t capacity_bps;      /* what the interfaces can receive, all together */
    unsigned clamps, holds;
    uint64_t clamped_ns, held_ns;
};

/* What became of the command's changes under --isolate (isolation.h). */
enum idle_outcome {
    ISOLATION_UNCHANGED,   /* the command changed nothing */
    ISOLATION_COMMITTED,
    ISOLATION_DISCARDED,   /* --commit never, or the answer to --commit ask was no */
    ISOLATION_CONFLICT,    /* others changed what it read or wrote: nothing applied */
    ISOLATION_INCOMPLETE,  /* the commit failed part-way: the journal finishes it later */
};

struct idle_isolation_figures {
    const char *dirs[IDLE_MAX_ISOLATE];
    size_t ndirs;
    enum idle_outcome outcome;
    size_t changes;
    bool read_set_lost;         /* then every change by others in the directories conflicts */
    char *const *conflicts;     /* absolute paths */
    size_t nconflicts;
};

#endif
