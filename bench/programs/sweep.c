/* sweep: a memory-hungry batch job for `specx bench share` (Suh et al. 2001's jobs: each needs
 * its working set in memory for the whole of its turn). It fills MIB MiB of anonymous memory
 * from SEED, then makes PASSES passes over it in order, each page read and written (so that a
 * page swapped out must be written back before its frame is reused), and prints a checksum:
 * the same output whatever the memory it ran in. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "common/util.h"

#define PAGE 4096u

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

int main(int argc, char **argv)
{
    specx_set_progname("sweep");
    uint64_t mib, passes, seed;
    if (argc != 4 || !specx_parse_u64(argv[1], 1, 1u << 20, &mib) ||
        !specx_parse_u64(argv[2], 1, 1000000, &passes) ||
        !specx_parse_u64(argv[3], 0, UINT64_MAX, &seed)) {
        fprintf(stderr, "Usage: sweep MIB PASSES SEED\n");
        return 2;
    }
    size_t len = (size_t)mib << 20, words = len / sizeof(uint64_t);
    uint64_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        specx_die(1, "cannot map %" PRIu64 " MiB", mib);
    for (size_t i = 0; i < words; i++)
        p[i] = mix(seed + i);
    uint64_t sum = 0;
    for (uint64_t pass = 0; pass < passes; pass++)
        for (size_t i = 0; i < words; i += PAGE / sizeof(uint64_t)) {
            /* A little work per page, as a real job's: the swap device is not all it waits for. */
            for (size_t k = 0; k < 64; k++)
                sum += mix(p[i + k] ^ pass);
            p[i] = mix(p[i] + sum);
        }
    printf("sweep %" PRIu64 " MiB x %" PRIu64 ": %016" PRIx64 "\n", mib, passes, sum);
    return 0;
}
