/* A reference to a speculative process that can never reach another process. The copy is a
 * child with exit signal 0, but a program that waits with __WALL (or __WCLONE) can still
 * reap it, and its pid can then go to the program's next child before the runtime notices.
 * So a copy is known by its pid and its start time, and every signal and wait goes through a
 * pidfd opened for the occasion and checked against that start time. The pidfd lives only
 * during the call: descriptor numbers belong to the program (§4.1.1's invisibility). */
#ifndef SPECX_COPY_REF_H
#define SPECX_COPY_REF_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* The start time of process pid (clock ticks since boot), 0 if it cannot be read. Called
 * right after the clone, while the copy cannot have been reaped yet. */
uint64_t specx_copy_start_time(pid_t pid);

/* Reaps the copy (pid, start) if it has ended; with wait, waits for it to end. Returns true
 * if it is gone: reaped now, or reaped earlier by the program (the pid is then someone
 * else's, or nobody's). */
bool specx_copy_reap(pid_t pid, uint64_t start, bool wait);

/* How specx_copy_end found and left the copy. */
enum specx_copy_end {
    SPECX_COPY_GONE,   /* it had ended: reaped now, or by the program earlier */
    SPECX_COPY_KILLED, /* killed, and reaped at once */
    SPECX_COPY_DYING,  /* killed, not reaped yet (a copy in a FUSE request dies when it ends) */
};

/* Ends the copy unless it has ended by itself: SIGKILL, without waiting for it to die. With
 * release, its memory is freed before this returns (process_mrelease: the pages the kernel
 * would free in the copy's own exit; on a kernel without it, before 5.15, the copy frees them
 * itself). */
enum specx_copy_end specx_copy_end(pid_t pid, uint64_t start, bool release);

#endif
