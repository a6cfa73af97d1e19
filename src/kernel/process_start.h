/* When a process started, which with its pid names it for good: a pid is reused once its
 * process is reaped, its start time is not. */
#ifndef SPECX_PROCESS_START_H
#define SPECX_PROCESS_START_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* The start time (field 22, clock ticks since boot) of /proc/PID/stat's TEXT, counted after
 * the command's closing parenthesis (the command itself may hold spaces and parentheses).
 * False if TEXT is too short. */
bool specx_proc_stat_start_time(const char *text, uint64_t *start);

/* The start time of process PID, 0 if it cannot be read. Raw system calls: the preload
 * runtime calls this, and its own read wrappers must not see the read. */
uint64_t specx_process_start_time(pid_t pid);

#endif
