/* Limits the kernel's settings put on page-fault speculation (fault_spec.c): the memory
 * cgroup's limit, which bounds the page cache an out-of-core program and its speculative
 * process share, and a device's read-ahead size, which bounds what one prefetch call reads.
 * System calls only (no stdio): called in the sandboxed speculative process. */
#ifndef SPECX_KERNEL_LIMITS_H
#define SPECX_KERNEL_LIMITS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* The memory cgroup's path in BUF, the text of /proc/self/cgroup (cut into lines in place):
 * the v1 line naming the memory controller ("4:cpu,memory:/a/b", *V1 true), else the v2 line
 * ("0::/a/b", *V1 false). Points into BUF; NULL if there is none. */
const char *specx_memory_cgroup(char *buf, bool *v1);

/* The limit in bytes of this process's own memory cgroup (cgroup v1 memory.limit_in_bytes
 * or v2 memory.max, at their usual mount points; the group found by specx_memory_cgroup),
 * or 0 when it has none. Limits of ancestor groups are not looked at. */
uint64_t specx_memcg_limit(void);

/* The read-ahead size in bytes of the device holding files of st_dev DEV
 * (/sys/class/bdi/MAJ:MIN/read_ahead_kb, or the queue of the disk of a partition): one
 * posix_fadvise(WILLNEED) call reads at most that much (DESIGN-NOTES §4). 0 if unknown. */
uint64_t specx_readahead_bytes(dev_t dev);

#endif
