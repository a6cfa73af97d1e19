/* The background's unwritten data kept under a bound (dirty_policy.h says why and how far):
 * sampled from its memory group, the background held while above, and write-back of the
 * files it has open for writing started by a thread of the idle I/O class, whose requests
 * the device serves after everyone else's. */
#ifndef IDLE_DIRTY_BOUND_H
#define IDLE_DIRTY_BOUND_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "kernel/cgroup.h"
#include "idle/closed_files.h"
#include "idle/hold.h"
#include "idle/isolation.h"

struct idle_dirty {
    const struct specx_cgroup *mem; /* the background's memory group */
    struct idle_closed *closed;     /* the files it wrote and closed (the thread's) */
    const struct idle_isolation *isolation; /* NULL: no directory isolated */
    struct idle_hold *hold;
    uint64_t bound;                 /* bytes; 0: none */
    bool enabled, held;
    uint64_t due_ns;                /* the next sample, unless resting */
    /* Resting (dirty_policy.h): the next sample comes with the memory control's, or sooner
     * when WATCH_FD, an eventfd, says the group's memory use moved; -1 where none can be had
     * (CAN_WATCH false: v2, or the kernel refused one). */
    bool resting, can_watch;
    int watch_fd;
    uint64_t calm_since_ns;         /* little unwritten data since; 0: not now */
    /* The thread that starts write-back, woken through WAKE_FD (an eventfd) when a sample asks
     * for a pass over the files open for writing, and by closes while FLUSHING. */
    pthread_t thread;
    bool thread_started;
    int wake_fd;
    pthread_mutex_t lock;
    bool asked, flushing, quit;
    uint64_t passes;                /* write-back passes done */
    unsigned last_pass_files;       /* files the last one wrote back: open, or closed since */
    uint64_t closed_flushed;        /* closed files written back */
    uint64_t closed_at_pass;        /* closed_flushed at the last pass */
    uint64_t passes_at_hold;        /* passes when the hold began */
    /* What it did, for the report. */
    uint64_t peak_bytes, holds, held_ns, held_since_ns, files_flushed, samples;
    bool closed_watched;            /* closes were seen (else left to the flushers) */
    const char *closed_unwatched;   /* why not (closed_files.h), with the bound on */
    uint64_t closed_dropped;        /* closes seen but not kept (closed_files.h) */
};

/* Starts bounding the background in memory group MEM to BOUND bytes (0: only reports). CLOSED
 * tells which files it closed (its fd may be -1: then those are left to the flushers);
 * ISOLATION, where the data of files in isolated directories is. */
void idle_dirty_start(struct idle_dirty *d, const struct specx_cgroup *mem,
                      struct idle_closed *closed, const struct idle_isolation *isolation,
                      struct idle_hold *hold, uint64_t bound, uint64_t now_ns);

/* A sample, if one is due at NOW_NS (MEMORY_SAMPLED: the memory control sampled just now),
 * and what follows from it. */
void idle_dirty_tick(struct idle_dirty *d, uint64_t now_ns, bool memory_sampled);

/* When the next sample is due (CLOCK_MONOTONIC ns); UINT64_MAX while resting or stopped. */
uint64_t idle_dirty_due(const struct idle_dirty *d);

/* The descriptor to poll for while resting, or -1. */
int idle_dirty_fd(const struct idle_dirty *d);

/* Stops (the deadline, or the end): the background let go, the thread ended. */
void idle_dirty_stop(struct idle_dirty *d, uint64_t now_ns);

#endif
