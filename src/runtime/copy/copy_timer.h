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

/* Ends the copy: first frees its large regions while the OOM killer can still choose it
 * (lazy_memory.h says why), then exits. Async-signal-safe. */
_Noreturn void specx_copy_end_itself(void);

#endif
