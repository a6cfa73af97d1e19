/* The system-call restriction of the speculative process (Fraser & Chang 2003, §4.1.1, third
 * restriction): the paper's "table lookup indexed by the system call number" as a seccomp-bpf
 * allow-list. Calls outside it "return immediately" (EPERM); read-only opens are "altered"
 * through the SIGSYS trap of sandbox_open_trap.c. */
#ifndef SPECX_SANDBOX_FILTER_H
#define SPECX_SANDBOX_FILTER_H

#include <linux/filter.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The two speculative copies: the runtime's, made and sealed by itself after privatize.c gave
 * it descriptors and mappings of its own; and the supervisor's (docs/design/supervisor.md), made from
 * outside, which shares its descriptors' offsets with the program and has its offset-bound
 * calls and its opens served by the supervisor through a user-notification listener. */
enum specx_filter_kind { SPECX_FILTER_INSIDE, SPECX_FILTER_OUTSIDE };

/* Builds the filter into a BPF program kept in this process's memory. It uses libseccomp,
 * which allocates, so it runs in the normal process, before any speculative clone; clones
 * inherit the program. OPEN_COOKIE is the value in the sixth argument of openat that marks the
 * trap handler's own re-issued open (inside only). Returns 0 or -errno. */
int specx_filter_compile(enum specx_filter_kind kind, uint64_t open_cookie);

/* Whether specx_filter_compile has succeeded in this address space. */
int specx_filter_compiled(void);

/* Copies the compiled program into OUT (room for MAX instructions) for the process SELF, as
 * specx_filter_load would install it with no shared futex wait; for a supervisor that installs
 * it in another process. Returns the number of instructions or -errno. */
long specx_filter_export(pid_t self, struct sock_filter *out, size_t max);

/* Sets no_new_privs and installs the compiled filter in the calling (single-threaded) process,
 * with SELF as the only process that kill/tkill/tgkill may reach and SHARED_WAIT (or nothing,
 * when NULL) the only address of a futex wait that is not process-private. Irreversible.
 * Returns 0 or -errno. */
int specx_filter_load(pid_t self, const uint32_t *shared_wait);

#endif
