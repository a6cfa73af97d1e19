/* The memory control of speculation (Fraser & Chang 2003 §6), its mechanism: every interval
 * it reads what the kernel counts for the program's memory (refaults, limit hits, pressure) and
 * what the statistics slot counts for speculation (prefetches served, pages brought in), hands
 * the interval's added and removed stalls to the cost-benefit arithmetic of
 * policy/memory_control.h, and stops speculation when that says so: the copy ends and its
 * memory is given back, no copy is made, until the control allows it again.
 *
 * Both the program (at its stalls) and its copy (before each prefetch, and on a timer, so a
 * parked copy too) ask; whichever reaches an interval's end first ends it, with the state in
 * the control region they share. A copy killed while it ends one leaves the lock to the next
 * asker, never held for good. */
#ifndef SPECX_COPY_MEMORY_WATCH_H
#define SPECX_COPY_MEMORY_WATCH_H

#include <stdbool.h>
#include <stdint.h>

/* Length of an interval. The longest the control takes to see harm; reading the counters
 * costs tens of microseconds per interval. */
#define SPECX_MEMORY_INTERVAL_NS (500ull * 1000000ull)

struct specx_memory_watch;

/* Program side, when its control region is made: finds the memory cgroup whose limit bounds
 * the program (memcg.h), once, so that its copies inherit it: in a copy each open of the walk
 * up the hierarchy would be a sandbox trap (sandbox_open_trap.h). */
void specx_memory_watch_find_group(struct specx_memory_watch *w);

/* Whether speculation may run now, ending the current interval first if it is over. True
 * without a control region or with the control off (--no-memory-control). */
bool specx_memory_watch(void);

/* Whether the control has stopped speculation, as last decided (a flag: nothing is read). For
 * the program's stalls, where a file read would delay the clone (and, the program's own read
 * arriving meanwhile, cancel it). */
bool specx_memory_stopped(void);

/* The copy, before it is sealed: a timer that notes the copy's private memory four times an
 * interval and, with the control on, asks specx_memory_watch and ends the copy, its memory
 * given back, when speculation is stopped. */
void specx_memory_watch_arm(void);

/* The copy's memory was given back: records how long after harm was first seen. */
void specx_memory_given_back(void);

#endif
