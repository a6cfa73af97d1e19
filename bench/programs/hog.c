/* hog: a second, independent memory-hungry process for the out-of-core workloads' memory
 * cgroup (Fraser & Chang 2003 §6: "varying memory contention from concurrent processes").
 * It takes MIB MiB, touches every page for PERIOD_MS, lets it all go for PERIOD_MS, and so on
 * until it is killed: the memory left to the timed program and its copy changes under them. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "common/util.h"

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void sleep_ms(uint64_t ms)
{
    struct timespec left = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };
    while (nanosleep(&left, &left) < 0)
        ;
}

/* Holds LEN bytes for PERIOD_MS, touching every page again and again. */
static void hold(size_t len, uint64_t period_ms)
{
    unsigned char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                            -1, 0);
    if (p == MAP_FAILED)
        specx_die(1, "cannot map %zu bytes", len);
    for (uint64_t end = now_ms() + period_ms; now_ms() < end;) {
        for (size_t i = 0; i < len; i += 4096)
            p[i]++;
        sleep_ms(10);
    }
    munmap(p, len);
}

int main(int argc, char **argv)
{
    specx_set_progname("hog");
    uint64_t mib, period_ms;
    if (argc != 3 || !specx_parse_u64(argv[1], 1, 1u << 20, &mib) ||
        !specx_parse_u64(argv[2], 1, 3600000, &period_ms)) {
        fprintf(stderr, "Usage: hog MIB PERIOD_MS\n");
        return 2;
    }
    for (;;) {
        hold((size_t)mib << 20, period_ms);
        sleep_ms(period_ms);
    }
}
