/* The system-call restriction of the speculative process (Fraser & Chang 2003, §4.1.1, third
 * restriction): the paper's "table lookup indexed by the system call number" as a seccomp-bpf
 * allow-list. Calls outside it "return immediately" (EPERM); read-only opens are "altered"
 * through the SIGSYS trap of sandbox_open_trap.c. */
#ifndef SPECX_SANDBOX_FILTER_H
#define SPECX_SANDBOX_FILTER_H

#include <stdint.h>
#include <sys/types.h>

/* Builds the filter into a BPF program kept in this process's memory. It uses libseccomp,
 * which allocates, so it runs in the normal process, before any speculative clone; clones
 * inherit the program. OPEN_COOKIE is the value in the sixth argument of openat that marks the
 * trap handler's own re-issued open. Returns 0 or -errno. */
int specx_filter_compile(uint64_t open_cookie);

/* Whether specx_filter_compile has succeeded in this address space. */
int specx_filter_compiled(void);

/* Sets no_new_privs and installs the compiled filter in the calling (single-threaded) process,
 * with SELF as the only process that kill/tkill/tgkill may reach and SHARED_WAIT (or nothing,
 * when NULL) the only address of a futex wait that is not process-private. Irreversible.
 * Returns 0 or -errno. */
int specx_filter_load(pid_t self, const uint32_t *shared_wait);

#endif
