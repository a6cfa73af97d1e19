/* What history did in a run (keeper.h), as the report shows it: filled in by the replay
 * (replay.h) and the recording (record.h). */
#ifndef SPECX_HISTORY_COUNTS_H
#define SPECX_HISTORY_COUNTS_H

#include <stdbool.h>
#include <stdint.h>

/* What history did in a run, for the report. */
struct history_counts {
    bool active;        /* a trace was kept (the runtime noted reads) */
    bool replayed;      /* a history was replayed */
    bool near;          /* ... another command's of the same program: its start-up reads */
    bool stopped;       /* the control stopped the replay: it did not pay */
    bool saved;         /* the history was written anew */
    bool outside;       /* reads sampled from outside: only those that waited are seen */
    uint32_t entries, files, stale_files;
    uint64_t prefetched_bytes; /* brought in */
    uint64_t cached_bytes;     /* found in memory already: skipped */
    uint64_t asked_bytes;      /* asked for where the kernel hides whether it was in memory */
    uint64_t used_bytes;       /* of those brought in, read by the program */
    uint64_t unused_bytes;     /* brought in and never read */
    uint64_t served_reads;     /* reads of the program that found the replay's pages in memory */
    uint64_t late_reads;       /* reads of ranges it had asked for that still waited */
    uint64_t recorded_entries, recorded_bytes, recorded_size;
};

#endif
