/* See kernel_limits.h. */
#include "kernel/kernel_limits.h"

#include "kernel/kfile.h"

#include <stdio.h>
#include <sys/sysmacros.h>

/* Reads the number in file PATH (formatted with the device's numbers); 0 if none. The
 * speculative process may be a clone of one thread of several: snprintf of integers into a
 * buffer takes no lock and allocates nothing, so no lock a lost thread held can stop it. */
static uint64_t number_in(const char *format, dev_t dev)
{
    char path[128];
    snprintf(path, sizeof path, format, major(dev), minor(dev));
    uint64_t v;
    return specx_kfile_read_u64(path, &v) ? v : 0;
}

uint64_t specx_readahead_bytes(dev_t dev)
{
    uint64_t kb = number_in("/sys/class/bdi/%u:%u/read_ahead_kb", dev);
    if (!kb)
        kb = number_in("/sys/dev/block/%u:%u/../queue/read_ahead_kb", dev);
    return kb * 1024;
}
