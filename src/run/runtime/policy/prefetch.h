/* The shape of speculative prefetches (Fraser & Chang 2003 §4.1.2), as pure arithmetic:
 * how far a read's prefetch reaches, and how a range is cut into prefetch calls. */
#ifndef SPECX_PREFETCH_H
#define SPECX_PREFETCH_H

#include <stdbool.h>
#include <stdint.h>

/* One POSIX_FADV_WILLNEED call reads at most the device's read_ahead_kb (128 KiB on FUSE) and
 * silently drops the rest (measured here: docs/design/read-path.md). */
#define SPECX_PREFETCH_CHUNK (128u * 1024u)

/* Where the prefetch for a read ending at `end` of a file of `size` bytes ends. A random read
 * is prefetched as it is: widening it costs the device transfer time and requests for data
 * nobody asked for (paper2003: 128 KiB for each 4 KiB SQLite page moved 32 times the data,
 * and a sixth of those prefetches were never read). A read that continues a sequential run
 * reaches on to the next chunk boundary: small stdio refills then make one request per
 * chunk, a small file read from its start is fetched whole, and a run's requests are
 * aligned. */
static inline uint64_t specx_prefetch_end(bool sequential, uint64_t end, uint64_t size)
{
    if (!sequential)
        return end;
    uint64_t chunk_end = (end + SPECX_PREFETCH_CHUNK - 1) / SPECX_PREFETCH_CHUNK *
                         SPECX_PREFETCH_CHUNK;
    return chunk_end < size ? chunk_end : size;
}

/* Length of the next prefetch call for [off, end): all of it if it fits one call, else up to
 * the next chunk boundary, so that the calls after the first are aligned device requests (on
 * paper2003 a 128 KiB request that starts 4 KiB past a stripe boundary needs three disks, an
 * aligned one two). */
static inline uint64_t specx_prefetch_call_len(uint64_t off, uint64_t end)
{
    if (end - off <= SPECX_PREFETCH_CHUNK)
        return end - off;
    return SPECX_PREFETCH_CHUNK - off % SPECX_PREFETCH_CHUNK;
}

#endif
