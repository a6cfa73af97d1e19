/* The prefetches of specx share, in a thread of their own: bringing a job's memory back in
 * takes as long as the swap device needs (process_madvise blocks while the device's queue is
 * full), and the rotation must go on meanwhile — thaw the next job at the switch, end turns on
 * time, relay output. A prefetch for a job whose turn is still to come runs at idle I/O
 * priority: its reads yield to the running job's own page faults (Suh et al. §3: prefetching
 * must not slow the current job). */
#ifndef SHARE_PREFETCHER_H
#define SHARE_PREFETCHER_H

#include <stdbool.h>
#include <stdint.h>

#include "share/job.h"

/* Starts the thread. -1 with errno. */
int share_prefetcher_start(void);

#define SHARE_EVICT_MAX 64

/* A prefetch: JOB's swapped-out memory brought in (memory.h), then with FILES_CHARGED_TO its
 * file pages evicted since its last turn (files.h; read by a helper in that group), no more of
 * them than there is room for below ROOM_OF's limit (NULL: the machine's available memory)
 * once TURN's own swapped-out memory is back in too. When the room is short, memory is
 * reclaimed from the frozen jobs in EVICT first, the one whose turn is furthest first, until
 * there is room: the paper's S_PF
 * is bounded by the memory left, and the kernel must never have to find room while the
 * running job faults — a group's limit reclaims from every job in it in proportion to its
 * size, the running one too, not from the least recently used. */
struct share_prefetch_request {
    struct share_job *job;
    const struct share_job *turn; /* the job whose turn it is (JOB itself at the switch) */
    const struct specx_cgroup *room_of;
    const struct specx_cgroup *files_charged_to; /* NULL: no file pages */
    struct share_job *evict[SHARE_EVICT_MAX];
    size_t nevict;
};

/* Asks for a prefetch. A request not yet begun is replaced by a newer one. */
void share_prefetcher_request(const struct share_prefetch_request *r);

/* A finished prefetch, if there is one not collected yet: its job, the bytes it asked for
 * (FILE_BYTES of them of files), when it began (specx_now_ns) and how long it took until its
 * reads had arrived, ROOM_NS of it making room. The thread begins no other prefetch until
 * this one is collected. */
struct share_prefetch_done {
    struct share_job *job;
    uint64_t bytes, file_bytes, start_ns, ns, room_ns;
};
bool share_prefetcher_collect(struct share_prefetch_done *done);

/* True while a prefetch is asked for, under way, or finished and not collected: the caller
 * should look again soon. */
bool share_prefetcher_busy(void);

/* B of Eq. 11, bytes per second, after the finished prefetch D (BANDWIDTH: the estimate so
 * far, 0 for none; D too small to say anything leaves it). B is measured to the end of the
 * prefetch, the making of room included: that is the lead the next one needs. */
double share_bandwidth_update(double bandwidth, const struct share_prefetch_done *d);

#endif
