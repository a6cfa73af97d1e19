/* The background's unwritten data kept under a bound (dirty_policy.h says why and how far):
 * sampled from its memory group, the background held while above, and write-back of the
 * files it has open for writing started by a thread of the idle I/O class, whose requests
 * the device serves after everyone else's. */
#ifndef IDLE_DIRTY_BOUND_H
#define IDLE_DIRTY_BOUND_H

#include <stdbool.h>
#include <stdint.h>

#include "idle/figures.h"

struct specx_cgroup;
struct idle_closed;
struct idle_isolation;
struct idle_hold;

/* The bound's state and the thread that starts write-back (dirty_bound.c). */
struct idle_dirty;

/* A bound not started yet, or NULL if memory runs out. */
struct idle_dirty *idle_dirty_new(void);

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

/* What the report tells of it (figures.h), once stopped. */
struct idle_dirty_figures idle_dirty_figures(const struct idle_dirty *d);

#endif
