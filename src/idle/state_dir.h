/* Where runs keep their state (upper layers, work directories, journals): a directory that
 * only the user running specx idle can make, read or change, on a disk (a journal must outlive
 * a power cut), reached without following links. For root /var/lib/specx/idle; for another
 * user $XDG_STATE_HOME/specx/idle, or ~/.local/state/specx/idle. Each run's state is a
 * directory of its own there, locked (flock) for the run's whole life: a run is over when its
 * lock can be taken, whatever pid reuse or pid namespaces make its pid look like. */
#ifndef IDLE_STATE_DIR_H
#define IDLE_STATE_DIR_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

struct idle_state_root {
    int fd;                 /* -1 where there is none */
    char path[PATH_MAX];
};

/* Opens the runs' state directory, making what is missing of it where MAKE, and checks each
 * directory on the way: owned by us, writable by nobody else, the last one 0700, none a link.
 * 0; or -1 with a one-line reason in err (errno ENOENT if it does not exist and !MAKE, or there
 * is no private place for it: then err says so). */
int idle_state_root_open(struct idle_state_root *r, bool make, char *err, size_t errsize);
void idle_state_root_close(struct idle_state_root *r);

/* Makes a run's state directory in R, named by our pid (plus "-N" where that is taken: a run
 * of another pid namespace, or a state left for the user), and locks it. Its descriptor, and
 * its name in NAME; -1 with errno. The lock lasts until the descriptor is closed or we end. */
int idle_state_make_run(const struct idle_state_root *r, char *name, size_t size);

/* The runs' state that no live run holds, one at a time, for a recovery: calls
 * FOUND(run's directory, locked, its name, ARG) for each; directories being removed
 * ("NAME.gone") are removed. No run starts meanwhile. */
void idle_state_each_ended(const struct idle_state_root *r,
                           void (*found)(int fd, const char *name, void *arg), void *arg);

/* Removes the run's state NAME in R: renamed out of the runs' names (durably) first, so that a
 * removal cut short never leaves a run's state half removed. */
void idle_state_remove_run(const struct idle_state_root *r, const char *name);

#endif
