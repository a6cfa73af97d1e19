/* How the runtime starts a read without waiting for it: the copy's prefetches (its reads and
 * page faults turned into requests, Fraser & Chang 2003 §4.1.2) and the program's own read at
 * a stall, started before the clone so that the clone's cost hides in the disk's time. */
#ifndef SPECX_START_READ_H
#define SPECX_START_READ_H

#include <stdint.h>

/* Asks the kernel to start reading [off, off+len) of fd without waiting, in calls cut by
 * specx_prefetch_call_len (policy/prefetch.h): one WILLNEED call reads at most the device's
 * read-ahead size and drops the rest. */
void specx_start_read(int fd, uint64_t off, uint64_t len);

#endif
