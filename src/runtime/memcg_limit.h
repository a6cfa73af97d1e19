/* The memory limit of the calling process's memory cgroup: what bounds the page cache an
 * out-of-core program and its speculative process share (fault_spec.c sizes its horizon
 * by it). System calls only: called in the sandboxed speculative process. */
#ifndef SPECX_MEMCG_LIMIT_H
#define SPECX_MEMCG_LIMIT_H

#include <stdint.h>

/* The limit in bytes of this process's own memory cgroup (cgroup v1 memory.limit_in_bytes
 * or v2 memory.max, at their usual mount points), or 0 when it has none. Limits of
 * ancestor groups are not looked at. */
uint64_t specx_memcg_limit(void);

#endif
