/* The speculative process's life cycle, program side (Fraser & Chang 2003 §4.1, §4.1.2):
 * created at the first stall, re-created ("synchronized") when the program stalls on data it
 * failed to prefetch, killed with its program (exit, exec). In a multi-threaded program the
 * thread that stalls manages the copy, one thread at a time; the copy is a clone of that
 * thread alone (docs/design/read-path.md). */
#ifndef SPECX_COPY_H
#define SPECX_COPY_H

#include <stdbool.h>
#include <stdint.h>

#include "common/stats_layout.h" /* enum specx_slot_flag */
#include "run/runtime/core/control.h" /* struct specx_log_view */

/* The read the program is about to block on. */
struct specx_stall {
    int fd;
    uint64_t off, len; /* clamped to EOF */
    /* What the prefetch log said of the running copy when the read path matched the read
     * against it (log_seen; core/control.h, specx_log_consume_at_stall): the stall's one
     * question to the log. */
    bool log_seen;
    struct specx_log_view log;
};

/* Called at a stall, before the blocking read: starts the program's own read of the range,
 * then creates or synchronizes the speculative process. Returns true in the new speculative
 * process, which must treat the stalled read as a prefetch already issued. */
bool specx_copy_on_stall(const struct specx_stall *stall);

/* Called at a read of data in memory that follows a wait for the kernel's readahead on the
 * same descriptor: a sequential reader the kernel keeps only a window or two ahead of, whose
 * next waits a copy can turn into prefetches of its own (docs/design/read-path.md). Creates or
 * synchronizes the speculative process as at a stall, but the program goes on at once (its
 * data is here). Returns true in the new speculative process, which performs the read. */
bool specx_copy_after_wait(const struct specx_stall *stall);

/* Called after the program mapped regular file fd at [addr, addr+len), a large data mapping
 * not all in memory (entry/mmap.c): creates a speculative process unless one is running.
 * Returns true in the new speculative process. */
bool specx_copy_on_mapping(void *addr, int fd, uint64_t len);

/* Ends the memory control's interval if it is over (running/memory_watch.h); returns whether the
 * control has stopped speculation, and then kills the copy, its memory given back. */
bool specx_copy_watch_memory(void);

/* Kills and reaps the speculative process, if any (exit, exec), once no other thread of the
 * program is managing it. */
void specx_copy_stop(void);

/* The program is about to install a seccomp filter or enter strict mode (entry/seccomp.c), or
 * started with one (inherited across exec): the runtime stands aside for the rest of this
 * process image and its children (docs/design/sandbox.md). Its copy is stopped now, while that
 * is still allowed; every wrapper then passes straight through and makes no call of the
 * runtime's own, and this returns once no other thread is in the runtime's calls. */
void specx_copy_stand_aside(void);

#endif
