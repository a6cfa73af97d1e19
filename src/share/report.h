/* What specx share tells at the end: a table for people (--report), JSON for tools (--json). */
#ifndef SHARE_REPORT_H
#define SHARE_REPORT_H

#include <stdio.h>

#include "job.h"
#include "options.h"

struct share_run {
    const struct share_options *opt;
    struct share_job *jobs;
    size_t njobs;
    unsigned switches;
    double makespan_s;
    int exit_code;
    bool interrupted;
};

void share_report_table(FILE *out, const struct share_run *run);
/* Returns 0, or -1 with errno if FILE cannot be written. */
int share_report_json(const char *file, const struct share_run *run);

#endif
