/* Slurm's jobs on this node, as slurmd makes and removes their groups, for specx share
 * --follow-slurm. With proctrack/cgroup each job has a group below Slurm's root and each of its
 * steps one below that: v1 FREEZER/slurm[_NODE]/uid_U/job_J/step_S (slurmstepd itself in
 * job_J), v2 .../slurmstepd.scope/job_J/step_S/{slurm,user} (slurmstepd in slurm, the tasks in
 * user). Gang scheduling suspends a job by freezing each step (after a SIGTSTP); where jobs are
 * suspended by signals alone (another proctrack plugin), their processes are stopped (state
 * T). */
#ifndef SHARE_SLURM_H
#define SHARE_SLURM_H

#include <stdbool.h>

#include "kernel/cgroup.h"

struct share_slurm {
    /* ROOT given: that one root. Else the roots are looked for on every scan (slurmd makes
     * its root when it starts, which may be after us): v1 every "slurm" and "slurm_*" group
     * at the top of the freezer's hierarchy, v2 system.slice/slurmstepd.scope. */
    struct specx_cgroup top;
    bool root_given;
    int inotify; /* the groups watched for jobs made and removed */
};

/* Finds where Slurm's groups are (ROOT: that directory, NULL: this machine's hierarchies) and
 * watches them. -1 with a one-line reason in err. */
int share_slurm_open(struct share_slurm *s, const char *root, char *err, size_t errsize);
void share_slurm_close(struct share_slurm *s);

/* A descriptor that is readable when groups were made or removed under the roots. */
int share_slurm_fd(const struct share_slurm *s);

/* Calls FOUND with each job's group under the roots now (after reading what the descriptor
 * had to say, and watching the groups it has not watched yet). */
void share_slurm_scan(struct share_slurm *s, void (*found)(void *ctx, const struct specx_cgroup *job),
                      void *ctx);

/* Whether the job in group JOB is suspended: 1 if it has a step with processes and every such
 * step is frozen or asked to be (v1 freezer.state FREEZING or FROZEN, v2 cgroup.freeze 1), or
 * has its processes all stopped by a signal; 0 if one runs; -1 if no step has a process (the
 * job is starting or ending). */
int share_slurm_job_state(const struct specx_cgroup *job);

#endif
