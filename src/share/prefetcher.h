/* The prefetches of specx share, in a thread of their own: bringing a job's memory back in
 * takes as long as the swap device needs (process_madvise blocks while the device's queue is
 * full), and the rotation must go on meanwhile — thaw the next job at the switch, end turns on
 * time, relay output. The thread runs at idle I/O priority: its reads yield to the running
 * job's own page faults (Suh et al. §3: prefetching must not slow the current job). */
#ifndef SHARE_PREFETCHER_H
#define SHARE_PREFETCHER_H

#include <stdbool.h>
#include <stdint.h>

#include "job.h"

/* Starts the thread. -1 with errno. */
int share_prefetcher_start(void);

/* Asks for JOB's swapped-out memory to be brought in (memory.h). A request not yet
 * begun is replaced by a newer one. */
void share_prefetcher_request(struct share_job *job);

/* A finished prefetch, if there is one not collected yet: its job, the bytes it asked for and
 * how long the asking took. */
struct share_prefetch_done {
    struct share_job *job;
    uint64_t bytes, ns;
};
bool share_prefetcher_collect(struct share_prefetch_done *done);

#endif
