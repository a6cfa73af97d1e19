/* A reference to a speculative process that can never reach another process. The copy is a
 * child with exit signal 0, but a program that waits with __WALL (or __WCLONE) can still
 * reap it, and its pid can then go to the program's next child before the runtime notices.
 * So a copy is known by its pid and its start time (struct specx_copy_ref, the start time read
 * right after the clone, kernel/process_start.h), and every signal and wait goes through a
 * pidfd opened for the occasion and checked against that start time. The pidfd lives only
 * during the call: descriptor numbers belong to the program (§4.1.1's invisibility). */
#ifndef SPECX_COPY_REF_H
#define SPECX_COPY_REF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "run/runtime/core/runtime.h" /* struct specx_copy_ref */

/* Reaps, of COPY (NULL: none) and DYING[0..n), each copy that has ended, or with WAIT each one
 * once it ends, and forgets it (its pid becomes 0). One that the program reaped earlier is gone
 * too: the pid is then someone else's, or nobody's. Returns how many are gone. One call for
 * all, so that a stall asks once. */
unsigned specx_copy_reap(struct specx_copy_ref *copy, struct specx_copy_ref *dying, size_t n,
                         bool wait);

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
enum specx_copy_end specx_copy_end(struct specx_copy_ref copy, bool release);

#endif
