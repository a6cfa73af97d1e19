/* The background's control groups. One group per hierarchy that has something to offer: the
 * memory controller (the controller that shrinks it), the CPU controller (its idle setting), and
 * the v2 hierarchy's core files (its own PSI, and freezing) — all one group on a pure v2 system,
 * three on a machine whose memory and CPU controllers are on v1 (docs/design/idle.md). */
#ifndef IDLE_GROUPS_H
#define IDLE_GROUPS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "kernel/cgroup.h"

struct idle_group {
    struct specx_cgroup cg;
    bool made;
    int lock_fd;         /* its directory, locked while the run lives (see the sweep) */
};

struct idle_groups {
    struct idle_group mem, cpu, core, frz; /* those not made are not used */
    const struct specx_cgroup *psi;        /* the background's own PSI: NULL where v2 is absent */
    const struct specx_cgroup *freeze;     /* where it is frozen (v2 core, else v1 freezer) */
    const char *cpu_setting;               /* what the CPU group does, for the report */
};

/* Makes the groups (specx-idle-PID) below where each hierarchy lets us: the memory group
 * without a limit (idle memory is all memory until the foreground wants it back), the CPU group
 * idle. -1 with a one-line reason in err, and nothing left made. */
int idle_groups_make(struct idle_groups *g, char *err, size_t errsize);

/* Moves process PID (0: the caller) into every group. */
int idle_groups_attach(const struct idle_groups *g, pid_t pid);

/* The CPU group at normal weight: the deadline's promotion. */
void idle_groups_promote_cpu(const struct idle_groups *g);

/* Kills what is left in the groups, and removes them. Safe to call more than once. */
void idle_groups_destroy(struct idle_groups *g);

/* In the command's process, before exec: lets go of its copies of the groups' locks, which
 * must be held by specx idle alone (a command killed after specx idle would hold them on). */
void idle_groups_drop_locks(struct idle_groups *g);

/* Removes the groups of earlier runs of specx idle that were killed outright: those whose
 * pid looks dead here and whose lock no run holds (a run in another pid namespace may have a
 * pid that looks dead here). */
void idle_groups_sweep_stale(void);

#endif
