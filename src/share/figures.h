/* What specx share's report tells of each job (report.h), as figures: a snapshot of the job
 * once it has ended, so that the report reads these, never the job's processes and groups. */
#ifndef SHARE_FIGURES_H
#define SHARE_FIGURES_H

#include <stdbool.h>
#include <stdint.h>

struct share_job_figures {
    unsigned number;          /* from 1 */
    char *const *argv;
    bool exited;
    int status;               /* wait status once exited */
    int exit_code;            /* what that status stands for (job.h); -1 if it never exited */
    uint64_t started_ns, ended_ns;
    unsigned turns;
    uint64_t major_faults, majflt_first_second, peak_bytes;
    uint64_t prefetched_bytes, prefetched_file_bytes; /* the second: of files, in the first */
    uint64_t unused_bytes;    /* of what prefetches asked for, pages its turns never touched */
};

#endif
