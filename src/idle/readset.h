/* What the command read in its isolated directories: every file and directory it opened
 * there, seen by fanotify on the overlay mounts of its mount namespace. The read set is half of
 * what the commit validates (Eggert 2002 ch. 8); the other half, the write set, is the
 * overlay's upper directory. */
#ifndef IDLE_READSET_H
#define IDLE_READSET_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "idle/pathset.h"

/* Starts watching opens on the overlays mounted on DIRS[0..N) in process PID's mount namespace.
 * Returns the descriptor to drain, or -1 with errno (then no read set is known). */
int idle_readset_watch(pid_t pid, char (*dirs)[4096], size_t n);

/* Adds what was opened since the last call to OPENED[i] (paths relative to DIRS[i]). Sets
 * *LOST if the kernel dropped events: then the read set is incomplete. */
void idle_readset_drain(int fd, char (*dirs)[4096], size_t n, struct idle_pathset *opened,
                        bool *lost);

#endif
