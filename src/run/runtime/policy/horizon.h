/* The prefetch horizon (Fraser & Chang 2003 §4.1.3, after Patterson et al.): a speculative
 * process may not prefetch further ahead than this, in count and in time. Measured here: an
 * unbounded child queued the program's own reads behind thousands of prefetches, and idle page
 * cache is reclaimed within about 10 s, so a prefetch that lands too early is wasted. */
#ifndef SPECX_HORIZON_H
#define SPECX_HORIZON_H

#include <stdbool.h>
#include <stdint.h>

#include "common/run_env.h" /* SPECX_HORIZON_DEFAULT, SPECX_HORIZON_MAX */

/* A prefetch the program has not reached after this long is probably wasted already; do not
 * add more until it catches up (well under the ~10 s reclaim time measured here). */
#define SPECX_HORIZON_MAX_AGE_NS (3ull * 1000000000ull)

/* Should the speculative process stop and wait before issuing another prefetch, given how
 * many of its prefetches are outstanding (not yet reached by the program) and how old the
 * oldest of them is? */
static inline bool specx_horizon_should_park(uint32_t outstanding, uint64_t oldest_age_ns,
                                             uint32_t horizon)
{
    if (outstanding >= horizon)
        return true;
    return outstanding > 0 && oldest_age_ns > SPECX_HORIZON_MAX_AGE_NS;
}

/* In a memory cgroup the copy's prefetches are charged to the program's group: beyond a share
 * of its limit they push out each other and the program's own pages before the program
 * reaches them (measured: the swap benchmark in a 16 MiB group prefetched 1.2 GB for 70 MB of
 * data). Outstanding prefetches may cover at most an eighth of the limit. */
#define SPECX_HORIZON_MEMCG_SHARE 8u

/* The bytes that may be outstanding in a memory cgroup of LIMIT bytes; 0: no bound. */
static inline uint64_t specx_horizon_memcg_bytes(uint64_t limit)
{
    return limit / SPECX_HORIZON_MEMCG_SHARE;
}

/* Should the speculative process wait before prefetching NEXT more bytes, with OUTSTANDING
 * bytes not yet reached by the program and at most MAX allowed (0: no bound)? One prefetch
 * may always be outstanding, or one larger than MAX would stop the copy for good. */
static inline bool specx_horizon_over_bytes(uint64_t outstanding, uint64_t next, uint64_t max)
{
    return max && outstanding > 0 && outstanding + next > max;
}

#endif
