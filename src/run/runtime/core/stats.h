/* This process's slot in the statistics file of `specx run` (stats_layout.h). */
#ifndef SPECX_STATS_H
#define SPECX_STATS_H

#include <sys/types.h>

#include "common/stats_layout.h"

/* Remembers the file named by SPECX_STATS (the program may change its environment later). */
void specx_stats_init(void);

/* Claims and fills a fresh slot for this process image (at start and in a forked child).
 * Without a statistics file, or when it is full, counts go to a private slot. */
struct specx_stats_slot *specx_stats_claim(void);

/* The same for process PID, child of PPID, with no system call but those that map the slot
 * (open, mmap, munmap, close) and no page-fault counts: for a process the runtime stands
 * aside for from its start (entry/process.c). */
struct specx_stats_slot *specx_stats_claim_for(pid_t pid, pid_t ppid);

/* Unmaps a slot inherited from the parent by fork (the child has its own). */
void specx_stats_release(struct specx_stats_slot *slot);

/* Records the end of this program image (exit, or just before exec). */
void specx_stats_finish(struct specx_stats_slot *slot);
/* An exec that failed: the image goes on. */
void specx_stats_resume(struct specx_stats_slot *slot);

#endif
