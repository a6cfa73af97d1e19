/* specx run's OOM guard: where the program's memory cgroup has a limit, a small process beside
 * the program that, whenever the group's OOM killer acts, frees the memory of the process it
 * killed at once (kernel/oom_victim.h says why a copy starved at idle priority needs this, and
 * docs/design/copies.md what it costs without). It is nobody's child the program can see (it is
 * orphaned at birth), runs in the group above the program's, has its own session, holds no
 * file of the program's, and ends with the program. Its loop is the program specx-oomguard
 * (oomguard.c); this is the side that starts it. */
#ifndef SPECX_CLI_RUN_OOM_GUARD_H
#define SPECX_CLI_RUN_OOM_GUARD_H

#include <stdbool.h>
#include <sys/types.h>

/* Starts the guard for PROGRAM (a process in specx run's memory cgroup, possibly specx run
 * itself, about to exec the program) if that group has a limit. Does nothing otherwise, or if
 * it cannot: the guard only makes the kernel's own reaping faster. VERBOSE: it keeps standard
 * error and says what it freed. */
void run_oom_guard_start(pid_t program, bool verbose);

#endif
