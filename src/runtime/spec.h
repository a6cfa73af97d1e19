/* The speculative process's life cycle, program side (Fraser & Chang 2003 §4.1, §4.1.2):
 * created at the first stall, re-created ("synchronized") when the program stalls on data it
 * failed to prefetch, killed with its program (exit, exec, second thread). */
#ifndef SPECX_SPEC_H
#define SPECX_SPEC_H

#include <stdbool.h>
#include <stdint.h>

/* The read the program is about to block on. */
struct specx_stall {
    int fd;
    uint64_t off, len; /* clamped to EOF */
};

/* Called at a stall, before the blocking read: starts the program's own read of the range,
 * then creates or synchronizes the speculative process. Returns true in the new speculative
 * process, which must treat the stalled read as a prefetch already issued. */
bool specx_spec_on_stall(const struct specx_stall *stall);

/* Called after the program mapped regular file fd at [addr, addr+len), a large data mapping
 * not all in memory (mapping_trigger.c): creates a speculative process unless one is running.
 * Returns true in the new speculative process. */
bool specx_spec_on_mapping(void *addr, int fd, uint64_t len);

/* Kills and reaps the speculative process, if any (exit, exec, threads). */
void specx_spec_stop(void);

/* Asks the kernel to start reading [off, off+len) of fd without waiting, in calls cut by
 * specx_prefetch_call_len (prefetch.h). */
void specx_start_read(int fd, uint64_t off, uint64_t len);

#endif
