/* memcg-reclaim: asks the kernel to reclaim BYTES from the memory group of process PID with
 * specx_memcg_reclaim (v2 memory.reclaim; v1 by lowering the hard limit for a moment), the call
 * `specx share` uses to make room for a prefetch. Prints the group's usage and limit before and
 * after as "usage BEFORE AFTER" and "limit BEFORE AFTER" lines, for tests/test_memcg.py.
 *
 * Usage: memcg-reclaim PID BYTES
 * Exit: 0 reclaimed, 1 the kernel could not reclaim them all (EAGAIN/EBUSY), 2 bad use. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/memcg.h"

int main(int argc, char **argv)
{
    char *pid_end = NULL, *bytes_end = NULL;
    long pid = argc == 3 ? strtol(argv[1], &pid_end, 10) : 0;
    uint64_t bytes = argc == 3 ? strtoull(argv[2], &bytes_end, 10) : 0;
    if (argc != 3 || pid <= 0 || *pid_end || *bytes_end) {
        fprintf(stderr, "Usage: memcg-reclaim PID BYTES\n");
        return 2;
    }
    struct specx_cgroup cg;
    if (specx_memcg_of((pid_t)pid, &cg) < 0) {
        fprintf(stderr, "memcg-reclaim: no memory group for process %ld: %s\n", pid,
                strerror(errno));
        return 2;
    }
    uint64_t usage = specx_memcg_usage(&cg), limit = specx_memcg_limit(&cg);
    int rc = specx_memcg_reclaim(&cg, bytes);
    int err = errno;
    printf("usage %" PRIu64 " %" PRIu64 "\n", usage, specx_memcg_usage(&cg));
    printf("limit %" PRIu64 " %" PRIu64 "\n", limit, specx_memcg_limit(&cg));
    if (rc < 0) {
        fprintf(stderr, "memcg-reclaim: %s\n", strerror(err));
        return 1;
    }
    return 0;
}
