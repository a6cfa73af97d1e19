/* How a copy watches itself and ends itself: timers that interrupt it wherever it is (running
 * program code, parked at its horizon), and the one way it ends of its own accord. */
#ifndef SPECX_COPY_TIMER_H
#define SPECX_COPY_TIMER_H

#include <stdint.h>
#include <time.h>

/* In a new copy, before it is sealed: HANDLER runs on signal SIGNO every PERIOD_NS of CLOCK
 * (CLOCK_PROCESS_CPUTIME_ID: the copy's CPU time; CLOCK_MONOTONIC: wall time). The signals
 * are real-time ones near SIGRTMAX, which program code seldom uses; a program that replaces
 * the handler in its copy only keeps the copy alive, as before. */
void specx_copy_every(clockid_t clock, int signo, void (*handler)(int), uint64_t period_ns);

/* What a copy does right before it ends itself: HOOK, registered once at load by the file that
 * knows what must go first (lazy_regions.c: the copy's large regions, freed while the OOM
 * killer can still choose it; lazy_memory.h says why). A hook rather than a call, so that this
 * file, which the other copy files use to end a copy, depends on none of them. HOOK must be
 * async-signal-safe. */
void specx_copy_before_end(void (*hook)(void));

/* Ends the copy: first the hook above, then exits. Async-signal-safe. */
_Noreturn void specx_copy_end_itself(void);

/* The same for a copy that a signal (SIGNO) would kill: a copy crashing on the data it could
 * not read would otherwise free its memory only in its exit, out of the OOM killer's sight
 * (docs/design/copies.md). It exits with status 128 + SIGNO. Async-signal-safe. */
_Noreturn void specx_copy_end_by_signal(int signo);

/* In a new copy, before it is sealed: the signals that end a process by default (a crash:
 * SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP), where the program leaves them so, end
 * the copy through specx_copy_end_by_signal instead. A handler the program installs in its
 * copy later replaces this one, as it would the default. */
void specx_copy_crash_arm(void);

#endif
