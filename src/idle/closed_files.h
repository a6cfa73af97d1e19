/* The files the background wrote and closed (docs/design/idle.md, Disk). The dirty bound starts write-back
 * of what the background has open; a file it wrote and closed has left /proc/PID/fd, and its
 * data would wait for the kernel's flushers (up to 30 s, at their I/O class): a command that
 * writes many files (an unpack, a backup, a build) escaped the bound entirely.
 *
 * fanotify tells of each close after a write (FAN_CLOSE_WRITE) on the mounts of the
 * background's own mount namespace, so that no one else's closes are seen and no close of the
 * foreground's makes an event. Events come as file handles (FAN_REPORT_FID): nothing is opened
 * and no mount is kept busy until a file is written back, and a file is kept as a few bytes of
 * handle until then. Overlays give no handles: on those of --isolate (private to the
 * background) events come with a descriptor, and the file is kept as the handle of its copy
 * in the upper layer, where its data is. */
#ifndef IDLE_CLOSED_FILES_H
#define IDLE_CLOSED_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "idle/isolation.h"

struct idle_closed_mount;
struct idle_closed_file;

struct idle_closed {
    int fd;                           /* to poll: both below; -1: not watched */
    int handles_fd, isolated_fd;      /* fanotify with file handles, on the overlays; or -1 */
    const struct idle_isolation *isolation;
    pid_t pid;                        /* the background's first process: its namespace */
    struct idle_closed_mount *mounts; /* one per file system watched */
    size_t nmounts;
    struct idle_closed_file *files;   /* a ring of the files closed since the last write-back */
    size_t first, nfiles;
    uint64_t dropped;                 /* files the ring had no room for, or events lost */
    const char *unwatched;            /* why closes are not watched; NULL if they are */
};

/* Nothing watched (what idle_closed_stop leaves). */
#define IDLE_CLOSED_NONE { .fd = -1, .handles_fd = -1, .isolated_fd = -1 }

/* Whether a mount namespace made now as a slave of ours goes on seeing every mount made or
 * removed in ours: only if each of our mounts is shared. A private mount propagates nothing
 * (the root of a machine without systemd, or of a container, is private): the background's
 * own namespace would keep the mounts of the moment it started, so it must stay in ours. */
bool idle_closed_mounts_followed(void);

/* Watches closes after writes on the mounts of process PID's mount namespace, which must be
 * its own (the caller's own would show everyone's closes), and on the overlays of ISOLATION
 * (NULL: none). -1 with errno and C->unwatched if it cannot; then the files the background
 * closes are left to the kernel's flushers. */
int idle_closed_watch(struct idle_closed *c, pid_t pid, const struct idle_isolation *isolation);

/* The descriptor to poll for new closes, or -1. */
int idle_closed_fd(const struct idle_closed *c);

/* Takes the closes the kernel reported since the last call into the ring. */
void idle_closed_collect(struct idle_closed *c);

/* Calls VISIT with a path (/proc/self/fd/N, an O_PATH descriptor) and ARG for each file in the
 * ring that still exists, and empties the ring. Returns the number of files VISIT took (true). */
unsigned idle_closed_each(struct idle_closed *c, bool (*visit)(const char *path, void *arg),
                          void *arg);

void idle_closed_stop(struct idle_closed *c);

#endif
