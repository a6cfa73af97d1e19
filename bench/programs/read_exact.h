/* Reading a whole range of a data file, as the workload programs do: pread until it is all
 * there (restarting after a signal), in calls of at most CHUNK bytes (0: no limit) so that a
 * program's read sizes are its own choice, and dying with one line if the file is short. */
#ifndef SPECX_BENCH_READ_EXACT_H
#define SPECX_BENCH_READ_EXACT_H

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "common/util.h"

static inline void read_exact(int fd, void *buf, size_t len, off_t off, size_t chunk,
                              const char *path)
{
    for (size_t done = 0; done < len;) {
        size_t want = chunk && len - done > chunk ? chunk : len - done;
        ssize_t n = pread(fd, (char *)buf + done, want, off + (off_t)done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            specx_die(1, "%s: read failed at offset %jd: %s", path,
                      (intmax_t)(off + (off_t)done), strerror(errno));
        if (n == 0)
            specx_die(1, "%s: truncated at offset %jd", path, (intmax_t)(off + (off_t)done));
        done += (size_t)n;
    }
}

#endif
