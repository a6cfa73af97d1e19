/* The data files the workload programs read (written by `specx bench`'s generators) keep
 * their header fields as little-endian 64-bit integers, whatever the host's byte order. */
#ifndef SPECX_BENCH_LE64_H
#define SPECX_BENCH_LE64_H

#include <stdint.h>

static inline uint64_t load_le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

#endif
