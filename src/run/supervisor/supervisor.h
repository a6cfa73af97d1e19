/* specx run's second mechanism (docs/design/supervisor.md), for programs the preload runtime cannot
 * enter: statically linked, Go. Nothing is installed in the program. A sampler (the trigger)
 * sees a thread of it blocked in a read of a regular file; if no copy predicted that read, the
 * supervisor clones the thread as it comes back from the read (held_thread.h), seals the clone
 * (outside_copy.h) and serves its reads as prefetches (serve.h). The policies are the
 * runtime's (src/run/runtime/policy): horizon, trust and back-off, fed from outside. */
#ifndef SPECX_SUPERVISOR_H
#define SPECX_SUPERVISOR_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "kernel/blocked_reads.h"
#include "kernel/cgroup.h"
#include "run/supervisor/counts.h"
#include "run/supervisor/serve.h"

struct supervisor {
    pid_t pid;              /* the program */
    unsigned horizon;
    struct served_copy copy;/* copy.oc.pid == 0: none */
    uint64_t made_ino;      /* the file of the stall that made it (back-off is per file) */
    uint64_t program_read0; /* the program's rchar when it was made */
    struct specx_cgroup memcg; /* the program's memory cgroup */
    uint64_t memcg_limit;   /* its limit; 0: none */
    uint64_t last_call_ns;  /* the copy's last served call */
    bool parked;            /* a call of the copy waits for its horizon */
    struct seccomp_notif parked_req;
    struct supervisor_counts counts;
};

/* Prepares supervising PID with at most HORIZON prefetches outstanding. */
void supervisor_init(struct supervisor *s, pid_t pid, unsigned horizon);

/* The sampler's hooks (the trigger): they run on the sampler's thread, which is the tracer. */
void supervisor_wait_until(void *s, const struct timespec *deadline);
void supervisor_sampled(void *s, const struct specx_blocked_read *r, const bool *fresh, int n);
void supervisor_ended(void *s);

#endif
