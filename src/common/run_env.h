/* What `specx run` (src/run/run.c) tells the preload runtime (src/run/runtime) through the
 * environment of the program it starts: the one place both sides take these names and limits
 * from, so that the command never reaches into the runtime's internal headers. */
#ifndef SPECX_RUN_ENV_H
#define SPECX_RUN_ENV_H

/* Path of the statistics file the runtime's processes count into (stats_layout.h). */
#define SPECX_STATS_ENV "SPECX_STATS"
/* "1": interpose and count, but never speculate (--no-spec; also a user's opt-out). */
#define SPECX_DISABLE_ENV "SPECX_DISABLE"
/* "1": the runtime reports speculation events on stderr (--verbose). */
#define SPECX_VERBOSE_ENV "SPECX_VERBOSE"
/* "1": no memory control: speculation is never stopped for its memory overhead
 * (--no-memory-control; docs/design/memory-control.md). */
#define SPECX_NO_MEMORY_CONTROL_ENV "SPECX_NO_MEMORY_CONTROL"
/* How a copy is made: "basic" or "fast" (--refork; docs/design/copies.md). */
#define SPECX_REFORK_ENV "SPECX_REFORK"
/* Prefetches a copy may have outstanding (--horizon), 1 to SPECX_HORIZON_MAX. */
#define SPECX_HORIZON_ENV "SPECX_HORIZON"
#define SPECX_HORIZON_DEFAULT 64u
#define SPECX_HORIZON_MAX 256u

#endif
