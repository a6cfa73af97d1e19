/* What must hold before slowfs mounts anything: bad input is refused with a one-line
 * reason and nothing is left mounted. */
#ifndef SLOWFS_CHECKS_H
#define SLOWFS_CHECKS_H

#include <stddef.h>

/* Root is needed for allow_other, cache control and handing files to their creators. */
int check_root(char *err, size_t errsize);

/* BACKING_DIR must be a directory and MOUNTPOINT an empty directory that is not a mount
 * point and not inside BACKING_DIR (the mount would then contain itself). On success writes
 * their canonical paths. Returns 0, or -1 with the reason in err. */
int check_mount_paths(const char *backing, const char *mountpoint, char *backing_real,
                      char *mountpoint_real, size_t pathsize, char *err, size_t errsize);

#endif
