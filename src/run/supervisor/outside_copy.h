/* The supervisor's speculative copy (docs/design/supervisor.md): a clone made by a stalled thread of
 * the program, injected while the thread is held, then sealed from outside with the sandbox
 * the runtime's copy gives itself (§3): parent-death signal, its own process group, the
 * seccomp allow-list, idle CPU priority. Its offset-bound calls and opens reach the supervisor
 * through the filter's user-notification listener. */
#ifndef SPECX_OUTSIDE_COPY_H
#define SPECX_OUTSIDE_COPY_H

#include <stdbool.h>
#include <sys/types.h>

#include "run/supervisor/copy_fds.h"
#include "run/supervisor/held_thread.h"

struct outside_copy {
    pid_t from_tid;     /* the program's thread it was cloned from */
    pid_t pid;
    int pidfd;
    int listener;       /* the seccomp notification descriptor; -1: none */
    struct copy_fds fds;
};

/* Why no copy was made, for the report. */
enum outside_refusal {
    OUTSIDE_MADE,
    OUTSIDE_SHARED_MEMORY, /* shared mappings the supervisor cannot make private (not root) */
    OUTSIDE_FAILED,        /* a step failed (clone, seccomp...); errno-like detail in the log */
};

/* Whether process PID maps anything shared (a file opened for writing, shared anonymous
 * memory, System V segments, memfd, an io_uring): a copy could write through it, and the
 * filter cannot tell one shared mapping from another. */
bool outside_copy_maps_shared_memory(pid_t pid);

/* Whether the supervisor may make a copy's shared mappings private (it can open
 * /proc/PID/map_files: root). Otherwise no copy is made of a program with shared mappings,
 * which is looked at before a thread of it is held. */
bool outside_copy_can_privatize(void);

/* Compiles the copy's filter, once, before the first copy. Returns 0 or -errno. */
int outside_copy_prepare(void);

/* Makes the copy of the held thread T and lets T go (whatever happens, T is released).
 * Returns OUTSIDE_MADE with *C filled and the copy running, or why not (nothing left); how
 * long T was held is then in T->held_ns. */
enum outside_refusal outside_copy_make(struct held_thread *t, struct outside_copy *c);

/* Kills and reaps the copy and forgets what was kept for it. */
void outside_copy_end(struct outside_copy *c);

#endif
