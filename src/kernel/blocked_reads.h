/* Threads of a process blocked in reads of regular files, seen from outside through /proc: what
 * a program the preload runtime cannot enter (static, Go) waits for, and the trigger a
 * supervisor would use (docs/design/supervisor.md). A sampler, not a hook: nothing is installed in
 * the process, which runs exactly as without specx. */
#ifndef SPECX_KERNEL_BLOCKED_READS_H
#define SPECX_KERNEL_BLOCKED_READS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* One thread blocked in a read-family system call on a regular file: which thread, which
 * file, where (the call's offset, or the descriptor's for read and readv). */
struct specx_blocked_read {
    pid_t tid;
    int fd;
    uint64_t ino, off;
};

/* Fills OUT (room for MAX) with the threads of PID that are blocked now in read, pread64,
 * readv, preadv or preadv2 on a regular file. Returns how many, or -1 with errno if PID is gone.
 * A thread whose /proc/PID/task/TID/syscall may not be read (it takes the right to trace PID)
 * counts as not blocked. Telling a regular file takes a stat(2) of it, which on FUSE may ask
 * the file system's server and wait for its answer. */
int specx_blocked_reads(pid_t pid, struct specx_blocked_read *out, size_t max);

/* The scheduler state of thread TID of PID ('R', 'S', 'D'...; /proc/PID/task/TID/stat), 0 if
 * it is gone. */
char specx_thread_state(pid_t pid, pid_t tid);

/* Whether thread TID of PID is traced by someone (TracerPid in its status): a debugger. */
bool specx_thread_traced(pid_t pid, pid_t tid);

/* Whether thread TID has a signal pending, its own or its process's (SigPnd, ShdPnd in its
 * status); true if that cannot be read. */
bool specx_thread_signal_pending(pid_t tid);

#endif
