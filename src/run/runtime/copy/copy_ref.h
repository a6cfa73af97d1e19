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

/* Sends SIGKILL to the copy if it is still there; with release, frees its memory before
 * returning (process_mrelease: the pages the kernel would free in the copy's own exit; on a
 * kernel without it, before 5.15, the copy frees them itself). */
void specx_copy_kill(pid_t pid, uint64_t start, bool release);

#endif
