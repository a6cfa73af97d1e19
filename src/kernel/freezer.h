/* The cgroup freezer: stops every task of a group where it is, invisibly to the tasks (unlike
 * SIGSTOP, no parent sees a stopped child and no signal is delivered), and lets them go on.
 * v1: freezer.state (FROZEN / THAWED; FREEZING while in transition); v2: cgroup.freeze and the
 * "frozen" key of cgroup.events. */
#ifndef SPECX_KERNEL_FREEZER_H
#define SPECX_KERNEL_FREEZER_H

#include "kernel/cgroup.h"

#include <stdbool.h>

/* Asks the kernel to freeze (FROZEN true) or thaw CG and everything below it. Returns at once:
 * freezing completes when every task has reached a safe point (specx_freezer_wait). */
int specx_freezer_set(const struct specx_cgroup *cg, bool frozen);

/* True if CG is completely frozen now (not merely freezing). */
bool specx_freezer_is_frozen(const struct specx_cgroup *cg);

/* Waits up to TIMEOUT_MS for CG to reach the state FROZEN asked for. 0, or -1 with ETIMEDOUT:
 * a task in an uninterruptible sleep (e.g. waiting on a FUSE server) cannot freeze until its
 * wait ends. */
int specx_freezer_wait(const struct specx_cgroup *cg, bool frozen, int timeout_ms);

#endif
