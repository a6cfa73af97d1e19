/* Ending groups for good (cgroup_sweep.c): what a command does with its groups when it ends,
 * and what the next run does with groups left by a run that was killed outright. Apart from
 * cgroup.h because ending a group thaws it first (freezer.h), which builds on cgroup.h. */
#ifndef SPECX_CGROUP_SWEEP_H
#define SPECX_CGROUP_SWEEP_H

#include "kernel/cgroup.h"

/* SIGKILL to every process listed in CG itself. */
void specx_cgroup_kill_all(const struct specx_cgroup *cg);

/* Ends CG for good: kills what runs in it and below, thaws it so that the killed can die,
 * waits up to TIMEOUT_MS for it to empty and removes it, its children first. */
void specx_cgroup_destroy(const struct specx_cgroup *cg, int timeout_ms);

/* Holds CG for the run that made it, for as long as the returned descriptor is open (a lock on
 * its directory): specx_cgroup_sweep_stale then leaves it alone whatever the run's pid looks like
 * from the sweeper's pid namespace. -1 with errno. */
int specx_cgroup_hold(const struct specx_cgroup *cg);

/* Destroys the groups named PREFIX-PID, where PID no longer lives and no process holds a lock
 * (flock) on the group's directory, below where CONTROLLER's groups are made
 * (specx_cgroup_parent_for): what a run killed outright left behind. Calls REMOVING (if not
 * NULL) with each one's directory first, to say so. */
void specx_cgroup_sweep_stale(const char *controller, const char *prefix, int timeout_ms,
                              void (*removing)(const char *dir));

#endif
