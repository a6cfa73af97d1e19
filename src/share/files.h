/* A job's file-backed working set (Suh et al. 2001 §2: a job's turn starts warm only if its
 * files' pages are back too): the pages of the files it maps or has open that were in the page
 * cache when its turn ended, and bringing back those that were evicted since. */
#ifndef SHARE_FILES_H
#define SHARE_FILES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "kernel/cgroup.h"

/* At most this many files of a job are remembered (the first found with cached pages). */
#define SHARE_FILES_MAX 64

/* Pages [first, first + count) of a file. */
struct share_file_run {
    uint64_t first, count;
};

/* One file, named by the job's own descriptor or mapping (/proc/PID/fd/N or
 * /proc/PID/map_files/A-B) and checked by device and inode when it is opened again: specx
 * share keeps no descriptor of a job's files (a file the job deletes must not be kept alive). */
struct share_file {
    char path[64];
    dev_t dev;
    ino_t ino;
    struct share_file_run *runs;
    size_t nruns;
};

struct share_files {
    struct share_file *files;
    size_t n;
};

/* Replaces SET with the file pages in the page cache now of the processes in group CG (the
 * job, frozen at the end of its turn). */
void share_files_capture(struct share_files *set, const struct specx_cgroup *cg);

/* Forgets SET. */
void share_files_clear(struct share_files *set);

/* Bytes of SET not in the page cache now. */
uint64_t share_files_missing(const struct share_files *set);

/* Reads the pages of SET not in the page cache, in file order, at most MAX_BYTES of them, in a
 * helper process in group CHARGE_TO (the page cache is charged to whoever reads it in: inside
 * the run's memory limit, not in specx share's own group), and returns once they have
 * arrived, with the bytes asked for. */
uint64_t share_files_prefetch(const struct share_files *set, const struct specx_cgroup *charge_to,
                              uint64_t max_bytes);

#endif
