/* --isolate: the command sees each directory through an overlay in a mount namespace of its
 * own, so that its changes stay apart until they are validated and committed (Eggert 2002 §2.2,
 * isolation, and ch. 8). What it read comes from readset.h, what it changed from the overlay's
 * upper layer (changes.h), what others changed meanwhile from a snapshot (snapshot.h). */
#ifndef IDLE_ISOLATION_H
#define IDLE_ISOLATION_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "idle/changes.h"
#include "idle/figures.h"
#include "idle/options.h"
#include "idle/pathset.h"
#include "idle/snapshot.h"
#include "idle/state_dir.h"

struct idle_isolation {
    struct idle_state_root root; /* where runs keep their state (state_dir.h) */
    char name[32];          /* this run's state: NAME in the root */
    char state[PATH_MAX];   /* its path */
    int state_fd;           /* its directory, locked while the run lives */
    size_t n;
    char dirs[IDLE_MAX_ISOLATE][4096];
    struct idle_dir_id ids[IDLE_MAX_ISOLATE];
    struct idle_snapshot before[IDLE_MAX_ISOLATE];
    struct idle_pathset read[IDLE_MAX_ISOLATE];
    int watch_fd;
    bool read_set_lost;       /* then every change by others in the directories conflicts */
    struct idle_changes changes;
    struct idle_pathset conflicts; /* absolute paths */
    enum idle_outcome outcome;
    char failure[PATH_MAX + 256];
};

/* Checks the directories, makes this run's state (upper and work directories) and takes the
 * snapshots. -1 with a one-line reason in err, and nothing left made. */
int idle_isolation_prepare(struct idle_isolation *iso, const struct idle_options *o, char *err,
                           size_t errsize);

/* In the command's process, before exec: a private mount namespace with the overlays mounted,
 * the working directory entered again through its overlay where it lies in one. Refuses a
 * descriptor the command would inherit through which it could write around the overlays.
 * -1 with a one-line reason in err. */
int idle_isolation_enter(const struct idle_isolation *iso, char *err, size_t errsize);

/* In the command's process, before exec: lets go of its copy of the state's lock, which must
 * be specx idle's alone (a command killed after specx idle would hold it on). */
void idle_isolation_drop_lock(struct idle_isolation *iso);

/* In ours once the command's overlays are mounted: starts recording what it opens there. */
void idle_isolation_watch(struct idle_isolation *iso, pid_t pid);
/* Takes in what it opened since the last call (the descriptor is iso->watch_fd). */
void idle_isolation_drain(struct idle_isolation *iso);

/* Where the data of the file that LINK (a /proc/.../fd/N link) names is, if the command sees it
 * in an isolated directory: its copy in the upper layer, whose pages the overlay's own file does
 * not reach (sync_file_range on that writes nothing). False if LINK is elsewhere. */
bool idle_isolation_upper_path(const struct idle_isolation *iso, const char *link, char *out,
                               size_t size);

/* At the command's exit: validates and commits, discards or asks, per MODE, then removes the
 * run's state (unless a failed commit's journal must stay to finish it). Sets iso->outcome. */
void idle_isolation_finish(struct idle_isolation *iso, enum idle_commit mode);

/* What the report tells of the run (figures.h); ISO outlives the figures. */
struct idle_isolation_figures idle_isolation_figures(const struct idle_isolation *iso);

/* Removes the state of a run that did not get as far as its commit; no error if none. */
void idle_isolation_abandon(struct idle_isolation *iso);

/* Finishes the commits of earlier runs of this user that were interrupted in them, and removes
 * what runs that were killed before their commit left; a run is over when the lock on its
 * state can be taken. State whose directory list or journal does not check out is left as it
 * is, and said. Says what it did on stderr, and, where SAY_UNSAFE, why the runs' state
 * directory cannot be used. Returns how many commits it finished, or -1 if one could not be. */
int idle_isolation_recover(bool say_unsafe);

#endif
