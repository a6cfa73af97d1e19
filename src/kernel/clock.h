/* Monotonic nanoseconds: stall and synchronization times, prefetch ages (vDSO, no syscall). */
#ifndef SPECX_CLOCK_H
#define SPECX_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t specx_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
