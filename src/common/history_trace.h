/* Layout of the trace through which the preload runtime tells `specx run` what a run reads,
 * for its history (docs/design/history.md). specx run keeps the trace in a memory file of its
 * own and passes its path, /proc/PID/fd/N, in SPECX_HISTORY_TRACE: nothing of it is left on a
 * disk or in /dev/shm, it ends with the process that holds it, and only the program's user
 * (who may read that process's descriptors) can open it. Each process of the program maps it
 * and appends records, claimed by atomic increment and published by a release store of
 * `ready`. specx run reads what the program wrote as untrusted input: the program may write
 * anything there. */
#ifndef SPECX_HISTORY_TRACE_H
#define SPECX_HISTORY_TRACE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#define SPECX_HISTORY_TRACE_ENV "SPECX_HISTORY_TRACE"
#define SPECX_TRACE_MAGIC 0x3165636172747870ULL /* "pxtrace1" */
#define SPECX_TRACE_MAX_READS 65536u
#define SPECX_TRACE_MAX_FILES 4096u
#define SPECX_TRACE_PATH_MAX 232u

/* One range of a file the program read, first seen at T_NS after the run started. A read
 * that continues the process's last range of the same file extends it (len grows) instead.
 * A mapped range is one the program mapped while it was not all in memory: its faults are
 * not seen, so what of it was read is told by what of it is in memory when the run ends. */
struct specx_trace_read {
    uint64_t dev, ino;
    uint64_t off, len;
    uint64_t t_ns;
    uint32_t flags; /* SPECX_TRACE_MISS, SPECX_TRACE_MAPPED */
    uint32_t ready; /* set last: the record is complete */
};

#define SPECX_TRACE_MISS 1u   /* some of it was not in memory: the program waited for the disk */
#define SPECX_TRACE_MAPPED 2u /* a file mapping, not a read */

/* A file the program read, once per process that read it: its identity and its path. */
struct specx_trace_file {
    uint64_t dev, ino, size;
    int64_t mtime_sec;
    uint32_t mtime_nsec;
    uint32_t ready;
    char path[SPECX_TRACE_PATH_MAX];
};

struct specx_trace_header {
    uint64_t magic;
    uint64_t start_ns;   /* CLOCK_MONOTONIC when the run started */
    uint32_t reads;      /* records claimed (may exceed SPECX_TRACE_MAX_READS: full) */
    uint32_t files;
    /* Non-zero while a replay is under way: the runtime then notes the reads it finds in
     * memory too (which the replay may have brought in), not only those it waits for. */
    uint32_t watching;
    uint32_t pad;
};

#define SPECX_TRACE_READS_AT 4096u
#define SPECX_TRACE_FILES_AT \
    (SPECX_TRACE_READS_AT + SPECX_TRACE_MAX_READS * (uint64_t)sizeof(struct specx_trace_read))
#define SPECX_TRACE_SIZE \
    (SPECX_TRACE_FILES_AT + SPECX_TRACE_MAX_FILES * (uint64_t)sizeof(struct specx_trace_file))

_Static_assert(sizeof(struct specx_trace_header) <= SPECX_TRACE_READS_AT, "header fits");

/* The records of trace T. */
struct specx_trace_read *specx_trace_reads(const struct specx_trace_header *t);
struct specx_trace_file *specx_trace_files(const struct specx_trace_header *t);

/* Appends R (its ready flag set last, with release order); the record, or NULL where the
 * trace is full. */
struct specx_trace_read *specx_trace_add_read(struct specx_trace_header *t,
                                              const struct specx_trace_read *r);

/* Appends the file that LINK (/proc/self/fd/N, /proc/PID/fd/N) names, of status ST: its
 * identity and the path it has now. A deleted or unnamed file is left out: no later run can
 * open it by that name. */
void specx_trace_add_file(struct specx_trace_header *t, const char *link, const struct stat *st);
_Static_assert(sizeof(struct specx_trace_file) == 272, "file records keep their size");

#endif
