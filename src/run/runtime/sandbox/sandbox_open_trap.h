/* "Altering" read-only opens in the speculative process (Fraser & Chang 2003, §4.1.1: "the
 * access checks either cause the speculative thread to return immediately, or alter the
 * requested system call so that it is safe"). A seccomp filter cannot see what a path names,
 * yet opening a FIFO for reading wakes its writer and opening a device runs its driver: so the
 * filter traps every read-only open to a SIGSYS handler, which opens the path with O_PATH
 * (touches nothing), checks the file and re-opens it through /proc/self/fd only if
 * specx_safe_to_read (privatize.h) accepts it. */
#ifndef SPECX_SANDBOX_OPEN_TRAP_H
#define SPECX_SANDBOX_OPEN_TRAP_H

#include <stdint.h>

/* Chooses the random value that marks the handler's own re-issued open (the filter lets an
 * openat through only with it in the sixth argument). Call once in the normal process.
 * Returns it, or 0 if no randomness was available. */
uint64_t specx_open_trap_choose_cookie(void);

/* Installs the SIGSYS handler (before the filter) and unblocks SIGSYS. A SIGSYS handler that
 * was already installed (e.g. the runtime's Syscall User Dispatch handler) still receives every
 * SIGSYS that is not an open trap. Returns 0 or -errno. */
int specx_open_trap_install(void);

#endif
