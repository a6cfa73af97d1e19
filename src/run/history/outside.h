/* What a program the preload runtime cannot enter (static, Go: the supervisor serves those,
 * docs/design/supervisor.md) reads, seen from outside: each sample of its threads blocked in
 * reads of regular files (kernel/blocked_reads.h) is noted in the trace as the runtime notes
 * a miss, so that its history is kept and replayed as any other's. A sampler sees only the
 * reads that last long enough to be seen, and not their length: a range of one readahead
 * window from where the thread waits is noted. */
#ifndef SPECX_HISTORY_OUTSIDE_H
#define SPECX_HISTORY_OUTSIDE_H

#include <sys/types.h>

#include "common/history_trace.h"
#include "kernel/blocked_reads.h"

#define OUTSIDE_THREADS 64
#define OUTSIDE_FILES 1024 /* files noted, by dev and ino (open addressing) */

struct history_outside {
    pid_t pid;
    struct specx_blocked_read last[OUTSIDE_THREADS];
    int nlast;
    uint64_t noted[OUTSIDE_FILES][2];
};

/* Notes in T what the threads of O->pid are blocked reading now, each wait once. */
void history_outside_sample(struct history_outside *o, struct specx_trace_header *t);

#endif
