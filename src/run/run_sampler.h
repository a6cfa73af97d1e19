/* What specx run sees from outside a command the preload runtime cannot enter (a static or Go
 * program): its threads blocked in reads of regular files, sampled every millisecond. The
 * report then says how much there was to hide, where it cannot say what was hidden. */
#ifndef SPECX_RUN_SAMPLER_H
#define SPECX_RUN_SAMPLER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "kernel/blocked_reads.h"
#include "run/figures.h"

/* What a supervisor (src/run/supervisor) does with the samples: the sampler is its trigger. */
struct sampler_hooks {
    void *ctx;
    /* Waits until DEADLINE (CLOCK_MONOTONIC), doing its own work meanwhile. */
    void (*wait_until)(void *ctx, const struct timespec *deadline);
    /* Sees each sample: the N threads blocked now, FRESH[i] if R[i] is a read its thread was
     * not in at the sample before. */
    void (*sampled)(void *ctx, const struct specx_blocked_read *r, const bool *fresh, int n);
    /* Sampling is over (the command ended, or the sampler was stopped). */
    void (*ended)(void *ctx);
};

struct run_sampler {
    pid_t pid;
    const struct sampler_hooks *hooks; /* NULL: only watch */
    pthread_t thread;
    bool stop;
    pthread_mutex_t lock; /* guards view */
    struct outside_view view;
};

/* Starts sampling process PID (its own threads, not its children) at the lowest CPU
 * priority, for HOOKS too if not NULL; false (nothing started) if no thread could be made. */
bool run_sampler_start(struct run_sampler *s, pid_t pid, const struct sampler_hooks *hooks);

/* Stops the sampler (after the command ended) and returns what it saw. A sampler stuck in a
 * file system that does not answer (blocked_reads.h) is waited for 1 s, then left behind: the
 * command has ended, and specx run ends soon after. */
struct outside_view run_sampler_stop(struct run_sampler *s);

#endif
