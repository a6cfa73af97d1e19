/* Control groups on cgroup v1 (one hierarchy per controller, as on the development machines,
 * where memory and freezer are v1) and v2 (one unified hierarchy, as on most users' systems).
 * The one reader of cgroupfs for every part of specx: the runtime (its memory cgroup's limit),
 * `specx share` (a group per job, freezing) and `specx idle` (the background's groups).
 * docs/design/kernel.md says which files are used on which version. */
#ifndef SPECX_KERNEL_CGROUP_H
#define SPECX_KERNEL_CGROUP_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum specx_cg_version { SPECX_CG_V1 = 1, SPECX_CG_V2 = 2 };

/* The "controller" that names the v2 hierarchy itself, for its core files (PSI, cgroup.freeze),
 * which exist in every v2 group even where the real controllers are on v1. */
#define SPECX_CG_CORE ""

/* One group: its hierarchy's version and its directory in cgroupfs. */
struct specx_cgroup {
    enum specx_cg_version version;
    char dir[PATH_MAX];
};

/* --- pure parsers (unit-tested) --- */

/* The path of the group that owns CONTROLLER in BUF, the text of /proc/PID/cgroup (cut into
 * lines in place): the v1 line naming CONTROLLER ("4:cpu,memory:/a/b", *V1 true), else the
 * v2 line ("0::/a/b", *V1 false). Points into BUF; NULL if there is none. */
const char *specx_cgroup_path_in(char *buf, const char *controller, bool *v1);

/* The mount point of the hierarchy for CONTROLLER in BUF, the text of /proc/self/mounts (cut
 * in place): a "cgroup" mount with CONTROLLER among its options (*V1 true), else the "cgroup2"
 * mount (*V1 false). Points into BUF; NULL if neither. */
const char *specx_cgroup_mount_in(char *buf, const char *controller, bool *v1);

/* --- the live system --- */

/* Where the hierarchy that has CONTROLLER is mounted, and PID's group in it. */
struct specx_cgroup_where {
    enum specx_cg_version version;
    char mount[PATH_MAX];
    char path[PATH_MAX]; /* from the hierarchy's root: "/" or "/a/b" */
};

/* The hierarchy that has CONTROLLER and PID's (0: this process) group in it, as
 * specx_cgroup_of finds them. 0, or -1 with errno (ENOENT: no such hierarchy). */
int specx_cgroup_where(pid_t pid, const char *controller, struct specx_cgroup_where *where);

/* The group PID (0: this process) belongs to in the hierarchy that has CONTROLLER ("memory",
 * "freezer", "cpu", "io"/"blkio", ...). On v2, CONTROLLER need not be enabled for the group
 * (freezing and PSI are core v2 files). 0, or -1 with errno (ENOENT: no such hierarchy). */
int specx_cgroup_of(pid_t pid, const char *controller, struct specx_cgroup *cg);

/* CG's parent group in *PARENT (may be CG itself); false if CG is its hierarchy's root. */
bool specx_cgroup_parent(const struct specx_cgroup *cg, struct specx_cgroup *parent);

/* Where new groups with CONTROLLER can be made: on v1 the caller's own group; on v2 the
 * nearest group from the caller's own up to the hierarchy's root below which CONTROLLER can
 * be enabled (v2 forbids controllers below a group that holds processes, which one's own group
 * usually does). 0, or -1 with errno (ENOTSUP: no group up to the root can). */
int specx_cgroup_parent_for(const char *controller, struct specx_cgroup *parent);

/* Makes the group PARENT/NAME (NAME may not contain '/'), enabling CONTROLLER (if not NULL)
 * for PARENT's children on v2. An existing group of that name is an error (EEXIST): a group
 * specx makes is its own. */
int specx_cgroup_make(const struct specx_cgroup *parent, const char *name,
                      const char *controller, struct specx_cgroup *child);

/* Moves process PID (every thread) into CG. */
int specx_cgroup_attach(const struct specx_cgroup *cg, pid_t pid);

/* Room callers give a list of one group's processes. */
#define SPECX_CGROUP_PROCS_MAX 4096

/* The processes in CG itself (cgroup.procs), at most MAX of them into PIDS. Returns how many, or
 * -1 with errno if the list cannot be read. */
long specx_cgroup_procs(const struct specx_cgroup *cg, pid_t *pids, size_t max);

/* The processes in the groups below CG, and in CG itself if SELF: at most MAX of them into
 * PIDS. A group that vanishes meanwhile counts none. Returns how many, or -1 with errno if CG
 * cannot be read. */
long specx_cgroup_procs_tree(const struct specx_cgroup *cg, bool self, pid_t *pids, size_t max);

/* The CPU time, in clock ticks, of /proc/PID/stat's TEXT: user and system time of the
 * process and of the children it has waited for (fields 14-17, counted after the command's
 * closing parenthesis: the command itself may hold spaces and parentheses). False if TEXT is
 * too short. */
bool specx_proc_stat_cpu_ticks(const char *text, uint64_t *ticks);

/* CPU time CG's tasks used, in ns. v2: cpu.stat usage_usec (a core file: every task that ran
 * in CG or below, those that ended too). v1 keeps such a count only in cpuacct's hierarchy,
 * so there: the processes in CG itself now and the children they have waited for, at the
 * clock tick's grain; a process reaped from outside CG no longer counts. */
uint64_t specx_cgroup_cpu_ns(const struct specx_cgroup *cg);

/* True if no process is left in CG or below it. */
bool specx_cgroup_is_empty(const struct specx_cgroup *cg);

/* Removes the empty group CG (rmdir). A group whose last process has just exited may still be
 * busy for a moment (the kernel frees the task's cgroup link after its parent reaps it): the
 * call retries for up to TIMEOUT_MS while rmdir says EBUSY. */
int specx_cgroup_remove(const struct specx_cgroup *cg, int timeout_ms);

/* Reads or writes FILE of CG (specx_kfile_read / specx_kfile_write). */
long specx_cgroup_read(const struct specx_cgroup *cg, const char *file, char *buf, size_t size);
int specx_cgroup_write(const struct specx_cgroup *cg, const char *file, const char *text);

/* FILE of CG as one number ("max" is UINT64_MAX), or KEY's value in FILE of "key value"
 * lines. False if it cannot be read. */
bool specx_cgroup_u64(const struct specx_cgroup *cg, const char *file, uint64_t *out);
bool specx_cgroup_key_u64(const struct specx_cgroup *cg, const char *file, const char *key,
                          uint64_t *out);

/* PATH = CG's directory + "/" + FILE; false (errno ENAMETOOLONG) if it does not fit. */
bool specx_cgroup_file(const struct specx_cgroup *cg, const char *file, char *path, size_t size);

#endif
