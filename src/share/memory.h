/* A job's memory between turns (Suh et al. 2001 §2-3): what of it is swapped out, bringing it
 * back in before its turn, and letting go of it after. */
#ifndef SHARE_MEMORY_H
#define SHARE_MEMORY_H

#include <stdint.h>

#include "share/job.h"

/* The job's processes, at most SPECX_CGROUP_PROCS_MAX into PIDS: those in its memory group,
 * or in the groups below it (tasks_below). Returns how many, or -1. */
long share_memory_processes(const struct share_job *j, pid_t *pids);

/* Bytes of the job's private anonymous memory that are swapped out now (its page table,
 * /proc/PID/pagemap). */
uint64_t share_memory_swapped(const struct share_job *j);

/* A prefetch reads, and makes room by writing, this much at a time, each chunk's I/O waited
 * for before the next is issued. The idle I/O class puts the prefetch behind the running
 * job's faults only while its requests wait in the device's own queue: a loop device takes up
 * to its queue's depth at once and hands them to the file behind it, where (slowfs, like a
 * disk's own queue) they are served in order of arrival, and a fault that came later waited
 * behind a whole job's memory. In chunks, it waits behind one at most. */
#define SHARE_PREFETCH_CHUNK (1ull << 20)

/* Asks the kernel to read the job's swapped-out memory back in, in the order of its swap
 * slots, at most MAX_BYTES of it (process_madvise MADV_WILLNEED; into the swap cache the job's
 * faults then find), a chunk at a time, and returns once the reads have arrived, with the
 * bytes asked for. */
uint64_t share_memory_prefetch(struct share_job *j, uint64_t max_bytes);

/* Bytes of what the prefetches asked for since the job's last turn ended that are still not
 * mapped in it: its turn never touched them (the first page of each range counts as touched:
 * the prefetch reads a byte of it to know the range has arrived). Forgets what was asked for.
 * Called when a turn ends, and when the job ends (there to forget). */
uint64_t share_memory_unused(struct share_job *j);

/* Memory free for a prefetch now: below the limit of GROUP (NULL or no limit: the machine's
 * MemAvailable), less a margin of a sixteenth (at least 4 MiB) for the running job to grow
 * into. A prefetch never takes more: what it brings in must not push the running job's pages
 * out, nor leave the kernel to reclaim in a hurry — a job was OOM-killed when it did (a
 * prefetch during the turn, every page of the group active; docs/design/share.md). */
uint64_t share_memory_room(const struct specx_cgroup *group);

/* After the job's turn: marks its resident private anonymous memory cold (MADV_COLD: first
 * to be reclaimed) or pages it out now (MADV_PAGEOUT), so that the next job's memory evicts it
 * and nothing else; at most MAX_BYTES of it (UINT64_MAX: all). */
void share_memory_release(const struct share_job *j, int advice, uint64_t max_bytes);

#endif
