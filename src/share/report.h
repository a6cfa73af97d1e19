/* What specx share tells at the end: a table for people (--report), JSON for tools (--json). */
#ifndef SHARE_REPORT_H
#define SHARE_REPORT_H

#include <stdio.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "share/figures.h"
#include "share/options.h"

/* One turn: whose, when (ns since the run began), and what its job did in it. */
struct share_turn {
    unsigned job;
    uint64_t start_ns, end_ns;
    uint64_t major_faults, major_faults_first_second, cpu_ns;
};

/* One prefetch: for whom, when it began (ns since the run began), how long until its reads had
 * arrived (ROOM_NS of it making room), and the bytes it asked for (FILE_BYTES of them of
 * files). */
struct share_prefetch_record {
    unsigned job;
    uint64_t start_ns, ns, room_ns, bytes, file_bytes;
};

struct share_run {
    const struct share_options *opt;
    const struct share_job_figures *jobs;
    size_t njobs;
    unsigned switches;
    double makespan_s;
    int exit_code;
    bool interrupted;
    const struct share_turn *turns;
    size_t nturns;
    const struct share_prefetch_record *prefetches;
    size_t nprefetches;
};

void share_report_table(FILE *out, const struct share_run *run);
/* Returns 0, or -1 with errno if FILE cannot be written. */
int share_report_json(const char *file, const struct share_run *run);

#endif
