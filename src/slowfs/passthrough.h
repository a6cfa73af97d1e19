/* The FUSE file system: a passthrough of the backing directory whose data reads (and, if
 * configured, data writes and metadata operations) are served through the emulated device. */
#ifndef SLOWFS_PASSTHROUGH_H
#define SLOWFS_PASSTHROUGH_H

#define FUSE_USE_VERSION 312
#include <fuse.h>

#include "slowfs/device.h"

/* Extended attributes of the mount root through which a running slowfs reports its
 * statistics: no file appears in the tree (grep -r would read it) and no socket is needed. */
#define SLOWFS_STATS_XATTR "user.specx.slowfs.stats"
#define SLOWFS_TABLE_XATTR "user.specx.slowfs.stats.table"
/* ... and of any file, with --count-flushes: its counts (file_counts.h) as JSON. */
#define SLOWFS_FILE_XATTR "user.specx.slowfs.file"

struct slowfs_state {
    int backing_fd;          /* the backing directory; every operation is relative to it */
    const char *backing;     /* its absolute path, for the few calls that lack an *at form */
    struct device *device;
    unsigned max_background; /* asynchronous requests the kernel may have in flight */
    bool count_flushes;      /* --count-flushes */
    double attr_timeout_s;   /* the kernel's entry and attribute timeout */
    bool cache_metadata;     /* metadata costs: the kernel keeps symbolic links' targets */
};

/* The operations; fuse_new() takes the state as private data. With COUNT_FLUSHES, FLUSH is
 * answered and counted per file (file_counts.h); without, the kernel stops sending it. */
const struct fuse_operations *slowfs_operations_for(bool count_flushes);

/* The backing descriptor of a file or directory open through the mount. */
int passthrough_file_fd(const struct fuse_file_info *fi);
int passthrough_dir_fd(const struct fuse_file_info *fi);

/* Answers a getxattr request with TEXT (malloc'd, freed here; NULL: out of memory). */
int slowfs_reply_text(char *text, char *value, size_t size);

#endif
