/* Processes the OOM killer has chosen, freed at once (docs/design/copies.md).
 *
 * A killed process frees its memory in its own exit, at its own CPU priority. A speculative
 * copy runs at SCHED_IDLE (fraser-chang-2003 §4.1.3): beside busy CPUs its exit takes seconds,
 * and the kernel's OOM reaper steps in only after two. Traced, the reaper then found next to
 * nothing to reap (the copy's exit had, it seems, unmapped its pages without freeing them yet),
 * called the copy done, and the OOM killer took the next process in the group: the program.
 * Reaping a victim at once (process_mrelease) from a process that is not starved, and lifting
 * it out of SCHED_IDLE so that what it holds while dying is let go, closes that window. */
#ifndef SPECX_KERNEL_OOM_VICTIM_H
#define SPECX_KERNEL_OOM_VICTIM_H

#include <stdbool.h>
#include <sys/types.h>

/* Whether TEXT, a /proc/PID/status, is that of a process being killed by SIGKILL (as the OOM
 * killer and specx kill): SIGKILL pending for the whole process (ShdPnd), where it stays until
 * the process is gone, or for the thread (SigPnd). A process exiting of its own accord is left
 * alone. */
bool specx_oom_victim_status_killed(const char *text);

/* If PID is being killed: moves it from SCHED_IDLE to SCHED_OTHER and frees its memory now
 * (process_mrelease; where the kernel has none, the first step alone lets its exit run).
 * True if PID was being killed. */
bool specx_oom_victim_release(pid_t pid);

#endif
