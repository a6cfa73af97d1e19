/* What specx run sees from outside a command the preload runtime cannot enter (a static or Go
 * program): its threads blocked in reads of regular files, sampled every millisecond. The
 * report then says how much there was to hide, where it cannot say what was hidden. */
#ifndef SPECX_RUN_SAMPLER_H
#define SPECX_RUN_SAMPLER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* The sampling period. A read shorter than it may be missed: the figures are lower bounds for
 * a fast device, and within a period per read for a slow one. */
#define RUN_SAMPLE_PERIOD_NS 1000000ull

struct outside_view {
    bool sampled;           /* a sampler ran */
    uint64_t samples;
    uint64_t blocked_reads; /* times a thread was found blocked in a read it was not in before */
    uint64_t blocked_ns;    /* sampled time threads spent blocked in such reads, summed */
};

struct run_sampler {
    pid_t pid;
    pthread_t thread;
    bool stop;
    struct outside_view view;
};

/* Starts sampling process PID (its own threads, not its children) at the lowest CPU
 * priority; false (nothing started) if no thread could be made. */
bool run_sampler_start(struct run_sampler *s, pid_t pid);

/* Stops the sampler (after the command ended) and returns what it saw. */
struct outside_view run_sampler_stop(struct run_sampler *s);

#endif
