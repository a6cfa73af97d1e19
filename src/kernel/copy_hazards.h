/* What the kernel says about a process that makes any copy of it unsafe, whoever makes the
 * copy (the preload runtime from inside, the supervisor from outside): docs/design/sandbox.md,
 * "Where specx stands aside".
 * - A seccomp filter or strict mode: the copy's birth and sealing are system calls the
 *   program's own list may refuse, by killing the program (strict mode, a KILL action) or by
 *   running its SIGSYS handler, and a filter the runtime does not know of may refuse the
 *   runtime's own calls at every read.
 * - memory.oom.group set on the program's memory cgroup or one above it (cgroup v2): the OOM
 *   killer then kills the whole group when it chooses any task in it, the copy included.
 * - A pids.max that a copy brings within reach: the copy is a task of the program's group,
 *   and the program's next fork could fail because of it. */
#ifndef SPECX_KERNEL_COPY_HAZARDS_H
#define SPECX_KERNEL_COPY_HAZARDS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "kernel/cgroup.h"

enum specx_hazard {
    SPECX_HAZARD_NONE,
    SPECX_HAZARD_SECCOMP,   /* a seccomp filter or strict mode */
    SPECX_HAZARD_UNKNOWN,   /* the thread's state cannot be read (it has ended, or no /proc) */
    SPECX_HAZARD_OOM_GROUP, /* memory.oom.group is set */
    SPECX_HAZARD_PIDS_MAX,  /* a copy would leave too little room below pids.max */
};

/* Tasks a group must keep free below its pids.max for a copy to be made: an eighth of the
 * limit, and at least this many (the program's own forks and threads may come while a copy
 * lives, and nothing tells how many). */
#define SPECX_PIDS_ROOM_MIN 8u

/* --- pure (unit-tested) --- */

/* The Seccomp field of TEXT, a /proc/PID/status: 0 none, 1 strict, 2 filter; -1 if TEXT has
 * none (unknown: a caller stands aside). */
int specx_status_seccomp(const char *text);

/* Whether a group with CURRENT tasks and a limit of MAX (UINT64_MAX: "max", none) has too
 * little room for a copy (SPECX_PIDS_ROOM_MIN). */
bool specx_pids_too_close(uint64_t current, uint64_t max);

/* Whether TEXT, a memory.oom.group, says the group is killed as one. */
bool specx_oom_group_set(const char *text);

/* --- group files (unit-tested on a tree laid out as cgroupfs lays out its files) --- */

/* Whether CG or a group above it sets memory.oom.group (v2 only: v1 has no such file; the
 * OOM killer kills the highest such group that holds its victim). */
bool specx_oom_group_above(struct specx_cgroup cg);

/* Whether CG or a group above it (a limit binds every group below it) is too close to its
 * pids.max for one task more (specx_pids_too_close). */
bool specx_pids_short_above(struct specx_cgroup cg);

/* --- the live system --- */

/* The seccomp mode of thread TID of process PID (TID 0: the calling thread): as
 * specx_status_seccomp, -1 if its status cannot be read. */
int specx_seccomp_mode(pid_t pid, pid_t tid);

/* The groups whose files (and those of the groups above them) say whether a copy may be made:
 * PID's (0: this process's) memory cgroup on v2 and its pids cgroup, where there are such. */
struct specx_copy_groups {
    bool memory_v2, pids;
    struct specx_cgroup memory_group, pids_group;
};

/* Finds them: reads /proc/self/mounts and PID's cgroup file, ≈ 50 µs each, so the runtime does
 * it once per process (a process that changes groups later is rare). */
void specx_copy_groups_find(pid_t pid, struct specx_copy_groups *groups);

/* SPECX_HAZARD_SECCOMP if thread TID of PID (0: the calling thread) has a filter or strict
 * mode, SPECX_HAZARD_UNKNOWN if its state cannot be read (no copy either way); else SPECX_HAZARD_OOM_GROUP or SPECX_HAZARD_PIDS_MAX if GROUPS, or groups above them,
 * make a copy unsafe now; else SPECX_HAZARD_NONE. A group file that cannot be read says
 * nothing (no such controller there, or no limit). */
enum specx_hazard specx_copy_hazard(const struct specx_copy_groups *groups, pid_t pid,
                                    pid_t tid);

#endif
