/* --volatile-cache: the device as a disk with a volatile write cache, at its worst, and the
 * power cut that drops what the cache held. A file's data is durable once the file is synced
 * (fsync, fdatasync); a change of a name (create, mkdir, mknod, symlink, link, unlink, rmdir,
 * rename) once its directory is synced (a rename: both directories). Until then the model
 * keeps what undoing it needs: the durable content of each file written since its last sync
 * (a copy, made at the first change), and the names removed or replaced (moved into a shadow
 * directory beside the backing directory, outside the mount). At the cut, after the N-th
 * request that changes something (--power-cut-after N) or on demand (--power-cut), the
 * backing directory is rolled back to its durable state, and every later request fails with
 * EIO until the mount goes. */
#ifndef SLOWFS_VOLATILE_H
#define SLOWFS_VOLATILE_H

#include <stddef.h>
#include <stdint.h>

#include "slowfs/passthrough.h"

/* Extended attributes of the mount root: reading the first gives the model's counters (JSON),
 * setting the second (root only) cuts the power. */
#define SLOWFS_POWER_XATTR "user.specx.slowfs.power"
#define SLOWFS_POWER_CUT_XATTR "user.specx.slowfs.power-cut"

/* Makes the shadow directory beside STATE's backing directory (on the same file system, for
 * renames) and returns the operations that serve the mount through the model, which wrap
 * BASE; CUT_AFTER 0 cuts only on demand. NULL with a one-line reason in err. */
const struct fuse_operations *volatile_start(const struct slowfs_state *state,
                                             const struct fuse_operations *base,
                                             uint64_t cut_after, char *err, size_t errsize);

/* At unmount: a clean shutdown if the power was not cut (everything written stays), and the
 * shadow directory goes. */
void volatile_stop(void);

#endif
