/* A limit the kernel's settings put on prefetching: a device's read-ahead size, which bounds
 * what one prefetch call reads. (The memory cgroup's limit is src/kernel/memcg.h's.)
 * System calls only (no stdio): called in the sandboxed speculative process. */
#ifndef SPECX_KERNEL_LIMITS_H
#define SPECX_KERNEL_LIMITS_H

#include <stdint.h>
#include <sys/types.h>

/* The read-ahead size in bytes of the device holding files of st_dev DEV
 * (/sys/class/bdi/MAJ:MIN/read_ahead_kb, or the queue of the disk of a partition): one
 * posix_fadvise(WILLNEED) call reads at most that much (docs/design/read-path.md). 0 if unknown. */
uint64_t specx_readahead_bytes(dev_t dev);

#endif
