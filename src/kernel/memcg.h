/* Memory cgroups, v1 and v2: limits, usage and the kernel's own memory accounting
 * (memory.stat's refault counters are the kernel's ghost buffer, fraser-chang-2003 §6), for the
 * runtime's budgets, the memory control of `specx run`, `specx share`'s job groups and
 * `specx idle`'s background group. The files differ by version; callers never name them. */
#ifndef SPECX_KERNEL_MEMCG_H
#define SPECX_KERNEL_MEMCG_H

#include "kernel/cgroup.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* The memory cgroup of PID (0: this process). 0, or -1 with errno. */
int specx_memcg_of(pid_t pid, struct specx_cgroup *cg);

/* The memory group whose limit bounds PID (0: this process): of its own group and those above
 * it, the one with a limit that leaves the least room (usage closest to limit); its own group
 * if none has a limit. 0, or -1 with errno. */
int specx_memcg_limiting(pid_t pid, struct specx_cgroup *cg);

/* CG's hard limit in bytes (v1 memory.limit_in_bytes, v2 memory.max), 0 for none. */
uint64_t specx_memcg_limit(const struct specx_cgroup *cg);

/* Sets CG's hard limit; 0 removes it. */
int specx_memcg_set_limit(const struct specx_cgroup *cg, uint64_t bytes);

/* Sets CG's throttling limit (v2 memory.high: above it the group reclaims, never OOMs); 0
 * removes it. v1 has none: -1 with ENOTSUP, and the caller lowers the hard limit instead. */
int specx_memcg_set_high(const struct specx_cgroup *cg, uint64_t bytes);

/* Asks the kernel to reclaim BYTES from CG now (v2 memory.reclaim; v1 by lowering its hard
 * limit for a moment). 0, or -1 with errno (EAGAIN/EBUSY: it could not reclaim them all). */
int specx_memcg_reclaim(const struct specx_cgroup *cg, uint64_t bytes);

/* CG's charged memory now and at its peak (v1 memory.usage_in_bytes / max_usage_in_bytes,
 * v2 memory.current / memory.peak). 0 if unreadable. */
/* v1: the swappiness the kernel's reclaim uses for the pages charged to CG itself
 * (memory.swappiness, 0-200; groups made below CG inherit it), or -1. v2 has none per group:
 * -1 with ENOTSUP from both. */
int specx_memcg_swappiness(const struct specx_cgroup *cg);
int specx_memcg_set_swappiness(const struct specx_cgroup *cg, int value);

uint64_t specx_memcg_usage(const struct specx_cgroup *cg);
uint64_t specx_memcg_peak(const struct specx_cgroup *cg);

/* Memory nobody uses: below CG's limit (limit - usage), or, if CG is NULL or has no limit,
 * the machine's available memory (MemAvailable: free pages and cache reclaim can drop at no
 * cost). *TOTAL (if not NULL) gets what that is out of: the limit, or MemAvailable too. */
uint64_t specx_memcg_free(const struct specx_cgroup *cg, uint64_t *total);

/* KEY of memory.stat, counting CG and its descendants (v1's "total_KEY" where it has one),
 * e.g. "workingset_refault_file", "pgmajfault", "file", "anon" (v1: "cache", "rss"). */
bool specx_memcg_stat(const struct specx_cgroup *cg, const char *key, uint64_t *value);

/* Bytes of CG's anonymous memory out on swap now, counting its descendants (v1 memory.stat
 * swap, v2 memory.swap.current). False where the kernel does not account swap per group
 * (v1 without swapaccount): then only the page tables tell. */
bool specx_memcg_swap(const struct specx_cgroup *cg, uint64_t *bytes);

/* Evicted pages read again (the kernel's shadow entries: workingset_refault_anon + _file) in
 * CG and its descendants, or machine-wide (/proc/vmstat) if CG is NULL. False if unreadable. */
bool specx_memcg_refaults(const struct specx_cgroup *cg, uint64_t *refaults);

/* CG's dirty page cache and what of it is being written back, in bytes, counting its
 * descendants (v1 dirty + writeback, v2 file_dirty + file_writeback), in *UNWRITTEN, and the
 * part being written back in *WRITEBACK. False if unreadable. */
bool specx_memcg_dirty(const struct specx_cgroup *cg, uint64_t *unwritten, uint64_t *writeback);

/* An eventfd (non-blocking, close-on-exec) that becomes readable when CG's memory use leaves
 * [BELOW, ABOVE] (BELOW 0: no lower edge): v1's usage thresholds (cgroup.event_control on
 * memory.usage_in_bytes), which the kernel checks as pages are charged and uncharged, every
 * 512 KiB or so. Closing it removes the thresholds. v2 has no such notification: -1 with
 * ENOTSUP, and the caller samples. */
int specx_memcg_usage_watch(const struct specx_cgroup *cg, uint64_t below, uint64_t above);

/* A descriptor (non-blocking, close-on-exec) that becomes readable when the OOM killer acts
 * on CG. v1: an eventfd on memory.oom_control, which the kernel signals when CG or a group
 * above it runs out of memory, just before the killer chooses (*ONLY_OOM true). v2: an inotify
 * watch of memory.events, modified after each kill in CG but also at its other events (limit
 * hits; the kernel sends at most one every 10 ms), so the caller compares
 * specx_memcg_oom_kills (*ONLY_OOM false). -1 with errno. */
int specx_memcg_oom_watch(const struct specx_cgroup *cg, bool *only_oom);

/* Reads a fired watch (specx_memcg_usage_watch, specx_memcg_oom_watch) empty, so that polling
 * it waits for the next event. */
void specx_memcg_watch_drain(int fd);

/* Pages the machine's own reclaim has scanned since boot (/proc/vmstat pgscan_kswapd,
 * pgscan_direct, pgscan_khugepaged). The kernel counts a memory cgroup's reclaim at its limit
 * only in that group's memory.stat, never here: this grows only when the machine itself runs
 * short, not when some other group is at its limit. False if unreadable. */
bool specx_memcg_machine_reclaim(uint64_t *scanned);

/* Memory events of CG: how often the OOM killer killed a task in it (v1 memory.oom_control
 * oom_kill, v2 memory.events oom_kill) and how often a charge hit the hard limit (v1
 * memory.failcnt, v2 memory.events max). False if unreadable. */
bool specx_memcg_oom_kills(const struct specx_cgroup *cg, uint64_t *kills);
bool specx_memcg_limit_hits(const struct specx_cgroup *cg, uint64_t *hits);

#endif
