/* Whose turn is next (Suh et al. 2001 §2.2: a time-sharing scheduler knows the next job, which
 * is what makes prefetching it possible). Pure logic, unit-tested. */
#ifndef SHARE_ROTATION_H
#define SHARE_ROTATION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "share/options.h"

#define SHARE_MLFQ_LEVELS 4

struct share_slot {
    bool runnable; /* started and not exited */
    unsigned level; /* mlfq: 0 is the highest priority */
};

/* The job whose turn follows CURRENT's (SIZE_MAX: none yet): round robin takes the next
 * runnable job in order; mlfq the next runnable one in the highest level that has one, round
 * robin within it. CURRENT itself if it is the only candidate (its turn goes on); SIZE_MAX if
 * no job is runnable. */
size_t share_next_job(enum share_scheduler s, const struct share_slot *slots, size_t n,
                      size_t current);

/* The length of a turn at LEVEL: mlfq doubles the quantum per level it has dropped. */
uint64_t share_turn_ns(enum share_scheduler s, uint64_t quantum_ns, unsigned level);

/* mlfq: a job that used its whole turn drops a level (it is CPU-bound, in the paper's
 * terms, and long jobs yield to short ones); one that ended its turn early stays. */
void share_after_turn(enum share_scheduler s, struct share_slot *slot, bool used_whole_turn);

#endif
