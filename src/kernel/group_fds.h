/* The open descriptors of a cgroup's processes, for a supervisor that acts on a background's
 * files and connections from outside it (specx idle: the write-back of what it writes, the
 * windows of what it downloads). */
#ifndef SPECX_KERNEL_GROUP_FDS_H
#define SPECX_KERNEL_GROUP_FDS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "kernel/cgroup.h"

/* Called with the process, the descriptor's number and what it refers to (the link in
 * /proc/PID/fd: a path, "socket:[INODE]", "pipe:[INODE]"...). */
typedef void (*specx_fd_visit)(pid_t pid, int fd, const char *target, void *arg);

/* VISIT for every descriptor of every process of GROUP (up to 4096 processes); safe to call
 * from several threads at once. */
void specx_cgroup_each_fd(const struct specx_cgroup *group, specx_fd_visit visit, void *arg);

/* What /proc/PID/fdinfo/FD says of descriptor FD of process PID: the position of its open
 * file description and its open flags (O_ACCMODE, O_PATH...). False if FD is not open there. */
bool specx_fd_info(pid_t pid, int fd, uint64_t *pos, unsigned *flags);

#endif
