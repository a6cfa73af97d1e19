/* A speculative process that has stopped reaching I/O ends itself (Fraser & Chang 2003
 * §4.1.3: speculation may use only what the program leaves idle). A copy exists to turn the
 * program's coming reads and faults into prefetches; one that runs the program's code without
 * reaching any (a phase of pure computation, or computation over memory, such as a relaxation
 * over a swapped-out grid) prefetches nothing, yet its copy-on-write and swapped-in pages are
 * charged to the program's memory cgroup. Measured: the `swap` benchmark (demo scale, a 64 MiB
 * grid in a 16 MiB group) swapped 2.4-3.2 times the pages of a run without speculation with
 * such copies, and ran 1.11x cold. The program's next stall makes a new copy, so ending one
 * costs at most a refork. */
#ifndef SPECX_COPY_IDLE_H
#define SPECX_COPY_IDLE_H

#include <stdint.h>

#include "run/runtime/core/runtime.h"
#include "common/stats_layout.h"

/* The CPU time a copy may spend between two moments of I/O activity (SPECX_COPY_IDLE_CPU_NS,
 * stats_layout.h, where the report finds it) is checked in ticks of half of it, so the limit
 * is met within 50-100 ms of CPU time. A copy parked at its horizon or blocked on a read uses
 * none. */
#define SPECX_COPY_IDLE_TICKS 2u
#define SPECX_COPY_IDLE_TICK_NS (SPECX_COPY_IDLE_CPU_NS / SPECX_COPY_IDLE_TICKS)

/* A copy of one thread of a multi-threaded program may wait for ever: on a lock that a thread
 * it does not have held at the clone (an allocator's arena, a stdio stream, the program's
 * own), or for work only such a thread would hand it. Waiting takes no CPU time, so the wall
 * clock bounds it too: a copy that reaches no I/O for SPECX_COPY_STUCK_NS (stats_layout.h)
 * while not parked at its horizon ends itself, checked in ticks of half of it. One that only
 * sleeps as its program does ends too; the program's next stall makes a new one. */
#define SPECX_COPY_STUCK_TICKS 2u
#define SPECX_COPY_STUCK_TICK_NS (SPECX_COPY_STUCK_NS / SPECX_COPY_STUCK_TICKS)

/* In the copy: it reached I/O (an interposed read, a fault on a covered mapping, a swapped-out
 * page). Async-signal-safe. */
static inline void specx_copy_active(void)
{
    __atomic_fetch_add(&specx.copy_activity, 1, __ATOMIC_RELAXED);
}

/* In a new copy, before it is sealed: starts the CPU-time and wall clocks that end it when
 * idle or stuck. */
void specx_copy_idle_arm(void);

#endif
