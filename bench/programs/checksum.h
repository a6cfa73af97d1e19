/* FNV-1a, 64-bit: the workload programs print a checksum of everything they read, so that two
 * runs (with and without specx) can be compared, and so that the data is really consumed. */
#ifndef SPECX_BENCH_CHECKSUM_H
#define SPECX_BENCH_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

#define CHECKSUM_INIT 0xcbf29ce484222325ULL

static inline uint64_t checksum_add(uint64_t sum, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++)
        sum = (sum ^ p[i]) * 0x100000001b3ULL;
    return sum;
}

#endif
