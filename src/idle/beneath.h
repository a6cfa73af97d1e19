/* Reaching paths below a directory already opened, so that nothing found on the way (a symbolic
 * link, "..", a name swapped for a link meanwhile) can lead out of it: the runs' state below
 * its root, a commit's targets below the isolated directory. RELs are checked by
 * idle_rel_valid (pathset.h) first. */
#ifndef IDLE_BENEATH_H
#define IDLE_BENEATH_H

#include <stdio.h>
#include <sys/types.h>

/* Opens REL below DIRFD (openat2 with RESOLVE_BENEATH and RESOLVE_NO_SYMLINKS; where the
 * kernel lacks openat2, component by component with O_NOFOLLOW). FLAGS as openat's, to which
 * O_NOFOLLOW and O_CLOEXEC are added. -1 with errno (EINVAL for a REL that is not valid,
 * ELOOP where a component is a symbolic link). */
int idle_open_beneath(int dirfd, const char *rel, int flags, mode_t mode);

/* Opens the directory that holds REL's last component, below DIRFD (DIRFD itself, anew, for a
 * single name); *NAME points to that component in REL. -1 with errno. */
int idle_open_parent_beneath(int dirfd, const char *rel, const char **name);

/* A new file NAME in directory DIRFD (FLAGS: O_EXCL or O_TRUNC), opened for writing, mode
 * 0600, no link followed; NULL with errno. */
FILE *idle_create_at(int dirfd, const char *name, int flags);

/* Removes NAME in directory DIRFD and everything below it, following no link on the way.
 * No error if it does not exist; what cannot be removed stays. */
void idle_remove_tree_at(int dirfd, const char *name);

#endif
