/* See start_read.h. */
#include "run/runtime/running/start_read.h"

#include <fcntl.h>

#include "run/runtime/policy/prefetch.h"
#include "kernel/raw.h"

void specx_start_read(int fd, uint64_t off, uint64_t len)
{
    for (uint64_t end = off + len; off < end;) {
        uint64_t n = specx_prefetch_call_len(off, end);
        specx_raw_fadvise(fd, (off_t)off, (off_t)n, POSIX_FADV_WILLNEED);
        off += n;
    }
}
