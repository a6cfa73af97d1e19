/* The speculative process's sandbox (Fraser & Chang 2003, §4.1.1): whatever the speculative
 * copy of a program does, nobody outside it can tell. Entered once, in the speculative process,
 * right after it is created and before it runs any application code. */
#ifndef SPECX_SANDBOX_H
#define SPECX_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "run/runtime/sandbox/privatize.h" /* struct specx_region */

/* Compiles the system-call filter, once, in the normal process (libseccomp allocates, which a
 * child cloned from a multithreaded program must not do). Call it before the first speculative
 * clone; specx_sandbox_snapshot calls it itself if nobody did. Idempotent.
 * Returns 0 or -errno. */
int specx_sandbox_prepare(void);

/* Entering the sandbox takes two steps, the snapshot, then the seal. Irreversible;
 * each returns 0, or -errno when the sandbox could not be completed: the caller must then _exit
 * at once.
 * The snapshot: first OOM victim, no core dumps, and every shared mapping but the KEEP regions
 * made private (specx_privatize_mappings; *COPIED_SHARED says whether some had to be copied,
 * which makes the snapshot of that memory the moment of this call, not of the clone).
 * The seal: the seccomp filter (the descriptors were made private at the clone, before
 * either step: specx_privatize_fds). SHARED_WAIT is the one futex word, inside a KEEP region,
 * on which the speculative process may wait with a futex the program shares (the horizon's
 * parking word); NULL for none. Every other wait must be process-private: a page of a
 * privatized mapping that the copy has not written yet still has the program's futex key, and
 * a copy waiting there could take a wake-up meant for one of the program's own waiters, which
 * would then sleep for ever. */
int specx_sandbox_snapshot(const struct specx_region *keep, size_t nkeep, bool *copied_shared);
int specx_sandbox_seal(const uint32_t *shared_wait);

#endif
